#!/usr/bin/env bash
# transactions => 'source' against a live stream: NTX source transactions,
# each a transfer between two of NACC accounts (an update of each account,
# the transfer's insert: three events on the partitions of two topics), are
# produced in waves (Debezium's transaction topic ahead of the data topics in
# some waves, behind them in others) while a reader polls the targets and
# checks that every account's balance agrees with the transfers.  The worker
# is SIGKILLed once.  Job src commits source transactions; job ctl, the
# control, commits batches and must break the invariant (so the reader can
# see a broken state).  Both end exactly at the source's final state.
# The events are shaped as Debezium 3.6.1's PostgreSQL connector writes them
# (captured, see the README's Source transactions): the accounts arrive first
# as a snapshot (op r, "transaction": null, no BEGIN or END); a transaction's
# id is "txid:lsn" with the LSN of each message, so the BEGIN, the END and
# every change event of one transaction carry different ids (only the txid
# is shared); every 10th transaction also inserts and deletes a scratch
# transfer (a delete and its tombstone, which has no transaction block).
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

NACC=20 NTX=600 WAVES=12 PAUSE=0.3
plan 8
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
pfx=st$$
dir=$EOINGEST_RUN/$pfx
mkdir -p "$dir"
eoi-kafka create-topic "$pfx.transaction" 1 >/dev/null
eoi-kafka create-topic "$pfx.public.accounts" 4 >/dev/null
eoi-kafka create-topic "$pfx.public.transfers" 2 >/dev/null

# The source's transactions, as Debezium writes them: files per wave and partition.
python3 - "$dir" "$NACC" "$NTX" "$WAVES" >"$dir/final" <<'PY'
import json, random, sys
d, nacc, ntx, waves = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
random.seed(49)
bal = {a: 1000 for a in range(1, nacc + 1)}
j = lambda o: json.dumps(o, separators=(',', ':'))
files = {}
lsn = 22282704
def out(w, name, key, value):
    files.setdefault("%s/w%d-%s" % (d, w, name), []).append(j(key) + "\t" + (j(value) if value is not None else ""))
def source(table, txid, snapshot):
    return {"version": "3.6.1.Final", "connector": "postgresql", "name": "st", "db": "postgres",
            "snapshot": snapshot, "schema": "public", "table": table, "txId": txid, "lsn": lsn}
def ev(table, before, after, op, txid, order, total):
    global lsn
    lsn += 88                     # every message its own LSN, and so its own transaction id
    return {"before": before, "after": after, "op": op, "ts_ms": 1, "source": source(table, txid, "false"),
            "transaction": {"id": "%d:%d" % (txid, lsn), "total_order": total, "data_collection_order": order}}
# the snapshot: every account, op r, no transaction block, no BEGIN or END
for a in range(1, nacc + 1):
    snap = "first" if a == 1 else "last" if a == nacc else "true"
    out(0, "acc%d" % (a % 4), {"id": a}, {"before": None, "after": {"id": a, "balance": 1000}, "op": "r", "ts_ms": 1,
        "source": source("accounts", 725, snap), "transaction": None})
