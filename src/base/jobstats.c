/*-------------------------------------------------------------------------
 *
 * jobstats.c
 *	  Each job's cumulative statistics in shared memory, as PostgreSQL keeps
 *	  pg_stat_* counters: they grow across the job's worker restarts and
 *	  across a clean restart of the server (the postmaster writes them to
 *	  pg_stat/ at shutdown and reads them back at start, as
 *	  pg_stat_statements does), start again from zero after a crash or
 *	  when they are reset (stats_reset says when), and go when the job is
 *	  dropped.
 *
 *	  A fixed table of EOI_JOB_STATS_MIN entries, or four per worker slot
 *	  if that is more, keyed by database and job id, under eoingest's lock:
 *	  a worker adds to it once per batch or failure, never per message.  A
 *	  job that finds the table full is not counted (a WARNING says so once
 *	  per worker); the launcher frees the entries of dropped jobs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "base/jobstats.h"
#include "base/shmem.h"

#define EOI_JOB_STATS_MIN 1024
#define JOB_STATS_FILE "pg_stat/eoingest_job_stats.stat"
#define JOB_STATS_MAGIC 0x454f4a01	/* "EOJ" and the file's version */

static int
job_stats_count(void)
{
	return Max(EOI_JOB_STATS_MIN, 4 * eoingest_max_workers);
}

static Size
job_stats_size(void)
{
	return mul_size(job_stats_count(), sizeof(EoiJobStats));
}

/*
 * on_shmem_exit of the postmaster: write the statistics for the next start,
 * unless the server is going down after a crash.
 */
static void
save_job_stats(int code, Datum arg)
{
	FILE	   *file;
	uint32		magic = JOB_STATS_MAGIC;
	int32		n = 0;

	if (code != 0 || eoi_shared == NULL)
		return;
	for (int i = 0; i < eoi_shared->nstats; i++)
		n += (eoi_shared->stats[i].database != InvalidOid);
	file = AllocateFile(JOB_STATS_FILE ".tmp", PG_BINARY_W);
	if (file == NULL)
		goto error;
	if (fwrite(&magic, sizeof(magic), 1, file) != 1 || fwrite(&n, sizeof(n), 1, file) != 1)
		goto error;
	for (int i = 0; i < eoi_shared->nstats; i++)
		if (eoi_shared->stats[i].database != InvalidOid &&
			fwrite(&eoi_shared->stats[i], sizeof(EoiJobStats), 1, file) != 1)
			goto error;
	if (FreeFile(file) != 0)
	{
		file = NULL;
		goto error;
	}
	(void) durable_rename(JOB_STATS_FILE ".tmp", JOB_STATS_FILE, LOG);
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", JOB_STATS_FILE ".tmp")));
	if (file != NULL)
		FreeFile(file);
	unlink(JOB_STATS_FILE ".tmp");
}

/*
 * Read what the last clean shutdown wrote, and remove the file: after a
 * crash the statistics start from zero.  A file that does not read back
 * whole is left out, with a LOG line.
 */
static void
load_job_stats(void)
{
	FILE	   *file = AllocateFile(JOB_STATS_FILE, PG_BINARY_R);
	uint32		magic;
	int32		n;
	int			kept = 0;

	if (file == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", JOB_STATS_FILE)));
		return;
	}
	if (fread(&magic, sizeof(magic), 1, file) != 1 || magic != JOB_STATS_MAGIC ||
		fread(&n, sizeof(n), 1, file) != 1 || n < 0)
		n = -1;
	for (int i = 0; i < n && kept < eoi_shared->nstats; i++)
	{
		EoiJobStats e;

		if (fread(&e, sizeof(e), 1, file) != 1)
		{
			n = -1;
			break;
		}
		if (e.database != InvalidOid)
			eoi_shared->stats[kept++] = e;
	}
	if (n < 0)
	{
		ereport(LOG,
				(errmsg("ignoring eoingest's statistics file \"%s\": it is not whole", JOB_STATS_FILE)));
		memset(eoi_shared->stats, 0, job_stats_size());
	}
	FreeFile(file);
	unlink(JOB_STATS_FILE);
}

