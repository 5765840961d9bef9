#!/usr/bin/env bash
# Mode upsert's bulk path (src/apply/upsert.c: the keys probed in the key's index,
# the rows whose keys exist updated in place, multi-insert for the new ones,
# ON CONFLICT for all when a concurrent writer races).
#  - Differential: the same random batches (repeated keys, keys spelled
#    01 and 1, tombstones, keys already in the table, bad values and CHECK
#    violations) through the bulk path and through ON CONFLICT alone
#    (eoingest.upsert_path = on_conflict) leave the same table and the same
#    dead letters; likewise for a target with a second unique index (which
#    keeps the ON CONFLICT statement).
#  - A concurrent session inserts some of a batch's new keys between the
#    bulk path's probe and its inserts (fault point upsert-bulk-insert):
#    the batch goes in with ON CONFLICT, nothing lost, nothing doubled.
#  - A concurrent session updates and deletes rows of existing keys between
#    the probe and their updates in place (fault point upsert-bulk-update):
#    those rows go through the ON CONFLICT statement, and end with the
#    batch's values.
#  - The deletes go by the key's index too (delete_by_index).  A concurrent
#    session updates, deletes and re-keys rows of a batch's tombstones after
#    the worker took its snapshot (fault point upsert-bulk-delete): the
#    updated rows are deleted all the same (their newest versions), the
#    re-keyed one stays under its new key, as with the DELETE statement.
#  - Any other error there is the batch's: the job fails, the UPDATE is
#    the update of the existing key is rolled back, no offset moves.
#  - After a batch of new keys only the next goes in unprobed; if it meets
#    an existing key it is rolled back and probed.
#  - An owner whose UPDATE was revoked gets the statement's error, even
#    for a batch of new keys only.
# EOINGEST_UPSERT_MESSAGES / EOINGEST_UPSERT_SEED set the batches.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"

plan 29
n=${EOINGEST_UPSERT_MESSAGES:-3000}
seed=${EOINGEST_UPSERT_SEED:-$RANDOM}
diag "messages $n, seed $seed (EOINGEST_UPSERT_SEED=$seed to repeat)"
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# key<TAB>value lines; an empty value is a tombstone (-z).
messages() {
  python3 - "$n" "$seed" <<'PY'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
r = random.Random(seed)
def spell(k):
    return ("0" * r.choice([0, 0, 0, 1, 2])) + str(k)
for i in range(n):
    k = r.randrange(1500)
    if r.random() < 0.1:
        print(f"{spell(k)}\t")
        continue
    v = r.randrange(-1100, 1000)          # below -1000: the CHECK refuses it
    if r.random() < 0.01:
        v = "x"                           # not an int: a dead letter
    w = r.choice(["", "a", "b", '"q,uoted"', f"w{i}"])
    num = f"{r.randrange(-99999, 99999) / 1000:.3f}"   # numeric(10,2) rounds it
    u = r.randrange(4000)                 # the second unique column (uq_ tables)
    print(f"{spell(k)}\t{spell(k)},{v},{w},{num},{u}")
PY
}

topic=ub_$$
# One partition: the last message of a key is the same for both jobs.
eoi-kafka create-topic "$topic" 1 >/dev/null
messages | eoi-kafka produce -K -z -p 0 "$topic" >/dev/null

make_table() { # NAME UNIQUE_U
  local uq=""
  [ "$2" = yes ] && uq="UNIQUE"
  sql "CREATE TABLE $1 (id int PRIMARY KEY, v int CHECK (v > -1000), w text, n numeric(10,2), u int $uq,
         note text DEFAULT 'dflt', gen int GENERATED ALWAYS AS (v * 2) STORED);
       INSERT INTO $1 (id, v, w, n, u, note) SELECT g, 0, 'pre', 0, 1000 + g, 'pre' FROM generate_series(0, 199) g" >/dev/null
}

