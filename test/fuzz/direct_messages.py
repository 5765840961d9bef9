#!/usr/bin/env python3
"""Random CSV messages for 42-direct-differential.t: one message a line on
stdout, for the columns (a, b, c, d, e, f, g, h, i, j, k, l, p, n, u) of its
table; good values, bad ones of every kind, NULLs, quoting, headers, wrong
field counts.  argv: count seed [json]: with json, the same rows as JSON
objects (values as strings, integers as numbers half of the time, null for
an empty field, a key left out now and then, a few messages no object)."""
import csv
import io
import json
import random
import sys

count, seed = int(sys.argv[1]), int(sys.argv[2])
as_json = len(sys.argv) > 3 and sys.argv[3] == "json"
rnd = random.Random(seed)

POOLS = {
    'a': ['1', '-5', '2147483647', ' 7 ', '2147483648', 'x', '1.5', ''],              # int NOT NULL
    'b': ['0', '-9223372036854775808', '9223372036854775808', '12abc', '42', ''],      # bigint
    'c': ['0', '3', '-1', '32768', 'zz', ''],                                          # smallint CHECK (c >= 0)
    'd': ['123.45', '123.456', '1e5', '1e10', 'abc', '-0.01', ''],                     # numeric(8,2)
    'e': ['plain', 'back\\slash', 'tab\there', '\\N', 'N', 'é', '"quo""ted"', ''],    # text
    'f': ['abc', 'abcde', 'abcdef', '"ab,c"', ''],                                     # varchar(5)
    'g': ['t', 'f', 'yes', 'off', 'maybe', ''],                                        # bool
    'h': ['2020-01-01 00:00:00+00', '2021-06-30T12:34:56.789+02', 'notadate', '2020-13-01', 'epoch', ''],  # timestamptz
    'i': ['2020-02-29', '2021-02-29', 'infinity', '20200101', ''],                     # date
    'j': ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'A0EEBC999C0B4EF8BB6D6BB9BD380A11', 'not-a-uuid', ''],  # uuid
    'k': ['"{""a"": 1}"', '"[1, 2"', '"""s"""', 'null', '"{""b"": [true, null]}"', ''],   # jsonb
    'l': ['1.5', 'NaN', '-inf', '1e999', '0x10', ''],                                  # float8
    'p': ['1', '5', '0', '-3', 'q', ''],                                               # domain dx_pos
    'n': ['x', 'y', ''],                                                               # domain dx_nn (NOT NULL)
}
COLS = list(POOLS) + ['u']


def good(col):
    return POOLS[col][0]


out = []
for _ in range(count):
    r = rnd.random()
    if r < 0.01:
        out.append(','.join(COLS))                       # a header
        continue
    if r < 0.02:
        out.append('1,2,3')                              # too few fields
        continue
    if r < 0.025:
        out.append('1,"unterminated')                   # malformed
        continue
    fields = []
    for col in COLS:
        if col == 'u':
            fields.append(str(rnd.randrange(count * 4)))   # unique: a few duplicates
        elif rnd.random() < 0.9:
            fields.append(good(col))
        else:
            fields.append(rnd.choice(POOLS[col]))
    out.append(','.join(fields))


def to_json(line):
    try:
        rows = list(csv.reader(io.StringIO(line), skipinitialspace=True, strict=True))
    except csv.Error:
        return '{"a": '
    if len(rows) != 1 or len(rows[0]) != len(COLS):
        return '[1, 2, 3]'
    obj = {}
    for col, v in zip(COLS, rows[0]):
        if rnd.random() < 0.03:
            continue                                      # absent: the column's default
        v = v.strip()
        if v == '':
            obj[col] = None
        elif rnd.random() < 0.5 and v.lstrip('-').isdigit():
            obj[col] = int(v)
        else:
            obj[col] = v
    return json.dumps(obj, ensure_ascii=False)


if as_json:
    out = [to_json(line) for line in out]
sys.stdout.write('\n'.join(out) + '\n')
