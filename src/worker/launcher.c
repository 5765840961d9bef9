/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  A database's launcher (the seed article's JobManager): one background
 *	  worker per database that has the extension, started by the cluster
 *	  launcher (cluster.c).
 *
 * Every tick (at most a second apart, sooner when a job function wakes it)
 * the launcher reads eoingest.jobs and reconciles it with the worker slots
 * in shared memory: workers of jobs that should run are started, workers
 * that died are reaped and restarted after a backoff, workers of jobs that
 * should not run are terminated.  A worker that finds no slot (eoingest's
 * own, eoingest.max_workers, or a background worker slot,
 * max_worker_processes), or whose owner's jobs already run as many workers
 * as eoingest.max_workers_per_role allows the owner, is listed in shared
 * memory as waiting, with the reason, for job_status, and tried again at
 * every tick until it starts.
 * Dynamic workers are registered with
 * BGW_NEVER_RESTART: after a crash-and-restart cycle of the server the
 * cluster launcher, a static worker, starts the database launchers again,
 * and they bring the workers back from the job table.
 *
 * A database launcher that finds no extension in its database exits, and is
 * started again when a session there asks (CREATE EXTENSION, a job
 * function).  One asked to leave (by DROP DATABASE, or by the cluster
 * launcher when its database no longer allows connections or is gone)
 * stops its workers and exits.
 *
 * An error in a tick does not end the launcher: exiting would forget the
 * coordinator's state (and roll back every two_phase epoch in flight) only
 * to hit the same error five seconds later.  It is logged once, the
 * launcher backs off and tries again.  A read-only database
 * (default_transaction_read_only) is said once too; the launcher then
 * writes nothing, and the workers wait for writes to be allowed again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/eoingest.h"
#include "base/jobstats.h"
#include "base/settings.h"
#include "base/shmem.h"
#include "base/txn.h"
#include "store/deadletter.h"
#include "worker/launcher.h"
#include "worker/twophase.h"

#define LAUNCHER_NAPTIME_MS 1000
#define RESTART_DELAY_MIN_MS 500
#define RESTART_DELAY_MAX_MS 30000
#define ERROR_BACKOFF_MAX_MS 30000

/* A job as the launcher needs it. */
typedef struct LauncherJob
{
	int32		id;
	Oid			owner;
	int			parallelism;
	bool		running;
	bool		two_phase;
	int32		config_version;
	int			role_limit;		/* the owner's eoingest.max_workers_per_role */
} LauncherJob;

/* Backoff of one (job, worker index) whose worker died. */
typedef struct RestartBackoff
{
	int32		job_id;
	int			worker_index;
	int			failures;
	TimestampTz not_before;
} RestartBackoff;

static MemoryContext launcher_context;
static MemoryContext tick_context;
static BackgroundWorkerHandle **handles;	/* by slot number */
static List *backoffs;			/* of RestartBackoff, in launcher_context */
static bool extension_present;	/* as of the last read_jobs(): and ready */
static bool extension_installed;	/* at any version */
static EoiDbLauncher *my_entry;	/* in eoi_shared->databases */
static char *database_name;		/* of MyDatabaseId, in launcher_context */
static bool read_only;			/* default_transaction_read_only, this tick */
static char *settings_at_start; /* ALTER DATABASE/ROLE SET values (settings.c) */
static int	failed_ticks;		/* consecutive ticks that ended in an error */
static char *last_tick_error;	/* its message, in launcher_context */

/* Leave the entry to the cluster launcher, with the exit reason set. */
static void
launcher_detach(int code, Datum arg)
{
	int			kept = 0;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	if (my_entry->pid == MyProcPid)
	{
		my_entry->pid = 0;
		my_entry->latch = NULL;
	}
	/* nobody keeps this database's waiting workers up to date */
	for (int i = 0; i < eoi_shared->nwaiting; i++)
		if (eoi_shared->waiting[i].database != MyDatabaseId)
			eoi_shared->waiting[kept++] = eoi_shared->waiting[i];
	eoi_shared->nwaiting = kept;
	LWLockRelease(eoi_shared->lock);
}

/*
 * Take this database's entry: the cluster launcher made it before it
 * started us (or, after it restarted, a predecessor did and we make it).
 * Another launcher of the same database running means we are not needed.
 */
