-- eoingest 0.1: the job catalog, the offsets checkpoint and the SQL API.
\echo Use "CREATE EXTENSION eoingest" to load this file. \quit

-- One row per job.  `state` is what the owner asked for ('running' or
-- 'stopped'), or 'failed' when a worker stopped the job on an error that
-- needs a person; the live picture is in eoingest.job_status.
CREATE TABLE @extschema@.jobs (
    id                integer GENERATED ALWAYS AS IDENTITY UNIQUE,
    name              text PRIMARY KEY
                      CHECK (pg_catalog.length(name) OPERATOR(pg_catalog.>=) 1
                             AND pg_catalog.length(name) OPERATOR(pg_catalog.<=) 63),
    owner             oid NOT NULL,
    brokers           text NOT NULL,
    topic             text NOT NULL,
    target            text,
    format            text NOT NULL,
    mode              text NOT NULL,
    transform         text,
    start_offset      text NOT NULL,
    batch_size        integer NOT NULL,
    batch_timeout_ms  integer NOT NULL,
    parallelism       integer NOT NULL,
    options           jsonb NOT NULL,
    on_error          text NOT NULL,
    search_path       text NOT NULL,
    checkpoint_interval_ms integer NOT NULL DEFAULT 1000,
    key_columns       text[],
    key_format        text NOT NULL DEFAULT 'text',
    offset_commit_interval_ms integer NOT NULL DEFAULT 1000,
    max_message_bytes integer NOT NULL DEFAULT 10485760,
    state             text NOT NULL DEFAULT 'stopped'
                      CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['running', 'stopped', 'failed'])),
    last_error        text,
    created_at        timestamptz NOT NULL DEFAULT pg_catalog.now()
);

-- The checkpoint: the next offset to read of every partition a job owns.
-- Written in the same transaction as the rows it accounts for.
CREATE TABLE @extschema@.offsets (
    job          text NOT NULL REFERENCES @extschema@.jobs (name)
                 ON UPDATE CASCADE ON DELETE CASCADE,
    topic        text NOT NULL,
    "partition"  integer NOT NULL CHECK ("partition" OPERATOR(pg_catalog.>=) 0),
    next_offset  bigint NOT NULL CHECK (next_offset OPERATOR(pg_catalog.>=) 0),
    updated_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (job, topic, "partition")
);

-- two_phase: the coordinator's decision, the last checkpoint epoch of each
-- job recorded as complete.  In-doubt prepared transactions of epochs up to
-- it are committed on recovery, later ones rolled back.
CREATE TABLE @extschema@.checkpoints (
    job_id      integer PRIMARY KEY REFERENCES @extschema@.jobs (id) ON DELETE CASCADE,
    epoch       bigint NOT NULL,
    decided_at  timestamptz NOT NULL DEFAULT pg_catalog.now()
);

