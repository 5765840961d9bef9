/*-------------------------------------------------------------------------
 *
 * workerbatch.c
 *	  A batch of the worker (worker.c): its messages written and its
 *	  offsets advanced as the job's mode says, a source transaction's
 *	  batches (transactions => 'source'), and two_phase's epochs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/proc.h"
#include "utils/memutils.h"

#include "base/txn.h"
#include "envelope/cdctxn.h"
#include "envelope/envelope.h"
#include "worker/twophase.h"
#include "worker/worker_internal.h"

#define DECISION_WAIT_MS		60000

/*
 * With on_error = dead_letter every batch is written in a subtransaction;
 * PostgreSQL caches 64 of a transaction's subtransaction ids
 * (PGPROC_MAX_CACHED_SUBXIDS), and once a transaction has more, every other
 * session's snapshot must look them up in pg_subtrans.  A two_phase epoch
 * (one transaction) ends before that many batches.
 */
#define EPOCH_MAX_SUBXACT_BATCHES	48

/* ---- one batch ---- */

static double
elapsed_ms(instr_time start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* Decode and write the batch's messages (counted as write time). */
static uint64
write_rows(EoiBatch *batch, int *dead)
{
	instr_time	start;
	uint64		rows;

	INSTR_TIME_SET_CURRENT(start);
	rows = eoi_envelope_write_batch(eoi_worker.job, batch, dead);
	eoi_worker.unreported.write_ms += elapsed_ms(start);
	return rows;
}

/* Commit a batch's rows or offsets (counted as commit time). */
static void
commit_timed(void)
{
	instr_time	start;

	INSTR_TIME_SET_CURRENT(start);
	eoi_commit_work();
	eoi_worker.unreported.commit_ms += elapsed_ms(start);
}

/* msg is the batch's last message in its partition so far */
static void
note_end(EoiBatchEnd *end, rd_kafka_message_t *msg)
{
	bool		isnull;
	Datum		at = eoi_message_timestamp(msg, &isnull);

	end->offset = msg->offset;
	end->message_at = isnull ? 0 : DatumGetTimestampTz(at);
}

/*
 * Drop messages below the committed position (none are expected; they
 * would be duplicates) and note where the batch ends in each partition.
 */
static void
prepare_batch(EoiBatch *batch, EoiBatchEnd *end)
{
	int			kept = 0;
	EoiPosition *run_pos = NULL;
	rd_kafka_topic_t *run_rkt = NULL;

	for (int i = 0; i < eoi_worker.own.nowned; i++)
	{
		end[i].offset = -1;
		end[i].message_at = 0;
	}

	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];
		EoiPosition *pos;

		/*
		 * Messages come in runs of one partition (a fetch response's): look
		 * the partition up by name once per run, not once per message.
		 */
		if (run_pos != NULL && msg->rkt == run_rkt && msg->partition == run_pos->partition)
			pos = run_pos;
		else
		{
			pos = eoi_partitions_find(&eoi_worker.own, rd_kafka_topic_name(msg->rkt), msg->partition);
			run_pos = pos;
			run_rkt = msg->rkt;
		}

		if (pos == NULL || msg->offset < pos->offset)
		{
			rd_kafka_message_destroy(msg);
			continue;
		}
		if (msg->offset > end[pos - eoi_worker.own.owned].offset)
			note_end(&end[pos - eoi_worker.own.owned], msg);
		batch->messages[kept++] = msg;
	}
	batch->n = kept;
}

static uint64
batch_bytes(EoiBatch *batch)
{
	uint64		bytes = 0;

	for (int i = 0; i < batch->n; i++)
		bytes += batch->messages[i]->len + batch->messages[i]->key_len;
	return bytes;
}

/*
 * Commit the batch as the job's mode says.  exactly_once: rows and offsets
 * in one transaction.  at_least_once: rows, then offsets (a crash between
 * the two repeats the batch).  at_most_once: offsets, then rows (a crash
 * between the two loses it).
 */
