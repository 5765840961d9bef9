#!/usr/bin/env bash
# create_target and schema_changes with records written by confluent-kafka's AvroSerializer through a
# registry (test/tools/schema_registry.py): a job of a tenant role creates its missing target from the
# first writer schema (the table is the tenant's), adds the fields later schemas bring in one ALTER TABLE
# each (a decimal, a timestamp, an array, a nested record), widens int to bigint and a decimal to more
# digits, and stops at a field no widening fits (offsets kept, no dead letter, the ALTER TABLE in the
# hint) until a person changes the column. Workers SIGKILLed right after a change, before the batch
# commits: the change, its record and the rows go together, each row once, each change recorded once.
# A target template creates one table per topic; mode upsert keys a created table by key_columns.
# Format json creates and evolves its table from Kafka Connect's JsonConverter wrapper (Connect's own jars)
# and from the registry's JSON Schemas of JSON Schema records (confluent-kafka's JSONSerializer).
# Every change is in eoingest.target_changes, which the tenant reads.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/avro.sh"
. "$(dirname "$0")/../lib/faults.sh"

plan 50

py=$(avro_python)
tools=$EOINGEST_TEST_DIR/tools
reg_port=${EOINGEST_REGISTRY_PORT:-$((KAFKA_PORT + 10))}
reg_url=http://127.0.0.1:$reg_port
work=$(mktemp -d "$EOINGEST_RUN/evolve.XXXXXX")
python3 "$tools/schema_registry.py" "$reg_port" >"$EOINGEST_RUN/registry-evolve.log" 2>&1 &
reg_pid=$!
trap 'kill $reg_pid 2>/dev/null || true; clear_fault >/dev/null 2>&1 || true; rm -rf "$work";
      sql "ALTER SYSTEM RESET eoingest.allowed_brokers" >/dev/null 2>&1; sql "SELECT pg_reload_conf()" >/dev/null 2>&1 || true' EXIT
deadline=$((SECONDS + 30))
until curl -s -o /dev/null "$reg_url/subjects"; do
  [ $SECONDS -lt $deadline ] || eoi_die "the test registry did not start"
  sleep 0.1
done

# produce TOPIC NAME=SCHEMA... < records
produce() {
  local topic=$1
  shift
  "$py" "$tools/avro_produce.py" "$KAFKA_BROKERS" "$reg_url" "$topic" "$@"
}
schema() { cat >"$work/$1.avsc"; }
like() { case "$1" in *$2*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "expected to contain: $2" ;; esac; }
# records N FIRST TEMPLATE: N lines of TEMPLATE with @ replaced by FIRST, FIRST + 1, ...
records() { for ((i = $2; i < $2 + $1; i++)); do echo "${3//@/$i}"; done; }
as_tenant() { sql "SET ROLE evo_tenant; $1"; }
columns_of() {
  sql "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
         FROM pg_attribute WHERE attrelid = '$1'::regclass AND attnum > 0 AND NOT attisdropped"
}

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
# the tenant's jobs name the test's brokers and registry, on this host
sql "ALTER SYSTEM SET eoingest.allowed_brokers = '127.0.0.1:*'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "DROP SCHEMA IF EXISTS evo CASCADE; DROP SCHEMA IF EXISTS evo_locked CASCADE" >/dev/null
sql "DO \$\$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'evo_tenant') THEN
       EXECUTE 'DROP OWNED BY evo_tenant'; DROP ROLE evo_tenant; END IF; END \$\$" >/dev/null
sql "CREATE ROLE evo_tenant LOGIN;
     CREATE SCHEMA evo; GRANT USAGE, CREATE ON SCHEMA evo TO evo_tenant;
     CREATE SCHEMA evo_locked; GRANT USAGE ON SCHEMA evo_locked TO evo_tenant;
     GRANT USAGE ON SCHEMA eoingest TO evo_tenant;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.alter_job, eoingest.start_job, eoingest.stop_job,
       eoingest.drop_job TO evo_tenant;
     GRANT SELECT ON eoingest.job_status, eoingest.job_definitions, eoingest.offsets, eoingest.dead_letters,
       eoingest.target_changes TO evo_tenant" >/dev/null
