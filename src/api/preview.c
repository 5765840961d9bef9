/*-------------------------------------------------------------------------
 *
 * preview.c
 *	  eoingest.preview_job: a dry run.  Reads up to N messages where the
 *	  job's workers would read next, with the job's Kafka settings, and
 *	  decodes each as the job would, as its owner, into the columns of its
 *	  target; returns each message's row as jsonb, or the error decoding
 *	  it raises, with its position.  Writes nothing and moves no offset.
 *
 *	  What a dry run cannot show without writing is left to the write:
 *	  the defaults of the columns the messages do not fill, constraints,
 *	  triggers, and which rows a key's later records replace.
 *
 *	  With envelope debezium, each event's result is the change it makes
 *	  (cdc.c's eoi_cdc_preview_event): its op and the rows it upserts,
 *	  deletes or appends, as the text their columns will read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "api/api_internal.h"
#include "apply/target.h"
#include "base/txn.h"
#include "envelope/cdc.h"
#include "format/decode.h"
#include "kafka/kafka.h"
#include "kafka/positions.h"
#include "store/job.h"

PG_FUNCTION_INFO_V1(eoingest_preview_job);

#define PREVIEW_MAX_MESSAGES	10000
#define PREVIEW_MAX_TIMEOUT_MS	300000
#define PREVIEW_COLUMNS 6
#define PREVIEW_METADATA_TIMEOUT_MS 10000

/* Takes the decoder's fields as the values of the target's columns. */
typedef struct PreviewWriter
{
	EoiRowWriter writer;
	int			ncolumns;
	FmgrInfo   *in;				/* the columns' input functions */
	Oid		   *typioparams;
	int32	   *typmods;
	Datum	   *values;
	bool	   *nulls;
} PreviewWriter;

static void
preview_field(EoiRowWriter *writer, int col, const char *data, size_t len)
{
	PreviewWriter *w = (PreviewWriter *) writer;

	w->nulls[col] = (data == NULL);
	w->values[col] = InputFunctionCall(&w->in[col], data ? pnstrdup(data, len) : NULL,
									   w->typioparams[col], w->typmods[col]);
}

static void
preview_datum(EoiRowWriter *writer, int col, Datum value)
{
	PreviewWriter *w = (PreviewWriter *) writer;

	w->values[col] = value;
	w->nulls[col] = false;
}

static void
preview_end_row(EoiRowWriter *writer)
{
}

/* What decoding one message needs, and what it made of it. */
typedef struct PreviewStep
{
	const EoiJob *job;
	EoiColumns *cols;
	PreviewWriter *writer;
	TupleDesc	desc;			/* the columns the messages fill, blessed */
	ExprContext *econtext;
	MemoryContext scratch;		/* what decoding one message allocates */
	rd_kafka_message_t *msg;
	int			index;			/* its place among the messages read */
	EoiCdcPreview *cdc;			/* envelope debezium: the dry run of its events */
	Jsonb	   *row;			/* in scratch; NULL: the message makes no row */
} PreviewStep;

/* Decode step->msg into step->row; run in a subtransaction. */
static void
decode_one(void *arg)
{
	PreviewStep *step = arg;
	PreviewWriter *w = step->writer;
	HeapTuple	tuple;
	Datum		json;

	step->row = NULL;
	MemoryContextSwitchTo(step->scratch);	/* eoi_try_subxact switches back */
	eoi_check_message_size(step->job, step->msg, rd_kafka_topic_name(step->msg->rkt));
	if (step->msg->payload == NULL)
		eoi_refuse_tombstone();		/* mode upsert would delete the key's row */
	for (int c = 0; c < w->ncolumns; c++)
		w->nulls[c] = true;
	if (!eoi_decode_kafka_message(step->cols, step->msg, rd_kafka_topic_name(step->msg->rkt), false,
								  &w->writer, step->econtext))
		return;
	tuple = heap_form_tuple(step->desc, w->values, w->nulls);
	json = DirectFunctionCall1(row_to_json, HeapTupleGetDatum(tuple));
	step->row = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
												   CStringGetDatum(TextDatumGetCString(json))));
}

/* A writer and a row type for the columns `cols` fills in `rel`. */
static PreviewWriter *
preview_writer(Relation rel, EoiColumns *cols, TupleDesc *desc)
{
	PreviewWriter *w = palloc0(sizeof(PreviewWriter));
	TupleDesc	d = CreateTemplateTupleDesc(Max(cols->ncolumns, 1));

	w->writer.field = preview_field;
	w->writer.datum = preview_datum;
	w->writer.end_row = preview_end_row;
	w->ncolumns = cols->ncolumns;
	w->in = palloc0(sizeof(FmgrInfo) * Max(cols->ncolumns, 1));
	w->typioparams = palloc0(sizeof(Oid) * Max(cols->ncolumns, 1));
	w->typmods = palloc0(sizeof(int32) * Max(cols->ncolumns, 1));
	w->values = palloc0(sizeof(Datum) * Max(cols->ncolumns, 1));
	w->nulls = palloc0(sizeof(bool) * Max(cols->ncolumns, 1));
	for (int c = 0; c < cols->ncolumns; c++)
	{
		AttrNumber	attnum = attnameAttNum(rel, cols->colnames[c], false);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
		Oid			infunc;

		getTypeInputInfo(att->atttypid, &infunc, &w->typioparams[c]);
		fmgr_info(infunc, &w->in[c]);
		w->typmods[c] = att->atttypmod;
		TupleDescInitEntry(d, (AttrNumber) (c + 1), cols->colnames[c], att->atttypid,
						   att->atttypmod, 0);
	}
	*desc = BlessTupleDesc(d);
	return w;
}

