/*-------------------------------------------------------------------------
 *
 * twophase.c
 *	  Mode two_phase, after the seed article's two-phase-commit sink.
 *
 * Work advances in checkpoint epochs.  For epoch E every worker of the job
 * writes its rows and offsets in one transaction and PREPAREs it as
 * eoingest:<database>:<job>:<E>:<worker> (or reports that it had nothing to
 * write).  The coordinator, which is the launcher (the article's
 * JobManager), waits until every worker has done so, records E as decided
 * in eoingest.checkpoints in its own committed transaction, and only then
 * runs COMMIT PREPARED for each of them.
 *
 * Recovery follows from the decision row: a prepared transaction of the
 * job whose epoch is at most the decided epoch is committed, one of the
 * epoch in flight is left to its workers, any other is rolled back.  This
 * reconciliation runs in every round of the coordinator, for every job, so
 * that whatever the interleaving (a worker that prepares an epoch just
 * rolled back, a coordinator restart, a COMMIT PREPARED that failed) no
 * prepared transaction is left to hold locks and pin the xmin horizon.
 * An epoch is rolled back by handing out the next one: workers take an
 * epoch that current_epoch passed without committing it as rolled back.
 * Only GIDs of this database's eoingest jobs are ever touched.
 *
 * This file is the coordinator, and the primitives a worker's epoch needs
 * (the transaction block, PREPARE, the wait for a previous epoch's
 * resolution).  The worker's epoch loop itself, run_epoch, is in worker.c:
 * it is the batch loop of the other modes with a transaction block around
 * it, and shares that loop's bookkeeping (positions, counters, the failure
 * policy), which would otherwise have to be exported to this file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "base/shmem.h"
#include "base/txn.h"
#include "worker/twophase.h"

/* The coordinator's view of one running two_phase job. */
typedef struct CoordState
{
	int32		job_id;
	bool		initialized;
	bool		abort_pending;	/* a worker died during the epoch */
	int			parallelism;
	uint64		epoch;			/* the epoch being written */
	uint64		decided;		/* the last epoch recorded as decided */
} CoordState;

/* A prepared transaction of an eoingest job in this database. */
typedef struct PreparedGid
{
	char		gid[EOI_GID_LEN];
	int32		job_id;
	uint64		epoch;
	int			worker;
} PreparedGid;

static List *coord_states = NIL;	/* in TopMemoryContext */

void
eoi_gid_format(char *buf, Oid database, int32 job_id, uint64 epoch, int worker)
{
	snprintf(buf, EOI_GID_LEN, "eoingest:%u:%d:" UINT64_FORMAT ":%d",
			 database, job_id, epoch, worker);
}

static bool
gid_parse(const char *gid, PreparedGid *out)
{
	unsigned int database;
	unsigned long long epoch;
	int			job_id;
	int			worker;
	int			consumed = 0;

	if (sscanf(gid, "eoingest:%u:%d:%llu:%d%n", &database, &job_id, &epoch, &worker, &consumed) != 4 ||
		gid[consumed] != '\0' || database != MyDatabaseId)
		return false;
	strlcpy(out->gid, gid, EOI_GID_LEN);
	out->job_id = job_id;
	out->epoch = epoch;
	out->worker = worker;
	return true;
}

/* ---- short transactions of the coordinator ---- */

