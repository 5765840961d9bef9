/*-------------------------------------------------------------------------
 *
 * jobstats.c
 *	  Each job's cumulative statistics in shared memory, as PostgreSQL keeps
 *	  pg_stat_* counters: they grow across the job's worker restarts, start
 *	  again from zero when the server starts or when they are reset
 *	  (stats_reset says when), and go when the job is dropped.
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

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "base/jobstats.h"
#include "base/shmem.h"

#define EOI_JOB_STATS_MIN 1024

static int
job_stats_count(void)
{
	return Max(EOI_JOB_STATS_MIN, 4 * eoingest_max_workers);
}

Size
eoi_job_stats_size(void)
{
	return mul_size(job_stats_count(), sizeof(EoiJobStats));
}

void
eoi_job_stats_init(void *place)
{
	memset(place, 0, eoi_job_stats_size());
	eoi_shared->stats = place;
	eoi_shared->nstats = job_stats_count();
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
