# shellcheck shell=bash
# Failover runs for test/t/90-failover.t and test/t/93-failover-matrix.t.
# Source after tap.sh.
#
# A run: the test bed's server is the primary; a hot standby is made from it
# with pg_basebackup -R (both run as the unprivileged user); one job ingests
# a topic of 4 partitions with commit_to_kafka; the primary is killed in the
# middle of the ingestion; the standby is promoted; the job must go on there
# by itself, each record exactly once.  Then the old primary is started again
# as a primary (a split brain): it must refuse to run the job.  It stays the
# test bed's server afterwards; the job's leftovers are dropped there.
#
#   fo_run NAME MODE PARALLELISM REPLICATION KILL [FAULT]
#     MODE         exactly_once | two_phase
#     REPLICATION  async | sync (synchronous_standby_names = '*', inherited by
#                  the standby) | gap (async, the standby's WAL receiver is
#                  stopped while the primary commits the rest)
#     KILL         immediate (pg_ctl stop -m immediate) | sigkill (SIGKILL to
#                  the postmaster and all its children at once)
#     FAULT        two_phase only: undecided (the workers have prepared, no
#                  decision yet) | decided (the decision is recorded, the
#                  prepared transactions not yet committed)
#
# Each run adds 6 TAP results and one line to $FO_TABLE:
#   mode, replication, kill, lost, duplicated, re-read, ms to resume

FO_SDATA=$EOINGEST_RUN/standby
FO_SSOCK=$EOINGEST_RUN/standby-sock
FO_SPORT=$((PGPORT + 2))
FO_TABLE=${FO_TABLE:-$EOINGEST_RUN/failover-runs.txt}
FO_TOTAL=3000

fo_as_pg() { (cd / && runuser -u "$EOINGEST_OSUSER" -- "$@"); }

# S QUERY: on the standby (or promoted standby); errors are printed, not fatal.
S() { psql -XAtq -h "$FO_SSOCK" -p "$FO_SPORT" -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c "$1" 2>&1 || true; }

# fo_wait SECONDS QUERY: until QUERY on the standby prints 't'.
fo_wait() {
  local deadline=$((SECONDS + $1)) out
  while :; do
    out=$(S "$2")
    [ "$out" = t ] && return 0
    if [ $SECONDS -ge $deadline ]; then
      diag "standby: no 't' after $1 s from: $2" "last output: $out"
      return 1
    fi
    sleep 0.05
  done
}

fo_now_ms() { date +%s%3N; }

fo_make_standby() {
  rm -rf "$FO_SDATA" "$FO_SSOCK"
  mkdir -p "$FO_SDATA" "$FO_SSOCK"
  chown "$EOINGEST_OSUSER:" "$FO_SDATA" "$FO_SSOCK"
  chmod 700 "$FO_SDATA"
  fo_as_pg "$PGBIN/pg_basebackup" -D "$FO_SDATA" -R -X stream -c fast -h "$PGHOST" -p "$PGPORT" -U postgres
  printf "port = %s\nunix_socket_directories = '%s'\n" "$FO_SPORT" "$FO_SSOCK" |
    fo_as_pg tee -a "$FO_SDATA/postgresql.auto.conf" >/dev/null
  fo_as_pg "$PGBIN/pg_ctl" -D "$FO_SDATA" -l "$FO_SDATA/standby.log" -w start >/dev/null
}

fo_stop_standby() {
  fo_as_pg "$PGBIN/pg_ctl" -D "$FO_SDATA" -w -m fast stop >/dev/null 2>&1 || true
  rm -rf "$FO_SDATA" "$FO_SSOCK"
}

fo_kill_primary() {
  local pm
  case "$1" in
    immediate) "$EOINGEST_TEST_DIR/pg.sh" stop-immediate ;;
    sigkill)
      pm=$(head -n 1 "$PGDATA/postmaster.pid")
      # shellcheck disable=SC2046
      kill -KILL "$pm" $(pgrep -P "$pm") 2>/dev/null || true
      while kill -0 "$pm" 2>/dev/null || pgrep -P "$pm" >/dev/null; do sleep 0.05; done
      ;;
  esac
}

# The settings a run put in the primary's postgresql.auto.conf (ALTER
# SYSTEM), removed while it is down, so that it comes back as it was.
fo_clean_primary_conf() {
  fo_as_pg sed -i -e '/^synchronous_standby_names/d' -e '/^eoingest\.fault_/d' "$PGDATA/postgresql.auto.conf"
}

