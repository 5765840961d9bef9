/*-------------------------------------------------------------------------
 *
 * fence.c
 *	  The split-brain guard.
 *
 * A streaming standby has the system identifier of its primary; promoted,
 * it moves to a new, higher timeline.  An old primary that is started again
 * as a primary by mistake stays on its old timeline and holds its own,
 * diverged copy of the job's rows and offsets: if it ran the job, it would
 * ingest the topic a second time into that copy.  It cannot learn of the
 * promotion from its own data, so the evidence has to live elsewhere:
 *
 *	- Kafka: with commit_to_kafka, every offset commit to the job's consumer
 *	  group carries "eoingest system=<id> timeline=<tli>" as its metadata.
 *	  A worker that finds, for a partition it is about to read, a commit
 *	  made by the same cluster on a later timeline refuses to run
 *	  (groupfence.c reads the group).
 *	- The job row records the server that last started the job, for
 *	  job_definitions; a row that names a later timeline of this cluster
 *	  than this server's is refused too (a copy restored from elsewhere).
 *
 * Without commit_to_kafka nothing outside the old primary records the
 * promotion, and the guard cannot see it: docs/operations.md, "High
 * availability", gives the fencing steps for that case.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "store/fence.h"
#include "store/job.h"

#define FENCE_PREFIX		"eoingest system="

void
eoi_this_server(EoiServerId *id)
{
	id->system_id = GetSystemIdentifier();
	id->timeline = GetWALInsertionTimeLine();
}

/* What this server writes with its offset commits. */
char *
eoi_fence_metadata(void)
{
	EoiServerId id;

	eoi_this_server(&id);
	return psprintf(FENCE_PREFIX UINT64_FORMAT " timeline=%u", id.system_id, id.timeline);
}

/* Read what eoi_fence_metadata wrote; false for anything else. */
bool
eoi_fence_parse(const char *metadata, EoiServerId *id)
{
	unsigned long long system_id;
	unsigned int timeline;
	int			used = 0;

	if (metadata == NULL || strncmp(metadata, FENCE_PREFIX, strlen(FENCE_PREFIX)) != 0)
		return false;
	if (sscanf(metadata + strlen(FENCE_PREFIX), "%llu timeline=%u%n",
			   &system_id, &timeline, &used) != 2 ||
		metadata[strlen(FENCE_PREFIX) + used] != '\0')
		return false;
	id->system_id = (uint64) system_id;
	id->timeline = (TimeLineID) timeline;
	return true;
}

/* Refuse to run the job here: a later timeline of this cluster ran it. */
void
eoi_fence_refuse(const EoiJob *job, const EoiServerId *here, TimeLineID newer, const char *where)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("eoingest job \"%s\" ran on timeline %u of this cluster, but this server is on timeline %u",
					job->name, newer, here->timeline),
			 errdetail("%s This server looks like a primary that a promoted standby has replaced; running the job here would ingest the topic again into a diverged copy.",
					   where),
			 errhint("Make this server a standby of the new primary (pg_rewind), or, if it is meant to be the primary now, reset the job's offsets and start it again.")));
}

/*
 * At a worker's start, in a transaction: refuse if the job row says a
 * later timeline of this cluster ran the job, else record this server.
 */
void
eoi_fence_record(const EoiJob *job)
{
	EoiServerId here;
	EoiSavedUser saved;
	Oid			types[3] = {INT4OID, INT8OID, INT8OID};
	Datum		args[3];
	bool		isnull[2];
	int64		system_id;
	int64		timeline;

	eoi_this_server(&here);
	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	args[0] = Int32GetDatum(job->id);
	if (SPI_execute_with_args("SELECT ran_on_system, ran_on_timeline FROM eoingest.jobs WHERE id = $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read where job \"%s\" ran", job->name);
	if (SPI_processed == 1)
	{
		system_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull[0]));
		timeline = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull[1]));
		if (!isnull[0] && !isnull[1] && (uint64) system_id == here.system_id &&
			timeline > (int64) here.timeline)
			eoi_fence_refuse(job, &here, (TimeLineID) timeline, "The job's definition says so.");
	}
	args[1] = Int64GetDatum((int64) here.system_id);
	args[2] = Int64GetDatum((int64) here.timeline);
	if (SPI_execute_with_args("UPDATE eoingest.jobs SET ran_on_system = $2, ran_on_timeline = $3"
							  " WHERE id = $1 AND (ran_on_system, ran_on_timeline) IS DISTINCT FROM ($2, $3)",
							  3, types, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record where job \"%s\" runs", job->name);
	SPI_finish();
	eoi_restore_user(&saved);
}
