/*-------------------------------------------------------------------------
 *
 * positions.c
 *	  eoingest.reset_offsets(): the owner chooses where a stopped job
 *	  resumes.  eoingest never moves a job's offsets by itself except as
 *	  the rows they account for commit; this is the one way to skip or
 *	  re-read, and it is explicit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/shmem.h"
#include "kafka/kafka.h"
#include "kafka/positions.h"
#include "store/fence.h"
#include "store/job.h"
#include "store/offsets.h"

PG_FUNCTION_INFO_V1(eoingest_reset_offsets);

#define RESET_TIMEOUT_MS 10000

/*
 * Explicit positions of one topic from `to`: {"partition": offset, ...}
 * for a job of one topic, or {"topic": {"partition": offset}, ...}.
 */
static void
positions_from_json(const char *to, const EoiJob *job, const char *topic, int count,
					int64 *offsets)
{
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(to)));
	JsonbValue	nested;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int32		partition = -1;

	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("explicit offsets must be a JSON object of partition to offset"),
				 errhint("For example: '{\"0\": 1200, \"1\": 980}'.")));
	if (getKeyJsonValueFromContainer(&jb->root, topic, strlen(topic), &nested) != NULL &&
		nested.type == jbvBinary)
		jb = JsonbValueToJsonb(&nested);
	else if (list_length(job->topics) > 1)
		return;					/* nothing for this topic */
	it = JsonbIteratorInit(&jb->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			char	   *key = pnstrdup(v.val.string.val, v.val.string.len);
			char	   *end;
			long		p = strtol(key, &end, 10);

			if (*end != '\0' || p < 0 || p >= count)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("\"%s\" is not a partition of the topic, which has %d", key, count)));
			partition = (int32) p;
		}
		else if (tok == WJB_VALUE)
		{
			int64		offset;

			if (v.type != jbvNumeric)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("the offset of partition %d must be a number", partition)));
			offset = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v.val.numeric)));
			if (offset < 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("the offset of partition %d must not be negative", partition)));
			offsets[partition] = offset;
		}
	}
}

/*
 * Where the partitions of a topic resume.  A Debezium source position kept
 * with an old offset (cdcreplay.c) is forgotten: from the new one, events
 * are applied again as they come.
 */
