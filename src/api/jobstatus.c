/*-------------------------------------------------------------------------
 *
 * jobstatus.c
 *	  What a job's rows show: the worker status behind eoingest.job_status,
 *	  the options with their secrets masked, and whether the current role
 *	  may see a job (the row-level policy on eoingest.offsets).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "catalog/pg_authid.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "api/api_internal.h"
#include "api/batchfunc.h"
#include "base/shmem.h"
#include "format/decode.h"
#include "kafka/positions.h"

PG_FUNCTION_INFO_V1(eoingest_worker_status);
PG_FUNCTION_INFO_V1(eoingest_mask_options);
PG_FUNCTION_INFO_V1(eoingest_may_see_job);

static const char *
worker_state_name(EoiWorkerState state)
{
	switch (state)
	{
		case EOI_WORKER_STARTING:
			return "starting";
		case EOI_WORKER_RUNNING:
			return "running";
		case EOI_WORKER_RETRYING:
			return "retrying";
		case EOI_WORKER_WAITING:
			return "waiting";
	}
	return "unknown";
}

/* Messages per second over the last minute, from the worker's samples. */
static double
messages_per_second(EoiWorkerSlot *s)
{
	int			oldest = -1;
	long		ms;

	for (int i = 0; i < EOI_RATE_SAMPLES; i++)
		if (s->rate_at[i] != 0 && (oldest < 0 || s->rate_at[i] < s->rate_at[oldest]))
			oldest = i;
	if (oldest < 0)
		return 0.0;
	ms = TimestampDifferenceMilliseconds(s->rate_at[oldest], GetCurrentTimestamp());
	if (ms <= 0)
		return 0.0;
	return (double) (s->messages - s->rate_messages[oldest]) * 1000.0 / ms;
}

/* The current role sees the workers of jobs it could steer, or all as pg_monitor. */
static bool
may_see(Oid owner)
{
	return superuser() || has_privs_of_role(GetUserId(), owner) ||
		has_privs_of_role(GetUserId(), ROLE_PG_MONITOR);
}

/*
 * eoingest_internal.may_see_job(job): may the current role see the job's rows
 * (the row-level policy on eoingest.offsets)?  False for a job that does
 * not exist, so that it tells nobody which jobs exist beyond their own.
 * A policy calls it once per row, and rows come by job: the last answer
 * is kept for the next call.
 */
typedef struct MaySeeCache
{
	Oid			role;
	char	   *job;
	bool		result;
} MaySeeCache;

Datum
eoingest_may_see_job(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	MaySeeCache *cache = fcinfo->flinfo->fn_extra;
	Oid			owner;

	if (cache != NULL && cache->role == GetUserId() && strcmp(cache->job, name) == 0)
		PG_RETURN_BOOL(cache->result);
	if (cache == NULL)
		cache = fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(MaySeeCache));
	else if (cache->job != NULL)
		pfree(cache->job);
	owner = eoi_api_find_job_owner(name);
	cache->role = GetUserId();
	cache->job = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt, name);
	cache->result = OidIsValid(owner) && may_see(owner);
	PG_RETURN_BOOL(cache->result);
}

/*
 * eoingest_internal.mask_options(options): the values of credential properties
 * replaced by ********, for roles that are not the job's owner.
 */
Datum
eoingest_mask_options(PG_FUNCTION_ARGS)
{
	Jsonb	   *options = PG_GETARG_JSONB_P(0);
	JsonbParseState *state = NULL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbValue *result = NULL;
	JsonbIteratorToken tok;
	bool		secret = false;

	if (!JB_ROOT_IS_OBJECT(options))
		PG_RETURN_JSONB_P(options);
	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			secret = eoi_kafka_property_is_secret(pnstrdup(v.val.string.val, v.val.string.len));
		else if (tok == WJB_VALUE && secret)
		{
			v.type = jbvString;
			v.val.string.val = "********";
			v.val.string.len = 8;
		}
		result = pushJsonbValue(&state, tok, tok < WJB_BEGIN_ARRAY ? &v : NULL);
	}
	PG_RETURN_JSONB_P(JsonbValueToJsonb(result));
}

