#!/usr/bin/env bash
# High availability.  A hot standby made with pg_basebackup -R: job_status
# says the jobs do not run there, the job functions refuse with 25006 and a
# hint.  Then five failovers (test/lib/failover.sh): the primary killed in
# the middle of an ingestion, the standby promoted, the job resumed there by
# itself, exactly once; and the old primary, started again as a primary,
# refuses to run the job (split brain).  Two of them leave a two_phase epoch
# undecided, and decided but not committed.  EOINGEST_LONG=1 runs eight more
# (test/t/93-failover-matrix.t).
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/failover.sh"

plan 40
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# --- on a hot standby ---------------------------------------------------------
topic=ha_$$
sql "CREATE TABLE ha_t (part int, off bigint, value text)" >/dev/null
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 1000 --format csv >/dev/null
sql "SELECT eoingest.create_job(name => 'ha', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
        transform => 'INSERT INTO ha_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('ha')" >/dev/null
sql "SELECT eoingest.wait_for_catchup('ha', '60 s')" >/dev/null
fo_make_standby
fo_wait 60 "SELECT count(*) = 1000 FROM ha_t" || true

is "$(S "SELECT pg_is_in_recovery() || ' ' || string_agg(DISTINCT state, ',') FROM eoingest.job_status WHERE name = 'ha'")" "true standby" \
  "on a hot standby, job_status says the job does not run there"
out=$(S "SELECT eoingest.start_job('ha')")
like "$out" "25006: eoingest jobs are managed on the primary" "job functions refuse on a standby with SQLSTATE 25006"
like "$out" "HINT:  Connect to the primary server" "with a hint"
like "$(S "SELECT eoingest.create_job(name => 'ha2', brokers => '$KAFKA_BROKERS', topic => '$topic', transform => 'SELECT 1')")" \
  "managed on the primary" "create_job too"
like "$(S "SELECT eoingest.wait_for_catchup('ha', '1 s')")" "managed on the primary" \
  "wait_for_catchup answers no false 'caught up' there"
fo_stop_standby
sql "SELECT eoingest.drop_job('ha'); DROP TABLE ha_t" >/dev/null

# --- failovers ------------------------------------------------------------------
: >"$FO_TABLE"
fo_run eo exactly_once 1 async immediate
fo_run tp two_phase 2 sync sigkill
fo_run gap exactly_once 2 gap sigkill
fo_run un two_phase 2 async immediate undecided
fo_run de two_phase 2 async sigkill decided
diag "| mode | replication | kill | lost | duplicated | re-read | ms to resume |" "$(cat "$FO_TABLE")"
done_testing
