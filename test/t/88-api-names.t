#!/usr/bin/env bash
# The API's shape: every function that takes a job calls it `name`; the
# schema eoingest holds only API, its helpers (behind the views and the
# row-level policies) sit in eoingest_internal, which no role may use by
# name; the views built on them still work for a role granted them.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 4
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
role=api_names_$$
is "$(sql "SELECT string_agg(DISTINCT p.proargnames[1], ',')
             FROM pg_proc p WHERE p.pronamespace = 'eoingest'::regnamespace AND p.pronargs > 0
              AND p.proname NOT IN ('batch')")" "name" \
  "the job is called name in every function that takes one"
is "$(sql "SELECT coalesce(string_agg(proname, ','), 'none') FROM pg_proc
             WHERE pronamespace = 'eoingest'::regnamespace AND proname LIKE '\\_%'")" "none" \
  "no helper is left in the API's schema"
sql "CREATE ROLE $role LOGIN; GRANT USAGE ON SCHEMA eoingest TO $role;
     GRANT SELECT ON eoingest.job_status, eoingest.job_definitions, eoingest.offsets TO $role" >/dev/null
is "$(sql "SELECT has_schema_privilege('$role', 'eoingest_internal', 'USAGE')")" "f" \
  "a role that may use the API's schema may not use eoingest_internal"
is "$(psql -XAtq -v ON_ERROR_STOP=1 -U "$role" \
        -c "SELECT count(*) >= 0 FROM eoingest.job_status" -c "SELECT count(*) >= 0 FROM eoingest.job_definitions" \
        -c "SELECT count(*) >= 0 FROM eoingest.offsets" 2>&1 | tr '\n' ' ')" "t t t " \
  "a role granted the views reads them, and the offsets through their policy"
sql "DROP OWNED BY $role; DROP ROLE $role" >/dev/null
done_testing
