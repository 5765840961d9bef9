#!/usr/bin/env bash
# More workers wanted than there are slots.  Workers that
# find no eoingest worker slot (eoingest.max_workers) or no background worker
# slot (max_worker_processes) show in job_status as 'waiting' with the reason,
# start_job warns when a job cannot get all its workers, and a waiting worker
# starts as soon as a slot is free, with each record ingested exactly once.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 21
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" ;; esac; }

# restart_with SETTING VALUE...: ALTER SYSTEM each pair, then restart.
restart_with() {
  while [ $# -ge 2 ]; do
    sql "ALTER SYSTEM SET $1 = $2" >/dev/null
    shift 2
  done
  "$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
}

# workers JOB: the job's worker states, in worker order ("running waiting").
workers() {
  sql "SELECT string_agg(state, ' ' ORDER BY worker) FROM eoingest.job_status WHERE name = '$1'"
}

# exact JOB N: N rows in the job's table, each (partition, offset) once.
exact() {
  sql "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM $1"
}

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
ta=ws_a_$$
tb=ws_b_$$
eoi-kafka create-topic "$ta" 2 >/dev/null
eoi-kafka create-topic "$tb" 2 >/dev/null
eoi-kafka produce-seq "$ta" --count 1000 --format csv >/dev/null
eoi-kafka produce-seq "$tb" --count 1000 --format csv >/dev/null
for j in ws_a ws_b; do
  topic=$ta
  [ $j = ws_b ] && topic=$tb
  sql "CREATE TABLE $j (part int, off bigint, value text);
       SELECT eoingest.create_job(name => '$j', brokers => '$KAFKA_BROKERS', topic => '$topic', parallelism => 2,
              batch_timeout_ms => 100,
              transform => 'INSERT INTO $j SELECT \"partition\", \"offset\", value FROM eoingest.batch()')" >/dev/null
done

# --- eoingest.max_workers: 3 slots, 4 workers wanted --------------------------
restart_with eoingest.max_workers 3
sql "SELECT eoingest.start_job('ws_a')" >/dev/null
check "ws_a: both workers run" wait_until 30 "SELECT count(*) = 2 FROM eoingest.job_status WHERE name = 'ws_a' AND state = 'running'"
out=$(sql "SELECT eoingest.start_job('ws_b')" 2>&1)
like "$out" 'WARNING:  job "ws_b" wants 2 workers, but only 1 eoingest worker slot is free' \
  "start_job warns that the job does not fit in eoingest.max_workers"
like "$out" 'DETAIL:  Running jobs want 4 workers in all; eoingest.max_workers is 3.' "with the figures"
like "$out" 'HINT:  Raise eoingest.max_workers (and max_worker_processes with it) and restart the server, or stop another job.' \
  "and a hint"
check "ws_b: one worker runs, the other waits" wait_until 30 \
  "SELECT string_agg(state, ' ' ORDER BY state) = 'running waiting' FROM eoingest.job_status WHERE name = 'ws_b'"
is "$(sql "SELECT last_error FROM eoingest.job_status WHERE name = 'ws_b' AND state = 'waiting'")" \
  "no eoingest worker slot is free: running jobs want 4 workers and eoingest.max_workers is 3; raise eoingest.max_workers (and max_worker_processes with it) and restart the server, or stop another job" \
  "job_status says why it waits, naming eoingest.max_workers, wanted and available"
is "$(sql "SELECT pid IS NULL AND last_error_at IS NOT NULL FROM eoingest.job_status WHERE name = 'ws_b' AND state = 'waiting'")" t \
  "the waiting worker has no pid, and last_error_at says since when"
is "$(sql "SELECT count(*) FROM eoingest.job_status WHERE name = 'ws_b' AND state = 'running' AND last_error IS NULL")" 1 \
  "the running worker shows no error"

sql "SELECT eoingest.stop_job('ws_a')" >/dev/null
check "stopping ws_a frees slots: both ws_b workers run" wait_until 20 \
  "SELECT count(*) = 2 FROM eoingest.job_status WHERE name = 'ws_b' AND state = 'running' AND last_error IS NULL"
check "ws_b catches up" sql "SELECT eoingest.wait_for_catchup('ws_b', '60 s')"
is "$(exact ws_b)" "1000 1000" "ws_b: each record exactly once"
is "$(exact ws_a)" "1000 1000" "ws_a: each record exactly once"

# --- max_worker_processes: 5 (the logical replication launcher takes 1, -----
# --- eoingest's cluster launcher and this database's launcher 2) ------------
sql "SELECT eoingest.stop_job('ws_b')" >/dev/null
wait_until 30 "SELECT count(*) = 4 FROM eoingest.job_status WHERE name IN ('ws_a', 'ws_b') AND state = 'stopped'" >/dev/null
sql "ALTER SYSTEM RESET eoingest.max_workers" >/dev/null
restart_with max_worker_processes 5
eoi-kafka produce-seq "$ta" --count 1000 --start 1000 --format csv >/dev/null
eoi-kafka produce-seq "$tb" --count 1000 --start 1000 --format csv >/dev/null
sql "SELECT eoingest.start_job('ws_a')" >/dev/null
check "ws_a: both workers run" wait_until 30 "SELECT count(*) = 2 FROM eoingest.job_status WHERE name = 'ws_a' AND state = 'running'"
out=$(sql "SELECT eoingest.start_job('ws_b')" 2>&1)
like "$out" 'WARNING:  no background worker slot is free for job "ws_b"' \
  "start_job warns that the job does not fit in max_worker_processes"
like "$out" "DETAIL:  max_worker_processes is 5: other background workers take 1, eoingest's launchers 2, the other running jobs want 2." \
  "with the figures"
like "$out" 'HINT:  Raise max_worker_processes and restart the server, or stop another job.' "and a hint"
check "ws_b: both workers wait" wait_until 30 \
  "SELECT count(*) = 2 FROM eoingest.job_status WHERE name = 'ws_b' AND state = 'waiting'"
like "$(sql "SELECT last_error FROM eoingest.job_status WHERE name = 'ws_b' AND worker = 1")" \
  "no background worker slot is free: max_worker_processes is 5 and all are in use, 4 of them by eoingest (2 launchers and 2 workers); running jobs want 2 more workers; raise max_worker_processes" \
  "job_status says why, naming max_worker_processes, wanted and available"
sql "SELECT eoingest.stop_job('ws_a')" >/dev/null
check "stopping ws_a frees slots: both ws_b workers run" wait_until 30 \
  "SELECT count(*) = 2 FROM eoingest.job_status WHERE name = 'ws_b' AND state = 'running' AND last_error IS NULL"
check "ws_b catches up" sql "SELECT eoingest.wait_for_catchup('ws_b', '60 s')"
is "$(exact ws_b)" "2000 2000" "ws_b: each record exactly once, across both rounds"

sql "SELECT eoingest.drop_job('ws_a'); SELECT eoingest.drop_job('ws_b'); DROP TABLE ws_a, ws_b" >/dev/null
sql "ALTER SYSTEM RESET max_worker_processes" >/dev/null
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
done_testing
