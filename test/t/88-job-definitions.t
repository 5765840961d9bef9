#!/usr/bin/env bash
# eoingest.job_definitions shows every parameter of create_job: a parameter
# added to create_job without its column fails this test.  The values read
# back are the ones given, to the owner and to a member of pg_monitor.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 3
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
is "$(sql "SELECT coalesce(string_agg(a, ', '), '')
             FROM pg_catalog.unnest((SELECT proargnames FROM pg_catalog.pg_proc
                                      WHERE oid = 'eoingest.create_job'::regproc)) AS a
            WHERE a NOT IN (SELECT attname FROM pg_catalog.pg_attribute
                             WHERE attrelid = 'eoingest.job_definitions'::regclass AND attnum > 0)")" "" \
  "every parameter of create_job is a column of job_definitions"

sql "CREATE TABLE jd_acc (id int PRIMARY KEY, balance int); CREATE TABLE jd_t (id int, v text)" >/dev/null
sql "SELECT eoingest.create_job(name => 'jd_x', brokers => '$KAFKA_BROKERS', topic => 'jd.transaction, jd.public.acc',
        format => 'json', envelope => 'debezium', transactions => 'source', on_truncate => 'truncate',
        targets => '{\"public.acc\": \"jd_acc\"}', batch_max_bytes => 1048576);
     SELECT eoingest.create_job(name => 'jd_a', brokers => '$KAFKA_BROKERS', topic => 'jd_a', target => 'jd_t',
        format => 'avro', schema_registry => 'http://127.0.0.1:18081', columns => '{id,v}')" >/dev/null
is "$(sql "SELECT string_agg(concat_ws(' ', name, batch_max_bytes, columns, timestamp_unit, envelope, on_truncate,
                                       schema_registry, targets, transactions), ' | ' ORDER BY name)
             FROM eoingest.job_definitions WHERE name LIKE 'jd_%'")" \
  'jd_a 67108864 {id,v} auto none refuse http://127.0.0.1:18081 batch | jd_x 1048576 auto debezium truncate {"public.acc": "public.jd_acc"} source' \
  "the owner reads back what was given (targets schema-qualified, as stored)"

role=jd_monitor_$$
sql "CREATE ROLE $role LOGIN IN ROLE pg_monitor; GRANT USAGE ON SCHEMA eoingest TO $role;
     GRANT SELECT ON eoingest.job_definitions TO $role" >/dev/null
is "$(psql -XAtq -U "$role" -c "SELECT string_agg(concat_ws(' ', envelope, schema_registry, transactions), ' | ' ORDER BY name)
                                  FROM eoingest.job_definitions WHERE name LIKE 'jd_%'" 2>&1)" \
  "none http://127.0.0.1:18081 batch | debezium source" "a member of pg_monitor sees them too"

sql "SELECT eoingest.drop_job('jd_x'); SELECT eoingest.drop_job('jd_a'); DROP TABLE jd_acc, jd_t;
     REVOKE ALL ON eoingest.job_definitions FROM $role; REVOKE ALL ON SCHEMA eoingest FROM $role; DROP ROLE $role" >/dev/null
done_testing
