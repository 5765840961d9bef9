/*-------------------------------------------------------------------------
 *
 * deadletters.c
 *	  eoingest.replay_dead_letters(job, ids): put a job's dead letters
 *	  through its writer again, once the cause is fixed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "apply/replay.h"
#include "envelope/envelope.h"
#include "store/job.h"

PG_FUNCTION_INFO_V1(eoingest_replay_dead_letters);

/*
 * Write the job's dead letters (all, or those ids) through its writer, in
 * the caller's transaction, and delete them.  All or nothing: a record that
 * still fails raises its error, and nothing is replayed.  Only the job's
 * owner (or a member of its role) may.
 */
Datum
eoingest_replay_dead_letters(PG_FUNCTION_ARGS)
{
	ArrayType  *ids = PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1);
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
	PG_RETURN_INT64((int64) eoi_replay_dead_letters(job, ids, eoi_envelope_writer(job)));
}
