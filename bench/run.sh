#!/usr/bin/env bash
# The benchmark: eoingest against COPY FROM a file, kcat | psql, and a
# naive consume-insert-commit loop, on the same rows and the same tables.
#
#   bash bench/run.sh [--records N | --big] [--runs K] [--quick] [--full]
#                     [--no-install] [--no-profile] [--keep] [--out DIR] [--only ERE] [--peers]
#
#   --records N    records per topic (default 1,000,000); --big = 10,000,000
#   --runs K       runs per variant, the median is reported (default 3; 1 with --quick)
#   --quick        smoke run: 100,000 records, fewer variants, a few minutes;
#                  results go to $EOINGEST_RUN/bench/report unless --out is given
#   --full         every mode x batch size (1,000 / 10,000 / 100,000) x parallelism
#                  (1 / 2) x table (with / without a primary key); the default
#                  runs that matrix for exactly_once only and batch 10,000 for
#                  the other modes (see bench/README.md)
#   --no-install   use the installed extension instead of `make install` first
#   --no-profile   skip the extra profiled run (perf record of the worker)
#   --keep         leave the broker and PostgreSQL running at the end
#   --out DIR      where latest.md / latest.png / raw.tsv go (default bench/results)
#   --only ERE     run only the variants whose label matches the extended regular
#                  expression (e.g. 'COPY|exactly_once b=10000 par=1$'); the latency
#                  and back-to-back runs only if it matches "latency" / "back to back"
#   --peers        also the peers: Kafka Connect standalone with Debezium's JDBC sink
#                  (test/connect.sh fetch debezium-jdbc; REST port 18083, worker in
#                  $EOINGEST_RUN/bench/connect) on a second topic of the same rows in
#                  Connect's JSON schema envelope, insert and upsert, 1 and 2 tasks, and
#                  eoingest on that topic (a transform over value_json->'payload');
#                  implies --cdc, and adds the JDBC sink on the CDC topic (tasks 1 and 2)
#   --cdc          the CDC variants: RECORDS Debezium change events (70% updates, 20%
#                  inserts, 10% deletes over RECORDS/10 keys) applied by eoingest's
#                  envelope => 'debezium', and the same changes as plain records in
#                  mode upsert; events/s until the table equals the expected final state
#
# Run as root, no stdin needed. It uses its own run directory and ports, never the
# test bed's: EOINGEST_RUN=/tmp/eoingest-bench, Kafka 127.0.0.1:19092 (controller
# 19093), PostgreSQL port 16432 (unix socket in $EOINGEST_RUN/pgsock). The servers
# it starts are stopped at the end (unless --keep).
#
# The server is Debian 12's PostgreSQL 15, or with EOINGEST_PG_MAJOR=18 the
# test bed's 18.6 (bash test/pgbuild.sh build first).
#
# The extension is built from clean against Debian's librdkafka-dev, or against
# the one installed under BENCH_RDKAFKA_PREFIX (e.g. the test bed's 2.14.2 in
# /var/cache/eoingest/librdkafka-2.14.2); the log and meta.tsv name the
# librdkafka the loaded extension links.
set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
CMDLINE="bash bench/run.sh${*:+ $*}"

usage() { sed -n '2,36p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit "${1:-2}"; }

RECORDS='' RUNS='' QUICK=0 FULL=0 INSTALL=1 PROFILE=1 KEEP=0 OUT='' ONLY='' PEERS=0 CDC=0
while [ $# -gt 0 ]; do
  case $1 in
    --records) [ $# -ge 2 ] || usage; RECORDS=$2; shift 2 ;;
    --big) RECORDS=10000000; shift ;;
    --runs) [ $# -ge 2 ] || usage; RUNS=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --full) FULL=1; shift ;;
    --no-install) INSTALL=0; shift ;;
    --no-profile) PROFILE=0; shift ;;
    --keep) KEEP=1; shift ;;
    --peers) PEERS=1 CDC=1; shift ;;
    --cdc) CDC=1; shift ;;
    --out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || usage; ONLY=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "unknown argument: $1" >&2; usage ;;
  esac
done
if [ "$QUICK" = 1 ]; then
  RECORDS=${RECORDS:-100000}
  RUNS=${RUNS:-1}
else
  RECORDS=${RECORDS:-1000000}
  RUNS=${RUNS:-3}
fi
[[ $RECORDS =~ ^[0-9]+$ ]] && [ "$RECORDS" -ge 1000 ] || { echo "--records must be >= 1000" >&2; exit 2; }
[[ $RUNS =~ ^[0-9]+$ ]] && [ "$RUNS" -ge 1 ] || { echo "--runs must be >= 1" >&2; exit 2; }
NAIVE_RECORDS=$((QUICK ? 10000 : 100000))
[ "$NAIVE_RECORDS" -le "$RECORDS" ] || NAIVE_RECORDS=$RECORDS
RECORD_BYTES=100
BATCH_TIMEOUT_MS=1000
LATENCY_SECONDS=$((QUICK ? 6 : 20))

# ---- our own run directory and ports (never the test bed's 29092 / 25432; all below 32768, outside the ephemeral range) ----
export EOINGEST_RUN=${BENCH_RUN:-/tmp/eoingest-bench}
export KAFKA_PORT=${BENCH_KAFKA_PORT:-19092}
export PGPORT=${BENCH_PGPORT:-16432}
export EOINGEST_PRELOAD=eoingest
[ "$RECORDS" -ge 5000000 ] && export KAFKA_HEAP=${KAFKA_HEAP:-1g}
# shellcheck source=../test/env.sh
. "$REPO/test/env.sh"
if [ "$KAFKA_PORT" = 29092 ] || [ "$PGPORT" = 25432 ] || [ "$EOINGEST_RUN" = /tmp/eoingest-run ]; then
  eoi_die "refusing to use the test bed's ports or run directory"
fi
[ "$(id -u)" -eq 0 ] || eoi_die "run as root (PostgreSQL runs as $EOINGEST_OSUSER, the bench reads /proc of its workers)"

WORK=$EOINGEST_RUN/bench
if [ -z "$OUT" ]; then
  if [ "$QUICK" = 1 ]; then OUT=$WORK/report; else OUT=$BENCH_DIR/results; fi
fi
mkdir -p "$EOINGEST_RUN" "$WORK" "$OUT"
chmod 755 "$EOINGEST_RUN" "$WORK"
RAW=$WORK/raw.tsv
LAT=$WORK/latency.tsv
PAIRED=$WORK/paired.tsv
META=$WORK/meta.tsv
PROF=$WORK/profile.txt
PROF_UPSERT=$WORK/profile-upsert.txt
PROF_CDC=$WORK/profile-cdc.txt
PROF_CDC_UPSERT=$WORK/profile-cdc-upsert.txt
rm -f "$RAW" "$LAT" "$PAIRED" "$META" "$PROF" "$PROF_UPSERT"
exec > >(tee "$WORK/bench.log") 2>&1

START=$SECONDS
log() { printf '[%s +%4ds] %s\n' "$(date +%T)" $((SECONDS - START)) "$*"; }
FAILS=0
fail_loudly() {
  FAILS=$((FAILS + 1))
  printf '\n!!!!!!!! FAILED: %s\n\n' "$*" >&2
}

