/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  The worker of one job and worker index.
 *
 * The worker owns the partitions p of the job's topic with
 * p % parallelism = index.  It assigns them itself at the offsets stored in
 * eoingest.offsets, then loops: poll a batch (bounded by batch_size,
 * batch_max_bytes and batch_timeout_ms) -> write its rows -> advance the
 * offsets -> commit, in the order the job's mode prescribes.  Between
 * batches it holds no transaction and no snapshot.
 *
 * A failed batch is rolled back; the worker re-reads the stored offsets,
 * assigns its partitions there again (dropping whatever librdkafka had
 * fetched) and retries after a backoff; a batch that failed for want of
 * memory is retried at half its size.  Errors that a retry cannot cure
 * (bad data, a missing table, a lost offset) stop the job in state
 * 'failed' with the error in job_status.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/pmsignal.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "apply/errclass.h"
#include "apply/shape.h"
#include "apply/sink.h"
#include "base/settings.h"
#include "base/shmem.h"
#include "base/txn.h"
#include "envelope/cdctxn.h"
#include "kafka/batch.h"
#include "kafka/groupfence.h"
#include "kafka/kafka.h"
#include "kafka/partitions.h"
#include "kafka/policy.h"
#include "kafka/positions.h"
#include "store/fence.h"
#include "store/job.h"
#include "store/offsets.h"
#include "worker/launcher.h"
#include "worker/twophase.h"
#include "worker/worker.h"

#define RETRY_DELAY_MIN_MS		100
#define RETRY_DELAY_MAX_MS		30000
#define LAG_REFRESH_MS			5000
#define RECHECK_INTERVAL_MS		5000
#define LAG_CONFIRM_MS			50000
#define DECISION_WAIT_MS		60000

/*
 * With on_error = dead_letter every batch is written in a subtransaction;
 * PostgreSQL caches 64 of a transaction's subtransaction ids
 * (PGPROC_MAX_CACHED_SUBXIDS), and once a transaction has more, every other
 * session's snapshot must look them up in pg_subtrans.  A two_phase epoch
 * (one transaction) ends before that many batches.
 */
#define EPOCH_MAX_SUBXACT_BATCHES	48
#define CAPPED_BATCHES_BEFORE_GROWTH 16

typedef struct Worker
{
	EoiJob	   *job;
	int			index;
	EoiWorkerSlot *slot;
	uint64		generation;		/* of the slot, as the launcher gave it */
	EoiKafka   *kafka;
	MemoryContext batch_context;

	EoiOwnership own;			/* the partitions it owns, at their committed offsets */
	int64	   *consumed;		/* upsert: committed rows' next offsets, ahead of owned */
	TimestampTz next_offset_commit;
	bool		assigned;
	int			failures;		/* consecutive failed attempts */
	uint64		epoch_done;		/* two_phase: last epoch prepared or skipped */
	uint64		epoch_open;		/* two_phase: epoch begun, not yet prepared */
	TimestampTz next_lag_refresh;
	TimestampTz next_recheck;	/* of the job's row and the owner's rights */
	TimestampTz next_lag_confirm;
	int64	   *noted;			/* low, high, lso last written, per owned partition */
	bool		busy;			/* the last poll returned messages */
	bool		fenced;			/* this server is recorded in the job row */
	char	   *fence_metadata; /* sent with commit_to_kafka's commits */
	char	   *settings;		/* ALTER DATABASE/ROLE SET values at the start */

	/*
	 * After a batch failed for want of memory: the most messages and bytes
	 * the next batches hold (0: the job's batch_size and batch_max_bytes),
	 * and how many have committed under these limits since they were set.
	 */
	int			cap_messages;
	int64		cap_bytes;
	int			capped_batches;
	/* The batch being written, for handle_failure. */
	int			writing_messages;
	uint64		writing_bytes;
} Worker;

static Worker w;

static void offsets_committed(void);
static void note_heap_in_use(void);

/* ---- shared-memory slot ---- */

static void
slot_detach(int code, Datum arg)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	if (w.slot != NULL && w.slot->pid == MyProcPid)
	{
		w.slot->pid = 0;
		w.slot->latch = NULL;
	}
	LWLockRelease(eoi_shared->lock);
}

static void
slot_attach(int slotno, const EoiWorkerArgs *args)
{
	EoiWorkerSlot *slot;

	if (slotno < 0 || slotno >= eoi_shared->nslots)
		elog(ERROR, "eoingest worker started with invalid slot %d", slotno);
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	slot = &eoi_shared->slots[slotno];
	if (!slot->in_use || slot->generation != args->generation || slot->pid != 0)
	{
		LWLockRelease(eoi_shared->lock);
		/* The launcher gave this slot to someone else: nothing to do. */
		proc_exit(0);
	}
	slot->pid = MyProcPid;
	slot->latch = MyLatch;
	slot->state = EOI_WORKER_STARTING;
	slot->started_at = GetCurrentTimestamp();
	LWLockRelease(eoi_shared->lock);
	w.slot = slot;
	w.generation = args->generation;
	before_shmem_exit(slot_detach, (Datum) 0);
}

/*
 * At exit, after the transaction is aborted and before the Kafka client is
 * closed (kafka.c's close_at_exit, an on_proc_exit callback, runs after
 * every before_shmem_exit one): hand back every message the worker still
 * holds (what a poll interrupted by the exit had taken, into the batch's
 * array; the batch; what is kept for a source transaction's next batch),
 * or rd_kafka_destroy() would wait for them for ever.
 */
