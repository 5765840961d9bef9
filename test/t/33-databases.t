#!/usr/bin/env bash
# Jobs in every database that has the extension.  Two databases run a job
# of the same name (and id) at once, through a worker's SIGKILL (a crash and
# restart of the server): each record exactly once in each.  CREATE
# EXTENSION in a database is noticed without a restart, a database without
# the extension keeps no eoingest process, DROP EXTENSION stops that
# database's jobs only, and eoingest.database, when set, limits the
# databases whose jobs run.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 29
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" ;; esac; }

# indb DB QUERY: sql in database DB.
indb() { local d=$1; shift; sql "$@" -d "$d"; }

dba=eoi_db_a
dbb=eoi_db_b
dbn=eoi_db_none
sql "DROP DATABASE IF EXISTS eoi_db_c WITH (FORCE)" >/dev/null
indb template1 "DROP EXTENSION IF EXISTS eoingest" >/dev/null 2>&1
for d in $dba $dbb $dbn; do
  sql "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null
  sql "CREATE DATABASE $d" >/dev/null
done

# wait_in DB SECONDS QUERY
wait_in() { PGDATABASE=$1 wait_until "$2" "$3"; }
# launchers_in DB: eoingest launchers connected to DB.
launchers_in() {
  sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname = '$1'"
}

check "a database without the extension keeps no eoingest process" \
  wait_until 20 "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = '$dbn' AND backend_type LIKE 'eoingest%'"
is "$(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'eoingest cluster launcher' AND datname IS NULL")" 1 \
  "one cluster launcher, connected to no database"

indb $dba "CREATE EXTENSION eoingest" >/dev/null
indb $dbb "CREATE EXTENSION eoingest" >/dev/null
check "CREATE EXTENSION starts the database's launcher, without a restart" \
  wait_until 20 "SELECT count(DISTINCT datname) = 2 FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname IN ('$dba', '$dbb')"

