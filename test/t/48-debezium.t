#!/usr/bin/env bash
# Against real Debezium: Kafka Connect (test/connect.sh) runs Debezium's PostgreSQL connector (pgoutput,
# JSON converter with schemas) on a second cluster, the source (port $DBZ_SRC_PORT); a pgbench workload
# there makes inserts, updates (to and from NULL), primary-key changes and deletes over two tables in
# multi-table transactions, and one TRUNCATE. Two eoingest jobs apply the topics to the test server:
# dbz_a (replica identity default, 3 partitions) in mode exactly_once, dbz_b (replica identity full,
# 1 partition, on_truncate => 'truncate') in mode two_phase. Meanwhile the workers are SIGKILLed
# $DBZ_KILLS times, Kafka Connect once in the last round (Debezium then sends part of the stream again),
# and the test server restarts once. At the end every column of every row is the
# source's (both dumps compared line by line) and the stored offsets are the log ends. A third table,
# dbz_t (replica identity default), gets two updates that leave a TOASTed value unchanged: Debezium sends
# its placeholder for it, which must never be stored: the copy keeps the value. A second connector sends dbz_a
# without the schema wrapper (schemas.enable=false) to a third job, in mode upsert, into dbz_a_plain.
# The first connector also sends its transaction metadata (dbz.transaction): a job with transactions =>
# 'source' applies transfers between accounts (dbz_acct, and half of them logged in dbz_xfer too) while a
# reader polls its targets: no poll may see a state that breaks the source's per-transaction invariants,
# not even while Debezium sends part of the stream again after Connect's SIGKILL (eoingest skips it).
# A fifth job keeps dbz_b's history (cdc_mode => 'history') in dbz_b_hist: the last change of each key
# since the last truncate is the source's row, and no change is there twice. A sixth keeps dbz_a with
# soft deletes (cdc_mode => 'soft_delete') in dbz_a_soft: its rows not marked deleted are the source's, and
# no row marked deleted is in the source.
# A seventh job, dbz_c, creates its targets: target => 'dbz_auto.${source.table}' with create_target and
# schema_changes => 'widen' over dbz_a and dbz_e, whose source gains a column and widens another mid-stream:
# the tables are made from Debezium's schemas, keyed by its key schemas, evolved in the batches' transactions
# while the workers are SIGKILLed, and at the end hold every row of the source.
# EOINGEST_LONG=1: a longer workload ($DBZ_SECONDS) with more kills.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

DBZ_SRC_PORT=${DBZ_SRC_PORT:-25435}
if [ "${EOINGEST_LONG:-0}" = 1 ]; then
  DBZ_SECONDS=${DBZ_SECONDS:-150} DBZ_KILLS=${DBZ_KILLS:-10}
else
  DBZ_SECONDS=${DBZ_SECONDS:-30} DBZ_KILLS=${DBZ_KILLS:-4}
fi
DBZ_RATE=${DBZ_RATE:-40}   # pgbench transactions per second
work=$EOINGEST_TEST_DIR/debezium
run=$EOINGEST_RUN/debezium
srcdata=$EOINGEST_RUN/dbz-srcdata
srclog=$EOINGEST_RUN/dbz-src.log
# Kafka Connect's config, log and source offsets: this run's own, removed at the start.
export CONNECT_DIR=$run/connect

src_pg() {
  EOINGEST_PG_DATA=$srcdata EOINGEST_PG_LOG=$srclog PGPORT=$DBZ_SRC_PORT EOINGEST_PRELOAD= \
    EOINGEST_PG_EXTRA_CONF="listen_addresses = '127.0.0.1'
wal_level = logical
max_wal_senders = 4
max_replication_slots = 4" "$EOINGEST_TEST_DIR/pg.sh" "$@"
}
src() { sql "$1" -p "$DBZ_SRC_PORT"; }