void
eoi_worker_write_batch(EoiBatch *batch)
{
	EoiBatchEnd *end = palloc(sizeof(EoiBatchEnd) * Max(eoi_worker.own.nowned, 1));
	int			nmessages;
	uint64		rows = 0;
	uint64		bytes;
	int			dead = 0;

	prepare_batch(batch, end);
	nmessages = batch->n;
	if (nmessages == 0)
		return;
	bytes = batch_bytes(batch);
	eoi_worker_writing(batch, bytes);

	switch (eoi_worker.job->mode)
	{
		case EOI_MODE_EXACTLY_ONCE:
			eoi_begin_work("writing batch");
			rows = write_rows(batch, &dead);
			eoi_worker_advance_offsets(end);
			EOI_FAULT_POINT("before_commit");
			commit_timed();
			EOI_FAULT_POINT("after_commit");
			eoi_worker_remember_offsets(end);
			eoi_worker_offsets_committed();
			break;

		case EOI_MODE_UPSERT:
			eoi_begin_work("upserting batch");
			rows = write_rows(batch, &dead);
			commit_timed();
			eoi_worker_note_consumed(end);
			EOI_FAULT_POINT("between_commits");
			eoi_worker_checkpoint_consumed();
			break;

		case EOI_MODE_AT_LEAST_ONCE:
			eoi_begin_work("writing batch");
			rows = write_rows(batch, &dead);
			commit_timed();
			EOI_FAULT_POINT("between_commits");
			eoi_begin_work("storing offsets");
			eoi_worker_advance_offsets(end);
			commit_timed();
			eoi_worker_remember_offsets(end);
			eoi_worker_offsets_committed();
			break;

		case EOI_MODE_AT_MOST_ONCE:
			eoi_begin_work("storing offsets");
			eoi_worker_advance_offsets(end);
			commit_timed();
			eoi_worker_remember_offsets(end);
			eoi_worker_offsets_committed();
			EOI_FAULT_POINT("between_commits");
			eoi_begin_work("writing batch");
			rows = write_rows(batch, &dead);
			commit_timed();
			break;

		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("mode %s is not supported by this version of eoingest",
							eoi_mode_name(eoi_worker.job->mode))));
	}
	eoi_worker_slot_count_batch(nmessages, rows, bytes, dead);
	eoi_worker_batch_committed();
	eoi_worker.failures = 0;
}

/* ---- source transactions (transactions => 'source', cdctxn.c) ---- */

/*
 * A job that commits at source transaction boundaries: the batch is what
 * was kept from the last one plus what the poll brings, and commits only
 * its whole source transactions (eoi_txn_cut); the rest is kept for the
 * next batch.  While not even one transaction is whole, the batch grows,
 * up to EOI_TXN_BATCH_FACTOR times batch_size messages (and batch_max_bytes
 * bytes, at most EOI_TXN_MAX_BYTES): there the job fails, never commits
 * part of a transaction.  Exactly_once only (api.c checks), so one
 * transaction holds the rows and the offsets.
 */
void
eoi_worker_write_source_transactions(void)
{
	int			cap = (int) Min((int64) EOI_TXN_BATCH_FACTOR * eoi_worker.job->batch_size, 1000000);
	int64		cap_bytes = Min((int64) EOI_TXN_BATCH_FACTOR * eoi_worker.job->batch_max_bytes, EOI_TXN_MAX_BYTES);
	EoiBatch   *batch = eoi_batch_create(eoi_worker.batch_context, Max(cap, eoi_worker.job->batch_size));
	int			polled;
	int			k;
	char	   *why;
	int			ntxn = 0;

	for (int i = 0; i < eoi_worker.own.nowned; i++)
		ntxn += strcmp(eoi_worker.own.owned[i].topic, eoi_worker.job->txn_topic) == 0;
	if (ntxn > 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("transaction topic \"%s\" has %d partitions", eoi_worker.job->txn_topic, ntxn),
				 errdetail("Only a topic of one partition keeps Debezium's BEGIN and END events in commit order."),
				 errhint("Create the transaction topic with one partition before the connector starts, or use transactions => 'batch'.")));

	if (!eoi_txn_committed_known())
	{
		eoi_begin_work("reading the last source transaction committed");
		eoi_txn_load_committed(eoi_worker.job);
		eoi_commit_work();
	}
	batch->n = eoi_txn_take_pending(batch->messages, cap);
	polled = eoi_worker_poll(batch->messages + batch->n,
							 Max(Min(eoi_worker_batch_message_limit(), cap - batch->n), 0),
							 eoi_worker_batch_byte_limit(), eoi_worker.job->batch_timeout_ms);
	batch->n += polled;
	eoi_worker_release_memory_when_idle(polled);
	for (;;)
	{
		k = eoi_txn_cut(eoi_worker.job, batch, &why);
		if (k > 0 || batch->n == 0)
			break;
		if (batch->n >= cap || (int64) batch_bytes(batch) >= cap_bytes)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("job \"%s\" read %d messages (" UINT64_FORMAT " bytes) without a whole source transaction",
							eoi_worker.job->name, batch->n, batch_bytes(batch)),
					 errdetail("%s With transactions => 'source' a batch grows until it holds a whole transaction, up to %d times batch_size messages and batch_max_bytes bytes (at most 1 GB); it never commits part of one.",
							   why, EOI_TXN_BATCH_FACTOR),
					 errhint("If the transaction is that large, raise batch_size (eoingest.alter_job) to more than its events / %d; if its events are in a topic the job does not read, add that topic; if the transaction topic lags, check the connector.",
							 EOI_TXN_BATCH_FACTOR)));
		if (polled == 0)
			break;				/* nothing new: wait for it in the next iteration */
		CHECK_FOR_INTERRUPTS();
		eoi_txn_align_fetching(eoi_worker.kafka);
		/* extend the batch: the transaction's other events, or its END */
		polled = eoi_worker_poll(batch->messages + batch->n,
								 Min(eoi_worker.job->batch_size, cap - batch->n), eoi_worker_batch_byte_limit(),
								 eoi_worker.job->batch_timeout_ms);
		batch->n += polled;
	}
	eoi_txn_keep_pending(batch, k);
	eoi_txn_align_fetching(eoi_worker.kafka);
	/*
	 * The state stays 'waiting' from one iteration to the next while a
	 * transaction waits for its other events (not 'running' through each
	 * poll); a commit sets it 'running' again.
	 */
	if (k == 0 && eoi_txn_pending_count() > 0)
		eoi_worker_slot_set_state(EOI_WORKER_WAITING,
					   psprintf("waiting for the rest of a source transaction (%d messages read): %s",
								eoi_txn_pending_count(), why));
	else if (k == 0)
		eoi_worker_slot_set_state(EOI_WORKER_RUNNING, NULL);
	if (k > 0)
	{
		eoi_worker_write_batch(batch);
		eoi_txn_cut_committed();
	}
	else if (eoi_txn_pending_count() == 0)
		eoi_worker_store_positions_past_markers();
}

