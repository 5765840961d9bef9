#!/usr/bin/env bash
# eoingest.job_stats: a job's counters and times grow across its worker's
# restarts and a clean restart of the server, start from zero after a
# crash, count failed attempts and their retries, and are zeroed by
# reset_job_stats (its owner only); eoingest.lag's time lag is the age of
# the last message committed while the partition has more to read, 0 once
# it has not, and last_message_at is that message's Kafka timestamp.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"

plan 14
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=jst_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
before=$(sql "SELECT now()")
eoi-kafka produce-seq "$topic" --count 100 --format csv >/dev/null
printf 'x,bad,1\n' | eoi-kafka produce "$topic" >/dev/null
after=$(sql "SELECT now()")
sql "CREATE TABLE jst_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'jst', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'jst_t',
            batch_timeout_ms => 100);
     SELECT eoingest.start_job('jst')" >/dev/null
check "the job reads its records, one a dead letter" wait_until 60 \
  "SELECT (SELECT count(*) = 100 FROM jst_t) AND (SELECT count(*) = 1 FROM eoingest.dead_letters WHERE job = 'jst')"
check "job_stats counts them, with the time spent polling, writing and committing" wait_until 10 \
  "SELECT messages = 101 AND \"rows\" = 100 AND dead_letters = 1 AND batches >= 1 AND errors = 0
          AND kafka_wait_time > 0 AND write_time > 0 AND commit_time > 0 AND stats_reset IS NOT NULL
     FROM eoingest.job_stats WHERE job = 'jst'"
check "caught up: time_lag 0, last_message_at the last record's Kafka timestamp" wait_until 30 \
  "SELECT lag = 0 AND time_lag = '0' AND next_offset = 101
          AND last_message_at BETWEEN '$before'::timestamptz - interval '1 s' AND '$after'::timestamptz + interval '1 s'
     FROM eoingest.lag WHERE job = 'jst'"

# The worker ends; the launcher starts another, whose job_status counts from zero.
pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'jst'")
sql "SELECT pg_terminate_backend($pid)" >/dev/null
wait_until 30 "SELECT pid IS NOT NULL AND pid <> $pid FROM eoingest.job_status WHERE name = 'jst'" >/dev/null
eoi-kafka produce-seq "$topic" --count 50 --start 100 --format csv >/dev/null
check "the next worker's records arrive" wait_until 60 "SELECT count(*) = 150 FROM jst_t"
is "$(sql "SELECT s.messages || ' ' || s.\"rows\" || ' / ' || w.messages
             FROM eoingest.job_stats s, eoingest.job_status w WHERE s.job = 'jst' AND w.name = 'jst'")" \
  "151 150 / 50" "job_stats goes on across the restart; job_status counts the new worker's"

# Attempts that fail are errors; retried ones are retries too.  A job of
# its own, started once the fault is set, meets it from its first batch
# on: a running worker takes a reload only between two batches, and could
# commit the records produced next before it sees the fault.
etopic=jst_err_$$
eoi-kafka create-topic "$etopic" 1 >/dev/null
eoi-kafka produce-seq "$etopic" --count 10 --format csv >/dev/null
set_fault before_commit error
# pg_reload_conf() only signals: the job starts once new sessions have the fault
wait_until 10 "SELECT current_setting('eoingest.fault_point') = 'before_commit'" >/dev/null
sql "CREATE TABLE jst_e (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'jst_err', brokers => '$KAFKA_BROKERS', topic => '$etopic', target => 'jst_e',
            batch_timeout_ms => 100);
     SELECT eoingest.start_job('jst_err')" >/dev/null
wait_until 30 "SELECT errors >= 2 FROM eoingest.job_stats WHERE job = 'jst_err'" >/dev/null || true
clear_fault
if wait_until 60 "SELECT (SELECT count(*) = 10 FROM jst_e) AND
          (SELECT errors >= 2 AND retries = errors AND messages = 10 FROM eoingest.job_stats WHERE job = 'jst_err')"; then
  ok 0 "failed attempts count as errors and retries; then the records arrive"
else
  ok 1 "failed attempts count as errors and retries; then the records arrive"
  diag "$(sql "SELECT (SELECT count(*) FROM jst_e) || ' / ' || s::text || ' / ' || w::text
                 FROM eoingest.job_stats s, eoingest.job_status w WHERE s.job = 'jst_err' AND w.name = 'jst_err'")"
