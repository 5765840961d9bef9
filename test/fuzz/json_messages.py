#!/usr/bin/env python3
"""Random JSON messages for 43-json-differential.t: one message a line on
stdout (bytes), for the table that test makes.  Objects whose keys are the
columns' names, their case variants, duplicates and unknown keys; values of
every JSON kind, the ones each column type reads specially (epochs for the
time types, base64 and hex for bytea, arrays for the array types, nested
values for json and jsonb) and hostile ones: escapes (\\u0000, surrogates,
lone surrogates), numbers beyond numeric, float8 and int8, -0, exponents,
deep nesting (within max_stack_depth: deeper stops the job, as it always did), long strings with the
byte the scan stops at across its 8- and 16-byte blocks, truncated and trailing text, invalid tokens, non-objects,
bytes that are not UTF-8.  argv: count seed."""
import json
import random
import sys

count, seed = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(seed)

COLUMNS = ['i4', 'i8', 'i2', 'num', 'num82', 'f8', 'f4', 'b', 't', 'vc', 'tstz', 'tstz0',
           'ts', 'd', 'by', 'jb', 'js', 'ia', 'ta', 'tsa', 'bya', 'jba', 'u', 'dom',
           'Temp', 'Dup', 'DUP', 'dflt', 'serial']

INTS = ['0', '-0', '1', '-1', '42', '32767', '32768', '-32769', '2147483647', '2147483648',
        '-2147483648', '-2147483649', '9223372036854775807', '9223372036854775808',
        '-9223372036854775808', '-9223372036854775809', '123456789012345678901234567890']
NUMBERS = INTS + ['1.5', '-1.5', '0.1', '-0.0', '0.000', '1e2', '1E2', '1e+2', '1.50e1', '-1e-2',
                  '1e308', '1e309', '-1e309', '1e-320', '1e-400', '-1e-400', '2.5e-324', '1e999',
                  '1e-999', '1e1000', '1e-1000', '1e16383', '1.7976931348623157e308',
                  '3.4028235e38', '3.5e38', '1e-46', '123.456', '123.455', '99999.995', '0e0',
                  '0.30000000000000004', '1' * 40 + '.' + '9' * 40, '5e-1', '-5e-1',
                  '1' + '0' * 999, '1' + '0' * 1001, '0.' + '0' * 1100 + '1']
EPOCHS = ['0', '-1', '19723', '9999999', '10000000', '1547718199', '99999999999', '100000000000',
          '1547718199123', '99999999999999', '100000000000000', '1547718199123456',
          '99999999999999999', '100000000000000000', '1547718199123456789', '1547718199123456500',
          '1547718199123455500', '-1547718199123456500', '9223372036854775807',
          '-9223372036854775808', '210866803200', '-210866803200', '9224318016000',
          '-62135596800', '1547718199.5', '1e11', '1e300', '-1e300', '253402300799999999',
          '1547718199.0000005']
