#!/usr/bin/env bash
# Tenants kept apart: code a job's owner wrote (triggers, the transform)
# changes no setting of whoever runs it (a superuser replaying dead letters,
# the next batch of the worker), each owner switch carries the job's
# search_path and nothing of the caller's, no view or function tells one
# tenant of another's jobs, a transform has its owner's privileges only, and
# eoingest.max_workers_per_role keeps one tenant from taking every worker
# slot (and, for two_phase, every prepared-transaction slot).
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 30
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
unlike() { case "$1" in *"$2"*) ok 1 "$3"; diag "got: $1" "did not want: *$2*" ;; *) ok 0 "$3" ;; esac; }
as() { local role=$1; shift; psql -XAtq -v ON_ERROR_STOP=1 -U "$role" -c "$*" 2>&1 || true; }
restart_with() {	# ALTER SYSTEM each SETTING VALUE pair, then restart
  while [ $# -ge 2 ]; do
    sql "ALTER SYSTEM SET $1 = $2" >/dev/null
    shift 2
  done
  "$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
}

# Tenants as README's Security section grants them, and a monitoring role.
roles="iso_mallory, iso_alice, iso_hog, iso_watch"
sql "DO \$\$ BEGIN
  CREATE ROLE iso_mallory LOGIN; CREATE ROLE iso_alice LOGIN; CREATE ROLE iso_hog LOGIN;
  CREATE ROLE iso_watch LOGIN IN ROLE pg_monitor;
END \$\$;
GRANT USAGE ON SCHEMA eoingest TO $roles;
GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.alter_job, eoingest.start_job, eoingest.stop_job,
      eoingest.drop_job, eoingest.reset_offsets, eoingest.replay_dead_letters, eoingest.wait_for_catchup TO $roles;
GRANT SELECT ON eoingest.job_status, eoingest.job_definitions, eoingest.offsets, eoingest.dead_letters,
      eoingest.lag TO $roles;
GRANT USAGE, CREATE ON SCHEMA public TO $roles;
CREATE SCHEMA mallory AUTHORIZATION iso_mallory" >/dev/null

topic=iso_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka produce-seq "$topic" --count 10 --format csv >/dev/null	# seq_i,i,i*0.5

# --- replay: the owner's settings stay with the owner --------------------------------
# temperature is an integer: the five odd records (0.5, 1.5, ...) become dead letters.
as iso_mallory "CREATE TABLE m_t (id text, ts bigint, temperature int);
  CREATE TABLE m_log (who text, path text, work_mem text, note text);
  CREATE FUNCTION mallory.now() RETURNS timestamptz LANGUAGE plpgsql AS \$f\$
  BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
      EXECUTE 'ALTER ROLE iso_mallory SUPERUSER';
    END IF;
    RETURN pg_catalog.now();
  END \$f\$;
  SELECT eoingest.create_job(name => 'mj1', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'm_t',
         batch_timeout_ms => 100);
  SELECT eoingest.start_job('mj1')" >/dev/null
check "mj1: five rows in, five dead letters" wait_until 60 \
  "SELECT (SELECT count(*) FROM m_t) = 5 AND (SELECT count(*) FROM eoingest.dead_letters WHERE job = 'mj1') = 5"
as iso_mallory "SELECT eoingest.stop_job('mj1')" >/dev/null
wait_until 30 "SELECT bool_and(state = 'stopped') FROM eoingest.job_status WHERE name = 'mj1'" || true

# The trap: a trigger that leaves mallory's search_path (and a work_mem) behind
# in whatever session runs it, and tries to take the session's role.
as iso_mallory "ALTER TABLE m_t ALTER temperature TYPE float8;
  CREATE FUNCTION mallory.hook() RETURNS trigger LANGUAGE plpgsql AS \$f\$
  BEGIN
    INSERT INTO public.m_log VALUES (current_user, current_setting('search_path'), current_setting('work_mem'), 'entry');
    PERFORM set_config('search_path', 'mallory, pg_catalog, public', false);
    PERFORM set_config('work_mem', '77kB', false);
    BEGIN
      PERFORM set_config('role', 'iso_mallory', false);
    EXCEPTION WHEN OTHERS THEN
      INSERT INTO public.m_log VALUES (current_user, NULL, NULL, 'role: ' || SQLERRM);
    END;
    BEGIN
      PERFORM set_config('session_authorization', 'iso_mallory', false);
    EXCEPTION WHEN OTHERS THEN
      INSERT INTO public.m_log VALUES (current_user, NULL, NULL, 'session_authorization: ' || SQLERRM);
    END;
    RETURN NEW;
  END \$f\$;
  CREATE TRIGGER hook BEFORE INSERT ON m_t FOR EACH ROW EXECUTE FUNCTION mallory.hook()" >/dev/null

out=$(psql -XAtq -v ON_ERROR_STOP=1 -f - 2>&1 <<'EOF' || true
SET search_path = public;
SET work_mem = '4MB';
SELECT eoingest.replay_dead_letters('mj1');
SELECT current_setting('search_path') || ' | ' || current_setting('work_mem') || ' | ' || current_user || ' | ' || session_user;
SELECT now() IS NOT NULL;
SELECT rolsuper FROM pg_roles WHERE rolname = 'iso_mallory';
EOF
)
sql "ALTER ROLE iso_mallory NOSUPERUSER" >/dev/null	# whatever happened above
is "$(sed -n 1p <<<"$out")" 5 "a superuser replays mallory's five dead letters"
is "$(sed -n 2p <<<"$out")" "public | 4MB | postgres | postgres" \
  "afterwards the superuser's search_path, work_mem, role and session user are its own"
is "$(sed -n 4p <<<"$out")" f "and its next now() did not make mallory a superuser"
is "$(sql "SELECT count(*) FROM m_log WHERE note = 'entry' AND who = 'iso_mallory'")" 5 \
  "the trigger did run, as mallory, once per replayed record"
is "$(sql "SELECT count(*) FROM m_log WHERE note LIKE 'role: %' OR note LIKE 'session_authorization: %'")" 10 \
  "and its attempts to take the session's role or session user were refused"

# --- the worker: one batch's settings do not reach the next ----------------------------
sql "TRUNCATE m_log" >/dev/null
as iso_mallory "SELECT eoingest.start_job('mj1')" >/dev/null
for i in 1 2 3; do
  printf 'w%s,%s,1\n' "$i" "$i" | eoi-kafka produce "$topic" >/dev/null
  wait_until 60 "SELECT count(*) = $i FROM m_log WHERE note = 'entry'" || true
done
is "$(sql "SELECT count(*) FROM m_log WHERE note = 'entry'")" 3 "three one-record batches went through the trigger"
is "$(sql "SELECT count(*) FROM m_log WHERE note = 'entry' AND (path LIKE 'mallory%' OR work_mem = '77kB')")" 0 \
  "each batch began with the job's settings, not those the previous batch's trigger left"
as iso_mallory "SELECT eoingest.stop_job('mj1')" >/dev/null

# --- alter_job: the job's search_path, not the caller's --------------------------------
sql "CREATE SCHEMA iso_admin; CREATE TABLE iso_admin.m_t2 (id text, ts bigint, temperature float8);
     GRANT USAGE ON SCHEMA iso_admin TO iso_mallory" >/dev/null
as iso_mallory "CREATE TABLE public.m_t2 (id text, ts bigint, temperature float8);
  SELECT eoingest.create_job(name => 'mj2', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'm_t')" >/dev/null
out=$(psql -XAtq -v ON_ERROR_STOP=1 -c "SET search_path = iso_admin, public" \
  -c "SELECT eoingest.alter_job('mj2', target => 'm_t2')" -c "SELECT current_setting('search_path')" 2>&1 || true)
is "$(sql "SELECT target FROM eoingest.job_definitions WHERE name = 'mj2'")" "public.m_t2" \
  "a superuser's alter_job resolves the target with the job's search_path, not its own"
is "$(tail -n 1 <<<"$out")" "iso_admin, public" "and keeps its own search_path"

# --- other tenants' jobs: neither seen nor confirmed -----------------------------------
atopic=iso_alice_$$
eoi-kafka create-topic "$atopic" 1 >/dev/null
printf 'ALICE-SECRET-4111,1,1\n' | eoi-kafka produce "$atopic" >/dev/null
as iso_alice "CREATE TABLE a_t (id bigint, ts bigint, temperature float8);
  SELECT eoingest.create_job(name => 'alice_secret_job', brokers => '$KAFKA_BROKERS', topic => '$atopic',
         target => 'a_t', on_error => 'fail', batch_timeout_ms => 100);
  SELECT eoingest.start_job('alice_secret_job')" >/dev/null
check "alice's job fails on a record that quotes her data" wait_until 60 \
  "SELECT count(*) = 1 FROM eoingest.jobs WHERE name = 'alice_secret_job' AND last_error LIKE '%ALICE-SECRET%'"
is "$(as iso_alice "SELECT count(*) FROM eoingest.job_definitions WHERE last_error LIKE '%ALICE-SECRET%'")" 1 \
  "alice sees her job's error in job_definitions"
is "$(as iso_watch "SELECT count(*) FROM eoingest.job_definitions WHERE last_error LIKE '%ALICE-SECRET%'")" 1 \
  "so does pg_monitor"
# Every relation of the schema mallory may read, searched for alice's job.
leaks=$(as iso_mallory "DO \$\$
DECLARE r record; n bigint; found text := '';
BEGIN
  FOR r IN SELECT c.relname FROM pg_class c
            WHERE c.relnamespace = 'eoingest'::regnamespace AND c.relkind IN ('r', 'v', 'm')
              AND has_table_privilege(c.oid, 'SELECT') LOOP
    EXECUTE format('SELECT count(*) FROM eoingest.%I t WHERE t::text LIKE ''%%alice_secret_job%%'' OR t::text LIKE ''%%ALICE-SECRET%%''', r.relname) INTO n;
    found := found || r.relname || '=' || n || ' ';
  END LOOP;
  RAISE NOTICE '%', found;
END \$\$")
diag "mallory's view of the eoingest schema: $leaks"
like "$leaks" "job_definitions=0" "job_definitions does not show mallory alice's job"
if grep -qE '=[1-9]' <<<"$leaks"; then ok 1 "no relation of the schema shows mallory anything of alice's job"; else ok 0 "no relation of the schema shows mallory anything of alice's job"; fi
seen=$(as iso_mallory "SELECT eoingest_internal.may_see_job('alice_secret_job')" 2>&1 || true)
like "$seen" "permission denied for schema eoingest_internal" \
  "the helper behind the policies is not callable: no function confirms to mallory that alice's job exists"
is "$(sql "PREPARE see AS SELECT eoingest_internal.may_see_job('alice_secret_job')::text || eoingest_internal.may_see_job('no_such_job')::text;
           SET ROLE iso_mallory; EXECUTE see")" \
  falsefalse "and, called by OID as the policies call it, it answers alike for another's job and for none"
is "$(as iso_mallory "SELECT count(*) > 0 FROM eoingest.offsets WHERE job = 'mj1'")" t \
  "mallory still sees her own offsets through the row-level policy"

# --- a transform has its owner's privileges, and only them -----------------------------
offsets_now() { sql "SELECT string_agg(job || ':' || next_offset, ',' ORDER BY job) FROM eoingest.offsets WHERE job NOT IN ('mj3', 'mj4')"; }
before=$(offsets_now)
as iso_mallory "SELECT eoingest.create_job(name => 'mj3', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
    transform => 'WITH x AS (UPDATE eoingest.offsets SET next_offset = 0 RETURNING 1) INSERT INTO public.m_t2 SELECT value, 0, 0 FROM eoingest.batch(), x');
  SELECT eoingest.create_job(name => 'mj4', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
    transform => 'INSERT INTO public.a_t SELECT 7, 7, 7 FROM eoingest.batch()');
  SELECT eoingest.start_job('mj3'); SELECT eoingest.start_job('mj4')" | grep -v '^$' >&2 || true
check "a transform that writes eoingest.offsets fails for want of privilege" wait_until 60 \
  "SELECT count(*) = 1 FROM eoingest.jobs WHERE name = 'mj3' AND state = 'failed' AND last_error LIKE '%permission denied%'"
check "a transform that writes another tenant's table fails for want of privilege" wait_until 60 \
  "SELECT count(*) = 1 FROM eoingest.jobs WHERE name = 'mj4' AND state = 'failed' AND last_error LIKE '%permission denied%'"
is "$(offsets_now)" "$before" \
  "no job's offsets moved"
is "$(sql "SELECT count(*) FROM a_t")" 0 "alice's table is untouched"
as iso_mallory "SELECT eoingest.drop_job('mj3'); SELECT eoingest.drop_job('mj4')" >/dev/null

# --- worker slots: eoingest.max_workers_per_role ---------------------------------------
ptopic=iso_par_$$
eoi-kafka create-topic "$ptopic" 4 >/dev/null
sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs" >/dev/null
restart_with eoingest.max_workers 4 max_prepared_transactions 4
out=$(sql "ALTER ROLE iso_hog SET eoingest.max_workers_per_role = 2" 2>&1 || true)
is "$out" "" "a superuser gives a role its own worker limit"
like "$(as iso_hog "ALTER ROLE iso_hog SET eoingest.max_workers_per_role = 4")" "permission denied" \
  "the role cannot raise it itself"
for r in hog:4 alice:2; do
  par=${r#*:} r=${r%:*}
  as iso_$r "CREATE TABLE ${r}_p (part int); CREATE TABLE ${r}_tp (part int)" >/dev/null
  as iso_$r "SELECT eoingest.create_job(name => '${r}_p', brokers => '$KAFKA_BROKERS', topic => '$ptopic',
      parallelism => $par, batch_timeout_ms => 100, transform => 'INSERT INTO public.${r}_p SELECT \"partition\" FROM eoingest.batch()')" >/dev/null
done
out=$(as iso_hog "SELECT eoingest.start_job('hog_p')")
like "$out" 'job "hog_p" wants 4 workers, but its owner may run 2 eoingest workers at once' \
  "start_job warns that the job wants more workers than its owner may run"
check "hog's job runs two workers, two wait" wait_until 30 \
  "SELECT string_agg(state, ' ' ORDER BY state) = 'running running waiting waiting' FROM eoingest.job_status WHERE name = 'hog_p'"
like "$(sql "SELECT last_error FROM eoingest.job_status WHERE name = 'hog_p' AND state = 'waiting' LIMIT 1")" \
  "eoingest.max_workers_per_role" "job_status says why they wait"
as iso_alice "SELECT eoingest.start_job('alice_p')" >/dev/null
check "another tenant's job still gets the slots hog could have taken" wait_until 30 \
  "SELECT count(*) = 2 FROM eoingest.job_status WHERE name = 'alice_p' AND state = 'running'"

# two_phase: hog, capped at 2 workers, counts for 2 prepared transactions however many jobs it starts.
as iso_hog "SELECT eoingest.stop_job('hog_p')" >/dev/null
as iso_alice "SELECT eoingest.stop_job('alice_p')" >/dev/null
for j in hog_tp1 hog_tp2; do
  as iso_hog "SELECT eoingest.create_job(name => '$j', brokers => '$KAFKA_BROKERS', topic => '$ptopic', mode => 'two_phase',
      parallelism => 2, batch_timeout_ms => 100, transform => 'INSERT INTO public.hog_tp SELECT \"partition\" FROM eoingest.batch()');
    SELECT eoingest.start_job('$j')" >/dev/null