static void
begin_tx(const char *activity)
{
	eoi_begin_work(activity);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static void
commit_tx(void)
{
	SPI_finish();
	eoi_commit_work();
}

/* The prepared transactions of eoingest jobs in this database. */
static List *
list_prepared(void)
{
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;
	char		prefix[64];
	Oid			types[1] = {TEXTOID};
	Datum		args[1];

	snprintf(prefix, sizeof(prefix), "eoingest:%u:%%", MyDatabaseId);
	args[0] = CStringGetTextDatum(prefix);
	begin_tx("listing eoingest prepared transactions");
	if (SPI_execute_with_args("SELECT gid FROM pg_catalog.pg_prepared_xacts WHERE gid LIKE $1",
							  1, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_prepared_xacts");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *gid = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		PreparedGid parsed;

		if (gid_parse(gid, &parsed))
		{
			MemoryContext old = MemoryContextSwitchTo(caller);
			PreparedGid *p = palloc(sizeof(PreparedGid));

			*p = parsed;
			result = lappend(result, p);
			MemoryContextSwitchTo(old);
		}
	}
	commit_tx();
	return result;
}

static void
free_gids(List *gids)
{
	list_free_deep(gids);
}

/* The last decided epoch of a job, 0 if none; -1 if the job is gone. */
static int64
read_decided(int32 job_id)
{
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(job_id)};
	int64		decided = -1;

	begin_tx("reading eoingest checkpoint");
	if (SPI_execute_with_args("SELECT coalesce(c.epoch, 0) FROM eoingest.jobs j"
							  "  LEFT JOIN eoingest.checkpoints c ON c.job_id = j.id"
							  " WHERE j.id = $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.checkpoints");
	if (SPI_processed == 1)
	{
		bool		isnull;

		decided = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1, &isnull));
	}
	commit_tx();
	return decided;
}

/* The decision: epoch E of the job is complete.  Committed on its own. */
static void
record_decision(int32 job_id, uint64 epoch)
{
	Oid			types[2] = {INT4OID, INT8OID};
	Datum		args[2] = {Int32GetDatum(job_id), Int64GetDatum((int64) epoch)};

	begin_tx("recording eoingest checkpoint decision");
	if (SPI_execute_with_args("INSERT INTO eoingest.checkpoints AS c (job_id, epoch)"
							  " VALUES ($1, $2)"
							  " ON CONFLICT (job_id) DO UPDATE"
							  "   SET epoch = excluded.epoch, decided_at = pg_catalog.now()",
							  2, types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record the checkpoint decision");
	commit_tx();
}

/*
 * COMMIT PREPARED or ROLLBACK PREPARED, each in a transaction of its own
 * (neither may run in a transaction block).  A GID that vanished meanwhile
 * (resolved by hand) is only logged.
 */
static void
finish_prepared(const char *gid, bool commit)
{
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		pgstat_report_activity(STATE_RUNNING, commit ? "COMMIT PREPARED" : "ROLLBACK PREPARED");
		if (commit)
			EOI_FAULT_POINT("commit_prepared");
		FinishPreparedTransaction(gid, commit);
		CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		if (commit)
			ereport(WARNING,
					(errmsg("could not commit prepared transaction \"%s\": %s", gid, edata->message)));
		else
			ereport(WARNING,
					(errmsg("could not roll back prepared transaction \"%s\": %s", gid, edata->message)));
		FreeErrorData(edata);
	}
	PG_END_TRY();
}

/*
 * Resolve the job's prepared transactions: commit those of decided epochs,
 * roll back the others, except those of `keep_epoch` (the epoch in flight).
 * Returns the highest epoch seen.
 */
static uint64
resolve_job(int32 job_id, uint64 decided, uint64 keep_epoch, List *gids)
{
	ListCell   *lc;
	uint64		max_epoch = 0;

	foreach(lc, gids)
	{
		PreparedGid *p = lfirst(lc);

		if (p->job_id != job_id)
			continue;
		max_epoch = Max(max_epoch, p->epoch);
		if (p->epoch == keep_epoch)
			continue;
		if (p->epoch <= decided)
			ereport(LOG,
					(errmsg("committing in-doubt prepared transaction \"%s\" of decided epoch " UINT64_FORMAT,
							p->gid, p->epoch)));
		else
			ereport(LOG,
					(errmsg("rolling back in-doubt prepared transaction \"%s\" (epoch " UINT64_FORMAT " was never decided)",
							p->gid, p->epoch)));
		finish_prepared(p->gid, p->epoch <= decided);
	}
	return max_epoch;
}

static CoordState *
coord_state(int32 job_id, bool create)
{
	ListCell   *lc;
	CoordState *st;
	MemoryContext old;

	foreach(lc, coord_states)
	{
		st = lfirst(lc);
		if (st->job_id == job_id)
			return st;
	}
	if (!create)
		return NULL;
	old = MemoryContextSwitchTo(TopMemoryContext);
	st = palloc0(sizeof(CoordState));
	st->job_id = job_id;
	coord_states = lappend(coord_states, st);
	MemoryContextSwitchTo(old);
	return st;
}

/* Called by the launcher when it reaps a worker of a job. */
void
eoi_tp_worker_died(int32 job_id)
{
	CoordState *st = coord_state(job_id, false);

	if (st != NULL && st->initialized)
		st->abort_pending = true;
}

/* The live (attached) slots of a job, by worker index. */
static int
job_slots(int32 job_id, int parallelism, EoiWorkerSlot **by_index)
{
	int			attached = 0;

	for (int i = 0; i < parallelism; i++)
		by_index[i] = NULL;
	for (int i = 0; i < eoi_shared->nslots; i++)
	{
		EoiWorkerSlot *slot = &eoi_shared->slots[i];

		if (eoi_slot_is_job(slot, job_id) && slot->pid != 0 &&
			slot->worker_index < parallelism)
		{
			by_index[slot->worker_index] = slot;
			attached++;
		}
	}
	return attached;
}

static void
wake_slots(EoiWorkerSlot **by_index, int n)
{
	for (int i = 0; i < n; i++)
		if (by_index[i] != NULL && by_index[i]->latch != NULL)
			SetLatch(by_index[i]->latch);
}

/*
 * Take a job over: pick an epoch number above any that may be in flight,
 * so that no waiting worker mistakes it, and tell the workers what the
 * decision row says.  What a previous coordinator left prepared is resolved
 * by the reconciliation that follows in the same round.
 */
static void
coord_init(CoordState *st, EoiWorkerSlot **slots, int parallelism)
{
	List	   *gids = list_prepared();
	int64		decided = read_decided(st->job_id);
	uint64		max_epoch = 0;
	ListCell   *lc;

	foreach(lc, gids)
	{
		PreparedGid *p = lfirst(lc);

		if (p->job_id == st->job_id)
			max_epoch = Max(max_epoch, p->epoch);
	}
	free_gids(gids);
	if (decided < 0)
		return;					/* dropped meanwhile */

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < parallelism; i++)
		if (slots[i] != NULL)
			max_epoch = Max(max_epoch, Max(slots[i]->current_epoch, slots[i]->prepared_epoch));
	st->decided = (uint64) decided;
	st->epoch = Max((uint64) decided, max_epoch) + 1;

	/*
	 * A worker waiting for an epoch the decision row covers learns that it
	 * is committed; one waiting for any other learns from the new
	 * current_epoch that it was rolled back.
	 */
	for (int i = 0; i < parallelism; i++)
		if (slots[i] != NULL)
		{
			slots[i]->committed_epoch = Max(slots[i]->committed_epoch, st->decided);
			slots[i]->current_epoch = st->epoch;
		}
	LWLockRelease(eoi_shared->lock);
	st->initialized = true;
	st->abort_pending = false;
	wake_slots(slots, parallelism);
}

