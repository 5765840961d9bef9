-- Bad records: each goes to eoingest.dead_letters with its bytes, position
-- and error, in the transaction that moves the offsets past it; the rest of
-- the batch is stored.  on_error => 'fail' stops the job instead.  Dead
-- letters replay once the cause is fixed.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

CREATE TABLE parent (id int PRIMARY KEY);
INSERT INTO parent VALUES (1);
CREATE TABLE dl_target (id text NOT NULL, n int CHECK (n >= 0), u int UNIQUE, p int REFERENCES parent (id));
\! eoi-kafka create-topic dl_csv 1 >/dev/null
-- offset: 0 good, 1 invalid UTF-8, 2 NUL byte, 3 malformed CSV, 4 too few fields,
-- 5 too many fields, 6 wrong type, 7 NOT NULL, 8 CHECK, 9 unique, 10 foreign key,
-- 11 tombstone, 12 larger than max_message_bytes, 13 good
\! (printf 'ok1,1,1,1\n'; printf 'bad\377,1,2,1\n'; printf 'nul\000,1,3,1\n'; printf 'a,"unterminated,1,4,1\n'; printf 'a,1,5\n'; printf 'a,1,6,1,extra\n'; printf 'a,notanint,7,1\n'; printf ',1,8,1\n'; printf 'a,-1,9,1\n'; printf 'a,1,1,1\n'; printf 'a,1,11,99\n'; printf '\n'; printf '%0200d,1,12,1\n' 0; printf 'ok2,2,13,1\n') | eoi-kafka produce -z -p 0 dl_csv
SELECT eoingest.create_job(name => 'dl_csv', brokers => :'brokers', topic => 'dl_csv', target => 'dl_target',
                           batch_timeout_ms => 300, max_message_bytes => 100);
SELECT eoingest.start_job('dl_csv');

CREATE TABLE dl_json (id text, n int);
\! eoi-kafka create-topic dl_json 1 >/dev/null
\! printf '%s\n' '{"id":"j1","n":1}' '{"id": "broken"' '[1, 2]' '{"id":"j2","n":"two"}' '{"id":"j3","n":3}' | eoi-kafka produce -p 0 dl_json
SELECT eoingest.create_job(name => 'dl_json', brokers => :'brokers', topic => 'dl_json', target => 'dl_json',
                           format => 'json', batch_timeout_ms => 300);
SELECT eoingest.start_job('dl_json');

CREATE TABLE dl_transformed (v text);
\! eoi-kafka create-topic dl_transform 1 >/dev/null
\! printf 'a\nboom\nc\nd\n' | eoi-kafka produce -p 0 dl_transform
SELECT eoingest.create_job(name => 'dl_transform', brokers => :'brokers', topic => 'dl_transform', batch_timeout_ms => 300,
    transform => $$INSERT INTO dl_transformed SELECT CASE WHEN value = 'boom' THEN (1 / (length(value) - 4))::text ELSE value END FROM eoingest.batch()$$);
SELECT eoingest.start_job('dl_transform');

CREATE TABLE fail_target (id text, n int);
\! eoi-kafka create-topic dl_fail 1 >/dev/null
\! printf 'f1,1\nf2,oops\nf3,3\n' | eoi-kafka produce -p 0 dl_fail
SELECT eoingest.create_job(name => 'dl_fail', brokers => :'brokers', topic => 'dl_fail', target => 'fail_target',
                           on_error => 'fail', batch_timeout_ms => 300);
SELECT eoingest.start_job('dl_fail');

SELECT plan(14);

SELECT ok(test.wait_for($$SELECT count(*) = 12 FROM eoingest.dead_letters WHERE job = 'dl_csv'$$), 'twelve bad csv records are dead letters');
SELECT results_eq($$SELECT id, n FROM dl_target ORDER BY id$$, $$VALUES ('ok1', 1), ('ok2', 2)$$, 'the good records of the batch are stored');
SELECT results_eq($$SELECT "offset"::int, sqlstate FROM eoingest.dead_letters WHERE job = 'dl_csv' ORDER BY "offset"$$,
    $$VALUES (1, '22021'), (2, '22021'), (3, '22P04'), (4, '22P04'), (5, '22P04'), (6, '22P02'), (7, '23502'),
             (8, '23514'), (9, '23505'), (10, '23503'), (11, '22004'), (12, '54000')$$,
    'each with its position and SQLSTATE');
SELECT ok((SELECT value = '\x626164ff2c312c322c31'::bytea AND "partition" = 0 AND topic = 'dl_csv' AND error LIKE 'invalid byte sequence%'
             FROM eoingest.dead_letters WHERE job = 'dl_csv' AND "offset" = 1), 'the bytes are kept exactly, with the error');
SELECT ok((SELECT value IS NULL FROM eoingest.dead_letters WHERE job = 'dl_csv' AND "offset" = 11), 'a tombstone is kept as a null value');
SELECT ok(test.wait_for($$SELECT (SELECT next_offset FROM eoingest.offsets WHERE job = 'dl_csv') = 14$$), 'offsets move past the dead letters');
SELECT ok(test.wait_for($$SELECT dead_letters = 12 AND rows = 2 FROM eoingest.job_status WHERE name = 'dl_csv'$$), 'job_status counts them');

SELECT ok(test.wait_for($$SELECT (SELECT count(*) FROM dl_json) = 2 AND
          (SELECT array_agg("offset" ORDER BY "offset") = '{1,2,3}' FROM eoingest.dead_letters WHERE job = 'dl_json')$$),
    'malformed JSON, a non-object and a wrong type are dead letters');

SELECT ok(test.wait_for($$SELECT (SELECT count(*) FROM dl_transformed) = 3 AND
          (SELECT array_agg("offset") = '{1}' AND bool_and(sqlstate = '22012') FROM eoingest.dead_letters WHERE job = 'dl_transform')$$),
    'an error raised by the transform sets that record aside');

SELECT ok(test.wait_for($$SELECT state = 'failed' FROM eoingest.job_status WHERE name = 'dl_fail'$$), 'on_error fail stops the job');
SELECT ok((SELECT last_error LIKE '%invalid input syntax for type integer%partition 0 offset 1%' FROM eoingest.job_status WHERE name = 'dl_fail'),
    'with the error and the record''s position in job_status');
SELECT is((SELECT count(*) FROM fail_target), 0::bigint, 'nothing of the failed batch is committed');

-- Fix the cause of the CHECK violation, replay that dead letter.
ALTER TABLE dl_target DROP CONSTRAINT dl_target_n_check;
SELECT is(eoingest.replay_dead_letters('dl_csv', ARRAY(SELECT id FROM eoingest.dead_letters WHERE job = 'dl_csv' AND "offset" = 8)),
          1::bigint, 'replay_dead_letters replays the chosen record');
SELECT ok((SELECT count(*) = 1 FROM dl_target WHERE u = 9) AND
          (SELECT count(*) = 11 FROM eoingest.dead_letters WHERE job = 'dl_csv'), 'into the target, and it leaves the dead letters');

SELECT * FROM finish();
SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'dl%';
