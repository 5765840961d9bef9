#!/usr/bin/env bash
# The seed article's consistency table, measured.  For each mode, M records
# with unique sequence numbers (upsert: keyed updates with a known final
# state) are produced over 4 partitions while the worker is SIGKILLed at
# random moments K times, and separately while PostgreSQL is stopped with
# -m immediate; then the lost and duplicated records are counted.  Fault
# point between_commits makes the two-commit modes show their window
# deterministically.
#
#   quick (the test command):  M=20000, K=3 kills, 2 immediate shutdowns
#   long:  EOINGEST_CONSISTENCY=long EOINGEST_TAP_TESTS=test/t/50-consistency.t bash test/run-all.sh
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/faults.sh"

# The producer spreads M records over WAVES waves PAUSE seconds apart, so
# that ingestion is still going on while the K kills happen.
if [ "${EOINGEST_CONSISTENCY:-quick}" = long ]; then
  M=200000 K=10 IMMEDIATE=5 WAVES=50 PAUSE=0.6
else
  M=20000 K=3 IMMEDIATE=2 WAVES=10 PAUSE=0.2
fi
NKEYS=1000
PARTS=4
modes=(exactly_once two_phase upsert at_least_once at_most_once)
plan $((${#modes[@]} * 2 + 2))

sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
# run() executes in a subshell (process substitution): it appends its result here.
rows=$EOINGEST_RUN/consistency.rows
: >"$rows"

# produce_wave MODE TOPIC FIRST COUNT
produce_wave() {
  local mode=$1 topic=$2 first=$3 count=$4 p
  if [ "$mode" = upsert ]; then
    for ((p = 0; p < PARTS; p++)); do
      awk -v a="$first" -v n="$count" -v nk=$NKEYS -v P=$PARTS -v p=$p \
        'BEGIN { for (i = a; i < a + n; i++) { k = i % nk; if (k % P == p) printf "k%d\tk%d,%d\n", k, k, i } }' |
        eoi-kafka produce -K -p "$p" "$topic" >/dev/null
    done
  else
    eoi-kafka produce-seq "$topic" --count "$count" --start "$first" --format csv >/dev/null
  fi
}

worker_pid() {
  sql "SELECT pid FROM eoingest.job_status WHERE name = '$1' AND pid IS NOT NULL ORDER BY worker LIMIT 1" 2>/dev/null || true
}

wait_progress() {
  local job=$1 before
  before=$(sql "SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = '$job'" 2>/dev/null || echo 0)
  wait_until 20 "SELECT coalesce(sum(next_offset), 0) > $before FROM eoingest.offsets WHERE job = '$job'" >/dev/null 2>&1 || true
}

# run MODE SCENARIO: SCENARIO is kill, immediate or fault:POINT.  Appends a
# result line "mode scenario events lost duplicated wrong_keys".
run() {
  local mode=$1 scenario=$2 job topic events=0 i
  job=c_${mode}_${scenario//[:]/_}
  topic=${job}_$$
  eoi-kafka create-topic "$topic" $PARTS >/dev/null
  if [ "$mode" = upsert ]; then
    sql "CREATE TABLE $job (k text PRIMARY KEY, v bigint)" >/dev/null
  else
    sql "CREATE TABLE $job (id text, ts bigint, temperature double precision)" >/dev/null
  fi
  sql "SELECT eoingest.create_job(name => '$job', brokers => '$KAFKA_BROKERS', topic => '$topic',
         target => '$job', format => 'csv', mode => '$mode', parallelism => 2,
         batch_size => 500, batch_timeout_ms => 100, checkpoint_interval_ms => 200,
         offset_commit_interval_ms => 300)" >/dev/null
  sql "SELECT eoingest.start_job('$job')" >/dev/null

  (
    for ((i = 0; i < WAVES; i++)); do
      produce_wave "$mode" "$topic" $((i * M / WAVES)) $((M / WAVES))
      sleep "$PAUSE"
    done
  ) &
  local producer=$!

  case $scenario in
    kill)
      for ((i = 0; i < K; i++)); do
        wait_progress "$job"
        sleep "0.$((RANDOM % 300))"
        local pid
        wait_until 60 "SELECT count(*) > 0 FROM eoingest.job_status WHERE name = '$job' AND pid IS NOT NULL" >/dev/null 2>&1 || true
        pid=$(worker_pid "$job")
        if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
          events=$((events + 1))
          wait_until 60 "SELECT count(*) > 0 FROM eoingest.job_status WHERE name = '$job' AND pid IS NOT NULL AND pid <> $pid" >/dev/null 2>&1 || true
        fi
      done ;;
    immediate)
      for ((i = 0; i < IMMEDIATE; i++)); do
        wait_progress "$job"
        sleep "0.$((RANDOM % 300))"
        "$EOINGEST_TEST_DIR/pg.sh" stop-immediate >/dev/null && "$EOINGEST_TEST_DIR/pg.sh" start >/dev/null &&
          events=$((events + 1))
      done ;;
    fault:*)
      local point=${scenario#fault:} before
      before=$(fault_count "$point")
      set_fault "$point"
      wait_fault "$point" "$before" 60 || true
      clear_fault
      events=$(($(fault_count "$point") - before)) ;;
  esac
  wait "$producer"

  wait_until 180 "SELECT coalesce(sum(next_offset), 0) = $(log_end "$topic") FROM eoingest.offsets WHERE job = '$job'" >/dev/null || true
  local lost=- dup=- wrong=-
  if [ "$mode" = upsert ]; then
    wrong=$(sql "WITH want AS (SELECT 'k' || (i % $NKEYS) AS k, max(i) AS v FROM generate_series(0, $M - 1) i GROUP BY 1)
                 SELECT count(*) FROM want FULL JOIN $job got USING (k) WHERE got.v IS DISTINCT FROM want.v")
  else
    # Rows of the last batch may commit just after its offsets (at_most_once).
    wait_until 5 "SELECT count(DISTINCT ts) >= $M FROM $job" >/dev/null 2>&1 || true
    read -r lost dup < <(sql "SELECT $M - count(DISTINCT ts), count(*) - count(DISTINCT ts) FROM $job" | tr '|' ' ')
  fi
  sql "SELECT eoingest.drop_job('$job')" >/dev/null
  sql "DROP TABLE $job" >/dev/null
  echo "$mode $scenario $events $lost $dup $wrong" | tee -a "$rows"
}

guarantee_holds() {
  local mode=$1 lost=$2 dup=$3 wrong=$4
  case $mode in
    exactly_once | two_phase) [ "$lost" = 0 ] && [ "$dup" = 0 ] ;;
    upsert) [ "$wrong" = 0 ] ;;
    at_least_once) [ "$lost" = 0 ] ;;
    at_most_once) [ "$dup" = 0 ] ;;
  esac
}

