#!/usr/bin/env bash
# Long mode (EOINGEST_LONG=1): a network between the jobs and the brokers.
# Toxiproxy (test/toxiproxy.sh) in front of each node of the 3-broker cluster,
# the nodes advertising the proxies, so that all the jobs' traffic passes
# them (replication and the test's producer do not).  Under each toxic the
# producer keeps writing and both jobs (exactly_once and two_phase,
# 2 workers each) keep ingesting; afterwards `verify` (test/lib/cluster.sh)
# asserts exactness, offsets and lag at the log end, and no job failed, the
# job having recovered by itself; job_status says what is happening meanwhile.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
[ "${EOINGEST_LONG:-0}" = 1 ] || skip_all "long test: set EOINGEST_LONG=1 (test/README.md)"
. "$EOINGEST_TEST_DIR/lib/cluster.sh"

toxi() { bash "$EOINGEST_TEST_DIR/toxiproxy.sh" "$@"; }
# What job_status shows: one line per job and worker.
show_status() {
  sql "SELECT name || '/' || worker || ': ' || state || coalesce(' - ' || left(last_error, 160), '')
       FROM eoingest.job_status WHERE name IN ('cl_eo', 'cl_tp') ORDER BY name, worker"
}

t_start=$SECONDS
cluster_setup --proxy
is "$(sql "SELECT string_agg(DISTINCT brokers, ',') FROM eoingest.job_definitions WHERE name IN ('cl_eo', 'cl_tp')")" \
  "$CL_BOOT" "the jobs connect through the proxies"
check "the producer writes" wait_progress 2000 120
check "both jobs ingest through the proxies" wait_rows 1000 120
verify "no toxic"

# under NAME SECONDS: ingestion goes on with the toxic in place for SECONDS.
under() {
  local label=$1 secs=$2 t0=$SECONDS
  check "$label: both jobs ingest meanwhile" wait_rows 200 "$((secs + 60))"
  while [ $((SECONDS - t0)) -lt "$secs" ]; do sleep 1; done
  diag "$label, after ${secs}s:" "$(show_status)"
}

toxi add lat latency downstream latency=5
under "latency 5 ms" 20
toxi remove lat
verify "latency 5 ms"

toxi add lat latency downstream latency=50 jitter=5
under "latency 50 ms" 20
toxi remove lat
verify "latency 50 ms"

toxi add bw bandwidth downstream rate=10240
under "bandwidth 10 MB/s" 20
toxi remove bw
verify "bandwidth 10 MB/s"

# reset_peer mid-fetch.  Toxiproxy's reset_peer passes no data: on a link's
# next bytes it waits `timeout` ms and resets the connection (RST).  So it is
# put on for 2 s at a time while the jobs' fetches are in flight (a caught-up
# fetch waits at the broker for fetch.wait.max.ms), cutting them off, five
# times, and each time the jobs must ingest again once it is off.
for cut in 1 2 3 4 5; do
  toxi add rst reset_peer downstream timeout=0
  sleep 2 # the fault's own duration, not a wait for a condition
  [ "$cut" = 1 ] && diag "reset_peer on for 2 s:" "$(show_status)"
  toxi remove rst
  check "reset_peer, cut $cut: both jobs ingest again" wait_rows 200 180
done
verify "reset_peer mid-fetch, 5 times"

toxi add slice slicer downstream average_size=64 size_variation=48 delay=50
under "slicer (64-byte pieces)" 15
toxi remove slice
verify "slicer"

# slow_close holds each close for 3 s; a node's controlled restart closes
# the jobs' connections to it.
toxi add sc slow_close downstream delay=3000
check "slow_close: node 2 restarted meanwhile" bash -c "bash '$EOINGEST_TEST_DIR/cluster.sh' stop-node 2 && bash '$EOINGEST_TEST_DIR/cluster.sh' start-node 2"
under "slow_close 3 s" 10
toxi remove sc
cluster wait-isr "$CL_TOPIC" 180
verify "slow_close"

# A black hole for 30 s: the proxies accept connections and pass nothing,
# neither way, and close nothing.
before=$(rows)
t0=$SECONDS
toxi add bh_down timeout downstream timeout=0
toxi add bh_up timeout upstream timeout=0
check "black hole: job_status says what is happening (an error within 30 s)" \
  wait_until 30 "SELECT bool_or(last_error IS NOT NULL) FROM eoingest.job_status WHERE name IN ('cl_eo', 'cl_tp')"
diag "black hole, after $((SECONDS - t0)) s:" "$(show_status)"
while [ $((SECONDS - t0)) -lt 30 ]; do sleep 1; done
diag "black hole, after 30 s:" "$(show_status)"
is "$(sql "SELECT count(*) FROM eoingest.job_status WHERE name IN ('cl_eo', 'cl_tp') AND state = 'failed'")" 0 \
  "black hole: no job failed during it"
toxi remove bh_down
toxi remove bh_up
t1=$SECONDS
check "black hole: both jobs resume by themselves" wait_rows 500 180
diag "black hole: ingesting again $((SECONDS - t1)) s after it ended (rows before: $before, now: $(rows))"
verify "30 s black hole"
check "black hole: last_error cleared once the jobs commit again" \
  wait_until 60 "SELECT bool_and(last_error IS NULL) FROM eoingest.job_status WHERE name IN ('cl_eo', 'cl_tp')"

diag "96-network: $((SECONDS - t_start)) s in all, Kafka ${CLUSTER_KAFKA_VERSION:-$KAFKA_VERSION}"
done_testing
