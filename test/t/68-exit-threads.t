#!/usr/bin/env bash
# No process exits with a Kafka client still open. exit() runs the libraries' atexit cleanups, OpenSSL's
# among them, and a librdkafka thread still running then takes a lock that is gone: seen as "segfault at
# 18 ... in libc.so.6" (pthread_rwlock_wrlock) in rdk:broker threads of exiting workers, which the
# postmaster takes for a crashed backend and answers with a restart of every session (CI: 70-security
# then failed with "the database system is in recovery mode"). The crash itself is a race; what causes
# it is not: test/tools/exit-probe.so, preloaded into the server, reports every process that is about to
# exit with threads still running. Workers and backends exit here every way they do: stop_job,
# alter_job, drop_job, pg_terminate_backend (in a transform, in the middle of a poll), a backend
# terminated inside a Kafka request, a fast shutdown.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 14
probe=$EOINGEST_RUN/bin/exit-probe.so
PG_LOG=${EOINGEST_PG_LOG:-$EOINGEST_RUN/pg.log}
[ -f "$probe" ] || { bash "$EOINGEST_TEST_DIR/tools/build.sh" >/dev/null; }
restore() { "$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null 2>&1 || true; }
trap restore EXIT
trap 'exit 1' INT TERM

control=$(LD_PRELOAD=$probe python3 -c "import threading, time
threading.Thread(target=time.sleep, args=(30,), daemon=True).start()" 2>&1 || true)
case "$control" in
  *"exit-probe: process "*" exits with 2 threads still running"*) ok 0 "the probe reports a process that exits with a thread running" ;;
  *) ok 1 "the probe reports a process that exits with a thread running"; diag "got: $control" ;;
esac

LD_PRELOAD=$probe "$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
postmaster=$(head -1 "$PGDATA/postmaster.pid")
check "the server runs with the probe preloaded" grep -q exit-probe.so "/proc/$postmaster/maps"
log_from=$(wc -l <"$PG_LOG")

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=exit_$$
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 2000 --format csv >/dev/null
sql "CREATE TABLE exit_t (part int, off bigint, value text)" >/dev/null
sql "SELECT eoingest.create_job(name => 'exit_a', brokers => '$KAFKA_BROKERS', topic => '$topic', parallelism => 2,
        batch_timeout_ms => 100, transform => 'INSERT INTO exit_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('exit_a')" >/dev/null
check "the job's two workers consume" wait_until 60 "SELECT count(*) = 2000 FROM exit_t"
pids() { sql "SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM eoingest.job_status WHERE name = '$1' AND pid IS NOT NULL"; }
moved_on() { local now; now=$(pids exit_a); [ -n "$now" ] && [ "$now" != "$1" ] && [ "$(wc -w <<<"$now")" = 2 ]; }
moved_on_within() { for _ in $(seq 120); do moved_on "$1" && return 0; sleep 0.5; done; return 1; }

# alter_job: the workers exit and come back with the new definition
before=$(pids exit_a)
sql "SELECT eoingest.alter_job('exit_a', batch_size => 5000)" >/dev/null
check "alter_job: the workers exit and start again" moved_on_within "$before"

# pg_terminate_backend: FATAL in a worker
before=$(pids exit_a)
sql "SELECT pg_terminate_backend(pid) FROM eoingest.job_status WHERE name = 'exit_a'" >/dev/null
moved_on_within "$before" || true
eoi-kafka produce-seq "$topic" --count 2000 --start 2000 --format csv >/dev/null
check "after pg_terminate_backend the workers are back and consume" wait_until 60 "SELECT count(*) = 4000 FROM exit_t"

# a worker that cannot reach its brokers holds a client all the while: stop_job
sql "SELECT eoingest.create_job(name => 'exit_u', brokers => '127.0.0.1:1', topic => 'nowhere', target => 'exit_t');
     SELECT eoingest.start_job('exit_u')" >/dev/null
