#!/usr/bin/env bash
# A launcher that restarts while a worker it registered has not attached yet
# must not take the slot for dead and start a second worker for the same
# partitions.  Fault point slot_race (sleep)
# makes the worker attach 8 s late, after the restarted launcher has looked
# at its slot, and widens the launcher's window between that look and the
# reap.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"

plan 4
topic=sr_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE sr_t (part int, off bigint, value text)" >/dev/null
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka produce-seq "$topic" --count 1000 --format csv >/dev/null
sql "SELECT eoingest.create_job(name => 'sr', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
        transform => 'INSERT INTO sr_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()')" >/dev/null
before=$(fault_count slot_race)
set_fault slot_race sleep 8000
launcher=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname = current_database()")
sql "SELECT eoingest.start_job('sr')" >/dev/null
# the worker is registered and sleeps before attaching: the race is set up
check "the worker stops at the fault point before it attaches" wait_fault slot_race "$before" 10
sql "SELECT pg_terminate_backend($launcher)" >/dev/null
wait_until 30 "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname = current_database() AND pid <> $launcher" >/dev/null
# Watch the job's workers while the late worker attaches and a careless
# launcher would start a second one (up to ~20 s after its restart).
most=0
deadline=$((SECONDS + 30))
while [ $SECONDS -lt $deadline ]; do
  n=$(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND application_name = 'eoingest sr/0'")
  [ "$n" -gt "$most" ] && most=$n
  sleep 0.5
done
clear_fault
is "$most" 1 "at most one worker of the job at a time, across the launcher's restart"
check "the job ingests" wait_until 60 "SELECT count(*) = 1000 FROM sr_t"
eoi-kafka produce-seq "$topic" --count 1000 --start 1000 --format csv >/dev/null
sql "SELECT eoingest.wait_for_catchup('sr', '60 s')" >/dev/null
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT off) FROM sr_t")" "2000 2000" "each record exactly once"
sql "SELECT eoingest.drop_job('sr'); DROP TABLE sr_t" >/dev/null
done_testing
