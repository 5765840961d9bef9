-- Change data capture: envelope => 'debezium' applies Debezium change events
-- (test/cdc/*.events, key<TAB>value lines, hand-written as Debezium's
-- JsonConverter writes them) by key: every op, with and without Kafka
-- Connect's schema wrapper, key changes, Debezium's encoded types, and each
-- bad event.
SET client_min_messages = warning;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, MDY';
SET extra_float_digits = 0;
\getenv brokers KAFKA_BROKERS

-- Without the schema wrapper: encodings assumed from the target's types.
-- c, r insert; u on an existing key updates, a u whose before image has
-- another key moves the row; d deletes by the before image or the message
-- key; tombstones do nothing.
CREATE TABLE cdc_plain (id int PRIMARY KEY, name text, amount numeric(10,2), born date,
                        seen timestamp, seen_ms timestamp(3), at timestamptz, data jsonb,
                        tag uuid, raw bytea, flags bit(4), mood text DEFAULT 'calm');
\! eoi-kafka create-topic cdc_plain 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_plain < test/cdc/plain.events
SELECT eoingest.create_job(name => 'cdc_plain', brokers => :'brokers', topic => 'cdc_plain', target => 'cdc_plain',
                           format => 'json', envelope => 'debezium', batch_timeout_ms => 300);
SELECT eoingest.start_job('cdc_plain');

-- With the schema wrapper, in mode two_phase: every semantic type by its
-- Connect name.
CREATE TABLE cdc_wrapped (id int PRIMARY KEY, price numeric(12,3), dt date, tm time, mt time, nt time,
                          ts timestamp, ts_ms timestamp, ts_ns timestamp, zts timestamptz, ztm timetz,
                          vsd numeric, j jsonb, u uuid, b bytea, bits bit(10), e text, g jsonb,
                          dur interval, big numeric, small numeric);
\! eoi-kafka create-topic cdc_wrapped 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_wrapped < test/cdc/wrapped.events
SELECT eoingest.create_job(name => 'cdc_wrapped', brokers => :'brokers', topic => 'cdc_wrapped', target => 'cdc_wrapped',
                           format => 'json', envelope => 'debezium', mode => 'two_phase', batch_timeout_ms => 300);
SELECT eoingest.start_job('cdc_wrapped');

-- key_columns on a unique index; key changes back and forth in one batch.
CREATE TABLE cdc_composite (a int NOT NULL, b text NOT NULL, v text);
CREATE UNIQUE INDEX ON cdc_composite (a, b);
\! eoi-kafka create-topic cdc_composite 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_composite < test/cdc/composite.events
SELECT eoingest.create_job(name => 'cdc_composite', brokers => :'brokers', topic => 'cdc_composite',
                           target => 'cdc_composite', format => 'json', envelope => 'debezium',
                           key_columns => '{a,b}', batch_timeout_ms => 300);
SELECT eoingest.start_job('cdc_composite');

-- Bad events go to dead letters (offsets in test/cdc/bad.events): 1 unknown
-- op, 2 no op, 3 no key in the after image, 4 a delete without key, 5 a
-- field that is no column, 6 a value of the wrong type, 7 a truncate
-- (refused by default), 8 not an object, 9 an update without after image.
CREATE TABLE cdc_bad (id int PRIMARY KEY, v text, n int);
\! eoi-kafka create-topic cdc_bad 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_bad < test/cdc/bad.events
SELECT eoingest.create_job(name => 'cdc_bad', brokers => :'brokers', topic => 'cdc_bad', target => 'cdc_bad',
                           format => 'json', envelope => 'debezium', batch_timeout_ms => 300);
SELECT eoingest.start_job('cdc_bad');

-- on_truncate => 'truncate', in mode upsert: the truncate empties the
-- target of what came before it.
CREATE TABLE cdc_trunc (id int PRIMARY KEY, v text);
INSERT INTO cdc_trunc VALUES (100, 'there before');
\! eoi-kafka create-topic cdc_trunc 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_trunc < test/cdc/truncate.events
SELECT eoingest.create_job(name => 'cdc_trunc', brokers => :'brokers', topic => 'cdc_trunc', target => 'cdc_trunc',
                           format => 'json', envelope => 'debezium', on_truncate => 'truncate', mode => 'upsert',
                           batch_timeout_ms => 300, offset_commit_interval_ms => 100);
SELECT eoingest.start_job('cdc_trunc');

-- on_error => 'fail': a bad event stops the job, nothing of its batch commits.
CREATE TABLE cdc_fail (id int PRIMARY KEY, v text);
\! eoi-kafka create-topic cdc_fail 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_fail < test/cdc/fail.events
SELECT eoingest.create_job(name => 'cdc_fail', brokers => :'brokers', topic => 'cdc_fail', target => 'cdc_fail',
                           format => 'json', envelope => 'debezium', on_error => 'fail', batch_timeout_ms => 1000);
SELECT eoingest.start_job('cdc_fail');

CREATE TABLE cdc_nokey (id int, v text);

SELECT plan(16);

SELECT ok(test.wait_for($$SELECT EXISTS (SELECT FROM cdc_plain WHERE name = 'e2')$$), 'plain: the events are applied');
\copy test.watermarks ("partition", low, high) FROM PROGRAM 'eoi-kafka watermarks cdc_plain' WITH (DELIMITER ' ')
UPDATE test.watermarks SET topic = 'cdc_plain' WHERE topic IS NULL;
SELECT ok(test.wait_for($$SELECT test.offsets_at_log_end('cdc_plain', 'cdc_plain')$$),
    'plain: the offsets reach the log end, tombstones included');
SELECT results_eq($$SELECT id, name FROM cdc_plain ORDER BY id$$,
    $$VALUES (1, 'a2'), (5, 'e2'), (30, 'c moved')$$,
    'plain: 2 and 4 deleted, 3 moved to 30, 1 and 5 updated');
SELECT * FROM cdc_plain ORDER BY id;

\! eoi-kafka produce -K -z -p 0 cdc_plain < test/cdc/plain2.events
SELECT ok(test.wait_for($$SELECT EXISTS (SELECT FROM cdc_plain WHERE name = 'e3')$$), 'plain: a later batch');
SELECT results_eq($$SELECT id, name FROM cdc_plain ORDER BY id$$,
    $$VALUES (1, 'a2'), (5, 'e3'), (30, 'c moved'), (99, 'never created')$$,
    'a u for a key not in the target inserts it; a d of an absent key does nothing; a c of an existing key updates');

SELECT ok(test.wait_for($$SELECT array_agg(id ORDER BY id) = '{1,20}' FROM cdc_wrapped$$), 'wrapped: the events are applied (two_phase)');
SELECT results_eq($$SELECT id, e FROM cdc_wrapped ORDER BY id$$, $$VALUES (1, 'green'), (20, 'red')$$,
    'wrapped: 2 moved to 20 by its before image, 3 deleted by its message key');
\x on
SELECT * FROM cdc_wrapped WHERE id = 1;
\x off

SELECT ok(test.wait_for($$SELECT count(*) = 2 AND bool_or(v = 'back') FROM cdc_composite$$), 'composite: the events are applied');
SELECT results_eq($$SELECT a, b, v FROM cdc_composite ORDER BY a, b$$,
    $$VALUES (1, 'x', 'second'), (2, 'y', 'back')$$,
    'composite: a key moved away and back in one batch ends at the last image');

SELECT ok(test.wait_for($$SELECT count(*) = 9 FROM eoingest.dead_letters WHERE job = 'cdc_bad'$$)
          AND test.wait_for($$SELECT EXISTS (SELECT FROM cdc_bad WHERE id = 11)$$), 'bad: nine dead letters');
SELECT results_eq($$SELECT id, v FROM cdc_bad ORDER BY id$$, $$VALUES (1, 'good'), (11, 'good too')$$,
    'bad: the good events around them are applied');
SELECT "offset", sqlstate, error FROM eoingest.dead_letters WHERE job = 'cdc_bad' ORDER BY "offset";

SELECT ok(test.wait_for($$SELECT array_agg(id) = '{3}' FROM cdc_trunc$$), 'truncate: the target is emptied, then 3 inserted');

SELECT ok(test.wait_for($$SELECT state = 'failed' FROM eoingest.job_status WHERE name = 'cdc_fail'$$), 'fail: the job fails');
SELECT ok((SELECT last_error LIKE '%unrecognized op "z"%offset 1%' FROM eoingest.job_status WHERE name = 'cdc_fail'),
    'fail: with the error and the event''s position');
SELECT is((SELECT count(*) FROM cdc_fail WHERE id = 3), 0::bigint, 'fail: nothing after the bad event is applied');

SELECT throws_ok(format($$SELECT eoingest.create_job(name => 'x', brokers => %L, topic => 'x', target => 'cdc_plain', envelope => 'debezium')$$, :'brokers'),
    '22023', 'envelope debezium needs format json or avro, not csv', 'debezium needs json');
SELECT * FROM finish();

-- What create_job refuses.
\set VERBOSITY terse
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cdc_plain', format => 'json', envelope => 'avro');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', format => 'json', envelope => 'debezium',
                           transform => 'SELECT 1');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cdc_nokey', format => 'json', envelope => 'debezium');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cdc_plain', format => 'json', envelope => 'debezium',
                           on_truncate => 'sometimes');
SELECT eoingest.alter_job('cdc_bad', on_truncate => 'truncate');
SELECT envelope, on_truncate, key_columns FROM eoingest.jobs WHERE name = 'cdc_bad';
\set VERBOSITY default

SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'cdc\_%' ORDER BY name;
