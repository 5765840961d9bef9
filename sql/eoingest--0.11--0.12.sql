-- eoingest 0.11 -> 0.12: a dead letter remembers when a later record of its
-- key was applied, and replay_dead_letters leaves it unless forced; the
-- rows that took NULL for a value their change did not carry are counted;
-- every function calls the job's name `name`; the helpers behind the views
-- and policies leave the API's schema; eoingest.lag gives the time lag, and
-- eoingest.job_stats each job's cumulative statistics; preview_job is a
-- dry run.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.12'" to load this file. \quit

-- The grants on the objects this update drops and creates again, which the
-- end of this script gives back (a DROP takes them with it).
SELECT pg_catalog.set_config('eoingest_update.grants', coalesce((
  SELECT pg_catalog.json_agg(g)::pg_catalog.text FROM (
    SELECT 'FUNCTION' AS kind, p.proname::pg_catalog.text AS name, a.privilege_type AS privilege,
           a.grantee, a.is_grantable
      FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
     WHERE p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['replay_dead_letters', 'reset_offsets', 'discard_dead_letters', 'wait_for_catchup', 'alter_job']::pg_catalog.name[])
       AND a.grantee OPERATOR(pg_catalog.<>) p.proowner) g), '[]'), true);

-- Mode upsert and envelope debezium write by key: a record of a key
-- applied after one of the key's records was dead-lettered, from the same
-- partition, gives the key a newer image than the dead letter's.  The
-- offset of the first such record; replaying the dead letter would take
-- the key back in time.
ALTER TABLE @extschema@.dead_letters ADD COLUMN superseded_by bigint;
COMMENT ON COLUMN @extschema@.dead_letters.superseded_by IS
    'Mode upsert and envelope debezium: the offset of a later record of the same key, in the same partition, that the job applied; replay_dead_letters leaves such a dead letter unless forced.';

-- envelope => 'debezium': an update that leaves a TOASTed column unchanged
-- carries Debezium's placeholder for it; the row keeps its value.  A row
-- the target did not have takes NULL there instead, counted here.
ALTER TABLE @extschema@.offsets
    ADD COLUMN unchanged_nulled bigint NOT NULL DEFAULT 0;
COMMENT ON COLUMN @extschema@.offsets.unchanged_nulled IS
    'envelope debezium: rows new to their target that took NULL for a value their update did not carry (Debezium''s placeholder for an unchanged TOASTed value).';

-- The Kafka timestamp of the last message each stored position accounts
-- for, written with the position; eoingest.lag gives the time lag from it.
ALTER TABLE @extschema@.offsets ADD COLUMN last_message_at timestamptz;
COMMENT ON COLUMN @extschema@.offsets.last_message_at IS
    'The Kafka timestamp of the last message that next_offset accounts for (NULL until one is written, or when the message had none).';

-- eoingest.lag gains the time lag: how long ago the newest message
-- committed was produced, while the partition has more to read (0 once it
-- has not).  Columns are only added: the view keeps its grants.
CREATE OR REPLACE VIEW @extschema@.lag AS
SELECT o.job, o.topic, o."partition", o.next_offset,
       w.high_watermark,
       w.last_stable_offset,
       CASE WHEN w.high_watermark IS NULL THEN NULL
            WHEN w.high_watermark OPERATOR(pg_catalog.>) o.next_offset
            THEN w.high_watermark OPERATOR(pg_catalog.-) o.next_offset ELSE 0 END AS lag,
       w.measured_at,
       o.last_message_at,
       CASE WHEN w.high_watermark IS NULL THEN NULL
            WHEN w.high_watermark OPERATOR(pg_catalog.<=) o.next_offset THEN '0'::pg_catalog.interval
            ELSE pg_catalog.now() OPERATOR(pg_catalog.-) o.last_message_at END AS time_lag
  FROM @extschema@.offsets o
  JOIN @extschema@.jobs j ON j.name OPERATOR(pg_catalog.=) o.job
  LEFT JOIN @extschema@.watermarks w
         ON w.job OPERATOR(pg_catalog.=) o.job AND w.topic OPERATOR(pg_catalog.=) o.topic
        AND w."partition" OPERATOR(pg_catalog.=) o."partition"
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');
COMMENT ON VIEW @extschema@.lag IS
    'Per job and partition: committed position, log end, last stable offset, lag in messages (NULL while the log end is unknown), and time lag: now - the Kafka timestamp of the last message committed, 0 once caught up.';

