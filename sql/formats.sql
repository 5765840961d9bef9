-- Formats csv (the seed article's sensor stream), json and text, end to end
-- against the real broker: rows, offsets at the log end, counters.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

-- The seed's example, as written there: "sensor_1, 1547718199, 35.8".
\! eoi-kafka create-topic sensor 1 >/dev/null
\! printf 'sensor_1, 1547718199, 35.8\nsensor_6, 1547718201, 15.4\nsensor_7, 1547718202, 6.7\nsensor_10, 1547718205, 38.1\n' | eoi-kafka produce sensor
CREATE TABLE sensor_reading (id text, ts bigint, temperature double precision);
SELECT eoingest.create_job(name => 'sensor', brokers => :'brokers', topic => 'sensor',
                           target => 'sensor_reading', format => 'csv', mode => 'exactly_once',
                           batch_timeout_ms => 200);
SELECT eoingest.start_job('sensor');

-- json: keys to columns, absent keys take the column default.
\! eoi-kafka create-topic json_topic 2 >/dev/null
CREATE TABLE json_target (id text NOT NULL, ts bigint, temperature double precision,
                          unit text DEFAULT 'celsius', tags jsonb, seen boolean,
                          serial bigint GENERATED ALWAYS AS IDENTITY);
\! printf '%s\n' '{"id":"a","ts":1,"temperature":1.5,"unit":"kelvin","tags":{"x":[1,2]},"seen":true}' '{"id":"b","ts":2,"extra":"ignored"}' '{"id":"tab\tand\\backslash","ts":3,"temperature":null}' | eoi-kafka produce json_topic
SELECT eoingest.create_job(name => 'json', brokers => :'brokers', topic => 'json_topic',
                           target => 'json_target', format => 'json', batch_timeout_ms => 200);
SELECT eoingest.start_job('json');

-- text: the value into the one column without a default.
\! eoi-kafka create-topic text_topic 3 >/dev/null
CREATE TABLE text_target (line text, received_at timestamptz DEFAULT now(), n bigserial);
\! printf 'first line\nsecond, with a comma\n"quoted"\n\\back\\slash\n' | eoi-kafka produce text_topic
SELECT eoingest.create_job(name => 'text', brokers => :'brokers', topic => 'text_topic',
                           target => 'text_target', format => 'text', batch_timeout_ms => 200);
SELECT eoingest.start_job('text');

SELECT plan(13);

SELECT ok(test.wait_for($$SELECT count(*) = 4 FROM sensor_reading$$), 'the sensor stream arrives');
SELECT results_eq($$SELECT id, ts, temperature FROM sensor_reading ORDER BY ts$$,
    $$VALUES ('sensor_1', 1547718199::bigint, 35.8::float8), ('sensor_6', 1547718201, 15.4),
             ('sensor_7', 1547718202, 6.7), ('sensor_10', 1547718205, 38.1)$$,
    'csv fields are trimmed and typed as the seed expects');
\copy test.watermarks ("partition", low, high) FROM PROGRAM 'eoi-kafka watermarks sensor' WITH (DELIMITER ' ')
UPDATE test.watermarks SET topic = 'sensor' WHERE topic IS NULL;
SELECT ok(test.wait_for($$SELECT test.offsets_at_log_end('sensor', 'sensor')$$),
    'stored offsets equal the log end');
SELECT ok(test.wait_for($$SELECT messages = 4 AND rows = 4 AND batches >= 1 AND last_commit_at IS NOT NULL
                            FROM eoingest.job_status WHERE name = 'sensor'$$),
    'job_status counts messages, rows and batches');
SELECT results_eq($$SELECT state, pid IS NOT NULL, last_error FROM eoingest.job_status WHERE name = 'sensor'$$,
    $$VALUES ('running', true, NULL::text)$$, 'job_status shows a running worker');

SELECT ok(test.wait_for($$SELECT count(*) = 3 FROM json_target$$), 'json messages arrive');
SELECT results_eq($$SELECT id, ts, temperature, unit, tags, seen FROM json_target ORDER BY ts$$,
    $$VALUES ('a', 1::bigint, 1.5::float8, 'kelvin', '{"x":[1,2]}'::jsonb, true),
             ('b', 2, NULL, 'celsius', NULL, NULL),
             (E'tab\tand\\backslash', 3, NULL, 'celsius', NULL, NULL)$$,
    'json keys map to columns, absent keys take defaults, escapes survive');
SELECT is((SELECT count(DISTINCT serial) FROM json_target), 3::bigint, 'identity default evaluated per row');

SELECT ok(test.wait_for($$SELECT count(*) = 4 FROM text_target$$), 'text messages arrive');
SELECT results_eq($$SELECT line FROM text_target ORDER BY line$$,
    $$VALUES ('"quoted"'), ('\back\slash'), ('first line'), ('second, with a comma')$$,
    'text values are stored verbatim');
SELECT is((SELECT count(*) FROM text_target WHERE received_at IS NOT NULL), 4::bigint, 'other columns take defaults');

-- Stop, produce more, start: the job resumes where it committed.
SELECT eoingest.stop_job('sensor');
SELECT ok(test.wait_for($$SELECT state = 'stopped' FROM eoingest.job_status WHERE name = 'sensor'$$),
    'stop_job stops the worker');
\! printf 'sensor_2, 1547718210, 20.0\nsensor_3, 1547718211, 21.0\n' | eoi-kafka produce sensor
SELECT eoingest.start_job('sensor');
SELECT ok(test.wait_for($$SELECT count(*) = 6 AND count(DISTINCT ts) = 6 FROM sensor_reading$$),
    'after stop and start: no loss, no duplicate');

SELECT * FROM finish();

SELECT eoingest.drop_job('sensor'), eoingest.drop_job('json'), eoingest.drop_job('text');
