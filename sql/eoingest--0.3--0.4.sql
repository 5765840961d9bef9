-- eoingest 0.3 -> 0.4
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.4'" to load this file. \quit

-- Issue 14, item 9: workers waiting for a slot.
-- _worker_status() also returns the workers the launcher could not start for
-- want of a slot (eoingest.max_workers or max_worker_processes): no pid,
-- state 'waiting', the reason as last_error.  job_status shows them so, not
-- as 'starting'.  Created again: SELECT granted on it must be granted again.
DROP VIEW @extschema@.job_status;
CREATE VIEW @extschema@.job_status AS
SELECT j.name,
       w.i AS worker,
       CASE
           WHEN pg_catalog.pg_is_in_recovery() THEN 'standby'
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
REVOKE ALL ON @extschema@.job_status FROM PUBLIC;
COMMENT ON VIEW @extschema@.job_status IS
    'One row per job and worker: state, counters, last commit and last error (the jobs the current role may see; all for pg_monitor). A worker without a free slot is ''waiting'', the reason in last_error.';