/* The kinds of job a dry run can decode: rows straight into a target. */
static void
check_previewable(const EoiJob *job)
{
	if (job->transform != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("eoingest.preview_job cannot preview job \"%s\": it has a transform", job->name),
				 errdetail("A transform's rows exist only once its SQL runs over a batch."),
				 errhint("Run the transform's query over eoingest.batch() in a transaction you roll back.")));
	if (eoi_target_is_template(job->target))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("eoingest.preview_job cannot preview job \"%s\": its target is a template", job->name),
				 errdetail("Each topic's messages go into a table of their own (%s).", job->target),
				 errhint("Preview a job of the same settings whose target is one of those tables.")));
}

/* Apply step->msg as a change event, nothing written; run in a subtransaction. */
static void
preview_event(void *arg)
{
	PreviewStep *step = arg;

	step->row = NULL;
	MemoryContextSwitchTo(step->scratch);	/* eoi_try_subxact switches back */
	eoi_check_message_size(step->job, step->msg, rd_kafka_topic_name(step->msg->rkt));
	step->row = eoi_cdc_preview_event(step->cdc, step->index);
}

/*
 * Assign the job's partitions that have messages past where its workers
 * would read them, there, and poll until `max` messages came, or as many
 * bytes as a batch of the job holds (batch_max_bytes), or they were read
 * to the ends the partitions had, or the timeout passed.  *n counts the messages
 * in `messages` as they come: the caller hands them back even on an error.
 */
static void
read_messages(EoiKafka *kafka, const EoiJob *job, rd_kafka_message_t **messages, int max,
			  int timeout_ms, volatile int *n)
{
	List	   *positions = NIL;
	EoiPosition *assign;
	ListCell   *lc;
	int			i = 0;
	int64		bytes = 0;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);

	foreach(lc, job->topics)
	{
		const char *topic = lfirst(lc);
		int			count;
		int64	   *offsets = eoi_positions_to_read(kafka, job, topic, &count);

		for (int32 p = 0; p < count; p++)
		{
			EoiPosition *pos;
			int64		low,
						high;

			if (offsets[p] < 0)
				continue;
			/* a partition with nothing to read is not waited for */
			eoi_kafka_watermarks(kafka, topic, p, &low, &high, PREVIEW_METADATA_TIMEOUT_MS);
			if (offsets[p] >= high)
				continue;
			pos = palloc(sizeof(EoiPosition));
			pos->topic = topic;
			pos->partition = p;
			pos->offset = offsets[p];
			positions = lappend(positions, pos);
		}
	}
	if (positions == NIL)
		return;
	assign = palloc(sizeof(EoiPosition) * Max(list_length(positions), 1));
	foreach(lc, positions)
		assign[i++] = *(EoiPosition *) lfirst(lc);
	eoi_kafka_assign(kafka, assign, i);
	/* a poll that reaches the partitions' ends returns, not waits */
	eoi_kafka_end_polls_at_watermark(kafka, true);

	while (*n < max && bytes < job->batch_max_bytes)
	{
		long		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		int			got;

		if (remaining <= 0)
			break;
		got = eoi_kafka_poll(kafka, messages + *n, max - *n, job->batch_max_bytes - bytes,
							 (int) Min(remaining, 1000L));
		for (int k = *n; k < *n + got; k++)
			bytes += messages[k]->len + messages[k]->key_len;
		*n += got;
		CHECK_FOR_INTERRUPTS();
		if (got == 0 && eoi_kafka_caught_up(kafka))
			break;
	}
}

/* The Kafka client of a dry run and the messages it holds. */
typedef struct PreviewRead
{
	EoiKafka   *kafka;
	rd_kafka_message_t **messages;
	volatile int n;
} PreviewRead;

/*
 * Hand the messages back and close the client: at the end, and on an
 * error or a FATAL exit (rd_kafka_destroy() waits for every message).
 */
static void
preview_cleanup(int code, Datum arg)
{
	PreviewRead *r = (PreviewRead *) DatumGetPointer(arg);

	for (int i = 0; i < r->n; i++)
		rd_kafka_message_destroy(r->messages[i]);
	r->n = 0;
	eoi_kafka_drop_polled(r->kafka);
	eoi_kafka_close(r->kafka);
	r->kafka = NULL;
}

