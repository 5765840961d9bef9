-- cdc_mode: how envelope debezium applies change events (test/cdc/modes.events
-- and modes2.events, as Debezium's PostgreSQL connector writes them, without
-- the schema wrapper).  history appends every event with its op, source
-- commit time and LSN and Kafka coordinates; soft_delete applies them by key
-- but marks a deleted row instead of deleting it; both take a truncate.
SET client_min_messages = warning;
SET TimeZone = 'UTC';
SET DateStyle = 'ISO, MDY';
\getenv brokers KAFKA_BROKERS

\! eoi-kafka create-topic cdc_modes 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_modes < test/cdc/modes.events

CREATE TABLE cm_history (id int, name text, note text, __op text, __source_ts timestamptz, __source_lsn pg_lsn,
                         __topic text, __partition int, __offset bigint);
SELECT eoingest.create_job(name => 'cm_history', brokers => :'brokers', topic => 'cdc_modes', target => 'cm_history',
                           format => 'json', envelope => 'debezium', cdc_mode => 'history', batch_timeout_ms => 300);
SELECT eoingest.start_job('cm_history');

CREATE TABLE cm_soft (id int PRIMARY KEY, name text, note text, __deleted boolean NOT NULL DEFAULT false);
SELECT eoingest.create_job(name => 'cm_soft', brokers => :'brokers', topic => 'cdc_modes', target => 'cm_soft',
                           format => 'json', envelope => 'debezium', cdc_mode => 'soft_delete',
                           on_truncate => 'truncate', batch_timeout_ms => 300);
SELECT eoingest.start_job('cm_soft');

-- A column of another name, in mode two_phase; deleted rows are kept as
-- they were.
CREATE TABLE cm_gone (id int PRIMARY KEY, name text, note text, gone bool);
INSERT INTO cm_gone VALUES (2, 'there before', 'x', NULL);
SELECT eoingest.create_job(name => 'cm_gone', brokers => :'brokers', topic => 'cdc_modes', target => 'cm_gone',
                           format => 'json', envelope => 'debezium', cdc_mode => 'soft_delete', deleted_column => 'gone',
                           mode => 'two_phase', batch_timeout_ms => 300);
SELECT eoingest.start_job('cm_gone');

\! eoi-kafka create-topic cdc_resend 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_resend < test/cdc/resend1.events
CREATE TABLE cm_resend (LIKE cm_history);
SELECT eoingest.create_job(name => 'cm_resend', brokers => :'brokers', topic => 'cdc_resend', target => 'cm_resend',
                           format => 'json', envelope => 'debezium', cdc_mode => 'history', batch_timeout_ms => 300);
SELECT eoingest.start_job('cm_resend');

SELECT plan(15);

SELECT ok(test.wait_for($$SELECT count(*) = 9 FROM cm_history$$), 'history: a row for each event, the tombstone none');
SELECT results_eq($$SELECT __offset, __op, id, name, note, __source_ts, __source_lsn::text, __topic, __partition
                      FROM cm_history ORDER BY __offset$$,
    $$VALUES (0::bigint, 'r', 1, 'a', 'n1', '2023-11-14 22:13:20+00'::timestamptz, '0/64', 'cdc_modes', 0),
             (1, 'c', 2, 'b', 'n2', '2023-11-14 22:13:21+00', '0/C8', 'cdc_modes', 0),
             (2, 'u', 1, 'a2', NULL, '2023-11-14 22:13:22+00', '0/12C', 'cdc_modes', 0),
             (3, 'c', 3, 'c', 'n3', '2023-11-14 22:13:23+00', '0/190', 'cdc_modes', 0),
             (4, 'u', 30, 'c moved', 'n3', '2023-11-14 22:13:24+00', '0/1F4', 'cdc_modes', 0),
             (5, 'd', 2, 'b', 'n2', '2023-11-14 22:13:25+00', '0/258', 'cdc_modes', 0),
             (7, 'd', 30, NULL, NULL, '2023-11-14 22:13:26+00', '0/2BC', 'cdc_modes', 0),
             (8, 'd', 4, NULL, NULL, '2023-11-14 22:13:27+00', '0/320', 'cdc_modes', 0),
             (9, 'c', 5, 'e', 'n5', '2023-11-14 22:13:28+00', '0/384', 'cdc_modes', 0)$$,
    'history: the after image, a delete''s before image or message key, an unchanged TOASTed value as NULL');

SELECT ok(test.wait_for($$SELECT EXISTS (SELECT FROM cm_soft WHERE id = 5)$$), 'soft_delete: the events are applied');
SELECT results_eq($$SELECT id, name, note, __deleted FROM cm_soft ORDER BY id$$,
    $$VALUES (1, 'a2', 'n1', false), (2, 'b', 'n2', true), (3, 'c', 'n3', true), (4, NULL, NULL, true),
             (5, 'e', 'n5', false), (30, 'c moved', 'n3', true)$$,
    'soft_delete: deleted rows kept and marked, a moved key''s old row marked, a TOASTed value kept');
SELECT is((SELECT unchanged_nulled FROM eoingest.offsets WHERE job = 'cm_soft'), 1::bigint,
    'soft_delete: the deleted row the target did not have is counted as taking NULL');
