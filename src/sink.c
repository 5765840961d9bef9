/*-------------------------------------------------------------------------
 *
 * sink.c
 *	  Writing a batch into PostgreSQL, inside the caller's transaction.
 *
 * Without a transform, the messages are decoded into COPY text-format
 * lines and fed to the server's own COPY FROM machinery through a data
 * source callback: the batch goes in with COPY's multi-insert buffering,
 * and gets its type input, defaults, constraints, triggers and partition
 * routing.  Privileges are checked as COPY does, as the job's owner.
 *
 * With a transform, the job's SQL statement runs once over the batch,
 * which it reads with eoingest.batch().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
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
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "decode.h"
#include "sink.h"
#include "upsert.h"

/* COPY's data source callback takes no argument: the batch's lines. */
static StringInfo copy_source = NULL;
static int	copy_source_pos = 0;

/* For error context: which message is being decoded or copied. */
typedef struct MessagePosition
{
	EoiBatch   *batch;
	int			current;		/* index while decoding, or -1 */
	CopyFromState cstate;		/* while copying: line N is message N-1 */
} MessagePosition;

static void
message_error_callback(void *arg)
{
	MessagePosition *mc = arg;
	int			i = mc->current;
	rd_kafka_message_t *msg;

	if (mc->cstate != NULL && mc->cstate->cur_lineno > 0)
		i = (int) mc->cstate->cur_lineno - 1;
	if (i < 0 || i >= mc->batch->n)
		return;
	msg = mc->batch->messages[i];
	errcontext("Kafka message at topic \"%s\" partition %d offset %lld",
			   mc->batch->topic, msg->partition, (long long) msg->offset);
}

static int
copy_read_batch(void *outbuf, int minread, int maxread)
{
	int			avail = copy_source->len - copy_source_pos;
	int			n = Min(avail, maxread);

	memcpy(outbuf, copy_source->data + copy_source_pos, n);
	copy_source_pos += n;
	return n;
}

/* Open the job's target by its stored, schema-qualified name. */
Relation
eoi_open_target(const char *target, LOCKMODE lockmode)
{
	List	   *names;
	Relation	rel;

#if PG_VERSION_NUM >= 160000
	names = stringToQualifiedNameList(target, NULL);
#else
	names = stringToQualifiedNameList(target);
#endif
	rel = table_openrv(makeRangeVarFromNameList(names), lockmode);
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" is not a table", target)));
	return rel;
}

static RangeTblEntry *
add_target_rte(ParseState *pstate, Relation rel, List *colnames)
{
	ParseNamespaceItem *nsitem;
	RangeTblEntry *rte;
	ListCell   *lc;
	Bitmapset  *cols = NULL;

	nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL, false, false);
	rte = nsitem->p_rte;
	foreach(lc, colnames)
	{
		AttrNumber	attnum = attnameAttNum(rel, strVal(lfirst(lc)), false);

		cols = bms_add_member(cols, attnum - FirstLowInvalidHeapAttributeNumber);
	}
#if PG_VERSION_NUM >= 160000
	nsitem->p_perminfo->requiredPerms = ACL_INSERT;
	nsitem->p_perminfo->insertedCols = cols;
#else
	rte->requiredPerms = ACL_INSERT;
	rte->insertedCols = cols;
#endif
	return rte;
}

static void
check_insert(ParseState *pstate, Relation rel)
{
#if PG_VERSION_NUM >= 160000
	ExecCheckPermissions(pstate->p_rtable, pstate->p_rteperminfos, true);
#else
	ExecCheckRTPerms(pstate->p_rtable, true);
#endif
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("target \"%s\" has row-level security enabled",
						RelationGetRelationName(rel)),
				 errhint("eoingest writes with COPY, which row-level security does not allow; use a transform instead.")));
}

/* Check, as COPY would, that the current user may insert these columns. */
void
eoi_check_target_insert(Relation rel, List *colnames)
{
	ParseState *pstate = make_parsestate(NULL);

	(void) add_target_rte(pstate, rel, colnames);
	check_insert(pstate, rel);
	free_parsestate(pstate);
}

static void
decode_batch(EoiBatch *batch, EoiColumns *cols, StringInfo lines,
			 ExprContext *econtext, MessagePosition *mc)
{
	EoiCopyWriter cw;

	eoi_copy_writer_init(&cw, lines);
	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];

		mc->current = i;
		if (msg->payload == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("message has a null value (a tombstone)"),
					 errhint("Tombstones delete rows in mode upsert only; use a transform to handle them otherwise.")));
		eoi_decode_message(cols, msg->payload, msg->len, &cw.writer, econtext);
		ResetExprContext(econtext);
	}
	mc->current = -1;
}

static uint64
copy_into_target(const EoiJob *job, EoiBatch *batch)
{
	Relation	rel = eoi_open_target(job->target, RowExclusiveLock);
	ParseState *pstate = make_parsestate(NULL);
	EState	   *estate = CreateExecutorState();
	EoiColumns *cols = eoi_columns_for(rel, job->format, estate);
	StringInfoData lines;
	MessagePosition mc = {batch, -1, NULL};
	ErrorContextCallback errcb;
	CopyFromState cstate;
	List	   *options;
	uint64		processed;

	(void) add_target_rte(pstate, rel, cols->names);
	check_insert(pstate, rel);

	errcb.callback = message_error_callback;
	errcb.arg = &mc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	initStringInfo(&lines);
	decode_batch(batch, cols, &lines, GetPerTupleExprContext(estate), &mc);

	options = list_make2(makeDefElem("format", (Node *) makeString("text"), -1),
						 makeDefElem("encoding",
									 (Node *) makeString(pstrdup(GetDatabaseEncodingName())), -1));
	copy_source = &lines;
	copy_source_pos = 0;
	cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, copy_read_batch,
						   cols->names, options);
	mc.cstate = cstate;
	processed = CopyFrom(cstate);
	mc.cstate = NULL;
	EndCopyFrom(cstate);
	copy_source = NULL;

	error_context_stack = errcb.previous;

	FreeExecutorState(estate);
	free_parsestate(pstate);
	table_close(rel, NoLock);
	return processed;
}

static uint64
run_transform(const EoiJob *job, EoiBatch *batch)
{
	static SPIPlanPtr plan = NULL;
	uint64		rows;
	int			ret;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (plan == NULL)
	{
		plan = SPI_prepare(job->transform, 0, NULL);
		if (plan == NULL)
			elog(ERROR, "could not prepare the transform of job \"%s\": %s",
				 job->name, SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "could not keep the transform's plan");
	}
	eoi_current_batch = batch;
	ret = SPI_execute_plan(plan, NULL, NULL, false, 0);
	eoi_current_batch = NULL;
	if (ret < 0)
		ereport(ERROR,
				(errcode(ERRCODE_SQL_STATEMENT_NOT_YET_COMPLETE),
				 errmsg("transform of job \"%s\" failed: %s",
						job->name, SPI_result_code_string(ret))));
	rows = SPI_processed;
	SPI_finish();
	return rows;
}

/*
 * Write the batch's rows; returns how many rows were written.  Runs in the
 * caller's transaction, with a snapshot, as the job's owner.
 */
uint64
eoi_sink_write(const EoiJob *job, EoiBatch *batch)
{
	if (job->transform != NULL)
		return run_transform(job, batch);
	if (job->mode == EOI_MODE_UPSERT)
		return eoi_upsert_batch(job, batch);
	return copy_into_target(job, batch);
}
