-- eoingest 0.1 -> 0.2: lag, alter_job, wait_for_catchup; owners by name
-- (regrole) so that a dump restores onto another server's roles.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.2'" to load this file. \quit

-- The grants on the objects this update drops and creates again, which the
-- end of this script gives back (a DROP takes them with it).
SELECT pg_catalog.set_config('eoingest_update.grants', coalesce((
  SELECT pg_catalog.json_agg(g)::pg_catalog.text FROM (
    SELECT 'FUNCTION' AS kind, p.proname::pg_catalog.text AS name, a.privilege_type AS privilege,
           a.grantee, a.is_grantable
      FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
     WHERE p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['create_job']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
    UNION ALL
    SELECT 'TABLE', c.relname::pg_catalog.text, a.privilege_type, a.grantee, a.is_grantable
      FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
     WHERE c.relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['job_status', 'job_definitions']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) c.relowner) g), '[]'), true);

-- commit_to_kafka: after each commit, the offsets are also committed to the
-- job's consumer group, for Kafka's own tools; never read back.
ALTER TABLE @extschema@.jobs ADD COLUMN commit_to_kafka boolean NOT NULL DEFAULT false;
-- partitions: the job owns only these partitions (of each of its topics),
-- so that one topic can be split between jobs on different servers.
ALTER TABLE @extschema@.jobs ADD COLUMN partitions integer[];

-- The views read owner: drop them, change the type, create them again.
DROP VIEW @extschema@.job_status;
DROP VIEW @extschema@.job_definitions;

-- The worker status gains the rate over the last minute.
DROP FUNCTION @extschema@._worker_status();
CREATE FUNCTION @extschema@._worker_status(
    OUT job_id          integer,
    OUT worker          integer,
    OUT pid             integer,
    OUT state           text,
    OUT started_at      timestamptz,
    OUT messages        bigint,
    OUT rows            bigint,
    OUT bytes           bigint,
    OUT batches         bigint,
    OUT last_commit_at  timestamptz,
    OUT last_error      text,
    OUT last_error_at   timestamptz,
    OUT dead_letters    bigint,
    OUT messages_per_second double precision)
RETURNS SETOF record
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_worker_status';
GRANT EXECUTE ON FUNCTION @extschema@._worker_status() TO PUBLIC;
ALTER TABLE @extschema@.jobs ALTER COLUMN owner TYPE pg_catalog.regrole
    USING owner::pg_catalog.regrole;
DROP POLICY owner_rows ON @extschema@.dead_letters;
ALTER TABLE @extschema@.dead_letters ALTER COLUMN owner TYPE pg_catalog.regrole
    USING owner::pg_catalog.regrole;
CREATE POLICY owner_rows ON @extschema@.dead_letters
    USING (pg_catalog.pg_has_role(owner, 'USAGE'));

-- One row per job and worker index, for the jobs the current role owns
-- (or is a member of the owner of); all jobs for pg_monitor and superusers.
CREATE VIEW @extschema@.job_status AS
SELECT j.name,
       w.i AS worker,
       CASE
           WHEN j.state OPERATOR(pg_catalog.=) 'running' AND s.pid IS NOT NULL THEN s.state
           WHEN j.state OPERATOR(pg_catalog.=) 'running' THEN 'starting'
           WHEN s.pid IS NOT NULL THEN 'stopping'
           ELSE j.state
       END AS state,
       s.pid,
       s.started_at,
       s.messages,
       s.rows,
       s.bytes,
       s.batches,
       s.dead_letters,
       s.messages_per_second,
       s.last_commit_at,
       COALESCE(s.last_error, j.last_error) AS last_error,
       s.last_error_at,
       j.mode,
       j.topic,
       j.target,
       pg_catalog.pg_get_userbyid(j.owner) AS owner
  FROM @extschema@.jobs j
 CROSS JOIN LATERAL pg_catalog.generate_series(0, j.parallelism OPERATOR(pg_catalog.-) 1) AS w(i)
  LEFT JOIN @extschema@._worker_status() s
         ON s.job_id OPERATOR(pg_catalog.=) j.id AND s.worker OPERATOR(pg_catalog.=) w.i
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');

-- The job definitions; Kafka credentials in options are masked for every
-- role but the job's owner (and members of it) and superusers.
CREATE VIEW @extschema@.job_definitions AS
SELECT j.name, pg_catalog.pg_get_userbyid(j.owner) AS owner, j.brokers, j.topic, j.target,
       j.format, j.mode, j.transform, j.start_offset, j.batch_size, j.batch_timeout_ms,
       j.parallelism,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.options
            ELSE @extschema@._mask_options(j.options) END AS options,
       j.on_error, j.checkpoint_interval_ms, j.key_columns, j.key_format,
       j.offset_commit_interval_ms, j.max_message_bytes, j.commit_to_kafka, j.partitions,
       j.state, j.last_error, j.created_at
  FROM @extschema@.jobs j;