# ---- servers are stopped whatever happens ----
SAMPLER_PID='' PERF_PID='' STATES_PID='' REGISTRY_PID=''
cleanup() {
  local rc=$?
  if [ -n "$SAMPLER_PID" ]; then kill "$SAMPLER_PID" 2>/dev/null || true; fi
  if [ -n "$REGISTRY_PID" ]; then kill "$REGISTRY_PID" 2>/dev/null || true; fi
  if [ "$PEERS" = 1 ]; then bash "$REPO/test/connect.sh" stop >/dev/null 2>&1 || true; fi
  if [ -n "$PERF_PID" ]; then kill -INT "$PERF_PID" 2>/dev/null || true; fi
  if [ "$KEEP" = 0 ]; then
    bash "$REPO/test/pg.sh" stop >/dev/null 2>&1 || bash "$REPO/test/pg.sh" stop-immediate || true
    bash "$REPO/test/kafka.sh" stop || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- tools ----
# rdkafka_of SO: the version and path of the librdkafka that SO loads (by its
# rpath, as the server loads it: pg.sh starts it without LD_LIBRARY_PATH).
rdkafka_of() {
  local lib
  lib=$(env -u LD_LIBRARY_PATH ldd "$1" | awk '$1 ~ /^librdkafka\.so/ {print $3}')
  [ -n "$lib" ] || eoi_die "$1 does not link librdkafka"
  python3 - "$lib" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.rd_kafka_version_str.restype = ctypes.c_char_p
print(f"{lib.rd_kafka_version_str().decode()} ({sys.argv[1]})")
PY
}

setup_tools() {
  log "dependencies and tools"
  bash "$REPO/test/deps.sh"
  if ! dpkg -s libpq-dev 2>/dev/null | grep -q '^Status: install ok installed'; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libpq-dev </dev/null >/dev/null
  fi
  if [ "$INSTALL" = 1 ]; then
    # clean first: objects the test bed left may be linked with another librdkafka
    log "building and installing the extension (make clean all install${BENCH_RDKAFKA_PREFIX:+ RDKAFKA_PREFIX=$BENCH_RDKAFKA_PREFIX})"
    make -C "$REPO" -s PG_CONFIG="$PG_CONFIG" RDKAFKA_PREFIX="${BENCH_RDKAFKA_PREFIX:-}" clean all install >/dev/null
  fi
  bash "$REPO/test/tools/build.sh"
  local t
  for t in bench-kafka naive-consumer; do
    if [ ! -x "$EOINGEST_RUN/bin/$t" ] || [ "$BENCH_DIR/tools/$t.c" -nt "$EOINGEST_RUN/bin/$t" ]; then
      ${CC:-cc} -O2 -g -Wall -Wextra -Werror -I"$($PG_CONFIG --includedir)" \
        -o "$EOINGEST_RUN/bin/$t" "$BENCH_DIR/tools/$t.c" -lrdkafka -lpq
    fi
  done
  # Python for the report's chart (matplotlib from PyPI, in a venv kept in the cache).
  local venv=$EOINGEST_CACHE/bench-venv
  PY=python3
  if [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv" >/dev/null 2>&1 || python3 -m venv "$venv" >/dev/null; then
    if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
      log "installing matplotlib into $venv"
      "$venv/bin/pip" install -q matplotlib </dev/null || log "WARNING: no matplotlib: the report will have no chart"
    fi
    PY=$venv/bin/python
  fi
  if [ "$PROFILE" = 1 ] && ! command -v perf >/dev/null; then
    log "perf not found (apt-get install linux-perf): no profile"
    PROFILE=0
  fi
}

bench_py() { "$PY" "$BENCH_DIR/bench.py" "$@"; }

# ---- SQL ----
q() { psql -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 -c "$1"; }
# wait_sql SECONDS QUERY: until QUERY returns t.
wait_sql() {
  local deadline=$((SECONDS + $1))
  until [ "$(q "$2")" = t ]; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.1
  done
}

PG_CONF="shared_buffers = 1GB
max_wal_size = $((RECORDS >= 5000000 ? 16 : 4))GB
min_wal_size = 1GB
checkpoint_timeout = 30min
synchronous_commit = on
track_commit_timestamp = on
log_checkpoints = on
log_min_messages = warning
max_connections = 50"
# The JDBC sink connects over TCP (the test bed's servers listen on the socket only).
[ "$PEERS" = 1 ] && PG_CONF+="
listen_addresses = '127.0.0.1'"
PG_SHOWN=(shared_buffers max_wal_size min_wal_size checkpoint_timeout checkpoint_completion_target
  synchronous_commit fsync full_page_writes wal_level wal_compression wal_buffers
  track_commit_timestamp max_prepared_transactions autovacuum work_mem maintenance_work_mem)

start_servers() {
  log "Kafka $KAFKA_VERSION on $KAFKA_BROKERS (data in $EOINGEST_RUN/kafka, kept between bench runs)"
  bash "$REPO/test/kafka.sh" fetch
  # A port may still be held for a while by a connection of an earlier run
  # (bind fails): wait and retry.
  local try
  for try in 1 2 3 4 5 6; do
    if bash "$REPO/test/kafka.sh" start 2>"$WORK/kafka-start.err"; then break; fi
    if [ "$try" = 6 ] || ! grep -q 'Address already in use' "$EOINGEST_RUN/kafka-logs/server.log" 2>/dev/null; then
      cat "$WORK/kafka-start.err" >&2
      eoi_die "Kafka did not start"
    fi
    log "port $KAFKA_PORT or $((KAFKA_PORT + 1)) is held by another connection; retrying in 15 s"
    : >"$EOINGEST_RUN/kafka-logs/server.log"
    sleep 15
  done
  log "PostgreSQL $("$PGBIN/postgres" -V | awk '{print $3}') on port $PGPORT: a fresh cluster in $PGDATA"
  bash "$REPO/test/pg.sh" stop
  rm -rf "$PGDATA"
  # The build the server loads now is the one measured (workers fork from the
  # postmaster); note it, and let perf find its symbols even if it is replaced.
  SO_FILE=$($PG_CONFIG --pkglibdir)/eoingest.so
  RDKAFKA_LOADED=$(rdkafka_of "$SO_FILE")
  SO_LOADED="$SO_FILE of $(date -u -r "$SO_FILE" '+%Y-%m-%d %H:%M:%S UTC'), md5 $(md5sum <"$SO_FILE" | cut -c1-12), with librdkafka $RDKAFKA_LOADED"
  cp "$SO_FILE" "$WORK/eoingest.so.loaded"
  EOINGEST_PG_EXTRA_CONF=$PG_CONF bash "$REPO/test/pg.sh" init
  bash "$REPO/test/pg.sh" start
  PM_PID=$(head -n 1 "$PGDATA/postmaster.pid")
  local names
  names=$(printf "'%s'," "${PG_SHOWN[@]}")
  PG_SETTINGS=$(q "SELECT string_agg(n || ' = ' || current_setting(n), ', ' ORDER BY ord)
                     FROM unnest(ARRAY[${names%,}]) WITH ORDINALITY AS u(n, ord)")
  log "eoingest loaded: $SO_LOADED"
  log "PostgreSQL settings (synchronous_commit = on is the default, stated explicitly):"
  tr ',' '\n' <<<"$PG_SETTINGS" | sed 's/^ */    /'
  log "    the bench tables have autovacuum_enabled = off (each run truncates them anyway)"
  q "CREATE EXTENSION eoingest" >/dev/null
  local clk
  clk=$(getconf CLK_TCK)
  psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE SCHEMA bench;
-- CPU seconds and memory of the calling backend, from its own /proc entry.
CREATE FUNCTION bench.self_cpu() RETURNS numeric LANGUAGE sql AS \$\$
  SELECT (a[12]::bigint + a[13]::bigint)::numeric / $clk
    FROM (SELECT regexp_split_to_array(regexp_replace(pg_read_file('/proc/self/stat'), '^.*\) ', ''), ' ')) AS x(a) \$\$;
CREATE FUNCTION bench.self_kb(key text) RETURNS bigint LANGUAGE sql AS \$\$
  SELECT (regexp_match(pg_read_file('/proc/self/status'), key || ':\s+(\d+)'))[1]::bigint \$\$;
CREATE TABLE bench_nopk (id text, ts bigint, temperature double precision) WITH (autovacuum_enabled = off);
CREATE TABLE bench_pk (id text, ts bigint PRIMARY KEY, temperature double precision) WITH (autovacuum_enabled = off);
CREATE TABLE bench_lat (id text, ts bigint, temperature double precision) WITH (autovacuum_enabled = off);
CREATE TABLE bench_lat_connect (id text, ts bigint, temperature double precision) WITH (autovacuum_enabled = off);
CREATE TABLE bench_map (id text, ts bigint, temperature double precision, topic text, part int, off bigint,
                        kafka_ts timestamptz) WITH (autovacuum_enabled = off);
-- Partitioned by hash on ts: consecutive rows go to different partitions, the worst case for buffering per partition.
CREATE TABLE bench_part (id text, ts bigint, temperature double precision) PARTITION BY HASH (ts);
CREATE TABLE bench_part_0 PARTITION OF bench_part FOR VALUES WITH (MODULUS 4, REMAINDER 0) WITH (autovacuum_enabled = off);
CREATE TABLE bench_part_1 PARTITION OF bench_part FOR VALUES WITH (MODULUS 4, REMAINDER 1) WITH (autovacuum_enabled = off);
CREATE TABLE bench_part_2 PARTITION OF bench_part FOR VALUES WITH (MODULUS 4, REMAINDER 2) WITH (autovacuum_enabled = off);
CREATE TABLE bench_part_3 PARTITION OF bench_part FOR VALUES WITH (MODULUS 4, REMAINDER 3) WITH (autovacuum_enabled = off);
SQL
}

# ---- data ----
topic_name() { echo "bench_$1_p$2_n${RECORDS}_s${RECORD_BYTES}"; }

# preload FORMAT PARTITIONS: the topic holds exactly RECORDS records, 0..RECORDS-1.
preload() {
  local fmt=$1 parts=$2 topic wm total low_bad count
  topic=$(topic_name "$fmt" "$parts")
  if wm=$(eoi-kafka -t 3 watermarks "$topic" 2>/dev/null) &&
    [ "$(awk '{n += $3} END {print n + 0}' <<<"$wm")" = "$RECORDS" ] &&
    [ "$(awk '$2 != 0 {b++} END {print b + 0}' <<<"$wm")" = 0 ] &&
    [ "$(wc -l <<<"$wm")" = "$parts" ]; then
    log "topic $topic: already holds the $RECORDS records"
  else
    eoi-kafka delete-topic "$topic" >/dev/null 2>&1 || true
    eoi-kafka create-topic "$topic" "$parts" >/dev/null
    log "preloading $RECORDS $fmt records into $topic ($parts partitions)"
    bench-kafka preload "$topic" --count "$RECORDS" --size "$RECORD_BYTES" --format "$fmt" \
      --schema-id "$([ "$fmt" = protobuf ] && echo 2 || echo 1)"
  fi
  wm=$(eoi-kafka watermarks "$topic")
  total=$(awk '{n += $3} END {print n + 0}' <<<"$wm")
  low_bad=$(awk '$2 != 0 {b++} END {print b + 0}' <<<"$wm")
  count=$(wc -l <<<"$wm")
  log "  log end offsets of $topic: $(awk '{printf "p%s=%s ", $1, $3}' <<<"$wm")(sum $total)"
  [ "$total" = "$RECORDS" ] && [ "$low_bad" = 0 ] && [ "$count" = "$parts" ] ||
    eoi_die "topic $topic: log end offsets sum to $total, expected $RECORDS in $parts partitions from offset 0"
}

# The Avro and Protobuf variants' schema registry (test/tools/schema_registry.py,
# in memory): the Avro schema registered first in a fresh registry gets id 1, the
# Protobuf one (the same row as a message) id 2, which the preloaded records
# carry, so a topic kept from an earlier bench run stays valid.
BENCH_REGISTRY=http://127.0.0.1:$((KAFKA_PORT + 10))
BENCH_AVRO_SCHEMA='{"type": "record", "name": "SensorReading", "fields": [{"name": "id", "type": "string"}, {"name": "ts", "type": "long"}, {"name": "temperature", "type": "double"}]}'
BENCH_PROTO_SCHEMA='syntax = "proto3"; message SensorReading { string id = 1; int64 ts = 2; double temperature = 3; }'
start_registry() {
  python3 "$REPO/test/tools/schema_registry.py" "${BENCH_REGISTRY##*:}" >"$WORK/registry.log" 2>&1 &
  REGISTRY_PID=$!
  local deadline=$((SECONDS + 30)) id
  until curl -s -o /dev/null "$BENCH_REGISTRY/subjects"; do
    [ $SECONDS -lt $deadline ] || eoi_die "the schema registry did not start (see $WORK/registry.log)"
    sleep 0.1
  done
  id=$(python3 -c 'import json, sys; print(json.dumps({"schema": sys.argv[1]}))' "$BENCH_AVRO_SCHEMA" |
    curl -s -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' -d @- \
      "$BENCH_REGISTRY/subjects/bench-value/versions" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
  [ "$id" = 1 ] || eoi_die "the bench schema got id $id in a fresh registry, not 1"
  id=$(python3 -c 'import json, sys; print(json.dumps({"schema": sys.argv[1], "schemaType": "PROTOBUF"}))' "$BENCH_PROTO_SCHEMA" |
    curl -s -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' -d @- \
      "$BENCH_REGISTRY/subjects/bench-proto-value/versions" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
  [ "$id" = 2 ] || eoi_die "the bench's Protobuf schema got id $id in a fresh registry, not 2"
  register_avro bench-cdc-value "$REPO/bench/tools/cdc-value.avsc" 3
  register_avro bench-cdc-key "$REPO/bench/tools/cdc-key.avsc" 4
}

# register_avro SUBJECT FILE ID: the Avro schema in FILE under SUBJECT, which must get id ID
# (bench-kafka writes the CDC stream's Avro events with ids 3 and 4).
register_avro() {
  local id
  id=$(python3 -c 'import json, sys; print(json.dumps({"schema": open(sys.argv[1]).read()}))' "$2" |
    curl -s -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' -d @- \
      "$BENCH_REGISTRY/subjects/$1/versions" | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
  [ "$id" = "$3" ] || eoi_die "the schema of $1 got id $id in a fresh registry, not $3"
}

prepare_data() {
  preload csv 1
  preload csv 4
  preload json 4
  start_registry
  preload avro 4
  preload protobuf 4
  [ "$PEERS" = 1 ] && preload connect 4
  if [ "$CDC" = 1 ]; then prepare_cdc; fi
  ROWS_FILE=$WORK/rows_n${RECORDS}_s${RECORD_BYTES}.csv
  if [ ! -s "$ROWS_FILE" ]; then
    bench-kafka rows --count "$RECORDS" --size "$RECORD_BYTES" >"$ROWS_FILE.tmp"
    mv "$ROWS_FILE.tmp" "$ROWS_FILE"
  fi
  chmod 644 "$ROWS_FILE"
  local lines
  lines=$(wc -l <"$ROWS_FILE")
  [ "$lines" = "$RECORDS" ] || eoi_die "$ROWS_FILE has $lines lines"
  # The same rows in COPY's binary format, written once from a table loaded
  # from the CSV file (psql's \copy: the file belongs to the bench, not the server).
  ROWS_BINARY_FILE=$WORK/rows_n${RECORDS}_s${RECORD_BYTES}.bin
  if [ ! -s "$ROWS_BINARY_FILE" ] || [ "$ROWS_FILE" -nt "$ROWS_BINARY_FILE" ]; then
    q "TRUNCATE bench_nopk; COPY bench_nopk FROM '$ROWS_FILE' (FORMAT csv)" >/dev/null
    psql -X -q -v ON_ERROR_STOP=1 -c "\\copy bench_nopk TO '$ROWS_BINARY_FILE.tmp' (FORMAT binary)"
    mv "$ROWS_BINARY_FILE.tmp" "$ROWS_BINARY_FILE"
    q "TRUNCATE bench_nopk" >/dev/null
  fi
  chmod 644 "$ROWS_BINARY_FILE"
  SAMPLE_CSV=$(sed -n 2p "$ROWS_FILE")
  JSON_BYTES=$(kcat -C -b "$KAFKA_BROKERS" -t "$(topic_name json 4)" -p 0 -o 1 -c 1 -e -q -f '%S')
  log "COPY file: $ROWS_FILE ($(du -h "$ROWS_FILE" | cut -f1)); record 1: $SAMPLE_CSV"
}

# ---- one run of each method; each sets the R_* variables ----
reset_result() {
  R_STATUS=ok R_NOTE='' R_ROWS='' R_SECONDS='' R_FIRST='' R_SCPU='' R_CCPU=0 R_PCPU='' R_WAL='' R_RSS='' R_HWM=''
  R_BCPU='' R_OCPU='' SNAP0=''
}

# CPU seconds so far of the PostgreSQL server, of the whole machine (busy time from
# /proc/stat) and of the Kafka broker; snap_end sets R_SCPU and R_BCPU, and R_OCPU
# (everything else: another test run sharing the machine shows up there).
snap_begin() { SNAP0=$(bench_py snap "$PM_PID" "$(cat "$EOINGEST_RUN/kafka.pid")"); }
snap_end() {
  local s1 s0_server s0_machine s0_broker s1_server s1_machine s1_broker
  s1=$(bench_py snap "$PM_PID" "$(cat "$EOINGEST_RUN/kafka.pid")")
  read -r s0_server s0_machine s0_broker <<<"$SNAP0"
  read -r s1_server s1_machine s1_broker <<<"$s1"
  R_SCPU=$(awk -v a="$s0_server" -v b="$s1_server" 'BEGIN {printf "%.2f", b - a}')
  R_BCPU=$(awk -v a="$s0_broker" -v b="$s1_broker" 'BEGIN {printf "%.2f", b - a}')
  R_MCPU=$(awk -v a="$s0_machine" -v b="$s1_machine" 'BEGIN {printf "%.2f", b - a}')
}
# After the client's CPU is known (R_CCPU).
other_cpu() {
  [ -n "${R_MCPU:-}" ] && [ -n "$R_SCPU" ] || return 0
  R_OCPU=$(awk -v m="$R_MCPU" -v s="$R_SCPU" -v b="$R_BCPU" -v c="$R_CCPU" \
    'BEGIN {o = m - s - b - c; printf "%.2f", o < 0 ? 0 : o}')
}

# verify TABLE EXPECTED T0: rows, distinct ts, the last commit time -> R_ROWS, R_SECONDS;
# the first commit's -> R_FIRST (seconds after T0: a job's start and its first batch).
verify_rows() {
  local table=$1 expected=$2 t0=$3 cnt dst tfirst tend
  read -r cnt dst tfirst tend <<<"$(q "SELECT count(*), count(DISTINCT ts),
        extract(epoch FROM min(pg_xact_commit_timestamp(xmin))),
        extract(epoch FROM max(pg_xact_commit_timestamp(xmin))) FROM $table")"
  R_ROWS=$cnt
  if [ "$cnt" != "$expected" ] || [ "$dst" != "$expected" ]; then
    R_STATUS=FAILED
    R_NOTE="$table has $cnt rows and $dst distinct ts; expected $expected of each"
    return 1
  fi
  R_SECONDS=$(awk -v a="$t0" -v b="$tend" 'BEGIN {printf "%.3f", b - a}')
  R_FIRST=$(awk -v a="$t0" -v b="$tfirst" 'BEGIN {printf "%.3f", b - a}')
}

wal_since() { q "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$1')"; }

# copy_once TABLE [FORMAT]: COPY FROM the CSV file, or (FORMAT binary) from the
# same rows in COPY's binary format.
copy_once() {
  local table=$1 format=${2:-csv} file=$ROWS_FILE out lsn0 t0 cpu_a lsn1 cpu_b hwm rss
  [ "$format" = binary ] && file=$ROWS_BINARY_FILE
  q "TRUNCATE $table; CHECKPOINT"
  snap_begin
  out=$(bench_py timed "$WORK/client.tm" -- psql -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 <<SQL
SELECT pg_current_wal_lsn(), extract(epoch FROM clock_timestamp()), bench.self_cpu();
COPY $table FROM '$file' (FORMAT $format);
SELECT pg_current_wal_lsn(), bench.self_cpu(), bench.self_kb('VmHWM'), bench.self_kb('RssAnon');
SQL
  ) || { R_STATUS=FAILED R_NOTE="COPY failed: $out"; return; }
  snap_end
  { read -r lsn0 t0 cpu_a; read -r lsn1 cpu_b hwm rss; } <<<"$out"
  verify_rows "$table" "$RECORDS" "$t0" || return
  R_WAL=$(q "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")
  R_CCPU=$(awk '{print $1 + $2}' "$WORK/client.tm")
  R_PCPU=$(awk -v a="$cpu_a" -v b="$cpu_b" 'BEGIN {print b - a}')
  R_HWM=$hwm R_RSS=$rss
}

# kcat_once TABLE CHUNK: CHUNK 0 = everything in one \copy (one transaction),
# else split into CHUNK-line \copy runs, one psql and one transaction each.
kcat_once() {
  local table=$1 chunk=$2 topic lsn0 t0 rc=0
  topic=$(topic_name csv 4)
  q "TRUNCATE $table; CHECKPOINT"
  lsn0=$(q "SELECT pg_current_wal_lsn()")
  snap_begin
  t0=$EPOCHREALTIME
  if [ "$chunk" = 0 ]; then
    bench_py timed "$WORK/client.tm" -- bash -o pipefail -c \
      'kcat -C -b "$KAFKA_BROKERS" -t "$1" -o beginning -e -q -f "%s\n" |
         psql -X -q -v ON_ERROR_STOP=1 -c "\\copy $2 FROM pstdin (FORMAT csv)"' _ "$topic" "$table" || rc=$?
  else
    BENCH_TABLE=$table SHELL=/bin/bash bench_py timed "$WORK/client.tm" -- bash -o pipefail -c \
      'kcat -C -b "$KAFKA_BROKERS" -t "$1" -o beginning -e -q -f "%s\n" |
         split -l "$2" --filter="psql -X -q -v ON_ERROR_STOP=1 -c \"\\\\copy \$BENCH_TABLE FROM pstdin (FORMAT csv)\""' \
      _ "$topic" "$chunk" || rc=$?
  fi
  snap_end
  [ "$rc" = 0 ] || { R_STATUS=FAILED R_NOTE="kcat | psql pipeline exited with $rc"; return; }
  verify_rows "$table" "$RECORDS" "$t0" || return
  R_WAL=$(wal_since "$lsn0")
  R_CCPU=$(awk '{print $1 + $2}' "$WORK/client.tm")
}

naive_once() {
  local table=$1 topic lsn0 t0 out rc=0
  topic=$(topic_name csv 4)
  q "TRUNCATE $table; CHECKPOINT"
  lsn0=$(q "SELECT pg_current_wal_lsn()")
  snap_begin
  out=$(bench_py timed "$WORK/client.tm" -- naive-consumer -b "$KAFKA_BROKERS" -t "$topic" -n "$NAIVE_RECORDS" \
    -d "host=$PGHOST port=$PGPORT user=postgres dbname=postgres" -T "$table") || rc=$?
  snap_end
  [ "$rc" = 0 ] || { R_STATUS=FAILED R_NOTE="naive consumer exited with $rc"; return; }
  # Timed from its first message: the consumer group's join is not counted.
  read -r _ t0 <<<"$out"
  verify_rows "$table" "$NAIVE_RECORDS" "$t0" || return
  R_WAL=$(wal_since "$lsn0")
  R_CCPU=$(awk '{print $1 + $2}' "$WORK/client.tm")
}

JOB=bench
job_stop() {
  q "SELECT eoingest.stop_job(name) FROM eoingest.jobs WHERE name = '$JOB'" >/dev/null
  wait_sql 60 "SELECT count(*) = 0 FROM eoingest.job_status WHERE name = '$JOB' AND pid IS NOT NULL" ||
    eoi_die "the workers of job $JOB did not stop within 60 s"
}
job_drop() {
  job_stop
  q "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name = '$JOB'" >/dev/null
}

# job_pids PARALLELISM: the worker pids once all are up (waits up to 60 s).
job_pids() {
  local deadline=$((SECONDS + 60)) pids
  while :; do
    pids=$(q "SELECT string_agg(pid::text, ' ' ORDER BY worker) FROM eoingest.job_status
               WHERE name = '$JOB' AND pid IS NOT NULL HAVING count(*) = $1")
    [ -n "$pids" ] && { echo "$pids"; return 0; }
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.05
  done
}

# wait_rows EXPECTED TIMEOUT: until the workers report EXPECTED rows written,
# in one session polling shared memory every 50 ms; fails if the job fails.
wait_rows() {
  psql -X -q -v ON_ERROR_STOP=1 -c "SET statement_timeout = '${2}s'" -c "
    DO \$\$
    DECLARE r bigint; f text;
    BEGIN
      LOOP
        SELECT coalesce(sum(rows), 0), string_agg(last_error, '; ') FILTER (WHERE state = 'failed')
          INTO r, f FROM eoingest.job_status WHERE name = '$JOB';
        IF f IS NOT NULL THEN RAISE EXCEPTION 'job failed: %', f; END IF;
        EXIT WHEN r >= $1;
        PERFORM pg_sleep(0.05);
      END LOOP;
    END \$\$" 2>&1
}

# rss_sampler OUT PID...: the largest RssAnon (kB) of any of the PIDs, every 0.1 s.
rss_sampler() {
  local out=$1 peak=0 p k v _
  shift
  while :; do
    for p in "$@"; do
      [ -r "/proc/$p/status" ] || continue
      while read -r k v _; do
        if [ "$k" = RssAnon: ] && [ "$v" -gt "$peak" ]; then
          peak=$v
          echo "$peak" >"$out"
        fi
      done <"/proc/$p/status" 2>/dev/null || true
    done
    sleep 0.1
  done
}

# watermarks_of TOPIC[, TOPIC...]: "partition low high" of every partition of the topics.
watermarks_of() {
  local t
  for t in ${1//,/ }; do eoi-kafka watermarks "$t"; done
}

# eoi_once TOPIC TABLE FORMAT MODE BATCH PARALLELISM [CONFLICTS%] [PERF_DATA]
eoi_once() {
  local topic=$1 table=$2 fmt=$3 mode=$4 batch=$5 par=$6 conflicts=${7:-0} perf_data=${8:-}
  local real_mode=$mode extra="" err lsn0 t0 pids pid_list out timeout parts hw sum np oend
  case $mode in
    upsert_*) real_mode=upsert extra=", key_columns => ARRAY['ts']" ;;
  esac
  case $fmt in avro|protobuf) extra+=", schema_registry => '$BENCH_REGISTRY'" ;; esac
  [ -n "$VARIANT_DURABILITY" ] && extra+=", durability => '$VARIANT_DURABILITY'"
  local target="'$table'"
  [ -n "${VARIANT_TARGET:-}" ] && target="'$VARIANT_TARGET'"
  if [ -n "${VARIANT_TRANSFORM:-}" ]; then
    target=NULL extra+=", transform => \$eoi\$$VARIANT_TRANSFORM\$eoi\$"
  fi
  [ -n "${VARIANT_MAPPING:-}" ] && extra+=", mapping => '$VARIANT_MAPPING'"
  [ -n "${VARIANT_SCHEMA_CHANGES:-}" ] && extra+=", schema_changes => '$VARIANT_SCHEMA_CHANGES'"

  job_drop
  q "TRUNCATE $table" >/dev/null
  # 100% conflicts: the table already holds every row; 50%: every other one (even ts),
  # so that the batches mix new keys with existing ones.
  if [ "$conflicts" = 100 ]; then
    q "COPY $table FROM '$ROWS_FILE' (FORMAT csv)" >/dev/null
  elif [ "$conflicts" = 50 ]; then
    q "COPY $table FROM '$ROWS_FILE' (FORMAT csv) WHERE ts % 2 = 0" >/dev/null
  fi
  if ! err=$(q "SELECT eoingest.create_job(name => '$JOB', brokers => '$KAFKA_BROKERS', topic => '$topic',
        target => $target, format => '$fmt', mode => '$real_mode', batch_size => $batch,
        batch_timeout_ms => $BATCH_TIMEOUT_MS, parallelism => $par,
        options => '${VARIANT_OPTIONS:-"{}"}'::jsonb$extra)" 2>&1); then
    err=$(echo "$err" | sed -e 's/^psql:[^E]*ERROR:  //' -e 's/^ERROR:  //' \
      -e 's/create_job(name => .*key_columns => text\[\])/create_job(…, key_columns => text[])/' | head -n 1)
    case $real_mode in
      two_phase | upsert) R_STATUS=na R_NOTE="create_job: $err" ;;
      *) R_STATUS=FAILED R_NOTE="create_job: $err" ;;
    esac
    return
  fi
  q "CHECKPOINT"
  snap_begin
  read -r lsn0 t0 _ <<<"$(q "SELECT pg_current_wal_lsn(), extract(epoch FROM clock_timestamp()),
                               eoingest.start_job('$JOB')")"
  if ! pids=$(job_pids "$par"); then
    R_STATUS=FAILED R_NOTE="the job's $par worker(s) did not start: $(q "SELECT string_agg(DISTINCT last_error, '; ')
       FROM eoingest.job_status WHERE name = '$JOB'")"
    return
  fi
  read -ra pid_list <<<"$pids"
  rm -f "$WORK/rss"
  rss_sampler "$WORK/rss" "${pid_list[@]}" &
  SAMPLER_PID=$!
  if [ -n "$perf_data" ]; then
    perf record -q -F 250 --call-graph dwarf,16384 --buildid-mmap -p "${pids// /,}" -o "$perf_data" \
      >/dev/null 2>&1 &
    PERF_PID=$!
    state_sampler "${pids// /,}" "$RECORDS" >"$WORK/states.txt" 2>&1 &
    STATES_PID=$!
  fi
  timeout=$((120 + RECORDS / 2000))
  out=$(wait_rows "$RECORDS" "$timeout") || {
    R_STATUS=FAILED
    R_NOTE="not caught up: $(echo "$out" | tr '\n' ' ' | cut -c1-300)"
  }
  # two_phase: the rows become visible at COMMIT PREPARED, after the worker counted them.
  if [ "$R_STATUS" = ok ] && [ "$real_mode" = two_phase ] &&
    ! wait_sql 60 "SELECT count(*) >= $RECORDS FROM $table"; then
    R_STATUS=FAILED R_NOTE="the worker reported $RECORDS rows but they did not all become visible within 60 s"
  fi
  R_PCPU=$(bench_py cpu "${pid_list[@]}")
  R_HWM=$(bench_py hwm "${pid_list[@]}")
  snap_end
  R_WAL=$(wal_since "$lsn0")
  if [ -n "$PERF_PID" ]; then
    kill -INT "$PERF_PID" 2>/dev/null || true
    wait "$PERF_PID" 2>/dev/null || true
    PERF_PID=
  fi
  if [ -n "$STATES_PID" ]; then
    wait "$STATES_PID" 2>/dev/null || true
    STATES_PID=
  fi
  kill "$SAMPLER_PID" 2>/dev/null || true
  wait "$SAMPLER_PID" 2>/dev/null || true
  SAMPLER_PID=
  R_RSS=$(cat "$WORK/rss" 2>/dev/null || true)
  # Every stored offset: the sum equals the topic's log end, one row per partition
  # (at_least_once may store its offsets a little after the rows: wait for them).
  hw=$(watermarks_of "$topic")
  sum=$(awk '{n += $3} END {print n + 0}' <<<"$hw")
  parts=$(wc -l <<<"$hw")
  [ "$R_STATUS" = ok ] &&
    wait_sql 30 "SELECT coalesce(sum(next_offset), -1) = $sum FROM eoingest.offsets WHERE job = '$JOB'" || true
  job_stop
  [ "$R_STATUS" = ok ] || return
  verify_rows "$table" "$RECORDS" "$t0" || return
  read -r np oend <<<"$(q "SELECT count(*) || ' ' || coalesce(sum(next_offset), -1)
                           FROM eoingest.offsets WHERE job = '$JOB'")"
  if [ "$np" != "$parts" ] || [ "$oend" != "$sum" ]; then
    R_STATUS=FAILED
    R_NOTE="stored offsets: $np partitions summing to $oend; the topic has $parts ending at $sum"
    return
  fi
  if [ "$conflicts" != 0 ]; then
    local stale
    stale=$(q "SELECT count(*) FROM $table WHERE pg_xact_commit_timestamp(xmin) < to_timestamp($t0)")
    [ "$stale" = 0 ] || { R_STATUS=FAILED R_NOTE="$stale rows were not rewritten by the upsert"; return; }
  fi
  # R_SECONDS (from verify_rows): start_job -> commit of the last row, as for the other methods.
}

# state_sampler PIDS EXPECTED: what the workers' main threads are doing (PIDS
# comma-separated; the shares are over all of them), from pg_stat_activity
# every 10 ms, until the job has written EXPECTED rows.
state_sampler() {
  psql -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 <<SQL
CREATE TEMP TABLE samples (state text, wait text);
DO \$\$
BEGIN
  LOOP
    PERFORM pg_stat_clear_snapshot();
    INSERT INTO samples
      SELECT coalesce(state, '?'), coalesce(wait_event_type || ':' || wait_event, '-')
        FROM pg_stat_activity WHERE pid IN ($1);
    EXIT WHEN (SELECT coalesce(sum(rows), 0) FROM eoingest.job_status WHERE name = '$JOB') >= $2;
    PERFORM pg_sleep(0.01);
  END LOOP;
END \$\$;
SELECT lpad(round(100.0 * count(*) / sum(count(*)) OVER (), 1) || '%', 7), state, wait
  FROM samples GROUP BY state, wait ORDER BY count(*) DESC;
SQL
}

# ---- variants ----
VARIANT_OPTIONS=''   # eoingest: the job's options (librdkafka properties), '' for none
VARIANT_DURABILITY=''  # eoingest: the job's durability ('async'), '' for the default
VARIANT_INSERT_PATH=''  # eoingest: the insert_path the run takes ('copy'; set by bench_insert_path), for its label and id
RAW_COLUMNS="variant label group method format parts pk mode batch par options run status rows seconds server_cpu client_cpu proc_cpu broker_cpu other_cpu wal rss_anon_kb hwm_kb note"
printf '%s\n' "${RAW_COLUMNS// /$'\t'}" >"$RAW"

# variant GROUP LABEL METHOD FORMAT PARTS PK MODE BATCH PAR -- FUNCTION ARGS...
variant() {
  local group=$1 label=$2 method=$3 fmt=$4 parts=$5 pk=$6 mode=$7 batch=$8 par=$9
  shift 10
  local id="$method:$mode:$fmt:p$parts:$pk:b$batch:w$par${VARIANT_OPTIONS:+:$VARIANT_OPTIONS}${VARIANT_INSERT_PATH:+:$VARIANT_INSERT_PATH}${VARIANT_DURABILITY:+:$VARIANT_DURABILITY}" run rate
  if [ -n "$ONLY" ] && ! [[ "$label$(pk_tag "$pk")" =~ $ONLY ]]; then return; fi
  log "$label$(pk_tag "$pk")"
  for ((run = 1; run <= RUNS; run++)); do
    reset_result
    "$@"
    other_cpu
    R_NOTE=$(tr '\t\n' '  ' <<<"$R_NOTE")
    printf '%s\n' "$id" "$label" "$group" "$method" "$fmt" "$parts" "$pk" "$mode" "$batch" "$par" "$VARIANT_OPTIONS" \
      "$run" "$R_STATUS" "$R_ROWS" "$R_SECONDS" "$R_SCPU" "$R_CCPU" "$R_PCPU" "$R_BCPU" "$R_OCPU" "$R_WAL" \
      "$R_RSS" "$R_HWM" "$R_NOTE" |
      paste -s -d '\t' >>"$RAW"
    case $R_STATUS in
      ok)
        rate=$(awk -v r="$R_ROWS" -v s="$R_SECONDS" 'BEGIN {printf "%\047d", r / s}')
        log "    run $run: $rate rows/s ($R_ROWS rows in ${R_SECONDS}s; CPU server ${R_SCPU}s client ${R_CCPU}s" \
          "worker/backend ${R_PCPU:-—}s broker ${R_BCPU}s other ${R_OCPU:-?}s; WAL $R_WAL B${R_RSS:+; RssAnon peak ${R_RSS} kB}${R_HWM:+ VmHWM ${R_HWM} kB})"
        ;;
      na)
        log "    not available: $R_NOTE"
        return
        ;;
      *)
        fail_loudly "$label$(pk_tag "$pk") run $run: $R_NOTE"
        ;;
    esac
  done
}

# PK: yes (bench_pk, a primary key), no (bench_nopk), part (bench_part, 4 hash partitions).
table_for() {
  case $1 in yes) echo bench_pk ;; part) echo bench_part ;; *) echo bench_nopk ;; esac
}
pk_tag() {
  case $1 in yes) echo " [PK]" ;; part) echo " [partitioned]" ;; esac
}

