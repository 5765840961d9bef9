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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "pgstat.h"
#include "utils/snapmgr.h"

#include "txn.h"

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