static void
release_messages(int code, Datum arg)
{
	eoi_kafka_drop_polled(w.kafka);
	if (w.batch_context != NULL)
		MemoryContextReset(w.batch_context);
	eoi_txn_forget_pending();
}

static void
slot_set_state(EoiWorkerState state, const char *error)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	w.slot->state = state;
	if (error != NULL)
	{
		strlcpy(w.slot->last_error, error, EOI_ERROR_LEN);
		w.slot->last_error_at = GetCurrentTimestamp();
	}
	LWLockRelease(eoi_shared->lock);
}

static void
slot_count_batch(int messages, uint64 rows, uint64 bytes, int dead)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	w.slot->state = EOI_WORKER_RUNNING;
	w.slot->progressed = true;
	w.slot->messages += messages;
	w.slot->rows += rows;
	w.slot->bytes += bytes;
	w.slot->batches++;
	w.slot->dead_letters += dead;
	w.slot->last_commit_at = GetCurrentTimestamp();
	w.slot->last_error[0] = '\0';
	w.slot->last_error_at = 0;
	LWLockRelease(eoi_shared->lock);
}

/*
 * Is the slot still this worker's?  A launcher that took it for dead and
 * gave it to a successor would otherwise leave two workers on the same
 * partitions.
 */
static bool
slot_still_mine(void)
{
	bool		mine;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	mine = w.slot->in_use && w.slot->generation == w.generation && w.slot->pid == MyProcPid;
	LWLockRelease(eoi_shared->lock);
	return mine;
}

/* ---- transactions ---- */

/*
 * One step inside a two_phase epoch's transaction block: the block stays
 * open across steps, each step gets a fresh snapshot.
 */
static void
begin_step(const char *activity)
{
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

static void
end_step(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* ---- partitions ---- */

/*
 * Assign this worker's partitions at their stored positions (partitions.c),
 * and start its per-partition bookkeeping over.  False while a topic of the
 * job does not exist: job_status says so.
 */
static bool
assign_partitions(void)
{
	char		waiting[512];
	MemoryContext old;

	w.own.job = w.job;
	w.own.index = w.index;
	w.own.kafka = w.kafka;
	if (!eoi_partitions_assign(&w.own, waiting, sizeof(waiting)))
	{
		slot_set_state(EOI_WORKER_WAITING, waiting);
		return false;
	}
	eoi_fence_check(w.job, w.kafka, w.own.owned, w.own.nowned);
	offsets_committed();		/* stamp the group with this server at once */
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (w.consumed)
		pfree(w.consumed);
	w.consumed = palloc0(sizeof(int64) * Max(w.own.nowned, 1));
	MemoryContextSwitchTo(old);
	for (int i = 0; i < w.own.nowned; i++)
		w.consumed[i] = w.own.owned[i].offset;
	if (w.noted)
		pfree(w.noted);
	w.noted = NULL;				/* write every partition's log end anew */
	eoi_txn_forget_pending();	/* read again from the stored offsets */
	if (w.job->source_transactions)
		eoi_txn_align_fetching(w.kafka);	/* resume what was paused */
	w.assigned = true;
	return true;
}

/*
 * Every few seconds, record the log end librdkafka last saw for each owned
 * partition, so that eoingest.lag answers without asking the broker.  Only
 * what changed is written, and the rest every LAG_CONFIRM_MS, so that an
 * idle job does not update its rows every few seconds while measured_at
 * still says (within a minute) that the worker is polling.
 */
static void
maybe_refresh_lag(void)
{
	bool		any = false;
	bool		confirm;
	TimestampTz now = GetCurrentTimestamp();

	if (now < w.next_lag_refresh)
		return;
	w.next_lag_refresh = TimestampTzPlusMilliseconds(now, LAG_REFRESH_MS);
	confirm = (w.noted == NULL || now >= w.next_lag_confirm);
	if (confirm)
		w.next_lag_confirm = TimestampTzPlusMilliseconds(now, LAG_CONFIRM_MS);
	if (w.noted == NULL)
		w.noted = MemoryContextAllocZero(TopMemoryContext, sizeof(int64) * 3 * Max(w.own.nowned, 1));
	for (int i = 0; i < w.own.nowned; i++)
	{
		int64		low,
					high,
					lso = -1;
		int64	   *noted = &w.noted[i * 3];

		if (!eoi_kafka_cached_watermarks(w.kafka, w.own.owned[i].topic, w.own.owned[i].partition,
										 &low, &high))
			continue;
		if (!eoi_kafka_last_stable_offset(w.kafka, w.own.owned[i].topic, w.own.owned[i].partition, &lso))
			lso = -1;
		if (!confirm && noted[0] == low && noted[1] == high && noted[2] == lso)
			continue;
		if (!any)
			eoi_begin_work("recording the log end");
		any = true;
		eoi_offsets_note_watermarks(w.job, &w.own.owned[i], low, high, lso);
		noted[0] = low;
		noted[1] = high;
		noted[2] = lso;
	}
	if (any)
		eoi_commit_work();
}

/* ---- the size of a batch ---- */

static int
batch_message_limit(void)
{
	if (w.cap_messages > 0)
		return Min(w.cap_messages, w.job->batch_size);
	return w.job->batch_size;
}

static int64
batch_byte_limit(void)
{
	if (w.cap_bytes > 0)
		return Min(w.cap_bytes, (int64) w.job->batch_max_bytes);
	return w.job->batch_max_bytes;
}

static void
writing(EoiBatch *batch, uint64 bytes)
{
	w.writing_messages = batch->n;
	w.writing_bytes = bytes;
}

/*
 * A batch committed.  Batches capped after a failure grow back, doubling
 * after every CAPPED_BATCHES_BEFORE_GROWTH batches that fitted, so that a
 * passing shortage of memory does not slow the job for good.
 */
static void
batch_committed(void)
{
	w.writing_messages = 0;
	w.writing_bytes = 0;
	if (w.cap_messages == 0 && w.cap_bytes == 0)
		return;
	if (++w.capped_batches < CAPPED_BATCHES_BEFORE_GROWTH)
		return;
	w.capped_batches = 0;
	w.cap_messages = (w.cap_messages >= w.job->batch_size / 2) ? 0 : w.cap_messages * 2;
	w.cap_bytes = (w.cap_bytes >= w.job->batch_max_bytes / 2) ? 0 : w.cap_bytes * 2;
}

/*
 * A batch of several messages failed for want of resources (class 53: out
 * of memory, a buffer at its limit, disk full).  No record is to blame, and
 * the same batch would fail the same way: the next batches hold half as
 * many messages and bytes, down to one message.  Returns false if there
 * was nothing to halve.
 */
static bool
shrink_batches(EoiErrorClass kind, const char *message)
{
	if (kind != EOI_ERROR_RESOURCE || w.writing_messages <= 1)
		return false;
	w.cap_messages = Max(w.writing_messages / 2, 1);
	w.cap_bytes = Max((int64) (w.writing_bytes / 2), 1);
	w.capped_batches = 0;
	ereport(LOG,
			(errmsg("eoingest job \"%s\": a batch of %d messages (" UINT64_FORMAT " bytes) ran out of resources; retrying with batches of at most %d messages and " INT64_FORMAT " bytes",
					w.job->name, w.writing_messages, w.writing_bytes, w.cap_messages, w.cap_bytes),
			 errdetail_internal("%s", message)));
	return true;
}

/* ---- one batch ---- */

/*
 * Drop messages below the committed position (none are expected; they
 * would be duplicates) and note each partition's last offset.
 */
static void
prepare_batch(EoiBatch *batch, int64 *last_offset)
{
	int			kept = 0;
	EoiPosition *run_pos = NULL;
	rd_kafka_topic_t *run_rkt = NULL;

	for (int i = 0; i < w.own.nowned; i++)
		last_offset[i] = -1;

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
			pos = eoi_partitions_find(&w.own, rd_kafka_topic_name(msg->rkt), msg->partition);
			run_pos = pos;
			run_rkt = msg->rkt;
		}

		if (pos == NULL || msg->offset < pos->offset)
		{
			rd_kafka_message_destroy(msg);
			continue;
		}
		last_offset[pos - w.own.owned] = Max(last_offset[pos - w.own.owned], msg->offset);
		batch->messages[kept++] = msg;
	}
	batch->n = kept;
}

