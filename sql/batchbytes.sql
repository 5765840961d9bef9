-- A batch is bounded in bytes (batch_max_bytes) as well as in messages, and
-- a batch too large for memory is written again in smaller batches: no
-- record is blamed for it.  eoingest.test_batch_text_limit stands in for
-- MaxAllocSize, the 1 GB one COPY buffer holds, so that 400 kB of messages
-- behave here as 1 GB would.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS
ALTER DATABASE :"DBNAME" SET eoingest.test_batch_text_limit = '100kB';

-- 20 valid messages of 20 kB: 400 kB of COPY text in one batch.
\! eoi-kafka create-topic bb_topic 1 >/dev/null
\! for i in $(seq 10 29); do printf 'm%s-%020000d\n' $i 0; done | eoi-kafka produce -p 0 bb_topic

CREATE TABLE bb_dead_letter (v text);
SELECT eoingest.create_job(name => 'bb_dead_letter', brokers => :'brokers', topic => 'bb_topic',
                           target => 'bb_dead_letter', format => 'text', batch_timeout_ms => 1000);
CREATE TABLE bb_fail (v text);
SELECT eoingest.create_job(name => 'bb_fail', brokers => :'brokers', topic => 'bb_topic',
                           target => 'bb_fail', format => 'text', batch_timeout_ms => 1000,
                           on_error => 'fail');
CREATE TABLE bb_bounded (v text);
SELECT eoingest.create_job(name => 'bb_bounded', brokers => :'brokers', topic => 'bb_topic',
                           target => 'bb_bounded', format => 'text', batch_timeout_ms => 1000,
                           batch_max_bytes => 50000);
CREATE TABLE bb_one (v text);
SELECT eoingest.create_job(name => 'bb_one', brokers => :'brokers', topic => 'bb_topic',
                           target => 'bb_one', format => 'text', batch_timeout_ms => 1000,
                           batch_max_bytes => 1000);
SELECT eoingest.start_job(name) FROM eoingest.jobs WHERE name LIKE 'bb%' ORDER BY name;

SELECT plan(12);

SELECT ok(test.wait_for($$SELECT count(*) = 20 FROM bb_dead_letter$$),
    'a batch too large for memory is written in smaller batches');
SELECT is((SELECT count(*) FROM eoingest.dead_letters WHERE job = 'bb_dead_letter'), 0::bigint,
    'and no valid record of it is a dead letter');
SELECT is((SELECT count(DISTINCT left(v, 3)) FROM bb_dead_letter), 20::bigint, 'each record once');

SELECT ok(test.wait_for($$SELECT count(*) = 20 FROM bb_fail$$),
    'with on_error fail too: the job does not fail');
SELECT is((SELECT state FROM eoingest.jobs WHERE name = 'bb_fail'), 'running', 'it keeps running');

SELECT ok(test.wait_for($$SELECT count(*) = 20 FROM bb_bounded$$), 'batch_max_bytes bounds a batch');
SELECT ok(test.wait_for($$SELECT messages = 20 AND batches >= 10 FROM eoingest.job_status WHERE name = 'bb_bounded'$$),
    'to two of the 20 kB messages');
SELECT is((SELECT count(DISTINCT left(v, 3)) FROM bb_bounded), 20::bigint,
    'each record once, those held back for later batches too');
SELECT is((SELECT next_offset FROM eoingest.offsets WHERE job = 'bb_bounded'), 20::bigint,
    'and the offset stored is past the last one');
SELECT ok(test.wait_for($$SELECT (SELECT count(*) = 20 FROM bb_one) AND
                                 (SELECT messages = 20 AND batches = 20 FROM eoingest.job_status WHERE name = 'bb_one')$$),
    'a message larger than batch_max_bytes is a batch of its own');

SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'bb_x', brokers => %L, topic => 'x', target => 'bb_one', batch_max_bytes => 0)$$, :'brokers'),
    '22023', 'batch_max_bytes must be between 1 and 268435456, not 0', 'batch_max_bytes range');
SELECT eoingest.alter_job('bb_one', batch_max_bytes => 2000000);
SELECT is((SELECT batch_max_bytes FROM eoingest.jobs WHERE name = 'bb_one'), 2000000, 'alter_job sets batch_max_bytes');

SELECT * FROM finish();
SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'bb%';
ALTER DATABASE :"DBNAME" RESET eoingest.test_batch_text_limit;
