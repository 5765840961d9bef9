-- A transform reads the columns of eoingest.batch() it names, however it
-- names them: the batch computes only what the transform's statement reads,
-- and every column when something hides the reads (a whole-row reference,
-- an inlined SQL function, a query run by ts_stat()).  A value nothing
-- reads is still checked: invalid JSON is a bad record whatever is read.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

\! eoi-kafka create-topic tcols 1 >/dev/null
\! printf 'k1\t{"a": 1, "b": "x"}\nk2\t{"a": 2, "b": "y"}\n' | kcat -P -b "$KAFKA_BROKERS" -t tcols -p 0 -K '\t' -H trace=t1
\! eoi-kafka create-topic tcols_bad 1 >/dev/null
\! printf '{"a": 3}\nnot json\n{"a": 4}\n' | eoi-kafka produce -p 0 tcols_bad

CREATE TABLE tc_names ("offset" bigint, label text);
INSERT INTO tc_names VALUES (0, 'zero'), (1, 'one');
CREATE FUNCTION tc_batch() RETURNS TABLE (k text, v jsonb) LANGUAGE sql STABLE
    AS $$SELECT key, value_json FROM eoingest.batch()$$;

-- Metadata only, over a value that is no JSON.
CREATE TABLE tc_meta (off bigint, part int);
SELECT eoingest.create_job(name => 'tc_meta', brokers => :'brokers', topic => 'tcols_bad', format => 'json',
    batch_timeout_ms => 200,
    transform => $$INSERT INTO tc_meta SELECT "offset", "partition" FROM eoingest.batch()$$);
-- A join with USING (the merged column), a sublink reading an outer column.
CREATE TABLE tc_join (off bigint, k text, a int, label text);
SELECT eoingest.create_job(name => 'tc_join', brokers => :'brokers', topic => 'tcols', format => 'json',
    batch_timeout_ms => 200,
    transform => $$INSERT INTO tc_join
                   SELECT "offset", b.key, (b.value_json->>'a')::int, n.label
                     FROM eoingest.batch() b JOIN tc_names n USING ("offset")
                    WHERE EXISTS (SELECT 1 WHERE b.headers->>'trace' = 't1')$$);
-- A whole-row reference.
CREATE TABLE tc_row (off bigint, r jsonb);
SELECT eoingest.create_job(name => 'tc_row', brokers => :'brokers', topic => 'tcols', format => 'json',
    batch_timeout_ms => 200,
    transform => $$INSERT INTO tc_row SELECT b."offset", to_jsonb(b) FROM eoingest.batch() b$$);
-- An SQL function the planner inlines.
CREATE TABLE tc_fn (k text, b text);
SELECT eoingest.create_job(name => 'tc_fn', brokers => :'brokers', topic => 'tcols', format => 'json',
    batch_timeout_ms => 200,
    transform => $$INSERT INTO tc_fn SELECT k, v->>'b' FROM public.tc_batch()$$);
-- A query of its own, run by ts_stat().
CREATE TABLE tc_stat (word text);
SELECT eoingest.create_job(name => 'tc_stat', brokers => :'brokers', topic => 'tcols', format => 'json',
    batch_timeout_ms => 200,
    transform => $$INSERT INTO tc_stat
                   SELECT word FROM ts_stat('SELECT to_tsvector(''simple'', key || '' '' || (value_json->>''b''))
                                               FROM eoingest.batch()')$$);
-- Two scans of the batch, in a CTE and in a scalar subquery.
CREATE TABLE tc_two (off bigint, k text, top text, hl jsonb);
SELECT eoingest.create_job(name => 'tc_two', brokers => :'brokers', topic => 'tcols', format => 'json',
    batch_timeout_ms => 200,
    transform => $$WITH m AS (SELECT "offset", key FROM eoingest.batch())
                   INSERT INTO tc_two
                   SELECT "offset", key, (SELECT max(value_json->>'b') FROM eoingest.batch()),
                          (SELECT header_list FROM eoingest.batch() c WHERE c."offset" = m."offset")
                     FROM m$$);
SELECT eoingest.start_job(name) FROM eoingest.jobs WHERE name LIKE 'tc\_%' ORDER BY name;

SELECT plan(9);

SELECT ok(test.wait_for($$SELECT bool_and(next_offset = CASE job WHEN 'tc_meta' THEN 3 ELSE 2 END)
                              AND count(*) = 6 FROM eoingest.offsets WHERE job LIKE 'tc\_%'$$),
    'every job reads its topic to the end');
SELECT results_eq($$SELECT off, part FROM tc_meta ORDER BY off$$, $$VALUES (0::bigint, 0), (2, 0)$$,
    'a transform that reads only metadata writes the good records');
SELECT results_eq($$SELECT "offset"::int, sqlstate FROM eoingest.dead_letters WHERE job LIKE 'tc\_%'$$,
    $$VALUES (1, '22P02')$$,
    'and the value that is no JSON is still a dead letter, though nothing reads it');
SELECT results_eq($$SELECT off, k, a, label FROM tc_join ORDER BY off$$,
    $$VALUES (0::bigint, 'k1', 1, 'zero'), (1, 'k2', 2, 'one')$$,
    'a join with USING and a sublink read their columns');
SELECT results_eq($$SELECT off, r->>'key', r->'value_json'->>'b', r->'headers'->>'trace', r->>'topic',
                           r->'header_list'->0->>'value', r->>'value_bytes' IS NOT NULL FROM tc_row ORDER BY off$$,
    $$VALUES (0::bigint, 'k1', 'x', 't1', 'tcols', 't1', true), (1, 'k2', 'y', 't1', 'tcols', 't1', true)$$,
    'a whole-row reference reads every column');
SELECT results_eq($$SELECT k, b FROM tc_fn ORDER BY k$$, $$VALUES ('k1', 'x'), ('k2', 'y')$$,
    'an inlined SQL function reads its columns');
SELECT is((SELECT string_agg(DISTINCT word, ' ' ORDER BY word) FROM tc_stat), 'k1 k2 x y',
    'a query run by ts_stat() reads its columns');
SELECT results_eq($$SELECT off, k, hl->0->>'name' FROM tc_two ORDER BY off$$,
    $$VALUES (0::bigint, 'k1', 'trace'), (1, 'k2', 'trace')$$,
    'a CTE and a correlated subquery over the batch read their columns');
SELECT ok((SELECT bool_and(top IS NOT NULL) FROM tc_two), 'so does a scalar subquery');

SELECT * FROM finish();

SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'tc\_%' ORDER BY name;