run_baselines() {
  local pk chunk chunks=(10000)
  [ "$FULL" = 1 ] && chunks=(1000 10000 100000)
  for pk in no yes part; do
    variant "(a) COPY FROM file" "COPY FROM file" copy csv - "$pk" - - - -- copy_once "$(table_for "$pk")"
  done
  # The second ceiling: the same rows in COPY's binary format (no text parsing).
  for pk in no yes; do
    variant "(a) COPY FROM file" "COPY FROM file, BINARY format" copy_binary binary - "$pk" - - - -- \
      copy_once "$(table_for "$pk")" binary
  done
  for pk in no yes; do
    [ "$QUICK" = 1 ] && [ "$pk" = yes ] && continue
    variant "(b) kcat | psql \\copy" "kcat | psql, one transaction" kcat_tx csv 4 "$pk" - - - -- \
      kcat_once "$(table_for "$pk")" 0
    for chunk in "${chunks[@]}"; do
      variant "(b) kcat | psql \\copy" "kcat | split -l $chunk | psql, a transaction per chunk" kcat_chunked csv 4 \
        "$pk" - "$chunk" - -- kcat_once "$(table_for "$pk")" "$chunk"
    done
  done
  for pk in no yes; do
    [ "$QUICK" = 1 ] && [ "$pk" = yes ] && continue
    variant "(c) naive consumer ($NAIVE_RECORDS records)" "naive consumer, insert+commit per message" naive csv 4 \
      "$pk" - - - -- naive_once "$(table_for "$pk")"
  done
}

