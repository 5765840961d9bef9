#!/usr/bin/env bash
# The demo, as a short tutorial.  It installs what it needs, starts Kafka and
# PostgreSQL, then shows each step with the command it runs and what that did:
# a table and a job that ingests the Kafka topic 'sensor' into it, the seed
# article's sensor readings arriving, the job's status; then a larger stream,
# during which the job's worker is killed with SIGKILL, and the count
# afterwards: every record stored exactly once.  Run as root from anywhere,
# with or without a terminal (it reads nothing from stdin).
#   EOINGEST_KEEP=1          leave the servers running (psql then connects with test/env.sh)
#   EOINGEST_DEMO_RECORDS=N  size of the stream the worker is killed in (default 300000)
set -euo pipefail
TEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$TEST_DIR/env.sh"
cd "$EOINGEST_REPO"
exec </dev/null

RECORDS=${EOINGEST_DEMO_RECORDS:-300000}

stop_servers() {
  if [ "${EOINGEST_KEEP:-0}" = 1 ]; then
    echo "servers left running: . test/env.sh; psql   (stop: test/pg.sh stop; test/kafka.sh stop)"
  else
    "$TEST_DIR/pg.sh" stop >/dev/null 2>&1 || true
    "$TEST_DIR/kafka.sh" stop >/dev/null 2>&1 || true
  fi
}

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
# step TEXT: a step's title.  say TEXT...: what happens, one line each.
step() { printf '\n%s%s%s\n' "$bold" "$*" "$plain"; }
say() { printf '   %s\n' "$@"; }
# shell CMD: show a shell command (the caller runs it).
shell() { printf '   $ %s\n' "$*"; }
# show_sql SQL: as typed at psql's prompt.
show_sql() { awk 'NR == 1 { print "   postgres=# " $0; next } { print "   postgres-# " $0 }' <<<"$1"; }
# run SQL: show it and run it, discarding its (empty) result.
run() { show_sql "$1"; psql -XAtq -v ON_ERROR_STOP=1 -c "$1" >/dev/null; }
# query SQL: show it, run it, show the result table.
query() { show_sql "$1"; psql -Xq -v ON_ERROR_STOP=1 -P footer=off -c "$1" | sed 's/^/   /'; }
value() { psql -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
# wait_for SECONDS WHAT QUERY: until QUERY says 't'; errors are retried (the
# server may be resetting after the kill).
wait_for() {
  local deadline=$((SECONDS + $1))
  until [ "$(psql -XAtq -c "$3" 2>/dev/null)" = t ]; do
    if [ $SECONDS -ge "$deadline" ]; then
      echo "demo: $2 did not happen in $1 s" >&2
      tail -n 20 "$EOINGEST_RUN/pg.log" >&2
      exit 1
    fi
    sleep 0.1
  done
}

echo "== installing dependencies, building eoingest"
"$TEST_DIR/deps.sh"
make -s PG_CONFIG="$PG_CONFIG" all install >/dev/null
"$TEST_DIR/tools/build.sh"

echo "== starting Kafka ($KAFKA_BROKERS) and PostgreSQL 15 ($PGHOST, port $PGPORT)"
"$TEST_DIR/kafka.sh" stop >/dev/null 2>&1 || true
[ -f "$PGDATA/PG_VERSION" ] && { "$TEST_DIR/pg.sh" stop-immediate >/dev/null 2>&1 || true; }
rm -rf "$PGDATA" "$EOINGEST_RUN/kafka" "$EOINGEST_RUN/kafka-logs" "$EOINGEST_RUN/kafka-config"
"$TEST_DIR/kafka.sh" fetch
"$TEST_DIR/kafka.sh" start
"$TEST_DIR/pg.sh" init
"$TEST_DIR/pg.sh" start
trap stop_servers EXIT
started=$SECONDS

step "1. A Kafka topic 'sensor' with 2 partitions, and a table for its records"
shell "eoi-kafka create-topic sensor 2"
eoi-kafka create-topic sensor 2 >/dev/null
say "(PostgreSQL loads eoingest at start: shared_preload_libraries = 'eoingest')"
run "CREATE EXTENSION eoingest;"
run "CREATE TABLE sensor_reading (id text, ts bigint, temperature double precision);"

step "2. A job: the topic into the table, one CSV line per message, one row per line"
run "SELECT eoingest.create_job(name => 'sensor', brokers => '$KAFKA_BROKERS', topic => 'sensor',
                           target => 'sensor_reading', format => 'csv', mode => 'exactly_once');"
