#!/usr/bin/env python3
"""Produce JSON Schema records in Confluent's wire format (magic byte 0, the
schema id, the JSON text) with confluent-kafka's own JSONSerializer.

    json_schema_produce.py BROKERS REGISTRY TOPIC SCHEMA_FILE [KEY_SCHEMA_FILE] < records

Each line of stdin is {"value": ..., "key": ...} (key optional, serialized with
KEY_SCHEMA_FILE's schema); {"raw_hex": "..."} sends those bytes as the value,
as they are.  REGISTRY may carry user:password@.
"""
import json
import sys
from urllib.parse import urlsplit

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    brokers, registry, topic, schema_file = sys.argv[1:5]
    key_file = sys.argv[5] if len(sys.argv) > 5 else None
    parts = urlsplit(registry)
    conf = {"url": registry}
    if parts.username:
        conf = {"url": parts._replace(netloc=parts.hostname + (":%d" % parts.port if parts.port else "")).geturl(),
                "basic.auth.user.info": "%s:%s" % (parts.username, parts.password)}
    client = SchemaRegistryClient(conf)
    with open(schema_file) as f:
        serializer = JSONSerializer(f.read(), client, conf={"auto.register.schemas": True})
    key_serializer = None
    if key_file:
        with open(key_file) as f:
            key_serializer = JSONSerializer(f.read(), client, conf={"auto.register.schemas": True})
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 20})
    n = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        key = None
        if "raw_hex" in r:
            value = bytes.fromhex(r["raw_hex"])
        else:
            value = serializer(r["value"], SerializationContext(topic, MessageField.VALUE))
        if r.get("key") is not None:
            key = key_serializer(r["key"], SerializationContext(topic, MessageField.KEY))
        producer.produce(topic, value=value, key=key)
        n += 1
    if producer.flush(30):
        sys.exit("json_schema_produce: records not delivered")
    print(n)


if __name__ == "__main__":
    main()
