#!/usr/bin/env bash
# Format avro: records written by confluent-kafka's AvroSerializer in
# Confluent's wire format, schemas from a registry (test/tools/schema_registry.py,
# a small implementation of the REST API subset; see its header), with basic
# authentication.  Logical types at their boundaries, nullable unions, nested
# records, maps and arrays, enums, schema evolution in one batch, bad records
# (unknown id, garbage, truncated, other magic bytes, unparseable and non-Avro
# schemas), wrong credentials, the registry stopped mid-ingestion, SIGKILLs.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/avro.sh"
. "$(dirname "$0")/../lib/jobs.sh"

plan 84

py=$(avro_python)
tools=$EOINGEST_TEST_DIR/tools
reg_port=${EOINGEST_REGISTRY_PORT:-$((KAFKA_PORT + 10))}
reg_user=eoi_reg:s3cret-$$
reg_url=http://127.0.0.1:$reg_port
reg_state=$EOINGEST_RUN/registry-state.json
reg_pid=
work=$(mktemp -d "$EOINGEST_RUN/avro.XXXXXX")
rm -f "$reg_state"

start_registry() {
  python3 "$tools/schema_registry.py" "$reg_port" --user "$reg_user" --state "$reg_state" \
    >"$EOINGEST_RUN/registry.log" 2>&1 &
  reg_pid=$!
  local deadline=$((SECONDS + 30))
  until curl -s -o /dev/null -u "$reg_user" "$reg_url/subjects"; do
    [ $SECONDS -lt $deadline ] || eoi_die "the test registry did not start"
    sleep 0.1
  done
}
stop_registry() {
  if [ -n "$reg_pid" ]; then
    kill "$reg_pid" 2>/dev/null || true
    wait "$reg_pid" 2>/dev/null || true
    reg_pid=
  fi
}
trap 'stop_registry; rm -rf "$work"; sql "ALTER SYSTEM RESET eoingest.test_avro_json_check" >/dev/null 2>&1 || true' EXIT
start_registry

