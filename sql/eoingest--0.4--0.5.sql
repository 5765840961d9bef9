-- eoingest 0.4 -> 0.5
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.5'" to load this file. \quit

-- The grants on the objects this update drops and creates again, which the
-- end of this script gives back (a DROP takes them with it).
SELECT pg_catalog.set_config('eoingest_update.grants', coalesce((
  SELECT pg_catalog.json_agg(g)::pg_catalog.text FROM (
    SELECT 'FUNCTION' AS kind, p.proname::pg_catalog.text AS name, a.privilege_type AS privilege,
           a.grantee, a.is_grantable
      FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
     WHERE p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['create_job', 'alter_job']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
    UNION ALL
    SELECT 'TABLE', c.relname::pg_catalog.text, a.privilege_type, a.grantee, a.is_grantable
      FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
     WHERE c.relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['job_status']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) c.relowner) g), '[]'), true);

-- job_status gains heap_bytes: the bytes each worker has allocated and not
-- freed (glibc's count over every malloc arena, librdkafka's threads
-- included; NULL until the first sample and where it is not known),
-- sampled every 10 s and when the worker runs dry.  A leak shows in it,
-- where the RSS also carries the pages that fragmentation pins.  The view
-- is created again: SELECT granted on it must be granted again.
DROP VIEW @extschema@.job_status;
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
    OUT messages_per_second double precision,
    OUT heap_bytes      bigint)
RETURNS SETOF record
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_worker_status';
GRANT EXECUTE ON FUNCTION @extschema@._worker_status() TO PUBLIC;
COMMENT ON FUNCTION @extschema@._worker_status() IS
    'Internal, behind eoingest.job_status: the workers'' shared-memory status, for the jobs the caller may see.';
CREATE VIEW @extschema@.job_status AS
SELECT j.name,
       w.i AS worker,
       CASE
           WHEN pg_catalog.pg_is_in_recovery() THEN 'standby'
           WHEN j.state OPERATOR(pg_catalog.=) 'running' AND s.pid IS NOT NULL AND t.stalled THEN 'stalled'
           WHEN j.state OPERATOR(pg_catalog.=) 'running' AND s.state IS NOT NULL THEN s.state
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
       COALESCE(CASE WHEN t.stalled THEN pg_catalog.format('%s for %s, waiting on %s%s',
                        a.query, pg_catalog.date_trunc('second', pg_catalog.now() OPERATOR(pg_catalog.-) a.state_change),
                        COALESCE(t.wait_event, 'no event (CPU, or a call outside PostgreSQL)'),
                        CASE WHEN a.wait_event OPERATOR(pg_catalog.=) 'SyncRep'
                             THEN ': synchronous replication; check synchronous_standby_names and that its standbys are connected'
                             ELSE '' END) END,
                s.last_error, j.last_error) AS last_error,
       s.last_error_at,
       j.mode,
       j.topic,
       j.target,
       pg_catalog.pg_get_userbyid(j.owner) AS owner,
       t.wait_event,
       CASE WHEN a.state OPERATOR(pg_catalog.=) 'active' THEN a.query END AS step,
       CASE WHEN a.state OPERATOR(pg_catalog.=) 'active' THEN a.state_change END AS step_since,
       s.heap_bytes
  FROM @extschema@.jobs j
 CROSS JOIN LATERAL pg_catalog.generate_series(0, j.parallelism OPERATOR(pg_catalog.-) 1) AS w(i)
  LEFT JOIN @extschema@._worker_status() s
         ON s.job_id OPERATOR(pg_catalog.=) j.id AND s.worker OPERATOR(pg_catalog.=) w.i
  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) s.pid
 CROSS JOIN LATERAL (
       SELECT a.wait_event_type OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) a.wait_event AS wait_event,
              COALESCE(a.state OPERATOR(pg_catalog.=) 'active'
                       AND a.state_change OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-)
                           COALESCE(pg_catalog.current_setting('eoingest.stall_after', true), '30s')::pg_catalog.interval),
                       false) AS stalled) t
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');
REVOKE ALL ON @extschema@.job_status FROM PUBLIC;
COMMENT ON VIEW @extschema@.job_status IS
    'One row per job and worker: state (''stalled'' past eoingest.stall_after; ''waiting'' without a free slot, the reason in last_error), counters, last commit, last error, current wait and step, heap in use (the jobs the current role may see; all for pg_monitor).';

-- ---- Source transactions and several targets ----
-- targets: a Debezium job's routing, {"schema.table": "target table", ...}:
-- each change event goes to the target of its source.schema.table (stored
-- with the targets schema-qualified); NULL: every event goes to target.
-- transactions: 'batch' (commits at batch boundaries) or 'source' (commits
-- only at the source's transaction boundaries, read from Debezium's
-- transaction topic; see README "Source transactions").
ALTER TABLE @extschema@.jobs ADD COLUMN targets jsonb;
ALTER TABLE @extschema@.jobs ADD COLUMN transactions text NOT NULL DEFAULT 'batch'
    CHECK (transactions OPERATOR(pg_catalog.=) ANY (ARRAY['batch', 'source']));

-- create_job and alter_job are created again with targets and transactions
-- at the end; EXECUTE granted on them must be granted again.
DROP FUNCTION @extschema@.create_job(text, text, text, "any", text, text, text, text, integer, integer, integer, jsonb, text, integer, text[], text, integer, integer, boolean, integer[], integer, text[], text, text, text, text);
CREATE FUNCTION @extschema@.create_job(
    name              text,
    brokers           text,
    topic             text,
    target            "any" DEFAULT NULL,
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
    partitions        integer[] DEFAULT NULL,
    batch_max_bytes   integer DEFAULT 67108864,
    columns           text[] DEFAULT NULL,
    timestamp_unit    text DEFAULT 'auto',
    envelope          text DEFAULT 'none',
    on_truncate       text DEFAULT 'refuse',
    schema_registry   text DEFAULT NULL,
    targets           jsonb DEFAULT NULL,
    transactions      text DEFAULT 'batch')
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_create_job';
REVOKE ALL ON FUNCTION @extschema@.create_job FROM PUBLIC;

DROP FUNCTION @extschema@.alter_job(text, integer, integer, jsonb, text, text, "any", text, integer, text[], text, text, text, text);
CREATE FUNCTION @extschema@.alter_job(
    name              text,
    batch_size        integer DEFAULT NULL,
    batch_timeout_ms  integer DEFAULT NULL,
    options           jsonb DEFAULT NULL,
    transform         text DEFAULT NULL,
    on_error          text DEFAULT NULL,
    target            "any" DEFAULT NULL,
    mode              text DEFAULT NULL,
    batch_max_bytes   integer DEFAULT NULL,
    columns           text[] DEFAULT NULL,
    timestamp_unit    text DEFAULT NULL,
    envelope          text DEFAULT NULL,
    on_truncate       text DEFAULT NULL,
    schema_registry   text DEFAULT NULL,
    targets           jsonb DEFAULT NULL,
    transactions      text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_alter_job';
REVOKE ALL ON FUNCTION @extschema@.alter_job FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.create_job IS
    'Defines a job (stopped) owned by the calling role: Kafka topic(s) into a target table (or, for Debezium change events, several targets by source table) or through a transform, in one of the modes exactly_once, two_phase, upsert, at_least_once, at_most_once.';
COMMENT ON FUNCTION @extschema@.alter_job IS
    'Changes what is given of a job (NULL keeps it), checked as create_job checks a definition; a running job''s workers restart with it.';

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
