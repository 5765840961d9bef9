#!/usr/bin/env bash
# Apicurio Registry (in-memory storage: H2 in memory) for the eoingest tests, through its
# Confluent-compatible API at http://127.0.0.1:$APICURIO_PORT/apis/ccompat/v7.
#   test/apicurio.sh fetch|start|stop|status|url
# fetch: builds test/apicurio/pom.xml (io.apicurio:apicurio-registry-app from Maven Central, made
#   runnable by quarkus-maven-plugin's build; the pom says why 2.4.2.Final) into
#   $EOINGEST_CACHE/apicurio-$APICURIO_VERSION/app, Maven's repository in $EOINGEST_CACHE/m2.
#   Cached: done again only when the pom or the Java source changes.
# start: one registry on 127.0.0.1:$APICURIO_PORT (default 29103); returns when it answers, within
#   $APICURIO_START_TIMEOUT s (120). Log: $APICURIO_DIR/apicurio.log. Heap $APICURIO_HEAP (384m).
#   Schemas live in memory only: a stopped registry forgets them.
# stop: SIGTERM, then SIGKILL after 20 s.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

APICURIO_VERSION=2.4.2.Final
APICURIO_HOME=$EOINGEST_CACHE/apicurio-$APICURIO_VERSION
APICURIO_PORT=${APICURIO_PORT:-29103}
APICURIO_DIR=${APICURIO_DIR:-$EOINGEST_RUN/apicurio}
APICURIO_PID=$APICURIO_DIR/apicurio.pid
APICURIO_HEAP=${APICURIO_HEAP:-384m}
APICURIO_START_TIMEOUT=${APICURIO_START_TIMEOUT:-120}
APICURIO_URL=http://127.0.0.1:$APICURIO_PORT/apis/ccompat/v7
SRC=$EOINGEST_TEST_DIR/apicurio

usage() { echo "usage: $0 fetch|start|stop|status|url" >&2; exit 2; }

# The JDK to build and run with: 17 or newer (Quarkus 2.16 runs on 17).
java_home() {
  local j
  for j in "${APICURIO_JAVA_HOME:-}" /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk-arm64; do
    [ -n "$j" ] && [ -x "$j/bin/java" ] && { echo "$j"; return; }
  done
  j=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")") || eoi_die "java not found (run test/deps.sh)"
  echo "$j"
}

tag() { (cd "$SRC" && find . -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-64; }
fetched() { [ "$(cat "$APICURIO_HOME/.fetched" 2>/dev/null)" = "$(tag)" ] && [ -f "$APICURIO_HOME/app/registry-runner.jar" ]; }

cmd_fetch() {
  command -v mvn >/dev/null || eoi_die "mvn not found (run test/deps.sh)"
  mkdir -p "$EOINGEST_CACHE"
  exec 9>"$EOINGEST_CACHE/.apicurio-fetch.lock"
  flock -w 1200 9 || eoi_die "timed out waiting for another 'apicurio.sh fetch'"
  fetched && return 0
  local tmp
  tmp=$(mktemp -d "$EOINGEST_CACHE/.apicurio-build.XXXXXX")
  cp -r "$SRC/." "$tmp/"
  if ! (cd "$tmp" && JAVA_HOME=$(java_home) timeout 1200 mvn -B -ntp -Dstyle.color=never \
          -Dmaven.repo.local="$EOINGEST_CACHE/m2" \
          -Dquarkus.index-dependency.registry.group-id=io.apicurio \
          -Dquarkus.index-dependency.registry.artifact-id=apicurio-registry-app package) </dev/null >"$tmp/mvn.log" 2>&1; then
    grep -E '^\[ERROR\]' "$tmp/mvn.log" | head -n 20 >&2 || tail -n 40 "$tmp/mvn.log" >&2
    eoi_die "maven could not build Apicurio Registry $APICURIO_VERSION (log: $tmp/mvn.log)"
  fi
  # The app's own build properties make it a legacy jar: the runner and lib/ beside it.
  [ -f "$tmp/target/apicurio-runner-1-runner.jar" ] || eoi_die "no runner jar after the build (log: $tmp/mvn.log)"
  mkdir -p "$APICURIO_HOME"
  rm -rf "$APICURIO_HOME/app"
  mkdir "$APICURIO_HOME/app"
  mv "$tmp/target/apicurio-runner-1-runner.jar" "$APICURIO_HOME/app/registry-runner.jar"
  mv "$tmp/target/lib" "$APICURIO_HOME/app/lib"
  rm -rf "$tmp"
  tag >"$APICURIO_HOME/.fetched"
}

running_pid() {
  local pid
  [ -f "$APICURIO_PID" ] || return 1
  pid=$(cat "$APICURIO_PID" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  # Guard against pid reuse: must be our java serving our port.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-Dquarkus.http.port=$APICURIO_PORT " || return 1
  echo "$pid"
}

answers() { curl -sf -o /dev/null --max-time 2 "$APICURIO_URL/subjects"; }

cmd_start() {
  local pid deadline
  if pid=$(running_pid); then eoi_die "apicurio is running already (pid $pid); '$0 stop' first"; fi
  fetched || eoi_die "Apicurio Registry not fetched (or with another test/apicurio); run '$0 fetch' first"
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$APICURIO_PORT" 2>/dev/null &&
    eoi_die "port $APICURIO_PORT is already in use (set APICURIO_PORT)"
  mkdir -p "$APICURIO_DIR"
  # setsid: the registry outlives this script, in a session of its own.
  setsid "$(java_home)/bin/java" -Xmx"$APICURIO_HEAP" -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$APICURIO_PORT" \
    -Dquarkus.log.level=WARN -Dquarkus.log.category.\"io.apicurio\".level=WARN \
    -jar "$APICURIO_HOME/app/registry-runner.jar" </dev/null >"$APICURIO_DIR/apicurio.log" 2>&1 &
  pid=$!
  echo "$pid" >"$APICURIO_PID"
  deadline=$((SECONDS + APICURIO_START_TIMEOUT))
  until answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$APICURIO_DIR/apicurio.log" >&2
      rm -f "$APICURIO_PID"
      eoi_die "apicurio exited at start (log: $APICURIO_DIR/apicurio.log)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      tail -n 40 "$APICURIO_DIR/apicurio.log" >&2
      cmd_stop
      eoi_die "apicurio did not answer within ${APICURIO_START_TIMEOUT}s (log: $APICURIO_DIR/apicurio.log)"
    fi
    sleep 0.5
  done
}

cmd_stop() {
  local pid i
  pid=$(running_pid) || { rm -f "$APICURIO_PID"; return 0; }
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$APICURIO_PID"
}

[ $# -ge 1 ] || usage
case $1 in
  fetch) cmd_fetch ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) if pid=$(running_pid); then echo "running (pid $pid, $APICURIO_URL)"; else echo stopped; exit 1; fi ;;
  url) echo "$APICURIO_URL" ;;
  *) usage ;;
esac
