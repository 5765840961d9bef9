#!/usr/bin/env bash
# create_target and schema_changes with envelope debezium: change events in Kafka Connect's JsonConverter
# wrapper (as Debezium's PostgreSQL connector writes them; real Debezium in 48-debezium.t) create their
# missing targets from the after image's schema, keyed by the key schema's fields: apply (primary key),
# history (its six columns, no key), soft_delete (its boolean column), targets routing two source
# tables into two new tables, and a target template of the events' source schema and table. A template's
# table that does not exist, without create_target, holds the job (offsets unmoved) until it is created. A column the source gains becomes a column of each target (one ALTER TABLE,
# recorded), widen turns int32 into bigint, and a worker SIGKILLed after the change and before its commit
# leaves each event applied once. Events without a schema (schemas.enable=false) for a missing target stop
# the job with the reason, offsets kept, nothing dead-lettered.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"

plan 27

work=$(mktemp -d "$EOINGEST_RUN/cdcevolve.XXXXXX")
trap 'clear_fault >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
t=cev$$
u=cevu$$
bare=cevb$$
tomb=cevt$$
shard=cevs$$

# events FILE TABLE VERSION [BARE] < "op id name amount note qty" lines: change events of source table
# public.TABLE with the value schema of VERSION (1: id, name, amount, at; 2: and note; 3: and qty, int32;
# 4: qty int64), one "key<TAB>value" line each, as JsonConverter writes them (BARE: schemas.enable=false).
cat >"$work/events.py" <<'EOF'
import base64, json, sys
out, table, version = sys.argv[1], sys.argv[2], int(sys.argv[3])
bare = "bare" in sys.argv[4:]
# schema=NAME: the schemas named after NAME, not the table (shards that share one)
named = ([a[7:] for a in sys.argv[4:] if a.startswith("schema=")] or [table])[0]
def field(fname, typ, optional=True, **more):
    return dict(type=typ, optional=optional, field=fname, **more)
cols = [field("id", "int32", False), field("name", "string"),
        field("amount", "bytes", name="org.apache.kafka.connect.data.Decimal", version=1,
              parameters={"scale": "2", "connect.decimal.precision": "10"}),
        field("at", "int64", name="io.debezium.time.MicroTimestamp", version=1)]
if version >= 2:
    cols.append(field("note", "string"))
if version >= 3:
    cols.append(field("qty", "int32" if version == 3 else "int64"))
value = dict(type="struct", fields=cols, optional=True, name="cev.public.%s.Value" % named)
source = dict(type="struct", optional=False, name="io.debezium.connector.postgresql.Source", field="source",
              fields=[field("version", "string", False), field("connector", "string", False),
                      field("name", "string", False), field("ts_ms", "int64", False),
                      field("db", "string", False), field("schema", "string", False),
                      field("table", "string", False), field("lsn", "int64")])
envelope = dict(type="struct", optional=False, name="cev.public.%s.Envelope" % named, version=2,
                fields=[dict(value, field="before"), dict(value, field="after"), source,
                        field("op", "string", False), field("ts_ms", "int64")])
key_schema = dict(type="struct", optional=False, name="cev.public.%s.Key" % named,
                  fields=[field("id", "int32", False)])
def amount(s):
    n = round(float(s) * 100)
    return base64.b64encode(n.to_bytes(8, "big", signed=True)).decode()
def wrap(schema, payload):
    if bare:
        return json.dumps(payload, separators=(",", ":"))
    return json.dumps({"schema": schema, "payload": payload}, separators=(",", ":"))
lines = []
lsn = 1000
for line in sys.stdin:
    op, id_, name, amt, note, qty = line.split()
    lsn += 10
    row = {"id": int(id_), "name": name, "amount": amount(amt), "at": 1764900000000000 + int(id_) * 1000000}
    if version >= 2:
        row["note"] = note
    if version >= 3:
        row["qty"] = int(qty)
    src = {"version": "3.6.1.Final", "connector": "postgresql", "name": "cev", "ts_ms": 1764900000000 + lsn,
           "db": "app", "schema": "public", "table": table, "lsn": lsn}
    ev = {"before": {"id": int(id_)} if op == "d" else None, "after": None if op == "d" else row,
          "source": src, "op": op, "ts_ms": 1764900000000 + lsn}
    lines.append(wrap(key_schema, {"id": int(id_)}) + "\t" + wrap(envelope, ev))