for t in evo.a evo.b1 evo.b2 evo.u evo.k evo.j evo.js; do eoi-kafka delete-topic "$t" >/dev/null 2>&1 || true; done
eoi-kafka create-topic evo.a 2 >/dev/null
eoi-kafka create-topic evo.b1 1 >/dev/null
eoi-kafka create-topic evo.b2 1 >/dev/null
eoi-kafka create-topic evo.u 1 >/dev/null
eoi-kafka create-topic evo.j 1 >/dev/null
eoi-kafka create-topic evo.k 1 >/dev/null
eoi-kafka create-topic evo.js 1 >/dev/null
common="brokers => '$KAFKA_BROKERS', format => 'avro', schema_registry => '$reg_url', batch_timeout_ms => 100"

# ---- refusals, each with its SQLSTATE
refused() {
  local state=$1 what=$2 call=$3 out
  out=$(sql "SET ROLE evo_tenant; $call" -v VERBOSITY=verbose 2>&1 || true)
  like "$out" "$state" "refused: $what ($state)"
}
refused 0A000 "create_target for csv, which carries no schema" \
  "SELECT eoingest.create_job(name => 'evo_r', brokers => '$KAFKA_BROKERS', topic => 'evo.a', target => 'evo.r', create_target => true)"
refused 22023 "create_target with a transform" \
  "SELECT eoingest.create_job(name => 'evo_r', $common, topic => 'evo.a', transform => 'SELECT 1', create_target => true)"
refused 22023 "schema_changes with a mapping" \
  "SELECT eoingest.create_job(name => 'evo_r', $common, topic => 'evo.a', target => 'evo.r', mapping => '{\"id\": \"/id\"}', schema_changes => 'add_columns')"
refused 22023 "an unknown schema_changes" \
  "SELECT eoingest.create_job(name => 'evo_r', $common, topic => 'evo.a', target => 'evo.r', create_target => true, schema_changes => 'drop_columns')"
refused 42501 "a schema the owner may not create in" \
  "SELECT eoingest.create_job(name => 'evo_r', $common, topic => 'evo.a', target => 'evo_locked.r', create_target => true)"
sql "CREATE TABLE evo.not_mine (id int); GRANT INSERT, SELECT ON evo.not_mine TO evo_tenant" >/dev/null
refused 42501 "schema_changes on a table the owner does not own" \
  "SELECT eoingest.create_job(name => 'evo_r', $common, topic => 'evo.a', target => 'evo.not_mine', schema_changes => 'add_columns')"
refused 0A000 "schema_changes in two_phase with two workers" \
  "SELECT eoingest.create_job(name => 'evo_r', $common, topic => 'evo.a', target => 'evo.r', mode => 'two_phase', parallelism => 2, create_target => true)"
refused 22023 "upsert with create_target and no key_columns" \
  "SELECT eoingest.create_job(name => 'evo_r', $common, topic => 'evo.u', target => 'evo.r', mode => 'upsert', create_target => true)"

# ---- v1 creates the table
schema v1 <<'EOF'
{"type": "record", "name": "Order", "namespace": "evo", "fields": [
  {"name": "id", "type": "int"},
  {"name": "name", "type": "string"},
  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}}
]}
EOF
records 100 1 '{"schema": "v1", "value": {"id": @, "name": "n@", "amount": D("@.25")}, "partition": @ % 2}' |
  produce evo.a v1=$work/v1.avsc >/dev/null
out=$(as_tenant "SELECT eoingest.create_job(name => 'evo_a', $common, topic => 'evo.a', target => 'evo.orders',
        create_target => true, schema_changes => 'widen', parallelism => 2)" 2>&1)