/* Advance every partition of the batch to its last offset + 1. */
static void
advance_offsets(const int64 *last_offset)
{
	for (int i = 0; i < w.own.nowned; i++)
		if (last_offset[i] >= 0)
			eoi_offsets_advance(w.job, &w.own.owned[i], last_offset[i] + 1);
}

static void
remember_offsets(const int64 *last_offset)
{
	for (int i = 0; i < w.own.nowned; i++)
		if (last_offset[i] >= 0)
			w.own.owned[i].offset = last_offset[i] + 1;
}

/* After PostgreSQL committed offsets: tell Kafka too, if the job asks. */
static void
offsets_committed(void)
{
	if (w.job->commit_to_kafka)
		eoi_kafka_commit_for_monitoring(w.kafka, w.own.owned, w.own.nowned, w.fence_metadata);
}

/*
 * When a worker runs dry after a busy stretch, hand back to the system the
 * memory glibc kept from its batches and from librdkafka's prefetch (whose
 * threads allocate in arenas of their own): an idle job should not sit on
 * its peak.  Once per busy stretch, so a steady stream pays nothing.
 */
static void
release_memory_when_idle(int messages)
{
	if (messages > 0)
	{
		w.busy = true;
		return;
	}
	if (!w.busy)
		return;
	w.busy = false;
#ifdef __GLIBC__
	(void) malloc_trim(0);
#endif
	note_heap_in_use();
}

/*
 * Publish the bytes this process has allocated and not freed, in every
 * malloc arena (librdkafka's threads included) and in mmapped chunks, for
 * job_status.heap_bytes.  Unlike the RSS it does not count the pages that
 * a few live chunks pin after a trim, so a leak shows in it and
 * fragmentation does not.  mallinfo2 walks the arenas' bins: called when
 * the worker runs dry and every 10 s, never per batch.
 */
static void
note_heap_in_use(void)
{
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
	struct mallinfo2 mi = mallinfo2();

	w.slot->heap_bytes = (int64) (mi.uordblks + mi.hblkhd);
#else
	w.slot->heap_bytes = -1;
#endif
}