check "exit_u retries its unreachable brokers" wait_until 60 \
  "SELECT state = 'retrying' FROM eoingest.job_status WHERE name = 'exit_u'"
sql "SELECT eoingest.stop_job('exit_u')" >/dev/null
check "stop_job: the worker exits" wait_until 60 "SELECT pid IS NULL FROM eoingest.job_status WHERE name = 'exit_u'"

# a backend terminated inside reset_offsets, waiting on the unreachable brokers (FATAL, no cleanup of its own)
psql -XAtq -c "SELECT eoingest.reset_offsets('exit_u', 'earliest')" >/dev/null 2>&1 &
waiter=$!
wait_until 20 "SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%reset_offsets(''exit_u''%' AND pid <> pg_backend_pid()" >/dev/null
sleep 1
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%reset_offsets(''exit_u''%' AND pid <> pg_backend_pid()" >/dev/null
wait "$waiter" || true

# a worker terminated in the middle of a batch, its messages in hand (rd_kafka_destroy waits for them)
sql "SELECT eoingest.create_job(name => 'exit_s', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_size => 100,
        transform => 'INSERT INTO exit_t SELECT b.\"partition\", b.\"offset\", b.value FROM eoingest.batch() b, pg_sleep(0.5)');
     SELECT eoingest.start_job('exit_s')" >/dev/null
wait_until 60 "SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = (SELECT pid FROM eoingest.job_status WHERE name = 'exit_s')" >/dev/null
spid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'exit_s'")
sql "SELECT eoingest.stop_job('exit_s'); SELECT pg_terminate_backend($spid)" >/dev/null
gone() { for _ in $(seq 50); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.2; done; return 1; }
check "a worker terminated inside its transform, a batch in hand, exits within 10 s" gone "$spid"

# a worker terminated while it fills a batch: its poll holds the messages it took, waiting for more
sql "CREATE TABLE exit_pt (v text);
     SELECT eoingest.create_job(name => 'exit_p', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'exit_pt',
        format => 'text', batch_size => 100000, batch_timeout_ms => 30000); SELECT eoingest.start_job('exit_p')" >/dev/null
wait_until 60 "SELECT state = 'running' FROM eoingest.job_status WHERE name = 'exit_p'" >/dev/null
sleep 3
ppid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'exit_p'")
sql "SELECT eoingest.stop_job('exit_p'); SELECT pg_terminate_backend($ppid)" >/dev/null
check "a worker terminated while it fills a batch exits within 10 s" gone "$ppid"
is "$(sql "SELECT count(*) FROM exit_pt")" 0 "exit_p had written nothing: its batch was still filling"

# drop_job of a running job, then a fast shutdown with the workers of a running job
sql "SELECT eoingest.drop_job('exit_u')" >/dev/null
sql "SELECT eoingest.create_job(name => 'exit_b', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'exit_t',
        start_offset => 'latest'); SELECT eoingest.start_job('exit_b')" >/dev/null
check "exit_b runs" wait_until 60 "SELECT state = 'running' FROM eoingest.job_status WHERE name = 'exit_b'"
sql "SELECT eoingest.drop_job('exit_b'); SELECT eoingest.drop_job('exit_s'); SELECT eoingest.drop_job('exit_p')" >/dev/null
check "a fast shutdown completes, exit_a's workers running" "$EOINGEST_TEST_DIR/pg.sh" stop

reports=$(tail -n +"$((log_from + 1))" "$PG_LOG" | grep "exit-probe:" || true)
is "$(grep -c . <<<"$reports" || true)" 0 "no process exited with threads still running"
[ -z "$reports" ] || diag "$(head -n 10 <<<"$reports")"
is "$(tail -n +"$((log_from + 1))" "$PG_LOG" | grep -c "terminated by signal" || true)" 0 "no process crashed"

trap - EXIT
"$EOINGEST_TEST_DIR/pg.sh" start >/dev/null
sql "SELECT eoingest.drop_job('exit_a'); DROP TABLE exit_t, exit_pt" >/dev/null
done_testing