eoi_variant() { # MODE FORMAT PARTS PK BATCH PAR [CONFLICTS [OPTIONS LABEL]]
  local mode=$1 fmt=$2 parts=$3 pk=$4 batch=$5 par=$6 conflicts=${7:-0} label
  VARIANT_OPTIONS=${8:-}
  label="eoingest $mode b=$batch par=$par"
  [ "$fmt" != csv ] && label+=" $fmt"
  [ "$parts" != 4 ] && label+=" ($parts-partition topic)"
  [ -n "$VARIANT_OPTIONS" ] && label+=" ${9:-with options}"
  [ "$VARIANT_INSERT_PATH" = copy ] && label+=" through COPY's text"
  [ -n "$VARIANT_DURABILITY" ] && label+=" durability=$VARIANT_DURABILITY"
  variant "(d) eoingest" "$label" eoingest "$fmt" "$parts" "$pk" "$mode" "$batch" "$par" -- \
    eoi_once "$(topic_name "$fmt" "$parts")" "$(table_for "$pk")" "$fmt" "$mode" "$batch" "$par" "$conflicts"
  VARIANT_OPTIONS=''
}

# bench_insert_path PATH: eoingest.insert_path for the jobs started next ('' = the default).
bench_insert_path() {
  if [ -n "$1" ]; then
    q "ALTER SYSTEM SET eoingest.insert_path = '$1'" >/dev/null
  else
    q "ALTER SYSTEM RESET eoingest.insert_path" >/dev/null
  fi
  q "SELECT pg_reload_conf()" >/dev/null
}

