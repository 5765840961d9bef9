#!/usr/bin/env bash
# The documentation against the code: README's Quick start, run as it is
# written (its shell and SQL blocks, in order, with the test bed's broker, a
# topic, role and job of this run's own, and Kafka's TopicCommand for
# kafka-topics.sh); every eoingest.* setting the library defines appears in
# docs/reference.md; every function of the schema eoingest appears there with
# exactly its parameters, in order.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 5
repo=$(cd "$(dirname "$0")/../.." && pwd)
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
work=$EOINGEST_RUN/docs-$$
mkdir -p "$work"
topic=qs_sensor_$$ role=qs_app_$$ job=qs_sensor_$$

# ---- README's Quick start: the fenced blocks between its heading and the next one
python3 - "$repo/README.md" "$work" "$KAFKA_BROKERS" "$topic" "$role" "$job" <<'PY'
import re, sys
readme, work, brokers, topic, role, job = sys.argv[1:]
text = open(readme).read()
section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"```(sh|sql)\n(.*?)```", section, re.S)
n = 0
for lang, body in blocks:
    body = body.replace("localhost:9092", brokers)
    body = re.sub(r"(--topic |-t )sensor\b", r"\g<1>" + topic, body)
    body = body.replace("topic => 'sensor'", f"topic => '{topic}'")
    body = re.sub(r"\bapp\b", role, body)
    body = re.sub(r"'sensor'", f"'{job}'", body)
    # the test bed's database has the extension already
    body = body.replace("CREATE EXTENSION eoingest;", "CREATE EXTENSION IF NOT EXISTS eoingest;")
    n += 1
    open(f"{work}/{n:02d}.{lang}", "w").write(body)
print(n)
PY
nblocks=$(ls "$work" | wc -l)
ok $([ "$nblocks" -ge 3 ] && echo 0 || echo 1) "README's Quick start has its blocks ($nblocks: $(ls "$work" | tr '\n' ' '))"

kafka-topics.sh() { kafka_tool org.apache.kafka.tools.TopicCommand "$@"; }
export -f kafka-topics.sh kafka_tool
sql "DROP TABLE IF EXISTS sensor_reading" >/dev/null
out=$work/out.txt
: >"$out"
status=0
for f in $(ls "$work" | grep -E '\.(sh|sql)$' | sort); do
  case $f in
    *.sh) bash -e "$work/$f" >>"$out" 2>&1 || { status=1; diag "$f failed: $(tail -n 5 "$out")"; break; } ;;
    *.sql) psql -X -v ON_ERROR_STOP=1 -f "$work/$f" >>"$out" 2>&1 || { status=1; diag "$f failed: $(tail -n 5 "$out")"; break; } ;;
  esac
done
is "$status" 0 "every block of the Quick start runs, in order, as written"
is "$(sql "SELECT string_agg(id || ' ' || ts || ' ' || temperature, ', ' ORDER BY ts) FROM sensor_reading")" \
  "sensor_1 1547718199 35.8, sensor_6 1547718201 15.4, sensor_7 1547718202 6.7" \
  "the Quick start's three readings are in the table, as it says"

# ---- every setting in the reference
missing=$(sql "SELECT name FROM pg_settings WHERE name LIKE 'eoingest.%' ORDER BY name" |
  while read -r s; do grep -q "\`$s\`" "$repo/docs/reference.md" || echo "$s"; done | tr '\n' ' ')
is "$missing" "" "every eoingest.* setting appears in docs/reference.md"

# ---- every function, with its parameters in order
sql "SELECT p.proname || '(' || coalesce((SELECT string_agg(a.n, ', ' ORDER BY a.i)
                                  FROM unnest(p.proargnames, coalesce(p.proargmodes, array_fill('i'::\"char\", ARRAY[p.pronargs])))
                                       WITH ORDINALITY AS a(n, m, i)
                                 WHERE a.m IN ('i', 'b', 'v')), '') || ')'
       FROM pg_proc p WHERE p.pronamespace = 'eoingest'::regnamespace ORDER BY 1" >"$work/functions.txt"
diff_out=$(python3 - "$repo/docs/reference.md" "$work/functions.txt" <<'PY'
import re, sys
doc = open(sys.argv[1]).read()
documented = {}
for name, args in re.findall(r"`eoingest\.([a-z_]+)\(([^`]*)\)`", doc):
    names = []
    for a in [x.strip() for x in args.split(",") if x.strip()]:
        names.append(a.split()[0].strip('"'))
    documented.setdefault(name, ", ".join(names))
for line in open(sys.argv[2]).read().split("\n"):
    if not line:
        continue
    name, args = line[:-1].split("(", 1)
    if name not in documented:
        print(f"{name}: not in docs/reference.md")
    elif documented[name] != args:
        print(f"{name}: documented ({documented[name]}), defined ({args})")
PY
)
is "$diff_out" "" "every function of schema eoingest is in docs/reference.md with its parameters, in order"

sql "SELECT eoingest.drop_job('$job')" >/dev/null 2>&1 || true
sql "DROP TABLE IF EXISTS sensor_reading; DROP OWNED BY $role; DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
rm -rf "$work"
done_testing
