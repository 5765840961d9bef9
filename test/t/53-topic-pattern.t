#!/usr/bin/env bash
# topic => '^pattern': a job reads every topic its pattern matches, topics
# created while it runs within the 10 s the documentation promises (the test
# allows 30), from their beginning; a topic deleted is dropped without
# failing the job, its offsets kept.  Two workers, SIGKILLed while they
# write: each topic's records are in the table once each.  Internal topics
# match only a pattern that names them; a pattern that does not compile is
# refused at create_job.  eoingest.job_topics() shows the topics read now.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
# wait_log SECONDS TEXT: until the server's log holds TEXT.
wait_log() {
  local deadline=$((SECONDS + $1))
  until grep -qF -- "$2" "$EOINGEST_RUN/pg.log"; do
    [ $SECONDS -ge $deadline ] && { diag "not in pg.log after $1 s: $2"; return 1; }
    sleep 0.2
  done
}

plan 14
p=pat$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE pat_t (topic text, part int, off bigint, value text)" >/dev/null

eoi-kafka create-topic "${p}_a" 2 >/dev/null
eoi-kafka create-topic "${p}_b" 1 >/dev/null
eoi-kafka create-topic "other_${p}" 1 >/dev/null
eoi-kafka produce-seq "${p}_a" --count 3000 --format csv >/dev/null
eoi-kafka produce-seq "${p}_b" --count 1000 --format csv >/dev/null
eoi-kafka produce-seq "other_${p}" --count 10 --format csv >/dev/null

like "$(sql "DO \$\$BEGIN
                 PERFORM eoingest.create_job(name => 'pat_bad', brokers => '$KAFKA_BROKERS', topic => '^${p}_(',
                                             target => 'pat_t');
               EXCEPTION WHEN invalid_regular_expression THEN RAISE NOTICE '%: %', SQLSTATE, SQLERRM;
               END\$\$" 2>&1)" "2201B: invalid regular expression" \
  "a pattern that does not compile is refused at create_job (SQLSTATE 2201B)"

sql "SELECT eoingest.create_job(name => 'pat', brokers => '$KAFKA_BROKERS', topic => '^${p}_', parallelism => 2,
        batch_size => 200, batch_timeout_ms => 100,
        transform => 'INSERT INTO pat_t SELECT topic, \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('pat')" >/dev/null
# An unanchored pattern that only an internal topic matches reads nothing.
sql "SELECT eoingest.create_job(name => 'pat_internal', brokers => '$KAFKA_BROKERS', topic => '^.*consumer_offsets',
        target => 'pat_t', batch_timeout_ms => 100);
     SELECT eoingest.start_job('pat_internal')" >/dev/null

check "the topics the pattern matches are read, not the other one" wait_until 60 \
  "SELECT count(*) FILTER (WHERE topic = '${p}_a') = 3000 AND count(*) FILTER (WHERE topic = '${p}_b') = 1000
          AND count(*) FILTER (WHERE topic NOT LIKE '${p}\\_%') = 0 FROM pat_t"

# A topic created while the job runs, written to at once, and more records
# in the others; the workers SIGKILLed while they write.
eoi-kafka create-topic "${p}_c" 3 >/dev/null
created=$(date +%s)
eoi-kafka produce-seq "${p}_c" --count 3000 --format csv >/dev/null &
producer=$!
kills=0
for round in 1 2 3; do
  eoi-kafka produce-seq "${p}_a" --count 2000 --start $((3000 + (round - 1) * 2000)) --format csv >/dev/null
  sleep 0.3
  for pid in $(sql "SELECT pid FROM eoingest.job_status WHERE name = 'pat' AND pid IS NOT NULL"); do
    kill -9 "$pid" 2>/dev/null && kills=$((kills + 1))
  done
  sleep 1
done
wait "$producer"
check "the new topic's records arrive from its beginning" wait_until 90 \
  "SELECT count(*) FILTER (WHERE topic = '${p}_c') = 3000 AND count(*) FILTER (WHERE topic = '${p}_a') = 9000
     FROM pat_t"
diag "the new topic was read within $(($(date +%s) - created)) s; workers SIGKILLed $kills times"
is "$(sql "SELECT string_agg(topic || ':' || partitions, ' ' ORDER BY topic) FROM eoingest.job_topics('pat')")" \
  "${p}_a:2 ${p}_b:1 ${p}_c:3" "job_topics shows the topics the job reads now"
ok "$([ "$kills" -ge 3 ] && echo 0 || echo 1)" "workers were SIGKILLed while they wrote ($kills times)"
is "$(sql "SELECT count(*) - count(DISTINCT (topic, part, off)) FROM pat_t")" 0 "each record once"
is "$(sql "SELECT string_agg(topic || '/' || part || '=' || n, ' ' ORDER BY topic, part)
             FROM (SELECT topic, part, count(*) AS n FROM pat_t GROUP BY topic, part) s")" \
  "$(for t in "${p}_a" "${p}_b" "${p}_c"; do
       eoi-kafka watermarks "$t" | sort -n | awk -v t="$t" '{printf "%s/%d=%d\n", t, $1, $3 - $2}'
     done | paste -sd ' ')" \
  "every partition of every matching topic: as many rows as records"

# A topic deleted: the job goes on, the topic's offsets stay.
eoi-kafka delete-topic "${p}_b" >/dev/null
deleted=$(date +%s)
check "the job logs the deleted topic as gone" wait_log 60 "No longer there: \"${p}_b\"; their offsets are kept."
diag "the deletion was noticed within $(($(date +%s) - deleted)) s"
eoi-kafka produce-seq "${p}_a" --count 100 --start 9000 --format csv >/dev/null
check "records produced afterwards still arrive" wait_until 60 \
  "SELECT count(*) = 9100 FROM pat_t WHERE topic = '${p}_a'"
is "$(sql "SELECT string_agg(state, ',' ORDER BY worker) FROM eoingest.job_status WHERE name = 'pat'")" \
  "running,running" "both workers run on"
is "$(sql "SELECT next_offset FROM eoingest.offsets WHERE job = 'pat' AND topic = '${p}_b'")" 1000 \
  "the deleted topic's offsets are kept"
is "$(sql "SELECT string_agg(topic, ' ' ORDER BY topic) FROM eoingest.job_topics('pat')")" "${p}_a ${p}_c" \
  "and job_topics no longer shows it"
is "$(sql "SELECT count(*) FROM eoingest.offsets WHERE job = 'pat_internal'")" 0 \
  "internal topics match only a pattern that begins with ^__"

# alter_job to another pattern forgets the offsets of the topics it does not
# match, and keeps those of a matching topic that was deleted.
sql "SELECT eoingest.stop_job('pat')" >/dev/null
sql "SELECT eoingest.alter_job('pat', topic => '^${p}_(a|b)\$')" >/dev/null
is "$(sql "SELECT string_agg(DISTINCT topic, ' ' ORDER BY topic) FROM eoingest.offsets WHERE job = 'pat'")" \
  "${p}_a ${p}_b" "alter_job to another pattern: the offsets of the topics it no longer matches are deleted"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'pat%'; DROP TABLE pat_t" >/dev/null
eoi-kafka delete-topic "${p}_a" >/dev/null 2>&1 || true
eoi-kafka delete-topic "${p}_c" >/dev/null 2>&1 || true
eoi-kafka delete-topic "other_${p}" >/dev/null 2>&1 || true
done_testing
