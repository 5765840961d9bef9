-- Change events Debezium sends again: after a crash, Kafka Connect starts
-- the connector from the source offsets it last flushed, and the events
-- since then come a second time (test/cdc/replay.events, written by
-- test/cdc/replay.py as Debezium's PostgreSQL connector writes them:
-- source.sequence is [last commit LSN, the change's LSN]).  An event at a
-- position before the last one applied from its source in its partition,
-- committed no later, or at that position with the op and key of an event
-- applied there, was applied already: it is skipped, so that the target
-- never goes back to an older state.  Snapshot reads, events
-- without a usable position and other connectors' events are applied as
-- they come.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

\! eoi-kafka create-topic cdc_replay 1 >/dev/null
\! eoi-kafka produce -K -z -p 0 cdc_replay < test/cdc/replay.events

-- rp_one commits every event on its own; every change to its target is
-- logged, in commit order.
CREATE TABLE rp_one (id int PRIMARY KEY, v int);
CREATE TABLE rp_all (LIKE rp_one INCLUDING ALL);
CREATE TABLE rp_history (n serial, op text, id int, v int);
CREATE FUNCTION rp_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO rp_history (op, id, v) VALUES (TG_OP, OLD.id, OLD.v);
    ELSE
        INSERT INTO rp_history (op, id, v) VALUES (TG_OP, NEW.id, NEW.v);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER rp_log AFTER INSERT OR UPDATE OR DELETE ON rp_one FOR EACH ROW EXECUTE FUNCTION rp_log();

SELECT eoingest.create_job(name => 'rp_one', brokers => :'brokers', topic => 'cdc_replay', target => 'rp_one',
                           format => 'json', envelope => 'debezium', batch_size => 1, batch_timeout_ms => 100,
                           on_error => 'fail');
SELECT eoingest.create_job(name => 'rp_all', brokers => :'brokers', topic => 'cdc_replay', target => 'rp_all',
                           format => 'json', envelope => 'debezium', batch_timeout_ms => 300, on_error => 'fail');
SELECT eoingest.start_job('rp_one');
SELECT eoingest.start_job('rp_all');

SELECT plan(9);
SELECT ok(eoingest.wait_for_catchup('rp_one') AND eoingest.wait_for_catchup('rp_all'), 'both jobs catch up');
SELECT results_eq($$SELECT id, v FROM rp_one ORDER BY id$$,
    $$VALUES (1, 4), (2, 5), (5, 0), (6, 6), (7, 7), (8, 8), (9, 9)$$,
    'one event per batch: the source''s last state');
SELECT results_eq($$SELECT id, v FROM rp_all ORDER BY id$$, $$SELECT id, v FROM rp_one ORDER BY id$$,
    'one batch of every event: the same');
SELECT is((SELECT count(*) FROM rp_history h
            WHERE h.op = 'UPDATE' AND h.v < (SELECT p.v FROM rp_history p
                                              WHERE p.id = h.id AND p.n < h.n AND p.op <> 'DELETE'
                                              ORDER BY p.n DESC LIMIT 1)),
          0::bigint, 'no row went back to an older value');
SELECT is((SELECT count(*) FROM rp_history WHERE op = 'INSERT' AND id = 3), 1::bigint,
          'a deleted row did not come back');
SELECT results_eq($$SELECT o.job, next_offset, source_name, source_db, commit_lsn, lsn, commit_time,
                           replays_skipped
                      FROM eoingest.offsets o JOIN eoingest.source_positions p USING (job, topic, "partition")
                     WHERE topic = 'cdc_replay' ORDER BY job$$,
    $$VALUES ('rp_all', 33::bigint, 'dbz', 'src', '0/76C'::pg_lsn, '0/7D0'::pg_lsn,
              to_timestamp(1700000000), 11::bigint),
             ('rp_one', 33, 'dbz', 'src', '0/76C', '0/7D0', to_timestamp(1700000000), 11)$$,
    'the last position applied of the source, and the 11 events sent again up to it');

-- reset_offsets forgets the positions: the stream is applied again from
-- its start, its own repeats skipped again.
SELECT eoingest.stop_job('rp_all');
SELECT ok(test.wait_for($$SELECT state = 'stopped' FROM eoingest.job_status WHERE name = 'rp_all'$$), 'rp_all stops');
TRUNCATE rp_all;
SELECT eoingest.reset_offsets('rp_all', 'earliest');
SELECT next_offset, replays_skipped, (SELECT count(*) FROM eoingest.source_positions WHERE job = 'rp_all') AS positions
  FROM eoingest.offsets WHERE job = 'rp_all';
SELECT eoingest.start_job('rp_all');
SELECT ok(eoingest.wait_for_catchup('rp_all'), 'rp_all catches up again');
SELECT results_eq($$SELECT id, v FROM rp_all ORDER BY id$$, $$SELECT id, v FROM rp_one ORDER BY id$$,
    'applied again from the start: the same rows');
SELECT * FROM finish();

-- What rp_one's target went through: each change once, in source order.
-- Events sent again at the last position applied (the last of c and of e,
-- and f's key change, whose delete and create share a position) are told
-- by their op and key from those applied there, and skipped too.
SELECT op, id, v FROM rp_history ORDER BY n;
SELECT job, next_offset, replays_skipped, source_name, source_db, commit_lsn, lsn
  FROM eoingest.offsets LEFT JOIN eoingest.source_positions USING (job, topic, "partition")
 WHERE topic = 'cdc_replay' ORDER BY job;

SELECT eoingest.drop_job('rp_one');
SELECT eoingest.drop_job('rp_all');
