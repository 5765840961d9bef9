#!/usr/bin/env python3
"""A small Schema Registry for the tests: the part of Confluent's REST API
that confluent-kafka's Avro, JSON Schema and Protobuf serializers and eoingest use.

    schema_registry.py PORT [--user USER:PASSWORD] [--pidfile FILE] [--state FILE]

  POST /subjects/{subject}/versions    register (or find) a schema: {"id", "guid", ...}
  GET  /schemas/ids/{id}               {"schema": ...}   (404 + error_code 40403 if unknown)
  GET  /schemas/guids/{guid}           the same, by GUID
  GET  /subjects, /subjects/{s}/versions, /subjects/{s}/versions/{n|latest}
A schema may have "references" ([{"name", "subject", "version"}]): kept, and given back
with it.
  POST /test/raw                       (tests) register a schema text as is, even an invalid one

PROTOBUF schemas: a schema string that is the base64 of a FileDescriptorProto (what
ProtobufSerializer registers) is stored, compared and served as .proto text, rendered
like Confluent's registry does (render_proto); .proto text is stored as is.  The
descriptor is kept too, and ?format=serialized answers it (the text for a schema
registered as text).  Decoding a descriptor needs the protobuf package: run the
registry with avro_python's interpreter (test/lib/avro.sh) when Protobuf is used.

With --user, every request needs HTTP basic authentication with those credentials
(401 otherwise).  Schemas live in memory, and in --state FILE if given (so that a
registry stopped and started again knows them); ids count from 1 in registration order.
Apicurio Registry 3.x (the registry the issue suggests) cannot be assembled from Maven Central
here (most of its own modules are not served: see README.md); 2.4.2.Final runs in long mode
(test/apicurio.sh, t/43-apicurio.t), and the default suite uses this.
"""
import base64
import binascii
import json
import sys
import threading
import uuid
from urllib.parse import parse_qs, unquote
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
by_id = {}        # id -> {"schema", "schemaType", "guid", "subject", "version"}
by_text = {}      # (subject, schema text) -> id
subjects = {}     # subject -> [ids]
auth = None
state_file = None


def save():
    if state_file:
        with open(state_file + ".tmp", "w") as f:
            json.dump({str(k): v for k, v in by_id.items()}, f)
        import os
        os.replace(state_file + ".tmp", state_file)


def load():
    import os
    if not state_file or not os.path.exists(state_file):
        return
    with open(state_file) as f:
        for k, e in json.load(f).items():
            sid = int(k)
            by_id[sid] = e
            by_text[(e["subject"], e["schema"])] = sid
            subjects.setdefault(e["subject"], []).append(sid)


# FieldDescriptorProto.Type -> .proto name (11 message, 14 enum and 10 group use type_name)
SCALARS = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32",
           8: "bool", 9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32", 16: "sfixed64",
           17: "sint32", 18: "sint64"}


def proto_descriptor(schema):
    """The FileDescriptorProto whose base64 SCHEMA is, or None (then it is .proto text)."""
    try:
        raw = base64.b64decode(schema, validate=True)
    except (binascii.Error, ValueError):
        return None
    from google.protobuf import descriptor_pb2, message
    fd = descriptor_pb2.FileDescriptorProto()
    try:
        fd.ParseFromString(raw)
    except message.DecodeError:
        return None
    return fd if fd.name or fd.message_type else None


def quote(s):
    """A .proto string literal holding S."""
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif c in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[c])
        elif ord(c) < 0x20 or ord(c) == 0x7f:
            out.append("\\%03o" % ord(c))
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def render_proto(fd):
    """.proto text of a FileDescriptorProto, as Confluent's registry renders one: messages
    (nested enums, nested messages, then fields, each in their order; a oneof where its first
    member is; a map's entry message written out with option map_entry = true), then enums;
    type names fully qualified.  Compiled
    again, it gives the same descriptor, but for what is left out: file options, reserved
    ranges, extensions, services and json_name."""
    proto3 = fd.syntax == "proto3"
    out = ['syntax = "%s";' % (fd.syntax or "proto2")]
    if fd.package:
        out.append("package %s;" % fd.package)
    if fd.dependency:
        out.append("")
        for i, dep in enumerate(fd.dependency):
            kind = "public " if i in fd.public_dependency else "weak " if i in fd.weak_dependency else ""
            out.append('import %s"%s";' % (kind, dep))
    out.append("")
    scope = "." + fd.package if fd.package else ""
    for m in fd.message_type:
        render_message(m, scope, proto3, "", out)
    for e in fd.enum_type:
        render_enum(e, "", out)
    return "\n".join(out) + "\n"


