-- eoingest 0.11 -> 0.12: a dead letter remembers when a later record of its
-- key was applied, and replay_dead_letters leaves it unless forced; the
-- rows that took NULL for a value their change did not carry are counted;
-- every function calls the job's name `name`; the helpers behind the views
-- and policies leave the API's schema.
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
