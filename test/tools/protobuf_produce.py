#!/usr/bin/env python3
"""Produce Protobuf records in Confluent's wire format with confluent-kafka's own
ProtobufSerializer, and write the rows the target table should then hold.

    protobuf_produce.py BROKERS REGISTRY TOPIC VERSION FIRST_ID COUNT EXPECT_FILE [--key] [--proto2] [--header-id]

COUNT records, ids FIRST_ID.., of message evo.Order in VERSION (1..3, ORDERS below) of
evo/order.proto, registered under TOPIC-value (version 3 imports evo/common.proto, which
the serializer registers as a reference under the subject "evo/common.proto").  The
values vary with the id only, so a rerun produces the same rows.  evo.OrderKey comes
first in the file, so Order's message index is not [0].  With --proto2, the records are
legacy.Legacy of the proto2 file legacy/legacy.proto instead (VERSION is ignored).
With --key the key is an evo.OrderKey {id} serialized for TOPIC-key, else the id as
decimal text.  With --header-id the value's schema id goes in the record header
__value_schema_id (confluent-kafka's header_schema_id_serializer: the GUID and the
message-index path), the value bare Protobuf.  REGISTRY may carry user:password@.

One JSON object a record is appended to EXPECT_FILE: the row, by column (the message's
field names), as jsonb_populate_record(NULL::target, line::jsonb) reads it:
implicit-presence proto3 scalars always (their default when unset); an unset field with
presence null (in proto2, its declared default if it has one); enums by name; Timestamp
as RFC 3339 UTC text; wrappers as their value; bytes as \\x hex; repeated fields as
arrays, maps as objects; messages as objects of all their fields but the unset ones
with presence.  The message classes are made from descriptors built here (no protoc).
"""
import json
import re
import sys
from datetime import datetime, timezone
from urllib.parse import urlsplit

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import timestamp_pb2, wrappers_pb2  # noqa: F401  (in the default pool)

F = descriptor_pb2.FieldDescriptorProto
ENUMS = {".evo.Status"}
DECL = re.compile(r"(?:(optional|required|repeated|oneof \w+) )?(map<\w+, [\w.]+>|[\w.]+) (\w+) = (\d+)"
                  r"(?: \[(\w+) = (.+)\])?$")


def set_type(f, t):
    if t.startswith("."):
        f.type, f.type_name = (F.TYPE_ENUM if t in ENUMS else F.TYPE_MESSAGE), t
    else:
        f.type = F.Type.Value("TYPE_" + t.upper())


def message(full_name, decls, proto3=True, nested=()):
    """A DescriptorProto from .proto-like field declarations separated by ";", e.g.
    "repeated string tags = 6", "oneof contact string email = 8", "map<string, int32> counts = 11",
    "optional string name = 2 [default = "anon"]"; type names fully qualified."""
    m = descriptor_pb2.DescriptorProto(name=full_name.rsplit(".", 1)[1], nested_type=nested)
    optional = []
    for decl in filter(None, (d.strip() for d in decls.split(";"))):
        label, t, name, number, opt, val = DECL.match(decl).groups()
        f = m.field.add(name=name, number=int(number), label=F.LABEL_OPTIONAL)
        if t.startswith("map<"):  # a nested entry message, as protoc makes it
            entry = m.nested_type.add(name="".join(p.capitalize() for p in name.split("_")) + "Entry")
            entry.options.map_entry = True
            for n, (field_name, ft) in enumerate(zip(("key", "value"), t[4:-1].split(", ")), 1):
                set_type(entry.field.add(name=field_name, number=n, label=F.LABEL_OPTIONAL), ft)
            f.label, f.type, f.type_name = F.LABEL_REPEATED, F.TYPE_MESSAGE, ".%s.%s" % (full_name, entry.name)
        else:
            set_type(f, t)
        if label in ("repeated", "required"):
            f.label = F.Label.Value("LABEL_" + label.upper())
        elif label == "optional" and proto3:
            f.proto3_optional = True
            optional.append(f)
        elif label and label.startswith("oneof "):
            names = [o.name for o in m.oneof_decl]
            if label[6:] not in names:
                m.oneof_decl.add(name=label[6:])
                names.append(label[6:])
            f.oneof_index = names.index(label[6:])
        if opt == "default":
            f.default_value = val.strip('"')
        elif opt:
            setattr(f.options, opt, val == "true")
    for f in optional:  # a synthetic oneof each, after the real ones
        f.oneof_index = len(m.oneof_decl)
        m.oneof_decl.add(name="_" + f.name)
    return m


