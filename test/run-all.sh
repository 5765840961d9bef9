#!/usr/bin/env bash
# The eoingest test command: installs dependencies, then runs one pass per
# tested combination of PostgreSQL, Kafka broker and librdkafka. A pass builds
# and installs the extension against its PostgreSQL and librdkafka, starts a
# fresh Kafka broker of its version and a PostgreSQL cluster, runs the
# pg_regress suite (make installcheck) and TAP tests (test/t/*.t), then stops
# the servers. Run as root, from any directory.
#
#   pass     PostgreSQL          broker       librdkafka                        tests
#   current  15 (Debian 12's)    Kafka 4.4.0  2.14.2 (test/rdkafka.sh, cached)  pg_regress + every TAP test
#   compat   15                  Kafka 3.9.1  Debian 12's 2.0.2                 pg_regress + 20-crash, 30-two-phase,
#                                                                                 46-transaction-markers, 60-faults,
#                                                                                 70-security, 71-security-tenant, 90-failover
#   pg18     18.6 (test/pgbuild.sh, cached)  Kafka 4.4.0  2.14.2                pg_regress + every TAP test but
#                                                                                 40-decfloat, 40-fuzz, 41-fuzz-avro
#                                                                                 and 97-debian-package (all with
#                                                                                 EOINGEST_LONG=1)
#
#   EOINGEST_PASSES          passes to run, in order (default: "current compat pg18";
#                            "current" alone when EOINGEST_TAP_TESTS is set)
#   EOINGEST_KEEP=1          leave the last pass's servers running afterwards (debugging)
#   EOINGEST_TEST_TIMEOUT=N  seconds allowed for each of installcheck and prove (default 3000)
#   EOINGEST_TAP_TESTS       TAP files to run instead of each pass's own (space separated)
#   EOINGEST_SKIP_REGRESS=1  skip make installcheck
#   EOINGEST_REGRESS="setup mappings"  run these regression tests only (setup first)
set -euo pipefail
TEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# TAP tests of the compatibility pass: what depends most on the broker's and
# the client's versions (crashes, two_phase recovery, transaction markers,
# faults of the broker and the network, failover), and the security tests.
COMPAT_TAP_TESTS="test/t/20-crash.t test/t/30-two-phase.t test/t/46-transaction-markers.t test/t/60-faults.t"
COMPAT_TAP_TESTS+=" test/t/70-security.t test/t/71-security-tenant.t test/t/90-failover.t"
# The pg18 pass runs every TAP test but those that do not depend on the
# pass's PostgreSQL, which the current pass runs: the checks that link no
# PostgreSQL (the decimal fast path, the csv and avro fuzzers) and the Debian
# package's build (for the majors Debian's packages have here); all of them
# with EOINGEST_LONG=1.
PG18_SKIPPED_TAP_TESTS="test/t/40-decfloat.t test/t/40-fuzz.t test/t/41-fuzz-avro.t test/t/97-debian-package.t"

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# run_passes: the dispatcher. Each pass is this script again with --pass and
# its pair in the environment, so that env.sh derives everything from it.
run_passes() {
  . "$TEST_DIR/env.sh"
  local passes=${EOINGEST_PASSES:-}
  if [ -z "$passes" ]; then
    if [ -n "${EOINGEST_TAP_TESTS:-}" ]; then passes=current; else passes="current compat pg18"; fi
  fi
  local p
  for p in $passes; do
    case "$p" in current | compat | pg18) ;; *) eoi_die "unknown pass '$p' in EOINGEST_PASSES (current, compat, pg18)" ;; esac
  done

  echo "== dependencies"
  "$TEST_DIR/deps.sh"

  # The current librdkafka and PostgreSQL 18 take minutes to build the first
  # time: in the background, at low priority, one after the other, while the
  # Kafka jars are fetched and, for PostgreSQL 18, while the passes before
  # pg18 run. Each pass waits for what it uses (wait_for_build).
  local need_rdkafka=0 need_pg18=0
  build_pid= build_log=$EOINGEST_CACHE/build.log
  for p in $passes; do
    pass_uses_rdkafka_build "$p" && ! "$TEST_DIR/rdkafka.sh" status >/dev/null && need_rdkafka=1
    pass_uses_pg18_build "$p" && ! "$TEST_DIR/pgbuild.sh" status >/dev/null && need_pg18=1
  done
  if [ "$need_rdkafka$need_pg18" != 00 ]; then
    echo "== building$([ $need_rdkafka = 1 ] && echo " librdkafka $RDKAFKA_CURRENT_VERSION")$([ $need_pg18 = 1 ] && echo " PostgreSQL $PG18_VERSION") in the background (log: $build_log)"
    mkdir -p "$EOINGEST_CACHE"
    {
      if [ $need_rdkafka = 1 ]; then "$TEST_DIR/rdkafka.sh" build || exit 1; fi
      if [ $need_pg18 = 1 ]; then "$TEST_DIR/pgbuild.sh" build || exit 1; fi
    } >"$build_log" 2>&1 &
    build_pid=$!
  fi
  echo "== kafka jars"
  for p in $passes; do
    KAFKA_VERSION=$(pass_kafka "$p") "$TEST_DIR/kafka.sh" fetch
  done

  local -a summary=()
  local failed=0 last=${passes##* } t0 rc keep
  for p in $passes; do
    keep=0
    [ "$p" = "$last" ] && keep=${EOINGEST_KEEP:-0}
    ! pass_uses_rdkafka_build "$p" || wait_for_build "librdkafka $RDKAFKA_CURRENT_VERSION" rdkafka.sh
    ! pass_uses_pg18_build "$p" || wait_for_build "PostgreSQL $PG18_VERSION" pgbuild.sh
    echo
    echo "======== pass $p: $(pass_title "$p") ========"
    t0=$SECONDS
    rc=0
    env KAFKA_VERSION="$(pass_kafka "$p")" RDKAFKA_PREFIX="$(pass_rdkafka_prefix "$p")" \
      EOINGEST_PG_MAJOR="$(pass_pg_major "$p")" \
      EOINGEST_KEEP="$keep" EOINGEST_TAP_TESTS="$(pass_tap_tests "$p")" \
      EOINGEST_PASS="$p" bash "$TEST_DIR/run-all.sh" --pass || rc=$?
    [ "$rc" -eq 130 ] && exit 130
    summary+=("pass $p ($(pass_title "$p")): $([ "$rc" -eq 0 ] && echo passed || echo FAILED) in $(fmt_time $((SECONDS - t0)))")
    [ "$rc" -eq 0 ] || failed=1
  done
  [ -z "$build_pid" ] || wait "$build_pid" 2>/dev/null || true
  echo
  printf '%s\n' "${summary[@]}"
  if [ "$failed" -ne 0 ]; then
    echo "run-all: FAILED"
    exit 1
  fi
  echo "run-all: all passed"
}

