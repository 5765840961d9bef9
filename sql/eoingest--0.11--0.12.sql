-- eoingest 0.11 -> 0.12: a dead letter remembers when a later record of its
-- key was applied, and replay_dead_letters leaves it unless forced; the
-- rows that took NULL for a value their change did not carry are counted.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.12'" to load this file. \quit

-- The grants on the objects this update drops and creates again, which the
-- end of this script gives back (a DROP takes them with it).
SELECT pg_catalog.set_config('eoingest_update.grants', coalesce((
  SELECT pg_catalog.json_agg(g)::pg_catalog.text FROM (
    SELECT 'FUNCTION' AS kind, p.proname::pg_catalog.text AS name, a.privilege_type AS privilege,
           a.grantee, a.is_grantable
      FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
     WHERE p.pronamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY['replay_dead_letters']::pg_catalog.name[])
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

DROP FUNCTION @extschema@.replay_dead_letters(text, bigint[]);
CREATE FUNCTION @extschema@.replay_dead_letters(job text, ids bigint[] DEFAULT NULL,
                                                force boolean DEFAULT false)
RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_replay_dead_letters';
REVOKE ALL ON FUNCTION @extschema@.replay_dead_letters(text, bigint[], boolean) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.replay_dead_letters(text, bigint[], boolean) IS
    'Writes the job''s dead letters (all, or those ids) through its write path again, as the job''s owner, and deletes them; all or nothing. A dead letter whose key the job has written again since (superseded_by) is left, and named in a notice, unless force is true.';

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
