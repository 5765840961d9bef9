/*-------------------------------------------------------------------------
 *
 * worker_internal.h
 *	  What the worker's files share (worker.c, workerbatch.c,
 *	  workeroffsets.c, workerfail.c): the worker's state, one per process,
 *	  and the functions one file calls in another.  Not for use outside
 *	  worker/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_WORKER_INTERNAL_H
#define EOI_WORKER_INTERNAL_H

#include "postgres.h"

#include "utils/timestamp.h"

#include "apply/errclass.h"
#include "base/jobstats.h"
#include "base/shmem.h"
#include "kafka/batch.h"
#include "kafka/kafka.h"
#include "kafka/partitions.h"
#include "store/job.h"

/*
 * Where a batch ends in one partition the worker owns: its last message's
 * offset (-1: the batch has none there) and Kafka timestamp (0: none).
 */
typedef struct EoiBatchEnd
{
	int64		offset;
	TimestampTz message_at;
} EoiBatchEnd;

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
	TimestampTz *consumed_at;	/* upsert: and their last messages' timestamps */
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
	/* What the job's statistics have not been given yet (jobstats.c). */
	EoiJobCounters unreported;
	bool		stats_full_said;
} Worker;

/* The worker's state: this process runs one worker of one job. */
extern Worker eoi_worker;

/* worker.c */
extern void eoi_worker_slot_set_state(EoiWorkerState state, const char *error);
extern void eoi_worker_slot_count_batch(int messages, uint64 rows, uint64 bytes, int dead);
extern void eoi_worker_report_stats(void);
extern int	eoi_worker_poll(rd_kafka_message_t **messages, int max_messages, int64 max_bytes,
							int timeout_ms);
extern void eoi_worker_begin_step(const char *activity);
extern void eoi_worker_end_step(void);
extern void eoi_worker_release_memory_when_idle(int messages);

/* workerbatch.c */
extern void eoi_worker_write_batch(EoiBatch *batch);
extern void eoi_worker_write_source_transactions(void);
extern void eoi_worker_run_epoch(void);

/* workeroffsets.c */
extern bool eoi_worker_assign_partitions(void);
extern void eoi_worker_maybe_refresh_lag(void);
extern void eoi_worker_advance_offsets(const EoiBatchEnd *end);
extern void eoi_worker_remember_offsets(const EoiBatchEnd *end);
extern void eoi_worker_offsets_committed(void);
extern void eoi_worker_note_consumed(const EoiBatchEnd *end);
extern void eoi_worker_checkpoint_consumed(void);
extern void eoi_worker_store_positions_past_markers(void);
extern void eoi_worker_store_consumed(void);

/* workerfail.c */
extern int eoi_worker_batch_message_limit(void);
extern int64 eoi_worker_batch_byte_limit(void);
extern void eoi_worker_writing(EoiBatch *batch, uint64 bytes);
extern void eoi_worker_batch_committed(void);
extern void eoi_worker_handle_failure(MemoryContext error_context);

#endif
