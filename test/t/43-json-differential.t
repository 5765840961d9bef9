#!/usr/bin/env bash
# Differential: the same random JSON messages (test/fuzz/json_messages.py:
# good values of every column type and hostile ones, duplicate and
# case-variant keys, escapes, nesting, huge numbers, truncated text) go
# through format json's scan (src/format/jsonscan.c, eoingest.json_decode = scan)
# and through jsonb_in as before it (json_decode = jsonb), each on both
# insert paths (direct tuples and COPY's text), into identical tables; the
# rows must be the same, and so must the dead letters' offsets, SQLSTATEs
# and errors.  A fifth job reads with the scan alone (scan_only: a message
# it declines is a dead letter), to show that the scan reads most messages
# and that what it stores is what jsonb's way stores.
# EOINGEST_JSON_MESSAGES / EOINGEST_JSON_SEED set the batch.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 21
n=${EOINGEST_JSON_MESSAGES:-1500}
seed=${EOINGEST_JSON_SEED:-$RANDOM}
diag "messages $n, seed $seed (EOINGEST_JSON_SEED=$seed to repeat)"
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

topic=jd_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
python3 "$(dirname "$0")/../fuzz/json_messages.py" "$n" "$seed" | eoi-kafka produce "$topic" >/dev/null

sql "DROP DOMAIN IF EXISTS jd_pos CASCADE; CREATE DOMAIN jd_pos AS int CHECK (VALUE > 0)" >/dev/null
tables="jd_jsonb_direct jd_scan_direct jd_jsonb_copy jd_scan_copy jd_only"
for t in $tables; do
  sql "DROP TABLE IF EXISTS $t;
       CREATE TABLE $t (i4 int, i8 bigint, i2 smallint, num numeric, num82 numeric(8,2), f8 float8, f4 float4,
         b bool, t text, vc varchar(5), tstz timestamptz, tstz0 timestamptz(0), ts timestamp, d date, by bytea,
         jb jsonb, js json, ia int[], ta text[], tsa timestamptz[], bya bytea[], jba jsonb[], u uuid, dom jd_pos,
         \"Temp\" float8, \"Dup\" float8, \"DUP\" float8, dflt int DEFAULT 42,
         serial int GENERATED ALWAYS AS IDENTITY)" >/dev/null
done
# every column but the identity, as text (json has no equality)
row="ROW(i4, i8, i2, num, num82, f8, f4, b, t, vc, tstz, tstz0, ts, d, by, jb, js::text, ia, ta, tsa, bya, jba, u,
         dom, \"Temp\", \"Dup\", \"DUP\", dflt)::text"

# Each message the scan reads passes the fault point json-scan (set to
# sleep 0 ms, which logs it): the count tells which way a job read.
. "$(dirname "$0")/../lib/faults.sh"
set_fault json-scan sleep 0
run_job() {
  local job=$1 table=$2 decode=$3 path=$4 before
  before=$(fault_count json-scan)
  sql "ALTER SYSTEM SET eoingest.json_decode = '$decode'" >/dev/null
  sql "ALTER SYSTEM SET eoingest.insert_path = '$path'" >/dev/null
  sql "SELECT pg_reload_conf()" >/dev/null
  sql "SELECT eoingest.create_job(name => '$job', brokers => '$KAFKA_BROKERS', topic => '$topic', target => '$table',
         format => 'json', batch_size => 500, batch_timeout_ms => 200)" >/dev/null
  sql "SELECT eoingest.start_job('$job')" >/dev/null
  wait_until 300 "SELECT coalesce(sum(next_offset), 0) = $n FROM eoingest.offsets WHERE job = '$job'" || return 1
  sql "SELECT eoingest.stop_job('$job')" >/dev/null
  wait_until 60 "SELECT state <> 'running' FROM eoingest.job_status WHERE name = '$job'" || return 1
  scanned[$job]=$(($(fault_count json-scan) - before))
}
declare -A scanned
check "jsonb, direct: every message consumed" run_job jd_jd jd_jsonb_direct jsonb direct
check "scan, direct: every message consumed" run_job jd_sd jd_scan_direct scan direct
check "jsonb, COPY: every message consumed" run_job jd_jc jd_jsonb_copy jsonb copy
check "scan, COPY: every message consumed" run_job jd_sc jd_scan_copy scan copy
check "scan only, direct: every message consumed" run_job jd_so jd_only scan_only direct
clear_fault
# The arms took their ways: the scan read most messages of the scan's jobs,
# and none of jsonb's.
diag "messages read by the scan: jsonb ${scanned[jd_jd]} and ${scanned[jd_jc]}, scan ${scanned[jd_sd]} and ${scanned[jd_sc]}"
check "the jsonb arms read no message with the scan" test "${scanned[jd_jd]}" = 0 -a "${scanned[jd_jc]}" = 0
check "the scan arms read most messages with it" test "${scanned[jd_sd]}" -gt $((n / 2)) -a "${scanned[jd_sc]}" -gt $((n / 2))
sql "ALTER SYSTEM RESET eoingest.json_decode" >/dev/null
sql "ALTER SYSTEM RESET eoingest.insert_path" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null

