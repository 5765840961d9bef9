-- mapping => '{"column": "source"}': columns filled from paths into the
-- value and the key, the message's coordinates, timestamp and headers, and
-- constants, end to end against the real broker; upsert keyed by the Kafka
-- coordinates; and the refusals, with their SQLSTATEs.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

-- ---- json, with a json key and headers ----
CREATE TABLE fm_json (order_id int, customer text, first_sku text, slash text, tilde text,
                      topic text, part int, off bigint, ts timestamptz, ts_ms bigint,
                      hdrs jsonb, trace text, source text, region text DEFAULT 'eu', kid int, kraw text,
                      doc jsonb, nums int[], note text);
\! eoi-kafka create-topic fm_json 1 >/dev/null
-- offset 0: everything; 1: paths missing; 2: not JSON; 3: an array; 4: nested values into jsonb and int[]
\! printf '%s\t%s\n' '{"id":7,"s":"k\"k"}' '{"order":{"id":42,"items":[{"sku":"A-1"},{"sku":"B-2"}]},"customer":"ann","a/b":"sl","t~x":"ti","note":"say \"hi\""}' '{"id":8}' '{"order":{"id":43},"customer":null}' '{"id":9}' 'not json' '{"id":10}' '[1,2]' '{"id":11}' '{"order":{"id":44,"items":[]},"doc":{"x":[1,{"y":2}]},"nums":[3,4]}' | eoi-kafka produce -p 0 -K -H trace-id=abc -H env=test fm_json
SELECT eoingest.create_job(name => 'fm_json', brokers => :'brokers', topic => 'fm_json', target => 'fm_json',
    format => 'json', key_format => 'json', batch_timeout_ms => 200,
    mapping => '{"order_id": "/order/id", "customer": "/customer", "first_sku": "/order/items/0/sku",
                 "slash": "/a~1b", "tilde": "/t~0x", "topic": "$topic", "part": "$partition", "off": "$offset",
                 "ts": "$timestamp", "ts_ms": "$timestamp", "hdrs": "$headers", "trace": "$header/trace-id",
                 "source": {"const": "shop"}, "kid": "$key/id", "kraw": "$key",
                 "doc": "/doc", "nums": "/nums", "note": "/note"}');
SELECT eoingest.start_job('fm_json');

-- ---- csv: field numbers ----
CREATE TABLE fm_csv (a text, c int, topic text, off bigint, k text, n numeric);
\! eoi-kafka create-topic fm_csv 1 >/dev/null
\! printf '%s\n' 'x,y,3' 'p,q' '"quoted, comma",,5' | eoi-kafka produce -p 0 -k k1 fm_csv
SELECT eoingest.create_job(name => 'fm_csv', brokers => :'brokers', topic => 'fm_csv', target => 'fm_csv',
    batch_timeout_ms => 200,
    mapping => '{"a": "/1", "c": "/3", "topic": "$topic", "off": "$offset", "k": "$key", "n": {"const": 1.5}}');
SELECT eoingest.start_job('fm_csv');

-- ---- text: the whole value, and a NOT NULL column a message cannot fill ----
CREATE TABLE fm_text (line text NOT NULL, hdr text NOT NULL, off bigint);
\! eoi-kafka create-topic fm_text 1 >/dev/null
\! printf '%s\n' 'one' 'two' | eoi-kafka produce -p 0 -H h=1 fm_text
\! printf '%s\n' 'three' | eoi-kafka produce -p 0 fm_text
SELECT eoingest.create_job(name => 'fm_text', brokers => :'brokers', topic => 'fm_text', target => 'fm_text',
    format => 'text', batch_timeout_ms => 200,
    mapping => '{"line": "$value", "hdr": "$header/h", "off": "$offset"}');
SELECT eoingest.start_job('fm_text');

-- ---- upsert keyed by the Kafka coordinates (messages without keys) ----
CREATE TABLE fm_up (topic text, part int, off bigint, body text, PRIMARY KEY (topic, part, off));
\! eoi-kafka create-topic fm_up 2 >/dev/null
\! printf '%s\n' 'a' 'b' 'c' 'd' | eoi-kafka produce fm_up
SELECT eoingest.create_job(name => 'fm_up', brokers => :'brokers', topic => 'fm_up', target => 'fm_up',
    format => 'text', mode => 'upsert', key_columns => '{topic,part,off}', batch_timeout_ms => 200,
    mapping => '{"topic": "$topic", "part": "$partition", "off": "$offset", "body": "$value"}');
SELECT eoingest.start_job('fm_up');

