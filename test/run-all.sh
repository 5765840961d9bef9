#!/usr/bin/env bash
# The eoingest test command: installs dependencies, then runs one pass per
# tested pair of Kafka broker and librdkafka. A pass builds and installs the
# extension against its librdkafka, starts a fresh Kafka broker of its version
# and a PostgreSQL cluster, runs the pg_regress suite (make installcheck) and
# TAP tests (test/t/*.t), then stops the servers. Run as root, from any
# directory.
#
#   pass     broker        librdkafka                         tests
#   current  Kafka 4.4.0   2.14.2 (test/rdkafka.sh, cached)   pg_regress + every TAP test
#   compat   Kafka 3.9.1   Debian 12's 2.0.2                  pg_regress + 20-crash, 30-two-phase,
#                                                               46-transaction-markers, 60-faults,
#                                                               70-security, 71-security-tenant, 90-failover
#
#   EOINGEST_PASSES          passes to run, in order (default: "current compat";
#                            "current" alone when EOINGEST_TAP_TESTS is set)
#   EOINGEST_KEEP=1          leave the last pass's servers running afterwards (debugging)
#   EOINGEST_TEST_TIMEOUT=N  seconds allowed for each of installcheck and prove (default 3000)
#   EOINGEST_TAP_TESTS       TAP files to run instead of each pass's own (space separated)
#   EOINGEST_SKIP_REGRESS=1  skip make installcheck
set -euo pipefail
TEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# TAP tests of the compatibility pass: what depends most on the broker's and
# the client's versions (crashes, two_phase recovery, transaction markers,
# faults of the broker and the network, failover), and the security tests.
COMPAT_TAP_TESTS="test/t/20-crash.t test/t/30-two-phase.t test/t/46-transaction-markers.t test/t/60-faults.t"
COMPAT_TAP_TESTS+=" test/t/70-security.t test/t/71-security-tenant.t test/t/90-failover.t"

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# run_passes: the dispatcher. Each pass is this script again with --pass and
# its pair in the environment, so that env.sh derives everything from it.
run_passes() {
  . "$TEST_DIR/env.sh"
  local passes=${EOINGEST_PASSES:-}
  if [ -z "$passes" ]; then
    if [ -n "${EOINGEST_TAP_TESTS:-}" ]; then passes=current; else passes="current compat"; fi
  fi
  local p
  for p in $passes; do
    case "$p" in current | compat) ;; *) eoi_die "unknown pass '$p' in EOINGEST_PASSES (current, compat)" ;; esac
  done

  echo "== dependencies"
  "$TEST_DIR/deps.sh"

  # The current librdkafka takes minutes to build the first time: in the
  # background, at low priority, while the Kafka jars are fetched.
  local build_pid= build_log=$EOINGEST_CACHE/librdkafka-build.log
  if [[ " $passes " == *" current "* ]] && ! "$TEST_DIR/rdkafka.sh" status >/dev/null; then
    echo "== building librdkafka $RDKAFKA_CURRENT_VERSION in the background (log: $build_log)"
    mkdir -p "$EOINGEST_CACHE"
    "$TEST_DIR/rdkafka.sh" build >"$build_log" 2>&1 &
    build_pid=$!
  fi
  echo "== kafka jars"
  for p in $passes; do
    KAFKA_VERSION=$(pass_kafka "$p") "$TEST_DIR/kafka.sh" fetch
  done
  if [ -n "$build_pid" ]; then
    echo "== waiting for the librdkafka build"
    if ! wait "$build_pid"; then
      tail -n 40 "$build_log" >&2
      eoi_die "building librdkafka $RDKAFKA_CURRENT_VERSION failed"
    fi
  fi

  local -a summary=()
  local failed=0 last=${passes##* } t0 rc keep
  for p in $passes; do
    keep=0
    [ "$p" = "$last" ] && keep=${EOINGEST_KEEP:-0}
    echo
    echo "======== pass $p: Kafka $(pass_kafka "$p"), librdkafka $(pass_rdkafka_version "$p") ========"
    t0=$SECONDS
    rc=0
    env KAFKA_VERSION="$(pass_kafka "$p")" RDKAFKA_PREFIX="$(pass_rdkafka_prefix "$p")" \
      EOINGEST_KEEP="$keep" EOINGEST_TAP_TESTS="$(pass_tap_tests "$p")" \
      EOINGEST_PASS="$p" bash "$TEST_DIR/run-all.sh" --pass || rc=$?
    [ "$rc" -eq 130 ] && exit 130
    summary+=("pass $p (Kafka $(pass_kafka "$p"), librdkafka $(pass_rdkafka_version "$p")): $([ "$rc" -eq 0 ] && echo passed || echo FAILED) in $(fmt_time $((SECONDS - t0)))")
    [ "$rc" -eq 0 ] || failed=1
  done
  echo
  printf '%s\n' "${summary[@]}"
  if [ "$failed" -ne 0 ]; then
    echo "run-all: FAILED"
    exit 1
  fi
  echo "run-all: all passed"
}