# produce TOPIC NAME=SCHEMA... < records
produce() {
  local topic=$1
  shift
  "$py" "$tools/avro_produce.py" "$KAFKA_BROKERS" "http://$reg_user@127.0.0.1:$reg_port" "$topic" "$@"
}
schema() { cat >"$work/$1.avsc"; }
json_id() { python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'; }
like() { case "$1" in *$2*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "expected to contain: $2" ;; esac; }
auth_options="{\"schema.registry.basic.auth.user.info\": \"$reg_user\"}"

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# ---- every type, at its boundaries ----
schema all <<'EOF'
{"type": "record", "name": "All", "namespace": "t", "fields": [
  {"name": "id", "type": "int"},
  {"name": "b", "type": "boolean"},
  {"name": "l", "type": "long"},
  {"name": "f", "type": "float"},
  {"name": "d", "type": "double"},
  {"name": "s", "type": "string"},
  {"name": "by", "type": "bytes"},
  {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 10}},
  {"name": "decfix", "type": {"type": "fixed", "name": "DecFix", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 0}},
  {"name": "dt", "type": {"type": "int", "logicalType": "date"}},
  {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
  {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
  {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "tsn", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
  {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
  {"name": "ltm", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
  {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
  {"name": "dur", "type": {"type": "fixed", "name": "Dur", "size": 12, "logicalType": "duration"}},
  {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}},
  {"name": "n", "type": ["null", "string"], "default": null},
  {"name": "rec", "type": {"type": "record", "name": "Inner", "fields": [
      {"name": "x", "type": "int"}, {"name": "y", "type": ["null", "string"]}]}},
  {"name": "m", "type": {"type": "map", "values": "long"}},
  {"name": "ai", "type": {"type": "array", "items": "int"}},
  {"name": "at", "type": {"type": "array", "items": ["null", "string"]}},
  {"name": "ar", "type": {"type": "array", "items": "Inner"}},
  {"name": "ignored", "type": "string"}
]}
EOF
sql "CREATE TABLE av (id int PRIMARY KEY, b boolean, l bigint, f real, d double precision, s text, by bytea,
       dec numeric, decfix numeric(38,0), dt date, tm time, tu time, tsm timestamptz, tsu timestamptz,
       tsn timestamptz, lts timestamp, ltm timestamp, u uuid, dur interval, e text, n text, rec jsonb,
       m jsonb, ai int[], at text[], ar jsonb, absent text DEFAULT 'the default')" >/dev/null
topic=avro_all_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" all="$work/all.avsc" >/dev/null <<'EOF'
{"schema": "all", "value": {"id": 1, "b": True, "l": 9223372036854775807, "f": 1.5, "d": -1e308, "s": 'tab\there "q" back\\slash \u00e9\nnewline', "by": b'\x00\xff\\', "dec": D('-1234567890123456789012345678.9012345678'), "decfix": D('99999999999999999999999999999999999999'), "dt": -1, "tm": 0, "tu": 86399999999, "tsm": -1, "tsu": 4102444800000000, "tsn": -1, "lts": -62135596800000000, "ltm": 253402300799999, "u": '8c2d5b8e-4a8f-4c5e-9d3a-2f1e0b7c6a59', "dur": b'\x01\x00\x00\x00\x02\x00\x00\x00\xe8\x03\x00\x00', "e": 'BLUE', "n": None, "rec": {"x": 1, "y": None}, "m": {"a": 1, "b": -2}, "ai": [1, -2, 3], "at": ['x', None, 'y,z "q"'], "ar": [{"x": 1, "y": 'q'}], "ignored": 'x'}}
{"schema": "all", "value": {"id": 2, "b": False, "l": -9223372036854775808, "f": float('nan'), "d": 0.1, "s": '', "by": b'', "dec": D('0.0000000001'), "decfix": D('-99999999999999999999999999999999999999'), "dt": 0, "tm": 86399999, "tu": 0, "tsm": 2147483648000, "tsu": -1, "tsn": 1700000000123456789, "lts": 253402300799999999, "ltm": -1, "u": '00000000-0000-0000-0000-000000000000', "dur": b'\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00', "e": 'RED', "n": 'present', "rec": {"x": -1, "y": 'yy'}, "m": {}, "ai": [], "at": [], "ar": [], "ignored": ''}}
{"schema": "all", "value": {"id": 3, "b": True, "l": 0, "f": float('inf'), "d": float('-inf'), "s": 'x', "by": b'x', "dec": D('-0.5'), "decfix": D('0'), "dt": -719162, "tm": 1, "tu": 1, "tsm": -62135596800000, "tsu": 0, "tsn": -1500, "lts": 0, "ltm": 0, "u": 'ffffffff-ffff-ffff-ffff-ffffffffffff', "dur": b'\xff\xff\xff\x7f\x00\x00\x00\x00\x01\x00\x00\x00', "e": 'GREEN', "n": None, "rec": {"x": 0, "y": None}, "m": {"k": 9223372036854775807}, "ai": [2147483647, -2147483648], "at": [None], "ar": [{"x": 2, "y": None}, {"x": 3, "y": 'z'}], "ignored": ''}}
EOF
sql "SELECT eoingest.create_job(name => 'av', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options', on_error => 'fail',
       batch_timeout_ms => 100);
     SELECT eoingest.start_job('av')" >/dev/null
check "three records of every type arrive" wait_until 60 "SELECT count(*) = 3 FROM av"
q() { sql "SELECT $1 FROM av WHERE id = $2"; }
is "$(sql "SELECT b, l, f, d FROM av ORDER BY id" | tr '\n' ' ')" \
  "t|9223372036854775807|1.5|-1e+308 f|-9223372036854775808|NaN|0.1 t|0|Infinity|-Infinity " "boolean, long, float and double"
is "$(sql "SELECT s = E'tab\\there \"q\" back\\\\slash \\u00e9\\nnewline', encode(by, 'hex') FROM av WHERE id = 1")" "t|00ff5c" \
  "strings with tabs, quotes, backslashes, UTF-8 and newlines; bytes as bytea"
is "$(sql "SELECT dec::text, decfix::text FROM av ORDER BY id" | tr '\n' ' ')" \
  "-1234567890123456789012345678.9012345678|99999999999999999999999999999999999999 0.0000000001|-99999999999999999999999999999999999999 -0.5000000000|0 " \
  "decimals of 38 digits, negative, bytes and fixed, exactly"
is "$(sql "SET TimeZone = 'UTC'; SELECT dt, tm, tu FROM av ORDER BY id" | tr '\n' ' ')" \
  "1969-12-31|00:00:00|23:59:59.999999 1970-01-01|23:59:59.999|00:00:00 0001-01-01|00:00:00.001|00:00:00.000001 " \
  "date before 1970 and at year 1, time-millis and time-micros"
is "$(sql "SET TimeZone = 'UTC'; SELECT tsm, tsu, tsn FROM av ORDER BY id" | tr '\n' ' ')" \
  "1969-12-31 23:59:59.999+00|2100-01-01 00:00:00+00|1969-12-31 23:59:59.999999+00 2038-01-19 03:14:08+00|1969-12-31 23:59:59.999999+00|2023-11-14 22:13:20.123456+00 0001-01-01 00:00:00+00|1970-01-01 00:00:00+00|1969-12-31 23:59:59.999998+00 " \
  "timestamp-millis/micros/nanos before 1970 and after 2038 (nanos rounded down to micros)"
is "$(sql "SELECT lts, ltm FROM av ORDER BY id" | tr '\n' ' ')" \
  "0001-01-01 00:00:00|9999-12-31 23:59:59.999 9999-12-31 23:59:59.999999|1969-12-31 23:59:59.999 1970-01-01 00:00:00|1970-01-01 00:00:00 " \
  "local-timestamp-micros and -millis as timestamp"
is "$(sql "SELECT u, dur FROM av ORDER BY id" | tr '\n' ' ')" \
  "8c2d5b8e-4a8f-4c5e-9d3a-2f1e0b7c6a59|1 mon 2 days 00:00:01 00000000-0000-0000-0000-000000000000|00:00:00 ffffffff-ffff-ffff-ffff-ffffffffffff|178956970 years 7 mons 00:00:00.001 " \
  "uuid and duration"
is "$(sql "SELECT e, coalesce(n, 'NULL'), rec, m FROM av ORDER BY id" | tr '\n' ' ')" \
  'BLUE|NULL|{"x": 1, "y": null}|{"a": 1, "b": -2} RED|present|{"x": -1, "y": "yy"}|{} GREEN|NULL|{"x": 0, "y": null}|{"k": 9223372036854775807} ' \
  "enums as text, nullable unions, records and maps as jsonb"
is "$(sql "SELECT ai, at, ar FROM av ORDER BY id" | tr '\n' ' ')" \
  '{1,-2,3}|{x,NULL,"y,z \"q\""}|[{"x": 1, "y": "q"}] {}|{}|[] {2147483647,-2147483648}|{NULL}|[{"x": 2, "y": null}, {"x": 3, "y": "z"}] ' \
  "arrays into int[] and text[] (nulls, quotes, commas), arrays of records into jsonb"
is "$(sql "SELECT count(*) FROM av WHERE absent = 'the default'")" 3 "a column the schema lacks takes its default"
is "$(sql "SELECT eoingest_internal.mask_options('$auth_options')->>'schema.registry.basic.auth.user.info'")" '********' \
  "the registry's credentials are masked for other roles"

# ---- schema evolution: versions interleaved in one batch ----
schema v1 <<'EOF'
{"type": "record", "name": "Evo", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
EOF
schema v2 <<'EOF'
{"type": "record", "name": "Evo", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
  {"name": "added", "type": ["null", "int"], "default": null}]}
EOF
schema v3 <<'EOF'
{"type": "record", "name": "Evo", "fields": [{"name": "id", "type": "double"}, {"name": "added", "type": ["null", "int"], "default": null}]}
EOF
sql "CREATE TABLE av_evo (id double precision, name text DEFAULT 'none', added int)" >/dev/null
topic=avro_evo_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" v1="$work/v1.avsc" v2="$work/v2.avsc" v3="$work/v3.avsc" >/dev/null <<'EOF'
{"schema": "v1", "value": {"id": 1, "name": "one"}}
{"schema": "v2", "value": {"id": 2, "name": "two", "added": 20}}
{"schema": "v3", "value": {"id": 3.5, "added": None}}
{"schema": "v1", "value": {"id": 4, "name": "four"}}
{"schema": "v3", "value": {"id": 5.25, "added": 50}}
EOF
sql "SELECT eoingest.create_job(name => 'av_evo', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_evo',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options', on_error => 'fail');
     SELECT eoingest.start_job('av_evo')" >/dev/null
check "five records of three schema versions arrive" wait_until 60 "SELECT count(*) = 5 FROM av_evo"
is "$(sql "SELECT id, name, coalesce(added, -1) FROM av_evo ORDER BY id" | tr '\n' ' ')" \
  "1|one|-1 2|two|20 3.5|none|-1 4|four|-1 5.25|none|50 " "fields added and removed, int widened to long and double, in one batch"
is "$(sql "SELECT batches FROM eoingest.job_status WHERE name = 'av_evo'")" 1 "the versions landed in one batch"

# ---- a transform reads the records through eoingest.batch() ----
sql "CREATE TABLE av_tr (id double precision, name text, js text, raw_len int)" >/dev/null
sql "SELECT eoingest.create_job(name => 'av_tr', brokers => '$KAFKA_BROKERS', topic => '$topic', format => 'avro',
       schema_registry => '$reg_url', options => '$auth_options', on_error => 'fail',
       transform => 'INSERT INTO av_tr SELECT (value_json->>''id'')::float8, value_json->>''name'', value, length(value_bytes)
                       FROM eoingest.batch()');
     SELECT eoingest.start_job('av_tr')" >/dev/null
check "a transform reads the five records" wait_until 60 "SELECT count(*) = 5 FROM av_tr"
is "$(sql "SELECT js || ' ' || raw_len FROM av_tr WHERE id = 2")" '{"id":2,"name":"two","added":20} 12' \
  "value_json and value hold the record as JSON, value_bytes the message as it came"

# ---- upsert: Avro keys, tombstones delete ----
schema simple <<'EOF'
{"type": "record", "name": "Simple", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
EOF
schema key <<'EOF2'
{"type": "record", "name": "Key", "fields": [{"name": "id", "type": "int"}]}
EOF2
sql "CREATE TABLE av_kv (id int PRIMARY KEY, name text)" >/dev/null
topic=avro_kv_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" key="$work/key.avsc" >/dev/null <<'EOF2'
{"schema": "simple", "key_schema": "key", "key": {"id": 1}, "value": {"id": 1, "name": "a"}}
{"schema": "simple", "key_schema": "key", "key": {"id": 2}, "value": {"id": 2, "name": "b"}}
{"schema": "simple", "key_schema": "key", "key": {"id": 3}, "value": {"id": 3, "name": "c"}}
{"schema": "simple", "key_schema": "key", "key": {"id": 1}, "value": {"id": 1, "name": "a2"}}
{"key_schema": "key", "key": {"id": 2}, "value": None}
{"schema": "simple", "key_schema": "key", "key": {"id": 0}, "value": {"id": 0, "name": "zero"}, "header_id": True, "key_header_id": True}
{"key_schema": "key", "key": {"id": 3}, "value": None, "key_header_id": True}
EOF2
sql "SELECT eoingest.create_job(name => 'av_kv', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_kv',
       mode => 'upsert', format => 'avro', key_format => 'avro', schema_registry => '$reg_url',
       options => '$auth_options', on_error => 'fail');
     SELECT eoingest.start_job('av_kv')" >/dev/null
check "upsert with Avro keys: updates, and a tombstone deletes (also with the key's schema id in __key_schema_id)" \
  wait_until 60 "SELECT string_agg(id || '=' || name, ' ' ORDER BY id) = '0=zero 1=a2' FROM av_kv"

# ---- a transform reads key_bytes: a key that is no Avro record loses nothing ----
sql "CREATE TABLE av_keys (name text, key text, key_len int)" >/dev/null
topic=avro_keys_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" key="$work/key.avsc" >/dev/null <<'EOF2'
{"schema": "simple", "key_schema": "key", "key": {"id": 1}, "value": {"id": 1, "name": "avro key"}}
{"schema": "simple", "key": "plain text", "value": {"id": 2, "name": "text key"}}
{"schema": "simple", "key": b'\x00\x00\x00\x27\x0f\x02', "value": {"id": 3, "name": "unknown key schema"}}
{"schema": "simple", "key": b'\x00\x00\x00\x00\x01', "value": {"id": 4, "name": "key cut short"}}
EOF2
sql "SELECT eoingest.create_job(name => 'av_keys', brokers => '$KAFKA_BROKERS', topic => '$topic', format => 'avro',
       key_format => 'avro', schema_registry => '$reg_url', options => '$auth_options',
       transform => 'INSERT INTO av_keys SELECT value_json->>''name'', key, length(key_bytes) FROM eoingest.batch()');
     SELECT eoingest.start_job('av_keys')" >/dev/null
check "a transform gets every record, whatever its key" \
  wait_until 60 "SELECT count(*) = 4 FROM av_keys"
is "$(sql "SELECT string_agg(name || ':' || coalesce(key, 'NULL') || ':' || key_len, ', ' ORDER BY name) FROM av_keys")" \
  'avro key:{"id":1}:6, key cut short:NULL:5, text key:NULL:10, unknown key schema:NULL:6' \
  "a key that does not decode is NULL in key, its bytes in key_bytes"
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'av_keys'")" 0 "and no record is a dead letter"

# ---- the schema id in a record header (confluent-kafka's header_schema_id_serializer) ----
# The header __value_schema_id holds magic byte 1 and the schema's GUID, the
# value is bare Avro: here one that starts with 0x00 (id 0), which must not
# be read as Confluent's framing.
sql "CREATE TABLE av_hdr (id int CHECK (id <> 13), name text); CREATE TABLE av_hdr_tr (name text)" >/dev/null
topic=avro_hdr_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" >/dev/null <<'EOF2'
{"schema": "simple", "value": {"id": 0, "name": "bare, starts with 0x00"}, "header_id": True}
{"schema": "simple", "value": {"id": 1, "name": "framed"}}
{"schema": "simple", "value": {"id": 13, "name": "refused by the table"}, "header_id": True}
{"raw": b'\x02\x02x', "headers": [("__value_schema_id", b'\x01\x02\x03')]}
{"schema": "simple", "value": {"id": 2, "name": "two"}, "header_id": True, "headers": [("other", b'x')]}
EOF2
sql "SELECT eoingest.create_job(name => 'av_hdr', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_hdr',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options');
     SELECT eoingest.create_job(name => 'av_hdr_tr', brokers => '$KAFKA_BROKERS', topic => '$topic', format => 'avro',
       schema_registry => '$reg_url', options => '$auth_options',
       transform => 'INSERT INTO av_hdr_tr SELECT value_json->>''name'' FROM eoingest.batch()');
     SELECT eoingest.start_job('av_hdr'); SELECT eoingest.start_job('av_hdr_tr')" >/dev/null
check "records whose schema id is in a header arrive, the others become dead letters" \
  wait_until 60 "SELECT (SELECT count(*) = 3 FROM av_hdr) AND (SELECT count(*) = 2 FROM eoingest.dead_letters WHERE job = 'av_hdr')"
is "$(sql "SELECT string_agg(id || '=' || name, ' ' ORDER BY id) FROM av_hdr")" "0=bare, starts with 0x00 1=framed 2=two" \
  "the header's GUID decides, whatever the value's first byte; framed records still read"
like "$(sql "SELECT error FROM eoingest.dead_letters WHERE job = 'av_hdr' AND \"offset\" = 3")" \
  "record header __value_schema_id holds 3 bytes, which are no schema id" "a header that holds no schema id is a bad record"
sql "ALTER TABLE av_hdr DROP CONSTRAINT av_hdr_id_check" >/dev/null
is "$(sql "SELECT eoingest.replay_dead_letters('av_hdr', ARRAY(SELECT id FROM eoingest.dead_letters WHERE job = 'av_hdr' AND \"offset\" = 2))")" 1 \
  "the dead letter of such a record replays (it keeps the header's id in front, Confluent's framing)"
is "$(sql "SELECT name FROM av_hdr WHERE id = 13")" "refused by the table" "and its row is the record"
check "a transform reads them through eoingest.batch() too" \
  wait_until 60 "SELECT count(*) = 4 AND count(*) FILTER (WHERE name = 'bare, starts with 0x00') = 1 FROM av_hdr_tr"

# ---- schema references: named types registered under other subjects ----
# Customer (produced by confluent-kafka's serializer, which resolves the
# references itself) uses geo.Address and geo.Country; Address uses Country
# by its short name in its own namespace, and a date inside it.
schema country <<'EOF2'
{"type": "record", "name": "Country", "namespace": "geo", "fields": [{"name": "code", "type": "string"}]}
EOF2
schema address <<'EOF2'
{"type": "record", "name": "Address", "namespace": "geo", "fields": [
  {"name": "city", "type": "string"}, {"name": "country", "type": "Country"},
  {"name": "since", "type": {"type": "int", "logicalType": "date"}}]}
EOF2
schema customer <<'EOF2'
{"type": "record", "name": "Customer", "namespace": "shop", "fields": [
  {"name": "id", "type": "int"}, {"name": "home", "type": "geo.Address"},
  {"name": "work", "type": ["null", "geo.Address"], "default": null}, {"name": "born", "type": "geo.Country"}]}
EOF2
register_refs() {  # SUBJECT FILE REFS-JSON
  python3 -c 'import json, sys; print(json.dumps({"schema": open(sys.argv[1]).read(), "references": json.loads(sys.argv[2])}))' "$2" "$3" |
    curl -s -u "$reg_user" -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
      "$reg_url/subjects/$1/versions" -d @- | json_id
}
register_refs geo-country "$work/country.avsc" '[]' >/dev/null
register_refs geo-address "$work/address.avsc" '[{"name": "geo.Country", "subject": "geo-country", "version": 1}]' >/dev/null
echo '[{"name": "geo.Address", "subject": "geo-address", "version": 1}, {"name": "geo.Country", "subject": "geo-country", "version": 1}]' \
  >"$work/customer.avsc.refs"
raw_missing=$(curl -s -u "$reg_user" -X POST -H 'Content-Type: application/json' "$reg_url/test/raw" \
  -d '{"subject": "missing", "schema": "{\"type\": \"record\", \"name\": \"R\", \"fields\": [{\"name\": \"x\", \"type\": \"geo.Nope\"}]}", "references": [{"name": "geo.Nope", "subject": "nope", "version": 1}]}' |
  json_id)
raw_notobj=$(curl -s -u "$reg_user" -X POST -H 'Content-Type: application/json' "$reg_url/test/raw" \
  -d '{"subject": "notobj", "schema": "{\"type\": \"record\", \"name\": \"R2\", \"fields\": []}", "references": [[1, 2, 3]]}' |
  json_id)
sql "CREATE TABLE av_ref (id int, home jsonb, work jsonb, born jsonb)" >/dev/null
topic=avro_ref_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" customer="$work/customer.avsc" >/dev/null <<EOF2
{"schema": "customer", "value": {"id": 1, "home": {"city": "Lyon", "country": {"code": "FR"}, "since": date(2020, 1, 2)}, "work": None, "born": {"code": "IT"}}}
{"schema": "customer", "value": {"id": 2, "home": {"city": "Bern", "country": {"code": "CH"}, "since": date(1969, 12, 31)}, "work": {"city": "Basel", "country": {"code": "CH"}, "since": date(2038, 1, 20)}, "born": {"code": "CH"}}}
{"raw": b'\x00\x00\x00\x00' + bytes([$raw_missing]) + b'\x00'}
{"raw": b'\x00\x00\x00\x00' + bytes([$raw_notobj])}
EOF2
sql "SELECT eoingest.create_job(name => 'av_ref', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_ref',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options');
     SELECT eoingest.start_job('av_ref')" >/dev/null
check "records of a schema with references (chained: Address refers to Country) arrive" \
  wait_until 60 "SELECT (SELECT count(*) = 2 FROM av_ref) AND (SELECT count(*) = 2 FROM eoingest.dead_letters WHERE job = 'av_ref')"
is "$(sql "SELECT string_agg(id || ' ' || (home->>'city') || ' ' || (home->'country'->>'code') || ' ' || (home->>'since') || ' ' ||
                            coalesce(work->>'since', 'none') || ' ' || (born->>'code'), ', ' ORDER BY id) FROM av_ref")" \
  "1 Lyon FR 2020-01-02 none IT, 2 Bern CH 1969-12-31 2038-01-20 CH" \
  "the referenced types decode, their logical types too"
like "$(sql "SELECT error FROM eoingest.dead_letters WHERE job = 'av_ref' AND \"offset\" = 2")" \
  "schema id $raw_missing's reference geo.Nope (subject nope, version 1) is not in the schema registry" \
  "a reference the registry does not have is a bad record that names it"
like "$(sql "SELECT error FROM eoingest.dead_letters WHERE job = 'av_ref' AND \"offset\" = 3")" \
  "schema id $raw_notobj has a schema reference that is not a JSON object" \
  "a reference that is not an object (the registry is the job owner's) is a bad record"

# ---- a mapping: paths into the record (nested, logical types) and the Avro key ----
sql "CREATE TABLE av_map (id int, city text, country text, since date, work_city text, k int, src text)" >/dev/null
topic=avro_map_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" customer="$work/customer.avsc" key="$work/key.avsc" >/dev/null <<EOF2
{"schema": "customer", "key_schema": "key", "key": {"id": 5}, "value": {"id": 1, "home": {"city": "Lyon", "country": {"code": "FR"}, "since": date(2020, 1, 2)}, "work": None, "born": {"code": "IT"}}}
{"schema": "customer", "key_schema": "key", "key": {"id": 6}, "value": {"id": 2, "home": {"city": "Bern", "country": {"code": "CH"}, "since": date(1969, 12, 31)}, "work": {"city": "Basel", "country": {"code": "CH"}, "since": date(2038, 1, 20)}, "born": {"code": "CH"}}}
EOF2
sql "SELECT eoingest.create_job(name => 'av_map', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_map',
       format => 'avro', key_format => 'avro', schema_registry => '$reg_url', options => '$auth_options',
       mapping => '{\"id\": \"/id\", \"city\": \"/home/city\", \"country\": \"/home/country/code\",
                    \"since\": \"/home/since\", \"work_city\": \"/work/city\", \"k\": \"\$key/id\",
                    \"src\": \"\$topic\"}');
     SELECT eoingest.start_job('av_map')" >/dev/null
check "a mapping reads Avro records" wait_until 60 "SELECT count(*) = 2 FROM av_map"
is "$(sql "SELECT string_agg(concat_ws(' ', id, city, country, since, coalesce(work_city, 'none'), k, src = '$topic'), ', ' ORDER BY id) FROM av_map")" \
  "1 Lyon FR 2020-01-02 none 5 t, 2 Bern CH 1969-12-31 Basel 6 t" \
  "paths into nested records and a null union, a date, the Avro key's field, the topic"

# ---- a schema that is a union: of referenced types, or of records written out ----
# Confluent's way to keep several event types in one topic: the value's
# schema is a union of references.  Each record's fields fill the columns of
# its branch's names; the others get their defaults.
printf '%s' '["geo.Country", "geo.Address"]' >"$work/place.avsc"
echo '[{"name": "geo.Country", "subject": "geo-country", "version": 1}, {"name": "geo.Address", "subject": "geo-address", "version": 1}]' \
  >"$work/place.avsc.refs"
schema inline_union <<'EOF2'
["null", {"type": "record", "name": "Ping", "fields": [{"name": "code", "type": "string"}, {"name": "n", "type": "long"}]}]
EOF2
sql "CREATE TABLE av_union (code text, city text, country jsonb, since date, n bigint DEFAULT -1)" >/dev/null
topic=avro_union_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" place="$work/place.avsc" inline_union="$work/inline_union.avsc" >/dev/null <<EOF2
{"schema": "place", "value": {"code": "FR"}}
{"schema": "place", "value": {"city": "Bern", "country": {"code": "CH"}, "since": date(1969, 12, 31)}}
{"schema": "inline_union", "value": {"code": "PG", "n": 7}}
{"schema": "inline_union", "value": {"code": "-", "n": 0}, "body": b"\\x00"}
EOF2
sql "SELECT eoingest.create_job(name => 'av_union', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_union',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options');
     SELECT eoingest.start_job('av_union')" >/dev/null
check "records of a schema that is a union (of references, of records) arrive by their branch" \
  wait_until 60 "SELECT (SELECT count(*) = 3 FROM av_union) AND (SELECT count(*) = 1 FROM eoingest.dead_letters WHERE job = 'av_union')"
is "$(sql "SELECT string_agg(concat_ws(' ', coalesce(code, '-'), coalesce(city, '-'), coalesce(country->>'code', '-'),
                                        coalesce(since::text, '-'), n), ', ' ORDER BY code NULLS LAST) FROM av_union")" \
  "FR - - - -1, PG - - - 7, - Bern CH 1969-12-31 -1" \
  "each branch's fields fill their columns, the others keep their defaults"
like "$(sql "SELECT error FROM eoingest.dead_letters WHERE job = 'av_union' AND \"offset\" = 3")" \
  "is null, not a record" \
  "a null branch into a table of several columns is a bad record that says so"

