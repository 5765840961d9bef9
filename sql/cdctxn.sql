-- Source transactions (transactions => 'source') and routing by source
-- table (targets): Debezium's transaction topic (BEGIN/END with per-table
-- counts) and change events with their transaction block, hand-written in
-- test/cdc/txn*.events (generated as Debezium's JsonConverter writes them,
-- schemas.enable=false).  Five transfers between two accounts, each a source
-- transaction of three events on three partitions of two topics: an update
-- of each account and the transfer's insert.  A deferred constraint trigger
-- on the targets logs, at every commit into them, whether the accounts
-- agree with the transfers; job txn_a commits source transactions, job
-- txn_b (the control) commits batches, and breaks the invariant.
SET client_min_messages = warning;
\getenv brokers KAFKA_BROKERS

\! eoi-kafka create-topic cdctxn.transaction 1 >/dev/null
\! eoi-kafka create-topic cdctxn.public.accounts 2 >/dev/null
\! eoi-kafka create-topic cdctxn.public.transfers 1 >/dev/null

CREATE TABLE txn_commits (job text, xid xid8, ok boolean);
CREATE FUNCTION txn_log_state() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    b1 int; b2 int; out12 int; out21 int;
BEGIN
    EXECUTE format('SELECT (SELECT balance FROM %I WHERE id = 1), (SELECT balance FROM %I WHERE id = 2)',
                   TG_ARGV[0], TG_ARGV[0]) INTO b1, b2;
    EXECUTE format('SELECT coalesce(sum(amount) FILTER (WHERE src = 1), 0), coalesce(sum(amount) FILTER (WHERE src = 2), 0) FROM %I',
                   TG_ARGV[1]) INTO out12, out21;
    INSERT INTO txn_commits VALUES (TG_ARGV[2], pg_current_xact_id(),
                                    b1 = 500 - out12 + out21 AND b2 = 500 - out21 + out12);
    RETURN NULL;
END $$;

CREATE TABLE acc_a (id int PRIMARY KEY, balance int);
CREATE TABLE xfer_a (id int PRIMARY KEY, src int, dst int, amount int);
CREATE TABLE acc_b (LIKE acc_a INCLUDING ALL);
CREATE TABLE xfer_b (LIKE xfer_a INCLUDING ALL);
INSERT INTO acc_a VALUES (1, 500), (2, 500);
INSERT INTO acc_b VALUES (1, 500), (2, 500);
CREATE CONSTRAINT TRIGGER log_a AFTER INSERT OR UPDATE OR DELETE ON acc_a DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION txn_log_state('acc_a', 'xfer_a', 'a');
CREATE CONSTRAINT TRIGGER log_a AFTER INSERT OR UPDATE OR DELETE ON xfer_a DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION txn_log_state('acc_a', 'xfer_a', 'a');
CREATE CONSTRAINT TRIGGER log_b AFTER INSERT OR UPDATE OR DELETE ON acc_b DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION txn_log_state('acc_b', 'xfer_b', 'b');
CREATE CONSTRAINT TRIGGER log_b AFTER INSERT OR UPDATE OR DELETE ON xfer_b DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION txn_log_state('acc_b', 'xfer_b', 'b');

\! eoi-kafka produce -K -p 0 cdctxn.public.accounts < test/cdc/txn1-acc0.events
\! eoi-kafka produce -K -p 1 cdctxn.public.accounts < test/cdc/txn1-acc1.events
\! eoi-kafka produce -K -p 0 cdctxn.public.transfers < test/cdc/txn1-xfer.events
\! eoi-kafka produce -K -p 0 cdctxn.transaction < test/cdc/txn1-tx.events

-- batch_size 2: every transaction (3 events and its BEGIN and END) is
-- larger than a batch.
SELECT eoingest.create_job(name => 'txn_a', brokers => :'brokers',
                           topic => 'cdctxn.transaction, cdctxn.public.accounts, cdctxn.public.transfers',
                           format => 'json', envelope => 'debezium', transactions => 'source',
                           targets => '{"public.accounts": "acc_a", "public.transfers": "xfer_a"}',
                           batch_size => 2, batch_timeout_ms => 200, on_error => 'fail');
SELECT eoingest.create_job(name => 'txn_b', brokers => :'brokers',
                           topic => 'cdctxn.public.accounts, cdctxn.public.transfers',
                           format => 'json', envelope => 'debezium',
                           targets => '{"public.accounts": "acc_b", "public.transfers": "xfer_b"}',
                           batch_size => 2, batch_timeout_ms => 200, on_error => 'fail');
