#!/usr/bin/env bash
# Build a libFuzzer target and run it for a bounded time: csv (the CSV
# splitter, src/format/csv.c; the default), avro (Avro C's reading as format avro
# uses it, test/fuzz/avro_fuzz.c), json (format json's scan, src/format/jsonscan.c,
# against PostgreSQL's own JSON parser, test/fuzz/json_fuzz.c) or protobuf (the .proto
# parser and the decoder of format protobuf, test/fuzz/protobuf_fuzz.c).
#
#   bash test/fuzz/run.sh [SECONDS] [csv|avro|json|protobuf]      (default 60 csv)
#
# TAP on stdout (1..1, then ok / not ok), diagnostics on stderr.  Exits
# non-zero on any crash, sanitizer report, leak, timeout or out-of-memory.
#
# Installs clang and the compiler-rt runtime (libclang_rt.fuzzer, asan, ubsan;
# Debian 12: libclang-rt-14-dev) if they are missing (needs root then).
# Build output goes to $EOINGEST_RUN/fuzz (never into the repo): the binary
# csv_fuzz and the log csv_fuzz.log of the last run.  The seed corpus
# test/fuzz/corpus/csv is copied to a temp dir there first, so the run never
# writes into the repo; on failure that dir is kept, with the crashing input
# under artifacts/.  Reproduce one with:
#   $EOINGEST_RUN/fuzz/csv_fuzz <file>
#
#   EOINGEST_FUZZ_ARGS   extra libFuzzer flags (e.g. "-jobs=2 -workers=2")
set -uo pipefail

FUZZ_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../env.sh
. "$FUZZ_DIR/../env.sh"

DURATION=${1:-60}
case "$DURATION" in
  ''|*[!0-9]*|0) echo "usage: $0 [SECONDS>0] [csv|avro|json|protobuf]" >&2; exit 2 ;;
esac
TARGET=${2:-csv}
case "$TARGET" in
  csv|avro|json|protobuf) ;;
  *) echo "usage: $0 [SECONDS>0] [csv|avro|json|protobuf]" >&2; exit 2 ;;
esac

OUT=$EOINGEST_RUN/fuzz
BIN=$OUT/${TARGET}_fuzz
LOG=$OUT/${TARGET}_fuzz.log

echo "1..1"
diag() { echo "# $*" >&2; }
fail() {
  echo "not ok 1 - $TARGET fuzzing: $*"
  exit 1
}

# ---- toolchain ----------------------------------------------------------
apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    diag "missing packages ($*) and not root: install them manually"
    return 1
  fi
  diag "installing $*"
  export DEBIAN_FRONTEND=noninteractive
  # try without refreshing the package lists first, then with
  apt-get install -y -q --no-install-recommends "$@" </dev/null >&2 ||
    { apt-get update -q </dev/null >&2 &&
      apt-get install -y -q --no-install-recommends "$@" </dev/null >&2; }
}

if ! command -v clang >/dev/null 2>&1; then
  apt_install clang || fail "cannot install clang"
fi
fuzzer_rt() {
  local dir
  dir=$(clang --print-runtime-dir 2>/dev/null) || return 1
  [ -f "$dir/libclang_rt.fuzzer-$(uname -m).a" ] && [ -f "$dir/libclang_rt.asan-$(uname -m).a" ]
}
if ! fuzzer_rt; then
  # the runtime matching the clang in use: libclang-rt-14-dev on Debian 12
  clang_major=$(clang -dumpversion | cut -d. -f1)
  apt_install "libclang-rt-$clang_major-dev" || fail "cannot install libclang-rt-$clang_major-dev"
  fuzzer_rt || fail "libclang_rt.fuzzer not found in $(clang --print-runtime-dir)"
fi

# ---- build --------------------------------------------------------------
mkdir -p "$OUT" || fail "cannot create $OUT"
# shellcheck disable=SC2054  # the commas are part of -fsanitize=
BUILD=(clang -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -g -O1 -Wall -Wextra -I "$EOINGEST_REPO/src")
DICT=()
if [ "$TARGET" = csv ]; then
  BUILD+=("$EOINGEST_REPO/src/format/csv.c" "$FUZZ_DIR/csv_fuzz.c" -o "$BIN")
  DICT=(-dict="$FUZZ_DIR/csv.dict")