# ---- JSON Schema records (magic 0 + id + JSON) read by format json ----
cat >"$work/js.json" <<'EOF'
{"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}, "required": ["id"]}
EOF
cat >"$work/jskey.json" <<'EOF'
{"type": "object", "properties": {"id": {"type": "integer"}}}
EOF
cat >"$work/jsenv.json" <<'EOF'
{"type": "object", "properties": {"op": {"type": "string"}}}
EOF
js_produce() { "$py" "$tools/json_schema_produce.py" "$KAFKA_BROKERS" "http://$reg_user@127.0.0.1:$reg_port" "$@"; }
sql "CREATE TABLE js (id int, name text)" >/dev/null
topic=json_schema_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
js_produce "$topic" "$work/js.json" >/dev/null <<'EOF'
{"value": {"id": 1, "name": "one \u00e9"}}
{"raw_hex": "0000"}
{"value": {"id": 2, "name": "two", "extra": [1, 2]}}
EOF
sql "SELECT eoingest.create_job(name => 'js', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'js',
       format => 'json', batch_timeout_ms => 100);
     SELECT eoingest.start_job('js')" >/dev/null
check "JSON Schema records of JSONSerializer arrive through format json" \
  wait_until 60 "SELECT (SELECT count(*) = 2 FROM js) AND (SELECT count(*) = 1 FROM eoingest.dead_letters WHERE job = 'js')"
