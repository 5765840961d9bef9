/*-------------------------------------------------------------------------
 *
 * sink.c
 *	  Writing a batch into PostgreSQL, inside the caller's transaction: the
 *	  writer of rows, and the isolation of the records that fail.
 *
 * Without a transform, the messages are decoded into COPY text-format
 * lines and fed to the server's own COPY FROM machinery through a data
 * source callback: the batch goes in with COPY's multi-insert buffering,
 * and gets its type input, defaults, constraints, triggers and partition
 * routing.  Privileges are checked as COPY does, as the job's owner.
 * (direct.c writes tuples straight into the table where it may, upsert.c
 * keyed rows.)
 *
 * With a transform, the job's SQL statement runs once over the batch,
 * which it reads with eoingest.batch().
 *
 * With on_error dead_letter, a batch that fails is written again in
 * slices, each its own attempt (attempt.c) in a subtransaction, until the
 * records that fail are alone; they are kept in eoingest.dead_letters.
 * The writer is the caller's: the rows' (eoi_sink_write_rows) or an
 * envelope's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "commands/copy.h"
#include "commands/copyfrom_internal.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/resowner.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "apply/attempt.h"
#include "apply/direct.h"
#include "apply/errclass.h"
#include "apply/evolve.h"
#include "apply/shape.h"
#include "apply/sink.h"
#include "apply/target.h"
#include "apply/upsert.h"
#include "base/txn.h"
#include "format/avro.h"
#include "format/decode.h"
#include "store/deadletter.h"
#include "store/job.h"

/* For error context: which message is being decoded or copied. */
typedef struct MessagePosition
{
	EoiBatch   *batch;
	int			current;		/* index while decoding, or -1 */
	CopyFromState cstate;		/* while copying: line N is message lines[N-1] */
	ErrorContextCallback *self; /* this callback's entry in the stack */
	int		   *lines;			/* the message of each line (CSV headers have none) */
	int			nlines;
} MessagePosition;

/*
 * Is COPY working on a line (reading, converting, inserting or flushing
 * it), as opposed to before or after its lines (statement triggers)?  Its
 * own context callback is then on the stack above ours.
 */
static bool
copy_is_on_a_line(MessagePosition *mc)
{
	for (ErrorContextCallback *e = error_context_stack; e != NULL && e != mc->self; e = e->previous)
		if (e->callback == CopyFromErrorCallback)
			return true;
	return false;
}

static void
message_error_callback(void *arg)
{
	MessagePosition *mc = arg;
	int			i = mc->current;

	if (mc->cstate != NULL)
		i = (mc->cstate->cur_lineno > 0 && mc->cstate->cur_lineno <= mc->nlines &&
			 copy_is_on_a_line(mc)) ?
			mc->lines[mc->cstate->cur_lineno - 1] : -1;
	eoi_message_errcontext(mc->batch, i);
}

/* direct.c's report of the message it works on. */
static void
set_message_position(void *arg, int message)
{
	((MessagePosition *) arg)->current = message;
}

/* COPY's data source, which takes no argument: the attempt's lines. */
static int
copy_read_batch(void *outbuf, int minread, int maxread)
{
	StringInfo	lines = eoi_attempt->copy_lines;
	int			avail = lines->len - eoi_attempt->copy_pos;
	int			n = Min(avail, maxread);

	memcpy(outbuf, lines->data + eoi_attempt->copy_pos, n);
	eoi_attempt->copy_pos += n;
	return n;
}

/*
 * For tests: refuse to let the COPY text grow past
 * eoingest.test_batch_text_limit, with the error enlargeStringInfo raises
 * at MaxAllocSize, so that a few hundred kilobytes behave as a gigabyte.
 */