cleanup() {
  "$EOINGEST_TEST_DIR/connect.sh" stop >/dev/null 2>&1 || true
  src_pg stop-immediate >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM

"$EOINGEST_TEST_DIR/connect.sh" fetch debezium-postgres >/dev/null
plan 46

# ---- the source: a fresh cluster with wal_level = logical, the tables, a publication, a snapshot's worth of rows
src_pg stop-immediate >/dev/null 2>&1 || true
rm -rf "$srcdata" "$run"
mkdir -p "$run"
src_pg start >/dev/null
src - <"$work/schema.sql" >/dev/null
src - <"$work/source.sql" >/dev/null
src "ALTER TABLE dbz_b REPLICA IDENTITY FULL;
     CREATE TABLE dbz_e (id int PRIMARY KEY, n int, label text);
     INSERT INTO dbz_e SELECT i, i, 'snapshot' FROM generate_series(1, 20) AS i;
     CREATE PUBLICATION dbz_pub FOR TABLE dbz_a, dbz_b, dbz_t, dbz_acct, dbz_xfer, dbz_e;
     INSERT INTO dbz_acct SELECT i, 1000 FROM generate_series(1, 10) AS i;
     INSERT INTO dbz_a SELECT * FROM dbz_rows(1, 300);
     INSERT INTO dbz_b SELECT * FROM dbz_rows(1, 300);
     INSERT INTO dbz_t SELECT i, dbz_big(), 0 FROM generate_series(1, 3) AS i" >/dev/null

# ---- the target, the topics and the jobs
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "DROP TABLE IF EXISTS dbz_a, dbz_b, dbz_t, dbz_a_plain, dbz_acct, dbz_xfer, dbz_b_hist, dbz_a_soft CASCADE; DROP TYPE IF EXISTS dbz_mood;
     DROP SCHEMA IF EXISTS dbz_auto CASCADE; CREATE SCHEMA dbz_auto" >/dev/null 2>&1
sql - <"$work/schema.sql" >/dev/null
sql "CREATE TABLE dbz_a_plain (LIKE dbz_a INCLUDING ALL)" >/dev/null
# dbz_b's change log, and the rows it says dbz_b holds now: each key's last change after the last truncate
sql "CREATE TABLE dbz_b_hist (LIKE dbz_a, __op text, __source_ts timestamptz, __source_lsn pg_lsn, __topic text,
       __partition int, __offset bigint);
     ALTER TABLE dbz_b_hist ALTER COLUMN id DROP NOT NULL;
     CREATE VIEW dbz_b_hist_now AS
       SELECT id, amount, big, ts, ts0, d, t, u, j, b, ints, texts, m, f8, flag, note
         FROM (SELECT DISTINCT ON (id) * FROM dbz_b_hist
                WHERE __offset > coalesce((SELECT max(__offset) FROM dbz_b_hist WHERE __op = 't'), -1)
                ORDER BY id, __offset DESC) last
        WHERE __op <> 'd';
     CREATE TABLE dbz_a_soft (LIKE dbz_a INCLUDING ALL, __deleted boolean NOT NULL DEFAULT false);
     CREATE VIEW dbz_a_soft_now AS
       SELECT id, amount, big, ts, ts0, d, t, u, j, b, ints, texts, m, f8, flag, note FROM dbz_a_soft WHERE NOT __deleted" >/dev/null