like "$out" "does not exist yet" "create_job says the target is created from the first message's schema"
like "$out" 'created target table evo.orders from the schema registry' \
  "create_job creates it already from the registry's latest schema for the topic (subject evo.a-value)"
is "$(columns_of evo.orders) $(sql "SELECT count(*) FROM evo.orders")" "id integer, name text, amount numeric(10,2) 0" \
  "the table is there before the job starts, to grant and look at"
out=$(as_tenant "SELECT eoingest.create_job(name => 'evo_down', brokers => '$KAFKA_BROKERS', format => 'avro',
        schema_registry => 'http://127.0.0.1:1', topic => 'evo.a', target => 'evo.down', create_target => true)" 2>&1)
like "$out" "target table evo.down is not created yet" "a registry that does not answer at create_job is a NOTICE"
is "$(sql "SELECT count(*) FROM eoingest.jobs WHERE name = 'evo_down'") $(sql "SELECT to_regclass('evo.down') IS NULL")" \
  "1 t" "and the job is created, its table left to the worker"
is "$(sql "SELECT create_target, schema_changes FROM eoingest.job_definitions WHERE name = 'evo_a'")" "t|widen" \
  "job_definitions shows create_target and schema_changes"
as_tenant "SELECT eoingest.start_job('evo_a')" >/dev/null
check "v1: the 100 rows arrive in a table the job created" wait_until 60 \
  "SELECT to_regclass('evo.orders') IS NOT NULL AND (SELECT count(*) FROM evo.orders) = 100"
is "$(columns_of evo.orders)" "id integer, name text, amount numeric(10,2)" "v1: the columns are the schema's fields, typed by the type table"
is "$(sql "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'evo.orders'::regclass")" evo_tenant \
  "the created table belongs to the job's owner"