static void
launcher_attach(Oid database)
{
	EoiDbLauncher *entry;
	pid_t		other = 0;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	entry = eoi_db_launcher(database);
	if (entry == NULL)
		entry = eoi_db_launcher(InvalidOid);
	if (entry != NULL && entry->pid != 0 && entry->pid != MyProcPid && kill(entry->pid, 0) == 0)
		other = entry->pid;
	else if (entry != NULL)
	{
		if (entry->database != database)
			memset(entry, 0, sizeof(EoiDbLauncher));
		entry->database = database;
		entry->pid = MyProcPid;
		entry->latch = MyLatch;
		entry->exit_reason = EOI_DB_EXIT_FAILED;
	}
	LWLockRelease(eoi_shared->lock);
	if (other != 0)
	{
		ereport(LOG,
				(errmsg("eoingest launcher of database %u exits: another one runs with PID %d",
						database, (int) other)));
		proc_exit(0);
	}
	if (entry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no entry is free for the eoingest launcher of database %u", database)));
	my_entry = entry;
	before_shmem_exit(launcher_detach, (Datum) 0);
}

/*
 * Say why we exit, for the cluster launcher, and go; but not for want of
 * the extension when a session asked us to look since this tick began (it
 * may have just created it): the next tick looks again.
 */
static void
launcher_exit(EoiDbExit reason)
{
	bool		stay;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	stay = (reason == EOI_DB_EXIT_NO_EXTENSION && my_entry->woken);
	if (!stay && my_entry->pid == MyProcPid)
	{
		my_entry->exit_reason = reason;
		my_entry->pid = 0;
		my_entry->latch = NULL;
	}
	LWLockRelease(eoi_shared->lock);
	if (!stay)
		proc_exit(0);
}

/* A tick begins: what a session asks from now on is seen by the next one. */
static void
forget_wakeups(void)
{
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	my_entry->woken = false;
	LWLockRelease(eoi_shared->lock);
}

/*
 * Is the extension installed, at the version this library speaks?  An
 * older one runs no job until ALTER EXTENSION eoingest UPDATE (said once).
 */
static bool
extension_ready(void)
{
	static bool warned = false;
	Oid			ext = get_extension_oid("eoingest", true);
	char	   *version;

	extension_installed = OidIsValid(ext);
	if (!extension_installed)
		return false;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'eoingest'",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the version of extension eoingest");
	version = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (strcmp(version, EOI_EXTENSION_VERSION) == 0)
	{
		SPI_finish();
		warned = false;
		return true;
	}
	if (!warned)
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("eoingest jobs do not run: extension eoingest is at version %s, the library at %s",
						version, EOI_EXTENSION_VERSION),
				 errhint("Run ALTER EXTENSION eoingest UPDATE in database \"%s\".",
						 database_name)));
	warned = true;
	SPI_finish();
	return false;
}

/*
 * A job whose owner was dropped or may no longer log in cannot run (its
 * worker connects as the owner): fail it with a clear error rather than
 * let the worker die at every start.
 */
static void
fail_jobs_without_owner(void)
{
	int			ret;

	ret = SPI_execute("UPDATE eoingest.jobs j"
					  "   SET state = 'failed',"
					  "       last_error = CASE WHEN bad.rolname IS NULL"
					  "         THEN pg_catalog.format('the job''s owner (role OID %s) was dropped;"
					  " a superuser can drop the job, or recreate it under another role', j.owner)"
					  "         ELSE pg_catalog.format('the job''s owner %I may not log in (NOLOGIN);"
					  " grant it LOGIN again, then start the job', bad.rolname) END"
					  "  FROM (SELECT j2.id, r.rolname FROM eoingest.jobs j2"
					  "          LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) j2.owner"
					  "         WHERE j2.state OPERATOR(pg_catalog.=) 'running'"
					  "           AND (r.oid IS NULL OR NOT r.rolcanlogin)) bad"
					  " WHERE j.id OPERATOR(pg_catalog.=) bad.id",
					  false, 0);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "could not check job owners: %s", SPI_result_code_string(ret));
	if (SPI_processed > 0)
		ereport(LOG,
				(errmsg_plural("%d running job failed because its owner was dropped or lost LOGIN",
							   "%d running jobs failed because their owner was dropped or lost LOGIN",
							   (unsigned long) SPI_processed, (int) SPI_processed)));
}

/* Each running job's owner's worker limit, looked up once per owner. */
static void
read_role_limits(LauncherJob *jobs, int njobs)
{
	for (int i = 0; i < njobs; i++)
	{
		int			same = -1;

		if (!jobs[i].running)
			continue;
		for (int k = 0; k < i && same < 0; k++)
			if (jobs[k].running && jobs[k].owner == jobs[i].owner)
				same = k;
		jobs[i].role_limit = same >= 0 ? jobs[same].role_limit :
			eoi_role_worker_limit(jobs[i].owner);
	}
}

/* The statistics of jobs no longer in eoingest.jobs go (jobstats.c). */
static void
forget_stats_of_dropped_jobs(const LauncherJob *jobs, int njobs)
{
	int32	   *ids = palloc(sizeof(int32) * Max(njobs, 1));

	for (int i = 0; i < njobs; i++)
		ids[i] = jobs[i].id;
	eoi_job_stats_keep_only(ids, njobs);
	pfree(ids);
}

