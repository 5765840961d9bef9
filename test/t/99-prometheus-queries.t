#!/usr/bin/env bash
# monitoring/postgres_exporter.yaml with the Prometheus community's
# postgres_exporter (Debian's prometheus-postgres-exporter) as a monitoring
# role that has what the file's header says (pg_monitor, USAGE, SELECT):
# every query returns exactly the columns its metrics declare, with valid
# usages, and the exporter's /metrics shows a job's counters, lag and
# state, its counters going on across a worker restart.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 5
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=prom_$$
role=prom_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --format csv >/dev/null
sql "CREATE TABLE prom_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'prom_job', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'prom_t',
            batch_timeout_ms => 100);
     SELECT eoingest.start_job('prom_job');
     CREATE ROLE $role LOGIN IN ROLE pg_monitor;
     GRANT USAGE ON SCHEMA eoingest TO $role;
     GRANT SELECT ON eoingest.job_stats, eoingest.job_status TO $role" >/dev/null
wait_until 60 "SELECT count(*) = 100 FROM prom_t" >/dev/null

# scrape: each query of the file as the monitoring role, printed as the
# exporter names its metrics: <query>_<column>{labels} value.
scrape() {
  python3 - "$EOINGEST_REPO/monitoring/postgres_exporter.yaml" "$role" <<'PY'
import subprocess, sys, yaml
queries = yaml.safe_load(open(sys.argv[1]))
usages = {"LABEL", "COUNTER", "GAUGE", "MAPPEDMETRIC", "DURATION", "DISCARD"}
for name, q in queries.items():
    declared = [list(m.keys())[0] for m in q["metrics"]]
    for m in q["metrics"]:
        (col, spec), = m.items()
        if spec.get("usage") not in usages or not spec.get("description"):
            sys.exit(f"{name}.{col}: bad usage or no description")
    out = subprocess.run(["psql", "-XAq", "-U", sys.argv[2], "-F", "\t", "-P", "footer=off", "-c", q["query"]],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{name}: {out.stderr.strip()}")
    lines = out.stdout.splitlines()
    columns = lines[0].split("\t")
    if sorted(columns) != sorted(declared):
        sys.exit(f"{name}: columns {columns}, metrics declare {declared}")
    kinds = {list(m.keys())[0]: list(m.values())[0]["usage"] for m in q["metrics"]}
    for line in lines[1:]:
        row = dict(zip(columns, line.split("\t")))
        labels = ",".join(f'{c}="{row[c]}"' for c in columns if kinds[c] == "LABEL")
        for c in columns:
            if kinds[c] != "LABEL":
                print(f"{name}_{c}{{{labels}}} {row[c] or 'NaN'}")
PY
}

out=$(scrape 2>&1) && status=0 || status=$?
ok "$status" "every query runs as a pg_monitor role and returns the columns its metrics declare"
[ "$status" -eq 0 ] || diag "$out"

# The exporter, as that role, on a port of its own.
exporter=/usr/bin/prometheus-postgres-exporter
port=29187
DATA_SOURCE_NAME="host=$PGHOST port=$PGPORT user=$role dbname=$PGDATABASE sslmode=disable" \
  "$exporter" --web.listen-address="127.0.0.1:$port" --disable-default-metrics --disable-settings-metrics \
  --extend.query-path="$EOINGEST_REPO/monitoring/postgres_exporter.yaml" >"$EOINGEST_RUN/exporter.log" 2>&1 &
exporter_pid=$!
trap 'kill $exporter_pid 2>/dev/null || true' EXIT
metrics() { curl -s --max-time 10 "http://127.0.0.1:$port/metrics" | grep '^eoingest_' || true; }
# metric{labels} value, whatever other labels the exporter adds (server)
has() { printf '%s\n' "$1" | grep -Eq "^$2\\{([^}]*,)?job=\"prom_job\"(,[^}]*)?\\} $3\$"; }
# the lag is NaN until the worker has recorded the log end (every 5 s)
wait_until 30 "SELECT lag = 0 FROM eoingest.job_stats WHERE job = 'prom_job'" >/dev/null
deadline=$((SECONDS + 30))
until out=$(metrics); has "$out" eoingest_job_messages_total 100 && has "$out" eoingest_job_lag_seconds 0; do
  [ $SECONDS -lt $deadline ] || break
  sleep 1
done
if has "$out" eoingest_job_messages_total 100 && has "$out" eoingest_job_rows_total 100 &&
   has "$out" eoingest_job_lag_seconds 0 && printf '%s\n' "$out" | grep -Eq '^eoingest_job_workers_count\{[^}]*job="prom_job"[^}]*state="running"[^}]*\} 1$'; then
  ok 0 "the exporter's /metrics: the job's counters, lag and state"
else
  ok 1 "the exporter's /metrics: the job's counters, lag and state"; diag "$out"; diag "$(tail -5 "$EOINGEST_RUN/exporter.log")"
fi

pid=$(sql "SELECT pid FROM eoingest.job_status WHERE name = 'prom_job'")
sql "SELECT pg_terminate_backend($pid)" >/dev/null
wait_until 30 "SELECT pid IS NOT NULL AND pid <> $pid FROM eoingest.job_status WHERE name = 'prom_job'" >/dev/null
eoi-kafka produce-seq "$topic" --count 50 --start 100 --format csv >/dev/null
check "the next worker's records arrive" wait_until 60 "SELECT count(*) = 150 FROM prom_t"
check "caught up" wait_until 30 "SELECT lag = 0 FROM eoingest.job_stats WHERE job = 'prom_job'"
out=$(metrics)
if has "$out" eoingest_job_messages_total 150 && has "$out" eoingest_job_batches_total '[0-9]+'; then
  ok 0 "the counter goes on across the worker's restart"
else
  ok 1 "the counter goes on across the worker's restart"; diag "$out"
fi
printf '%s\n' "$out" | grep 'job="prom_job"' | sed 's/^/# /'
kill $exporter_pid 2>/dev/null || true

sql "SELECT eoingest.drop_job('prom_job'); DROP TABLE prom_t; DROP OWNED BY $role; DROP ROLE $role" >/dev/null 2>&1
done_testing
