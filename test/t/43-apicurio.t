#!/usr/bin/env bash
# Format avro against Apicurio Registry, not our own test registry: Apicurio's
# Confluent-compatible API (/apis/ccompat/v7), schemas registered there by confluent-kafka's
# AvroSerializer, read by eoingest. test/apicurio.sh builds and starts it (its pom says which
# version and why). Plain values, two schema versions in one topic, Avro keys with tombstones
# (upsert), schema references, an unknown id, Protobuf records (Apicurio serves their schemas as
# serialized descriptors), the registry frozen mid-ingestion (SIGSTOP: its
# storage is in memory, so a restart would forget every schema; a frozen process keeps them
# and answers nothing, as a hung registry does).
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/avro.sh"

[ "${EOINGEST_LONG:-0}" = 1 ] || [ "${EOINGEST_APICURIO:-0}" = 1 ] ||
  skip_all "long mode only (EOINGEST_LONG=1 or EOINGEST_APICURIO=1): builds Apicurio Registry with Maven"

plan 16

apicurio=$EOINGEST_TEST_DIR/apicurio.sh
py=$(avro_python)
tools=$EOINGEST_TEST_DIR/tools
work=$(mktemp -d "$EOINGEST_RUN/apicurio.XXXXXX")
trap '"$apicurio" stop; rm -rf "$work"' EXIT

t0=$SECONDS
"$apicurio" fetch
t1=$SECONDS
"$apicurio" start
diag "apicurio: fetch/build $((t1 - t0)) s, start $((SECONDS - t1)) s"
reg_url=$("$apicurio" url)
reg_pid=$(cat "$EOINGEST_RUN/apicurio/apicurio.pid")

produce() {
  local topic=$1
  shift
  "$py" "$tools/avro_produce.py" "$KAFKA_BROKERS" "$reg_url" "$topic" "$@"
}
schema() { cat >"$work/$1.avsc"; }
json_id() { python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'; }
like() { case "$1" in *$2*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "expected to contain: $2" ;; esac; }
job() {  # NAME TOPIC TARGET [MORE ARGUMENTS]
  sql "SELECT eoingest.create_job(name => '$1', brokers => '$KAFKA_BROKERS', topic => '$2', target => '$3',
         format => 'avro', schema_registry => '$reg_url', batch_timeout_ms => 100${4:+, $4});
       SELECT eoingest.start_job('$1')" >/dev/null
}

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# ---- plain values ----
schema simple <<'EOF'
{"type": "record", "name": "Simple", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}
EOF
sql "CREATE TABLE ap_plain (id int PRIMARY KEY, name text)" >/dev/null
topic=ap_plain_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" >/dev/null <<'EOF'
{"schema": "simple", "value": {"id": 1, "name": "one"}}
{"schema": "simple", "value": {"id": 2, "name": "t\u00e9\tab \"q\""}}
{"schema": "simple", "value": {"id": 3, "name": ""}}
EOF
job ap_plain "$topic" ap_plain "on_error => 'fail'"
check "records whose schema Apicurio holds arrive" wait_until 60 "SELECT count(*) = 3 FROM ap_plain"
is "$(sql "SELECT string_agg(id || '=' || name, ',' ORDER BY id) FROM ap_plain")" '1=one,2=té	ab "q",3=' "exactly"
is "$(curl -s "$reg_url/subjects")" "[\"$topic-value\"]" "the serializer registered the schema in Apicurio under SUBJECT-value"

# ---- schema evolution: two versions in one topic ----
schema v2 <<'EOF'
{"type": "record", "name": "Simple", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
  {"name": "added", "type": ["null", "int"], "default": null}]}