/*
 * Read the jobs, as an array in tick_context.  No extension in the database
 * means no jobs.
 */
static LauncherJob *
read_jobs(int *njobs)
{
	LauncherJob *jobs = NULL;

	*njobs = 0;
	eoi_begin_work("reading eoingest.jobs");

	extension_present = extension_ready();
	if (extension_present)
	{
		int			ret;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		if (!read_only)
			fail_jobs_without_owner();
		ret = SPI_execute("SELECT id, owner, parallelism, state = 'running',"
						  "       mode = 'two_phase', config_version"
						  "  FROM eoingest.jobs ORDER BY id", true, 0);
		if (ret != SPI_OK_SELECT)
			elog(ERROR, "could not read eoingest.jobs: %s", SPI_result_code_string(ret));

		jobs = MemoryContextAllocZero(tick_context,
									  sizeof(LauncherJob) * Max(SPI_processed, 1));
		for (uint64 i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			TupleDesc	desc = SPI_tuptable->tupdesc;
			bool		isnull;

			jobs[i].id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
			jobs[i].owner = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));
			jobs[i].parallelism = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
			jobs[i].running = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
			jobs[i].two_phase = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
			jobs[i].config_version = DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull));
		}
		*njobs = (int) SPI_processed;
		SPI_finish();
		read_role_limits(jobs, *njobs);
	}
	eoi_commit_work();
	forget_stats_of_dropped_jobs(jobs, *njobs);
	return jobs;
}

static RestartBackoff *
find_backoff(int32 job_id, int worker_index, bool create)
{
	ListCell   *lc;
	RestartBackoff *b;

	foreach(lc, backoffs)
	{
		b = lfirst(lc);
		if (b->job_id == job_id && b->worker_index == worker_index)
			return b;
	}
	if (!create)
		return NULL;
	b = MemoryContextAllocZero(launcher_context, sizeof(RestartBackoff));
	b->job_id = job_id;
	b->worker_index = worker_index;
	{
		MemoryContext old = MemoryContextSwitchTo(launcher_context);

		backoffs = lappend(backoffs, b);
		MemoryContextSwitchTo(old);
	}
	return b;
}

/* A worker ended: free its slot; unless it had made progress, back off. */
static void
reap_slot(int slotno)
{
	EoiWorkerSlot *slot = &eoi_shared->slots[slotno];
	RestartBackoff *b;
	int			delay;

	eoi_tp_worker_died(slot->job_id);
	b = find_backoff(slot->job_id, slot->worker_index, true);
	if (slot->progressed)
		b->failures = 0;
	delay = RESTART_DELAY_MIN_MS;
	for (int i = 0; i < b->failures && delay < RESTART_DELAY_MAX_MS; i++)
		delay *= 2;
	delay = Min(delay, RESTART_DELAY_MAX_MS);
	b->failures++;
	b->not_before = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), delay);

	slot->in_use = false;
	slot->pid = 0;
	if (handles[slotno])
	{
		pfree(handles[slotno]);
		handles[slotno] = NULL;
	}
}

static LauncherJob *
find_job(LauncherJob *jobs, int njobs, int32 id)
{
	for (int i = 0; i < njobs; i++)
		if (jobs[i].id == id)
			return &jobs[i];
	return NULL;
}

/*
 * A slot this launcher did not register (a predecessor did, before it
 * restarted) has no handle, only the pid its worker writes when it
 * attaches.  Its pid is 0 both before the worker attaches and after it
 * detached: such a slot is taken for dead only once a worker registered
 * before this launcher started has had the time to attach (the logical
 * replication launcher gives a starting worker a grace period too).
 */
#define ATTACH_GRACE_MS		10000

static TimestampTz launcher_started_at;

/* Is the worker of this slot still there?  Decides only with the lock held. */
static bool
slot_alive(int slotno)
{
	pid_t		pid;

	if (handles[slotno] != NULL)
		return GetBackgroundWorkerPid(handles[slotno], &pid) != BGWH_STOPPED;
	pid = eoi_shared->slots[slotno].pid;
	if (pid == 0)
		return !TimestampDifferenceExceeds(launcher_started_at, GetCurrentTimestamp(),
										   ATTACH_GRACE_MS);
	return kill(pid, 0) == 0;
}

static void
terminate_slot(int slotno)
{
	if (handles[slotno] != NULL)
		TerminateBackgroundWorker(handles[slotno]);
	else if (eoi_shared->slots[slotno].pid != 0)
		kill(eoi_shared->slots[slotno].pid, SIGTERM);
}

/*
 * A worker whose job was stopped or altered, or that the job no longer
 * needs, is asked to stop: between two batches it stores what it consumed
 * and exits.  One that has not after STOP_GRACE_MS (a long batch, a wait)
 * is terminated; its open batch is rolled back.  A dropped job's workers
 * are terminated at once: there is nothing left to store.
 */
