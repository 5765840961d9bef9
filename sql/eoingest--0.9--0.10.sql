-- eoingest 0.9 -> 0.10: a job's dead letters can be discarded without
-- replaying them.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.10'" to load this file. \quit

-- Delete a job's dead letters without writing them: all of them, or only
-- those ids, those of one SQLSTATE, those that failed longer ago than
-- older_than (the conditions given must all hold); returns how many.
CREATE FUNCTION @extschema@.discard_dead_letters(job text, ids bigint[] DEFAULT NULL,
                                                 sqlstate text DEFAULT NULL,
                                                 older_than interval DEFAULT NULL)
RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_discard_dead_letters';
REVOKE ALL ON FUNCTION @extschema@.discard_dead_letters(text, bigint[], text, interval) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.discard_dead_letters(text, bigint[], text, interval) IS
    'Deletes the job''s dead letters (all, or those ids, of that SQLSTATE, failed longer ago than older_than) without writing them; returns how many. The job''s owner only.';

-- job_definitions shows every parameter of create_job (the columns added
-- since 0.2 were missing; schema_registry URLs hold no credentials,
-- create_job refuses them).  Replaced in place, so that SELECT granted on
-- it stays.
CREATE OR REPLACE VIEW @extschema@.job_definitions AS
SELECT j.name, pg_catalog.pg_get_userbyid(j.owner) AS owner, j.brokers, j.topic, j.target,
       j.format, j.mode, j.transform, j.start_offset, j.batch_size, j.batch_timeout_ms,
       j.parallelism,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.options
            ELSE @extschema@._mask_options(j.options) END AS options,
       j.on_error, j.checkpoint_interval_ms, j.key_columns, j.key_format,
       j.offset_commit_interval_ms, j.max_message_bytes, j.commit_to_kafka, j.partitions,
       j.state, j.last_error, j.created_at,
       j.batch_max_bytes, j.columns, j.timestamp_unit, j.envelope, j.on_truncate,
       j.schema_registry, j.targets, j.transactions
  FROM @extschema@.jobs j
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');