EOF
sql "CREATE TABLE ap_evo (id bigint, name text, added int)" >/dev/null
topic=ap_evo_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" v1="$work/simple.avsc" v2="$work/v2.avsc" >/dev/null <<'EOF'
{"schema": "v1", "value": {"id": 1, "name": "one"}}
{"schema": "v2", "value": {"id": 2, "name": "two", "added": 20}}
{"schema": "v1", "value": {"id": 3, "name": "three"}}
{"schema": "v2", "value": {"id": 4, "name": "four", "added": None}}
EOF
job ap_evo "$topic" ap_evo "on_error => 'fail'"
check "records of two versions of one subject arrive" wait_until 60 "SELECT count(*) = 4 FROM ap_evo"
is "$(sql "SELECT string_agg(id || ' ' || name || ' ' || coalesce(added::text, '-'), ',' ORDER BY id) FROM ap_evo")" \
  "1 one -,2 two 20,3 three -,4 four -" "each record read with its own version"
is "$(curl -s "$reg_url/subjects/$topic-value/versions")" "[1,2]" "Apicurio holds both versions"

# ---- upsert: Avro keys, tombstones delete ----
schema key <<'EOF'
{"type": "record", "name": "Key", "fields": [{"name": "id", "type": "int"}]}
EOF
sql "CREATE TABLE ap_kv (id int PRIMARY KEY, name text)" >/dev/null
topic=ap_kv_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" key="$work/key.avsc" >/dev/null <<'EOF'
{"schema": "simple", "key_schema": "key", "key": {"id": 1}, "value": {"id": 1, "name": "a"}}
{"schema": "simple", "key_schema": "key", "key": {"id": 2}, "value": {"id": 2, "name": "b"}}
{"schema": "simple", "key_schema": "key", "key": {"id": 3}, "value": {"id": 3, "name": "c"}}
{"schema": "simple", "key_schema": "key", "key": {"id": 1}, "value": {"id": 1, "name": "a2"}}
{"key_schema": "key", "key": {"id": 2}, "value": None}
EOF
job ap_kv "$topic" ap_kv "mode => 'upsert', key_format => 'avro', on_error => 'fail'"
check "upsert with Avro keys from Apicurio: an update, and a tombstone deletes" \
  wait_until 60 "SELECT string_agg(id || '=' || name, ' ' ORDER BY id) = '1=a2 3=c' FROM ap_kv"

# ---- schema references: named types registered under other subjects ----
schema country <<'EOF'
{"type": "record", "name": "Country", "namespace": "geo", "fields": [{"name": "code", "type": "string"}]}
EOF
schema customer <<'EOF'
{"type": "record", "name": "Customer", "namespace": "shop", "fields": [
  {"name": "id", "type": "int"}, {"name": "born", "type": "geo.Country"}]}
EOF
python3 -c 'import json, sys; print(json.dumps({"schema": open(sys.argv[1]).read()}))' "$work/country.avsc" |
  curl -s -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' "$reg_url/subjects/geo-country/versions" -d @- >/dev/null
echo '[{"name": "geo.Country", "subject": "geo-country", "version": 1}]' >"$work/customer.avsc.refs"
sql "CREATE TABLE ap_ref (id int, born jsonb)" >/dev/null
topic=ap_ref_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" customer="$work/customer.avsc" >/dev/null <<'EOF'
{"schema": "customer", "value": {"id": 1, "born": {"code": "FR"}}}
{"schema": "customer", "value": {"id": 2, "born": {"code": "CH"}}}
EOF
job ap_ref "$topic" ap_ref "on_error => 'fail'"
check "records of a schema with a reference (the referenced type read from Apicurio by subject and version)" \
  wait_until 60 "SELECT string_agg(id || ' ' || (born->>'code'), ',' ORDER BY id) = '1 FR,2 CH' FROM ap_ref"

# ---- an unknown schema id: a dead letter that names it ----
sql "CREATE TABLE ap_bad (id int, name text)" >/dev/null
topic=ap_bad_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" >/dev/null <<'EOF'
{"schema": "simple", "value": {"id": 1, "name": "good"}}
{"raw": b'\x00\x00\x00\x27\x10\x02\x02x'}
{"schema": "simple", "value": {"id": 2, "name": "good too"}}
EOF
job ap_bad "$topic" ap_bad
check "the good records arrive, the one of an unknown id is a dead letter" \
  wait_until 60 "SELECT (SELECT count(*) = 2 FROM ap_bad) AND (SELECT count(*) = 1 FROM eoingest.dead_letters WHERE job = 'ap_bad')"
