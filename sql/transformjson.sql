-- A transform's value_json is the jsonb that jsonb_in makes of the value's
-- text, whatever the text: escapes, duplicate keys, numbers of every
-- spelling, nested values, values that are no object, nesting deeper than
-- the one-pass scan reads, and text that is no JSON at all.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

\! eoi-kafka create-topic tjson 1 >/dev/null
\! printf '%s\n' '{"a": 1, "b": "x"}' '{"a": 1, "a": 2, "b": null, "a": 3}' '{"zz": 1, "a": 2, "mm": null, "b": true, "c": false}' '{"s": "q\"uote\\back\/slash\n\t\b\f\r\u00e9\u0041\ud83d\ude00", "k\u0041y": true, "\u006b": "kk"}' '{"a": 1, "\u0061": 2}' '{"n": -0, "e": 1.5e10, "f": 1E-3, "g": -2.50E+2, "big": 123456789012345678901234567890, "frac": 0.10, "z": 0}' '{"o": {"x": [1, {"y": null}], "z": "w", "x": 2}, "arr": [], "eo": {}, "s": [" ", "\"]"]}' '{}' '  { "ws" :  false ,"t":"" }  ' '[1, 2, {"a": 1}]' '"just a string"' '42' 'null' '{"bad": "nul \u0000 inside"}' '{"a": 1,}' 'not json' '{"a": "é ü 日本"}' | eoi-kafka produce -p 0 tjson
\! python3 -c 'print("{\"deep\": " + "[" * 70 + "1" + "]" * 70 + ", \"k\": 1}"); print("{\"long\": \"" + "x" * 100000 + "\", \"n\": 1e999}")' | eoi-kafka produce -p 0 tjson

CREATE TABLE tj (off bigint, v jsonb, t text);
SELECT eoingest.create_job(name => 'tj', brokers => :'brokers', topic => 'tjson', format => 'json',
    batch_timeout_ms => 200, on_error => 'dead_letter',
    transform => $$INSERT INTO tj SELECT "offset", value_json, value FROM eoingest.batch()$$);
SELECT eoingest.start_job('tj');

SELECT plan(5);

SELECT ok(test.wait_for($$SELECT next_offset = 19 FROM eoingest.offsets WHERE job = 'tj'$$),
    'the job reads its topic to the end');
SELECT results_eq($$SELECT "offset"::int, sqlstate FROM eoingest.dead_letters WHERE job = 'tj' ORDER BY "offset"$$,
    $$VALUES (13, '22P05'), (14, '22P02'), (15, '22P02')$$,
    'what jsonb_in refuses is a record error: \u0000, a trailing comma, no JSON');
SELECT is((SELECT count(*) FROM tj), 16::bigint, 'every other message is a row');
SELECT is_empty($$SELECT off FROM tj WHERE v::text IS DISTINCT FROM t::jsonb::text$$,
    'value_json is what jsonb_in makes of the value, byte for byte');
SELECT results_eq($$SELECT v->>'a', v->>'k', v->>'kAy' FROM tj WHERE off IN (1, 3, 4) ORDER BY off$$,
    $$VALUES ('3', NULL, NULL), (NULL, 'kk', 'true'), ('2', NULL, NULL)$$,
    'duplicate keys keep the last value, escaped or not');

SELECT * FROM finish();

SELECT eoingest.drop_job('tj');