/* Called with eoi_shmem_request (shmem_request_hook, or _PG_init before 15). */
void
eoi_job_stats_request(void)
{
	RequestAddinShmemSpace(job_stats_size());
}

/*
 * After eoi_shmem_startup: the table's segment, laid out when it is made,
 * with what the last clean shutdown saved; the postmaster saves it at its
 * exit.
 */
void
eoi_job_stats_startup(void)
{
	bool		found;
	EoiJobStats *stats;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	stats = ShmemInitStruct("eoingest job statistics", job_stats_size(), &found);
	eoi_shared->stats = stats;
	eoi_shared->nstats = job_stats_count();
	if (!found)
	{
		memset(stats, 0, job_stats_size());
		if (!IsUnderPostmaster)
		{
			load_job_stats();
			on_shmem_exit(save_job_stats, (Datum) 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* The entry of the job in this database, or NULL; the lock is held. */
static EoiJobStats *
find_entry(int32 job_id)
{
	for (int i = 0; i < eoi_shared->nstats; i++)
	{
		EoiJobStats *e = &eoi_shared->stats[i];

		if (e->database == MyDatabaseId && e->job_id == job_id)
			return e;
	}
	return NULL;
}

/* The job's entry, made if it has none; NULL if the table is full. */
static EoiJobStats *
find_or_make_entry(int32 job_id)
{
	EoiJobStats *e = find_entry(job_id);

	if (e != NULL)
		return e;
	for (int i = 0; i < eoi_shared->nstats; i++)
	{
		e = &eoi_shared->stats[i];
		if (e->database == InvalidOid)
		{
			memset(e, 0, sizeof(EoiJobStats));
			e->database = MyDatabaseId;
			e->job_id = job_id;
			e->stats_reset = GetCurrentTimestamp();
			return e;
		}
	}
	return NULL;
}

/* Add a worker's counts to its job's; false if the table is full. */
bool
eoi_job_stats_add(int32 job_id, const EoiJobCounters *delta)
{
	EoiJobStats *e;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	e = find_or_make_entry(job_id);
	if (e != NULL)
	{
		EoiJobCounters *c = &e->counters;

		c->messages += delta->messages;
		c->rows += delta->rows;
		c->bytes += delta->bytes;
		c->batches += delta->batches;
		c->dead_letters += delta->dead_letters;
		c->errors += delta->errors;
		c->retries += delta->retries;
		c->kafka_wait_ms += delta->kafka_wait_ms;
		c->write_ms += delta->write_ms;
		c->commit_ms += delta->commit_ms;
	}
	LWLockRelease(eoi_shared->lock);
	return e != NULL;
}

/* A copy of the job's statistics; false if it has none yet. */
bool
eoi_job_stats_get(int32 job_id, EoiJobStats *stats)
{
	EoiJobStats *e;

	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	e = find_entry(job_id);
	if (e != NULL)
		*stats = *e;
	LWLockRelease(eoi_shared->lock);
	return e != NULL;
}

/* Zero the job's statistics, from now on. */
void
eoi_job_stats_reset(int32 job_id)
{
	EoiJobStats *e;

	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	e = find_or_make_entry(job_id);
	if (e != NULL)
	{
		memset(&e->counters, 0, sizeof(EoiJobCounters));
		e->stats_reset = GetCurrentTimestamp();
	}
	LWLockRelease(eoi_shared->lock);
}

static int
cmp_job_id(const void *a, const void *b)
{
	int32		x = *(const int32 *) a;
	int32		y = *(const int32 *) b;

	return (x > y) - (x < y);
}

/*
 * Free the entries of this database's jobs that are not among job_ids
 * (dropped jobs); job_ids is sorted here.
 */
void
eoi_job_stats_keep_only(int32 *job_ids, int njobs)
{
	qsort(job_ids, njobs, sizeof(int32), cmp_job_id);
	LWLockAcquire(eoi_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < eoi_shared->nstats; i++)
	{
		EoiJobStats *e = &eoi_shared->stats[i];

		if (e->database == MyDatabaseId &&
			bsearch(&e->job_id, job_ids, njobs, sizeof(int32), cmp_job_id) == NULL)
			e->database = InvalidOid;
	}
	LWLockRelease(eoi_shared->lock);
}
