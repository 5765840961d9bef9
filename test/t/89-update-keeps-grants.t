#!/usr/bin/env bash
# ALTER EXTENSION eoingest UPDATE keeps the grants a DBA gave: the updates
# that drop and create again create_job, alter_job, batch, lag, job_status,
# job_definitions and replay_dead_letters give back, at their end, what was
# granted on them.  A role granted what README says before the update (at
# 0.1, and at 0.2 for what 0.2 added) holds the same privileges after the
# update to the current version, and PUBLIC still holds none.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 9
role=upg_app_$$
sql "DROP EXTENSION IF EXISTS eoingest CASCADE" >/dev/null 2>&1
sql "CREATE EXTENSION eoingest VERSION '0.1'" >/dev/null
sql "CREATE ROLE $role; GRANT USAGE ON SCHEMA eoingest TO $role;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.start_job, eoingest.batch, eoingest.replay_dead_letters TO $role;
     GRANT SELECT ON eoingest.job_status, eoingest.job_definitions TO $role" >/dev/null
sql "ALTER EXTENSION eoingest UPDATE TO '0.2'" >/dev/null
sql "GRANT EXECUTE ON FUNCTION eoingest.alter_job TO $role WITH GRANT OPTION; GRANT SELECT ON eoingest.lag TO $role" >/dev/null
sql "ALTER EXTENSION eoingest UPDATE" >/dev/null
is "$(sql "SELECT extversion FROM pg_extension WHERE extname = 'eoingest'")" \
  "$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$EOINGEST_REPO/eoingest.control")" "updated from 0.1 to the current version"

is "$(sql "SELECT string_agg(p.proname || '=' || has_function_privilege('$role', p.oid, 'EXECUTE'), ' ' ORDER BY p.proname)
             FROM pg_proc p WHERE p.pronamespace = 'eoingest'::regnamespace
              AND p.proname IN ('create_job', 'start_job', 'batch', 'alter_job', 'replay_dead_letters')")" \
  "alter_job=true batch=true create_job=true replay_dead_letters=true start_job=true" \
  "EXECUTE on create_job, start_job, batch, alter_job and replay_dead_letters kept"
is "$(sql "SELECT string_agg(v || '=' || has_table_privilege('$role', 'eoingest.' || v, 'SELECT'), ' ' ORDER BY v)
             FROM unnest(ARRAY['job_status', 'job_definitions', 'lag']) v")" \
  "job_definitions=true job_status=true lag=true" "SELECT on job_status, job_definitions and lag kept"
is "$(sql "SELECT (SELECT count(*) FROM pg_proc p, aclexplode(p.proacl) a
                     WHERE p.pronamespace = 'eoingest'::regnamespace AND a.grantee = 0
                       AND p.proname IN ('create_job', 'alter_job', 'start_job'))
                 + (SELECT count(*) FROM aclexplode((SELECT proacl FROM pg_proc WHERE oid = 'eoingest.alter_job'::regproc)) a
                     WHERE a.grantee = '$role'::regrole AND a.is_grantable)")" 1 \
  "PUBLIC holds none of them; the grant option is kept"

sql "DROP OWNED BY $role; DROP ROLE $role" >/dev/null

# --- a tenant's job across the update from the previous version ---------------
# The library runs no job while the installed extension is older: the job
# the tenant started before the update waits, then runs after it, as the
# tenant, without loss or duplicate, and the tenant's grants still work.
prev=$(ls "$EOINGEST_REPO"/sql/eoingest--*--*.sql | sed -n 's/.*--\([0-9.]*\)--\([0-9.]*\)\.sql$/\1 \2/p' |
       awk -v cur="$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$EOINGEST_REPO/eoingest.control")" '$2 == cur {print $1}')
tenant=upg_tenant_$$
topic=upg_$$
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 1000 --format csv >/dev/null
sql "DROP EXTENSION eoingest CASCADE" >/dev/null 2>&1
sql "CREATE EXTENSION eoingest VERSION '$prev'" >/dev/null
sql "CREATE ROLE $tenant LOGIN; GRANT USAGE ON SCHEMA eoingest TO $tenant;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.start_job, eoingest.stop_job,
                               eoingest.wait_for_catchup TO $tenant;
     GRANT SELECT ON eoingest.job_status TO $tenant;
     CREATE TABLE upg_t (id text, ts bigint, temperature double precision, who name DEFAULT current_user);
     GRANT INSERT, SELECT ON upg_t TO $tenant" >/dev/null
psql -XAtq -v ON_ERROR_STOP=1 -U "$tenant" \
  -c "SELECT eoingest.create_job(name => 'upg', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'upg_t',
                                 columns => '{id,ts,temperature}')" \
  -c "SELECT eoingest.start_job('upg')" >/dev/null
sleep 3
is "$(sql "SELECT count(*) FROM upg_t")" 0 "at $prev the tenant's job waits: the library runs no job of an older extension"
sql "ALTER EXTENSION eoingest UPDATE" >/dev/null
eoi-kafka produce-seq "$topic" --count 1000 --start 1000 --format csv >/dev/null
is "$(psql -XAtq -U "$tenant" -c "SELECT eoingest.wait_for_catchup('upg', '60 s')")" t \
  "after the update the job runs, and its owner can still wait for it"
psql -XAtq -U "$tenant" -c "SELECT eoingest.create_job(name => 'upg_map', brokers => '$KAFKA_BROKERS', topic => '$topic',
                              target => 'upg_t', mapping => '{\"id\": \"/1\", \"ts\": \"/2\"}',
                              create_target => false, schema_changes => 'none')" >/dev/null 2>&1 || true
is "$(sql "SELECT mapping->>'ts' || ' ' || schema_changes FROM eoingest.jobs WHERE name = 'upg_map' AND owner = '$tenant'::regrole")" \
  "/2 none" "create_job, which the update created again, keeps the tenant's grant and takes 0.15's mapping and 0.16's schema_changes"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) || ' ' || string_agg(DISTINCT who, ',') FROM upg_t")" \
  "2000 2000 $tenant" "every record once, written as the tenant"
psql -XAtq -U "$tenant" -c "SELECT eoingest.stop_job('upg')" >/dev/null
is "$(sql "SELECT state FROM eoingest.job_status WHERE name = 'upg'")" "stopped" "the tenant stops its job"
sql "SELECT eoingest.drop_job('upg'); SELECT eoingest.drop_job('upg_map'); DROP TABLE upg_t; DROP OWNED BY $tenant; DROP ROLE $tenant" >/dev/null
done_testing
