#!/usr/bin/env bash
# alter_job checks the definition it makes exactly as create_job checks one:
# as the job's owner, the transform with the job's search_path.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 5
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
try() { psql -XAtq -v ON_ERROR_STOP=1 "$@" 2>&1 || true; }
topic=alt_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
sql "CREATE SCHEMA alt_s; CREATE FUNCTION alt_s.twice(bigint) RETURNS bigint LANGUAGE sql AS 'SELECT \$1 * 2';
     CREATE TABLE alt_t (off bigint); CREATE TABLE alt_nokey (id text, ts bigint, temperature double precision)" >/dev/null

# A transform job created with alt_s on its search_path.
sql "SET search_path = alt_s, public;
     SELECT eoingest.create_job(name => 'alt_tf', brokers => '$KAFKA_BROKERS', topic => '$topic',
            transform => 'INSERT INTO alt_t SELECT twice(\"offset\") FROM eoingest.batch()')" >/dev/null
is "$(try -c "SELECT eoingest.alter_job('alt_tf', transform => 'INSERT INTO alt_t SELECT twice(\"offset\") + 1 FROM eoingest.batch()')")" "" \
  "a transform is planned with the job's search_path, not the caller's"
like "$(try -c "SELECT eoingest.alter_job('alt_tf', target => 'alt_t')")" "target and transform cannot both be given" \
  "a target cannot be added next to a transform"

sql "SELECT eoingest.create_job(name => 'alt_csv', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'alt_nokey')" >/dev/null
like "$(try -c "SELECT eoingest.alter_job('alt_csv', mode => 'upsert')")" "mode upsert needs key columns" \
  "a switch to upsert needs a key, as at create_job"

# The owner's privileges decide, whoever alters.
sql "DO \$\$ BEGIN CREATE ROLE eoi_alt LOGIN; END \$\$;
     GRANT USAGE ON SCHEMA eoingest TO eoi_alt; GRANT EXECUTE ON FUNCTION eoingest.create_job TO eoi_alt;
     CREATE TABLE alt_mine (id text, ts bigint, temperature double precision); GRANT INSERT ON alt_mine TO eoi_alt;
     CREATE TABLE alt_theirs (id text, ts bigint, temperature double precision)" >/dev/null
try -U eoi_alt -c "SELECT eoingest.create_job(name => 'alt_own', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'public.alt_mine')" >/dev/null
like "$(try -c "SELECT eoingest.alter_job('alt_own', target => 'alt_theirs')")" "permission denied for table alt_theirs" \
  "a superuser cannot point a role's job at a table the role may not write"
is "$(sql "SELECT target FROM eoingest.job_definitions WHERE name = 'alt_own'")" "public.alt_mine" "and the job is unchanged"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'alt_%';
     DROP TABLE alt_t, alt_nokey, alt_mine, alt_theirs; DROP SCHEMA alt_s CASCADE;
     REVOKE ALL ON SCHEMA eoingest FROM eoi_alt; REVOKE ALL ON FUNCTION eoingest.create_job FROM eoi_alt; DROP ROLE eoi_alt" >/dev/null
done_testing
