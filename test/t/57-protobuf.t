#!/usr/bin/env bash
# Format protobuf with records written by confluent-kafka's ProtobufSerializer through a registry
# (test/tools/schema_registry.py, which keeps Protobuf schemas as .proto text, as Confluent's does):
# a tenant's job creates its target from the first message's type and adds the fields of two later
# versions of the schema (a Timestamp, a repeated string, a message of an imported file, a oneof, an
# enum, a map, a wrapper, an optional field, a repeated nested message), while workers are SIGKILLed
# right after each change, before the batch commits; the rows are compared with what was produced,
# EXCEPT both ways. Mode upsert keys a created table by the Protobuf key's fields, and tombstones
# delete by that key. The schema id in a record header; a proto2 schema's defaults and required
# field; a mapping reads the message as JSON. Hostile records (no magic byte, a message-index path
# that names nothing, bytes cut short, a schema that does not parse, an Avro schema's id, a string
# that is not UTF-8) are dead letters naming the schema and the byte, and the job goes on.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/avro.sh"
. "$(dirname "$0")/../lib/faults.sh"

plan 24

py=$(avro_python)
tools=$EOINGEST_TEST_DIR/tools
reg_port=${EOINGEST_REGISTRY_PORT:-$((KAFKA_PORT + 11))}
reg_url=http://127.0.0.1:$reg_port
work=$(mktemp -d "$EOINGEST_RUN/protobuf.XXXXXX")
# the registry renders the serializer's descriptors as .proto text: it needs the venv's protobuf
"$py" "$tools/schema_registry.py" "$reg_port" >"$EOINGEST_RUN/registry-protobuf.log" 2>&1 &
reg_pid=$!
trap 'kill $reg_pid 2>/dev/null || true; clear_fault >/dev/null 2>&1 || true; rm -rf "$work";
      sql "ALTER SYSTEM RESET eoingest.allowed_brokers" >/dev/null 2>&1; sql "SELECT pg_reload_conf()" >/dev/null 2>&1 || true' EXIT
deadline=$((SECONDS + 30))
until curl -s -o /dev/null "$reg_url/subjects"; do
  [ $SECONDS -lt $deadline ] || eoi_die "the test registry did not start"
  sleep 0.1
done

# produce TOPIC VERSION FIRST COUNT EXPECT [--key] [--proto2]: rows appended to $work/EXPECT
produce() {
  "$py" "$tools/protobuf_produce.py" "$KAFKA_BROKERS" "$reg_url" "$1" "$2" "$3" "$4" "$work/$5" "${@:6}" >/dev/null
}
like() { case "$1" in *$2*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "expected to contain: $2" ;; esac; }
as_tenant() { sql "SET ROLE pb_tenant; $1"; }
columns_of() {
  sql "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
         FROM pg_attribute WHERE attrelid = '$1'::regclass AND attnum > 0 AND NOT attisdropped"
}
# differs TABLE EXPECT: the rows of TABLE not in the file's, and the file's not in TABLE, as text
differs() {
  sql "CREATE TEMP TABLE expected (doc jsonb);
       COPY expected FROM STDIN;
       SELECT string_agg(side || ' ' || r::text, '; ') FROM (
         SELECT 'missing' AS side, e AS r FROM (SELECT (jsonb_populate_record(NULL::$1, doc)).* FROM expected
                                               EXCEPT ALL SELECT * FROM $1) e
         UNION ALL
         SELECT 'extra', t FROM (SELECT * FROM $1
                                 EXCEPT ALL SELECT (jsonb_populate_record(NULL::$1, doc)).* FROM expected) t) d" \
    < <(sed 's/\\/\\\\/g' "$work/$2"; echo '\.')
}

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "ALTER SYSTEM SET eoingest.allowed_brokers = '127.0.0.1:*'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "DROP SCHEMA IF EXISTS pbt CASCADE; DELETE FROM eoingest.target_changes WHERE job LIKE 'pb\_%'" >/dev/null
sql "DO \$\$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'pb_tenant') THEN
       EXECUTE 'DROP OWNED BY pb_tenant'; DROP ROLE pb_tenant; END IF; END \$\$" >/dev/null
sql "CREATE ROLE pb_tenant LOGIN;
     CREATE SCHEMA pbt; GRANT USAGE, CREATE ON SCHEMA pbt TO pb_tenant;
     GRANT USAGE ON SCHEMA eoingest TO pb_tenant;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.alter_job, eoingest.start_job, eoingest.stop_job,
       eoingest.drop_job TO pb_tenant;
     GRANT SELECT ON eoingest.job_status, eoingest.dead_letters, eoingest.target_changes TO pb_tenant" >/dev/null