eoi-kafka create-topic dbz.public.dbz_a 3 >/dev/null
eoi-kafka create-topic dbz.public.dbz_b 1 >/dev/null
eoi-kafka create-topic dbz.public.dbz_t 1 >/dev/null
eoi-kafka create-topic dbzp.public.dbz_a 3 >/dev/null
# the transaction topic: one partition (its ENDs in commit order)
eoi-kafka create-topic dbz.transaction 1 >/dev/null
eoi-kafka create-topic dbz.public.dbz_acct 3 >/dev/null
eoi-kafka create-topic dbz.public.dbz_xfer 1 >/dev/null
eoi-kafka create-topic dbz.public.dbz_e 1 >/dev/null
sql "SELECT eoingest.create_job(name => 'dbz_a', brokers => '$KAFKA_BROKERS', topic => 'dbz.public.dbz_a',
        target => 'dbz_a', format => 'json', envelope => 'debezium', on_error => 'fail',
        batch_size => 200, batch_timeout_ms => 200);
     SELECT eoingest.create_job(name => 'dbz_b', brokers => '$KAFKA_BROKERS', topic => 'dbz.public.dbz_b',
        target => 'dbz_b', format => 'json', envelope => 'debezium', on_error => 'fail', mode => 'two_phase',
        on_truncate => 'truncate', batch_size => 200, batch_timeout_ms => 200);
     SELECT eoingest.create_job(name => 'dbz_t', brokers => '$KAFKA_BROKERS', topic => 'dbz.public.dbz_t',
        target => 'dbz_t', format => 'json', envelope => 'debezium', batch_timeout_ms => 200);
     SELECT eoingest.create_job(name => 'dbz_p', brokers => '$KAFKA_BROKERS', topic => 'dbzp.public.dbz_a',
        target => 'dbz_a_plain', format => 'json', envelope => 'debezium', on_error => 'fail', mode => 'upsert',
        batch_size => 200, batch_timeout_ms => 200, offset_commit_interval_ms => 200);
     SELECT eoingest.create_job(name => 'dbz_x', brokers => '$KAFKA_BROKERS',
        topic => 'dbz.transaction, dbz.public.dbz_acct, dbz.public.dbz_xfer', format => 'json', envelope => 'debezium',
        transactions => 'source', targets => '{\"public.dbz_acct\": \"dbz_acct\", \"public.dbz_xfer\": \"dbz_xfer\"}',
        on_error => 'fail', batch_size => 50, batch_timeout_ms => 100);
     SELECT eoingest.create_job(name => 'dbz_h', brokers => '$KAFKA_BROKERS', topic => 'dbz.public.dbz_b',
        target => 'dbz_b_hist', format => 'json', envelope => 'debezium', cdc_mode => 'history', on_error => 'fail',
        batch_size => 200, batch_timeout_ms => 200);
     SELECT eoingest.create_job(name => 'dbz_s', brokers => '$KAFKA_BROKERS', topic => 'dbz.public.dbz_a',
        target => 'dbz_a_soft', format => 'json', envelope => 'debezium', cdc_mode => 'soft_delete', on_error => 'fail',
        batch_size => 200, batch_timeout_ms => 200);
     SELECT eoingest.create_job(name => 'dbz_c', brokers => '$KAFKA_BROKERS', topic => 'dbz.public.dbz_a, dbz.public.dbz_e',
        target => 'dbz_auto.\${source.table}', format => 'json', envelope => 'debezium', create_target => true,
        schema_changes => 'widen', on_error => 'fail', batch_size => 200, batch_timeout_ms => 200);
     SELECT eoingest.start_job('dbz_c');
     SELECT eoingest.start_job('dbz_x'); SELECT eoingest.start_job('dbz_h'); SELECT eoingest.start_job('dbz_s');
     SELECT eoingest.start_job('dbz_a'); SELECT eoingest.start_job('dbz_b'); SELECT eoingest.start_job('dbz_t');
     SELECT eoingest.start_job('dbz_p')" >/dev/null

# ---- Debezium: the snapshot, then the stream
sed "s/@PORT@/$DBZ_SRC_PORT/" "$work/connector.properties.in" >"$run/connector.properties"
sed "s/@PORT@/$DBZ_SRC_PORT/" "$work/connector-plain.properties.in" >"$run/connector-plain.properties"
started=$SECONDS
CONNECT_PLUGIN_NAMES=debezium-postgres "$EOINGEST_TEST_DIR/connect.sh" start "$run/connector.properties" "$run/connector-plain.properties" >/dev/null
diag "kafka connect and the connector running after $((SECONDS - started)) s"
check "the snapshot arrives" wait_until 120 "SELECT (SELECT count(*) FROM dbz_a) = 300 AND (SELECT count(*) FROM dbz_b) = 300 AND (SELECT count(*) FROM dbz_t) = 3 AND (SELECT count(*) FROM dbz_a_plain) = 300
  AND (SELECT count(*) FROM dbz_acct) = 10
  AND to_regclass('dbz_auto.dbz_a') IS NOT NULL AND (SELECT count(*) FROM dbz_auto.dbz_a) = 300
  AND to_regclass('dbz_auto.dbz_e') IS NOT NULL AND (SELECT count(*) FROM dbz_auto.dbz_e) = 20"

# A reader of dbz_x's targets: polls for SECS seconds, each poll a new snapshot; prints the polls, those that
# broke an invariant (the balances' sum not 10,000, or sum(xfers) not the rows of dbz_xfer), the states seen.
sql "CREATE OR REPLACE FUNCTION dbz_x_reader(secs float8) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE polls int := 0; broken int := 0; total bigint; counted bigint; logged bigint; states bigint[] := '{}';
        deadline timestamptz := clock_timestamp() + secs * interval '1 second';
