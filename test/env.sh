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

export KAFKA_VERSION=${KAFKA_VERSION:-3.9.1}
export KAFKA_PORT=${KAFKA_PORT:-39092}
export KAFKA_BROKERS=127.0.0.1:$KAFKA_PORT

export PGBIN=/usr/lib/postgresql/15/bin
export PG_CONFIG=${PG_CONFIG:-$PGBIN/pg_config}
case ":$PATH:" in
  *":$PGBIN:"*) ;;
  *) export PATH=$PGBIN:$PATH ;;
esac
case ":$PATH:" in
  *":$EOINGEST_RUN/bin:"*) ;;
  *) export PATH=$PATH:$EOINGEST_RUN/bin ;;
esac
export PGHOST=$EOINGEST_RUN/pgsock
export PGPORT=${PGPORT:-55432}
export PGUSER=postgres
export PGDATABASE=postgres
export PGDATA=$EOINGEST_RUN/pgdata
export EOINGEST_OSUSER=${EOINGEST_OSUSER:-eoingest}
# Library list for shared_preload_libraries; set to '' to start PG without the extension.
export EOINGEST_PRELOAD=${EOINGEST_PRELOAD-eoingest}

# Shared helper.
eoi_die() { echo "ERROR: $*" >&2; exit 1; }
