-- eoingest 0.5 -> 0.6
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.6'" to load this file. \quit

-- job_status.target names the targets of a job that routes change events by
-- source table (targets), as a list in order ("public.a, public.b"); it was
-- NULL for such jobs.  CREATE OR REPLACE keeps the grants on the view.
CREATE OR REPLACE VIEW @extschema@.job_status AS
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
       COALESCE(j.target,
                (SELECT pg_catalog.string_agg(DISTINCT e.value, ', ' ORDER BY e.value)
                   FROM pg_catalog.jsonb_each_text(j.targets) AS e)) AS target,
       pg_catalog.pg_get_userbyid(j.owner) AS owner,
       t.wait_event,
       CASE WHEN a.state OPERATOR(pg_catalog.=) 'active' THEN a.query END AS step,
       CASE WHEN a.state OPERATOR(pg_catalog.=) 'active' THEN a.state_change END AS step_since,
       s.heap_bytes
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
