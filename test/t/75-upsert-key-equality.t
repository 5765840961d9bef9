#!/usr/bin/env bash
# A tombstone deletes the row whose key the target's unique index holds
# equal, whatever the key's type: a citext key, whose equality is not
# pg_catalog's, deleted by a tombstone of another case, through the
# statement path (eoingest.upsert_path = on_conflict) and the bulk path.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 4
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE EXTENSION IF NOT EXISTS citext" >/dev/null
topic=keyeq_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
# Two tombstones (key, empty value) and one upsert of a third key in another case.
printf 'ALICE\t\nBOB\t\ncarol\tcarol,3\n' | eoi-kafka produce -K -z "$topic" >/dev/null

for path in on_conflict bulk; do
  sql "ALTER SYSTEM SET eoingest.upsert_path = '$path'" >/dev/null
  sql "SELECT pg_reload_conf()" >/dev/null
  sql "CREATE TABLE keq_$path (id citext PRIMARY KEY, v text);
       INSERT INTO keq_$path VALUES ('Alice', 'a'), ('bob', 'b'), ('Carol', 'c');
       SELECT eoingest.create_job(name => 'keq_$path', brokers => '$KAFKA_BROKERS', topic => '$topic',
              target => 'keq_$path', mode => 'upsert', columns => '{id,v}', batch_timeout_ms => 100);
       SELECT eoingest.start_job('keq_$path')" >/dev/null
  check "$path: the job reaches the log end" wait_until 60 \
    "SELECT coalesce(sum(next_offset), 0) = 3 FROM eoingest.offsets WHERE job = 'keq_$path'"
  is "$(sql "SELECT string_agg(id || '=' || v, ' ' ORDER BY id) FROM keq_$path")" "Carol=3" \
    "$path: tombstones of ALICE and BOB deleted Alice and bob; carol updated Carol in place"
  sql "SELECT eoingest.drop_job('keq_$path')" >/dev/null
done

sql "ALTER SYSTEM RESET eoingest.upsert_path" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "DROP TABLE keq_on_conflict, keq_bulk" >/dev/null
done_testing
