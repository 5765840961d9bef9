#!/usr/bin/env bash
# The Debian package. debian/ builds one binary package per PostgreSQL major
# that postgresql-server-dev-all supports here (pg_buildext,
# debian/pgversions); on Debian 12 that is postgresql-15-eoingest. Built from
# the tracked files alone, as a source package would hold them; its contents
# are what `make install` installs, and its library links the system's
# librdkafka, libavro and libcurl, with no run path.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

matches() { if [[ $1 =~ $2 ]]; then ok 0 "$3"; else ok 1 "$3"; diag "got: $1" "want (regex): $2"; fi; }

repo=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$repo/eoingest.control")
majors=$(cd "$repo" && pg_buildext supported-versions)
work=$(mktemp -d /tmp/eoingest-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT

plan $((4 + 7 * $(echo "$majors" | wc -w)))
mkdir "$work/eoingest-$version"
(cd "$repo" && git ls-files -z | tar --null -T - -c) | tar -x -C "$work/eoingest-$version"
# The build's own environment: not the test bed's librdkafka or pg_config.
if (cd "$work/eoingest-$version" &&
  env -u RDKAFKA_PREFIX -u PG_CONFIG -u LD_LIBRARY_PATH dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
  ok 0 "dpkg-buildpackage -b builds from the tracked files"
else
  tail -n 30 "$work/build.log" | sed 's/^/# /'
  ok 1 "dpkg-buildpackage -b builds from the tracked files"
fi
is "$(sed -n '1s/^eoingest (\([^-]*\)-.*/\1/p' "$repo/debian/changelog")" "$version" \
  "debian/changelog's version is the extension's default_version"
is "$(ls "$work"/*.deb 2>/dev/null | grep -vc -- '-dbgsym_')" "$(echo "$majors" | wc -w)" \
  "one package per supported major ($(echo $majors)), besides the debug symbols"

sqlfiles=$(cd "$repo/sql" && ls eoingest--*.sql | sort | tr '\n' ' ')
for v in $majors; do
  deb=$(ls "$work"/postgresql-"$v"-eoingest_"$version"-*.deb 2>/dev/null | head -n 1) || true
  root=$work/root-$v
  mkdir -p "$root"
  [ -n "$deb" ] && dpkg-deb -x "$deb" "$root"
  is "$( [ -n "$deb" ] && [ -f "$root/usr/lib/postgresql/$v/lib/eoingest.so" ] && echo yes)" yes \
    "postgresql-$v-eoingest: eoingest.so in PostgreSQL $v's library directory"
  is "$(cd "$root/usr/share/postgresql/$v/extension" 2>/dev/null && ls eoingest--*.sql | sort | tr '\n' ' ')" "$sqlfiles" \
    "postgresql-$v-eoingest: the install script and every update script"
  check "postgresql-$v-eoingest: the control file as in the tree" \
    cmp -s "$repo/eoingest.control" "$root/usr/share/postgresql/$v/extension/eoingest.control"
  libs=$(env -u LD_LIBRARY_PATH ldd "$root/usr/lib/postgresql/$v/lib/eoingest.so" 2>/dev/null | awk '/librdkafka|libavro|libcurl/ {print $3}' | sort | tr '\n' ' ')
  matches "$libs" "^(/usr)?/lib/[^ ]*libavro[^ ]* (/usr)?/lib/[^ ]*libcurl[^ ]* (/usr)?/lib/[^ ]*librdkafka\.so\.1 $" \
    "postgresql-$v-eoingest: links the system's libavro, libcurl and librdkafka"
  is "$(readelf -d "$root/usr/lib/postgresql/$v/lib/eoingest.so" 2>/dev/null | grep -cE 'RPATH|RUNPATH')" 0 \
    "postgresql-$v-eoingest: no run path (not the test bed's librdkafka)"
  check "postgresql-$v-eoingest: its dependencies are met here (dpkg --dry-run -i)" \
    bash -c "dpkg --dry-run -i '$deb' >/dev/null 2>&1"
  depends=$(dpkg-deb -f "$deb" Depends 2>/dev/null || true)
  matches "$depends" "postgresql-$v.*librdkafka1|librdkafka1.*postgresql-$v" \
    "postgresql-$v-eoingest depends on postgresql-$v and librdkafka1: $depends"
done
check "the tree's debian/control is debian/control.in for these majors (pg_buildext checkcontrol)" \
  bash -c "cd '$work/eoingest-$version' && pg_buildext checkcontrol"
done_testing
