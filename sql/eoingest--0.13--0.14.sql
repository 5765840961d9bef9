-- eoingest 0.13 -> 0.14: job_topics() lists the topics a job reads now;
-- for a job whose topic is a pattern (it begins with '^'), those the
-- pattern matches.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.14'" to load this file. \quit

CREATE FUNCTION @extschema@.job_topics(name text)
RETURNS TABLE (topic text, partitions integer)
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_job_topics';
REVOKE ALL ON FUNCTION @extschema@.job_topics(text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.job_topics(text) IS
    'The topics the job reads now, with their partition counts: those it names, or those its pattern matches now (NULL partitions: a named topic that does not exist).';

-- Whoever may call wait_for_catchup, the other function that asks Kafka
-- about a job's topics, may call job_topics.
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT a.grantee, a.is_grantable
               FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
              WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.wait_for_catchup(text, interval)'::pg_catalog.regprocedure
                AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
                AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.job_topics(text) TO %s%s',
                                  CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                       ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(g.grantee)) END,
                                  CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END $$;