say "create_job checked the table, the format and the brokers, and stored the job, stopped." \
    "Mode exactly_once commits each batch's rows and the Kafka offsets they came from in one" \
    "PostgreSQL transaction."
query "SELECT name, topic, target, format, mode, state FROM eoingest.job_definitions;"

step "3. Start it"
run "SELECT eoingest.start_job('sensor');"
say "The launcher (a background worker) starts the job's worker; the worker assigns itself the" \
    "topic's partitions at the offsets stored in PostgreSQL, and polls Kafka."
wait_for 30 "the worker's start" "SELECT state = 'running' FROM eoingest.job_status WHERE name = 'sensor'"
query "SELECT name, worker, state, pid FROM eoingest.job_status;"

step "4. Produce the seed article's sensor readings; they arrive as rows"
readings=('sensor_1, 1547718199, 35.8' 'sensor_6, 1547718201, 15.4' 'sensor_7, 1547718202, 6.7'
          'sensor_10, 1547718205, 38.1' 'sensor_1, 1547718206, 36.2' 'sensor_6, 1547718208, 15.6')
shell "eoi-kafka produce sensor <<EOF"
printf '     %s\n' "${readings[@]}"
say "  EOF"
printf '%s\n' "${readings[@]}" | eoi-kafka produce sensor
wait_for 60 "the readings' arrival" "SELECT count(*) = 6 FROM sensor_reading"
query "SELECT * FROM sensor_reading ORDER BY ts;"
say "The offsets committed with them: the next offset to read in each partition."
query "SELECT * FROM eoingest.offsets ORDER BY partition;"

step "5. The job's status"
query "SELECT name, state, pid, messages, rows, batches, last_commit_at, last_error FROM eoingest.job_status;"

step "6. A crash: $RECORDS more records, and the worker killed with SIGKILL while it ingests them"
shell "eoi-kafka produce-seq sensor --count $RECORDS --format csv &"
eoi-kafka produce-seq sensor --count "$RECORDS" --format csv >/dev/null &
producer=$!
wait_for 60 "the stream's arrival" "SELECT count(*) > 6 FROM sensor_reading"
pid=$(value "SELECT pid FROM eoingest.job_status WHERE name = 'sensor'")
at=$(value "SELECT count(*) - 6 FROM sensor_reading")
shell "kill -9 \$(psql -Atc \"SELECT pid FROM eoingest.job_status WHERE name = 'sensor'\")   # pid $pid"
kill -9 "$pid"
wait "$producer"
say "Killed when $at of the $RECORDS records were committed.  PostgreSQL answers a killed" \
    "server process by resetting all of them (its rule for any crash: shared memory may be" \
    "half-written); the launcher comes back and starts the job's worker again, which resumes at" \
    "the offsets PostgreSQL committed.  A new pid:"
wait_for 60 "the worker's restart" \
  "SELECT state = 'running' AND pid <> $pid AND rows > 0 FROM eoingest.job_status WHERE name = 'sensor'"
query "SELECT name, state, pid, messages, rows, last_commit_at FROM eoingest.job_status;"

step "7. The count, once the job has caught up"
say "wait_for_catchup says true once the job has committed everything up to the log end."
query "SELECT eoingest.wait_for_catchup('sensor', '60 s');"
query "SELECT count(*) AS rows, count(DISTINCT (id, ts)) AS distinct_records FROM sensor_reading;"
query "SELECT sum(next_offset) AS records_consumed FROM eoingest.offsets;"
want=$((RECORDS + 6))
got=$(value "SELECT count(*) || ' ' || count(DISTINCT (id, ts)) || ' ' || (SELECT sum(next_offset) FROM eoingest.offsets) FROM sensor_reading")
if [ "$got" != "$want $want $want" ]; then
  echo "demo: expected $want rows, $want distinct and $want offsets, got: $got" >&2
  exit 1
fi
say "$want records produced, $want rows stored, each exactly once: what the worker had written" \
    "but not committed when it died was rolled back with its offsets, and read again."
echo
echo "== demo done in $((SECONDS - started)) s (after the setup)"
