/*-------------------------------------------------------------------------
 *
 * cluster.c
 *	  The cluster launcher: the one static background worker, connected to
 *	  no database, that keeps a database launcher (launcher.c) running in
 *	  every database that has the extension.
 *
 * Every tick (a second, sooner when a session sets its latch) it reads
 * pg_database.  A database it has not seen is probed: a database launcher
 * is started there, and exits at once if the extension is not installed.
 * Such a database gets one again only when a session asks for it
 * (eoi_wake_launcher(): CREATE or ALTER EXTENSION eoingest, a job
 * function), so a cluster with many databases does not keep a process in
 * each.  A database launcher that failed is started again after
 * RESTART_DELAY_MS; one whose database no longer allows connections, is a
 * template, is filtered out by eoingest.database or was dropped is asked
 * to leave.  The jobs' worker slots (eoingest.max_workers) and the
 * background worker slots are shared by all databases.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/eoingest.h"
#include "base/pgcompat.h"
#include "base/settings.h"
#include "base/shmem.h"
#include "worker/cluster.h"

#define CLUSTER_NAPTIME_MS 1000
#define RESTART_DELAY_MS 5000
#define MAX_PROBES 4			/* launchers looking for the extension at once */

/* What the cluster launcher knows of one database. */
typedef struct DbState
{
	Oid			database;		/* hash key */
	BackgroundWorkerHandle *handle; /* of the launcher we started, or NULL */
	TimestampTz start_at;		/* start a launcher then; 0: not wanted */
	bool		seen;			/* in pg_database, eligible, this tick */
	bool		probe;			/* started to see whether the extension is there */
	bool		warned;			/* that no background worker slot was free */
} DbState;

static HTAB *databases;
static MemoryContext cluster_context;

static void
cluster_detach(int code, Datum arg)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	if (eoi_shared->cluster_launcher_pid == MyProcPid)
	{
		eoi_shared->cluster_launcher_pid = 0;
		eoi_shared->cluster_launcher_latch = NULL;
	}
	LWLockRelease(eoi_shared->lock);
}

/*
 * Take the cluster launcher's place.  Entries of database launchers a
 * predecessor started stay while their process lives (they are adopted,
 * without a handle); the others are freed.
 */
static void
cluster_attach(void)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	if (eoi_shared->cluster_launcher_pid != 0 && eoi_shared->cluster_launcher_pid != MyProcPid &&
		kill(eoi_shared->cluster_launcher_pid, 0) == 0)
	{
		pid_t		other = eoi_shared->cluster_launcher_pid;

		LWLockRelease(eoi_shared->lock);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("an eoingest cluster launcher is already running with PID %d", (int) other)));
	}
	eoi_shared->cluster_launcher_pid = MyProcPid;
	eoi_shared->cluster_launcher_latch = MyLatch;
	for (int i = 0; i < eoi_shared->ndatabases; i++)
	{
		EoiDbLauncher *e = &eoi_shared->databases[i];

		if (e->database != InvalidOid && (e->pid == 0 || kill(e->pid, 0) != 0))
			memset(e, 0, sizeof(EoiDbLauncher));
	}
	LWLockRelease(eoi_shared->lock);
	before_shmem_exit(cluster_detach, (Datum) 0);
}

/*
 * Mark the databases a launcher may serve (connections allowed, not a
 * template, not half-dropped, allowed by eoingest.database) as seen, and
 * add those not known yet, to be probed now.
 */
static void
scan_databases(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	HASH_SEQ_STATUS status;
	DbState    *db;
	TimestampTz now = GetCurrentTimestamp();

	hash_seq_init(&status, databases);
	while ((db = hash_seq_search(&status)) != NULL)
		db->seen = false;

	StartTransactionCommand();
	(void) GetTransactionSnapshot();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tup);
		bool		found;

		if (!form->datallowconn || form->datistemplate || eoi_database_is_invalid(form) ||
			!eoi_database_served(NameStr(form->datname)))
			continue;
		db = hash_search(databases, &form->oid, HASH_ENTER, &found);
		if (!found)
		{
			db->handle = NULL;
			db->start_at = now;
			db->warned = false;
			db->probe = true;
		}
		db->seen = true;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
}

/*
 * The databases where a session asked for a launcher: start one now.  When
 * more asked at once than the list holds, every database is probed again.
 */
static void
take_start_requests(void)
{
	Oid			requests[EOI_MAX_START_REQUESTS];
	int			n;
	bool		lost;
	HASH_SEQ_STATUS status;
	DbState    *db;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	n = eoi_shared->nstart_requests;
	memcpy(requests, eoi_shared->start_requests, sizeof(Oid) * n);
	eoi_shared->nstart_requests = 0;
	lost = eoi_shared->start_requests_lost;
	eoi_shared->start_requests_lost = false;
	LWLockRelease(eoi_shared->lock);

	for (int i = 0; i < n; i++)
	{
		db = hash_search(databases, &requests[i], HASH_FIND, NULL);
		if (db != NULL && db->seen && db->start_at == 0)
		{
			db->start_at = GetCurrentTimestamp();
			db->probe = false;
		}
	}
	if (!lost)
		return;
	hash_seq_init(&status, databases);
	while ((db = hash_seq_search(&status)) != NULL)
		if (db->seen && db->start_at == 0)
		{
			db->start_at = GetCurrentTimestamp();
			db->probe = true;
		}
}

/*
 * Probes still looking for the extension: at most MAX_PROBES at once, so
 * that a cluster of many databases does not take every background worker
 * slot at the server's start.
 */