/*
 * Roll the current epoch back everywhere: hand out the next one.  Workers
 * still writing the old one see that it is no longer current and stop;
 * what they prepared, before or after this, the reconciliation rolls back.
 */
static void
coord_abort_epoch(CoordState *st, EoiWorkerSlot **slots, int parallelism, const char *reason)
{
	uint64		aborted = st->epoch;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	st->epoch++;
	for (int i = 0; i < parallelism; i++)
		if (slots[i] != NULL)
			slots[i]->current_epoch = st->epoch;
	LWLockRelease(eoi_shared->lock);
	st->abort_pending = false;
	ereport(LOG,
			(errmsg("epoch " UINT64_FORMAT " of job %d rolled back: %s",
					aborted, st->job_id, reason)));
	wake_slots(slots, parallelism);
}

/* Every worker prepared (or had nothing for) the epoch: decide, commit. */
static void
coord_commit_epoch(CoordState *st, EoiWorkerSlot **slots, int parallelism)
{
	char		gids[EOI_MAX_PARALLELISM_GIDS][EOI_GID_LEN];
	int			ngids = 0;
	uint64		epoch = st->epoch;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	for (int i = 0; i < parallelism; i++)
		if (!slots[i]->prepared_empty)
			eoi_gid_format(gids[ngids++], MyDatabaseId, st->job_id, epoch, i);
	LWLockRelease(eoi_shared->lock);

	if (ngids > 0)
	{
		record_decision(st->job_id, epoch);
		st->decided = epoch;
		EOI_FAULT_POINT("after_decision");

		/* One that fails here is committed by the reconciliation. */
		for (int i = 0; i < ngids; i++)
			finish_prepared(gids[i], true);
		EOI_FAULT_POINT("after_commit_prepared");
	}

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	st->epoch++;
	for (int i = 0; i < parallelism; i++)
	{
		slots[i]->committed_epoch = epoch;
		slots[i]->current_epoch = st->epoch;
	}
	LWLockRelease(eoi_shared->lock);
	wake_slots(slots, parallelism);
}

