#!/usr/bin/env bash
# Differential, for partitioned targets: the same random CSV messages go
# through the tuple-direct path (src/apply/direct.c) and through COPY's text
# (eoingest.insert_path = copy) into two identical partition trees:
#  1. a range-partitioned table with a foreign key, a unique index, a
#     CHECK and a generated column, whose partitions are
#     - a plain one,
#     - one of its own rowtype (other column order, a dropped column) with
#       a BEFORE ROW trigger that changes a column, drops some rows, reads
#       the whole tree and moves some rows out of the partition's bounds,
#     - a partitioned one with a default partition,
#     and no partition for some keys; an AFTER ROW trigger on the root logs
#     each row with the partition it landed in;
#  2. a partitioned table with a transition table on its AFTER STATEMENT
#     trigger and a BEFORE ROW trigger on one partition;
#  3. a partition as the target, with rows outside its bounds;
#  4. 40 hash partitions, more than direct.c keeps buffers for, in batches
#     that flush in the middle (buffers dropped, then made again).
# Rows (and their partitions), logs, transition tables and dead letters
# (offsets, SQLSTATEs) must be the same both ways, and the direct jobs must
# have taken the direct path (fault point direct-insert, which only logs).
# EOINGEST_PARTITION_MESSAGES / EOINGEST_PARTITION_SEED set the batch.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"
. "$(dirname "$0")/../lib/jobs.sh"

plan 17
n=${EOINGEST_PARTITION_MESSAGES:-1500}
seed=${EOINGEST_PARTITION_SEED:-$RANDOM}
diag "messages $n, seed $seed (EOINGEST_PARTITION_SEED=$seed to repeat)"
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# One Kafka partition: the order of the rows decides which of two is refused.
wide=dp_wide_$$ narrow=dp_narrow_$$
eoi-kafka create-topic "$wide" 1 >/dev/null
eoi-kafka create-topic "$narrow" 1 >/dev/null
gen_messages() { # FIELDS: wide (k,a,e,p,u) or narrow (k,e)
  python3 - "$n" "$seed" "$1" <<'PY'
import random, sys
n, seed, fields = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
r = random.Random(seed)
for i in range(n):
    k = r.randrange(0, 1100)              # 1000 and over: no partition
    a = r.randrange(-10, 3000)            # -5 or below: the CHECK refuses it
    if i % 100 == 50:
        a = r.choice([-10, -9, -8, -6, -5])  # at random only 5 in 3010: some seeds had none
    if r.random() < 0.01:
        a = "x"                           # not an int: a dead letter
    e = r.choice(["a", "bee", "sea", "", "dee e"])
    p = r.randrange(1, 111)               # 101-110: no such parent
    u = r.randrange(20)                   # repeats of (k, u) break the unique index
    print(f"{k},{a},{e},{p},{u}" if fields == "wide" else f"{k},{e}")
PY
}
gen_messages wide | eoi-kafka produce "$wide" >/dev/null
gen_messages narrow | eoi-kafka produce "$narrow" >/dev/null

sql "CREATE TABLE dp_parent (id int PRIMARY KEY);
     INSERT INTO dp_parent SELECT generate_series(1, 100)" >/dev/null