-- The job's name is `name` in every function, as in create_job, alter_job,
-- start_job, stop_job and drop_job (it was `job` in the four below).  A
-- parameter cannot be renamed in place: they are created again, their
-- grants given back at the end.  Calls in named notation say name => now.
DROP FUNCTION @extschema@.reset_offsets(text, text);
CREATE FUNCTION @extschema@.reset_offsets(name text, "to" text)
RETURNS integer
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_reset_offsets';
REVOKE ALL ON FUNCTION @extschema@.reset_offsets(text, text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.reset_offsets(text, text) IS
    'For a job that is not running: where it resumes (earliest, latest, a timestamp, or explicit offsets as JSON).';

DROP FUNCTION @extschema@.wait_for_catchup(text, interval);
CREATE FUNCTION @extschema@.wait_for_catchup(name text, timeout interval DEFAULT '60 s')
RETURNS boolean
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_wait_for_catchup';
REVOKE ALL ON FUNCTION @extschema@.wait_for_catchup(text, interval) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.wait_for_catchup(text, interval) IS
    'True once the job has committed everything up to the log end as it was at the call; false if the timeout passes first.';

DROP FUNCTION @extschema@.discard_dead_letters(text, bigint[], text, interval);
CREATE FUNCTION @extschema@.discard_dead_letters(name text, ids bigint[] DEFAULT NULL,
                                                 sqlstate text DEFAULT NULL,
                                                 older_than interval DEFAULT NULL)
RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_discard_dead_letters';
REVOKE ALL ON FUNCTION @extschema@.discard_dead_letters(text, bigint[], text, interval) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.discard_dead_letters(text, bigint[], text, interval) IS
    'Deletes the job''s dead letters (all, or those ids, of that SQLSTATE, failed longer ago than older_than) without writing them; returns how many. The job''s owner only.';

DROP FUNCTION @extschema@.replay_dead_letters(text, bigint[]);
CREATE FUNCTION @extschema@.replay_dead_letters(name text, ids bigint[] DEFAULT NULL,
                                                force boolean DEFAULT false)
RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_replay_dead_letters';
REVOKE ALL ON FUNCTION @extschema@.replay_dead_letters(text, bigint[], boolean) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.replay_dead_letters(text, bigint[], boolean) IS
    'Writes the job''s dead letters (all, or those ids) through its write path again, as the job''s owner, and deletes them; all or nothing. A dead letter whose key the job has written again since (superseded_by) is left, and named in a notice, unless force is true.';

-- alter_job changes the broker list, the format, the key settings, the
-- intervals, max_message_bytes and commit_to_kafka too, and, of a job that
-- is not running, its topics, parallelism and partitions; each checked as
-- create_job checks it; the offsets stay (those of topics the job no longer
-- reads go).  The new parameters come last, so that positional calls keep
-- their meaning.
DROP FUNCTION @extschema@.alter_job(text, integer, integer, jsonb, text, text, "any", text, integer,
                                    text[], text, text, text, text, jsonb, text);
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
    partitions        integer[] DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_alter_job';
REVOKE ALL ON FUNCTION @extschema@.alter_job FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.alter_job IS
    'Changes what is given of a job (NULL keeps it), checked as create_job checks a definition; a running job''s workers restart with it.';

-- A job that is not running can be renamed; its offsets, source positions
-- and watermarks follow by their foreign keys.
CREATE FUNCTION @extschema@.rename_job(name text, new_name text)
RETURNS void
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_rename_job';
REVOKE ALL ON FUNCTION @extschema@.rename_job(text, text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.rename_job(text, text) IS
    'Renames a job that is not running; its offsets, dead letters and positions follow. The job''s owner only.';

-- The helpers behind job_status, job_definitions and the row-level policies
-- are not API: they move to a schema of their own, to which no role but the
-- extension's owner has USAGE, so that nobody calls them by name.  The
-- views and policies refer to them by OID and keep working, for every role
-- granted what they were granted.
CREATE SCHEMA eoingest_internal;
COMMENT ON SCHEMA eoingest_internal IS
    'eoingest''s helpers behind its views and policies; not API.';
ALTER FUNCTION @extschema@._worker_status() SET SCHEMA eoingest_internal;
ALTER FUNCTION eoingest_internal._worker_status() RENAME TO worker_status;
ALTER FUNCTION @extschema@._mask_options(pg_catalog.jsonb) SET SCHEMA eoingest_internal;
ALTER FUNCTION eoingest_internal._mask_options(pg_catalog.jsonb) RENAME TO mask_options;
ALTER FUNCTION @extschema@._may_see_job(text) SET SCHEMA eoingest_internal;
ALTER FUNCTION eoingest_internal._may_see_job(text) RENAME TO may_see_job;

-- Each job's cumulative statistics, as PostgreSQL keeps pg_stat_*: in
-- shared memory, growing across the job's worker restarts and clean
-- restarts of the server, from zero again after a crash or when
-- reset_job_stats is called (stats_reset).  Times are in milliseconds.  A
-- job that has not run since shows zeros.
CREATE FUNCTION eoingest_internal.job_stats(
    OUT job_id integer, OUT messages bigint, OUT "rows" bigint, OUT bytes bigint,
    OUT batches bigint, OUT dead_letters bigint, OUT errors bigint, OUT retries bigint,
    OUT kafka_wait_time double precision, OUT write_time double precision,
    OUT commit_time double precision, OUT stats_reset timestamptz)
RETURNS SETOF record
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_job_stats';
COMMENT ON FUNCTION eoingest_internal.job_stats() IS
    'Internal, behind eoingest.job_stats: the statistics in shared memory of this database''s jobs.';

CREATE VIEW @extschema@.job_stats AS
SELECT j.name AS job,
       COALESCE(s.messages, 0) AS messages,
       COALESCE(s."rows", 0) AS "rows",
       COALESCE(s.bytes, 0) AS bytes,
       COALESCE(s.batches, 0) AS batches,
       COALESCE(s.dead_letters, 0) AS dead_letters,
       COALESCE(s.errors, 0) AS errors,
       COALESCE(s.retries, 0) AS retries,
       COALESCE(s.kafka_wait_time, 0) AS kafka_wait_time,
       COALESCE(s.write_time, 0) AS write_time,
       COALESCE(s.commit_time, 0) AS commit_time,
       l.lag,
       l.time_lag,
       s.stats_reset
  FROM @extschema@.jobs j
  LEFT JOIN eoingest_internal.job_stats() s ON s.job_id OPERATOR(pg_catalog.=) j.id
  LEFT JOIN (SELECT lg.job, pg_catalog.sum(lg.lag)::pg_catalog.int8 AS lag,
                    pg_catalog.max(lg.time_lag) AS time_lag
               FROM @extschema@.lag lg GROUP BY lg.job) l ON l.job OPERATOR(pg_catalog.=) j.name
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');
REVOKE ALL ON @extschema@.job_stats FROM PUBLIC;
COMMENT ON VIEW @extschema@.job_stats IS
    'One row per job: cumulative counters and times (ms) since stats_reset, across worker restarts, and its lag in messages and in time (the jobs the current role may see; all for pg_monitor).';

CREATE FUNCTION @extschema@.reset_job_stats(name text DEFAULT NULL)
RETURNS integer
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_reset_job_stats';
REVOKE ALL ON FUNCTION @extschema@.reset_job_stats(text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.reset_job_stats(text) IS
    'Zeroes the statistics of the job, or of every job the caller owns; returns how many. Not undone by a rollback.';

-- A dry run: up to `messages` messages read where the job's workers would
-- read next, decoded as the job decodes them, as its owner; each message's
-- row, or the error it raises, with its position.  Nothing is written,
-- no offset moves.
CREATE FUNCTION @extschema@.preview_job(name text, messages integer DEFAULT 10,
                                        timeout interval DEFAULT '10 s')
RETURNS TABLE (topic text, "partition" integer, "offset" bigint, decoded jsonb,
               error text, sqlstate text)
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_preview_job';
REVOKE ALL ON FUNCTION @extschema@.preview_job(text, integer, interval) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.preview_job(text, integer, interval) IS
    'A dry run: the next messages the job would read, each decoded into its row (jsonb) or the error it raises; writes nothing. The job''s owner only.';

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