# ---- v2 adds four fields: one ALTER TABLE
schema v2 <<'EOF'
{"type": "record", "name": "Order", "namespace": "evo", "fields": [
  {"name": "id", "type": "int"},
  {"name": "name", "type": "string"},
  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
  {"name": "placed", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": null},
  {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
  {"name": "ship", "type": ["null", {"type": "record", "name": "Ship", "fields": [{"name": "city", "type": "string"}]}], "default": null},
  {"name": "qty", "type": ["null", "long"], "default": null}
]}
EOF
records 100 101 '{"schema": "v2", "value": {"id": @, "name": "n@", "amount": D("@.25"), "placed": dt(2026, 1, 2, 3, 4, 5, tzinfo=tz.utc), "tags": ["a", "b@"], "ship": {"city": "c@"}, "qty": @}, "partition": @ % 2}' |
  produce evo.a v2=$work/v2.avsc >/dev/null
check "v2: the rows with the new fields arrive" wait_until 60 "SELECT count(*) = 200 FROM evo.orders"
is "$(columns_of evo.orders)" \
  "id integer, name text, amount numeric(10,2), placed timestamp with time zone, tags text[], ship jsonb, qty bigint" \
  "v2: the four new fields are new columns"
is "$(sql "SELECT count(*) FILTER (WHERE qty IS NULL AND tags IS NULL) || ' ' || count(*) FILTER (WHERE qty = id AND tags = ARRAY['a', 'b' || id] AND ship->>'city' = 'c' || id AND placed = '2026-01-02 03:04:05+00')
           FROM evo.orders")" "100 100" "v2: the old rows have NULL there, the new rows their values"
is "$(sql "SELECT count(*) FROM eoingest.target_changes WHERE job = 'evo_a' AND statement LIKE 'ALTER TABLE%'") $(sql "SELECT (length(statement) - length(replace(statement, 'ADD COLUMN', ''))) / 10 FROM eoingest.target_changes WHERE job = 'evo_a' AND statement LIKE 'ALTER TABLE%'")" \
  "1 4" "v2: one ALTER TABLE adds the four columns"

# ---- v3 widens: id int -> long, amount decimal(10,2) -> decimal(14,4)
schema v3 <<'EOF'
{"type": "record", "name": "Order", "namespace": "evo", "fields": [
  {"name": "id", "type": "long"},
  {"name": "name", "type": "string"},
  {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 14, "scale": 4}},
  {"name": "qty", "type": ["null", "long"], "default": null}
]}
EOF
records 50 5000000000 '{"schema": "v3", "value": {"id": @, "name": "w@", "amount": D("1234567890.1234"), "qty": 1}, "partition": @ % 2}' |
  produce evo.a v3=$work/v3.avsc >/dev/null
check "v3: rows with ids past int and more decimal digits arrive" wait_until 60 "SELECT count(*) = 250 FROM evo.orders"
is "$(columns_of evo.orders)" \
  "id bigint, name text, amount numeric(14,4), placed timestamp with time zone, tags text[], ship jsonb, qty bigint" \
  "v3: id widened to bigint, amount to numeric(14,4); the fields v3 dropped keep their columns"
is "$(sql "SELECT count(*) FROM evo.orders WHERE id >= 5000000000 AND amount = 1234567890.1234 AND placed IS NULL")" 50 \
  "v3: the widened columns hold the new values"

# ---- v4: a field no widening fits stops the job
schema v4 <<'EOF'
{"type": "record", "name": "Order", "namespace": "evo", "fields": [
  {"name": "id", "type": "long"},
  {"name": "name", "type": "string"},
  {"name": "placed", "type": "boolean"}
]}
EOF
before=$(sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'evo_a'")
records 10 6000000000 '{"schema": "v4", "value": {"id": @, "name": "x@", "placed": True}, "partition": 0}' |
  produce evo.a v4=$work/v4.avsc >/dev/null
check "v4: the job stops" wait_until 60 "SELECT bool_or(state = 'failed') FROM eoingest.job_status WHERE name = 'evo_a'"
err=$(sql "SELECT string_agg(last_error, ' ') FROM eoingest.job_status WHERE name = 'evo_a'")
like "$err" 'field "placed" of schema id' "v4: the error names the field and the schema id"
like "$err" "ALTER TABLE evo.orders ALTER COLUMN placed TYPE boolean" "v4: the hint gives the ALTER TABLE a person could run"
is "$(sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'evo_a'") $(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'evo_a'") $(sql "SELECT count(*) FROM evo.orders")" \
  "$before 0 250" "v4: nothing of it is written or dead-lettered, the offsets stay"
sql "ALTER TABLE evo.orders ALTER COLUMN placed TYPE text" >/dev/null
as_tenant "SELECT eoingest.start_job('evo_a')" >/dev/null
check "v4: after the column is changed, the job goes on" wait_until 60 \
  "SELECT count(*) = 10 FROM evo.orders WHERE id >= 6000000000 AND placed = 'true'"

# ---- v5 under SIGKILL right after the change, before the batch commits
schema v5 <<'EOF'
{"type": "record", "name": "Order", "namespace": "evo", "fields": [
  {"name": "id", "type": "long"},
  {"name": "name", "type": "string"},
  {"name": "note", "type": ["null", "string"], "default": null}
]}
EOF
kills=$(fault_count after_target_change)
set_fault after_target_change
records 200 7000000000 '{"schema": "v5", "value": {"id": @, "name": "k@", "note": "t@"}, "partition": @ % 2}' |
  produce evo.a v5=$work/v5.avsc >/dev/null
check "v5: a worker is SIGKILLed after its change, before its commit" wait_fault after_target_change "$kills" 60
sleep 2
clear_fault
check "v5: every row arrives after the kills" wait_until 90 "SELECT count(*) = 200 FROM evo.orders WHERE id >= 7000000000 AND note = 't' || id::text"
is "$(sql "SELECT count(*) - count(DISTINCT id) FROM evo.orders") $(sql "SELECT count(*) FROM eoingest.target_changes WHERE job = 'evo_a' AND statement LIKE '%ADD COLUMN note %'")" \
  "0 1" "v5: each row once, the change recorded once ($(($(fault_count after_target_change) - kills)) kills)"
as_tenant "SELECT eoingest.stop_job('evo_a')" >/dev/null

# ---- a target template creates one table per topic; upsert keys a created table
records 3 1 '{"schema": "v1", "value": {"id": @, "name": "b@", "amount": D("1.00")}}' | produce evo.b1 v1=$work/v1.avsc >/dev/null
records 4 1 '{"schema": "v2", "value": {"id": @, "name": "b@", "amount": D("1.00"), "placed": None, "tags": [], "ship": None, "qty": None}}' |
  produce evo.b2 v2=$work/v2.avsc >/dev/null
as_tenant "SELECT eoingest.create_job(name => 'evo_b', $common, topic => 'evo.b1, evo.b2', target => 'evo.\${topic}', create_target => true);
           SELECT eoingest.start_job('evo_b')" >/dev/null
check "a target template: each topic's table is created from its own schema" wait_until 60 \
  "SELECT to_regclass('evo.\"evo.b1\"') IS NOT NULL AND to_regclass('evo.\"evo.b2\"') IS NOT NULL
     AND (SELECT count(*) FROM evo.\"evo.b1\") = 3 AND (SELECT count(*) FROM evo.\"evo.b2\") = 4"
names_of() { sql "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = '$1'::regclass AND attnum > 0"; }
is "$(names_of 'evo."evo.b1"') / $(names_of 'evo."evo.b2"')" "id,name,amount / id,name,amount,placed,tags,ship,qty" \
  "a target template: evo.b1 has v1's three columns, evo.b2 v2's seven"
records 5 1 '{"schema": "v1", "value": {"id": @ % 2, "name": "u@", "amount": D("@.00")}}' | produce evo.u v1=$work/v1.avsc >/dev/null
as_tenant "SELECT eoingest.create_job(name => 'evo_u', $common, topic => 'evo.u', target => 'evo.keyed', mode => 'upsert',
             key_columns => '{id}', create_target => true); SELECT eoingest.start_job('evo_u')" >/dev/null
check "upsert: the created table is keyed by key_columns and holds each key's last row" wait_until 60 \
  "SELECT to_regclass('evo.keyed') IS NOT NULL AND (SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM evo.keyed) = '0:u4,1:u5'"
is "$(sql "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'evo.keyed'::regclass AND contype = 'p'")" \
  "PRIMARY KEY (id)" "upsert: the primary key is key_columns"

schema key <<'EOF'
{"type": "record", "name": "Key", "namespace": "evo", "fields": [{"name": "id", "type": "int"}]}
EOF
records 5 1 '{"schema": "v1", "key_schema": "key", "key": {"id": @ % 2}, "value": {"id": @ % 2, "name": "k@", "amount": D("@.00")}}' |
  produce evo.k v1=$work/v1.avsc key=$work/key.avsc >/dev/null
as_tenant "SELECT eoingest.create_job(name => 'evo_k', $common, topic => 'evo.k', target => 'evo.keyed2', mode => 'upsert',
             key_format => 'avro', create_target => true); SELECT eoingest.start_job('evo_k')" >/dev/null
check "upsert without key_columns: the created table's primary key is the Avro key schema's fields" wait_until 60 \
  "SELECT to_regclass('evo.keyed2') IS NOT NULL AND (SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM evo.keyed2) = '0:k4,1:k5'
     AND (SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'evo.keyed2'::regclass AND contype = 'p') = 'PRIMARY KEY (id)'"

# ---- Kafka Connect's JsonConverter wrapper (Connect's own jars), its schema gaining a field
"$EOINGEST_TEST_DIR/connect.sh" fetch debezium-postgres >/dev/null
libs=$EOINGEST_CACHE/connect-$KAFKA_VERSION/libs
connect_produce() {
  java -cp "$libs/*" "$EOINGEST_TEST_DIR/json/ConnectProduce.java" "$KAFKA_BROKERS" evo.j "$@" >/dev/null 2>&1
}
connect_produce 0 500 BASE64 false
as_tenant "SELECT eoingest.create_job(name => 'evo_j', brokers => '$KAFKA_BROKERS', topic => 'evo.j', target => 'evo.connect',
             format => 'json', create_target => true, schema_changes => 'add_columns', batch_timeout_ms => 100);
           SELECT eoingest.start_job('evo_j')" >/dev/null