#define STOP_GRACE_MS		2000

static void
ask_to_stop(int slotno)
{
	EoiWorkerSlot *slot = &eoi_shared->slots[slotno];
	TimestampTz now = GetCurrentTimestamp();
	Latch	   *latch;

	if (slot->stop_asked_at != 0)
	{
		if (TimestampDifferenceExceeds(slot->stop_asked_at, now, STOP_GRACE_MS))
			terminate_slot(slotno);
		return;
	}
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	slot->stop_asked_at = now;
	latch = slot->latch;
	if (latch != NULL)
		SetLatch(latch);
	LWLockRelease(eoi_shared->lock);
}

/*
 * Reap dead workers, and stop those whose job should not run: at once
 * those of a dropped job, between batches those of a job stopped or
 * altered, and all when `leaving`.
 */
static void
reap_and_terminate(LauncherJob *jobs, int njobs, bool leaving)
{
	for (int i = 0; i < eoi_shared->nslots; i++)
	{
		EoiWorkerSlot *slot = &eoi_shared->slots[i];
		LauncherJob *job;

		if (!slot->in_use || slot->database != MyDatabaseId)
			continue;

		/*
		 * The look without the lock is only a hint: a worker may attach
		 * before the reap, and would then keep running beside the successor
		 * launched for its partitions.  Decide again under the lock.
		 */
		if (!slot_alive(i))
		{
			bool		dead;

			EOI_FAULT_POINT("slot_race");	/* for tests: widen the window */
			LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
			dead = !slot_alive(i);
			if (dead)
				reap_slot(i);
			LWLockRelease(eoi_shared->lock);
			if (dead)
				continue;
		}

		job = find_job(jobs, njobs, slot->job_id);
		if (job == NULL && !leaving)
			terminate_slot(i);
		else if (job == NULL || !job->running || slot->worker_index >= job->parallelism ||
				 job->config_version != slot->config_version)
			ask_to_stop(i);
	}
}

static bool
worker_exists(int32 job_id, int worker_index)
{
	for (int i = 0; i < eoi_shared->nslots; i++)
	{
		EoiWorkerSlot *slot = &eoi_shared->slots[i];

		if (eoi_slot_is_job(slot, job_id) && slot->worker_index == worker_index)
			return true;
	}
	return false;
}

/* Slots taken by the workers of jobs `owner` owns, in every database. */
static int
slots_of_owner(Oid owner)
{
	int			n = 0;

	for (int i = 0; i < eoi_shared->nslots; i++)
		if (eoi_shared->slots[i].in_use && eoi_shared->slots[i].owner == owner)
			n++;
	return n;
}

/* Slots taken by the workers of this database's jobs; the lock is held. */
static int
slots_of_database(void)
{
	int			n = 0;

	for (int i = 0; i < eoi_shared->nslots; i++)
		if (eoi_shared->slots[i].in_use && eoi_shared->slots[i].database == MyDatabaseId)
			n++;
	return n;
}

/*
 * Claim a free slot for the job's worker: its number, or CLAIM_NO_SLOT when
 * none is free, or CLAIM_ROLE_LIMIT when the owner's jobs already hold as
 * many slots as the owner may.
 */
#define CLAIM_NO_SLOT (-1)
#define CLAIM_ROLE_LIMIT (-2)

static int
claim_slot(LauncherJob *job, int worker_index, uint64 *generation)
{
	int			found = CLAIM_NO_SLOT;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	if (job->role_limit >= 0 && slots_of_owner(job->owner) >= job->role_limit)
		found = CLAIM_ROLE_LIMIT;
	for (int i = 0; i < eoi_shared->nslots && found == CLAIM_NO_SLOT; i++)
	{
		EoiWorkerSlot *slot = &eoi_shared->slots[i];

		if (slot->in_use)
			continue;
		memset(slot, 0, sizeof(EoiWorkerSlot));
		slot->in_use = true;
		slot->generation = eoi_shared->next_generation++;
		slot->database = MyDatabaseId;
		slot->job_id = job->id;
		slot->owner = job->owner;
		slot->config_version = job->config_version;
		slot->worker_index = worker_index;
		*generation = slot->generation;
		found = i;
	}
	LWLockRelease(eoi_shared->lock);
	return found;
}

/* What became of a worker launch_worker() was asked to start. */
typedef enum LaunchResult
{
	LAUNCH_STARTED,
	LAUNCH_NO_WORKER_SLOT,		/* eoingest.max_workers used up */
	LAUNCH_NO_BGWORKER_SLOT,	/* max_worker_processes used up */
	LAUNCH_ROLE_LIMIT			/* the owner's eoingest.max_workers_per_role */
} LaunchResult;

/*
 * Register a worker.  Without a free slot it is not started, and the
 * caller lists it as waiting: it is tried again at every tick, so that it
 * starts as soon as a slot is free.
 */