for t in range(1, ntx + 1):
    w = (t - 1) * waves // ntx
    a, b = random.sample(range(1, nacc + 1), 2)
    amt = random.randint(1, 50)
    bal[a] -= amt; bal[b] += amt
    txid = 1000 + t
    out(w, "tx", {"id": "%d:%d" % (txid, lsn)}, {"status": "BEGIN", "id": "%d:%d" % (txid, lsn), "event_count": None,
        "data_collections": None, "ts_ms": 1})
    out(w, "acc%d" % (a % 4), {"id": a}, ev("accounts", None, {"id": a, "balance": bal[a]}, "u", txid, 1, 1))
    out(w, "acc%d" % (b % 4), {"id": b}, ev("accounts", None, {"id": b, "balance": bal[b]}, "u", txid, 2, 2))
    out(w, "xfer%d" % (t % 2), {"id": t}, ev("transfers", None, {"id": t, "src": a, "dst": b, "amount": amt}, "c", txid, 1, 3))
    nx = 1
    if t % 10 == 0:
        s = {"id": 100000 + t, "src": a, "dst": b, "amount": 0}
        p = "xfer%d" % ((t // 10) % 2)
        out(w, p, {"id": s["id"]}, ev("transfers", None, s, "c", txid, 2, 4))
        out(w, p, {"id": s["id"]}, ev("transfers", {"id": s["id"]}, None, "d", txid, 3, 5))
        out(w, p, {"id": s["id"]}, None)
        nx = 3
    lsn += 88
    out(w, "tx", {"id": "%d:%d" % (txid, lsn)}, {"status": "END", "id": "%d:%d" % (txid, lsn), "event_count": 2 + nx,
        "data_collections": [{"data_collection": "public.transfers", "event_count": nx},
                             {"data_collection": "public.accounts", "event_count": 2}], "ts_ms": 1})
for name, lines in files.items():
    open(name + ".events", "w").write("\n".join(lines) + "\n")
print(" ".join("(%d,%d)" % (a, bal[a]) for a in sorted(bal)))
PY
for job in src ctl; do
  sql "CREATE TABLE acc_$job (id int PRIMARY KEY, balance int);
       CREATE TABLE xfer_$job (id int PRIMARY KEY, src int, dst int, amount int)" >/dev/null
done
# A reader: polls the targets for SECS seconds, each poll a new snapshot;
# prints the polls, the polls that broke the invariant, the states seen.
sql "CREATE FUNCTION st_reader(job text, secs float8) RETURNS text LANGUAGE plpgsql AS \$\$
DECLARE polls int := 0; broken int := 0; bad int; n int; states int[] := '{}';
        deadline timestamptz := clock_timestamp() + secs * interval '1 second';
BEGIN
  WHILE clock_timestamp() < deadline LOOP
    EXECUTE format('SELECT count(*) FILTER (WHERE a.balance <> 1000 + coalesce(t.d, 0)), (SELECT count(*) FROM %I)
                      FROM %I a LEFT JOIN (SELECT id, sum(delta) AS d FROM
                           (SELECT src AS id, -amount AS delta FROM %I UNION ALL SELECT dst, amount FROM %I) x
                           GROUP BY id) t USING (id)', 'xfer_' || job, 'acc_' || job, 'xfer_' || job, 'xfer_' || job)
      INTO bad, n;
    polls := polls + 1;
    IF bad > 0 THEN broken := broken + 1; END IF;
    IF NOT n = ANY (states) THEN states := states || n; END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
  RETURN polls || ' ' || broken || ' ' || cardinality(states);
END \$\$" >/dev/null

sql "SELECT eoingest.create_job(name => 'st_src', brokers => '$KAFKA_BROKERS',
       topic => '$pfx.transaction, $pfx.public.accounts, $pfx.public.transfers',
       format => 'json', envelope => 'debezium', transactions => 'source', on_error => 'fail',
       targets => '{\"public.accounts\": \"acc_src\", \"public.transfers\": \"xfer_src\"}',
       batch_size => 7, batch_timeout_ms => 100);
     SELECT eoingest.create_job(name => 'st_ctl', brokers => '$KAFKA_BROKERS',
       topic => '$pfx.public.accounts, $pfx.public.transfers',
       format => 'json', envelope => 'debezium', on_error => 'fail',
       targets => '{\"public.accounts\": \"acc_ctl\", \"public.transfers\": \"xfer_ctl\"}',
       batch_size => 7, batch_timeout_ms => 100);
     SELECT eoingest.start_job('st_src'), eoingest.start_job('st_ctl')" >/dev/null

produce_wave() {
  local w=$1 p
  if [ $((w % 2)) = 0 ]; then eoi-kafka produce -z -K -p 0 "$pfx.transaction" <"$dir/w$w-tx.events"; fi
  for p in 0 1 2 3; do
    [ -f "$dir/w$w-acc$p.events" ] && eoi-kafka produce -z -K -p $p "$pfx.public.accounts" <"$dir/w$w-acc$p.events"
  done
  for p in 0 1; do
    [ -f "$dir/w$w-xfer$p.events" ] && eoi-kafka produce -z -K -p $p "$pfx.public.transfers" <"$dir/w$w-xfer$p.events"
  done
  if [ $((w % 2)) = 1 ]; then eoi-kafka produce -z -K -p 0 "$pfx.transaction" <"$dir/w$w-tx.events"; fi
}

# reader JOB SECS: st_reader in one-second rounds (a round cut short by the
# crash restart that the SIGKILL causes is retried), the rounds summed.
reader() {
  local job=$1 until=$((SECONDS + $2)) polls=0 broken=0 states=0 p b s
  while [ $SECONDS -lt $until ]; do
    if read -r p b s < <(sql "SELECT st_reader('$job', 1)" 2>/dev/null) && [ -n "$s" ]; then
      polls=$((polls + p)) broken=$((broken + b)) states=$((states + s - 1))
    else
      sleep 0.5
    fi
  done
  echo "$polls $broken $states"
}
secs=$(awk -v w=$WAVES -v p=$PAUSE 'BEGIN { printf "%d", w * p * 2 + 6 }')
reader src "$secs" >"$dir/reader_src" &
rs=$!
reader ctl "$secs" >"$dir/reader_ctl" &
rc=$!
killed=no
for ((w = 0; w < WAVES; w++)); do
  produce_wave $w
  if [ $w = $((WAVES / 2)) ]; then
    wait_until 30 "SELECT pid IS NOT NULL FROM eoingest.job_status WHERE name = 'st_src'" >/dev/null || true
    pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'st_src' AND pid IS NOT NULL" || true)
    [ -n "$pid" ] && kill -9 "$pid" && killed=yes
  fi
  sleep $PAUSE
done
wait $rs $rc
is "$killed" yes "the st_src worker was SIGKILLed halfway through the stream"
read -r polls broken states <"$dir/reader_src"
diag "src reader: $polls polls, $broken broke the invariant, $states changes of the transfer count seen within rounds"
is "$broken" 0 "source transactions: no poll of the targets saw part of a source transaction"
check "source transactions: the reader saw the targets move (several states)" test "$states" -ge 3
read -r cpolls cbroken cstates <"$dir/reader_ctl"
diag "ctl reader: $cpolls polls, $cbroken broke the invariant, $cstates states seen"
check "the control (transactions batch): the reader saw parts of source transactions" test "$cbroken" -gt 0

# Both jobs keep up with the stream: 30 s for what is left once the producer stops (a source-transaction job
# that waited for its resumed partitions' next fetch took about 100 s here).
for job in src ctl; do
  check "st_$job catches up within 30 s of the last wave" wait_until 30 "SELECT eoingest.wait_for_catchup('st_$job', '1 s')"
done
want=$(cat "$dir/final")
is "$(sql "SELECT string_agg(format('(%s,%s)', id, balance), ' ' ORDER BY id) FROM acc_src")" "$want" \
  "source transactions: the accounts end as the source left them"
is "$(sql "SELECT (SELECT count(*) FROM xfer_src) || ' ' || (SELECT count(*) FROM xfer_ctl) || ' ' ||
             (SELECT count(*) FROM (SELECT * FROM acc_src EXCEPT SELECT * FROM acc_ctl) x)")" "$NTX $NTX 0" \
  "every transfer in both, and the same accounts"
sql "SELECT eoingest.drop_job('st_src'), eoingest.drop_job('st_ctl')" >/dev/null
done_testing
