#!/usr/bin/env bash
# Install the Debian packages the test bed needs (only if something is missing).
set -euo pipefail

PKGS=(
  postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
  librdkafka-dev kcat libavro-dev
  # test/rdkafka.sh: what librdkafka's own build uses of the build
  # dependencies Debian's source package lists
  pkg-config libssl-dev libsasl2-dev zlib1g-dev libzstd-dev liblz4-dev libcurl4-openssl-dev
  clang libclang-rt-14-dev make gcc
  # test/pgbuild.sh: PostgreSQL 18's build (with the libraries above)
  bison flex libicu-dev libreadline-dev
  # t/97-debian-package.t: the Debian package's build (debian/)
  debhelper dpkg-dev postgresql-server-dev-all
  maven openjdk-17-jre-headless
  procps openssl
  python3-yaml curl prometheus-postgres-exporter
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "ERROR: missing packages (${missing[*]}) and not root; install them manually" >&2
  exit 1
fi

echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
# No package's service is started by the install (prometheus-postgres-exporter
# has one; the tests start what they need themselves).
policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
fi
trap 'rm -f "$log" ${policy:+"$policy"}' EXIT
if ! { apt-get update -q && apt-get install -y -q -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}"; } </dev/null >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "ERROR: apt-get install failed for: ${missing[*]}" >&2
  exit 1
fi
