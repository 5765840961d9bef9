#!/usr/bin/env bash
# SIGKILL of the worker, at random moments, while 100,000 messages over four
# partitions are being ingested.  Every kill makes the postmaster reset all
# backends; the launcher brings the job back.  Afterwards each (partition,
# offset) is in the table exactly once and the stored offsets are the log end.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

total=100000
kills=${EOINGEST_CRASH_KILLS:-6}
wave=$((total / (kills + 1)))
plan 5

topic=crash_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE crash_target (part int, off bigint, value text)" >/dev/null
eoi-kafka create-topic "$topic" 4 >/dev/null
sql "SELECT eoingest.create_job(name => 'crash', brokers => '$KAFKA_BROKERS', topic => '$topic',
        batch_size => 1000, batch_timeout_ms => 100,
        transform => 'INSERT INTO crash_target SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('crash')" >/dev/null

produced=0
killed=0
for ((k = 0; k < kills; k++)); do
  eoi-kafka produce-seq "$topic" --count "$wave" --start "$produced" --format csv >/dev/null
  produced=$((produced + wave))
  before=$(sql "SELECT count(*) FROM crash_target" 2>/dev/null || echo 0)
  wait_until 120 "SELECT count(*) > $before FROM crash_target" || true
  sleep "0.$((RANDOM % 400))"
  pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'crash' AND pid IS NOT NULL" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
    killed=$((killed + 1))
    diag "kill $killed: worker $pid after $before rows"
    wait_until 120 "SELECT pid IS NOT NULL AND pid <> $pid FROM eoingest.job_status WHERE name = 'crash'" || true
  fi
done
eoi-kafka produce-seq "$topic" --count $((total - produced)) --start "$produced" --format csv >/dev/null

ok $([ "$killed" -ge 5 ] && echo 0 || echo 1) "the worker was killed at least 5 times ($killed)"
check "all $total messages arrive" wait_until 300 "SELECT count(*) >= $total FROM crash_target"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM crash_target")" "$total $total" \
  "each (partition, offset) exactly once"
log_end=$(eoi-kafka watermarks "$topic" | awk '{n += $3} END {print n}')
is "$(sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'crash'")" "$log_end" \
  "stored offsets equal the log end"
is "$(sql "SELECT count(*) FROM crash_target c
            WHERE NOT EXISTS (SELECT 1 FROM eoingest.offsets o
                               WHERE o.job = 'crash' AND o.partition = c.part AND c.off < o.next_offset)")" 0 \
  "no row beyond its partition's stored offset"

sql "SELECT eoingest.drop_job('crash'); DROP TABLE crash_target" >/dev/null
done_testing
