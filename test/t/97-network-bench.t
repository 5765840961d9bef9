#!/usr/bin/env bash
# Long mode (EOINGEST_LONG=1), run by bench/network.sh: ingestion throughput
# with a network between the worker and the brokers.  The 3-broker cluster
# behind Toxiproxy (test/cluster.sh start --proxy); one topic of 8 partitions,
# preloaded with EOINGEST_NETBENCH_RECORDS (default 1,000,000) CSV records of
# about 30 bytes; an exactly_once job with default settings (batch_size 10000)
# and 1 or 2 workers reads it all, timed from start_job to the last row.
# Paths: "loopback" (the nodes' INTERNAL listeners, no proxy), "proxy 0 ms"
# (through Toxiproxy, no toxic), then a latency toxic of 5 and 50 ms on the
# broker-to-worker direction (each round trip 5 / 50 ms longer).
# Figures go to the TAP output and $EOINGEST_RUN/netbench.tsv.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
[ "${EOINGEST_LONG:-0}" = 1 ] || skip_all "long test: set EOINGEST_LONG=1 (bench/network.sh)"

cluster() { bash "$EOINGEST_TEST_DIR/cluster.sh" "$@"; }
toxi() { bash "$EOINGEST_TEST_DIR/toxiproxy.sh" "$@"; }
trap 'cluster stop' EXIT
records=${EOINGEST_NETBENCH_RECORDS:-1000000}
runs=${EOINGEST_NETBENCH_RUNS:-3}
out=$EOINGEST_RUN/netbench.tsv

cluster reset
cluster start --proxy
boot=$(cluster client-bootstrap)
iboot=$(cluster internal-bootstrap)
topic=nb_$$
cluster create-topic "$topic" 8
cluster wait-isr "$topic" 60
eoi-kafka -b "$iboot" produce-seq "$topic" --count "$records" --format csv >/dev/null
is "$(eoi-kafka -b "$iboot" watermarks "$topic" | awk '{ s += $3 - $2 } END { print s }')" "$records" \
  "$records records preloaded"
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# one_run BROKERS PARALLELISM: seconds to ingest the topic, or nothing.
one_run() {
  local s e
  sql "DROP TABLE IF EXISTS nb" >/dev/null 2>&1
  sql "CREATE TABLE nb (id text, ts bigint, temperature double precision)" >/dev/null
  sql "SELECT eoingest.create_job(name => 'nb', brokers => '$1', topic => '$topic', target => 'nb',
         mode => 'exactly_once', parallelism => $2)" >/dev/null
  s=$(date +%s.%N)
  sql "SELECT eoingest.start_job('nb')" >/dev/null
  if wait_until 600 "SELECT coalesce(sum(next_offset), 0) >= $records FROM eoingest.offsets WHERE job = 'nb'" >/dev/null; then
    e=$(date +%s.%N)
    [ "$(sql "SELECT count(DISTINCT ts) FROM nb")" = "$records" ] && awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f\n", e - s }'
  fi
  sql "SELECT eoingest.drop_job('nb')" >/dev/null 2>&1
}

printf 'path\tparallelism\trun\tseconds\trows_per_s\n' >"$out"
declare -A median
for path in loopback "proxy 0 ms" "latency 5 ms" "latency 50 ms"; do
  toxi clear
  brokers=$boot
  case $path in
    loopback) brokers=$iboot ;;
    "latency 5 ms") toxi add lat latency downstream latency=5 ;;
    "latency 50 ms") toxi add lat latency downstream latency=50 ;;
  esac
  for par in 1 2; do
    times=()
    for run in $(seq 1 "$runs"); do
      t=$(one_run "$brokers" "$par")
      [ -n "$t" ] || t=NaN
      times+=("$t")
      printf '%s\t%s\t%s\t%s\t%s\n' "$path" "$par" "$run" "$t" \
        "$(awk -v t="$t" -v n="$records" 'BEGIN { if (t + 0 > 0) printf "%d", n / t; else print "NaN" }')" >>"$out"
    done
    m=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    median["$path/$par"]=$m
    check "$path, parallelism $par: exact in every run (${times[*]} s)" bash -c "! grep -q NaN <<<'${times[*]}'"
    diag "$path, parallelism $par: median $m s, $(awk -v t="$m" -v n="$records" 'BEGIN { printf "%d", n / t }') rows/s"
  done
done
toxi clear
for par in 1 2; do
  for path in "proxy 0 ms" "latency 5 ms" "latency 50 ms"; do
    diag "$path / loopback, parallelism $par: $(awk -v a="${median["$path/$par"]}" -v b="${median["loopback/$par"]}" 'BEGIN { printf "%.2f", b / a }')x"
  done
done
diag "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); Kafka ${CLUSTER_KAFKA_VERSION:-$KAFKA_VERSION}; figures in $out"
done_testing