# A partitioned target, straight into tuples and through COPY's text (the
# path such targets took before direct.c routed rows), back to back; the
# setting is back to its default for every variant after them.
eoi_partitioned_variants() {
  eoi_variant exactly_once csv 4 part 10000 1
  VARIANT_INSERT_PATH=copy
  bench_insert_path copy
  eoi_variant exactly_once csv 4 part 10000 1
  bench_insert_path ''
  VARIANT_INSERT_PATH=''
}

# librdkafka prefetch settings that keep the worker fed (see bench/README.md).
PREFETCH_A='{"queued.min.messages": 1000000}'
PREFETCH_B='{"queued.min.messages": 1000000, "queued.max.messages.kbytes": 32768}'
PREFETCH_A_LABEL='+ queued.min.messages=1M'
PREFETCH_B_LABEL='+ queued.min.messages=1M, 32 MB'

# durability => 'async' beside the default, where the flush wait weighs: batches of 10,000 and 1,000.
eoi_durability_variants() {
  VARIANT_DURABILITY=async
  eoi_variant exactly_once csv 4 no 10000 1
  eoi_variant exactly_once csv 4 no 1000 1
  VARIANT_DURABILITY=''
}

# The same JSON rows through a mapping of the three fields and four metadata columns, into bench_map
# (method eoingest_mapping), and of the three fields alone, into bench_nopk (eoingest_mapping_fields).
BENCH_MAPPING_META='{"id": "/id", "ts": "/ts", "temperature": "/temperature", "topic": "$topic",
  "part": "$partition", "off": "$offset", "kafka_ts": "$timestamp"}'
eoi_mapping_variant() {
  VARIANT_MAPPING=$BENCH_MAPPING_META
  variant "(d) eoingest" "eoingest exactly_once b=10000 par=1 json mapping (4 metadata columns)" eoingest_mapping json 4 \
    no exactly_once 10000 1 -- eoi_once "$(topic_name json 4)" bench_map json exactly_once 10000 1
  # the mapping's own cost: the same three columns as the plain path, by paths
  VARIANT_MAPPING='{"id": "/id", "ts": "/ts", "temperature": "/temperature"}'
  variant "(d) eoingest" "eoingest exactly_once b=10000 par=1 json mapping (the 3 fields)" eoingest_mapping_fields json 4 \
    no exactly_once 10000 1 -- eoi_once "$(topic_name json 4)" bench_nopk json exactly_once 10000 1
  VARIANT_MAPPING=''
}

# 100 topics into 100 tables through a target template (method eoingest_many): the same RECORDS CSV
# rows, RECORDS / 100 per topic (one partition each, the rows' ts distinct across topics), each topic
# into the table of its name, children of bench_many, through which the rows are counted and timed.
MANY_TOPICS=100
preload_many() {
  local i t per=$((RECORDS / MANY_TOPICS)) wm
  q "CREATE TABLE IF NOT EXISTS bench_many (LIKE bench_nopk) WITH (autovacuum_enabled = off)" >/dev/null
  log "preloading $MANY_TOPICS topics of $per $RECORD_BYTES-byte csv records (bench_many_000 ...)"
  for ((i = 0; i < MANY_TOPICS; i++)); do
    t=$(printf 'bench_many_%03d' "$i")
    q "CREATE TABLE IF NOT EXISTS $t () INHERITS (bench_many) WITH (autovacuum_enabled = off)" >/dev/null
    if ! wm=$(eoi-kafka -t 3 watermarks "$t" 2>/dev/null) ||
      [ "$(awk '{n += $3} END {print n + 0}' <<<"$wm")" != "$per" ]; then
      eoi-kafka delete-topic "$t" >/dev/null 2>&1 || true
      eoi-kafka create-topic "$t" 1 >/dev/null
      bench-kafka preload "$t" --count "$per" --first $((i * per)) --size "$RECORD_BYTES" --format csv
    fi
  done
}
many_topics() {
  local i
  for ((i = 0; i < MANY_TOPICS; i++)); do printf '%sbench_many_%03d' "$([ "$i" -gt 0 ] && echo ', ')" "$i"; done
}
eoi_many_variant() {
  local label="eoingest exactly_once b=10000 par=1 100 topics into 100 tables"
  # the 100 topics take minutes to preload: only for a run that measures them
  if [ -n "$ONLY" ] && ! [[ $label =~ $ONLY ]]; then return 0; fi
  preload_many
  VARIANT_TARGET='public.${topic}'
  variant "(d) eoingest" "$label" eoingest_many csv 1 \
    no exactly_once 10000 1 -- eoi_once "$(many_topics)" bench_many csv exactly_once 10000 1
  VARIANT_TARGET=''
}

# The Avro rows with schema_changes => 'widen' (method eoingest_evolve): the schema fits the table,
# so this measures what following the schema costs every batch that changes nothing.
eoi_evolve_variant() {
  VARIANT_SCHEMA_CHANGES=widen
  variant "(d) eoingest" "eoingest exactly_once b=10000 par=1 avro schema_changes widen" eoingest_evolve avro 4 \
    no exactly_once 10000 1 -- eoi_once "$(topic_name avro 4)" bench_nopk avro exactly_once 10000 1
  VARIANT_SCHEMA_CHANGES=''
}

# The same JSON rows through a transform that only casts and renames (method
# eoingest_transform, kept out of the report's goals for the plain path).
BENCH_TRANSFORM="INSERT INTO public.bench_nopk SELECT value_json->>'id', (value_json->>'ts')::bigint,
  (value_json->>'temperature')::double precision FROM eoingest.batch()"
eoi_transform_variant() {
  VARIANT_TRANSFORM=$BENCH_TRANSFORM
  variant "(d) eoingest" "eoingest exactly_once b=10000 par=1 json transform (casts)" eoingest_transform json 4 no \
    exactly_once 10000 1 -- eoi_once "$(topic_name json 4)" bench_nopk json exactly_once 10000 1
  VARIANT_TRANSFORM=''
}

run_eoingest() {
  local pk batch par mode batches=(1000 10000 100000) pars=(1 2) pks=(no yes)
  if [ "$QUICK" = 1 ]; then
    eoi_variant exactly_once csv 4 no 10000 1
    eoi_variant exactly_once csv 4 no 10000 2
    eoi_variant exactly_once csv 4 no 1000 1
    eoi_variant exactly_once csv 4 yes 10000 1
    for mode in at_least_once at_most_once two_phase; do eoi_variant $mode csv 4 no 10000 1; done
    eoi_variant upsert_0 csv 4 yes 10000 1
    eoi_variant upsert_100 csv 4 yes 10000 1 100
    eoi_variant upsert_50 csv 4 yes 10000 1 50
    eoi_variant exactly_once json 4 no 10000 1
    eoi_transform_variant
    eoi_mapping_variant
    eoi_many_variant
    eoi_variant exactly_once avro 4 no 10000 1
    eoi_variant exactly_once protobuf 4 no 10000 1
    eoi_evolve_variant
    eoi_variant exactly_once csv 1 no 10000 1
    eoi_variant exactly_once csv 4 no 10000 1 0 "$PREFETCH_B" "$PREFETCH_B_LABEL"
    eoi_partitioned_variants
    eoi_durability_variants
    return
  fi
  # exactly_once: the whole matrix.
  for pk in "${pks[@]}"; do
    for batch in "${batches[@]}"; do
      for par in "${pars[@]}"; do eoi_variant exactly_once csv 4 "$pk" "$batch" "$par"; done
    done
  done
  # The other modes: batch 10,000 by default, everything with --full.
  [ "$FULL" = 1 ] || batches=(10000)
  for mode in two_phase at_least_once at_most_once; do
    for pk in "${pks[@]}"; do
      [ "$FULL" = 1 ] || [ "$pk" = no ] || continue
      for batch in "${batches[@]}"; do
        for par in "${pars[@]}"; do eoi_variant "$mode" csv 4 "$pk" "$batch" "$par"; done
      done
    done
  done
  for mode in upsert_0 upsert_50 upsert_100; do
    for batch in "${batches[@]}"; do
      for par in "${pars[@]}"; do eoi_variant "$mode" csv 4 yes "$batch" "$par" "${mode#upsert_}"; done
    done
  done
  # The same job with librdkafka's prefetch thresholds raised through the job's options.
  for par in "${pars[@]}"; do
    eoi_variant exactly_once csv 4 no 10000 "$par" 0 "$PREFETCH_A" "$PREFETCH_A_LABEL"
    eoi_variant exactly_once csv 4 no 10000 "$par" 0 "$PREFETCH_B" "$PREFETCH_B_LABEL"
  done
  # The format and the partition count.
  for pk in "${pks[@]}"; do
    [ "$FULL" = 1 ] || [ "$pk" = no ] || continue
    for par in "${pars[@]}"; do eoi_variant exactly_once json 4 "$pk" 10000 "$par"; done
    [ "$pk" = no ] && eoi_transform_variant
    [ "$pk" = no ] && eoi_mapping_variant
    if [ "$pk" = no ]; then eoi_many_variant; fi
    for par in "${pars[@]}"; do eoi_variant exactly_once avro 4 "$pk" 10000 "$par"; done
    for par in "${pars[@]}"; do eoi_variant exactly_once protobuf 4 "$pk" 10000 "$par"; done
    if [ "$pk" = no ]; then eoi_evolve_variant; fi
    eoi_variant exactly_once csv 1 "$pk" 10000 1
  done
  eoi_partitioned_variants
  eoi_durability_variants
}

# ---- the peers (--peers): Kafka Connect + Debezium's JDBC sink, and eoingest, on the wrapped topic ----
CONNECT_BENCH_PORT=${BENCH_CONNECT_PORT:-18083}
connect_sh() {
  CONNECT_PORT=$CONNECT_BENCH_PORT CONNECT_DIR=$WORK/connect CONNECT_HEAP=${BENCH_CONNECT_HEAP:-2g} \
    CONNECT_PLUGIN_NAMES=debezium-jdbc \
    CONNECT_WORKER_EXTRA="connector.client.config.override.policy=All" bash "$REPO/test/connect.sh" "$@"
}
CONNECT_RUN=0
# connect_props TABLE INSERT_MODE TASKS: the sink connector's properties; a new name (a new consumer
# group) for every run, so that each reads the wrapped topic from the beginning.
connect_props() {
  local table=$1 imode=$2 tasks=$3
  CONNECT_RUN=$((CONNECT_RUN + 1))
  printf '%s\n' "name=bench-jdbc-$CONNECT_RUN-$$" \
    "connector.class=io.debezium.connector.jdbc.JdbcSinkConnector" \
    "tasks.max=$tasks" \
    "topics=$(topic_name connect 4)" \
    "connection.url=jdbc:postgresql://127.0.0.1:$PGPORT/postgres" \
    "connection.username=postgres" \
    "connection.password=unused" \
    "insert.mode=$imode" \
    "collection.name.format=$table" \
    "schema.evolution=none" \
    "batch.size=10000" \
    "dialect.postgres.unnest.insert.enabled=true" \
    "consumer.override.max.poll.records=10000"
  if [ "$imode" = upsert ]; then
    printf '%s\n' "primary.key.mode=record_value" "primary.key.fields=ts"
  else
    printf '%s\n' "primary.key.mode=none"
  fi
}