run_job() { # JOB TABLE PATH
  local job=$1 table=$2 path=$3
  sql "ALTER SYSTEM SET eoingest.upsert_path = '$path'" >/dev/null
  sql "SELECT pg_reload_conf()" >/dev/null
  sql "SELECT eoingest.create_job(name => '$job', brokers => '$KAFKA_BROKERS', topic => '$topic', target => '$table',
         format => 'csv', mode => 'upsert', columns => '{id,v,w,n,u}', batch_size => 300, batch_timeout_ms => 200)" >/dev/null
  sql "SELECT eoingest.start_job('$job')" >/dev/null
  wait_until 120 "SELECT coalesce(sum(next_offset), 0) = $n FROM eoingest.offsets WHERE job = '$job'" || return 1
  sql "SELECT eoingest.stop_job('$job')" >/dev/null
  wait_until 60 "SELECT state <> 'running' FROM eoingest.job_status WHERE name = '$job'"
}

same_dead_letters() { # JOB1 JOB2
  sql "WITH a AS (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = '$1'),
            b AS (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = '$2')
       SELECT count(*) FROM ((TABLE a EXCEPT ALL TABLE b) UNION ALL (TABLE b EXCEPT ALL TABLE a)) x"
}

# The fault point only logs (sleeps 0 ms): how often the bulk path ran.
set_fault upsert-bulk-insert sleep 0
for shape in plain uq; do
  unique_u=no
  [ "$shape" = uq ] && unique_u=yes
  make_table ${shape}_old $unique_u
  make_table ${shape}_new $unique_u
  f0=$(fault_count upsert-bulk-insert)
  check "$shape: ON CONFLICT alone: every message consumed" run_job ${shape}_o ${shape}_old on_conflict
  f1=$(fault_count upsert-bulk-insert)
  check "$shape: bulk path: every message consumed" run_job ${shape}_n ${shape}_new bulk
  f2=$(fault_count upsert-bulk-insert)
  diag "$shape: bulk path ran $((f2 - f1)) times (ON CONFLICT job: $((f1 - f0)))"
  if [ "$shape" = plain ]; then
    check "plain: the bulk job took the bulk path, the other did not" test $((f2 - f1)) -gt 0 -a $((f1 - f0)) = 0
  else
    is "$((f2 - f1))" 0 "uq: a second unique index keeps the ON CONFLICT statement"
  fi
  rows=$(sql "SELECT count(*) FROM ${shape}_new")
  dead=$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = '${shape}_n'")
  diag "$shape: rows $rows, dead letters $dead"
  is "$(sql "SELECT count(*) FROM ((TABLE ${shape}_new EXCEPT ALL TABLE ${shape}_old)
                UNION ALL (TABLE ${shape}_old EXCEPT ALL TABLE ${shape}_new)) x")" 0 "$shape: the same table both ways"
  is "$(same_dead_letters ${shape}_o ${shape}_n)" 0 "$shape: the same dead letters, offset by offset, with the same SQLSTATE"
  if [ "$shape" = uq ]; then
    diag "uq: dead letters by SQLSTATE: $(sql "SELECT string_agg(sqlstate || ' ' || c, ', ') FROM
      (SELECT sqlstate, count(*) c FROM eoingest.dead_letters WHERE job = 'uq_n' GROUP BY 1) s")"
    check "uq: the second unique index refused some messages (23505 dead letters)" \
      test "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'uq_n' AND sqlstate = '23505'")" -gt 0
  fi
  sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name IN ('${shape}_o', '${shape}_n')" >/dev/null
done
sql "ALTER SYSTEM RESET eoingest.upsert_path" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
is "$(sql "SELECT count(*) FROM plain_new WHERE note = 'pre'") $(sql "SELECT count(*) FROM plain_new WHERE note = 'dflt'")" \
  "$(sql "SELECT count(*) FROM plain_old WHERE note = 'pre'") $(sql "SELECT count(*) FROM plain_old WHERE note = 'dflt'")" \
  "plain: updated rows keep the column no message fills, new ones get its default"

