#!/usr/bin/env bash
# envelope debezium: events sent again are skipped per source, and never a
# new change.  Events as Debezium's PostgreSQL connector writes them (name,
# db, ts_ms: the commit time, sequence), into one topic partition:
#   shard1 applies v 1, 2 of key 1 and sends v 1 again (skipped);
#   shard2, a second connector merged into the topic by a routing transform,
#   at lower LSNs than shard1's: applied;
#   shard1 restored into a new cluster ten minutes later, its LSNs lower:
#   applied as a new history, whose own events sent again are skipped, also
#   one stamped half a second later than the last (within the margin);
#   orders fails over to a standby that lost its last transaction (v 2 of
#   key 3); the new primary's transaction five seconds later has a lower
#   LSN: applied.
# One job applies each event in its own batch (positions read back from the
# table each time), one all in one batch.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 8
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=src$$
eoi-kafka create-topic "$topic" 1 >/dev/null

python3 - "$EOINGEST_RUN/$topic.events" <<'EOF'
import json, sys
T0 = 1764900000000
def ev(name, key, v, commit, lsn, ts):
    source = {"version": "3.6.1.Final", "connector": "postgresql", "name": name, "ts_ms": ts,
              "snapshot": "false", "db": "app", "sequence": json.dumps([str(commit), str(lsn)]),
              "schema": "public", "table": "t", "txId": 700, "lsn": lsn, "xmin": None}
    value = {"before": None, "after": {"id": key, "v": v}, "source": source, "op": "u",
             "ts_ms": ts + 20, "transaction": None}
    return json.dumps({"id": key}) + "\t" + json.dumps(value, separators=(",", ":"))
stream = [
    ev("shard1", 1, 1, 1000, 1100, T0),
    ev("shard1", 1, 2, 1200, 1300, T0 + 1000),
    ev("shard1", 1, 1, 1000, 1100, T0),                # sent again: skipped
    ev("shard2", 2, 10, 500, 600, T0 + 2000),          # another source, lower LSNs
    ev("shard2", 2, 11, 700, 800, T0 + 3000),
    ev("shard1", 1, 3, 100, 150, T0 + 600000),         # restored: a new history
    ev("shard1", 1, 4, 200, 250, T0 + 601000),
    ev("shard1", 1, 3, 100, 150, T0 + 600000),         # sent again: skipped
    ev("shard1", 1, 99, 190, 195, T0 + 601500),        # within the margin: skipped
    ev("orders", 3, 1, 5000, 5100, T0 + 700000),
    ev("orders", 3, 2, 5200, 5300, T0 + 700100),       # lost by the failover
    ev("orders", 3, 5, 5150, 5160, T0 + 705100),       # the new primary's
]
open(sys.argv[1], "w").write("\n".join(stream) + "\n")
EOF
eoi-kafka produce -K "$topic" <"$EOINGEST_RUN/$topic.events" >/dev/null

sql "DROP TABLE IF EXISTS srcs_one, srcs_all, srcs_log;
     CREATE TABLE srcs_one (id int PRIMARY KEY, v int);
     CREATE TABLE srcs_all (LIKE srcs_one INCLUDING ALL);
     CREATE TABLE srcs_log (n serial, tab text, id int, v int);
     CREATE OR REPLACE FUNCTION srcs_log() RETURNS trigger LANGUAGE plpgsql AS \$\$
     BEGIN INSERT INTO srcs_log (tab, id, v) VALUES (TG_TABLE_NAME, NEW.id, NEW.v); RETURN NULL; END \$\$;
     CREATE TRIGGER srcs_log AFTER INSERT OR UPDATE ON srcs_one FOR EACH ROW EXECUTE FUNCTION srcs_log();
" >/dev/null
for j in one all; do
  size=1; [ "$j" = all ] && size=1000
  sql "SELECT eoingest.create_job(name => 'srcs_$j', brokers => '$KAFKA_BROKERS', topic => '$topic',
         target => 'srcs_$j', format => 'json', envelope => 'debezium', on_error => 'fail',
         start_offset => 'earliest', batch_size => $size, batch_timeout_ms => 100);
       SELECT eoingest.start_job('srcs_$j')" >/dev/null
done
check "both jobs read the whole stream" \
  wait_until 60 "SELECT eoingest.wait_for_catchup('srcs_one', '1 s') AND eoingest.wait_for_catchup('srcs_all', '1 s')"

for j in one all; do
  is "$(sql "SELECT string_agg(id || '=' || v, ' ' ORDER BY id) FROM srcs_$j")" "1=4 2=11 3=5" \
    "srcs_$j: every source's last change, the new histories' included"
done
is "$(sql "SELECT string_agg(v::text, ' ' ORDER BY n) FROM srcs_log WHERE tab = 'srcs_one' AND id = 1")" \
  "1 2 3 4" "key 1 went through shard1's changes once each, in order: nothing sent again was applied"
is "$(sql "SELECT string_agg(id || ':' || v, ' ' ORDER BY n) FROM srcs_log WHERE tab = 'srcs_one' AND id > 1")" \
  "2:10 2:11 3:1 3:2 3:5" "the second source and the failed-over one: every change applied"
is "$(sql "SELECT string_agg(job || ' ' || replays_skipped, ', ' ORDER BY job) FROM eoingest.offsets
           WHERE topic = '$topic'")" "srcs_all 3, srcs_one 3" "three events counted as sent again"
is "$(sql "SELECT string_agg(source_name || '/' || source_db || ' ' || commit_lsn || ' ' || lsn, ', '
                              ORDER BY source_name)
             FROM eoingest.source_positions WHERE job = 'srcs_one'")" \
  "orders/app 0/141E 0/1428, shard1/app 0/C8 0/FA, shard2/app 0/2BC 0/320" \
  "the last position of each source"
is "$(sql "SELECT string_agg(state || ' ' || coalesce(last_error, ''), ',') FROM eoingest.job_status
           WHERE name LIKE 'srcs\\_%'")" "running ,running " "both jobs run, without an error"

for j in one all; do sql "SELECT eoingest.drop_job('srcs_$j')" >/dev/null; done
sql "DROP TABLE srcs_one, srcs_all, srcs_log; DROP FUNCTION srcs_log()" >/dev/null
done_testing
