#!/usr/bin/env bash
# A target tablespace that runs out of space mid-ingestion: the job retries,
# says why in job_status, loses nothing, and carries on once space is freed.
# A database made read-only (default_transaction_read_only): a clear state
# and error, no restart loop, and the job resumes when writes are allowed.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

[ "$(id -u)" = 0 ] || skip_all "needs root to mount a small tmpfs"
plan 11
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
W() { PGOPTIONS="-c default_transaction_read_only=off" sql "$@"; }
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# --- disk full: a 3 MB tmpfs for the target's tablespace -------------------
small=$EOINGEST_RUN/smallfs
umount "$small" 2>/dev/null || true
mkdir -p "$small"
mount -t tmpfs -o size=3M,mode=0700 tmpfs "$small"
chown "$EOINGEST_OSUSER:" "$small"
cleanup_fs() { umount "$small" 2>/dev/null || true; }
trap cleanup_fs EXIT

topic=full_$$
eoi-kafka create-topic "$topic" 2 >/dev/null
sql "CREATE TABLESPACE small_ts LOCATION '$small'"
sql "CREATE TABLE full_t (part int, off bigint, value text) TABLESPACE small_ts"
# 60,000 records of ~80 bytes: ~6 MB of heap, twice what the tablespace holds.
pad=$(printf '%070d' 0)
seq 1 60000 | sed "s/\$/,$pad/" | eoi-kafka produce "$topic" >/dev/null
sql "SELECT eoingest.create_job(name => 'full', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_size => 5000,
        transform => 'INSERT INTO full_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('full')" >/dev/null

check "the job retries when the tablespace is full" wait_until 120 \
  "SELECT bool_or(state = 'retrying' AND last_error LIKE '%No space left on device%') FROM eoingest.job_status WHERE name = 'full'"
before=$(sql "SELECT count(*) FROM full_t")
is "$(sql "SELECT count(*) = count(DISTINCT (part, off)) AND count(*) < 60000 FROM full_t")" t \
  "what is stored so far is stored once, and short of the topic ($before rows)"
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'full'")" 0 \
  "no record is blamed for the full disk (no dead letter)"
is "$(sql "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'full'")" "$before" \
  "the offsets moved only with the rows"

mount -o remount,size=64M "$small"
check "once space is freed, the job carries on to the end" wait_until 180 \
  "SELECT count(*) = 60000 FROM full_t"
is "$(sql "SELECT count(DISTINCT (part, off)) || ' ' || (SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'full')
           || ' ' || (SELECT string_agg(DISTINCT state, ',') FROM eoingest.job_status WHERE name = 'full') FROM full_t")" \
  "60000 60000 running" "each record exactly once, offsets at the log end, the job running"
sql "SELECT eoingest.drop_job('full')" >/dev/null
sql "DROP TABLE full_t" >/dev/null; sql "DROP TABLESPACE small_ts" >/dev/null
cleanup_fs

# --- a read-only database ----------------------------------------------------
topic=ro_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
sql "CREATE TABLE ro_t (part int, off bigint, value text)"
sql "SELECT eoingest.create_job(name => 'ro', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
        transform => 'INSERT INTO ro_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('ro')" >/dev/null
seq 1 100 | eoi-kafka produce "$topic" >/dev/null
sql "SELECT eoingest.wait_for_catchup('ro', '60 s')" >/dev/null

# Set on the database: sessions started from now on (the job's next
# workers) cannot write.  The server restarts so the workers are new.
sql "ALTER DATABASE postgres SET default_transaction_read_only = on"
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
seq 101 200 | eoi-kafka produce "$topic" >/dev/null
check "on a read-only database the job waits, and says why" wait_until 60 \
  "SELECT state = 'waiting' AND last_error LIKE '%read-only%default_transaction_read_only%' FROM eoingest.job_status WHERE name = 'ro'"
pid1=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'ro'")
sleep 3
is "$(sql "SELECT pid = $pid1 AND state = 'waiting' FROM eoingest.job_status WHERE name = 'ro'")" t \
  "the same worker keeps waiting (no restart loop)"
is "$(sql "SELECT count(*) FROM ro_t")" 100 "nothing is written meanwhile"

W "ALTER DATABASE postgres RESET default_transaction_read_only"
check "writes allowed again: the job resumes by itself" wait_until 60 "SELECT count(*) = 200 FROM ro_t"
is "$(sql "SELECT count(DISTINCT off) || ' ' || (SELECT next_offset FROM eoingest.offsets WHERE job = 'ro')
           || ' ' || (SELECT state FROM eoingest.job_status WHERE name = 'ro') FROM ro_t")" \
  "200 200 running" "each record exactly once, and the job running"
sql "SELECT eoingest.drop_job('ro'); DROP TABLE ro_t" >/dev/null
done_testing