# fo_replicated QUERY: until QUERY prints 't' on the primary, and the standby
# has replayed the primary's WAL as it was then.  (A standby lists no
# prepared transaction in pg_prepared_xacts before it is promoted.)
fo_replicated() {
  local lsn
  wait_until 120 "$1" || return 1
  lsn=$(sql "SELECT pg_current_wal_lsn()")
  fo_wait 60 "SELECT pg_last_wal_replay_lsn() >= '$lsn'"
}

# fo_produce_slowly TOPIC START COUNT: in chunks of 100, ~20 a second.
fo_produce_slowly() {
  local at=$2 end=$(($2 + $3))
  while [ "$at" -lt "$end" ]; do
    eoi-kafka produce-seq "$1" --count 100 --start "$at" --format csv >/dev/null
    at=$((at + 100))
    sleep 0.05
  done
}

fo_run() {
  local name=$1 mode=$2 par=$3 repl=$4 kill=$5 fault=${6:-}
  local topic=fo_${name}_$$ table=fo_$name label="$2 p$3, $4, $5${6:+, $6}"
  local walpid= producer= primary_rows standby_rows t0 t1 resume_ms reread job_id

  eoi-kafka create-topic "$topic" 4 >/dev/null
  sql "CREATE TABLE $table (part int, off bigint, value text)" >/dev/null
  if [ "$repl" = sync ]; then
    sql "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
    sql "SELECT pg_reload_conf()" >/dev/null
  fi
  fo_make_standby
  sql "SELECT eoingest.create_job(name => '$name', brokers => '$KAFKA_BROKERS', topic => '$topic', mode => '$mode',
          parallelism => $par, batch_size => 100, batch_timeout_ms => 100, checkpoint_interval_ms => 100,
          commit_to_kafka => true,
          transform => 'INSERT INTO $table SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
       SELECT eoingest.start_job('$name')" >/dev/null
  job_id=$(sql "SELECT id FROM eoingest.jobs WHERE name = '$name'")
  eoi-kafka produce-seq "$topic" --count 1000 --format csv >/dev/null
  sql "SELECT eoingest.wait_for_catchup('$name', '60 s')" >/dev/null
  fo_wait 60 "SELECT count(*) = 1000 FROM $table" || true

  if [ "$repl" = gap ]; then
    walpid=$(S "SELECT pid FROM pg_stat_wal_receiver")
    kill -STOP "$walpid"
  fi
  if [ -n "$fault" ]; then
    local point=after_prepare
    [ "$fault" = decided ] && point=after_decision
    sql "ALTER SYSTEM SET eoingest.fault_point = '$point'" >/dev/null
    sql "ALTER SYSTEM SET eoingest.fault_action = 'sleep'" >/dev/null
    sql "ALTER SYSTEM SET eoingest.fault_sleep_ms = '600s'" >/dev/null
    sql "SELECT pg_reload_conf()" >/dev/null
  fi
  local producer
  if [ "$repl" = gap ]; then
    eoi-kafka produce-seq "$topic" --count $((FO_TOTAL - 1000)) --start 1000 --format csv >/dev/null
  else
    fo_produce_slowly "$topic" 1000 $((FO_TOTAL - 1000)) &
    producer=$!
  fi

  # Kill in the middle: all of it committed on the primary while the
  # standby receives nothing (gap); an epoch prepared, or decided, and on
  # the standby (fault); else while the records still arrive.
  case "$repl:$fault" in
    gap:*) check "[$label] the primary commits everything while the standby lags" wait_until 120 \
             "SELECT count(*) = $FO_TOTAL FROM $table" ;;
    *:undecided) check "[$label] an epoch is prepared, undecided, and replicated" fo_replicated \
             "SELECT count(*) > 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%:$job_id:%'" ;;
    *:decided) check "[$label] an epoch is decided, not committed, and replicated" fo_replicated \
             "SELECT count(*) > 0 FROM pg_prepared_xacts p WHERE gid LIKE 'eoingest:%'
                AND EXISTS (SELECT FROM eoingest.checkpoints c WHERE c.job_id = $job_id
                             AND p.gid LIKE 'eoingest:%:$job_id:' || c.epoch || ':%')" ;;
    *) check "[$label] ingestion is under way" wait_until 120 \
             "SELECT count(*) >= 1500 FROM $table" ;;
  esac
  primary_rows=$(sql "SELECT count(*) FROM $table")
  fo_kill_primary "$kill"
  if [ -n "$walpid" ]; then
    # What the stopped WAL receiver has not read is still in its socket:
    # SIGKILL loses it (the standby restarts, a crash for its postmaster).
    kill -KILL "$walpid"
    kill -CONT "$walpid" 2>/dev/null || true
    sleep 1
    fo_wait 60 "SELECT pg_is_in_recovery()" || true
  fi
  # What the standby holds: all it received, replayed.
  fo_wait 30 "SELECT pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn()" || true
  standby_rows=$(S "SELECT count(*) FROM $table")

  fo_as_pg "$PGBIN/pg_ctl" -D "$FO_SDATA" -w promote >/dev/null
  t0=$(fo_now_ms)
  if [ "$repl" = sync ]; then
    # The promoted standby inherited synchronous_standby_names and has no
    # standby of its own: the job's commits wait, and job_status says so.
    check "[$label] the promoted standby's job stalls in SyncRep, and job_status says so" fo_wait 60 \
      "SET eoingest.stall_after = '1s'; SELECT bool_or(state = 'stalled' AND wait_event = 'IPC:SyncRep') FROM eoingest.job_status WHERE name = '$name'"
    S "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
    S "SELECT pg_reload_conf()" >/dev/null
    t0=$(fo_now_ms)
  else
    check "[$label] the standby is promoted and takes writes" fo_wait 60 \
      "SELECT NOT pg_is_in_recovery() AND NOT pg_catalog.current_setting('transaction_read_only')::boolean"
  fi
  fo_wait 120 "SELECT count(*) > $standby_rows OR count(*) = $FO_TOTAL FROM $table" || true
  t1=$(fo_now_ms)
  resume_ms=$((t1 - t0))
  [ -n "$producer" ] && wait "$producer"
  fo_wait 180 "SELECT count(*) >= $FO_TOTAL FROM $table" || true
  is "$(S "SELECT ($FO_TOTAL - count(DISTINCT (part, off))) || ' lost, ' || (count(*) - count(DISTINCT (part, off))) || ' duplicated' FROM $table")" \
    "0 lost, 0 duplicated" "[$label] after promotion: every record exactly once"
  is "$(S "SELECT sum(next_offset) || ' ' || (SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%')
           || ' ' || (SELECT string_agg(DISTINCT state, ',') FROM eoingest.job_status WHERE name = '$name')
           || ' ' || (SELECT ran_on_timeline > 1 FROM eoingest.jobs WHERE name = '$name')
           FROM eoingest.offsets WHERE job = '$name'")" "$FO_TOTAL 0 running true" \
    "[$label] offsets at the log end, no GID left, the job running, the new timeline recorded"
  reread=$((primary_rows - standby_rows))
  [ "$reread" -lt 0 ] && reread=0
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$mode p$par" "$repl" "$kill${fault:+ ($fault)}" \
    "$(S "SELECT $FO_TOTAL - count(DISTINCT (part, off)) FROM $table")" \
    "$(S "SELECT count(*) - count(DISTINCT (part, off)) FROM $table")" "$reread" "$resume_ms" >>"$FO_TABLE"
  diag "[$label] primary had $primary_rows rows at the kill, the standby $standby_rows; resumed in $resume_ms ms"

  # Split brain: the old primary, started again as a primary, refuses,
  # and takes none of the records produced after the failover.  (The new
  # primary's workers stamped the consumer group when they started.)
  local ends
  ends=$(eoi-kafka watermarks "$topic" | awk '{printf "%s(%d,%d)", (NR > 1 ? "," : ""), $1, $3}')
  eoi-kafka produce-seq "$topic" --count 200 --start "$FO_TOTAL" --format csv >/dev/null
  fo_clean_primary_conf
  "$EOINGEST_TEST_DIR/pg.sh" start >/dev/null
  check "[$label] the old primary, back as a primary, refuses to run the job" wait_until 60 \
    "SELECT bool_and(state = 'failed' AND last_error LIKE '%ran on timeline%but this server is on timeline%') FROM eoingest.job_status WHERE name = '$name'"
  is "$(sql "SELECT count(*) FROM $table t JOIN (VALUES $ends) e(p, hi) ON t.part = e.p WHERE t.off >= e.hi")" 0 \
    "[$label] and ingests none of the records produced since into its diverged copy"
  fo_stop_standby
  sql "SELECT eoingest.drop_job('$name')" >/dev/null 2>&1 || true
  sql "DROP TABLE $table" >/dev/null 2>&1 || true
  check "[$label] the old primary holds no prepared transaction of the job once it is dropped" wait_until 60 \
    "SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'eoingest:%:$job_id:%'"
}
