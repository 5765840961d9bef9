# shellcheck shell=bash
# Helpers for the long tests against the 3-broker cluster (test/cluster.sh):
# test/t/95-cluster.t and 96-network.t.  Source after tap.sh.
#
#   cluster_setup [--proxy]     start the cluster (and proxies), a topic of 8
#                               partitions (RF 3, min.insync.replicas 2), the
#                               transactional producer, and two jobs:
#                               cl_eo (exactly_once, parallelism 2) and
#                               cl_tp (two_phase, parallelism 2)
#   wait_progress N SECS        until the producer has written N more records
#   wait_rows N SECS            until both jobs have stored N more rows
#   verify LABEL                pause the producer after a commit and assert,
#                               for both jobs: every committed record exactly
#                               once, no aborted record, offsets at the log
#                               end, lag back to 0, no job failed; then resume

cluster() { bash "$EOINGEST_TEST_DIR/cluster.sh" "$@"; }

CL_TOPIC=cl_$$
CL_PDIR=$EOINGEST_RUN/cluster/producer-$$
CL_JOBS=(cl_eo cl_tp)
# How long a check may wait for the jobs to catch up after a disruption.
CL_CATCHUP=${CL_CATCHUP:-180}

cluster_teardown() {
  set +e
  touch "$CL_PDIR/stop" 2>/dev/null
  if [ -n "${CL_PRODUCER:-}" ]; then
    local deadline=$((SECONDS + 30))
    while kill -0 "$CL_PRODUCER" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill "$CL_PRODUCER" 2>/dev/null
  fi
  for j in "${CL_JOBS[@]}"; do sql "SELECT eoingest.drop_job('$j')" >/dev/null 2>&1; done
  cluster stop
}

cluster_setup() {
  trap cluster_teardown EXIT
  cluster reset # a fresh cluster, formatted by this Kafka version
  cluster start "$@" || { diag "the cluster did not start"; exit 1; }
  CL_BOOT=$(cluster client-bootstrap)
  CL_IBOOT=$(cluster internal-bootstrap)
  cluster create-topic "$CL_TOPIC" 8
  cluster wait-isr "$CL_TOPIC" 60
  mkdir -p "$CL_PDIR"
  rm -f "$CL_PDIR"/{stop,pause,paused,progress}
  cluster tool produce "$CL_IBOOT" "$CL_TOPIC" "$CL_PDIR" --txn-size 100 --interval-ms 50 --abort-every 7 \
    >"$CL_PDIR/producer.log" 2>&1 &
  CL_PRODUCER=$!
  sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
  local j mode
  for j in "${CL_JOBS[@]}"; do
    mode=exactly_once
    [ "$j" = cl_tp ] && mode=two_phase
    sql "DROP TABLE IF EXISTS $j" >/dev/null 2>&1
    sql "CREATE TABLE $j (id text, ts bigint, temperature double precision)" >/dev/null
    sql "SELECT eoingest.create_job(name => '$j', brokers => '$CL_BOOT', topic => '$CL_TOPIC', target => '$j',
           format => 'csv', mode => '$mode', parallelism => 2, batch_size => 5000, batch_timeout_ms => 500)" >/dev/null
    sql "SELECT eoingest.start_job('$j')" >/dev/null
  done
}

producer_seq() {
  local line
  line=$(cat "$CL_PDIR/progress" 2>/dev/null) || { echo 0; return; }
  set -- $line
  echo "${2:-0}"
}

wait_progress() {
  local want=$(($(producer_seq) + $1)) deadline=$((SECONDS + $2))
  while [ "$(producer_seq)" -lt "$want" ]; do
    if [ $SECONDS -ge $deadline ]; then
      diag "producer at $(producer_seq), wanted $want: $(tail -n 3 "$CL_PDIR/producer.log")"
      return 1
    fi
    kill -0 "$CL_PRODUCER" 2>/dev/null || { diag "the producer died: $(tail -n 5 "$CL_PDIR/producer.log")"; return 1; }
    sleep 0.5
  done
}