/* Every 10 s, note the message count, for the rate over the last minute. */
static void
sample_rate(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			newest = 0;
	int			oldest = 0;

	for (int i = 1; i < EOI_RATE_SAMPLES; i++)
	{
		if (w.slot->rate_at[i] > w.slot->rate_at[newest])
			newest = i;
		if (w.slot->rate_at[i] < w.slot->rate_at[oldest])
			oldest = i;
	}
	if (w.slot->rate_at[newest] != 0 &&
		!TimestampDifferenceExceeds(w.slot->rate_at[newest], now, 10000))
		return;
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	w.slot->rate_at[oldest] = now;
	w.slot->rate_messages[oldest] = w.slot->messages;
	LWLockRelease(eoi_shared->lock);
	note_heap_in_use();
}

/*
 * upsert: the rows are committed, the offsets follow every
 * offset_commit_interval_ms in a transaction of their own.  A crash in
 * between replays batches whose upserts are already in: the same final
 * values are written again.
 */
static void
note_consumed(const int64 *last_offset)
{
	for (int i = 0; i < w.own.nowned; i++)
		if (last_offset[i] >= 0)
			w.consumed[i] = Max(w.consumed[i], last_offset[i] + 1);
}

static void
checkpoint_consumed(void)
{
	bool		behind = false;

	if (GetCurrentTimestamp() < w.next_offset_commit)
		return;
	w.next_offset_commit = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   w.job->offset_commit_interval_ms);
	for (int i = 0; i < w.own.nowned; i++)
		behind |= (w.consumed[i] > w.own.owned[i].offset);
	if (!behind)
		return;

	eoi_begin_work("storing offsets");
	for (int i = 0; i < w.own.nowned; i++)
		if (w.consumed[i] > w.own.owned[i].offset)
			eoi_offsets_advance(w.job, &w.own.owned[i], w.consumed[i]);
	eoi_commit_work();
	for (int i = 0; i < w.own.nowned; i++)
		w.own.owned[i].offset = w.consumed[i];
	offsets_committed();
}

/*
 * A partition whose last records are followed by a transaction marker (a
 * transactional producer ends every transaction with one) would otherwise
 * stay one short of its log end for good: the marker is never handed to us,
 * so "last record + 1" never reaches it, and lag, wait_for_catchup and the
 * consumer group mirror never see the job catch up.  Called when the last
 * poll came back empty, so that everything handed out is written: where the
 * consumer's position has moved past the stored offset, only control records
 * (and records of aborted transactions) lie between, and the position is
 * stored in a transaction of its own.  upsert keeps it with the consumed
 * offsets that checkpoint_consumed() stores.
 */