# connect_begin PROPS: note the WAL position and the machine's counters, start the Connect worker with PROPS
# and sample its memory; sets CONNECT_PID and CONNECT_T0 (the start), or the run FAILED and returns 1.
connect_begin() {
  CONNECT_LSN0=$(q "SELECT pg_current_wal_lsn()")
  snap_begin
  CONNECT_T0=$EPOCHREALTIME
  if ! connect_sh start "$1" >"$WORK/connect-start.log" 2>&1; then
    R_STATUS=FAILED
    R_NOTE="connect.sh start: $(grep -m1 -iE 'error|exception|failed' "$WORK/connect-start.log" | cut -c1-300)"
    connect_sh kill >/dev/null 2>&1 || true
    return 1
  fi
  CONNECT_PID=$(cat "$WORK/connect/connect.pid")
  rm -f "$WORK/rss"
  rss_sampler "$WORK/rss" "$CONNECT_PID" &
  SAMPLER_PID=$!
}

# connect_finish: the JVM's CPU (it is the client here), memory and the WAL since connect_begin; stops the worker.
connect_finish() {
  local ticks
  ticks=$(sed 's/^.*) //' "/proc/$CONNECT_PID/stat" 2>/dev/null | awk '{print $12 + $13}')
  R_PCPU=$(awk -v t="${ticks:-0}" -v c="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / c}')
  R_CCPU=$R_PCPU
  R_HWM=$(awk '/^VmHWM:/ {print $2}' "/proc/$CONNECT_PID/status" 2>/dev/null || true)
  kill "$SAMPLER_PID" 2>/dev/null || true
  wait "$SAMPLER_PID" 2>/dev/null || true
  SAMPLER_PID=
  R_RSS=$(cat "$WORK/rss" 2>/dev/null || true)
  snap_end
  R_WAL=$(wal_since "$CONNECT_LSN0")
  connect_sh stop >/dev/null 2>&1 || connect_sh kill >/dev/null 2>&1 || true
}

# connect_log_errors: a note when the worker logged errors.
connect_log_errors() {
  local n
  n=$(grep -c ' ERROR ' "$WORK/connect/connect.log" 2>/dev/null || true)
  [ "${n:-0}" = 0 ] || R_NOTE="connect.log has $n ERROR line(s)"
}

# connect_once TABLE INSERT_MODE TASKS: one fresh worker and connector; timed from the worker's start to
# the last row's commit, so the JVM's start (4-6 s) is in it. CPU: the JVM's utime + stime (/proc/PID/stat);
# memory: its VmHWM and the sampled RssAnon peak.
connect_once() {
  local table=$1 imode=$2 tasks=$3 props=$WORK/connect-sink.properties pid t0 limit t_start
  connect_props "$table" "$imode" "$tasks" >"$props"
  job_drop
  q "TRUNCATE $table; CHECKPOINT" >/dev/null
  connect_begin "$props" || return 0
  pid=$CONNECT_PID t0=$CONNECT_T0
  limit=$((120 + RECORDS / 1000)) t_start=$SECONDS
  until [ "$(q "SELECT count(*) FROM $table")" -ge "$RECORDS" ]; do
    if [ $((SECONDS - t_start)) -ge "$limit" ] || ! [ -r "/proc/$pid/stat" ]; then
      R_STATUS=FAILED R_NOTE="$(q "SELECT count(*) FROM $table") of $RECORDS rows after $((SECONDS - t_start)) s"
      break
    fi
    sleep 0.2
  done
  connect_finish
  [ "$R_STATUS" = ok ] || return
  verify_rows "$table" "$RECORDS" "$t0" || return
  connect_log_errors
}

# eoingest on the same bytes: through a transform over the payload, and format json reading the wrapper.
WRAPPED_ROW="p->>'id', (p->>'ts')::bigint, (p->>'temperature')::double precision
  FROM (SELECT value_json->'payload' AS p FROM eoingest.batch()) b"
run_peers() {
  [ "$PEERS" = 1 ] || return 0
  local topic tasks group="(e) peers, Connect JSON envelope"
  topic=$(topic_name connect 4)
  # method eoingest_wrapped: a transform job, kept out of the report's goals for the plain eoingest runs.
  VARIANT_TRANSFORM="INSERT INTO public.bench_nopk SELECT $WRAPPED_ROW"
  variant "$group" "eoingest exactly_once b=10000 par=1 wrapped (transform)" eoingest_wrapped \
    connect 4 no exactly_once 10000 1 -- eoi_once "$topic" bench_nopk json exactly_once 10000 1
  VARIANT_TRANSFORM="INSERT INTO public.bench_pk SELECT $WRAPPED_ROW
    ON CONFLICT (ts) DO UPDATE SET id = excluded.id, temperature = excluded.temperature"
  variant "$group" "eoingest upsert b=10000 par=1 wrapped (transform ON CONFLICT)" eoingest_wrapped \
    connect 4 yes upsert 10000 1 -- eoi_once "$topic" bench_pk json exactly_once 10000 1
  VARIANT_TRANSFORM=''
  # format json reads the wrapper itself: no transform.
  variant "$group" "eoingest exactly_once b=10000 par=1 wrapped (format json)" eoingest_wrapped \
    connect 4 no exactly_once 10000 1 -- eoi_once "$topic" bench_nopk json exactly_once 10000 1
  variant "$group" "eoingest upsert b=10000 par=1 wrapped (format json)" eoingest_wrapped \
    connect 4 yes upsert 10000 1 -- eoi_once "$topic" bench_pk json upsert 10000 1
  if [ -z "$ONLY" ] || [[ "Kafka Connect" =~ $ONLY ]] || [[ "Connect" =~ $ONLY ]]; then
    connect_sh fetch debezium-jdbc
  fi
  for tasks in 1 2; do
    variant "$group" "Kafka Connect + Debezium JDBC sink insert (unnest) tasks=$tasks" connect \
      connect 4 no insert 10000 "$tasks" -- connect_once bench_nopk insert "$tasks"
  done
  for tasks in 1 2; do
    variant "$group" "Kafka Connect + Debezium JDBC sink upsert tasks=$tasks" connect \
      connect 4 yes upsert 10000 "$tasks" -- connect_once bench_pk upsert "$tasks"
  done
}

# ---- CDC (--cdc, --peers): Debezium change events, and the same changes as plain upsert records ----
CDC_KEYS=0 CDC_ROWS='' CDC_TS_SUM=''
# preload_cdc FORMAT: debezium (Connect-wrapped events and keys), debezium-avro (the same events as
# Debezium's AvroConverter writes them, bench/tools/cdc-*.avsc) or upsert-csv (key text, CSV, tombstones).
preload_cdc() {
  local fmt=$1 topic wm
  topic=$(topic_name "cdc_$fmt" 4)
  if wm=$(eoi-kafka -t 3 watermarks "$topic" 2>/dev/null) &&
    [ "$(awk '{n += $3} END {print n + 0}' <<<"$wm")" = "$RECORDS" ] && [ "$(wc -l <<<"$wm")" = 4 ]; then
    log "topic $topic: already holds the $RECORDS changes"
  else
    eoi-kafka delete-topic "$topic" >/dev/null 2>&1 || true
    eoi-kafka create-topic "$topic" 4 >/dev/null
    log "preloading $RECORDS $fmt changes over $CDC_KEYS keys into $topic (4 partitions, key % 4)"
    bench-kafka preload "$topic" --count "$RECORDS" --keys "$CDC_KEYS" --format "$fmt"
  fi
  wm=$(eoi-kafka watermarks "$topic")
  [ "$(awk '{n += $3} END {print n + 0}' <<<"$wm")" = "$RECORDS" ] ||
    eoi_die "topic $topic does not hold the $RECORDS changes: $(tr '\n' ' ' <<<"$wm")"
}
prepare_cdc() {
  local file=$WORK/cdc_expected_n${RECORDS}.csv
  CDC_KEYS=$((RECORDS / 10))
  preload_cdc debezium
  preload_cdc debezium-avro
  preload_cdc upsert-csv
  bench-kafka cdc-expected --count "$RECORDS" --keys "$CDC_KEYS" >"$file"
  chmod 644 "$file"
  read -r CDC_ROWS CDC_TS_SUM <<<"$(awk -F, '{n++; s += $3} END {printf "%d %.0f\n", n, s}' "$file")"
  psql -X -q -v ON_ERROR_STOP=1 <<SQL
DROP TABLE IF EXISTS bench_cdc, bench_cdc_expected;
CREATE TABLE bench_cdc (pk int PRIMARY KEY, id text, ts bigint, temperature double precision) WITH (autovacuum_enabled = off);
CREATE TABLE bench_cdc_expected (pk int PRIMARY KEY, id text, ts bigint, temperature double precision);
COPY bench_cdc_expected FROM '$file' (FORMAT csv);
SQL
  log "CDC: the final state has $CDC_ROWS rows, sum(ts) $CDC_TS_SUM (bench_cdc_expected, from $file)"
}

# cdc_wait T0 PIDS...: until bench_cdc holds the expected count and sum(ts) (polled every 0.1 s), then
# compares it row by row with bench_cdc_expected; sets R_SECONDS (T0 -> the poll that saw the final state).
cdc_wait() {
  local t0=$1 limit t_start diff
  shift
  limit=$((120 + RECORDS / 500)) t_start=$SECONDS
  until [ "$(q "SELECT count(*) = $CDC_ROWS AND coalesce(sum(ts), 0) = $CDC_TS_SUM FROM bench_cdc")" = t ]; do
    if [ $((SECONDS - t_start)) -ge "$limit" ]; then
      R_STATUS=FAILED R_NOTE="not at the final state after $limit s: $(q "SELECT count(*) || ' rows, sum(ts) ' || coalesce(sum(ts), 0) FROM bench_cdc")"
      return 1
    fi
    if [ -n "${1:-}" ] && ! [ -r "/proc/$1/stat" ]; then R_STATUS=FAILED R_NOTE="process $1 exited"; return 1; fi
    if [ -z "${1:-}" ] && [ "$(q "SELECT count(*) FROM eoingest.job_status WHERE name = '$JOB' AND state = 'failed'")" != 0 ]; then
      R_STATUS=FAILED R_NOTE="job failed: $(q "SELECT string_agg(last_error, '; ') FROM eoingest.job_status WHERE name = '$JOB'")"
      return 1
    fi
    sleep 0.1
  done
  R_SECONDS=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.3f", b - a}')
  R_ROWS=$RECORDS
  diff=$(q "SELECT (SELECT count(*) FROM (TABLE bench_cdc EXCEPT TABLE bench_cdc_expected) a) +
                   (SELECT count(*) FROM (TABLE bench_cdc_expected EXCEPT TABLE bench_cdc) b)")
  [ "$diff" = 0 ] || { R_STATUS=FAILED R_NOTE="bench_cdc differs from the expected final state in $diff row(s)"; return 1; }
}

# cdc_eoi_once KIND: debezium (envelope => 'debezium', exactly_once), debezium-evolve (the same with
# schema_changes => 'add_columns'), debezium-avro (the Avro events) or upsert (mode upsert, CSV, tombstones).
cdc_eoi_once() {
  local kind=$1 perf_data=${2:-} topic args lsn0 t0 pids pid_list err
  if [ "$kind" = debezium ] || [ "$kind" = debezium-evolve ]; then
    topic=$(topic_name cdc_debezium 4)
    args="format => 'json', mode => 'exactly_once', envelope => 'debezium'"
    # following the events' schemas: each batch's schemas looked at, none changes the table
    [ "$kind" = debezium ] || args="$args, schema_changes => 'add_columns'"
  elif [ "$kind" = debezium-avro ]; then
    topic=$(topic_name cdc_debezium-avro 4)
    args="format => 'avro', schema_registry => '$BENCH_REGISTRY', mode => 'exactly_once', envelope => 'debezium'"
  else
    topic=$(topic_name cdc_upsert-csv 4)
    args="format => 'csv', mode => 'upsert', key_columns => ARRAY['pk']"
  fi
  job_drop
  q "TRUNCATE bench_cdc" >/dev/null
  if ! err=$(q "SELECT eoingest.create_job(name => '$JOB', brokers => '$KAFKA_BROKERS', topic => '$topic',
        target => 'bench_cdc', $args, batch_size => 10000, batch_timeout_ms => $BATCH_TIMEOUT_MS, parallelism => 1)" 2>&1); then
    R_STATUS=FAILED R_NOTE="create_job: $(head -n 1 <<<"$err")"
    return
  fi
  q "CHECKPOINT" >/dev/null
  snap_begin
  read -r lsn0 t0 _ <<<"$(q "SELECT pg_current_wal_lsn(), extract(epoch FROM clock_timestamp()), eoingest.start_job('$JOB')")"
  if ! pids=$(job_pids 1); then R_STATUS=FAILED R_NOTE="the worker did not start"; return; fi
  read -ra pid_list <<<"$pids"
  rm -f "$WORK/rss"
  rss_sampler "$WORK/rss" "${pid_list[@]}" &
  SAMPLER_PID=$!
  rm -f "$WORK/states.txt"
  if [ -n "$perf_data" ]; then
    perf record -q -F 250 --call-graph dwarf,16384 --buildid-mmap -p "${pids// /,}" -o "$perf_data" \
      >/dev/null 2>&1 &
    PERF_PID=$!
  fi
  cdc_wait "$t0" || true
  R_PCPU=$(bench_py cpu "${pid_list[@]}")
  R_HWM=$(bench_py hwm "${pid_list[@]}")
  snap_end
  R_WAL=$(wal_since "$lsn0")
  if [ -n "$PERF_PID" ]; then
    kill -INT "$PERF_PID" 2>/dev/null || true
    wait "$PERF_PID" 2>/dev/null || true
    PERF_PID=
  fi
  kill "$SAMPLER_PID" 2>/dev/null || true
  wait "$SAMPLER_PID" 2>/dev/null || true
  SAMPLER_PID=
  R_RSS=$(cat "$WORK/rss" 2>/dev/null || true)
  job_stop
}

# cdc_connect_once TASKS: Debezium's JDBC sink on the Debezium topic, upsert + delete by the record key.
cdc_connect_once() {
  local tasks=$1 props=$WORK/connect-cdc.properties pid t0
  CONNECT_RUN=$((CONNECT_RUN + 1))
  printf '%s\n' "name=bench-jdbc-cdc-$CONNECT_RUN-$$" \
    "connector.class=io.debezium.connector.jdbc.JdbcSinkConnector" \
    "tasks.max=$tasks" \
    "topics=$(topic_name cdc_debezium 4)" \
    "connection.url=jdbc:postgresql://127.0.0.1:$PGPORT/postgres" \
    "connection.username=postgres" \
    "connection.password=unused" \
    "insert.mode=upsert" \
    "delete.enabled=true" \
    "primary.key.mode=record_key" \
    "collection.name.format=bench_cdc" \
    "schema.evolution=none" \
    "batch.size=10000" \
    "consumer.override.max.poll.records=10000" >"$props"
  job_drop
  q "TRUNCATE bench_cdc; CHECKPOINT" >/dev/null
  connect_begin "$props" || return 0
  pid=$CONNECT_PID t0=$CONNECT_T0
  cdc_wait "$t0" "$pid" || true
  connect_finish
  [ "$R_STATUS" = ok ] || return
  connect_log_errors
}

run_cdc() {
  [ "$CDC" = 1 ] || return 0
  local tasks group="(f) CDC, $RECORDS changes over $CDC_KEYS keys"
  variant "$group" "eoingest cdc envelope=debezium b=10000 par=1" eoingest_cdc \
    cdc_debezium 4 yes exactly_once 10000 1 -- cdc_eoi_once debezium
  variant "$group" "eoingest cdc envelope=debezium schema_changes=add_columns b=10000 par=1" eoingest_cdc \
    cdc_debezium 4 yes exactly_once 10000 1 -- cdc_eoi_once debezium-evolve
  variant "$group" "eoingest cdc envelope=debezium avro b=10000 par=1" eoingest_cdc \
    cdc_debezium_avro 4 yes exactly_once 10000 1 -- cdc_eoi_once debezium-avro
  variant "$group" "eoingest upsert b=10000 par=1 (same changes, CSV + tombstones)" eoingest_cdc \
    cdc_upsert 4 yes upsert 10000 1 -- cdc_eoi_once upsert
  [ "$PEERS" = 1 ] || return 0
  if [ -z "$ONLY" ] || [[ "Connect + Debezium JDBC sink cdc" =~ $ONLY ]]; then
    connect_sh fetch debezium-jdbc
  fi
  for tasks in 1 2; do
    variant "$group" "Kafka Connect + Debezium JDBC sink cdc (upsert + delete) tasks=$tasks" connect_cdc \
      cdc_debezium 4 yes upsert 10000 "$tasks" -- cdc_connect_once "$tasks"
  done
}

# ---- COPY and exactly_once back to back ----
# The machine's speed drifts over minutes, and the main table measures COPY
# and eoingest minutes apart.  Here each round runs COPY, then exactly_once
# b=10000 with 1, 2 and 4 workers (the topic's 4 partitions), into the same
# table, so that a ratio compares runs seconds apart; the report gives each
# round's, the median, and the curve over the workers with the CPU of the
# server and of the broker (which share the machine's cores).
run_paired() {
  local round copy_rate par rate
  log "back to back: COPY, then exactly_once b=10000 par=1, 2 and 4, $RUNS round(s)"
  printf 'round\tcopy_rows_per_s\tpar\teoingest_rows_per_s\tratio\tseconds\tserver_cpu\tbroker_cpu\tfirst_commit_s\n' >"$PAIRED"
  for ((round = 1; round <= RUNS; round++)); do
    reset_result
    copy_once bench_nopk
    [ "$R_STATUS" = ok ] || { fail_loudly "back to back: COPY: $R_NOTE"; return; }
    copy_rate=$(awk -v r="$R_ROWS" -v s="$R_SECONDS" 'BEGIN {printf "%.0f", r / s}')
    for par in 1 2 4; do
      reset_result
      eoi_once "$(topic_name csv 4)" bench_nopk csv exactly_once 10000 "$par" 0
      [ "$R_STATUS" = ok ] || { fail_loudly "back to back: exactly_once par=$par: $R_NOTE"; return; }
      rate=$(awk -v r="$R_ROWS" -v s="$R_SECONDS" 'BEGIN {printf "%.0f", r / s}')
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$copy_rate" "$par" "$rate" \
        "$(awk -v a="$rate" -v b="$copy_rate" 'BEGIN {printf "%.3f", a / b}')" \
        "$R_SECONDS" "$R_SCPU" "$R_BCPU" "$R_FIRST" >>"$PAIRED"
      log "    round $round: COPY $copy_rate rows/s, exactly_once par=$par $rate rows/s"
    done
  done
}

# ---- latency ----
# Each row's end-to-end latency is its commit time (pg_xact_commit_timestamp(xmin), track_commit_timestamp is
# on) less the time its producer stamped in its ts field when it sent it (bench-kafka paced).

# latency_record LABEL FRACTION RATE BATCH TIMEOUT TABLE PRODUCED: the percentiles of TABLE's rows into $LAT;
# the run FAILED unless every produced row is there once.
latency_record() {
  local label=$1 fraction=$2 rate=$3 batch=$4 timeout=$5 table=$6 produced=$7 stats
  local rows distinct achieved p50 p90 p99 pmax
  stats=$(q "SELECT count(*), count(DISTINCT id),
       round((count(*) / greatest((max(ts) - min(ts)) / 1e6, 1e-3))::numeric),
       round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1),
       round(percentile_cont(0.9) WITHIN GROUP (ORDER BY ms)::numeric, 1),
       round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 1),
       round(max(ms)::numeric, 1)
     FROM (SELECT id, ts, (extract(epoch FROM pg_xact_commit_timestamp(xmin)) * 1e6 - ts) / 1000.0 AS ms
             FROM $table) x")
  read -r rows distinct achieved p50 p90 p99 pmax <<<"$stats"
  if [ "$rows" != "$produced" ] || [ "$distinct" != "$produced" ]; then
    fail_loudly "latency ($label): $rows rows, $distinct distinct, $produced produced"
    return
  fi
  log "    p50 ${p50} ms, p90 ${p90} ms, p99 ${p99} ms, max ${pmax} ms over $rows rows (achieved $achieved rows/s)"
  [ -s "$LAT" ] ||
    printf 'label\tfraction\trate\tachieved\trows\tbatch_size\tbatch_timeout_ms\tp50_ms\tp90_ms\tp99_ms\tmax_ms\n' >"$LAT"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$fraction" "$rate" "$achieved" "$rows" \
    "$batch" "$timeout" "$p50" "$p90" "$p99" "$pmax" >>"$LAT"
}

# latency_eoi RATE TIMEOUT_MS FRACTION: eoingest exactly_once b=10000 par=1 on a 1-partition CSV topic
# produced at RATE rows/s for LATENCY_SECONDS.
latency_eoi() {
  local rate=$1 timeout=$2 fraction=$3 topic=bench_latency produced out
  log "latency: eoingest exactly_once b=10000 timeout=${timeout}ms par=1 at $rate rows/s ($fraction) for ${LATENCY_SECONDS}s"
  job_drop
  eoi-kafka delete-topic "$topic" >/dev/null 2>&1 || true
  eoi-kafka create-topic "$topic" 1 >/dev/null
  q "TRUNCATE bench_lat" >/dev/null
  q "SELECT eoingest.create_job(name => '$JOB', brokers => '$KAFKA_BROKERS', topic => '$topic',
       target => 'bench_lat', format => 'csv', mode => 'exactly_once', batch_size => 10000,
       batch_timeout_ms => $timeout, parallelism => 1);
     SELECT eoingest.start_job('$JOB')" >/dev/null
  job_pids 1 >/dev/null || { fail_loudly "latency: worker did not start"; return; }
  wait_sql 30 "SELECT bool_and(state = 'running') FROM eoingest.job_status WHERE name = '$JOB'" ||
    { fail_loudly "latency: worker not running"; return; }
  sleep 1
  produced=$(bench-kafka paced "$topic" --rate "$rate" --seconds "$LATENCY_SECONDS" --size "$RECORD_BYTES")
  out=$(wait_rows "$produced" 120) || { fail_loudly "latency: rows did not arrive: $out"; job_stop; return; }
  job_stop
  latency_record "eoingest exactly_once b=10000 par=1, 1-partition topic" "$fraction" "$rate" 10000 "$timeout" \
    bench_lat "$produced"
  job_drop
}