BEGIN
  WHILE clock_timestamp() < deadline LOOP
    SELECT sum(balance), sum(xfers), (SELECT count(*) FROM dbz_xfer) INTO total, counted, logged FROM dbz_acct;
    polls := polls + 1;
    IF total IS DISTINCT FROM 10000 OR counted IS DISTINCT FROM logged THEN broken := broken + 1; END IF;
    IF NOT logged = ANY (states) THEN states := states || logged; END IF;
    PERFORM pg_sleep(0.02);
  END LOOP;
  RETURN polls || ' ' || broken || ' ' || cardinality(states);
END \$\$" >/dev/null

# ---- the workload, with kills, a restart of the target and a truncate
pgbench -n -p "$DBZ_SRC_PORT" -c 1 -R "$DBZ_RATE" -T "$DBZ_SECONDS" -f "$work/work.pgbench" postgres \
  >"$run/pgbench.out" 2>&1 &
bench=$!
# the reader, in one-second rounds (a round cut short by a kill's crash restart or the restart is retried)
# A round that ends after Kafka Connect's SIGKILL ($run/connect-killed) counts apart: see below.
x_reader() {
  local polls=0 broken=0 states=0 apolls=0 abroken=0 p b s
  while kill -0 "$bench" 2>/dev/null; do
    if read -r p b s < <(sql "SELECT dbz_x_reader(1)" 2>/dev/null) && [ -n "$s" ]; then
      if [ -f "$run/connect-killed" ]; then
        apolls=$((apolls + p)) abroken=$((abroken + b))
      else
        polls=$((polls + p)) broken=$((broken + b))
      fi
      states=$((states + s - 1))
    else
      sleep 0.5
    fi
  done
  echo "$polls $broken $states $apolls $abroken"
}
rm -f "$run/connect-killed"
x_reader >"$run/x_reader" &
reader=$!
workers_back() {
  wait_until 60 "SELECT count(*) = 5 FROM eoingest.job_status WHERE name IN ('dbz_a', 'dbz_b', 'dbz_p', 'dbz_x', 'dbz_c') AND pid IS NOT NULL" || true
}
# flushed_offsets: wait for Kafka Connect's next flush of its offsets file (every second), then copy it
# to $run/offsets.flushed, a moment before the next.
flushed_offsets() {
  local before deadline=$((SECONDS + 10))
  before=$(stat -c '%y %s' "$CONNECT_DIR/offsets.dat" 2>/dev/null || echo none)
  while [ "$(stat -c '%y %s' "$CONNECT_DIR/offsets.dat" 2>/dev/null || echo none)" = "$before" ] && [ $SECONDS -lt $deadline ]; do
    sleep 0.02
  done
  sleep 0.05
  cp "$CONNECT_DIR/offsets.dat" "$run/offsets.flushed"
}
killed=0
xkilled=0
restarted=0
truncated=0
connect_killed=0
for ((k = 1; k <= DBZ_KILLS; k++)); do
  sleep $((DBZ_SECONDS / (DBZ_KILLS + 2))).$((RANDOM % 10))
  for row in $(sql "SELECT name || ':' || pid FROM eoingest.job_status WHERE name IN ('dbz_a', 'dbz_b', 'dbz_p', 'dbz_x', 'dbz_c') AND pid IS NOT NULL" 2>/dev/null || true); do
    kill -9 "${row#*:}" 2>/dev/null && killed=$((killed + 1)) && { [ "${row%%:*}" != dbz_x ] || xkilled=$((xkilled + 1)); }
  done
  workers_back
  # dbz_e: changes under its first schema, then a new column and a wider one, and changes under those
  case $k in
    1) src "INSERT INTO dbz_e SELECT i, i, 'one' FROM generate_series(21, 60) AS i;
            UPDATE dbz_e SET label = 'updated' WHERE id % 3 = 0; DELETE FROM dbz_e WHERE id % 7 = 0" >/dev/null ;;
    2) src "BEGIN; ALTER TABLE dbz_e ADD COLUMN extra text, ALTER COLUMN n TYPE bigint;
            INSERT INTO dbz_e SELECT i, i * 10000000000, 'two', 'x' || i FROM generate_series(61, 100) AS i;
            UPDATE dbz_e SET extra = 'set', n = n + 5000000000 WHERE id % 4 = 0; DELETE FROM dbz_e WHERE id % 11 = 0; COMMIT" >/dev/null ;;
  esac
  if [ "$k" -eq $((DBZ_KILLS - 1)) ]; then
    # Kafka Connect SIGKILLed in the middle of the stream: Debezium starts again from the source
    # offsets it last flushed (every second), so it sends part of the stream again, transactions
    # (BEGIN, events, END) included, some of which were cut short by the kill.
    # The standalone worker writes its offsets file in place (no rename) and reads a file a kill cut
    # short as no offsets at all: Debezium then takes a new snapshot, and deletes in between are lost to
    # every sink. So the kill comes just after a flush, and Connect gets back that flush's offsets, as a
    # crash-safe store (the distributed worker's offsets topic) would give them.
    touch "$run/connect-killed"
    flushed_offsets
    "$EOINGEST_TEST_DIR/connect.sh" kill >/dev/null 2>&1 || true
    cmp -s "$run/offsets.flushed" "$CONNECT_DIR/offsets.dat" ||
      { diag "Kafka Connect's offsets file changed under the kill: the flushed one is put back"; cp "$run/offsets.flushed" "$CONNECT_DIR/offsets.dat"; }
    CONNECT_PLUGIN_NAMES=debezium-postgres "$EOINGEST_TEST_DIR/connect.sh" start \
      "$run/connector.properties" "$run/connector-plain.properties" >/dev/null && connect_killed=1
  fi
  if [ "$k" -eq $((DBZ_KILLS / 2)) ]; then
    src "TRUNCATE dbz_b" >/dev/null && truncated=1
    # Only once the server is out of the crash recovery of the kill: a fast shutdown that arrives
    # during it was seen to hang for a minute (PostgreSQL 15).
    "$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null && restarted=1
    workers_back
  fi
