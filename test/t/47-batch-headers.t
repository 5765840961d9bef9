#!/usr/bin/env bash
# eoingest.batch() gives a transform the message headers two ways: as an
# object (a repeated name keeps its last value) and as header_list (every
# header in order, repeated names kept), with the raw key and value.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 6
topic=hdr_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE hdr_t (headers jsonb, header_list jsonb, key_bytes bytea, value_bytes bytea)" >/dev/null
eoi-kafka create-topic "$topic" 1 >/dev/null
printf 'v1\n' | kcat -P -b "$KAFKA_BROKERS" -t "$topic" -k k1 -H a=1 -H b=x -H a=2
sql "SELECT eoingest.create_job(name => 'hdr', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
        transform => 'INSERT INTO hdr_t SELECT headers, header_list, key_bytes, value_bytes FROM eoingest.batch()');
     SELECT eoingest.start_job('hdr')" >/dev/null
check "the message arrives" wait_until 60 "SELECT count(*) = 1 FROM hdr_t"
is "$(sql "SELECT headers::text || ' ' || header_list::text FROM hdr_t")" \
  '{"a": "2", "b": "x"} [{"name": "a", "value": "1"}, {"name": "b", "value": "x"}, {"name": "a", "value": "2"}]' \
  "headers keeps a repeated name's last value; header_list keeps every header in order"
is "$(sql "SELECT encode(key_bytes, 'escape') || ' ' || encode(value_bytes, 'escape') FROM hdr_t")" "k1 v1" \
  "key_bytes and value_bytes are the message's bytes"

# A binary key and a binary header value (a trace id, a schema GUID) used to
# fail the record in any transform, even one that never reads them.
sql "CREATE TABLE hdr_bin (k text, key_bytes bytea, headers jsonb, header_list jsonb)" >/dev/null
printf 'v2\n' | kcat -P -b "$KAFKA_BROKERS" -t "$topic" -k $'\xff\xfe' -H bin=$'\xff\x01' -H txt=ok
sql "SELECT eoingest.create_job(name => 'hdr_b', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
        transform => 'INSERT INTO hdr_bin SELECT key, key_bytes, headers, header_list FROM eoingest.batch()');
     SELECT eoingest.start_job('hdr_b')" >/dev/null
check "a record with a binary key and a binary header reaches the transform" \
  wait_until 60 "SELECT count(*) = 2 FROM hdr_bin"
is "$(sql "SELECT coalesce(k, 'NULL') || ' ' || encode(key_bytes, 'hex') || ' ' || headers::text FROM hdr_bin WHERE key_bytes <> 'k1'")" \
  'NULL fffe {"bin": null, "txt": "ok"}' "the binary key is NULL in key (its bytes in key_bytes), the binary header null"
is "$(sql "SELECT header_list::text FROM hdr_bin WHERE key_bytes <> 'k1'")" \
  '[{"hex": "ff01", "name": "bin", "value": null}, {"name": "txt", "value": "ok"}]' \
  "header_list keeps the binary header's bytes in hex"
sql "SELECT eoingest.drop_job('hdr'); SELECT eoingest.drop_job('hdr_b'); DROP TABLE hdr_t, hdr_bin" >/dev/null
done_testing
