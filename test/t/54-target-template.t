#!/usr/bin/env bash
# A target template: target => 'schema.${topic}' writes each topic's
# messages into the table of its name.  A pattern job over three topics,
# one of whose tables does not exist yet: the job waits, retrying, with an
# error naming the topic and the table, and goes on once the table is
# created; two workers SIGKILLed while it writes; each table exact.  And
# the refusals at create_job.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 14
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" ;; esac; }

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
base=tt_$$
sql "DROP SCHEMA IF EXISTS tt_raw CASCADE; CREATE SCHEMA tt_raw" >/dev/null
for t in a b c; do
  eoi-kafka create-topic "${base}_$t" 2 >/dev/null
done
# the tables of a and b; c's comes later
for t in a b; do
  sql "CREATE TABLE tt_raw.\"${base}_$t\" (part int, off bigint, v bigint)" >/dev/null
done
eoi-kafka produce-seq "${base}_a" --count 5000 --format csv >/dev/null
eoi-kafka produce-seq "${base}_b" --count 4000 --format csv >/dev/null
eoi-kafka produce-seq "${base}_c" --count 3000 --format csv >/dev/null

sql "SELECT eoingest.create_job(name => 'tt', brokers => '$KAFKA_BROKERS', topic => '^${base}_[abc]\$',
       target => 'tt_raw.\${topic}', parallelism => 2, batch_size => 500, batch_timeout_ms => 100,
       mapping => '{\"part\": \"\$partition\", \"off\": \"\$offset\", \"v\": \"/2\"}')" >/dev/null
is "$(sql "SELECT target FROM eoingest.jobs WHERE name = 'tt'")" 'tt_raw.${topic}' "the template is stored with its schema"
sql "SELECT eoingest.start_job('tt')" >/dev/null

check "a topic whose table does not exist stops the job, retrying, with the topic and the table named" wait_until 60 \
  "SELECT bool_or(state = 'retrying' AND last_error LIKE '%target table tt_raw.${base}_c of topic \"${base}_c\" does not exist%')
     FROM eoingest.job_status WHERE name = 'tt'"
is "$(sql "SELECT state FROM eoingest.jobs WHERE name = 'tt'")" running "the job is not failed: it waits for the table"
c_committed=$(sql "SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = 'tt' AND topic = '${base}_c'")
is "$c_committed" 0 "no offset of that topic moved"

sql "CREATE TABLE tt_raw.\"${base}_c\" (part int, off bigint, v bigint)" >/dev/null
check "once the table exists, the job goes on by itself" wait_until 90 \
  "SELECT (SELECT count(*) FROM tt_raw.\"${base}_a\") = 5000 AND (SELECT count(*) FROM tt_raw.\"${base}_b\") = 4000
      AND (SELECT count(*) FROM tt_raw.\"${base}_c\") = 3000"

# more records while both workers are SIGKILLed
eoi-kafka produce-seq "${base}_a" --count 20000 --start 5000 --format csv >/dev/null &
pa=$!
eoi-kafka produce-seq "${base}_b" --count 20000 --start 4000 --format csv >/dev/null &
pb=$!
for round in 1 2 3; do
  wait_until 30 "SELECT count(*) = 2 FROM eoingest.job_status WHERE name = 'tt' AND state = 'running' AND pid IS NOT NULL" >/dev/null || true
  sleep 0.5
  for pid in $(sql "SELECT pid FROM eoingest.job_status WHERE name = 'tt' AND pid IS NOT NULL"); do
    kill -9 "$pid" 2>/dev/null || true
  done
  sleep 2
  wait_until 60 "SELECT true" >/dev/null
done
wait $pa $pb
check "the job catches up after the kills" sql "SELECT eoingest.wait_for_catchup('tt', '120 s')"
for t in a b c; do
  n=$([ $t = a ] && echo 25000 || { [ $t = b ] && echo 24000 || echo 3000; })
  is "$(sql "SELECT count(*) || ' ' || count(DISTINCT (part, off)) || ' ' || count(DISTINCT v) FROM tt_raw.\"${base}_$t\"")" \
    "$n $n $n" "${base}_$t: each record exactly once, in its own table"
done

out=$(sql "SELECT eoingest.create_job(name => 'tt_bad', brokers => '$KAFKA_BROKERS', topic => '${base}_a',
              target => 'tt_raw.\${table}')" 2>&1 || true)
like "$out" 'target template "tt_raw.${table}" has an unrecognized placeholder' "an unknown placeholder is refused"
long=$(printf 'x%.0s' $(seq 1 60))
out=$(sql "SELECT eoingest.create_job(name => 'tt_bad', brokers => '$KAFKA_BROKERS', topic => '${base}_a',
              target => 'tt_raw.${long}_\${topic}')" 2>&1 || true)
like "$out" "the target table of topic \"${base}_a\" would be named" "a routed name over 63 bytes is refused, naming the topic"
out=$(sql "SELECT eoingest.create_job(name => 'tt_bad', brokers => '$KAFKA_BROKERS', topic => '${base}_a',
              target => 'tt_raw.\${topic}', mode => 'upsert')" 2>&1 || true)
like "$out" "mode upsert with a target template needs key_columns" "upsert needs key_columns"
out=$(sql "SELECT eoingest.create_job(name => 'tt_bad', brokers => '$KAFKA_BROKERS', topic => '${base}_a',
              target => 'tt_raw.\${source.table}', format => 'json')" 2>&1 || true)
like "$out" 'target template "tt_raw.${source.table}" has an unrecognized placeholder' \
  "\${source.table} names a change event's source table: refused without envelope debezium"
out=$(sql "SELECT eoingest.preview_job('tt')" 2>&1 || true)
like "$out" "its target is a template" "preview_job says it cannot preview a template's job"

sql "SELECT eoingest.stop_job('tt'); SELECT eoingest.drop_job('tt'); DROP SCHEMA tt_raw CASCADE" >/dev/null
done_testing