like "$(sql "SELECT \"offset\" || ': ' || error FROM eoingest.dead_letters WHERE job = 'ap_bad'")" \
  "1: schema id 10000 is not in the schema registry" "Apicurio's answer for an unknown id is read as Confluent's 40403"

# ---- the registry frozen mid-ingestion: retrying, then exact ----
schema later <<'EOF'
{"type": "record", "name": "Simple", "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": "string"},
  {"name": "extra", "type": "string", "default": ""}]}
EOF
sql "CREATE TABLE ap_down (id int, name text)" >/dev/null
topic=ap_down_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
produce "$topic" simple="$work/simple.avsc" --count 500 --template simple >/dev/null
job ap_down "$topic" ap_down
wait_until 60 "SELECT count(*) = 500 FROM ap_down" || true
# records of a version the worker has not met yet, serialized (registered) while the registry answers
produce "$topic" later="$work/later.avsc" --count 500 --start 500 --template later --dump >"$work/later.lines"
kill -STOP "$reg_pid"
produce "$topic" <"$work/later.lines" >/dev/null
check "with the registry frozen the job is retrying and says why" \
  wait_until 90 "SELECT state = 'retrying' AND last_error LIKE '%could not read schema id%from the schema registry%' FROM eoingest.job_status WHERE name = 'ap_down'"
is "$(sql "SELECT count(*) FROM ap_down")" 500 "nothing of the new version is written meanwhile"
kill -CONT "$reg_pid"
check "once the registry answers again every record is there exactly once" \
  wait_until 120 "SELECT count(*) = 1000 AND count(DISTINCT id) = 1000 FROM ap_down"

# ---- Protobuf: Apicurio keeps what ProtobufSerializer registers, a serialized descriptor (base64) ----
sql "DROP TABLE IF EXISTS ap_proto" >/dev/null
topic=ap_proto_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
for v in 1 3; do
  "$py" "$tools/protobuf_produce.py" "$KAFKA_BROKERS" "$reg_url" "$topic" "$v" $((v * 100)) 50 "$work/proto.expect" >/dev/null
done
answer=$(curl -s "$reg_url/schemas/ids/$(curl -s "$reg_url/subjects/$topic-value/versions/latest" | json_id)")
ok "$([[ $answer == *'"schemaType":"PROTOBUF"'* && $answer != *syntax* ]]; echo $?)" \
  "Apicurio serves the Protobuf schema as it was registered: a serialized descriptor, not .proto text"
sql "SELECT eoingest.create_job(name => 'ap_proto', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'ap_proto',
       format => 'protobuf', schema_registry => '$reg_url', batch_timeout_ms => 100, create_target => true,
       schema_changes => 'add_columns'); SELECT eoingest.start_job('ap_proto')" >/dev/null 2>&1
check "Protobuf records of two schema versions arrive in the table created and evolved from them" \
  wait_until 90 "SELECT to_regclass('ap_proto') IS NOT NULL AND (SELECT count(*) = 100 FROM ap_proto)"
diff_rows=$(sql "CREATE TEMP TABLE expected (doc jsonb); COPY expected FROM STDIN;
                 SELECT (SELECT count(*) FROM (SELECT (jsonb_populate_record(NULL::ap_proto, doc)).* FROM expected
                                               EXCEPT ALL SELECT * FROM ap_proto) m) || ' ' ||
                        (SELECT count(*) FROM (SELECT * FROM ap_proto
                                               EXCEPT ALL SELECT (jsonb_populate_record(NULL::ap_proto, doc)).* FROM expected) e)" \
            < <(sed 's/\\/\\\\/g' "$work/proto.expect"; echo '\.'))
is "$diff_rows" "0 0" "the Protobuf rows are what was produced, EXCEPT both ways"

for j in ap_plain ap_evo ap_kv ap_ref ap_bad ap_down ap_proto; do sql "SELECT eoingest.drop_job('$j')" >/dev/null 2>&1 || true; done
done_testing
