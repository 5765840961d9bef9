#!/usr/bin/env bash
# ALTER EXTENSION eoingest UPDATE keeps the grants a DBA gave: the updates
# that drop and create again create_job, alter_job, batch, lag, job_status,
# job_definitions and replay_dead_letters give back, at their end, what was
# granted on them.  A role granted what README says before the update (at
# 0.1, and at 0.2 for what 0.2 added) holds the same privileges after the
# update to the current version, and PUBLIC still holds none.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 4
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
done_testing
