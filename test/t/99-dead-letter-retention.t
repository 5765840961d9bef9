#!/usr/bin/env bash
# eoingest.dead_letter_retention: the launcher deletes the dead letters that
# failed longer ago than the setting (of every job), keeps the others, and
# says how many it deleted; 0 (the default) keeps them all.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 4
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=dlret_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
printf '1,a\n2,b\n3,c\n4,4\n' | eoi-kafka produce "$topic" >/dev/null
sql "CREATE TABLE dl_ret (id int, v int);
     SELECT eoingest.create_job(name => 'dl_ret', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'dl_ret',
            batch_timeout_ms => 100);
     SELECT eoingest.start_job('dl_ret')" >/dev/null
check "three bad records are dead letters" wait_until 60 \
  "SELECT count(*) = 3 FROM eoingest.dead_letters WHERE job = 'dl_ret'"
# Two of them failed two hours ago, as far as the table knows.
sql "UPDATE eoingest.dead_letters SET failed_at = now() - interval '2 hours' WHERE job = 'dl_ret' AND \"offset\" < 2" >/dev/null
sleep 2
is "$(sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = 'dl_ret'")" 3 "without the setting every dead letter stays"

sql "ALTER SYSTEM SET eoingest.dead_letter_retention = '1h'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
check "with a retention of an hour the two older ones go, the recent one stays" wait_until 30 \
  "SELECT string_agg(\"offset\"::text, ',') = '2' FROM eoingest.dead_letters WHERE job = 'dl_ret'"
check "the launcher says so" \
  grep -q 'deleted 2 dead letters older than eoingest.dead_letter_retention (60 min)' "$EOINGEST_RUN/pg.log"

sql "ALTER SYSTEM RESET eoingest.dead_letter_retention" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sql "SELECT eoingest.drop_job('dl_ret'); DROP TABLE dl_ret" >/dev/null 2>&1
done_testing
