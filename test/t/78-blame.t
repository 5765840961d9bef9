#!/usr/bin/env bash
# A dead letter is the record an error was about, and only that one.  A
# BEFORE ROW trigger catches an error while writing record 3 (an EXCEPTION
# block), and record 7's foreign key fails when the statement ends, an error
# that names no record: the batch is bisected, record 7 alone is the dead
# letter, and record 3 goes in.  Through COPY's text and straight into tuples,
# and with a transform.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/jobs.sh"

plan 6
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=blame_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
for i in $(seq 0 9); do
  if [ "$i" = 7 ]; then echo "7,99"; else echo "$i,$i"; fi
done | eoi-kafka produce "$topic" >/dev/null
sql "CREATE TABLE blame_parent (id int PRIMARY KEY); INSERT INTO blame_parent SELECT generate_series(0, 9);
     CREATE FUNCTION blame_catch() RETURNS trigger LANGUAGE plpgsql AS \$\$
     BEGIN
       IF NEW.id = 3 THEN
         BEGIN
           PERFORM 1 / 0;
         EXCEPTION WHEN division_by_zero THEN
           NULL;	-- handled: record 3 is fine
         END;
       END IF;
       RETURN NEW;
     END \$\$" >/dev/null

run() {	# run NAME ARGS: the job to the log end; prints rows and dead letters' offsets
  sql "CREATE TABLE $1 (id int, ref int REFERENCES blame_parent (id));
       CREATE TRIGGER catch BEFORE INSERT ON $1 FOR EACH ROW EXECUTE FUNCTION blame_catch()" >/dev/null
  job_consume_all "$1" 10 60 "brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 200, $2" || true
  echo "$(sql "SELECT string_agg(id::text, ',' ORDER BY id) FROM $1") / $(sql "SELECT string_agg(\"offset\"::text, ',' ORDER BY \"offset\") FROM eoingest.dead_letters WHERE job = '$1'")"
}

set_insert_path copy
is "$(run blame_copy "target => 'blame_copy'")" "0,1,2,3,4,5,6,8,9 / 7" "through COPY: record 7 is the dead letter, record 3 is in"
set_insert_path direct
is "$(run blame_direct "target => 'blame_direct'")" "0,1,2,3,4,5,6,8,9 / 7" "straight into tuples: the same"
reset_insert_path
is "$(run blame_tf "transform => 'INSERT INTO blame_tf SELECT split_part(value, '','', 1)::int, split_part(value, '','', 2)::int FROM eoingest.batch()'")" \
  "0,1,2,3,4,5,6,8,9 / 7" "with a transform: the same"
for j in blame_copy blame_direct blame_tf; do
  is "$(sql "SELECT sqlstate FROM eoingest.dead_letters WHERE job = '$j'")" 23503 "$j: the dead letter's error is the foreign key's"
done

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'blame_%';
     DROP TABLE blame_copy, blame_direct, blame_tf, blame_parent; DROP FUNCTION blame_catch()" >/dev/null
done_testing
