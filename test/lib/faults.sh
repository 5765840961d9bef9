# shellcheck shell=bash
# Helpers for tests that crash eoingest on purpose (source after tap.sh).

# set_fault POINT [ACTION [SLEEP_MS]]: every eoingest process reaching POINT
# kills itself (SIGKILL; ACTION kill, the default), raises an error (error),
# or sleeps SLEEP_MS there (sleep).
set_fault() {
  sql "ALTER SYSTEM SET eoingest.fault_action = '${2:-kill}'" >/dev/null
  sql "ALTER SYSTEM SET eoingest.fault_sleep_ms = ${3:-5000}" >/dev/null
  sql "ALTER SYSTEM SET eoingest.fault_point = '$1'" >/dev/null
  sql "SELECT pg_reload_conf()" >/dev/null
}

# clear_fault: retried until the server (restarting after the crash) answers.
# The fault point goes first, on its own: while it is set, workers may crash
# the server every few hundred milliseconds, and one statement fits between
# two crashes more easily than four.
clear_fault() {
  local deadline=$((SECONDS + 60))
  until sql "ALTER SYSTEM RESET eoingest.fault_point" >/dev/null 2>&1 &&
        sql "SELECT pg_reload_conf()" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
  until sql "ALTER SYSTEM RESET eoingest.fault_action" >/dev/null 2>&1 &&
        sql "ALTER SYSTEM RESET eoingest.fault_sleep_ms" >/dev/null 2>&1 &&
        sql "SELECT pg_reload_conf()" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

# fault_count POINT: how often POINT fired so far (from the server log).
fault_count() {
  grep -c "fault point \"$1\" reached" "$EOINGEST_RUN/pg.log" || true
}

# wait_fault POINT BEFORE SECONDS: wait until POINT fired more than BEFORE times.
wait_fault() {
  local point=$1 before=$2 deadline=$((SECONDS + $3))
  while [ "$(fault_count "$point")" -le "$before" ]; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

# log_end TOPIC: the sum of the high watermarks of TOPIC's partitions.
log_end() {
  eoi-kafka watermarks "$1" | awk '{n += $3} END {print n}'
}

# stored_sum JOB: the sum of JOB's stored next offsets.
stored_sum() {
  sql "SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = '$1'"
}
