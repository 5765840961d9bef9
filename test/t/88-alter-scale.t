#!/usr/bin/env bash
# alter_job changes the topics, parallelism and partitions of a job that is
# not running (refused while it runs): the offsets stay, so the job goes on
# where it was with its new workers; a topic added is read from its
# beginning, the offsets of a topic no longer named go; a partition left
# out is not read until it is named again, then from where it was.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 12
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
ta=scale_a_$$
tb=scale_b_$$
eoi-kafka create-topic "$ta" 4 >/dev/null
eoi-kafka create-topic "$tb" 2 >/dev/null
eoi-kafka produce-seq "$ta" --count 400 --format csv >/dev/null
eoi-kafka produce-seq "$tb" --count 100 --start 100000 --format csv >/dev/null
sql "CREATE TABLE scale_t (id text, ts bigint, temperature double precision, pid int DEFAULT pg_backend_pid());
     SELECT eoingest.create_job(name => 'scale', brokers => '$KAFKA_BROKERS', topic => '$ta', target => 'scale_t',
            columns => '{id,ts,temperature}', batch_timeout_ms => 100);
     SELECT eoingest.start_job('scale')" >/dev/null
check "one worker reads the first topic" wait_until 60 "SELECT count(*) = 400 FROM scale_t"
out=$(sql "SELECT eoingest.alter_job('scale', parallelism => 2)" 2>&1 || true)
case "$out" in *'eoingest job "scale" is running: its topics, parallelism or partitions cannot change'*)
  ok 0 "a running job keeps its parallelism" ;; *) ok 1 "a running job keeps its parallelism"; diag "$out" ;; esac

sql "SELECT eoingest.stop_job('scale')" >/dev/null
sql "SELECT eoingest.alter_job('scale', parallelism => 2, topic => '$ta, $tb')" >/dev/null
eoi-kafka produce-seq "$ta" --count 400 --start 400 --format csv >/dev/null
sql "SELECT eoingest.start_job('scale')" >/dev/null
check "two workers read both topics: the new one from its beginning" wait_until 60 "SELECT count(*) = 900 FROM scale_t"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) FROM scale_t") $(sql "SELECT count(DISTINCT pid) FROM scale_t WHERE ts >= 400")" \
  "900 900 2" "every record once, written by two workers"

# Partition 0 of each topic left out, then named again.
sql "SELECT eoingest.stop_job('scale')" >/dev/null
sql "SELECT eoingest.alter_job('scale', partitions => '{1,2,3}')" >/dev/null
eoi-kafka produce-seq "$ta" --count 400 --start 800 --format csv >/dev/null
sql "SELECT eoingest.start_job('scale')" >/dev/null
check "without partition 0, the other partitions' records arrive" wait_until 60 "SELECT count(*) = 1200 FROM scale_t"
sleep 2
is "$(sql "SELECT count(*) FROM scale_t WHERE ts BETWEEN 800 AND 1199")" 300 "partition 0's hundred records wait"
sql "SELECT eoingest.stop_job('scale')" >/dev/null
sql "SELECT eoingest.alter_job('scale', partitions => '{}', topic => '$ta')" >/dev/null
sql "SELECT eoingest.start_job('scale')" >/dev/null
check "named again, partition 0 goes on from where it was" wait_until 60 "SELECT count(*) = 1300 FROM scale_t"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) FROM scale_t") $(sql "SELECT string_agg(DISTINCT topic, ',') FROM eoingest.offsets WHERE job = 'scale'")" \
  "1300 1300 $ta" "every record once; the offsets of the topic no longer read are gone"
is "$(sql "SELECT eoingest.wait_for_catchup('scale', '30 s')")" t "the job reaches the log end"

sql "SELECT eoingest.drop_job('scale')" >/dev/null 2>&1

# two_phase: an epoch per checkpoint, prepared by each worker; the number of
# workers changes between a stop and a start.
tc=scale_c_$$
eoi-kafka create-topic "$tc" 4 >/dev/null
eoi-kafka produce-seq "$tc" --count 400 --start 200000 --format csv >/dev/null
sql "TRUNCATE scale_t;
     SELECT eoingest.create_job(name => 'scale2', brokers => '$KAFKA_BROKERS', topic => '$tc', target => 'scale_t',
            columns => '{id,ts,temperature}', mode => 'two_phase', batch_timeout_ms => 100, checkpoint_interval_ms => 200);
     SELECT eoingest.start_job('scale2')" >/dev/null
wait_until 60 "SELECT count(*) = 400 FROM scale_t" >/dev/null || true
sql "SELECT eoingest.stop_job('scale2')" >/dev/null
sql "SELECT eoingest.alter_job('scale2', parallelism => 3)" >/dev/null
eoi-kafka produce-seq "$tc" --count 400 --start 200400 --format csv >/dev/null
sql "SELECT eoingest.start_job('scale2')" >/dev/null
check "two_phase, from one worker to three: the records arrive" wait_until 60 "SELECT count(*) = 800 FROM scale_t"
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT ts) || ' ' || count(DISTINCT pid) FILTER (WHERE ts >= 200400) FROM scale_t")" \
  "800 800 3" "every record once, by three workers"
check "no prepared transaction of the job is left" wait_until 30 \
  "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%'"

sql "SELECT eoingest.drop_job('scale2'); DROP TABLE scale_t" >/dev/null 2>&1
done_testing