for t in pb.o pb.k pb.l pb.h pb.one pb.bad; do eoi-kafka delete-topic "$t" >/dev/null 2>&1 || true; done
eoi-kafka create-topic pb.o 2 >/dev/null
eoi-kafka create-topic pb.k 1 >/dev/null
eoi-kafka create-topic pb.l 1 >/dev/null
eoi-kafka create-topic pb.h 1 >/dev/null
eoi-kafka create-topic pb.one 1 >/dev/null
eoi-kafka create-topic pb.bad 1 >/dev/null
common="brokers => '$KAFKA_BROKERS', format => 'protobuf', schema_registry => '$reg_url', batch_timeout_ms => 100"

# ---- what create_job refuses
out=$(sql "SELECT eoingest.create_job(name => 'pb_x', brokers => '$KAFKA_BROKERS', topic => 'pb.o',
        target => 'pbt.x', format => 'protobuf')" -v VERBOSITY=verbose 2>&1 || true)
like "$out" "22023: format protobuf needs a schema registry" "format protobuf without a registry is refused (22023)"
sql "CREATE TABLE pbt.x (id bigint PRIMARY KEY)" >/dev/null
out=$(sql "SELECT eoingest.create_job(name => 'pb_x', $common, topic => 'pb.o', target => 'pbt.x',
        envelope => 'debezium')" -v VERBOSITY=verbose 2>&1 || true)
like "$out" "envelope debezium needs format json or avro, not protobuf" "envelope debezium with format protobuf is refused"

# ---- a created table follows the schema through three versions, workers killed after each change
produce pb.o 1 1 100 orders.expect
out=$(as_tenant "SELECT eoingest.create_job(name => 'pb_o', $common, topic => 'pb.o', target => 'pbt.orders',
             create_target => true, schema_changes => 'add_columns'); SELECT eoingest.start_job('pb_o')" 2>&1)
like "$out" "target table pbt.orders does not exist yet" \
  "create_job leaves the table to the first message when the schema's file has two messages"
check "v1: the 100 rows arrive in a table the job created" wait_until 60 \
  "SELECT to_regclass('pbt.orders') IS NOT NULL AND (SELECT count(*) = 100 FROM pbt.orders)"
is "$(sql "SELECT tableowner FROM pg_tables WHERE schemaname = 'pbt' AND tablename = 'orders'")" "pb_tenant" \
  "the created table is the job owner's"
kills=$(fault_count after_target_change)
set_fault after_target_change
produce pb.o 2 101 100 orders.expect
produce pb.o 3 201 300 orders.expect
check "v2, v3: a worker is SIGKILLed after a change, before its commit" wait_fault after_target_change "$kills" 60
sleep 2
clear_fault
check "v2, v3: every row arrives after the kills" wait_until 90 "SELECT count(*) = 500 FROM pbt.orders"
is "$(columns_of pbt.orders)" \
  "id bigint, customer text, amount double precision, paid boolean, created timestamp with time zone, tags text[], total jsonb, email text, phone bigint, status text, counts jsonb, score integer, note text, lines jsonb" \
  "the columns: Timestamp timestamptz, repeated string text[], messages and maps jsonb, an enum text, a wrapper its value's type"
is "$(differs pbt.orders orders.expect)" "" "the rows are what was produced, EXCEPT both ways ($(($(fault_count after_target_change) - kills)) kills)"
is "$(sql "SELECT string_agg(split_part(statement, ' ', 1) || ' ' || schema, '; ' ORDER BY id) FROM eoingest.target_changes WHERE job = 'pb_o'")" \
  "CREATE schema id 1 (message evo.Order); ALTER schema id 2 (message evo.Order); ALTER schema id 4 (message evo.Order)" \
  "each change is recorded once, with its schema id and message"
is "$(as_tenant "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'pb_o'")" "0" "nothing is dead-lettered"

# ---- upsert: the created table's primary key is the Protobuf key's fields
produce pb.k 1 1 20 keyed-v1.expect --key
produce pb.k 3 1 20 keyed.expect --key
as_tenant "SELECT eoingest.create_job(name => 'pb_k', $common, topic => 'pb.k', target => 'pbt.keyed', mode => 'upsert',
             key_format => 'protobuf', create_target => true, schema_changes => 'add_columns');
           SELECT eoingest.start_job('pb_k')" >/dev/null
check "upsert: each key's last row arrives" wait_until 60 \
  "SELECT to_regclass('pbt.keyed') IS NOT NULL AND (SELECT count(*) = 20 AND count(lines) = 20 FROM pbt.keyed)"
is "$(sql "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'pbt.keyed'::regclass AND contype = 'p'")" \
  "PRIMARY KEY (id)" "upsert: the primary key is the key message's field"
