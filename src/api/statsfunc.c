/*-------------------------------------------------------------------------
 *
 * statsfunc.c
 *	  The jobs' cumulative statistics (base/jobstats.c) in SQL: the rows
 *	  behind eoingest.job_stats, and eoingest.reset_job_stats.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "api/api_internal.h"
#include "base/jobstats.h"
#include "base/shmem.h"
#include "base/txn.h"
#include "store/job.h"

PG_FUNCTION_INFO_V1(eoingest_job_stats);
PG_FUNCTION_INFO_V1(eoingest_reset_job_stats);

#define JOB_STATS_COLUMNS 12

/*
 * eoingest_internal.job_stats(): one row per job of this database that has
 * statistics.  The view eoingest.job_stats names the jobs and shows each
 * role the jobs it may see.
 */
Datum
eoingest_job_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	EoiJobStats *copy;
	int			n = 0;

	InitMaterializedSRF(fcinfo, 0);

	/* copy under the lock, build the rows after it */
	copy = palloc(sizeof(EoiJobStats) * Max(eoi_shared->nstats, 1));
	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	for (int i = 0; i < eoi_shared->nstats; i++)
		if (eoi_shared->stats[i].database == MyDatabaseId)
			copy[n++] = eoi_shared->stats[i];
	LWLockRelease(eoi_shared->lock);

	for (int i = 0; i < n; i++)
	{
		EoiJobCounters *c = &copy[i].counters;
		Datum		values[JOB_STATS_COLUMNS];
		bool		nulls[JOB_STATS_COLUMNS] = {0};

		values[0] = Int32GetDatum(copy[i].job_id);
		values[1] = Int64GetDatum((int64) c->messages);
		values[2] = Int64GetDatum((int64) c->rows);
		values[3] = Int64GetDatum((int64) c->bytes);
		values[4] = Int64GetDatum((int64) c->batches);
		values[5] = Int64GetDatum((int64) c->dead_letters);
		values[6] = Int64GetDatum((int64) c->errors);
		values[7] = Int64GetDatum((int64) c->retries);
		values[8] = Float8GetDatum(c->kafka_wait_ms);
		values[9] = Float8GetDatum(c->write_ms);
		values[10] = Float8GetDatum(c->commit_ms);
		values[11] = TimestampTzGetDatum(copy[i].stats_reset);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * The ids of the jobs whose statistics the current role may reset: the job
 * `name` (an error if it does not exist or is not the role's), or, for NULL,
 * every job it may steer.
 */
static List *
jobs_to_reset(const char *name)
{
	EoiSavedUser saved;
	List	   *ids = NIL;
	List	   *owners = NIL;
	List	   *mine = NIL;
	ListCell   *li;
	ListCell   *lo;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {name ? CStringGetTextDatum(name) : (Datum) 0};
	char		nulls[1] = {name ? ' ' : 'n'};

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT id, owner FROM eoingest.jobs WHERE $1 IS NULL OR name = $1",
							  1, types, args, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.jobs");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		ids = lappend_int(ids, DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull)));
		owners = lappend_oid(owners, DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull)));
	}
	SPI_finish();
	eoi_restore_user(&saved);

	if (name != NULL && ids == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("eoingest job \"%s\" does not exist", name),
				 errhint("eoingest.job_status lists the jobs.")));
	forboth(li, ids, lo, owners)
	{
		if (name != NULL)
			eoi_check_job_owner(name, lfirst_oid(lo));
		if (eoi_may_steer_job(lfirst_oid(lo)))
			mine = lappend_int(mine, lfirst_int(li));
	}
	return mine;
}

/*
 * eoingest.reset_job_stats(name DEFAULT NULL): zero the statistics of the
 * job, or of every job the current role owns (a superuser: every job);
 * returns how many jobs were reset.  Not transactional, as
 * pg_stat_reset is not: a rollback does not bring the counts back.
 */
Datum
eoingest_reset_job_stats(PG_FUNCTION_ARGS)
{
	char	   *name = PG_ARGISNULL(0) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(0));
	List	   *ids = jobs_to_reset(name);
	ListCell   *lc;

	foreach(lc, ids)
		eoi_job_stats_reset(lfirst_int(lc));
	PG_RETURN_INT32(list_length(ids));
}