for mode in "${modes[@]}"; do
  for scenario in kill immediate; do
    read -r _ _ events lost dup wrong < <(run "$mode" "$scenario")
    # the crashes happened, all of them, and the guarantee held through them
    want=$([ "$scenario" = kill ] && echo "$K" || echo "$IMMEDIATE")
    ok $([ "$events" = "$want" ] && guarantee_holds "$mode" "$lost" "$dup" "$wrong" && echo 0 || echo 1) \
      "$mode under $events of $want x $scenario: lost $lost, duplicated $dup, wrong keys $wrong"
  done
done

read -r _ _ events lost dup _ < <(run at_least_once fault:between_commits)
ok $([ "$lost" = 0 ] && [ "$dup" -gt 0 ] && echo 0 || echo 1) \
  "at_least_once killed between its commits repeats records (duplicated $dup, lost $lost)"
read -r _ _ events lost dup _ < <(run at_most_once fault:between_commits)
ok $([ "$dup" = 0 ] && [ "$lost" -gt 0 ] && echo 0 || echo 1) \
  "at_most_once killed between its commits loses records (lost $lost, duplicated $dup)"

{
  echo "| mode | what happened | times | lost | duplicated | keys wrong |"
  echo "|---|---|---|---|---|---|"
  while read -r mode scenario events lost dup wrong; do
    case $scenario in
      kill) what="worker SIGKILLed" ;;
      immediate) what="PostgreSQL stopped -m immediate" ;;
      fault:*) what="killed at fault point ${scenario#fault:}" ;;
    esac
    echo "| $mode | $what | $events | $lost | $dup | $wrong |"
  done <"$rows"
} | tee "$EOINGEST_RUN/consistency-table.md" | while IFS= read -r line; do diag "$line"; done

done_testing
