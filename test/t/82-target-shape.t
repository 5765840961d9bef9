#!/usr/bin/env bash
# The shape a job writes into its target is the catalog's, not one
# worker's memory.  With parallelism 2, one worker writes and records the
# shape; the table is altered; the other worker's first write meets the
# change: the job fails, nothing is dead-lettered, its offsets stay.  The
# same for a worker started after the change (the launcher restarts one
# that exited).  start_job then accepts the table as it is; so does
# alter_job.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 14
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=shape_$$
eoi-kafka create-topic "$topic" 2 >/dev/null

# status JOB: "state dead_letters stored_offsets"
status() {
  sql "SELECT (SELECT state FROM eoingest.job_definitions WHERE name = '$1') || ' ' ||
              (SELECT count(*) FROM eoingest.dead_letters WHERE job = '$1') || ' ' ||
              (SELECT coalesce(sum(next_offset), 0) FROM eoingest.offsets WHERE job = '$1')"
}

sql "CREATE TABLE shape_t (id int, v text);
     SELECT eoingest.create_job(name => 'shape', brokers => '$KAFKA_BROKERS', topic => '$topic',
            target => 'shape_t', columns => '{id,v}', parallelism => 2, batch_timeout_ms => 100);
     SELECT eoingest.start_job('shape')" >/dev/null
printf '1,one\n2,two\n' | eoi-kafka produce "$topic" -p 0 >/dev/null
check "one worker writes partition 0's records" wait_until 60 "SELECT count(*) = 2 FROM shape_t"
is "$(sql "SELECT worker || ': ' || columns FROM eoingest.target_shapes")" "0: id integer, v text" \
  "the shape it wrote with is recorded, as worker 0's"

# v becomes an integer: the records the job was made for no longer fit.
sql "ALTER TABLE shape_t ALTER COLUMN v TYPE integer USING length(v)" >/dev/null
printf '3,three\n4,4\n' | eoi-kafka produce "$topic" -p 1 >/dev/null
check "the other worker's first write meets the altered table: the job fails" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%\"shape_t\" was altered while the job was running%'
     FROM eoingest.job_definitions WHERE name = 'shape'"
is "$(status shape)" "failed 0 2" "no record was dead-lettered, and partition 1's offsets did not move"

# start_job accepts the table as it is: the records of partition 1 are now
# the table's to judge ("three" is not an integer: a dead letter).
sql "SELECT eoingest.start_job('shape')" >/dev/null
check "after start_job the job writes into the table as it is" wait_until 60 \
  "SELECT count(*) = 1 FROM shape_t WHERE id = 4 AND v = 4"
is "$(status shape)" "running 1 4" "the job runs on with the new shape"

# Workers that start after the change: alter the table back while the job
# runs, then end its workers; the launcher starts them again, and their
# first write meets the change.
sql "ALTER TABLE shape_t ALTER COLUMN v TYPE text" >/dev/null
wait_until 30 "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'eoingest worker'" >/dev/null || true
is "$(sql "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'eoingest worker'")" \
  "2" "both workers of the job are ended"
check "the launcher starts them again" wait_until 60 \
  "SELECT count(*) = 2 FROM pg_stat_activity WHERE backend_type = 'eoingest worker'"
printf '5,five\n' | eoi-kafka produce "$topic" -p 0 >/dev/null
printf '6,six\n' | eoi-kafka produce "$topic" -p 1 >/dev/null
check "a write after the change fails the job, whichever worker makes it" wait_until 90 \
  "SELECT state = 'failed' AND last_error LIKE '%was altered while the job was running%'
     FROM eoingest.job_definitions WHERE name = 'shape'"
is "$(status shape)" "failed 1 4" "nothing more dead-lettered or consumed"

# alter_job accepts the table as it is too.
sql "SELECT eoingest.alter_job('shape', batch_timeout_ms => 200);
     SELECT eoingest.start_job('shape')" >/dev/null
check "after alter_job the job writes the new records" wait_until 60 \
  "SELECT count(*) = 2 FROM shape_t WHERE id IN (5, 6)"
is "$(sql "SELECT DISTINCT t.columns FROM eoingest.target_shapes t JOIN eoingest.jobs j ON j.id = t.job_id WHERE j.name = 'shape'")" \
  "id integer, v text" "the recorded shape is the table's as it is"

sql "SELECT eoingest.drop_job('shape'); DROP TABLE shape_t" >/dev/null

# two_phase: the workers write one epoch together, uncommitted until all
# have prepared it; neither may wait for the other's record of the shape.
topic2=shape2_$$
eoi-kafka create-topic "$topic2" 2 >/dev/null
sql "CREATE TABLE shape2_t (id int, v text);
     SELECT eoingest.create_job(name => 'shape2', brokers => '$KAFKA_BROKERS', topic => '$topic2',
            target => 'shape2_t', columns => '{id,v}', mode => 'two_phase', parallelism => 2,
            batch_timeout_ms => 100, checkpoint_interval_ms => 500);
     SELECT eoingest.start_job('shape2')" >/dev/null
printf '1,one\n' | eoi-kafka produce "$topic2" -p 0 >/dev/null
printf '2,two\n' | eoi-kafka produce "$topic2" -p 1 >/dev/null
check "two_phase, both workers' first writes in one epoch: committed within 20 s" wait_until 20 \
  "SELECT count(*) = 2 FROM shape2_t"
is "$(sql "SELECT string_agg(worker::text, ',' ORDER BY worker) FROM eoingest.target_shapes s JOIN eoingest.jobs j ON j.id = s.job_id WHERE j.name = 'shape2'")" \
  "0,1" "each worker recorded the shape it wrote with"
sql "SELECT eoingest.drop_job('shape2'); DROP TABLE shape2_t" >/dev/null
done_testing
