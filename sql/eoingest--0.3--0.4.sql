-- eoingest 0.3 -> 0.4
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.4'" to load this file. \quit

-- Issue 15: format avro, with a Schema Registry.
-- Jobs gain schema_registry (the registry's URLs, comma-separated), and
-- create_job and alter_job gain it as their last parameter: they are
-- created again, with their COMMENTs; EXECUTE granted on them must be
-- granted again.  The registry's credentials and CA certificate go in
-- options (schema.registry.basic.auth.user.info, schema.registry.ssl.ca.pem),
-- which eoingest reads and never hands to librdkafka.
ALTER TABLE @extschema@.jobs ADD COLUMN schema_registry text;

DROP FUNCTION @extschema@.create_job(text, text, text, "any", text, text, text, text, integer, integer, integer, jsonb, text, integer, text[], text, integer, integer, boolean, integer[], integer);
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
    batch_max_bytes   integer DEFAULT 67108864,
    schema_registry   text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_create_job';
REVOKE ALL ON FUNCTION @extschema@.create_job FROM PUBLIC;

DROP FUNCTION @extschema@.alter_job(text, integer, integer, jsonb, text, text, "any", text, integer);
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
    schema_registry   text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_alter_job';
REVOKE ALL ON FUNCTION @extschema@.alter_job FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.create_job IS
    'Defines a job (stopped) owned by the calling role: Kafka topic(s) into a target table or through a transform, in one of the modes exactly_once, two_phase, upsert, at_least_once, at_most_once.';
COMMENT ON FUNCTION @extschema@.alter_job IS
    'Changes what is given of a job (NULL keeps it), checked as create_job checks a definition; a running job''s workers restart with it.';

-- eoingest.batch() gains, for transforms: value_json (the value decoded as
-- jsonb, for json and avro jobs), key_bytes and value_bytes (as they came),
-- and header_list (every header in order, repeated names kept).  An avro
-- job's key and value text are its records as JSON.  Created again: EXECUTE
-- is granted to PUBLIC again below.
DROP FUNCTION @extschema@.batch();
CREATE FUNCTION @extschema@.batch(
    OUT topic        text,
    OUT "partition"  integer,
    OUT "offset"     bigint,
    OUT key          text,
    OUT value        text,
    OUT "timestamp"  timestamptz,
    OUT headers      jsonb,
    OUT value_json   jsonb,
    OUT key_bytes    bytea,
    OUT value_bytes  bytea,
    OUT header_list  jsonb)
RETURNS SETOF record
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_batch';
GRANT EXECUTE ON FUNCTION @extschema@.batch() TO PUBLIC;
COMMENT ON FUNCTION @extschema@.batch() IS
    'Inside a transform only: the messages of the batch being written.';
