# shellcheck shell=bash
# Minimal TAP helpers for the bash tests in test/t/*.t (run by prove).
#
#   #!/usr/bin/env bash
#   set -euo pipefail
#   . "$(dirname "$0")/../lib/tap.sh"
#   plan 3
#   sql "create extension if not exists eoingest"
#   is "$(sql 'select 1 + 1')" 2 "arithmetic works"
#   check "rows arrive" wait_until 30 "select count(*) = 100 from t"
#   "$EOINGEST_TEST_DIR/pg.sh" stop-immediate; ok $? "crashed pg"   # (without set -e)
#   done_testing
#
# Sourcing this also sources test/env.sh (PGHOST, PGPORT, KAFKA_BROKERS, PATH
# with eoi-kafka and the PostgreSQL binaries, EOINGEST_TEST_DIR, ...).

. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/env.sh"

TAP_PLANNED=
TAP_COUNT=0
TAP_FAILED=0

# plan N: announce the number of tests.
plan() {
  TAP_PLANNED=$1
  echo "1..$1"
}

# skip_all REASON: skip the whole file (call before plan).
skip_all() {
  echo "1..0 # SKIP $*"
  exit 0
}

# diag MSG...: a diagnostic line (to stderr, so prove shows it).
diag() {
  local arg line
  for arg in "$@"; do
    while IFS= read -r line; do
      echo "# $line" >&2
    done <<<"$arg"
  done
}

# Where the test file called into this library ("file line N").
_tap_where() {
  local i
  for ((i = 1; i < ${#BASH_SOURCE[@]}; i++)); do
    if [ "${BASH_SOURCE[$i]}" != "${BASH_SOURCE[0]}" ]; then
      echo "${BASH_SOURCE[$i]} line ${BASH_LINENO[$((i - 1))]}"
      return
    fi
  done
}

# ok STATUS NAME: passes if STATUS (an exit status) is 0.
ok() {
  local status=$1
  shift
  TAP_COUNT=$((TAP_COUNT + 1))
  if [ "$status" = 0 ]; then
    echo "ok $TAP_COUNT - $*"
    return 0
  fi
  TAP_FAILED=$((TAP_FAILED + 1))
  echo "not ok $TAP_COUNT - $*"
  diag "  Failed test '$*' (status $status) at $(_tap_where)"
  return 0
}

# check NAME CMD [ARGS...]: runs CMD, passes if it exits 0 (safe under set -e).
check() {
  local name=$1 status=0
  shift
  "$@" || status=$?
  ok "$status" "$name"
}

# is GOT WANT NAME: passes if the two strings are equal.
is() {
  local got=$1 want=$2
  shift 2
  if [ "$got" == "$want" ]; then
    ok 0 "$*"
  else
    ok 1 "$*"
    diag "         got: '$got'" "    expected: '$want'"
  fi
}

# sql QUERY [PSQL ARGS...]: runs QUERY (or stdin if QUERY is '-'), prints
# unaligned tuples-only output; fails (non-zero) on any SQL error.
sql() {
  local q=$1
  shift
  if [ "$q" = - ]; then
    psql -XAtq -v ON_ERROR_STOP=1 "$@" -f -
  else
    psql -XAtq -v ON_ERROR_STOP=1 "$@" -c "$q"
  fi
}

# wait_until SECONDS QUERY: polls QUERY every 0.2 s until it prints 't'.
# Connection and SQL errors are retried (the server may be restarting).
# Returns 1 (with a diagnostic showing the last output) on timeout.
wait_until() {
  local secs=$1 q=$2 out=
  local deadline=$((SECONDS + secs))
  while :; do
    out=$(PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-5} psql -XAtq -c "$q" 2>&1) || true
    [ "$out" = t ] && return 0
    if [ $SECONDS -ge $deadline ]; then
      diag "wait_until: no 't' after ${secs}s from: $q" "last output: $out"
      return 1
    fi
    sleep 0.2
  done
}

# done_testing: prints the plan if none was given; exits non-zero on failure.
done_testing() {
  if [ -z "$TAP_PLANNED" ]; then
    echo "1..$TAP_COUNT"
  elif [ "$TAP_PLANNED" != "$TAP_COUNT" ]; then
    diag "planned $TAP_PLANNED tests but ran $TAP_COUNT"
    exit 255
  fi
  if [ "$TAP_FAILED" -ne 0 ]; then
    diag "failed $TAP_FAILED/$TAP_COUNT tests"
    exit 1
  fi
  exit 0
}
