/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The shared-memory segment of eoingest: sizing, creation, and waking
 *	  a database's launcher.  The jobs' statistics have a segment of their
 *	  own (jobstats.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "base/shmem.h"

EoiShared  *eoi_shared = NULL;

/*
 * Every database launcher takes a background worker slot, so there are
 * never more of them than max_worker_processes.
 */
static Size
slots_size(void)
{
	return add_size(offsetof(EoiShared, slots),
					mul_size(eoingest_max_workers, sizeof(EoiWorkerSlot)));
}

static Size
eoi_shmem_size(void)
{
	return add_size(MAXALIGN(slots_size()),
					mul_size(max_worker_processes, sizeof(EoiDbLauncher)));
}

/* Called from _PG_init (before 15) or from shmem_request_hook (15 and later). */
void
eoi_shmem_request(void)
{
	RequestAddinShmemSpace(eoi_shmem_size());
	RequestNamedLWLockTranche("eoingest", 1);
}

void
eoi_shmem_startup(void)
{
	bool		found;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	eoi_shared = ShmemInitStruct("eoingest", eoi_shmem_size(), &found);
	if (!found)
	{
		memset(eoi_shared, 0, eoi_shmem_size());
		eoi_shared->lock = &(GetNamedLWLockTranche("eoingest"))->lock;
		eoi_shared->nslots = eoingest_max_workers;
		eoi_shared->ndatabases = max_worker_processes;
		eoi_shared->databases = (EoiDbLauncher *) ((char *) eoi_shared + MAXALIGN(slots_size()));
		eoi_shared->next_generation = 1;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* The entry of the launcher of `database`, or NULL; the lock is held. */
EoiDbLauncher *
eoi_db_launcher(Oid database)
{
	for (int i = 0; i < eoi_shared->ndatabases; i++)
		if (eoi_shared->databases[i].database == database)
			return &eoi_shared->databases[i];
	return NULL;
}

/* How many database launchers are attached; the lock is held. */
int
eoi_db_launchers_running(void)
{
	int			n = 0;

	for (int i = 0; i < eoi_shared->ndatabases; i++)
		n += (eoi_shared->databases[i].database != InvalidOid &&
			  eoi_shared->databases[i].pid != 0);
	return n;
}

/*
 * Ask the launcher of `database` to stop its workers and exit; false if
 * none runs.
 */
bool
eoi_ask_to_leave(Oid database)
{
	EoiDbLauncher *db;
	Latch	   *latch = NULL;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	db = eoi_db_launcher(database);
	if (db != NULL && db->pid != 0)
	{
		db->leave_asked = true;
		latch = db->latch;
	}
	LWLockRelease(eoi_shared->lock);
	if (latch != NULL)
		SetLatch(latch);
	return latch != NULL;
}

/* Whether eoingest has a launcher or a worker in `database`. */
bool
eoi_database_in_use(Oid database)
{
	EoiDbLauncher *db;
	bool		used;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	db = eoi_db_launcher(database);
	used = (db != NULL && db->pid != 0);
	for (int i = 0; i < eoi_shared->nslots && !used; i++)
		used = eoi_shared->slots[i].in_use && eoi_shared->slots[i].database == database;
	LWLockRelease(eoi_shared->lock);
	return used;
}

/*
 * A database that is gone (dropped WITH (FORCE) kills its launcher and
 * workers before they could free anything): free its workers' slots and
 * waiting entries, those whose process is gone.  Returns the slots freed.
 */
int
eoi_forget_database(Oid database)
{
	int			freed = 0;
	int			kept = 0;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < eoi_shared->nslots; i++)
	{
		EoiWorkerSlot *slot = &eoi_shared->slots[i];

		if (slot->in_use && slot->database == database &&
			(slot->pid == 0 || kill(slot->pid, 0) != 0))
		{
			slot->in_use = false;
			slot->pid = 0;
			freed++;
		}
	}
	for (int i = 0; i < eoi_shared->nwaiting; i++)
		if (eoi_shared->waiting[i].database != database)
			eoi_shared->waiting[kept++] = eoi_shared->waiting[i];
	eoi_shared->nwaiting = kept;
	LWLockRelease(eoi_shared->lock);
	return freed;
}

/*
 * Ask this database's launcher to look at the jobs now rather than at its
 * next tick.  When none runs (the database had no extension when the
 * cluster launcher last looked), ask the cluster launcher to start one.
 */
void
eoi_wake_launcher(void)
{
	EoiDbLauncher *db;
	Latch	   *latch = NULL;

	if (eoi_shared == NULL)
		return;
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	db = eoi_db_launcher(MyDatabaseId);
	if (db != NULL && db->pid != 0 && !db->leave_asked)
	{
		db->woken = true;
		latch = db->latch;
	}
	else
	{
		bool		listed = false;

		for (int i = 0; i < eoi_shared->nstart_requests && !listed; i++)
			listed = (eoi_shared->start_requests[i] == MyDatabaseId);
		if (!listed && eoi_shared->nstart_requests < EOI_MAX_START_REQUESTS)
			eoi_shared->start_requests[eoi_shared->nstart_requests++] = MyDatabaseId;
		else if (!listed)
			eoi_shared->start_requests_lost = true;
		latch = eoi_shared->cluster_launcher_latch;
	}
	LWLockRelease(eoi_shared->lock);
	if (latch != NULL)
		SetLatch(latch);
}

/*
 * The pid of a worker process of the job attached to its slot that was
 * started with a definition older than `config_version` (PG_INT32_MAX: any
 * worker), or 0.
 */
pid_t
eoi_job_worker_pid(int32 job_id, int32 config_version)
{
	pid_t		pid = 0;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	for (int i = 0; i < eoi_shared->nslots && pid == 0; i++)
	{
		EoiWorkerSlot *slot = &eoi_shared->slots[i];

		if (eoi_slot_is_job(slot, job_id) && slot->config_version < config_version)
			pid = slot->pid;
	}
	LWLockRelease(eoi_shared->lock);
	return pid;
}

/*
 * Whether a worker slot is held for the job: one being started, running,
 * or exited and not yet reaped by the launcher.  With attached_only, only
 * a slot whose worker process is attached, which is what job_status shows.
 */
bool
eoi_job_has_slot(int32 job_id, bool attached_only)
{
	bool		found = false;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	for (int i = 0; i < eoi_shared->nslots && !found; i++)
	{
		EoiWorkerSlot *slot = &eoi_shared->slots[i];

		found = eoi_slot_is_job(slot, job_id) && (!attached_only || slot->pid != 0);
	}
	LWLockRelease(eoi_shared->lock);
	return found;
}
