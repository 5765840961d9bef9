-- Test scaffolding: pgTAP, the extension, and a way to wait on a condition.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION eoingest;

CREATE SCHEMA test;

-- Poll `condition` (a query returning one boolean) until it holds or
-- `timeout_s` passes.  Each poll is a new statement, so it sees commits.
CREATE FUNCTION test.wait_for(condition text, timeout_s float8 DEFAULT 60)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + timeout_s * interval '1 second';
    result boolean;
BEGIN
    LOOP
        EXECUTE condition INTO result;
        IF result THEN
            RETURN true;
        END IF;
        IF clock_timestamp() > deadline THEN
            RETURN false;
        END IF;
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;

-- The log end offsets of a topic, as the broker reports them.
CREATE TABLE test.watermarks (topic text, "partition" int, low bigint, high bigint);

CREATE FUNCTION test.offsets_at_log_end(job text, topic text)
RETURNS boolean LANGUAGE sql AS $$
    SELECT count(*) > 0 AND bool_and(o.next_offset = w.high)
      FROM test.watermarks w
      LEFT JOIN eoingest.offsets o
             ON o.job = $1 AND o.topic = w.topic AND o."partition" = w."partition"
     WHERE w.topic = $2
$$;

SELECT extname FROM pg_extension WHERE extname IN ('eoingest', 'pgtap') ORDER BY 1;