is "$(sql "SELECT string_agg(id || '=' || name, ' ' ORDER BY id) FROM js")" "1=one é 2=two" \
  "the JSON after the 5-byte prefix fills the columns by key"
like "$(sql "SELECT error FROM eoingest.dead_letters WHERE job = 'js'")" \
  "JSON message of 2 bytes is too short for Confluent's JSON Schema framing DETAIL: It starts with byte 0" \
  "a frame shorter than the prefix is a record error that names the framing"
# Debezium with Confluent's JsonSchemaConverter: key and value framed
sql "CREATE TABLE js_cdc (id int PRIMARY KEY, name text)" >/dev/null
topic=json_schema_cdc_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
js_produce "$topic" "$work/jsenv.json" "$work/jskey.json" >/dev/null <<'EOF'
{"key": {"id": 1}, "value": {"before": null, "after": {"id": 1, "name": "a"}, "op": "c"}}
{"key": {"id": 2}, "value": {"before": null, "after": {"id": 2, "name": "b"}, "op": "c"}}
{"key": {"id": 1}, "value": {"before": {"id": 1, "name": "a"}, "after": {"id": 1, "name": "a2"}, "op": "u"}}
{"key": {"id": 2}, "value": {"before": {"id": 2, "name": "b"}, "after": null, "op": "d"}}
EOF
sql "SELECT eoingest.create_job(name => 'js_cdc', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'js_cdc',
       format => 'json', envelope => 'debezium', on_error => 'fail', batch_timeout_ms => 100);
     SELECT eoingest.start_job('js_cdc')" >/dev/null