# run_latency DIVISOR: at 1/DIVISOR of the rate exactly_once b=10000 par=1 reached.
run_latency() {
  local divisor=$1 id="eoingest:exactly_once:csv:p4:no:b10000:w1" best rate
  best=$(awk -F '\t' -v id="$id" 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; next}
      $1 == id && $c["status"] == "ok" {print $c["rows"] / $c["seconds"]}' "$RAW" | sort -g |
    awk '{a[NR] = $1} END {if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}')
  if [ -z "$best" ]; then
    fail_loudly "latency: no successful exactly_once b=10000 par=1 run to take the rate from"
    return
  fi
  rate=$(awk -v b="$best" -v d="$divisor" 'BEGIN {printf "%d", b / d}')
  latency_eoi "$rate" "$BATCH_TIMEOUT_MS" "1/$divisor"
}

# latency_connect RATE: Debezium's JDBC sink, 1 task, with its defaults (batch.size 500, the consumer's
# max.poll.records 500), inserting into bench_lat_connect from a 1-partition topic in Connect's JSON envelope
# produced at RATE rows/s. The worker has started and read ten warm-up records before the timed ones are sent.
latency_connect() {
  local rate=$1 topic=bench_latency_connect props=$WORK/connect-latency.properties produced t_start
  log "latency: Debezium JDBC sink, 1 task, defaults, at $rate rows/s for ${LATENCY_SECONDS}s"
  job_drop
  eoi-kafka delete-topic "$topic" >/dev/null 2>&1 || true
  eoi-kafka create-topic "$topic" 1 >/dev/null
  q "TRUNCATE bench_lat_connect" >/dev/null
  CONNECT_RUN=$((CONNECT_RUN + 1))
  printf '%s\n' "name=bench-latency-$CONNECT_RUN-$$" \
    "connector.class=io.debezium.connector.jdbc.JdbcSinkConnector" \
    "tasks.max=1" "topics=$topic" \
    "connection.url=jdbc:postgresql://127.0.0.1:$PGPORT/postgres" \
    "connection.username=postgres" "connection.password=unused" \
    "insert.mode=insert" "collection.name.format=bench_lat_connect" "schema.evolution=none" \
    "primary.key.mode=none" >"$props"
  if ! connect_sh start "$props" >"$WORK/connect-start.log" 2>&1; then
    fail_loudly "latency: connect.sh start: $(grep -m1 -iE 'error|exception|failed' "$WORK/connect-start.log" | cut -c1-300)"
    connect_sh kill >/dev/null 2>&1 || true
    return
  fi
  bench-kafka paced "$topic" --rate 10 --seconds 1 --format connect >/dev/null
  wait_sql 120 "SELECT count(*) >= 10 FROM bench_lat_connect" ||
    { fail_loudly "latency: the JDBC sink did not write the warm-up records"; connect_sh kill >/dev/null 2>&1; return; }
  q "DELETE FROM bench_lat_connect" >/dev/null
  produced=$(bench-kafka paced "$topic" --rate "$rate" --seconds "$LATENCY_SECONDS" --format connect)
  t_start=$SECONDS
  until [ "$(q "SELECT count(*) FROM bench_lat_connect")" -ge "$produced" ]; do
    if [ $((SECONDS - t_start)) -ge 120 ]; then
      fail_loudly "latency: the JDBC sink wrote $(q "SELECT count(*) FROM bench_lat_connect") of $produced rows"
      connect_sh kill >/dev/null 2>&1 || true
      return
    fi
    sleep 0.2
  done
  connect_sh stop >/dev/null 2>&1 || connect_sh kill >/dev/null 2>&1 || true
  latency_record "Debezium JDBC sink, 1 task, defaults, 1-partition topic" "-" "$rate" 500 - \
    bench_lat_connect "$produced"
}

