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
 * This file owns the worker's process: its shared-memory slot, its memory
 * and message rate, and the loop of iterations.  A batch and a two_phase
 * epoch are in workerbatch.c, the partitions and the offsets in
 * workeroffsets.c, failures and the batch caps they set in workerfail.c.
 * They share the worker's state (eoi_worker, in worker_internal.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "executor/spi.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "apply/shape.h"
#include "base/settings.h"
#include "base/txn.h"
#include "envelope/cdctxn.h"
#include "kafka/policy.h"
#include "store/fence.h"
#include "worker/launcher.h"
#include "worker/twophase.h"
#include "worker/worker.h"
#include "worker/worker_internal.h"

#define RECHECK_INTERVAL_MS		5000

Worker		eoi_worker;

static void note_heap_in_use(void);

/* ---- shared-memory slot ---- */

static void
slot_detach(int code, Datum arg)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	if (eoi_worker.slot != NULL && eoi_worker.slot->pid == MyProcPid)
	{
		eoi_worker.slot->pid = 0;
		eoi_worker.slot->latch = NULL;
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
	eoi_worker.slot = slot;
	eoi_worker.generation = args->generation;
	before_shmem_exit(slot_detach, (Datum) 0);
}

/*
 * At exit, after the transaction is aborted and before the Kafka client is
 * closed (kafka.c's close_at_exit, an on_proc_exit callback, runs after
 * every before_shmem_exit one): hand back every message the worker still
 * holds (what a poll interrupted by the exit had taken, into the batch's
 * array; the batch; what is kept for a source transaction's next batch),
 * or rd_kafka_destroy() would wait for them for ever.  First the job's
 * statistics get what the worker has not reported yet.
 */
static void
release_messages(int code, Datum arg)
{
	if (eoi_worker.job != NULL)
		eoi_worker_report_stats();	/* the time in the last polls */
	eoi_kafka_drop_polled(eoi_worker.kafka);
	if (eoi_worker.batch_context != NULL)
		MemoryContextReset(eoi_worker.batch_context);
	eoi_txn_forget_pending();
}

void
eoi_worker_slot_set_state(EoiWorkerState state, const char *error)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	eoi_worker.slot->state = state;
	if (error != NULL)
	{
		strlcpy(eoi_worker.slot->last_error, error, EOI_ERROR_LEN);
		eoi_worker.slot->last_error_at = GetCurrentTimestamp();
	}
	LWLockRelease(eoi_shared->lock);
}

void
eoi_worker_slot_count_batch(int messages, uint64 rows, uint64 bytes, int dead)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	eoi_worker.slot->state = EOI_WORKER_RUNNING;
	eoi_worker.slot->progressed = true;
	eoi_worker.slot->messages += messages;
	eoi_worker.slot->rows += rows;
	eoi_worker.slot->bytes += bytes;
	eoi_worker.slot->batches++;
	eoi_worker.slot->dead_letters += dead;
	eoi_worker.slot->last_commit_at = GetCurrentTimestamp();
	eoi_worker.slot->last_error[0] = '\0';
	eoi_worker.slot->last_error_at = 0;
	LWLockRelease(eoi_shared->lock);

	eoi_worker.unreported.messages += messages;
	eoi_worker.unreported.rows += rows;
	eoi_worker.unreported.bytes += bytes;
	eoi_worker.unreported.batches++;
	eoi_worker.unreported.dead_letters += dead;
	eoi_worker_report_stats();
}

/* ---- the job's statistics ---- */

/*
 * Add what the worker counted since the last call to its job's statistics
 * (after each batch, failure and empty poll: never per message).
 */
void
eoi_worker_report_stats(void)
{
	if (!eoi_job_stats_add(eoi_worker.job->id, &eoi_worker.unreported) && !eoi_worker.stats_full_said)
	{
		eoi_worker.stats_full_said = true;
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("eoingest job \"%s\" is not counted in eoingest.job_stats: its table is full",
						eoi_worker.job->name),
				 errhint("The table holds four entries per eoingest.max_workers, at least 1024; raise eoingest.max_workers or drop unused jobs.")));
	}
	memset(&eoi_worker.unreported, 0, sizeof(EoiJobCounters));
}

/*
 * Poll Kafka for a batch (kafka/kafkapoll.c), counting the time spent
 * waiting for it; a poll that brings nothing reports the statistics, so
 * that an idle job's waiting shows too.
 */
int
eoi_worker_poll(rd_kafka_message_t **messages, int max_messages, int64 max_bytes, int timeout_ms)
{
	instr_time	start;
	instr_time	elapsed;
	int			n;

	INSTR_TIME_SET_CURRENT(start);
	n = eoi_kafka_poll(eoi_worker.kafka, messages, max_messages, max_bytes, timeout_ms);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	eoi_worker.unreported.kafka_wait_ms += INSTR_TIME_GET_MILLISEC(elapsed);
	if (n == 0)
		eoi_worker_report_stats();
	return n;
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
	mine = eoi_worker.slot->in_use && eoi_worker.slot->generation == eoi_worker.generation && eoi_worker.slot->pid == MyProcPid;
	LWLockRelease(eoi_shared->lock);
	return mine;
}

