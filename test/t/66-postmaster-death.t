#!/usr/bin/env bash
# The postmaster dies (SIGKILL) while a worker is in the middle of a topic:
# the worker must notice and exit rather than go on committing without it;
# after a restart the job resumes exactly.  The transform stamps each row
# with the worker's pid and the time it was written, so what the old worker
# committed after the postmaster's death shows after the restart.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 7
topic=pmdeath_$$
total=40000
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE pmd_t (part int, off bigint, value text, pid int, at timestamptz)" >/dev/null
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count $total --format csv >/dev/null
# about 4,000 records a second: 50 ms a batch of 200
sql "SELECT eoingest.create_job(name => 'pmd', brokers => '$KAFKA_BROKERS', topic => '$topic',
        batch_size => 200, batch_timeout_ms => 100,
        transform => 'WITH pause AS (SELECT pg_sleep(0.05))
                      INSERT INTO pmd_t SELECT \"partition\", \"offset\", value, pg_backend_pid(), clock_timestamp()
                        FROM eoingest.batch(), pause');
     SELECT eoingest.start_job('pmd')" >/dev/null
wait_until 60 "SELECT count(*) >= 4000 FROM pmd_t" >/dev/null
worker=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'pmd'")
postmaster=$(head -1 "$PGDATA/postmaster.pid")

kill -9 "$postmaster"
killed_at=$(date +%s.%N)
gone() { for _ in $(seq 50); do kill -0 "$worker" 2>/dev/null || return 0; sleep 0.2; done; return 1; }
check "the worker exits within 10 s of its postmaster's death" gone

# Whatever is left of the old server would keep a new one from starting.
pkill -9 -u "$EOINGEST_OSUSER" -f "postgres: " 2>/dev/null || true
for _ in $(seq 50); do pgrep -u "$EOINGEST_OSUSER" -f "postgres: " >/dev/null || break; sleep 0.2; done
check "PostgreSQL starts again" "$EOINGEST_TEST_DIR/pg.sh" start
read -r before after < <(sql "SELECT count(*), count(*) FILTER (WHERE at > to_timestamp($killed_at) + interval '1 s')
                                FROM pmd_t WHERE pid = $worker" | tr '|' ' ')
check "the old worker was in the middle of the topic at the kill ($before of $total rows)" test "$before" -lt "$total"
is "$after" 0 "the old worker committed nothing after its in-flight batch, once the postmaster was gone"
eoi-kafka produce-seq "$topic" --count 5000 --start $total --format csv >/dev/null
check "the job resumes by itself" wait_until 180 "SELECT count(*) = $((total + 5000)) FROM pmd_t"
is "$(sql "SELECT count(DISTINCT (part, off)) FROM pmd_t")" $((total + 5000)) "each record exactly once"
check "the rest of the topic was written by a new worker" test "$(sql "SELECT count(*) FROM pmd_t WHERE pid <> $worker")" -gt 0

sql "SELECT eoingest.drop_job('pmd'); DROP TABLE pmd_t" >/dev/null
done_testing
