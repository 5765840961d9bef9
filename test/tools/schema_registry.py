#!/usr/bin/env python3
"""A small Schema Registry for the tests: the part of Confluent's REST API
that confluent-kafka's AvroSerializer and eoingest use.

    schema_registry.py PORT [--user USER:PASSWORD] [--pidfile FILE] [--state FILE]

  POST /subjects/{subject}/versions    register (or find) a schema: {"id", "guid", ...}
  GET  /schemas/ids/{id}               {"schema": ...}   (404 + error_code 40403 if unknown)
  GET  /schemas/guids/{guid}           the same, by GUID
  GET  /subjects, /subjects/{s}/versions, /subjects/{s}/versions/{n|latest}
A schema may have "references" ([{"name", "subject", "version"}]): kept, and given back
with it.
  POST /test/raw                       (tests) register a schema text as is, even an invalid one

With --user, every request needs HTTP basic authentication with those credentials
(401 otherwise).  Schemas live in memory, and in --state FILE if given (so that a
registry stopped and started again knows them); ids count from 1 in registration order.
Apicurio Registry 3.x (the registry the issue suggests) cannot be assembled from Maven Central
here (most of its own modules are not served: see README.md); 2.4.2.Final runs in long mode
(test/apicurio.sh, t/43-apicurio.t), and the default suite uses this.
"""
import base64
import json
import sys
import threading
import uuid
from urllib.parse import unquote
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

    def entry(self, sid):
        e = by_id[sid]
        out = {"id": sid, "guid": e["guid"], "subject": e["subject"], "version": e["version"],
               "schema": e["schema"]}
        return self.typed(out, e)

    @staticmethod
    def typed(out, e):
        if e["schemaType"] != "AVRO":
            out["schemaType"] = e["schemaType"]
        if e.get("references"):
            out["references"] = e["references"]
        return out

    def register(self, subject, schema, schema_type, references=None):
        with lock:
            key = (subject, schema)
            if key in by_text:
                return self.entry(by_text[key])
            sid = len(by_id) + 1
            versions = subjects.setdefault(subject, [])
            versions.append(sid)
            by_id[sid] = {"schema": schema, "schemaType": schema_type, "guid": str(uuid.uuid4()),
                          "subject": subject, "version": len(versions), "references": references or []}
            by_text[key] = sid
            save()
            return self.entry(sid)

    def do_POST(self):
        if not self.authorized():
            return
        parts = [unquote(p) for p in self.path.split("?")[0].strip("/").split("/")]
        req = self.body()
        if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            self.reply(200, self.register(parts[1], req["schema"], req.get("schemaType", "AVRO"),
                                          req.get("references")))
        elif len(parts) == 2 and parts[0] == "subjects":
            with lock:
                sid = by_text.get((parts[1], req["schema"]))
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
                e = by_id[sid]
                return self.reply(200, self.typed({"schema": e["schema"]}, e))
            if len(parts) == 3 and parts[:2] == ["schemas", "guids"]:
                for e in by_id.values():
                    if e["guid"] == parts[2]:
                        return self.reply(200, self.typed({"schema": e["schema"]}, e))
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
