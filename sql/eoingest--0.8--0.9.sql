-- eoingest 0.8 -> 0.9: the shape of each table a job writes is kept in the
-- catalog, where every worker of the job checks it.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.9'" to load this file. \quit

-- The columns (names and types) a job's workers write into each of its
-- target tables, recorded by the first write after the job was created,
-- altered or started, and checked by every write after it: a target altered
-- under a running job fails the job, whichever worker meets it first, until
-- start_job or alter_job accepts the table as it is.  Not dumped: a
-- restored job records its targets again.
-- Each worker keeps its own row and checks them all: a worker never waits
-- for another's record, which in two_phase stays uncommitted until the
-- epoch that all the workers write commits.
CREATE TABLE @extschema@.target_shapes (
    job_id   integer NOT NULL REFERENCES @extschema@.jobs (id) ON DELETE CASCADE,
    target   text NOT NULL,
    worker   integer NOT NULL,
    columns  text NOT NULL,
    PRIMARY KEY (job_id, target, worker)
);
REVOKE ALL ON @extschema@.target_shapes FROM PUBLIC;
COMMENT ON TABLE @extschema@.target_shapes IS
    'Internal: the columns each job writes into each of its targets, checked before every write.';
