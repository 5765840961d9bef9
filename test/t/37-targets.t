#!/usr/bin/env bash
# Targets that would lose data silently are refused: UNLOGGED tables in the
# modes that promise exactly-once (a crash empties them while the offsets
# survive), system catalogs; and a target may be given as a regclass.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 10
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
try() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1" 2>&1 || true; }
topic=tg_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --format csv >/dev/null
sql "CREATE UNLOGGED TABLE tg_unlogged (id text, ts bigint, temperature double precision);
     CREATE TABLE tg_logged (id text, ts bigint, temperature double precision)" >/dev/null

like "$(try "SELECT eoingest.create_job(name => 'tg_u', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'tg_unlogged')")" \
  "is an unlogged table, which mode exactly_once cannot write into" "create_job refuses an UNLOGGED target in exactly_once"
is "$(try "SELECT eoingest.create_job(name => 'tg_alo', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'tg_unlogged', mode => 'at_least_once')")" "" \
  "at_least_once, which promises less, may write into one"
sql "SELECT eoingest.create_job(name => 'tg_l', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'tg_logged', batch_timeout_ms => 100)" >/dev/null
like "$(try "SELECT eoingest.alter_job('tg_l', target => 'tg_unlogged')")" "is an unlogged table" "alter_job refuses it too"
like "$(try "SELECT eoingest.create_job(name => 'tg_cat', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'pg_class')")" \
  "is a system catalog" "a system catalog is refused, even to a superuser"

# A target switched to UNLOGGED under a running job: the job fails, no offset moves.
sql "SELECT eoingest.start_job('tg_l')" >/dev/null
wait_until 60 "SELECT count(*) = 100 FROM tg_logged" >/dev/null
sql "ALTER TABLE tg_logged SET UNLOGGED" >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --start 100 --format csv >/dev/null
check "a target switched to UNLOGGED fails the running job with a clear error" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%is an unlogged table%' FROM eoingest.job_status WHERE name = 'tg_l'"
is "$(sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'tg_l'")/$(sql "SELECT count(*) FROM tg_logged")" "100/100" \
  "and no offset moved past what the table holds"

# regclass
is "$(try "SELECT eoingest.create_job(name => 'tg_rc', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'tg_logged'::regclass, mode => 'at_least_once')")" "" \
  "target accepts a regclass"
is "$(sql "SELECT target FROM eoingest.job_definitions WHERE name = 'tg_rc'")" "public.tg_logged" "stored schema-qualified"
like "$(try "SELECT eoingest.create_job(name => 'tg_bad', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 42)")" \
  "target must be a table's name or a regclass" "any other type of target is refused with a hint"

# The SQL face: \df+, \dv+ and \dt+ explain every object of the extension.
is "$(sql "SELECT string_agg(pg_describe_object(classid, objid, 0), ', ')
             FROM pg_depend d
            WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
              AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'eoingest')
              AND classid IN ('pg_proc'::regclass, 'pg_class'::regclass)
              AND (classid <> 'pg_class'::regclass OR (SELECT relkind FROM pg_class WHERE oid = objid) IN ('r', 'v'))
              AND obj_description(objid, (SELECT relname FROM pg_class WHERE oid = classid)) IS NULL")" "" \
  "every function, view and table of the extension has a COMMENT"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'tg_%'; DROP TABLE tg_unlogged, tg_logged" >/dev/null
done_testing