static LaunchResult
launch_worker(LauncherJob *job, int worker_index)
{
	BackgroundWorker worker;
	EoiWorkerArgs args;
	BackgroundWorkerHandle *handle;
	int			slotno;

	slotno = claim_slot(job, worker_index, &args.generation);
	if (slotno == CLAIM_ROLE_LIMIT)
		return LAUNCH_ROLE_LIMIT;
	if (slotno < 0)
		return LAUNCH_NO_WORKER_SLOT;

	args.database = MyDatabaseId;
	args.owner = job->owner;
	args.job_id = job->id;
	args.worker_index = worker_index;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "eoingest");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "eoingest_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "eoingest worker %d/%d", job->id, worker_index);
	snprintf(worker.bgw_type, BGW_MAXLEN, "eoingest worker");
	worker.bgw_main_arg = Int32GetDatum(slotno);
	worker.bgw_notify_pid = MyProcPid;
	StaticAssertStmt(sizeof(EoiWorkerArgs) <= BGW_EXTRALEN, "worker args too large");
	memcpy(worker.bgw_extra, &args, sizeof(args));

	{
		MemoryContext old = MemoryContextSwitchTo(launcher_context);
		bool		ok = RegisterDynamicBackgroundWorker(&worker, &handle);

		MemoryContextSwitchTo(old);
		if (!ok)
		{
			LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
			eoi_shared->slots[slotno].in_use = false;
			LWLockRelease(eoi_shared->lock);
			return LAUNCH_NO_BGWORKER_SLOT;
		}
	}
	handles[slotno] = handle;
	return LAUNCH_STARTED;
}

/*
 * Publish the workers of this database's jobs that wait for a slot, for
 * job_status, with one message per reason that names the setting and the
 * figures; log when more workers wait than at the previous tick, and when
 * none waits any more.  An entry keeps the time it began to wait across
 * ticks.
 */
static void
publish_waiting(EoiWaitingWorker *waiting, int nwaiting, int total_waiting, int wanted)
{
	static int	logged_waiting = 0;
	char		reason[EOI_WAIT_REASONS][EOI_ERROR_LEN];
	static const char *const hint[EOI_WAIT_REASONS] = {
		"raise eoingest.max_workers (and max_worker_processes with it) and restart the server, or stop another job",
		"raise max_worker_processes and restart the server, or stop another job",
		"stop another of the owner's jobs, or have a superuser raise the owner's limit (ALTER ROLE ... SET eoingest.max_workers_per_role)"
	};
	int			placed = 0;
	int			launchers;
	int			last_reason = -1;
	int			kept = 0;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < eoi_shared->nslots; i++)
		if (eoi_shared->slots[i].in_use)
			placed++;
	launchers = 1 + eoi_db_launchers_running();
	snprintf(reason[EOI_WAIT_WORKER_SLOT], EOI_ERROR_LEN,
			 "no eoingest worker slot is free: running jobs want %d workers and eoingest.max_workers is %d",
			 wanted + (placed - slots_of_database()), eoingest_max_workers);
	snprintf(reason[EOI_WAIT_BGWORKER_SLOT], EOI_ERROR_LEN,
			 "no background worker slot is free: max_worker_processes is %d and all are in use, %d of them by eoingest (%d launchers and %d workers); running jobs want %d more workers",
			 max_worker_processes, placed + launchers, launchers, placed, total_waiting);
	snprintf(reason[EOI_WAIT_ROLE_LIMIT], EOI_ERROR_LEN,
			 "the job's owner runs as many eoingest workers as eoingest.max_workers_per_role allows it");
	for (int r = 0; r < EOI_WAIT_REASONS; r++)
		snprintf(my_entry->wait_message[r], EOI_ERROR_LEN, "%s; %s", reason[r], hint[r]);
	for (int i = 0; i < nwaiting; i++)
	{
		for (int k = 0; k < eoi_shared->nwaiting; k++)
		{
			EoiWaitingWorker *was = &eoi_shared->waiting[k];

			if (was->database == MyDatabaseId && was->job_id == waiting[i].job_id &&
				was->worker_index == waiting[i].worker_index && was->reason == waiting[i].reason)
			{
				waiting[i].since = was->since;
				break;
			}
		}
		last_reason = waiting[i].reason;
	}
	/* the other databases' entries stay; ours are replaced */
	for (int k = 0; k < eoi_shared->nwaiting; k++)
		if (eoi_shared->waiting[k].database != MyDatabaseId)
			eoi_shared->waiting[kept++] = eoi_shared->waiting[k];
	nwaiting = Min(nwaiting, EOI_MAX_WAITING - kept);
	memcpy(&eoi_shared->waiting[kept], waiting, sizeof(EoiWaitingWorker) * nwaiting);
	eoi_shared->nwaiting = kept + nwaiting;
	LWLockRelease(eoi_shared->lock);

	if (total_waiting > logged_waiting && last_reason >= 0)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg_plural("eoingest cannot start %d worker of running jobs: %s",
							   "eoingest cannot start %d workers of running jobs: %s",
							   total_waiting, total_waiting, reason[last_reason]),
				 errdetail("They wait, in state \"waiting\" in eoingest.job_status, and start as soon as slots are free."),
				 last_reason == EOI_WAIT_WORKER_SLOT ?
				 errhint("To run them all, raise eoingest.max_workers (and max_worker_processes with it) and restart the server, or stop another job.") :
				 last_reason == EOI_WAIT_BGWORKER_SLOT ?
				 errhint("To run them all, raise max_worker_processes and restart the server, or stop another job.") :
				 errhint("To run them all, stop another of the owner's jobs, or have a superuser raise the owner's limit (ALTER ROLE ... SET eoingest.max_workers_per_role).")));
	else if (total_waiting == 0 && logged_waiting > 0)
		ereport(LOG,
				(errmsg("no eoingest worker waits for a slot any more")));
	logged_waiting = total_waiting;
}