check "Debezium events in JSON Schema framing (JsonSchemaConverter) apply" \
  wait_until 60 "SELECT string_agg(id || '=' || name, ' ' ORDER BY id) = '1=a2' FROM js_cdc"

# ---- bad records: dead letters that say what is wrong ----
raw_bad=$(curl -s -u "$reg_user" -X POST -H 'Content-Type: application/json' "$reg_url/test/raw" \
  -d '{"subject": "bad", "schema": "{\"type\": \"recordx\"}"}' | json_id)
raw_proto=$(curl -s -u "$reg_user" -X POST -H 'Content-Type: application/json' "$reg_url/test/raw" \
  -d '{"subject": "proto", "schema": "syntax = \"proto3\"; message M { int32 id = 1; }", "schemaType": "PROTOBUF"}' |
  json_id)
# a recursive schema: a record nests as deep as its bytes say
raw_node=$(curl -s -u "$reg_user" -X POST -H 'Content-Type: application/json' "$reg_url/test/raw" \
  -d '{"subject": "node", "schema": "{\"type\": \"record\", \"name\": \"Node\", \"fields\": [{\"name\": \"id\", \"type\": \"int\"}, {\"name\": \"next\", \"type\": [\"null\", \"Node\"]}]}"}' |
  json_id)
sql "CREATE TABLE av_bad (id int, name text)" >/dev/null
topic=avro_bad_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" >/dev/null <<EOF
{"schema": "simple", "value": {"id": 1, "name": "good"}}
{"raw": b'\x00\x00\x00\x27\x10\x02\x02x'}
{"schema": "simple", "value": {"id": 99, "name": "garbage after the header"}, "body": b'\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01'}
{"schema": "simple", "value": {"id": 98, "name": "truncated"}, "cut": 3}
{"schema": "simple", "value": {"id": 97, "name": "trailing"}, "append": b'\x00'}
{"raw": b'\x05abc'}
{"raw": b'\x00\x00'}
{"raw": b'{"id": 1}'}
{"raw": b'\x00\x00\x00\x00' + bytes([$raw_bad]) + b'\x02'}
{"raw": b'\x00\x00\x00\x00' + bytes([$raw_proto]) + b'\x02'}
{"schema": "simple", "value": {"id": 2, "name": "good \u00e9"}}
{"schema": "simple", "value": {"id": 3, "name": "by GUID"}, "guid": True}
{"raw": b'\x01' + bytes(16) + b'\x02\x02x'}
{"raw": b'\x00\x00\x00\x00' + bytes([$raw_node]) + b'\x02\x02' * 200000 + b'\x02\x00'}
{"schema": "simple", "value": {"id": 96, "name": "huge"}, "body": b'\xc0\x01\x80\x80\x80\x80\x40'}
{"raw": b'\x00\x00\x00\x00' + bytes([$raw_node]) + b'\x08\x02' * 900 + b'\x08\x00'}
EOF
start_time=$(sql "SELECT pg_postmaster_start_time()")
sql "SELECT eoingest.create_job(name => 'av_bad', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_bad',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options');
     SELECT eoingest.start_job('av_bad')" >/dev/null
check "the good records arrive, the bad ones become dead letters" \
  wait_until 60 "SELECT (SELECT count(*) = 4 FROM av_bad) AND (SELECT count(*) = 12 FROM eoingest.dead_letters WHERE job = 'av_bad')"
errors=$(sql "SELECT \"offset\" || ': ' || error FROM eoingest.dead_letters WHERE job = 'av_bad' ORDER BY \"offset\"")
diag "$errors"
like "$errors" "1: schema id 10000 is not in the schema registry" "an unknown schema id names the id"
like "$errors" "2: Avro record does not decode with schema id" "garbage after the header"
like "$errors" "3: Avro record does not decode with schema id" "a truncated record"
ok "$(case "$errors" in *"memory buffer"*"Varint too long"*) echo 1 ;; *) echo 0 ;; esac)" \
  "an error says what went wrong with its record only (Avro C's messages do not pile up)"
like "$errors" "4: Avro record written with schema id" "bytes after the record"
like "$errors" "5: Avro message does not start with Confluent's magic byte 0 (schema id) or 1 (schema GUID), but with 0x05" \
  "another magic byte names the variants"
is "$(sql "SELECT name FROM av_bad WHERE id = 3")" "by GUID" "magic byte 1 + the schema's GUID (confluent-kafka's guid_to_bytes) reads by GUID"
like "$errors" "12: schema GUID 00000000-0000-0000-0000-000000000000 is not in the schema registry" "an unknown GUID names it"
like "$errors" "8: schema id $raw_bad cannot be parsed as an Avro schema" "an unparseable schema"
like "$errors" "9: schema id $raw_proto is a PROTOBUF schema, not an Avro schema" "a Protobuf schema"
like "$errors" "13: Avro record written with schema id $raw_node is beyond what eoingest reads: the record nests deeper than 1000 levels" \
  "a record nested 200,000 deep (400 kB) is refused before Avro C recurses into it"
is "$(sql "SELECT pg_postmaster_start_time() = '$start_time' AND EXISTS (SELECT FROM eoingest.job_status WHERE name = 'av_bad' AND state = 'running')")" t \
  "and no server process crashed: the postmaster never restarted, the job runs on"
like "$errors" "14: Avro record does not decode with schema id" "a string's length beyond the record..."
like "$errors" "a string at byte 2 claims 8589934592 bytes, but the record has 0 left" \
  "...is refused before Avro C allocates it"
is "$(sql "SELECT count(*) FROM av_bad WHERE id = 4 AND name IS NULL")" 1 "a record nested 900 deep is read (the id of its top level)"
is "$(sql "SELECT sqlstate FROM eoingest.dead_letters WHERE job = 'av_bad' AND \"offset\" = 13")" 54000 \
  "beyond the limits is SQLSTATE 54000 (program limit exceeded), still the record's fault"

# ---- wrong credentials: the job fails with the reason ----
sql "CREATE TABLE av_wrong (id int, name text)" >/dev/null
sql "SELECT eoingest.create_job(name => 'av_wrong', brokers => '$KAFKA_BROKERS', topic => 'avro_bad_$$', target => 'av_wrong',
       format => 'avro', schema_registry => '$reg_url', options => '{\"schema.registry.basic.auth.user.info\": \"eoi_reg:wrong\"}');
     SELECT eoingest.start_job('av_wrong')" >/dev/null
check "wrong registry credentials fail the job" \
  wait_until 60 "SELECT state = 'failed' AND last_error LIKE '%refused the credentials (HTTP 401)%' AND last_error NOT LIKE '%eoi_reg:wrong%'
                   FROM eoingest.job_definitions WHERE name = 'av_wrong'"

# ---- the registry stopped mid-ingestion: retrying, then exact ----
schema later <<'EOF'
{"type": "record", "name": "Simple", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"},
  {"name": "extra", "type": "string", "default": ""}]}
EOF
sql "CREATE TABLE av_down (id int, name text)" >/dev/null
topic=avro_down_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" --count 500 --template simple >/dev/null
sql "SELECT eoingest.create_job(name => 'av_down', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_down',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options', batch_timeout_ms => 100);
     SELECT eoingest.start_job('av_down')" >/dev/null
wait_until 60 "SELECT count(*) = 500 FROM av_down" || true
# records of a schema version the worker has not met yet, serialized while the registry is up
produce "$topic" later="$work/later.avsc" --count 500 --start 500 --template later --dump >"$work/later.lines"
stop_registry
produce "$topic" <"$work/later.lines" >/dev/null
check "with the registry down the job is retrying and says why" \
  wait_until 60 "SELECT state = 'retrying' AND last_error LIKE '%could not read schema id%from the schema registry%' FROM eoingest.job_status WHERE name = 'av_down'"
is "$(sql "SELECT count(*) FROM av_down")" 500 "nothing of the new version is written meanwhile"
start_registry
check "once the registry is back every record is there exactly once" \
  wait_until 90 "SELECT count(*) = 1000 AND count(DISTINCT id) = 1000 FROM av_down"

