#!/usr/bin/env python3
"""Writes test/cdc/replay.events (key<TAB>value lines) for sql/cdcreplay.sql.

A stream of change events as Debezium's PostgreSQL connector writes them
(JsonConverter, schemas.enable=false), with parts of it sent twice, as after a
crash of Kafka Connect: source.sequence is ["<last commit LSN>", "<LSN>"].
Run it again after a change here: python3 test/cdc/replay.py > test/cdc/replay.events
"""
import json


def compact(value):
    return json.dumps(value, separators=(",", ":"))


def source(seq, connector="postgresql", tx=None, snapshot=None):
    s = {"version": "3.6.1.Final", "connector": connector, "name": "dbz", "ts_ms": 1700000000000,
         "db": "src", "schema": "public", "table": "rp"}
    if snapshot:
        s["snapshot"] = snapshot
    if tx:
        s["txId"] = tx
    if seq is not None:
        s["sequence"] = seq if isinstance(seq, str) else compact(seq)
        s["lsn"] = int(seq[1]) if isinstance(seq, list) else None
    return s


def event(op, key, v=None, before=None, seq=None, **kw):
    after = None if v is None else {"id": key, "v": v}
    return (compact({"id": key}),
            compact({"before": before, "after": after, "source": source(seq, **kw), "op": op,
                     "ts_ms": 1700000000000, "transaction": None}))


def tombstone(key):
    return (compact({"id": key}), "")


snapshot = [event("r", 1, 0, seq=[None, "1000"], snapshot="true"),
            event("r", 2, 0, seq=[None, "1000"], snapshot="last")]
a = [event("u", 1, 1, seq=["1000", "1100"], tx=501), event("c", 3, 1, seq=["1000", "1150"], tx=501)]
b = [event("u", 1, 2, seq=["1200", "1300"], tx=502),
     event("d", 3, before={"id": 3, "v": 1}, seq=["1200", "1350"], tx=502), tombstone(3)]
c = [event("u", 1, 3, seq=["1400", "1500"], tx=503), event("u", 2, 3, seq=["1400", "1550"], tx=503)]
d = [event("u", 1, 4, seq=["1600", "1700"], tx=504), event("c", 4, 4, seq=["1600", "1750"], tx=504)]
# began before d committed: its change has a lower LSN than d's, its commit comes after
e = [event("u", 2, 5, seq=["1800", "1650"], tx=505)]
no_sequence = [event("u", 4, 6, seq=None, tx=506)]
# a primary-key change: Debezium's delete and create carry one position
f = [event("d", 4, before={"id": 4, "v": 6}, seq=["1900", "2000"], tx=507), tombstone(4),
     event("c", 6, 6, seq=["1900", "2000"], tx=507)]
null_commit = [event("c", 5, 0, seq=[None, "900"])]
other_connector = [event("c", 7, 7, seq=["1", "1"], connector="mysql")]
unreadable = [event("c", 8, 8, seq="garbage"), event("c", 9, 9, seq='["1","x"]')]

# Connect's first crash sends a, b, c again; the second d and e; f comes twice in a row.
stream = (snapshot + a + b + c + a + b + c + d + e + no_sequence + d + e + f + f
          + null_commit + other_connector + unreadable)
for k, v in stream:
    print(k + "\t" + v)
