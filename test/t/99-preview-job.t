#!/usr/bin/env bash
# eoingest.preview_job: a dry run reads the next messages where the job's
# workers would, decodes each as the job does and returns its row or its
# error with the position, and writes nothing, moves no offset; a running
# job's stored offsets are where it starts; the owner only; a transform is
# refused with a hint; bad arguments are refused.  With envelope debezium,
# each event's op and the changes it would make.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 15
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

# envelope debezium: each event's op and the changes it makes, nothing written (test/cdc/modes.events:
# r, c, u with an unchanged TOASTed value, c, u moving key 3 to 30, d, a tombstone, d by message key, d,
# c; then an event of an unrecognized op)
dtopic=pvd_$$
eoi-kafka create-topic "$dtopic" 1 >/dev/null
eoi-kafka produce -K -z -p 0 "$dtopic" <"$(dirname "$0")/../cdc/modes.events" >/dev/null
printf '{"id":7}\t{"before":null,"after":{"id":7},"op":"x"}\n' | eoi-kafka produce -K -z -p 0 "$dtopic" >/dev/null
sql "CREATE TABLE pv_d (id int PRIMARY KEY, name text, note text);
     CREATE TABLE pv_h (id int, name text, note text, __op text, __source_ts timestamptz, __source_lsn pg_lsn,
                        __topic text, __partition int, __offset bigint);
     SELECT eoingest.create_job(name => 'pvd', brokers => '$KAFKA_BROKERS', topic => '$dtopic', target => 'pv_d',
            format => 'json', envelope => 'debezium');
     SELECT eoingest.create_job(name => 'pvh', brokers => '$KAFKA_BROKERS', topic => '$dtopic', target => 'pv_h',
            format => 'json', envelope => 'debezium', cdc_mode => 'history')" >/dev/null
is "$(sql "SELECT string_agg(\"offset\" || ' ' || coalesce(decoded::text, sqlstate, '-'), E'\n' ORDER BY \"offset\")
             FROM eoingest.preview_job('pvd', messages => 20, timeout => '2 s')")" \
'0 {"op": "r", "changes": [{"upsert": {"id": "1", "name": "a", "note": "n1"}}]}
1 {"op": "c", "changes": [{"upsert": {"id": "2", "name": "b", "note": "n2"}}]}
2 {"op": "u", "changes": [{"upsert": {"id": "1", "name": "a2"}}]}
3 {"op": "c", "changes": [{"upsert": {"id": "3", "name": "c", "note": "n3"}}]}
4 {"op": "u", "changes": [{"delete": {"id": "3"}}, {"upsert": {"id": "30", "name": "c moved", "note": "n3"}}]}
5 {"op": "d", "changes": [{"delete": {"id": "2"}}]}
6 -
7 {"op": "d", "changes": [{"delete": {"id": "30"}}]}
8 {"op": "d", "changes": [{"delete": {"id": "4"}}]}
9 {"op": "c", "changes": [{"upsert": {"id": "5", "name": "e", "note": "n5"}}]}
10 22023' \
  "envelope debezium: each event's op and changes (a kept TOASTed value left out), a tombstone none, a bad op its error"
is "$(sql "SELECT string_agg(\"offset\" || ' ' || coalesce((decoded->'changes'->0->'append')::text, '-'), E'\n' ORDER BY \"offset\")
             FROM eoingest.preview_job('pvh', messages => 3, timeout => '2 s')")" \
'0 {"id": "1", "__op": "r", "name": "a", "note": "n1", "__topic": "'$dtopic'", "__offset": "0", "__partition": "0", "__source_ts": "2023-11-14 22:13:20+00", "__source_lsn": "0/64"}
1 {"id": "2", "__op": "c", "name": "b", "note": "n2", "__topic": "'$dtopic'", "__offset": "1", "__partition": "0", "__source_ts": "2023-11-14 22:13:21+00", "__source_lsn": "0/C8"}
2 {"id": "1", "__op": "u", "name": "a2", "note": null, "__topic": "'$dtopic'", "__offset": "2", "__partition": "0", "__source_ts": "2023-11-14 22:13:22+00", "__source_lsn": "0/12C"}' \
  "cdc_mode history: the row each event appends, a kept TOASTed value null"
is "$(sql "SELECT (SELECT count(*) FROM pv_d) + (SELECT count(*) FROM pv_h) + (SELECT count(*) FROM eoingest.offsets WHERE job IN ('pvd', 'pvh'))")" \
  "0" "envelope debezium: nothing written, no offset stored"

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
     SELECT eoingest.drop_job('pvd'); SELECT eoingest.drop_job('pvh');
     DROP TABLE pv_t, pv_j, pv_d, pv_h; DROP OWNED BY pv_other_$$; DROP ROLE pv_other_$$" >/dev/null 2>&1
done_testing
