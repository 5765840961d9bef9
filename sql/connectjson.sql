-- Format json with Kafka Connect's JsonConverter wrapper (schemas.enable=true),
-- end to end against the real broker: the payload's fields fill the
-- columns, the schema's Connect types (Decimal, Date, Time, Timestamp,
-- bytes) decide how they read; a message that fills no column is an error,
-- never a row of defaults.  The messages: test/json/wrapped.py.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

CREATE TABLE conn_json (id int, name text, price numeric(10,2), born date, seen timestamptz,
                        at_time time, raw bytea, tags text[], doc jsonb);
\! eoi-kafka create-topic conn_json 1 >/dev/null
\! eoi-kafka produce -p 0 conn_json < test/json/wrapped.messages
SELECT eoingest.create_job(name => 'conn_json', brokers => :'brokers', topic => 'conn_json',
                           target => 'conn_json', format => 'json', batch_timeout_ms => 200);
SELECT eoingest.start_job('conn_json');

-- Wrapped keys and values, in upsert.
CREATE TABLE conn_kv (id int PRIMARY KEY, name text, price numeric(10,2));
\! eoi-kafka create-topic conn_kv 1 >/dev/null
\! eoi-kafka produce -K -p 0 conn_kv < test/json/wrapped-keyed.messages
SELECT eoingest.create_job(name => 'conn_kv', brokers => :'brokers', topic => 'conn_kv', target => 'conn_kv',
                           format => 'json', mode => 'upsert', key_format => 'json', key_columns => '{id}',
                           batch_timeout_ms => 200);
SELECT eoingest.start_job('conn_kv');

SELECT plan(10);

SELECT ok(test.wait_for($$SELECT next_offset = 12 FROM eoingest.offsets WHERE job = 'conn_json'$$),
    'offsets move past every wrapped record');
SELECT is((SELECT array_agg(id ORDER BY id) FROM conn_json), '{1,2,3,7,8,10,11}',
    'wrapped records, plain ones and schemaless wrappers are rows; no row is all defaults');
SELECT results_eq($$SELECT name, price, born, seen, at_time, raw, tags, doc FROM conn_json WHERE id IN (1, 2) ORDER BY id$$,
    $$VALUES ('a', 123.45::numeric, '2024-01-01'::date, '2019-01-17 09:43:19.123+00'::timestamptz, '01:00'::time,
              '\x68656c6c6f'::bytea, '{x,y}'::text[], '{"a": 1}'::jsonb),
             ('b', -0.01, '1969-12-31', '1970-01-01 00:00:00+00', '00:00', '\x', '{}', NULL)$$,
    'Connect''s Decimal, Date, Timestamp, Time and bytes read as the schema says');
SELECT results_eq($$SELECT id, name, price FROM conn_json WHERE id IN (3, 7, 8, 10) ORDER BY id$$,
    $$VALUES (3, 'c', NULL::numeric), (7, 'g', NULL), (8, 'h', NULL), (10, 'j', 2.00)$$,
    'a schemaless wrapper, a plain object, a payload field the table lacks, the payload before the schema');
SELECT results_eq($$SELECT price, jsonb_typeof(doc->'a') FROM conn_json WHERE id = 11$$,
    $$VALUES (12.34::numeric, 'array')$$,
    'a message the scan declines reads the wrapper the same way');
SELECT results_eq($$SELECT "offset"::int, sqlstate FROM eoingest.dead_letters WHERE job = 'conn_json' ORDER BY "offset"$$,
    $$VALUES (3, '22004'), (4, '22000'), (5, '22000'), (8, '22P02'), (11, '22P02')$$,
    'a null payload, objects that fill no column, a payload that is no struct, a bad Decimal are dead letters');
SELECT ok((SELECT bool_and(error LIKE '%HINT:%') FROM eoingest.dead_letters WHERE job = 'conn_json'),
    'each with a hint');
SELECT alike((SELECT error FROM eoingest.dead_letters WHERE job = 'conn_json' AND "offset" = 4),
    '%JSON message fills no column of "conn_json"%',
    'the error says no key names a column');

SELECT ok(test.wait_for($$SELECT next_offset = 3 FROM eoingest.offsets WHERE job = 'conn_kv'$$),
    'the upsert job reads every wrapped record');
SELECT results_eq($$SELECT id, name, price FROM conn_kv ORDER BY id$$,
    $$VALUES (1, 'a2', 2.50::numeric), (2, 'b1', NULL)$$,
    'wrapped keys and values upsert, nothing set aside');

SELECT * FROM finish();

SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'conn%' ORDER BY name;
