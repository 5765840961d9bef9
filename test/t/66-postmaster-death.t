#!/usr/bin/env bash
# The postmaster dies (SIGKILL): a worker must notice and exit rather than
# go on committing without it; after a restart the job resumes exactly.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 4
topic=pmdeath_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE pmd_t (part int, off bigint, value text)" >/dev/null
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 5000 --format csv >/dev/null
sql "SELECT eoingest.create_job(name => 'pmd', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
        transform => 'INSERT INTO pmd_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('pmd')" >/dev/null
wait_until 60 "SELECT count(*) = 5000 FROM pmd_t" >/dev/null
worker=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'pmd'")
postmaster=$(head -1 "$PGDATA/postmaster.pid")

kill -9 "$postmaster"
gone() { for _ in $(seq 50); do kill -0 "$worker" 2>/dev/null || return 0; sleep 0.2; done; return 1; }
check "the worker exits within 10 s of its postmaster's death" gone

# Whatever is left of the old server would keep a new one from starting.
pkill -9 -u "$EOINGEST_OSUSER" -f "postgres: " 2>/dev/null || true
for _ in $(seq 50); do pgrep -u "$EOINGEST_OSUSER" -f "postgres: " >/dev/null || break; sleep 0.2; done
"$EOINGEST_TEST_DIR/pg.sh" start >/dev/null
ok $? "PostgreSQL starts again"
eoi-kafka produce-seq "$topic" --count 5000 --start 5000 --format csv >/dev/null
check "the job resumes by itself" wait_until 120 "SELECT count(*) = 10000 FROM pmd_t"
is "$(sql "SELECT count(DISTINCT (part, off)) FROM pmd_t")" 10000 "each record exactly once"

sql "SELECT eoingest.drop_job('pmd'); DROP TABLE pmd_t" >/dev/null
done_testing
