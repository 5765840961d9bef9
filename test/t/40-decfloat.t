#!/usr/bin/env bash
# The fast path of double precision fields (src/format/decfloat.c) against
# strtod, bit for bit, without the server: test/tools/decfloat-check.c.
# EOINGEST_DECFLOAT_CASES sets the number of random decimals (default 5,000,000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! ${CC:-cc} -O2 -Wall -Wextra -Werror -I "$repo/src" -o "$out/decfloat-check" \
  "$repo/test/tools/decfloat-check.c" "$repo/src/format/decfloat.c"; then
  echo "1..1"
  echo "not ok 1 - building test/tools/decfloat-check.c"
  exit 1
fi
"$out/decfloat-check" "${EOINGEST_DECFLOAT_CASES:-5000000}"
