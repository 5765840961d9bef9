#!/usr/bin/env bash
# alter_job changes the broker list, the format, the intervals,
# max_message_bytes and commit_to_kafka of a running job; its offsets stay, so
# every record arrives once across the changes; each value is checked as
# create_job checks it, and job_definitions shows what the job now is.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 8
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=altm_$$
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --format csv >/dev/null
sql "CREATE TABLE altm (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'altm', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'altm',
            batch_timeout_ms => 100);
     SELECT eoingest.start_job('altm')" >/dev/null
check "the job reads the first records" wait_until 60 "SELECT count(*) = 100 FROM altm"

# To a broker list that reaches nothing: the job waits; back: it goes on from its offsets.
sql "SELECT eoingest.alter_job('altm', brokers => '127.0.0.1:1')" >/dev/null
sleep 2
eoi-kafka produce-seq "$topic" --count 100 --start 100 --format csv >/dev/null
sleep 4
is "$(sql "SELECT count(*) FROM altm")" 100 "with brokers that reach nothing, nothing more arrives"
sql "SELECT eoingest.alter_job('altm', brokers => '$KAFKA_BROKERS')" >/dev/null
check "with the brokers back, the records produced meanwhile arrive" wait_until 60 "SELECT count(*) = 200 FROM altm"

# csv -> json, once the job has caught up.
sql "SELECT eoingest.wait_for_catchup('altm', '30 s')" >/dev/null
sql "SELECT eoingest.alter_job('altm', format => 'json', checkpoint_interval_ms => 500,
            offset_commit_interval_ms => 500, max_message_bytes => 4096, commit_to_kafka => true)" >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --start 200 --format json >/dev/null
check "after format => 'json' the JSON records arrive" wait_until 60 "SELECT count(*) = 300 FROM altm"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) || ' ' || min(ts) || ' ' || max(ts) FROM altm") $(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'altm'")" \
  "300 300 0 299 0" "every record once, none a dead letter"
is "$(sql "SELECT format || ' ' || checkpoint_interval_ms || ' ' || offset_commit_interval_ms || ' ' || max_message_bytes
                  || ' ' || commit_to_kafka || ' ' || (brokers = '$KAFKA_BROKERS')
             FROM eoingest.job_definitions WHERE name = 'altm'")" "json 500 500 4096 true true" \
  "job_definitions shows the job as it now is"
group_tool=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
committed() {
  kafka_tool "$group_tool" --bootstrap-server "$KAFKA_BROKERS" --describe --group eoingest.altm 2>/dev/null |
    awk -v t="$topic" '$2 == t {n += $4} END {print n + 0}'
}
deadline=$((SECONDS + 60)); got=$(committed)
while [ "$got" != 300 ] && [ $SECONDS -lt $deadline ]; do sleep 2; got=$(committed); done
is "$got" 300 "with commit_to_kafka the consumer group eoingest.altm reaches the log end"

out=$(sql "SELECT eoingest.alter_job('altm', format => 'xml')" 2>&1 || true)
case "$out" in *'unrecognized format "xml"'*) ok 0 "an unknown format is refused" ;; *) ok 1 "an unknown format is refused"; diag "$out" ;; esac

sql "SELECT eoingest.drop_job('altm'); DROP TABLE altm" >/dev/null 2>&1
done_testing