SELECT targets, transactions, target FROM eoingest.jobs WHERE name IN ('txn_a', 'txn_b') ORDER BY name;
SELECT eoingest.start_job('txn_a'), eoingest.start_job('txn_b');

SELECT plan(25);

SELECT is((SELECT string_agg(DISTINCT target, ';') FROM eoingest.job_status WHERE name = 'txn_a'),
    'public.acc_a, public.xfer_a', 'job_status names the targets of a job with targets');

SELECT ok(test.wait_for($$SELECT count(*) = 5 FROM xfer_a$$), 'source: the five transfers are applied');
SELECT results_eq($$SELECT id, balance FROM acc_a ORDER BY id$$, $$VALUES (1, 470), (2, 530)$$,
    'source: the accounts as the source left them');
SELECT ok((SELECT bool_and(ok) FROM txn_commits WHERE job = 'a'), 'source: every commit holds whole source transactions');
SELECT ok((SELECT count(DISTINCT xid) > 1 FROM txn_commits WHERE job = 'a'), 'source: in several commits');
SELECT ok(test.wait_for($$SELECT count(*) = 5 FROM xfer_b$$), 'batch: the five transfers are applied');
SELECT ok((SELECT NOT bool_and(ok) FROM txn_commits WHERE job = 'b'),
    'batch (the control): some commit holds part of a source transaction');
-- all of xfer_b's rows say nothing of acc_b's partitions: wait for them all
SELECT eoingest.wait_for_catchup('txn_b', '30 s') AS txn_b_caught_up;
SELECT results_eq($$SELECT * FROM acc_b ORDER BY id$$, $$SELECT * FROM acc_a ORDER BY id$$,
    'batch: routed by source table, the same end state');

-- Transaction 6 without its transfer event: the snapshot read before it
-- commits, the accounts' updates wait, offsets stop before them.
\! eoi-kafka produce -K -p 0 cdctxn.public.accounts < test/cdc/txn2-acc0.events
\! eoi-kafka produce -K -p 1 cdctxn.public.accounts < test/cdc/txn2-acc1.events
\! eoi-kafka produce -K -p 0 cdctxn.transaction < test/cdc/txn2-tx.events
SELECT ok(test.wait_for($$SELECT EXISTS (SELECT FROM acc_a WHERE id = 3)$$), 'a snapshot read stands alone');
SELECT results_eq($$SELECT topic, "partition", next_offset FROM eoingest.offsets WHERE job = 'txn_a' ORDER BY 1, 2$$,
    $$VALUES ('cdctxn.public.accounts', 0, 6::bigint), ('cdctxn.public.accounts', 1, 5),
             ('cdctxn.public.transfers', 0, 5), ('cdctxn.transaction', 0, 10)$$,
    'offsets stop before transaction 6, whose transfer event is missing');
SELECT results_eq($$SELECT id, balance FROM acc_a ORDER BY id$$, $$VALUES (1, 470), (2, 530), (3, 0)$$,
    'nothing of transaction 6 is applied');
\! eoi-kafka produce -K -p 0 cdctxn.public.transfers < test/cdc/txn2-xfer.events
SELECT ok(test.wait_for($$SELECT count(*) = 6 FROM xfer_a$$), 'its transfer event comes: transaction 6 is applied');
SELECT results_eq($$SELECT id, balance FROM acc_a ORDER BY id$$, $$VALUES (1, 530), (2, 470), (3, 0)$$,
    'all of it');
SELECT ok((SELECT bool_and(ok) FROM txn_commits WHERE job = 'a'), 'every commit still holds whole transactions');
SELECT ok(eoingest.wait_for_catchup('txn_a', '30 s'), 'the job catches up with every topic');

-- At the cap: a transaction of 20 events, batch_size 1 (at most 16
-- messages): the job fails with what to do, and commits nothing of it.
\! eoi-kafka create-topic cdccap.transaction 1 >/dev/null
\! eoi-kafka create-topic cdccap.public.accounts 1 >/dev/null
\! eoi-kafka produce -K -p 0 cdccap.public.accounts < test/cdc/cap-acc.events
\! eoi-kafka produce -K -p 0 cdccap.transaction < test/cdc/cap-tx.events
CREATE TABLE acc_cap (id int PRIMARY KEY, balance int);
SELECT eoingest.create_job(name => 'txn_cap', brokers => :'brokers', topic => 'cdccap.transaction, cdccap.public.accounts',
                           format => 'json', envelope => 'debezium', transactions => 'source',
                           targets => '{"public.accounts": "acc_cap"}', batch_size => 1, batch_timeout_ms => 200);
