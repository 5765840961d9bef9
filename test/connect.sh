#!/usr/bin/env bash
# Kafka Connect (standalone mode) for the eoingest tests and benchmarks.
#   test/connect.sh fetch [PLUGIN...]|start PROPS...|stop|kill|status|connector NAME
# fetch: Kafka Connect's runtime of $KAFKA_VERSION (the test broker's version; test/connect/pom.xml) into
#   $EOINGEST_CACHE/connect-$KAFKA_VERSION/libs, and each PLUGIN (default: debezium-postgres), a pom
#   test/connect/PLUGIN.xml, resolved by Maven into its own folder $EOINGEST_CACHE/connect-plugins/PLUGIN
#   (plugin.path). Plugins: debezium-postgres (Debezium's PostgreSQL source), debezium-jdbc (Debezium's
#   JDBC sink with PostgreSQL's driver). Cached: offline after the first fetch; a changed pom refetches.
# start PROPS...: one standalone worker running the connectors of the given properties files; returns
#   when its REST API answers on 127.0.0.1:$CONNECT_PORT (default 28083) and every connector and task
#   is RUNNING. The worker's config, log (connect.log) and source offsets (offsets.dat, flushed every
#   second) are in $CONNECT_DIR ($EOINGEST_RUN/connect). Heap: $CONNECT_HEAP (512m).
#   Worker defaults: JSON converters with schemas (a connector's properties may override them).
#   $CONNECT_WORKER_EXTRA: more worker properties lines; $CONNECT_PLUGIN_NAMES: the plugins to load
#   (space separated; default every fetched one). A port still held (a worker just killed) is waited
#   for up to $CONNECT_PORT_WAIT s (15).
# stop: SIGTERM, then SIGKILL after $CONNECT_STOP_TIMEOUT s; kill: SIGKILL at once.
# connector NAME: prints the connector's status (JSON from the REST API).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

CONNECT_HOME=$EOINGEST_CACHE/connect-$KAFKA_VERSION
CONNECT_LIBS=$CONNECT_HOME/libs
CONNECT_PLUGINS=$EOINGEST_CACHE/connect-plugins
CONNECT_PORT=${CONNECT_PORT:-28083}
CONNECT_DIR=${CONNECT_DIR:-$EOINGEST_RUN/connect}
CONNECT_PID=$CONNECT_DIR/connect.pid
CONNECT_HEAP=${CONNECT_HEAP:-512m}
CONNECT_START_TIMEOUT=${CONNECT_START_TIMEOUT:-240}
CONNECT_STOP_TIMEOUT=${CONNECT_STOP_TIMEOUT:-30}
CONNECT_PORT_WAIT=${CONNECT_PORT_WAIT:-15}
CONNECT_URL=http://127.0.0.1:$CONNECT_PORT
# What Kafka Connect itself provides: a plugin's own copy would clash with it.
CONNECT_PROVIDED=org.apache.kafka,org.slf4j,com.fasterxml.jackson.core,com.fasterxml.jackson.module,com.fasterxml.jackson.datatype,com.fasterxml.jackson.dataformat,com.fasterxml.jackson.jakarta.rs

usage() { echo "usage: $0 fetch [PLUGIN...]|start PROPS...|stop|kill|status|connector NAME" >&2; exit 2; }

log_tail() {
  if [ -s "$CONNECT_DIR/connect.log" ]; then
    echo "---- tail of $CONNECT_DIR/connect.log ----" >&2
    tail -n "${1:-40}" "$CONNECT_DIR/connect.log" >&2
  fi
}

