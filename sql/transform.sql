-- A transform: one SQL statement per batch over eoingest.batch(), with the
-- messages' metadata.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

\! eoi-kafka create-topic transform_topic 2 >/dev/null
CREATE TABLE readings (sensor text, temperature numeric, topic text, part int, off bigint,
                       k text, at timestamptz);
SELECT eoingest.create_job(
    name => 'transform', brokers => :'brokers', topic => 'transform_topic', batch_timeout_ms => 200,
    transform => $$INSERT INTO readings
                   SELECT upper(split_part(value, ',', 1)), split_part(value, ',', 2)::numeric,
                          topic, "partition", "offset", key, "timestamp"
                     FROM eoingest.batch()
                    WHERE split_part(value, ',', 2)::numeric > 0$$);
SELECT eoingest.start_job('transform');
\! printf 's1,10\ns2,-5\ns3,30\ns4,40\n' | eoi-kafka produce -k thekey transform_topic

SELECT plan(5);
SELECT ok(test.wait_for($$SELECT count(*) = 3 FROM readings$$), 'the transform writes its rows');
SELECT results_eq($$SELECT sensor, temperature FROM readings ORDER BY sensor$$,
    $$VALUES ('S1', 10::numeric), ('S3', 30), ('S4', 40)$$, 'and filters as it says');
SELECT is((SELECT count(*) FROM readings WHERE topic = 'transform_topic' AND k = 'thekey'
                                          AND at > now() - interval '1 hour' AND off >= 0),
          3::bigint, 'metadata is available');
SELECT ok(test.wait_for($$SELECT messages = 4 AND rows = 3 FROM eoingest.job_status WHERE name = 'transform'$$),
    'job_status counts messages and rows written');
SELECT is((SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'transform'), 4::numeric,
    'offsets cover every message, filtered or not');
SELECT * FROM finish();
SELECT eoingest.drop_job('transform');