static void
store_positions_past_markers(void)
{
	int64	   *position = palloc(sizeof(int64) * Max(w.own.nowned, 1));
	bool		behind = false;

	if (!eoi_kafka_positions(w.kafka, w.own.owned, w.own.nowned, position))
		return;
	for (int i = 0; i < w.own.nowned; i++)
	{
		int64		stored = (w.job->mode == EOI_MODE_UPSERT) ? w.consumed[i] : w.own.owned[i].offset;

		if (position[i] > stored)
			behind = true;
		else
			position[i] = -1;
	}
	if (!behind)
		return;
	if (w.job->mode == EOI_MODE_UPSERT)
	{
		for (int i = 0; i < w.own.nowned; i++)
			if (position[i] >= 0)
				w.consumed[i] = position[i];
		return;
	}
	eoi_begin_work("storing offsets past transaction markers");
	for (int i = 0; i < w.own.nowned; i++)
		if (position[i] >= 0)
			eoi_offsets_advance(w.job, &w.own.owned[i], position[i]);
	eoi_commit_work();
	for (int i = 0; i < w.own.nowned; i++)
		if (position[i] >= 0)
			w.own.owned[i].offset = position[i];
	offsets_committed();
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
static void
write_batch(EoiBatch *batch)
{
	int64	   *last_offset = palloc(sizeof(int64) * Max(w.own.nowned, 1));
	int			nmessages;
	uint64		rows = 0;
	uint64		bytes;
	int			dead = 0;

	prepare_batch(batch, last_offset);
	nmessages = batch->n;
	if (nmessages == 0)
		return;
	bytes = batch_bytes(batch);
	writing(batch, bytes);

	switch (w.job->mode)
	{
		case EOI_MODE_EXACTLY_ONCE:
			eoi_begin_work("writing batch");
			rows = eoi_sink_write_batch(w.job, batch, &dead);
			advance_offsets(last_offset);
			EOI_FAULT_POINT("before_commit");
			eoi_commit_work();
			EOI_FAULT_POINT("after_commit");
			remember_offsets(last_offset);
			offsets_committed();
			break;

		case EOI_MODE_UPSERT:
			eoi_begin_work("upserting batch");
			rows = eoi_sink_write_batch(w.job, batch, &dead);
			eoi_commit_work();
			note_consumed(last_offset);
			EOI_FAULT_POINT("between_commits");
			checkpoint_consumed();
			break;

		case EOI_MODE_AT_LEAST_ONCE:
			eoi_begin_work("writing batch");
			rows = eoi_sink_write_batch(w.job, batch, &dead);
			eoi_commit_work();
			EOI_FAULT_POINT("between_commits");
			eoi_begin_work("storing offsets");
			advance_offsets(last_offset);
			eoi_commit_work();
			remember_offsets(last_offset);
			offsets_committed();
			break;

		case EOI_MODE_AT_MOST_ONCE:
			eoi_begin_work("storing offsets");
			advance_offsets(last_offset);
			eoi_commit_work();
			remember_offsets(last_offset);
			offsets_committed();
			EOI_FAULT_POINT("between_commits");
			eoi_begin_work("writing batch");
			rows = eoi_sink_write_batch(w.job, batch, &dead);
			eoi_commit_work();
			break;

		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("mode %s is not supported by this version of eoingest",
							eoi_mode_name(w.job->mode))));
	}
	slot_count_batch(nmessages, rows, bytes, dead);
	batch_committed();
	w.failures = 0;
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
static void
write_source_transactions(void)
{
	int			cap = (int) Min((int64) EOI_TXN_BATCH_FACTOR * w.job->batch_size, 1000000);
	int64		cap_bytes = Min((int64) EOI_TXN_BATCH_FACTOR * w.job->batch_max_bytes, EOI_TXN_MAX_BYTES);
	EoiBatch   *batch = eoi_batch_create(w.batch_context, Max(cap, w.job->batch_size));
	int			polled;
	int			k;
	char	   *why;
	int			ntxn = 0;

	for (int i = 0; i < w.own.nowned; i++)
		ntxn += strcmp(w.own.owned[i].topic, w.job->txn_topic) == 0;
	if (ntxn > 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("transaction topic \"%s\" has %d partitions", w.job->txn_topic, ntxn),
				 errdetail("Only a topic of one partition keeps Debezium's BEGIN and END events in commit order."),
				 errhint("Create the transaction topic with one partition before the connector starts, or use transactions => 'batch'.")));

	batch->n = eoi_txn_take_pending(batch->messages, cap);
	polled = eoi_kafka_poll(w.kafka, batch->messages + batch->n,
							Max(Min(batch_message_limit(), cap - batch->n), 0),
							batch_byte_limit(), w.job->batch_timeout_ms);
	batch->n += polled;
	release_memory_when_idle(polled);
	for (;;)
	{
		k = eoi_txn_cut(w.job, batch, &why);
		if (k > 0 || batch->n == 0)
			break;
		if (batch->n >= cap || (int64) batch_bytes(batch) >= cap_bytes)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("job \"%s\" read %d messages (" UINT64_FORMAT " bytes) without a whole source transaction",
							w.job->name, batch->n, batch_bytes(batch)),
					 errdetail("%s With transactions => 'source' a batch grows until it holds a whole transaction, up to %d times batch_size messages and batch_max_bytes bytes (at most 1 GB); it never commits part of one.",
							   why, EOI_TXN_BATCH_FACTOR),
					 errhint("If the transaction is that large, raise batch_size (eoingest.alter_job) to more than its events / %d; if its events are in a topic the job does not read, add that topic; if the transaction topic lags, check the connector.",
							 EOI_TXN_BATCH_FACTOR)));
		if (polled == 0)
			break;				/* nothing new: wait for it in the next iteration */
		CHECK_FOR_INTERRUPTS();
		eoi_txn_align_fetching(w.kafka);
		/* extend the batch: the transaction's other events, or its END */
		polled = eoi_kafka_poll(w.kafka, batch->messages + batch->n,
								Min(w.job->batch_size, cap - batch->n), batch_byte_limit(),
								w.job->batch_timeout_ms);
		batch->n += polled;
	}
	eoi_txn_keep_pending(batch, k);
	eoi_txn_align_fetching(w.kafka);
	/*
	 * The state stays 'waiting' from one iteration to the next while a
	 * transaction waits for its other events (not 'running' through each
	 * poll); a commit sets it 'running' again.
	 */
	if (k == 0 && eoi_txn_pending_count() > 0)
		slot_set_state(EOI_WORKER_WAITING,
					   psprintf("waiting for the rest of a source transaction (%d messages read): %s",
								eoi_txn_pending_count(), why));
	else if (k == 0)
		slot_set_state(EOI_WORKER_RUNNING, NULL);
	if (k > 0)
		write_batch(batch);
	else if (eoi_txn_pending_count() == 0)
		store_positions_past_markers();
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
	aborted = (w.slot->committed_epoch < epoch && w.slot->current_epoch > epoch);
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
													   DECISION_WAIT_MS + w.job->checkpoint_interval_ms);

	pgstat_report_activity(STATE_IDLE, "waiting for the checkpoint decision");
	for (;;)
	{
		bool		committed;

		LWLockAcquire(eoi_shared->lock, LW_SHARED);
		committed = (w.slot->committed_epoch >= epoch);
		LWLockRelease(eoi_shared->lock);
		if (committed)
			return true;
		if (epoch_aborted(epoch))
			return false;
		if (GetCurrentTimestamp() >= deadline)
			ereport(ERROR,
					(errcode(ERRCODE_TRANSACTION_RESOLUTION_UNKNOWN),
					 errmsg("no decision on checkpoint epoch " UINT64_FORMAT " after %d s",
							epoch, (DECISION_WAIT_MS + w.job->checkpoint_interval_ms) / 1000),
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
	w.slot->prepared_epoch = epoch;
	w.slot->prepared_empty = empty;
	LWLockRelease(eoi_shared->lock);
	w.epoch_done = epoch;
	w.epoch_open = 0;
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
			(errmsg("eoingest job \"%s\": checkpoint epoch " UINT64_FORMAT " overflowed the subtransaction cache",
					w.job->name, epoch),
			 errdetail("The epoch holds more than %d subtransactions; other sessions' snapshots look them up in pg_subtrans until it ends.",
					   PGPROC_MAX_CACHED_SUBXIDS)));
}

/*
 * Write one checkpoint epoch: batches for checkpoint_interval_ms, or until
 * the worker has caught up, in one transaction block; then PREPARE it (the
 * pre-commit) and wait for the coordinator to commit it.
 */
static void
run_epoch(void)
{
	uint64		epoch;
	TimestampTz deadline;
	int64	   *last_offset = palloc(sizeof(int64) * Max(w.own.nowned, 1));
	int			nmessages = 0;
	uint64		rows = 0;
	uint64		bytes = 0;
	int			dead = 0;
	int			batch_dead;
	int			batches = 0;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	epoch = w.slot->current_epoch;
	LWLockRelease(eoi_shared->lock);
	if (epoch == 0 || epoch <= w.epoch_done)
	{
		/* No epoch handed out yet: ask the coordinator for one, and wait. */
		eoi_wake_launcher();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		return;
	}

	slot_set_state(EOI_WORKER_RUNNING, NULL);
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), w.job->checkpoint_interval_ms);
	eoi_tp_begin_epoch();
	w.epoch_open = epoch;
	while (GetCurrentTimestamp() < deadline)
	{
		long		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		EoiBatch   *batch = eoi_batch_create(w.batch_context, w.job->batch_size);
		int			polled;

		batch->n = eoi_kafka_poll(w.kafka, batch->messages, batch_message_limit(),
								  batch_byte_limit(),
								  (int) Min(remaining, w.job->batch_timeout_ms));
		polled = batch->n;
		release_memory_when_idle(batch->n);
		prepare_batch(batch, last_offset);
		if (batch->n > 0)
		{
			MemoryContext step_context;

			begin_step("writing batch (two_phase)");

			/*
			 * What writing the batch allocates goes with the batch: in the
			 * epoch's transaction context it would pile up until the epoch
			 * ends (a COPY buffer per batch).
			 */
			step_context = MemoryContextSwitchTo(w.batch_context);
			writing(batch, batch_bytes(batch));
			rows += eoi_sink_write_batch(w.job, batch, &batch_dead);
			dead += batch_dead;
			advance_offsets(last_offset);
			MemoryContextSwitchTo(step_context);
			end_step();
			w.writing_messages = 0;
			remember_offsets(last_offset);
			nmessages += batch->n;
			bytes += batch_bytes(batch);
		}
		MemoryContextReset(w.batch_context);
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
		if (nmessages > 0 && (polled == 0 || eoi_kafka_caught_up(w.kafka)))
			break;
		if (w.job->on_error == EOI_ON_ERROR_DEAD_LETTER && ++batches >= EPOCH_MAX_SUBXACT_BATCHES)
			break;
	}

	if (nmessages > 0)
	{
		char		gid[EOI_GID_LEN];

		eoi_gid_format(gid, MyDatabaseId, w.job->id, epoch, w.index);
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

	if (wait_for_decision(epoch))
	{
		if (nmessages > 0)
		{
			slot_count_batch(nmessages, rows, bytes, dead);
			offsets_committed();
			batch_committed();
		}
		w.failures = 0;
	}
	else
		w.assigned = false;		/* rolled back: read the stored offsets again */
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* ---- failures ---- */

/* Stop the job for good: state 'failed', the error kept for job_status. */
static void
fail_job(const char *message)
{
	EoiSavedUser saved;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		args[2] = {Int32GetDatum(w.job->id), CStringGetTextDatum(message)};

	eoi_begin_work("marking job failed");
	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("UPDATE eoingest.jobs SET state = 'failed', last_error = $2"
							  " WHERE id = $1 AND state = 'running'",
							  2, types, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not mark job failed");
	SPI_finish();
	eoi_restore_user(&saved);
	eoi_commit_work();
	eoi_wake_launcher();
}

/*
 * two_phase: this worker cannot finish the epoch it began (it failed to
 * write or to PREPARE it, for instance because max_prepared_transactions
 * is reached).  Tell the coordinator, which rolls the epoch back for the
 * whole job: the siblings must not hold their prepared transactions while
 * this worker backs off, nor keep the slots it would need.
 */
static void
epoch_failed(const char *message)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	w.slot->failed_epoch = w.epoch_open;
	strlcpy(w.slot->last_error, message, EOI_ERROR_LEN);
	w.slot->last_error_at = GetCurrentTimestamp();
	LWLockRelease(eoi_shared->lock);
	w.epoch_open = 0;
	eoi_wake_launcher();
}

/*
 * After an error: roll back, and either stop the job or wait and retry
 * from the stored offsets.
 */
static void
handle_failure(MemoryContext error_context)
{
	ErrorData  *edata;
	char	   *message;
	long		delay = RETRY_DELAY_MIN_MS;
	bool		shrunk;
	EoiErrorClass kind;

	MemoryContextSwitchTo(error_context);
	edata = CopyErrorData();
	FlushErrorState();
	AbortOutOfAnyTransaction();
	eoi_current_batch = NULL;
	pgstat_report_activity(STATE_IDLE, NULL);
	message = eoi_describe_error(edata);
	if (w.epoch_open != 0)
		epoch_failed(message);
	kind = eoi_classify_error(edata);
	shrunk = shrink_batches(kind, message);
	w.writing_messages = 0;

	/*
	 * errclass.c says whose the error is.  A record's error that reaches
	 * here is the job's to fail on (on_error = fail); a resource's was
	 * shrunk above, or is retried when the batch cannot shrink further.
	 */
	if (!shrunk && (kind == EOI_ERROR_FATAL || kind == EOI_ERROR_RECORD))
	{
		ereport(LOG,
				(errmsg("eoingest job \"%s\" failed: %s", w.job->name, message)));
		slot_set_state(EOI_WORKER_RETRYING, message);
		fail_job(message);
		proc_exit(0);
	}

	/* Halving a batch is progress: retry it without backing off further. */
	if (!shrunk)
		w.failures++;
	for (int i = 1; i < w.failures && delay < RETRY_DELAY_MAX_MS; i++)
		delay *= 2;
	delay = Min(delay, RETRY_DELAY_MAX_MS);
	if (w.failures == 1 && !shrunk)
		ereport(LOG,
				(errmsg("eoingest job \"%s\" will retry: %s", w.job->name, message)));
	slot_set_state(EOI_WORKER_RETRYING, message);

	/* Rewind: the next iteration reads the stored offsets and assigns there. */
	w.assigned = false;

	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 delay, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}

/* ---- main ---- */

static void
apply_lock_timeout(void)
{
	char		value[32];

	snprintf(value, sizeof(value), "%d", eoingest_lock_timeout);
	SetConfigOption("lock_timeout", value, PGC_USERSET, PGC_S_SESSION);
}

static void
load_job(int32 job_id)
{
	MemoryContext old;

	eoi_begin_work("loading job");
	old = MemoryContextSwitchTo(TopMemoryContext);
	w.job = eoi_job_load(job_id, true);
	if (w.job != NULL)
		w.settings = eoi_session_settings(w.job->owner);
	MemoryContextSwitchTo(old);
	eoi_commit_work();

	if (w.job == NULL || strcmp(w.job->state, "running") != 0)
		proc_exit(0);			/* dropped or stopped meanwhile */

	/* The transform's unqualified names resolve as they did at create_job. */
	SetConfigOption("search_path", w.job->search_path, PGC_USERSET, PGC_S_SESSION);
	apply_lock_timeout();
	pgstat_report_appname(psprintf("eoingest %s/%d", w.job->name, w.index));
}

/*
 * The Kafka client, made in a transaction: the policy checks the owner's
 * rights to every property against the catalogs (policy.c).
 */
static void
open_kafka(void)
{
	MemoryContext old;

	eoi_begin_work("opening the Kafka client");
	old = MemoryContextSwitchTo(TopMemoryContext);
	w.kafka = eoi_kafka_open(w.job, w.index);
	eoi_kafka_end_polls_at_watermark(w.kafka, w.job->mode == EOI_MODE_TWO_PHASE);
	MemoryContextSwitchTo(old);
	eoi_commit_work();
}

/*
 * Before a worker leaves a job that goes on (stopped, altered, or needing
 * fewer workers): store what it consumed, so that the next worker does not
 * read and apply it again.  Only upsert stores its offsets after its rows.
 */
static void
store_consumed(void)
{
	if (w.job->mode != EOI_MODE_UPSERT)
		return;
	w.next_offset_commit = 0;
	checkpoint_consumed();
}

/* The launcher asked this worker to stop: between batches, it does. */
static void
stop_as_asked(void)
{
	store_consumed();
	ereport(LOG,
			(errmsg("eoingest job \"%s\" worker %d stops as the launcher asked",
					w.job->name, w.index)));
	proc_exit(0);
}

/*
 * Every few seconds, and after a configuration reload: is the job still
 * the one this worker was started for, and may its owner still do what
 * its options and brokers ask?  The launcher stops workers of stopped,
 * dropped and altered jobs; this is the second line of defence, for a
 * worker the launcher lost track of.  A right revoked meanwhile (a role
 * membership, eoingest.allowed_brokers) fails the job here.
 */
static void
maybe_recheck_job(void)
{
	EoiJob	   *now;

	if (GetCurrentTimestamp() < w.next_recheck)
		return;
	w.next_recheck = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RECHECK_INTERVAL_MS);
	if (!slot_still_mine())
	{
		ereport(LOG,
				(errmsg("eoingest job \"%s\" worker %d exits: its slot was given to another worker",
						w.job->name, w.index)));
		proc_exit(0);
	}

	eoi_begin_work("checking the job");
	now = eoi_job_load(w.job->id, true);
	if (now == NULL || strcmp(now->state, "running") != 0 ||
		now->config_version != w.job->config_version)
	{
		const char *why = now == NULL ? "dropped" :
			strcmp(now->state, "running") != 0 ? "stopped" : "altered";

		eoi_commit_work();
		if (now != NULL)
			store_consumed();
		ereport(LOG,
				(errmsg("eoingest job \"%s\" worker %d exits: the job was %s",
						w.job->name, w.index, why)));
		proc_exit(0);
	}
	eoi_check_brokers_allowed(w.job->brokers);
	eoi_check_options_allowed(w.job->options, w.job->owner);
	eoi_commit_work();
}

