-- eoingest 0.2 -> 0.3
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.3'" to load this file. \quit

-- batch_max_bytes (issue 12.6)
-- A batch ends at batch_size messages or at batch_max_bytes bytes of keys
-- and values, whichever comes first; a message larger than batch_max_bytes
-- is a batch of its own.
ALTER TABLE @extschema@.jobs ADD COLUMN batch_max_bytes integer NOT NULL DEFAULT 67108864;

DROP FUNCTION @extschema@.create_job(text, text, text, text, text, text, text, text, integer, integer, integer, jsonb, text, integer, text[], text, integer, integer, boolean, integer[]);
CREATE FUNCTION @extschema@.create_job(
    name              text,
    brokers           text,
    topic             text,
    target            text DEFAULT NULL,
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
    target            text DEFAULT NULL,
    mode              text DEFAULT NULL,
    batch_max_bytes   integer DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_alter_job';
REVOKE ALL ON FUNCTION @extschema@.alter_job FROM PUBLIC;
-- end batch_max_bytes