elif [ "$TARGET" = json ]; then
  # PostgreSQL's own JSON parser (frontend libpgcommon) is the oracle
  BUILD+=(-I "$(pg_config --includedir)/internal" -I "$(pg_config --includedir-server)"
          "$EOINGEST_REPO/src/format/jsonscan.c" "$FUZZ_DIR/json_fuzz.c"
          -L "$(pg_config --pkglibdir)" -lpgcommon -lpgport -Wno-ignored-attributes -Wno-unused-parameter -o "$BIN")
  DICT=(-dict="$FUZZ_DIR/json.dict")
  export LSAN_OPTIONS="suppressions=$FUZZ_DIR/json.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
elif [ "$TARGET" = protobuf ]; then
  # backend code against the server's headers; protobuf_fuzz.c gives the
  # backend calls it makes, the frontend libpgcommon the rest
  BUILD+=(-I "$(pg_config --includedir-server)"
          "$EOINGEST_REPO/src/format/protoparse.c" "$EOINGEST_REPO/src/format/protovalue.c"
          "$EOINGEST_REPO/src/format/wirenum.c" "$FUZZ_DIR/protobuf_fuzz.c"
          -L "$(pg_config --pkglibdir)" -lpgcommon -lpgport -Wno-ignored-attributes -Wno-unused-parameter
          -Wno-missing-field-initializers -Wno-sign-compare -o "$BIN")
  DICT=(-dict="$FUZZ_DIR/protobuf.dict")
else
  # Avro C (libavro-dev, from test/deps.sh) is not instrumented: ASan sees its
  # allocations.  src/format/avrocheck.c refuses every length that the record's
  # bytes cannot hold before Avro C mallocs it, so libFuzzer's malloc limit
  # (as -rss_limit_mb, 2 GB) stays on: a larger request fails the run.
  BUILD+=("$EOINGEST_REPO/src/format/avrocheck.c" "$EOINGEST_REPO/src/format/avroflat.c" "$FUZZ_DIR/avro_fuzz.c" -lavro -o "$BIN")
  export LSAN_OPTIONS="suppressions=$FUZZ_DIR/avro.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
fi
diag "$(clang --version | head -n 1)"
diag "build: ${BUILD[*]}"
t0=$(date +%s.%N)
"${BUILD[@]}" >&2 || fail "build failed"
t1=$(date +%s.%N)
diag "build took $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"

# ---- run ----------------------------------------------------------------
WORK=$(mktemp -d "$OUT/run.XXXXXX") || fail "mktemp failed"
mkdir -p "$WORK/corpus" "$WORK/artifacts"
cp -- "$FUZZ_DIR"/corpus/"$TARGET"/* "$WORK/corpus/" || fail "cannot copy the corpus"
seeds=$(find "$WORK/corpus" -type f | wc -l)

export ASAN_OPTIONS="detect_leaks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# shellcheck disable=SC2206
extra=(${EOINGEST_FUZZ_ARGS:-})
diag "fuzzing for $DURATION s from $seeds seeds; log: $LOG"
t0=$(date +%s)
( cd "$WORK" &&
  timeout -k 10 $((DURATION + 120)) "$BIN" \
    -max_total_time="$DURATION" -timeout=5 -rss_limit_mb=2048 \
    "${DICT[@]}" -print_final_stats=1 \
    -artifact_prefix="$WORK/artifacts/" "${extra[@]}" \
    "$WORK/corpus" ) >"$LOG" 2>&1
rc=$?
t1=$(date +%s)
elapsed=$((t1 - t0))

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$LOG" | tail -n 1)
rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$LOG" | tail -n 1)
last=$(grep -E '^#[0-9]+.* cov: ' "$LOG" | tail -n 1)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
diag "${TARGET}_fuzz: ${elapsed}s, ${execs:-?} execs (${rate:-?}/s), cov ${cov:-?} edges, ft ${ft:-?}, corpus ${corp:-?}, peak rss ${rss:-?} MB, exit $rc"

artifacts=$(find "$WORK/artifacts" -type f | wc -l)
if [ "$rc" -ne 0 ] || [ "$artifacts" -ne 0 ] || ! grep -qE '^#[0-9]+[[:space:]]+DONE ' "$LOG"; then
  diag "---- tail of $LOG ----"
  tail -n 60 "$LOG" | sed 's/^/# /' >&2
  diag "kept $WORK (artifacts: $(find "$WORK/artifacts" -type f -printf '%f ' ))"
  fail "libFuzzer exit $rc, $artifacts artifact(s) in $WORK/artifacts"
fi
rm -rf -- "$WORK"
echo "ok 1 - $TARGET fuzzing ran $DURATION s clean"
