#!/usr/bin/env bash
# Security against a hostile tenant: librdkafka properties by privilege
# class (nothing reaches the OS without pg_read_server_files,
# pg_execute_server_program or superuser), eoingest.allowed_brokers, replay
# as the job's owner, dead letters by job id, lag and offsets filtered, and
# cancellable job functions.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 43
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
as() { local role=$1; shift; psql -XAtq -v ON_ERROR_STOP=1 -U "$role" -c "$*" 2>&1 || true; }
# The server runs as its own OS user: a command it is tricked into running
# would leave a file here.
marks=$EOINGEST_RUN/marks
rm -rf "$marks"; mkdir -p "$marks"; chmod 777 "$marks"
no_marks() { [ -z "$(ls -A "$marks")" ]; }

# Roles: tenant (granted the job functions, nothing else), reader (also
# pg_read_server_files), runner (also pg_execute_server_program), both,
# other (a second tenant), watcher (pg_monitor).
sql "DO \$\$ BEGIN
  CREATE ROLE eoi_tenant LOGIN; CREATE ROLE eoi_reader LOGIN IN ROLE pg_read_server_files;
  CREATE ROLE eoi_runner LOGIN IN ROLE pg_execute_server_program;
  CREATE ROLE eoi_both LOGIN IN ROLE pg_read_server_files, pg_execute_server_program;
  CREATE ROLE eoi_other LOGIN; CREATE ROLE eoi_watcher LOGIN IN ROLE pg_monitor;
END \$\$" >/dev/null
all_roles="eoi_tenant, eoi_reader, eoi_runner, eoi_both, eoi_other, eoi_watcher"
sql "GRANT USAGE ON SCHEMA eoingest TO $all_roles;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.alter_job, eoingest.start_job, eoingest.stop_job,
           eoingest.drop_job, eoingest.reset_offsets, eoingest.replay_dead_letters, eoingest.wait_for_catchup TO $all_roles;
     GRANT SELECT ON eoingest.job_status, eoingest.job_definitions, eoingest.offsets, eoingest.dead_letters,
           eoingest.lag TO $all_roles;
     CREATE TABLE ten_t (id text, ts bigint, temperature double precision);
     GRANT INSERT, SELECT ON ten_t TO $all_roles;
     GRANT USAGE, CREATE ON SCHEMA public TO $all_roles" >/dev/null

topic=ten_$$
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --format csv >/dev/null
create() {	# create ROLE NAME OPTIONS-JSON [BROKERS]
  as "$1" "SELECT eoingest.create_job(name => '$2', brokers => '${4:-$KAFKA_BROKERS}', topic => '$topic',
            target => 'ten_t', batch_timeout_ms => 100, options => '$3')"
}

# --- property classes -------------------------------------------------------------
is "$(create eoi_tenant p_any '{"fetch.wait.max.ms": 50, "socket.timeout.ms": "30000"}')" "" \
  "tuning properties are open to every job owner"
like "$(create postgres p_managed '{"group.id": "mine"}')" 'Kafka client property "group.id" is managed by eoingest' \
  "managed properties are refused, even to superusers"
out=$(create eoi_tenant p_read "{\"security.protocol\": \"SSL\", \"ssl.ca.location\": \"$KAFKA_SSL_CA\"}")
like "$out" 'permission denied to set Kafka client property "ssl.ca.location"' "a property that reads a server file is refused"
like "$out" "GRANT pg_read_server_files" "and the hint names pg_read_server_files"
like "$out" "ssl.ca.pem" "and the inline alternative"
like "$(create eoi_tenant p_key "{\"security.protocol\": \"SSL\", \"ssl.key.location\": \"$PGDATA/postgresql.conf\", \"ssl.certificate.location\": \"$PGDATA/postgresql.conf\"}")" \
  'permission denied to set Kafka client property "ssl.key.location"' "a job may not present the server's files as its key"
