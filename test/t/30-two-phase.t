#!/usr/bin/env bash
# Mode two_phase (and exactly_once) under every fault point: a known stream
# over 4 partitions, 2 workers, the named process SIGKILLs itself at the
# point, the job recovers, and the result is exact with no prepared
# transaction left behind.  Then immediate shutdowns during two_phase
# ingestion, and stop_job/drop_job leaving nothing prepared.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"

points=("two_phase after_prepare" "two_phase after_decision" "two_phase after_commit_prepared"
        "exactly_once before_commit" "exactly_once after_commit")
plan $((${#points[@]} * 5 + 9))

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# ingest_job NAME MODE TOPIC: a job writing (partition, offset) of every message.
ingest_job() {
  sql "CREATE TABLE $1 (part int, off bigint, value text);
       SELECT eoingest.create_job(name => '$1', brokers => '$KAFKA_BROKERS', topic => '$3', mode => '$2',
              parallelism => 2, batch_size => 1000, batch_timeout_ms => 100, checkpoint_interval_ms => 200,
              transform => 'INSERT INTO $1 SELECT \"partition\", \"offset\", value FROM eoingest.batch()')" >/dev/null
}

# check_exact JOB TOPIC N: N rows, each (partition, offset) once, offsets at the log end.
check_exact() {
  local job=$1 topic=$2 n=$3
  check "$job: all $n messages arrive" wait_until 180 "SELECT count(*) >= $n FROM $job"
  is "$(sql "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM $job")" "$n $n" \
    "$job: each (partition, offset) exactly once"
  check "$job: stored offsets reach the log end" wait_until 60 \
    "SELECT sum(next_offset) = $(log_end "$topic") FROM eoingest.offsets WHERE job = '$job'"
  check "$job: no prepared transaction left" wait_until 60 \
    "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'"
}

for entry in "${points[@]}"; do
  read -r mode point <<<"$entry"
  job=f_${point}
  topic=f_${point}_$$
  eoi-kafka create-topic "$topic" 4 >/dev/null
  eoi-kafka produce-seq "$topic" --count 20000 --format csv >/dev/null
  ingest_job "$job" "$mode" "$topic"
  before=$(fault_count "$point")
  set_fault "$point"
  sql "SELECT eoingest.start_job('$job')" >/dev/null
  check "$mode/$point: the fault fired" wait_fault "$point" "$before" 60
  clear_fault
  eoi-kafka produce-seq "$topic" --count 10000 --start 20000 --format csv >/dev/null
  check_exact "$job" "$topic" 30000
  sql "SELECT eoingest.drop_job('$job')" >/dev/null
done

# Immediate shutdowns while a two_phase job ingests.
job=tp_immediate
topic=tp_immediate_$$
eoi-kafka create-topic "$topic" 4 >/dev/null
ingest_job "$job" two_phase "$topic"
sql "SELECT eoingest.start_job('$job')" >/dev/null
(
  for ((i = 0; i < 60; i++)); do
    eoi-kafka produce-seq "$topic" --count 500 --start $((i * 500)) --format csv >/dev/null
    sleep 0.2
  done
) &
producer=$!
crashes=0
for round in 1 2 3; do
  wait_until 20 "SELECT count(*) > 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'" >/dev/null 2>&1 || true
  "$EOINGEST_TEST_DIR/pg.sh" stop-immediate && "$EOINGEST_TEST_DIR/pg.sh" start && crashes=$((crashes + 1))
done
wait "$producer"
is "$crashes" 3 "three immediate shutdowns during two_phase ingestion"
check_exact "$job" "$topic" 30000

# stop_job in the middle of an epoch leaves nothing prepared.
eoi-kafka produce-seq "$topic" --count 20000 --start 30000 --format csv >/dev/null
sql "SELECT eoingest.stop_job('$job')" >/dev/null
check "stop_job leaves no prepared transaction" wait_until 60 \
  "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'
      AND (SELECT count(*) FROM eoingest.job_status WHERE name = '$job' AND state = 'stopped') = 2"
sql "SELECT eoingest.drop_job('$job')" >/dev/null
is "$(sql "SELECT count(*) FROM eoingest.checkpoints")" 0 "drop_job removes the job's decision row"

# A server that cannot hold the prepared transactions refuses to start the job.
sql "ALTER SYSTEM SET max_prepared_transactions = 1" >/dev/null
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
sql "CREATE TABLE tp_refused (part int, off bigint, value text)" >/dev/null
sql "SELECT eoingest.create_job(name => 'tp_refused', brokers => '$KAFKA_BROKERS', topic => 'x', mode => 'two_phase',
       parallelism => 2, target => 'tp_refused', format => 'csv')" >/dev/null
err=$(sql "SELECT eoingest.start_job('tp_refused')" 2>&1 || true)
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" ;; esac; }
like "$err" 'needs 2 prepared transactions, but max_prepared_transactions is 1' "start_job refuses when max_prepared_transactions is too low"
like "$err" 'HINT:  Set max_prepared_transactions to at least 2' "and the hint names the setting"
sql "SELECT eoingest.drop_job('tp_refused'); DROP TABLE tp_refused" >/dev/null
sql "ALTER SYSTEM RESET max_prepared_transactions" >/dev/null
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null

done_testing
