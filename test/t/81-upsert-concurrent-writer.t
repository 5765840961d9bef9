#!/usr/bin/env bash
# An upsert batch next to an ordinary concurrent writer: another session's
# still-open transaction has inserted, or deleted, a key the batch upserts.
# The batch waits for it, as INSERT ... ON CONFLICT waits, and then applies
# its value on top of the committed row or inserts it; the job never fails.
# Run through the bulk path (the default) and the statement.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 24
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1

# hold TABLE KEY WRITE ENDING: in the background, a transaction inserts
# (KEY, 'theirs') into TABLE or deletes KEY (WRITE), and ends with ENDING
# six seconds later.
hold() {
  local change="INSERT INTO $1 VALUES ($2, 'theirs')"
  [ "$3" = delete ] && change="DELETE FROM $1 WHERE id = $2"
  psql -XAtq -v ON_ERROR_STOP=1 >/dev/null <<SQL &
BEGIN;
$change;
SELECT pg_sleep(6);
$4;
SQL
}

for path in bulk on_conflict; do
  n=0
  topic=ucw_${path}_$$
  eoi-kafka create-topic "$topic" 1 >/dev/null
  sql "ALTER SYSTEM SET eoingest.upsert_path = '$path'" >/dev/null
  sql "SELECT pg_reload_conf()" >/dev/null
  t=ucw_$path
  sql "CREATE TABLE $t (id int PRIMARY KEY, v text);
       INSERT INTO $t VALUES (1, 'old');
       SELECT eoingest.create_job(name => '$t', brokers => '$KAFKA_BROKERS', topic => '$topic',
              target => '$t', mode => 'upsert', columns => '{id,v}', batch_timeout_ms => 100);
       SELECT eoingest.start_job('$t')" >/dev/null
  key=1
  for case in "insert ROLLBACK" "insert COMMIT" "delete ROLLBACK" "delete COMMIT"; do
    read -r write ending <<<"$case"
    key=$((key + 1))
    [ "$write" = delete ] && sql "INSERT INTO $t VALUES ($key, 'before')" >/dev/null
    hold "$t" "$key" "$write" "$ending"
    holder=$!
    # the other transaction holds the key before the batch comes
    wait_until 30 "SELECT count(*) = 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                   WHERE c.relname = '$t' AND l.mode = 'RowExclusiveLock' AND l.pid <> pg_backend_pid()" \
      || diag "the holding transaction did not start"
    # an existing key and the held one in one batch: the existing key makes the bulk path probe
    printf '1\t1,mine-%s\n%s\t%s,mine\n' "$ending" "$key" "$key" | eoi-kafka produce -K "$topic" >/dev/null
    n=$((n + 2))
    wait "$holder"
    check "$path, $write $ending: the job reaches the log end" wait_until 60 \
      "SELECT coalesce(sum(next_offset), 0) = $n FROM eoingest.offsets WHERE job = '$t'"
    is "$(sql "SELECT v FROM $t WHERE id = $key")" "mine" \
      "$path, $write $ending: the batch's value for the held key is there after the other transaction ended"
    is "$(sql "SELECT state || ' ' || coalesce(last_error, '-') FROM eoingest.job_status WHERE name = '$t'")" \
      "running -" "$path, $write $ending: the job is running with no error"
  done
  sql "SELECT eoingest.drop_job('$t')" >/dev/null
done

sql "ALTER SYSTEM RESET eoingest.upsert_path" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "DROP TABLE ucw_bulk, ucw_on_conflict" >/dev/null
done_testing
