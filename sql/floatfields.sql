-- Decimals into double precision columns, read as float8in reads them: from
-- CSV fields (as the text's ::float8) and JSON numbers (as jsonb's number
-- gives them: ::numeric::float8, which has no -0), bit for bit, over the
-- edges of the short-decimal path and 20,000 random decimals; a sign and
-- words too; what float8in refuses is its record's error, with float8in's
-- message.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS
\getenv testdir EOINGEST_TEST_DIR

\! eoi-kafka create-topic floatf_csv 1 >/dev/null
\! eoi-kafka create-topic floatf_json 1 >/dev/null
\set generator 'python3 ' :testdir '/tools/decimal_fields.py'
\set produce_csv '\\! ' :generator ' csv | eoi-kafka produce -p 0 floatf_csv'
\set produce_json '\\! ' :generator ' json | eoi-kafka produce -p 0 floatf_json'
:produce_csv
:produce_json
\! printf '%s\n' ' 2.5 , 2.5 ' 'NaN,NaN' '-Infinity,-Infinity' '+3,+3' '1e400,1e400' '1.5x,1.5x' '1e-400,1e-400' | eoi-kafka produce -p 0 floatf_csv

CREATE TABLE floatf_csv (t text, f float8);
CREATE TABLE floatf_json (t text, f float8);
SELECT eoingest.create_job(name => 'floatf_csv', brokers => :'brokers', topic => 'floatf_csv', format => 'csv',
    target => 'floatf_csv', batch_timeout_ms => 200, on_error => 'dead_letter');
SELECT eoingest.create_job(name => 'floatf_json', brokers => :'brokers', topic => 'floatf_json', format => 'json',
    target => 'floatf_json', batch_timeout_ms => 200, on_error => 'dead_letter');
SELECT eoingest.start_job('floatf_csv');
SELECT eoingest.start_job('floatf_json');

SELECT plan(6);

SELECT ok(test.wait_for($$SELECT next_offset = 20052 FROM eoingest.offsets WHERE job = 'floatf_csv'$$),
    'the csv job reads its topic to the end');
SELECT ok(test.wait_for($$SELECT next_offset = 14696 FROM eoingest.offsets WHERE job = 'floatf_json'$$),
    'the json job reads its topic to the end');
SELECT is((SELECT count(*) FILTER (WHERE float8send(f) IS DISTINCT FROM float8send(trim(t)::float8)) || ' of ' || count(*)
             FROM floatf_csv),
    '0 of 20049', 'every CSV field is the double float8in reads from it, the sign of a zero included');
SELECT is((SELECT count(*) FILTER (WHERE float8send(f) IS DISTINCT FROM float8send(t::numeric::float8)) || ' of ' || count(*)
             FROM floatf_json),
    '0 of 14696', 'every JSON number is the double of its numeric, as through jsonb');
SELECT is((SELECT string_agg(t, ' ' ORDER BY t COLLATE "C") FROM floatf_csv WHERE t !~ '^-?[0-9.]+([eE][-+]?[0-9]+)?$'),
    '+3 -Infinity NaN', 'a sign and words are read by float8in');
SELECT results_eq($$SELECT "offset"::int, sqlstate, split_part(error, ' CONTEXT: ', 1) FROM eoingest.dead_letters
                    WHERE job = 'floatf_csv' ORDER BY "offset"$$,
    $$VALUES (20049, '22003', '"1e400" is out of range for type double precision'),
             (20050, '22P02', 'invalid input syntax for type double precision: "1.5x"'),
             (20051, '22003', '"1e-400" is out of range for type double precision')$$,
    'what float8in refuses is the record''s error, in float8in''s words');

SELECT * FROM finish();

SELECT eoingest.drop_job('floatf_csv');
SELECT eoingest.drop_job('floatf_json');