static EoiWaitReason
wait_reason(LaunchResult result)
{
	switch (result)
	{
		case LAUNCH_NO_WORKER_SLOT:
			return EOI_WAIT_WORKER_SLOT;
		case LAUNCH_NO_BGWORKER_SLOT:
			return EOI_WAIT_BGWORKER_SLOT;
		case LAUNCH_ROLE_LIMIT:
		default:
			return EOI_WAIT_ROLE_LIMIT;
	}
}

static void
launch_missing(LauncherJob *jobs, int njobs)
{
	TimestampTz now = GetCurrentTimestamp();
	EoiWaitingWorker *waiting = palloc(sizeof(EoiWaitingWorker) * EOI_MAX_WAITING);
	int			nwaiting = 0;
	int			total_waiting = 0;
	int			wanted = 0;

	for (int j = 0; j < njobs; j++)
	{
		if (!jobs[j].running)
			continue;
		wanted += jobs[j].parallelism;
		for (int w = 0; w < jobs[j].parallelism; w++)
		{
			RestartBackoff *b;
			LaunchResult result;

			if (worker_exists(jobs[j].id, w))
				continue;
			b = find_backoff(jobs[j].id, w, false);
			if (b != NULL && now < b->not_before)
				continue;
			result = launch_worker(&jobs[j], w);
			if (result == LAUNCH_STARTED)
				continue;
			total_waiting++;
			if (nwaiting < EOI_MAX_WAITING)
			{
				waiting[nwaiting].database = MyDatabaseId;
				waiting[nwaiting].job_id = jobs[j].id;
				waiting[nwaiting].owner = jobs[j].owner;
				waiting[nwaiting].worker_index = w;
				waiting[nwaiting].reason = wait_reason(result);
				waiting[nwaiting].since = now;
				nwaiting++;
			}
		}
	}
	publish_waiting(waiting, nwaiting, total_waiting, wanted);
}

/* Forget the backoff of jobs that no longer run, so a restart starts fresh. */
static void
prune_backoffs(LauncherJob *jobs, int njobs)
{
	ListCell   *lc;

	foreach(lc, backoffs)
	{
		RestartBackoff *b = lfirst(lc);
		LauncherJob *job = find_job(jobs, njobs, b->job_id);

		if (job == NULL || !job->running)
		{
			backoffs = foreach_delete_current(backoffs, lc);
			pfree(b);
		}
	}
}

/* The coordinator's part: two_phase checkpoints and in-doubt recovery. */
static void
coordinate_two_phase(LauncherJob *jobs, int njobs)
{
	EoiTpJob   *tp = palloc0(sizeof(EoiTpJob) * Max(njobs, 1));
	int			ntp = 0;

	for (int i = 0; i < njobs; i++)
	{
		if (!jobs[i].two_phase)
			continue;
		tp[ntp].job_id = jobs[i].id;
		tp[ntp].parallelism = jobs[i].parallelism;
		tp[ntp].running = jobs[i].running;
		ntp++;
	}
	eoi_tp_coordinate(tp, ntp, read_only);
}

static char *
read_settings(void)
{
	MemoryContext caller = CurrentMemoryContext;
	char	   *settings;

	eoi_begin_work("reading the database's settings");
	MemoryContextSwitchTo(caller);
	settings = eoi_session_settings(GetUserId());
	if (database_name == NULL)
		database_name = MemoryContextStrdup(launcher_context, get_database_name(MyDatabaseId));
	eoi_commit_work();
	MemoryContextSwitchTo(caller);
	return settings;
}

