#!/usr/bin/env bash
# stop_job returns once the job's workers have exited: the natural
#   SELECT eoingest.stop_job('j'); SELECT eoingest.reset_offsets('j', 'earliest');
# (two statements, each its own transaction) must work every time, not only
# when the worker happened to exit before the second one.  The stop takes
# effect at commit, so in a transaction block COMMIT is what waits.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

ROUNDS=${EOINGEST_STOP_ROUNDS:-100}
plan 4
topic=swait_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE sw_t (id int, v text)" >/dev/null
eoi-kafka create-topic "$topic" 1 >/dev/null
seq 1 200 | sed 's/.*/&,x/' | eoi-kafka produce "$topic" >/dev/null
sql "SELECT eoingest.create_job(name => 'sw', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'sw_t',
        format => 'csv', batch_size => 50, batch_timeout_ms => 100)" >/dev/null

attached="SELECT count(*) > 0 FROM eoingest.job_status WHERE name = 'sw' AND pid IS NOT NULL"
failed=0 first_error= started=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
  sql "SELECT eoingest.start_job('sw')" >/dev/null
  wait_until 30 "$attached" >/dev/null || true
  if ! out=$(sql - 2>&1 <<SQL
SELECT eoingest.stop_job('sw');
SELECT eoingest.reset_offsets('sw', 'earliest');
SQL
  ); then
    failed=$((failed + 1))
    [ -n "$first_error" ] || first_error="round $round: $out"
  fi
done
diag "$ROUNDS rounds of start, stop_job, reset_offsets in $((SECONDS - started)) s"
[ -z "$first_error" ] || diag "first failure: $first_error"
is "$failed" 0 "stop_job then reset_offsets, each its own transaction: no failure in $ROUNDS rounds"

# In a transaction block the stop takes effect at COMMIT, which waits.
sql "SELECT eoingest.start_job('sw')" >/dev/null
check "the job runs again" wait_until 30 "$attached"
out=$(sql - <<SQL
BEGIN;
SELECT eoingest.stop_job('sw');
COMMIT;
SELECT count(*) FROM eoingest.job_status WHERE name = 'sw' AND pid IS NOT NULL;
SQL
)
out=${out##*$'\n'}   # the count, after stop_job's empty row
is "$out" 0 "COMMIT of a stop_job returns after the workers exited"

# stopping a stopped job is immediate
t0=$(date +%s%N)
sql "SELECT eoingest.stop_job('sw')" >/dev/null
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "stop_job of a stopped job returns at once (${ms} ms)" test "$ms" -lt 2000

sql "SELECT eoingest.drop_job('sw'); DROP TABLE sw_t" >/dev/null
done_testing