open(out, "w").write("\n".join(lines) + "\n")
EOF
events() { python3 "$work/events.py" "$@"; }
columns_of() {
  sql "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
         FROM pg_attribute WHERE attrelid = '$1'::regclass AND attnum > 0 AND NOT attisdropped"
}
primary_key_of() {
  sql "SELECT coalesce(string_agg(a.attname, ',' ORDER BY k.n), 'none')
         FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
        WHERE i.indrelid = '$1'::regclass AND i.indisprimary"
}
caught_up() {
  local cond="true" j
  for j in "$@"; do cond="$cond AND eoingest.wait_for_catchup('$j', '1 s')"; done
  wait_until 60 "SELECT $cond"
}
produce() { eoi-kafka produce -K "$1" <"$2" >/dev/null; }

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'cev\\_%';
     DROP SCHEMA IF EXISTS cev CASCADE; CREATE SCHEMA cev" >/dev/null 2>&1
for topic in "$t" "$u" "$bare" "$tomb" "$shard"; do eoi-kafka create-topic "$topic" 1 >/dev/null; done

common="brokers => '$KAFKA_BROKERS', format => 'json', envelope => 'debezium', create_target => true,
        on_error => 'fail', start_offset => 'earliest', batch_timeout_ms => 100"
notice=$(sql "SELECT eoingest.create_job(name => 'cev_apply', topic => '$t', target => 'cev.t',
                schema_changes => 'widen', $common)" 2>&1)
case "$notice" in
  *"target table cev.t does not exist yet"*) ok 0 "create_job says it creates the missing target" ;;
  *) ok 1 "create_job says it creates the missing target"; diag "$notice" ;;
esac
sql "SELECT eoingest.create_job(name => 'cev_hist', topic => '$t', target => 'cev.t_hist', cdc_mode => 'history',
        schema_changes => 'add_columns', $common);
     SELECT eoingest.create_job(name => 'cev_soft', topic => '$t', target => 'cev.t_soft', cdc_mode => 'soft_delete',
        schema_changes => 'add_columns', $common);
     SELECT eoingest.create_job(name => 'cev_routed', topic => '$t, $u',
        targets => '{\"public.$t\": \"cev.r_t\", \"public.$u\": \"cev.r_u\"}', schema_changes => 'add_columns',
        $common);
     SELECT eoingest.create_job(name => 'cev_tmpl', topic => '$t, $u', target => 'cev.\${source.schema}_\${source.table}',
        schema_changes => 'add_columns', $common);
     SELECT eoingest.create_job(name => 'cev_wait', topic => '$u', target => 'cev.\${source.db}_\${topic}',
        brokers => '$KAFKA_BROKERS', format => 'json', envelope => 'debezium', on_error => 'fail',
        start_offset => 'earliest', batch_timeout_ms => 100);
     SELECT eoingest.start_job(name) FROM unnest('{cev_apply,cev_hist,cev_soft,cev_routed,cev_tmpl,cev_wait}'::text[]) AS name" >/dev/null 2>&1
is "$(sql "SELECT count(*) FROM pg_class WHERE relnamespace = 'cev'::regnamespace")" 0 \
  "no target exists before the first event"

# v1: three rows, one updated, one deleted
events "$work/v1" "$t" 1 <<'EOF'
c 1 ann 10.50 - 0
c 2 bob 20.25 - 0
c 3 cy 30.00 - 0
u 2 bob2 21.00 - 0
d 3 - 0 - 0
EOF
events "$work/u1" "$u" 1 <<'EOF'
c 7 uma 1.00 - 0
c 8 ugo 2.00 - 0
EOF
produce "$t" "$work/v1"
produce "$u" "$work/u1"
check "v1: the jobs catch up" caught_up cev_apply cev_hist cev_soft cev_routed cev_tmpl
is "$(columns_of cev.t) | $(primary_key_of cev.t)" \
  "id integer, name text, amount numeric(10,2), at timestamp without time zone | id" \
  "apply: the target is the after image's fields, typed from their Connect schemas, keyed by the key schema"
is "$(sql "SELECT string_agg(id || ' ' || name || ' ' || amount || ' ' || at, ', ' ORDER BY id) FROM cev.t")" \
  "1 ann 10.50 2025-12-05 02:00:01, 2 bob2 21.00 2025-12-05 02:00:02" "apply: the rows, deleted and updated ones applied"
is "$(columns_of cev.t_hist) | $(primary_key_of cev.t_hist)" \
  "id integer, name text, amount numeric(10,2), at timestamp without time zone, __op text, __source_ts timestamp with time zone, __source_lsn pg_lsn, __topic text, __partition integer, __offset bigint | none" \
  "history: the fields and the six columns of the change log, without a key"