/* ---- two_phase epochs ---- */

/*
 * Was the epoch rolled back?  The coordinator rolls an epoch back by
 * handing out the next one: an epoch that current_epoch passed without
 * committing it will never be committed.
 */
static bool
epoch_aborted(uint64 epoch)
{
	bool		aborted;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	aborted = (eoi_worker.slot->committed_epoch < epoch && eoi_worker.slot->current_epoch > epoch);
	LWLockRelease(eoi_shared->lock);
	return aborted;
}

/*
 * Wait for the coordinator's verdict on the epoch we prepared: true once it
 * is committed, false if it was rolled back.  Bounded: without a verdict
 * (no coordinator), give up with an error that job_status shows; the retry
 * then waits for the coordinator to resolve what we prepared.
 */
static bool
wait_for_decision(uint64 epoch)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   DECISION_WAIT_MS + eoi_worker.job->checkpoint_interval_ms);

	pgstat_report_activity(STATE_IDLE, "waiting for the checkpoint decision");
	for (;;)
	{
		bool		committed;

		LWLockAcquire(eoi_shared->lock, LW_SHARED);
		committed = (eoi_worker.slot->committed_epoch >= epoch);
		LWLockRelease(eoi_shared->lock);
		if (committed)
			return true;
		if (epoch_aborted(epoch))
			return false;
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_TRANSACTION_RESOLUTION_UNKNOWN),
					 errmsg("no decision on checkpoint epoch " UINT64_FORMAT " after %d s",
							epoch, (DECISION_WAIT_MS + eoi_worker.job->checkpoint_interval_ms) / 1000),
					 errdetail("The eoingest launcher decides two_phase epochs; the worker waits for it to resolve what it prepared."),
					 errhint("Check that the eoingest launcher runs (pg_stat_activity, backend_type \"eoingest launcher\") and what the server log says about it.")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
report_prepared(uint64 epoch, bool empty)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	eoi_worker.slot->prepared_epoch = epoch;
	eoi_worker.slot->prepared_empty = empty;
	LWLockRelease(eoi_shared->lock);
	eoi_worker.epoch_done = epoch;
	eoi_worker.epoch_open = 0;
	eoi_wake_launcher();
}

/* Say (once per worker) when an epoch overflowed the subtransaction cache. */
static void
note_subxact_overflow(uint64 epoch)
{
	static bool said = false;

	if (said || !MyProc->subxidStatus.overflowed)
		return;
	said = true;
	ereport(LOG,
			(errmsg("checkpoint epoch " UINT64_FORMAT " of eoingest job \"%s\" overflowed the subtransaction cache",
					epoch, eoi_worker.job->name),
			 errdetail("The epoch holds more than %d subtransactions; other sessions' snapshots look them up in pg_subtrans until it ends.",
					   PGPROC_MAX_CACHED_SUBXIDS)));
}

/*
 * Write one checkpoint epoch: batches for checkpoint_interval_ms, or until
 * the worker has caught up, in one transaction block; then PREPARE it (the
 * pre-commit) and wait for the coordinator to commit it.
 */