static void
check_test_text_limit(StringInfo lines)
{
	if (eoingest_test_batch_text_limit > 0 && lines->len > eoingest_test_batch_text_limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("out of memory"),
				 errdetail("Cannot enlarge string buffer containing %d bytes by %d more bytes.",
						   eoingest_test_batch_text_limit,
						   lines->len - eoingest_test_batch_text_limit)));
}

static void
decode_batch(EoiBatch *batch, EoiColumns *cols, StringInfo lines,
			 ExprContext *econtext, MessagePosition *mc)
{
	EoiCopyWriter cw;

	eoi_copy_writer_init(&cw, lines);
	mc->lines = palloc(sizeof(int) * Max(batch->n, 1));
	mc->nlines = 0;
	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];

		CHECK_FOR_INTERRUPTS();
		mc->current = i;
		if (msg->payload == NULL)
			eoi_refuse_tombstone();
		if (eoi_decode_kafka_message(cols, msg, eoi_message_topic(batch, i), false, &cw.writer, econtext))
			mc->lines[mc->nlines++] = i;
		ResetExprContext(econtext);
		check_test_text_limit(lines);
	}
	mc->current = -1;
}

/*
 * The COPY text of a batch is one buffer, which cannot grow past
 * MaxAllocSize (54000 from enlargeStringInfo).  When it fails to take
 * message N > 1, the batch is too large, not message N: say so with a
 * resource error (class 53), which no record is blamed for and on which the
 * worker retries with smaller batches.  Called in PG_CATCH.
 */
static void
batch_too_large(EoiBatch *batch, MessagePosition *mc, MemoryContext cxt,
				ErrorContextCallback *outer_context)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	FlushErrorState();
	/* The error is the batch's, not the message's that was being decoded. */
	error_context_stack = outer_context;
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("batch of %d messages is too large to copy at once", batch->n),
			 edata->detail ?
			 errdetail("The batch failed at message %d. %s", mc->current + 1, edata->detail) :
			 errdetail("The batch failed at message %d: %s.", mc->current + 1, edata->message),
			 errhint("The job retries with smaller batches; a lower batch_max_bytes (eoingest.alter_job) avoids the retries.")));
}

static uint64
copy_into_target(const EoiJob *job, EoiBatch *batch)
{
	Relation	rel = eoi_open_job_target(job, RowExclusiveLock);
	ParseState *pstate = make_parsestate(NULL);
	EState	   *estate = CreateExecutorState();
	EoiMapping	mapping = eoi_job_mapping(job);
	EoiColumns *cols = eoi_columns_for(rel, &mapping, estate);
	StringInfoData lines;
	ErrorContextCallback errcb;
	MessagePosition mc = {batch, -1, NULL, &errcb, NULL, 0};
	MemoryContext cxt = CurrentMemoryContext;
	CopyFromState cstate;
	List	   *options;
	uint64		processed;

	eoi_check_target_kind(rel, job->mode);
	eoi_check_target_unchanged(job, rel, cols);
	eoi_target_range_table(pstate, rel, cols->names);
	eoi_check_insert(pstate, rel);

	errcb.callback = message_error_callback;
	errcb.arg = &mc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	/* Straight into tuples where direct.c handles the target; COPY otherwise. */
	if (eoi_direct_fits(rel, cols))
	{
		processed = eoi_direct_insert(rel, pstate, cols, batch, estate,
									  set_message_position, &mc);
		error_context_stack = errcb.previous;
		FreeExecutorState(estate);
		free_parsestate(pstate);
		table_close(rel, NoLock);
		return processed;
	}

	initStringInfo(&lines);
	PG_TRY();
	{
		decode_batch(batch, cols, &lines, GetPerTupleExprContext(estate), &mc);
	}
	PG_CATCH();
	{
		if (mc.current <= 0 || geterrcode() != ERRCODE_PROGRAM_LIMIT_EXCEEDED)
			PG_RE_THROW();
		batch_too_large(batch, &mc, cxt, errcb.previous);
	}
	PG_END_TRY();

	options = list_make2(makeDefElem("format", (Node *) makeString("text"), -1),
						 makeDefElem("encoding",
									 (Node *) makeString(pstrdup(GetDatabaseEncodingName())), -1));
	eoi_attempt->copy_lines = &lines;
	eoi_attempt->copy_pos = 0;
	cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, copy_read_batch,
						   cols->names, options);
	mc.cstate = cstate;
	processed = CopyFrom(cstate);
	mc.cstate = NULL;
	EndCopyFrom(cstate);
	eoi_attempt->copy_lines = NULL;

	error_context_stack = errcb.previous;

	FreeExecutorState(estate);
	free_parsestate(pstate);
	table_close(rel, NoLock);
	return processed;
}