/*
 * The launcher sees default_transaction_read_only turned off in
 * postgresql.conf (SIGHUP), but not by ALTER DATABASE/ROLE ... RESET:
 * once those settings changed, it exits, and the postmaster starts it again
 * (bgw_restart_time) in a session that has them.  While read-only it has
 * decided nothing, so it leaves no epoch half-way; its workers keep running.
 */
static void
exit_if_settings_changed(void)
{
	char	   *now = read_settings();

	if (strcmp(now, settings_at_start) == 0)
		return;
	ereport(LOG,
			(errmsg("eoingest launcher restarts to apply the changed settings of database \"%s\"",
					database_name)));
	proc_exit(1);
}

/*
 * With default_transaction_read_only on, no write of the launcher's would
 * pass: say so once, and let the tick skip its writes.
 */
static void
check_read_only(void)
{
	bool		was = read_only;

	read_only = DefaultXactReadOnly;
	if (read_only)
		exit_if_settings_changed();
	if (read_only && !was)
		ereport(WARNING,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("eoingest jobs wait: the database is read-only"),
				 errdetail("default_transaction_read_only is on in database \"%s\"; two_phase epochs are rolled back instead of decided.",
						   database_name),
				 errhint("Turn default_transaction_read_only off; the jobs resume by themselves.")));
	else if (was && !read_only)
		ereport(LOG,
				(errmsg("the database is writable again, eoingest jobs resume")));
}

/*
 * eoingest.dead_letter_retention: once a minute, delete the dead letters
 * that failed longer ago, PRUNE_LIMIT at a time (again at the next tick
 * while there are more), each round in its own transaction.
 */
#define PRUNE_INTERVAL_MS 60000
#define PRUNE_LIMIT 10000

static void
prune_dead_letters(void)
{
	static TimestampTz next_prune = 0;
	int64		deleted;

	if (eoingest_dead_letter_retention <= 0 || !extension_present || read_only ||
		GetCurrentTimestamp() < next_prune)
		return;
	eoi_begin_work("deleting dead letters past eoingest.dead_letter_retention");
	deleted = eoi_dead_letters_prune(eoingest_dead_letter_retention, PRUNE_LIMIT);
	eoi_commit_work();
	if (deleted > 0)
		ereport(LOG,
				(errmsg_plural("deleted %lld dead letter older than eoingest.dead_letter_retention (%d min)",
							   "deleted %lld dead letters older than eoingest.dead_letter_retention (%d min)",
							   (unsigned long) deleted,
							   (long long) deleted, eoingest_dead_letter_retention)));
	next_prune = deleted < PRUNE_LIMIT ?
		TimestampTzPlusMilliseconds(GetCurrentTimestamp(), PRUNE_INTERVAL_MS) : 0;
}

/*
 * Whether we were asked to leave.  An entry that is no longer ours (the
 * cluster launcher restarted, and another launcher of this database took
 * it) means another launcher runs here: we exit at once, touching nothing.
 */
static bool
leave_asked(void)
{
	bool		asked;
	bool		mine;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	asked = my_entry->leave_asked;
	mine = (my_entry->database == MyDatabaseId && my_entry->pid == MyProcPid);
	LWLockRelease(eoi_shared->lock);
	if (!mine)
	{
		ereport(LOG,
				(errmsg("eoingest launcher of database \"%s\" exits: another one runs there", database_name)));
		proc_exit(0);
	}
	return asked;
}

/*
 * Nothing to run here, and no worker of ours left: exit, the cluster
 * launcher starts us again when the database wants us.  The workers are
 * gone first, so that nobody else coordinates or reaps them meanwhile.
 */
static void
exit_if_not_needed(bool leaving)
{
	bool		busy;

	if (!leaving && extension_installed)
		return;
	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	busy = (slots_of_database() > 0);
	LWLockRelease(eoi_shared->lock);
	if (busy)
		return;
	if (leaving)
	{
		ereport(LOG,
				(errmsg("eoingest launcher of database \"%s\" stopped its workers and exits: the database is being dropped or no longer served",
						database_name)));
		launcher_exit(EOI_DB_EXIT_LEFT);
	}
	launcher_exit(EOI_DB_EXIT_NO_EXTENSION);
}

/* Log once that this database's jobs are served, when it has the extension. */
static void
announce_start(void)
{
	static bool announced = false;

	if (announced)
		return;
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	my_entry->serving = true;
	LWLockRelease(eoi_shared->lock);
	ereport(LOG,
			(errmsg("eoingest launcher started in database \"%s\"", database_name)));
	announced = true;
}

static void
reconcile(void)
{
	LauncherJob *jobs = NULL;
	int			njobs = 0;
	bool		leaving = leave_asked();

	forget_wakeups();
	MemoryContextReset(tick_context);
	MemoryContextSwitchTo(tick_context);
	check_read_only();
	EOI_FAULT_POINT("launcher_tick");
	if (!leaving)
		jobs = read_jobs(&njobs);
	reap_and_terminate(jobs, njobs, leaving);
	prune_backoffs(jobs, njobs);
	exit_if_not_needed(leaving);
	if (leaving)
		return;
	announce_start();
	launch_missing(jobs, njobs);
	if (extension_present)
		coordinate_two_phase(jobs, njobs);
	prune_dead_letters();
}

