#!/usr/bin/env bash
# The eoingest test command: installs dependencies, builds and installs the
# extension, starts a fresh Kafka broker and PostgreSQL cluster, runs the
# pg_regress suite (make installcheck) and the TAP tests (test/t/*.t), then
# stops the servers. Run as root, from any directory.
#
#   EOINGEST_KEEP=1          leave the servers running afterwards (debugging)
#   EOINGEST_TEST_TIMEOUT=N  seconds allowed for each of installcheck and prove (default 3000)
#   EOINGEST_TAP_TESTS       TAP files to run instead of test/t/*.t (space separated)
#   EOINGEST_SKIP_REGRESS=1  skip make installcheck
set -euo pipefail
TEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$TEST_DIR/env.sh"
cd "$EOINGEST_REPO"

TEST_TIMEOUT=${EOINGEST_TEST_TIMEOUT:-3000}
REGRESS_OUT=$EOINGEST_RUN/regress
failed=0
started=0

step() { echo "== $*"; }

report_failure() {
  echo
  echo "==================== FAILURE DETAILS ===================="
  echo "logs: $EOINGEST_RUN (pg.log, kafka-logs/, regress/)"
  if [ -s "$REGRESS_OUT/regression.diffs" ]; then
    echo "---- $REGRESS_OUT/regression.diffs (first 400 lines) ----"
    head -n 400 "$REGRESS_OUT/regression.diffs"
  fi
  if [ -s "$EOINGEST_RUN/pg.log" ]; then
    echo "---- tail of $EOINGEST_RUN/pg.log ----"
    tail -n 100 "$EOINGEST_RUN/pg.log"
  fi
  if [ -s "$EOINGEST_RUN/kafka-logs/server.log" ]; then
    echo "---- ERROR/WARN lines in $EOINGEST_RUN/kafka-logs/server.log (last 30) ----"
    grep -E '\] (ERROR|WARN) ' "$EOINGEST_RUN/kafka-logs/server.log" | tail -n 30 || true
  fi
  echo "========================================================="
}

cleanup() {
  local rc=$?
  trap - EXIT
  set +e
  [ "$rc" -ne 0 ] && failed=1
  if [ "$failed" -ne 0 ]; then
    report_failure
  fi
  if [ "$started" -eq 1 ]; then
    if [ "${EOINGEST_KEEP:-0}" = 1 ]; then
      echo "EOINGEST_KEEP=1: servers left running (stop with test/pg.sh stop; test/kafka.sh stop)"
      echo "  PGHOST=$PGHOST PGPORT=$PGPORT KAFKA_BROKERS=$KAFKA_BROKERS"
    else
      "$TEST_DIR/pg.sh" stop || "$TEST_DIR/pg.sh" stop-immediate
      "$TEST_DIR/kafka.sh" stop
    fi
  fi
  if [ "$failed" -ne 0 ]; then
    echo "run-all: FAILED"
    exit 1
  fi
  echo "run-all: all passed"
  exit 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step "dependencies"
"$TEST_DIR/deps.sh"

# Fresh runtime state: stop leftovers of an earlier run (e.g. EOINGEST_KEEP=1),
# then drop their data and logs (built tools in $EOINGEST_RUN/bin are kept).
started=1
"$TEST_DIR/kafka.sh" stop
if [ -f "$PGDATA/PG_VERSION" ]; then
  "$TEST_DIR/pg.sh" stop-immediate || true
fi
rm -rf "$PGDATA" "$PGHOST" "$EOINGEST_RUN/pg.log" "$EOINGEST_RUN/kafka" \
  "$EOINGEST_RUN/kafka-logs" "$EOINGEST_RUN/kafka-config" "$REGRESS_OUT"

have_makefile=0
if [ -f Makefile ]; then
  have_makefile=1
  step "build and install the extension"
  if ! make -s PG_CONFIG="$PG_CONFIG" clean all install; then
    echo "run-all: building/installing the extension FAILED"
    exit 1
  fi
else
  echo "run-all: no Makefile in $EOINGEST_REPO yet: skipping build, regression tests and preload"
  export EOINGEST_PRELOAD=
fi

step "test tools"
"$TEST_DIR/tools/build.sh"

step "kafka"
"$TEST_DIR/kafka.sh" fetch
"$TEST_DIR/kafka.sh" start

step "postgresql"
"$TEST_DIR/pg.sh" init
"$TEST_DIR/pg.sh" start

ran_something=0
if [ "$have_makefile" -eq 1 ] && [ "${EOINGEST_SKIP_REGRESS:-0}" != 1 ] && grep -qE '^[[:space:]]*REGRESS[[:space:]]*[:+]?=' Makefile; then
  ran_something=1
  step "regression tests (make installcheck)"
  mkdir -p "$REGRESS_OUT"
  if ! timeout -k 10 "$TEST_TIMEOUT" make -s PG_CONFIG="$PG_CONFIG" installcheck \
      EXTRA_REGRESS_OPTS="--outputdir=$REGRESS_OUT ${EXTRA_REGRESS_OPTS:-}"; then
    echo "run-all: regression tests FAILED (diffs: $REGRESS_OUT/regression.diffs)"
    failed=1
  fi
fi

if [ -n "${EOINGEST_TAP_TESTS:-}" ]; then
  read -r -a tap_tests <<<"$EOINGEST_TAP_TESTS"
else
  shopt -s nullglob
  tap_tests=(test/t/*.t)
  shopt -u nullglob
fi
if [ ${#tap_tests[@]} -gt 0 ]; then
  ran_something=1
  step "TAP tests (prove)"
  if ! timeout -k 10 "$TEST_TIMEOUT" prove -v --timer -e bash "${tap_tests[@]}"; then
    echo "run-all: TAP tests FAILED"
    failed=1
  fi
fi

if [ "$ran_something" -eq 0 ]; then
  echo "run-all: no tests found (no REGRESS in Makefile, no test/t/*.t)"
fi
