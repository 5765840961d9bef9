#!/usr/bin/env python3
"""Messages in Kafka Connect's JsonConverter wrapper (schemas.enable=true),
for sql/connectjson.sql: wrapped.messages (values) and wrapped-keyed.messages
(key<TAB>value, both wrapped).  Run it to write them again."""
import base64
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def field(name_, type_, optional=True, **more):
    return dict(type=type_, optional=optional, field=name_, **more)


def logical(name, type_, logical_name, **more):
    return field(name, type_, name=logical_name, version=1, **more)


ORDER = {"type": "struct", "optional": False, "name": "shop.Order", "fields": [
    field("id", "int32", optional=False),
    field("name", "string"),
    logical("price", "bytes", "org.apache.kafka.connect.data.Decimal", parameters={"scale": "2"}),
    logical("born", "int32", "org.apache.kafka.connect.data.Date"),
    logical("seen", "int64", "org.apache.kafka.connect.data.Timestamp"),
    logical("at_time", "int32", "org.apache.kafka.connect.data.Time"),
    field("raw", "bytes"),
    field("tags", "array", items={"type": "string", "optional": True}),
    field("doc", "struct", fields=[field("a", "int32")]),
]}
KEY = {"type": "struct", "optional": False, "name": "shop.OrderKey",
       "fields": [field("id", "int32", optional=False)]}


def dumps(value):
    return json.dumps(value, separators=(",", ":"))


def wrap(payload, schema=ORDER):
    return dumps({"schema": schema, "payload": payload})


def decimal(unscaled):
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def deep(n):
    return "[" * n + "1" + "]" * n


values = [
    # 0, 1: every Connect type the wrapper's schema names
    wrap({"id": 1, "name": "a", "price": decimal(12345), "born": 19723, "seen": 1547718199123,
          "at_time": 3600000, "raw": "aGVsbG8=", "tags": ["x", "y"], "doc": {"a": 1}}),
    wrap({"id": 2, "name": "b", "price": decimal(-1), "born": -1, "seen": 0, "at_time": 0,
          "raw": "", "tags": [], "doc": None}),
    # 2: a wrapper without schema (schemaless data): its payload's fields
    dumps({"schema": None, "payload": {"id": 3, "name": "c"}}),
    # 3: a null payload: an error
    wrap(None),
    # 4, 5: objects none of whose keys is a column: errors, not rows of NULLs
    dumps({"ident": 5, "nom": "e"}),
    "{}",
    # 6: a plain object
    dumps({"id": 7, "name": "g"}),
    # 7: a payload field the table lacks is ignored
    wrap({"id": 8, "name": "h", "extra": 1}),
    # 8: a payload that is no struct: an error
    dumps({"schema": {"type": "string", "optional": False}, "payload": "i"}),
    # 9: the payload first, with white space
    json.dumps({"payload": {"id": 10, "name": "j", "price": decimal(200)}, "schema": ORDER}),
    # 10: nesting deeper than the scan reads: jsonb's way, the same codecs
    '{"schema":%s,"payload":{"id":11,"name":"k","price":"%s","doc":{"a":%s}}}'
    % (dumps(ORDER), decimal(1234), deep(70)),
    # 11: a Decimal that is not base64: an error
    wrap({"id": 12, "name": "l", "price": "not base64!"}),
]

keyed = [
    (dumps({"schema": KEY, "payload": {"id": 1}}), wrap({"id": 1, "name": "a1", "price": decimal(100)})),
    (dumps({"schema": KEY, "payload": {"id": 2}}), wrap({"id": 2, "name": "b1"})),
    (dumps({"schema": KEY, "payload": {"id": 1}}), wrap({"id": 1, "name": "a2", "price": decimal(250)})),
]

with open(os.path.join(HERE, "wrapped.messages"), "w") as out:
    out.write("".join(v + "\n" for v in values))
with open(os.path.join(HERE, "wrapped-keyed.messages"), "w") as out:
    out.write("".join(k + "\t" + v + "\n" for k, v in keyed))
