-- eoingest 0.3 -> 0.4
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.4'" to load this file. \quit

-- HA (split-brain guard): the server that last started each job, by its
-- cluster's system identifier and its timeline (fence.c).
ALTER TABLE @extschema@.jobs
    ADD COLUMN ran_on_system bigint,
    ADD COLUMN ran_on_timeline bigint;
COMMENT ON COLUMN @extschema@.jobs.ran_on_system IS
    'System identifier of the database cluster whose server last started the job''s workers.';
COMMENT ON COLUMN @extschema@.jobs.ran_on_timeline IS
    'Timeline of that server then: a later timeline of the same cluster has replaced a server on an earlier one.';

-- HA (stalls): a worker whose write has waited longer than
-- eoingest.stall_after is 'stalled', with what it waits on (synchronous
-- replication, I/O, a lock) as its error; wait_event and step show any
-- worker's current wait and step.  Created again: SELECT granted on it
-- must be granted again.  (Issue 14, item 9:) _worker_status() also returns
-- the workers the launcher could not start for want of a slot
-- (eoingest.max_workers or max_worker_processes): no pid, state 'waiting',
-- the reason as last_error; job_status shows them so, not as 'starting'.
DROP VIEW @extschema@.job_status;
CREATE VIEW @extschema@.job_status AS
SELECT j.name,
       w.i AS worker,
       CASE
           WHEN pg_catalog.pg_is_in_recovery() THEN 'standby'
           WHEN j.state OPERATOR(pg_catalog.=) 'running' AND s.pid IS NOT NULL AND t.stalled THEN 'stalled'
           WHEN j.state OPERATOR(pg_catalog.=) 'running' AND s.state IS NOT NULL THEN s.state
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
       s.messages_per_second,
       s.last_commit_at,
       COALESCE(CASE WHEN t.stalled THEN pg_catalog.format('%s for %s, waiting on %s%s',
                        a.query, pg_catalog.date_trunc('second', pg_catalog.now() OPERATOR(pg_catalog.-) a.state_change),
                        COALESCE(t.wait_event, 'no event (CPU, or a call outside PostgreSQL)'),
                        CASE WHEN a.wait_event OPERATOR(pg_catalog.=) 'SyncRep'
                             THEN ': synchronous replication; check synchronous_standby_names and that its standbys are connected'
                             ELSE '' END) END,
                s.last_error, j.last_error) AS last_error,
       s.last_error_at,
       j.mode,
       j.topic,
       j.target,
       pg_catalog.pg_get_userbyid(j.owner) AS owner,
       t.wait_event,
       CASE WHEN a.state OPERATOR(pg_catalog.=) 'active' THEN a.query END AS step,
       CASE WHEN a.state OPERATOR(pg_catalog.=) 'active' THEN a.state_change END AS step_since
  FROM @extschema@.jobs j
 CROSS JOIN LATERAL pg_catalog.generate_series(0, j.parallelism OPERATOR(pg_catalog.-) 1) AS w(i)
  LEFT JOIN @extschema@._worker_status() s
         ON s.job_id OPERATOR(pg_catalog.=) j.id AND s.worker OPERATOR(pg_catalog.=) w.i
  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) s.pid
 CROSS JOIN LATERAL (
       SELECT a.wait_event_type OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) a.wait_event AS wait_event,
              COALESCE(a.state OPERATOR(pg_catalog.=) 'active'
                       AND a.state_change OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-)
                           COALESCE(pg_catalog.current_setting('eoingest.stall_after', true), '30s')::pg_catalog.interval),
                       false) AS stalled) t
 WHERE pg_catalog.pg_has_role(j.owner, 'USAGE')
    OR pg_catalog.pg_has_role('pg_monitor', 'USAGE');
REVOKE ALL ON @extschema@.job_status FROM PUBLIC;
COMMENT ON VIEW @extschema@.job_status IS
    'One row per job and worker: state (''stalled'' past eoingest.stall_after; ''waiting'' without a free slot, the reason in last_error), counters, last commit, last error, current wait and step (the jobs the current role may see; all for pg_monitor).';