sql "CREATE TABLE ten_tls (id text, ts bigint, temperature double precision); GRANT INSERT ON ten_tls TO eoi_reader, eoi_tenant" >/dev/null
as eoi_reader "SELECT eoingest.create_job(name => 'p_read_ok', brokers => '$KAFKA_SSL_BROKERS', topic => '$topic', target => 'ten_tls',
   batch_timeout_ms => 100, options => '{\"security.protocol\": \"SSL\", \"ssl.ca.location\": \"$KAFKA_SSL_CA\"}');
   SELECT eoingest.start_job('p_read_ok')" >/dev/null
check "a member of pg_read_server_files may read the CA from a file, and ingests over TLS" \
  wait_until 60 "SELECT count(*) = 100 FROM ten_tls"
ca_pem=$(sed ':a;N;$!ba;s/\n/\\n/g' "$KAFKA_SSL_CA")
sql "CREATE TABLE ten_pem (id text, ts bigint, temperature double precision); GRANT INSERT ON ten_pem TO eoi_tenant" >/dev/null
as eoi_tenant "SELECT eoingest.create_job(name => 'p_pem', brokers => '$KAFKA_SSL_BROKERS', topic => '$topic', target => 'ten_pem',
   batch_timeout_ms => 100, options => '{\"security.protocol\": \"SSL\", \"ssl.ca.pem\": \"$ca_pem\"}');
   SELECT eoingest.start_job('p_pem')" >/dev/null
check "any job owner may pass the CA inline (ssl.ca.pem), and ingests over TLS" wait_until 60 "SELECT count(*) = 100 FROM ten_pem"

