#!/usr/bin/env bash
# discard_dead_letters deletes a job's dead letters without writing them:
# by ids, by SQLSTATE, by age, or all; only for the job's owner; a bad
# SQLSTATE or a negative age is refused with a hint.  Nothing else moves:
# the rows and the other jobs' dead letters stay.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 9
topic=discard_$$
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
sql "CREATE TABLE dd_t (id int, v varchar(3))" >/dev/null
eoi-kafka create-topic "$topic" 1 >/dev/null
# 4 good, 3 bad ints (22P02), 2 too long (22001)
printf '%s\n' 1,a x,b 2,c y,d 3,toolong z,e 4,f 5,long 6,g | eoi-kafka produce "$topic" >/dev/null
for j in dd_a dd_b; do
  sql "SELECT eoingest.create_job(name => '$j', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'dd_t',
          format => 'csv', on_error => 'dead_letter', batch_timeout_ms => 100);
       SELECT eoingest.start_job('$j')" >/dev/null
done
count() { sql "SELECT count(*) FROM eoingest.dead_letters WHERE job = '$1' ${2:-}"; }
check "both jobs keep 5 dead letters" wait_until 60 \
  "SELECT count(*) FILTER (WHERE job = 'dd_a') = 5 AND count(*) FILTER (WHERE job = 'dd_b') = 5 FROM eoingest.dead_letters"

is "$(sql "SELECT eoingest.discard_dead_letters('dd_a', sqlstate => '22001')")" 2 "by SQLSTATE: the two too long"
is "$(sql "SELECT eoingest.discard_dead_letters('dd_a', older_than => '1 hour')")" 0 "by age: none failed an hour ago"
id=$(sql "SELECT min(id) FROM eoingest.dead_letters WHERE job = 'dd_a'")
is "$(sql "SELECT eoingest.discard_dead_letters('dd_a', ids => ARRAY[$id], sqlstate => '22P02')")" 1 "by id and SQLSTATE"
is "$(sql "SELECT eoingest.discard_dead_letters('dd_a')"), $(count dd_a), $(count dd_b)" "2, 0, 5" \
  "all the rest of dd_a's; dd_b's untouched"

err=$(sql "SELECT eoingest.discard_dead_letters('dd_b', sqlstate => '22p02')" 2>&1 || true)
case "$err" in *'is not an SQLSTATE'*'HINT:'*) ok 0 "a bad SQLSTATE is refused with a hint";;
  *) ok 1 "a bad SQLSTATE is refused with a hint"; diag "$err";; esac
err=$(sql "SELECT eoingest.discard_dead_letters('dd_b', older_than => '-1 day')" 2>&1 || true)
case "$err" in *'older_than must not be negative'*) ok 0 "a negative age is refused";;
  *) ok 1 "a negative age is refused"; diag "$err";; esac

role=dd_tenant_$$
sql "CREATE ROLE $role LOGIN; GRANT USAGE ON SCHEMA eoingest TO $role;
     GRANT EXECUTE ON FUNCTION eoingest.discard_dead_letters TO $role" >/dev/null
err=$(psql -XAtq -v ON_ERROR_STOP=1 -U "$role" -c "SELECT eoingest.discard_dead_letters('dd_b')" 2>&1 || true)
case "$err" in *'must be owner'*) ok 0 "another role cannot discard the job's dead letters";;
  *) ok 1 "another role cannot discard the job's dead letters"; diag "$err";; esac
is "$(count dd_b)" 5 "dd_b still has its 5"

sql "SELECT eoingest.drop_job('dd_a'); SELECT eoingest.drop_job('dd_b'); DROP TABLE dd_t;
     REVOKE ALL ON SCHEMA eoingest FROM $role; REVOKE ALL ON FUNCTION eoingest.discard_dead_letters FROM $role;
     DROP ROLE $role" >/dev/null
done_testing
