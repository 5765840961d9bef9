#!/usr/bin/env bash
# A running job's target renamed, moved to another schema or dropped:
# the job fails with an error that says what happened
# and a hint (point the job at the table with alter_job, or create the table
# again), no offset moves, and following the hint resumes the job exactly
# where it stopped.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 15
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
try() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1" 2>&1 || true; }
last_error() { sql "SELECT last_error FROM eoingest.job_status WHERE name = 'tgone'"; }
stored() { sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'tgone'"; }
failed() { wait_until 60 "SELECT state = 'failed' FROM eoingest.job_status WHERE name = 'tgone'"; }

topic=tgone_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --format csv >/dev/null
sql "CREATE TABLE tgone_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'tgone', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'tgone_t',
            batch_timeout_ms => 100);
     SELECT eoingest.start_job('tgone')" >/dev/null
wait_until 60 "SELECT count(*) = 100 FROM tgone_t" >/dev/null

# --- renamed ---------------------------------------------------------------
sql "ALTER TABLE tgone_t RENAME TO tgone_t2" >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --start 100 --format csv >/dev/null
check "a renamed target fails the job" failed
err=$(last_error)
like "$err" 'target "public.tgone_t" of job "tgone" no longer exists under that name' "the error says the name is gone"
like "$err" 'DETAIL: The table was renamed or moved to another schema; it is now public.tgone_t2.' "and where the table went"
like "$err" "HINT: Point the job at it with eoingest.alter_job('tgone', target => 'public.tgone_t2'), then run eoingest.start_job('tgone'); or give the table its old name back." \
  "the hint says how to follow it"
is "$(stored)" 100 "no offset moved"
is "$(try "SELECT eoingest.alter_job('tgone', target => 'public.tgone_t2'); SELECT eoingest.start_job('tgone')")" "" \
  "alter_job accepts the new name although the job has offsets: its old target is gone"
sql "SELECT eoingest.wait_for_catchup('tgone', '60 s')" >/dev/null
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) FROM tgone_t2")" "200 200" "the job resumes: each record exactly once"

# --- moved to another schema -----------------------------------------------
sql "CREATE SCHEMA tgone_s; ALTER TABLE tgone_t2 SET SCHEMA tgone_s" >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --start 200 --format csv >/dev/null
check "a target moved to another schema fails the job" failed
like "$(last_error)" 'it is now tgone_s.tgone_t2.' "the error names the table's new schema"
sql "SELECT eoingest.alter_job('tgone', target => 'tgone_s.tgone_t2'); SELECT eoingest.start_job('tgone')" >/dev/null
sql "SELECT eoingest.wait_for_catchup('tgone', '60 s')" >/dev/null
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) FROM tgone_s.tgone_t2")" "300 300" "each record exactly once"

# --- dropped ----------------------------------------------------------------
sql "DROP TABLE tgone_s.tgone_t2" >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --start 300 --format csv >/dev/null
check "a dropped target fails the job" failed
err=$(last_error)
like "$err" 'target "tgone_s.tgone_t2" of job "tgone" does not exist' "the error says the target is gone"
like "$err" "HINT: Create the table again (the job resumes at its stored offsets), or point the job at the table's new name with eoingest.alter_job('tgone', target => ...); then run eoingest.start_job('tgone')." \
  "the hint says what to do"
is "$(stored)" 300 "no offset moved"
sql "CREATE TABLE tgone_s.tgone_t2 (id text, ts bigint, temperature double precision);
     SELECT eoingest.start_job('tgone')" >/dev/null
sql "SELECT eoingest.wait_for_catchup('tgone', '60 s')" >/dev/null
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) || ' ' || min(ts) FROM tgone_s.tgone_t2")" "100 100 300" \
  "the table created again gets the records from the stored offsets on"

sql "SELECT eoingest.drop_job('tgone'); DROP SCHEMA tgone_s CASCADE" >/dev/null
done_testing