/* ---- transactions ---- */

/*
 * One step inside a two_phase epoch's transaction block: the block stays
 * open across steps, each step gets a fresh snapshot.
 */
void
eoi_worker_begin_step(const char *activity)
{
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

void
eoi_worker_end_step(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* ---- memory and the message rate ---- */

/*
 * When a worker runs dry after a busy stretch, hand back to the system the
 * memory glibc kept from its batches and from librdkafka's prefetch (whose
 * threads allocate in arenas of their own): an idle job should not sit on
 * its peak.  Once per busy stretch, so a steady stream pays nothing.
 */
void
eoi_worker_release_memory_when_idle(int messages)
{
	if (messages > 0)
	{
		eoi_worker.busy = true;
		return;
	}
	if (!eoi_worker.busy)
		return;
	eoi_worker.busy = false;
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

	eoi_worker.slot->heap_bytes = (int64) (mi.uordblks + mi.hblkhd);
#else
	eoi_worker.slot->heap_bytes = -1;
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
		if (eoi_worker.slot->rate_at[i] > eoi_worker.slot->rate_at[newest])
			newest = i;
		if (eoi_worker.slot->rate_at[i] < eoi_worker.slot->rate_at[oldest])
			oldest = i;
	}
	if (eoi_worker.slot->rate_at[newest] != 0 &&
		!TimestampDifferenceExceeds(eoi_worker.slot->rate_at[newest], now, 10000))
		return;
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	eoi_worker.slot->rate_at[oldest] = now;
	eoi_worker.slot->rate_messages[oldest] = eoi_worker.slot->messages;
	LWLockRelease(eoi_shared->lock);
	note_heap_in_use();
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
	eoi_worker.job = eoi_job_load(job_id, true);
	if (eoi_worker.job != NULL)
		eoi_worker.settings = eoi_session_settings(eoi_worker.job->owner);
	MemoryContextSwitchTo(old);
	eoi_commit_work();

	if (eoi_worker.job == NULL || strcmp(eoi_worker.job->state, "running") != 0)
		proc_exit(0);			/* dropped or stopped meanwhile */

	/* The transform's unqualified names resolve as they did at create_job. */
	SetConfigOption("search_path", eoi_worker.job->search_path, PGC_USERSET, PGC_S_SESSION);
	apply_lock_timeout();
	/* durability => 'async': a batch's commit does not wait for its WAL to be flushed */
	if (eoi_worker.job->durability_async)
		SetConfigOption("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION);
	pgstat_report_appname(psprintf("eoingest %s/%d", eoi_worker.job->name, eoi_worker.index));
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
	eoi_worker.kafka = eoi_kafka_open(eoi_worker.job, eoi_worker.index);
	eoi_kafka_end_polls_at_watermark(eoi_worker.kafka, eoi_worker.job->mode == EOI_MODE_TWO_PHASE);
	MemoryContextSwitchTo(old);
	eoi_commit_work();
}

/* The launcher asked this worker to stop: between batches, it does. */
static void
stop_as_asked(void)
{
	eoi_worker_store_consumed();
	ereport(LOG,
			(errmsg("eoingest job \"%s\" worker %d stops as the launcher asked",
					eoi_worker.job->name, eoi_worker.index)));
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

	if (GetCurrentTimestamp() < eoi_worker.next_recheck)
		return;
	eoi_worker.next_recheck = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RECHECK_INTERVAL_MS);
	if (!slot_still_mine())
	{
		ereport(LOG,
				(errmsg("eoingest job \"%s\" worker %d exits: its slot was given to another worker",
						eoi_worker.job->name, eoi_worker.index)));
		proc_exit(0);
	}

	eoi_begin_work("checking the job");
	now = eoi_job_load(eoi_worker.job->id, true);
	if (now == NULL || strcmp(now->state, "running") != 0 ||
		now->config_version != eoi_worker.job->config_version)
	{
		bool		dropped = now == NULL;
		bool		stopped = !dropped && strcmp(now->state, "running") != 0;

		eoi_commit_work();
		if (now != NULL)
			eoi_worker_store_consumed();
		ereport(LOG,
				(dropped ?
				 errmsg("eoingest job \"%s\" worker %d exits: the job was dropped",
						eoi_worker.job->name, eoi_worker.index) :
				 stopped ?
				 errmsg("eoingest job \"%s\" worker %d exits: the job was stopped",
						eoi_worker.job->name, eoi_worker.index) :
				 errmsg("eoingest job \"%s\" worker %d exits: the job was altered",
						eoi_worker.job->name, eoi_worker.index)));
		proc_exit(0);
	}
	eoi_check_brokers_allowed(eoi_worker.job->brokers);
	eoi_check_options_allowed(eoi_worker.job->options, eoi_worker.job->owner);
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
	now = eoi_session_settings(eoi_worker.job->owner);
	eoi_commit_work();
	MemoryContextSwitchTo(caller);
	if (strcmp(now, eoi_worker.settings) == 0)
		return;
	ereport(LOG,
			(errmsg("eoingest job \"%s\" worker %d restarts to apply the changed settings of its database or role",
					eoi_worker.job->name, eoi_worker.index)));
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
	eoi_fence_record(eoi_worker.job);
	old = MemoryContextSwitchTo(TopMemoryContext);
	eoi_worker.fence_metadata = eoi_fence_metadata();
	MemoryContextSwitchTo(old);
	eoi_commit_work();
	eoi_worker.fenced = true;
}

static void
one_iteration(void)
{
	EoiBatch   *batch;

	CHECK_FOR_INTERRUPTS();
	if (!PostmasterIsAlive())
		proc_exit(1);			/* as WL_EXIT_ON_PM_DEATH would */
	if (eoi_worker.slot->stop_asked_at != 0)
		stop_as_asked();
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
		apply_lock_timeout();
		eoi_worker.next_recheck = 0;		/* eoingest.allowed_brokers may have changed */
	}
	maybe_recheck_job();
	if (eoi_worker.kafka == NULL)
		open_kafka();

	/* Writes are refused: say so in job_status and wait, holding nothing. */
	if (DefaultXactReadOnly)
	{
		eoi_worker_slot_set_state(EOI_WORKER_WAITING,
					   "the database is read-only (default_transaction_read_only is on); the job resumes when it is turned off");
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		exit_if_settings_changed();
		return;
	}

	if (!eoi_worker.fenced)
		record_server();
	if (!eoi_worker.assigned && eoi_worker.job->mode == EOI_MODE_TWO_PHASE)
		eoi_tp_wait_for_resolution(eoi_worker.job->id, eoi_worker.index);
	if (!eoi_worker.assigned && !eoi_worker_assign_partitions())
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		return;
	}
	if (eoi_partitions_grew(&eoi_worker.own))
		eoi_worker.assigned = false;
	if (!eoi_worker.assigned)
		return;
	eoi_worker_maybe_refresh_lag();
	sample_rate();

	if (eoi_worker.job->mode == EOI_MODE_TWO_PHASE)
	{
		eoi_worker_run_epoch();
		/*
		 * Between epochs everything handed out is in the epoch just
		 * decided; should its COMMIT PREPARED still be on its way, the
		 * offsets update waits for it.
		 */
		if (eoi_worker.assigned)
			eoi_worker_store_positions_past_markers();
		return;
	}

	if (eoi_worker.job->source_transactions)
	{
		eoi_worker_write_source_transactions();	/* sets its own state */
		return;
	}
	eoi_worker_slot_set_state(EOI_WORKER_RUNNING, NULL);
	batch = eoi_batch_create(eoi_worker.batch_context, eoi_worker.job->batch_size);
	pgstat_report_activity(STATE_IDLE, NULL);
	batch->n = eoi_worker_poll(batch->messages, eoi_worker_batch_message_limit(),
							   eoi_worker_batch_byte_limit(), eoi_worker.job->batch_timeout_ms);
	eoi_worker_release_memory_when_idle(batch->n);
	if (batch->n > 0)
		eoi_worker_write_batch(batch);
	else
	{
		eoi_worker_store_positions_past_markers();
		if (eoi_worker.job->mode == EOI_MODE_UPSERT)
			eoi_worker_checkpoint_consumed();
	}
}

