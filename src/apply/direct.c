/*-------------------------------------------------------------------------
 *
 * direct.c
 *	  Writing a batch into the target as tuples, without COPY's text.
 *
 * The COPY path (sink.c) has decode.c write every message as a COPY text
 * line, which COPY then splits and unescapes again.  Here decode.c's row
 * writer converts each field once, with the column type's input function
 * (or a shortcut that does exactly what it does), into the values of a
 * slot (format avro gives the values of its primitives as they are, with
 * no text: EoiRowWriter.datum); the slots go into the table in groups through table_multi_insert
 * with a bulk-insert state, then into the indexes one by one, as COPY FROM
 * does internally.  Defaults of the columns no message fills, stored
 * generated columns and NOT NULL and CHECK constraints are applied per row,
 * before the row is buffered, so that an error names its message.
 *
 * Triggers fire as COPY FROM fires them: BEFORE STATEMENT at the start of
 * the batch, BEFORE ROW on each row before its generated columns and
 * constraints (a row it drops is not inserted, and since the trigger may
 * read the table, each row then goes in on its own rather than in a group),
 * AFTER ROW queued as each row's index entries go in (with the indexes of
 * deferrable unique constraints to recheck), transition tables captured,
 * AFTER STATEMENT and the queued AFTER triggers (foreign keys among them)
 * at the end of the batch.
 *
 * A partitioned target's rows are routed as COPY FROM routes them: built
 * in the target's rowtype, sent to their leaf partition (ExecFindPartition,
 * which checks a partitioned target's own bounds too), converted to its
 * rowtype, then buffered per partition, at most DIRECT_MAX_TABLES buffers
 * kept; a partition's own BEFORE ROW triggers take its rows one at a time,
 * and transition tables on the target every row.  A target that is a
 * partition has its bounds checked on each row.
 *
 * COPY stays the path (eoi_direct_fits says no) where it is needed:
 *	- a partitioned table with a foreign table among its partitions (COPY
 *	  hands their rows to the foreign data wrapper),
 *	- a volatile default on a column no message fills (COPY then inserts
 *	  row by row, since the default may read the table),
 *	- the tests' eoingest.test_batch_text_limit, which is about COPY's text,
 *	- eoingest.insert_path = copy (superuser): the way back to COPY's text
 *	  for every target; the differential test runs the same messages both
 *	  ways.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/execPartition.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "parser/parse_relation.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "apply/direct.h"
#include "apply/execcompat.h"
#include "apply/target.h"
#include "format/decfloat.h"

int			eoingest_insert_path = EOI_INSERT_PATH_DIRECT;

/* How many rows, or message bytes, are buffered before they go in. */
#define DIRECT_MAX_ROWS 1000
#define DIRECT_MAX_BYTES 65536

/* How a field of a column becomes a value. */
typedef enum FieldKind
{
	FIELD_INPUT,				/* the type's input function */
	FIELD_TEXT,					/* text: textin's copy, without the strlen */
	FIELD_INT8,					/* int8in's pg_strtoint64 */
	FIELD_INT4,					/* int4in's pg_strtoint32 */
	FIELD_INT2,					/* int2in's pg_strtoint16 */
	FIELD_FLOAT8				/* a short decimal without strtod, else float8in */
} FieldKind;

/* The longest integer field read from a buffer on the stack. */
#define INT_FIELD_BUFSIZE 64

typedef struct DirectColumn
{
	int			attidx;			/* into the slot's values */
	const char *name;
	FieldKind	kind;
	FmgrInfo	in;
	Oid			typioparam;
	int32		typmod;
	bool		coerce_typmod;	/* a datum goes through typmod_fn */
	FmgrInfo	typmod_fn;		/* the type's length coercion (numeric(p,s)...) */
} DirectColumn;

/* decode.c's row writer, filling a slot's values. */
typedef struct DatumWriter
{
	EoiRowWriter writer;
	DirectColumn *columns;
	Datum	   *values;
	bool	   *isnull;
	int			cur_col;		/* for the error context, or -1 */
	const char *cur_data;
	size_t		cur_len;
} DatumWriter;

/* A column no message fills, and its default. */
typedef struct DirectDefault
{
	int			attidx;
	ExprState  *expr;
} DirectDefault;

static bool
is_filled(EoiColumns *cols, const char *name)
{
	for (int c = 0; c < cols->ncolumns; c++)
		if (strcmp(cols->colnames[c], name) == 0)
			return true;
	return false;
}