-- ---- upsert by the message key, tombstones included ----
CREATE TABLE fm_del (id text PRIMARY KEY, v text, off bigint);
\! eoi-kafka create-topic fm_del 1 >/dev/null
\! printf '%s\t%s\n' k1 a k2 b k1 '' k3 c | eoi-kafka produce -p 0 -K -z fm_del
SELECT eoingest.create_job(name => 'fm_del', brokers => :'brokers', topic => 'fm_del', target => 'fm_del',
    format => 'text', mode => 'upsert', batch_timeout_ms => 200,
    mapping => '{"id": "$key", "v": "$value", "off": "$offset"}');
SELECT eoingest.start_job('fm_del');
-- a tombstone cannot give a key column that the mapping reads from the value
CREATE TABLE fm_delv (id text PRIMARY KEY, v text);
\! eoi-kafka create-topic fm_delv 1 >/dev/null
\! printf '%s\t%s\n' k1 a k1 '' | eoi-kafka produce -p 0 -K -z fm_delv
SELECT eoingest.create_job(name => 'fm_delv', brokers => :'brokers', topic => 'fm_delv', target => 'fm_delv',
    format => 'text', mode => 'upsert', batch_timeout_ms => 200,
    mapping => '{"id": "$value", "v": "$value"}');
SELECT eoingest.start_job('fm_delv');

SELECT plan(34);

SELECT ok(test.wait_for($$SELECT next_offset = 5 FROM eoingest.offsets WHERE job = 'fm_json'$$), 'json: every message consumed');
SELECT results_eq($$SELECT order_id, customer, first_sku, slash, tilde, topic, part, off, source, region, kid, kraw
                      FROM fm_json ORDER BY off$$,
    $$VALUES (42, 'ann', 'A-1', 'sl', 'ti', 'fm_json', 0, 0::bigint, 'shop', 'eu', 7, '{"id":7,"s":"k\"k"}'),
             (43, NULL, NULL, NULL, NULL, 'fm_json', 0, 1, 'shop', 'eu', 8, '{"id":8}'),
             (44, NULL, NULL, NULL, NULL, 'fm_json', 0, 4, 'shop', 'eu', 11, '{"id":11}')$$,
    'json: pointers into the value (nested, array elements, ~1 and ~0), into the key, the coordinates, a constant; a missing path or a null is NULL, an unmapped column takes its default');
SELECT results_eq($$SELECT hdrs, trace FROM fm_json ORDER BY off$$,
    $$VALUES ('{"trace-id": "abc", "env": "test"}'::jsonb, 'abc'), ('{"trace-id": "abc", "env": "test"}', 'abc'),
             ('{"trace-id": "abc", "env": "test"}', 'abc')$$,
    'json: $headers as an object, $header/name one value');
SELECT ok((SELECT bool_and(ts = to_timestamp(ts_ms / 1000.0) AND ts > now() - interval '1 hour' AND ts <= now())
             FROM fm_json),
    'json: $timestamp into timestamptz and, as milliseconds, into bigint');
SELECT is((SELECT note FROM fm_json WHERE off = 0), 'say "hi"',
    'json: an escaped string of the value, read after a path into the key that has one too');
SELECT results_eq($$SELECT doc, nums FROM fm_json WHERE off = 4$$,
    $$VALUES ('{"x": [1, {"y": 2}]}'::jsonb, '{3,4}'::int[])$$,
    'json: an object into jsonb, an array into int[]');
SELECT results_eq($$SELECT "offset"::int, sqlstate FROM eoingest.dead_letters WHERE job = 'fm_json' ORDER BY "offset"$$,
    $$VALUES (2, '22P02'), (3, '22P02')$$,
    'json: a value that is not JSON, or not an object, is a dead letter');
SELECT ok((SELECT error LIKE '%JSON message is not an object%' FROM eoingest.dead_letters WHERE job = 'fm_json' AND "offset" = 3),
    'which says why');

SELECT ok(test.wait_for($$SELECT count(*) = 3 FROM fm_csv$$), 'csv: rows arrive');
SELECT results_eq($$SELECT a, c, topic, off, k, n FROM fm_csv ORDER BY off$$,
    $$VALUES ('x', 3, 'fm_csv', 0::bigint, 'k1', 1.5), ('p', NULL, 'fm_csv', 1, 'k1', 1.5),
             ('quoted, comma', 5, 'fm_csv', 2, 'k1', 1.5)$$,
    'csv: field numbers from 1, a field the message lacks is NULL; $key; a numeric constant');

SELECT ok(test.wait_for($$SELECT next_offset = 3 FROM eoingest.offsets WHERE job = 'fm_text'$$), 'text: every message consumed');
SELECT results_eq($$SELECT line, hdr, off FROM fm_text ORDER BY off$$,
    $$VALUES ('one', '1', 0::bigint), ('two', '1', 1)$$,
    'text: $value and one header');