# --- a concurrent writer inserts new keys of the batch between the probe and the inserts ---
rtopic=ur_$$
eoi-kafka create-topic "$rtopic" 1 >/dev/null
for i in $(seq 1 100); do printf '%s\t%s,kafka%s\n' "$i" "$i" "$i"; done | eoi-kafka produce -K -p 0 "$rtopic" >/dev/null
sql "CREATE TABLE ur (id int PRIMARY KEY, v text);
     INSERT INTO ur SELECT g, 'old' FROM generate_series(1, 10) g" >/dev/null
before=$(fault_count upsert-bulk-insert)
set_fault upsert-bulk-insert sleep 4000
sql "SELECT eoingest.create_job(name => 'ur', brokers => '$KAFKA_BROKERS', topic => '$rtopic', target => 'ur',
       format => 'csv', mode => 'upsert', batch_size => 1000, batch_timeout_ms => 1000);
     SELECT eoingest.start_job('ur')" >/dev/null
check "the worker stops between its probe and its inserts" wait_fault upsert-bulk-insert "$before" 60
sql "INSERT INTO ur SELECT g, 'concurrent' FROM generate_series(50, 60) g" >/dev/null
check "the concurrent insert of 11 of the batch's new keys commits meanwhile" \
  test "$(sql "SELECT count(*) FROM ur WHERE v = 'concurrent'")" = 11
wait_until 60 "SELECT coalesce(sum(next_offset), 0) = 100 FROM eoingest.offsets WHERE job = 'ur'" >/dev/null || true
clear_fault
is "$(sql "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || count(*) FILTER (WHERE v = 'kafka' || id)
           || ' ' || (SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = 'ur') FROM ur")" \
  "100 100 100 100" "the batch went in anyway: 100 rows, once each, every one the batch's value, offsets at the end"
check "the worker saw the concurrent key and fell back to ON CONFLICT (pg.log)" \
  grep -q 'a concurrent writer inserted a key of the batch into "ur"' "$EOINGEST_RUN/pg.log"
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'ur'") $(sql "SELECT state FROM eoingest.job_status WHERE name = 'ur'")" \
  "0 running" "no dead letter, the job runs on"
sql "SELECT eoingest.drop_job('ur')" >/dev/null

# --- a concurrent writer changes rows of existing keys between the probe and their updates ---
vtopic=uv_$$
eoi-kafka create-topic "$vtopic" 1 >/dev/null
for i in $(seq 1 10); do printf '%s\t%s,kafka%s\n' "$i" "$i" "$i"; done | eoi-kafka produce -K -p 0 "$vtopic" >/dev/null
sql "CREATE TABLE uv (id int PRIMARY KEY, v text);
     INSERT INTO uv SELECT g, 'old' FROM generate_series(1, 10) g" >/dev/null
before=$(fault_count upsert-bulk-update)
set_fault upsert-bulk-update sleep 4000
sql "SELECT eoingest.create_job(name => 'uv', brokers => '$KAFKA_BROKERS', topic => '$vtopic', target => 'uv',
       format => 'csv', mode => 'upsert', batch_size => 1000, batch_timeout_ms => 1000);
     SELECT eoingest.start_job('uv')" >/dev/null
check "the worker stops between its probe and its updates" wait_fault upsert-bulk-update "$before" 60
sql "UPDATE uv SET v = 'concurrent' WHERE id IN (1, 2); DELETE FROM uv WHERE id = 3" >/dev/null
wait_until 60 "SELECT coalesce(sum(next_offset), 0) = 10 FROM eoingest.offsets WHERE job = 'uv'" >/dev/null || true
clear_fault
is "$(sql "SELECT count(*) || ' ' || count(*) FILTER (WHERE v = 'kafka' || id) FROM uv")|$(sql "SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = 'uv'")" \
  "10 10|10" "every row has the batch's value, the concurrently updated and deleted ones too; offsets at the end"
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'uv'") $(sql "SELECT state FROM eoingest.job_status WHERE name = 'uv'")" \
  "0 running" "no dead letter, the job runs on"