pass_kafka() { if [ "$1" = current ]; then echo "$KAFKA_CURRENT_VERSION"; else echo "$KAFKA_COMPAT_VERSION"; fi; }
pass_rdkafka_prefix() { if [ "$1" = current ]; then echo "$RDKAFKA_CURRENT_PREFIX"; fi; }
pass_rdkafka_version() {
  if [ "$1" = current ]; then
    echo "$RDKAFKA_CURRENT_VERSION"
  else
    echo "$(dpkg-query -W -f '${Version}' librdkafka-dev 2>/dev/null | cut -d- -f1) (Debian's librdkafka-dev)"
  fi
}
pass_tap_tests() {
  if [ -n "${EOINGEST_TAP_TESTS:-}" ]; then
    echo "$EOINGEST_TAP_TESTS"
  elif [ "$1" = compat ]; then
    echo "$COMPAT_TAP_TESTS"
  fi
}

if [ "${1:-}" != --pass ]; then
  run_passes
  exit 0
fi

# ---- one pass (run_passes sets KAFKA_VERSION, RDKAFKA_PREFIX, EOINGEST_TAP_TESTS) ----
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
    echo "run-all: pass ${EOINGEST_PASS:-}: FAILED"
    exit 1
  fi
  echo "run-all: pass ${EOINGEST_PASS:-}: all passed"
  exit 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Fresh runtime state: stop leftovers of an earlier run (e.g. EOINGEST_KEEP=1),
# then drop their data and logs (built tools in $EOINGEST_RUN/bin are kept).
started=1
"$TEST_DIR/kafka.sh" stop
if [ -f "$PGDATA/PG_VERSION" ]; then
  "$TEST_DIR/pg.sh" stop-immediate || true
fi
rm -rf "$PGDATA" "$PGHOST" "$EOINGEST_RUN/pg.log" "$EOINGEST_RUN/kafka" \
  "$EOINGEST_RUN/kafka-logs" "$EOINGEST_RUN/kafka-config" "$REGRESS_OUT"

step "layering of src/ (test/layering.sh)"
if ! bash "$TEST_DIR/layering.sh" "$EOINGEST_REPO/src"; then
  echo "run-all: layering FAILED: a file of src/ includes a header of a higher layer"
  exit 1
fi

have_makefile=0
if [ -f Makefile ]; then
  have_makefile=1
  step "build and install the extension"
  if ! make -s PG_CONFIG="$PG_CONFIG" RDKAFKA_PREFIX="$RDKAFKA_PREFIX" clean all install; then
    echo "run-all: building/installing the extension FAILED"
    exit 1
  fi
else
  echo "run-all: no Makefile in $EOINGEST_REPO yet: skipping build, regression tests and preload"
  export EOINGEST_PRELOAD=
fi

step "test tools"
"$TEST_DIR/tools/build.sh"

step "kafka $KAFKA_VERSION"
"$TEST_DIR/kafka.sh" fetch
"$TEST_DIR/kafka.sh" start

step "postgresql"
"$TEST_DIR/pg.sh" init
"$TEST_DIR/pg.sh" start
if [ "$have_makefile" -eq 1 ]; then
  echo "eoingest.so uses $(ldd "$("$PG_CONFIG" --pkglibdir)/eoingest.so" | grep -o 'librdkafka[^ ]* => [^ ]*')"
fi

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
