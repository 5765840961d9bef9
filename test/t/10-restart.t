#!/usr/bin/env bash
# A PostgreSQL restart, fast and then immediate, while a producer is still
# writing and the job is ingesting: the job is running again afterwards and
# every message is in the table exactly once.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

waves=40
wave=1000
total=$((waves * wave))
plan 8

topic=restart_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE restart_target (id text, ts bigint, temperature double precision)" >/dev/null
eoi-kafka create-topic "$topic" 3 >/dev/null
sql "SELECT eoingest.create_job(name => 'restart', brokers => '$KAFKA_BROKERS', topic => '$topic',
                                target => 'restart_target', batch_size => 500, batch_timeout_ms => 100);
     SELECT eoingest.start_job('restart')" >/dev/null

# The producer keeps going through both restarts.
(
  for ((i = 0; i < waves; i++)); do
    eoi-kafka produce-seq "$topic" --count $wave --start $((i * wave)) --format csv >/dev/null
    sleep 0.1
  done
) &
producer=$!

check "rows start arriving" wait_until 60 "SELECT count(*) > 0 FROM restart_target"
check "fast restart of PostgreSQL while ingesting" "$EOINGEST_TEST_DIR/pg.sh" restart
wait_until 60 "SELECT count(*) > $((total / 2)) FROM restart_target" || true
check "immediate shutdown of PostgreSQL while ingesting" "$EOINGEST_TEST_DIR/pg.sh" stop-immediate
check "start again" "$EOINGEST_TEST_DIR/pg.sh" start
wait "$producer"
check "all $total rows, each once" wait_until 120 \
  "SELECT count(*) = $total AND count(DISTINCT ts) = $total FROM restart_target"
is "$(sql "SELECT count(*) FROM restart_target")" "$total" "and no more"

log_end=$(eoi-kafka watermarks "$topic" | awk '{n += $3} END {print n}')
is "$(sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'restart'")" "$log_end" \
  "stored offsets equal the log end"
is "$(sql "SELECT state FROM eoingest.job_status WHERE name = 'restart'")" running \
  "the job is running again"

sql "SELECT eoingest.drop_job('restart'); DROP TABLE restart_target" >/dev/null
done_testing
