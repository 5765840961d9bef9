#!/usr/bin/env bash
# An UNLOGGED partition anywhere in a partitioned target would lose its rows
# in a crash while the offsets that count them survive; a foreign partition's
# rows commit remotely before the batch does.  The exact modes
# refuse such a target at create_job, and a running job stops, with its
# offsets where its rows are, when a partition is made unlogged or an
# unlogged one is attached under it.  The modes that promise less accept it.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 13
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
topic=unlogged_$$
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 10000 --format csv >/dev/null	# seq_i,i,i*0.5

# rows = offsets: every row the job committed is counted by its offsets, and no more.
# (Rows already in a partition when it is made unlogged are the DDL's to lose in a
# crash; what the job must not do is write more into it.)
consistent() {
  sql "SELECT (SELECT count(*) FROM $1) = (SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = '$2')"
}

# --- at create_job: a range-partitioned table, its second partition unlogged --------
sql "CREATE TABLE ul_t (id text, ts bigint, temperature float8) PARTITION BY RANGE (ts);
     CREATE TABLE ul_t1 PARTITION OF ul_t FOR VALUES FROM (MINVALUE) TO (5000);
     CREATE UNLOGGED TABLE ul_t2 PARTITION OF ul_t FOR VALUES FROM (5000) TO (MAXVALUE)" >/dev/null
create() {	# create NAME TARGET MODE
  sql "SELECT eoingest.create_job(name => '$1', brokers => '$KAFKA_BROKERS', topic => '$topic', target => '$2',
              mode => '$3', batch_timeout_ms => 100, batch_size => 1000)" 2>&1 || true
}
out=$(create ul_eo ul_t exactly_once)
like "$out" 'target "ul_t" has an unlogged partition "ul_t2", which mode exactly_once cannot write into' \
  "exactly_once refuses a target with an unlogged partition"
like "$out" 'HINT:  Make the partition logged (ALTER TABLE public.ul_t2 SET LOGGED)' "and says how to fix it"
like "$(create ul_tp ul_t two_phase)" 'unlogged partition "ul_t2"' "so does two_phase"
is "$(create ul_alo ul_t at_least_once)" "" "at_least_once, which promises less, accepts it"
sql "SELECT eoingest.drop_job('ul_alo')" >/dev/null

# Sub-partitions count too.
sql "CREATE TABLE ul_s (id text, ts bigint, temperature float8) PARTITION BY RANGE (ts);
     CREATE TABLE ul_s1 PARTITION OF ul_s FOR VALUES FROM (MINVALUE) TO (5000) PARTITION BY HASH (id);
     CREATE TABLE ul_s1a PARTITION OF ul_s1 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
     CREATE UNLOGGED TABLE ul_s1b PARTITION OF ul_s1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
     CREATE TABLE ul_s2 PARTITION OF ul_s FOR VALUES FROM (5000) TO (MAXVALUE)" >/dev/null
like "$(create ul_sub ul_s two_phase)" 'unlogged partition "ul_s1b"' "an unlogged sub-partition is found too"

# A foreign partition: its rows commit on the remote server before the batch does.
sql "CREATE EXTENSION IF NOT EXISTS postgres_fdw;
     CREATE SERVER ul_loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (dbname 'postgres');
     CREATE TABLE ul_f (id text, ts bigint, temperature float8) PARTITION BY RANGE (ts);
     CREATE TABLE ul_f1 PARTITION OF ul_f FOR VALUES FROM (MINVALUE) TO (5000);
     CREATE FOREIGN TABLE ul_f2 PARTITION OF ul_f FOR VALUES FROM (5000) TO (MAXVALUE) SERVER ul_loop" >/dev/null
like "$(create ul_fdw ul_f exactly_once)" 'target "ul_f" has a foreign partition "ul_f2", which mode exactly_once cannot write into' \
  "exactly_once refuses a target with a foreign partition"
is "$(create ul_fdw_alo ul_f at_least_once)" "" "at_least_once accepts it"
sql "SELECT eoingest.drop_job('ul_fdw_alo')" >/dev/null

# --- under a running job: SET UNLOGGED -------------------------------------------------
sql "ALTER TABLE ul_t2 SET LOGGED" >/dev/null
is "$(create ul_run ul_t exactly_once)" "" "with every partition logged the job is created"
sql "SELECT eoingest.start_job('ul_run')" >/dev/null
check "it ingests the first 10,000 records" wait_until 60 "SELECT count(*) = 10000 FROM ul_t"
sql "ALTER TABLE ul_t2 SET UNLOGGED" >/dev/null
eoi-kafka produce-seq "$topic" --count 10000 --start 10000 --format csv >/dev/null
check "a partition made unlogged under the running job stops it with the reason" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%unlogged partition \"ul_t2\"%' FROM eoingest.jobs WHERE name = 'ul_run'"
is "$(sql "SELECT count(*) FROM ul_t")/$(consistent ul_t ul_run)" "10000/t" \
  "no record after it went in, and the offsets account for exactly the rows"

# --- an unlogged partition attached under a running job -------------------------------
sql "ALTER TABLE ul_t DETACH PARTITION ul_t2; ALTER TABLE ul_t2 SET LOGGED; ALTER TABLE ul_t ATTACH PARTITION ul_t2 FOR VALUES FROM (5000) TO (20000);
     SELECT eoingest.start_job('ul_run')" >/dev/null
check "set logged again, the job resumes and ingests the rest" wait_until 60 "SELECT count(*) = 20000 FROM ul_t"
sql "CREATE UNLOGGED TABLE ul_t3 (id text, ts bigint, temperature float8);
     ALTER TABLE ul_t ATTACH PARTITION ul_t3 FOR VALUES FROM (20000) TO (MAXVALUE)" >/dev/null
eoi-kafka produce-seq "$topic" --count 1000 --start 20000 --format csv >/dev/null
check "an unlogged partition attached later stops it too, its rows not written" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%unlogged partition \"ul_t3\"%' AND (SELECT count(*) FROM ul_t) = 20000
     FROM eoingest.jobs WHERE name = 'ul_run'"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'ul_%'; DROP TABLE ul_t, ul_s, ul_f; DROP SERVER ul_loop" >/dev/null
done_testing
