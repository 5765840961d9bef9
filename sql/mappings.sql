-- How message values map onto columns, end to end
-- against the real broker, asserting the stored values: JSON arrays into
-- array columns, numbers into time columns, key case, bytea as base64 or
-- hex, CSV header messages, the columns list, identity columns.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

-- ---- json ----
CREATE TABLE map_json (id int PRIMARY KEY, ints int[], texts text[], grid int[], docs jsonb[], doc jsonb,
                       ts timestamptz, ts_ms timestamptz, ts_us timestamp, d date,
                       raw bytea, hex bytea, blobs bytea[], stamps timestamptz[],
                       serial bigint GENERATED ALWAYS AS IDENTITY, "Temp" float8);
\! eoi-kafka create-topic map_json 1 >/dev/null
-- offset: 0-1 arrays; 2-4 epochs; 5-6 base64 and hex; 7 key case; 8 exact
-- key beats case, a typo; 9 a key for the identity; 10 strings as before;
-- bad: 11 ragged array, 12 bad base64, 13 two keys for one column, 14 epoch
-- out of range
\! printf '%s\n' '{"id":1,"ints":[1,2,3],"texts":["a","b,c","say \"hi\"","back\\slash","{braces}"," pad ",null,"NULL",""],"grid":[[1,2],[3,4]],"docs":[{"a":1},{"b":[2,3]},null],"doc":[{"a":1}]}' '{"id":2,"ints":[],"texts":[],"grid":[],"docs":[]}' '{"id":3,"ts":1547718199,"ts_ms":1547718199123,"ts_us":1547718199123456,"d":19723,"stamps":[0,1547718199000]}' '{"id":4,"ts":1547718199.5,"d":1704067200,"stamps":[]}' '{"id":5,"ts":-86400,"ts_us":-1,"d":-1}' '{"id":6,"raw":"aGVsbG8=","hex":"\\x68656c6c6f","blobs":["aGk=","\\x6869",null]}' '{"id":7,"raw":""}' '{"id":8,"temp":21.5}' '{"id":9,"tmep":1,"Temp":2,"temp":3}' '{"id":10,"serial":999}' '{"id":11,"ints":"{7,8}","hex":"\\x00ff","d":"2024-02-29","ts":"2024-02-29 12:00:00+00"}' '{"id":12,"grid":[[1,2],[3]]}' '{"id":13,"raw":"hello"}' '{"id":14,"TEMP":1,"temp":2}' '{"id":15,"ts":1e300}' | eoi-kafka produce -p 0 map_json
SELECT eoingest.create_job(name => 'map_json', brokers => :'brokers', topic => 'map_json',
                           target => 'map_json', format => 'json', batch_timeout_ms => 200);
SELECT eoingest.start_job('map_json');

-- A unit for every number: milliseconds, dates included.
CREATE TABLE map_ms (id int, t timestamptz, d date);
\! eoi-kafka create-topic map_ms 1 >/dev/null
\! printf '%s\n' '{"id":1,"t":1000,"d":86400000}' '{"id":2,"t":1547718199123.4}' | eoi-kafka produce -p 0 map_ms
SELECT eoingest.create_job(name => 'map_ms', brokers => :'brokers', topic => 'map_ms', target => 'map_ms',
                           format => 'json', batch_timeout_ms => 200, timestamp_unit => 'milliseconds');
SELECT eoingest.start_job('map_ms');

-- ---- csv: header messages, the columns list, identity ----
CREATE TABLE map_hdr (name text, city text);
\! eoi-kafka create-topic map_hdr 1 >/dev/null
\! printf 'name,city\nAnn,Paris\nNAME , City\n"name","city"\nname,town\n' | eoi-kafka produce -p 0 map_hdr
SELECT eoingest.create_job(name => 'map_hdr', brokers => :'brokers', topic => 'map_hdr', target => 'map_hdr',
                           batch_timeout_ms => 200);
SELECT eoingest.start_job('map_hdr');

CREATE TABLE map_csv (id int GENERATED ALWAYS AS IDENTITY, reading float8, label text DEFAULT 'none',
                      at timestamptz DEFAULT now());