/*
 * A lock on eoingest's tables was not granted in time: let go of the
 * two_phase epochs in flight, whose prepared transactions may be what the
 * lock's holder waits for.  A failure here is left to the next tick.
 */
static void
release_epochs(void)
{
	PG_TRY();
	{
		eoi_tp_release_epochs();
	}
	PG_CATCH();
	{
		EmitErrorReport();
		FlushErrorState();
		LWLockReleaseAll();
		AbortOutOfAnyTransaction();
	}
	PG_END_TRY();
}

/*
 * The launcher waits for a lock no longer than a worker does
 * (eoingest.lock_timeout): a DROP EXTENSION waiting for a prepared epoch's
 * locks must not also keep the coordinator, who would resolve it, waiting.
 */
static void
apply_lock_timeout(void)
{
	char		value[32];

	snprintf(value, sizeof(value), "%d", eoingest_lock_timeout);
	SetConfigOption("lock_timeout", value, PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * A tick failed: clean up as the end of a transaction would, and log the
 * error unless it is the one the previous tick logged.  Returns how long to
 * wait before the next tick: doubling, up to ERROR_BACKOFF_MAX_MS.
 */
static long
tick_failed(void)
{
	ErrorData  *edata;
	long		delay = LAUNCHER_NAPTIME_MS;

	MemoryContextSwitchTo(launcher_context);
	edata = CopyErrorData();

	/* An error between transactions may hold the slots' lock. */
	LWLockReleaseAll();
	if (last_tick_error == NULL || strcmp(last_tick_error, edata->message) != 0)
	{
		EmitErrorReport();
		ereport(LOG,
				(errmsg("eoingest launcher goes on after the error above, and retries with a backoff of up to %d s",
						ERROR_BACKOFF_MAX_MS / 1000)));
		if (last_tick_error != NULL)
			pfree(last_tick_error);
		last_tick_error = pstrdup(edata->message);
	}
	FlushErrorState();
	AbortOutOfAnyTransaction();
	pgstat_report_activity(STATE_IDLE, NULL);
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		release_epochs();
	FreeErrorData(edata);

	failed_ticks++;
	for (int i = 1; i < failed_ticks && delay < ERROR_BACKOFF_MAX_MS; i++)
		delay *= 2;
	return Min(delay, ERROR_BACKOFF_MAX_MS);
}

static void
tick_succeeded(void)
{
	if (failed_ticks > 0)
		ereport(LOG,
				(errmsg_plural("eoingest launcher recovered after %d failed round",
							   "eoingest launcher recovered after %d failed rounds",
							   failed_ticks, failed_ticks)));
	failed_ticks = 0;
	if (last_tick_error != NULL)
	{
		pfree(last_tick_error);
		last_tick_error = NULL;
	}
}

/*
 * Wait for the next tick.  Job functions and workers set the latch to have
 * the tick now, except while ticks fail: then only SIGTERM and SIGHUP end
 * the backoff early.  Postmaster death ends the process at once.
 */
static void
nap(long naptime)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), naptime);

	for (;;)
	{
		long		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);

		if (remaining <= 0)
			return;
		(void) WaitLatch(MyLatch,
						 WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 remaining,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		if (failed_ticks == 0 || InterruptPending || ConfigReloadPending || leave_asked())
			return;
	}
}

void
eoingest_launcher_main(Datum main_arg)
{
	Oid			database = DatumGetObjectId(main_arg);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	launcher_context = AllocSetContextCreate(TopMemoryContext,
											 "eoingest launcher",
											 ALLOCSET_DEFAULT_SIZES);
	tick_context = AllocSetContextCreate(launcher_context,
										 "eoingest launcher tick",
										 ALLOCSET_DEFAULT_SIZES);
	handles = MemoryContextAllocZero(launcher_context,
									 sizeof(BackgroundWorkerHandle *) * eoi_shared->nslots);

	launcher_attach(database);
	launcher_started_at = GetCurrentTimestamp();
	BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, 0);
	/* The launcher runs as a superuser: resolve nothing a user created. */
	SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
	apply_lock_timeout();
	pgstat_report_appname("eoingest launcher");
	MemoryContextSwitchTo(launcher_context);
	settings_at_start = read_settings();

	for (;;)
	{
		long		naptime = LAUNCHER_NAPTIME_MS;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			apply_lock_timeout();
		}

		PG_TRY();
		{
			reconcile();
			tick_succeeded();
		}
		PG_CATCH();
		{
			naptime = tick_failed();
		}
		PG_END_TRY();

		nap(naptime);
	}
}