static void
store_positions(const EoiJob *job, const char *topic, int count, const int64 *offsets)
{
	EoiSavedUser saved;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	for (int32 p = 0; p < count; p++)
	{
		Oid			types[4] = {TEXTOID, TEXTOID, INT4OID, INT8OID};
		Datum		args[4] = {CStringGetTextDatum(job->name), CStringGetTextDatum(topic),
		Int32GetDatum(p), Int64GetDatum(offsets[p])};

		if (offsets[p] < 0)
			continue;
		if (SPI_execute_with_args("INSERT INTO eoingest.offsets (job, topic, \"partition\", next_offset)"
								  " VALUES ($1, $2, $3, $4)"
								  " ON CONFLICT (job, topic, \"partition\")"
								  " DO UPDATE SET next_offset = excluded.next_offset, updated_at = pg_catalog.now(),"
								  "     source_lsn = NULL",
								  4, types, args, NULL, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not update eoingest.offsets");
		if (SPI_execute_with_args("DELETE FROM eoingest.source_positions"
								  " WHERE job = $1 AND topic = $2 AND \"partition\" = $3",
								  3, types, args, NULL, false, 0) != SPI_OK_DELETE)
			elog(ERROR, "could not update eoingest.source_positions");
	}
	SPI_finish();
	eoi_restore_user(&saved);
}

/*
 * commit_to_kafka: the consumer group shows where the job will resume, at
 * once rather than after its next batch.  Before our transaction commits,
 * like any reply from Kafka: should it roll back, the group is ahead of the
 * stored offsets until the job's next commit, which only monitoring sees.
 */
static void
mirror_positions(EoiKafka *kafka, const EoiJob *job, const char *topic, int count,
				 const int64 *offsets)
{
	EoiPosition *positions = palloc(sizeof(EoiPosition) * Max(count, 1));
	int			n = 0;

	for (int32 p = 0; p < count; p++)
	{
		if (offsets[p] < 0)
			continue;
		positions[n].topic = topic;
		positions[n].partition = p;
		positions[n].offset = offsets[p];
		n++;
	}
	eoi_kafka_commit_group(kafka, job->name, positions, n, eoi_fence_metadata());
	pfree(positions);
}

/*
 * Where the job's workers would read one of its topics now, per partition
 * (-1: a partition the job does not take): the stored position, or for a
 * partition without one, where a first start would begin (start_offset),
 * or, once the job has begun, the log's start (a partition or topic added
 * later), as partitions.c decides.  Reads, stores nothing.
 */
int64 *
eoi_positions_to_read(EoiKafka *kafka, const EoiJob *job, const char *topic, int *count)
{
	bool		started = eoi_offsets_any(job);
	int64	   *first = NULL;
	EoiPosition *stored;
	int			nstored;
	int64	   *offsets;

	if (started)
	{
		*count = eoi_kafka_partition_count(kafka, topic, RESET_TIMEOUT_MS);
		if (*count < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("Kafka topic \"%s\" does not exist", topic)));
	}
	else
		first = eoi_positions_for(kafka, job, topic, job->start_offset, count);
	stored = palloc(sizeof(EoiPosition) * Max(*count, 1));
	nstored = eoi_offsets_read(job, topic, stored, *count);
	offsets = palloc(sizeof(int64) * Max(*count, 1));
	for (int32 p = 0; p < *count; p++)
	{
		int64		low,
					high;

		offsets[p] = -1;
		if (job->partitions != NIL && !list_member_int(job->partitions, p))
			continue;
		for (int i = 0; i < nstored && offsets[p] < 0; i++)
			if (stored[i].partition == p)
				offsets[p] = stored[i].offset;
		if (offsets[p] < 0 && first != NULL && first[p] >= 0)
			offsets[p] = first[p];
		if (offsets[p] < 0)
		{
			eoi_kafka_watermarks(kafka, topic, p, &low, &high, RESET_TIMEOUT_MS);
			offsets[p] = low;
		}
	}
	return offsets;
}

/*
 * Where `to` says one topic of the job should resume, per partition (-1:
 * unchanged): 'earliest', 'latest', a timestamp, or explicit offsets.
 * Used by reset_offsets and for a job's first start (start_offset).
 */
int64 *
eoi_positions_for(EoiKafka *kafka, const EoiJob *job, const char *topic, const char *to, int *count)
{
	int64	   *offsets;

	*count = eoi_kafka_partition_count(kafka, topic, RESET_TIMEOUT_MS);
	if (*count < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("Kafka topic \"%s\" does not exist", topic)));
	offsets = palloc(sizeof(int64) * Max(*count, 1));
	for (int32 p = 0; p < *count; p++)
		offsets[p] = -1;

	if (to[0] == '{')
		positions_from_json(to, job, topic, *count, offsets);
	else if (strcmp(to, "earliest") == 0 || strcmp(to, "latest") == 0)
	{
		for (int32 p = 0; p < *count; p++)
		{
			int64		low,
						high;

			eoi_kafka_watermarks(kafka, topic, p, &low, &high, RESET_TIMEOUT_MS);
			offsets[p] = (to[0] == 'e') ? low : high;
		}
	}
	else
	{
		TimestampTz ts = DatumGetTimestampTz(DirectFunctionCall3(timestamptz_in,
																 CStringGetDatum(to),
																 ObjectIdGetDatum(InvalidOid),
																 Int32GetDatum(-1)));
		int64		ms = (ts + (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY) / 1000;

		for (int32 p = 0; p < *count; p++)
			offsets[p] = eoi_kafka_offset_for_time(kafka, topic, p, ms, RESET_TIMEOUT_MS);
	}
	/* a job with explicit partitions positions only those */
	for (int32 p = 0; p < *count; p++)
		if (job->partitions != NIL && !list_member_int(job->partitions, p))
			offsets[p] = -1;
	return offsets;
}

/*
 * eoingest.reset_offsets(job, to): to is 'earliest', 'latest', a timestamp
 * (the first record at or after it), or a JSON object of explicit offsets
 * per partition, {"0": 1200} (for a job of several topics, per topic:
 * {"orders": {"0": 1200}}); partitions not named keep theirs.  Only for a
 * job that is not running.  Returns the number of partitions set.
 */
Datum
eoingest_reset_offsets(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *to = text_to_cstring(PG_GETARG_TEXT_PP(1));
	EoiJob	   *job = eoi_job_load_by_name(name);
	EoiKafka   *kafka;
	volatile int set = 0;

	eoi_check_primary();
	eoi_check_job_owner(name, job->owner);
	/*
	 * A slot without a process is a worker that has exited, or one that has
	 * yet to attach and will then read the job stopped: neither consumes.
	 * So the job counts as stopped once job_status shows it so.
	 */
	if (strcmp(job->state, "running") == 0 || eoi_job_has_slot(job->id, true))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("eoingest job \"%s\" is running", name),
				 errhint("Stop it first with eoingest.stop_job('%s') in a transaction of its own: stop_job returns once the transaction has committed and the job's workers have exited.", name)));

	kafka = eoi_kafka_open(job, 0);
	PG_TRY();
	{
		ListCell   *lc;

		eoi_kafka_resolve_topics(kafka, job, RESET_TIMEOUT_MS);
		foreach(lc, job->topics)
		{
			const char *topic = lfirst(lc);
			int			count;
			int64	   *offsets = eoi_positions_for(kafka, job, topic, to, &count);

			store_positions(job, topic, count, offsets);
			for (int32 p = 0; p < count; p++)
				set += (offsets[p] >= 0);
			if (job->commit_to_kafka)
				mirror_positions(kafka, job, topic, count, offsets);
		}
	}
	PG_FINALLY();
	{
		eoi_kafka_close(kafka);
	}
	PG_END_TRY();
	PG_RETURN_INT32(set);
}

