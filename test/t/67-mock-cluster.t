#!/usr/bin/env bash
# A second broker implementation: librdkafka's own mock cluster
# (test/tools/eoi-mock.c).  It answers the protocol differently from Apache
# Kafka on loopback: one record batch per partition per fetch, an empty
# fetch answered only after the whole fetch.wait.max.ms, and a partition log
# capped at 5 MB.  A job must ingest from it as exactly and about as fast as
# from Apache Kafka.  (A run once saw 157,000 of 500,000 records in 600 s:
# that was the cap, not a stall; see below.)
# In addition to the Apache Kafka broker of every other test, never instead.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 11
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
. "$EOINGEST_TEST_DIR/tools/build.sh"
build_eoi_mock

bootfile=$EOINGEST_RUN/mock-$$.bootstrap
rm -f "$bootfile"
eoi-mock --topic mock_one --partitions 1 --topic mock_wide --partitions 4 \
  --topic mock_four --partitions 4 --topic mock_lost --partitions 1 "$bootfile" \
  >"$EOINGEST_RUN/mock-$$.log" 2>&1 &
mock_pid=$!
trap 'kill "$mock_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$bootfile" ] && break; sleep 0.1; done
mock=$(cat "$bootfile")
# The job's brokers check takes host:port lists; the mock binds 127.0.0.1.
check "the mock cluster is up ($mock)" test -n "$mock"

# The mock keeps at most 5 MB (or 100,000 record batches) per partition and
# drops the oldest batches beyond that (rdkafka_mock.c: max_size, max_cnt):
# 500,000 such records in one partition leave only the last ~157,000, which
# is all a job can find there.  So: 140,000 in one partition (kept whole),
# 500,000 over four.
count=140000
eoi-kafka -b "$mock" produce-seq mock_one --count "$count" --format csv >/dev/null
marks=$(eoi-kafka -b "$mock" watermarks mock_one)
is "$marks" "0 0 $count" "$count records preloaded into the mock's one partition, none dropped"

sql "CREATE TABLE mock_t (id text, ts bigint, temperature double precision)"
sql "SELECT eoingest.create_job(name => 'mock_t', brokers => '$mock', topic => 'mock_one',
       target => 'mock_t', format => 'csv', mode => 'exactly_once', batch_size => 10000)" >/dev/null
t0=$SECONDS
sql "SELECT eoingest.start_job('mock_t')" >/dev/null
check "exactly_once, one partition: all $count records within 30 s" \
  wait_until 30 "SELECT count(*) = $count FROM mock_t"
diag "exactly_once from the mock: $count records in $((SECONDS - t0)) s (batch_size 10000)"
is "$(sql "SELECT count(DISTINCT ts) || '/' || min(ts) || '/' || max(ts) FROM mock_t")" \
  "$count/0/$((count - 1))" "exactly once: every sequence number, none twice"
is "$(sql "SELECT next_offset FROM eoingest.offsets WHERE job = 'mock_t'")" "$count" \
  "the stored offset is the log end"
sql "SELECT eoingest.drop_job('mock_t')" >/dev/null 2>&1

count=500000
eoi-kafka -b "$mock" produce-seq mock_wide --count "$count" --format csv >/dev/null
is "$(eoi-kafka -b "$mock" watermarks mock_wide | awk '{ s += $3 - $2 } END { print s }')" "$count" \
  "$count records preloaded over four partitions, none dropped"
sql "CREATE TABLE mock_w (id text, ts bigint, temperature double precision)"
sql "SELECT eoingest.create_job(name => 'mock_w', brokers => '$mock', topic => 'mock_wide',
       target => 'mock_w', format => 'csv', mode => 'exactly_once', batch_size => 10000,
       parallelism => 2)" >/dev/null
t0=$SECONDS
sql "SELECT eoingest.start_job('mock_w')" >/dev/null
check "exactly_once, 2 workers over 4 partitions: all $count records within 30 s" \
  wait_until 30 "SELECT count(*) = $count AND count(DISTINCT ts) = $count FROM mock_w"
diag "exactly_once, parallelism 2, from the mock: $count records in $((SECONDS - t0)) s"
sql "SELECT eoingest.drop_job('mock_w')" >/dev/null 2>&1

# Records the mock dropped before the job read them (the job stopped while
# 400,000 more arrived): the job must fail with "out of range", never skip.
sql "CREATE TABLE mock_lost (id text, ts bigint, temperature double precision)"
sql "SELECT eoingest.create_job(name => 'mock_lost', brokers => '$mock', topic => 'mock_lost',
       target => 'mock_lost', format => 'csv', batch_size => 10000)" >/dev/null
eoi-kafka -b "$mock" produce-seq mock_lost --count 1000 --format csv >/dev/null
sql "SELECT eoingest.start_job('mock_lost')" >/dev/null
wait_until 30 "SELECT count(*) = 1000 FROM mock_lost" >/dev/null
sql "SELECT eoingest.stop_job('mock_lost')" >/dev/null
wait_until 30 "SELECT state = 'stopped' FROM eoingest.job_status WHERE name = 'mock_lost'" >/dev/null
eoi-kafka -b "$mock" produce-seq mock_lost --count 400000 --start 1000 --format csv >/dev/null
sql "SELECT eoingest.start_job('mock_lost')" >/dev/null
check "records the mock dropped unread fail the job with 'out of range', nothing skipped" \
  wait_until 30 "SELECT state = 'failed' AND last_error LIKE '%out of range%'
                 AND (SELECT count(*) FROM mock_lost) = 1000
                 AND (SELECT next_offset FROM eoingest.offsets WHERE job = 'mock_lost') = 1000
                 FROM eoingest.job_status WHERE name = 'mock_lost'"
sql "SELECT eoingest.drop_job('mock_lost')" >/dev/null 2>&1

# Four partitions, two workers, two_phase: epochs end on a dry poll, which
# against the mock comes only after fetch.wait.max.ms.
count4=100000
eoi-kafka -b "$mock" produce-seq mock_four --count "$count4" --format csv >/dev/null
sql "CREATE TABLE mock_2pc (id text, ts bigint, temperature double precision)"
sql "SELECT eoingest.create_job(name => 'mock_2pc', brokers => '$mock', topic => 'mock_four',
       target => 'mock_2pc', format => 'csv', mode => 'two_phase', parallelism => 2)" >/dev/null
t0=$SECONDS
sql "SELECT eoingest.start_job('mock_2pc')" >/dev/null
check "two_phase, 2 workers over 4 partitions: all $count4 records within 30 s" \
  wait_until 30 "SELECT count(*) = $count4 FROM mock_2pc"
diag "two_phase from the mock: $count4 records in $((SECONDS - t0)) s"
is "$(sql "SELECT count(DISTINCT ts) FROM mock_2pc")" "$count4" "two_phase: exactly once"
check "two_phase: the offsets reach the log end and nothing stays prepared" \
  wait_until 30 "SELECT sum(next_offset) = $count4 AND NOT EXISTS (SELECT FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%')
                 FROM eoingest.offsets WHERE job = 'mock_2pc'"
sql "SELECT eoingest.drop_job('mock_2pc')" >/dev/null 2>&1
done_testing
