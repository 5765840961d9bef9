/*-------------------------------------------------------------------------
 *
 * workeroffsets.c
 *	  The worker's partitions and offsets: assigning its partitions at
 *	  their stored positions, the log ends it records for eoingest.lag,
 *	  and storing offsets (upsert's consumed offsets every
 *	  offset_commit_interval_ms, positions past transaction markers).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/proc.h"
#include "utils/memutils.h"

#include "base/txn.h"
#include "envelope/cdctxn.h"
#include "kafka/groupfence.h"
#include "worker/worker_internal.h"

#define LAG_REFRESH_MS			5000
#define LAG_CONFIRM_MS			50000

/* ---- partitions ---- */

/*
 * Assign this worker's partitions at their stored positions (partitions.c),
 * and start its per-partition bookkeeping over.  False while a topic of the
 * job does not exist: job_status says so.
 */
bool
eoi_worker_assign_partitions(void)
{
	char		waiting[512];
	MemoryContext old;

	eoi_worker.own.job = eoi_worker.job;
	eoi_worker.own.index = eoi_worker.index;
	eoi_worker.own.kafka = eoi_worker.kafka;
	if (!eoi_partitions_assign(&eoi_worker.own, waiting, sizeof(waiting)))
	{
		eoi_worker_slot_set_state(EOI_WORKER_WAITING, waiting);
		return false;
	}
	eoi_fence_check(eoi_worker.job, eoi_worker.kafka, eoi_worker.own.owned, eoi_worker.own.nowned);
	eoi_worker_offsets_committed();		/* stamp the group with this server at once */
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (eoi_worker.consumed)
		pfree(eoi_worker.consumed);
	if (eoi_worker.consumed_at)
		pfree(eoi_worker.consumed_at);
	eoi_worker.consumed = palloc0(sizeof(int64) * Max(eoi_worker.own.nowned, 1));
	eoi_worker.consumed_at = palloc0(sizeof(TimestampTz) * Max(eoi_worker.own.nowned, 1));
	MemoryContextSwitchTo(old);
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		eoi_worker.consumed[i] = eoi_worker.own.owned[i].offset;
	if (eoi_worker.noted)
		pfree(eoi_worker.noted);
	eoi_worker.noted = NULL;				/* write every partition's log end anew */
	eoi_txn_forget_pending();	/* read again from the stored offsets */
	if (eoi_worker.job->source_transactions)
		eoi_txn_align_fetching(eoi_worker.kafka);	/* resume what was paused */
	eoi_worker.assigned = true;
	return true;
}

/*
 * Every few seconds, record the log end librdkafka last saw for each owned
 * partition, so that eoingest.lag answers without asking the broker.  Only
 * what changed is written, and the rest every LAG_CONFIRM_MS, so that an
 * idle job does not update its rows every few seconds while measured_at
 * still says (within a minute) that the worker is polling.
 */
void
eoi_worker_maybe_refresh_lag(void)
{
	bool		any = false;
	bool		confirm;
	TimestampTz now = GetCurrentTimestamp();

	if (now < eoi_worker.next_lag_refresh)
		return;
	eoi_worker.next_lag_refresh = TimestampTzPlusMilliseconds(now, LAG_REFRESH_MS);
	confirm = (eoi_worker.noted == NULL || now >= eoi_worker.next_lag_confirm);
	if (confirm)
		eoi_worker.next_lag_confirm = TimestampTzPlusMilliseconds(now, LAG_CONFIRM_MS);
	if (eoi_worker.noted == NULL)
		eoi_worker.noted = MemoryContextAllocZero(TopMemoryContext, sizeof(int64) * 3 * Max(eoi_worker.own.nowned, 1));
	for (int i = 0; i < eoi_worker.own.nowned; i++)
	{
		int64		low,
					high,
					lso = -1;
		int64	   *noted = &eoi_worker.noted[i * 3];

		if (!eoi_kafka_cached_watermarks(eoi_worker.kafka, eoi_worker.own.owned[i].topic, eoi_worker.own.owned[i].partition,
										 &low, &high))
			continue;
		if (!eoi_kafka_last_stable_offset(eoi_worker.kafka, eoi_worker.own.owned[i].topic, eoi_worker.own.owned[i].partition, &lso))
			lso = -1;
		if (!confirm && noted[0] == low && noted[1] == high && noted[2] == lso)
			continue;
		if (!any)
			eoi_begin_work("recording the log end");
		any = true;
		eoi_offsets_note_watermarks(eoi_worker.job, &eoi_worker.own.owned[i], low, high, lso);
		noted[0] = low;
		noted[1] = high;
		noted[2] = lso;
	}
	if (any)
		eoi_commit_work();
}

