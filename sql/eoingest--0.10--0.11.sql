-- eoingest 0.10 -> 0.11: the positions of change events applied are kept per
-- source, so that one source's positions never make another's events look
-- sent again.
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.11'" to load this file. \quit

-- envelope => 'debezium': the last change event applied from each source
-- into each partition.  A source is a connector's logical name and its
-- database (source.name, source.db); several of them may write to one topic.
-- An event below its source's last position and committed no later than
-- a second after it was applied already (Debezium sends it again after
-- Kafka Connect restarts) and is skipped; one committed later is of a new
-- history of the source (another cluster, a restore, a failover that lost
-- the old primary's last transactions) and is applied.  Dumped with the
-- offsets; reset_offsets and the removal of a partition's offset delete
-- its rows.
CREATE TABLE @extschema@.source_positions (
    job          text NOT NULL,
    topic        text NOT NULL,
    "partition"  integer NOT NULL,
    source_name  text NOT NULL,
    source_db    text NOT NULL,
    commit_lsn   pg_catalog.pg_lsn NOT NULL,
    lsn          pg_catalog.pg_lsn NOT NULL,
    commit_time  timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (job, topic, "partition", source_name, source_db),
    FOREIGN KEY (job, topic, "partition") REFERENCES @extschema@.offsets (job, topic, "partition")
        ON UPDATE CASCADE ON DELETE CASCADE
);
SELECT pg_catalog.pg_extension_config_dump('@extschema@.source_positions', '');
REVOKE ALL ON @extschema@.source_positions FROM PUBLIC;
-- As for the offsets: a role granted SELECT sees the rows of the jobs it may see.
ALTER TABLE @extschema@.source_positions ENABLE ROW LEVEL SECURITY;
CREATE POLICY visible_jobs ON @extschema@.source_positions
    USING (@extschema@._may_see_job(job));
COMMENT ON TABLE @extschema@.source_positions IS
    'envelope debezium: per job, partition and source (connector name and database), the position and commit time of the last change event applied.';

-- The positions kept per partition until now carry no source: they are
-- dropped, and each source's first event after the update starts its
-- history.  source_lsn stays, for the transaction topic's END.
ALTER TABLE @extschema@.offsets DROP COLUMN source_lsn_commit;
COMMENT ON COLUMN @extschema@.offsets.source_lsn IS
    'transactions => ''source'': on the transaction topic, the LSN of the last END committed.';
UPDATE @extschema@.offsets SET source_lsn = NULL
 WHERE source_lsn IS NOT NULL AND topic OPERATOR(pg_catalog.!~~) '%.transaction';
