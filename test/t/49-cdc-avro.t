#!/usr/bin/env bash
# envelope => 'debezium' with format => 'avro': Debezium-shaped change events written by
# confluent-kafka's AvroSerializer (the real serializer) against the test registry, with an envelope
# schema written to look like the one Kafka Connect's AvroConverter derives from Debezium's Connect
# schema (connect.name properties, Decimal as bytes with logicalType decimal).  NOT real Debezium with
# an Avro converter: Confluent's AvroConverter is not on Maven Central (see README).  Covers c, r, u
# (and a key change), d, a tombstone, t refused and allowed, each semantic type by value, an unknown op
# as a dead letter with its SQLSTATE, and the offsets at the log end.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/avro.sh"

plan 18

py=$(avro_python)
tools=$EOINGEST_TEST_DIR/tools
reg_port=${EOINGEST_REGISTRY_PORT:-$((KAFKA_PORT + 10))}
reg_user=eoi_reg:s3cret-$$
reg_url=http://127.0.0.1:$reg_port
reg_state=$EOINGEST_RUN/registry-state-cdc.json
work=$(mktemp -d "$EOINGEST_RUN/cdcavro.XXXXXX")
rm -f "$reg_state"
python3 "$tools/schema_registry.py" "$reg_port" --user "$reg_user" --state "$reg_state" \
  >"$EOINGEST_RUN/registry-cdc.log" 2>&1 &
reg_pid=$!
trap 'kill $reg_pid 2>/dev/null || true; wait $reg_pid 2>/dev/null || true; rm -rf "$work"
      sql "ALTER SYSTEM RESET eoingest.test_avro_json_check" >/dev/null 2>&1 || true
      sql "SELECT pg_reload_conf()" >/dev/null 2>&1 || true' EXIT
# every event read as JSON from its bytes is read with Avro C too, and must read the same (XX000 if not)
sql "ALTER SYSTEM SET eoingest.test_avro_json_check = on" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
deadline=$((SECONDS + 30))
until curl -s -o /dev/null -u "$reg_user" "$reg_url/subjects"; do
  [ $SECONDS -lt $deadline ] || eoi_die "the test registry did not start"
  sleep 0.1
done
auth_options="{\"schema.registry.basic.auth.user.info\": \"$reg_user\"}"

