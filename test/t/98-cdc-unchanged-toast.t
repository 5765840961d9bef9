#!/usr/bin/env bash
# envelope debezium: an update that leaves a TOASTed column unchanged carries
# Debezium's placeholder for it (text, the base64 or hex of its bytes for a
# bytes field, an array of it); the row keeps its value.  The value comes
# from the key's earlier change in the same batch if there is one, else from
# the table; a row the target does not have (never there, or deleted
# earlier in the batch) takes NULL there, counted in offsets.unchanged_nulled
# with a WARNING.  A placeholder in a key column is a dead letter.  One job
# applies each event in its own batch, one all in one batch.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 7
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=toast$$
eoi-kafka create-topic "$topic" 1 >/dev/null

python3 - "$EOINGEST_RUN/$topic.events" <<'EOF'
import json, sys
P = "__debezium_unavailable_value"
P64 = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
PHEX = P.encode().hex()
lsn = [1000]
def ev(op, key, after):
    lsn[0] += 100
    source = {"version": "3.6.1.Final", "connector": "postgresql", "name": "app", "ts_ms": 1764900000000 + lsn[0],
              "snapshot": "true" if op == "r" else "false", "db": "app",
              "sequence": json.dumps([str(lsn[0] - 50), str(lsn[0])]), "schema": "public", "table": "t",
              "txId": lsn[0], "lsn": lsn[0], "xmin": None}
    value = {"before": {"id": key} if op == "d" else None, "after": after, "source": source, "op": op,
             "ts_ms": 1764900000000 + lsn[0], "transaction": None}
    return json.dumps({"id": key}) + "\t" + json.dumps(value, separators=(",", ":"))
def row(i, n, big, bin_, arr):
    return {"id": i, "n": n, "big": big, "bin": bin_, "arr": arr}
stream = [
    ev("r", 1, row(1, 0, "B1", "AQ==", [1])),
    ev("r", 2, row(2, 0, "B2", "Ag==", [2])),
    ev("u", 1, row(1, 1, P, P64, [P])),          # keeps big, bin and arr from the table
    ev("c", 4, row(4, 0, "B4", "BA==", [4])),
    ev("u", 4, row(4, 1, P, "BA==", [4])),       # keeps big: from the batch, or the table
    ev("u", 3, row(3, 1, P, PHEX, [3])),         # not in the target: NULL big and bin, counted
    ev("d", 2, None),
    ev("u", 2, row(2, 2, P, "Ag==", [2])),       # deleted first: NULL big, counted
    ev("u", 1, row(1, 2, "B1new", P64, [P])),    # keeps bin and arr
    ev("u", 5, row(P, 1, "B5", "BQ==", [5])),    # the key itself unsent: a dead letter
]
open(sys.argv[1], "w").write("\n".join(stream) + "\n")
EOF
eoi-kafka produce -K "$topic" <"$EOINGEST_RUN/$topic.events" >/dev/null

for j in one all; do
  size=1; [ "$j" = all ] && size=1000
  sql "CREATE TABLE toast_$j (id int PRIMARY KEY, n int, big text, bin bytea, arr int[]);
       SELECT eoingest.create_job(name => 'toast_$j', brokers => '$KAFKA_BROKERS', topic => '$topic',
              target => 'toast_$j', format => 'json', envelope => 'debezium',
              batch_size => $size, batch_timeout_ms => 100);
       SELECT eoingest.start_job('toast_$j')" >/dev/null
done
check "both jobs read the stream" \
  wait_until 60 "SELECT eoingest.wait_for_catchup('toast_one', '1 s') AND eoingest.wait_for_catchup('toast_all', '1 s')"

want="1:2:B1new:\\x01:{1} 2:2::\\x02:{2} 3:1:::{3} 4:1:B4:\\x04:{4}"
for j in one all; do
  is "$(sql "SELECT string_agg(concat_ws(':', id, n, coalesce(big, ''), coalesce(bin::text, ''), coalesce(arr::text, '')),
                               ' ' ORDER BY id) FROM toast_$j")" "$want" \
    "toast_$j: the unsent values kept, from the batch or the table; NULL where the row was new"
  is "$(sql "SELECT (SELECT sum(unchanged_nulled) FROM eoingest.offsets WHERE job = 'toast_$j') || ' / ' ||
                    (SELECT string_agg(\"offset\" || ' ' || sqlstate, ',') FROM eoingest.dead_letters WHERE job = 'toast_$j')")" \
    "2 / 9 22000" "toast_$j: the two rows that took NULL are counted; the unsent key is the one dead letter"
done
is "$(sql "SELECT split_part(error, ' HINT:', 1) FROM eoingest.dead_letters WHERE job = 'toast_one'")" \
  "key field \"id\" of the change event's after image is Debezium's placeholder \"__debezium_unavailable_value\", not a value" \
  "the dead letter says why"
check "the server log has the WARNING" \
  grep -q 'WARNING:  2 rows new to "toast_all" took NULL for values their change did not carry' \
  "$EOINGEST_RUN/pg.log"

for j in one all; do sql "SELECT eoingest.drop_job('toast_$j'); DROP TABLE toast_$j" >/dev/null 2>&1; done
done_testing