/*
 * The defaults of the columns no message fills (COPY's defmap), as
 * expressions; *is_volatile if one of them is volatile.
 */
static List *
unfilled_defaults(Relation rel, EoiColumns *cols, bool *is_volatile)
{
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *result = NIL;

	*is_volatile = false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Node	   *expr;

		if (att->attisdropped || att->attgenerated != '\0' ||
			is_filled(cols, NameStr(att->attname)))
			continue;
		expr = build_column_default(rel, att->attnum);
		if (expr == NULL)
			continue;
		expr = (Node *) expression_planner((Expr *) expr);
		if (contain_volatile_functions_not_nextval(expr))
			*is_volatile = true;
		result = lappend(result, list_make2(makeInteger(i), expr));
	}
	return result;
}

static bool
has_volatile_default(Relation rel, EoiColumns *cols)
{
	bool		is_volatile;

	(void) unfilled_defaults(rel, cols, &is_volatile);
	return is_volatile;
}

/*
 * Is a table of the partitioned table's tree a foreign table?  Read
 * without locks: one attached since is met in route_row.
 */
static bool
has_foreign_partition(Relation rel)
{
	List	   *tree = find_all_inheritors(RelationGetRelid(rel), NoLock, NULL);
	ListCell   *lc;

	foreach(lc, tree)
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE)
			return true;
	return false;
}

/* Can this batch go in directly, or must it take the COPY path?  See above. */
bool
eoi_direct_fits(Relation rel, EoiColumns *cols)
{
	if (eoingest_insert_path != EOI_INSERT_PATH_DIRECT ||
		eoingest_test_batch_text_limit > 0)
		return false;
	if (cols->format != EOI_FORMAT_CSV && cols->format != EOI_FORMAT_TEXT &&
		cols->format != EOI_FORMAT_JSON && !eoi_format_has_schema_id(cols->format))
		return false;
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		return !has_volatile_default(rel, cols) && !has_foreign_partition(rel);
	return rel->rd_rel->relkind == RELKIND_RELATION && !has_volatile_default(rel, cols);
}

/*
 * Does direct.c cover mode upsert's needs (rows of text, rows updated in
 * place: eoi_direct_rows_begin, eoi_direct_update_begin)?  A plain table,
 * not a partition, with no volatile default on a column no message fills.
 */
bool
eoi_direct_target_fits(Relation rel, EoiColumns *cols)
{
	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition)
		return false;
	return !has_volatile_default(rel, cols);
}

/* ---- fields into values ---- */

/*
 * An integer column's field, as its input function reads it: the digits
 * go to the parser from a buffer on the stack, NUL-terminated as
 * pnstrdup() would give them, so that a row allocates nothing for them.
 */
static Datum
int_field(FieldKind kind, const char *data, size_t len)
{
	char		buf[INT_FIELD_BUFSIZE];
	char	   *str = buf;

	if (len < sizeof(buf))
	{
		memcpy(buf, data, len);
		buf[len] = '\0';
	}
	else
		str = pnstrdup(data, len);
	switch (kind)
	{
		case FIELD_INT8:
			return Int64GetDatum(pg_strtoint64(str));
		case FIELD_INT4:
			return Int32GetDatum(pg_strtoint32(str));
		case FIELD_INT2:
			return Int16GetDatum(pg_strtoint16(str));
		default:
			elog(ERROR, "unexpected field kind %d", (int) kind);
	}
	return (Datum) 0;			/* keep compiler quiet */
}

static void
datum_field(EoiRowWriter *writer, int col, const char *data, size_t len)
{
	DatumWriter *w = (DatumWriter *) writer;
	DirectColumn *dc = &w->columns[col];
	char	   *str;

	w->cur_col = col;
	w->cur_data = data;
	w->cur_len = len;
	w->isnull[dc->attidx] = (data == NULL);
	if (data == NULL)
	{
		/* A domain's input function sees NULLs too, as in COPY. */
		w->values[dc->attidx] = dc->in.fn_strict ? (Datum) 0 :
			InputFunctionCall(&dc->in, NULL, dc->typioparam, dc->typmod);
		w->cur_col = -1;
		return;
	}
	if (dc->kind == FIELD_TEXT)
	{
		w->values[dc->attidx] = PointerGetDatum(cstring_to_text_with_len(data, (int) len));
		w->cur_col = -1;
		return;
	}
	if (dc->kind == FIELD_FLOAT8)
	{
		double		d;

		if (eoi_decimal_to_double(data, len, &d))
		{
			w->values[dc->attidx] = Float8GetDatum(d);
			w->cur_col = -1;
			return;
		}
	}
	if (dc->kind == FIELD_INPUT || dc->kind == FIELD_FLOAT8)
	{
		str = pnstrdup(data, len);
		w->values[dc->attidx] = InputFunctionCall(&dc->in, str, dc->typioparam, dc->typmod);
		w->cur_col = -1;
		return;
	}
	w->values[dc->attidx] = int_field(dc->kind, data, len);
	w->cur_col = -1;
}