rows_differ() {
  sql "SELECT count(*) FROM ((SELECT $row FROM $1 EXCEPT ALL SELECT $row FROM $2)
                             UNION ALL (SELECT $row FROM $2 EXCEPT ALL SELECT $row FROM $1)) x"
}
# the errors with the table's name taken out (COPY's context names it)
dead_differ() {
  sql "WITH a AS (SELECT \"offset\", sqlstate, replace(error, '$3', 'T') AS error FROM eoingest.dead_letters WHERE job = '$1'),
            b AS (SELECT \"offset\", sqlstate, replace(error, '$4', 'T') AS error FROM eoingest.dead_letters WHERE job = '$2')
       SELECT count(*) FROM ((TABLE a EXCEPT ALL TABLE b) UNION ALL (TABLE b EXCEPT ALL TABLE a)) x"
}
show_dead() {
  diag "$(sql "SELECT job, \"offset\", sqlstate, left(error, 300) FROM eoingest.dead_letters WHERE job IN ('$1', '$2')
               AND (\"offset\", sqlstate, replace(error, '$3', 'T')) IS DISTINCT FROM ALL
                   (SELECT \"offset\", sqlstate, replace(error, '$4', 'T') FROM eoingest.dead_letters WHERE job = '$2')
               ORDER BY 2, 1 LIMIT 10")"
}

rows=$(sql "SELECT count(*) FROM jd_jsonb_direct")
dead=$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'jd_jd'")
diag "rows $rows, dead letters $dead of $n messages"
check "the messages make rows and dead letters both" test "$rows" -gt $((n / 4)) -a "$dead" -gt 0

for pair in "jd_sd jd_jd jd_scan_direct jd_jsonb_direct" "jd_sc jd_jc jd_scan_copy jd_jsonb_copy"; do
  set -- $pair
  is "$(rows_differ "$3" "$4")" 0 "$3: the same rows as $4"
  is "$(sql "SELECT count(*) FROM $3")" "$(sql "SELECT count(*) FROM $4")" "$3: as many rows as $4"
  d=$(dead_differ "$1" "$2" "$3" "$4")
  is "$d" 0 "$3: the same dead letters as $4, offset by offset, with the same SQLSTATE and error"
  [ "$d" = 0 ] || show_dead "$1" "$2" "$3" "$4"
  is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = '$1'")" \
     "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = '$2'")" "$3: as many dead letters as $4"
done
# The direct and the COPY path agree too (42-direct-differential.t's claim, on these messages).
is "$(rows_differ jd_scan_direct jd_scan_copy)" 0 "scan: direct and COPY store the same rows"

# The scan alone: it declines only a minority, and what it stores jsonb's way stores too.
declined=$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'jd_so' AND error LIKE 'JSON message declined by the scan%'")
diag "the scan declined $declined of $n messages"
check "the scan reads most messages itself" test "$declined" -lt $((n / 3))
check "the scan declines some (the hostile ones)" test "$declined" -gt 0
is "$(sql "SELECT count(*) FROM (SELECT $row FROM jd_only EXCEPT ALL SELECT $row FROM jd_jsonb_direct) x")" 0 \
  "scan only: every row it stored, jsonb's way stored"
is "$(sql "SELECT count(*) FROM (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = 'jd_so' AND error NOT LIKE 'JSON message declined by the scan%'
                                 EXCEPT ALL SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = 'jd_jd') x")" 0 \
  "scan only: its other dead letters are jsonb's"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'jd\_%'" >/dev/null
for t in $tables; do sql "DROP TABLE $t" >/dev/null; done
sql "DROP DOMAIN jd_pos" >/dev/null
done_testing
