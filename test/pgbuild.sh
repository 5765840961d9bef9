#!/usr/bin/env bash
# A second PostgreSQL major for the test bed, next to Debian 12's PostgreSQL 15.
#   test/pgbuild.sh build|prefix|status
# build: once per version, from Debian's source package postgresql-$PG18_MAJOR
# (suite sid, whose deb-src line test/rdkafka.sh adds; apt-get source
# --download-only, and upstream's orig tarball is built), into
# $PG18_PREFIX = $EOINGEST_CACHE/postgresql-$PG18_VERSION: the server, its
# client programs, the contrib modules (citext, postgres_fdw, ...), PGXS and
# pg_config; then pgTAP, from the orig tarball of Debian's pgtap source
# package, built and installed with that pg_config. Outside the repo, kept
# across runs; a finished build leaves .built there. Build dependencies come
# from test/deps.sh. The build runs under nice, with -j2; concurrent callers
# wait on a lock for the one build.
# prefix: prints the prefix (its bin/pg_config builds the extension), failing
# if not built.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

PREFIX=$PG18_PREFIX
WHAT="PostgreSQL $PG18_VERSION"
. "$EOINGEST_TEST_DIR/lib/cached-build.sh"

usage() { echo "usage: $0 build|prefix|status" >&2; exit 2; }

# fetch_orig PACKAGE VERSION DIR: upstream's tarball of Debian's source package
# PACKAGE (the one of VERSION when sid has it) into DIR; prints its path.
# Only the orig tarball is used: Debian's packaging is not needed.
fetch_orig() {
  local pkg=$1 version=$2 dir=$3 log=$4 orig
  # apt-get source fails when a file other than the orig tarball is missing
  # from the mirror: the tarball is what counts.
  if [ -z "$version" ] || ! (cd "$dir" && apt-get source -q --download-only "$pkg=$version-*" </dev/null >>"$log" 2>&1); then
    (cd "$dir" && apt-get source -q --download-only "$pkg" </dev/null >>"$log" 2>&1) || true
  fi
  orig=$(ls "$dir/${pkg}_"*.orig.tar.* 2>/dev/null | head -n 1) || true
  if [ -z "$orig" ]; then
    eoi_die "sid has no $pkg source package to build (it has: $(apt-cache showsrc "$pkg" 2>/dev/null |
      awk '/^Version:/ {print $2}' | sort -uV | tr '\n' ' ')); see $log"
  fi
  echo "$orig"
}

cmd_build() {
  cached_build_done && return 0
  mkdir -p "$EOINGEST_CACHE"
  exec 9>"$EOINGEST_CACHE/.postgresql-build.lock"
  flock -w 1800 9 || eoi_die "timed out waiting for another PostgreSQL build"
  cached_build_done && return 0

  local work log orig
  work=$(mktemp -d "$EOINGEST_CACHE/.postgresql-$PG18_VERSION.XXXXXX")
  log=$work/build.log
  trap 'echo "pgbuild.sh: build failed, log: $log" >&2' ERR
  "$EOINGEST_TEST_DIR/rdkafka.sh" sources >>"$log" 2>&1

  orig=$(fetch_orig "postgresql-$PG18_MAJOR" "$PG18_VERSION" "$work" "$log")
  case "$orig" in
    *"_$PG18_VERSION.orig."*) ;;
    *) eoi_die "sid's postgresql-$PG18_MAJOR is not $PG18_VERSION ($(basename "$orig")); set PG18_VERSION (see $log)" ;;
  esac
  mkdir "$work/pg"
  tar -xf "$orig" -C "$work/pg" --strip-components=1
  rm -rf "$PREFIX"
  (
    cd "$work/pg"
    nice -n 10 ./configure --prefix="$PREFIX" --with-openssl --with-icu --with-lz4 --with-zstd --with-readline
    nice -n 10 make -j2 world-bin
    make install-world-bin
  ) </dev/null >>"$log" 2>&1
  [ -x "$PREFIX/bin/pg_config" ] || eoi_die "PostgreSQL install incomplete (see $log)"

  orig=$(fetch_orig pgtap "" "$work" "$log")
  mkdir "$work/pgtap"
  tar -xf "$orig" -C "$work/pgtap" --strip-components=1
  (
    cd "$work/pgtap"
    nice -n 10 make PG_CONFIG="$PREFIX/bin/pg_config"
    make PG_CONFIG="$PREFIX/bin/pg_config" install
  ) </dev/null >>"$log" 2>&1
  [ -f "$PREFIX/share/extension/pgtap.control" ] || eoi_die "pgTAP install incomplete (see $log)"
  trap - ERR
  cached_build_mark
  rm -rf "$work"
}

cached_build_main "$@"
