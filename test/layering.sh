#!/usr/bin/env bash
# The layering of src/: each folder is a layer, and a file includes headers
# only of its own folder and of the folders below it (CONTRIBUTING.md, the layering rule).
# Reads every #include "..." of src/*/*.c and src/*/*.h; prints each
# offending line and exits 1 when a file includes a header of a higher
# folder, or names a project header without its folder where that header is
# in another folder.  Includes that are not the project's (PostgreSQL's
# "utils/jsonb.h", "postgres.h") are not looked at.  Needs bash, grep, awk.
set -euo pipefail

# The layers, bottom up: a folder may include its own and those before it.
LAYERS="base store kafka format apply envelope worker api"

SRC=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/src}
cd "$SRC"

shopt -s nullglob
files=(*/*.c */*.h)
shopt -u nullglob
if [ ${#files[@]} -eq 0 ]; then
  echo "layering: no source files under $SRC/*/" >&2
  exit 1
fi

# Every source file must be built: a file missing from the Makefile's OBJS
# still links (an extension's undefined symbols are looked up at load), and
# the server then refuses to load the library.
makefile=$SRC/../Makefile
if [ -f "$makefile" ]; then
  unbuilt=0
  for c in */*.c; do
    if ! grep -q "src/${c%.c}\.o" "$makefile"; then
      echo "layering: src/$c is not in the Makefile's OBJS" >&2
      unbuilt=1
    fi
  done
  [ "$unbuilt" = 0 ] || exit 1
fi

# Every folder under src/ must be a layer: a new folder needs its rank here.
for dir in */; do
  dir=${dir%/}
  case " $LAYERS " in
    *" $dir "*) ;;
    *) echo "layering: src/$dir/ is no layer of LAYERS in test/layering.sh" >&2; exit 1 ;;
  esac
done

# file<TAB>line number<TAB>the #include line, for every quoted include
{ grep -nH '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "${files[@]}" || true; } |
  awk -v layers="$LAYERS" -v nfiles="${#files[@]}" -v headers="$(printf '%s\n' */*.h | tr '\n' ' ')" '
    BEGIN {
      n = split(layers, l, " ")
      for (i = 1; i <= n; i++) rank[l[i]] = i
      m = split(headers, h, " ")
      for (i = 1; i <= m; i++) {
        have[h[i]] = 1
        base = h[i]; sub(/^.*\//, "", base)
        if (base in where) where[base] = where[base] " " h[i]
        else where[base] = h[i]
      }
      bad = 0; edges = 0
    }
    {
      # src/dir/file.c:12:#include "x/y.h"
      p1 = index($0, ":"); file = substr($0, 1, p1 - 1)
      rest = substr($0, p1 + 1); p2 = index(rest, ":"); line = substr(rest, p2 + 1)
      name = line; sub(/^[^"]*"/, "", name); sub(/".*$/, "", name)
      dir = file; sub(/\/.*$/, "", dir)
      if (name ~ /\//) {
        to = name; sub(/\/.*$/, "", to)
        if (!(to in rank)) next          # PostgreSQL'"'"'s or a library'"'"'s
        if (!(name in have)) {
          printf "src/%s: %s (no such project header)\n", file, line; bad++; next
        }
      } else {
        # unprefixed: the compiler looks in the file'"'"'s own folder first
        if ((dir "/" name) in have) { edges++; next }
        if (!(name in where)) next       # not the project'"'"'s
        printf "src/%s: %s (names %s without its folder)\n", file, line, where[name]; bad++; next
      }
      edges++
      if (rank[to] > rank[dir]) {
        printf "src/%s: %s (%s includes %s, a higher layer)\n", file, line, dir, to; bad++
      }
    }
    END {
      if (bad > 0) {
        printf "layering: %d include(s) break the layers (bottom up: %s)\n", bad, layers
        exit 1
      }
      printf "layering: ok: %d folders, %d files, %d include edges between project headers, none upward (%s)\n",
        n, nfiles, edges, layers
    }'