/*
 * A value of the column's type, from a decoder that has one (format avro).
 * A column with a typmod (numeric(10,2), timestamptz(3)) gets the value
 * through the type's length coercion, which rounds and checks as the
 * input function does with the typmod.
 */
static void
datum_value(EoiRowWriter *writer, int col, Datum value)
{
	DatumWriter *w = (DatumWriter *) writer;
	DirectColumn *dc = &w->columns[col];

	if (dc->coerce_typmod)
		value = FunctionCall3(&dc->typmod_fn, value, Int32GetDatum(dc->typmod), BoolGetDatum(false));
	w->values[dc->attidx] = value;
	w->isnull[dc->attidx] = false;
}

static void
datum_end_row(EoiRowWriter *writer)
{
}

/* Which field failed, the way COPY's context says it. */
static void
field_error_callback(void *arg)
{
	DatumWriter *w = arg;
	int			len;

	if (w->cur_col < 0)
		return;
	len = pg_mbcliplen(w->cur_data, (int) w->cur_len, Min((int) w->cur_len, 100));
	errcontext("column %s: \"%.*s%s\"", w->columns[w->cur_col].name, len, w->cur_data,
			   len < (int) w->cur_len ? "..." : "");
}

static DirectColumn *
direct_columns(Relation rel, EoiColumns *cols)
{
	DirectColumn *dcs = palloc0(sizeof(DirectColumn) * Max(cols->ncolumns, 1));

	for (int c = 0; c < cols->ncolumns; c++)
	{
		AttrNumber	attnum = attnameAttNum(rel, cols->colnames[c], false);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
		Oid			infunc;

		dcs[c].attidx = attnum - 1;
		dcs[c].name = cols->colnames[c];
		dcs[c].typmod = att->atttypmod;
		getTypeInputInfo(att->atttypid, &infunc, &dcs[c].typioparam);
		fmgr_info(infunc, &dcs[c].in);
		if (att->atttypmod >= 0)
		{
			Oid			typmod_func;

			if (find_typmod_coercion_function(att->atttypid, &typmod_func) == COERCION_PATH_FUNC)
			{
				fmgr_info(typmod_func, &dcs[c].typmod_fn);
				dcs[c].coerce_typmod = true;
			}
		}
		switch (att->atttypid)
		{
			case TEXTOID:
				dcs[c].kind = FIELD_TEXT;
				break;
			case INT8OID:
				dcs[c].kind = FIELD_INT8;
				break;
			case INT4OID:
				dcs[c].kind = FIELD_INT4;
				break;
			case INT2OID:
				dcs[c].kind = FIELD_INT2;
				break;
			case FLOAT8OID:
				dcs[c].kind = FIELD_FLOAT8;
				break;
			default:
				dcs[c].kind = FIELD_INPUT;
				break;
		}
	}
	return dcs;
}

/* ---- the buffers of rows ---- */

/* How many tables (the target, partitions) keep a buffer between flushes, as COPY FROM. */
#define DIRECT_MAX_TABLES 32

/* Rows waiting to go into one table: the target, or a partition of it. */
typedef struct TableBuffer
{
	ResultRelInfo *rri;
	BulkInsertState bistate;
	TupleTableSlot *slots[DIRECT_MAX_ROWS];
	int			messages[DIRECT_MAX_ROWS];	/* the message of each row */
	int			nrows;
} TableBuffer;

typedef struct DirectBuffer
{
	Relation	rel;			/* the target */
	ResultRelInfo *rri;			/* the target's */
	EState	   *estate;
	CommandId	cid;
	List	   *tables;			/* TableBuffers, the least recently made first */
	TableBuffer *current;		/* the one the row being built goes to */
	int			nrows;			/* buffered, in all of them */
	size_t		nbytes;
	EoiDirectPositionFn position;
	void	   *arg;
	/* a partitioned target: rows are built in its rowtype, then routed */
	ModifyTableState *mtstate;
	PartitionTupleRouting *proute;
	TupleTableSlot *root_slot;
	/* the target's triggers (a partition's own are in its ResultRelInfo) */
	bool		has_triggers;
	bool		row_at_a_time;	/* transition tables of a partitioned target */
	TransitionCaptureState *transition;
} DirectBuffer;

