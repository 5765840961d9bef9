#!/usr/bin/env bash
# Format json reads Kafka Connect's JsonConverter wrapper natively: records
# written by Connect's own JsonConverter (test/json/ConnectProduce.java, with
# Kafka Connect's jars; schemas.enable=true) with every logical type it has
# (Decimal as base64 and, after the schema evolves, as numbers; Date, Time,
# Timestamp, bytes, an array, a nested struct) go into a table's columns
# without a transform, while the worker is SIGKILLed once; afterwards the
# table equals what was produced, both ways, and nothing was set aside.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 6
half=10000
total=$((2 * half))
topic=connect_json_$$
"$EOINGEST_TEST_DIR/connect.sh" fetch debezium-postgres >/dev/null
libs=$EOINGEST_CACHE/connect-$KAFKA_VERSION/libs
produce() {
  java -cp "$libs/*" "$EOINGEST_TEST_DIR/json/ConnectProduce.java" "$KAFKA_BROKERS" "$topic" "$@" >/dev/null 2>&1
}

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "DROP TABLE IF EXISTS connect_json;
     CREATE TABLE connect_json (id bigint, name text, price numeric(12,2), born date, seen timestamptz,
                                at_time time, raw bytea, tags text[], doc jsonb, note text)" >/dev/null
eoi-kafka create-topic "$topic" 2 >/dev/null
sql "SELECT eoingest.create_job(name => 'connect_json', brokers => '$KAFKA_BROKERS', topic => '$topic',
        target => 'connect_json', format => 'json', batch_size => 500, batch_timeout_ms => 50);
     SELECT eoingest.start_job('connect_json')" >/dev/null

produce 0 "$half" BASE64 false
check "the first records arrive" wait_until 120 "SELECT count(*) > 0 FROM connect_json"
pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'connect_json' AND pid IS NOT NULL")
rows=$(sql "SELECT count(*) FROM connect_json")
kill -9 "$pid"
diag "worker $pid SIGKILLed at $rows rows or more"
produce "$half" "$half" NUMERIC true
check "all $total records arrive" wait_until 300 "SELECT count(*) >= $total FROM connect_json"

expected="SELECT i, 'n' || i, (i / 100.0)::numeric(12,2), date '1970-01-01' + (i % 20000)::int, to_timestamp(i),
                 time '00:00' + (i % 86400) * interval '1 second', convert_to('r' || i, 'UTF8'),
                 ARRAY['t' || i, NULL], CASE WHEN i % 7 <> 0 THEN jsonb_build_object('a', i) END,
                 CASE WHEN i >= $half THEN 'v2-' || i END
            FROM generate_series(0, $total - 1) i"
is "$(sql "SELECT count(*) FROM (SELECT * FROM connect_json EXCEPT ALL ($expected)) x")" 0 \
  "every row is a record produced, its Connect types read as the schema says"
is "$(sql "SELECT count(*) FROM (($expected) EXCEPT ALL SELECT * FROM connect_json) x")" 0 \
  "every record produced is a row: none lost, none twice"
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'connect_json'")" 0 "nothing set aside"
ok "$([ "$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'connect_json'")" != "$pid" ] && echo 0 || echo 1)" \
  "a new worker went on after the SIGKILL"

sql "SELECT eoingest.drop_job('connect_json')" >/dev/null