is "$(sql "SELECT string_agg(__op || coalesce(id::text, '-'), ' ' ORDER BY __offset) FROM cev.t_hist")" \
  "c1 c2 c3 u2 d3" "history: every event once, in order"
is "$(columns_of cev.t_soft) | $(primary_key_of cev.t_soft)" \
  "id integer, name text, amount numeric(10,2), at timestamp without time zone, __deleted boolean | id" \
  "soft_delete: the fields, the deleted column, the key"
is "$(sql "SELECT string_agg(id || ' ' || __deleted, ', ' ORDER BY id) FROM cev.t_soft")" \
  "1 false, 2 false, 3 true" "soft_delete: the deleted row kept and marked"
is "$(sql "SELECT (SELECT count(*) FROM cev.r_t) || ' ' || (SELECT string_agg(id || name, ',' ORDER BY id) FROM cev.r_u)
             || ' ' || '$(primary_key_of cev.r_u)'")" "2 7uma,8ugo id" \
  "targets: each source table's target created, keyed, filled"

is "$(sql "SELECT (SELECT string_agg(id::text, ',' ORDER BY id) FROM cev.public_$t) || ' ' ||
                  (SELECT string_agg(id || name, ',' ORDER BY id) FROM cev.public_$u) || ' ' || '$(primary_key_of cev.public_$u)'")" \
  "1,2 7uma,8ugo id" "a target template of \${source.schema} and \${source.table}: each source table's table created, keyed, filled"
check "a template's missing table without create_target: the job waits, naming topic and table, offsets unmoved" wait_until 60 \
  "SELECT state = 'retrying' AND last_error LIKE '%target table cev.app_$u of topic \"$u\" does not exist%'
          AND NOT EXISTS (SELECT FROM eoingest.offsets WHERE job = 'cev_wait' AND next_offset > 0)
     FROM eoingest.job_status WHERE name = 'cev_wait'"
sql "CREATE TABLE cev.app_$u (id int PRIMARY KEY, name text, amount numeric, at timestamp)" >/dev/null
check "once the table exists, the job goes on from its offsets" wait_until 60 \
  "SELECT string_agg(id || name, ',' ORDER BY id) = '7uma,8ugo' FROM cev.app_$u"

# v2 adds note, v3 qty as int32; a worker of cev_apply is SIGKILLed after its change, before its commit
events "$work/v2" "$t" 2 <<'EOF'
c 4 dan 4.00 hello 0
u 1 ann 10.50 changed 0
EOF
events "$work/v3" "$t" 3 <<'EOF'
c 5 eve 5.00 n5 42
EOF
kills=$(fault_count after_target_change)
set_fault after_target_change
# the workers take the setting at their next SIGHUP, which reaches them a moment after pg_reload_conf():
# v2 produced at once was seen, once, to be applied before (the change done, no kill)
sleep 1
produce "$t" "$work/v2"
check "v2: a worker is SIGKILLed after its change, before its commit" wait_fault after_target_change "$kills" 60
clear_fault
produce "$t" "$work/v3"
check "v2, v3: the jobs catch up" caught_up cev_apply cev_hist cev_soft cev_routed
is "$(columns_of cev.t)" \
  "id integer, name text, amount numeric(10,2), at timestamp without time zone, note text, qty integer" \
  "apply: note and qty added"
is "$(sql "SELECT string_agg(id || ' ' || coalesce(note, '-') || ' ' || coalesce(qty::text, '-'), ', ' ORDER BY id) FROM cev.t")" \
  "1 changed -, 2 - -, 4 hello -, 5 n5 42" "apply: the rows of the new schemas"
is "$(sql "SELECT string_agg(__op || id, ' ' ORDER BY __offset) FROM cev.t_hist WHERE __offset >= 5")" \
  "c4 u1 c5" "history: the new events once each, after the kill"