# ---- random bytes after valid headers: each message a row or a dead letter ----
register() {
  python3 -c 'import json, sys; print(json.dumps({"schema": open(sys.argv[1]).read()}))' "$work/$1.avsc" |
    curl -s -u "$reg_user" -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
      "$reg_url/subjects/fuzz-$1/versions" -d @- | json_id
}
fuzz_ids="$(register all) $(register simple) $(register v3)"
fuzz_n=2000
python3 - "$fuzz_n" $fuzz_ids >"$work/fuzz.lines" <<'EOF2'
import os, random, struct, sys
random.seed(15)
n, ids = int(sys.argv[1]), [int(i) for i in sys.argv[2:]]
def zz(v):
    z, out = (v << 1) ^ (v >> 63), b""
    while z >= 0x80:
        out += bytes([(z & 0x7f) | 0x80]); z >>= 7
    return out + bytes([z])
for i in range(n):
    if i % 10 == 0:     # a valid record of the second schema (simple: int id, string name)
        name = ("r%d" % i).encode()
        print('{"hex": "%s"}' % (b"\x00" + struct.pack(">I", ids[1]) + zz(i) + zz(len(name)) + name).hex())
        continue
    body = bytes(random.getrandbits(8) for _ in range(random.choice([0, 1, 2, 5, 10, 30, 80, 200])))
    if random.random() < 0.3:   # a plausible start: small varints
        body = bytes([random.choice([0, 2, 4, 6, 1, 3])] * random.randint(1, 6)) + body
    print('{"hex": "%s"}' % (b"\x00" + struct.pack(">I", random.choice(ids)) + body).hex())
EOF2
sql "CREATE TABLE av_fz (LIKE av INCLUDING DEFAULTS, name text)" >/dev/null
topic=avro_fuzz_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" <"$work/fuzz.lines" >/dev/null
sql "SELECT eoingest.create_job(name => 'av_fz', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_fz',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options', batch_size => 500);
     SELECT eoingest.start_job('av_fz')" >/dev/null
wait_until 30 "SELECT pid IS NOT NULL FROM eoingest.job_status WHERE name = 'av_fz'" || true
fz_pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'av_fz'")
check "$fuzz_n random payloads: each one a row or a dead letter" \
  wait_until 180 "SELECT (SELECT count(*) FROM av_fz) + (SELECT count(*) FROM eoingest.dead_letters WHERE job = 'av_fz') = $fuzz_n"
is "$(sql "SELECT count(*) FROM av_fz WHERE id % 10 = 0 AND name = 'r' || id")" $((fuzz_n / 10)) \
  "the valid records among them are rows"
is "$(sql "SELECT pid = $fz_pid AND state = 'running' FROM eoingest.job_status WHERE name = 'av_fz'")" t \
  "the worker neither crashed nor failed on them"
diag "random payloads: $(sql "SELECT count(*) FROM av_fz") rows, $(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'av_fz'") dead letters"

# ---- SIGKILLs of the worker on an Avro topic ----
total=20000
sql "CREATE TABLE av_crash (id int, name text)" >/dev/null
topic=avro_crash_$$
eoi-kafka create-topic "$topic" 4 >/dev/null
sql "SELECT eoingest.create_job(name => 'av_crash', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'av_crash',
       format => 'avro', schema_registry => '$reg_url', options => '$auth_options', batch_size => 500, batch_timeout_ms => 100);
     SELECT eoingest.start_job('av_crash')" >/dev/null
killed=0
for ((k = 0; k < 4; k++)); do
  before=$(sql "SELECT count(*) FROM av_crash" 2>/dev/null || echo 0)
  produce "$topic" simple="$work/simple.avsc" --count $((total / 4)) --start $((k * total / 4)) --template simple >/dev/null
  wait_until 60 "SELECT count(*) > $before FROM av_crash" || true
  sleep "0.0$((RANDOM % 10))"
  wait_until 60 "SELECT pid IS NOT NULL FROM eoingest.job_status WHERE name = 'av_crash'" >/dev/null || true
  pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'av_crash' AND pid IS NOT NULL" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
    killed=$((killed + 1))
    wait_until 120 "SELECT pid IS NOT NULL AND pid <> $pid FROM eoingest.job_status WHERE name = 'av_crash'" || true
  fi
done
is "$killed" 4 "the worker was SIGKILLed after each of the 4 waves"
check "all $total records arrive after $killed kills" wait_until 180 "SELECT count(*) >= $total FROM av_crash"
log_end=$(eoi-kafka watermarks "$topic" | awk '{n += $3} END {print n}')
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || (SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'av_crash') FROM av_crash")" \
  "$total $total $log_end" "each record exactly once, the offsets at the log end"

# ---- typed values straight into tuples (src/apply/direct.c) and COPY's text: the same rows ----
# int, long, float, double, boolean and string become datums of int4, int8,
# float4, float8, bool and text columns without text; the other pairs (long
# into int, int into smallint, float into double, string into varchar(3), a
# domain) take the text and the column's input function.  Both insert paths
# read the same random records; rows and dead letters must be the same.
schema dx <<'EOF'
{"type": "record", "name": "Dx", "fields": [
  {"name": "i4", "type": "int"}, {"name": "i8", "type": "int"}, {"name": "l8", "type": ["null", "long"]},
  {"name": "l4", "type": "long"}, {"name": "i2", "type": "int"}, {"name": "f4", "type": "float"},
  {"name": "d8", "type": ["null", "double"]}, {"name": "f8", "type": "float"}, {"name": "b", "type": "boolean"},
  {"name": "s", "type": ["null", "string"]}, {"name": "v", "type": "string"}, {"name": "lt", "type": "long"},
  {"name": "p", "type": "int"}]}
EOF
dx_n=3000
dx_seed=${EOINGEST_DIRECT_SEED:-$RANDOM}
diag "avro differential: $dx_n records, seed $dx_seed (EOINGEST_DIRECT_SEED=$dx_seed to repeat)"
python3 - "$dx_n" "$dx_seed" >"$work/dx.lines" <<'EOF2'
import random, sys
n, rnd = int(sys.argv[1]), random.Random(int(sys.argv[2]))
I32 = [0, 1, -1, 13, 7, 2147483647, -2147483648, 32767, 32768, -32769]
I64 = [0, 42, -9223372036854775808, 9223372036854775807, 2147483648, -2147483649, None]
FL = ["0.0", "1.5", "-2.25", "3.4028234663852886e38", "1e-45", "float('nan')", "float('inf')", "float('-inf')", "0.1"]
ST = ["plain", "", "\u00e9t\u00e9", "tab\there", "back\\slash", "a\x00b", "\\N", "abcd", "abc", None]
for k in range(n):
    pick = lambda pool: rnd.choice(pool)
    nn = lambda pool: rnd.choice([v for v in pool if v is not None])
    s, l8, d8 = pick(ST), pick(I64), pick(FL + ["None"])
    print('{"schema": "dx", "value": {"i4": %d, "i8": %d, "l8": %r, "l4": %d, "i2": %d, "f4": %s, "d8": %s, '
          '"f8": %s, "b": %s, "s": %r, "v": %r, "lt": %d, "p": %d}}'
          % (nn(I32), nn(I32), l8, nn(I64), nn(I32), pick(FL), d8, pick(FL), rnd.choice(["True", "False"]),
             s, nn(ST), nn(I64), rnd.choice([1, 5, 0, -3])))
EOF2
topic=avro_dx_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" dx="$work/dx.avsc" <"$work/dx.lines" >/dev/null
sql "DROP DOMAIN IF EXISTS dxa_pos; CREATE DOMAIN dxa_pos AS int CHECK (VALUE > 0)" >/dev/null
for t in dxa_direct dxa_copy; do
  sql "CREATE TABLE $t (i4 int CHECK (i4 <> 13), i8 bigint, l8 bigint, l4 int, i2 smallint, f4 real,
         d8 double precision, f8 double precision, b bool, s text, v varchar(3), lt text, p dxa_pos)" >/dev/null