/*
 * The workers' shared-memory status, for job_status: one row per attached
 * worker, and one per worker the launcher could not start for want of a
 * slot (state 'waiting', no pid, the reason as its last error).
 */
Datum
eoingest_worker_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	EoiWorkerSlot *copy;
	EoiWaitingWorker *waiting;
	char		wait_message[EOI_WAIT_REASONS][EOI_ERROR_LEN];
	int			nslots;
	int			nwaiting = 0;
	EoiDbLauncher *db;

	eoi_materialize_srf(fcinfo, &store, &tupdesc);

	/* Copy under the lock, build tuples without it. */
	nslots = eoi_shared->nslots;
	copy = palloc(sizeof(EoiWorkerSlot) * nslots);
	waiting = palloc(sizeof(EoiWaitingWorker) * EOI_MAX_WAITING);
	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	memcpy(copy, eoi_shared->slots, sizeof(EoiWorkerSlot) * nslots);
	for (int i = 0; i < eoi_shared->nwaiting; i++)
		if (eoi_shared->waiting[i].database == MyDatabaseId)
			waiting[nwaiting++] = eoi_shared->waiting[i];
	db = eoi_db_launcher(MyDatabaseId);
	if (db != NULL)
		memcpy(wait_message, db->wait_message, sizeof(wait_message));
	else
		nwaiting = 0;			/* its launcher is gone: nobody keeps the list */
	LWLockRelease(eoi_shared->lock);

	for (int i = 0; i < nslots; i++)
	{
		EoiWorkerSlot *s = &copy[i];
		Datum		values[15];
		bool		nulls[15] = {false};

		if (!s->in_use || s->database != MyDatabaseId || s->pid == 0 || !may_see(s->owner))
			continue;
		values[0] = Int32GetDatum(s->job_id);
		values[1] = Int32GetDatum(s->worker_index);
		values[2] = Int32GetDatum(s->pid);
		values[3] = CStringGetTextDatum(worker_state_name(s->state));
		values[4] = TimestampTzGetDatum(s->started_at);
		values[5] = Int64GetDatum((int64) s->messages);
		values[6] = Int64GetDatum((int64) s->rows);
		values[7] = Int64GetDatum((int64) s->bytes);
		values[8] = Int64GetDatum((int64) s->batches);
		values[9] = TimestampTzGetDatum(s->last_commit_at);
		nulls[9] = (s->last_commit_at == 0);
		values[10] = CStringGetTextDatum(s->last_error);
		nulls[10] = (s->last_error[0] == '\0');
		values[11] = TimestampTzGetDatum(s->last_error_at);
		nulls[11] = (s->last_error_at == 0);
		values[12] = Int64GetDatum((int64) s->dead_letters);
		values[13] = Float8GetDatum(messages_per_second(s));
		values[14] = Int64GetDatum(s->heap_bytes);
		nulls[14] = (s->heap_bytes <= 0);	/* not sampled yet, or unknown */
		/* the definitions before 0.5 have fewer columns */
		Assert(tupdesc->natts <= lengthof(values));
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}

	for (int i = 0; i < nwaiting; i++)
	{
		EoiWaitingWorker *wt = &waiting[i];
		Datum		values[15] = {0};
		bool		nulls[15];
		bool		started = false;

		if (!may_see(wt->owner))
			continue;
		/* started since the launcher's last tick: the slot's row stands for it */
		for (int k = 0; k < nslots && !started; k++)
			started = eoi_slot_is_job(&copy[k], wt->job_id) &&
				copy[k].worker_index == wt->worker_index;
		if (started)
			continue;
		memset(nulls, true, sizeof(nulls));
		values[0] = Int32GetDatum(wt->job_id);
		nulls[0] = false;
		values[1] = Int32GetDatum(wt->worker_index);
		nulls[1] = false;
		values[3] = CStringGetTextDatum(worker_state_name(EOI_WORKER_WAITING));
		nulls[3] = false;
		values[10] = CStringGetTextDatum(wait_message[wt->reason]);
		nulls[10] = false;
		values[11] = TimestampTzGetDatum(wt->since);
		nulls[11] = false;
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
