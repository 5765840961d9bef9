#!/usr/bin/env bash
# two_phase at the end of a backlog: the last epoch ends as soon as the
# worker has read up to the high watermarks it saw, not one (or two)
# batch_timeout_ms later.  With batch_timeout_ms = 10000 and a backlog of
# 25,000 messages produced before the start (the last batch is short), every
# row is committed and every prepared transaction resolved well before 10 s.
# Before the change this took about two timeouts (~20 s): the short last
# batch waited out its poll, then one more empty poll ended the epoch.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 8

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
BOUND_S=6

for par in 1 2; do
  job=tp_tail_$par
  topic=tp_tail_${par}_$$
  eoi-kafka create-topic "$topic" 4 >/dev/null
  eoi-kafka produce-seq "$topic" --count 25000 --format csv >/dev/null
  sql "CREATE TABLE $job (part int, off bigint, value text);
       SELECT eoingest.create_job(name => '$job', brokers => '$KAFKA_BROKERS', topic => '$topic',
              mode => 'two_phase', parallelism => $par, batch_size => 10000, batch_timeout_ms => 10000,
              checkpoint_interval_ms => 60000,
              transform => 'INSERT INTO $job SELECT \"partition\", \"offset\", value FROM eoingest.batch()')" >/dev/null
  t0=$EPOCHREALTIME
  sql "SELECT eoingest.start_job('$job')" >/dev/null
  check "par=$par: all 25000 rows visible" wait_until 60 \
    "SELECT count(*) >= 25000 FROM $job"
  check "par=$par: no prepared transaction left" wait_until 60 \
    "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'"
  elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}')
  diag "par=$par: start_job -> all rows committed, nothing prepared: ${elapsed}s (batch_timeout_ms 10000)"
  check "par=$par: done in ${elapsed}s < ${BOUND_S}s, well before one batch_timeout_ms" \
    awk -v e="$elapsed" -v b="$BOUND_S" 'BEGIN {exit !(e < b)}'
  is "$(sql "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM $job")" "25000 25000" \
    "par=$par: each (partition, offset) exactly once"
  sql "SELECT eoingest.drop_job('$job')" >/dev/null
done