done
dx_job() { # JOB TABLE PATH
  set_insert_path "$3"
  job_consume_all "$1" "$dx_n" 120 "brokers => '$KAFKA_BROKERS', topic => '$topic', target => '$2', format => 'avro',
    schema_registry => '$reg_url', options => '$auth_options', batch_size => 500"
}
check "avro through COPY's text: every record consumed" dx_job dxa_c dxa_copy copy
check "avro straight into tuples: every record consumed" dx_job dxa_d dxa_direct direct
reset_insert_path
dx_rows=$(sql "SELECT count(*) FROM dxa_direct")
dx_dead=$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'dxa_d'")
diag "avro differential: rows $dx_rows, dead letters $dx_dead"
check "avro: the records make rows and dead letters both" test "$dx_rows" -gt 0 -a "$dx_dead" -gt 0
is "$(sql "SELECT count(*) FROM ((TABLE dxa_direct EXCEPT ALL TABLE dxa_copy) UNION ALL (TABLE dxa_copy EXCEPT ALL TABLE dxa_direct)) x")" 0 \
  "avro: the same rows both ways (NaN, infinities, extremes, empty strings, é)"
dx_diff=$(sql "WITH c AS (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = 'dxa_c'),
                    d AS (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = 'dxa_d')
               SELECT count(*) FROM ((TABLE c EXCEPT ALL TABLE d) UNION ALL (TABLE d EXCEPT ALL TABLE c)) x")
is "$dx_diff" 0 "avro: the same dead letters, offset by offset, with the same SQLSTATE"
[ "$dx_diff" = 0 ] || diag "$(sql "SELECT job, \"offset\", sqlstate, error FROM eoingest.dead_letters WHERE job IN ('dxa_c', 'dxa_d') ORDER BY 2, 1 LIMIT 40")"
is "$(sql "SELECT (SELECT count(*) FILTER (WHERE error LIKE '%COPY dxa_copy%') > 0 FROM eoingest.dead_letters WHERE job = 'dxa_c')
             AND (SELECT count(*) FILTER (WHERE error LIKE '%COPY dxa_direct%') = 0 FROM eoingest.dead_letters WHERE job = 'dxa_d')")" t \
  "avro: the copy job went through COPY, the direct job did not"

for j in dxa_c dxa_d; do sql "SELECT eoingest.drop_job('$j')" >/dev/null 2>&1 || true; done
sql "DROP TABLE dxa_direct, dxa_copy; DROP DOMAIN dxa_pos" >/dev/null