/* ---- offsets ---- */

/* Advance every partition of the batch to its last offset + 1. */
void
eoi_worker_advance_offsets(const EoiBatchEnd *end)
{
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		if (end[i].offset >= 0)
			eoi_offsets_advance(eoi_worker.job, &eoi_worker.own.owned[i], end[i].offset + 1,
								end[i].message_at);
}

void
eoi_worker_remember_offsets(const EoiBatchEnd *end)
{
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		if (end[i].offset >= 0)
			eoi_worker.own.owned[i].offset = end[i].offset + 1;
}

/* After PostgreSQL committed offsets: tell Kafka too, if the job asks. */
void
eoi_worker_offsets_committed(void)
{
	if (eoi_worker.job->commit_to_kafka)
		eoi_kafka_commit_for_monitoring(eoi_worker.kafka, eoi_worker.own.owned, eoi_worker.own.nowned, eoi_worker.fence_metadata);
}

/*
 * upsert: the rows are committed, the offsets follow every
 * offset_commit_interval_ms in a transaction of their own.  A crash in
 * between replays batches whose upserts are already in: the same final
 * values are written again.
 */
void
eoi_worker_note_consumed(const EoiBatchEnd *end)
{
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		if (end[i].offset + 1 > eoi_worker.consumed[i])
		{
			eoi_worker.consumed[i] = end[i].offset + 1;
			if (end[i].message_at != 0)
				eoi_worker.consumed_at[i] = end[i].message_at;
		}
}

void
eoi_worker_checkpoint_consumed(void)
{
	bool		behind = false;

	if (GetCurrentTimestamp() < eoi_worker.next_offset_commit)
		return;
	eoi_worker.next_offset_commit = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   eoi_worker.job->offset_commit_interval_ms);
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		behind |= (eoi_worker.consumed[i] > eoi_worker.own.owned[i].offset);
	if (!behind)
		return;

	eoi_begin_work("storing offsets");
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		if (eoi_worker.consumed[i] > eoi_worker.own.owned[i].offset)
			eoi_offsets_advance(eoi_worker.job, &eoi_worker.own.owned[i], eoi_worker.consumed[i],
								eoi_worker.consumed_at[i]);
	eoi_commit_work();
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		eoi_worker.own.owned[i].offset = eoi_worker.consumed[i];
	eoi_worker_offsets_committed();
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
 * offsets that eoi_worker_checkpoint_consumed() stores.
 */
void
eoi_worker_store_positions_past_markers(void)
{
	int64	   *position = palloc(sizeof(int64) * Max(eoi_worker.own.nowned, 1));
	bool		behind = false;

	if (!eoi_kafka_positions(eoi_worker.kafka, eoi_worker.own.owned, eoi_worker.own.nowned, position))
		return;
	for (int i = 0; i < eoi_worker.own.nowned; i++)
	{
		int64		stored = (eoi_worker.job->mode == EOI_MODE_UPSERT) ? eoi_worker.consumed[i] : eoi_worker.own.owned[i].offset;

		if (position[i] > stored)
			behind = true;
		else
			position[i] = -1;
	}
	if (!behind)
		return;
	if (eoi_worker.job->mode == EOI_MODE_UPSERT)
	{
		for (int i = 0; i < eoi_worker.own.nowned; i++)
			if (position[i] >= 0)
				eoi_worker.consumed[i] = position[i];
		return;
	}
	eoi_begin_work("storing offsets past transaction markers");
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		if (position[i] >= 0)
			eoi_offsets_advance(eoi_worker.job, &eoi_worker.own.owned[i], position[i], 0);
	eoi_commit_work();
	for (int i = 0; i < eoi_worker.own.nowned; i++)
		if (position[i] >= 0)
			eoi_worker.own.owned[i].offset = position[i];
	eoi_worker_offsets_committed();
}

/*
 * Before a worker leaves a job that goes on (stopped, altered, or needing
 * fewer workers): store what it consumed, so that the next worker does not
 * read and apply it again.  Only upsert stores its offsets after its rows.
 */
void
eoi_worker_store_consumed(void)
{
	if (eoi_worker.job->mode != EOI_MODE_UPSERT)
		return;
	eoi_worker.next_offset_commit = 0;
	eoi_worker_checkpoint_consumed();
}
