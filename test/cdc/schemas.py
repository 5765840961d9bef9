#!/usr/bin/env python3
"""Writes test/cdc/schemas.events (key<TAB>value lines) for sql/cdcschemas.sql.

Change events in Kafka Connect's schema wrapper whose schemas change from one
event to the next, in one batch: cdc.c parses each distinct schema once per
batch and keeps the codecs it computed from it, so an event must never be
decoded with the codecs of another event's schema.  Run it again after a
change here: python3 test/cdc/schemas.py > test/cdc/schemas.events
"""
import base64
import json


def decimal_b64(unscaled):
    n = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(n, "big", signed=True)).decode()


def after_fields(scale, with_dt=True, with_price=True, doc=None):
    fields = [{"type": "int32", "optional": False, "field": "id"}]
    if with_price:
        price = {"type": "bytes", "optional": True, "field": "price",
                 "name": "org.apache.kafka.connect.data.Decimal",
                 "parameters": {"scale": str(scale), "connect.decimal.precision": "12"}}
        if doc is not None:
            price["doc"] = doc
        fields.append(price)
    if with_dt:
        fields.append({"type": "int32", "optional": True, "field": "dt", "name": "io.debezium.time.Date"})
    fields.append({"type": "string", "optional": True, "field": "note"})
    return fields


def value_schema(fields):
    image = {"type": "struct", "fields": fields, "optional": True, "name": "src.public.s.Value"}
    return {"type": "struct", "name": "src.public.s.Envelope", "optional": False,
            "fields": [dict(image, field="before"), dict(image, field="after"),
                       {"type": "string", "optional": False, "field": "op"}]}


KEY_SCHEMA = {"type": "struct", "name": "src.public.s.Key", "optional": False,
              "fields": [{"type": "int32", "optional": False, "field": "id"}]}


def key(i):
    return json.dumps({"schema": KEY_SCHEMA, "payload": {"id": i}}, separators=(",", ":"))


def event(schema, op, after, before=None):
    payload = {"before": before, "after": after, "op": op}
    return json.dumps({"schema": schema, "payload": payload}, separators=(",", ":"))


lines = []
s2 = value_schema(after_fields(2))
s3 = value_schema(after_fields(3))
# 1-3: two schemas that differ only in the decimal's scale, alternating
lines.append((key(1), event(s2, "c", {"id": 1, "price": decimal_b64(12345), "dt": 19000, "note": "scale 2"})))
lines.append((key(2), event(s3, "c", {"id": 2, "price": decimal_b64(12345), "dt": 19001, "note": "scale 3"})))
lines.append((key(3), event(s2, "c", {"id": 3, "price": decimal_b64(-12345), "dt": 19002, "note": "scale 2 again"})))
# 4-5: a schema without a field for dt: its codec comes from the column and the value
sn = value_schema(after_fields(1, with_dt=False))
lines.append((key(4), event(sn, "c", {"id": 4, "price": decimal_b64(5), "dt": 19003, "note": "dt as days"})))
lines.append((key(5), event(sn, "c", {"id": 5, "price": decimal_b64(5), "dt": "2024-02-29", "note": "dt as text"})))
# 6-25: twenty distinct schemas in one batch, more than the cache holds
for i in range(20):
    scale = i % 5
    si = value_schema(after_fields(scale, doc="schema %d" % i))
    lines.append((key(100 + i), event(si, "c", {"id": 100 + i, "price": decimal_b64(1000 + i), "dt": 19000 + i,
                                               "note": "schema %d scale %d" % (i, scale)})))
# 26: the payload twice: the last one counts, as in jsonb
dup = '{"schema":%s,"payload":%s,"payload":%s}' % (
    json.dumps(s3, separators=(",", ":")),
    json.dumps({"before": None, "after": {"id": 30, "price": decimal_b64(1), "dt": 1, "note": "first"}, "op": "c"},
               separators=(",", ":")),
    json.dumps({"before": None, "after": {"id": 31, "price": decimal_b64(1), "dt": 1, "note": "second"}, "op": "c"},
               separators=(",", ":")))
