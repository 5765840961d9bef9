#!/usr/bin/env bash
# rename_job renames a job that is not running: its offsets, dead letters
# and definition follow, and it resumes where it was under its new name; a
# running job, a name taken, an empty or too long name, and another role
# are refused.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 8
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
topic=ren_$$
eoi-kafka create-topic "$topic" 2 >/dev/null
eoi-kafka produce-seq "$topic" --count 100 --format csv >/dev/null
printf 'x,bad,1\n' | eoi-kafka produce "$topic" -p 0 >/dev/null
sql "CREATE TABLE ren_t (id text, ts bigint, temperature double precision);
     SELECT eoingest.create_job(name => 'ren_a', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'ren_t',
            batch_timeout_ms => 100);
     SELECT eoingest.create_job(name => 'ren_other', brokers => '$KAFKA_BROKERS', topic => '$topic', target => 'ren_t');
     SELECT eoingest.start_job('ren_a')" >/dev/null
check "the job reads its records, one a dead letter" wait_until 60 \
  "SELECT (SELECT count(*) = 100 FROM ren_t) AND (SELECT count(*) = 1 FROM eoingest.dead_letters WHERE job = 'ren_a')"
out=$(sql "SELECT eoingest.rename_job('ren_a', 'ren_b')" 2>&1 || true)
case "$out" in *'eoingest job "ren_a" is running'*) ok 0 "a running job is not renamed" ;; *) ok 1 "a running job is not renamed"; diag "$out" ;; esac

sql "SELECT eoingest.stop_job('ren_a')" >/dev/null
out=$(sql "SELECT eoingest.rename_job('ren_a', 'ren_other')" 2>&1 || true)
case "$out" in *'eoingest job "ren_other" already exists'*) ok 0 "a name taken is refused" ;; *) ok 1 "a name taken is refused"; diag "$out" ;; esac
out=$(sql "SELECT eoingest.rename_job('ren_a', '')" 2>&1; sql "SELECT eoingest.rename_job('ren_a', repeat('x', 64))" 2>&1 || true)
case "$out" in *'must not be empty'*'is too long'*) ok 0 "an empty or too long name is refused" ;; *) ok 1 "an empty or too long name is refused"; diag "$out" ;; esac
sql "CREATE ROLE ren_stranger_$$ LOGIN; GRANT USAGE ON SCHEMA eoingest TO ren_stranger_$$;
     GRANT EXECUTE ON FUNCTION eoingest.rename_job TO ren_stranger_$$" >/dev/null
out=$(psql -XAtq -U "ren_stranger_$$" -c "SELECT eoingest.rename_job('ren_a', 'mine')" 2>&1 || true)
case "$out" in *'must be owner of eoingest job "ren_a"'*) ok 0 "another role granted rename_job may not rename it" ;; *) ok 1 "another role may not rename it"; diag "$out" ;; esac

before=$(sql "SELECT string_agg(\"partition\" || '=' || next_offset, ' ' ORDER BY \"partition\") FROM eoingest.offsets WHERE job = 'ren_a'")
sql "SELECT eoingest.rename_job('ren_a', 'ren_b')" >/dev/null
is "$(sql "SELECT (SELECT count(*) FROM eoingest.jobs WHERE name = 'ren_a') || ' ' ||
                  (SELECT string_agg(\"partition\" || '=' || next_offset, ' ' ORDER BY \"partition\") FROM eoingest.offsets WHERE job = 'ren_b') || ' / ' ||
                  (SELECT string_agg(job, ',') FROM eoingest.dead_letters WHERE job_id = (SELECT id FROM eoingest.jobs WHERE name = 'ren_b')) || ' ' ||
                  (SELECT count(*) FROM eoingest.job_definitions WHERE name = 'ren_b')")" \
  "0 $before / ren_b 1" "its offsets, dead letters and definition go by the new name"
eoi-kafka produce-seq "$topic" --count 50 --start 100 --format csv >/dev/null
sql "SELECT eoingest.start_job('ren_b')" >/dev/null
check "under its new name it resumes where it was: every record once" wait_until 60 \
  "SELECT count(*) = 150 AND count(DISTINCT ts) = 150 FROM ren_t"
is "$(sql "SELECT eoingest.wait_for_catchup('ren_b', '30 s')")" t "and reaches the log end"

sql "SELECT eoingest.drop_job('ren_b'); SELECT eoingest.drop_job('ren_other'); DROP TABLE ren_t; DROP OWNED BY ren_stranger_$$; DROP ROLE ren_stranger_$$" >/dev/null 2>&1
done_testing