static uint64
run_transform(const EoiJob *job, EoiBatch *batch)
{
	/* One plan per process: a worker runs one job; replay may run others. */
	static SPIPlanPtr plan = NULL;
	static int32 plan_job = 0;
	uint64		rows;
	int			ret;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (plan != NULL && plan_job != job->id)
	{
		SPI_freeplan(plan);
		plan = NULL;
	}
	if (plan == NULL)
	{
		plan = SPI_prepare(job->transform, 0, NULL);
		if (plan == NULL)
			elog(ERROR, "could not prepare the transform of job \"%s\": %s",
				 job->name, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "could not keep the transform's plan");
		plan_job = job->id;
	}
	batch->format = job->format;
	batch->key_format = job->key_format;
	eoi_attempt->transform_batch = batch;
	eoi_attempt->transform_plan = plan;
	ret = SPI_execute_plan(plan, NULL, NULL, false, 0);
	eoi_attempt->transform_batch = NULL;
	eoi_attempt->transform_plan = NULL;
	if (ret < 0)
		ereport(ERROR,
				(errcode(ERRCODE_SQL_STATEMENT_NOT_YET_COMPLETE),
				 errmsg("transform of job \"%s\" failed: %s",
						job->name, SPI_result_code_string(ret))));
	rows = SPI_processed;
	SPI_finish();
	return rows;
}

/* A message larger than max_message_bytes is a bad record. */
static void
check_sizes(const EoiJob *job, EoiBatch *batch)
{
	for (int i = 0; i < batch->n; i++)
		eoi_check_message_size(job, batch->messages[i], eoi_message_topic(batch, i));
}

/* The rows of `batch` into the job's target: upserted by key, or inserted. */
static uint64
write_into_target(const EoiJob *job, EoiBatch *batch)
{
	eoi_evolve_target(job, batch, job->target);
	if (job->mode == EOI_MODE_UPSERT)
	{
		uint64		rows = eoi_upsert_batch(job, batch);

		eoi_sink_supersede_dead_letters(job, batch, NULL);
		return rows;
	}
	return copy_into_target(job, batch);
}

/* Set when a write stopped for a routed target that does not exist. */
static bool target_missing = false;

/*
 * A target template: each topic's messages into the table it names, in
 * the order the topics first come in the batch, with every check a target
 * gets.  A table that does not exist (yet) stops the batch; the worker
 * retries it (eoi_target_missing()), so the job goes on from its offsets
 * once the table is created.
 */
static uint64
write_routed(const EoiJob *job, EoiBatch *batch)
{
	uint64		rows = 0;
	int			nparts;
	EoiBatch   *parts = eoi_batch_by_topic(batch, &nparts);

	target_missing = false;
	for (int p = 0; p < nparts; p++)
	{
		const char *topic = eoi_message_topic(&parts[p], 0);
		EoiJob		routed = *job;

		routed.target = eoi_target_for_topic(job->target, topic);
		if (!job->create_target && !eoi_target_exists(routed.target))
			eoi_sink_missing_target(job, routed.target, topic);
		rows += write_into_target(&routed, &parts[p]);
	}
	return rows;
}