is "$(differs pbt.keyed keyed.expect)" "" "upsert: the rows are the last version of each key, EXCEPT both ways"
key_id=$(curl -s "$reg_url/subjects/pb.k-key/versions/latest" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["id"])')
"$py" - "$KAFKA_BROKERS" "$key_id" <<'PYEOF'
import struct, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1]})
for i in (3, 17):   # evo.OrderKey {id: i}, as the serializer frames it: schema id, index [0]
    p.produce("pb.k", key=b"\x00" + struct.pack(">I", int(sys.argv[2])) + b"\x00\x08" + bytes([i]), value=None)
if p.flush(30):
    sys.exit("not delivered")
PYEOF
check "upsert: tombstones delete by the Protobuf key" wait_until 60 \
  "SELECT count(*) = 18 AND bool_and(id NOT IN (3, 17)) FROM pbt.keyed"

# ---- the schema id in a record header (the GUID and the message-index path), the value bare
produce pb.h 3 1 30 header.expect --header-id
as_tenant "SELECT eoingest.create_job(name => 'pb_h', $common, topic => 'pb.h', target => 'pbt.headed', create_target => true);
           SELECT eoingest.start_job('pb_h')" >/dev/null 2>&1
check "header framing: the records whose schema id is in __value_schema_id arrive" wait_until 60 \
  "SELECT to_regclass('pbt.headed') IS NOT NULL AND (SELECT count(*) = 30 FROM pbt.headed)"
is "$(differs pbt.headed header.expect)" "" "header framing: the rows are what was produced, EXCEPT both ways"

# ---- a oneof whose two members both come: the one that came last is the one set
"$py" - "$KAFKA_BROKERS" <<'PYEOF'
import sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1]})
# evo.Order of evo/order.proto v3 (schema id 4, message-index path [2]): id 1, email "a@b", then phone 5;
# id 2, phone 6, then email "c@d"
p.produce("pb.one", value=b"\x00\x00\x00\x00\x04\x02\x04" + b"\x08\x01" + b"\x42\x03a@b" + b"\x48\x05")
p.produce("pb.one", value=b"\x00\x00\x00\x00\x04\x02\x04" + b"\x08\x02" + b"\x48\x06" + b"\x42\x03c@d")
if p.flush(30):
    sys.exit("not delivered")
PYEOF
sql "CREATE TABLE pbt.oneof (id bigint, email text, phone bigint); ALTER TABLE pbt.oneof OWNER TO pb_tenant;
     CREATE TABLE pbt.oneof_json (id bigint, email text, phone bigint); ALTER TABLE pbt.oneof_json OWNER TO pb_tenant" >/dev/null
as_tenant "SELECT eoingest.create_job(name => 'pb_one', $common, topic => 'pb.one', target => 'pbt.oneof');
           SELECT eoingest.start_job('pb_one');
           SELECT eoingest.create_job(name => 'pb_one_json', $common, topic => 'pb.one', target => 'pbt.oneof_json',
             mapping => '{\"id\": \"/id\", \"email\": \"/email\", \"phone\": \"/phone\"}');
           SELECT eoingest.start_job('pb_one_json')" >/dev/null
check "a oneof's member that came last is the one set, in the columns and in the message's JSON" wait_until 60 \
  "SELECT (SELECT string_agg(id || ':' || coalesce(email, '-') || ':' || coalesce(phone::text, '-'), ',' ORDER BY id)
             FROM pbt.oneof) = '1:-:5,2:c@d:-'
      AND (SELECT string_agg(id || ':' || coalesce(email, '-') || ':' || coalesce(phone::text, '-'), ',' ORDER BY id)
             FROM pbt.oneof_json) = '1:-:5,2:c@d:-'"

# ---- proto2: required fields, declared defaults; a mapping reads messages as JSON
produce pb.l 0 1 30 legacy.expect --proto2
out=$(as_tenant "SELECT eoingest.create_job(name => 'pb_l', $common, topic => 'pb.l', target => 'pbt.legacy', create_target => true);
           SELECT eoingest.start_job('pb_l')" 2>&1)
like "$out" "created target table pbt.legacy from the schema registry" \
  "create_job creates the table from the registry's latest schema of one message (subject pb.l-value)"
check "proto2: the rows arrive" wait_until 60 "SELECT to_regclass('pbt.legacy') IS NOT NULL AND (SELECT count(*) = 30 FROM pbt.legacy)"
is "$(differs pbt.legacy legacy.expect)" "" "proto2: unset fields hold their declared defaults or NULL, EXCEPT both ways"
sql "CREATE TABLE pbt.mapped (id bigint, who text, cur text, first_sku text, off bigint); ALTER TABLE pbt.mapped OWNER TO pb_tenant" >/dev/null
as_tenant "SELECT eoingest.create_job(name => 'pb_m', $common, topic => 'pb.o', target => 'pbt.mapped',
             mapping => '{\"id\": \"/id\", \"who\": \"/customer\", \"cur\": \"/total/currency\", \"first_sku\": \"/lines/0/sku\", \"off\": \"\$offset\"}');
           SELECT eoingest.start_job('pb_m')" >/dev/null
