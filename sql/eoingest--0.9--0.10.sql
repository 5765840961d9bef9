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