/*
 * A worker that waits for default_transaction_read_only to be turned off
 * sees a change made in postgresql.conf (SIGHUP), but not an ALTER
 * DATABASE/ROLE ... SET or RESET: once those changed, it exits, and the
 * launcher starts it again in a new session that has them (settings.c).
 */
static void
exit_if_settings_changed(void)
{
	MemoryContext caller = CurrentMemoryContext;
	char	   *now;

	eoi_begin_work("checking the database's settings");
	MemoryContextSwitchTo(caller);
	now = eoi_session_settings(w.job->owner);
	eoi_commit_work();
	MemoryContextSwitchTo(caller);
	if (strcmp(now, w.settings) == 0)
		return;
	ereport(LOG,
			(errmsg("eoingest job \"%s\" worker %d restarts to apply the changed settings of its database or role",
					w.job->name, w.index)));
	proc_exit(0);
}

/*
 * Once per worker: refuse to run on a server that a newer one of the same
 * cluster has replaced, else note this server in the job row (fence.c).
 */
static void
record_server(void)
{
	MemoryContext old;

	eoi_begin_work("recording the server");
	eoi_fence_record(w.job);
	old = MemoryContextSwitchTo(TopMemoryContext);
	w.fence_metadata = eoi_fence_metadata();
	MemoryContextSwitchTo(old);
	eoi_commit_work();
	w.fenced = true;
}

