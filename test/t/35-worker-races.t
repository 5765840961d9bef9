#!/usr/bin/env bash
# Races between the workers of one job.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"

plan 10
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# --- start_offset holds for every worker, not only the first ----------------------
# Each worker used to decide "the job is new" by itself; a worker that looked
# after a sibling had stored its first row started at the beginning.  The
# fault point makes every worker but worker 0 come to decide 1.5 s late.
topic=so_$$
eoi-kafka create-topic "$topic" 8 >/dev/null
eoi-kafka produce-seq "$topic" --count 40000 --format csv >/dev/null
sql "CREATE TABLE so_t (part int, off bigint, value text)" >/dev/null
set_fault sibling_positions sleep 1500
sql "SELECT eoingest.create_job(name => 'so', brokers => '$KAFKA_BROKERS', topic => '$topic', start_offset => 'latest',
        parallelism => 4, batch_timeout_ms => 100,
        transform => 'INSERT INTO so_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('so')" >/dev/null
wait_until 60 "SELECT count(*) = 8 FROM eoingest.offsets WHERE job = 'so'" >/dev/null
wait_until 30 "SELECT count(*) = 4 FROM eoingest.job_status WHERE name = 'so' AND state = 'running'" >/dev/null
clear_fault
is "$(sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'so'")" 40000 \
  "start_offset 'latest' with parallelism 4: every partition starts at its end"
eoi-kafka produce-seq "$topic" --count 2000 --start 40000 --format csv >/dev/null
sql "SELECT eoingest.wait_for_catchup('so', '60 s')" >/dev/null
is "$(sql "SELECT count(*) || ' ' || count(*) FILTER (WHERE off < 5000) FROM so_t")" "2000 0" \
  "only the 2,000 new records are ingested, none of the backlog"
sql "SELECT eoingest.drop_job('so')" >/dev/null

# Explicit offsets, likewise: named partitions start there, the others at the beginning.
sql "TRUNCATE so_t; SELECT eoingest.create_job(name => 'so2', brokers => '$KAFKA_BROKERS', topic => '$topic',
        start_offset => '{\"0\": 5000, \"5\": 5000}', parallelism => 4, batch_timeout_ms => 100,
        transform => 'INSERT INTO so_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('so2')" >/dev/null
sql "SELECT eoingest.wait_for_catchup('so2', '60 s')" >/dev/null
is "$(sql "SELECT string_agg(part || ':' || min, ',' ORDER BY part) FROM (SELECT part, min(off) FROM so_t GROUP BY part) m")" \
  "0:5000,1:0,2:0,3:0,4:0,5:5000,6:0,7:0" "explicit start offsets hold for every worker's partitions"
is "$(sql "SELECT count(*) FROM so_t")" $((42000 - 5000 - 5000 + 0)) "and exactly the records from there on"
sql "SELECT eoingest.drop_job('so2'); DROP TABLE so_t" >/dev/null

# --- a sibling that waited for the job's row must see the positions stored meanwhile ---
# The sibling's transaction began (and took its snapshot) before it waited
# for the job's row; it then did not see the positions the first worker
# had stored and committed, and inserted them again.  In two_phase, by
# then the first worker had prepared its epoch, with those rows updated: the
# sibling's insert waited on that prepared transaction, which waits for the
# sibling, until lock_timeout (10 s), then retried.  The fault point makes
# each worker hold the job's row 3 s, so that the first worker's epoch is
# prepared before the sibling looks.
topic=fp_$$
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 2000 --format csv >/dev/null
sql "CREATE TABLE fp_t (part int, off bigint, value text)" >/dev/null
set_fault first_positions_locked sleep 3000
t0=$EPOCHREALTIME
sql "SELECT eoingest.create_job(name => 'fp', brokers => '$KAFKA_BROKERS', topic => '$topic', mode => 'two_phase',
        parallelism => 2, batch_timeout_ms => 10000, checkpoint_interval_ms => 60000,
        transform => 'INSERT INTO fp_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('fp')" >/dev/null
