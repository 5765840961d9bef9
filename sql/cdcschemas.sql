-- Change events in Kafka Connect's schema wrapper whose schemas change from
-- one event to the next (test/cdc/schemas.events, from test/cdc/schemas.py),
-- all in one batch.  cdc.c splits the wrapper without parsing it whole,
-- parses each distinct schema once per batch (16 at most; more are each
-- event's own) and keeps the codecs it computed from one: every event must
-- still be decoded with its own schema, and read as jsonb would read it.
SET client_min_messages = warning;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, MDY';
\getenv brokers KAFKA_BROKERS

CREATE TABLE cdc_schemas (id int PRIMARY KEY, price numeric(12,4), dt date, note text);
\! eoi-kafka create-topic cdc_schemas 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_schemas < test/cdc/schemas.events
SELECT eoingest.create_job(name => 'cdc_schemas', brokers => :'brokers', topic => 'cdc_schemas',
                           target => 'cdc_schemas', format => 'json', envelope => 'debezium',
                           batch_timeout_ms => 300);
SELECT eoingest.start_job('cdc_schemas');

SELECT plan(7);
\copy test.watermarks ("partition", low, high) FROM PROGRAM 'eoi-kafka watermarks cdc_schemas' WITH (DELIMITER ' ')
UPDATE test.watermarks SET topic = 'cdc_schemas' WHERE topic IS NULL;
SELECT ok(test.wait_for($$SELECT test.offsets_at_log_end('cdc_schemas', 'cdc_schemas')$$),
    'the events are applied to the log end');
SELECT is((SELECT sum(batches) FROM eoingest.job_status WHERE name = 'cdc_schemas'), 1::numeric,
    'in one batch');
SELECT results_eq($$SELECT id, price, dt, note FROM cdc_schemas WHERE id < 100 ORDER BY id$$,
    $$VALUES (1, 0.01, date '1970-01-02', 'scale 2'),
             (4, 0.5, date '2022-01-11', 'dt as days'),
             (5, 0.5, date '2024-02-29', 'dt as text'),
             (31, 0.001, date '1970-01-02', 'second'),
             (40, 0.0015, date '2022-01-12', 'no schema'),
             (41, 12.345, date '2022-01-13', 'escaped'),
             (50, 0.007, date '2022-01-14', 'moved from 3'),
             (60, 0.06, date '2022-01-15', 'spaced'),
             (61, 0.61, date '2022-01-16', 'op twice'),
             (63, 0.63, date '2022-01-17', 'bare'),
             (66, 0.01, date '1970-01-02', 'last')$$,
    'each event with its own schema''s scale; a column missing from the schema by its value; the last payload; no schema; an escaped name; 3 moved, 2 deleted; white space; the last op; a bare event; a key twice; 1 updated twice, its note kept where the update sent the placeholder, plain and escaped');
SELECT results_eq($$SELECT id, price, dt FROM cdc_schemas WHERE id >= 100 ORDER BY id$$,
    $$SELECT 100 + i, round((1000 + i) / 10.0 ^ (i % 5), 4), date '2022-01-08' + i
        FROM generate_series(0, 19) i$$,
    'twenty distinct schemas in one batch, more than the cache holds, each with its scale');
SELECT results_eq($$SELECT "offset", sqlstate FROM eoingest.dead_letters WHERE job = 'cdc_schemas' ORDER BY "offset"$$,
    $$VALUES (28::bigint, '22023'), (29, '22P02'), (33, '22P02'), (35, '22023'), (36, '22P02'), (38, '22P02'), (40, '22P02'),
             (41, '42804')$$,
    'a third member is no wrapper (no op), a cut message, a payload that is not an object, op 1, a before image that is a string, a broken payload, a cut bare event, a field that is no column');
SELECT ok((SELECT error LIKE '%has no "op"%' FROM eoingest.dead_letters WHERE job = 'cdc_schemas' AND "offset" = 28),
    'the event with a third member is read bare');
SELECT ok((SELECT error LIKE '%"payload" of the change event is not an object%'
             FROM eoingest.dead_letters WHERE job = 'cdc_schemas' AND "offset" = 33),
    'a payload that is not an object is named');
SELECT "offset", sqlstate, error FROM eoingest.dead_letters WHERE job = 'cdc_schemas' ORDER BY "offset";
SELECT * FROM finish();

SELECT eoingest.drop_job('cdc_schemas');
