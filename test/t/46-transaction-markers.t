#!/usr/bin/env bash
# Transaction markers: a transactional producer ends every transaction with
# a commit marker, which a read_committed consumer never receives, so each
# partition's log ends one past its last record. Kafka's own Java producer
# (kafka-producer-perf-test, transactional) writes the topic; exactly_once,
# two_phase and upsert jobs must reach the log end in eoingest.offsets,
# eoingest.lag and wait_for_catchup, and the consumer group that
# commit_to_kafka mirrors (kafka-consumer-groups) must show no lag. An
# aborted transaction at the end (abort marker) likewise. reset_offsets and
# drop_job update and delete that group.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 15
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

topic=txm_$$
parts=3
records=3000
group_tool=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand

# partition current-offset log-end-offset lag, one line per partition of $topic.
describe_group() {
  kafka_tool "$group_tool" --bootstrap-server "$KAFKA_BROKERS" --describe --group "eoingest.$1" 2>/dev/null |
    awk -v t="$topic" '$2 == t {print $3, $4, $5, $6}' | sort -n
}
group_exists() {
  kafka_tool "$group_tool" --bootstrap-server "$KAFKA_BROKERS" --list 2>/dev/null | grep -qxF "eoingest.$1"
}
# The sum of the partitions' log ends.
log_end() { eoi-kafka watermarks "$topic" | awk '{n += $3} END {print n + 0}'; }
# wait_group SECS JOB AWK-CONDITION: until every partition's line satisfies it.
wait_group() {
  local deadline=$((SECONDS + $1)) out
  while :; do
    out=$(describe_group "$2")
    if [ "$(wc -l <<<"$out")" -eq "$parts" ] && awk "!($3) {bad = 1} END {exit bad}" <<<"$out"; then
      return 0
    fi
    if [ $SECONDS -ge $deadline ]; then
      diag "consumer group eoingest.$2 after $1 s:" "$out"
      return 1
    fi
    sleep 1
  done
}

eoi-kafka create-topic "$topic" "$parts" >/dev/null
out=$(kafka_tool org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$records" \
  --record-size 24 --throughput -1 --transactional-id "txm-$$" --transaction-duration-ms 300 \
  --producer-props bootstrap.servers="$KAFKA_BROKERS" \
  partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner 2>&1) ||
  { diag "$out"; exit 1; }
# The broker may give the log ends of the producer's last transactions a moment after the producer is done,
# well short of the records: wait for them to pass the records, as the markers make them, and to hold still
# for a second.
end=$(log_end) prev=-1
deadline=$((SECONDS + 30))
while { [ "$end" -le "$records" ] || [ "$end" != "$prev" ]; } && [ $SECONDS -lt $deadline ]; do
  sleep 1
  prev=$end end=$(log_end)
done
diag "Kafka $KAFKA_VERSION's transactional producer wrote $records records; the partitions' log ends add up to $end"
ok $([ "$end" -gt "$records" ] && echo 0 || echo 1) "the log holds transaction markers past the records"

sql "CREATE TABLE txm_eo (v text); CREATE TABLE txm_tp (v text); CREATE TABLE txm_up (v text PRIMARY KEY)" >/dev/null
sql "SELECT eoingest.create_job(name => 'txm_eo', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'txm_eo',
       format => 'text', batch_timeout_ms => 100, commit_to_kafka => true);
     SELECT eoingest.create_job(name => 'txm_tp', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'txm_tp',
       format => 'text', mode => 'two_phase', batch_timeout_ms => 100, checkpoint_interval_ms => 300);
     SELECT eoingest.create_job(name => 'txm_up', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'txm_up',
       format => 'text', mode => 'upsert', batch_timeout_ms => 100, offset_commit_interval_ms => 200);
     SELECT eoingest.start_job(j) FROM unnest('{txm_eo,txm_tp,txm_up}'::text[]) j" >/dev/null

check "every record ingested, once (exactly_once, two_phase, upsert)" wait_until 90 \
  "SELECT (SELECT count(*) FROM txm_eo) = $records AND (SELECT count(*) FROM txm_tp) = $records
      AND (SELECT count(*) FROM txm_up) = $records"
for job in txm_eo txm_tp txm_up; do
  check "$job: offsets reach the log end, past the commit markers" wait_until 30 \
    "SELECT sum(next_offset) = $end FROM eoingest.offsets WHERE job = '$job'"
done
diag "offsets: $(sql "SELECT string_agg(job || '/' || partition || '=' || next_offset, ' ' ORDER BY job, partition)
                      FROM eoingest.offsets WHERE job LIKE 'txm%'")"
diag "log ends: $(eoi-kafka watermarks "$topic" | awk '{printf "%s=%s ", $1, $3}')"
is "$(sql "SELECT eoingest.wait_for_catchup('txm_eo', '20 s') AND eoingest.wait_for_catchup('txm_tp', '20 s')
             AND eoingest.wait_for_catchup('txm_up', '20 s')")" t "wait_for_catchup says caught up"
check "eoingest.lag shows 0 for every partition" wait_until 30 \
  "SELECT count(*) = 3 * $parts AND bool_and(lag = 0) FROM eoingest.lag WHERE job LIKE 'txm%'"
check "kafka-consumer-groups: the mirrored group has no lag" wait_group 30 txm_eo '$2 == $3 && $4 == 0'

# An aborted transaction last: its records are skipped, and the offsets move
# past them and the abort marker.
eoi-kafka produce-tx "$topic" --count 30 --abort >/dev/null
end2=$(log_end)
ok $([ "$end2" -gt "$end" ] && echo 0 || echo 1) "an aborted transaction grew the log"
for job in txm_eo txm_tp txm_up; do
  check "$job: offsets move past the aborted transaction to the log end" wait_until 30 \
    "SELECT sum(next_offset) = $end2 FROM eoingest.offsets WHERE job = '$job'"
done
is "$(sql "SELECT (SELECT count(*) FROM txm_eo) || ' ' || (SELECT count(*) FROM txm_tp) || ' ' || (SELECT count(*) FROM txm_up)")" \
  "$records $records $records" "and none of its records is ingested"

# reset_offsets mirrors the new positions into the group, drop_job deletes it.
sql "SELECT eoingest.stop_job('txm_eo')" >/dev/null
wait_until 30 "SELECT state = 'stopped' AND pid IS NULL FROM eoingest.job_status WHERE name = 'txm_eo'" || true
sql "SELECT eoingest.reset_offsets('txm_eo', 'earliest')" >/dev/null
check "reset_offsets moves the group's committed offsets too" wait_group 10 txm_eo '$1 >= 0 && $2 == 0'
sql "SELECT eoingest.drop_job('txm_eo')" >/dev/null
ok $(group_exists txm_eo && echo 1 || echo 0) "drop_job deletes the job's consumer group"

sql "SELECT eoingest.drop_job(j) FROM unnest('{txm_tp,txm_up}'::text[]) j" >/dev/null
eoi-kafka delete-topic "$topic" >/dev/null 2>&1 || true
done_testing