ta=db_a_$$
tb=db_b_$$
eoi-kafka create-topic "$ta" 2 >/dev/null
eoi-kafka create-topic "$tb" 2 >/dev/null
eoi-kafka produce-seq "$ta" --count 2000 --format csv >/dev/null
eoi-kafka produce-seq "$tb" --count 3000 --format csv >/dev/null
for d in $dba $dbb; do
  topic=$ta
  [ $d = $dbb ] && topic=$tb
  indb $d "CREATE TABLE t (part int, off bigint, value text);
         SELECT eoingest.create_job(name => 'j', brokers => '$KAFKA_BROKERS', topic => '$topic', parallelism => 2,
                batch_size => 1000, batch_timeout_ms => 100,
                transform => 'INSERT INTO t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
         SELECT eoingest.start_job('j')" >/dev/null
done
is "$(indb $dba "SELECT id FROM eoingest.jobs WHERE name = 'j'") $(indb $dbb "SELECT id FROM eoingest.jobs WHERE name = 'j'")" "1 1" \
  "both databases have a job j with id 1"
check "both workers of each database's job run" wait_until 30 \
  "SELECT count(*) = 4 FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname IN ('$dba', '$dbb')"
is "$(indb $dba "SELECT count(*) FROM eoingest.job_status WHERE name = 'j' AND pid IN
                 (SELECT pid FROM pg_stat_activity WHERE datname = '$dba')")" 2 \
  "job_status in one database shows its own workers only"

# SIGKILL one worker while both jobs write: the server restarts every process.
# The rest of the records are produced while the jobs write them.
check "both jobs are writing" wait_in $dba 60 "SELECT count(*) >= 2000 FROM t"
wait_in $dbb 60 "SELECT count(*) >= 3000 FROM t" >/dev/null
eoi-kafka produce-seq "$ta" --count 200000 --start 2000 --format csv >/dev/null &
pa=$!
eoi-kafka produce-seq "$tb" --count 200000 --start 3000 --format csv >/dev/null &
pb=$!
wait_in $dba 60 "SELECT count(*) > 10000 FROM t" >/dev/null
victim=$(sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname = '$dba' LIMIT 1")
diag "rows when a worker of $dba is killed: $(indb $dba "SELECT count(*) FROM t") of 202000, $(indb $dbb "SELECT count(*) FROM t") of 203000 in $dbb"
kill -9 "$victim"
sleep 2
check "the server is back" wait_until 60 "SELECT true"
check "after the crash, both databases' workers run again" wait_until 60 \
  "SELECT count(*) = 4 FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname IN ('$dba', '$dbb')"
wait $pa $pb
check "job j of $dba catches up" indb $dba "SELECT eoingest.wait_for_catchup('j', '120 s')"
check "job j of $dbb catches up" indb $dbb "SELECT eoingest.wait_for_catchup('j', '120 s')"
is "$(indb $dba "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM t")" "202000 202000" "$dba: each record exactly once"
is "$(indb $dbb "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM t")" "203000 203000" "$dbb: each record exactly once"
is "$(indb $dba "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'j'") $(indb $dbb "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'j'")" \
  "202000 203000" "each database keeps its job's offsets"

# A command that needs the database to itself: the launcher leaves for it
# and comes back; but only for the database's owner, whom the command
# would let through.
workers_a() {
  sql "SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname = '$1'"
}
sql "DROP ROLE IF EXISTS eoi_db_tenant; CREATE ROLE eoi_db_tenant LOGIN" >/dev/null
before=$(workers_a $dba)
out=$(sql "DROP DATABASE $dba" -U eoi_db_tenant 2>&1 || true)
like "$out" "must be owner of database $dba" "DROP DATABASE by another role is refused"
sleep 2
is "$(workers_a $dba)" "$before" "and stops none of the database's workers"
check "ALTER DATABASE ... RENAME without FORCE: the launcher leaves for it" \
  sql "ALTER DATABASE $dba RENAME TO ${dba}_2"
sql "ALTER DATABASE ${dba}_2 RENAME TO $dba" >/dev/null
check "and the job runs again afterwards" wait_until 30 \
  "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname = '$dba'"
sql "DROP ROLE eoi_db_tenant" >/dev/null

# A template is never served, but a database created from it with the
# extension is, without any job function called there.
indb template1 "CREATE EXTENSION eoingest" >/dev/null
out=$(indb template1 "SELECT eoingest.create_job(name => 'k', brokers => '$KAFKA_BROKERS', topic => '$tb',
                 transform => 'INSERT INTO t SELECT \"partition\", \"offset\", value FROM eoingest.batch()')" 2>&1 || true)
like "$out" 'ERROR:  eoingest jobs do not run in database "template1"' "create_job in a template is refused"
sql "CREATE DATABASE eoi_db_c" >/dev/null
indb template1 "DROP EXTENSION eoingest" >/dev/null
check "a new database with the extension gets its launcher" wait_until 20 \
  "SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname = 'eoi_db_c'"
sql "DROP DATABASE eoi_db_c WITH (FORCE)" >/dev/null
check "a dropped database's launcher is gone" wait_until 20 \
  "SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname = 'eoi_db_c'"

# DROP EXTENSION in one database: its launcher and workers go, the other's stay.
indb $dbb "SELECT eoingest.stop_job('j')" >/dev/null
indb $dbb "DROP EXTENSION eoingest CASCADE" >/dev/null 2>&1
check "DROP EXTENSION: the database's launcher exits" wait_until 30 \
  "SELECT count(*) = 0 FROM pg_stat_activity WHERE datname = '$dbb' AND backend_type LIKE 'eoingest%'"
is "$(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname = '$dba'")" 2 \
  "the other database's workers run on"

# eoingest.database limits the databases whose jobs run.
# Names as written: case kept, spaces around them trimmed.
sql "DROP DATABASE IF EXISTS \"Eoi_Db_M\" WITH (FORCE)" >/dev/null
sql "CREATE DATABASE \"Eoi_Db_M\"" >/dev/null
sql "ALTER SYSTEM SET eoingest.database = 'postgres,  $dba , Eoi_Db_M'" >/dev/null
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null
indb Eoi_Db_M "CREATE EXTENSION eoingest; CREATE TABLE t (v text)" >/dev/null
check "a listed database whose name has capitals serves jobs" \
  indb Eoi_Db_M "SELECT eoingest.create_job(name => 'm', brokers => '$KAFKA_BROKERS', topic => '$tb', target => 't', format => 'text')"
sql "DROP DATABASE \"Eoi_Db_M\"" >/dev/null
indb $dbb "CREATE EXTENSION eoingest" >/dev/null
out=$(indb $dbb "SELECT eoingest.create_job(name => 'k', brokers => '$KAFKA_BROKERS', topic => '$tb',
                 transform => 'INSERT INTO t SELECT \"partition\", \"offset\", value FROM eoingest.batch()')" 2>&1 || true)
like "$out" "ERROR:  eoingest jobs do not run in database \"$dbb\"" \
  "create_job in a database eoingest.database does not list is refused"
check "the listed database's job runs after the restart" wait_until 30 \
  "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname = '$dba'"

sql "ALTER SYSTEM RESET eoingest.database" >/dev/null
"$EOINGEST_TEST_DIR/pg.sh" restart >/dev/null

# A plain DROP DATABASE of a database whose job runs: the launcher leaves for it.
check "the job runs again after the restart" wait_until 30 \
  "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname = '$dba'"
check "DROP DATABASE without FORCE while its job runs" sql "DROP DATABASE $dba"

# A database dropped WITH (FORCE) while its launcher is down (here killed):
# its workers die with it, and nobody is left to free their slots but the
# cluster launcher.
indb $dbb "CREATE TABLE IF NOT EXISTS t (part int, off bigint, value text);
           SELECT eoingest.create_job(name => 'k', brokers => '$KAFKA_BROKERS', topic => '$tb', parallelism => 2,
                  transform => 'INSERT INTO t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
           SELECT eoingest.start_job('k')" >/dev/null
wait_until 30 "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'eoingest worker' AND datname = '$dbb'" >/dev/null
freed_before=$(grep -c "freed 2 eoingest worker slots of database" "$EOINGEST_RUN/pg.log" || true)
sql "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'eoingest launcher' AND datname = '$dbb'" >/dev/null
sql "DROP DATABASE $dbb WITH (FORCE)" >/dev/null
deadline=$((SECONDS + 20))
until [ "$(grep -c "freed 2 eoingest worker slots of database" "$EOINGEST_RUN/pg.log" || true)" -gt "$freed_before" ] ||
      [ $SECONDS -ge $deadline ]; do
  sleep 0.5
done
ok $([ "$(grep -c "freed 2 eoingest worker slots of database" "$EOINGEST_RUN/pg.log" || true)" -gt "$freed_before" ]; echo $?) \
  "the slots of a database dropped while its launcher was down are freed"
sql "DROP DATABASE $dbn WITH (FORCE)" >/dev/null
done_testing
