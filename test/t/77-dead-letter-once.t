#!/usr/bin/env bash
# A record is a dead letter once, however often it is read: mode upsert
# stores its offsets lazily (offset_commit_interval_ms), so after stop_job and
# start_job, or a SIGKILL, it reads again records whose dead letters already
# committed with the data.  Dead letters are kept once per (job, topic,
# partition, offset).
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 6
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=dlonce_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
printf '0\t0,0\n' | eoi-kafka produce -K "$topic" >/dev/null
sql "CREATE TABLE dl_once (id int PRIMARY KEY, v int);
     SELECT eoingest.create_job(name => 'dl_once', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'dl_once',
            mode => 'upsert', columns => '{id,v}', offset_commit_interval_ms => 10000, batch_timeout_ms => 100);
     SELECT eoingest.start_job('dl_once')" >/dev/null
letters() { sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'dl_once'"; }
# The first batch's offsets are stored at once, the next ones 10 s later.
wait_until 60 "SELECT coalesce(sum(next_offset), 0) = 1 FROM eoingest.offsets WHERE job = 'dl_once'" || true
printf '1\t1,1\n2\t2,bad\n3\t3,3\n' | eoi-kafka produce -K "$topic" >/dev/null
check "three rows in, one dead letter" wait_until 60 \
  "SELECT (SELECT count(*) FROM dl_once) = 3 AND (SELECT count(*) FROM eoingest.dead_letters WHERE job = 'dl_once') = 1"
is "$(sql "SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = 'dl_once'")" 1 \
  "their offsets are not stored yet (every 10 s): what was read will be read again"

# stop and start: the worker reads from the stored offsets, the bad record again.
sql "SELECT eoingest.stop_job('dl_once')" >/dev/null
wait_until 30 "SELECT bool_and(pid IS NULL) FROM eoingest.job_status WHERE name = 'dl_once'" || true
sql "SELECT eoingest.start_job('dl_once')" >/dev/null
printf '4\t4,4\n' | eoi-kafka produce -K "$topic" >/dev/null
check "after stop_job and start_job the job reads on" wait_until 60 "SELECT count(*) = 4 FROM dl_once"
is "$(letters)" 1 "and the record read again is still one dead letter"

# SIGKILL of the worker with another bad record read and its offsets not stored:
# the server restarts every session, the job resumes and reads it again.
printf '5\t5,bad\n6\t6,6\n' | eoi-kafka produce -K "$topic" >/dev/null
wait_until 60 "SELECT (SELECT count(*) FROM dl_once) = 5 AND EXISTS (SELECT FROM eoingest.dead_letters WHERE job = 'dl_once' AND \"offset\" = 5)" || true
pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'dl_once' AND pid IS NOT NULL LIMIT 1")
stored=$(sql "SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = 'dl_once'")
[ -n "$pid" ] && kill -9 "$pid"
ok "$([ -n "$pid" ] && [ "$stored" -le 5 ] && echo 0 || echo 1)" \
  "the worker was killed (pid ${pid:-none}) before storing the offsets of a second bad record (stored: $stored of 7, at most 5)"
wait_until 60 "SELECT count(*) > 0 FROM eoingest.job_status WHERE name = 'dl_once' AND state = 'running'" || true
printf '7\t7,7\n' | eoi-kafka produce -K "$topic" >/dev/null
wait_until 60 "SELECT count(*) = 6 FROM dl_once" || true
is "$(sql "SELECT count(*) FROM dl_once")/$(sql "SELECT string_agg(\"offset\"::text, ',' ORDER BY \"offset\") FROM eoingest.dead_letters WHERE job = 'dl_once'")" \
  "6/2,5" "after a SIGKILL too, each bad record is one dead letter"

sql "SELECT eoingest.drop_job('dl_once'); DROP TABLE dl_once" >/dev/null
done_testing
