#!/usr/bin/env bash
# Values whose size or scale a change event states are bounded before any
# work is done: a 300 KB Connect Decimal, a scale of 2^31-1, a Bits length of
# 2^31-1.  Each is its record's dead letter within seconds (not a failed job,
# not a wrong value, not hours of CPU), the records around them go in, and
# stop_job returns at once while such a record is being read.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 7
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=cdc_hostile_$$
eoi-kafka create-topic "$topic" 1 >/dev/null

# event ID FIELD-SCHEMA VALUE: a Debezium create event in Connect's JSON wrapper
# with one more field, d, of the given schema and value (both JSON).
event() {
  printf '{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}]},"payload":{"id":%s}}\t' "$1"
  printf '{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"int32","field":"id"},%s],"optional":true,"field":"after"},{"type":"string","field":"op"}]},"payload":{"after":{"id":%s,"d":%s},"op":"c"}}\n' \
    "$2" "$1" "$3"
}
decimal() { echo "{\"type\":\"bytes\",\"optional\":true,\"field\":\"d\",\"name\":\"org.apache.kafka.connect.data.Decimal\",\"parameters\":{\"scale\":\"$1\"}}"; }
bits() { echo "{\"type\":\"bytes\",\"optional\":true,\"field\":\"d\",\"name\":\"io.debezium.data.Bits\",\"parameters\":{\"length\":\"$1\"}}"; }
big=$(head -c 300000 /dev/urandom | base64 -w0)	# 300 KB of digits' bytes

sql "CREATE TABLE cdc_hd (id int PRIMARY KEY, d numeric); CREATE TABLE cdc_hb (id int PRIMARY KEY, d bit varying)" >/dev/null
{
  event 1 "$(decimal 2)" '"MDk="'                     # 123.45
  event 2 "$(decimal 2)" "\"$big\""                    # 300 KB
  event 3 "$(decimal 2147483647)" '"MDk="'             # a scale numeric cannot hold
  event 4 "$(decimal -2147483648)" '"MDk="'
  event 5 "$(decimal 2)" '"AQ=="'                      # 0.01
} | eoi-kafka produce -K "$topic" >/dev/null
t0=$SECONDS
sql "SELECT eoingest.create_job(name => 'cdc_hd', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'cdc_hd',
            format => 'json', envelope => 'debezium', batch_timeout_ms => 200);
     SELECT eoingest.start_job('cdc_hd')" >/dev/null
check "the records around the hostile ones go in" wait_until 60 \
  "SELECT string_agg(id || '=' || d, ' ' ORDER BY id) = '1=123.45 5=0.01' FROM cdc_hd"
is "$(sql "SELECT string_agg(\"offset\" || ':' || sqlstate, ' ' ORDER BY \"offset\") FROM eoingest.dead_letters WHERE job = 'cdc_hd'")" \
  "1:22003 2:22003 3:22003" "a 300 KB decimal and scales numeric cannot hold are dead letters (numeric value out of range)"
ok "$([ $((SECONDS - t0)) -lt 30 ] && echo 0 || echo 1)" "within seconds ($((SECONDS - t0)) s)"
is "$(sql "SELECT state FROM eoingest.job_status WHERE name = 'cdc_hd'")" running "and the job runs on"

btopic=${topic}_bits
eoi-kafka create-topic "$btopic" 1 >/dev/null
{
  event 1 "$(bits 4)" '"BQ=="'                         # 0101
  event 2 "$(bits 2147483647)" '"BQ=="'                # more bits than bit varying holds
  event 3 "$(bits 3)" '"Bw=="'                         # 111
} | eoi-kafka produce -K "$btopic" >/dev/null
sql "SELECT eoingest.create_job(name => 'cdc_hb', brokers => '$KAFKA_BROKERS', topic => '$btopic', target => 'cdc_hb',
            format => 'json', envelope => 'debezium', batch_timeout_ms => 200);
     SELECT eoingest.start_job('cdc_hb')" >/dev/null
check "a Bits length of 2^31-1 does not fail the job: the other records go in" wait_until 60 \
  "SELECT string_agg(id || '=' || d, ' ' ORDER BY id) = '1=0101 3=111' FROM cdc_hb"
is "$(sql "SELECT string_agg(\"offset\" || ':' || sqlstate, ' ' ORDER BY \"offset\") FROM eoingest.dead_letters WHERE job = 'cdc_hb'")" \
  "1:54000" "and it is a dead letter (program limit exceeded)"

# stop_job while a batch of the longest decimals numeric holds is read (146,900
# digits, 16,383 after the point): the worker answers within a second or so.
stopic=${topic}_stop
eoi-kafka create-topic "$stopic" 1 >/dev/null
max=$(head -c 61000 /dev/urandom | base64 -w0)
for i in $(seq 1 40); do event "$i" "$(decimal 16383)" "\"$max\""; done | eoi-kafka produce -K "$stopic" >/dev/null
sql "CREATE TABLE cdc_hs (id int PRIMARY KEY, d numeric);
     SELECT eoingest.create_job(name => 'cdc_hs', brokers => '$KAFKA_BROKERS', topic => '$stopic', target => 'cdc_hs',
            format => 'json', envelope => 'debezium', batch_timeout_ms => 200);
     SELECT eoingest.start_job('cdc_hs')" >/dev/null
wait_until 30 "SELECT count(*) > 0 FROM eoingest.job_status WHERE name = 'cdc_hs' AND pid IS NOT NULL AND state = 'running'" || true
sleep 1
t0=$(date +%s%N)
sql "SELECT eoingest.stop_job('cdc_hs')" >/dev/null
wait_until 60 "SELECT count(*) = 0 FROM eoingest.job_status WHERE name = 'cdc_hs' AND pid IS NOT NULL" || true
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
ok "$([ "$ms" -lt 5000 ] && echo 0 || echo 1)" "stop_job ends a worker reading the largest decimals within seconds ($ms ms)"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'cdc_h%';
     DROP TABLE cdc_hd, cdc_hb, cdc_hs" >/dev/null
done_testing
