#!/usr/bin/env bash
# Row-level security.  A row a policy refuses inside a transform is that
# record's dead letter, not the job's failure (SQLSTATE 42501, as a missing
# privilege, but the row's).  A target with row-level security is refused,
# with a hint that names the transform, whatever the mode.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/jobs.sh"

plan 5
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
as() { local role=$1; shift; psql -XAtq -v ON_ERROR_STOP=1 -U "$role" -c "$*" 2>&1 || true; }
topic=rls_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
seq 0 899 | eoi-kafka produce "$topic" >/dev/null
sql "DO \$\$ BEGIN CREATE ROLE rls_owner LOGIN; END \$\$;
     GRANT USAGE ON SCHEMA eoingest TO rls_owner;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.start_job, eoingest.stop_job, eoingest.drop_job TO rls_owner;
     CREATE TABLE rls_t (id int PRIMARY KEY);
     ALTER TABLE rls_t ENABLE ROW LEVEL SECURITY;
     CREATE POLICY not_seven ON rls_t FOR INSERT TO rls_owner WITH CHECK (id <> 7);
     CREATE POLICY read_all ON rls_t FOR SELECT TO rls_owner USING (true);
     GRANT INSERT, SELECT, UPDATE, DELETE ON rls_t TO rls_owner" >/dev/null

as rls_owner "SELECT eoingest.create_job(name => 'rls_tf', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 200,
    transform => 'INSERT INTO public.rls_t SELECT value::int FROM eoingest.batch()');
  SELECT eoingest.start_job('rls_tf')" >/dev/null
check "the transform's job reaches the log end" wait_until 60 \
  "SELECT coalesce(sum(next_offset), 0) = 900 FROM eoingest.offsets WHERE job = 'rls_tf'"
is "$(sql "SELECT count(*) FROM rls_t")" 899 "the 899 rows the policy allows are in"
is "$(sql "SELECT string_agg(\"offset\" || ':' || sqlstate, ',') FROM eoingest.dead_letters WHERE job = 'rls_tf'")" "7:42501" \
  "the row the policy refuses is the dead letter"

for mode in exactly_once upsert; do
  out=$(as rls_owner "SELECT eoingest.create_job(name => 'rls_$mode', brokers => '$KAFKA_BROKERS', topic => '$topic',
          target => 'rls_t', mode => '$mode', columns => '{id}')")
  case "$out" in
    *'has row-level security enabled'*'Write through a transform'*) ok 0 "$mode: a target with row-level security is refused, the hint names the transform" ;;
    *) ok 1 "$mode: a target with row-level security is refused, the hint names the transform"; diag "got: $out" ;;
  esac
done

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'rls_%';
     DROP TABLE rls_t; DROP OWNED BY rls_owner; DROP ROLE rls_owner" >/dev/null
done_testing
