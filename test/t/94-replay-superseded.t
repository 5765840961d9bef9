#!/usr/bin/env bash
# replay_dead_letters never takes a key back in time.  Mode upsert and
# envelope debezium write by key: when a record of a key was dead-lettered
# and a later record of that key (same partition) was applied, the dead
# letter's image is older than the key's, and a replay leaves it, names it
# in a NOTICE, and writes it only with force => true.  A dead letter whose
# key nothing later changed is replayed; so is one whose key only came again
# in events Debezium sent again (skipped, not applied).
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 9
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# --- mode upsert ---------------------------------------------------------------
topic=rsup$$
eoi-kafka create-topic "$topic" 1 >/dev/null
sql "CREATE TABLE rs_up (id int PRIMARY KEY, v int CONSTRAINT small CHECK (v < 100));
     SELECT eoingest.create_job(name => 'rs_up', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'rs_up',
            mode => 'upsert', columns => '{id,v}', batch_timeout_ms => 100);
     SELECT eoingest.start_job('rs_up')" >/dev/null
# offsets 0, 1 and 2 fail the CHECK; offsets 3 and 4, in a later batch,
# update keys 1 and 3.  (Within a batch only a key's last record is
# written: an earlier one never fails there.)
printf '1\t1,150\n2\t2,150\n3\t3,150\n' | eoi-kafka produce -K "$topic" >/dev/null
wait_until 60 "SELECT count(*) = 3 FROM eoingest.dead_letters WHERE job = 'rs_up'" >/dev/null || true
printf '1\t1,5\n3\t3,7\n' | eoi-kafka produce -K "$topic" >/dev/null
check "three dead letters, the later records of keys 1 and 3 applied" wait_until 60 \
  "SELECT (SELECT count(*) = 3 FROM eoingest.dead_letters WHERE job = 'rs_up')
      AND (SELECT string_agg(id || '=' || v, ' ' ORDER BY id) = '1=5 3=7' FROM rs_up)"
is "$(sql "SELECT string_agg(\"offset\" || ':' || coalesce(superseded_by::text, '-'), ' ' ORDER BY \"offset\")
             FROM eoingest.dead_letters WHERE job = 'rs_up'")" "0:3 1:- 2:4" \
  "the dead letters of keys 1 and 3 are superseded by the later records of their keys"

sql "ALTER TABLE rs_up DROP CONSTRAINT small" >/dev/null
ids=$(sql "SELECT string_agg(id::text, ', ' ORDER BY id) FROM eoingest.dead_letters
             WHERE job = 'rs_up' AND \"offset\" IN (0, 2)" || true)
out=$(sql "SELECT eoingest.replay_dead_letters('rs_up')" 2>&1 || true)
case "$out" in
  "NOTICE:  left 2 dead letters of job \"rs_up\" whose keys the job has written again since: $ids"*"force => true"*"
1") st=0 ;;
  *) st=1; diag "got: $out" ;;
esac
ok $st "replay writes the one dead letter of a key nothing changed since, and names the two it leaves"
is "$(sql "SELECT string_agg(id || '=' || v, ' ' ORDER BY id) FROM rs_up")" "1=5 2=150 3=7" \
  "no key went back in time"
is "$(sql "SELECT string_agg(\"offset\"::text, ' ' ORDER BY \"offset\") FROM eoingest.dead_letters WHERE job = 'rs_up'")" \
  "0 2" "the dead letters left are kept"
n=$(sql "SELECT eoingest.replay_dead_letters('rs_up', ARRAY(SELECT id FROM eoingest.dead_letters
                                                           WHERE job = 'rs_up' AND \"offset\" = 2), force => true)" || true)
is "$n $(sql "SELECT string_agg(id || '=' || v, ' ' ORDER BY id) FROM rs_up")" "1 1=5 2=150 3=150" \
  "force => true writes the older image"
sql "SELECT eoingest.drop_job('rs_up'); DROP TABLE rs_up" >/dev/null 2>&1

# --- envelope debezium ------------------------------------------------------------
# Events of one source into one partition: key 1 v 1 applied, key 1 v 150
# and key 2 v 150 dead letters, key 2 v 5 applied; then Debezium sends the
# first two events again (skipped: they are older than what was applied).
topic=rscdc$$
eoi-kafka create-topic "$topic" 1 >/dev/null
python3 - "$EOINGEST_RUN/$topic.events" <<'EOF'
import json, sys
T0 = 1764900000000
def ev(key, v, lsn):
    source = {"version": "3.6.1.Final", "connector": "postgresql", "name": "app", "ts_ms": T0 + lsn,
              "snapshot": "false", "db": "app", "sequence": json.dumps([str(lsn - 50), str(lsn)]),
              "schema": "public", "table": "t", "txId": lsn, "lsn": lsn, "xmin": None}
    value = {"before": None, "after": {"id": key, "v": v}, "source": source, "op": "u",
             "ts_ms": T0 + lsn + 20, "transaction": None}
    return json.dumps({"id": key}) + "\t" + json.dumps(value, separators=(",", ":"))
stream = [ev(1, 1, 1100), ev(1, 150, 1300), ev(2, 150, 1400), ev(2, 5, 1500),
          ev(1, 1, 1100), ev(1, 150, 1300)]
open(sys.argv[1], "w").write("\n".join(stream) + "\n")
EOF
eoi-kafka produce -K "$topic" <"$EOINGEST_RUN/$topic.events" >/dev/null
# One event per batch: within a batch only a key's last change is written.
sql "CREATE TABLE rs_cdc (id int PRIMARY KEY, v int CONSTRAINT small CHECK (v < 100));
     SELECT eoingest.create_job(name => 'rs_cdc', brokers => '$KAFKA_BROKERS', topic => '$topic',
            target => 'rs_cdc', format => 'json', envelope => 'debezium', batch_size => 1, batch_timeout_ms => 100);
     SELECT eoingest.start_job('rs_cdc')" >/dev/null
check "the job reads the stream" wait_until 60 "SELECT eoingest.wait_for_catchup('rs_cdc', '1 s')"
is "$(sql "SELECT (SELECT string_agg(id || '=' || v, ' ' ORDER BY id) FROM rs_cdc) || ' / ' ||
                  (SELECT string_agg(\"offset\" || ':' || coalesce(superseded_by::text, '-'), ' ' ORDER BY \"offset\")
                     FROM eoingest.dead_letters WHERE job = 'rs_cdc') || ' / ' ||
                  (SELECT replays_skipped FROM eoingest.offsets WHERE job = 'rs_cdc')")" "1=1 2=5 / 1:- 2:3 / 2" \
  "key 2's dead letter is superseded by its later change; key 1's not by the two events sent again"
sql "ALTER TABLE rs_cdc DROP CONSTRAINT small" >/dev/null
n=$(sql "SELECT eoingest.replay_dead_letters('rs_cdc')" 2>/dev/null || true)
is "$n $(sql "SELECT string_agg(id || '=' || v, ' ' ORDER BY id) FROM rs_cdc")" "1 1=150 2=5" \
  "replay writes key 1's last change and leaves key 2's older one"
sql "SELECT eoingest.drop_job('rs_cdc'); DROP TABLE rs_cdc" >/dev/null 2>&1
done_testing