/*
 * Did a worker give up on the current epoch (it could not write or prepare
 * it)?  Then its siblings must not hold their prepared transactions while
 * it backs off: the epoch is rolled back.  The worker's error is the reason.
 */
static bool
epoch_failed(CoordState *st, EoiWorkerSlot **slots, int parallelism, char *reason, size_t len)
{
	bool		failed = false;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	for (int i = 0; i < parallelism && !failed; i++)
		if (slots[i] != NULL && slots[i]->failed_epoch == st->epoch)
		{
			snprintf(reason, len, "worker %d could not finish it: %s", i, slots[i]->last_error);
			failed = true;
		}
	LWLockRelease(eoi_shared->lock);
	return failed;
}

/*
 * Advance one running job: take it over, roll its epoch back, hand the
 * epoch to workers that just attached, or commit it once every worker
 * prepared.  A read-only database records no decision: a complete epoch is
 * rolled back instead, so that nothing stays prepared while the workers
 * wait for writes to be allowed again.
 */
static void
coord_step(CoordState *st, EoiTpJob *job, bool read_only)
{
	EoiWorkerSlot *slots[EOI_MAX_PARALLELISM_GIDS];
	int			attached = job_slots(job->job_id, job->parallelism, slots);
	bool		all_prepared = true;
	char		reason[EOI_ERROR_LEN + 64];

	st->parallelism = job->parallelism;
	if (!st->initialized)
	{
		coord_init(st, slots, job->parallelism);
		return;
	}
	if (st->abort_pending)
	{
		coord_abort_epoch(st, slots, job->parallelism, "a worker of the job ended during it");
		return;
	}
	if (epoch_failed(st, slots, job->parallelism, reason, sizeof(reason)))
	{
		coord_abort_epoch(st, slots, job->parallelism, reason);
		return;
	}

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < job->parallelism; i++)
	{
		if (slots[i] == NULL)
		{
			all_prepared = false;
			continue;
		}
		if (slots[i]->current_epoch != st->epoch)
			slots[i]->current_epoch = st->epoch;	/* a new worker */
		if (slots[i]->prepared_epoch != st->epoch)
			all_prepared = false;
	}
	LWLockRelease(eoi_shared->lock);

	if (all_prepared && attached == job->parallelism)
	{
		if (read_only)
			coord_abort_epoch(st, slots, job->parallelism,
							  "the database is read-only (default_transaction_read_only is on)");
		else
			coord_commit_epoch(st, slots, job->parallelism);
	}
	else
		wake_slots(slots, job->parallelism);
}

static EoiTpJob *
find_running(EoiTpJob *jobs, int njobs, int32 job_id)
{
	for (int j = 0; j < njobs; j++)
		if (jobs[j].job_id == job_id && jobs[j].running)
			return &jobs[j];
	return NULL;
}

/*
 * One round of coordination.  First every running two_phase job advances
 * (coord_step).  Then the reconciliation: each prepared transaction of an
 * eoingest job in this database is held against its job's decision.  For
 * a running job, one of an epoch up to the decided one is committed, one
 * of the epoch in flight is left to its workers, any other is rolled back;
 * for a job that no longer runs and has no worker left, the decision row
 * says.  Whatever interleaving of workers, coordinator restarts and failed
 * COMMIT PREPAREDs left a transaction prepared, the next round resolves it.
 */
