-- eoingest 0.6 -> 0.7
\echo Use "ALTER EXTENSION eoingest UPDATE TO '0.7'" to load this file. \quit

-- envelope => 'debezium': the source position of the last change event
-- applied from each partition (Debezium's PostgreSQL connector: source.sequence,
-- the last commit's LSN and the change's), committed with the offsets.  An
-- event of an earlier position, which Debezium sends again after Kafka
-- Connect restarts, is skipped and counted in replays_skipped.
-- reset_offsets clears the position.
ALTER TABLE @extschema@.offsets
    ADD COLUMN source_lsn_commit pg_lsn,
    ADD COLUMN source_lsn        pg_lsn,
    ADD COLUMN replays_skipped   bigint NOT NULL DEFAULT 0;

COMMENT ON COLUMN @extschema@.offsets.source_lsn_commit IS
    'envelope debezium: the last change event applied from the partition, its source.sequence''s last commit LSN (NULL: none yet).';
COMMENT ON COLUMN @extschema@.offsets.source_lsn IS
    'envelope debezium: the last change event applied from the partition, its LSN.';
COMMENT ON COLUMN @extschema@.offsets.replays_skipped IS
    'envelope debezium: change events skipped as sent again by Debezium (a position before the last one applied).';
