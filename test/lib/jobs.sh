# shellcheck shell=bash
# Helpers for tests that run a job over a topic to its end (source after tap.sh).

# set_insert_path PATH: eoingest.insert_path (direct, copy) for the batches
# written from now on, reloaded.
set_insert_path() {
  sql "ALTER SYSTEM SET eoingest.insert_path = '$1'" >/dev/null
  sql "SELECT pg_reload_conf()" >/dev/null
}

# reset_insert_path: back to the default.
reset_insert_path() {
  sql "ALTER SYSTEM RESET eoingest.insert_path" >/dev/null
  sql "SELECT pg_reload_conf()" >/dev/null
}

# job_consume_all JOB MESSAGES SECONDS ARGS: create_job(name => JOB, ARGS),
# start it, wait up to SECONDS until its stored offsets add up to MESSAGES,
# then stop it and wait until it no longer runs.
job_consume_all() {
  local job=$1 n=$2 secs=$3 args=$4
  sql "SELECT eoingest.create_job(name => '$job', $args)" >/dev/null
  sql "SELECT eoingest.start_job('$job')" >/dev/null
  wait_until "$secs" "SELECT coalesce(sum(next_offset), 0) = $n FROM eoingest.offsets WHERE job = '$job'" || return 1
  sql "SELECT eoingest.stop_job('$job')" >/dev/null
  wait_until 60 "SELECT state <> 'running' FROM eoingest.job_status WHERE name = '$job'"
}
