-- eoingest 0.2 -> 0.3: dead letters belong to a job's id, not its name;
-- positions and lag are shown only to the roles that may see the job.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.3'" to load this file. \quit

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
     WHERE c.relnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND c.relname OPERATOR(pg_catalog.=) ANY (ARRAY['lag', 'job_status']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) c.relowner) g), '[]'), true);

-- A dead letter belongs to the job that wrote it, by id: a later job of the
-- same name (perhaps another role's) never sees it, and drop_job removes a
-- job's dead letters with it.  Letters written before this version are
-- matched to the job of that name and owner that existed when they failed;
-- letters of jobs dropped before it keep job_id NULL: their owner still
-- reads them (the policy below), no job can replay them.
ALTER TABLE @extschema@.dead_letters
    ADD COLUMN job_id integer REFERENCES @extschema@.jobs (id) ON DELETE CASCADE;
UPDATE @extschema@.dead_letters d
   SET job_id = j.id
  FROM @extschema@.jobs j
 WHERE j.name OPERATOR(pg_catalog.=) d.job
   AND j.owner OPERATOR(pg_catalog.=) d.owner
   AND j.created_at OPERATOR(pg_catalog.<=) d.failed_at;
CREATE INDEX ON @extschema@.dead_letters (job_id, id);

-- May role `member` see job `job` (as its owner's member, or pg_monitor's)?
-- SECURITY DEFINER so that the row-level policy on offsets can look at the
-- job table, which the caller cannot read; the policy passes current_user,
-- since inside the function it is the definer.
CREATE FUNCTION @extschema@._may_see_job(job text, member name)
RETURNS boolean
LANGUAGE sql STABLE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
SELECT EXISTS (SELECT FROM @extschema@.jobs j
                WHERE j.name OPERATOR(pg_catalog.=) job
                  AND (pg_catalog.pg_has_role(member, j.owner, 'USAGE')
                       OR pg_catalog.pg_has_role(member, 'pg_monitor', 'USAGE')))
$$;
REVOKE ALL ON FUNCTION @extschema@._may_see_job(text, name) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@._may_see_job(text, name) TO PUBLIC;

-- A role granted SELECT on offsets sees the positions of the jobs it may
-- see (the workers and job functions write as the extension's owner, which
-- row-level security does not restrict).
ALTER TABLE @extschema@.offsets ENABLE ROW LEVEL SECURITY;
CREATE POLICY visible_jobs ON @extschema@.offsets
    USING (@extschema@._may_see_job(job, CURRENT_USER));

-- The lag of the jobs the current role may see, as job_status shows them;
-- NULL, not 0, while the log end is not known.  (Dropped and created again:
-- SELECT granted on it must be granted again.)
DROP VIEW @extschema@.lag;
CREATE VIEW @extschema@.lag AS
SELECT o.job, o.topic, o."partition", o.next_offset,
       w.high_watermark,
       w.last_stable_offset,
       CASE WHEN w.high_watermark IS NULL THEN NULL
            WHEN w.high_watermark OPERATOR(pg_catalog.>) o.next_offset
            THEN w.high_watermark OPERATOR(pg_catalog.-) o.next_offset ELSE 0 END AS lag,
       w.measured_at
  FROM @extschema@.offsets o
  JOIN @extschema@.jobs j ON j.name OPERATOR(pg_catalog.=) o.job
  LEFT JOIN @extschema@.watermarks w
         ON w.job OPERATOR(pg_catalog.=) o.job AND w.topic OPERATOR(pg_catalog.=) o.topic
        AND w."partition" OPERATOR(pg_catalog.=) o."partition"
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');
REVOKE ALL ON @extschema@.lag FROM PUBLIC;

-- job_status says 'standby' on a hot standby, where jobs do not run (they
-- resume by themselves after promotion).  Created again: SELECT granted on
-- it must be granted again.
DROP VIEW @extschema@.job_status;
CREATE VIEW @extschema@.job_status AS
SELECT j.name,
       w.i AS worker,
       CASE
           WHEN pg_catalog.pg_is_in_recovery() THEN 'standby'
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
REVOKE ALL ON @extschema@.job_status FROM PUBLIC;

-- create_job and alter_job are created again: they gain batch_max_bytes, and
-- target takes a name or a regclass ("any": the C function looks at the
-- type).  EXECUTE granted on them must be granted again.

-- batch_max_bytes
-- A batch ends at batch_size messages or at batch_max_bytes bytes of keys
-- and values, whichever comes first; a message larger than batch_max_bytes
-- is a batch of its own.
ALTER TABLE @extschema@.jobs ADD COLUMN batch_max_bytes integer NOT NULL DEFAULT 67108864;

DROP FUNCTION @extschema@.create_job(text, text, text, text, text, text, text, text, integer, integer, integer, jsonb, text, integer, text[], text, integer, integer, boolean, integer[]);
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
    batch_max_bytes   integer DEFAULT 67108864)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_create_job';
