#!/usr/bin/env bash
# Single-node Kafka (KRaft, combined broker+controller) for the eoingest tests.
#   test/kafka.sh fetch|start|stop|restart|status|kill
# The version is $KAFKA_VERSION (3.9.1 and 4.4.0 are tested; env.sh).
# (kill: SIGKILL the broker at once, to simulate a crash; start brings it back.)
# Jars come from Maven Central (test/kafka/pom.xml) into $EOINGEST_CACHE;
# data, config, logs and the pid file live under $EOINGEST_RUN.
# Listeners (all on 127.0.0.1): PLAINTEXT $KAFKA_PORT, CONTROLLER +1,
# SASL_PLAINTEXT (SCRAM-SHA-256, user $KAFKA_SASL_USER) +2, SSL +3; their
# credentials (test CA, broker keystore, SASL password) are made by
# kafka/security.sh in $KAFKA_SECURITY_DIR when missing and kept otherwise.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

KAFKA_HOME=$EOINGEST_CACHE/kafka-$KAFKA_VERSION
KAFKA_LIBS=$KAFKA_HOME/libs
# Holds the hash of the pom the jars were fetched with: a changed pom refetches.
KAFKA_MARKER=$KAFKA_HOME/.fetched
KAFKA_MAJOR=${KAFKA_VERSION%%.*}
KAFKA_DATA=$EOINGEST_RUN/kafka
KAFKA_LOGS=$EOINGEST_RUN/kafka-logs
KAFKA_CONF=$EOINGEST_RUN/kafka-config
KAFKA_PID=$EOINGEST_RUN/kafka.pid
KAFKA_CONTROLLER_PORT=$((KAFKA_PORT + 1))
KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-90}
KAFKA_STOP_TIMEOUT=${KAFKA_STOP_TIMEOUT:-30}
KAFKA_HEAP=${KAFKA_HEAP:-512m}
# Records which SASL password the broker's SCRAM credential was made with.
KAFKA_SCRAM_MARKER=$KAFKA_DATA/.eoingest-scram

usage() { echo "usage: $0 fetch|start|stop|restart|status|kill" >&2; exit 2; }

log_tail() {
  local f
  for f in "$KAFKA_LOGS/server.log" "$KAFKA_LOGS/kafka.out"; do
    if [ -s "$f" ]; then
      echo "---- tail of $f ----" >&2
      tail -n "${1:-40}" "$f" >&2
    fi
  done
}

# Prints the broker pid if our broker process is alive.
running_pid() {
  local pid
  [ -f "$KAFKA_PID" ] || return 1
  pid=$(cat "$KAFKA_PID" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ -r "/proc/$pid/cmdline" ] || return 1
  # Guard against pid reuse: must be our java with our config file.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$KAFKA_CONF/server.properties" || return 1
  echo "$pid"
}