/*
 * Stop the write: `target`, the table the job's target template names for
 * a message of `topic`, does not exist.  The worker retries, and the job
 * goes on from its offsets once the table is there.
 */
void
eoi_sink_missing_target(const EoiJob *job, const char *target, const char *topic)
{
	target_missing = true;
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("target table %s of topic \"%s\" does not exist", target, topic),
			 errdetail("Job \"%s\" writes into the tables its target %s names; it retries until the table exists.",
					   job->name, job->target),
			 errhint("Create the table, and the job goes on from its offsets.")));
}

/*
 * Whether the last failed write stopped for a routed target that does not
 * exist: an error to retry rather than to fail the job for (workerfail.c).
 * Asking forgets it.
 */
bool
eoi_target_missing(void)
{
	bool		missing = target_missing;

	target_missing = false;
	return missing;
}

/*
 * The writer of rows (envelope none): the job's transform, the upsert of
 * keyed rows, or the insert of rows, into the target or, for a target
 * template, each topic's table.  Returns how many rows were written.
 * Called as an attempt's writer (eoi_sink_write).
 */
uint64
eoi_sink_write_rows(const EoiJob *job, EoiBatch *batch)
{
	Assert(eoi_attempt != NULL && eoi_attempt->batch == batch);
	if (job->transform != NULL)
		return run_transform(job, batch);
	if (eoi_target_is_template(job->target))
		return write_routed(job, batch);
	return write_into_target(job, batch);
}

/*
 * Write a batch with `writer`, as the current user (the job's owner), in
 * the caller's transaction, with a snapshot, as one attempt (attempt.c);
 * returns the rows written.
 */
uint64
eoi_sink_write(const EoiJob *job, EoiBatch *batch, EoiBatchWriter writer)
{
	check_sizes(job, batch);
	eoi_avro_use_job(job);
	return eoi_attempt_run(job, batch, writer);
}

/*
 * The key or value a dead letter keeps: the message's, with the schema id
 * of format avro put in front when it came in a record header, since a
 * replay has the dead letter's bytes only.
 */
static bytea *
dead_letter_bytes(const EoiJob *job, rd_kafka_message_t *msg, bool key)
{
	EoiFormat	format = key ? job->key_format : job->format;
	const char *data = key ? msg->key : msg->payload;
	size_t		len = key ? msg->key_len : msg->len;

	if (eoi_format_has_schema_id(format))
		data = eoi_framed_message(format, msg, key, false, &len);
	return eoi_message_bytes(data, len);
}

/*
 * The records of batch `batch` that the job applied (all, or those
 * `applied` says) supersede its dead letters of their keys from earlier in
 * their partitions: a key's later image is in the table, and replaying an
 * older one would take the key back to a state its source has left.  For
 * the keyed writers (mode upsert, envelope debezium), in their attempt, so
 * that what a failed attempt marks rolls back with it.
 */
void
eoi_sink_supersede_dead_letters(const EoiJob *job, EoiBatch *batch, const bool *applied)
{
	Datum	   *topics;
	Datum	   *partitions;
	Datum	   *offsets;
	Datum	   *keys;
	int			n = 0;

	if (!eoi_dead_letters_supersedable(job->id))
		return;
	topics = palloc(sizeof(Datum) * batch->n);
	partitions = palloc(sizeof(Datum) * batch->n);
	offsets = palloc(sizeof(Datum) * batch->n);
	keys = palloc(sizeof(Datum) * batch->n);
	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];

		CHECK_FOR_INTERRUPTS();
		if (msg->key == NULL || (applied != NULL && !applied[i]))
			continue;
		topics[n] = CStringGetTextDatum(eoi_message_topic(batch, i));
		partitions[n] = Int32GetDatum(msg->partition);
		offsets[n] = Int64GetDatum(msg->offset);
		keys[n] = PointerGetDatum(dead_letter_bytes(job, msg, true));
		n++;
	}
	eoi_dead_letters_supersede(job->id, n, topics, partitions, offsets, keys);
}

