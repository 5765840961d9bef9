-- eoingest 0.3 -> 0.4
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.4'" to load this file. \quit

-- The grants on the objects this update drops and creates again, which the
-- end of this script gives back (a DROP takes them with it).
SELECT pg_catalog.set_config('eoingest_update.grants', coalesce((
  SELECT pg_catalog.json_agg(g)::pg_catalog.text FROM (
    SELECT 'FUNCTION' AS kind, p.proname::pg_catalog.text AS name, a.privilege_type AS privilege,
           a.grantee, a.is_grantable
      FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
     WHERE p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['create_job', 'alter_job', 'batch']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
    UNION ALL
    SELECT 'TABLE', c.relname::pg_catalog.text, a.privilege_type, a.grantee, a.is_grantable
      FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
     WHERE c.relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['job_status']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) c.relowner) g), '[]'), true);

-- HA (split-brain guard): the server that last started each job, by its
-- cluster's system identifier and its timeline (fence.c).
ALTER TABLE @extschema@.jobs
    ADD COLUMN ran_on_system bigint,
    ADD COLUMN ran_on_timeline bigint;
COMMENT ON COLUMN @extschema@.jobs.ran_on_system IS
    'System identifier of the database cluster whose server last started the job''s workers.';
COMMENT ON COLUMN @extschema@.jobs.ran_on_timeline IS
    'Timeline of that server then: a later timeline of the same cluster has replaced a server on an earlier one.';

-- HA (stalls): a worker whose write has waited longer than
-- eoingest.stall_after is 'stalled', with what it waits on (synchronous
-- replication, I/O, a lock) as its error; wait_event and step show any
-- worker's current wait and step.  Created again: SELECT granted on it
-- must be granted again.  _worker_status() also returns
-- the workers the launcher could not start for want of a slot
-- (eoingest.max_workers or max_worker_processes): no pid, state 'waiting',
-- the reason as last_error; job_status shows them so, not as 'starting'.
DROP VIEW @extschema@.job_status;
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
       CASE WHEN a.state OPERATOR(pg_catalog.=) 'active' THEN a.state_change END AS step_since
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
    'One row per job and worker: state (''stalled'' past eoingest.stall_after; ''waiting'' without a free slot, the reason in last_error), counters, last commit, last error, current wait and step (the jobs the current role may see; all for pg_monitor).';

-- ---- how messages map onto columns ----
-- columns: the target columns a message fills, in order (csv fields, the
-- text value, the json keys taken); NULL: the format's default columns.
-- timestamp_unit: how format json reads a number for a timestamptz,
-- timestamp or date column (auto: by magnitude).
ALTER TABLE @extschema@.jobs ADD COLUMN columns text[];
ALTER TABLE @extschema@.jobs ADD COLUMN timestamp_unit text NOT NULL DEFAULT 'auto';

-- Change data capture with Debezium envelopes.
-- envelope 'debezium' (format json) applies each message as a Debezium change
-- event by key (key_columns, or the target's primary key); on_truncate says
-- what a truncate event does: 'refuse' (a bad record) or 'truncate' (the
-- target is emptied).

ALTER TABLE @extschema@.jobs ADD COLUMN envelope text NOT NULL DEFAULT 'none'
    CHECK (envelope OPERATOR(pg_catalog.=) ANY (ARRAY['none', 'debezium']));
ALTER TABLE @extschema@.jobs ADD COLUMN on_truncate text NOT NULL DEFAULT 'refuse'
    CHECK (on_truncate OPERATOR(pg_catalog.=) ANY (ARRAY['refuse', 'truncate']));

-- Format avro, with a Schema Registry.
-- Jobs gain schema_registry (the registry's URLs, comma-separated).  The registry's credentials and CA certificate go in
-- options (schema.registry.basic.auth.user.info, schema.registry.ssl.ca.pem),
-- which eoingest reads and never hands to librdkafka.
ALTER TABLE @extschema@.jobs ADD COLUMN schema_registry text;

-- create_job and alter_job are created again with the five parameters above
-- at the end (columns, timestamp_unit, envelope, on_truncate, schema_registry),
-- with their COMMENTs; EXECUTE granted on them must be granted again.
DROP FUNCTION @extschema@.create_job(text, text, text, "any", text, text, text, text, integer, integer, integer, jsonb, text, integer, text[], text, integer, integer, boolean, integer[], integer);
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
    schema_registry   text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_create_job';
REVOKE ALL ON FUNCTION @extschema@.create_job FROM PUBLIC;

DROP FUNCTION @extschema@.alter_job(text, integer, integer, jsonb, text, text, "any", text, integer);
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
    schema_registry   text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_alter_job';
REVOKE ALL ON FUNCTION @extschema@.alter_job FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.create_job IS
    'Defines a job (stopped) owned by the calling role: Kafka topic(s) into a target table or through a transform, in one of the modes exactly_once, two_phase, upsert, at_least_once, at_most_once.';
COMMENT ON FUNCTION @extschema@.alter_job IS
    'Changes what is given of a job (NULL keeps it), checked as create_job checks a definition; a running job''s workers restart with it.';

-- eoingest.batch() gains, for transforms: value_json (the value decoded as
-- jsonb, for json and avro jobs), key_bytes and value_bytes (as they came),
-- and header_list (every header in order, repeated names kept).  An avro
-- job's key and value text are its records as JSON.  Created again: EXECUTE
-- is granted to PUBLIC again below.
DROP FUNCTION @extschema@.batch();
CREATE FUNCTION @extschema@.batch(
    OUT topic        text,
    OUT "partition"  integer,
    OUT "offset"     bigint,
    OUT key          text,
    OUT value        text,
    OUT "timestamp"  timestamptz,
    OUT headers      jsonb,
    OUT value_json   jsonb,
    OUT key_bytes    bytea,
    OUT value_bytes  bytea,
    OUT header_list  jsonb)
RETURNS SETOF record
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_batch';
GRANT EXECUTE ON FUNCTION @extschema@.batch() TO PUBLIC;
COMMENT ON FUNCTION @extschema@.batch() IS
    'Inside a transform only: the messages of the batch being written.';

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