REVOKE ALL ON FUNCTION @extschema@.create_job FROM PUBLIC;

DROP FUNCTION @extschema@.alter_job(text, integer, integer, jsonb, text, text, text, text);
CREATE FUNCTION @extschema@.alter_job(
    name              text,
    batch_size        integer DEFAULT NULL,
    batch_timeout_ms  integer DEFAULT NULL,
    options           jsonb DEFAULT NULL,
    transform         text DEFAULT NULL,
    on_error          text DEFAULT NULL,
    target            "any" DEFAULT NULL,
    mode              text DEFAULT NULL,
    batch_max_bytes   integer DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_alter_job';
REVOKE ALL ON FUNCTION @extschema@.alter_job FROM PUBLIC;

-- What \df+, \dv+ and \dt+ say about the API.
COMMENT ON FUNCTION @extschema@.create_job IS
    'Defines a job (stopped) owned by the calling role: Kafka topic(s) into a target table or through a transform, in one of the modes exactly_once, two_phase, upsert, at_least_once, at_most_once.';
COMMENT ON FUNCTION @extschema@.alter_job IS
    'Changes what is given of a job (NULL keeps it), checked as create_job checks a definition; a running job''s workers restart with it.';
COMMENT ON FUNCTION @extschema@.start_job(text) IS
    'Asks the launcher to run the job (idempotent; also restarts a failed job).';
COMMENT ON FUNCTION @extschema@.stop_job(text) IS
    'Asks the launcher to stop the job (idempotent); an open batch rolls back.';
COMMENT ON FUNCTION @extschema@.drop_job(text) IS
    'Stops and deletes the job with its offsets, decision row and dead letters.';
COMMENT ON FUNCTION @extschema@.reset_offsets(text, text) IS
    'For a job that is not running: where it resumes (earliest, latest, a timestamp, or explicit offsets as JSON).';
COMMENT ON FUNCTION @extschema@.replay_dead_letters(text, bigint[]) IS
    'Writes the job''s dead letters (all, or those ids) through its write path again, as the job''s owner, and deletes them; all or nothing.';
COMMENT ON FUNCTION @extschema@.wait_for_catchup(text, interval) IS
    'True once the job has committed everything up to the log end as it was at the call; false if the timeout passes first.';
COMMENT ON FUNCTION @extschema@.batch() IS
    'Inside a transform only: the messages of the batch being written.';
COMMENT ON FUNCTION @extschema@._worker_status() IS
    'Internal, behind eoingest.job_status: the workers'' shared-memory status, for the jobs the caller may see.';
COMMENT ON FUNCTION @extschema@._mask_options(jsonb) IS
    'Internal, behind eoingest.job_definitions: options with credential values masked.';
COMMENT ON FUNCTION @extschema@._may_see_job(text, name) IS
    'Internal, behind the row-level policy on eoingest.offsets: may the role see the job?';
COMMENT ON VIEW @extschema@.job_status IS
    'One row per job and worker: state, counters, last commit and last error (the jobs the current role may see; all for pg_monitor).';
COMMENT ON VIEW @extschema@.job_definitions IS
    'Every job''s definition; credentials in options are masked except for the job''s owner.';
COMMENT ON VIEW @extschema@.lag IS
    'Per job and partition: committed position, log end, last stable offset and lag (NULL while the log end is unknown).';
COMMENT ON TABLE @extschema@.jobs IS
    'The job catalog; written only through the job functions.';
COMMENT ON TABLE @extschema@.offsets IS
    'The checkpoint: next offset to read per job and partition, committed with the rows it accounts for.';
COMMENT ON TABLE @extschema@.checkpoints IS
    'two_phase: the last checkpoint epoch the coordinator decided, per job.';
COMMENT ON TABLE @extschema@.dead_letters IS
    'Records that could not be decoded or stored, with their bytes, position, error and SQLSTATE.';
COMMENT ON TABLE @extschema@.watermarks IS
    'The partitions'' log end as the workers last saw it (behind eoingest.lag).';

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