# True while the process exists and is not a zombie.
alive() {
  local st
  st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# True if something accepts TCP connections on 127.0.0.1:$1 (no waiting).
port_open() {
  # shellcheck disable=SC2016  # $0 is expanded by the inner bash
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$1" 2>/dev/null
}

broker_ready() {
  port_open "$KAFKA_PORT" || return 1
  timeout 10 kcat -b "$KAFKA_BROKERS" -L -m 5 >/dev/null 2>&1
}

# The SASL and SSL listeners accept the test credentials. A librdkafka older
# than 2.6.1 cannot log in with SCRAM to a Kafka 4 broker (librdkafka issue
# 4895): then Kafka's own client checks the SASL listener.
sasl_ready() {
  timeout 10 kcat -F "$KAFKA_SECURITY_DIR/client-sasl.properties" -b "$KAFKA_SASL_BROKERS" -L -m 5 >/dev/null 2>&1 && return 0
  [ "$KAFKA_MAJOR" -ge 4 ] && kcat_rdkafka_before 2.6.1 || return 1
  java_sasl_ready
}

# True if the librdkafka kcat runs with is older than version $1.
kcat_rdkafka_before() {
  local have
  have=$(kcat -V 2>/dev/null | grep -o 'librdkafka [0-9.]*' | head -n 1 | cut -d' ' -f2)
  [ -n "$have" ] && [ "$have" != "$1" ] &&
    [ "$(printf '%s\n%s\n' "$have" "$1" | sort -V | head -n 1)" = "$have" ]
}

java_sasl_ready() {
  local conf=$KAFKA_CONF/java-sasl.properties password
  if [ ! -s "$conf" ]; then
    read -r password <"$KAFKA_SASL_PASSWORD_FILE"
    (umask 077 && cat >"$conf" <<EOF
security.protocol=SASL_PLAINTEXT
sasl.mechanism=$KAFKA_SASL_MECHANISM
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$KAFKA_SASL_USER" password="$password";
EOF
    )
  fi
  timeout 60 java -Xmx128m -XX:TieredStopAtLevel=1 \
    -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.BrokerApiVersionsCommand \
    --bootstrap-server "$KAFKA_SASL_BROKERS" --command-config "$conf" >/dev/null 2>&1 </dev/null
}
ssl_ready() {
  timeout 10 kcat -F "$KAFKA_SECURITY_DIR/client-ssl.properties" -b "$KAFKA_SSL_BROKERS" -L -m 5 >/dev/null 2>&1
}

scram_tag() {
  local p
  read -r p <"$KAFKA_SASL_PASSWORD_FILE"
  printf '%s:%s:%s' "$KAFKA_SASL_MECHANISM" "$KAFKA_SASL_USER" "$p" | sha256sum | cut -c1-64
}

pom_tag() { sha256sum "$EOINGEST_TEST_DIR/kafka/pom.xml" | cut -c1-64; }

fetched() { [ "$(cat "$KAFKA_MARKER" 2>/dev/null)" = "$(pom_tag)" ]; }

cmd_fetch() {
  command -v mvn >/dev/null || eoi_die "mvn not found (run test/deps.sh)"
  fetched && return 0
  mkdir -p "$EOINGEST_CACHE"
  exec 9>"$EOINGEST_CACHE/.kafka-fetch.lock"
  flock -w 600 9 || eoi_die "timed out waiting for another 'kafka.sh fetch'"
  fetched && return 0

  local tmp log
  tmp=$(mktemp -d "$EOINGEST_CACHE/.kafka-$KAFKA_VERSION.XXXXXX")
  log=$tmp/mvn.log
  # Only Maven Central is used (the pom declares no other repository); the
  # local repository lives in the cache so later runs work offline.
  if ! timeout 900 mvn -B -q -ntp -Dstyle.color=never \
      -Dmaven.repo.local="$EOINGEST_CACHE/m2" \
      -f "$EOINGEST_TEST_DIR/kafka/pom.xml" \
      -Dkafka.version="$KAFKA_VERSION" \
      dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$tmp/libs" </dev/null >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    rm -rf "$tmp"
    eoi_die "maven could not fetch Kafka $KAFKA_VERSION (is Maven Central reachable?)"
  fi
  [ -f "$tmp/libs/kafka_2.13-$KAFKA_VERSION.jar" ] || { rm -rf "$tmp"; eoi_die "kafka_2.13-$KAFKA_VERSION.jar missing after fetch"; }
  if [ -d "$KAFKA_LIBS" ]; then
    # Fetched before with another pom: add the new jars, touch none of the
    # others (a broker or tool of another run may be loading them now).
    cp -n "$tmp"/libs/*.jar "$KAFKA_LIBS"/
  else
    mkdir -p "$KAFKA_HOME"
    mv "$tmp/libs" "$KAFKA_LIBS"
  fi
  rm -rf "$tmp"
  pom_tag >"$KAFKA_MARKER"
}

write_config() {
  mkdir -p "$KAFKA_CONF" "$KAFKA_DATA" "$KAFKA_LOGS"
  cp "$EOINGEST_TEST_DIR/kafka/log4j.properties" "$KAFKA_CONF/log4j.properties"
  local kspass
  read -r kspass <"$KAFKA_SECURITY_DIR/keystore.password"
  # Holds the keystore password: readable by the broker's user only.
  (umask 077 && : >"$KAFKA_CONF/server.properties")
  cat >"$KAFKA_CONF/server.properties" <<EOF
# Generated by test/kafka.sh; rewritten on every start.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT,SSL://127.0.0.1:$KAFKA_SSL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT,SSL://127.0.0.1:$KAFKA_SSL_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL
log.dirs=$KAFKA_DATA

# SASL_PLAINTEXT listener: SCRAM-SHA-256 only; the credential of
# $KAFKA_SASL_USER is stored in the cluster metadata (StorageTool --add-scram at
# format time, or kafka-configs for an older data dir). No authorizer:
# authentication only, every authenticated user may do everything.
listener.name.sasl_plaintext.sasl.enabled.mechanisms=$KAFKA_SASL_MECHANISM
listener.name.sasl_plaintext.${KAFKA_SASL_MECHANISM,,}.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
# SSL listener: server authentication only (no client certificates).
listener.name.ssl.ssl.keystore.type=PKCS12
listener.name.ssl.ssl.keystore.location=$KAFKA_SECURITY_DIR/server.p12
listener.name.ssl.ssl.keystore.password=$kspass
listener.name.ssl.ssl.key.password=$kspass
listener.name.ssl.ssl.client.auth=none

num.network.threads=2
num.io.threads=4
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=5
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=5
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
delete.topic.enable=true
log.retention.check.interval.ms=5000
log.cleaner.dedupe.buffer.size=33554432
# After a SIGKILL the restarted broker cannot register until its old session
# expires (DUPLICATE_BROKER_REGISTRATION); keep that short for crash tests.
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=3000
EOF
}

cmd_start() {
  local pid
  if pid=$(running_pid); then
    if broker_ready; then
      port_open "$KAFKA_SASL_PORT" && port_open "$KAFKA_SSL_PORT" && return 0
      eoi_die "kafka process $pid has no SASL/SSL listeners on $KAFKA_SASL_PORT/$KAFKA_SSL_PORT (started by an older kafka.sh?); run '$0 restart'"
    fi
    eoi_die "kafka process $pid is running but not answering on $KAFKA_BROKERS; try '$0 restart'"
  fi
  command -v java >/dev/null || eoi_die "java not found (run test/deps.sh)"
  command -v kcat >/dev/null || eoi_die "kcat not found (run test/deps.sh)"
  fetched || eoi_die "Kafka $KAFKA_VERSION not fetched (or fetched with another test/kafka/pom.xml); run '$0 fetch' first"
  local port
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" "$KAFKA_SASL_PORT" "$KAFKA_SSL_PORT"; do
    if port_open "$port"; then
      eoi_die "port $port is already in use by another process (set KAFKA_PORT to use other ports)"
    fi
  done

  mkdir -p "$EOINGEST_RUN"
  chmod 755 "$EOINGEST_RUN"
  bash "$EOINGEST_TEST_DIR/kafka/security.sh"
  write_config

  local -a jvm=(java -Xms"$KAFKA_HEAP" -Xmx"$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:-UsePerfData
    -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true
    -Dlog4j.configuration="file:$KAFKA_CONF/log4j.properties"
    -Dkafka.logs.dir="$KAFKA_LOGS"
    -cp "$KAFKA_LIBS/*")

  if [ ! -f "$KAFKA_DATA/meta.properties" ]; then
    local cid password
    cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
    read -r password <"$KAFKA_SASL_PASSWORD_FILE"
    rm -f "$KAFKA_SCRAM_MARKER"
    if ! timeout 120 "${jvm[@]}" kafka.tools.StorageTool format --cluster-id="$cid" \
        -c "$KAFKA_CONF/server.properties" \
        --add-scram "$KAFKA_SASL_MECHANISM=[name=$KAFKA_SASL_USER,password=$password]" \
        >"$KAFKA_LOGS/format.out" 2>&1 </dev/null; then
      cat "$KAFKA_LOGS/format.out" >&2
      eoi_die "kafka storage format failed"
    fi
    scram_tag >"$KAFKA_SCRAM_MARKER"
  fi

  rm -f "$KAFKA_PID"
  # bash -c writes its own pid and then execs java, so the pid file is java's.
  # shellcheck disable=SC2016
  setsid nohup bash -c 'echo $$ >"$0.tmp" && mv -f "$0.tmp" "$0" && exec "$@"' "$KAFKA_PID" \
    "${jvm[@]}" kafka.Kafka "$KAFKA_CONF/server.properties" \
    </dev/null >>"$KAFKA_LOGS/kafka.out" 2>&1 &

  local deadline=$((SECONDS + KAFKA_START_TIMEOUT))
  while :; do
    if [ -f "$KAFKA_PID" ] && ! running_pid >/dev/null; then
      log_tail 60
      eoi_die "kafka broker exited during startup (logs in $KAFKA_LOGS)"
    fi
    if [ -f "$KAFKA_PID" ] && broker_ready; then
      break
    fi
    if [ $SECONDS -ge $deadline ]; then
      log_tail 60
      eoi_die "kafka broker not ready on $KAFKA_BROKERS after ${KAFKA_START_TIMEOUT}s (logs in $KAFKA_LOGS)"
    fi
    sleep 0.2
  done

  # A data dir formatted without (or with another) SCRAM credential, e.g. by an
  # older kafka.sh or after kafka-security/ was removed: (re)create it.
  if [ "$(cat "$KAFKA_SCRAM_MARKER" 2>/dev/null)" != "$(scram_tag)" ]; then
    local password
    read -r password <"$KAFKA_SASL_PASSWORD_FILE"
    # kafka-configs: in the tools' package from Kafka 4 on.
    local configs=kafka.admin.ConfigCommand
    [ "$KAFKA_MAJOR" -ge 4 ] && configs=org.apache.kafka.tools.ConfigCommand
    if ! timeout 120 "${jvm[@]}" "$configs" --bootstrap-server "$KAFKA_BROKERS" \
        --alter --entity-type users --entity-name "$KAFKA_SASL_USER" \
        --add-config "$KAFKA_SASL_MECHANISM=[password=$password]" \
        >"$KAFKA_LOGS/scram.out" 2>&1 </dev/null; then
      cat "$KAFKA_LOGS/scram.out" >&2
      eoi_die "could not create the SCRAM credential of $KAFKA_SASL_USER"
    fi
    scram_tag >"$KAFKA_SCRAM_MARKER"
  fi

  local what
  for what in sasl ssl; do
    until "${what}_ready"; do
      if ! running_pid >/dev/null; then
        log_tail 60
        eoi_die "kafka broker exited during startup (logs in $KAFKA_LOGS)"
      fi
      if [ $SECONDS -ge $deadline ]; then
        log_tail 60
        eoi_die "kafka $what listener not usable with the test credentials after ${KAFKA_START_TIMEOUT}s (logs in $KAFKA_LOGS)"
      fi
      sleep 0.2
    done
  done
}

# stop [SIGNAL]: send SIGNAL (default TERM), wait, then SIGKILL.
cmd_stop() {
  local pid sig=${1:-TERM}
  pid=$(running_pid) || { rm -f "$KAFKA_PID"; return 0; }
  kill -"$sig" "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + KAFKA_STOP_TIMEOUT))
  while alive "$pid"; do
    if [ $SECONDS -ge $deadline ]; then
      echo "kafka.sh: broker $pid did not stop within ${KAFKA_STOP_TIMEOUT}s, sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      local kdeadline=$((SECONDS + 10))
      while alive "$pid" && [ $SECONDS -lt $kdeadline ]; do sleep 0.2; done
      if alive "$pid"; then eoi_die "broker $pid survived SIGKILL"; fi
      break
    fi
    sleep 0.2
  done
  rm -f "$KAFKA_PID"
  # A killed JVM's sockets can outlive its main thread for a moment.
  local pdeadline=$((SECONDS + 10))
  while port_open "$KAFKA_PORT" || port_open "$KAFKA_CONTROLLER_PORT" ||
      port_open "$KAFKA_SASL_PORT" || port_open "$KAFKA_SSL_PORT"; do
    [ $SECONDS -lt $pdeadline ] || eoi_die "ports $KAFKA_PORT-$KAFKA_SSL_PORT still in use after stopping the broker"
    sleep 0.1
  done
}

cmd_status() {
  local pid
  if pid=$(running_pid); then
    if broker_ready; then
      echo "kafka running (pid $pid) on $KAFKA_BROKERS (SASL_PLAINTEXT $KAFKA_SASL_BROKERS, SSL $KAFKA_SSL_BROKERS)"
      return 0
    fi
    echo "kafka process $pid alive but not answering on $KAFKA_BROKERS"
    return 1
  fi
  echo "kafka not running"
  return 3
}

[ $# -eq 1 ] || usage
case "$1" in
  fetch) cmd_fetch ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  kill) cmd_stop KILL ;;
  restart) cmd_stop; cmd_start ;;
  status) cmd_status ;;
  *) usage ;;
esac