/*
 * Keep message `msg` of `topic`, which failed with `edata`, as a dead
 * letter of the job (eoi_dead_letter_insert), in the current transaction.
 */
static void
dead_letter_store(const EoiJob *job, const char *topic, rd_kafka_message_t *msg,
					  ErrorData *edata)
{
	EoiDeadLetter letter;

	letter.topic = topic;
	letter.partition = msg->partition;
	letter.offset = msg->offset;
	letter.key = dead_letter_bytes(job, msg, true);
	letter.value = dead_letter_bytes(job, msg, false);
	letter.timestamp = eoi_message_timestamp(msg, &letter.timestamp_isnull);
	eoi_dead_letter_insert(job, &letter, edata);
}

/*
 * Try to write messages [from, to) in a subtransaction.  Returns true and
 * adds to *rows on success; on an error of one record, rolls back and
 * returns false with the error and the failing message (or -1 if the error
 * does not say); any other error is thrown on.
 */
typedef struct SliceWrite
{
	const EoiJob *job;
	EoiBatchWriter writer;
	EoiBatch   *slice;
	uint64		rows;
} SliceWrite;

static void
write_slice(void *arg)
{
	SliceWrite *sw = arg;

	sw->rows = eoi_sink_write(sw->job, sw->slice, sw->writer);
}

static bool
try_write(const EoiJob *job, EoiBatchWriter writer, EoiBatch *batch, int from, int to,
		  uint64 *rows, ErrorData **error, int *failed)
{
	EoiBatch	slice = eoi_batch_slice(batch, from, to);
	SliceWrite	sw = {job, writer, &slice, 0};
	ErrorData  *edata;

	edata = eoi_try_subxact(write_slice, &sw);
	if (edata == NULL)
	{
		*rows += sw.rows;
		return true;
	}
	if (!eoi_is_record_error(edata))
		ReThrowError(edata);
	*error = edata;
	*failed = eoi_blamed_message(&slice, edata);
	if (*failed >= 0)
		*failed += from;
	return false;
}

/*
 * Write messages [from, to), setting aside the ones that fail into
 * eoingest.dead_letters.  When the error names its message, the messages
 * before it go in and the rest is tried again; otherwise the range is
 * halved until the failing message is alone.
 */
static void
write_isolating(const EoiJob *job, EoiBatchWriter writer, EoiBatch *batch, int from, int to,
				uint64 *rows, int *dead)
{
	while (from < to)
	{
		ErrorData  *error = NULL;
		int			failed = -1;
		int			mid;

		if (try_write(job, writer, batch, from, to, rows, &error, &failed))
			return;

		if (failed < 0 && to - from == 1)
			failed = from;
		if (failed >= 0)
		{
			write_isolating(job, writer, batch, from, failed, rows, dead);
			dead_letter_store(job, eoi_message_topic(batch, failed), batch->messages[failed], error);
			(*dead)++;
			from = failed + 1;
			continue;
		}
		mid = from + (to - from) / 2;
		write_isolating(job, writer, batch, from, mid, rows, dead);
		write_isolating(job, writer, batch, mid, to, rows, dead);
		return;
	}
}

/*
 * Write the batch with `writer` as the job's on_error says: with fail, an
 * error fails the whole batch; with dead_letter, the batch goes in whole
 * when it can (the fast path: one subtransaction), and only when it cannot
 * are the failing records isolated and kept as dead letters.
 */
uint64
eoi_sink_write_batch(const EoiJob *job, EoiBatch *batch, EoiBatchWriter writer, int *dead)
{
	uint64		rows = 0;

	*dead = 0;
	if (job->on_error == EOI_ON_ERROR_FAIL)
		return eoi_sink_write(job, batch, writer);
	write_isolating(job, writer, batch, 0, batch->n, &rows, dead);
	return rows;
}
