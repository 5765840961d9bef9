-- eoingest 0.7 -> 0.8: job_definitions and the offsets policy show a role
-- the jobs it may see, and tell it nothing of the others; a record is a
-- dead letter once per position.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.8'" to load this file. \quit

-- May the current role see the job's rows (as a member of its owner, or of
-- pg_monitor)?  Not SECURITY DEFINER: it asks about the role that calls it
-- and nobody else, and says false for a job that does not exist.
CREATE FUNCTION @extschema@._may_see_job(job text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'eoingest_may_see_job'
LANGUAGE C STABLE STRICT;
REVOKE ALL ON FUNCTION @extschema@._may_see_job(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@._may_see_job(text) TO PUBLIC;
COMMENT ON FUNCTION @extschema@._may_see_job(text) IS
    'Internal, behind the row-level policy on eoingest.offsets: may the current role see the job?';

ALTER POLICY visible_jobs ON @extschema@.offsets
    USING (@extschema@._may_see_job(job));
DROP FUNCTION @extschema@._may_see_job(text, name);

-- The definitions of the jobs the current role may see, as job_status shows
-- them: a job's last error can quote a record.  Replaced in place, so that
-- SELECT granted on it stays.
CREATE OR REPLACE VIEW @extschema@.job_definitions AS
SELECT j.name, pg_catalog.pg_get_userbyid(j.owner) AS owner, j.brokers, j.topic, j.target,
       j.format, j.mode, j.transform, j.start_offset, j.batch_size, j.batch_timeout_ms,
       j.parallelism,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.options
            ELSE @extschema@._mask_options(j.options) END AS options,
       j.on_error, j.checkpoint_interval_ms, j.key_columns, j.key_format,
       j.offset_commit_interval_ms, j.max_message_bytes, j.commit_to_kafka, j.partitions,
       j.state, j.last_error, j.created_at
  FROM @extschema@.jobs j
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');
COMMENT ON VIEW @extschema@.job_definitions IS
    'The definitions of the jobs the current role may see (all for pg_monitor); credentials in options are masked except for the job''s owner.';

-- A record read again (its offsets stored after the data, by upsert and
-- at_least_once, and not yet when a worker stopped) is one dead letter, not
-- one more each time: one per job and position.  Copies kept before this
-- version are the same record's bytes; the first one stays.
DELETE FROM @extschema@.dead_letters d
 USING @extschema@.dead_letters e
 WHERE e.job_id OPERATOR(pg_catalog.=) d.job_id
   AND e.topic OPERATOR(pg_catalog.=) d.topic
   AND e."partition" OPERATOR(pg_catalog.=) d."partition"
   AND e."offset" OPERATOR(pg_catalog.=) d."offset"
   AND e.id OPERATOR(pg_catalog.<) d.id;
CREATE UNIQUE INDEX dead_letters_position
    ON @extschema@.dead_letters (job_id, topic, "partition", "offset");