def render_message(m, scope, proto3, indent, out):
    name = scope + "." + m.name
    # a map's entry message is written out, with option map_entry, and its field as a
    # repeated field of it, as Confluent's registry renders a descriptor's maps
    entries = {}
    out.append("%smessage %s {" % (indent, m.name))
    inner = indent + "  "
    if m.options.map_entry:
        out.append(inner + "option map_entry = true;")
    for e in m.enum_type:
        render_enum(e, inner, out)

    def oneof(f):  # the index of F's real (not proto3 optional's synthetic) oneof
        return f.oneof_index if f.HasField("oneof_index") and not f.proto3_optional else None

    chunks, done = [], set()  # (type names of the fields, lines): a field, or a oneof of them
    for f in m.field:
        o = oneof(f)
        if o is None:
            chunks.append(({f.type_name}, [inner + render_field(f, proto3, entries, False)]))
        elif o not in done:
            done.add(o)
            group = [g for g in m.field if oneof(g) == o]
            chunks.append(({g.type_name for g in group}, ["%soneof %s {" % (inner, m.oneof_decl[o].name)]
                           + [inner + "  " + render_field(g, proto3, entries, True) for g in group]
                           + [inner + "}"]))
    # nested messages (map entries too) in their order, then the fields in theirs
    for n in m.nested_type:
        render_message(n, name, proto3, inner, out)
    for _, lines in chunks:
        out.extend(lines)
    out.append(indent + "}")


def render_field(f, proto3, entries, in_oneof):
    def type_of(f):
        return SCALARS.get(f.type) or f.type_name

    entry = entries.get(f.type_name) if f.type == 11 else None
    if entry is not None:
        key, value = sorted(entry.field, key=lambda g: g.number)
        label, decl = "", "map<%s, %s>" % (type_of(key), type_of(value))
    else:
        decl = type_of(f)
        if f.label == 3:
            label = "repeated "
        elif in_oneof or (proto3 and not f.proto3_optional):
            label = ""
        else:
            label = "required " if f.label == 2 else "optional "
    opts = []
    if f.HasField("default_value"):
        # strings are kept raw, bytes C-escaped already; enums by name, numbers and bools as is
        d = f.default_value
        opts.append("default = " + (quote(d) if f.type == 9 else '"%s"' % d if f.type == 12 else d))
    for opt in ("packed", "deprecated", "lazy"):
        if f.options.HasField(opt):
            opts.append("%s = %s" % (opt, str(getattr(f.options, opt)).lower()))
    return "%s%s %s = %d%s;" % (label, decl, f.name, f.number, " [%s]" % ", ".join(opts) if opts else "")


def render_enum(e, indent, out):
    out.append("%senum %s {" % (indent, e.name))
    if e.options.HasField("allow_alias"):
        out.append("%s  option allow_alias = %s;" % (indent, str(e.options.allow_alias).lower()))
    for v in e.value:
        dep = " [deprecated = %s]" % str(v.options.deprecated).lower() if v.options.HasField("deprecated") else ""
        out.append("%s  %s = %d%s;" % (indent, v.name, v.number, dep))
    out.append(indent + "}")


def stored_form(schema, schema_type):
    """(the text to store and compare, the base64 descriptor or None) of a schema string."""
    if schema_type == "PROTOBUF":
        fd = proto_descriptor(schema)
        if fd is not None:
            return render_proto(fd), schema
    return schema, None