done
bench_status=0
wait "$bench" || bench_status=$?
wait "$reader"
ok "$bench_status" "the workload ran (pgbench: $(grep -E 'number of transactions actually processed' "$run/pgbench.out" || tail -n 3 "$run/pgbench.out"))"
# (four workers a round; one may not be back yet when the next round comes)
ok $([ "$killed" -ge $((3 * DBZ_KILLS)) ] && [ "$xkilled" -ge $((DBZ_KILLS - 1)) ] && echo 0 || echo 1) \
  "workers SIGKILLed $killed times in $DBZ_KILLS rounds (dbz_x's $xkilled times)"
ok $([ "$restarted" = 1 ] && [ "$truncated" = 1 ] && echo 0 || echo 1) "the target restarted once and dbz_b was truncated"
ok $([ "$connect_killed" = 1 ] && echo 0 || echo 1) "Kafka Connect was SIGKILLed once and started again"
read -r xpolls xbroken xstates apolls abroken <"$run/x_reader"
diag "dbz_x reader: $xpolls polls, $xbroken broke an invariant, $xstates changes of dbz_xfer's row count seen within rounds"
is "$xbroken" 0 "dbz_x (transactions => 'source'): no poll of the targets saw part of a source transaction"
# After Connect's SIGKILL, Debezium sends again what followed its last flushed source offset (every
# second): eoingest must skip what it applied already (by source.sequence), so that no reader sees
# rows of replayed, older transactions beside newer ones (README, "A crash of Kafka Connect").
is "$abroken" 0 "dbz_x after Kafka Connect's SIGKILL: none of $apolls polls saw a state the source never had"
skipped=$(sql "SELECT string_agg(job || ' ' || n, ', ' ORDER BY job) FROM (SELECT job, sum(replays_skipped) AS n FROM eoingest.offsets WHERE job LIKE 'dbz\_%' GROUP BY job) s")
diag "change events skipped as sent again: $skipped"
# Whether Debezium sends again events of dbz_x's tables depends on when Connect last flushed its source
# offsets before the kill: a run where it sent again only other tables' events says so as a skip; one
# where it sent nothing again at all fails (the SIGKILL did not set up the scenario).
x_skipped=$(sql "SELECT sum(replays_skipped) FROM eoingest.offsets WHERE job = 'dbz_x'")
all_skipped=$(sql "SELECT sum(replays_skipped) FROM eoingest.offsets WHERE job LIKE 'dbz\_%'")
if [ "$x_skipped" -gt 0 ]; then
  ok 0 "dbz_x skipped change events Debezium sent again after the SIGKILL"
elif [ "$all_skipped" -gt 0 ]; then
  ok 0 "dbz_x skipped change events Debezium sent again after the SIGKILL # skip Debezium sent again only other tables' events in this run"