for t in pd pc; do
  sql "CREATE TABLE $t (k int NOT NULL, a int CONSTRAINT a_min CHECK (a > -5), e text, p int REFERENCES dp_parent,
         u int, seen bigint, gen int GENERATED ALWAYS AS (a * 2) STORED, UNIQUE (k, u)) PARTITION BY RANGE (k);
       CREATE TABLE ${t}_low PARTITION OF $t FOR VALUES FROM (0) TO (300);
       CREATE TABLE ${t}_mid (junk int, u int, e text, seen bigint, p int, a int CONSTRAINT a_min CHECK (a > -5),
         k int NOT NULL, gen int GENERATED ALWAYS AS (a * 2) STORED);
       ALTER TABLE ${t}_mid DROP COLUMN junk;
       ALTER TABLE $t ATTACH PARTITION ${t}_mid FOR VALUES FROM (300) TO (600);
       CREATE TABLE ${t}_hi PARTITION OF $t FOR VALUES FROM (600) TO (1000) PARTITION BY RANGE (k);
       CREATE TABLE ${t}_hi_a PARTITION OF ${t}_hi FOR VALUES FROM (600) TO (800);
       CREATE TABLE ${t}_hi_rest PARTITION OF ${t}_hi DEFAULT;
       CREATE TABLE ${t}_log (part text, k int, a int, e text, seen bigint);
       CREATE FUNCTION ${t}_mid_before_row() RETURNS trigger LANGUAGE plpgsql AS \$\$
         BEGIN
           IF NEW.a % 7 = 0 THEN RETURN NULL; END IF;
           NEW.e := upper(NEW.e);
           NEW.seen := (SELECT count(*) FROM $t);
           IF NEW.a % 11 = 0 THEN NEW.k := NEW.k + 1000; END IF;
           RETURN NEW;
         END \$\$;
       CREATE FUNCTION ${t}_after_row() RETURNS trigger LANGUAGE plpgsql AS \$\$
         BEGIN
           INSERT INTO ${t}_log VALUES (replace(TG_TABLE_NAME, '$t', 'T'), NEW.k, NEW.a, NEW.e, NEW.seen);
           RETURN NULL;
         END \$\$;
       CREATE TRIGGER br BEFORE INSERT ON ${t}_mid FOR EACH ROW EXECUTE FUNCTION ${t}_mid_before_row();
       CREATE TRIGGER ar AFTER INSERT ON $t FOR EACH ROW EXECUTE FUNCTION ${t}_after_row();

       CREATE TABLE ${t}q (k int, e text) PARTITION BY RANGE (k);
       CREATE TABLE ${t}q_1 PARTITION OF ${t}q FOR VALUES FROM (0) TO (600);
       CREATE TABLE ${t}q_2 PARTITION OF ${t}q FOR VALUES FROM (600) TO (1100);
       CREATE TABLE ${t}q_new (k int, e text);
       CREATE FUNCTION ${t}q_before_row() RETURNS trigger LANGUAGE plpgsql AS \$\$
         BEGIN NEW.e := NEW.e || '!'; RETURN NEW; END \$\$;
       CREATE FUNCTION ${t}q_after_stmt() RETURNS trigger LANGUAGE plpgsql AS \$\$
         BEGIN INSERT INTO ${t}q_new SELECT k, e FROM new_rows; RETURN NULL; END \$\$;
       CREATE TRIGGER br BEFORE INSERT ON ${t}q_2 FOR EACH ROW EXECUTE FUNCTION ${t}q_before_row();
       CREATE TRIGGER ast AFTER INSERT ON ${t}q REFERENCING NEW TABLE AS new_rows
         FOR EACH STATEMENT EXECUTE FUNCTION ${t}q_after_stmt();

       CREATE TABLE ${t}l_root (k int, e text) PARTITION BY RANGE (k);
       CREATE TABLE ${t}l PARTITION OF ${t}l_root FOR VALUES FROM (0) TO (300);

       CREATE TABLE ${t}w (k int, e text) PARTITION BY HASH (k);
       DO \$\$ BEGIN
         FOR i IN 0..39 LOOP
           EXECUTE format('CREATE TABLE %I PARTITION OF ${t}w FOR VALUES WITH (MODULUS 40, REMAINDER %s)', '${t}w_' || i, i);
         END LOOP;
       END \$\$" >/dev/null
done

run_job() { # JOB TOPIC TABLE COLUMNS PATH [BATCH]
  set_insert_path "$5"
  job_consume_all "$1" "$n" 180 "brokers => '$KAFKA_BROKERS', topic => '$2', target => '$3', format => 'csv',
    columns => '$4', batch_size => ${6:-300}, batch_timeout_ms => 200"
}

set_fault direct-insert sleep 0
f0=$(fault_count direct-insert)
check "COPY's text, a partitioned table: every message consumed" run_job pc1 "$wide" pc '{k,a,e,p,u}' copy
check "COPY's text, transition tables: every message consumed" run_job pc2 "$narrow" pcq '{k,e}' copy
check "COPY's text, a partition: every message consumed" run_job pc3 "$narrow" pcl '{k,e}' copy
check "COPY's text, 40 partitions: every message consumed" run_job pc4 "$narrow" pcw '{k,e}' copy 1500
f1=$(fault_count direct-insert)
check "tuples, a partitioned table: every message consumed" run_job pd1 "$wide" pd '{k,a,e,p,u}' direct
check "tuples, transition tables: every message consumed" run_job pd2 "$narrow" pdq '{k,e}' direct
check "tuples, a partition: every message consumed" run_job pd3 "$narrow" pdl '{k,e}' direct
check "tuples, 40 partitions: every message consumed" run_job pd4 "$narrow" pdw '{k,e}' direct 1500
f2=$(fault_count direct-insert)
clear_fault
reset_insert_path
diag "direct path ran $((f2 - f1)) times (COPY jobs: $((f1 - f0)))"
check "the direct jobs took the direct path, the COPY jobs did not" test $((f2 - f1)) -gt 0 -a $((f1 - f0)) = 0