void
eoi_worker_run_epoch(void)
{
	uint64		epoch;
	TimestampTz deadline;
	EoiBatchEnd *end = palloc(sizeof(EoiBatchEnd) * Max(eoi_worker.own.nowned, 1));
	int			nmessages = 0;
	uint64		rows = 0;
	uint64		bytes = 0;
	int			dead = 0;
	int			batch_dead;
	int			batches = 0;
	instr_time	commit_start;
	bool		decided;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	epoch = eoi_worker.slot->current_epoch;
	LWLockRelease(eoi_shared->lock);
	if (epoch == 0 || epoch <= eoi_worker.epoch_done)
	{
		/* No epoch handed out yet: ask the coordinator for one, and wait. */
		eoi_wake_launcher();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		return;
	}

	eoi_worker_slot_set_state(EOI_WORKER_RUNNING, NULL);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), eoi_worker.job->checkpoint_interval_ms);
	eoi_tp_begin_epoch();
	eoi_worker.epoch_open = epoch;
	while (GetCurrentTimestamp() < deadline)
	{
		long		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		EoiBatch   *batch = eoi_batch_create(eoi_worker.batch_context, eoi_worker.job->batch_size);
		int			polled;

		batch->n = eoi_worker_poll(batch->messages, eoi_worker_batch_message_limit(),
								   eoi_worker_batch_byte_limit(),
								   (int) Min(remaining, eoi_worker.job->batch_timeout_ms));
		polled = batch->n;
		eoi_worker_release_memory_when_idle(batch->n);
		prepare_batch(batch, end);
		if (batch->n > 0)
		{
			MemoryContext step_context;

			eoi_worker_begin_step("writing batch (two_phase)");

			/*
			 * What writing the batch allocates goes with the batch: in the
			 * epoch's transaction context it would pile up until the epoch
			 * ends (a COPY buffer per batch).
			 */
			step_context = MemoryContextSwitchTo(eoi_worker.batch_context);
			eoi_worker_writing(batch, batch_bytes(batch));
			rows += write_rows(batch, &batch_dead);
			dead += batch_dead;
			eoi_worker_advance_offsets(end);
			MemoryContextSwitchTo(step_context);
			eoi_worker_end_step();
			eoi_worker.writing_messages = 0;
			eoi_worker_remember_offsets(end);
			nmessages += batch->n;
			bytes += batch_bytes(batch);
		}
		MemoryContextReset(eoi_worker.batch_context);
		CHECK_FOR_INTERRUPTS();
		if (epoch_aborted(epoch))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("checkpoint epoch " UINT64_FORMAT " was rolled back by the coordinator", epoch),
					 errdetail("Another worker of the job ended or failed during the epoch, or the coordinator restarted.")));

		/*
		 * Caught up (a poll of batch_timeout_ms brought nothing, or the
		 * worker read up to the high watermarks it saw): end the epoch now
		 * rather than hold its rows back until the deadline or one more
		 * poll timeout.
		 */
		if (nmessages > 0 && (polled == 0 || eoi_kafka_caught_up(eoi_worker.kafka)))
			break;
		if (eoi_worker.job->on_error == EOI_ON_ERROR_DEAD_LETTER && ++batches >= EPOCH_MAX_SUBXACT_BATCHES)
			break;
	}

	INSTR_TIME_SET_CURRENT(commit_start);
	if (nmessages > 0)
	{
		char		gid[EOI_GID_LEN];

		eoi_gid_format(gid, MyDatabaseId, eoi_worker.job->id, epoch, eoi_worker.index);
		note_subxact_overflow(epoch);
		EOI_FAULT_POINT("before_prepare");
		if (!eoi_tp_prepare_epoch(gid))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not prepare checkpoint epoch " UINT64_FORMAT, epoch)));
		EOI_FAULT_POINT("after_prepare");
	}
	else
	{
		StartTransactionCommand();
		(void) EndTransactionBlock(false);
		CommitTransactionCommand();
	}
	report_prepared(epoch, nmessages == 0);

	decided = wait_for_decision(epoch);
	eoi_worker.unreported.commit_ms += elapsed_ms(commit_start);
	if (decided)
	{
		if (nmessages > 0)
		{
			eoi_worker_slot_count_batch(nmessages, rows, bytes, dead);
			eoi_worker_offsets_committed();
			eoi_worker_batch_committed();
		}
		eoi_worker.failures = 0;
	}
	else
		eoi_worker.assigned = false;		/* rolled back: read the stored offsets again */
	pgstat_report_activity(STATE_IDLE, NULL);
}