else
  ok 1 "dbz_x skipped change events Debezium sent again after the SIGKILL (Debezium sent nothing again)"
fi
check "dbz_x: the reader saw the targets move ($xstates changes in $xpolls polls)" test "$xstates" -ge 20

# ---- the workload did what it should
stats=$(src "SELECT string_agg(tbl || ' ' || op || ' ' || n, ', ' ORDER BY tbl, op) FROM dbz_stats")
diag "source changes: $stats"
is "$(src "SELECT count(*) FROM dbz_stats WHERE n >= 20")" 8 \
  "each table had at least 20 inserts, updates, key changes and deletes"
ok $([ "$(src "SELECT count(*) FROM dbz_a")" -ge 300 ] && [ "$(src "SELECT count(*) FROM dbz_b")" -ge 50 ] && echo 0 || echo 1) \
  "the source tables are not empty ($(src "SELECT (SELECT count(*) FROM dbz_a) || ' and ' || (SELECT count(*) FROM dbz_b)") rows)"
is "$(src "SELECT count(*) FROM dbz_b WHERE id < 1000000")" 0 "dbz_b holds only rows inserted after the truncate"

# dbz_t (replica identity default): two updates that leave the TOASTed value unchanged, whose after image
# has Debezium's placeholder instead of it, and one that changes it.
src "UPDATE dbz_t SET n = 1 WHERE id <= 2; UPDATE dbz_t SET big = dbz_big(), n = 2 WHERE id = 3" >/dev/null

# ---- catch-up: the source's last transaction is a fence row; Debezium streams in commit order
src "BEGIN; INSERT INTO dbz_t VALUES (100, 'fence', 0); INSERT INTO dbz_a SELECT * FROM dbz_rows(2000000000, 1);
     INSERT INTO dbz_e VALUES (1000000, 1, 'fence', 'fence'); COMMIT" >/dev/null
check "the source's last change arrives" wait_until 180 "SELECT (SELECT count(*) FROM dbz_t WHERE id = 100) = 1
  AND (SELECT count(*) FROM dbz_a WHERE id = 2000000000) = 1 AND (SELECT count(*) FROM dbz_a_plain WHERE id = 2000000000) = 1"

