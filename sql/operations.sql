-- Operating a job: lag, wait_for_catchup, alter_job, reset_offsets.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

CREATE TABLE ops (id text, ts bigint, temperature double precision);
\! eoi-kafka create-topic ops_topic 2 >/dev/null
\! eoi-kafka produce-seq ops_topic --count 1000 --format csv >/dev/null
SELECT eoingest.create_job(name => 'ops', brokers => :'brokers', topic => 'ops_topic', target => 'ops',
                           batch_size => 100, batch_timeout_ms => 100);
SELECT eoingest.start_job('ops');

SELECT plan(18);
SELECT ok(eoingest.wait_for_catchup('ops', '60 s'), 'wait_for_catchup returns true once the log end is committed');
SELECT is((SELECT count(*) FROM ops), 1000::bigint, 'and everything is there');
SELECT ok(test.wait_for($$SELECT count(*) = 2 AND bool_and(lag = 0 AND high_watermark = next_offset
                                   AND last_stable_offset = high_watermark AND measured_at IS NOT NULL)
                            FROM eoingest.lag WHERE job = 'ops'$$),
    'eoingest.lag shows each partition''s position, log end, last stable offset and lag, refreshed by the worker');

-- alter_job on a running job: the workers restart with the new settings.
SELECT pid AS old_pid FROM eoingest.job_status WHERE name = 'ops' \gset
SELECT lives_ok($$SELECT eoingest.alter_job('ops', batch_size => 500, options => '{"fetch.wait.max.ms": 50}')$$, 'alter_job');
SELECT ok(test.wait_for(format($$SELECT pid IS NOT NULL AND pid <> %s FROM eoingest.job_status WHERE name = 'ops'$$, :old_pid)),
    'a running job''s worker restarts with them');
SELECT results_eq($$SELECT batch_size, options FROM eoingest.job_definitions WHERE name = 'ops'$$,
    $$VALUES (500, '{"fetch.wait.max.ms": 50}'::jsonb)$$, 'the new settings are stored');
\! eoi-kafka produce-seq ops_topic --count 1000 --start 1000 --format csv >/dev/null
SELECT ok(eoingest.wait_for_catchup('ops', '60 s'), 'and ingestion goes on');
SELECT is((SELECT count(DISTINCT ts) || ' ' || count(*) FROM ops), '2000 2000', 'exactly');
SELECT throws_ok($$SELECT eoingest.alter_job('ops', mode => 'upsert')$$, '55000',
    'the target and mode of job "ops" cannot change: it has committed offsets', 'mode cannot change once offsets are committed');
SELECT throws_ok($$SELECT eoingest.alter_job('ops', on_error => 'ignore')$$, '22023', NULL, 'alter_job checks what it is given');
SELECT throws_ok($$SELECT eoingest.alter_job('ops', options => '{"group.id": "x"}')$$, '22023', NULL, 'managed properties are refused there too');

-- reset_offsets on a stopped job: explicit offsets, latest, a timestamp.
SELECT eoingest.stop_job('ops');
SELECT ok(test.wait_for($$SELECT state = 'stopped' FROM eoingest.job_status WHERE name = 'ops'$$), 'stopped');
SELECT is(eoingest.reset_offsets('ops', '{"0": 10, "1": 20}'), 2, 'explicit offsets per partition');
SELECT results_eq($$SELECT "partition", next_offset FROM eoingest.offsets WHERE job = 'ops' ORDER BY 1$$,
    $$VALUES (0, 10::bigint), (1, 20::bigint)$$, 'are stored');
SELECT eoingest.reset_offsets('ops', 'latest');
SELECT is((SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'ops'), 2000::numeric, 'latest: the log end');
SELECT eoingest.reset_offsets('ops', (now() - interval '1 hour')::text);
SELECT is((SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'ops'), 0::numeric,
    'a timestamp before every record: back to the beginning');

-- start_offset takes the same choices as reset_offsets.
CREATE TABLE ops_late (id text, ts bigint, temperature double precision);
SELECT eoingest.create_job(name => 'ops_late', brokers => :'brokers', topic => 'ops_topic', target => 'ops_late',
                           start_offset => '{"0": 990}', batch_timeout_ms => 100);
SELECT eoingest.start_job('ops_late');
SELECT ok(eoingest.wait_for_catchup('ops_late', '60 s'), 'a job starting at explicit offsets catches up');
SELECT is((SELECT count(*) FROM ops_late), 1010::bigint,
    'from offset 990 of partition 0, and from the beginning of the partition it did not name');
SELECT * FROM finish();
SELECT eoingest.drop_job('ops'), eoingest.drop_job('ops_late');