static bool
has_before_row(ResultRelInfo *rri)
{
	return rri->ri_TrigDesc != NULL && rri->ri_TrigDesc->trig_insert_before_row;
}

static bool
has_after_row(DirectBuffer *buf, ResultRelInfo *rri)
{
	return (rri->ri_TrigDesc != NULL && rri->ri_TrigDesc->trig_insert_after_row) ||
		(buf->transition != NULL && buf->transition->tcs_insert_new_table);
}

/*
 * Insert one table's buffered rows, then their index entries and AFTER ROW
 * triggers, each naming its message.
 */
static void
flush_table(DirectBuffer *buf, TableBuffer *tb)
{
	ResultRelInfo *rri = tb->rri;
	bool		after_row = has_after_row(buf, rri);

	if (tb->nrows == 0)
		return;
	buf->position(buf->arg, -1);
	table_multi_insert(rri->ri_RelationDesc, tb->slots, tb->nrows, buf->cid, 0, tb->bistate);
	for (int k = 0; k < tb->nrows; k++)
	{
		List	   *recheck = NIL;

		buf->position(buf->arg, tb->messages[k]);
		if (rri->ri_NumIndices > 0)
			recheck = eoi_insert_index_tuples(rri, tb->slots[k], buf->estate, false, false);
		/* the indexes of deferrable unique constraints go to their triggers */
		if (after_row || recheck != NIL)
			ExecARInsertTriggers(buf->estate, rri, tb->slots[k], recheck, buf->transition);
		list_free(recheck);
		ResetPerTupleExprContext(buf->estate);
		ExecClearTuple(tb->slots[k]);
	}
	buf->position(buf->arg, -1);
	tb->nrows = 0;
}

static void
drop_table_buffer(TableBuffer *tb)
{
	FreeBulkInsertState(tb->bistate);
	table_finish_bulk_insert(tb->rri->ri_RelationDesc, 0);
	for (int k = 0; k < DIRECT_MAX_ROWS && tb->slots[k] != NULL; k++)
		ExecDropSingleTupleTableSlot(tb->slots[k]);
	pfree(tb);
}

/*
 * Flush every table's rows.  Then, past DIRECT_MAX_TABLES buffers, drop
 * the oldest (never the current one): a batch spread over many partitions
 * keeps the slots of a few.
 */
static void
flush_rows(DirectBuffer *buf)
{
	ListCell   *lc;

	foreach(lc, buf->tables)
		flush_table(buf, lfirst(lc));
	buf->nrows = 0;
	buf->nbytes = 0;
	while (list_length(buf->tables) > DIRECT_MAX_TABLES)
	{
		TableBuffer *oldest = linitial(buf->tables);

		buf->tables = list_delete_first(buf->tables);
		if (oldest == buf->current)
			buf->tables = lappend(buf->tables, oldest);
		else
			drop_table_buffer(oldest);
	}
}

/* The buffer of the table `rri` stands for, made on first use. */
static TableBuffer *
table_buffer(DirectBuffer *buf, ResultRelInfo *rri)
{
	TableBuffer *tb;
	ListCell   *lc;

	if (buf->current != NULL && buf->current->rri == rri)
		return buf->current;
	foreach(lc, buf->tables)
	{
		tb = lfirst(lc);
		if (tb->rri == rri)
			return tb;
	}
	tb = palloc0(sizeof(TableBuffer));
	tb->rri = rri;
	tb->bistate = GetBulkInsertState();
	buf->tables = lappend(buf->tables, tb);
	return tb;
}

static TupleTableSlot *
next_slot(TableBuffer *tb)
{
	if (tb->slots[tb->nrows] == NULL)
		tb->slots[tb->nrows] = table_slot_create(tb->rri->ri_RelationDesc, NULL);
	return tb->slots[tb->nrows];
}

/*
 * The partition of a partitioned target that the row in buf->root_slot
 * goes to (an error names the row if there is none): its buffer becomes
 * the current one, and the row is in its next slot, in its rowtype.
 */