# same_both_ways QUERY: QUERY over table pd's names and over pc's give the same rows.
same_both_ways() {
  local q=$1
  sql "SELECT count(*) FROM ((${q//@/pd} EXCEPT ALL ${q//@/pc}) UNION ALL (${q//@/pc} EXCEPT ALL ${q//@/pd})) x"
}
# same_dead_letters JOB_DIRECT JOB_COPY
same_dead_letters() {
  sql "WITH c AS (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = '$2'),
            d AS (SELECT \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = '$1')
       SELECT count(*) FROM ((TABLE c EXCEPT ALL TABLE d) UNION ALL (TABLE d EXCEPT ALL TABLE c)) x"
}

rows=$(sql "SELECT count(*) FROM pd")
diag "rows $rows by partition: $(sql "SELECT string_agg(p || ' ' || c, ', ') FROM
  (SELECT tableoid::regclass::text p, count(*) c FROM pd GROUP BY 1 ORDER BY 1) s")"
diag "dead letters by SQLSTATE: $(sql "SELECT string_agg(sqlstate || ' ' || c, ', ') FROM
  (SELECT sqlstate, count(*) c FROM eoingest.dead_letters WHERE job = 'pd1' GROUP BY 1 ORDER BY 1) s")"
check "rows in all four partitions; dead letters of the CHECK, the unique index, the bad int and the missing partition" \
  test "$(sql "SELECT count(DISTINCT tableoid) FROM pd")" = 4 -a \
    "$(sql "SELECT count(DISTINCT sqlstate) FROM eoingest.dead_letters WHERE job = 'pd1'")" -ge 4
is "$(same_both_ways "SELECT replace(tableoid::regclass::text, '@', 'T'), k, a, e, p, u, seen, gen FROM @")" 0 \
  "the same rows both ways, each in the same partition (the trigger's column and its count of the rows before each)"
is "$(same_both_ways "TABLE @_log")" 0 "the same AFTER ROW log both ways"
is "$(same_dead_letters pd1 pc1)" 0 "the same dead letters, offset by offset, with the same SQLSTATE"
[ "$(same_dead_letters pd1 pc1)" = 0 ] ||
  diag "$(sql "SELECT job, \"offset\", sqlstate, error FROM eoingest.dead_letters WHERE job IN ('pc1', 'pd1') ORDER BY 2, 1 LIMIT 40")"

is "$(same_both_ways "SELECT tableoid::regclass::text = '@q_2', k, e FROM @q") $(same_both_ways "TABLE @q_new") $(same_dead_letters pd2 pc2)" "0 0 0" \
  "transition tables: the same rows, the same transition table, the same dead letters"
is "$(sql "SELECT (SELECT count(*) FROM pdq) = (SELECT count(*) FROM pdq_new) AND (SELECT count(*) FROM pdq_new WHERE k >= 600 AND e NOT LIKE '%!') = 0")" t \
  "the transition table holds every row, as the partition's BEFORE ROW trigger left it"

is "$(same_both_ways "TABLE @l") $(same_dead_letters pd3 pc3) $(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'pd3' AND sqlstate = '23514'")" \
  "0 0 $(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'pc3'")" \
  "a partition as the target: the same rows, and every row outside its bounds a dead letter (23514) both ways"

is "$(same_both_ways "SELECT replace(tableoid::regclass::text, '@', 'T'), k, e FROM @w") $(sql "SELECT count(*) FROM pdw")" \
  "0 $(sql "SELECT count(*) FROM pcw")" "40 partitions: the same rows both ways, each in the same partition"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name IN ('pc1', 'pc2', 'pc3', 'pc4', 'pd1', 'pd2', 'pd3', 'pd4');
     DROP TABLE pd, pc, pd_log, pc_log, pdq, pcq, pdq_new, pcq_new, pdl_root, pcl_root, pdw, pcw, dp_parent;
     DROP FUNCTION pd_mid_before_row, pc_mid_before_row, pd_after_row, pc_after_row,
       pdq_before_row, pcq_before_row, pdq_after_stmt, pcq_after_stmt" >/dev/null
eoi-kafka delete-topic "$wide" >/dev/null 2>&1 || true
eoi-kafka delete-topic "$narrow" >/dev/null 2>&1 || true
done_testing