running_pid() {
  local pid
  [ -f "$CONNECT_PID" ] || return 1
  pid=$(cat "$CONNECT_PID" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  # Guard against pid reuse: must be our java with our worker config.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$CONNECT_DIR/worker.properties" || return 1
  echo "$pid"
}

alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

rest() { curl -sf --max-time 5 "$CONNECT_URL$1"; }

# True while something accepts connections on the worker's REST port.
port_in_use() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$CONNECT_PORT" 2>/dev/null; }

# fetch_into POM DIR MARKER [ARGS...]: copies POM's runtime dependencies into DIR, once per pom version.
fetch_into() {
  local pom=$1 dir=$2 marker=$3 tag tmp
  shift 3
  tag=$(sha256sum "$pom" | cut -c1-64)
  [ "$(cat "$marker" 2>/dev/null)" = "$tag" ] && return 0
  tmp=$(mktemp -d "$EOINGEST_CACHE/.connect-fetch.XXXXXX")
  if ! timeout 900 mvn -B -q -ntp -Dstyle.color=never -Dmaven.repo.local="$EOINGEST_CACHE/m2" -f "$pom" \
      dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/jars" "$@" \
      </dev/null >"$tmp/mvn.log" 2>&1; then
    tail -n 40 "$tmp/mvn.log" >&2
    rm -rf "$tmp"
    eoi_die "maven could not fetch $(basename "$pom") (is Maven Central reachable?)"
  fi
  # A worker of another run may be loading the old jars: replace the folder, do not edit it.
  rm -rf "$dir.old"
  [ -d "$dir" ] && mv "$dir" "$dir.old"
  mkdir -p "$(dirname "$dir")"
  mv "$tmp/jars" "$dir"
  rm -rf "$tmp" "$dir.old"
  echo "$tag" >"$marker"
}

cmd_fetch() {
  command -v mvn >/dev/null || eoi_die "mvn not found (run test/deps.sh)"
  local plugins=("$@") p
  [ ${#plugins[@]} -gt 0 ] || plugins=(debezium-postgres)
  for p in "${plugins[@]}"; do
    [[ $p =~ ^[a-z0-9-]+$ ]] && [ -f "$EOINGEST_TEST_DIR/connect/$p.xml" ] ||
      eoi_die "unknown plugin '$p' (one of: $(cd "$EOINGEST_TEST_DIR/connect" && ls ./*.xml | sed 's|^\./||; s|\.xml$||' | grep -vx pom | tr '\n' ' '))"
  done
  mkdir -p "$EOINGEST_CACHE" "$CONNECT_HOME" "$CONNECT_PLUGINS"
  exec 9>"$EOINGEST_CACHE/.connect-fetch.lock"
  flock -w 900 9 || eoi_die "timed out waiting for another 'connect.sh fetch'"
  fetched || fetch_into "$EOINGEST_TEST_DIR/connect/pom.xml" "$CONNECT_LIBS" "$CONNECT_HOME/.fetched" \
    -Dkafka.version="$KAFKA_VERSION"
  [ -f "$CONNECT_LIBS/connect-runtime-$KAFKA_VERSION.jar" ] || eoi_die "connect-runtime-$KAFKA_VERSION.jar missing after fetch"
  build_compat
  for p in "${plugins[@]}"; do
    fetch_into "$EOINGEST_TEST_DIR/connect/$p.xml" "$CONNECT_PLUGINS/$p" "$CONNECT_PLUGINS/.$p.fetched" \
      -DexcludeGroupIds="$CONNECT_PROVIDED"
  done
}

# Classes that Debezium calls and this Kafka version no longer has where it looks
# (test/connect/compat/: Kafka 4.4 moved Sanitizer), compiled into compat.jar.
build_compat() {
  local src=$EOINGEST_TEST_DIR/connect/compat tmp
  [ -f "$CONNECT_HOME/compat.jar" ] && [ -z "$(find "$src" -name '*.java' -newer "$CONNECT_HOME/compat.jar")" ] && return 0
  unzip -Z1 "$CONNECT_LIBS/kafka-clients-$KAFKA_VERSION.jar" | grep -qx 'org/apache/kafka/common/utils/Sanitizer.class' && return 0
  command -v javac >/dev/null || eoi_die "javac not found (run test/deps.sh)"
  tmp=$(mktemp -d "$EOINGEST_CACHE/.connect-compat.XXXXXX")
  javac -nowarn -d "$tmp" -cp "$CONNECT_LIBS/*" $(find "$src" -name '*.java') ||
    { rm -rf "$tmp"; eoi_die "could not compile $src"; }
  (cd "$tmp" && jar cf "$CONNECT_HOME/compat.jar.tmp" .) && mv -f "$CONNECT_HOME/compat.jar.tmp" "$CONNECT_HOME/compat.jar"
  rm -rf "$tmp"
}

fetched() {
  [ "$(cat "$CONNECT_HOME/.fetched" 2>/dev/null)" = "$(sha256sum "$EOINGEST_TEST_DIR/connect/pom.xml" | cut -c1-64)" ]
}

# plugin.path: a folder of links to the plugins $CONNECT_PLUGIN_NAMES (default: every fetched one), each
# plugin one subfolder (Connect gives each subfolder of a plugin.path entry one class loader).
plugin_path() {
  local dir=$CONNECT_DIR/plugins p names=${CONNECT_PLUGIN_NAMES:-}
  if [ -z "$names" ]; then
    for p in "$CONNECT_PLUGINS"/.*.fetched; do
      [ -f "$p" ] || continue
      p=${p##*/.}
      names+=" ${p%.fetched}"
    done
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  for p in $names; do
    [ -f "$CONNECT_PLUGINS/.$p.fetched" ] || eoi_die "plugin $p not fetched; run '$0 fetch $p'"
    ln -s "$CONNECT_PLUGINS/$p" "$dir/$p"
  done
  echo "$dir"
}

write_worker() {
  local path
  mkdir -p "$CONNECT_DIR"
  path=$(plugin_path)
  cp "$EOINGEST_TEST_DIR/connect/log4j.properties" "$CONNECT_DIR/log4j.properties"
  cat >"$CONNECT_DIR/worker.properties" <<EOF2
# Generated by test/connect.sh start; rewritten on every start.
bootstrap.servers=$KAFKA_BROKERS
listeners=http://127.0.0.1:$CONNECT_PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$CONNECT_PORT
plugin.path=$path
# Plugins found by their ServiceLoader manifests, which Debezium's jars carry: no
# reflective scan of every jar (that takes minutes on 2 cores).
plugin.discovery=service_load
offset.storage.file.filename=$CONNECT_DIR/offsets.dat
offset.flush.interval.ms=1000
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
${CONNECT_WORKER_EXTRA:-}
EOF2
}

# True when every connector of the worker and each of its tasks is RUNNING; dies if one FAILED.
all_running() {
  local names n st
  names=$(rest /connectors | jq -r '.[]') || return 1
  [ -n "$names" ] || return 1
  for n in $names; do
    st=$(rest "/connectors/$n/status") || return 1
    if jq -e '.connector.state == "FAILED" or any(.tasks[]; .state == "FAILED")' <<<"$st" >/dev/null; then
      echo "$st" | jq -r '.connector.trace // (.tasks[] | .trace // empty)' | head -n 30 >&2
      log_tail 40
      eoi_die "connector $n failed (log: $CONNECT_DIR/connect.log)"
    fi
    jq -e '.connector.state == "RUNNING" and (.tasks | length) > 0 and all(.tasks[]; .state == "RUNNING")' <<<"$st" >/dev/null || return 1
  done
}

cmd_start() {
  [ $# -gt 0 ] || usage
  local f pid
  for f in "$@"; do [ -r "$f" ] || eoi_die "cannot read connector properties $f"; done
  if pid=$(running_pid); then
    eoi_die "kafka connect is running already (pid $pid); '$0 stop' first"
  fi
  command -v java >/dev/null || eoi_die "java not found (run test/deps.sh)"
  fetched || eoi_die "Kafka Connect $KAFKA_VERSION not fetched (or with another test/connect/pom.xml); run '$0 fetch' first"
  # A worker just killed may hold its port a moment longer: its main thread is a zombie before the
  # last of its threads has exited and closed the listening socket (seen in CI: 48-debezium's
  # SIGKILL and restart of Connect failed with "port 28083 is already in use").
  local free_by=$((SECONDS + CONNECT_PORT_WAIT))
  while port_in_use; do
    [ $SECONDS -lt $free_by ] ||
      eoi_die "port $CONNECT_PORT is still in use after ${CONNECT_PORT_WAIT}s (set CONNECT_PORT)"
    sleep 0.5
  done
  write_worker
  local -a props=()
  for f in "$@"; do props+=("$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"); done
  rm -f "$CONNECT_PID"
  # shellcheck disable=SC2016
  setsid nohup bash -c 'echo $$ >"$0.tmp" && mv -f "$0.tmp" "$0" && exec "$@"' "$CONNECT_PID" \
    java -Xms128m -Xmx"$CONNECT_HEAP" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
    -Djava.awt.headless=true \
    -Dlog4j.configuration="file:$CONNECT_DIR/log4j.properties" -Dconnect.logs.dir="$CONNECT_DIR" \
    -cp "$CONNECT_LIBS/*:$CONNECT_HOME/compat.jar" org.apache.kafka.connect.cli.ConnectStandalone \
    "$CONNECT_DIR/worker.properties" "${props[@]}" \
    </dev/null >>"$CONNECT_DIR/connect.out" 2>&1 &
  local deadline=$((SECONDS + CONNECT_START_TIMEOUT))
  until [ -f "$CONNECT_PID" ] && all_running; do
    if [ -f "$CONNECT_PID" ] && ! running_pid >/dev/null; then
      tail -n 20 "$CONNECT_DIR/connect.out" >&2 || true
      log_tail 60
      eoi_die "kafka connect exited during startup (log: $CONNECT_DIR/connect.log)"
    fi
    if [ $SECONDS -ge $deadline ]; then
      log_tail 60
      eoi_die "kafka connect's connectors not RUNNING after ${CONNECT_START_TIMEOUT}s (log: $CONNECT_DIR/connect.log)"
    fi
    sleep 1
  done
}

cmd_stop() {
  local pid sig=${1:-TERM}
  pid=$(running_pid) || { rm -f "$CONNECT_PID"; return 0; }
  kill -"$sig" "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + CONNECT_STOP_TIMEOUT))
  while alive "$pid"; do
    if [ $SECONDS -ge $deadline ]; then
      echo "connect.sh: worker $pid did not stop within ${CONNECT_STOP_TIMEOUT}s, sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
      alive "$pid" && eoi_die "worker $pid survived SIGKILL"
      break
    fi
    sleep 0.2
  done
  rm -f "$CONNECT_PID"
}

cmd_status() {
  local pid
  if pid=$(running_pid); then
    if rest /connectors >/dev/null; then
      echo "kafka connect running (pid $pid) on $CONNECT_URL: $(rest /connectors)"
      return 0
    fi
    echo "kafka connect process $pid alive but its REST API does not answer on $CONNECT_URL"
    return 1
  fi
  echo "kafka connect not running"
  return 3
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case "$cmd" in
  fetch) cmd_fetch "$@" ;;
  start) cmd_start "$@" ;;
  stop) [ $# -eq 0 ] || usage; cmd_stop ;;
  kill) [ $# -eq 0 ] || usage; cmd_stop KILL ;;
  status) [ $# -eq 0 ] || usage; cmd_status ;;
  connector) [ $# -eq 1 ] || usage; rest "/connectors/$1/status"; echo ;;
  *) usage ;;
esac