wait_until 60 "SELECT (SELECT count(*) = 2000 FROM fp_t) AND
                      (SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%')" >/dev/null || true
elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
clear_fault
diag "two_phase, 2 workers, each holding the job's row 3 s: every row committed after ${elapsed}s"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM fp_t")" "2000 2000" \
  "two_phase with 2 workers: every record once"
check "no worker waited out lock_timeout on the other's prepared epoch (${elapsed}s < 12s)" \
  awk -v e="$elapsed" 'BEGIN {exit !(e < 12)}'
sql "SELECT eoingest.drop_job('fp'); DROP TABLE fp_t" >/dev/null

# --- a target whose column type changes under a running job -------------------------
# The check compared column names only: with a type changed, every record
# that no longer fits went to dead letters instead of the job stopping.
ttopic=ty_$$
eoi-kafka create-topic "$ttopic" 1 >/dev/null
eoi-kafka produce-seq "$ttopic" --count 10 --format csv >/dev/null
sql "CREATE TABLE ty_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'ty', brokers => '$KAFKA_BROKERS', topic => '$ttopic', target => 'ty_t', batch_timeout_ms => 100);
     SELECT eoingest.start_job('ty')" >/dev/null
wait_until 60 "SELECT count(*) = 10 FROM ty_t" >/dev/null
sql "ALTER TABLE ty_t ALTER COLUMN temperature TYPE integer USING temperature::integer" >/dev/null
eoi-kafka produce-seq "$ttopic" --count 10 --start 10 --format csv >/dev/null
check "a column's type changed under the job fails it with a clear error" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%was altered while the job was running%' FROM eoingest.job_status WHERE name = 'ty'"
is "$(sql "SELECT (SELECT count(*) FROM eoingest.dead_letters WHERE job = 'ty') || ' ' || (SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'ty')")" \
  "0 10" "no record was dead-lettered for it, and the offsets did not move"
sql "SELECT eoingest.drop_job('ty'); DROP TABLE ty_t" >/dev/null

# --- the record blamed for an error is the record that caused it ---------------------
# An error context callback also runs for warnings, and after COPY's last
# line (statement triggers): neither may pin an error on a message.
btopic=bl_$$
eoi-kafka create-topic "$btopic" 1 >/dev/null
sql "CREATE TABLE bl_t (id text, ts bigint, temperature double precision);
     CREATE FUNCTION bl_warn() RETURNS trigger LANGUAGE plpgsql AS
       \$\$BEGIN IF NEW.id = 'warn' THEN RAISE WARNING 'row warn is odd'; END IF; RETURN NEW; END\$\$;
     CREATE FUNCTION bl_check() RETURNS trigger LANGUAGE plpgsql AS
       \$\$BEGIN IF EXISTS (SELECT FROM new_rows WHERE id = 'bad') THEN
          RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'a row named bad'; END IF; RETURN NULL; END\$\$;
     CREATE TRIGGER bl_warn BEFORE INSERT ON bl_t FOR EACH ROW EXECUTE FUNCTION bl_warn();
     CREATE TRIGGER bl_check AFTER INSERT ON bl_t REFERENCING NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION bl_check()" >/dev/null
printf 'a,1,1\nwarn,2,2\nb,3,3\nbad,4,4\nc,5,5\n' | eoi-kafka produce "$btopic" -p 0 >/dev/null
sql "SELECT eoingest.create_job(name => 'bl', brokers => '$KAFKA_BROKERS', topic => '$btopic', target => 'bl_t', batch_timeout_ms => 500);
     SELECT eoingest.start_job('bl')" >/dev/null
sql "SELECT eoingest.wait_for_catchup('bl', '60 s')" >/dev/null
is "$(sql "SELECT string_agg(convert_from(value, 'UTF8'), ';' ORDER BY \"offset\") FROM eoingest.dead_letters WHERE job = 'bl'")" \
  "bad,4,4" "only the record that caused a statement trigger's error is dead-lettered"
is "$(sql "SELECT string_agg(id, ',' ORDER BY ts) FROM bl_t")" "a,warn,b,c" "and every other record is stored"
sql "SELECT eoingest.drop_job('bl'); DROP TABLE bl_t; DROP FUNCTION bl_warn(), bl_check()" >/dev/null

done_testing
