-- CSV fields into integer columns: read as int2in, int4in and int8in read
-- them (white space around the digits, the range of the type), with their
-- errors, also for a field too long for the parser's buffer on the stack;
-- a domain over an integer type keeps its input function and its checks.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

\! eoi-kafka create-topic intf 1 >/dev/null
\! python3 -c 'print(" 1 , 2 , 3 , 4"); print("-32768,-2147483648,-9223372036854775808,9223372036854775807"); print("1,2,9223372036854775808,4"); print("1,2,12x,4"); print("1,2," + "9" * 70 + ",4"); print("1,2," + "0" * 69 + "7,4"); print("40000,2,3,4"); print("1,2147483648,3,4"); print("1,2,3,-1"); print("1,,,4"); print("1,2,\t-42\t,4")' | eoi-kafka produce -p 0 intf

CREATE DOMAIN positive_big AS bigint CHECK (VALUE > 0);
CREATE TABLE intf (a int2, b int4, c int8, d positive_big);
SELECT eoingest.create_job(name => 'intf', brokers => :'brokers', topic => 'intf', format => 'csv',
    target => 'intf', batch_timeout_ms => 200, on_error => 'dead_letter');
SELECT eoingest.start_job('intf');

SELECT plan(3);

SELECT ok(test.wait_for($$SELECT next_offset = 11 FROM eoingest.offsets WHERE job = 'intf'$$),
    'the job reads its topic to the end');
SELECT results_eq($$SELECT a::text, b::text, c::text, d::text FROM intf ORDER BY intf.c NULLS LAST$$,
    $$VALUES ('-32768', '-2147483648', '-9223372036854775808', '9223372036854775807'),
             ('1', '2', '-42', '4'), ('1', '2', '3', '4'), ('1', '2', '7', '4'), ('1', NULL, NULL, '4')$$,
    'integers are read with white space around them, at the ends of their ranges, and from 70 digits');
SELECT results_eq($$SELECT "offset"::int, sqlstate, split_part(error, ' CONTEXT: ', 1) FROM eoingest.dead_letters WHERE job = 'intf' ORDER BY "offset"$$,
    $$VALUES (2, '22003', 'value "9223372036854775808" is out of range for type bigint'),
             (3, '22P02', 'invalid input syntax for type bigint: "12x"'),
             (4, '22003', 'value "' || repeat('9', 70) || '" is out of range for type bigint'),
             (6, '22003', 'value "40000" is out of range for type smallint'),
             (7, '22003', 'value "2147483648" is out of range for type integer'),
             (8, '23514', 'value for domain positive_big violates check constraint "positive_big_check"')$$,
    'the errors are the input functions''');

SELECT * FROM finish();

SELECT eoingest.drop_job('intf');