/*
 * Check a start_offset at create_job: earliest, latest, a JSON object of
 * explicit offsets, or a timestamp.
 */
void
eoi_check_start_offset(const char *start_offset)
{
	MemoryContext cxt = CurrentMemoryContext;

	if (strcmp(start_offset, "earliest") == 0 || strcmp(start_offset, "latest") == 0)
		return;
	PG_TRY();
	{
		if (start_offset[0] == '{')
		{
			Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(start_offset)));

			if (!JB_ROOT_IS_OBJECT(jb))
				elog(ERROR, "not an object");
		}
		else
			(void) DirectFunctionCall3(timestamptz_in, CStringGetDatum(start_offset),
									   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized start_offset \"%s\"", start_offset),
				 errhint("Choose earliest, latest, a timestamp, or explicit offsets such as '{\"0\": 1200}'.")));
	}
	PG_END_TRY();
}

/* ---- wait_for_catchup ---- */

PG_FUNCTION_INFO_V1(eoingest_wait_for_catchup);

/* The log end of each partition of one topic, at the call. */
typedef struct TopicEnds
{
	const char *topic;
	int			count;
	int64	   *ends;
} TopicEnds;

/* Have all partitions' stored offsets reached these ends? */
static bool
caught_up(const EoiJob *job, const TopicEnds *t)
{
	EoiPosition *stored = palloc(sizeof(EoiPosition) * Max(t->count, 1));
	bool		done = true;
	int			n;

	/* Each look needs a snapshot that sees the worker's latest commits. */
	PushActiveSnapshot(GetLatestSnapshot());
	n = eoi_offsets_read(job, t->topic, stored, t->count);
	PopActiveSnapshot();

	for (int32 p = 0; p < t->count && done; p++)
	{
		int64		at = -1;

		if (job->partitions != NIL && !list_member_int(job->partitions, p))
			continue;			/* another job's partition */
		for (int i = 0; i < n; i++)
			if (stored[i].partition == p)
				at = stored[i].offset;
		/* an empty partition needs nothing; a partition never read is behind */
		if (t->ends[p] > 0 && at < t->ends[p])
			done = false;
	}
	pfree(stored);
	return done;
}

