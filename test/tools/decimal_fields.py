#!/usr/bin/env python3
"""Decimals as a double precision column reads them, for sql/floatfields.sql.

    python3 decimal_fields.py csv|json

Prints one message a line: csv "text,text" (the same decimal twice: a text column
keeps what the float column was read from), json {"t": "text", "f": number}.
First the cases at the edges of the fast path in src/format/decfloat.c (2^53, 10^22,
zeros, signs, points at either end), then 20,000 random decimals of 1 to 18
digits with and without a point and an exponent (a fixed seed: the same each
run).  The json form takes only what JSON allows as a number.
"""
import re
import random
import sys

EDGES = [
    "0", "-0", "0.0", "-0.0", "0e0", "0e9999", "-0e-9999", "1", "-1", "0.5", "-12.75",
    "3e-4", "3E+4", "1.", "-.5", ".5", "1e22", "1e23", "1e-22", "1e-23", "9e22", "9e-23",
    "9007199254740991", "9007199254740992", "9007199254740993", "-9007199254740991",
    "900719925474099.1", "9007199254740991e22", "9007199254740991e-22", "123456789012345e-22",
    "0.1", "0.2", "0.3", "1.7976931348623157e308", "2.2250738585072014e-308", "4.9e-324",
    "0" * 80 + "1.5", "1." + "0" * 80, "0." + "0" * 21 + "1", "0." + "0" * 22 + "1",
    "1e0001", "1e00001", "17976931348623157", "8.98846567431158e307", "5e-324",
]


def random_decimal(r):
    digits = "".join(r.choice("0123456789") for _ in range(r.randint(1, 18)))
    if r.random() < 0.7:
        at = r.randint(0, len(digits))
        digits = digits[:at] + "." + digits[at:]
    if r.random() < 0.4:
        digits += r.choice("eE") + r.choice(["", "+", "-"]) + str(r.randint(0, 40))
    return ("-" if r.random() < 0.5 else "") + digits


JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def main():
    form = sys.argv[1]
    r = random.Random(20261207)
    values = EDGES + [random_decimal(r) for _ in range(20000)]
    for text in values:
        if form == "csv":
            print(f"{text},{text}")
        elif JSON_NUMBER.fullmatch(text):
            print(f'{{"t": "{text}", "f": {text}}}')


if __name__ == "__main__":
    main()
