/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The shared-memory segment of eoingest: sizing, creation, and waking
 *	  the launcher.  The jobs' statistics have a segment of their own
 *	  (jobstats.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include "base/shmem.h"

EoiShared  *eoi_shared = NULL;

static Size
eoi_shmem_size(void)
{
	return add_size(offsetof(EoiShared, slots),
					mul_size(eoingest_max_workers, sizeof(EoiWorkerSlot)));
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
		eoi_shared->next_generation = 1;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Ask the launcher to look at the jobs now rather than at its next tick. */
void
eoi_wake_launcher(void)
{
	Latch	   *latch;

	if (eoi_shared == NULL)
		return;
	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	latch = eoi_shared->launcher_latch;
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

		if (slot->in_use && slot->job_id == job_id && slot->config_version < config_version)
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

		found = slot->in_use && slot->job_id == job_id && (!attached_only || slot->pid != 0);
	}
	LWLockRelease(eoi_shared->lock);
	return found;
}
