#!/usr/bin/env bash
# durability => 'async': the worker commits without waiting for the WAL
# flush, so a crash loses the last commits, rows and offsets together.  The
# worker is SIGKILLed at random moments (the postmaster then resets every
# backend and recovers from the WAL on disk: what the WAL writer had not
# written yet is gone), and the server is stopped in immediate mode once,
# while 60,000 messages over four partitions are ingested straight into a
# table.  Afterwards every message is in the table exactly once, the stored
# offsets are the log end and no row lies beyond its partition's offset.
# The rows the crashes took back (counted before a kill and after the
# recovery) are reported: the window durability => 'async' opens.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

total=60000
kills=${EOINGEST_CRASH_KILLS:-4}
wave=$((total / (kills + 2)))
plan 6

topic=crash_async_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE crash_async (id text, ts bigint, temperature double precision)" >/dev/null
eoi-kafka create-topic "$topic" 4 >/dev/null
sql "SELECT eoingest.create_job(name => 'crash_async', brokers => '$KAFKA_BROKERS', topic => '$topic',
        target => 'crash_async', batch_size => 100, batch_timeout_ms => 10, durability => 'async');
     SELECT eoingest.start_job('crash_async')" >/dev/null
is "$(sql "SELECT durability FROM eoingest.job_definitions WHERE name = 'crash_async'")" async \
  "job_definitions shows durability async"

produced=0
killed=0
taken_back=0
for ((k = 0; k <= kills; k++)); do
  before=$(sql "SELECT count(*) FROM crash_async" 2>/dev/null || echo 0)
  eoi-kafka produce-seq "$topic" --count "$wave" --start "$produced" --format csv >/dev/null
  produced=$((produced + wave))
  wait_until 120 "SELECT count(*) > $before FROM crash_async" >/dev/null || true
  sleep "0.0$((RANDOM % 50))"
  seen=$(sql "SELECT count(*) FROM crash_async" 2>/dev/null || echo 0)
  if [ "$k" = "$kills" ]; then
    "$EOINGEST_TEST_DIR/pg.sh" stop-immediate >/dev/null
    "$EOINGEST_TEST_DIR/pg.sh" start >/dev/null
    diag "immediate stop after $seen rows"
  else
    pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'crash_async' AND pid IS NOT NULL" 2>/dev/null || true)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || continue
    killed=$((killed + 1))
    wait_until 120 "SELECT pid IS NOT NULL AND pid <> $pid FROM eoingest.job_status WHERE name = 'crash_async'" >/dev/null || true
  fi
  after=$(sql "SELECT count(*) FROM crash_async" 2>/dev/null || echo "$seen")
  [ "$after" -lt "$seen" ] && taken_back=$((taken_back + seen - after))
done
eoi-kafka produce-seq "$topic" --count $((total - produced)) --start "$produced" --format csv >/dev/null
diag "rows seen before a crash and gone after its recovery: $taken_back in all"

ok $([ "$killed" -ge $((kills - 1)) ] && echo 0 || echo 1) "the worker was killed $killed times, the server stopped in immediate mode once"
check "all $total messages arrive" wait_until 300 "SELECT count(*) >= $total FROM crash_async"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) FROM crash_async")" "$total $total" \
  "each message exactly once"
log_end=$(eoi-kafka watermarks "$topic" | awk '{n += $3} END {print n}')
check "the stored offsets reach the log end ($log_end)" wait_until 60 \
  "SELECT sum(next_offset) = $log_end FROM eoingest.offsets WHERE job = 'crash_async'"
is "$(sql "SELECT count(*) FROM crash_async WHERE ts >= $total")" 0 "no row that was not produced"

sql "SELECT eoingest.drop_job('crash_async'); DROP TABLE crash_async" >/dev/null
done_testing