kinit="{\"security.protocol\": \"SASL_PLAINTEXT\", \"sasl.mechanisms\": \"GSSAPI\", \"sasl.kerberos.kinit.cmd\": \"touch $marks/kinit\"}"
out=$(create eoi_tenant p_kinit "$kinit")
like "$out" 'permission denied to set Kafka client property "sasl.kerberos.kinit.cmd"' "a kinit command is refused"
like "$out" "GRANT pg_execute_server_program" "and the hint names pg_execute_server_program"
like "$(create eoi_tenant p_principal "{\"security.protocol\": \"SASL_PLAINTEXT\", \"sasl.mechanisms\": \"GSSAPI\", \"sasl.kerberos.principal\": \"x; touch $marks/principal #\"}")" \
  'permission denied to set Kafka client property "sasl.kerberos.principal"' "a principal (interpolated into kinit's command line) is refused"
like "$(create eoi_tenant p_default '{"security.protocol": "SASL_PLAINTEXT"}')" \
  'permission denied to set Kafka client property "security.protocol"' "SASL without a mechanism (GSSAPI by default: kinit runs) is refused"
like "$(create eoi_tenant p_lower '{"security.protocol": "sasl_ssl", "sasl.mechanism": "gssapi"}')" \
  'permission denied to set Kafka client property "sasl.mechanisms"' "GSSAPI in any spelling is refused"
like "$(create eoi_both p_plugin '{"plugin.library.paths": "/tmp/x"}')" \
  'permission denied to set Kafka client property "plugin.library.paths"' "loading a library is refused even with both predefined roles"
like "$(create eoi_tenant p_unknown '{"offset.store.path": "/tmp/x"}')" \
  "not know to be safe" "an unknown property is refused to non-superusers"
like "$(create eoi_tenant p_case '{"SSL.KEY.LOCATION": "/etc/passwd"}')" \
  "permission denied" "names are matched exactly (no other spelling slips through)"
like "$(create eoi_tenant p_oidc '{"sasl.oauthbearer.token.endpoint.url": "file:///etc/passwd"}')" \
  "must be an http:// or https:// URL" "the OAUTHBEARER token endpoint cannot be a file"
is "$(create postgres p_super '{"log_level": 6}')" "" "a superuser may set properties not on the list"
create eoi_tenant p_alter '{}' >/dev/null
like "$(as eoi_tenant "SELECT eoingest.alter_job('p_alter', options => '$kinit')")" \
  'permission denied to set Kafka client property "sasl.kerberos.kinit.cmd"' "alter_job checks options the same way"
sleep 1   # give a command that did run time to leave its mark
check "no command ran at create_job or alter_job: no mark was left" no_marks

# Positive control: with the role, the same kinit command does run (so the
# mark would have shown above).  create_job's short-lived client may be gone
# before librdkafka gets to kinit; the worker's client lives long enough.
is "$(create eoi_runner p_runner "$kinit")" "" "a member of pg_execute_server_program may use Kerberos"
as eoi_runner "SELECT eoingest.start_job('p_runner')" >/dev/null
check "and librdkafka ran its kinit command (the mark appears)" \
  bash -c "for i in \$(seq 150); do [ -e '$marks/kinit' ] && exit 0; sleep 0.2; done; exit 1"
as eoi_runner "SELECT eoingest.stop_job('p_runner')" >/dev/null
wait_until 60 "SELECT bool_and(pid IS NULL) FROM eoingest.job_status WHERE name = 'p_runner'" >/dev/null
rm -f "$marks"/*
sql "REVOKE pg_execute_server_program FROM eoi_runner" >/dev/null
as eoi_runner "SELECT eoingest.start_job('p_runner')" >/dev/null
check "after the role is revoked, the worker refuses the stored options and fails the job" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%permission denied to set Kafka client property%pg_execute_server_program%'
     FROM eoingest.job_status WHERE name = 'p_runner'"
# Options stored by an older version, or written before a check existed.
sql "UPDATE eoingest.jobs SET options = '{\"security.protocol\": \"SASL_PLAINTEXT\", \"sasl.kerberos.principal\": \"x; touch $marks/stored #\"}'
      WHERE name = 'p_any'" >/dev/null
as eoi_tenant "SELECT eoingest.start_job('p_any')" >/dev/null
check "a worker refuses hostile options already stored" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%sasl.kerberos.principal%' FROM eoingest.job_status WHERE name = 'p_any'"
sleep 1
check "no command ran in a worker: no mark was left" no_marks

# --- eoingest.allowed_brokers -------------------------------------------------------
like "$(sql "ALTER SYSTEM SET eoingest.allowed_brokers = 'kafka:port'" 2>&1 || true)" "not host, host:port or host:*" \
  "a malformed pattern is refused"
sql "ALTER SYSTEM SET eoingest.allowed_brokers = 'localhost:*, 127.0.0.1:$KAFKA_PORT'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
wait_until 10 "SELECT current_setting('eoingest.allowed_brokers') LIKE '%$KAFKA_PORT'" >/dev/null
out=$(create eoi_tenant b_sasl '{}' "$KAFKA_SASL_BROKERS")
like "$out" "Kafka broker \"$KAFKA_SASL_BROKERS\" is not allowed on this server" "create_job refuses a broker the setting does not allow"
like "$out" "eoingest.allowed_brokers" "and names the setting"
like "$(create postgres b_su '{}' "127.0.0.2:9092")" "is not allowed" "for superusers' jobs too"
like "$(create eoi_tenant b_oidc '{"sasl.oauthbearer.token.endpoint.url": "https://127.0.0.2/token"}')" \
  "OAUTHBEARER token endpoint" "the OAUTHBEARER token endpoint must be allowed too"
sql "CREATE TABLE ten_b (id text, ts bigint, temperature double precision); GRANT INSERT ON ten_b TO eoi_tenant" >/dev/null
as eoi_tenant "SELECT eoingest.create_job(name => 'b_ok', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'ten_b',
   batch_timeout_ms => 100); SELECT eoingest.start_job('b_ok')" >/dev/null
check "an allowed broker ingests" wait_until 60 "SELECT count(*) = 100 FROM ten_b"
sql "ALTER SYSTEM SET eoingest.allowed_brokers = 'kafka.example.com:9092'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
check "a running job whose brokers are no longer allowed stops with a clear error" wait_until 30 \
  "SELECT state = 'failed' AND last_error LIKE '%is not allowed on this server%' FROM eoingest.job_status WHERE name = 'b_ok'"
sql "ALTER SYSTEM RESET eoingest.allowed_brokers" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
wait_until 10 "SELECT current_setting('eoingest.allowed_brokers') = ''" >/dev/null

# --- replay runs as the job's owner --------------------------------------------------
sql "CREATE TABLE ten_r (id text, ts bigint, temperature double precision CHECK (temperature < 100));
     ALTER TABLE ten_r OWNER TO eoi_tenant;
     CREATE TABLE ten_r_log (who name, path text); ALTER TABLE ten_r_log OWNER TO eoi_tenant" >/dev/null
as eoi_tenant "CREATE FUNCTION public.ten_r_trig() RETURNS trigger LANGUAGE plpgsql AS
  \$\$BEGIN INSERT INTO public.ten_r_log VALUES (current_user, current_setting('search_path')); RETURN NEW; END\$\$;
  CREATE TRIGGER ten_r_trig BEFORE INSERT ON public.ten_r FOR EACH ROW EXECUTE FUNCTION public.ten_r_trig()" >/dev/null
rtopic=ten_r_$$
eoi-kafka create-topic "$rtopic" 1 >/dev/null
printf 'a,1,20\nb,2,200\nc,3,300\n' | eoi-kafka produce "$rtopic" -p 0 >/dev/null
as eoi_tenant "SELECT eoingest.create_job(name => 'r_job', brokers => '$KAFKA_BROKERS', topic => '$rtopic', target => 'ten_r',
   batch_timeout_ms => 100); SELECT eoingest.start_job('r_job')" >/dev/null
wait_until 60 "SELECT count(*) = 2 FROM eoingest.dead_letters WHERE job = 'r_job'" >/dev/null
sql "ALTER TABLE ten_r DROP CONSTRAINT ten_r_temperature_check; TRUNCATE ten_r_log" >/dev/null
is "$(sql "SELECT eoingest.replay_dead_letters('r_job')")" 2 "a superuser replays the tenant's dead letters"
is "$(sql "SELECT string_agg(DISTINCT who::text, ',') FROM ten_r_log")" eoi_tenant \
  "the owner's trigger runs as the owner, not as the superuser who replays"

# --- dead letters belong to a job, not to its name -----------------------------------
sql "ALTER TABLE ten_r ADD CHECK (temperature < 100) NOT VALID" >/dev/null
printf 'd,4,400\n' | eoi-kafka produce "$rtopic" -p 0 >/dev/null
wait_until 60 "SELECT count(*) = 1 FROM eoingest.dead_letters WHERE job = 'r_job'" >/dev/null
like "$(psql -Xq -U eoi_tenant -c "SELECT eoingest.drop_job('r_job')" 2>&1)" "dropped 1 dead letter of job \"r_job\"" \
  "drop_job says it removes the job's dead letters"
sql "CREATE TABLE ten_bob (id text, ts bigint, temperature double precision); GRANT INSERT ON ten_bob TO eoi_other" >/dev/null
as eoi_other "SELECT eoingest.create_job(name => 'r_job', brokers => '$KAFKA_BROKERS', topic => '$rtopic', target => 'ten_bob',
   start_offset => 'latest')" >/dev/null
is "$(as eoi_other "SELECT eoingest.replay_dead_letters('r_job')")/$(sql "SELECT count(*) FROM ten_bob")" "0/0" \
  "a new job of a dropped job's name (another role's) replays nothing of it"

# --- lag and offsets are filtered like job_status -------------------------------------
wait_until 30 "SELECT count(*) > 0 FROM eoingest.lag WHERE job = 'p_pem'" >/dev/null
is "$(as eoi_other "SELECT count(*) FROM eoingest.lag WHERE job = 'p_pem'")/$(as eoi_other "SELECT count(*) FROM eoingest.offsets WHERE job = 'p_pem'")" \
  "0/0" "another role sees nothing of a job in lag or offsets"
is "$(as eoi_tenant "SELECT count(*) > 0 FROM eoingest.lag WHERE job = 'p_pem'")/$(as eoi_tenant "SELECT count(*) > 0 FROM eoingest.offsets WHERE job = 'p_pem'")" \
  "t/t" "the owner sees its job in both"
is "$(as eoi_watcher "SELECT count(*) > 0 FROM eoingest.lag WHERE job = 'p_pem'")/$(as eoi_watcher "SELECT count(*) > 0 FROM eoingest.offsets WHERE job = 'p_pem'")" \
  "t/t" "pg_monitor sees every job"

# --- job functions notice a cancel ---------------------------------------------------
# A "broker" that accepts connections and never answers: requests block for
# their whole timeout (10 s) unless the backend notices the cancel.
silent_port=25999
timeout 120 python3 -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $silent_port)); s.listen(64); held = []
while True: held.append(s.accept())" &
silent=$!
sleep 0.5
t0=$(date +%s%N)
sql "SELECT eoingest.create_job(name => 'c_dead', brokers => '127.0.0.1:$silent_port', topic => '$topic', target => 'ten_t')" >/dev/null
diag "create_job against a silent broker took $(( ($(date +%s%N) - t0) / 1000000 )) ms (it does not wait for the broker)"
cancel_test() {	# cancel_test NAME SQL: the statement is cancelled 0.5 s in; prints the ms it took to end
  psql -XAtq -c "SET application_name = 'eoi_cancel_$1'; $2" >"$EOINGEST_RUN/cancel_$1.out" 2>&1 &
  local cpid=$!
  wait_until 10 "SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = 'eoi_cancel_$1' AND state = 'active'" >/dev/null
  sleep 0.5
  local t0; t0=$(date +%s%N)
  sql "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'eoi_cancel_$1'" >/dev/null
  wait "$cpid" || true
  echo $(( ($(date +%s%N) - t0) / 1000000 ))
}
ms=$(cancel_test reset "SELECT eoingest.reset_offsets('c_dead', 'earliest')")
diag "reset_offsets against a silent broker ended ${ms} ms after pg_cancel_backend"
like "$(cat "$EOINGEST_RUN/cancel_reset.out")" "canceling statement due to user request" "a cancel interrupts reset_offsets blocked on a silent broker"
ok $([ "$ms" -lt 1500 ] && echo 0 || echo 1) "within a second or so, not after the request's 10 s timeout"
ms=$(cancel_test catchup "SELECT eoingest.wait_for_catchup('c_dead', '60 s')")
diag "wait_for_catchup against a silent broker ended ${ms} ms after pg_cancel_backend"
ok $([ "$ms" -lt 1500 ] && grep -q "canceling statement" "$EOINGEST_RUN/cancel_catchup.out" && echo 0 || echo 1) \
  "and wait_for_catchup"
kill "$silent" 2>/dev/null || true

# --- the documented list is the list the code enforces ---------------------------------
out=$(python3 - "$EOINGEST_REPO/src/kafka/policy.c" "$EOINGEST_REPO/docs/kafka-properties.md" <<'PY'
import re, sys
code = dict(re.findall(r'\{"([^"]+)", (EOI_PROP_[A-Z_| ]+)\}', open(sys.argv[1]).read()))
doc = {}
for line in open(sys.argv[2]):
    m = re.match(r'^\| `([^`]+)`[^|]*\| ([^|]+) \|', line)
    # a topic-scope row counts where no global row has the name
    if m and ('(topic)' not in line.split('|')[1] or m.group(1) not in doc):
        doc[m.group(1)] = m.group(2).strip()
want = {'EOI_PROP_ANY': 'any', 'EOI_PROP_READ': 'read', 'EOI_PROP_EXECUTE': 'exec',
        'EOI_PROP_EXECUTE | EOI_PROP_READ': 'exec + read', 'EOI_PROP_MANAGED': 'managed',
        'EOI_PROP_EOINGEST': 'eoingest'}
bad = [n for n, c in code.items() if not doc.get(n, '').startswith(want[c])]
bad += [n for n, c in doc.items() if n not in code and c != 'superuser']
print('mismatch: ' + ', '.join(bad) if bad else 'consistent')
PY
)
is "$out" consistent "docs/kafka-properties.md gives every property the class src/kafka/policy.c enforces"

# clean up
sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs" >/dev/null 2>&1 || true
sql "DROP TABLE IF EXISTS ten_r, ten_r_log; DROP FUNCTION IF EXISTS public.ten_r_trig()" >/dev/null 2>&1 || true
for r in eoi_tenant eoi_reader eoi_runner eoi_both eoi_other eoi_watcher; do
  sql "DROP OWNED BY $r; DROP ROLE $r" >/dev/null 2>&1 || true
done
done_testing
