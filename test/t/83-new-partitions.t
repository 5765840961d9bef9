#!/usr/bin/env bash
# Partitions added to the topic of a running job are read from their
# beginning, by the worker that owns them (p % parallelism), within the
# 10 s the documentation promises (the test allows 30), even for a job that
# started at 'latest'; records written to them before the job saw them are
# not lost, and each record is stored once.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 7
topic=newparts_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE np_t (part int, off bigint, value text, pid int)" >/dev/null
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --format csv >/dev/null   # before the job: skipped (latest)
sql "SELECT eoingest.create_job(name => 'np', brokers => '$KAFKA_BROKERS', topic => '$topic', start_offset => 'latest',
        parallelism => 2, batch_timeout_ms => 100,
        transform => 'INSERT INTO np_t SELECT \"partition\", \"offset\", value, pg_backend_pid()
                        FROM eoingest.batch()');
     SELECT eoingest.start_job('np')" >/dev/null
check "the job's workers run" wait_until 60 \
  "SELECT count(*) = 2 AND bool_and(pid IS NOT NULL) FROM eoingest.job_status WHERE name = 'np'"
# 'latest' is the log end when the job first decides its positions, which
# a worker does after it starts: records produced before that are skipped.
check "the job's starting positions are stored, at the log end" wait_until 60 \
  "SELECT count(*) = 2 AND bool_and(next_offset = 50) FROM eoingest.offsets WHERE job = 'np'"
eoi-kafka produce-seq "$topic" --count 100 --start 100 --format csv >/dev/null
check "the records produced after the start arrive" wait_until 60 "SELECT count(*) = 100 FROM np_t"

eoi-kafka add-partitions "$topic" 4 >/dev/null
# into the new partitions at once, before the job can have seen them
printf 'a,1,1\nb,2,2\nc,3,3\n' | eoi-kafka produce "$topic" -p 2 >/dev/null
printf 'd,4,4\ne,5,5\n' | eoi-kafka produce "$topic" -p 3 >/dev/null
added=$(date +%s)
check "the new partitions' records arrive from their beginning" wait_until 30 \
  "SELECT count(*) FILTER (WHERE part = 2) = 3 AND count(*) FILTER (WHERE part = 3) = 2 FROM np_t"
diag "the new partitions were read within $(($(date +%s) - added)) s"
is "$(sql "SELECT string_agg(part || ':' || coalesce(s.worker::text, '?'), ' ' ORDER BY part)
             FROM (SELECT DISTINCT part, pid FROM np_t WHERE part >= 2) x
             LEFT JOIN eoingest.job_status s ON s.name = 'np' AND s.pid = x.pid")" \
  "2:0 3:1" "each is read by the worker that owns it (partition % parallelism)"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM np_t")" "105 105" "each record once"
is "$(sql "SELECT string_agg(\"partition\" || '=' || next_offset, ' ' ORDER BY \"partition\") FROM eoingest.offsets WHERE job = 'np'")" \
  "$(eoi-kafka watermarks "$topic" | sort -n | awk '{printf "%s%d=%d", (NR > 1 ? " " : ""), $1, $3}')" \
  "the offsets of all four partitions at their log ends"

sql "SELECT eoingest.drop_job('np'); DROP TABLE np_t" >/dev/null
done_testing
