#!/usr/bin/env bash
# A hot standby made with pg_basebackup -R: job_status says the jobs do not
# run there, the job functions refuse with 25006 and a hint; after the
# primary dies and the standby is promoted, the job resumes there by itself,
# exactly once.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 9
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3"; diag "got: $1" "want: *$2*" ;; esac; }
topic=ha_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE ha_t (part int, off bigint, value text)" >/dev/null
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 1000 --format csv >/dev/null
sql "SELECT eoingest.create_job(name => 'ha', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
        transform => 'INSERT INTO ha_t SELECT \"partition\", \"offset\", value FROM eoingest.batch()');
     SELECT eoingest.start_job('ha')" >/dev/null
sql "SELECT eoingest.wait_for_catchup('ha', '60 s')" >/dev/null

# The standby, as the unprivileged user, on its own port and socket.
sdata=$EOINGEST_RUN/standby
ssock=$EOINGEST_RUN/standby-sock
sport=$((PGPORT + 2))
rm -rf "$sdata" "$ssock"; mkdir -p "$sdata" "$ssock"
chown "$EOINGEST_OSUSER:" "$sdata" "$ssock"; chmod 700 "$sdata"
runuser -u "$EOINGEST_OSUSER" -- "$PGBIN/pg_basebackup" -D "$sdata" -R -X stream -c fast -h "$PGHOST" -p "$PGPORT" -U postgres
printf "port = %s\nunix_socket_directories = '%s'\n" "$sport" "$ssock" | runuser -u "$EOINGEST_OSUSER" -- tee -a "$sdata/postgresql.auto.conf" >/dev/null
(cd / && runuser -u "$EOINGEST_OSUSER" -- "$PGBIN/pg_ctl" -D "$sdata" -l "$sdata/standby.log" -w start >/dev/null)
S() { psql -XAtq -h "$ssock" -p "$sport" -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c "$1" 2>&1 || true; }
deadline=$((SECONDS + 60))
until [ "$(S "SELECT count(*) FROM ha_t")" = 1000 ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done

is "$(S "SELECT pg_is_in_recovery() || ' ' || string_agg(DISTINCT state, ',') FROM eoingest.job_status WHERE name = 'ha'")" "true standby" \
  "on a hot standby, job_status says the job does not run there"
out=$(S "SELECT eoingest.start_job('ha')")
like "$out" "25006: eoingest jobs are managed on the primary" "job functions refuse on a standby with SQLSTATE 25006"
like "$out" "HINT:  Connect to the primary server" "with a hint"
like "$(S "SELECT eoingest.create_job(name => 'ha2', brokers => '$KAFKA_BROKERS', topic => '$topic', transform => 'SELECT 1')")" \
  "managed on the primary" "create_job too"
like "$(S "SELECT eoingest.wait_for_catchup('ha', '1 s')")" "managed on the primary" \
  "wait_for_catchup answers no false 'caught up' there"

# Failover: the primary dies, the standby is promoted.
"$EOINGEST_TEST_DIR/pg.sh" stop-immediate
(cd / && runuser -u "$EOINGEST_OSUSER" -- "$PGBIN/pg_ctl" -D "$sdata" -w promote >/dev/null)
eoi-kafka produce-seq "$topic" --count 1000 --start 1000 --format csv >/dev/null
deadline=$((SECONDS + 120))
until [ "$(S "SELECT count(*) FROM ha_t")" = 2000 ] || [ $SECONDS -ge $deadline ]; do sleep 0.2; done
is "$(S "SELECT count(*) || ' ' || count(DISTINCT (part, off)) FROM ha_t")" "2000 2000" \
  "after promotion the job resumes by itself, each record exactly once"
is "$(S "SELECT sum(next_offset) FROM eoingest.offsets WHERE job = 'ha'")" 2000 "its offsets reach the log end"
is "$(S "SELECT string_agg(DISTINCT state, ',') FROM eoingest.job_status WHERE name = 'ha'")" running "job_status says running"
is "$(S "SELECT count(*) FROM pg_prepared_xacts")" 0 "nothing is left prepared"

# Clean up: the promoted standby goes, the old primary comes back for the
# suites that follow (its own copy of the job is dropped there).
(cd / && runuser -u "$EOINGEST_OSUSER" -- "$PGBIN/pg_ctl" -D "$sdata" -w -m fast stop >/dev/null) || true
rm -rf "$sdata" "$ssock"
"$EOINGEST_TEST_DIR/pg.sh" start >/dev/null
sql "SELECT eoingest.drop_job('ha'); DROP TABLE ha_t" >/dev/null 2>&1 || true
done_testing