def proto_file(name, package, messages, deps=(), enums=(), syntax="proto3"):
    fd = descriptor_pb2.FileDescriptorProto(name=name, package=package, dependency=deps,
                                            message_type=messages, enum_type=enums)
    if syntax != "proto2":  # unset for proto2, as protoc leaves it
        fd.syntax = syntax
    return fd


COMMON = proto_file("evo/common.proto", "evo", [message("evo.Money", "string currency = 1; int64 units = 2")], enums=[
    descriptor_pb2.EnumDescriptorProto(name="Status", value=[
        descriptor_pb2.EnumValueDescriptorProto(name=n, number=i)
        for i, n in enumerate(("STATUS_UNKNOWN", "STATUS_NEW", "STATUS_PAID"))])])

# Order's fields in each version of evo/order.proto (each adds to the one before)
ORDERS = ["int64 id = 1; string customer = 2; double amount = 3",
          "bool paid = 4; .google.protobuf.Timestamp created = 5; repeated string tags = 6",
          ".evo.Money total = 7; oneof contact string email = 8; oneof contact int64 phone = 9;"
          ".evo.Status status = 10; map<string, int32> counts = 11; .google.protobuf.Int32Value score = 12;"
          "optional string note = 13; repeated .evo.Order.Line lines = 14"]
DEPS = [[], ["google/protobuf/timestamp.proto"],
        ["evo/common.proto", "google/protobuf/timestamp.proto", "google/protobuf/wrappers.proto"]]

LEGACY = proto_file("legacy/legacy.proto", "legacy", [message(
    "legacy.Legacy", 'required int64 id = 1; optional string name = 2 [default = "anon"]; optional int32 level = 3;'
    "repeated int32 nums = 4 [packed = true]; optional bool flag = 5 [default = true]", proto3=False)],
    syntax="proto2")


def order_file(version):
    """evo/order.proto in VERSION (1..3)."""
    messages = [message("evo.OrderKey", "int64 id = 1")]
    if version >= 3:
        messages.append(message("evo.Header", "string source = 1"))
    nested = [message("evo.Order.Line", "string sku = 1; int32 qty = 2")] if version >= 3 else []
    messages.append(message("evo.Order", ";".join(ORDERS[:version]), nested=nested))
    return proto_file("evo/order.proto", "evo", messages, DEPS[version - 1])


def files(version):
    """The files of VERSION (0: legacy/legacy.proto), the imported ones first."""
    return [LEGACY] if version == 0 else [COMMON, order_file(version)] if version >= 3 else [order_file(version)]


def order(cls, version, i):
    """The evo.Order of id I in VERSION: unset or default fields every few ids."""
    m = cls(id=i, customer="" if i % 3 == 0 else "Zoë ☃ %d" % i if i % 2 else "customer-%d" % i,
            amount=0 if i % 3 == 0 else i * 0.25 if i % 2 else -i * 1.25)
    if version >= 2:
        m.paid = i % 3 == 1
        if i % 4:
            m.created.seconds, m.created.nanos = 1796637600 + i * 3661, i * 123457 % 1000000 * 1000
        m.tags.extend([] if i % 3 == 0 else ["t%d" % i, "ünï"][:1 + i % 2])
    if version >= 3:
        if i % 5:
            m.total.currency, m.total.units = "EUR" if i % 2 else "", (2 ** 53 + i) * (-1) ** i
        if i % 3 == 1:
            m.email = "user%d@example.com" % i
        elif i % 3 == 2:
            m.phone = -(2 ** 62 + i) if i % 2 else 2 ** 62 + i
        m.status = i % 3
        if i % 3:
            m.counts.update({"a": i, "ü b": -i})
        if i % 2:
            m.score.value = 0 if i % 4 == 1 else -7 * i
        if i % 2:
            m.note = "" if i % 4 == 1 else "note ☃ %d" % i
        if i % 3:
            m.lines.add(sku="sku-%d" % i, qty=i)
            m.lines.add()
    return m


