/*-------------------------------------------------------------------------
 *
 * workerfail.c
 *	  The worker's failures: a batch rolled back and retried after a
 *	  backoff, a job failed for good, and the caps on the batches' size
 *	  after a batch ran out of memory, which grow back as batches fit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "utils/builtins.h"

#include "apply/sink.h"
#include "base/txn.h"
#include "worker/worker_internal.h"

#define RETRY_DELAY_MIN_MS		100
#define RETRY_DELAY_MAX_MS		30000
#define CAPPED_BATCHES_BEFORE_GROWTH 16

/* ---- the size of a batch ---- */

int
eoi_worker_batch_message_limit(void)
{
	if (eoi_worker.cap_messages > 0)
		return Min(eoi_worker.cap_messages, eoi_worker.job->batch_size);
	return eoi_worker.job->batch_size;
}

int64
eoi_worker_batch_byte_limit(void)
{
	if (eoi_worker.cap_bytes > 0)
		return Min(eoi_worker.cap_bytes, (int64) eoi_worker.job->batch_max_bytes);
	return eoi_worker.job->batch_max_bytes;
}

void
eoi_worker_writing(EoiBatch *batch, uint64 bytes)
{
	eoi_worker.writing_messages = batch->n;
	eoi_worker.writing_bytes = bytes;
}

/*
 * A batch committed.  Batches capped after a failure grow back, doubling
 * after every CAPPED_BATCHES_BEFORE_GROWTH batches that fitted, so that a
 * passing shortage of memory does not slow the job for good.
 */
void
eoi_worker_batch_committed(void)
{
	eoi_worker.writing_messages = 0;
	eoi_worker.writing_bytes = 0;
	if (eoi_worker.cap_messages == 0 && eoi_worker.cap_bytes == 0)
		return;
	if (++eoi_worker.capped_batches < CAPPED_BATCHES_BEFORE_GROWTH)
		return;
	eoi_worker.capped_batches = 0;
	eoi_worker.cap_messages = (eoi_worker.cap_messages >= eoi_worker.job->batch_size / 2) ? 0 : eoi_worker.cap_messages * 2;
	eoi_worker.cap_bytes = (eoi_worker.cap_bytes >= eoi_worker.job->batch_max_bytes / 2) ? 0 : eoi_worker.cap_bytes * 2;
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
	if (kind != EOI_ERROR_RESOURCE || eoi_worker.writing_messages <= 1)
		return false;
	eoi_worker.cap_messages = Max(eoi_worker.writing_messages / 2, 1);
	eoi_worker.cap_bytes = Max((int64) (eoi_worker.writing_bytes / 2), 1);
	eoi_worker.capped_batches = 0;
	ereport(LOG,
			(errmsg("eoingest job \"%s\" ran out of resources and retries with smaller batches",
					eoi_worker.job->name),
			 errdetail("The batch held %d messages (" UINT64_FORMAT " bytes); the next batches hold at most %d messages and " INT64_FORMAT " bytes. The error was \"%s\".",
					   eoi_worker.writing_messages, eoi_worker.writing_bytes, eoi_worker.cap_messages, eoi_worker.cap_bytes,
					   message)));
	return true;
}

/* ---- failures ---- */

/* Stop the job for good: state 'failed', the error kept for job_status. */
static void
fail_job(const char *message)
{
	EoiSavedUser saved;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		args[2] = {Int32GetDatum(eoi_worker.job->id), CStringGetTextDatum(message)};

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
	eoi_worker.slot->failed_epoch = eoi_worker.epoch_open;
	strlcpy(eoi_worker.slot->last_error, message, EOI_ERROR_LEN);
	eoi_worker.slot->last_error_at = GetCurrentTimestamp();
	LWLockRelease(eoi_shared->lock);
	eoi_worker.epoch_open = 0;
	eoi_wake_launcher();
}

/*
 * After an error: roll back, and either stop the job or wait and retry
 * from the stored offsets.
 */
void
eoi_worker_handle_failure(MemoryContext error_context)
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
	pgstat_report_activity(STATE_IDLE, NULL);
	message = eoi_describe_error(edata);
	if (eoi_worker.epoch_open != 0)
		epoch_failed(message);
	/* a routed target not created yet: the job waits for it */
	kind = eoi_target_missing() ? EOI_ERROR_TRANSIENT : eoi_classify_error(edata);
	shrunk = shrink_batches(kind, message);
	eoi_worker.writing_messages = 0;
	eoi_worker.unreported.errors++;

	/*
	 * errclass.c says whose the error is.  A record's error that reaches
	 * here is the job's to fail on (on_error = fail); a resource's was
	 * shrunk above, or is retried when the batch cannot shrink further.
	 */
	if (!shrunk && (kind == EOI_ERROR_FATAL || kind == EOI_ERROR_RECORD))
	{
		ereport(LOG,
				(errmsg("eoingest job \"%s\" failed: %s", eoi_worker.job->name, message)));
		eoi_worker_slot_set_state(EOI_WORKER_RETRYING, message);
		eoi_worker_report_stats();
		fail_job(message);
		proc_exit(0);
	}
	eoi_worker.unreported.retries++;
	eoi_worker_report_stats();

	/* Halving a batch is progress: retry it without backing off further. */
	if (!shrunk)
		eoi_worker.failures++;
	for (int i = 1; i < eoi_worker.failures && delay < RETRY_DELAY_MAX_MS; i++)
		delay *= 2;
	delay = Min(delay, RETRY_DELAY_MAX_MS);
	if (eoi_worker.failures == 1 && !shrunk)
		ereport(LOG,
				(errmsg("eoingest job \"%s\" will retry: %s", eoi_worker.job->name, message)));
	eoi_worker_slot_set_state(EOI_WORKER_RETRYING, message);

	/* Rewind: the next iteration reads the stored offsets and assigns there. */
	eoi_worker.assigned = false;

	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 delay, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}