static TupleTableSlot *
route_row(DirectBuffer *buf)
{
	ResultRelInfo *part = ExecFindPartition(buf->mtstate, buf->rri, buf->proute,
											buf->root_slot, buf->estate);
	TupleConversionMap *map = eoi_root_to_partition_map(part, buf->estate);
	TupleTableSlot *slot;

	/*
	 * eoi_direct_fits saw no foreign table among the partitions; one
	 * attached since (ATTACH PARTITION does not wait for our lock) is for
	 * COPY, which knows foreign tables: the batch is retried, and goes there.
	 */
	if (part->ri_FdwRoutine != NULL)
	{
		buf->position(buf->arg, -1);
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("foreign table \"%s\" became a partition of \"%s\" during the batch",
						RelationGetRelationName(part->ri_RelationDesc), RelationGetRelationName(buf->rel)),
				 errhint("The batch is retried through COPY, which writes to foreign tables.")));
	}
	buf->current = table_buffer(buf, part);
	slot = next_slot(buf->current);
	if (map != NULL)
		slot = execute_attr_map_slot(map->attrMap, buf->root_slot, slot);
	else
		ExecCopySlot(slot, buf->root_slot);
	slot->tts_tableOid = RelationGetRelid(part->ri_RelationDesc);
	return slot;
}

/*
 * An emptied slot for the next row, in the target's rowtype, its values
 * to be filled through w: the next of the target's buffer, or for a
 * partitioned target the one its rows are routed from.
 */
static TupleTableSlot *
start_row(DirectBuffer *buf, DatumWriter *w)
{
	TupleTableSlot *slot;
	TupleDesc	desc;

	if (buf->proute != NULL)
		slot = buf->root_slot;
	else
	{
		buf->current = table_buffer(buf, buf->rri);
		slot = next_slot(buf->current);
	}
	desc = slot->tts_tupleDescriptor;
	ExecClearTuple(slot);
	memset(slot->tts_values, 0, sizeof(Datum) * desc->natts);
	memset(slot->tts_isnull, true, sizeof(bool) * desc->natts);
	w->values = slot->tts_values;
	w->isnull = slot->tts_isnull;
	return slot;
}

/*
 * The filled slot of `message` (-1: none): defaults, the partition it goes
 * to, BEFORE ROW triggers, generated columns, constraints, then its own
 * copy in its table's buffer, flushed when full.  False if a trigger
 * dropped the row.  A table with BEFORE ROW triggers takes its rows one at
 * a time, the rows before each already in (the trigger may read them), as
 * does a partitioned target with transition tables (as COPY FROM does).
 */
static bool
finish_row(DirectBuffer *buf, List *defaults, TupleTableSlot *slot, int message, size_t nbytes)
{
	ExprContext *econtext = GetPerTupleExprContext(buf->estate);
	ResultRelInfo *rri;
	Relation	table;
	TupleDesc	desc;
	bool		before_row;
	ListCell   *lc;

	foreach(lc, defaults)
	{
		DirectDefault *d = lfirst(lc);

		slot->tts_values[d->attidx] =
			ExecEvalExprSwitchContext(d->expr, econtext, &slot->tts_isnull[d->attidx]);
	}
	ExecStoreVirtualTuple(slot);
	if (buf->proute != NULL)
		slot = route_row(buf);
	rri = buf->current->rri;
	table = rri->ri_RelationDesc;
	desc = RelationGetDescr(table);
	before_row = has_before_row(rri);
	if (before_row)
	{
		flush_rows(buf);
		buf->position(buf->arg, message);
		if (!ExecBRInsertTriggers(buf->estate, rri, slot))
		{
			ExecClearTuple(slot);
			return false;
		}
	}
	if (desc->constr != NULL && desc->constr->has_generated_stored)
		ExecComputeStoredGenerated(rri, buf->estate, slot, CMD_INSERT);
	if (desc->constr != NULL)
		ExecConstraints(rri, slot, buf->estate);
	/* Routing checked a partition's bounds, unless the target is the partition or a trigger changed the row. */
	if (table->rd_rel->relispartition && (buf->proute == NULL || before_row))
		ExecPartitionCheck(rri, slot, buf->estate, true);
	/* The row's own copy: the per-row memory is reset next. */
	ExecMaterializeSlot(slot);
	buf->current->messages[buf->current->nrows++] = message;
	buf->nrows++;
	buf->nbytes += nbytes;
	if (before_row || buf->row_at_a_time ||
		buf->nrows == DIRECT_MAX_ROWS || buf->nbytes >= DIRECT_MAX_BYTES)
		flush_rows(buf);
	return true;
}

