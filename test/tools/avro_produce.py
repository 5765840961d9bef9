#!/usr/bin/env python3
"""Produce Avro records in Confluent's wire format with confluent-kafka's own
AvroSerializer (and fastavro): the serializer real producers use.

    avro_produce.py BROKERS REGISTRY TOPIC NAME=SCHEMA_FILE... < records

Each line of stdin is a Python literal (a test tool: the names D = Decimal,
U = uuid.UUID, dt = datetime.datetime, date = datetime.date, tz = timezone
are available):
    {"schema": NAME, "value": {...}, "key": ..., "key_schema": NAME, "partition": N}
"value": None is a tombstone (with "encode_none": True, Avro null instead); "raw": b"..." (or "hex": "00ff...") sends those bytes as
the value, unserialized; "body": b"..." keeps the 5-byte header and replaces the rest, "cut": N drops the
serialized value's last N bytes, "append":
b"..." adds bytes after it; "guid": True frames the value with magic byte 1 and the schema's GUID;
"header_id": True (and "key_header_id": True for the key) has confluent-kafka's
header_schema_id_serializer put the GUID in the record header __value_schema_id (__key_schema_id)
and leave the value bare Avro; "headers": [(name, b"..."), ...] adds headers as they are.  --count N --template NAME: N records {"id": i, "name": "n<i>"}
(--start S: from i = S).  A schema FILE with a FILE.refs beside it (a JSON list of
{"name", "subject", "version"}) is registered with those schema references.  --dump: print each value as a {"hex": ...} line, produce nothing.
REGISTRY may carry user:password@ for basic authentication.
"""
import datetime
import json
import os
import sys
import uuid
from decimal import Decimal
from urllib.parse import urlsplit

from confluent_kafka import Producer
from confluent_kafka.schema_registry import (Schema, SchemaReference, SchemaRegistryClient,
                                             header_schema_id_serializer)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    brokers, registry, topic = sys.argv[1:4]
    schemas = {}
    count = None
    template = None
    start = 0
    dump = False
    args = sys.argv[4:]
    while args:
        a = args.pop(0)
        if a == "--count":
            count = int(args.pop(0))
        elif a == "--template":
            template = args.pop(0)
        elif a == "--start":
            start = int(args.pop(0))
        elif a == "--dump":
            dump = True
        else:
            name, path = a.split("=", 1)
            with open(path) as f:
                schemas[name] = f.read()
            if os.path.exists(path + ".refs"):
                # schema references: [{"name", "subject", "version"}, ...] in FILE.refs
                with open(path + ".refs") as f:
                    refs = [SchemaReference(r["name"], r["subject"], r["version"]) for r in json.load(f)]
                schemas[name] = Schema(schemas[name], "AVRO", refs)

    conf = {"url": registry}
    parts = urlsplit(registry)
    if parts.username:
        conf = {"url": parts._replace(netloc=parts.hostname + (":%d" % parts.port if parts.port else "")).geturl(),
                "basic.auth.user.info": "%s:%s" % (parts.username, parts.password)}
    client = SchemaRegistryClient(conf)
    serializers = {name: AvroSerializer(client, text, conf={"auto.register.schemas": True})
                   for name, text in schemas.items()}
    # magic byte 1 + the schema's 16-byte GUID in front (confluent-kafka's own SchemaId.guid_to_bytes)
    guid_serializers = {name: AvroSerializer(client, text, conf={
                            "auto.register.schemas": True,
                            "schema.id.serializer": lambda payload, ctx, sid: sid.guid_to_bytes() + payload})
                        for name, text in schemas.items()}
    # the schema's GUID in a record header, the value bare Avro (confluent-kafka's own serializer)
    header_serializers = {name: AvroSerializer(client, text, conf={
                              "auto.register.schemas": True,
                              "schema.id.serializer": header_schema_id_serializer})
                          for name, text in schemas.items()}
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 20})
    env = {"D": Decimal, "U": uuid.UUID, "dt": datetime.datetime, "date": datetime.date,
           "tz": datetime.timezone, "td": datetime.timedelta, "float": float, "bytes": bytes,
           "__builtins__": {}}

    def records():
        if count is not None:
            for i in range(start, start + count):
                yield {"schema": template, "value": {"id": i, "name": "n%d" % i}}
            return
        for line in sys.stdin:
            line = line.strip()
            if line and not line.startswith("#"):
                yield eval(line, env)

    n = 0
    for r in records():
        kwargs = {}
        headers = list(r.get("headers", []))
        if "partition" in r:
            kwargs["partition"] = r["partition"]
        if "raw" in r:
            value = r["raw"]
        elif "hex" in r:
            value = bytes.fromhex(r["hex"])
        elif r.get("value") is None and not r.get("encode_none"):
            value = None
        else:
            chosen = header_serializers if r.get("header_id") else guid_serializers if r.get("guid") else serializers
            value = chosen[r["schema"]](r["value"], SerializationContext(topic, MessageField.VALUE, headers))
            if "body" in r:
                value = value[:5] + r["body"]
            if r.get("cut"):
                value = value[:-r["cut"]]
            value += r.get("append", b"")
        if dump:
            print('{"hex": "%s"}' % value.hex())
            continue
        key = r.get("key")
        if key is not None and "key_schema" in r:
            chosen = header_serializers if r.get("key_header_id") else serializers
            key = chosen[r["key_schema"]](key, SerializationContext(topic, MessageField.KEY, headers))
        elif isinstance(key, str):
            key = key.encode()
        if headers:
            kwargs["headers"] = headers
        producer.produce(topic, value=value, key=key, **kwargs)
        n += 1
        if n % 10000 == 0:
            producer.flush()
    if dump:
        return
    left = producer.flush(30)
    if left:
        sys.exit("avro_produce: %d records not delivered" % left)
    print(n)


if __name__ == "__main__":
    main()