# The value schema as Debezium's PostgreSQL connector and the AvroConverter write it.
cat >"$work/env.avsc" <<'EOF'
{"type": "record", "name": "Envelope", "namespace": "dbz.public.cav",
 "connect.name": "dbz.public.cav.Envelope", "connect.version": 2, "fields": [
  {"name": "before", "default": null, "type": ["null", {"type": "record", "name": "Value",
     "connect.name": "dbz.public.cav.Value", "fields": [
    {"name": "id", "type": "int"},
    {"name": "amount", "default": null, "type": ["null", {"type": "bytes", "scale": 2, "precision": 12,
       "connect.version": 1, "connect.parameters": {"scale": "2", "connect.decimal.precision": "12"},
       "connect.name": "org.apache.kafka.connect.data.Decimal", "logicalType": "decimal"}]},
    {"name": "day", "default": null, "type": ["null", {"type": "int", "connect.version": 1, "connect.name": "io.debezium.time.Date"}]},
    {"name": "at_local", "default": null, "type": ["null", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTimestamp"}]},
    {"name": "at_ms", "default": null, "type": ["null", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.Timestamp"}]},
    {"name": "at_zoned", "default": null, "type": ["null", {"type": "string", "connect.version": 1, "connect.name": "io.debezium.time.ZonedTimestamp"}]},
    {"name": "tod", "default": null, "type": ["null", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.MicroTime"}]},
    {"name": "uid", "default": null, "type": ["null", {"type": "string", "connect.version": 1, "connect.name": "io.debezium.data.Uuid"}]},
    {"name": "doc", "default": null, "type": ["null", {"type": "string", "connect.version": 1, "connect.name": "io.debezium.data.Json"}]},
    {"name": "raw", "default": null, "type": ["null", "bytes"]},
    {"name": "nums", "default": null, "type": ["null", {"type": "array", "items": ["null", "int"]}]},
    {"name": "note", "default": null, "type": ["null", "string"]},
    {"name": "tn", "default": null, "type": ["null", {"type": "long", "connect.version": 1, "connect.name": "io.debezium.time.NanoTime"}]},
    {"name": "vd", "default": null, "type": ["null", {"type": "record", "name": "VariableScaleDecimal", "namespace": "io.debezium.data",
       "connect.name": "io.debezium.data.VariableScaleDecimal", "connect.version": 1, "connect.doc": "Variable scaled decimal",
       "fields": [{"name": "scale", "type": "int"}, {"name": "value", "type": "bytes"}]}]},
    {"name": "bits", "default": null, "type": ["null", {"type": "bytes", "connect.version": 1,
       "connect.parameters": {"length": "10"}, "connect.name": "io.debezium.data.Bits"}]}]}]},
  {"name": "after", "default": null, "type": ["null", "Value"]},
  {"name": "source", "type": {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql",
     "connect.name": "io.debezium.connector.postgresql.Source", "fields": [
    {"name": "version", "type": "string"}, {"name": "connector", "type": "string"},
    {"name": "name", "type": "string"}, {"name": "ts_ms", "type": "long"},
    {"name": "db", "type": "string"}, {"name": "schema", "type": "string"}, {"name": "table", "type": "string"},
    {"name": "sequence", "default": null, "type": ["null", "string"]},
    {"name": "lsn", "default": null, "type": ["null", "long"]}]}},
  {"name": "op", "type": "string"},
  {"name": "ts_ms", "default": null, "type": ["null", "long"]},
  {"name": "transaction", "default": null, "type": ["null", {"type": "record", "name": "block",
     "namespace": "event", "connect.name": "event.block", "connect.version": 1, "fields": [
    {"name": "id", "type": "string"}, {"name": "total_order", "type": "long"},
    {"name": "data_collection_order", "type": "long"}]}]}]}
EOF
cat >"$work/key.avsc" <<'EOF'
{"type": "record", "name": "Key", "namespace": "dbz.public.cav", "connect.name": "dbz.public.cav.Key",
 "fields": [{"name": "id", "type": "int"}]}
EOF

# ev OP BEFORE AFTER KEY: one line for avro_produce.py
ev() {
  echo "{\"schema\": \"env\", \"key_schema\": \"key\", \"key\": $4, \"value\": {\"before\": $2, \"after\": $3, \"op\": '$1', \"ts_ms\": 1700000000000, \"transaction\": None, \"source\": {\"version\": '3.6.1.Final', \"connector\": 'postgresql', \"name\": 'dbz', \"ts_ms\": 1700000000000, \"db\": 'src', \"schema\": 'public', \"table\": 'cav', \"lsn\": 1}}}"
}
full1="{'id': 1, 'amount': D('-1234567890.12'), 'day': -1, 'at_local': 1700000000123456, 'at_ms': -1, 'at_zoned': '2023-11-14T22:13:20.123456Z', 'tod': 86399999999, 'uid': '8c2d5b8e-4a8f-4c5e-9d3a-2f1e0b7c6a59', 'doc': '{\"a\": [1, null]}', 'raw': b'\\x00\\xff\\\\', 'nums': [1, None, -3], 'note': 'r', 'tn': 86399999999999, 'vd': {'scale': 3, 'value': b'\\xed\\x29\\x79'}, 'bits': b'\\x05\\x02'}"
row2="{'id': 2, 'amount': D('0.01'), 'day': 19000, 'at_local': 0, 'at_ms': 1700000000123, 'at_zoned': '2023-11-14T23:13:20+01:00', 'tod': 0, 'uid': '00000000-0000-0000-0000-000000000000', 'doc': '{}', 'raw': b'', 'nums': [], 'note': None, 'tn': 1500, 'vd': {'scale': 0, 'value': b'\\x00'}, 'bits': b'\\x00\\x00'}"
row2u="{'id': 2, 'amount': D('2.50'), 'day': 19000, 'at_local': 0, 'at_ms': 1700000000123, 'at_zoned': None, 'tod': 1, 'uid': None, 'doc': None, 'raw': None, 'nums': None, 'note': 'updated', 'tn': None, 'vd': None, 'bits': None}"
row3="{'id': 3, 'amount': None, 'day': None, 'at_local': None, 'at_ms': None, 'at_zoned': None, 'tod': None, 'uid': None, 'doc': None, 'raw': None, 'nums': None, 'note': 'three', 'tn': None, 'vd': None, 'bits': None}"
row30="{'id': 30, 'amount': None, 'day': None, 'at_local': None, 'at_ms': None, 'at_zoned': None, 'tod': None, 'uid': None, 'doc': None, 'raw': None, 'nums': None, 'note': 'moved', 'tn': None, 'vd': None, 'bits': None}"
row4="{'id': 4, 'amount': None, 'day': None, 'at_local': None, 'at_ms': None, 'at_zoned': None, 'tod': None, 'uid': None, 'doc': None, 'raw': None, 'nums': None, 'note': 'after truncate', 'tn': None, 'vd': None, 'bits': None}"

topic=cav_$$
topic_d=cav_d_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka create-topic "$topic_d" 1 >/dev/null
{
  ev r None "$full1" "{'id': 1}"            # 0 snapshot read
  ev c None "$row2" "{'id': 2}"             # 1
  ev c None "$row3" "{'id': 3}"             # 2
  ev u "$row2" "$row2u" "{'id': 2}"         # 3 update
  ev u "$row3" "$row30" "{'id': 30}"        # 4 key change 3 -> 30
  ev d "$full1" None "{'id': 1}"            # 5 delete
  echo "{\"schema\": \"env\", \"key_schema\": \"key\", \"key\": {'id': 1}, \"value\": None}"  # 6 tombstone
  ev x None "$row4" "{'id': 4}"             # 7 unknown op: dead letter
  ev t None None None                       # 8 truncate
  ev c None "$row4" "{'id': 4}"             # 9
} >"$work/events"
produce() {
  "$py" "$tools/avro_produce.py" "$KAFKA_BROKERS" "http://$reg_user@127.0.0.1:$reg_port" "$1" \
    env="$work/env.avsc" key="$work/key.avsc" >/dev/null
}
produce "$topic" <"$work/events"
head -2 "$work/events" | produce "$topic_d"   # the types, never updated afterwards

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
cols="id int PRIMARY KEY, amount numeric(12,2), day date, at_local timestamp, at_ms timestamptz, at_zoned timestamptz,
      tod time, uid uuid, doc jsonb, raw bytea, nums int[], note text, tn time, vd numeric, bits bit(10)"
sql "CREATE TABLE cav ($cols); CREATE TABLE cav_t ($cols); CREATE TABLE cav_d ($cols)" >/dev/null
# cav: stops before the truncate (a second topic would be more code; batch by batch is the same path)
sql "SELECT eoingest.create_job(name => 'cav', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'cav',
       format => 'avro', envelope => 'debezium', schema_registry => '$reg_url', options => '$auth_options',
       batch_size => 3, batch_timeout_ms => 100);
     SELECT eoingest.create_job(name => 'cav_t', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'cav_t',
       format => 'avro', envelope => 'debezium', schema_registry => '$reg_url', options => '$auth_options',
       on_truncate => 'truncate', mode => 'two_phase', batch_timeout_ms => 100);
     SELECT eoingest.start_job('cav'); SELECT eoingest.start_job('cav_t')" >/dev/null

at_end="SELECT next_offset = 10 FROM eoingest.offsets WHERE job = "
check "cav's offset reaches the log end (10)" wait_until 60 "$at_end'cav'"
check "cav_t's offset reaches the log end (10)" wait_until 60 "$at_end'cav_t'"

is "$(sql "SELECT string_agg(id || ':' || coalesce(note, 'NULL'), ',' ORDER BY id) FROM cav")" \
  "2:updated,4:after truncate,30:moved" \
  "refused truncate: r, c, u, the key change 3 -> 30 (old key deleted), d, c after it; the tombstone skipped"
is "$(sql "SELECT \"offset\" || ':' || sqlstate || ':' || (error LIKE '%unrecognized op \"x\"%' OR error LIKE '%refuses truncate%') FROM eoingest.dead_letters WHERE job = 'cav' ORDER BY \"offset\"" | tr '\n' ' ')" \
  "7:22023:true 8:22000:true " "the unknown op and the refused truncate are dead letters with their SQLSTATEs"
is "$(sql "SELECT string_agg(id || ':' || coalesce(note, 'NULL'), ',' ORDER BY id) FROM cav_t") $(sql "SELECT string_agg(\"offset\"::text, ',') FROM eoingest.dead_letters WHERE job = 'cav_t'")" \
  "4:after truncate 7" "on_truncate => 'truncate' empties the target at the t event (two_phase); only the unknown op is a dead letter"

# every type by value, from a topic with the first two events alone
sql "SELECT eoingest.create_job(name => 'cav_d', brokers => '$KAFKA_BROKERS', topic => '$topic_d', target => 'cav_d',
       format => 'avro', envelope => 'debezium', schema_registry => '$reg_url', options => '$auth_options',
       on_error => 'fail', batch_size => 2, batch_timeout_ms => 100);
     SELECT eoingest.start_job('cav_d')" >/dev/null
check "cav_d applies the read and the insert (offset 2)" wait_until 60 "SELECT next_offset = 2 FROM eoingest.offsets WHERE job = 'cav_d'"
is "$(sql "SET TimeZone = 'UTC'; SELECT amount, day, at_local, at_ms, at_zoned, tod FROM cav_d WHERE id IN (1, 2) ORDER BY id" | tr '\n' ' ')" \
  "-1234567890.12|1969-12-31|2023-11-14 22:13:20.123456|1969-12-31 23:59:59.999+00|2023-11-14 22:13:20.123456+00|23:59:59.999999 0.01|2022-01-08|1970-01-01 00:00:00|2023-11-14 22:13:20.123+00|2023-11-14 22:13:20+00|00:00:00 " \
  "Decimal (bytes, scale 2), Date, MicroTimestamp, Timestamp, ZonedTimestamp and MicroTime exactly"
is "$(sql "SELECT uid, doc, encode(raw, 'hex'), nums FROM cav_d WHERE id IN (1, 2) ORDER BY id" | tr '\n' ' ')" \
  '8c2d5b8e-4a8f-4c5e-9d3a-2f1e0b7c6a59|{"a": [1, null]}|00ff5c|{1,NULL,-3} 00000000-0000-0000-0000-000000000000|{}||{} ' \
  "Uuid, Json into jsonb, bytes into bytea, an array with nulls into int[]"
is "$(sql "SELECT tn, vd, bits FROM cav_d WHERE id IN (1, 2) ORDER BY id" | tr '\n' ' ')" \
  "23:59:59.999999|-1234.567|1000000101 00:00:00.000001|0|0000000000 " \
  "NanoTime (rounded down to microseconds), VariableScaleDecimal, Bits (a BitSet's bytes, bit 0 the lowest) exactly"

# create_target: the same two events into a table made from the after image's Avro schema, keyed by the key's
sql "DROP TABLE IF EXISTS cav_created;
     SELECT eoingest.create_job(name => 'cav_c', brokers => '$KAFKA_BROKERS', topic => '$topic_d', target => 'cav_created',
       format => 'avro', envelope => 'debezium', schema_registry => '$reg_url', options => '$auth_options',
       create_target => true, on_error => 'fail', batch_timeout_ms => 100);
     SELECT eoingest.start_job('cav_c')" >/dev/null 2>&1
check "create_target: cav_c creates its target and applies both events" \
  wait_until 60 "SELECT next_offset = 2 FROM eoingest.offsets WHERE job = 'cav_c'"
is "$(sql "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
             FROM pg_attribute WHERE attrelid = 'cav_created'::regclass AND attnum > 0")
$(sql "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'cav_created'::regclass AND contype = 'p'")" \
  "id integer, amount numeric(12,2), day date, at_local timestamp without time zone, at_ms timestamp without time zone, at_zoned timestamp with time zone, tod time without time zone, uid uuid, doc jsonb, raw bytea, nums integer[], note text, tn time without time zone, vd numeric, bits bit varying
PRIMARY KEY (id)" "create_target: each Debezium type's column, the key schema's primary key"
is "$(sql "SET TimeZone = 'UTC';
           CREATE TEMP VIEW want AS SELECT id, amount, day, at_local, at_ms::timestamp, at_zoned, tod, uid, doc, raw, nums,
                                    note, tn, vd, bits::varbit FROM cav_d;
           SELECT (SELECT count(*) FROM (TABLE want EXCEPT TABLE cav_created) a) || ' ' ||
                  (SELECT count(*) FROM (TABLE cav_created EXCEPT TABLE want) b) || ' ' || (SELECT count(*) FROM cav_created)")" \
  "0 0 2" "create_target: the created table holds what the hand-made one does (EXCEPT both ways)"
sql "SELECT eoingest.drop_job('cav_c'); DROP TABLE cav_created" >/dev/null

# An update that leaves TOASTed values unsent: Debezium's placeholder, as a string and as the bytes
# of a bytes field, keeps the row's values; the other columns change.
topic_u=cav_u_$$
eoi-kafka create-topic "$topic_u" 1 >/dev/null
row5="{'id': 5, 'amount': D('5.00'), 'day': None, 'at_local': None, 'at_ms': None, 'at_zoned': None, 'tod': None, 'uid': None, 'doc': None, 'raw': b'\\x05', 'nums': None, 'note': 'five', 'tn': None, 'vd': None, 'bits': None}"
row5u="{'id': 5, 'amount': D('5.50'), 'day': None, 'at_local': None, 'at_ms': None, 'at_zoned': None, 'tod': None, 'uid': None, 'doc': None, 'raw': b'__debezium_unavailable_value', 'nums': None, 'note': '__debezium_unavailable_value', 'tn': None, 'vd': None, 'bits': None}"
{ ev c None "$row5" "{'id': 5}"; ev u None "$row5u" "{'id': 5}"; } | produce "$topic_u"
sql "CREATE TABLE cav_u ($cols);
     SELECT eoingest.create_job(name => 'cav_u', brokers => '$KAFKA_BROKERS', topic => '$topic_u', target => 'cav_u',
       format => 'avro', envelope => 'debezium', schema_registry => '$reg_url', options => '$auth_options',
       on_error => 'fail', batch_timeout_ms => 100);
     SELECT eoingest.start_job('cav_u')" >/dev/null
check "cav_u applies the insert and the update (offset 2)" wait_until 60 "SELECT next_offset = 2 FROM eoingest.offsets WHERE job = 'cav_u'"
is "$(sql "SELECT amount || ' ' || note || ' ' || encode(raw, 'hex') FROM cav_u")" "5.50 five 05" \
  "the placeholder, as a string and as bytes, keeps the row's values; the amount changes"
sql "SELECT eoingest.drop_job('cav_u')" >/dev/null

# The replay filter reads an Avro event's source position: an event Debezium sends again after a later
# change of its row was applied is skipped, and counted.
topic_s=cav_s_$$
eoi-kafka create-topic "$topic_s" 1 >/dev/null
sev() {  # sev OP NOTE COMMIT_LSN LSN
  echo "{\"schema\": \"env\", \"key_schema\": \"key\", \"key\": {'id': 7}, \"value\": {\"before\": None, \"after\": {'id': 7, 'note': '$2'}, \"op\": '$1', \"ts_ms\": 1700000000000, \"transaction\": None, \"source\": {\"version\": '3.6.1.Final', \"connector\": 'postgresql', \"name\": 'dbz', \"ts_ms\": 1700000000$4, \"db\": 'src', \"schema\": 'public', \"table\": 'cav', \"sequence\": '[\\\"$3\\\",\\\"$4\\\"]', \"lsn\": $4}}}"
}
{ sev c first 100 200; sev u second 100 300; sev c first 100 200; } >"$work/resent"
produce "$topic_s" <"$work/resent"
# the same events with the source block in a union, whose members the reader scans for
python3 - "$work/env.avsc" "$work/envu.avsc" <<'PY'
import json, sys
env = json.load(open(sys.argv[1]))
for f in env["fields"]:
    if f["name"] == "source":
        f["type"] = ["null", f["type"]]
env["name"] = "EnvelopeU"
json.dump(env, open(sys.argv[2], "w"))
PY
eoi-kafka create-topic "${topic_s}_u" 1 >/dev/null
sed 's/"schema": "env"/"schema": "envu"/' "$work/resent" |
  "$py" "$tools/avro_produce.py" "$KAFKA_BROKERS" "http://$reg_user@127.0.0.1:$reg_port" "${topic_s}_u" \
    envu="$work/envu.avsc" key="$work/key.avsc" >/dev/null
sql "CREATE TABLE cav_s ($cols); CREATE TABLE cav_su ($cols);
     SELECT eoingest.create_job(name => 'cav_s', brokers => '$KAFKA_BROKERS', topic => '$topic_s', target => 'cav_s',
       format => 'avro', envelope => 'debezium', schema_registry => '$reg_url', options => '$auth_options',
       on_error => 'fail', batch_size => 1, batch_timeout_ms => 100);
     SELECT eoingest.create_job(name => 'cav_su', brokers => '$KAFKA_BROKERS', topic => '${topic_s}_u', target => 'cav_su',
       format => 'avro', envelope => 'debezium', schema_registry => '$reg_url', options => '$auth_options',
       on_error => 'fail', batch_size => 1, batch_timeout_ms => 100);
     SELECT eoingest.start_job('cav_s'); SELECT eoingest.start_job('cav_su')" >/dev/null
for j in cav_s cav_su; do
  check "$j reads the three events (offset 3)" wait_until 60 "SELECT next_offset = 3 FROM eoingest.offsets WHERE job = '$j'"
  is "$(sql "SELECT note FROM $j") $(sql "SELECT replays_skipped FROM eoingest.offsets WHERE job = '$j'")" "second 1" \
    "$j: the create sent again after the update is skipped by its source position, and counted"
  sql "SELECT eoingest.drop_job('$j')" >/dev/null
done