check "json: the table is created from the JsonConverter wrapper's schema" wait_until 90 \
  "SELECT to_regclass('evo.connect') IS NOT NULL AND (SELECT count(*) FROM evo.connect) = 500"
is "$(columns_of evo.connect)" \
  "id bigint, name text, price numeric, born date, seen timestamp with time zone, at_time time without time zone, raw bytea, tags text[], doc jsonb" \
  "json: Connect's types and logical types (Decimal, Date, Timestamp, Time, bytes, an array, a struct) as columns"
connect_produce 500 500 NUMERIC true
check "json: the records of the evolved schema arrive" wait_until 90 "SELECT count(*) = 1000 FROM evo.connect"
is "$(columns_of evo.connect | sed 's/.*, //')" "note text" "json: the field the schema gained is a new column"
expected="SELECT i::bigint, 'n' || i, (i / 100.0)::numeric, date '1970-01-01' + (i % 20000)::int, to_timestamp(i),
                 time '00:00' + (i % 86400) * interval '1 second', convert_to('r' || i, 'UTF8'),
                 ARRAY['t' || i, NULL], CASE WHEN i % 7 <> 0 THEN jsonb_build_object('a', i) END,
                 CASE WHEN i >= 500 THEN 'v2-' || i END
            FROM generate_series(0, 999) i"