void
eoingest_worker_main(Datum main_arg)
{
	EoiWorkerArgs args;
	MemoryContext loop_context;

	memcpy(&args, MyBgworkerEntry->bgw_extra, sizeof(args));
	eoi_worker.index = args.worker_index;
	eoi_shape_set_worker(eoi_worker.index);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	EOI_FAULT_POINT("slot_race");	/* for tests: attach late */
	slot_attach(DatumGetInt32(main_arg), &args);
	/* registered before the connection: runs after its transaction is aborted */
	before_shmem_exit(release_messages, (Datum) 0);
	BackgroundWorkerInitializeConnectionByOid(args.database, args.owner, 0);
	load_job(args.job_id);

	eoi_worker.next_recheck = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RECHECK_INTERVAL_MS);
	eoi_worker.batch_context = AllocSetContextCreate(TopMemoryContext, "eoingest batch",
											ALLOCSET_DEFAULT_SIZES);
	loop_context = AllocSetContextCreate(TopMemoryContext, "eoingest worker loop",
										 ALLOCSET_DEFAULT_SIZES);

	ereport(LOG,
			(errmsg("eoingest job \"%s\" worker %d started", eoi_worker.job->name, eoi_worker.index)));

	for (;;)
	{
		MemoryContextSwitchTo(loop_context);
		PG_TRY();
		{
			one_iteration();
		}
		PG_CATCH();
		{
			eoi_worker_handle_failure(loop_context);
		}
		PG_END_TRY();
		MemoryContextReset(eoi_worker.batch_context);
		MemoryContextReset(loop_context);
	}
}