sql "SELECT eoingest.drop_job('uv')" >/dev/null

# --- a concurrent writer changes rows of the batch's deletes after the worker's snapshot ---
dtopic=ud_$$
eoi-kafka create-topic "$dtopic" 1 >/dev/null
for i in $(seq 1 10); do printf '%s\t\n' "$i"; done | eoi-kafka produce -K -z -p 0 "$dtopic" >/dev/null
sql "CREATE TABLE ud (id int PRIMARY KEY, v text);
     INSERT INTO ud SELECT g, 'old' FROM generate_series(1, 20) g" >/dev/null
before=$(fault_count upsert-bulk-delete)
set_fault upsert-bulk-delete sleep 4000
sql "SELECT eoingest.create_job(name => 'ud', brokers => '$KAFKA_BROKERS', topic => '$dtopic', target => 'ud',
       format => 'csv', mode => 'upsert', batch_size => 1000, batch_timeout_ms => 1000);
     SELECT eoingest.start_job('ud')" >/dev/null
check "the worker stops between its snapshot and its deletes" wait_fault upsert-bulk-delete "$before" 60
sql "UPDATE ud SET v = 'concurrent' WHERE id IN (1, 2, 3); DELETE FROM ud WHERE id = 4;
     UPDATE ud SET id = 105 WHERE id = 5" >/dev/null
wait_until 60 "SELECT coalesce(sum(next_offset), 0) = 10 FROM eoingest.offsets WHERE job = 'ud'" >/dev/null || true
clear_fault
is "$(sql "SELECT string_agg(id::text, ',' ORDER BY id) FROM ud")|$(sql "SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = 'ud'")" \
  "11,12,13,14,15,16,17,18,19,20,105|10" \
  "keys 1-10 deleted, the concurrently updated ones too; the re-keyed row stays as 105; offsets at the end"
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'ud'") $(sql "SELECT state FROM eoingest.job_status WHERE name = 'ud'")" \
  "0 running" "no dead letter, the job runs on"
sql "SELECT eoingest.drop_job('ud')" >/dev/null

# --- any other error between the probe and the inserts is the batch's ---
etopic=ue_$$
eoi-kafka create-topic "$etopic" 1 >/dev/null
printf '1\t1,new1\n2\t2,new2\n' | eoi-kafka produce -K -p 0 "$etopic" >/dev/null
sql "CREATE TABLE ue (id int PRIMARY KEY, v text); INSERT INTO ue VALUES (1, 'old')" >/dev/null
set_fault upsert-bulk-insert error
sql "SELECT eoingest.create_job(name => 'ue', brokers => '$KAFKA_BROKERS', topic => '$etopic', target => 'ue',
       format => 'csv', mode => 'upsert', batch_timeout_ms => 200);
     SELECT eoingest.start_job('ue')" >/dev/null
# An internal error (XX000) is of no class a person must fix: the batch's, retried (src/apply/errclass.c).
wait_until 60 "SELECT state = 'retrying' FROM eoingest.job_status WHERE name = 'ue'" >/dev/null || true
is "$(sql "SELECT state || ': ' || (last_error LIKE '%fault point \"upsert-bulk-insert\" reached%') FROM eoingest.job_status WHERE name = 'ue'")" \
  "retrying: true" "an error other than unique_violation is the batch's, shown and retried, not swallowed"
sql "SELECT eoingest.stop_job('ue')" >/dev/null
wait_until 60 "SELECT bool_and(pid IS NULL) FROM eoingest.job_status WHERE name = 'ue'" >/dev/null || true
clear_fault
is "$(sql "SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM ue")|$(sql "SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = 'ue'")" \
  "1=old|0" "and the update of the existing key is rolled back, no offset stored"
sql "SELECT eoingest.drop_job('ue')" >/dev/null