# run_latency_rates: at 1,000 and 50,000 rows/s, eoingest with batch_timeout_ms 1000 (the default) and 20,
# and, with --peers, Debezium's JDBC sink.
run_latency_rates() {
  for rate in 1000 50000; do
    latency_eoi "$rate" 1000 "-"
    latency_eoi "$rate" 20 "-"
    [ "$PEERS" = 1 ] && latency_connect "$rate"
  done
  return 0
}

# ---- profile: one more b=10000 par=1 run under perf ----
# run_profile MODE TABLE OUTPUT: exactly_once into bench_nopk (profile.txt), and
# upsert_0 into bench_pk (profile-upsert.txt), the mode furthest from its target.
# BENCH_PROFILE_FORMAT (csv, json or avro; default csv) picks the format of the
# exactly_once profile; json-mapping and json-transform profile the JSON rows
# through the mapping with four metadata columns or the transform of the
# variants above.  BENCH_PROFILE_PAR sets both profiles' workers (default 1).
run_profile() {
  local mode=$1 table=$2 output=$3 fmt=${4:-csv} data=$WORK/perf.data
  local VARIANT_MAPPING='' VARIANT_TRANSFORM=''
  case $fmt in
    json-mapping) VARIANT_MAPPING=$BENCH_MAPPING_META table=bench_map ;;
    json-transform) VARIANT_TRANSFORM=$BENCH_TRANSFORM ;;
  esac
  local par=${BENCH_PROFILE_PAR:-1}
  log "profile: perf record of the worker(s) during one extra $fmt $mode b=10000 par=$par run into $table"
  reset_result
  rm -f "$data"
  eoi_once "$(topic_name "${fmt%%-*}" 4)" "$table" "${fmt%%-*}" "$mode" 10000 "$par" 0 "$data"
  [ "$R_STATUS" = ok ] || { fail_loudly "profiled run: $R_NOTE"; return; }
  perf_summary "$data" "$output" "$fmt $mode b=10000 par=$par into $table" "$R_ROWS rows"
}

# run_profile_cdc KIND OUTPUT: a CDC variant once more, under perf: debezium
# (envelope => 'debezium'; BENCH_PROFILE_CDC=debezium-avro for the Avro events)
# or upsert (mode upsert of the same changes).
run_profile_cdc() {
  local kind=$1 output=$2 data=$WORK/perf.data title
  log "profile: perf record of the worker during one extra CDC run ($kind)"
  reset_result
  rm -f "$data"
  cdc_eoi_once "$kind" "$data"
  [ "$R_STATUS" = ok ] || { fail_loudly "profiled CDC run ($kind): $R_NOTE"; return; }
  if [ "$kind" = debezium ]; then
    title="cdc envelope=debezium exactly_once b=10000 par=1 into bench_cdc"
  elif [ "$kind" = debezium-avro ]; then
    title="cdc envelope=debezium avro exactly_once b=10000 par=1 into bench_cdc"
  else
    title="upsert b=10000 par=1 of the same changes (CSV + tombstones) into bench_cdc"
  fi
  perf_summary "$data" "$output" "$title" "$RECORDS events"
}

# perf_summary DATA OUTPUT TITLE WHAT: the profile's summary, from perf.data.
perf_summary() {
  local data=$1 output=$2 title=$3 what=$4
  [ -s "$data" ] || { log "    perf recorded nothing"; return; }
  perf report -i "$data" --stdio --no-children --sort dso,symbol -g none --percent-limit 0.3 \
    >"$WORK/perf-self.txt" 2>/dev/null || true
  bench_py perf-fix "$WORK/perf-self.txt" "$WORK/eoingest.so.loaded"
  perf report -i "$data" --stdio --children --sort symbol -g none --percent-limit 4 \
    >"$WORK/perf-children.txt" 2>/dev/null || true
  perf report -i "$data" --stdio --no-children --sort dso -g none \
    >"$WORK/perf-dso.txt" 2>/dev/null || true
  {
    echo "# $title"
    echo "# $what in ${R_SECONDS}s under perf (sampling slows it down); worker CPU ${R_PCPU}s"
    echo "# (all threads of the worker process, librdkafka's included; PostgreSQL's static"
    echo "# functions have no symbols in Debian's stripped binary and show as addresses)"
    if [ -s "$WORK/states.txt" ]; then
      echo "# what the workers' main threads were doing (pg_stat_activity sampled every 10 ms):"
      echo "#   idle = inside the Kafka poll (librdkafka), active = decoding, COPY, commit"
      sed 's/^/  /' "$WORK/states.txt"
    fi
    echo
    echo "# self time by library (perf report --no-children --sort dso):"
    awk '!/^#/ && NF && n++ < 12' "$WORK/perf-dso.txt"
    echo
    echo "# self time by symbol (perf report --no-children --sort dso,symbol):"
    awk '!/^#/ && NF && $1 + 0 >= 0.8 && n++ < 40' "$WORK/perf-self.txt"
    echo
    echo "# inclusive time of named functions (perf report --children --sort symbol):"
    awk '!/^#/ && NF && !/\] 0x[0-9a-f]+ / && n++ < 45' "$WORK/perf-children.txt"
  } | sed 's/[[:space:]-]*$//' >"$output"
  log "    profile written to $output"
}

write_meta() {
  local dirty
  dirty=$(git -C "$REPO" status --porcelain -- src sql Makefile eoingest.control 2>/dev/null | wc -l)
  {
    printf 'key\tvalue\n'
    printf 'command\t%s\n' "$CMDLINE"
    printf 'date\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
    printf 'wall\t%s\n' "$(printf '%dm%02ds' $(((SECONDS - START) / 60)) $(((SECONDS - START) % 60)))"
    printf 'records\t%s\n' "$RECORDS"
    printf 'naive_records\t%s\n' "$NAIVE_RECORDS"
    printf 'runs\t%s\n' "$RUNS"
    printf 'record_bytes\t%s\n' "$RECORD_BYTES"
    printf 'json_bytes\t%s\n' "$JSON_BYTES"
    printf 'sample_csv\t%s\n' "$SAMPLE_CSV"
    printf 'cpu_model\t%s\n' "$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
    printf 'cpus\t%s\n' "$(nproc)"
    printf 'mem\t%s\n' "$(free -g | awk '/^Mem:/ {print $2 " GB"}')"
    printf 'os\t%s\n' "$(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
    printf 'eoingest\t%s\n' "repo at $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null)$([ "$dirty" = 0 ] || echo " with $dirty uncommitted change(s) in src/sql"); $([ "$INSTALL" = 1 ] && echo "built and installed by this run" || echo "the installed build used as is"); loaded at server start: $SO_LOADED"
    printf 'pg_version\t%s\n' "$(q 'SHOW server_version')"
    printf 'kafka_version\t%s\n' "$KAFKA_VERSION"
    printf 'librdkafka\t%s\n' "$RDKAFKA_LOADED"
    printf 'kcat\t%s\n' "$(dpkg-query -W -f '${Version}' kcat 2>/dev/null)"
    printf 'pg_settings\t%s\n' "$PG_SETTINGS; bench tables: autovacuum_enabled = off"
  } >"$META"
}

# ---- main ----
log "eoingest benchmark: $RECORDS records x ${RECORD_BYTES} B, $RUNS run(s) per variant$([ "$QUICK" = 1 ] && echo ", quick")$([ "$FULL" = 1 ] && echo ", full matrix")"
log "run directory $EOINGEST_RUN, Kafka $KAFKA_BROKERS, PostgreSQL port $PGPORT; results to $OUT"
setup_tools
start_servers
prepare_data
run_baselines
run_eoingest
run_peers
run_cdc
if [ -z "$ONLY" ] || [[ "back to back" =~ $ONLY ]]; then
  run_paired
fi
if [ -z "$ONLY" ] || [[ latency =~ $ONLY ]]; then
  run_latency 2
  run_latency 4
  run_latency_rates
fi
if [ "$PROFILE" = 1 ]; then
  run_profile exactly_once bench_nopk "$PROF" "${BENCH_PROFILE_FORMAT:-csv}"
  run_profile upsert_0 bench_pk "$PROF_UPSERT"
  if [ "$CDC" = 1 ]; then
    run_profile_cdc "${BENCH_PROFILE_CDC:-debezium}" "$PROF_CDC"
    run_profile_cdc upsert "$PROF_CDC_UPSERT"
  fi
fi
job_drop
write_meta
cp "$RAW" "$META" "$OUT/"
for f in "$LAT" "$PAIRED"; do
  if [ -f "$f" ]; then cp "$f" "$OUT/"; else rm -f "$OUT/$(basename "$f")"; fi
done
for f in "$PROF" "$PROF_UPSERT" "$PROF_CDC" "$PROF_CDC_UPSERT"; do
  if [ -f "$f" ]; then cp "$f" "$OUT/"; else rm -f "$OUT/$(basename "$f")"; fi
done
bench_py report --dir "$OUT"
log "report: $OUT/latest.md$([ -f "$OUT/latest.png" ] && echo " and $OUT/latest.png")"
if [ "$FAILS" -gt 0 ]; then
  echo "!!!!!!!! $FAILS run(s) FAILED; see above and $OUT/latest.md" >&2
  exit 1
fi
log "done in $(((SECONDS - START) / 60))m$(((SECONDS - START) % 60))s"
