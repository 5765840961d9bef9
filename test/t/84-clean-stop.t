#!/usr/bin/env bash
# stop_job stores what a worker consumed before it exits.  An upsert job
# stores its offsets every offset_commit_interval_ms (here a minute), after
# the rows: a stop in between used to leave the last batches to be read and
# applied again at the next start.  Now the worker, asked to stop, stores
# its consumed positions first; nothing is read twice.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 4
topic=cstop_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE cs_t (id int PRIMARY KEY, v text, applied int DEFAULT 1)" >/dev/null
# counts how often each key was applied
sql "CREATE FUNCTION cs_count() RETURNS trigger LANGUAGE plpgsql AS
       \$\$BEGIN NEW.applied := OLD.applied + 1; RETURN NEW; END\$\$;
     CREATE TRIGGER cs_count BEFORE UPDATE ON cs_t FOR EACH ROW EXECUTE FUNCTION cs_count()" >/dev/null
eoi-kafka create-topic "$topic" 1 >/dev/null
sql "SELECT eoingest.create_job(name => 'cs', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'cs_t',
        mode => 'upsert', key_columns => '{id}', columns => '{id,v}', batch_timeout_ms => 100,
        offset_commit_interval_ms => 60000);
     SELECT eoingest.start_job('cs')" >/dev/null
seq 1 10 | sed 's/.*/&,first/' | eoi-kafka produce "$topic" >/dev/null
check "the records are applied (their offsets are due in a minute)" wait_until 60 "SELECT count(*) = 10 FROM cs_t"
sql "SELECT eoingest.stop_job('cs')" >/dev/null
check "the worker exits" wait_until 30 \
  "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND application_name LIKE 'eoingest cs/%'"
is "$(sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'cs'")" 10 "stop_job stored the consumed offsets first"
sql "SELECT eoingest.start_job('cs')" >/dev/null
seq 11 12 | sed 's/.*/&,third/' | eoi-kafka produce "$topic" >/dev/null
wait_until 60 "SELECT count(*) = 12 FROM cs_t" >/dev/null || true
is "$(sql "SELECT count(*) FILTER (WHERE applied > 1) FROM cs_t")" 0 "after the start no record was applied twice"

sql "SELECT eoingest.drop_job('cs'); DROP TABLE cs_t; DROP FUNCTION cs_count()" >/dev/null
done_testing