\! eoi-kafka create-topic map_csv 1 >/dev/null
\! printf 'reading,label\n1.5, first\nReading , LABEL\n2.5,"reading"\n3.5,\n"reading","label"\n' | eoi-kafka produce -p 0 map_csv
SELECT eoingest.create_job(name => 'map_csv', brokers => :'brokers', topic => 'map_csv', target => 'map_csv',
                           batch_timeout_ms => 200, columns => '{reading, label}');
SELECT eoingest.start_job('map_csv');

\! eoi-kafka create-topic map_text 1 >/dev/null
\! printf 'hello\nlabel\n' | eoi-kafka produce -p 0 map_text
SELECT eoingest.create_job(name => 'map_text', brokers => :'brokers', topic => 'map_text', target => 'map_csv',
                           format => 'text', batch_timeout_ms => 200, columns => ARRAY['label']);
SELECT eoingest.start_job('map_text');

SELECT plan(26);

-- JSON arrays, epochs, bytea
SELECT ok(test.wait_for($$SELECT next_offset = 15 FROM eoingest.offsets WHERE job = 'map_json'$$),
    'offsets move past every json record');
SELECT is((SELECT array_agg(id ORDER BY id) FROM map_json), '{1,2,3,4,5,6,7,8,9,10,11}', 'good json records are rows');
SELECT results_eq($$SELECT ints, texts, grid, docs, doc FROM map_json WHERE id IN (1, 2) ORDER BY id$$,
    $$VALUES ('{1,2,3}'::int[], ARRAY['a', 'b,c', 'say "hi"', 'back\slash', '{braces}', ' pad ', NULL, 'NULL', ''],
              '{{1,2},{3,4}}'::int[], ARRAY['{"a":1}'::jsonb, '{"b":[2,3]}', NULL], '[{"a":1}]'::jsonb),
             ('{}', '{}', '{}', '{}', NULL)$$,
    'json arrays fill array columns: elements quoted and escaped, nulls, nested arrays, objects, empty arrays');
SELECT results_eq($$SELECT ts, ts_ms, ts_us, d, stamps FROM map_json WHERE id IN (3, 4, 5) ORDER BY id$$,
    $$VALUES ('2019-01-17 09:43:19+00'::timestamptz, '2019-01-17 09:43:19.123+00'::timestamptz,
              '2019-01-17 09:43:19.123456'::timestamp, '2024-01-01'::date,
              ARRAY['1970-01-01 00:00:00+00'::timestamptz, '2019-01-17 09:43:19+00']),
             ('2019-01-17 09:43:19.5+00', NULL, NULL, '2024-01-01', '{}'),
             ('1969-12-31 00:00:00+00', NULL, '1969-12-31 23:59:59', '1969-12-31', NULL)$$,
    'json numbers fill time columns: epoch seconds, milliseconds, microseconds by magnitude, dates as days');
SELECT results_eq($$SELECT raw, hex, blobs FROM map_json WHERE id IN (6, 7) ORDER BY id$$,
    $$VALUES ('\x68656c6c6f'::bytea, '\x68656c6c6f'::bytea, ARRAY['\x6869'::bytea, '\x6869', NULL]),
             ('\x', NULL, NULL)$$,
    'json strings fill bytea as base64, or as hex after \x');
SELECT results_eq($$SELECT id, "Temp" FROM map_json WHERE id IN (8, 9) ORDER BY id$$,
    $$VALUES (8, 21.5::float8), (9, 2)$$,
    'a key matches its column exactly, or else ignoring case');
SELECT ok((SELECT serial <> 999 FROM map_json WHERE id = 10),
    'a key for a GENERATED ALWAYS identity column does not override it');
SELECT results_eq($$SELECT ints, hex, d, ts FROM map_json WHERE id = 11$$,
    $$VALUES ('{7,8}'::int[], '\x00ff'::bytea, '2024-02-29'::date, '2024-02-29 12:00:00+00'::timestamptz)$$,
    'json strings still go through the column type''s input');
SELECT results_eq($$SELECT "offset"::int, sqlstate FROM eoingest.dead_letters WHERE job = 'map_json' ORDER BY "offset"$$,
    $$VALUES (11, '22P02'), (12, '22P02'), (13, '22000'), (14, '22008')$$,
    'ragged arrays, bad base64, ambiguous keys and epochs out of range are dead letters, each with its SQLSTATE');
