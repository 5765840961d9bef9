# shellcheck shell=bash
# Common environment for the eoingest test bed. Source it; do not execute it.
#   . "$(dirname "${BASH_SOURCE[0]}")/env.sh"

EOINGEST_TEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EOINGEST_REPO=$(cd "$EOINGEST_TEST_DIR/.." && pwd)
export EOINGEST_TEST_DIR EOINGEST_REPO

# Runtime output (kafka data, pg data, logs, pids, built tools). Never inside the repo.
export EOINGEST_RUN=${EOINGEST_RUN:-/tmp/eoingest-run}
# Downloaded Kafka jars, kept across runs.
export EOINGEST_CACHE=${EOINGEST_CACHE:-/var/cache/eoingest}

# The two tested pairs of Kafka broker and librdkafka (test/run-all.sh runs a pass
# with each): current = Kafka 4.4.0 + librdkafka 2.14.2 built from Debian sid's
# source package by test/rdkafka.sh into the cache; compat = Kafka 3.9.1 +
# Debian 12's librdkafka-dev 2.0.2.
export KAFKA_CURRENT_VERSION=${KAFKA_CURRENT_VERSION:-4.4.0}
export KAFKA_COMPAT_VERSION=${KAFKA_COMPAT_VERSION:-3.9.1}
export RDKAFKA_CURRENT_VERSION=${RDKAFKA_CURRENT_VERSION:-2.14.2}
export RDKAFKA_CURRENT_PREFIX=${RDKAFKA_CURRENT_PREFIX:-$EOINGEST_CACHE/librdkafka-$RDKAFKA_CURRENT_VERSION}
# This run's pair: the broker kafka.sh starts, and the librdkafka install prefix
# the extension and the test tools are built against (make RDKAFKA_PREFIX=...;
# empty = the system's librdkafka-dev). run-all.sh sets both for each pass.
export KAFKA_VERSION=${KAFKA_VERSION:-$KAFKA_CURRENT_VERSION}
export RDKAFKA_PREFIX=${RDKAFKA_PREFIX-}
# Programs linked against the system's librdkafka (kcat) run with this one:
# the library keeps its ABI (soname librdkafka.so.1). pg.sh starts PostgreSQL
# without it, so that the extension finds its librdkafka by its own rpath.
if [ -n "$RDKAFKA_PREFIX" ]; then
  case ":${LD_LIBRARY_PATH:-}:" in
    *":$RDKAFKA_PREFIX/lib:"*) ;;
    *) export LD_LIBRARY_PATH=$RDKAFKA_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
  esac
fi
export KAFKA_PORT=${KAFKA_PORT:-29092}
export KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT
# Authenticated/encrypted listeners of the same broker (test/kafka.sh), with
# credentials made at start in $KAFKA_SECURITY_DIR (test/kafka/security.sh):
# SASL_PLAINTEXT + SCRAM-SHA-256 on KAFKA_PORT+2, SSL (server auth only) on
# KAFKA_PORT+3. The controller listener is KAFKA_PORT+1.
export KAFKA_SASL_PORT=$((KAFKA_PORT + 2))
export KAFKA_SSL_PORT=$((KAFKA_PORT + 3))
export KAFKA_SASL_BROKERS=127.0.0.1:$KAFKA_SASL_PORT
export KAFKA_SSL_BROKERS=127.0.0.1:$KAFKA_SSL_PORT
export KAFKA_SECURITY_DIR=$EOINGEST_RUN/kafka-security
export KAFKA_SASL_MECHANISM=SCRAM-SHA-256
export KAFKA_SASL_USER=eoingest
export KAFKA_SASL_PASSWORD_FILE=$KAFKA_SECURITY_DIR/sasl.password
# CA that signed the broker certificate (for ssl.ca.location), and an unrelated one.
export KAFKA_SSL_CA=$KAFKA_SECURITY_DIR/ca.pem
export KAFKA_SSL_WRONG_CA=$KAFKA_SECURITY_DIR/wrong-ca.pem
# The SASL password is random, made at the first broker start and kept; it is
# exported if it exists already, and kafka_sasl_password reads it afresh.
if [ -r "$KAFKA_SASL_PASSWORD_FILE" ]; then
  read -r KAFKA_SASL_PASSWORD <"$KAFKA_SASL_PASSWORD_FILE" || true
  export KAFKA_SASL_PASSWORD
fi
kafka_sasl_password() { local p; read -r p <"$KAFKA_SASL_PASSWORD_FILE" && printf '%s\n' "$p"; }

# The PostgreSQL majors tested: Debian 12's 15 (postgresql-15), and 18 built
# from Debian sid's source package by test/pgbuild.sh into the cache.
# EOINGEST_PG_MAJOR picks this run's (run-all.sh sets it for each pass); the
# server, its client programs and the pg_config the extension is built with
# all come from PGBIN.
export PG18_MAJOR=18
export PG18_VERSION=${PG18_VERSION:-18.6}
export PG18_PREFIX=${PG18_PREFIX:-$EOINGEST_CACHE/postgresql-$PG18_VERSION}
export EOINGEST_PG_MAJOR=${EOINGEST_PG_MAJOR:-15}
case "$EOINGEST_PG_MAJOR" in
  15) export PGBIN=/usr/lib/postgresql/15/bin ;;
  "$PG18_MAJOR") export PGBIN=$PG18_PREFIX/bin ;;
  *) echo "ERROR: EOINGEST_PG_MAJOR=$EOINGEST_PG_MAJOR: the test bed runs PostgreSQL 15 or $PG18_MAJOR" >&2; exit 1 ;;
esac
export PG_CONFIG=$PGBIN/pg_config
case ":$PATH:" in
  *":$PGBIN:"*) ;;
  *) export PATH=$PGBIN:$PATH ;;
esac
case ":$PATH:" in
  *":$EOINGEST_RUN/bin:"*) ;;
  *) export PATH=$PATH:$EOINGEST_RUN/bin ;;
esac
export PGHOST=$EOINGEST_RUN/pgsock
export PGPORT=${PGPORT:-25432}
export PGUSER=postgres
export PGDATABASE=postgres
export PGDATA=$EOINGEST_RUN/pgdata
export EOINGEST_OSUSER=${EOINGEST_OSUSER:-eoingest}
# Library list for shared_preload_libraries; set to '' to start PG without the extension.
export EOINGEST_PRELOAD=${EOINGEST_PRELOAD-eoingest}

# Shared helper.
eoi_die() { echo "ERROR: $*" >&2; exit 1; }

# kafka_tool CLASS ARGS...: one of Kafka's own command-line tools, from the
# jars of $KAFKA_VERSION that kafka.sh fetched (test/kafka/pom.xml), e.g.
#   kafka_tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand --bootstrap-server "$KAFKA_BROKERS" --list
#   kafka_tool org.apache.kafka.tools.ProducerPerformance ...   (kafka-producer-perf-test)
kafka_tool() {
  local class=$1
  shift
  java -Xmx256m -XX:TieredStopAtLevel=1 -XX:-UsePerfData \
    -Dlog4j.configuration="file:$EOINGEST_TEST_DIR/kafka/tools-log4j.properties" \
    -cp "$EOINGEST_CACHE/kafka-$KAFKA_VERSION/libs/*" "$class" "$@" </dev/null
}