SELECT results_eq($$SELECT "offset"::int, sqlstate FROM eoingest.dead_letters WHERE job = 'fm_text'$$,
    $$VALUES (2, '23502')$$,
    'a NOT NULL column whose source the message lacks: a dead letter');

SELECT ok(test.wait_for($$SELECT count(*) = 4 FROM fm_up$$), 'upsert by coordinates: rows arrive');
SELECT eoingest.stop_job('fm_up');
SELECT eoingest.reset_offsets('fm_up', 'earliest');
SELECT eoingest.start_job('fm_up');
SELECT ok(test.wait_for($$SELECT messages >= 8 FROM eoingest.job_stats WHERE job = 'fm_up'$$), 'upsert by coordinates: read again from the start');
SELECT results_eq($$SELECT count(*)::int, count(DISTINCT (part, off))::int, string_agg(body, '' ORDER BY body) FROM fm_up$$,
    $$VALUES (4, 4, 'abcd')$$,
    'upsert keyed by ($topic, $partition, $offset): reading again writes no duplicate');

SELECT ok(test.wait_for($$SELECT next_offset = 4 FROM eoingest.offsets WHERE job = 'fm_del'$$), 'upsert by key: every message consumed');
SELECT results_eq($$SELECT id, v, off FROM fm_del ORDER BY id$$,
    $$VALUES ('k2', 'b', 1::bigint), ('k3', 'c', 3)$$,
    'upsert by key: a tombstone deletes the row of the key the mapping reads from the message key');
SELECT ok(test.wait_for($$SELECT next_offset = 2 FROM eoingest.offsets WHERE job = 'fm_delv'$$), 'tombstone of a key read from the value: consumed');
SELECT results_eq($$SELECT "offset"::int, sqlstate, error LIKE 'tombstone message cannot give key column "id"%' FROM eoingest.dead_letters WHERE job = 'fm_delv'$$,
    $$VALUES (1, '22004', true)$$,
    'and a dead letter that says the key column comes from the value');

-- ---- refusals ----
CREATE TABLE fm_bad (id int, g int GENERATED ALWAYS AS (id * 2) STORED, k text, PRIMARY KEY (id));
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', mapping => '[1]')$$, :'brokers'),
    '22023', 'mapping must be a JSON object of column names and their sources', 'a mapping that is not an object');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', mapping => '{"id": "$nope"}')$$, :'brokers'),
    '22023', 'mapping of column "id" has an unrecognized source "$nope"', 'an unknown source');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', mapping => '{"id": "/a~2"}')$$, :'brokers'),
    '22023', NULL, 'a JSON pointer with a bad escape');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', mapping => '{"id": "/0"}')$$, :'brokers'),
    '22023', 'mapping of column "id" reads "/0", which is not a csv field number', 'csv fields are numbered from 1');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'text', mapping => '{"id": "/x"}')$$, :'brokers'),
    '22023', 'mapping of column "id" reads "/x", but format text has no fields', 'format text has no fields');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', mapping => '{"id": "$key/id"}')$$, :'brokers'),
    '22023', 'mapping of column "id" reads "$key/id", but key_format text has no fields', 'a key path needs a key_format with fields');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', mapping => '{"nosuch": "/id"}')$$, :'brokers'),
    '42703', NULL, 'a column the target lacks');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', mapping => '{"g": "/id"}')$$, :'brokers'),
    '428C9', NULL, 'a generated column');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', columns => '{id}', mapping => '{"id": "/id"}')$$, :'brokers'),
    '22023', 'mapping and columns cannot both be given', 'mapping with columns');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', format => 'json', transform => 'SELECT 1', mapping => '{"id": "/id"}')$$, :'brokers'),
    '22023', 'mapping applies to a target table, and the job has a transform', 'mapping with a transform');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', mapping => '{"id": {"const": 1, "x": 2}}')$$, :'brokers'),
    '22023', 'mapping of column "id" has an object source that is not {"const": value}', 'a constant is {"const": value} only');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'fm_bad', brokers => %L, topic => 'x', target => 'fm_bad', format => 'json', mode => 'upsert', mapping => '{"k": "/k"}')$$, :'brokers'),
    '22023', 'key column "id" of "fm_bad" is not in the mapping', 'upsert: the key columns must be mapped');
SELECT throws_ok($$SELECT eoingest.alter_job('fm_csv', mapping => '{"a": "/x"}')$$,
    '22023', NULL, 'alter_job checks the mapping as create_job does');
SELECT eoingest.alter_job('fm_csv', mapping => '{}');
SELECT is((SELECT mapping FROM eoingest.job_definitions WHERE name = 'fm_csv'), NULL, 'alter_job mapping => ''{}'' removes it');

SELECT * FROM finish();

SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'fm%' ORDER BY name;
DROP TABLE fm_json, fm_csv, fm_text, fm_up, fm_del, fm_delv, fm_bad;
