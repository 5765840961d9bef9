-- Mode upsert: INSERT ... ON CONFLICT on the key, later messages win,
-- tombstones delete, all-key tables use DO NOTHING, and the checks of
-- create_job.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

CREATE TABLE kv (id text PRIMARY KEY, v int, note text DEFAULT 'none');
\! eoi-kafka create-topic upsert_topic 1 >/dev/null
\! printf 'a\ta,1,x\nb\tb,2,y\na\ta,3,z\nc\tc,4,\nb\t\n' | eoi-kafka produce -K -z -p 0 upsert_topic
SELECT eoingest.create_job(name => 'upsert', brokers => :'brokers', topic => 'upsert_topic', target => 'kv',
                           format => 'csv', mode => 'upsert', batch_timeout_ms => 200,
                           offset_commit_interval_ms => 100);
SELECT eoingest.start_job('upsert');

CREATE TABLE tags (tag text, item text, PRIMARY KEY (tag, item));
\! eoi-kafka create-topic tags_topic 2 >/dev/null
\! printf '{"tag":"red","item":"apple"}\n{"tag":"red","item":"apple"}\n{"tag":"green","item":"apple"}\n' | eoi-kafka produce -k k tags_topic
SELECT eoingest.create_job(name => 'tags', brokers => :'brokers', topic => 'tags_topic', target => 'tags',
                           format => 'json', mode => 'upsert', batch_timeout_ms => 200);
SELECT eoingest.start_job('tags');

CREATE TABLE nokey (id text, v int);
CREATE TABLE notunique (id text, v int);
CREATE INDEX ON notunique (id);

SELECT plan(9);
SELECT ok(test.wait_for($$SELECT count(*) = 2 FROM kv$$), 'upserts and a tombstone converge');
SELECT results_eq($$SELECT id, v, note FROM kv ORDER BY id$$,
    $$VALUES ('a', 3, 'z'), ('c', 4, NULL)$$, 'the last message of a key wins; b was deleted');

\! printf 'a\ta,5,again\nc\t\nd\td,6,new\n' | eoi-kafka produce -K -z -p 0 upsert_topic
SELECT ok(test.wait_for($$SELECT count(*) = 2 AND bool_and(id IN ('a', 'd')) AND sum(v) = 11 FROM kv$$),
    'later batches update, delete and insert');
\copy test.watermarks ("partition", low, high) FROM PROGRAM 'eoi-kafka watermarks upsert_topic' WITH (DELIMITER ' ')
UPDATE test.watermarks SET topic = 'upsert_topic' WHERE topic IS NULL;
SELECT ok(test.wait_for($$SELECT test.offsets_at_log_end('upsert', 'upsert_topic')$$),
    'offsets are checkpointed after the data and reach the log end');

SELECT ok(test.wait_for($$SELECT count(*) = 2 FROM tags$$), 'an all-key table takes each key once (DO NOTHING)');

SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'nokey', mode => 'upsert')$$, :'brokers'),
    '22023', 'mode upsert needs key columns, and "public.nokey" has no primary key', 'upsert without a key');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'notunique', mode => 'upsert', key_columns => '{id}')$$, :'brokers'),
    '42P10', NULL, 'upsert key without a unique index');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'kv', mode => 'upsert', key_columns => '{nope}')$$, :'brokers'),
    '42703', NULL, 'upsert key column that does not exist');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'kv', mode => 'upsert', key_format => 'xml')$$, :'brokers'),
    '22023', 'unknown format "xml"', 'unknown key_format');
SELECT * FROM finish();
SELECT eoingest.drop_job('upsert'), eoingest.drop_job('tags');