/*
 * Decode message `message` into the next slot and buffer its row; false if
 * it makes none (a CSV header, or a row a BEFORE ROW trigger dropped).
 */
static bool
build_row(DirectBuffer *buf, EoiColumns *cols, DatumWriter *w, List *defaults,
		  rd_kafka_message_t *msg, const char *topic, int message)
{
	ExprContext *econtext = GetPerTupleExprContext(buf->estate);
	TupleTableSlot *slot;

	if (msg->payload == NULL)
		eoi_refuse_tombstone();
	slot = start_row(buf, w);
	if (!eoi_decode_kafka_message(cols, msg, topic, false, &w->writer, econtext))
		return false;
	return finish_row(buf, defaults, slot, message, msg->len);
}

static List *
prepare_defaults(Relation rel, EoiColumns *cols, EState *estate)
{
	bool		is_volatile;
	List	   *exprs = unfilled_defaults(rel, cols, &is_volatile);
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, exprs)
	{
		List	   *pair = lfirst(lc);
		DirectDefault *d = palloc(sizeof(DirectDefault));

		d->attidx = intVal(linitial(pair));
		d->expr = ExecInitExpr((Expr *) lsecond(pair), NULL);
		result = lappend(result, d);
	}
	return result;
}

/* The executor's state for inserting into `rel` through buffers. */
static DirectBuffer *
buffer_begin(Relation rel, ParseState *pstate, EState *estate,
			 EoiDirectPositionFn position, void *arg)
{
	DirectBuffer *buf = palloc0(sizeof(DirectBuffer));

	eoi_init_range_table(estate, pstate);
	buf->rri = makeNode(ResultRelInfo);
	ExecInitResultRelation(estate, buf->rri, 1);
	eoi_check_insert_target(buf->rri);
	ExecOpenIndices(buf->rri, false);
	buf->rel = rel;
	buf->estate = estate;
	buf->cid = GetCurrentCommandId(true);
	buf->position = position;
	buf->arg = arg;
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
	{
		/* ExecFindPartition wants a ModifyTableState: COPY FROM's stand-in */
		buf->mtstate = makeNode(ModifyTableState);
		buf->mtstate->ps.plan = NULL;
		buf->mtstate->ps.state = estate;
		buf->mtstate->operation = CMD_INSERT;
		buf->mtstate->mt_nrels = 1;
		buf->mtstate->resultRelInfo = buf->rri;
		buf->mtstate->rootResultRelInfo = buf->rri;
		buf->proute = ExecSetupPartitionTupleRouting(estate, rel);
		buf->root_slot = table_slot_create(rel, NULL);
	}

	/* Partitions may have triggers of their own (foreign keys among them). */
	buf->has_triggers = rel->trigdesc != NULL || buf->proute != NULL;
	if (buf->has_triggers)
	{
		AfterTriggerBeginQuery();
		buf->transition = MakeTransitionCaptureState(rel->trigdesc, RelationGetRelid(rel), CMD_INSERT);
		buf->row_at_a_time = buf->proute != NULL && buf->transition != NULL &&
			buf->transition->tcs_insert_new_table;
		ExecBSInsertTriggers(estate, buf->rri);
	}
	return buf;
}

static void
buffer_end(DirectBuffer *buf)
{
	ListCell   *lc;

	flush_rows(buf);
	if (buf->has_triggers)
	{
		ExecASInsertTriggers(buf->estate, buf->rri, buf->transition);
		AfterTriggerEndQuery(buf->estate);
	}
	foreach(lc, buf->tables)
		drop_table_buffer(lfirst(lc));
	if (buf->root_slot != NULL)
		ExecDropSingleTupleTableSlot(buf->root_slot);
	/* the slots the trigger machinery made in the executor state, as COPY FROM does */
	ExecResetTupleTable(buf->estate->es_tupleTable, false);
	if (buf->proute != NULL)
		ExecCleanupTupleRouting(buf->mtstate, buf->proute);
	ExecCloseResultRelations(buf->estate);
	ExecCloseRangeTableRelations(buf->estate);
}

static void
datum_writer_init(DatumWriter *w, Relation rel, EoiColumns *cols)
{
	w->writer.field = datum_field;
	w->writer.datum = datum_value;
	w->writer.end_row = datum_end_row;
	w->columns = direct_columns(rel, cols);
	w->cur_col = -1;
}