SELECT ok(test.wait_for($$SELECT EXISTS (SELECT FROM cm_gone WHERE id = 5)$$), 'deleted_column gone: the events are applied');
SELECT results_eq($$SELECT id, name, gone FROM cm_gone ORDER BY id$$,
    $$VALUES (1, 'a2', false), (2, 'b', true), (3, 'c', true), (4, NULL, true), (5, 'e', false), (30, 'c moved', true)$$,
    'soft_delete with deleted_column, in mode two_phase');

\! eoi-kafka produce -K -z -p 0 cdc_modes < test/cdc/modes2.events
SELECT ok(test.wait_for($$SELECT count(*) = 11 FROM cm_history$$), 'history: the truncate and the next insert');
SELECT results_eq($$SELECT __offset, __op, id, name FROM cm_history WHERE __offset >= 10 ORDER BY __offset$$,
    $$VALUES (10::bigint, 't', NULL::int, NULL::text), (11, 'c', 6, 'f')$$,
    'history: a truncate is a row of its own, the table is kept');
SELECT ok(test.wait_for($$SELECT EXISTS (SELECT FROM cm_soft WHERE id = 6)$$), 'soft_delete: the truncate and the next insert');
SELECT results_eq($$SELECT id, __deleted FROM cm_soft ORDER BY id$$,
    $$VALUES (1, true), (2, true), (3, true), (4, true), (5, true), (6, false), (30, true)$$,
    'soft_delete: a truncate marks every row deleted (on_truncate truncate)');
SELECT ok(test.wait_for($$SELECT count(*) = 1 FROM eoingest.dead_letters WHERE job = 'cm_gone'$$)
          AND test.wait_for($$SELECT EXISTS (SELECT FROM cm_gone WHERE id = 6)$$),
    'soft_delete: a truncate the job refuses is a dead letter');
SELECT ok(test.wait_for($$SELECT count(*) = 5 FROM cm_resend$$), 'resend: the first events, two pairs at one position each');
\! eoi-kafka produce -K -z -p 0 cdc_resend < test/cdc/resend2.events
SELECT ok(test.wait_for($$SELECT EXISTS (SELECT FROM cm_resend WHERE id = 6)$$), 'resend: the second events');
SELECT results_eq($$SELECT __offset, __op, id, __source_lsn::text FROM cm_resend ORDER BY __offset$$,
    $$VALUES (0::bigint, 'c', 1, '0/6E'), (1, 'c', 2, '0/78'), (2, 'c', 3, '0/78'), (3, 'd', 3, '0/D2'), (4, 'c', 30, '0/D2'),
             (7, 'c', 5, '0/D2'), (8, 'c', 4, '0/136'), (9, 'c', 6, '0/136')$$,
    'resend: the two events sent again at the last position skipped, a third one there and one without a key applied');
SELECT * FROM finish();

-- What create_job and alter_job refuse, and what they keep.
\set VERBOSITY terse
CREATE TABLE cm_plain (id int PRIMARY KEY, name text, note text);
CREATE TABLE cm_badtype (id int, name text, note text, __op text, __source_ts timestamp, __source_lsn pg_lsn,
                         __topic text, __partition int, __offset bigint);
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_plain', format => 'json',
                           cdc_mode => 'history');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_plain', format => 'json',
                           envelope => 'debezium', cdc_mode => 'sometimes');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_plain', format => 'json',
                           envelope => 'debezium', deleted_column => 'gone');
\set VERBOSITY default
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_plain', format => 'json',
                           envelope => 'debezium', cdc_mode => 'history');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_badtype', format => 'json',
                           envelope => 'debezium', cdc_mode => 'history');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_plain', format => 'json',
                           envelope => 'debezium', cdc_mode => 'soft_delete');
CREATE TABLE cm_notnull (LIKE cm_plain, __op text, __source_ts timestamptz, __source_lsn pg_lsn,
                         __topic text, __partition int, __offset bigint);
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_notnull', format => 'json',
                           envelope => 'debezium', cdc_mode => 'history');
\set VERBOSITY terse
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_history', format => 'json',
                           envelope => 'debezium', cdc_mode => 'history', mode => 'upsert');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_history', format => 'json',
                           envelope => 'debezium', cdc_mode => 'history', key_columns => '{id}');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_soft', format => 'json',
                           envelope => 'debezium', cdc_mode => 'soft_delete', deleted_column => 'name');
CREATE TABLE cm_keyed (id int, d bool, PRIMARY KEY (id, d));
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_keyed', format => 'json',
                           envelope => 'debezium', cdc_mode => 'soft_delete', deleted_column => 'd');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'x', target => 'cm_soft', format => 'json',
                           envelope => 'debezium', cdc_mode => 'soft_delete', deleted_column => '');
-- out of soft_delete the column goes, into it the default comes
SELECT eoingest.alter_job('cm_gone', cdc_mode => 'apply');
SELECT cdc_mode, deleted_column FROM eoingest.job_definitions WHERE name = 'cm_gone';
SELECT eoingest.alter_job('cm_gone', cdc_mode => 'soft_delete');
SELECT eoingest.alter_job('cm_gone', deleted_column => 'gone');
SELECT eoingest.alter_job('cm_gone', cdc_mode => 'soft_delete', deleted_column => 'gone');
SELECT cdc_mode, deleted_column FROM eoingest.job_definitions WHERE name = 'cm_gone';
-- into history the key goes, the columns are checked
SELECT eoingest.alter_job('cm_soft', cdc_mode => 'history');
SELECT eoingest.alter_job('cm_history', cdc_mode => 'apply');
\set VERBOSITY default

SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'cm\_%' ORDER BY name;