static int
probes_running(void)
{
	HASH_SEQ_STATUS status;
	DbState    *db;
	int			n = 0;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	hash_seq_init(&status, databases);
	while ((db = hash_seq_search(&status)) != NULL)
	{
		EoiDbLauncher *entry = eoi_db_launcher(db->database);

		if (db->probe && db->handle != NULL && (entry == NULL || !entry->serving))
			n++;
	}
	LWLockRelease(eoi_shared->lock);
	return n;
}

/*
 * Whether the database's launcher process is there: the one attached to
 * its entry (ours, or one a predecessor started), or ours by its handle
 * before it attaches.  The lock is held.
 */
static bool
launcher_alive(DbState *db, EoiDbLauncher *entry)
{
	pid_t		pid;

	if (entry != NULL && entry->pid != 0 && kill(entry->pid, 0) == 0)
		return true;
	return db->handle != NULL && GetBackgroundWorkerPid(db->handle, &pid) != BGWH_STOPPED;
}

/*
 * A launcher that ended: free its entry, and decide from its exit reason
 * when to start one again.  The lock is held.
 */
static void
reap_launcher(DbState *db, EoiDbLauncher *entry)
{
	EoiDbExit	reason = entry != NULL ? entry->exit_reason : EOI_DB_EXIT_FAILED;

	if (entry != NULL)
		memset(entry, 0, sizeof(EoiDbLauncher));
	if (db->handle != NULL)
	{
		pfree(db->handle);
		db->handle = NULL;
	}
	/*
	 * One that failed, or left for a DROP DATABASE that may fail, is started
	 * again later (a database no longer served is forgotten meanwhile).  For
	 * want of the extension start_at stays 0, unless a session asked for a
	 * launcher while this one was exiting: then the database is probed
	 * again.
	 */
	if (reason != EOI_DB_EXIT_NO_EXTENSION)
		db->start_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RESTART_DELAY_MS);
}

/*
 * Start the database's launcher: make its entry, then register it.  With
 * no background worker slot free, try again later (said once).
 */
static void
start_launcher(DbState *db)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	EoiDbLauncher *entry;
	bool		ok;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	entry = eoi_db_launcher(db->database);	/* one left by a launcher that ended */
	if (entry == NULL)
		entry = eoi_db_launcher(InvalidOid);
	if (entry != NULL)
	{
		memset(entry, 0, sizeof(EoiDbLauncher));
		entry->database = db->database;
		entry->exit_reason = EOI_DB_EXIT_FAILED;
	}
	LWLockRelease(eoi_shared->lock);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "eoingest");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "eoingest_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "eoingest launcher %u", db->database);
	snprintf(worker.bgw_type, BGW_MAXLEN, "eoingest launcher");
	worker.bgw_main_arg = ObjectIdGetDatum(db->database);
	worker.bgw_notify_pid = MyProcPid;

	ok = entry != NULL && RegisterDynamicBackgroundWorker(&worker, &handle);
	if (!ok)
	{
		if (entry != NULL)
		{
			LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
			memset(entry, 0, sizeof(EoiDbLauncher));
			LWLockRelease(eoi_shared->lock);
		}
		if (!db->warned && !db->probe)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not start the eoingest launcher of database %u: no background worker slot is free",
							db->database),
					 errdetail("max_worker_processes is %d. Each database with the extension takes one slot for its launcher, and each running worker of its jobs one more.",
							   max_worker_processes),
					 errhint("Raise max_worker_processes and restart the server, or stop other background workers. eoingest tries again every %d s.",
							 RESTART_DELAY_MS / 1000)));
		db->warned = true;
		db->start_at = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RESTART_DELAY_MS);
		return;
	}
	db->warned = false;
	db->start_at = 0;
	db->handle = handle;
}

/*
 * Reconcile the databases with their launchers: reap those that ended,
 * ask those of databases no longer served to leave, start those due.
 */
static void
reconcile_databases(void)
{
	HASH_SEQ_STATUS status;
	DbState    *db;
	TimestampTz now = GetCurrentTimestamp();
	int			probes = probes_running();

	hash_seq_init(&status, databases);
	while ((db = hash_seq_search(&status)) != NULL)
	{
		EoiDbLauncher *entry;
		bool		alive;
		bool		forget = false;

		LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
		entry = eoi_db_launcher(db->database);
		alive = launcher_alive(db, entry);
		if (!alive && (db->handle != NULL || entry != NULL))
			reap_launcher(db, entry);
		else if (alive && !db->seen && entry != NULL && !entry->leave_asked)
		{
			entry->leave_asked = true;
			if (entry->latch != NULL)
				SetLatch(entry->latch);
		}
		forget = !alive && !db->seen;
		LWLockRelease(eoi_shared->lock);

		if (forget)
		{
			int			freed = eoi_forget_database(db->database);

			if (freed > 0)
				ereport(LOG,
						(errmsg_plural("freed %d eoingest worker slot of database %u, which is gone",
									   "freed %d eoingest worker slots of database %u, which is gone",
									   freed, freed, db->database)));
			hash_search(databases, &db->database, HASH_REMOVE, NULL);
			continue;
		}
		if (!alive && db->seen && db->start_at != 0 && db->start_at <= now &&
			(!db->probe || probes < MAX_PROBES))
		{
			probes += db->probe;
			start_launcher(db);
		}
	}
}

void
eoingest_cluster_launcher_main(Datum main_arg)
{
	HASHCTL		ctl;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	cluster_context = AllocSetContextCreate(TopMemoryContext,
											"eoingest cluster launcher",
											ALLOCSET_DEFAULT_SIZES);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(DbState);
	ctl.hcxt = cluster_context;
	databases = hash_create("eoingest databases", 64, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	cluster_attach();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("eoingest cluster launcher");

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		MemoryContextSwitchTo(cluster_context);
		scan_databases();
		take_start_requests();
		reconcile_databases();

		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 CLUSTER_NAPTIME_MS,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
