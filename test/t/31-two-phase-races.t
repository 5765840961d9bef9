#!/usr/bin/env bash
# Mode two_phase under forced interleavings: a worker that prepares after
# its epoch was rolled back (a sibling ended, the launcher restarted), a
# COMMIT PREPARED that fails, a launcher that hits errors or a read-only
# database, prepared-transaction slots that run out, DROP EXTENSION during
# a prepared epoch.  Every case ends with the exact result and no prepared
# transaction left behind.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"

plan 49

# No statement of the test may hang it: a stranded prepared transaction
# would otherwise block drop_job forever.
export PGOPTIONS="-c statement_timeout=60000"

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" ;; esac; }

# log_count TEXT: lines of the server log containing TEXT.
log_count() { grep -cF -- "$1" "$EOINGEST_RUN/pg.log" || true; }

# wait_log TEXT BEFORE SECONDS: until TEXT was logged more than BEFORE times.
wait_log() {
  local deadline=$((SECONDS + $3))
  while [ "$(log_count "$1")" -le "$2" ]; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

launcher_pid() {
  sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname = current_database()"
}

# ingest_job NAME TOPIC: a two_phase job of 2 workers writing (partition, offset).
ingest_job() {
  sql "CREATE TABLE $1 (part int, off bigint, value text);
       SELECT eoingest.create_job(name => '$1', brokers => '$KAFKA_BROKERS', topic => '$2', mode => 'two_phase',
              parallelism => 2, batch_size => 1000, batch_timeout_ms => 100, checkpoint_interval_ms => 200,
              transform => 'INSERT INTO $1 SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
       SELECT eoingest.start_job('$1')" >/dev/null
}

# check_exact JOB TOPIC N: N rows, each once, offsets at the log end, nothing prepared.
check_exact() {
  local job=$1 topic=$2 n=$3
  check "$job: all $n messages arrive" wait_until 60 "SELECT count(*) >= $n FROM $job"
  is "$(sql "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM $job")" "$n $n" \
    "$job: each (partition, offset) exactly once"
  check "$job: no prepared transaction left" wait_until 30 \
    "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'"
}

# finish JOB: stop (which resolves whatever is left in doubt) and drop.
finish() {
  sql "SELECT eoingest.stop_job('$1')" >/dev/null
  wait_until 60 "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'
                    AND (SELECT bool_and(state = 'stopped') FROM eoingest.job_status WHERE name = '$1')" \
    >/dev/null || true
  sql "SELECT eoingest.drop_job('$1')" >/dev/null
}

# new_case NAME: a topic of 4 partitions with 4000 messages, and a job on it.
new_case() {
  job=$1
  topic=${1}_$$
  eoi-kafka create-topic "$topic" 4 >/dev/null
  eoi-kafka produce-seq "$topic" --count 4000 --format csv >/dev/null
  ingest_job "$job" "$topic"
  check "$job: ingesting" wait_until 60 "SELECT count(*) = 4000 FROM $job"
}

# prepare_late NAME SLEEP_MS STRANDER: a job whose two workers both sleep
# before their PREPARE of the same (first) epoch; meanwhile the coordinator
# rolls that epoch back (STRANDER ends a worker or the launcher).  Each
# worker then prepares an epoch that is no longer current.  The fault is set
# before the workers start, so that they have it from their first epoch.
prepare_late() {
  local sleep_ms=$2 strander=$3 before
  job=$1
  topic=${1}_$$
  eoi-kafka create-topic "$topic" 4 >/dev/null
  eoi-kafka produce-seq "$topic" --count 4000 --format csv >/dev/null
  before=$(fault_count before_prepare)
  set_fault before_prepare sleep "$sleep_ms"
  ingest_job "$job" "$topic"
  check "$job: both workers hold before PREPARE" wait_fault before_prepare $((before + 1)) 30
  sql "$strander" >/dev/null
  clear_fault
  check_exact "$job" "$topic" 4000
  eoi-kafka produce-seq "$topic" --count 4000 --start 4000 --format csv >/dev/null
  check "$job: and goes on" wait_until 60 "SELECT count(*) = 8000 FROM $job"
}

# 1. A sibling ends during the epoch (pg_terminate_backend, as alter_job's
#    restarts do): the coordinator rolls the epoch back before worker 0 has
#    prepared it.
prepare_late tp_sibling 4000 "SELECT pg_terminate_backend(pid) FROM eoingest.job_status
                               WHERE name = 'tp_sibling' AND worker = 1"
finish "$job"

# 2. The launcher restarts during the epoch: the new coordinator takes the
#    job over before the workers have prepared.
pid=$(launcher_pid)
prepare_late tp_relaunch 10000 "SELECT pg_terminate_backend($pid)"
check "tp_relaunch: a new launcher took over" wait_until 30 \
  "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname = current_database() AND pid <> $pid"
finish "$job"

# 3. COMMIT PREPARED fails after the decision was recorded.
new_case tp_commit_fails
before=$(fault_count commit_prepared)
set_fault commit_prepared error
eoi-kafka produce-seq "$topic" --count 4000 --start 4000 --format csv >/dev/null
check "$job: COMMIT PREPARED failed" wait_fault commit_prepared "$before" 30
clear_fault
check_exact "$job" "$topic" 8000
finish "$job"

# 3b. on_error = dead_letter writes each batch in a subtransaction: an epoch
#     of many small batches must not overflow the subtransaction cache (64).
topic=tp_subxact_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka produce-seq "$topic" --count 3000 --format csv >/dev/null
overflows=$(log_count "overflowed the subtransaction cache")
sql "CREATE TABLE tp_subxact (part int, off bigint, value text);
     SELECT eoingest.create_job(name => 'tp_subxact', brokers => '$KAFKA_BROKERS', topic => '$topic', mode => 'two_phase',
            on_error => 'dead_letter', batch_size => 10, batch_timeout_ms => 100, checkpoint_interval_ms => 5000,
            transform => 'INSERT INTO tp_subxact SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('tp_subxact')" >/dev/null
check "subxact: all 3000 messages arrive" wait_until 60 "SELECT count(*) = 3000 FROM tp_subxact"
is "$(($(log_count "overflowed the subtransaction cache") - overflows))" 0 \
  "subxact: no epoch overflowed the subtransaction cache"
finish tp_subxact

# 4. Errors in the launcher's loop: logged once, the launcher stays (same
#    process, same coordinator state) and goes on once they stop.
new_case tp_launcher_error
pid=$(launcher_pid)
before=$(fault_count launcher_tick)
recovered=$(log_count "eoingest launcher recovered")
set_fault launcher_tick error
check "launcher_tick raised its error" wait_fault launcher_tick "$before" 30
eoi-kafka produce-seq "$topic" --count 4000 --start 4000 --format csv >/dev/null
clear_fault
check "the launcher says it recovered" wait_log "eoingest launcher recovered" "$recovered" 30
is "$(launcher_pid)" "$pid" "the launcher kept running through its errors"
is "$(($(fault_count launcher_tick) - before))" 1 "and logged the repeated error once"
check_exact "$job" "$topic" 8000
finish "$job"

# 5. A read-only database (default_transaction_read_only = on): the launcher
#    says so and stays; the workers wait, visibly; nothing stays prepared.
new_case tp_read_only
pid=$(launcher_pid)
refused=$(log_count "the database is read-only")
sql "ALTER SYSTEM SET default_transaction_read_only = on" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
eoi-kafka produce-seq "$topic" --count 4000 --start 4000 --format csv >/dev/null
check "read-only: the launcher says why jobs wait" wait_log "the database is read-only" "$refused" 30
check "read-only: job_status shows the workers waiting for it" wait_until 30 \
  "SELECT bool_and(state = 'waiting' AND last_error LIKE '%read-only%') FROM eoingest.job_status WHERE name = '$job'"
check "read-only: nothing is left prepared meanwhile" wait_until 30 \
  "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'"
is "$(launcher_pid)" "$pid" "read-only: the launcher did not restart"
sql "ALTER SYSTEM RESET default_transaction_read_only" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
check_exact "$job" "$topic" 8000
finish "$job"

# Two prepared transactions for the whole server from here on.
sql "ALTER SYSTEM SET max_prepared_transactions = 2" >/dev/null
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null

# 6. start_job counts the workers of every running two_phase job.
new_case tp_slots
sql "CREATE TABLE tp_second (part int, off bigint, value text)" >/dev/null
sql "SELECT eoingest.create_job(name => 'tp_second', brokers => '$KAFKA_BROKERS', topic => '$topic',
       mode => 'two_phase', parallelism => 1, target => 'tp_second', format => 'csv')" >/dev/null
err=$(sql "SELECT eoingest.start_job('tp_second')" 2>&1 || true)
like "$err" 'the running two_phase jobs 2 more' \
  "start_job counts the other running two_phase jobs against max_prepared_transactions"
sql "SELECT eoingest.drop_job('tp_second'); DROP TABLE tp_second" >/dev/null

# 7. A worker that cannot PREPARE (another client holds a slot) rolls the
#    epoch back for its job instead of keeping its sibling's prepared.  The
#    job is stopped while the slot is taken, so that the slot is surely free
#    (its own epochs would otherwise race the test for it).
sql "SELECT eoingest.stop_job('$job')" >/dev/null
wait_until 60 "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'
                  AND (SELECT bool_and(state = 'stopped') FROM eoingest.job_status WHERE name = '$job')" >/dev/null
sql "BEGIN; SELECT pg_catalog.txid_current(); PREPARE TRANSACTION 'eoi_test_hold'" >/dev/null
before=$(log_count "could not finish it: maximum number of prepared transactions reached")
sql "SELECT eoingest.start_job('$job')" >/dev/null
eoi-kafka produce-seq "$topic" --count 20000 --start 4000 --format csv >/dev/null
check "slots: one worker prepared, the other could not, and the coordinator said so" bash -c "
  for i in \$(seq 150); do
    [ \"\$(grep -cF 'could not finish it: maximum number of prepared transactions reached' '$EOINGEST_RUN/pg.log')\" -gt $before ] && exit 0
    sleep 0.2
  done; exit 1"
held=
hold_deadline=$((SECONDS + 30))
while [ -z "$held" ] && [ $SECONDS -lt $hold_deadline ]; do
  held=$(sql "SELECT min(gid) FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'")
  [ -n "$held" ] || sleep 0.1
done
check "slots: a sibling's epoch is prepared (${held:-none})" test -n "$held"
check "slots: job_status shows the worker that cannot prepare" wait_until 30 \
  "SELECT count(*) >= 1 FROM eoingest.job_status WHERE name = '$job'
      AND last_error LIKE '%maximum number of prepared transactions reached%'"
check "slots: its sibling's prepared transaction ($held) is rolled back" wait_until 30 \
  "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid = '$held'"
sql "ROLLBACK PREPARED 'eoi_test_hold'" >/dev/null
check_exact "$job" "$topic" 24000

finish "$job"

# 7b. An idle job does not rewrite eoingest.watermarks every 5 s, only on
#     change (and to confirm it every 50 s).
new_case tp_idle
check "idle: the log end is recorded" wait_until 30 \
  "SELECT bool_and(high_watermark = next_offset AND last_stable_offset = high_watermark)
     FROM eoingest.lag WHERE job = '$job'"
# Count each partition's rewrites over 12 s: every 5 s makes at least 2;
# one stray write (a reassignment writes the partition anew) is tolerated.
xmins() {
  sql "SELECT string_agg(xmin::text, ' ' ORDER BY \"partition\") FROM eoingest.watermarks WHERE job = '$job'"
}
read -r -a last <<<"$(xmins)"
rewrites=(0 0 0 0)
window_end=$((SECONDS + 12))
while [ $SECONDS -lt $window_end ]; do
  sleep 0.5
  read -r -a now <<<"$(xmins)"
  for i in 0 1 2 3; do
    if [ "${now[$i]:-}" != "${last[$i]:-}" ]; then
      rewrites[$i]=$((rewrites[i] + 1))
    fi
  done
  last=("${now[@]}")
done
most=$(printf '%s\n' "${rewrites[@]}" | sort -n | tail -1)
check "idle: eoingest.watermarks is not rewritten while nothing changes (rewrites per partition in 12 s: ${rewrites[*]})" \
  test "$most" -le 1
finish "$job"

# 8. DROP EXTENSION while an epoch is prepared neither hangs nor leaves a GID.
topic=tp_drop_$$
eoi-kafka create-topic "$topic" 4 >/dev/null
eoi-kafka produce-seq "$topic" --count 4000 --format csv >/dev/null
before=$(fault_count after_prepare)
set_fault after_prepare sleep 3000
ingest_job tp_drop "$topic"
check "drop: an epoch is prepared" wait_fault after_prepare "$before" 30
clear_fault
check "DROP EXTENSION eoingest during a prepared epoch completes" \
  sql "SET statement_timeout = '30s'; DROP EXTENSION eoingest"
check "DROP EXTENSION leaves no prepared transaction" wait_until 30 \
  "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'"
sql "CREATE EXTENSION eoingest" >/dev/null

sql "ALTER SYSTEM RESET max_prepared_transactions" >/dev/null
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null

done_testing
