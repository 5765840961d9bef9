#!/usr/bin/env bash
# Ingestion throughput with a network between the worker and the brokers:
# the 3-broker test cluster behind Toxiproxy, an exactly_once job
# with default settings, loopback against 0, 5 and 50 ms of added latency.
#
#   bash bench/network.sh [--records N] [--runs K]
#
# Runs test/t/97-network-bench.t in the test bed (test/run-all.sh: installs the
# extension, starts PostgreSQL; the cluster and the proxies are the test's own,
# on ports 21091-21400), then copies its figures to bench/results/network.tsv.
# On a shared machine, take the test bed's lock:
#   flock /tmp/eoingest-test.lock bash bench/network.sh
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
while [ $# -gt 0 ]; do
  case $1 in
    --records) export EOINGEST_NETBENCH_RECORDS=$2; shift 2 ;;
    --runs) export EOINGEST_NETBENCH_RUNS=$2; shift 2 ;;
    *) sed -n '2,13p' "$0" >&2; exit 2 ;;
  esac
done
. "$REPO/test/env.sh"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
EOINGEST_LONG=1 EOINGEST_SKIP_REGRESS=1 EOINGEST_TAP_TESTS=test/t/97-network-bench.t \
  bash "$REPO/test/run-all.sh"
mkdir -p "$BENCH_DIR/results"
cp "$EOINGEST_RUN/netbench.tsv" "$BENCH_DIR/results/network.tsv"
echo "figures: bench/results/network.tsv"
