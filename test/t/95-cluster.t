#!/usr/bin/env bash
# Long mode (EOINGEST_LONG=1): a 3-broker KRaft cluster (test/cluster.sh;
# replication factor 3, min.insync.replicas 2) losing brokers while a
# transactional Java producer writes over 8 partitions (every 7th transaction
# aborted) and two jobs ingest: exactly_once and two_phase, 2 workers each.
# Disruptions, each during ingestion and each followed by `verify`
# (test/lib/cluster.sh): the leader of the jobs' partitions SIGKILLed three
# times, a controlled shutdown, a rolling restart of all three, the active
# controller SIGKILLed.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
[ "${EOINGEST_LONG:-0}" = 1 ] || skip_all "long test: set EOINGEST_LONG=1 (test/README.md)"
. "$EOINGEST_TEST_DIR/lib/cluster.sh"

t_start=$SECONDS
cluster_setup
check "the producer writes" wait_progress 2000 120
check "both jobs ingest" wait_rows 1000 120
verify "before any failure"

# during DISRUPTION...: the producer and the jobs carry on while it lasts.
during() {
  check "$1: the producer carries on" wait_progress 3000 120
  check "$1: both jobs carry on" wait_rows 2000 "$CL_CATCHUP"
}

for round in 1 2 3; do
  p=$(( (round - 1) % 8 ))
  leader=$(cluster leader "$CL_TOPIC" "$p")
  t0=$SECONDS
  check "kill $round: SIGKILL node $leader, the leader of partition $p" cluster kill-node "$leader"
  during "kill $round"
  check "kill $round: node $leader back" cluster start-node "$leader"
  check "kill $round: all partitions in sync again" cluster wait-isr "$CL_TOPIC" 180
  verify "kill $round (leader $leader)"
  diag "kill $round: $((SECONDS - t0)) s"
done

leader=$(cluster leader "$CL_TOPIC" 3)
t0=$SECONDS
check "controlled shutdown of node $leader (leader of partition 3)" cluster stop-node "$leader"
during "controlled shutdown"
check "controlled shutdown: node $leader back" cluster start-node "$leader"
check "controlled shutdown: in sync again" cluster wait-isr "$CL_TOPIC" 180
verify "controlled shutdown (node $leader)"
diag "controlled shutdown: $((SECONDS - t0)) s"

t0=$SECONDS
for n in 1 2 3; do
  check "rolling restart: node $n stopped" cluster stop-node "$n"
  check "rolling restart: node $n started" cluster start-node "$n"
  check "rolling restart: in sync after node $n" cluster wait-isr "$CL_TOPIC" 180
  check "rolling restart: the producer carries on after node $n" wait_progress 500 120
done
verify "rolling restart"
diag "rolling restart: $((SECONDS - t0)) s"

controller=$(cluster controller)
t0=$SECONDS
check "SIGKILL the active controller, node $controller" cluster kill-node "$controller"
during "controller kill"
check "controller kill: a new controller is elected" \
  bash -c "c=\$(bash '$EOINGEST_TEST_DIR/cluster.sh' controller) && [ \"\$c\" != '$controller' ] && [ \"\$c\" -ge 1 ]"
check "controller kill: node $controller back" cluster start-node "$controller"
check "controller kill: in sync again" cluster wait-isr "$CL_TOPIC" 180
verify "controller kill (node $controller)"
diag "controller kill: $((SECONDS - t0)) s"

diag "95-cluster: $((SECONDS - t_start)) s in all, Kafka ${CLUSTER_KAFKA_VERSION:-$KAFKA_VERSION}"
done_testing
