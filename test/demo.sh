#!/usr/bin/env bash
# The demo: start Kafka and PostgreSQL, produce the seed article's sensor
# stream, run an exactly_once job into sensor_reading, print the rows and the
# stored offsets.  Run as root from anywhere; EOINGEST_KEEP=1 leaves the
# servers running to play with (psql then connects with test/env.sh's settings).
set -euo pipefail
TEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$TEST_DIR/env.sh"
cd "$EOINGEST_REPO"

stop_servers() {
  if [ "${EOINGEST_KEEP:-0}" = 1 ]; then
    echo "servers left running: . test/env.sh; psql   (stop: test/pg.sh stop; test/kafka.sh stop)"
  else
    "$TEST_DIR/pg.sh" stop >/dev/null 2>&1 || true
    "$TEST_DIR/kafka.sh" stop >/dev/null 2>&1 || true
  fi
}

echo "== installing dependencies, building eoingest"
"$TEST_DIR/deps.sh"
make -s PG_CONFIG="$PG_CONFIG" all install >/dev/null
"$TEST_DIR/tools/build.sh"

echo "== starting Kafka ($KAFKA_BROKERS) and PostgreSQL ($PGHOST, port $PGPORT)"
"$TEST_DIR/kafka.sh" stop >/dev/null 2>&1 || true
[ -f "$PGDATA/PG_VERSION" ] && { "$TEST_DIR/pg.sh" stop-immediate >/dev/null 2>&1 || true; }
rm -rf "$PGDATA" "$EOINGEST_RUN/kafka" "$EOINGEST_RUN/kafka-logs" "$EOINGEST_RUN/kafka-config"
"$TEST_DIR/kafka.sh" fetch
"$TEST_DIR/kafka.sh" start
"$TEST_DIR/pg.sh" init
"$TEST_DIR/pg.sh" start
trap stop_servers EXIT

echo "== producing the sensor stream to topic 'sensor'"
eoi-kafka create-topic sensor 2 >/dev/null
printf '%s\n' 'sensor_1, 1547718199, 35.8' 'sensor_6, 1547718201, 15.4' \
  'sensor_7, 1547718202, 6.7' 'sensor_10, 1547718205, 38.1' \
  'sensor_1, 1547718206, 36.2' 'sensor_6, 1547718208, 15.6' | eoi-kafka produce sensor

echo "== creating and starting the job"
psql -Xq -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION eoingest;
CREATE TABLE sensor_reading (id text, ts bigint, temperature double precision);
SELECT eoingest.create_job(name => 'sensor', brokers => '$KAFKA_BROKERS', topic => 'sensor',
                           target => 'sensor_reading', format => 'csv', mode => 'exactly_once');
SELECT eoingest.start_job('sensor');
SQL

deadline=$((SECONDS + 60))
until [ "$(psql -XAtq -c 'SELECT count(*) FROM sensor_reading')" = 6 ]; do
  [ $SECONDS -lt $deadline ] || { echo "demo: rows did not arrive in 60 s" >&2; tail -20 "$EOINGEST_RUN/pg.log"; exit 1; }
  sleep 0.2
done

psql -X <<'SQL'
\echo '== ingested rows'
SELECT * FROM sensor_reading ORDER BY ts;
\echo '== stored offsets (next offset to read, per partition)'
SELECT * FROM eoingest.offsets;
\echo '== job status'
SELECT name, state, pid, messages, rows, batches, last_commit_at FROM eoingest.job_status;
SQL
echo "== demo done"