/*
 * eoingest.wait_for_catchup(job, timeout): true once the job has committed
 * everything up to the log end as it was at the call, false when the
 * timeout passes first.  A partition whose last record is a transaction
 * marker ends one past the last record a job can consume: the worker stores
 * the position past the marker (store_positions_past_markers in worker.c).
 */
Datum
eoingest_wait_for_catchup(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	Interval   *timeout = PG_GETARG_INTERVAL_P(1);
	EoiJob	   *job = eoi_job_load_by_name(name);
	int			ntopics;
	TopicEnds  *volatile topics = NULL;
	TimestampTz deadline;
	EoiKafka   *kafka;

	eoi_check_primary();
	eoi_check_job_owner(name, job->owner);
	deadline = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval,
													   TimestampTzGetDatum(GetCurrentTimestamp()),
													   IntervalPGetDatum(timeout)));
	kafka = eoi_kafka_open(job, 0);
	PG_TRY();
	{
		ListCell   *lc;

		eoi_kafka_resolve_topics(kafka, job, RESET_TIMEOUT_MS);
		topics = palloc0(sizeof(TopicEnds) * Max(list_length(job->topics), 1));
		foreach(lc, job->topics)
		{
			TopicEnds  *t = &topics[foreach_current_index(lc)];

			t->topic = lfirst(lc);
			t->count = Max(eoi_kafka_partition_count(kafka, t->topic, RESET_TIMEOUT_MS), 0);
			t->ends = palloc0(sizeof(int64) * Max(t->count, 1));
			for (int32 p = 0; p < t->count; p++)
			{
				int64		low;

				eoi_kafka_watermarks(kafka, t->topic, p, &low, &t->ends[p], RESET_TIMEOUT_MS);
			}
		}
	}
	PG_FINALLY();
	{
		eoi_kafka_close(kafka);
	}
	PG_END_TRY();
	ntopics = list_length(job->topics);

	for (;;)
	{
		bool		done = true;

		for (int i = 0; i < ntopics && done; i++)
			done = caught_up(job, &topics[i]);
		if (done)
			PG_RETURN_BOOL(true);
		if (GetCurrentTimestamp() >= deadline)
			PG_RETURN_BOOL(false);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 100L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

PG_FUNCTION_INFO_V1(eoingest_job_topics);

/*
 * eoingest.job_topics(name): the topics the job reads now, with their
 * partition counts: the topics it names, or those its pattern matches now
 * (which its workers take up within 10 s).  A named topic that does not
 * exist (yet) has NULL partitions.
 */
Datum
eoingest_job_topics(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	EoiJob	   *job = eoi_job_load_by_name(name);
	EoiKafka   *kafka;

	eoi_check_job_owner(name, job->owner);
	InitMaterializedSRF(fcinfo, 0);
	kafka = eoi_kafka_open(job, 0);
	PG_TRY();
	{
		ListCell   *lc;

		eoi_kafka_resolve_topics(kafka, job, RESET_TIMEOUT_MS);
		foreach(lc, job->topics)
		{
			int			count = eoi_kafka_partition_count(kafka, lfirst(lc), RESET_TIMEOUT_MS);
			Datum		values[2];
			bool		nulls[2] = {false, count < 0};

			values[0] = CStringGetTextDatum(lfirst(lc));
			values[1] = Int32GetDatum(count);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	PG_FINALLY();
	{
		eoi_kafka_close(kafka);
	}
	PG_END_TRY();
	return (Datum) 0;
}