fi
sql "SELECT eoingest.drop_job('jst_err'); DROP TABLE jst_e" >/dev/null

# A clean restart keeps them (the postmaster writes them at shutdown); a
# crash, here a worker's SIGKILL that makes the postmaster reinitialize
# shared memory, starts them from zero.
kept=$(sql "SELECT messages || ' ' || errors || ' ' || stats_reset FROM eoingest.job_stats WHERE job = 'jst'")
reset_at=$(sql "SELECT stats_reset FROM eoingest.job_stats WHERE job = 'jst'")
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
is "$(sql "SELECT messages || ' ' || errors || ' ' || stats_reset FROM eoingest.job_stats WHERE job = 'jst'")" \
  "$kept" "a clean restart of the server keeps them, stats_reset too"
wait_until 30 "SELECT pid IS NOT NULL FROM eoingest.job_status WHERE name = 'jst'" >/dev/null
kill -9 "$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'jst'")"
deadline=$((SECONDS + 60))
until sql "SELECT 1" >/dev/null 2>&1; do [ $SECONDS -lt $deadline ] || break; sleep 0.5; done
check "after a crash they start from zero" wait_until 30 \
  "SELECT messages = 0 AND errors = 0 AND (stats_reset IS NULL OR stats_reset > '$reset_at') FROM eoingest.job_stats WHERE job = 'jst'"
check "and the records are all there once" wait_until 60 "SELECT count(*) = 150 AND count(DISTINCT ts) = 150 FROM jst_t"

# reset_job_stats: the owner's; the counts start again.
reset_before=$(sql "SELECT stats_reset FROM eoingest.job_stats WHERE job = 'jst'")
sql "CREATE ROLE jst_other_$$ LOGIN; GRANT USAGE ON SCHEMA eoingest TO jst_other_$$;
     GRANT EXECUTE ON FUNCTION eoingest.reset_job_stats TO jst_other_$$" >/dev/null
out=$(psql -XAtq -U "jst_other_$$" -c "SELECT eoingest.reset_job_stats('jst')" 2>&1 || true)
mine=$(psql -XAtq -U "jst_other_$$" -c "SELECT eoingest.reset_job_stats()" 2>&1 || true)
case "$out/$mine" in
  *'must be owner of eoingest job "jst"'*/0) ok 0 "another role may not reset the job's statistics, nor reset them with all of its own" ;;
  *) ok 1 "another role may not reset the job's statistics"; diag "$out / $mine" ;;
esac
is "$(sql "SELECT eoingest.reset_job_stats('jst')")" 1 "the owner resets them"
is "$(sql "SELECT messages || ' ' || errors || ' ' || (stats_reset > '$reset_before') FROM eoingest.job_stats WHERE job = 'jst'")" \
  "0 0 true" "from zero, with a later stats_reset"

# A job slower than its topic: the time lag grows while it has more to read.
sql "CREATE TABLE jst_slow (id text, ts bigint, temperature double precision);
     CREATE FUNCTION jst_sleep() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN PERFORM pg_sleep(0.08); RETURN NEW; END';
     CREATE TRIGGER jst_sleep BEFORE INSERT ON jst_slow FOR EACH ROW EXECUTE FUNCTION jst_sleep();
     SELECT eoingest.create_job(name => 'jst_slow', brokers => '$KAFKA_BROKERS', topic => '$topic',
            target => 'jst_slow', batch_size => 10, batch_timeout_ms => 100);
     SELECT eoingest.start_job('jst_slow')" >/dev/null
check "behind its topic, the time lag is the age of the last record committed" wait_until 60 \
  "SELECT lag > 0 AND time_lag > '0' AND time_lag = now() - last_message_at FROM eoingest.lag WHERE job = 'jst_slow'"

id=$(sql "SELECT id FROM eoingest.jobs WHERE name = 'jst_slow'")
sql "SELECT eoingest.drop_job('jst_slow')" >/dev/null
check "a dropped job's statistics go" wait_until 30 \
  "SELECT count(*) = 0 FROM eoingest_internal.job_stats() WHERE job_id = $id"

sql "SELECT eoingest.drop_job('jst'); DROP TABLE jst_t, jst_slow; DROP FUNCTION jst_sleep();
     DROP OWNED BY jst_other_$$; DROP ROLE jst_other_$$" >/dev/null 2>&1
done_testing