REVOKE ALL ON @extschema@.job_status, @extschema@.job_definitions FROM PUBLIC;

DROP FUNCTION @extschema@.create_job(text, text, text, text, text, text, text, text, integer, integer, integer, jsonb, text, integer, text[], text, integer, integer);
CREATE FUNCTION @extschema@.create_job(
    name              text,
    brokers           text,
    topic             text,
    target            text DEFAULT NULL,
    format            text DEFAULT 'csv',
    mode              text DEFAULT 'exactly_once',
    transform         text DEFAULT NULL,
    start_offset      text DEFAULT 'earliest',
    batch_size        integer DEFAULT 10000,
    batch_timeout_ms  integer DEFAULT 1000,
    parallelism       integer DEFAULT 1,
    options           jsonb DEFAULT '{}',
    on_error          text DEFAULT 'dead_letter',
    checkpoint_interval_ms integer DEFAULT 1000,
    key_columns       text[] DEFAULT NULL,
    key_format        text DEFAULT NULL,
    offset_commit_interval_ms integer DEFAULT 1000,
    max_message_bytes integer DEFAULT 10485760,
    commit_to_kafka   boolean DEFAULT false,
    partitions        integer[] DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_create_job';
REVOKE ALL ON FUNCTION @extschema@.create_job FROM PUBLIC;

-- Bumped by alter_job: the launcher restarts a running job's workers when
-- the version they started with is not the job's any more.
ALTER TABLE @extschema@.jobs ADD COLUMN config_version integer NOT NULL DEFAULT 1;

-- The partitions' log end as the workers last saw it (from the fetch
-- responses librdkafka already has: no extra request to the broker).
CREATE TABLE @extschema@.watermarks (
    job             text NOT NULL REFERENCES @extschema@.jobs (name)
                    ON UPDATE CASCADE ON DELETE CASCADE,
    topic           text NOT NULL,
    "partition"     integer NOT NULL,
    low_watermark   bigint NOT NULL,
    high_watermark  bigint NOT NULL,
    last_stable_offset bigint,
    measured_at     timestamptz NOT NULL,
    PRIMARY KEY (job, topic, "partition")
);
REVOKE ALL ON @extschema@.watermarks FROM PUBLIC;

-- Per job and partition: the committed position, the log end (high
-- watermark), the last stable offset (the end of what read_committed can
-- read while an upstream transaction is open), the lag.
-- Reading it never waits on the network.
CREATE VIEW @extschema@.lag AS
SELECT o.job, o.topic, o."partition", o.next_offset,
       w.high_watermark,
       w.last_stable_offset,
       CASE WHEN w.high_watermark OPERATOR(pg_catalog.>) o.next_offset
            THEN w.high_watermark OPERATOR(pg_catalog.-) o.next_offset ELSE 0 END AS lag,
       w.measured_at
  FROM @extschema@.offsets o
  LEFT JOIN @extschema@.watermarks w
         ON w.job OPERATOR(pg_catalog.=) o.job AND w.topic OPERATOR(pg_catalog.=) o.topic
        AND w."partition" OPERATOR(pg_catalog.=) o."partition";
REVOKE ALL ON @extschema@.lag FROM PUBLIC;

-- Change a job's settings; a running job's workers restart with them.
CREATE FUNCTION @extschema@.alter_job(
    name              text,
    batch_size        integer DEFAULT NULL,
    batch_timeout_ms  integer DEFAULT NULL,
    options           jsonb DEFAULT NULL,
    transform         text DEFAULT NULL,
    on_error          text DEFAULT NULL,
    target            text DEFAULT NULL,
    mode              text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_alter_job';
REVOKE ALL ON FUNCTION @extschema@.alter_job FROM PUBLIC;

-- True once the job has committed everything up to the log end as it was
-- at the call; false if the timeout passes first.
CREATE FUNCTION @extschema@.wait_for_catchup(job text, timeout interval DEFAULT '60 s')
RETURNS boolean
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_wait_for_catchup';
REVOKE ALL ON FUNCTION @extschema@.wait_for_catchup FROM PUBLIC;

-- The grants saved at the start of this script, on the objects it created
-- again.
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT * FROM pg_catalog.json_to_recordset(pg_catalog.current_setting('eoingest_update.grants')::pg_catalog.json)
                        AS (kind pg_catalog.text, name pg_catalog.text, privilege pg_catalog.text,
                            grantee pg_catalog.oid, is_grantable pg_catalog.bool)
    LOOP
        EXECUTE pg_catalog.format('GRANT %s ON %s @extschema@.%I TO %s%s', g.privilege, g.kind, g.name,
                                  CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                       ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END,
                                  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END $$;