STRINGS = ['', 'plain', 'é', 'tab\there', 'nl\nx', 'quote"q', 'back\\slash', '\\N', 'NULL',
           '{1,2}', '{"a": 1}', '[1, 2]', 'true', '12', ' 12 ', '1e2', '2024-02-29 12:00:00+00',
           '2021-02-29', 'infinity', 'aGVsbG8=', 'aGk', 'aG=k', '\\x6869', '\\xzz', 'hello',
           'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'abcdef', 'abc', '\U0001F600', '\u2028']
# JSON string literals with escapes, as they go on the wire (some invalid)
RAW_STRINGS = ['"\\u00e9"', '"\\u0041\\u0062"', '"\\ud83d\\ude00"', '"\\ud800"', '"\\udc00"',
               '"\\ud800\\u0041"', '"\\u0000"', '"a\\u0000b"', '"\\/\\b\\f\\n\\r\\t"', '"\\x41"',
               '"\\u12"', '"\\uZZZZ"', '"\\\'"', '"tab\tin"', '"\\"\\\\"', '"\\uD83D\\uDE00"',
               '"\\u00"', '"\\u007f"', '"\\u0080"', '"\\uffff"', '"\\ufffe"']
LITERALS = ['true', 'false', 'null', 'tru', 'nul', 'True', 'NULL', 'truex', 'null1', 'NaN',
            'Infinity', '-Infinity', '+1', '01', '1.', '.5', '-', '1e', '1e+', '--1', '0x10',
            '1_000', '1.5.5', "'s'", 'undefined']


def number():
    return rnd.choice(NUMBERS)


def long_string():
    """13 to 40 plain bytes, then one the scan stops at (or one of 0x80 and above, or DEL), then up to
    19 more: across the 8- and 16-byte blocks the scan reads strings by.  Sometimes the control
    character unescaped, which is invalid."""
    c = rnd.choice(['"', '\\', '\n', '\t', '\x01', '\x1f', ' ', '\x7f', '\u00e9', '\u2028'])
    s = 'x' * rnd.randrange(13, 41) + c + 'y' * rnd.randrange(20)
    if c in '\n\t\x01\x1f' and rnd.random() < 0.2:
        return '"' + s + '"'
    return json.dumps(s, ensure_ascii=rnd.random() < 0.5)


def string():
    if rnd.random() < 0.3:
        return long_string()
    if rnd.random() < 0.3:
        return rnd.choice(RAW_STRINGS)
    return json.dumps(rnd.choice(STRINGS), ensure_ascii=rnd.random() < 0.5)


def scalar():
    r = rnd.random()
    if r < 0.35:
        return number()
    if r < 0.7:
        return string()
    if r < 0.8:
        return rnd.choice(['true', 'false'])
    if r < 0.95:
        return 'null'
    return rnd.choice(LITERALS)


def ws():
    if rnd.random() < 0.002:
        return rnd.choice(['\x0c', '\xa0', '\x0b'])          # not JSON's white space
    return rnd.choice(['', '', '', ' ', '\t', '\r', ' \t \r'])


def nested(depth=0):
    if depth > 3 or rnd.random() < 0.3:
        return scalar()
    if rnd.random() < 0.5:
        n = rnd.randrange(4)
        return '[' + ws() + (',' + ws()).join(nested(depth + 1) for _ in range(n)) + ws() + ']'
    keys = ['a', 'b', 'a', 'A', 'é', '', 'long key ' * 3, '\\u0061']
    n = rnd.randrange(4)
    return '{' + ws() + ','.join(
        '"%s"%s:%s%s' % (rnd.choice(keys), ws(), ws(), nested(depth + 1)) for _ in range(n)) + ws() + '}'


def array(elem, depth=1, rectangular=False):
    """An array for an array column: rectangular mostly, ragged sometimes."""
    dims = [rnd.randrange(4) for _ in range(depth)]
    if rectangular:
        def level(k):
            if k == len(dims):
                return elem()
            return '[' + ','.join(level(k + 1) for _ in range(dims[k])) + ']'
        return level(0)

    def level(k):
        if k == len(dims):
            return elem()
        n = dims[k] if rnd.random() < 0.9 else rnd.randrange(4)
        return '[' + ','.join(level(k + 1) for _ in range(n)) + ']'
    if rnd.random() < 0.05:
        return '[1, [2]]'
    if rnd.random() < 0.03:
        return '[' * 7 + '1' + ']' * 7
    return level(0)


def deep(n):
    r = rnd.random()
    if r < 0.5:
        return '[' * n + ']' * n
    if r < 0.8:
        return '{"a":' * n + '1' + '}' * n
    return '[' * n + ']' * (n - 1)  # unbalanced


GOOD = {
    'i4': ['0', '-0', '1', '-1', '42', '2147483647', '-2147483648', '"7"', '1e2', '1E+1'],
    'i8': ['0', '-1', '9223372036854775807', '-9223372036854775808', '1547718199123', '" 8 "'],
    'i2': ['0', '-0', '32767', '-32768', '"12"'],
    'num': ['1.5', '-0.0', '0.000', '1e2', '1.50e1', '-1e-2', '1e-999', '123456789012345678901234567890',
            '0.30000000000000004', '"12.5"', '1' + '0' * 999, '1e999'],
    'num82': ['1.5', '123.455', '99999.995', '-0.0', '1e2', '"3.14159"'],
    'f8': ['1.5', '1e308', '-0.0', '0', '1e-320', '2.5e-324', '0.30000000000000004', '1.7976931348623157e308',
           '-1e-2', '"NaN"', '"-Infinity"', '123456789012345678901234567890', '1e-300'],
    'f4': ['1.5', '-0.0', '0.1', '1e2', '3.4028235e38', '16777217', '"inf"'],
    'b': ['true', 'false', '"t"', '"off"', '"yes"'],
    'vc': ['"abc"', '"abcde"', '""', '"\\u00e9"', '12', 'true'],
    'tstz': EPOCHS[:15] + ['"2024-02-29 12:00:00+00"'],
    'tstz0': ['1547718199', '1547718199123', '1547718199123456', '1547718199.5', '"2024-02-29 12:00:00.7+00"'],
    'ts': EPOCHS[:15] + ['1547718199.25', '"2024-02-29 12:00:00"'],
    'd': ['0', '19723', '9999999', '10000000', '1704067200', '-1', '"2024-01-01"', '86400000'],
    'by': ['"aGVsbG8="', '"\\\\x6869"', '""', '"AAEC"'],
    'u': ['"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"', '"A0EEBC999C0B4EF8BB6D6BB9BD380A11"'],
    'dom': ['1', '5', '2147483647', '"3"'],
    'dflt': ['1', 'null', '7'],
}
for c in ('Temp', 'Dup', 'DUP'):
    GOOD[c] = GOOD['f8']


def valid_nested(depth=0):
    """Valid JSON; at depth 0 an object or array (what a jsonb column reads)."""
    if depth > 3 or (depth > 0 and rnd.random() < 0.3):
        return rnd.choice(['1', '-0', '1e2', '1.50', '-1e-2', '"s"', '"\\u00e9"', '"\\ud83d\\ude00"',
                           'true', 'false', 'null', '"a\\"b"', '1e400'[:3], '123456789012345678901234567890'])
    if rnd.random() < 0.5:
        n = rnd.randrange(4)
        return '[' + ws() + (',' + ws()).join(valid_nested(depth + 1) for _ in range(n)) + ']'
    keys = ['a', 'b', 'a', 'A', 'é', '', 'bb', '\\u0061']
    n = rnd.randrange(4)
    return '{' + ','.join('"%s" :%s' % (rnd.choice(keys), valid_nested(depth + 1)) for _ in range(n)) + ws() + '}'


def good_value(col):
    if col in GOOD:
        return rnd.choice(GOOD[col])
    if col == 't':
        return rnd.choice([string(), number(), 'true', valid_nested()]) if rnd.random() < 0.3 else \
            json.dumps(rnd.choice(STRINGS), ensure_ascii=rnd.random() < 0.5)
    if col in ('jb', 'js'):
        return valid_nested()
    if col == 'ia':
        d = rnd.choice([1, 1, 2])
        return array(lambda: rnd.choice(['0', '-0', '42', 'null', '"7"']), d, True)
    if col == 'ta':
        return array(lambda: json.dumps(rnd.choice(STRINGS)), rnd.choice([1, 2]), True)
    if col == 'tsa':
        return array(lambda: rnd.choice(EPOCHS[:12]), 1, True)
    if col == 'bya':
        return array(lambda: json.dumps(rnd.choice(['aGk=', '\\x6869'])), 1, True)
    if col == 'jba':
        return array(valid_nested, 1, True)
    return 'null'


def nasty_value(col):
    r = rnd.random()
    if r < 0.3:
        return scalar()
    if r < 0.4:
        return nested()
    if col in ('tstz', 'tstz0', 'ts', 'd', 'tsa'):
        return rnd.choice(EPOCHS)
    if col in ('ia', 'ta', 'tsa', 'bya', 'jba'):
        return array(scalar, rnd.choice([1, 2, 3]))
    if col == 'by':
        return string()
    return rnd.choice(NUMBERS + RAW_STRINGS)


def key_for(col):
    r = rnd.random()
    if r < 0.9:
        return json.dumps(col)
    if r < 0.95:
        return json.dumps(rnd.choice([col.lower(), col.upper(), col.capitalize(), col.swapcase()]))
    if r < 0.98:
        return json.dumps(rnd.choice(['extra', 'tmep', 'temp', 'TEMP', 'dup', 'dUp', 'SERIAL']))
    # the same key written with escapes
    return '"' + ''.join('\\u%04x' % ord(ch) for ch in col) + '"'


def obj():
    cols = [c for c in COLUMNS if rnd.random() < 0.7]
    if rnd.random() < 0.3:
        rnd.shuffle(cols)
    nasty = rnd.choice(cols) if cols and rnd.random() < 0.15 else None
    members = []
    for col in cols:
        members.append((key_for(col), nasty_value(col) if col == nasty else good_value(col)))
        if rnd.random() < 0.03:
            members.append((key_for(col), good_value(col)))   # a duplicate, last wins
    return '{' + ws() + (',' + ws()).join('%s%s:%s%s' % (k, ws(), ws(), v) for k, v in members) + ws() + '}'


def hostile(text):
    r = rnd.random()
    if r < 0.25:
        return text[:rnd.randrange(len(text))]              # truncated
    if r < 0.35:
        return text + rnd.choice([' x', '}', ',', ' {}', '\t', ' '])
    if r < 0.45:
        return rnd.choice(['[1, 2]', '"s"', '12', 'null', 'true', '', ' ', '{}', '{ }', '[]'])
    if r < 0.55:
        return '{"i4": 1, "jb": %s}' % deep(rnd.choice([10, 63, 64, 65, 200, 500]))
    if r < 0.6:
        return '\ufeff' + text                               # a BOM
    if r < 0.7:
        i = rnd.randrange(len(text))
        return text[:i] + rnd.choice(LITERALS) + text[i:]
    if r < 0.75:
        return '{"i4":1,"t":"' + rnd.choice(['\x01', '\x1f', '\x7f']) + '"}'
    if r < 0.8:
        return '{"i4": 1, "t": "x", "i4": 2, "t": "y", "Temp": 1, "temp": 2, "Temp": 3}'
    if r < 0.85:
        return '{"temp": 1, "TEMP": 2}'                       # two keys for one column
    if r < 0.9:
        return '{"tEMP": 1, "tEMP": 2, "i8": 5}'              # one key twice: last wins
    return text.replace('"', "'", 1)


out = []
for _ in range(count):
    text = obj()
    if rnd.random() < 0.08:
        text = hostile(text)
    data = text.encode('utf-8', 'surrogatepass')
    if rnd.random() < 0.01:
        data = data.replace(b'"t"', b'"t\xff"', 1)            # not UTF-8
    out.append(data.replace(b'\n', b' '))
sys.stdout.buffer.write(b'\n'.join(out) + b'\n')
