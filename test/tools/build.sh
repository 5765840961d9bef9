#!/usr/bin/env bash
# Builds the test tools into $EOINGEST_RUN/bin (only when the source is newer).
#   test/tools/build.sh            # build everything
# Or source it and call build_eoi_kafka / build_eoi_mock.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../env.sh"

build_eoi_kafka() {
  local src=$EOINGEST_TEST_DIR/tools/eoi-kafka.c
  local out=$EOINGEST_RUN/bin/eoi-kafka
  # Built against this run's librdkafka (RDKAFKA_PREFIX, empty: the system's).
  local stamp=$out.rdkafka want=${RDKAFKA_PREFIX:-system}
  local -a rdkafka=(-lrdkafka)
  if [ -n "${RDKAFKA_PREFIX:-}" ]; then
    rdkafka=(-isystem "$RDKAFKA_PREFIX/include" -L"$RDKAFKA_PREFIX/lib"
      -Wl,-rpath,"$RDKAFKA_PREFIX/lib" -lrdkafka)
  fi
  mkdir -p "$EOINGEST_RUN/bin"
  if [ -x "$out" ] && [ "$out" -nt "$src" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  if ! ${CC:-cc} -O2 -g -Wall -Wextra -Werror -o "$out.tmp" "$src" "${rdkafka[@]}"; then
    rm -f "$out.tmp"
    eoi_die "building eoi-kafka failed (is librdkafka-dev installed? run test/deps.sh)"
  fi
  mv -f "$out.tmp" "$out"
  echo "$want" >"$stamp"
}

# eoi-mock: librdkafka's mock cluster as a broker (test/t/67-mock-cluster.t).
build_eoi_mock() {
  local src=$EOINGEST_TEST_DIR/tools/eoi-mock.c
  local out=$EOINGEST_RUN/bin/eoi-mock
  mkdir -p "$EOINGEST_RUN/bin"
  if [ -x "$out" ] && [ "$out" -nt "$src" ]; then
    return 0
  fi
  if ! ${CC:-cc} -O2 -g -Wall -Wextra -Werror -o "$out.tmp" "$src" -lrdkafka; then
    rm -f "$out.tmp"
    eoi_die "building eoi-mock failed (is librdkafka-dev installed? run test/deps.sh)"
  fi
  mv -f "$out.tmp" "$out"
}

# exit-probe.so: reports processes that exit with threads running (test/t/68-exit-threads.t).
build_exit_probe() {
  local src=$EOINGEST_TEST_DIR/tools/exit-probe.c
  local out=$EOINGEST_RUN/bin/exit-probe.so
  mkdir -p "$EOINGEST_RUN/bin"
  if [ -f "$out" ] && [ "$out" -nt "$src" ]; then
    return 0
  fi
  if ! ${CC:-cc} -O2 -g -Wall -Wextra -Werror -shared -fPIC -o "$out.tmp" "$src"; then
    rm -f "$out.tmp"
    eoi_die "building exit-probe.so failed"
  fi
  mv -f "$out.tmp" "$out"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  build_eoi_kafka
  build_eoi_mock
  build_exit_probe
fi
