-- eoingest 0.15 -> 0.16: tables that follow their messages' schema.
-- create_target => true creates a missing target from the first message's
-- writer schema (format avro), schema_changes => 'add_columns' or 'widen'
-- adds and widens its columns as the producers' schemas evolve, in the
-- batch's transaction; eoingest.target_changes records every statement.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.16'" to load this file. \quit

-- The grants on the functions this update drops and creates again, which
-- the end of this script gives back (a DROP takes them with it).
SELECT pg_catalog.set_config('eoingest_update.grants', coalesce((
  SELECT pg_catalog.json_agg(g)::pg_catalog.text FROM (
    SELECT 'FUNCTION' AS kind, p.proname::pg_catalog.text AS name, a.privilege_type AS privilege,
           a.grantee, a.is_grantable
      FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
     WHERE p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['create_job', 'alter_job']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) p.proowner) g), '[]'), true);

-- create_target: a target that does not exist is created from the first
-- message's writer schema.  schema_changes: what a writer schema with
-- fields the target lacks, or wider than its columns, does to the target.
ALTER TABLE @extschema@.jobs
    ADD COLUMN create_target boolean NOT NULL DEFAULT false,
    ADD COLUMN schema_changes text NOT NULL DEFAULT 'none'
        CHECK (schema_changes OPERATOR(pg_catalog.=) ANY (ARRAY['none', 'add_columns', 'widen']));
COMMENT ON COLUMN @extschema@.jobs.create_target IS
    'Create the target (or a template''s table for a topic) from the first message''s writer schema when it does not exist.';
COMMENT ON COLUMN @extschema@.jobs.schema_changes IS
    'none: the target stays as it is; add_columns: a field the target lacks becomes a nullable column; widen: also the safe widenings of a column''s type.';

-- Every statement a job ran on a target, in the transaction of the batch
-- that needed it.  Like the dead letters, a role granted SELECT sees the
-- rows of the jobs it owns (or whose owner it is a member of).
CREATE TABLE @extschema@.target_changes (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job          text NOT NULL,
    job_id       integer NOT NULL,
    owner        pg_catalog.regrole NOT NULL,
    topic        text NOT NULL,
    target       text NOT NULL,
    schema       text NOT NULL,
    statement    text NOT NULL,
    changed_at   timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX ON @extschema@.target_changes (job, id);
SELECT pg_catalog.pg_extension_config_dump('@extschema@.target_changes', '');
REVOKE ALL ON @extschema@.target_changes FROM PUBLIC;
ALTER TABLE @extschema@.target_changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON @extschema@.target_changes
    USING (pg_catalog.pg_has_role(owner, 'USAGE'));
COMMENT ON TABLE @extschema@.target_changes IS
    'Every CREATE TABLE and ALTER TABLE a job ran on its targets (create_target, schema_changes): the job, the topic and writer schema that asked for it, the statement.';

-- The new parameters come last, so that positional calls keep their
-- meaning.
DROP FUNCTION @extschema@.create_job(text, text, text, "any", text, text, text, text, integer, integer, integer,
                                     jsonb, text, integer, text[], text, integer, integer, boolean, integer[],
                                     integer, text[], text, text, text, text, jsonb, text, text, text, text, jsonb);
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
    transactions      text DEFAULT 'batch',
    cdc_mode          text DEFAULT 'apply',
    deleted_column    text DEFAULT NULL,
    durability        text DEFAULT 'sync',
    mapping           jsonb DEFAULT NULL,
    create_target     boolean DEFAULT false,
    schema_changes    text DEFAULT 'none')
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_create_job';
REVOKE ALL ON FUNCTION @extschema@.create_job FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.create_job IS
    'Defines a job (stopped) owned by the calling role: Kafka topic(s) into a target table (or, for Debezium change events, several targets by source table) or through a transform, in one of the modes exactly_once, two_phase, upsert, at_least_once, at_most_once.';

DROP FUNCTION @extschema@.alter_job(text, integer, integer, jsonb, text, text, "any", text, integer, text[], text,
                                    text, text, text, jsonb, text, text, text, text[], text, integer, integer,
                                    integer, boolean, text, integer, integer[], text, text, text, jsonb);
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
    transactions      text DEFAULT NULL,
    brokers           text DEFAULT NULL,
    format            text DEFAULT NULL,
    key_columns       text[] DEFAULT NULL,
    key_format        text DEFAULT NULL,
    checkpoint_interval_ms integer DEFAULT NULL,
    offset_commit_interval_ms integer DEFAULT NULL,
    max_message_bytes integer DEFAULT NULL,
    commit_to_kafka   boolean DEFAULT NULL,
    topic             text DEFAULT NULL,
    parallelism       integer DEFAULT NULL,
    partitions        integer[] DEFAULT NULL,
    cdc_mode          text DEFAULT NULL,
    deleted_column    text DEFAULT NULL,
    durability        text DEFAULT NULL,
    mapping           jsonb DEFAULT NULL,
    create_target     boolean DEFAULT NULL,
    schema_changes    text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_alter_job';
REVOKE ALL ON FUNCTION @extschema@.alter_job FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.alter_job IS
    'Changes what is given of a job (NULL keeps it), checked as create_job checks a definition; a running job''s workers restart with it.';

-- job_definitions shows the new parameters.  Columns are only added: the
-- view keeps its grants.
CREATE OR REPLACE VIEW @extschema@.job_definitions AS
SELECT j.name, pg_catalog.pg_get_userbyid(j.owner) AS owner, j.brokers, j.topic, j.target,
       j.format, j.mode, j.transform, j.start_offset, j.batch_size, j.batch_timeout_ms,
       j.parallelism,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.options
            ELSE eoingest_internal.mask_options(j.options) END AS options,
       j.on_error, j.checkpoint_interval_ms, j.key_columns, j.key_format,
       j.offset_commit_interval_ms, j.max_message_bytes, j.commit_to_kafka, j.partitions,
       j.state, j.last_error, j.created_at,
       j.batch_max_bytes, j.columns, j.timestamp_unit, j.envelope, j.on_truncate,
       j.schema_registry, j.targets, j.transactions, j.cdc_mode, j.deleted_column, j.durability,
       j.mapping, j.create_target, j.schema_changes
  FROM @extschema@.jobs j
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');

-- The grants saved at the start of this script, on the functions it
-- created again.
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