# The same for logical types, bytes, fixed and enums: date, time-*,
# timestamp-*, local-timestamp-*, decimal (of up to 8 bytes), duration, a
# fixed uuid, bytes and enums become datums of the column's type (through
# the typmod's coercion for time(3), timestamptz(0), numeric(5,1)); longer
# decimals, string uuids, enums into a PostgreSQL enum and bytes into text
# take the text.  The records are encoded here, not by fastavro, so that
# they reach what a serializer refuses: negative scales, values out of
# PostgreSQL's range, non-minimal decimals.
cat >"$work/dl.avsc" <<'EOF'
{"type": "record", "name": "Dl", "fields": [
  {"name": "d", "type": {"type": "int", "logicalType": "date"}},
  {"name": "nd", "type": ["null", {"type": "int", "logicalType": "date"}]},
  {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
  {"name": "tu", "type": {"type": "long", "logicalType": "time-micros"}},
  {"name": "tsm", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "tsu", "type": {"type": "long", "logicalType": "timestamp-micros"}},
  {"name": "tsn", "type": {"type": "long", "logicalType": "timestamp-nanos"}},
  {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
  {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 2}},
  {"name": "dec5", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 3}},
  {"name": "decf", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal", "precision": 18, "scale": -2}},
  {"name": "u", "type": {"type": "fixed", "name": "U16", "size": 16, "logicalType": "uuid"}},
  {"name": "us", "type": {"type": "string", "logicalType": "uuid"}},
  {"name": "dur", "type": {"type": "fixed", "name": "D12", "size": 12, "logicalType": "duration"}},
  {"name": "by", "type": "bytes"},
  {"name": "fx", "type": {"type": "fixed", "name": "F4", "size": 4}},
  {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
  {"name": "ep", "type": "E"},
  {"name": "bt", "type": "bytes"}]}
EOF
dl_id=$(register_refs dl-value "$work/dl.avsc" '[]')
dx_n=2000
diag "avro logical differential: $dx_n records, seed $dx_seed, schema id $dl_id"
python3 - "$dx_n" "$dx_seed" "$dl_id" >"$work/dl.lines" <<'EOF2'
import random, struct, sys
n, rnd, sid = int(sys.argv[1]), random.Random(int(sys.argv[2])), int(sys.argv[3])
def varint(v):
    v = (v << 1) ^ (v >> 63)
    out = bytearray()
    while True:
        if v < 0x80:
            return bytes(out + bytes([v]))
        out.append((v & 0x7f) | 0x80)
        v >>= 7
def blob(b): return varint(len(b)) + b
def twos(x, size=None):
    if size is None:
        size = rnd.choice([(x.bit_length() + 8) // 8, (x.bit_length() + 8) // 8 + 1])
    return x.to_bytes(size, "big", signed=True)
I64MAX, I64MIN = 2**63 - 1, -2**63
# (good values, bad values): a field takes a bad one in 3% of the records
DAYS = ([0, -1, 19000, -719162, 2145042906, -2440588], [2145042907, -2440589, 2**31 - 1, -2**31])
MS = ([0, 86399999, 86400000, 12345678], [86400001, -1])
US = ([0, 86399999999, 86400000000, 123456789, 86399999500], [86400000001, -1])
TS = ([0, -1, 1, -999, 1700000000123456, 1700000000999999, -210866803200000000, 253402300799999999, 2**41],
      [I64MAX, I64MIN, -210866803200000001, 9223371331200000000, 9214646400000000])
DEC = ([0, 1, -1, 12345, -12345, I64MAX, I64MIN, 2**63, -2**63 - 1, 10**37, -10**37, 255, 128, -128, -129, 9999949,
        -9999949], [])
DEC5 = ([0, 1, -1, 12345, 9999949, -9999949, 128, -129], [9999950, -9999950, 123456789, 99999999999])
U32 = ([0, 1, 2**31 - 1], [2**31, 2**32 - 1])
UUIDS = (["12345678-1234-5678-1234-567812345678", "{12345678-1234-5678-1234-567812345678}"], ["not-a-uuid", ""])
BYTES = ([b"", b"\x00\xff", b"abc", b"\\x41"], [])
PGENUM = ([0, 1], [2])
def pick(pool):
    good, bad = pool
    return rnd.choice(bad) if bad and rnd.random() < 0.03 else rnd.choice(good)
for k in range(n):
    body = varint(pick(DAYS))
    body += rnd.choice([varint(0), varint(1) + varint(pick(DAYS))])
    body += varint(pick(MS)) + varint(pick(US))
    body += varint(pick(TS)) + varint(pick(TS)) + varint(pick(TS)) + varint(pick(TS))
    body += blob(rnd.choice([b"", twos(pick(DEC))])) + blob(twos(pick(DEC5)))
    body += twos(max(min(pick(DEC), I64MAX), I64MIN), 8)
    body += bytes(rnd.getrandbits(8) for _ in range(16))
    body += blob(pick(UUIDS).encode())
    body += b"".join(struct.pack("<I", pick(U32)) for _ in range(3))
    body += blob(pick(BYTES)) + bytes(rnd.getrandbits(8) for _ in range(4))
    body += varint(rnd.choice([0, 1, 2])) + varint(pick(PGENUM)) + blob(pick(BYTES))
    print('{"hex": "%s"}' % (b"\x00" + sid.to_bytes(4, "big") + body).hex())
EOF2
topic=avro_dl_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" <"$work/dl.lines" >/dev/null
sql "DROP TYPE IF EXISTS dxl_e; CREATE TYPE dxl_e AS ENUM ('A', 'B')" >/dev/null
for t in dxl_direct dxl_copy; do
  sql "CREATE TABLE $t (d date, nd date, tm time, tu time(3), tsm timestamptz, tsu timestamptz(0), tsn timestamptz,
         lts timestamp, dec numeric, dec5 numeric(5,1), decf numeric, u uuid, us uuid, dur interval, by bytea, fx bytea,
         e text, ep dxl_e, bt text)" >/dev/null
done
check "avro logical types through COPY's text: every record consumed" dx_job dxl_c dxl_copy copy
check "avro logical types straight into tuples: every record consumed" dx_job dxl_d dxl_direct direct
reset_insert_path
dx_rows=$(sql "SELECT count(*) FROM dxl_direct")
dx_dead=$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'dxl_d'")
diag "avro logical differential: rows $dx_rows, dead letters $dx_dead"
check "avro logical types: the records make rows and dead letters both" test "$dx_rows" -gt 0 -a "$dx_dead" -gt 0
is "$(sql "SELECT count(*) FROM ((SELECT t::text FROM dxl_direct t EXCEPT ALL SELECT t::text FROM dxl_copy t)
                             UNION ALL (SELECT t::text FROM dxl_copy t EXCEPT ALL SELECT t::text FROM dxl_direct t)) x")" 0 \
  "avro logical types: the same rows both ways, to the text (display scales, rounding by typmods, extremes)"
dx_diff=$(sql "WITH c AS (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = 'dxl_c'),
                    d AS (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = 'dxl_d')
               SELECT count(*) FROM ((TABLE c EXCEPT ALL TABLE d) UNION ALL (TABLE d EXCEPT ALL TABLE c)) x")
is "$dx_diff" 0 "avro logical types: the same dead letters, offset by offset, with the same SQLSTATE"
[ "$dx_diff" = 0 ] || diag "$(sql "SELECT job, \"offset\", sqlstate, error FROM eoingest.dead_letters WHERE job IN ('dxl_c', 'dxl_d') ORDER BY 2, 1 LIMIT 40")"
is "$(sql "SELECT (SELECT count(*) FILTER (WHERE error LIKE '%COPY dxl_copy%') > 0 FROM eoingest.dead_letters WHERE job = 'dxl_c')
             AND (SELECT count(*) FILTER (WHERE error LIKE '%COPY dxl_direct%') = 0 FROM eoingest.dead_letters WHERE job = 'dxl_d')")" t \
  "avro logical types: the copy job went through COPY, the direct job did not"
for j in dxl_c dxl_d; do sql "SELECT eoingest.drop_job('$j')" >/dev/null 2>&1 || true; done
sql "DROP TABLE dxl_direct, dxl_copy; DROP TYPE dxl_e" >/dev/null
# ---- records as JSON: read from their bytes, and with Avro C, to the same text ----
# value_json (and a mapping's paths, and the Debezium envelope) read an Avro record as JSON straight
# from its bytes (src/format/avrojson.c).  eoingest.test_avro_json_check reads each one with Avro C
# too and raises XX000 where the two texts differ: the topics above through a transform's
# value_json, with every type at its boundaries, maps, unions, references, the random records of
# the differentials (NaN, extremes, bad dates, decimals, enums out of range) and random bytes.
sql "ALTER SYSTEM SET eoingest.test_avro_json_check = on" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "CREATE TABLE avj (src text, off bigint, j jsonb)" >/dev/null
# and maps: a key holding a NUL byte is a record error, as in a string value; so is a key twice
schema nulkey <<'EOF'
{"type": "record", "name": "Mk", "fields": [{"name": "m", "type": {"type": "map", "values": "int"}}]}
EOF
nulkey_id=$(register_refs nulkey-value "$work/nulkey.avsc" '[]')
eoi-kafka create-topic "avro_nulkey_$$" 1 >/dev/null
printf '{"hex": "00%08x%s"}\n' "$nulkey_id" 0202610200 "$nulkey_id" 02066100620200 \
  "$nulkey_id" 0402610202610400 "$nulkey_id" 0402610202620400 | produce "avro_nulkey_$$" >/dev/null
avj_total=0 avj_stuck=''
for t in all map union ref bad fuzz dx dl nulkey; do
  n=$(eoi-kafka watermarks "avro_${t}_$$" | awk '{n += $3} END {print n}')
  avj_total=$((avj_total + n))
  sql "SELECT eoingest.create_job(name => 'avj_$t', brokers => '$KAFKA_BROKERS', topic => 'avro_${t}_$$',
         format => 'avro', schema_registry => '$reg_url', options => '$auth_options', batch_size => 500,
         transform => 'INSERT INTO avj SELECT ''$t'', \"offset\", value_json FROM eoingest.batch()');
       SELECT eoingest.start_job('avj_$t')" >/dev/null
  # until it consumed every record, or stopped at one (the check's internal error makes the job retry
  # the batch, the error in last_error)
  done_sql="SELECT coalesce(sum(next_offset), 0) = $n FROM eoingest.offsets WHERE job = 'avj_$t'"
  wait_until 120 "SELECT ($done_sql) OR (SELECT state = 'failed' OR last_error LIKE '%reads as different JSON%'
                                          FROM eoingest.job_status WHERE name = 'avj_$t')" || true
  [ "$(sql "$done_sql")" = t ] ||
    avj_stuck+="avj_$t: $(sql "SELECT state || ': ' || coalesce(left(last_error, 600), '') FROM eoingest.job_status WHERE name = 'avj_$t'")"$'\n'
  sql "SELECT eoingest.stop_job('avj_$t')" >/dev/null 2>&1 || true
done
avj_rows=$(sql "SELECT count(*) FROM avj")
avj_dead=$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job LIKE 'avj%'")
diag "avro as JSON: $avj_total records, $avj_rows rows, $avj_dead dead letters"
is "$((avj_rows + avj_dead))" "$avj_total" "avro as JSON: every record a row or a dead letter"
# a difference stops the job at its record (an internal error is no record's fault), or would be a dead letter
avj_stuck+=$(sql "SELECT string_agg(job || ' offset ' || \"offset\" || ': ' || left(error, 600), E'\n')
                  FROM eoingest.dead_letters WHERE job LIKE 'avj%' AND sqlstate = 'XX000'")
is "$avj_stuck" "" "avro as JSON: the text read from the bytes is Avro C's, record by record"
is "$(sql "SELECT count(DISTINCT src) FILTER (WHERE src IN ('all', 'map', 'union', 'ref', 'dx', 'dl')) FROM avj")" 6 \
  "avro as JSON: rows from every type, maps, unions, references and both differentials"
is "$(sql "SELECT CASE WHEN off = 0 THEN (j->>'s' = E'tab\\there \"q\" back\\\\slash \\u00e9\\nnewline')::text
                  ELSE j->>'s' END, j->'at'
             FROM avj WHERE src = 'all' ORDER BY off" | tr '\n' ' ')" \
  'true|["x", null, "y,z \"q\""] |[] x|[null] ' \
  "avro as JSON: strings with tabs, quotes, backslashes, UTF-8 and newlines escaped, plain ones as they are"
is "$(sql "SELECT coalesce((SELECT string_agg(off || ' ' || j::text, ',' ORDER BY off) FROM avj WHERE src = 'nulkey'), 'no rows')
                  || ', ' || coalesce((SELECT string_agg(\"offset\" || ' ' || sqlstate, ',' ORDER BY \"offset\")
                                         FROM eoingest.dead_letters WHERE job = 'avj_nulkey'), 'no dead letters')")" \
  '0 {"m": {"a": 1}},3 {"m": {"a": 1, "b": 2}}, 1 22021,2 22P03' \
  "avro as JSON: a map key holding a NUL byte, or a key twice, is a record error (not cut, not merged)"
sql "ALTER SYSTEM RESET eoingest.test_avro_json_check" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
for j in all map union ref bad fuzz dx dl nulkey; do sql "SELECT eoingest.drop_job('avj_$j')" >/dev/null 2>&1 || true; done
sql "DROP TABLE avj" >/dev/null

for j in js js_cdc av av_evo av_tr av_kv av_keys av_union av_hdr av_hdr_tr av_ref av_bad av_wrong av_down av_fz av_crash; do sql "SELECT eoingest.drop_job('$j')" >/dev/null 2>&1 || true; done
sql "DROP TABLE js, js_cdc, av, av_evo, av_tr, av_kv, av_keys, av_union, av_hdr, av_hdr_tr, av_ref, av_bad, av_wrong, av_down, av_fz, av_crash" >/dev/null
done_testing