check "a mapping reads each message as JSON" wait_until 60 \
  "SELECT count(*) = 500 AND count(cur) > 0 AND count(first_sku) > 0 AND bool_and(who = o.customer)
          AND bool_and(cur IS NOT DISTINCT FROM o.total->>'currency') AND bool_and(first_sku IS NOT DISTINCT FROM o.lines->0->>'sku')
     FROM pbt.mapped m JOIN pbt.orders o USING (id)"

# ---- hostile records: dead letters that name the schema and the byte, and the job goes on
avro_id=$(curl -s -X POST -H 'Content-Type: application/json' "$reg_url/subjects/pb.bad-avro/versions" \
            --data '{"schema": "{\"type\": \"record\", \"name\": \"A\", \"fields\": [{\"name\": \"id\", \"type\": \"long\"}]}"}' |
          "$py" -c 'import json, sys; print(json.load(sys.stdin)["id"])')
broken_id=$(curl -s -X POST -H 'Content-Type: application/json' "$reg_url/test/raw" \
              --data '{"subject": "pb.bad-broken", "schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\nmessage Broken {\n  int32 a = ;\n}\n"}' |
            "$py" -c 'import json, sys; print(json.load(sys.stdin)["id"])')
v1_id=1    # evo/order.proto v1, the registry's first schema
"$py" - "$KAFKA_BROKERS" "$v1_id" "$avro_id" "$broken_id" <<'PYEOF'
import struct, sys
from confluent_kafka import Producer
brokers, v1, avro, broken = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def head(i): return b"\x00" + struct.pack(">I", i)
def order(oid, name): return b"\x08" + bytes([oid]) + b"\x12" + bytes([len(name)]) + name
records = [
    b"\x07not protobuf",                        # no magic byte
    head(v1) + b"\x02\x0e" + order(1, b"x"),    # message-index path [7]: the file has 2 messages
    head(v1) + b"\x02\x02" + b"\x12\x09ab",     # a length past the end
    head(broken) + b"\x00" + b"\x08\x01",       # a schema that does not parse
    head(avro) + b"\x00" + b"\x02",             # an Avro schema's id
    head(v1) + b"\x02\x02" + order(2, b"\xff\xfe"),  # a string that is not UTF-8
    head(v1) + b"\x02\x02" + order(77, b"good"),
]
p = Producer({"bootstrap.servers": brokers})
for r in records:
    p.produce("pb.bad", value=r)
if p.flush(30):
    sys.exit("not delivered")
PYEOF
sql "CREATE TABLE pbt.bad (id bigint, customer text); ALTER TABLE pbt.bad OWNER TO pb_tenant" >/dev/null
as_tenant "SELECT eoingest.create_job(name => 'pb_bad', $common, topic => 'pb.bad', target => 'pbt.bad', on_error => 'dead_letter');
           SELECT eoingest.start_job('pb_bad')" >/dev/null
check "hostile records: the good record after them arrives" wait_until 60 "SELECT count(*) = 1 AND min(customer) = 'good' FROM pbt.bad"
letters=$(as_tenant "SELECT string_agg(sqlstate || ' ' || error, E'\n' ORDER BY \"offset\") FROM eoingest.dead_letters WHERE job = 'pb_bad'")
ok "$([ "$(grep -c . <<<"$letters")" = 6 ] &&
      grep -q "^22P03 Protobuf message does not start with Confluent's magic byte 0 (schema id) or 1 (schema GUID), but with 0x07" <<<"$letters" &&
      grep -q "^22P03 Protobuf record's message-index path \[7\] names no message of schema id 1" <<<"$letters" &&
      grep -q "^22P03 Protobuf record written with schema id 1 does not decode at byte 8: a length of 9 bytes runs past the end" <<<"$letters" &&
      grep -q "^22023 schema id $broken_id cannot be read as a Protobuf schema: the schema, line 3: expected a field number, found \";\"" <<<"$letters" &&
      grep -q "^22023 schema id $avro_id is not a Protobuf schema" <<<"$letters" &&
      grep -q "^22021 invalid byte sequence for encoding \"UTF8\": 0xff" <<<"$letters"; echo $?)" \
  "hostile records: six dead letters, each with its SQLSTATE, the schema id and the fault"
[ "$(grep -c . <<<"$letters")" = 6 ] || diag "$letters"

for j in pb_o pb_k pb_h pb_one pb_one_json pb_l pb_m pb_bad; do as_tenant "SELECT eoingest.drop_job('$j')" >/dev/null; done
