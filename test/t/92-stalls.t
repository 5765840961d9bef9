#!/usr/bin/env bash
# A worker whose commit waits for a synchronous standby that is not there
# (a promoted standby that inherited synchronous_standby_names, say) shows
# as 'stalled' in job_status, with what it waits on, and last_commit_at
# goes stale; once the wait ends, the job carries on exactly.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 6
topic=stall_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE stall_t (part int, off bigint, value text)" >/dev/null
eoi-kafka create-topic "$topic" 1 >/dev/null
sql "SELECT eoingest.create_job(name => 'stall', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
        transform => 'INSERT INTO stall_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('stall')" >/dev/null
seq 1 100 | eoi-kafka produce "$topic" >/dev/null
sql "SELECT eoingest.wait_for_catchup('stall', '60 s')" >/dev/null

sql "ALTER SYSTEM SET synchronous_standby_names = 'nobody'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
seq 101 200 | eoi-kafka produce "$topic" >/dev/null
export PGOPTIONS="-c eoingest.stall_after=2s"
check "a commit waiting for a missing synchronous standby shows as stalled" wait_until 60 \
  "SELECT state = 'stalled' AND wait_event = 'IPC:SyncRep' FROM eoingest.job_status WHERE name = 'stall'"
out=$(sql "SELECT last_error FROM eoingest.job_status WHERE name = 'stall'")
case "$out" in
  *"waiting on IPC:SyncRep: synchronous replication; check synchronous_standby_names"*) ok 0 "with the reason and what to check" ;;
  *) ok 1 "with the reason and what to check"; diag "got: $out" ;;
esac
is "$(sql "SELECT last_commit_at < step_since AND step_since < now() - interval '2 s' FROM eoingest.job_status WHERE name = 'stall'")" t \
  "last_commit_at stays behind (the alert on a stale last commit fires)"

sql "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
check "the wait over, the job carries on" wait_until 60 \
  "SELECT state = 'running' FROM eoingest.job_status WHERE name = 'stall'"
sql "SELECT eoingest.wait_for_catchup('stall', '60 s')" >/dev/null
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT off) FROM stall_t")" "200 200" "each record exactly once"
check "and the lag back to 0 once the worker measures it again" wait_until 30 \
  "SELECT lag = 0 FROM eoingest.lag WHERE job = 'stall'"
sql "SELECT eoingest.drop_job('stall'); DROP TABLE stall_t" >/dev/null
done_testing