# wait_for_build WHAT SCRIPT: until test/SCRIPT says WHAT is built; dies with
# the build log's tail if the background build ended without it.
wait_for_build() {
  local what=$1 script=$2 t0=$SECONDS
  "$TEST_DIR/$script" status >/dev/null && return 0
  echo "== waiting for the build of $what"
  while ! "$TEST_DIR/$script" status >/dev/null; do
    if [ -z "$build_pid" ] || ! kill -0 "$build_pid" 2>/dev/null; then
      [ -z "$build_pid" ] || wait "$build_pid" 2>/dev/null || true
      "$TEST_DIR/$script" status >/dev/null && break
      [ ! -f "$build_log" ] || tail -n 40 "$build_log" >&2
      eoi_die "building $what failed (log: $build_log)"
    fi
    sleep 5
  done
  echo "== $what built ($(fmt_time $((SECONDS - t0))) waited)"
}

# Whether pass $1 runs with the cached builds of rdkafka.sh and pgbuild.sh.
pass_uses_rdkafka_build() { [ -n "$(pass_rdkafka_prefix "$1")" ]; }
pass_uses_pg18_build() { [ "$(pass_pg_major "$1")" = "$PG18_MAJOR" ]; }

pass_kafka() { if [ "$1" = compat ]; then echo "$KAFKA_COMPAT_VERSION"; else echo "$KAFKA_CURRENT_VERSION"; fi; }
pass_rdkafka_prefix() { if [ "$1" != compat ]; then echo "$RDKAFKA_CURRENT_PREFIX"; fi; }
pass_pg_major() { if [ "$1" = pg18 ]; then echo "$PG18_MAJOR"; else echo 15; fi; }
pass_pg_version() { if [ "$1" = pg18 ]; then echo "$PG18_VERSION"; else "/usr/lib/postgresql/15/bin/postgres" -V | awk '{print $3}'; fi; }
pass_title() {
  echo "PostgreSQL $(pass_pg_version "$1"), Kafka $(pass_kafka "$1"), librdkafka $(pass_rdkafka_version "$1")"
}
pass_rdkafka_version() {
  if [ "$1" != compat ]; then
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
  elif [ "$1" = pg18 ] && [ "${EOINGEST_LONG:-0}" != 1 ]; then
    local t
    for t in "$TEST_DIR"/t/*.t; do
      t=test/t/${t##*/}
      [[ " $PG18_SKIPPED_TAP_TESTS " == *" $t "* ]] || printf '%s ' "$t"
    done
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
      ${EOINGEST_REGRESS:+REGRESS="$EOINGEST_REGRESS"} EXTRA_REGRESS_OPTS="--outputdir=$REGRESS_OUT ${EXTRA_REGRESS_OPTS:-}"; then
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
