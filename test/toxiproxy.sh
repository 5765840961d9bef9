#!/usr/bin/env bash
# Toxiproxy in front of each node of the test cluster (test/cluster.sh start
# --proxy), so that tests can put a network between the jobs and the brokers.
#   test/toxiproxy.sh install            go install server and cli into $EOINGEST_CACHE/toxiproxy
#   test/toxiproxy.sh start | stop       the server on 127.0.0.1:21400, proxies kafka1-3
#                                        (127.0.0.1:2139N -> the node's CLIENT listener 2109N)
#   test/toxiproxy.sh add NAME TYPE STREAM [key=value...]   the toxic on every proxy
#   test/toxiproxy.sh remove NAME        take it off every proxy
#   test/toxiproxy.sh clear              every toxic off, every proxy enabled
# TYPE: latency (latency, jitter ms), bandwidth (rate KB/s), reset_peer (timeout ms),
# timeout (timeout ms; 0 = forever), slicer (average_size, size_variation, delay µs),
# slow_close (delay ms), limit_data (bytes); STREAM: upstream (to the broker) or downstream.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

TOXI_DIR=$EOINGEST_CACHE/toxiproxy
TOXI_RUN=$EOINGEST_RUN/toxiproxy
TOXI_API=127.0.0.1:21400
# v2.5.0 is what @latest resolved to and what was tested.
TOXIPROXY_VERSION=${TOXIPROXY_VERSION:-v2.5.0}

usage() { sed -n '2,12p' "$0" >&2; exit 2; }

api() { # api METHOD PATH [JSON]
  local out
  if ! out=$(curl -sS -f -X "$1" "http://$TOXI_API$2" ${3:+-H 'Content-Type: application/json' -d "$3"} 2>&1); then
    eoi_die "toxiproxy $1 $2 failed: $out"
  fi
  printf '%s' "$out"
}

cmd_install() {
  [ -x "$TOXI_DIR/server" ] && [ -x "$TOXI_DIR/cli" ] && return 0
  command -v go >/dev/null || eoi_die "go not found: toxiproxy is built with 'go install' (needs the Go module proxy)"
  mkdir -p "$TOXI_DIR"
  GOBIN=$TOXI_DIR go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" ||
    eoi_die "go install of the toxiproxy server failed"
  GOBIN=$TOXI_DIR go install "github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXIPROXY_VERSION" ||
    eoi_die "go install of the toxiproxy cli failed"
}

running_pid() {
  local pid
  pid=$(cat "$TOXI_RUN/pid" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$TOXI_DIR/server" || return 1
  echo "$pid"
}

cmd_start() {
  cmd_install
  mkdir -p "$TOXI_RUN"
  if ! running_pid >/dev/null; then
    setsid nohup "$TOXI_DIR/server" -host 127.0.0.1 -port "${TOXI_API#*:}" </dev/null >>"$TOXI_RUN/server.log" 2>&1 &
    echo $! >"$TOXI_RUN/pid"
    local deadline=$((SECONDS + 30))
    until curl -sf "http://$TOXI_API/version" >/dev/null 2>&1; do
      [ $SECONDS -lt $deadline ] || eoi_die "toxiproxy did not start (log: $TOXI_RUN/server.log)"
      sleep 0.2
    done
  fi
  local n
  for n in 1 2 3; do
    curl -sf "http://$TOXI_API/proxies/kafka$n" >/dev/null 2>&1 && continue
    api POST /proxies "{\"name\":\"kafka$n\",\"listen\":\"127.0.0.1:$((21390 + n))\",\"upstream\":\"127.0.0.1:$((21090 + n))\",\"enabled\":true}" >/dev/null
  done
}

cmd_stop() {
  local pid
  pid=$(running_pid) || return 0
  kill "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 10))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  rm -f "$TOXI_RUN/pid"
}

cmd_add() {
  local name=$1 type=$2 stream=$3 attrs= kv n
  shift 3
  for kv in "$@"; do attrs+="${attrs:+,}\"${kv%%=*}\":${kv#*=}"; done
  for n in 1 2 3; do
    api POST "/proxies/kafka$n/toxics" \
      "{\"name\":\"$name\",\"type\":\"$type\",\"stream\":\"$stream\",\"toxicity\":1.0,\"attributes\":{$attrs}}" >/dev/null
  done
}

cmd_remove() {
  local n
  for n in 1 2 3; do api DELETE "/proxies/kafka$n/toxics/$1" >/dev/null; done
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case "$cmd" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  add) [ $# -ge 3 ] || usage; cmd_add "$@" ;;
  remove) [ $# -eq 1 ] || usage; cmd_remove "$1" ;;
  clear) api POST /reset >/dev/null ;;
  *) usage ;;
esac