rows() { sql "SELECT (SELECT count(*) FROM cl_eo) || ' ' || (SELECT count(*) FROM cl_tp)"; }

wait_rows() {
  local r
  read -r e t <<<"$(rows)"
  wait_until "$2" "SELECT (SELECT count(*) FROM cl_eo) >= $((e + $1)) AND (SELECT count(*) FROM cl_tp) >= $((t + $1))"
}

# What a read_committed consumer sees: the sequence numbers, sorted.
committed_seqs() {
  timeout 120 kcat -C -b "$CL_IBOOT" -t "$CL_TOPIC" -X isolation.level=read_committed -e -q -f '%s\n' |
    awk -F, '$3 != 1 { bad++ } { print $2 } END { if (bad) print "ABORTED-FLAG-SEEN" > "/dev/stderr" }' | sort -n
}

# SQL VALUES of the topic's partitions and high watermarks.
watermark_values() {
  eoi-kafka -b "$CL_IBOOT" watermarks "$CL_TOPIC" | awk '{ printf "%s(%d,%d)", (NR > 1 ? "," : ""), $1, $3 }'
}

verify() {
  local label=$1 j expected got marks
  : >"$CL_PDIR/pause"
  local deadline=$((SECONDS + 120))
  until [ -f "$CL_PDIR/paused" ]; do
    if [ $SECONDS -ge $deadline ]; then diag "the producer did not pause: $(tail -n 3 "$CL_PDIR/producer.log")"; break; fi
    sleep 0.2
  done
  committed_seqs >"$CL_PDIR/committed" 2>"$CL_PDIR/committed.err"
  expected=$(wc -l <"$CL_PDIR/committed")
  check "$label: the read_committed consumer sees only committed transactions" \
    test ! -s "$CL_PDIR/committed.err"
  marks=$(watermark_values)
  for j in "${CL_JOBS[@]}"; do
    # A partition ends in a commit marker; the worker stores the position
    # past it, so the offsets reach the high watermark itself.
    check "$label: $j has caught up: offsets at the log end (the high watermark, past the commit marker) on all 8 partitions" \
      wait_until "$CL_CATCHUP" "SELECT count(*) = 8 AND bool_and(o.next_offset = w.high)
        FROM (VALUES $marks) w(p, high) JOIN eoingest.offsets o ON o.job = '$j' AND o.partition = w.p"
    got=$(sql "SELECT ts FROM $j ORDER BY ts" | diff - "$CL_PDIR/committed" | grep -c '^[<>]' || true)
    is "$got" 0 "$label: $j holds every committed record exactly once ($expected records; lines differing from the consumer's)"
    is "$(sql "SELECT count(*) - count(DISTINCT ts) FROM $j")" 0 "$label: $j: no record twice"
    is "$(sql "SELECT count(*) FROM $j WHERE temperature <> 1")" 0 "$label: $j: no record of an aborted transaction"
    check "$label: $j: lag back to 0" \
      wait_until 30 "SELECT count(*) = 8 AND max(lag) = 0 AND min(measured_at) > now() - interval '30 s'
        FROM eoingest.lag WHERE job = '$j'"
    check "$label: $j: not failed, every worker running" \
      wait_until 30 "SELECT count(*) = 2 AND bool_and(state = 'running') FROM eoingest.job_status WHERE name = '$j'"
  done
  if [ "$(sql "SELECT count(*) FROM cl_eo")" != "$expected" ]; then
    sql "SELECT ts FROM cl_eo ORDER BY ts" | diff - "$CL_PDIR/committed" | head -n 10 | while read -r l; do diag "$l"; done
  fi
  diag "$label: $expected committed records; producer: $(cat "$CL_PDIR/progress" 2>/dev/null)"
  rm -f "$CL_PDIR/pause"
}