def legacy(cls, i):
    m = cls(id=i)
    if i % 2:
        m.name = "" if i % 4 == 1 else "Zoë ☃ %d" % i
    if i % 3:
        m.level = 0 if i % 3 == 1 else -3 * i
        m.flag = i % 3 == 2
        m.nums.extend([i, -i, 2 ** 31 - 1])
    return m


def expect(m, top=True):
    """The row (TOP) or the JSON object a message stands for."""
    out = {}
    for f in m.DESCRIPTOR.fields:
        if f.is_repeated:
            v = getattr(m, f.name)
            if f.message_type and f.message_type.GetOptions().map_entry:
                vf = f.message_type.fields_by_name["value"]
                out[f.name] = {k: scalar(vf, x) for k, x in v.items()}
            else:
                out[f.name] = [scalar(f, x) for x in v]
        elif f.has_presence and not m.HasField(f.name):
            if f.has_default_value:  # a proto2 default declared
                out[f.name] = scalar(f, getattr(m, f.name))
            elif top:
                out[f.name] = None
        else:
            out[f.name] = scalar(f, getattr(m, f.name))
    return out


def scalar(f, v):
    if f.enum_type:
        return f.enum_type.values_by_number[v].name
    if f.message_type:
        name = f.message_type.full_name
        if name == "google.protobuf.Timestamp":
            t = datetime.fromtimestamp(v.seconds, timezone.utc).replace(microsecond=v.nanos // 1000)
            return t.isoformat(timespec="microseconds")
        if name.startswith("google.protobuf.") and name.endswith("Value"):
            return scalar(f.message_type.fields_by_name["value"], v.value)
        return expect(v, top=False)
    if f.type == f.TYPE_BYTES:
        return "\\x" + v.hex()
    return v


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    brokers, registry, topic, version, first, count, expect_file = args
    version = 0 if "--proto2" in sys.argv else int(version)
    first, count = int(first), int(count)

    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient, header_schema_id_serializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    pool = descriptor_pool.Default()
    for fd in files(version) + ([order_file(1)] if version == 0 and "--key" in sys.argv else []):
        pool.Add(fd)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("legacy.Legacy" if version == 0 else "evo.Order"))

    parts = urlsplit(registry)
    conf = {"url": registry}
    if parts.username:
        conf = {"url": parts._replace(netloc=parts.hostname + (":%d" % parts.port if parts.port else "")).geturl(),
                "basic.auth.user.info": "%s:%s" % (parts.username, parts.password)}
    client = SchemaRegistryClient(conf)
    conf = {"auto.register.schemas": True}
    if "--header-id" in sys.argv:
        conf["schema.id.serializer"] = header_schema_id_serializer
    serializer = ProtobufSerializer(cls, client, conf)
    key_serializer = None
    if "--key" in sys.argv:
        key_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("evo.OrderKey"))
        key_serializer = ProtobufSerializer(key_cls, client, {"auto.register.schemas": True})

    errors = []
    producer = Producer({"bootstrap.servers": brokers, "linger.ms": 20})
    with open(expect_file, "a", encoding="utf-8") as out:
        for i in range(first, first + count):
            m = legacy(cls, i) if version == 0 else order(cls, version, i)
            headers = []
            value = serializer(m, SerializationContext(topic, MessageField.VALUE, headers))
            key = (key_serializer(key_cls(id=i), SerializationContext(topic, MessageField.KEY))
                   if key_serializer else str(i).encode())
            producer.produce(topic, value=value, key=key, headers=headers or None,
                             on_delivery=lambda err, _: err and errors.append(err))
            producer.poll(0)
            out.write(json.dumps(expect(m), ensure_ascii=False) + "\n")
    if producer.flush(30) or errors:
        sys.exit("protobuf_produce: records not delivered: %s" % (errors[:3] or "flush timed out"))
    print(count)


if __name__ == "__main__":
    main()