/*
 * Insert the batch's rows into `rel` (opened and locked, privileges
 * checked; `pstate` holds it in its range table: eoi_target_range_table);
 * returns how many.  `position` is told which message is being worked on,
 * for the caller's error context.
 */
uint64
eoi_direct_insert(Relation rel, ParseState *pstate, EoiColumns *cols, EoiBatch *batch,
				  EState *estate, EoiDirectPositionFn position, void *arg)
{
	DirectBuffer *buf = buffer_begin(rel, pstate, estate, position, arg);
	DatumWriter w;
	ErrorContextCallback errcb;
	List	   *defaults;
	uint64		processed = 0;

	/* For tests: how often a batch takes this path. */
	EOI_FAULT_POINT("direct-insert");
	defaults = prepare_defaults(rel, cols, estate);
	datum_writer_init(&w, rel, cols);

	errcb.callback = field_error_callback;
	errcb.arg = &w;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];

		CHECK_FOR_INTERRUPTS();
		position(arg, i);
		if (build_row(buf, cols, &w, defaults, msg, eoi_message_topic(batch, i), i))
			processed++;
		ResetPerTupleExprContext(estate);
	}
	flush_rows(buf);
	position(arg, -1);
	error_context_stack = errcb.previous;

	buffer_end(buf);
	return processed;
}

/* ---- rows of text fields (mode upsert's new rows) ---- */

struct EoiDirectRows
{
	DirectBuffer *buf;
	DatumWriter w;
	List	   *defaults;
	int			ncolumns;
};

static void
no_position(void *arg, int message)
{
}

/*
 * Rows given as text fields, one per column of `cols` (NULL for SQL NULL),
 * into `rel` the way eoi_direct_insert puts decoded messages: each field
 * through its type's input function, then the same defaults, constraints,
 * multi-insert and index entries.  The caller checks that the target fits
 * (eoi_direct_fits' rules) and the INSERT privilege.
 */
EoiDirectRows *
eoi_direct_rows_begin(Relation rel, ParseState *pstate, EoiColumns *cols, EState *estate)
{
	EoiDirectRows *dr = palloc0(sizeof(EoiDirectRows));

	dr->buf = buffer_begin(rel, pstate, estate, no_position, NULL);
	dr->defaults = prepare_defaults(rel, cols, estate);
	datum_writer_init(&dr->w, rel, cols);
	dr->ncolumns = cols->ncolumns;
	return dr;
}

void
eoi_direct_rows_add(EoiDirectRows *dr, char *const *fields)
{
	DirectBuffer *buf = dr->buf;
	ErrorContextCallback errcb;
	TupleTableSlot *slot;
	size_t		nbytes = 0;

	errcb.callback = field_error_callback;
	errcb.arg = &dr->w;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	slot = start_row(buf, &dr->w);
	for (int c = 0; c < dr->ncolumns; c++)
	{
		size_t		len = fields[c] ? strlen(fields[c]) : 0;

		datum_field(&dr->w.writer, c, fields[c], len);
		nbytes += len;
	}
	(void) finish_row(buf, dr->defaults, slot, -1, nbytes);	/* no triggers: bulk_fits */
	error_context_stack = errcb.previous;
	ResetPerTupleExprContext(buf->estate);
}

void
eoi_direct_rows_end(EoiDirectRows *dr)
{
	buffer_end(dr->buf);
}

/* ---- rows updated in place (mode upsert's rows of existing keys) ---- */

struct EoiDirectUpdate
{
	DirectBuffer *buf;			/* its executor state; nothing is buffered */
	DatumWriter w;
	const bool *set;			/* the columns of `cols` an update sets */
	int			ncolumns;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	CommandId	cid;
	Snapshot	snapshot;
};

/*
 * Rows of `rel` updated as INSERT ... ON CONFLICT DO UPDATE SET c =
 * excluded.c updates the row it conflicts with, for the columns c of
 * `cols` with set[c]: the new values through the types' input functions,
 * the row's own values for the others, then the stored generated columns,
 * NOT NULL and CHECK constraints, the new version and, unless it is a HOT
 * update, its index entries.  The caller checks that the target fits
 * (eoi_direct_fits' rules: no triggers, no partitions) and the UPDATE
 * privilege, and finds the rows.
 */
