#!/usr/bin/env python3
"""Check schema_registry.py's .proto renderer: each descriptor, rendered and compiled
again with protoc, gives the same descriptor (json_name, source info and file options
aside).  Needs grpcio-tools (its protoc and well-known .proto files):

    python -m venv /tmp/v && /tmp/v/bin/pip install grpcio-tools && /tmp/v/bin/python proto_render_check.py

Checks protobuf_produce.py's files and a proto2 file with defaults, required, packed,
nested enums, a proto2 oneof and a public import.
"""
import os
import sys
import tempfile

import grpc_tools
from grpc_tools import protoc
from google.protobuf import descriptor_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import protobuf_produce  # noqa: E402
import schema_registry  # noqa: E402

PROTO2 = r'''syntax = "proto2";
package p2.x;
import public "evo/common.proto";
message Thing {
  enum Kind { K_ZERO = 0; K_ONE = 1; }
  required int64 id = 1;
  optional string s = 2 [default = "a \"quoted\"\n\\ ünï\001"];
  optional bytes b = 3 [default = "\000\377ab"];
  optional double d = 4 [default = -1.5];
  optional float fl = 5 [default = inf];
  optional Kind kind = 6 [default = K_ONE];
  optional .evo.Status st = 7 [default = STATUS_PAID];
  repeated int32 packed_yes = 8 [packed = true];
  repeated sint64 packed_no = 9 [packed = false];
  optional bool flag = 10 [default = true, deprecated = true];
  oneof choice { uint64 u = 11; fixed32 f32 = 12; Inner inner = 13; }
  map<int64, .evo.Money> by_id = 14;
  message Inner { optional sfixed64 x = 1 [default = -9007199254740993]; }
  optional uint32 after = 15 [default = 4294967295];
}
enum Top { TOP_A = 1; TOP_B = 2; TOP_ALIAS = 2 [deprecated = true]; option allow_alias = true; }
'''


def compile_(root, name):
    out = os.path.join(root, "out.pb")
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    if protoc.main(["protoc", "-I" + root, "-I" + include, "--descriptor_set_out=" + out, name]) != 0:
        raise SystemExit("protoc failed on %s:\n%s" % (name, open(os.path.join(root, name)).read()))
    fds = descriptor_pb2.FileDescriptorSet()
    with open(out, "rb") as f:
        fds.ParseFromString(f.read())
    return fds.file[0]


def clean(fd):
    fd = descriptor_pb2.FileDescriptorProto.FromString(fd.SerializeToString())
    fd.ClearField("source_code_info")
    fd.ClearField("options")
    if fd.syntax in ("", "proto2"):
        fd.ClearField("syntax")

    def walk(m):
        for f in list(m.field) + list(getattr(m, "extension", [])):
            f.ClearField("json_name")
        for n in m.nested_type:
            walk(n)
    for m in fd.message_type:
        walk(m)
    return fd


def check(files, show=False):
    with tempfile.TemporaryDirectory() as root:
        for fd in files:
            text = schema_registry.render_proto(fd)
            if show:
                print("---- %s\n%s" % (fd.name, text))
            path = os.path.join(root, fd.name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
            again = compile_(root, fd.name)
            if clean(again) != clean(fd):
                raise SystemExit("%s differs after rendering:\n%s\nwant:\n%s\ngot:\n%s"
                                 % (fd.name, text, clean(fd), clean(again)))
            if schema_registry.render_proto(again) != text:
                raise SystemExit("%s: rendering is not stable" % fd.name)


def main():
    show = "-v" in sys.argv
    for version in (0, 1, 2, 3):
        check(protobuf_produce.files(version), show)
    with tempfile.TemporaryDirectory() as root:  # PROTO2 compiled by protoc, as the original
        for name, text in (("evo/common.proto", schema_registry.render_proto(protobuf_produce.COMMON)),
                           ("p2/thing.proto", PROTO2)):
            os.makedirs(os.path.join(root, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
        thing = compile_(root, "p2/thing.proto")
    check([protobuf_produce.COMMON, thing], show)
    print("ok: renderings compile back to the same descriptors")


if __name__ == "__main__":
    main()