-- Records that could not be decoded or stored (on_error => 'dead_letter'),
-- written in the transaction that moves the offsets past them.
CREATE TABLE @extschema@.dead_letters (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job          text NOT NULL,
    owner        oid NOT NULL,
    topic        text NOT NULL,
    "partition"  integer NOT NULL,
    "offset"     bigint NOT NULL,
    key          bytea,
    value        bytea,
    "timestamp"  timestamptz,
    error        text NOT NULL,
    sqlstate     text NOT NULL,
    failed_at    timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX ON @extschema@.dead_letters (job, id);

-- Dead letters hold the records' data: a role granted SELECT on the table
-- sees the rows of the jobs it owns (or whose owner it is a member of).
ALTER TABLE @extschema@.dead_letters ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_rows ON @extschema@.dead_letters
    USING (pg_catalog.pg_has_role(owner, 'USAGE'));

SELECT pg_catalog.pg_extension_config_dump('@extschema@.jobs', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.dead_letters', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.checkpoints', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.offsets', '');

REVOKE ALL ON @extschema@.jobs, @extschema@.offsets, @extschema@.checkpoints,
              @extschema@.dead_letters FROM PUBLIC;

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
    max_message_bytes integer DEFAULT 10485760)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_create_job';

CREATE FUNCTION @extschema@.start_job(name text)
RETURNS void
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_start_job';

CREATE FUNCTION @extschema@.stop_job(name text)
RETURNS void
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_stop_job';

CREATE FUNCTION @extschema@.drop_job(name text)
RETURNS void
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_drop_job';

-- Put a job's dead letters (all, or those ids) through its write path
-- again, once the cause is fixed; returns how many were replayed.
CREATE FUNCTION @extschema@.replay_dead_letters(job text, ids bigint[] DEFAULT NULL)
RETURNS bigint
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_replay_dead_letters';

-- Where a stopped job resumes: 'earliest', 'latest', a timestamp, or
-- explicit offsets as a JSON object {"partition": offset}.
CREATE FUNCTION @extschema@.reset_offsets(job text, "to" text)
RETURNS integer
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_reset_offsets';

-- The batch being written, for transforms.  Only callable inside a worker.
CREATE FUNCTION @extschema@.batch(
    OUT topic        text,
    OUT "partition"  integer,
    OUT "offset"     bigint,
    OUT key          text,
    OUT value        text,
    OUT "timestamp"  timestamptz,
    OUT headers      jsonb)
RETURNS SETOF record
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_batch';

-- options with the values of credential properties replaced by ********.
CREATE FUNCTION @extschema@._mask_options(options jsonb)
RETURNS jsonb
LANGUAGE C STRICT IMMUTABLE
AS 'MODULE_PATHNAME', 'eoingest_mask_options';

-- Live state of the workers, from shared memory.
CREATE FUNCTION @extschema@._worker_status(
    OUT job_id          integer,
    OUT worker          integer,
    OUT pid             integer,
    OUT state           text,
    OUT started_at      timestamptz,
    OUT messages        bigint,
    OUT rows            bigint,
    OUT bytes           bigint,
    OUT batches         bigint,
    OUT last_commit_at  timestamptz,
    OUT last_error      text,
    OUT last_error_at   timestamptz,
    OUT dead_letters    bigint)
RETURNS SETOF record
LANGUAGE C STRICT VOLATILE
AS 'MODULE_PATHNAME', 'eoingest_worker_status';


-- One row per job and worker index, for the jobs the current role owns
-- (or is a member of the owner of); all jobs for pg_monitor and superusers.
CREATE VIEW @extschema@.job_status AS
SELECT j.name,
       w.i AS worker,
       CASE
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

-- The job definitions; Kafka credentials in options are masked for every
-- role but the job's owner (and members of it) and superusers.
CREATE VIEW @extschema@.job_definitions AS
SELECT j.name, pg_catalog.pg_get_userbyid(j.owner) AS owner, j.brokers, j.topic, j.target,
       j.format, j.mode, j.transform, j.start_offset, j.batch_size, j.batch_timeout_ms,
       j.parallelism,
       CASE WHEN pg_catalog.pg_has_role(j.owner, 'USAGE') THEN j.options
            ELSE @extschema@._mask_options(j.options) END AS options,
       j.on_error, j.checkpoint_interval_ms, j.key_columns, j.key_format,
       j.offset_commit_interval_ms, j.max_message_bytes, j.state, j.last_error, j.created_at
  FROM @extschema@.jobs j;

REVOKE ALL ON @extschema@.job_status, @extschema@.job_definitions FROM PUBLIC;

-- Nothing is granted to PUBLIC: an administrator grants what a role may use
-- (see README, Security).
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @extschema@ FROM PUBLIC;
-- Harmless for anyone, and needed by the views and by transforms: the
-- worker status shows each role only the jobs it may see.
GRANT EXECUTE ON FUNCTION @extschema@._worker_status(), @extschema@._mask_options(jsonb),
                          @extschema@.batch() TO PUBLIC;
