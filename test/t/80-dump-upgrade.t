#!/usr/bin/env bash
# Dump and restore into a new server (other role OIDs), then resume without
# loss or duplicate; and ALTER EXTENSION UPDATE from the first version.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 11
topic=dump_$$
eoi-kafka create-topic "$topic" 3 >/dev/null
eoi-kafka produce-seq "$topic" --count 10000 --format csv >/dev/null

# --- upgrade: install 0.1, create a job, update to the current version ------
sql "DROP EXTENSION IF EXISTS eoingest CASCADE" >/dev/null 2>&1
sql "CREATE EXTENSION eoingest VERSION '0.1'" >/dev/null
sql "CREATE TABLE up_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'up', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'up_t')" >/dev/null
sql "ALTER EXTENSION eoingest UPDATE" >/dev/null
is "$(sql "SELECT extversion FROM pg_extension WHERE extname = 'eoingest'")" "$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$EOINGEST_REPO/eoingest.control")" \
  "ALTER EXTENSION eoingest UPDATE walks from 0.1 to the current version"
sql "SELECT eoingest.start_job('up')" >/dev/null
is "$(sql "SELECT eoingest.wait_for_catchup('up', '60 s')")" t "a job created before the update runs after it"
is "$(sql "SELECT count(*) FROM up_t")" 10000 "with its data"
sql "SELECT eoingest.drop_job('up'); DROP TABLE up_t" >/dev/null

# --- dump on this server ----------------------------------------------------
sql "CREATE ROLE eoi_dump_owner LOGIN; GRANT USAGE ON SCHEMA eoingest TO eoi_dump_owner;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.start_job TO eoi_dump_owner;
     CREATE TABLE dump_t (id text, ts bigint, temperature double precision);
     GRANT INSERT, SELECT ON dump_t TO eoi_dump_owner" >/dev/null
psql -XAtq -v ON_ERROR_STOP=1 -U eoi_dump_owner -c "SELECT eoingest.create_job(name => 'dumped', brokers => '$KAFKA_BROKERS',
   topic => '$topic', target => 'dump_t', batch_size => 1000)" -c "SELECT eoingest.start_job('dumped')" >/dev/null
is "$(sql "SELECT eoingest.wait_for_catchup('dumped', '60 s')")" t "the job catches up on the first server"
sql "SELECT eoingest.stop_job('dumped')" >/dev/null
wait_until 30 "SELECT state = 'stopped' FROM eoingest.job_status WHERE name = 'dumped'" >/dev/null
dump=$EOINGEST_RUN/dump.pgc
check "pg_dump of the database with the jobs and offsets" pg_dump -Fc -f "$dump" postgres

# --- restore on a new server, with other role OIDs -----------------------------
(
  export EOINGEST_RUN=$EOINGEST_RUN/second PGPORT=$((PGPORT + 1))
  export PGHOST=$EOINGEST_RUN/pgsock PGDATA=$EOINGEST_RUN/pgdata
  [ -f "$PGDATA/PG_VERSION" ] && { "$EOINGEST_TEST_DIR/pg.sh" stop-immediate >/dev/null 2>&1 || true; }
  rm -rf "$EOINGEST_RUN"
  mkdir -p "$EOINGEST_RUN" && chmod 755 "$EOINGEST_RUN"
  "$EOINGEST_TEST_DIR/pg.sh" init >/dev/null && "$EOINGEST_TEST_DIR/pg.sh" start >/dev/null
  psql -XAtq -c "CREATE ROLE eoi_other_role; CREATE ROLE eoi_dump_owner LOGIN" >/dev/null
  pg_restore -d postgres "$dump" 2>"$EOINGEST_RUN/restore.err" || true
  echo "restored $(psql -XAtq -c "SELECT count(*) FROM eoingest.jobs WHERE name = 'dumped' AND owner = 'eoi_dump_owner'::regrole")"
  echo "offsets $(psql -XAtq -c "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'dumped'")"
  eoi-kafka produce-seq "$topic" --count 5000 --start 10000 --format csv >/dev/null
  psql -XAtq -c "SELECT eoingest.start_job('dumped')" >/dev/null
  echo "caughtup $(psql -XAtq -c "SELECT eoingest.wait_for_catchup('dumped', '60 s')")"
  echo "rows $(psql -XAtq -c "SELECT count(*) || ' ' || count(DISTINCT ts) FROM dump_t")"
  "$EOINGEST_TEST_DIR/pg.sh" stop >/dev/null
) >"$EOINGEST_RUN/second.out" 2>&1 || true
out=$(cat "$EOINGEST_RUN/second.out")
case "$out" in *"restored 1"*) ok 0 "job definitions survive pg_restore, owned by the role of the same name";; *) ok 1 "job definitions survive pg_restore"; diag "$out";; esac
case "$out" in *"offsets 10000"*) ok 0 "and so do the offsets";; *) ok 1 "and so do the offsets"; diag "$out";; esac
case "$out" in *"caughtup t"*) ok 0 "the restored job resumes";; *) ok 1 "the restored job resumes"; diag "$out";; esac
case "$out" in *"rows 15000 15000"*) ok 0 "without loss or duplicate";; *) ok 1 "without loss or duplicate"; diag "$out";; esac

sql "SELECT eoingest.drop_job('dumped'); DROP TABLE dump_t; DROP OWNED BY eoi_dump_owner; DROP ROLE eoi_dump_owner" >/dev/null 2>&1 || true

# --- Kafka's tools see the job: commit_to_kafka, and the rate -----------------
sql "CREATE TABLE seen_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'seen', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'seen_t',
                                commit_to_kafka => true);
     SELECT eoingest.start_job('seen')" >/dev/null
sql "SELECT eoingest.wait_for_catchup('seen', '60 s')" >/dev/null
end=$(log_end() { eoi-kafka watermarks "$1" | awk '{n += $3} END {print n}'; }; log_end "$topic")
deadline=$((SECONDS + 30))
until [ "$(eoi-kafka committed eoingest.seen "$topic" | awk '{n += $2} END {print n}')" = "$end" ] || [ $SECONDS -ge $deadline ]; do sleep 0.5; done
is "$(eoi-kafka committed eoingest.seen "$topic" | awk '{n += $2} END {print n}')" "$end" \
  "commit_to_kafka: the consumer group eoingest.<job> shows the committed offsets"
is "$(sql "SELECT messages_per_second > 0 FROM eoingest.job_status WHERE name = 'seen'")" t "job_status shows the rate over the last minute"
sql "SELECT eoingest.drop_job('seen'); DROP TABLE seen_t" >/dev/null
done_testing