# offsets_at_end JOB TOPIC...: a query, true when JOB's stored offsets are the log ends of every partition
offsets_at_end() {
  local job=$1 topic
  shift
  for topic in "$@"; do
    eoi-kafka watermarks "$topic" | awk -v t="$topic" '{printf "(%s, %d, %d),", "\x27" t "\x27", $1, $3}'
  done | sed 's/,$//' |
    { read -r v; echo "SELECT count(*) = (SELECT count(*) FROM eoingest.offsets WHERE job = '$job')
         AND bool_and(o.next_offset = w.high) FROM (VALUES $v) AS w(t, p, high)
         JOIN eoingest.offsets o ON o.job = '$job' AND o.topic = w.t AND o.partition = w.p"; }
}
check "dbz_a's offsets reach the log end of every partition" wait_until 180 "$(offsets_at_end dbz_a dbz.public.dbz_a)"
check "dbz_b's offsets reach the log end" wait_until 180 "$(offsets_at_end dbz_b dbz.public.dbz_b)"
check "dbz_t's offsets reach the log end" wait_until 60 "$(offsets_at_end dbz_t dbz.public.dbz_t)"
check "dbz_p's offsets reach the log end of every partition" wait_until 180 "$(offsets_at_end dbz_p dbzp.public.dbz_a)"
check "dbz_h's offsets reach the log end" wait_until 180 "$(offsets_at_end dbz_h dbz.public.dbz_b)"
check "dbz_s's offsets reach the log end of every partition" wait_until 180 "$(offsets_at_end dbz_s dbz.public.dbz_a)"
check "dbz_c's offsets reach the log end of every partition of its two topics" wait_until 180 \
  "$(offsets_at_end dbz_c dbz.public.dbz_a dbz.public.dbz_e)"
is "$(sql "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
             FROM pg_attribute WHERE attrelid = 'dbz_auto.dbz_e'::regclass AND attnum > 0")
$(sql "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'dbz_auto.dbz_e'::regclass AND contype = 'p'")
$(sql "SELECT string_agg(target || ' ' || split_part(statement, ' ', 1), ', ' ORDER BY id) FROM eoingest.target_changes
        WHERE job_id = (SELECT id FROM eoingest.jobs WHERE name = 'dbz_c')")" \
  "id integer, n bigint, label text, extra text
PRIMARY KEY (id)
dbz_auto.dbz_a CREATE, dbz_auto.dbz_e CREATE, dbz_auto.dbz_e ALTER" \
  "dbz_c: its targets created from Debezium's schemas and keyed by its key schemas; dbz_e's new column added and n widened, in one ALTER TABLE recorded once"
is "$(sql "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
             FROM pg_attribute WHERE attrelid = 'dbz_auto.dbz_a'::regclass AND attnum > 0")" \
  "id integer, amount numeric(12,2), big numeric, ts timestamp with time zone, ts0 timestamp without time zone, d date, t time without time zone, u uuid, j jsonb, b bytea, ints integer[], texts text[], m text, f8 double precision, flag boolean, note text" \
  "dbz_c: dbz_a's copy has the column types of the source's, from Debezium's schema (an enum as text)"
check "dbz_x's offsets reach the log end of every partition of its three topics" wait_until 180 \
  "$(offsets_at_end dbz_x dbz.transaction dbz.public.dbz_acct dbz.public.dbz_xfer)"
is "$(sql "SELECT count(*) FROM dbz_t WHERE big = '__debezium_unavailable_value'")" 0 \
  "dbz_t: no row holds Debezium's placeholder for an unchanged TOASTed value"
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'dbz_t'") $(sql "SELECT sum(unchanged_nulled) FROM eoingest.offsets WHERE job = 'dbz_t'") $(sql "SELECT string_agg(id || ':' || n || ':' || md5(big), ',' ORDER BY id) FROM dbz_t")" \
  "0 0 $(src "SELECT string_agg(id || ':' || n || ':' || md5(big), ',' ORDER BY id) FROM dbz_t")" \
  "dbz_t: the two updates that leave the TOASTed value unchanged keep it; the copy is the source, no dead letter"

failed=$(sql "SELECT string_agg(name || ': ' || coalesce(last_error, ''), '; ') FROM eoingest.job_status WHERE name IN ('dbz_a', 'dbz_b', 'dbz_t', 'dbz_p', 'dbz_x', 'dbz_h', 'dbz_s', 'dbz_c') AND state = 'failed'")
[ -z "$failed" ] || diag "failed: $failed"

# ---- every column of every row

# explain_difference TABLE: for a failed comparison, the change events of the first ids that differ, as
# Kafka holds them (partition, offset, op, source sequence and commit time), and the server's lines on
# events skipped as sent again or applied as a new history.
explain_difference() {
  local tbl=$1 topic id
  case "$tbl" in
    dbz_a_plain) topic=dbzp.public.dbz_a ;;
    dbz_b_hist_now) topic=dbz.public.dbz_b ;;
    dbz_a_soft_now) topic=dbz.public.dbz_a ;;
    dbz_auto.*) topic=dbz.public.${tbl#dbz_auto.} ;;
    *) topic=dbz.public.$tbl ;;
  esac
  [ -f "$run/$topic.events" ] ||
    timeout 60 kcat -b "$KAFKA_BROKERS" -C -t "$topic" -e -q -f '%p %o %s\n' 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    p, o, v = (line.rstrip("\n").split(" ", 2) + [""])[:3]
    try:
        e = json.loads(v)
    except ValueError:
        continue
    e = e.get("payload", e) or {}
    s = e.get("source") or {}
    for img in ("before", "after"):
        if e.get(img):
            print(e[img].get("id"), img, "p%s@%s" % (p, o), e.get("op"), s.get("sequence"), s.get("ts_ms"), s.get("txId"))