/* One result row: the message's position, and its row or its error. */
static void
put_result(ReturnSetInfo *rsinfo, rd_kafka_message_t *msg, Jsonb *row, ErrorData *edata)
{
	Datum		values[PREVIEW_COLUMNS];
	bool		nulls[PREVIEW_COLUMNS] = {0};

	values[0] = CStringGetTextDatum(rd_kafka_topic_name(msg->rkt));
	values[1] = Int32GetDatum(msg->partition);
	values[2] = Int64GetDatum(msg->offset);
	values[3] = row ? JsonbPGetDatum(row) : (Datum) 0;
	nulls[3] = (edata != NULL || row == NULL);
	values[4] = edata ? CStringGetTextDatum(edata->message) : (Datum) 0;
	nulls[4] = (edata == NULL);
	values[5] = edata ? CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode)) : (Datum) 0;
	nulls[5] = (edata == NULL);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* Decode the messages read as the job does, as its owner, one result each. */
static void
decode_messages(ReturnSetInfo *rsinfo, const EoiJob *job, PreviewRead *r)
{
	EoiSavedUser saved;
	EoiMapping	mapping = eoi_job_mapping(job);
	EState	   *estate = CreateExecutorState();
	Relation	rel;
	PreviewStep step = {0};
	EoiBatch	batch = {r->messages, r->n, NULL, job->format, job->key_format};

	step.job = job;
	eoi_become_job_owner(job, &saved);
	rel = job->target != NULL ? eoi_open_job_target(job, AccessShareLock) : NULL;
	if (job->envelope == EOI_ENVELOPE_DEBEZIUM)
		step.cdc = eoi_cdc_preview_begin(job, &batch);
	else
	{
		step.cols = eoi_columns_for(rel, &mapping, estate);
		step.writer = preview_writer(rel, step.cols, &step.desc);
	}
	step.econtext = GetPerTupleExprContext(estate);
	step.scratch = AllocSetContextCreate(CurrentMemoryContext, "eoingest preview message",
										 ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < r->n; i++)
	{
		ErrorData  *edata;

		step.msg = r->messages[i];
		step.index = i;
		edata = eoi_try_subxact(step.cdc != NULL ? preview_event : decode_one, &step);
		if (edata != NULL && (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
							  edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN))
			ReThrowError(edata);
		put_result(rsinfo, step.msg, edata ? NULL : step.row, edata);
		if (edata != NULL)
			FreeErrorData(edata);
		ResetExprContext(step.econtext);
		MemoryContextReset(step.scratch);
		CHECK_FOR_INTERRUPTS();
	}
	if (step.cdc != NULL)
		eoi_cdc_preview_end(step.cdc);
	if (rel != NULL)
		table_close(rel, AccessShareLock);
	FreeExecutorState(estate);
	eoi_restore_user(&saved);
}

/*
 * eoingest.preview_job(name, messages, timeout): the job's owner only.
 * Decodes as the owner, with the job's search_path, under
 * SECURITY_RESTRICTED_OPERATION, as the workers do.
 */
Datum
eoingest_preview_job(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *name;
	int32		max;
	int64		timeout_ms;
	EoiJob	   *job;
	PreviewRead r = {0};

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("eoingest.preview_job takes no NULL argument")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	max = PG_GETARG_INT32(1);
	timeout_ms = (int64) (DatumGetFloat8(DirectFunctionCall2(interval_part, CStringGetTextDatum("epoch"),
															 PG_GETARG_DATUM(2))) * 1000.0);
	if (max < 1 || max > PREVIEW_MAX_MESSAGES)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("messages must be between 1 and %d, not %d", PREVIEW_MAX_MESSAGES, max)));
	if (timeout_ms < 1000 || timeout_ms > PREVIEW_MAX_TIMEOUT_MS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("timeout must be between 1 second and %d minutes", PREVIEW_MAX_TIMEOUT_MS / 60000)));

	job = eoi_job_load_by_name(name);
	eoi_check_job_owner(name, job->owner);
	check_previewable(job);
	InitMaterializedSRF(fcinfo, 0);

	r.messages = palloc0(sizeof(rd_kafka_message_t *) * max);
	r.kafka = eoi_kafka_open(job, 0);
	PG_ENSURE_ERROR_CLEANUP(preview_cleanup, PointerGetDatum(&r));
	{
		eoi_kafka_resolve_topics(r.kafka, job, PREVIEW_METADATA_TIMEOUT_MS);
		read_messages(r.kafka, job, r.messages, max, (int) timeout_ms, &r.n);
		decode_messages(rsinfo, job, &r);
	}
	PG_END_ENSURE_ERROR_CLEANUP(preview_cleanup, PointerGetDatum(&r));
	preview_cleanup(0, PointerGetDatum(&r));
	return (Datum) 0;
}