SELECT ok((SELECT bool_and(error LIKE '%HINT:%') FROM eoingest.dead_letters WHERE job = 'map_json'),
    'and a hint');
\! grep -c 'JSON key "tmep" matches no column of "map_json"' "$EOINGEST_RUN/pg.log"
\! grep -c 'JSON key "temp" is ignored: column "Temp" of "map_json" takes the key of exactly its name' "$EOINGEST_RUN/pg.log"
\! grep -c 'JSON key "serial" names a GENERATED ALWAYS identity column of "map_json"' "$EOINGEST_RUN/pg.log"

SELECT ok(test.wait_for($$SELECT count(*) = 2 FROM map_ms$$), 'timestamp_unit rows arrive');
SELECT results_eq($$SELECT t, d FROM map_ms ORDER BY id$$,
    $$VALUES ('1970-01-01 00:00:01+00'::timestamptz, '1970-01-02'::date),
             ('2019-01-17 09:43:19.1234+00', NULL)$$,
    'timestamp_unit milliseconds reads every number in milliseconds');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'map_bad', brokers => %L, topic => 'x', target => 'map_ms', format => 'json', timestamp_unit => 'weeks')$$, :'brokers'),
    '22023', 'unrecognized timestamp_unit "weeks"', 'an unknown timestamp_unit is refused');

-- CSV
SELECT ok(test.wait_for($$SELECT next_offset = 5 FROM eoingest.offsets WHERE job = 'map_hdr'$$), 'header messages are consumed');
SELECT results_eq($$SELECT name, city FROM map_hdr ORDER BY name$$,
    $$VALUES ('Ann', 'Paris'), ('name', 'town')$$,
    'a message whose fields are the column names is a header and is skipped');
SELECT ok(test.wait_for($$SELECT count(*) = 3 FROM map_csv WHERE reading IS NOT NULL$$), 'csv rows with a columns list arrive');
SELECT results_eq($$SELECT reading, label, id IS NOT NULL, at IS NOT NULL FROM map_csv WHERE reading IS NOT NULL ORDER BY reading$$,
    $$VALUES (1.5::float8, 'first', true, true), (2.5, 'reading', true, true), (3.5, NULL, true, true)$$,
    'columns maps the fields onto the named columns; the others take their defaults');
SELECT ok(test.wait_for($$SELECT next_offset = 6 FROM eoingest.offsets WHERE job = 'map_csv'$$)
          AND (SELECT count(*) = 0 FROM eoingest.dead_letters WHERE job = 'map_csv'),
    'headers in any case or quoted are skipped, their offsets consumed, nothing set aside');
SELECT ok(test.wait_for($$SELECT count(*) = 2 FROM map_csv WHERE reading IS NULL$$), 'text rows with a columns list arrive');
SELECT results_eq($$SELECT label, reading FROM map_csv WHERE reading IS NULL ORDER BY label$$,
    $$VALUES ('hello', NULL::float8), ('label', NULL)$$,
    'format text puts the value into the one named column');

SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'map_bad', brokers => %L, topic => 'x', target => 'map_csv')$$, :'brokers'),
    '428C9', NULL, 'csv refuses a target whose GENERATED ALWAYS identity column would take a field');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'map_bad', brokers => %L, topic => 'x', target => 'map_csv', columns => '{id, reading}')$$, :'brokers'),
    '428C9', NULL, 'columns cannot name a GENERATED ALWAYS identity column');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'map_bad', brokers => %L, topic => 'x', target => 'map_csv', columns => '{reading, nosuch}')$$, :'brokers'),
    '42703', NULL, 'columns must name columns of the target');
SELECT throws_ok(
    format($$SELECT eoingest.create_job(name => 'map_bad', brokers => %L, topic => 'x', target => 'map_csv', columns => '{reading, reading}')$$, :'brokers'),
    '42701', NULL, 'columns must not name a column twice');
SELECT throws_ok($$SELECT eoingest.alter_job('map_csv', columns => '{id}')$$,
    '428C9', NULL, 'alter_job checks columns as create_job does');
SELECT eoingest.alter_job('map_text', columns => '{reading}');
SELECT is((SELECT columns FROM eoingest.jobs WHERE name = 'map_text'), '{reading}'::text[], 'alter_job changes columns');

SELECT * FROM finish();

SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'map%' ORDER BY name;
