#!/usr/bin/env bash
# Differential: the same random CSV messages go through the tuple-direct
# path (src/apply/direct.c) and through COPY's text (eoingest.insert_path = copy)
# into two identical tables; the rows must be the same both ways, and so
# must the dead letters' offsets and SQLSTATEs.  Types: int, bigint,
# smallint with a CHECK, numeric(8,2), text, varchar(5), bool, timestamptz,
# date, uuid, jsonb, float8, domains with CHECK and NOT NULL; a NOT NULL
# column, a UNIQUE index, a column default and a stored generated column.
# EOINGEST_DIRECT_MESSAGES / EOINGEST_DIRECT_SEED set the batch.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/jobs.sh"

plan 16
n=${EOINGEST_DIRECT_MESSAGES:-4000}
seed=${EOINGEST_DIRECT_SEED:-$RANDOM}
diag "messages $n, seed $seed (EOINGEST_DIRECT_SEED=$seed to repeat)"
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

sql "DROP DOMAIN IF EXISTS dx_pos CASCADE; DROP DOMAIN IF EXISTS dx_nn CASCADE;
     CREATE DOMAIN dx_pos AS int CHECK (VALUE > 0);
     CREATE DOMAIN dx_nn AS text NOT NULL" >/dev/null
for format in csv json; do
topic=dx_${format}_$$
# One partition: which of two rows of the same key is refused depends on their order.
eoi-kafka create-topic "$topic" 1 >/dev/null
python3 "$(dirname "$0")/../fuzz/direct_messages.py" "$n" "$seed" "$format" | eoi-kafka produce "$topic" >/dev/null
for t in dx_direct dx_copy; do
  sql "CREATE TABLE $t (a int NOT NULL, b bigint, c smallint CHECK (c >= 0), d numeric(8,2), e text,
         f varchar(5), g bool, h timestamptz, i date, j uuid, k jsonb, l float8, p dx_pos, n dx_nn,
         u int UNIQUE, dflt int DEFAULT 42, gen int GENERATED ALWAYS AS (a * 2) STORED)" >/dev/null
done
cols="{a,b,c,d,e,f,g,h,i,j,k,l,p,n,u}"
run_job() { # JOB TABLE PATH
  set_insert_path "$3"
  job_consume_all "$1" "$n" 120 "brokers => '$KAFKA_BROKERS', topic => '$topic', target => '$2', format => '$format',
    columns => '$cols', batch_size => 500, batch_timeout_ms => 200"
}
check "$format through COPY's text: every message consumed" run_job dx_c dx_copy copy
check "$format straight into tuples: every message consumed" run_job dx_d dx_direct direct
reset_insert_path

rows=$(sql "SELECT count(*) FROM dx_direct")
dead=$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'dx_d'")
diag "$format: rows $rows, dead letters $dead"
check "$format: the batch has rows and dead letters both" test "$rows" -gt 0 -a "$dead" -gt 0
is "$(sql "SELECT count(*) FROM ((TABLE dx_direct EXCEPT ALL TABLE dx_copy) UNION ALL (TABLE dx_copy EXCEPT ALL TABLE dx_direct)) x")" 0 \
  "$format: the same rows both ways"
is "$(sql "SELECT count(*) FROM dx_copy")" "$rows" "$format: as many rows both ways"
diff_dl=$(sql "WITH c AS (SELECT \"partition\", \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = 'dx_c'),
                    d AS (SELECT \"partition\", \"offset\", sqlstate FROM eoingest.dead_letters WHERE job = 'dx_d')
               SELECT count(*) FROM ((TABLE c EXCEPT ALL TABLE d) UNION ALL (TABLE d EXCEPT ALL TABLE c)) x")
is "$diff_dl" 0 "$format: the same dead letters, offset by offset, with the same SQLSTATE"
[ "$diff_dl" = 0 ] || diag "$(sql "SELECT job, \"partition\", \"offset\", sqlstate, error FROM eoingest.dead_letters WHERE job IN ('dx_c', 'dx_d') ORDER BY 2, 3, 1 LIMIT 40")"
# Which path wrote is visible in the errors' context: COPY names its line.
is "$(sql "SELECT count(*) FILTER (WHERE error LIKE '%CONTEXT: COPY dx_copy, line%') > 0 FROM eoingest.dead_letters WHERE job = 'dx_c'")" t \
  "$format: the copy job went through COPY"
is "$(sql "SELECT count(*) FILTER (WHERE error LIKE '%COPY dx_direct%') FROM eoingest.dead_letters WHERE job = 'dx_d'")" 0 \
  "$format: and the direct job did not"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name IN ('dx_c', 'dx_d'); DROP TABLE dx_direct, dx_copy" >/dev/null
done
sql "DROP DOMAIN dx_pos, dx_nn" >/dev/null
done_testing