is "$(sql "SELECT count(*) FROM (SELECT * FROM evo.connect EXCEPT ALL ($expected)) x") $(sql "SELECT count(*) FROM (($expected) EXCEPT ALL SELECT * FROM evo.connect) x")" \
  "0 0" "json: the table equals what was produced, both ways"
# a message whose schema names a system column: a bad record, not the job's end
printf '%s\n' '{"schema":{"type":"struct","fields":[{"field":"id","type":"int64"},{"field":"xmin","type":"int32"}]},"payload":{"id":-1,"xmin":1}}' |
  eoi-kafka produce evo.j >/dev/null
connect_produce 1000 10 NUMERIC true
check "json: a schema naming a system column is a dead letter (22023), and the job goes on" wait_until 90 \
  "SELECT (SELECT count(*) FROM evo.connect) = 1010 AND (SELECT string_agg(sqlstate, ',') FROM eoingest.dead_letters WHERE job = 'evo_j') = '22023'"

# ---- JSON Schema records (confluent-kafka's JSONSerializer): the registry's schema by the record's id
cat >"$work/js1.json" <<'EOF'
{"type": "object", "title": "Reading", "properties": {
  "sensor": {"type": "string"}, "at": {"type": "string", "format": "date-time"}, "value": {"type": "number"},
  "count": {"type": "integer"}},
 "required": ["sensor"]}
EOF
cat >"$work/js2.json" <<'EOF'
{"type": "object", "title": "Reading", "properties": {
  "sensor": {"type": "string"}, "at": {"type": "string", "format": "date-time"}, "value": {"type": "number"},
  "count": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}},
  "ok": {"oneOf": [{"type": "null"}, {"type": "boolean"}]}, "extra": {"type": "object"}},
 "required": ["sensor"]}
