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

-- Keys are compared as values of their columns' types, not as text, and a
-- batch ends as its messages applied one by one would leave it.
CREATE TABLE ik (id int PRIMARY KEY, v text);
\! eoi-kafka create-topic ik_topic 1 >/dev/null
\! printf '1\t1,a\n01\t01,b\n' | eoi-kafka produce -K -z -p 0 ik_topic
SELECT eoingest.create_job(name => 'ik', brokers => :'brokers', topic => 'ik_topic', target => 'ik',
                           mode => 'upsert', batch_timeout_ms => 1000);
SELECT eoingest.start_job('ik');

CREATE TABLE nk (id numeric PRIMARY KEY, v text);
INSERT INTO nk VALUES (2, 'old');
\! eoi-kafka create-topic nk_topic 1 >/dev/null
\! printf '1.0\t1.0,x\n1\t\n2\t\n2.00\t2.00,back\n' | eoi-kafka produce -K -z -p 0 nk_topic
SELECT eoingest.create_job(name => 'nk', brokers => :'brokers', topic => 'nk_topic', target => 'nk',
                           mode => 'upsert', batch_timeout_ms => 1000);
SELECT eoingest.start_job('nk');

CREATE TABLE mk (a int, b text, v text, PRIMARY KEY (a, b));
\! eoi-kafka create-topic mk_topic 1 >/dev/null
\! printf '%s\t%s\n' '{"a":1,"b":"x"}' '{"a":1,"b":"x","v":"first"}' '{"a":"01","b":"x"}' '{"a":"01","b":"x","v":"second"}' '{"a":2,"b":"y"}' '{"a":2,"b":"y","v":"gone"}' '{"a":"02","b":"y"}' '' '{"a":1,"b":"y"}' '{"a":1,"b":"y","v":"other"}' | eoi-kafka produce -K -z -p 0 mk_topic
SELECT eoingest.create_job(name => 'mk', brokers => :'brokers', topic => 'mk_topic', target => 'mk',
                           format => 'json', mode => 'upsert', batch_timeout_ms => 1000);
SELECT eoingest.start_job('mk');

CREATE TABLE nokey (id text, v int);
CREATE TABLE notunique (id text, v int);
CREATE INDEX ON notunique (id);

SELECT plan(13);
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

SELECT ok(test.wait_for($$SELECT count(*) = 1 AND bool_and(id = 1 AND v = 'b') FROM ik$$),
    'integer keys 1 and 01 are one key: the later message wins');
SELECT ok(test.wait_for($$SELECT EXISTS (SELECT FROM nk WHERE v = 'back')$$), 'numeric keys: the batch is in');
SELECT results_eq($$SELECT id::text, v FROM nk ORDER BY id$$, $$VALUES ('2.00', 'back')$$,
    'a tombstone for 1 deletes the value for 1.0 before it; a value after a tombstone stays');
SELECT ok(test.wait_for($$SELECT array_agg(a || b || v ORDER BY a, b) = '{1xsecond,1yother}' FROM mk$$),
    'a two-column key is compared column by column, as typed values');

SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'nokey', mode => 'upsert')$$, :'brokers'),
    '22023', 'mode upsert needs key columns, and "public.nokey" has no primary key', 'upsert without a key');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'notunique', mode => 'upsert', key_columns => '{id}')$$, :'brokers'),
    '42P10', NULL, 'upsert key without a unique index');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'kv', mode => 'upsert', key_columns => '{nope}')$$, :'brokers'),
    '42703', NULL, 'upsert key column that does not exist');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'kv', mode => 'upsert', key_format => 'xml')$$, :'brokers'),
    '22023', 'unrecognized format "xml"', 'unknown key_format');
SELECT * FROM finish();
SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name IN ('upsert', 'tags', 'ik', 'nk', 'mk') ORDER BY name;
