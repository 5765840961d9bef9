-- One job, several topics: each partition of each topic tracked on its own.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

\! eoi-kafka create-topic multi_a 2 >/dev/null
\! eoi-kafka create-topic multi_b 3 >/dev/null
\! eoi-kafka produce-seq multi_a --count 100 --format text >/dev/null
\! eoi-kafka produce-seq multi_b --count 60 --start 100 --format text >/dev/null
CREATE TABLE multi (topic text, part int, off bigint, v text);
SELECT eoingest.create_job(name => 'multi', brokers => :'brokers', topic => 'multi_a, multi_b', batch_timeout_ms => 100,
    parallelism => 2,
    transform => $$INSERT INTO multi SELECT topic, "partition", "offset", value FROM eoingest.batch()$$);
SELECT eoingest.start_job('multi');

SELECT plan(9);
SELECT ok(eoingest.wait_for_catchup('multi', '60 s'), 'a job of two topics catches up with both');
SELECT results_eq($$SELECT topic, count(*), count(DISTINCT (part, off)) FROM multi GROUP BY topic ORDER BY topic$$,
    $$VALUES ('multi_a', 100::bigint, 100::bigint), ('multi_b', 60, 60)$$, 'every record of each topic, once');
SELECT results_eq($$SELECT topic, count(*)::int, sum(next_offset)::int FROM eoingest.offsets WHERE job = 'multi' GROUP BY topic ORDER BY topic$$,
    $$VALUES ('multi_a', 2, 100), ('multi_b', 3, 60)$$, 'each partition of each topic has its own offset');
SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'a, a', target => 'multi')$$, :'brokers'),
    '22023', 'Kafka topic "a" is named twice', 'a topic named twice is refused');
SELECT eoingest.stop_job('multi');
SELECT ok(test.wait_for($$SELECT count(*) = 2 AND bool_and(state = 'stopped') FROM eoingest.job_status WHERE name = 'multi'$$),
    'stopped');
SELECT is(eoingest.reset_offsets('multi', '{"multi_b": {"2": 7}}'), 1, 'reset_offsets names partitions per topic');

-- One topic split between two jobs (as on two servers): partitions => ...
CREATE TABLE split_a (topic text, part int, off bigint, v text);
CREATE TABLE split_b (LIKE split_a);
SELECT eoingest.create_job(name => 'split_a', brokers => :'brokers', topic => 'multi_b', partitions => '{0}',
    batch_timeout_ms => 100, transform => $$INSERT INTO split_a SELECT topic, "partition", "offset", value FROM eoingest.batch()$$);
SELECT eoingest.create_job(name => 'split_b', brokers => :'brokers', topic => 'multi_b', partitions => '{1,2}',
    batch_timeout_ms => 100, parallelism => 2,
    transform => $$INSERT INTO split_b SELECT topic, "partition", "offset", value FROM eoingest.batch()$$);
SELECT eoingest.start_job('split_a'), eoingest.start_job('split_b');
SELECT ok(eoingest.wait_for_catchup('split_a', '60 s') AND eoingest.wait_for_catchup('split_b', '60 s'),
    'two jobs with explicit partitions catch up');
SELECT results_eq($$SELECT (SELECT array_agg(DISTINCT part) FROM split_a), (SELECT array_agg(DISTINCT part ORDER BY part) FROM split_b)$$,
    $$VALUES ('{0}'::int[], '{1,2}'::int[])$$, 'each takes only its partitions');
SELECT is((SELECT count(*) FROM split_a) + (SELECT count(*) FROM split_b), 60::bigint, 'together, every record once');
SELECT * FROM finish();
SELECT eoingest.drop_job('multi'), eoingest.drop_job('split_a'), eoingest.drop_job('split_b');