static void
one_iteration(void)
{
	EoiBatch   *batch;

	CHECK_FOR_INTERRUPTS();
	if (!PostmasterIsAlive())
		proc_exit(1);			/* as WL_EXIT_ON_PM_DEATH would */
	if (w.slot->stop_asked_at != 0)
		stop_as_asked();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		apply_lock_timeout();
		w.next_recheck = 0;		/* eoingest.allowed_brokers may have changed */
	}
	maybe_recheck_job();
	if (w.kafka == NULL)
		open_kafka();

	/* Writes are refused: say so in job_status and wait, holding nothing. */
	if (DefaultXactReadOnly)
	{
		slot_set_state(EOI_WORKER_WAITING,
					   "the database is read-only (default_transaction_read_only is on); the job resumes when it is turned off");
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		exit_if_settings_changed();
		return;
	}

	if (!w.fenced)
		record_server();
	if (!w.assigned && w.job->mode == EOI_MODE_TWO_PHASE)
		eoi_tp_wait_for_resolution(w.job->id, w.index);
	if (!w.assigned && !assign_partitions())
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		return;
	}
	if (eoi_partitions_grew(&w.own))
		w.assigned = false;
	if (!w.assigned)
		return;
	maybe_refresh_lag();
	sample_rate();

	if (w.job->mode == EOI_MODE_TWO_PHASE)
	{
		run_epoch();
		/*
		 * Between epochs everything handed out is in the epoch just
		 * decided; should its COMMIT PREPARED still be on its way, the
		 * offsets update waits for it.
		 */
		if (w.assigned)
			store_positions_past_markers();
		return;
	}

	if (w.job->source_transactions)
	{
		write_source_transactions();	/* sets its own state */
		return;
	}
	slot_set_state(EOI_WORKER_RUNNING, NULL);
	batch = eoi_batch_create(w.batch_context, w.job->batch_size);
	pgstat_report_activity(STATE_IDLE, NULL);
	batch->n = eoi_kafka_poll(w.kafka, batch->messages, batch_message_limit(),
							  batch_byte_limit(), w.job->batch_timeout_ms);
	release_memory_when_idle(batch->n);
	if (batch->n > 0)
		write_batch(batch);
	else
	{
		store_positions_past_markers();
		if (w.job->mode == EOI_MODE_UPSERT)
			checkpoint_consumed();
	}
}

