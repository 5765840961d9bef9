/*-------------------------------------------------------------------------
 *
 * txn.c
 *	  The transaction bracket of eoingest's background processes.
 *
 * The worker, the launcher and the two_phase coordinator do their work in
 * short transactions of their own, as worker_spi does: a statement start
 * time, a transaction, an active snapshot and the activity shown in
 * pg_stat_activity; then the commit, the statistics and "idle".  Between
 * two of them a process holds no transaction and no snapshot.
 *
 * Inside one, eoi_try_subxact runs a step that may fail without failing
 * the transaction: a record's error set aside, a key that does not decode.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "pgstat.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "base/txn.h"

void
eoi_begin_work(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

void
eoi_commit_work(void)
{
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Run fn(arg) in a subtransaction, as PL/pgSQL's exception blocks do.
 * Returns NULL when it committed; else its error, caught and copied into
 * the caller's memory context, with the subtransaction rolled back (which
 * cleans up whatever fn left behind).  Either way the caller is back in its
 * memory context and resource owner.  The caller throws on with
 * ReThrowError what it does not handle: at least query cancel and
 * shutdown, if fn can wait.
 */
ErrorData *
eoi_try_subxact(EoiSubxactFn fn, void *arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	return edata;
}