# --- after a batch of new keys only, the next is inserted unprobed; one that meets an existing key is probed ---
otopic=uo_$$
eoi-kafka create-topic "$otopic" 1 >/dev/null
sql "CREATE TABLE uo (id int PRIMARY KEY, v text)" >/dev/null
set_fault upsert-bulk-insert sleep 0
f0=$(fault_count upsert-bulk-insert)
sql "SELECT eoingest.create_job(name => 'uo', brokers => '$KAFKA_BROKERS', topic => '$otopic', target => 'uo',
       format => 'csv', mode => 'upsert', batch_timeout_ms => 200);
     SELECT eoingest.start_job('uo')" >/dev/null
for i in $(seq 1 50); do printf '%s\t%s,a\n' "$i" "$i"; done | eoi-kafka produce -K -p 0 "$otopic" >/dev/null
wait_until 60 "SELECT coalesce(sum(next_offset), 0) = 50 FROM eoingest.offsets WHERE job = 'uo'" >/dev/null || true
for i in $(seq 40 90); do printf '%s\t%s,b\n' "$i" "$i"; done | eoi-kafka produce -K -p 0 "$otopic" >/dev/null
wait_until 60 "SELECT coalesce(sum(next_offset), 0) = 101 FROM eoingest.offsets WHERE job = 'uo'" >/dev/null || true
clear_fault
f1=$(fault_count upsert-bulk-insert)
diag "uo: $((f1 - f0)) bulk attempts"
is "$(sql "SELECT count(*) || ' ' || count(*) FILTER (WHERE v = 'a' AND id < 40) || ' ' || count(*) FILTER (WHERE v = 'b' AND id >= 40) FROM uo")" \
  "90 39 51" "a batch meeting existing keys after one of new keys only: each key once, the last value"
check "it was tried unprobed first, then probed, without the ON CONFLICT fallback" \
  test $((f1 - f0)) -ge 3 -a "$(grep -c 'a concurrent writer inserted a key of the batch into "uo"' "$EOINGEST_RUN/pg.log" || true)" = 0
sql "SELECT eoingest.drop_job('uo'); DROP TABLE uo" >/dev/null

# --- an owner whose UPDATE was revoked: the statement's error, even for a batch of new keys only ---
ptopic=up_$$
eoi-kafka create-topic "$ptopic" 1 >/dev/null
sql "DO \$\$ BEGIN CREATE ROLE eoi_ub_owner LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$;
     GRANT USAGE ON SCHEMA eoingest TO eoi_ub_owner;
     GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.start_job, eoingest.drop_job TO eoi_ub_owner;
     GRANT SELECT ON eoingest.job_status TO eoi_ub_owner;
     CREATE TABLE up (id int PRIMARY KEY, v text);
     GRANT SELECT, INSERT, UPDATE, DELETE ON up TO eoi_ub_owner" >/dev/null
psql -XAtq -v ON_ERROR_STOP=1 -U eoi_ub_owner -c "SELECT eoingest.create_job(name => 'up', brokers => '$KAFKA_BROKERS',
  topic => '$ptopic', target => 'up', format => 'csv', mode => 'upsert', batch_timeout_ms => 200)" >/dev/null
sql "REVOKE UPDATE ON up FROM eoi_ub_owner" >/dev/null
printf '1\t1,a\n2\t2,b\n' | eoi-kafka produce -K -p 0 "$ptopic" >/dev/null
psql -XAtq -v ON_ERROR_STOP=1 -U eoi_ub_owner -c "SELECT eoingest.start_job('up')" >/dev/null
check "a revoked UPDATE fails the job, new keys or not, as the ON CONFLICT statement does" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%permission denied for table up%' FROM eoingest.job_status WHERE name = 'up'"
is "$(sql "SELECT count(*) FROM up")" 0 "and nothing was written"
sql "SELECT eoingest.drop_job('up'); DROP TABLE up, ud, uv, ue, ur, plain_old, plain_new, uq_old, uq_new;
     DROP OWNED BY eoi_ub_owner; DROP ROLE eoi_ub_owner" >/dev/null
done_testing