EOF
js_produce() { "$py" "$tools/json_schema_produce.py" "$KAFKA_BROKERS" "$reg_url" evo.js "$@" >/dev/null; }
records 5 1 '{"value": {"sensor": "s@", "at": "2026-01-0@T00:00:00Z", "value": @.5, "count": @}}' | js_produce "$work/js1.json"
as_tenant "SELECT eoingest.create_job(name => 'evo_js', brokers => '$KAFKA_BROKERS', topic => 'evo.js', target => 'evo.readings',
             format => 'json', schema_registry => '$reg_url', create_target => true, schema_changes => 'add_columns',
             batch_timeout_ms => 100); SELECT eoingest.start_job('evo_js')" >/dev/null
check "JSON Schema records: the table is created from the registry's JSON Schema" wait_until 60 \
  "SELECT to_regclass('evo.readings') IS NOT NULL AND (SELECT count(*) FROM evo.readings) = 5"
is "$(columns_of evo.readings)" "sensor text, at timestamp with time zone, value double precision, count bigint" \
  "JSON Schema records: the properties as columns, in the schema's order, typed by type and format"
records 5 6 '{"value": {"sensor": "s@", "at": "2026-01-01T00:00:00Z", "value": @.5, "count": @, "tags": ["a", "b@"], "ok": true, "extra": {"n": @}}}' |
  js_produce "$work/js2.json"
check "JSON Schema records: the evolved schema's records arrive" wait_until 60 "SELECT count(*) = 10 FROM evo.readings"
is "$(columns_of evo.readings | sed 's/^.*count bigint, //') $(sql "SELECT count(*) FROM evo.readings WHERE tags = ARRAY['a', 'b' || count] AND ok AND (extra->>'n')::int = count")" \
  "tags text[], ok boolean, extra jsonb 5" "JSON Schema records: the new properties are new columns, with their values"

# ---- the record of changes, as the tenant reads it
is "$(as_tenant "SELECT string_agg(job || ':' || split_part(statement, ' ', 1) || ':' || (schema ~ '^(schema id [0-9]+|Kafka Connect schema [0-9a-f]{16})$'), ',' ORDER BY id) FROM eoingest.target_changes")" \
  "evo_a:CREATE:true,evo_a:ALTER:true,evo_a:ALTER:true,evo_a:ALTER:true,evo_b:CREATE:true,evo_b:CREATE:true,evo_u:CREATE:true,evo_k:CREATE:true,evo_j:CREATE:true,evo_j:ALTER:true,evo_js:CREATE:true,evo_js:ALTER:true" \
  "eoingest.target_changes: every statement, with its job and schema, readable by the job's owner"

# eoingest.json_schema_number, set for the job's owner in its database: a JSON Schema number becomes numeric
sql "ALTER ROLE evo_tenant IN DATABASE $PGDATABASE SET eoingest.json_schema_number = 'numeric'" >/dev/null
as_tenant "SELECT eoingest.create_job(name => 'evo_jsn', brokers => '$KAFKA_BROKERS', topic => 'evo.js', target => 'evo.readings_num',
             format => 'json', schema_registry => '$reg_url', create_target => true, schema_changes => 'add_columns',
             start_offset => 'earliest', batch_timeout_ms => 100); SELECT eoingest.start_job('evo_jsn')" >/dev/null
check "json_schema_number numeric: the records arrive" wait_until 60 \
  "SELECT to_regclass('evo.readings_num') IS NOT NULL AND (SELECT count(*) FROM evo.readings_num) = 10"
is "$(columns_of evo.readings_num | cut -d, -f3) $(sql "SELECT string_agg(value::text, ',' ORDER BY count) FROM evo.readings_num WHERE count < 4")" \
  " value numeric 1.5,2.5,3.5" "json_schema_number numeric: the owner's setting makes a number a numeric column"
sql "ALTER ROLE evo_tenant IN DATABASE $PGDATABASE RESET eoingest.json_schema_number" >/dev/null

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'evo\_%'" >/dev/null
done_testing
