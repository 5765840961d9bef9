-- The job API: argument checks, idempotence, errors that say what to do.
\set VERBOSITY default
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS
CREATE TABLE api_target (id text, ts bigint, temperature double precision);

SELECT plan(24);

SELECT lives_ok(
    format($$SELECT eoingest.create_job(name => 'api', brokers => %L, topic => 'api_topic', target => 'api_target')$$, :'brokers'),
    'create_job with defaults');
SELECT results_eq(
    $$SELECT format, mode, start_offset, batch_size, batch_timeout_ms, parallelism, state, target
        FROM eoingest.jobs WHERE name = 'api'$$,
    $$VALUES ('csv', 'exactly_once', 'earliest', 10000, 1000, 1, 'stopped', 'public.api_target')$$,
    'defaults are stored, target schema-qualified');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api', brokers => %L, topic => 'x', target => 'api_target')$$, :'brokers'),
    '42710', 'eoingest job "api" already exists', 'duplicate name');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'no_such_table')$$, :'brokers'),
    '42P01', 'target table "no_such_table" does not exist', 'missing target');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'api_target', format => 'xml')$$, :'brokers'),
    '22023', 'unrecognized format "xml"', 'unknown format');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'api_target', mode => 'twice')$$, :'brokers'),
    '22023', 'unrecognized mode "twice"', 'unknown mode');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'api_target', start_offset => 'middle')$$, :'brokers'),
    '22023', 'unrecognized start_offset "middle"', 'unknown start_offset');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'api_target', options => '{"no.such.property": 1}')$$, :'brokers'),
    '22023', 'unrecognized Kafka client property "no.such.property"', 'unknown librdkafka property');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'api_target', options => '{"fetch.wait.max.ms": "soon"}')$$, :'brokers'),
    '22023', 'invalid value for Kafka client property "fetch.wait.max.ms"', 'bad librdkafka value');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'api_target', options => '{"enable.auto.commit": true}')$$, :'brokers'),
    '22023', 'Kafka client property "enable.auto.commit" is managed by eoingest', 'managed property refused');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'api_target', batch_size => 0)$$, :'brokers'),
    '22023', 'batch_size must be between 1 and 1000000, not 0', 'batch_size range');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'bad topic', target => 'api_target')$$, :'brokers'),
    '22023', '"bad topic" is not a valid Kafka topic name', 'bad topic name');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x')$$, :'brokers'),
    '22023', 'a job needs a target table or a transform', 'neither target nor transform');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', transform => 'INSERT INTO nowhere SELECT 1')$$, :'brokers'),
    '42P01', NULL, 'transform is planned at create time');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'api2', brokers => %L, topic => 'x', target => 'api_target', format => 'text')$$, :'brokers'),
    '42P16', NULL, 'format text needs a single column without default');

SELECT throws_ok($$SELECT eoingest.start_job('nope')$$, '42704', 'eoingest job "nope" does not exist', 'start unknown job');
SELECT throws_ok($$SELECT eoingest.stop_job('nope')$$, '42704', 'eoingest job "nope" does not exist', 'stop unknown job');
SELECT throws_ok($$SELECT eoingest.drop_job('nope')$$, '42704', 'eoingest job "nope" does not exist', 'drop unknown job');
SELECT throws_ok($$SELECT * FROM eoingest.batch()$$, '55000',
    'eoingest.batch() can only be called from a job''s transform', 'batch() outside a worker');

SELECT lives_ok($$SELECT eoingest.stop_job('api')$$, 'stopping a stopped job is fine');
SELECT lives_ok($$SELECT eoingest.stop_job('api')$$, 'and again');
SELECT results_eq($$SELECT name, worker, state FROM eoingest.job_status WHERE name = 'api'$$,
                  $$VALUES ('api', 0, 'stopped')$$, 'job_status shows the stopped job');
SELECT lives_ok($$SELECT eoingest.drop_job('api')$$, 'drop_job');
SELECT is((SELECT count(*) FROM eoingest.jobs WHERE name = 'api'), 0::bigint, 'job is gone');

SELECT * FROM finish();

-- durability: sync (default) or async, but not async in mode two_phase.
\set VERBOSITY terse
SELECT eoingest.create_job(name => 'api_async', brokers => :'brokers', topic => 'x', target => 'api_target',
                           durability => 'later');
SELECT eoingest.create_job(name => 'api_async', brokers => :'brokers', topic => 'x', target => 'api_target',
                           durability => 'async', mode => 'two_phase');
SELECT eoingest.create_job(name => 'api_async', brokers => :'brokers', topic => 'x', target => 'api_target',
                           durability => 'async');
SELECT eoingest.alter_job('api_async', mode => 'two_phase');
SELECT eoingest.alter_job('api_async', durability => 'sync');
SELECT durability FROM eoingest.job_definitions WHERE name = 'api_async';
SELECT eoingest.drop_job('api_async');
\set VERBOSITY default
DROP TABLE api_target;

-- Jobs live in every database that has the extension; DROP DATABASE has
-- the database's launcher leave first, so it needs no FORCE.
CREATE DATABASE eoingest_other;
\c eoingest_other
SET client_min_messages = warning;
CREATE EXTENSION eoingest;
\set VERBOSITY default
CREATE TABLE elsewhere_t (v text);
SELECT eoingest.create_job(name => 'elsewhere', brokers => '127.0.0.1:1', topic => 'x', target => 'elsewhere_t');
SELECT name, target FROM eoingest.jobs;
\c postgres
DROP DATABASE eoingest_other;
