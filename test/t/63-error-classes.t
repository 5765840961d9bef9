#!/usr/bin/env bash
# Whose an error is (src/apply/errclass.c): an error of no class eoingest names
# (here XX000, as an internal error from a race would be) is retried with
# backoff and shown in job_status, and the job goes on once it passes; what a
# person must fix (a privilege) and a record's error under on_error = fail
# still fail the job.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 6
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=errclass_$$
eoi-kafka create-topic "$topic" 1 >/dev/null
seq 1 10 | eoi-kafka produce "$topic" >/dev/null
sql "CREATE TABLE ec_t (v int); CREATE TABLE ec_flag (raise boolean); INSERT INTO ec_flag VALUES (true);
     CREATE FUNCTION ec_check(v text) RETURNS int LANGUAGE plpgsql AS \$\$
     BEGIN
       IF (SELECT raise FROM ec_flag) THEN
         RAISE EXCEPTION 'an internal hiccup' USING ERRCODE = 'XX000';
       END IF;
       RETURN v::int;
     END \$\$;
     SELECT eoingest.create_job(name => 'ec_unknown', brokers => '$KAFKA_BROKERS', topic => '$topic', batch_timeout_ms => 100,
            transform => 'INSERT INTO ec_t SELECT ec_check(value) FROM eoingest.batch()');
     SELECT eoingest.start_job('ec_unknown')" >/dev/null
check "an error of no named class shows in job_status while the job retries" wait_until 60 \
  "SELECT state = 'retrying' AND last_error LIKE '%an internal hiccup%' FROM eoingest.job_status WHERE name = 'ec_unknown'"
sleep 2
is "$(sql "SELECT state FROM eoingest.jobs WHERE name = 'ec_unknown'")" running "the job is not failed for it"
sql "UPDATE ec_flag SET raise = false" >/dev/null
check "once it passes, the job goes on by itself" wait_until 90 "SELECT count(*) = 10 FROM ec_t"

# A record's error under on_error = fail, and a missing privilege: a person's to fix.
sql "CREATE TABLE ec_bool (v boolean);
     SELECT eoingest.create_job(name => 'ec_fail', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'ec_bool',
            on_error => 'fail', batch_timeout_ms => 100);
     SELECT eoingest.start_job('ec_fail')" >/dev/null
check "a record's error fails the job when on_error is fail" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%invalid input syntax for type boolean%' FROM eoingest.jobs WHERE name = 'ec_fail'"
sql "DO \$\$ BEGIN CREATE ROLE ec_owner LOGIN; END \$\$;
     GRANT USAGE ON SCHEMA eoingest TO ec_owner; GRANT EXECUTE ON FUNCTION eoingest.create_job, eoingest.start_job TO ec_owner;
     CREATE TABLE ec_priv (v int); GRANT INSERT ON ec_priv TO ec_owner" >/dev/null
psql -XAtq -U ec_owner -c "SELECT eoingest.create_job(name => 'ec_priv', brokers => '$KAFKA_BROKERS', topic => '$topic',
       target => 'ec_priv', batch_timeout_ms => 100)" >/dev/null
sql "REVOKE INSERT ON ec_priv FROM ec_owner" >/dev/null
psql -XAtq -U ec_owner -c "SELECT eoingest.start_job('ec_priv')" >/dev/null
check "a missing privilege fails the job" wait_until 60 \
  "SELECT state = 'failed' AND last_error LIKE '%permission denied%' FROM eoingest.jobs WHERE name = 'ec_priv'"
is "$(sql "SELECT count(*) FROM ec_priv")" 0 "and nothing was written"

sql "SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'ec_%';
     DROP TABLE ec_t, ec_flag, ec_bool, ec_priv; DROP FUNCTION ec_check(text);
     DROP OWNED BY ec_owner; DROP ROLE ec_owner" >/dev/null
done_testing
