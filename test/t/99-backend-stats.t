#!/usr/bin/env bash
# PostgreSQL 18 keeps I/O and WAL statistics per backend
# (pg_stat_get_backend_io, pg_stat_get_backend_wal): a job's worker is a
# backend like any other there, so joining job_status' pid gives what each
# worker wrote and read, the query docs/monitoring shows. Skipped before 18.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

if [ "$(sql "SHOW server_version_num")" -lt 180000 ]; then
  skip_all "per-backend I/O and WAL statistics need PostgreSQL 18"
fi

plan 4
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=bst_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka produce-seq "$topic" --count 20000 --format csv >/dev/null
sql "CREATE TABLE bst_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'bst', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'bst_t',
            batch_timeout_ms => 100);
     SELECT eoingest.start_job('bst')" >/dev/null
check "the job ingests its records" wait_until 60 "SELECT count(*) = 20000 FROM bst_t"

# A backend's statistics are flushed at most once a second, after a commit.
check "the worker's WAL: at least the rows' bytes (a record per page of rows: heap multi-insert)" wait_until 30 \
  "SELECT w.wal_bytes > 20000 * 30 AND w.wal_records > 0
     FROM eoingest.job_status s CROSS JOIN LATERAL pg_stat_get_backend_wal(s.pid) w
    WHERE s.name = 'bst'"
check "the worker's I/O: the target's relation extended" wait_until 30 \
  "SELECT sum(io.extends) > 0
     FROM eoingest.job_status s CROSS JOIN LATERAL pg_stat_get_backend_io(s.pid) io
    WHERE s.name = 'bst' AND io.object = 'relation'"
is "$(sql "SELECT wal_bytes IS NULL FROM pg_stat_get_backend_wal(0)")" t \
  "NULLs for a pid that is no backend (a worker that is not running)"

sql "SELECT eoingest.drop_job('bst')" >/dev/null
done_testing