done
like "$(as iso_hog "SELECT eoingest.create_job(name => 'hog_tp3', brokers => '$KAFKA_BROKERS', topic => '$ptopic', mode => 'two_phase',
      parallelism => 3, transform => 'INSERT INTO public.hog_tp SELECT \"partition\" FROM eoingest.batch()');
    SELECT eoingest.start_job('hog_tp3')")" 'two_phase job "hog_tp3" needs its 3 workers at once, but its owner may run 2' \
  "a two_phase job that needs more workers at once than its owner may run is refused"
out=$(as iso_alice "SELECT eoingest.create_job(name => 'alice_tp', brokers => '$KAFKA_BROKERS', topic => '$ptopic', mode => 'two_phase',
      parallelism => 2, batch_timeout_ms => 100, transform => 'INSERT INTO public.alice_tp SELECT \"partition\" FROM eoingest.batch()');
    SELECT eoingest.start_job('alice_tp')")
unlike "$out" "ERROR" "another tenant's two_phase job still finds prepared-transaction slots"

# clean up
sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs" >/dev/null
sql "ALTER SYSTEM RESET eoingest.max_workers" >/dev/null
sql "ALTER SYSTEM RESET max_prepared_transactions" >/dev/null
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
sql "DROP SCHEMA iso_admin CASCADE; DROP OWNED BY iso_mallory, iso_alice, iso_hog, iso_watch CASCADE;
     DROP ROLE iso_mallory, iso_alice, iso_hog, iso_watch" >/dev/null 2>&1 || true
done_testing