def not_found(code=40403, message="Schema not found"):
    return 404, {"error_code": code, "message": message}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def authorized(self):
        if auth is None:
            return True
        want = "Basic " + base64.b64encode(auth.encode()).decode()
        if self.headers.get("Authorization") == want:
            return True
        self.reply(401, {"error_code": 40101, "message": "Unauthorized"})
        return False

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def fmt(self):
        return parse_qs(self.path.partition("?")[2]).get("format", [None])[0]

    def entry(self, sid):
        e = by_id[sid]
        out = {"id": sid, "guid": e["guid"], "subject": e["subject"], "version": e["version"]}
        return self.typed(out, e)

    def typed(self, out, e):
        # format=serialized: a Protobuf schema as the base64 descriptor it was registered as
        out["schema"] = e.get("serialized") or e["schema"] if self.fmt() == "serialized" else e["schema"]
        if e["schemaType"] != "AVRO":
            out["schemaType"] = e["schemaType"]
        if e.get("references"):
            out["references"] = e["references"]
        return out

    def register(self, subject, schema, schema_type, references=None):
        with lock:
            schema, serialized = stored_form(schema, schema_type)
            key = (subject, schema)
            if key in by_text:
                return self.entry(by_text[key])
            sid = len(by_id) + 1
            versions = subjects.setdefault(subject, [])
            versions.append(sid)
            by_id[sid] = {"schema": schema, "schemaType": schema_type, "guid": str(uuid.uuid4()),
                          "subject": subject, "version": len(versions), "references": references or []}
            if serialized:
                by_id[sid]["serialized"] = serialized
            by_text[key] = sid
            save()
            return self.entry(sid)

    def do_POST(self):
        if not self.authorized():
            return
        try:
            self.post()
        except ImportError as e:  # a Protobuf descriptor, and no protobuf package
            self.reply(500, {"error_code": 50001, "message": "schema_registry.py: %s" % e})

    def post(self):
        parts = [unquote(p) for p in self.path.split("?")[0].strip("/").split("/")]
        req = self.body()
        if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            self.reply(200, self.register(parts[1], req["schema"], req.get("schemaType", "AVRO"),
                                          req.get("references")))
        elif len(parts) == 2 and parts[0] == "subjects":
            schema = stored_form(req["schema"], req.get("schemaType", "AVRO"))[0]
            with lock:
                sid = by_text.get((parts[1], schema))
            if sid is None:
                self.reply(*not_found(40403))
            else:
                self.reply(200, self.entry(sid))
        elif parts == ["test", "raw"]:
            e = self.register(req.get("subject", "raw"), req["schema"], req.get("schemaType", "AVRO"),
                              req.get("references"))
            self.reply(200, e)
        else:
            self.reply(404, {"error_code": 404, "message": "HTTP 404 Not Found"})

    def do_GET(self):
        if not self.authorized():
            return
        parts = [unquote(p) for p in self.path.split("?")[0].strip("/").split("/")]
        with lock:
            if len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit():
                sid = int(parts[2])
                if sid not in by_id:
                    return self.reply(*not_found())
                return self.reply(200, self.typed({}, by_id[sid]))
            if len(parts) == 3 and parts[:2] == ["schemas", "guids"]:
                for e in by_id.values():
                    if e["guid"] == parts[2]:
                        return self.reply(200, self.typed({}, e))
                return self.reply(*not_found())
            if parts == ["subjects"]:
                return self.reply(200, sorted(subjects))
            if len(parts) >= 3 and parts[0] == "subjects" and parts[2] == "versions":
                versions = subjects.get(parts[1])
                if versions is None:
                    return self.reply(*not_found(40401, "Subject not found"))
                if len(parts) == 3:
                    return self.reply(200, list(range(1, len(versions) + 1)))
                v = len(versions) if parts[3] == "latest" else int(parts[3]) if parts[3].isdigit() else 0
                if not 1 <= v <= len(versions):
                    return self.reply(*not_found(40402, "Version not found"))
                return self.reply(200, self.entry(versions[v - 1]))
        self.reply(404, {"error_code": 404, "message": "HTTP 404 Not Found"})


def main():
    global auth, state_file
    args = sys.argv[1:]
    port = int(args.pop(0))
    pidfile = None
    while args:
        opt = args.pop(0)
        if opt == "--user":
            auth = args.pop(0)
        elif opt == "--pidfile":
            pidfile = args.pop(0)
        elif opt == "--state":
            state_file = args.pop(0)
    load()
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    if pidfile:
        import os
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
    server.serve_forever()


if __name__ == "__main__":
    main()
