#!/usr/bin/env bash
# eoingest.preview_job: a dry run reads the next messages where the job's
# workers would, decodes each as the job does and returns its row or its
# error with the position, and writes nothing, moves no offset; a running
# job's stored offsets are where it starts; the owner only; a transform is
# refused with a hint; bad arguments are refused.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 12
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=pv_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka produce-seq "$topic" --count 3 --format csv >/dev/null
printf 'seq_x,not-a-number,1\n' | eoi-kafka produce "$topic" >/dev/null
eoi-kafka produce-seq "$topic" --count 2 --start 4 --format csv >/dev/null
sql "CREATE TABLE pv_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'pv', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'pv_t',
            batch_timeout_ms => 100)" >/dev/null

is "$(sql "SELECT string_agg(\"offset\" || ':' || coalesce(decoded::text, sqlstate || ' ' || error), ' | ' ORDER BY \"offset\")
             FROM eoingest.preview_job('pv')")" \
  '0:{"id": "seq_0", "ts": 0, "temperature": 0} | 1:{"id": "seq_1", "ts": 1, "temperature": 0.5} | 2:{"id": "seq_2", "ts": 2, "temperature": 1} | 3:22P02 invalid input syntax for type bigint: "not-a-number" | 4:{"id": "seq_4", "ts": 4, "temperature": 2} | 5:{"id": "seq_5", "ts": 5, "temperature": 2.5}' \
  "each message's row, or its error and SQLSTATE, by position"
is "$(sql "SELECT (SELECT count(*) FROM pv_t) || ' ' || (SELECT count(*) FROM eoingest.offsets WHERE job = 'pv') || ' ' ||
                  (SELECT count(*) FROM eoingest.dead_letters WHERE job = 'pv')")" "0 0 0" "nothing written, no offset stored"
is "$(sql "SELECT string_agg(\"offset\"::text, ',' ORDER BY \"offset\") FROM eoingest.preview_job('pv', messages => 2)")" \
  "0,1" "messages => 2: the first two"

sql "SELECT eoingest.start_job('pv')" >/dev/null
wait_until 60 "SELECT count(*) = 5 FROM pv_t" >/dev/null
sql "SELECT eoingest.wait_for_catchup('pv', '30 s')" >/dev/null
sql "SELECT eoingest.stop_job('pv')" >/dev/null
eoi-kafka produce-seq "$topic" --count 2 --start 6 --format csv >/dev/null
is "$(sql "SELECT string_agg(\"offset\" || ':' || (decoded->>'id'), ' ' ORDER BY \"offset\") FROM eoingest.preview_job('pv', timeout => '2 s')")" \
  "6:seq_6 7:seq_7" "after the job ran, the dry run starts at its stored offsets"
is "$(sql "SELECT string_agg(\"partition\" || '=' || next_offset, ' ') FROM eoingest.offsets WHERE job = 'pv'")" \
  "0=6" "and leaves them where they were"
sql "SELECT eoingest.reset_offsets('pv', 'latest')" >/dev/null
start=$SECONDS
n=$(sql "SELECT count(*) FROM eoingest.preview_job('pv', timeout => '20 s')")
is "$n $(( SECONDS - start < 10 ))" "0 1" "at the log end: no row, without waiting for the timeout"

# format json: typed values, and a value of the wrong type
jtopic=pvj_$$
eoi-kafka create-topic "$jtopic" 1 >/dev/null
printf '{"id": "a", "n": 7, "tags": ["x", "y"], "at": "2026-01-02T03:04:05Z"}\n{"id": "b", "n": "seven"}\n' |
  eoi-kafka produce "$jtopic" >/dev/null
sql "CREATE TABLE pv_j (id text, n integer, tags text[], at timestamptz);
     SELECT eoingest.create_job(name => 'pvj', brokers => '$KAFKA_BROKERS', topic => '$jtopic', target => 'pv_j',
            format => 'json')" >/dev/null
is "$(sql "SET timezone = 'UTC'; SELECT string_agg(coalesce(decoded::text, left(sqlstate, 2)), ' | ' ORDER BY \"offset\") FROM eoingest.preview_job('pvj', timeout => '2 s')")" \
  '{"n": 7, "at": "2026-01-02T03:04:05+00:00", "id": "a", "tags": ["x", "y"]} | 22' \
  "format json: typed values, and the error of a value of the wrong type"
sql "SELECT eoingest.alter_job(name => 'pvj', max_message_bytes => 40)" >/dev/null
is "$(sql "SELECT string_agg(sqlstate, ',' ORDER BY \"offset\") FROM eoingest.preview_job('pvj', timeout => '2 s')")" \
  "54000,22P02" "a message over max_message_bytes is the error it would be"

sql "CREATE ROLE pv_other_$$ LOGIN; GRANT USAGE ON SCHEMA eoingest TO pv_other_$$;
     GRANT EXECUTE ON FUNCTION eoingest.preview_job TO pv_other_$$" >/dev/null
out=$(psql -XAtq -U "pv_other_$$" -c "SELECT * FROM eoingest.preview_job('pv')" 2>&1 || true)
case "$out" in *'must be owner of eoingest job "pv"'*) ok 0 "another role may not preview the job" ;; *) ok 1 "another role may not preview the job"; diag "$out" ;; esac

sql "SELECT eoingest.create_job(name => 'pvt', brokers => '$KAFKA_BROKERS', topic => '$topic',
            transform => 'INSERT INTO pv_t SELECT NULL, \"offset\", 0 FROM eoingest.batch()')" >/dev/null
out=$(sql "SELECT * FROM eoingest.preview_job('pvt')" 2>&1 || true)
case "$out" in *'cannot preview job "pvt": it has a transform'*HINT*eoingest.batch*) ok 0 "a transform is refused with a hint" ;;
  *) ok 1 "a transform is refused with a hint"; diag "$out" ;; esac
out=$(sql "SELECT * FROM eoingest.preview_job('pv', messages => 0)" 2>&1 || true)
case "$out" in *'messages must be between 1 and 10000, not 0'*) ok 0 "messages => 0 is refused" ;; *) ok 1 "messages => 0 is refused"; diag "$out" ;; esac
out=$(sql "SELECT * FROM eoingest.preview_job('nope')" 2>&1 || true)
case "$out" in *'eoingest job "nope" does not exist'*) ok 0 "an unknown job is refused" ;; *) ok 1 "an unknown job is refused"; diag "$out" ;; esac

sql "SELECT eoingest.drop_job('pv'); SELECT eoingest.drop_job('pvj'); SELECT eoingest.drop_job('pvt');
     DROP TABLE pv_t, pv_j; DROP OWNED BY pv_other_$$; DROP ROLE pv_other_$$" >/dev/null 2>&1
done_testing
