#!/usr/bin/env bash
# The schema-registry client is no probe of the server's network: with
# eoingest.allowed_brokers empty only a superuser's job may name a registry
# (as for the OAUTHBEARER token endpoint), and a job owner who is not a
# superuser reads that the registry could not be read, never libcurl's text
# or an HTTP status (those go to the server log).  A superuser's job still
# gets the reason.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 8
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
as() { local role=$1; shift; psql -XAtq -v ON_ERROR_STOP=1 -U "$role" -c "$*" 2>&1 || true; }
sql "DO \$\$ BEGIN CREATE ROLE reg_tenant LOGIN; END \$\$;
     GRANT USAGE ON SCHEMA eoingest TO reg_tenant;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.start_job, eoingest.drop_job TO reg_tenant;
     GRANT SELECT ON eoingest.job_status TO reg_tenant;
     CREATE TABLE reg_t (id int); GRANT INSERT ON reg_t TO reg_tenant" >/dev/null
topic=reg_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
# One message in Confluent's framing (magic 0, schema id 1): reading it asks the registry.
printf '\x00\x00\x00\x00\x01\x02' | kcat -P -b "$KAFKA_BROKERS" -t "$topic" -p 0
closed=127.0.0.1:$((KAFKA_PORT + 97))	# nothing listens there
create() {	# create ROLE NAME REGISTRY
  as "$1" "SELECT eoingest.create_job(name => '$2', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'reg_t',
            format => 'avro', schema_registry => '$3', batch_timeout_ms => 100)"
}
allow() { sql "ALTER SYSTEM SET eoingest.allowed_brokers = '$1'" >/dev/null; sql "SELECT pg_reload_conf()" >/dev/null; }

out=$(create reg_tenant reg_any "http://$closed")
like "$out" "permission denied to name a schema registry" "with allowed_brokers empty, a tenant may not name a registry"
like "$out" "HINT:  Ask a superuser to set eoingest.allowed_brokers to include the registry's host." "and the hint says who can allow it"
is "$(create postgres reg_super "http://$closed")" "" "a superuser may"

allow '127.0.0.1:*'
is "$(create reg_tenant reg_ten "http://$closed")" "" "with the host allowed, the tenant may name the registry"
as reg_tenant "SELECT eoingest.start_job('reg_ten')" >/dev/null
sql "SELECT eoingest.start_job('reg_super')" >/dev/null
check "the tenant's job reads that the registry could not be read" wait_until 60 \
  "SELECT last_error LIKE '%could not read schema id 1 from the schema registry%' FROM eoingest.job_status WHERE name = 'reg_ten'"
err=$(sql "SELECT last_error FROM eoingest.job_status WHERE name = 'reg_ten'")
diag "the tenant sees: $err"
ok "$(grep -qiE 'connect|refused|HTTP [0-9]' <<<"$err" && echo 1 || echo 0)" "but not why: no libcurl text, no HTTP status"
like "$err" "the reason is in the server log" "it is pointed to the server log"
check "a superuser's job gets the reason" wait_until 60 \
  "SELECT last_error ~* 'connect|refused' FROM eoingest.job_status WHERE name = 'reg_super'"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'reg_%'" >/dev/null
allow ''
sql "ALTER SYSTEM RESET eoingest.allowed_brokers" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "DROP TABLE reg_t; DROP OWNED BY reg_tenant; DROP ROLE reg_tenant" >/dev/null
done_testing