void
eoingest_worker_main(Datum main_arg)
{
	EoiWorkerArgs args;
	MemoryContext loop_context;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	w.index = args.worker_index;
	eoi_shape_set_worker(w.index);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	EOI_FAULT_POINT("slot_race");	/* for tests: attach late */
	slot_attach(DatumGetInt32(main_arg), &args);
	/* registered before the connection: runs after its transaction is aborted */
	before_shmem_exit(release_messages, (Datum) 0);
	BackgroundWorkerInitializeConnectionByOid(args.database, args.owner, 0);
	load_job(args.job_id);

	w.next_recheck = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RECHECK_INTERVAL_MS);
	w.batch_context = AllocSetContextCreate(TopMemoryContext, "eoingest batch",
											ALLOCSET_DEFAULT_SIZES);
	loop_context = AllocSetContextCreate(TopMemoryContext, "eoingest worker loop",
										 ALLOCSET_DEFAULT_SIZES);

	ereport(LOG,
			(errmsg("eoingest job \"%s\" worker %d started", w.job->name, w.index)));

	for (;;)
	{
		MemoryContextSwitchTo(loop_context);
		PG_TRY();
		{
			one_iteration();
		}
		PG_CATCH();
		{
			handle_failure(loop_context);
		}
		PG_END_TRY();
		MemoryContextReset(w.batch_context);
		MemoryContextReset(loop_context);
	}
}