# v4: qty becomes int64: widen (cev_apply) makes the column bigint; add_columns (cev_hist) stops
events "$work/v4" "$t" 4 <<'EOF'
c 6 fay 6.00 n6 9000000000
EOF
produce "$t" "$work/v4"
check "v4: cev_apply catches up" caught_up cev_apply
is "$(sql "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'cev.t'::regclass AND attname = 'qty'")
$(sql "SELECT qty FROM cev.t WHERE id = 6")" "bigint
9000000000" "widen: qty widened to bigint, the row applied"
check "add_columns: cev_hist stops at the field no column fits" wait_until 60 \
  "SELECT last_error LIKE '%field \"qty\" of Kafka Connect schema cev.public.$t.Value%does not fit column qty of target cev.t_hist (integer)%'
     FROM eoingest.job_status WHERE name = 'cev_hist'"
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job LIKE 'cev\\_%'")
$(sql "SELECT count(*) FROM eoingest.target_changes WHERE job_id = (SELECT id FROM eoingest.jobs WHERE name = 'cev_apply')")" "0
4" "nothing dead-lettered; cev_apply's create and three changes recorded once each"

# events without a schema cannot create a target
events "$work/b1" "$bare" 1 bare <<'EOF'
c 1 ann 1.00 - 0
EOF
produce "$bare" "$work/b1"
sql "SELECT eoingest.create_job(name => 'cev_bare', topic => '$bare', target => 'cev.bare', $common);
     SELECT eoingest.start_job('cev_bare')" >/dev/null 2>&1
check "events without a schema: the job stops, saying why, its offsets kept" wait_until 60 \
  "SELECT last_error LIKE '%target cev.bare does not exist, and no message of the batch carries a schema to create it from%'
          AND NOT EXISTS (SELECT FROM eoingest.offsets WHERE job = 'cev_bare' AND next_offset > 0)
     FROM eoingest.job_status WHERE name = 'cev_bare'"

# a first batch of a tombstone alone: nothing to create the table from, nor a reason to
printf '%s\t\n' '{"id":1}' | eoi-kafka produce -K -z "$tomb" >/dev/null
sql "SELECT eoingest.create_job(name => 'cev_tomb', topic => '$tomb', target => 'cev.tomb', $common);
     SELECT eoingest.start_job('cev_tomb')" >/dev/null 2>&1
check "a batch of only a tombstone: committed, the job running, no table made" wait_until 60 \
  "SELECT state = 'running' AND (SELECT next_offset FROM eoingest.offsets WHERE job = 'cev_tomb') = 1
          AND to_regclass('cev.tomb') IS NULL FROM eoingest.job_status WHERE name = 'cev_tomb'"
events "$work/t1" "$tomb" 1 <<'EOF'
c 1 ann 1.00 - 0
EOF
produce "$tomb" "$work/t1"
check "its first event creates the table" wait_until 60 "SELECT to_regclass('cev.tomb') IS NOT NULL AND (SELECT count(*) FROM cev.tomb) = 1"

# a history through a template of the source table
sql "SELECT eoingest.create_job(name => 'cev_htmpl', topic => '$u', target => 'cev.h_\${source.table}', cdc_mode => 'history',
        $common); SELECT eoingest.start_job('cev_htmpl')" >/dev/null 2>&1
check "cdc_mode history into a template: the source table's change log created" wait_until 60 \
  "SELECT to_regclass('cev.h_$u') IS NOT NULL AND (SELECT string_agg(__op || id, ' ' ORDER BY __offset) FROM cev.h_$u) = 'c7 c8'"

# shards merged into one topic, with one schema: each source table gets its table, with its key
events "$work/s1" "sa$$" 1 "schema=cevshard" <<'EOF'
c 1 a1 1.00 - 0
c 2 a2 2.00 - 0
EOF
events "$work/s2" "sb$$" 1 "schema=cevshard" <<'EOF'
c 5 b5 5.00 - 0
EOF
cat "$work/s1" "$work/s2" >"$work/s12"
produce "$shard" "$work/s12"
sql "SELECT eoingest.create_job(name => 'cev_shard', topic => '$shard', target => 'cev.\${source.table}', $common);
     SELECT eoingest.start_job('cev_shard')" >/dev/null 2>&1
check "shards that share a schema in one topic: each source table's table created and filled" wait_until 60 \
  "SELECT to_regclass('cev.sb$$') IS NOT NULL AND (SELECT string_agg(id || name, ',' ORDER BY id) FROM cev.sa$$) = '1a1,2a2'
          AND (SELECT string_agg(id || name, ',' ORDER BY id) FROM cev.sb$$) = '5b5'"

for j in cev_apply cev_hist cev_soft cev_routed cev_tmpl cev_wait cev_bare cev_tomb cev_htmpl cev_shard; do sql "SELECT eoingest.drop_job('$j')" >/dev/null; done
sql "DROP SCHEMA cev CASCADE" >/dev/null 2>&1
done_testing