' >"$run/$topic.events" || true
  for id in $(comm -3 "$run/$tbl.source" "$run/$tbl.target" | awk '{print $1}' | sort -u | head -n 3); do
    diag "$tbl: events of id $id in $topic: $(awk -v id="$id" '$1 == id' "$run/$topic.events" | tr '\n' ';')"
  done
  diag "$(grep -E 'sent again|new history|as they came' -A1 "$EOINGEST_RUN/pg.log" | grep -v '^--' | tail -n 30)"
}
dump() {
  local tbl=$1
  shift
  PGTZ=UTC psql -XAtq -v ON_ERROR_STOP=1 "$@" -c "COPY (SELECT * FROM $tbl ORDER BY id) TO STDOUT"
}
for pair in dbz_a:dbz_a dbz_b:dbz_b dbz_a:dbz_a_plain dbz_acct:dbz_acct dbz_xfer:dbz_xfer dbz_b:dbz_b_hist_now dbz_a:dbz_a_soft_now \
            dbz_a:dbz_auto.dbz_a dbz_e:dbz_auto.dbz_e; do
  tbl=${pair#*:}
  dump "${pair%%:*}" -p "$DBZ_SRC_PORT" | sort >"$run/$tbl.source"
  dump "$tbl" | sort >"$run/$tbl.target"
  only_src=$(comm -23 "$run/$tbl.source" "$run/$tbl.target" | wc -l)
  only_tgt=$(comm -13 "$run/$tbl.source" "$run/$tbl.target" | wc -l)
  if [ "$only_src$only_tgt" != 00 ]; then
    diag "$(diff "$run/$tbl.source" "$run/$tbl.target" | head -n 20)"
    explain_difference "$tbl"
  fi
  is "$only_src" 0 "$tbl: source EXCEPT target is empty ($(wc -l <"$run/$tbl.source") rows)"
  is "$only_tgt" 0 "$tbl: target EXCEPT source is empty"
done
dups=$(sql "SELECT string_agg(__op || ' ' || coalesce(id::text, '-') || ' at ' || __source_lsn || ': offsets ' || offsets, '; ')
             FROM (SELECT __op, id, __source_lsn, string_agg(__offset::text, ',' ORDER BY __offset) offsets FROM dbz_b_hist
                    GROUP BY __source_lsn, __op, id HAVING count(*) > 1) x")
[ -z "$dups" ] || diag "dbz_b_hist twice: $dups"
is "$(sql "SELECT count(*) FROM (SELECT FROM dbz_b_hist GROUP BY __source_lsn, __op, id HAVING count(*) > 1) x")" 0 \
  "dbz_b_hist: no change twice, though the workers were killed and Debezium sent part of the stream again ($(sql "SELECT string_agg(__op || ' ' || n, ', ' ORDER BY __op) FROM (SELECT __op, count(*) n FROM dbz_b_hist GROUP BY 1) x"))"
is "$(sql "SELECT count(*) FILTER (WHERE __deleted) > 0 AND count(*) FILTER (WHERE __deleted AND id IN (SELECT id FROM dbz_a)) = 0 FROM dbz_a_soft")" t \
  "dbz_a_soft: rows marked deleted ($(sql "SELECT count(*) FROM dbz_a_soft WHERE __deleted")), none of them in the source"
states=$(sql "SELECT string_agg(DISTINCT state, ',') FROM eoingest.job_status WHERE name IN ('dbz_a', 'dbz_b', 'dbz_p', 'dbz_x', 'dbz_h', 'dbz_s', 'dbz_c')")
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job IN ('dbz_a', 'dbz_b', 'dbz_p', 'dbz_x', 'dbz_h', 'dbz_s', 'dbz_c')") $states" \
  "0 running" "no dead letters, the seven jobs running"
[ "$states" = running ] ||
  diag "$(sql "SELECT name || ' ' || worker || ' ' || state || ': ' || coalesce(last_error, '') FROM eoingest.job_status
               WHERE name IN ('dbz_a', 'dbz_b', 'dbz_p', 'dbz_x', 'dbz_h', 'dbz_s', 'dbz_c') AND state <> 'running'")"

diag "48-debezium: $((SECONDS)) s in all"
sql "SELECT eoingest.drop_job('dbz_a'); SELECT eoingest.drop_job('dbz_b'); SELECT eoingest.drop_job('dbz_t'); SELECT eoingest.drop_job('dbz_p'); SELECT eoingest.drop_job('dbz_x'); SELECT eoingest.drop_job('dbz_h'); SELECT eoingest.drop_job('dbz_s'); SELECT eoingest.drop_job('dbz_c')" >/dev/null
sql "DROP TABLE dbz_a, dbz_b, dbz_t, dbz_a_plain, dbz_acct, dbz_xfer, dbz_b_hist, dbz_a_soft CASCADE; DROP TYPE dbz_mood; DROP FUNCTION dbz_x_reader(float8);
     DROP SCHEMA dbz_auto CASCADE" >/dev/null 2>&1
done_testing