void
eoi_tp_coordinate(EoiTpJob *jobs, int njobs, bool read_only)
{
	List	   *gids;
	ListCell   *lc;

	for (int j = 0; j < njobs; j++)
		if (jobs[j].running)
			coord_step(coord_state(jobs[j].job_id, true), &jobs[j], read_only);

	/* Listed after the steps, so that what they just resolved is not seen. */
	gids = list_prepared();
	foreach(lc, gids)
	{
		PreparedGid *p = lfirst(lc);
		CoordState *st = coord_state(p->job_id, false);
		int64		decided;

		if (find_running(jobs, njobs, p->job_id) != NULL)
		{
			if (st != NULL && st->initialized)
				(void) resolve_job(p->job_id, st->decided, st->epoch, list_make1(p));
			continue;
		}
		if (eoi_job_has_slot(p->job_id, false))
			continue;			/* its workers are still ending */
		decided = read_decided(p->job_id);
		if (decided < 0)
			decided = 0;		/* the job is gone: nothing of it commits */
		(void) resolve_job(p->job_id, (uint64) decided, 0, list_make1(p));
		if (st != NULL)
			st->initialized = false;	/* take it over afresh if it runs again */
	}
	free_gids(gids);

	/* Forget jobs that stopped, so a restart begins with a takeover. */
	foreach(lc, coord_states)
	{
		CoordState *st = lfirst(lc);

		if (find_running(jobs, njobs, st->job_id) == NULL && !eoi_job_has_slot(st->job_id, false))
		{
			coord_states = foreach_delete_current(coord_states, lc);
			pfree(st);
		}
	}
}

/*
 * The coordinator waited too long for a lock on eoingest's tables (DROP
 * EXTENSION, ALTER TABLE or LOCK TABLE holds or wants them): roll back the
 * epochs in flight.  Their prepared transactions may hold the very locks
 * that command waits for, and no decision can be recorded meanwhile, so
 * keeping them would only make the command and the jobs wait on each other.
 * Needs nothing but shared memory and pg_prepared_xacts.
 */
void
eoi_tp_release_epochs(void)
{
	List	   *gids = list_prepared();
	ListCell   *lc;

	foreach(lc, coord_states)
	{
		CoordState *st = lfirst(lc);
		EoiWorkerSlot *slots[EOI_MAX_PARALLELISM_GIDS];

		if (!st->initialized)
			continue;
		(void) job_slots(st->job_id, st->parallelism, slots);
		coord_abort_epoch(st, slots, st->parallelism,
						  "the coordinator could not lock eoingest's tables");
		(void) resolve_job(st->job_id, st->decided, st->epoch, gids);
	}
	free_gids(gids);
}

/* ---- worker side ---- */

/*
 * Recovery before consuming: wait until no prepared transaction of this
 * worker is left (the coordinator resolves them), so that no row lock of a
 * previous epoch is held on our offsets.
 */
void
eoi_tp_wait_for_resolution(int32 job_id, int worker_index)
{
	char		pattern[64];
	Oid			types[1] = {TEXTOID};
	Datum		args[1];

	snprintf(pattern, sizeof(pattern), "^eoingest:%u:%d:[0-9]+:%d$",
			 MyDatabaseId, job_id, worker_index);
	args[0] = CStringGetTextDatum(pattern);
	for (;;)
	{
		bool		pending;

		begin_tx("waiting for in-doubt transactions to be resolved");
		if (SPI_execute_with_args("SELECT 1 FROM pg_catalog.pg_prepared_xacts WHERE gid ~ $1",
								  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read pg_prepared_xacts");
		pending = (SPI_processed > 0);
		commit_tx();
		if (!pending)
			return;
		eoi_wake_launcher();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 200L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Turn the current transaction into a block that can be prepared. */
void
eoi_tp_begin_epoch(void)
{
	StartTransactionCommand();
	BeginTransactionBlock();
	CommitTransactionCommand();
}

/*
 * PREPARE TRANSACTION gid for the open epoch block.  Returns false if the
 * block had failed and was rolled back instead.
 */
bool
eoi_tp_prepare_epoch(const char *gid)
{
	bool		prepared;

	StartTransactionCommand();
	prepared = PrepareTransactionBlock(gid);
	CommitTransactionCommand();
	return prepared;
}