-- The transfers' topic left out: their transactions never complete; below
-- the cap (batch_size 2: 32 messages, of 25) the job waits, and says why.
CREATE TABLE acc_missing (LIKE acc_a INCLUDING ALL);
CREATE TABLE xfer_missing (LIKE xfer_a INCLUDING ALL);
SELECT eoingest.create_job(name => 'txn_missing', brokers => :'brokers', topic => 'cdctxn.transaction, cdctxn.public.accounts',
                           format => 'json', envelope => 'debezium', transactions => 'source',
                           targets => '{"public.accounts": "acc_missing", "public.transfers": "xfer_missing"}',
                           batch_size => 2, batch_timeout_ms => 200);
SELECT eoingest.start_job('txn_cap'), eoingest.start_job('txn_missing');
SELECT ok(test.wait_for($$SELECT state = 'failed' FROM eoingest.job_status WHERE name = 'txn_cap'$$), 'cap: the job fails');
SELECT ok((SELECT last_error LIKE '%read 16 messages (% bytes) without a whole source transaction%Source transaction 700:1%raise batch_size%'
             FROM eoingest.job_status WHERE name = 'txn_cap'), 'cap: saying why and what to do');
SELECT is((SELECT count(*) FROM acc_cap), 0::bigint, 'cap: nothing of the transaction is applied');
SELECT ok(test.wait_for($$SELECT state = 'waiting' AND last_error LIKE
                          '%waiting for the rest of a source transaction (% messages read): Source transaction 601:10001: its END announces 2 events of public.accounts (2 in the batch), 1 events of public.transfers (0 in the batch)%'
                          FROM eoingest.job_status WHERE name = 'txn_missing'$$),
    'a data topic missing: the job waits, naming the table whose events are missing');
SELECT is((SELECT count(*) FROM acc_missing), 0::bigint, 'a data topic missing: nothing is applied');

-- Events without a transaction block: a snapshot read stands alone, a
-- change is a bad record; an event of a table without a target too.
\! eoi-kafka create-topic cdcnotx.transaction 1 >/dev/null
\! eoi-kafka create-topic cdcnotx.public.accounts 1 >/dev/null
\! eoi-kafka produce -K -p 0 cdcnotx.public.accounts < test/cdc/notx-acc.events
\! eoi-kafka produce -K -p 0 cdcnotx.transaction < test/cdc/notx-tx.events
CREATE TABLE acc_notx (id int PRIMARY KEY, balance int);
SELECT eoingest.create_job(name => 'txn_notx', brokers => :'brokers', topic => 'cdcnotx.transaction, cdcnotx.public.accounts',
                           format => 'json', envelope => 'debezium', transactions => 'source',
                           targets => '{"public.accounts": "acc_notx"}', batch_timeout_ms => 200);
SELECT eoingest.start_job('txn_notx');
SELECT ok(eoingest.wait_for_catchup('txn_notx', '30 s'), 'no transaction block: the job catches up');
SELECT results_eq($$SELECT id, balance FROM acc_notx ORDER BY id$$, $$VALUES (1, 7), (4, 10)$$,
    'snapshot reads are applied');
SELECT "offset", sqlstate, error FROM eoingest.dead_letters WHERE job = 'txn_notx' ORDER BY "offset";

-- Transaction ids: Debezium's PostgreSQL connector writes "txid:lsn" with
-- the LSN of each message (BEGIN 900:100, events 900:100 and 900:188, END
-- 900:276), matched by the txid; any other id whole: a GTID-like uuid:23
-- matches itself, the event of uuid:25 is not uuid:24's, which waits.
\! eoi-kafka create-topic cdcids.transaction 1 >/dev/null
\! eoi-kafka create-topic cdcids.public.accounts 1 >/dev/null
\! eoi-kafka produce -K -p 0 cdcids.public.accounts < test/cdc/ids-acc.events
\! eoi-kafka produce -K -p 0 cdcids.transaction < test/cdc/ids-tx.events
CREATE TABLE acc_ids (id int PRIMARY KEY, balance int);
SELECT eoingest.create_job(name => 'txn_ids', brokers => :'brokers', topic => 'cdcids.transaction, cdcids.public.accounts',
                           format => 'json', envelope => 'debezium', transactions => 'source',
                           targets => '{"public.accounts": "acc_ids"}', batch_timeout_ms => 200);
