/*-------------------------------------------------------------------------
 *
 * deadletters.c
 *	  A job's dead letters, from SQL: replay_dead_letters puts them
 *	  through the job's writer again once the cause is fixed;
 *	  discard_dead_letters deletes them unwritten.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "apply/replay.h"
#include "envelope/envelope.h"
#include "store/job.h"

PG_FUNCTION_INFO_V1(eoingest_replay_dead_letters);
PG_FUNCTION_INFO_V1(eoingest_discard_dead_letters);

/* The job named by argument 0, which the caller must own. */
static EoiJob *
owned_job(FunctionCallInfo fcinfo)
{
	char	   *name;
	EoiJob	   *job;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("job must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	job = eoi_job_load_by_name(name);
	eoi_check_primary();
	eoi_check_job_owner(name, job->owner);
	return job;
}

/*
 * Write the job's dead letters (all, or those ids) through its writer, in
 * the caller's transaction, and delete them.  All or nothing: a record that
 * still fails raises its error, and nothing is replayed.  A dead letter
 * whose key the job has written again since is left, and named, unless
 * force is true.  Only the job's owner (or a member of its role) may.
 */
Datum
eoingest_replay_dead_letters(PG_FUNCTION_ARGS)
{
	ArrayType  *ids = PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1);
	bool		force = PG_NARGS() > 2 && !PG_ARGISNULL(2) && PG_GETARG_BOOL(2);
	EoiJob	   *job = owned_job(fcinfo);

	PG_RETURN_INT64((int64) eoi_replay_dead_letters(job, ids, eoi_envelope_writer(job), force));
}

/* An SQLSTATE as PostgreSQL writes one: five digits or upper-case letters. */
static bool
is_sqlstate(const char *s)
{
	if (strlen(s) != 5)
		return false;
	for (int i = 0; i < 5; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'Z')))
			return false;
	return true;
}

/*
 * eoingest.discard_dead_letters(job, ids, sqlstate, older_than): delete the
 * job's dead letters that meet every condition given (all of them when none
 * is), without writing them, in the caller's transaction; returns how many.
 * Only the job's owner (or a member of its role) may.
 */
Datum
eoingest_discard_dead_letters(PG_FUNCTION_ARGS)
{
	EoiJob	   *job = owned_job(fcinfo);
	Oid			types[4] = {INT4OID, INT8ARRAYOID, TEXTOID, INTERVALOID};
	Datum		args[4];
	char		nulls[4] = "    ";
	EoiSavedUser saved;
	uint64		n;

	if (!PG_ARGISNULL(2) && !is_sqlstate(text_to_cstring(PG_GETARG_TEXT_PP(2))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("\"%s\" is not an SQLSTATE", text_to_cstring(PG_GETARG_TEXT_PP(2))),
				 errhint("An SQLSTATE is five digits or upper-case letters, as in the dead letters' sqlstate column, e.g. 22P02.")));
	if (!PG_ARGISNULL(3))
	{
		Interval	zero = {0};

		if (DatumGetInt32(DirectFunctionCall2(interval_cmp, PG_GETARG_DATUM(3),
											  IntervalPGetDatum(&zero))) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("older_than must not be negative"),
					 errhint("Give how long ago the records failed, e.g. older_than => '7 days'.")));
	}
	args[0] = Int32GetDatum(job->id);
	for (int i = 1; i < 4; i++)
	{
		args[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
	}
	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("DELETE FROM eoingest.dead_letters"
							  " WHERE job_id = $1 AND ($2 IS NULL OR id = ANY ($2))"
							  "   AND ($3 IS NULL OR sqlstate = $3)"
							  "   AND ($4 IS NULL OR failed_at < pg_catalog.now() - $4)",
							  4, types, args, nulls, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete from eoingest.dead_letters");
	n = SPI_processed;
	SPI_finish();
	eoi_restore_user(&saved);
	PG_RETURN_INT64((int64) n);
}