EoiDirectUpdate *
eoi_direct_update_begin(Relation rel, ParseState *pstate, EoiColumns *cols, const bool *set,
						EState *estate)
{
	EoiDirectUpdate *du = palloc0(sizeof(EoiDirectUpdate));

	if (rel->trigdesc != NULL)
		elog(ERROR, "eoi_direct_update_begin: \"%s\" has triggers", RelationGetRelationName(rel));
	du->buf = buffer_begin(rel, pstate, estate, no_position, NULL);
	datum_writer_init(&du->w, rel, cols);
	du->set = set;
	du->ncolumns = cols->ncolumns;
	du->oldslot = table_slot_create(rel, NULL);
	du->newslot = table_slot_create(rel, NULL);
	du->cid = GetCurrentCommandId(true);
	du->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	return du;
}

/* The new version of the row in oldslot, in newslot. */
static void
build_new_version(EoiDirectUpdate *du, char *const *fields)
{
	TupleTableSlot *oldslot = du->oldslot;
	TupleTableSlot *newslot = du->newslot;
	int			natts = newslot->tts_tupleDescriptor->natts;
	ErrorContextCallback errcb;

	slot_getallattrs(oldslot);
	ExecClearTuple(newslot);
	memcpy(newslot->tts_values, oldslot->tts_values, sizeof(Datum) * natts);
	memcpy(newslot->tts_isnull, oldslot->tts_isnull, sizeof(bool) * natts);
	du->w.values = newslot->tts_values;
	du->w.isnull = newslot->tts_isnull;
	errcb.callback = field_error_callback;
	errcb.arg = &du->w;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	for (int c = 0; c < du->ncolumns; c++)
		if (du->set[c])
			datum_field(&du->w.writer, c, fields[c], fields[c] ? strlen(fields[c]) : 0);
	error_context_stack = errcb.previous;
	ExecStoreVirtualTuple(newslot);
	if (newslot->tts_tupleDescriptor->constr != NULL)
	{
		if (newslot->tts_tupleDescriptor->constr->has_generated_stored)
			ExecComputeStoredGenerated(du->buf->rri, du->buf->estate, newslot, CMD_UPDATE);
		ExecConstraints(du->buf->rri, newslot, du->buf->estate);
	}
}

/*
 * The row version at `tid`, kept (with its page pinned) for
 * eoi_direct_update_row; NULL if there is none, or if this update's
 * snapshot does not see it.  The caller found it in the key's index with a
 * dirty snapshot, which also sees a version whose inserter is still at work
 * (heap_update would raise "attempted to update invisible tuple" on it) or
 * committed after this snapshot: such a row is for the ON CONFLICT
 * statement, which waits for its inserter and follows it.  The caller holds
 * no pin since the probe: it checks that the version still has the key it
 * looked for.
 */
TupleTableSlot *
eoi_direct_update_fetch(EoiDirectUpdate *du, ItemPointer tid)
{
	ExecClearTuple(du->oldslot);
	if (!table_tuple_fetch_row_version(du->buf->rel, tid, du->snapshot, du->oldslot))
		return NULL;
	return du->oldslot;
}

/*
 * Update the row version at `tid`, fetched by eoi_direct_update_fetch, to
 * the text fields, one per column of `cols` (NULL for SQL NULL).  Returns
 * TM_Ok, or how a concurrent writer got there first (TM_Updated,
 * TM_Deleted): then nothing is done, and the caller leaves the row to the
 * ON CONFLICT statement.
 */
TM_Result
eoi_direct_update_row(EoiDirectUpdate *du, ItemPointer tid, char *const *fields)
{
	DirectBuffer *buf = du->buf;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	TM_Result	result;

	bool		index_entries;
	bool		only_summarizing;

	build_new_version(du, fields);
	result = eoi_tuple_update(buf->rel, tid, du->newslot, du->cid, du->snapshot, &tmfd, &lockmode,
							  &index_entries, &only_summarizing);
	if (result == TM_Ok && buf->rri->ri_NumIndices > 0 && index_entries)
		list_free(eoi_insert_index_tuples(buf->rri, du->newslot, buf->estate, true, only_summarizing));
	ExecClearTuple(du->oldslot);
	ExecClearTuple(du->newslot);
	ResetPerTupleExprContext(buf->estate);
	return result;
}

void
eoi_direct_update_end(EoiDirectUpdate *du)
{
	UnregisterSnapshot(du->snapshot);
	ExecDropSingleTupleTableSlot(du->oldslot);
	ExecDropSingleTupleTableSlot(du->newslot);
	buffer_end(du->buf);
}