lines.append((key(31), dup))
# 27: a null schema: the encodings are assumed from the target's types (numeric(12,4): scale 4)
lines.append((key(40), json.dumps({"schema": None, "payload": {"before": None, "after": {
    "id": 40, "price": decimal_b64(15), "dt": 19004, "note": "no schema"}, "op": "c"}}, separators=(",", ":"))))
# 28: an escaped member name is the same name
esc = event(s3, "c", {"id": 41, "price": decimal_b64(12345), "dt": 19005, "note": "escaped"})
lines.append((key(41), esc.replace('"schema":', '"sche\\u006da":', 1)))
# 29: a third member: no wrapper, so a bare event without op (a dead letter)
extra = event(s2, "c", {"id": 42, "price": decimal_b64(1), "dt": 1, "note": "extra"})
lines.append((key(42), extra[:-1] + ',"extra":1}'))
# 30: cut short (a dead letter, jsonb_in's error)
lines.append((key(43), event(s2, "c", {"id": 43, "price": decimal_b64(1), "dt": 1, "note": "cut"})[:-20]))
# 31: a null payload in the wrapper: a tombstone
lines.append((key(3), '{"schema":null,"payload":null}'))
# 32: an update that moves 3 to 50: no before image, the old key from the message key's wrapper
lines.append((key(3), event(s3, "u", {"id": 50, "price": decimal_b64(7), "dt": 19006, "note": "moved from 3"})))
# 33: a delete by the message key, schema s2
lines.append((key(2), event(s2, "d", None, before=None)))
# 34: the payload is not an object: the same error as without the scan
lines.append((key(44), '{"schema":%s,"payload":"c"}' % json.dumps(s2, separators=(",", ":"))))

# 35: white space around the payload of a known schema
spaced = event(s2, "c", {"id": 60, "price": decimal_b64(6), "dt": 19007, "note": "spaced"})
spaced = spaced.replace(',"payload":', ',"payload":   ', 1)[:-1] + '  }  '
lines.append((key(60), spaced))
# 36: op as a number (a dead letter: unknown op)
lines.append((key(45), event(s2, 1, {"id": 45, "price": decimal_b64(1), "dt": 1, "note": "op 1"})))
# 37: a before image that is a string (a dead letter)
lines.append((key(46), event(s2, "d", None, before="id 46")))
# 38: op twice: the last one counts
twice = event(s2, "d", {"id": 61, "price": decimal_b64(61), "dt": 19008, "note": "op twice"})
lines.append((key(61), twice.replace(',"op":"d"}', ',"op":"d","op":"c"}', 1)))
# 39: the wrapper of a known schema around a broken payload that still ends in }}
broken = event(s2, "c", {"id": 62, "price": decimal_b64(1), "dt": 1, "note": "broken"})
lines.append((key(62), broken.replace('"id":62,', '"id":62,,', 1)))
# 40: a bare event with a source block
lines.append(('{"id":63}', json.dumps({"before": None, "after": {"id": 63, "price": "0.63", "dt": 19009, "note": "bare"},
                                      "source": {"connector": "postgresql", "db": "src", "schema": "public", "table": "s"},
                                      "op": "c", "ts_ms": 1700000000000}, separators=(",", ":"))))
# 41: a bare event cut short
lines.append(('{"id":64}', '{"before":null,"after":{"id":64},"op":"c"'))
# 42-45: after images of a known schema whose codecs are kept, but whose keys
# or values need the checks: a field that is no column, a key twice (the
# last counts), and Debezium's placeholder in an update (the row keeps its
# value), plain and escaped
lines.append((key(65), event(s2, "c", {"id": 65, "price": decimal_b64(1), "dt": 1, "note": "x", "colour": "red"})))
twice = event(s2, "c", {"id": 66, "price": decimal_b64(1), "dt": 1, "note": "first"})
lines.append((key(66), twice.replace('"note":"first"', '"note":"first","note":"last"', 1)))
lines.append((key(1), event(s2, "u", {"id": 1, "price": decimal_b64(1), "dt": 1, "note": "__debezium_unavailable_value"})))
esc = event(s2, "u", {"id": 1, "price": decimal_b64(1), "dt": 1, "note": "__debezium_unavailable_value"})
lines.append((key(1), esc.replace('"__debezium', '"\\u005f_debezium', 1)))

for k, v in lines:
    print("%s\t%s" % (k, v))