SELECT eoingest.start_job('txn_ids');
SELECT ok(test.wait_for($$SELECT count(*) = 3 FROM acc_ids$$), 'ids: txid:lsn matched by the txid, another id whole');
SELECT ok(test.wait_for($$SELECT state = 'waiting' AND last_error LIKE '%Source transaction 3E11FA47-71CA-11E1-9E33-C80AA9429562:24: its END announces 1 events of public.accounts (0 in the batch)%'
                          FROM eoingest.job_status WHERE name = 'txn_ids'$$), 'ids: a uuid:n id is not cut at the colon');
SELECT results_eq($$SELECT id, balance FROM acc_ids ORDER BY id$$, $$VALUES (1, 1), (2, 2), (3, 3)$$,
    'ids: the event of another transaction is not applied');
SELECT * FROM finish();

-- What create_job and alter_job refuse.
\set VERBOSITY terse
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.transaction, a.public.t', format => 'json',
                           envelope => 'debezium', targets => '{"public.t": "acc_a"}', transactions => 'sometimes');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.transaction, a.public.t', format => 'json',
                           target => 'acc_a', transactions => 'source');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.transaction, a.public.t', format => 'json',
                           envelope => 'debezium', target => 'acc_a', transactions => 'source');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.transaction, a.public.t', format => 'json',
                           envelope => 'debezium', targets => '{"public.t": "acc_a"}', transactions => 'source', mode => 'upsert');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.transaction, a.public.t', format => 'json',
                           envelope => 'debezium', targets => '{"public.t": "acc_a"}', transactions => 'source', mode => 'two_phase');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.transaction, a.public.t', format => 'avro',
                           schema_registry => 'http://127.0.0.1:29102',
                           envelope => 'debezium', targets => '{"public.t": "acc_a"}', transactions => 'source');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.transaction, a.public.t', format => 'json',
                           envelope => 'debezium', targets => '{"public.t": "acc_a"}', transactions => 'source', parallelism => 2);
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json',
                           envelope => 'debezium', targets => '{"public.t": "acc_a"}', transactions => 'source');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.transaction, b.transaction, a.public.t', format => 'json',
                           envelope => 'debezium', targets => '{"public.t": "acc_a"}', transactions => 'source');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json',
                           targets => '{"public.t": "acc_a"}');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json', envelope => 'debezium',
                           target => 'acc_a', targets => '{"public.t": "acc_a"}');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json', envelope => 'debezium',
                           targets => '["acc_a"]');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json', envelope => 'debezium',
                           targets => '{"t": "acc_a"}');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json', envelope => 'debezium',
                           targets => '{"public.t": 1}');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json', envelope => 'debezium',
                           targets => '{"public.t": "no_such_table"}');
CREATE UNLOGGED TABLE acc_unlogged (id int PRIMARY KEY, balance int);
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json', envelope => 'debezium',
                           targets => '{"public.t": "acc_a", "public.u": "acc_unlogged"}');
CREATE TABLE acc_nopk (id int, balance int);
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json', envelope => 'debezium',
                           targets => '{"public.t": "acc_nopk"}');
SELECT eoingest.create_job(name => 'x', brokers => :'brokers', topic => 'a.public.t', format => 'json', envelope => 'debezium',
                           targets => '{"public.t": "acc_a"}', key_columns => '{id}');
-- A job with committed offsets keeps its source tables' targets; it may gain some.
SELECT eoingest.alter_job('txn_b', targets => '{"public.accounts": "acc_b"}');
SELECT eoingest.alter_job('txn_b', targets => '{"public.accounts": "acc_b", "public.transfers": "xfer_a"}');
SELECT eoingest.alter_job('txn_b', targets => '{"public.accounts": "acc_b", "public.transfers": "xfer_b", "public.other": "acc_cap"}');
SELECT eoingest.alter_job('txn_b', transactions => 'source');
SELECT targets FROM eoingest.jobs WHERE name = 'txn_b';
\set VERBOSITY default

SELECT eoingest.drop_job(name) FROM eoingest.jobs WHERE name LIKE 'txn\_%' ORDER BY name;
