/*-------------------------------------------------------------------------
 *
 * upsert.c
 *	  Writing a batch as upserts and deletes.
 *
 * Each message is decoded into a row of text fields (the same decoding as
 * the COPY path); a message whose value is null (a tombstone) has its key
 * decoded onto the key columns instead and deletes that row.
 *
 * A batch must end as its messages applied one by one would leave it, and
 * ON CONFLICT must never meet one key twice.  So the key columns are read
 * into values of their types, and messages of the same key are those whose
 * key values are equal in the key's unique index (1 and 01 are one integer,
 * 1.0 and 1 one numeric).  Of each key's messages, what remains to do is a
 * delete if any of them is a tombstone (an upsert after it inserts afresh),
 * then the last message if it is not a tombstone.  All the deletes go first,
 * in one DELETE ... USING unnest(...), then the rows, in one INSERT ...
 * SELECT FROM unnest(text arrays) ... ON CONFLICT (key) DO UPDATE (DO
 * NOTHING when every column is a key column).  Replaying a batch applies
 * the same final values again: that is what makes the sink idempotent.
 *
 * The bulk path.  INSERT ... ON CONFLICT costs a speculative insertion and
 * an index probe per row; for a new key that is most of the cost of its
 * row.  Where the target allows (bulk_fits), the batch's keys (typed,
 * sorted) are first looked up in the key's unique index, one descent each
 * and no executor (probe_keys).  The rows whose keys exist are updated in
 * place at the versions found, as the statement's conflict path updates
 * them (direct.c's eoi_direct_update_row: the same columns set, generated
 * columns, constraints, index entries unless HOT); one a concurrent writer
 * changed since is left to the ON CONFLICT statement, which waits for it
 * and follows it.  The new ones go in as tuples through direct.c's
 * multi-insert (table_multi_insert, then their index entries, as COPY
 * does).  A writer of its own inserting one of those keys in between makes
 * the insert raise unique_violation: the updates and the inserts run in a
 * subtransaction, which is then rolled back, and all the rows go in with
 * the ON CONFLICT statement after all; any other error is the batch's, as
 * before.  Where no key existed, the next batch is inserted without a
 * probe, and probed only if an existing key makes that raise
 * unique_violation (rolled back likewise).  The deletes take the same
 * index: each key's row, if a snapshot taken as the statement takes its
 * own sees one, is deleted through the table AM (delete_by_index), and one
 * a concurrent writer changed first is left to the DELETE statement.  (Its
 * plan hashed the whole target when it is small next to a batch: every
 * batch then read all of it.)  The statements stay the only path
 * (bulk_fits says no) for:
 *	- eoingest.upsert_path = on_conflict (superuser, for tests),
 *	- targets direct.c does not cover (partitioned tables and partitions,
 *	  a volatile default: eoi_direct_target_fits), those with any trigger
 *	  (the statements fire UPDATE and DELETE triggers, and INSERT ... ON
 *	  CONFLICT's own), and those with row-level security,
 *	- a job owner without INSERT, UPDATE and SELECT on the whole table: the
 *	  statement checks UPDATE even for a batch of new keys only, and the
 *	  same error must come from it (the deletes also need DELETE, or they
 *	  take their statement, which raises its error),
 *	- DO NOTHING (every column a key column), left as it was,
 *	- any other unique index or exclusion constraint: the statement checks
 *	  its rows in key order, interleaving updates and inserts; the new rows
 *	  after the updates could meet, or miss, a conflict the statement would
 *	  not,
 *	- a key index whose nulls are not distinct (the probe skips null keys),
 *	- a column whose text the statement's cast reads otherwise than the
 *	  type's input function does: a length typmod (the explicit cast to
 *	  varchar(n) truncates, the input function refuses) or a cast from text
 *	  by a function.
 *
 * The same machinery, an EoiChangeSet, applies Debezium change events
 * (cdc.c), which add their upserts and deletes to it one by one.
 *
 * This file owns the change set, the statements and their arrays, and
 * mode upsert's batch; the bulk path is in upsertbulk.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/table.h"
#include "catalog/pg_operator.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "apply/execcompat.h"
#include "apply/shape.h"
#include "apply/upsert.h"
#include "apply/upsert_internal.h"

int			eoingest_upsert_path = EOI_UPSERT_PATH_BULK;

const char	eoi_unchanged_value[] = "(unchanged)";

static char *
cell_copy(MemoryContext cxt, const char *data, size_t len)
{
	char	   *copy = MemoryContextAlloc(cxt, len + 1);

	memcpy(copy, data, len);
	copy[len] = '\0';
	return copy;
}

static void
array_field(EoiRowWriter *writer, int col, const char *data, size_t len)
{
	ArrayWriter *aw = (ArrayWriter *) writer;

	if (aw->nrows >= aw->capacity)
	{
		aw->capacity = Max(aw->capacity * 2, 64);
		aw->cells = repalloc_huge(aw->cells, sizeof(char *) * aw->capacity * aw->ncols);
	}
	if (data == eoi_unchanged_value)
	{
		aw->cells[aw->nrows * aw->ncols + col] = (char *) eoi_unchanged_value;
		aw->has_unchanged = true;
	}
	else
		aw->cells[aw->nrows * aw->ncols + col] =
			data ? cell_copy(aw->cxt, data, len) : NULL;
}

static void
array_end_row(EoiRowWriter *writer)
{
	((ArrayWriter *) writer)->nrows++;
}

static void
array_writer_init(ArrayWriter *aw, int ncols)
{
	aw->writer.field = array_field;
	aw->writer.datum = NULL;
	aw->writer.end_row = array_end_row;
	aw->cxt = CurrentMemoryContext;
	aw->ncols = ncols;
	aw->nrows = 0;
	aw->capacity = 64;
	aw->cells = palloc(sizeof(char *) * aw->capacity * ncols);
	aw->has_unchanged = false;
}

static char *
cell(ArrayWriter *aw, int row, int col)
{
	return aw->cells[row * aw->ncols + col];
}

/*
 * Whether row `row` of `aw` keeps some columns' current values; which ones
 * in `unchanged` (ncols entries) if it is not NULL.
 */
bool
eoi_upsert_row_unchanged(ArrayWriter *aw, int row, bool *unchanged)
{
	bool		any = false;

	if (!aw->has_unchanged)
	{
		if (unchanged)
			memset(unchanged, 0, sizeof(bool) * aw->ncols);
		return false;
	}
	for (int c = 0; c < aw->ncols; c++)
	{
		bool		u = cell(aw, row, c) == eoi_unchanged_value;

		if (unchanged)
			unchanged[c] = u;
		any |= u;
	}
	return any;
}

/*
 * Read the key of `op` from row `row` of `aw` (the key columns at `cols`),
 * with the types' input functions, as COPY reads them: a key that is not a
 * value of its type is this message's error.
 */
static void
read_key(Op *op, KeyOrder *ko, ArrayWriter *aw, int row, const int *cols)
{
	op->key = palloc(sizeof(Datum) * ko->nkeys);
	op->key_null = palloc(sizeof(bool) * ko->nkeys);
	op->distinct = false;
	for (int k = 0; k < ko->nkeys; k++)
	{
		char	   *v = cell(aw, row, cols[k]);

		if (v == eoi_unchanged_value)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("the change does not carry the value of key column %d", k + 1),
					 errhint("A key's value must be in every change of its row.")));
		op->key_null[k] = (v == NULL);
		op->key[k] = v ? InputFunctionCall(&ko->input[k], v, ko->ioparams[k], ko->typmods[k]) : (Datum) 0;
		op->distinct |= (v == NULL && ko->nulls_distinct);
	}
}

/* Order of keys; nulls sort last. */
static int
key_cmp(const Op *x, const Op *y, KeyOrder *ko)
{
	for (int k = 0; k < ko->nkeys; k++)
	{
		int32		c;

		if (x->key_null[k] || y->key_null[k])
		{
			if (!x->key_null[k])
				return -1;
			if (!y->key_null[k])
				return 1;
			continue;
		}
		c = DatumGetInt32(FunctionCall2Coll(&ko->cmp[k], ko->collations[k], x->key[k], y->key[k]));
		if (c != 0)
			return c < 0 ? -1 : 1;
	}
	return 0;
}

static int
op_cmp(const void *a, const void *b, void *arg)
{
	const Op   *x = a;
	const Op   *y = b;
	int			c = key_cmp(x, y, arg);

	if (c != 0)
		return c;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Do two ops act on the same row?  A key with a null is no other's. */
static bool
same_key(const Op *x, const Op *y, KeyOrder *ko)
{
	return !x->distinct && !y->distinct && key_cmp(x, y, ko) == 0;
}

/* A text[] Datum of column `col` for the given rows. */
static Datum
column_array(ArrayWriter *aw, int col, const int *rows, int nrows)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(nrows, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(nrows, 1));
	int			dims[1] = {nrows};
	int			lbs[1] = {1};
	Size		size = ARR_OVERHEAD_WITHNULLS(1, nrows);

	for (int i = 0; i < nrows; i++)
	{
		char	   *v = cell(aw, rows[i], col);

		/* an unchanged value of a row inserted afresh: NULL */
		nulls[i] = (v == NULL || v == eoi_unchanged_value);
		elems[i] = nulls[i] ? (Datum) 0 : CStringGetTextDatum(v);
		if (!nulls[i])
			size += INTALIGN(VARSIZE(DatumGetPointer(elems[i])));
	}

	/*
	 * An array holds at most MaxAllocSize: past that, rows of several
	 * messages are too large together (none is on its own), a resource
	 * error on which the worker retries with smaller batches.
	 */
	if (nrows > 1 && !AllocSizeIsValid(size))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("batch of %d rows is too large to upsert at once", nrows),
				 errdetail("Column %d of its rows would take %zu bytes in one array.", col + 1, size),
				 errhint("The job retries with smaller batches; a lower batch_max_bytes (eoingest.alter_job) avoids the retries.")));
	return PointerGetDatum(construct_md_array(elems, nulls, 1, dims, lbs,
											  TEXTOID, -1, false, TYPALIGN_INT));
}

char *
eoi_upsert_column_type(Relation rel, const char *name)
{
	AttrNumber	attnum = attnameAttNum(rel, name, false);
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);

	return format_type_extended(att->atttypid, att->atttypmod,
								FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

bool
eoi_upsert_is_key(List *key_columns, const char *name)
{
	ListCell   *lc;

	foreach(lc, key_columns)
		if (strcmp(strVal(lfirst(lc)), name) == 0)
			return true;
	return false;
}

/*
 * INSERT INTO target AS t (cols) SELECT u.c::type, ... FROM ROWS FROM (unnest($1), ...)
 * AS u(cols) ON CONFLICT (keys) DO UPDATE SET c = excluded.c ..., for every
 * column but the keys and those `unchanged` says (NULL: none).
 */
char *
eoi_upsert_build_upsert_sql(Relation rel, const char *target, EoiColumns *cols, List *key_columns,
							const bool *unchanged)
{
	StringInfoData sql;
	ListCell   *lc;
	bool		first = true;

	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s AS t (", target);
	for (int c = 0; c < cols->ncolumns; c++)
		appendStringInfo(&sql, "%s%s", c ? ", " : "", quote_identifier(cols->colnames[c]));
	appendStringInfoString(&sql, ") SELECT ");
	for (int c = 0; c < cols->ncolumns; c++)
		appendStringInfo(&sql, "%su.%s::%s", c ? ", " : "", quote_identifier(cols->colnames[c]),
						 eoi_upsert_column_type(rel, cols->colnames[c]));
	appendStringInfoString(&sql, " FROM ROWS FROM (");
	for (int c = 0; c < cols->ncolumns; c++)
		appendStringInfo(&sql, "%spg_catalog.unnest($%d::pg_catalog.text[])", c ? ", " : "", c + 1);
	appendStringInfoString(&sql, ") AS u(");
	for (int c = 0; c < cols->ncolumns; c++)
		appendStringInfo(&sql, "%s%s", c ? ", " : "", quote_identifier(cols->colnames[c]));
	appendStringInfoChar(&sql, ')');
	if (key_columns == NIL)
		return sql.data;		/* an append (eoi_changes_begin_append) */
	appendStringInfoString(&sql, " ON CONFLICT (");
	foreach(lc, key_columns)
		appendStringInfo(&sql, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(strVal(lfirst(lc))));
	appendStringInfoChar(&sql, ')');
	for (int c = 0; c < cols->ncolumns; c++)
	{
		const char *q = quote_identifier(cols->colnames[c]);

		if (eoi_upsert_is_key(key_columns, cols->colnames[c]) || (unchanged && unchanged[c]))
			continue;
		appendStringInfo(&sql, "%s%s = excluded.%s", first ? " DO UPDATE SET " : ", ", q, q);
		first = false;
	}
	if (first)
		appendStringInfoString(&sql, " DO NOTHING");
	return sql.data;
}

static Oid	check_unique_index(Relation rel, List *key_columns);

/*
 * The equality operator of the key index `idx` for column `colname`, from
 * the index's operator class, schema-qualified for OPERATOR(...): the
 * equality that decides whether two keys are one (citext's, an extension
 * type's), which pg_catalog.= need not be.
 */
static char *
index_equality_operator(Relation idx, Relation rel, const char *colname)
{
	AttrNumber	attnum = attnameAttNum(rel, colname, false);
	int			j;
	Oid			opno;
	HeapTuple	tup;
	Form_pg_operator op;
	char	   *result;

	for (j = 0; j < idx->rd_index->indnkeyatts && idx->rd_index->indkey.values[j] != attnum; j++)
		;
	if (j == idx->rd_index->indnkeyatts)
		elog(ERROR, "column \"%s\" is not in index \"%s\"", colname, RelationGetRelationName(idx));
	opno = get_opfamily_member(idx->rd_opfamily[j], idx->rd_opcintype[j], idx->rd_opcintype[j],
							   BTEqualStrategyNumber);
	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "missing btree equality operator for column \"%s\" of index \"%s\"",
			 colname, RelationGetRelationName(idx));
	op = (Form_pg_operator) GETSTRUCT(tup);
	result = psprintf("%s.%s", quote_identifier(get_namespace_name(op->oprnamespace)),
					  NameStr(op->oprname));
	ReleaseSysCache(tup);
	return result;
}

/*
 * DELETE FROM target t USING ROWS FROM (unnest($1), ...) AS u(keys)
 * WHERE t.k = u.k::type ..., with = the key index's equality.
 */
char *
eoi_upsert_build_delete_sql(Relation rel, const char *target, EoiColumns *keys)
{
	StringInfoData sql;
	List	   *names = NIL;
	Relation	idx;

	for (int k = 0; k < keys->ncolumns; k++)
		names = lappend(names, makeString(keys->colnames[k]));
	idx = index_open(check_unique_index(rel, names), AccessShareLock);
	initStringInfo(&sql);
	appendStringInfo(&sql, "DELETE FROM %s AS t USING ROWS FROM (", target);
	for (int k = 0; k < keys->ncolumns; k++)
		appendStringInfo(&sql, "%spg_catalog.unnest($%d::pg_catalog.text[])", k ? ", " : "", k + 1);
	appendStringInfoString(&sql, ") AS u(");
	for (int k = 0; k < keys->ncolumns; k++)
		appendStringInfo(&sql, "%s%s", k ? ", " : "", quote_identifier(keys->colnames[k]));
	appendStringInfoString(&sql, ") WHERE ");
	for (int k = 0; k < keys->ncolumns; k++)
	{
		const char *q = quote_identifier(keys->colnames[k]);

		appendStringInfo(&sql, "%st.%s OPERATOR(%s) u.%s::%s", k ? " AND " : "",
						 q, index_equality_operator(idx, rel, keys->colnames[k]), q,
						 eoi_upsert_column_type(rel, keys->colnames[k]));
	}
	index_close(idx, AccessShareLock);
	return sql.data;
}

/*
 * The equality operator of key column `colname` in the key's unique index
 * `index` (see above), for OPERATOR(...).
 */
char *
eoi_upsert_key_equality(Relation rel, Oid index, const char *colname)
{
	Relation	idx = index_open(index, AccessShareLock);
	char	   *result = index_equality_operator(idx, rel, colname);

	index_close(idx, AccessShareLock);
	return result;
}

/* Where each key column sits among the decoded value columns. */
static int *
key_positions(EoiColumns *cols, List *key_columns)
{
	int		   *pos = palloc(sizeof(int) * Max(list_length(key_columns), 1));
	ListCell   *lc;

	foreach(lc, key_columns)
	{
		const char *name = strVal(lfirst(lc));
		int			c;

		for (c = 0; c < cols->ncolumns && strcmp(cols->colnames[c], name) != 0; c++)
			;
		if (c == cols->ncolumns)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("key column \"%s\" is not among the columns the format fills", name),
					 errhint("Key columns must be written by the messages, not generated.")));
		pos[foreach_current_index(lc)] = c;
	}
	return pos;
}

uint64
eoi_upsert_execute_with_arrays(const char *sql, ArrayWriter *aw, const int *rows, int nrows, int ncols)
{
	Oid		   *types = palloc(sizeof(Oid) * ncols);
	Datum	   *args = palloc(sizeof(Datum) * ncols);
	int			ret;

	for (int c = 0; c < ncols; c++)
	{
		types[c] = TEXTARRAYOID;
		args[c] = column_array(aw, c, rows, nrows);
	}
	ret = SPI_execute_with_args(sql, ncols, types, args, NULL, false, 0);
	if (ret < 0)
		elog(ERROR, "upsert statement failed: %s", SPI_result_code_string(ret));
	return SPI_processed;
}

/* Error context: the message being decoded. */
typedef struct DecodePosition
{
	EoiBatch   *batch;
	int			current;
} DecodePosition;

static void
decode_error_callback(void *arg)
{
	DecodePosition *dp = arg;

	eoi_message_errcontext(dp->batch, dp->current);
}

/* The key columns' input functions, and their order in the key's unique index. */
static KeyOrder *
key_order(Relation rel, List *key_columns)
{
	KeyOrder   *ko = palloc0(sizeof(KeyOrder));
	Relation	idx = index_open(check_unique_index(rel, key_columns), AccessShareLock);
	ListCell   *lc;

	ko->nkeys = list_length(key_columns);
	ko->input = palloc0(sizeof(FmgrInfo) * ko->nkeys);
	ko->ioparams = palloc0(sizeof(Oid) * ko->nkeys);
	ko->typmods = palloc0(sizeof(int32) * ko->nkeys);
	ko->cmp = palloc0(sizeof(FmgrInfo) * ko->nkeys);
	ko->collations = palloc0(sizeof(Oid) * ko->nkeys);
	ko->index = RelationGetRelid(idx);
	ko->index_att = palloc0(sizeof(AttrNumber) * ko->nkeys);
	ko->heap_att = palloc0(sizeof(AttrNumber) * ko->nkeys);
	ko->eqproc = palloc0(sizeof(RegProcedure) * ko->nkeys);
	ko->nulls_distinct = !idx->rd_index->indnullsnotdistinct;
	foreach(lc, key_columns)
	{
		int			k = foreach_current_index(lc);
		AttrNumber	attnum = attnameAttNum(rel, strVal(lfirst(lc)), false);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
		Oid			infunc;
		Oid			cmpproc;
		int			j;

		getTypeInputInfo(att->atttypid, &infunc, &ko->ioparams[k]);
		fmgr_info(infunc, &ko->input[k]);
		ko->typmods[k] = att->atttypmod;
		for (j = 0; j < idx->rd_index->indnkeyatts && idx->rd_index->indkey.values[j] != attnum; j++)
			;
		Assert(j < idx->rd_index->indnkeyatts);
		cmpproc = get_opfamily_proc(idx->rd_opfamily[j], idx->rd_opcintype[j],
									idx->rd_opcintype[j], BTORDER_PROC);
		if (!OidIsValid(cmpproc))
			elog(ERROR, "missing btree comparison function for column \"%s\" of index \"%s\"",
				 NameStr(att->attname), RelationGetRelationName(idx));
		fmgr_info(cmpproc, &ko->cmp[k]);
		ko->collations[k] = idx->rd_indcollation[j];
		ko->index_att[k] = j + 1;
		ko->heap_att[k] = attnum;
		ko->eqproc[k] = get_opcode(get_opfamily_member(idx->rd_opfamily[j], idx->rd_opcintype[j],
													   idx->rd_opcintype[j], BTEqualStrategyNumber));
	}
	index_close(idx, AccessShareLock);
	return ko;
}

EoiChangeSet *
eoi_changes_begin(Relation rel, const char *target, EoiColumns *cols, EoiColumns *keys,
				  List *key_columns)
{
	EoiChangeSet *cs = palloc0(sizeof(EoiChangeSet));

	cs->rel = rel;
	cs->target = target;
	cs->cols = cols;
	cs->keys = keys;
	cs->key_columns = key_columns;
	cs->keypos = key_positions(cols, key_columns);
	cs->ko = key_order(rel, key_columns);
	for (int k = 0; k < keys->ncolumns; k++)
		cs->all_keypos[k] = k;
	array_writer_init(&cs->values, cols->ncolumns);
	array_writer_init(&cs->tombstones, keys->ncolumns);
	cs->capacity = 64;
	cs->ops = palloc(sizeof(Op) * cs->capacity);
	cs->cxt = CurrentMemoryContext;
	cs->bulk = eoi_upsert_bulk_fits(rel, cols, key_columns, cs->ko);
	cs->set_columns = palloc(sizeof(bool) * Max(cols->ncolumns, 1));
	for (int c = 0; c < cols->ncolumns; c++)
		cs->set_columns[c] = !eoi_upsert_is_key(key_columns, cols->colnames[c]);
	cs->eoi_upsert_delete_by_index = cs->bulk &&
		pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), ACL_DELETE) == ACLCHECK_OK;
	cs->message = -1;
	return cs;
}

/*
 * A change set without a key (envelope debezium's cdc_mode history): each
 * row added with eoi_changes_add_upsert is inserted, in the order added,
 * none replaces another.  A value kept with eoi_unchanged_value is NULL.
 */
EoiChangeSet *
eoi_changes_begin_append(Relation rel, const char *target, EoiColumns *cols)
{
	EoiChangeSet *cs = palloc0(sizeof(EoiChangeSet));

	cs->rel = rel;
	cs->target = target;
	cs->cols = cols;
	cs->append = true;
	array_writer_init(&cs->values, cols->ncolumns);
	cs->capacity = 64;
	cs->ops = palloc(sizeof(Op) * cs->capacity);
	cs->cxt = CurrentMemoryContext;
	cs->message = -1;
	return cs;
}

/* The ops added from now on come from message `message` of the batch. */
void
eoi_changes_at_message(EoiChangeSet *cs, int message)
{
	cs->message = message;
}

/*
 * The messages whose rows, new to the table, took NULL for a value the
 * change did not carry (once per row), since the change set began; how
 * many, and which in *messages.
 */
int
eoi_changes_nulled(EoiChangeSet *cs, const int **messages)
{
	*messages = cs->nulled;
	return cs->nnulled;
}

/* Push `name`: {column: text or null, ...} of row `row` of `aw`, leaving out the values kept. */
static void
describe_row(JsonbParseState **state, const char *name, ArrayWriter *aw, int row, EoiColumns *cols,
			 bool kept_is_null)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) name;
	v.val.string.len = strlen(name);
	(void) pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
	(void) pushJsonbValue(state, WJB_KEY, &v);
	(void) pushJsonbValue(state, WJB_BEGIN_OBJECT, NULL);
	for (int c = 0; c < aw->ncols; c++)
	{
		char	   *cellv = cell(aw, row, c);

		if (cellv == eoi_unchanged_value && !kept_is_null)
			continue;
		v.type = jbvString;
		v.val.string.val = cols->colnames[c];
		v.val.string.len = strlen(cols->colnames[c]);
		(void) pushJsonbValue(state, WJB_KEY, &v);
		if (cellv == NULL || cellv == eoi_unchanged_value)
			v.type = jbvNull;
		else
		{
			v.val.string.val = cellv;
			v.val.string.len = strlen(cellv);
		}
		(void) pushJsonbValue(state, WJB_VALUE, &v);
	}
	(void) pushJsonbValue(state, WJB_END_OBJECT, NULL);
	(void) pushJsonbValue(state, WJB_END_OBJECT, NULL);
}

/*
 * A dry run (api/preview.c): the changes added since the last apply, in the
 * order added, each an element pushed into the array `state` is building:
 * {"upsert": {column: text, ...}} (a row inserted, or replacing the row of
 * its key), {"delete": {key column: text, ...}}, or {"append": {...}} (a
 * set without key).  A value the change keeps (eoi_unchanged_value) is
 * left out of an upsert, and null in an append.  The texts are what the columns' input functions will read.
 */
void
eoi_changes_describe(EoiChangeSet *cs, JsonbParseState **state)
{
	for (int i = 0; i < cs->nops; i++)
	{
		Op		   *op = &cs->ops[i];

		if (op->is_delete)
			describe_row(state, "delete", &cs->tombstones, op->row, cs->keys, false);
		else
			describe_row(state, cs->append ? "append" : "upsert", &cs->values, op->row, cs->cols,
						 cs->append);
	}
}

/* Forget the changes added since the last apply (a dry run's, or a failed message's). */
void
eoi_changes_forget(EoiChangeSet *cs)
{
	cs->nops = 0;
	cs->values.nrows = 0;
	cs->values.has_unchanged = false;
	cs->tombstones.nrows = 0;
	cs->nnulled = 0;
}

/* Where to decode a row to upsert; then eoi_changes_add_upsert(). */
EoiRowWriter *
eoi_changes_row_writer(EoiChangeSet *cs)
{
	return &cs->values.writer;
}

/* Where to decode a key to delete; then eoi_changes_add_delete(). */
EoiRowWriter *
eoi_changes_key_writer(EoiChangeSet *cs)
{
	return &cs->tombstones.writer;
}

static Op *
next_op(EoiChangeSet *cs)
{
	if (cs->nops >= cs->capacity)
	{
		cs->capacity *= 2;
		cs->ops = repalloc_huge(cs->ops, sizeof(Op) * cs->capacity);
	}
	cs->ops[cs->nops].seq = cs->seq++;
	cs->ops[cs->nops].message = cs->message;
	return &cs->ops[cs->nops++];
}

/*
 * The row last written to the row writer is to be upserted.  Its key is
 * read here, in its type: a key that is not a value of its type is the
 * current message's error.
 */
void
eoi_changes_add_upsert(EoiChangeSet *cs)
{
	MemoryContext old = MemoryContextSwitchTo(cs->cxt);
	Op		   *op = next_op(cs);

	op->is_delete = false;
	op->row = cs->values.nrows - 1;
	if (!cs->append)
		read_key(op, cs->ko, &cs->values, op->row, cs->keypos);
	MemoryContextSwitchTo(old);
}

/* The key last written to the key writer is to be deleted. */
void
eoi_changes_add_delete(EoiChangeSet *cs)
{
	MemoryContext old;
	Op		   *op;

	Assert(!cs->append);
	old = MemoryContextSwitchTo(cs->cxt);
	op = next_op(cs);
	op->is_delete = true;
	op->row = cs->tombstones.nrows - 1;
	read_key(op, cs->ko, &cs->tombstones, op->row, cs->all_keypos);
	MemoryContextSwitchTo(old);
}

/* Insert the rows of an append set added since the last apply, in order. */
static uint64
apply_appends(EoiChangeSet *cs)
{
	int		   *rows = palloc(sizeof(int) * Max(cs->nops, 1));
	int			n = cs->nops;
	uint64		processed;

	for (int i = 0; i < n; i++)
		rows[i] = cs->ops[i].row;
	cs->nops = 0;
	if (n == 0)
		return 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	processed = eoi_upsert_execute_with_arrays(eoi_upsert_build_upsert_sql(cs->rel, cs->target, cs->cols, NIL, NULL),
											   &cs->values, rows, n, cs->cols->ncolumns);
	SPI_finish();
	pfree(rows);
	return processed;
}

/*
 * Apply the changes added since the last apply: of each key's changes, in
 * the order they were added, a delete if one of them is a delete, then the
 * last one if it is an upsert.  Returns the rows deleted and upserted.
 *
 * An upsert that keeps some columns' values (eoi_unchanged_value) takes
 * them from the key's earlier upserts in the set where it can; the rows
 * that still keep some go their own way (upsertkeep.c).
 */
static uint64
apply_keyed(EoiChangeSet *cs)
{
	int		   *upsert_rows = palloc(sizeof(int) * Max(cs->nops, 1));
	Op		  **upsert_ops = palloc(sizeof(Op *) * Max(cs->nops, 1));
	int		   *delete_rows = palloc(sizeof(int) * Max(cs->nops, 1));
	Op		  **delete_ops = palloc(sizeof(Op *) * Max(cs->nops, 1));
	int		   *kept_rows = palloc(sizeof(int) * Max(cs->nops, 1));
	Op		  **kept_ops = palloc(sizeof(Op *) * Max(cs->nops, 1));
	int			nupserts = 0;
	int			ndeletes = 0;
	int			nkept = 0;
	uint64		processed = 0;
	Op		   *ops = cs->ops;
	int			n = cs->nops;

	qsort_arg(ops, n, sizeof(Op), op_cmp, cs->ko);
	for (int first = 0, next; first < n; first = next)
	{
		int			last_delete = -1;

		for (next = first; next < n && (next == first || same_key(&ops[first], &ops[next], cs->ko)); next++)
			if (ops[next].is_delete)
				last_delete = next;
		if (last_delete >= 0)
		{
			delete_ops[ndeletes] = &ops[last_delete];
			delete_rows[ndeletes++] = ops[last_delete].row;
		}
		if (ops[next - 1].is_delete)
			continue;
		if (eoi_upsert_resolve_unchanged(cs, ops, first, next - 1, last_delete))
		{
			kept_ops[nkept] = &ops[next - 1];
			kept_rows[nkept++] = ops[next - 1].row;
			continue;
		}
		upsert_ops[nupserts] = &ops[next - 1];
		upsert_rows[nupserts++] = ops[next - 1].row;
	}
	cs->nops = 0;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (ndeletes > 0)
		processed += eoi_upsert_apply_deletes(cs, delete_ops, delete_rows, ndeletes);
	if (nupserts > 0 && eoi_upsert_apply_bulk(cs, upsert_rows, upsert_ops, nupserts))
		processed += nupserts;
	else if (nupserts > 0)
		processed += eoi_upsert_execute_with_arrays(eoi_upsert_build_upsert_sql(cs->rel, cs->target, cs->cols, cs->key_columns, NULL),
										 &cs->values, upsert_rows, nupserts, cs->cols->ncolumns);
	if (nkept > 0)
		processed += eoi_upsert_apply_unchanged(cs, kept_ops, kept_rows, nkept);
	SPI_finish();
	pfree(kept_rows);
	pfree(kept_ops);
	pfree(upsert_rows);
	pfree(upsert_ops);
	pfree(delete_rows);
	pfree(delete_ops);
	return processed;
}

/*
 * Apply the changes added since the last apply; returns the rows deleted,
 * inserted and updated.
 */
uint64
eoi_changes_apply(EoiChangeSet *cs)
{
	return cs->append ? apply_appends(cs) : apply_keyed(cs);
}

uint64
eoi_upsert_batch(const EoiJob *job, EoiBatch *batch)
{
	Relation	rel = eoi_open_job_target(job, RowExclusiveLock);
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	EoiMapping	mapping = eoi_job_mapping(job);
	EoiColumns *cols = eoi_columns_for(rel, &mapping, estate);
	/* a target create_target made from the key's schema: its primary key */
	List	   *key_columns = job->key_columns != NIL ? job->key_columns : eoi_primary_key_columns(rel);
	EoiColumns *keys;
	EoiChangeSet *cs;
	uint64		processed;
	DecodePosition dp = {batch, -1};
	ErrorContextCallback errcb;

	if (key_columns == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target \"%s\" of job \"%s\" has no primary key to upsert by",
						RelationGetRelationName(rel), job->name),
				 errdetail("The job takes its key columns from the table's primary key, which create_target gives a table it creates."),
				 errhint("Give the table a primary key, or name the key columns with eoingest.alter_job('%s', key_columns => '{id}').",
						 job->name)));
	keys = eoi_columns_for_keys(rel, &mapping, job->key_format, key_columns);

	eoi_check_target_kind(rel, job->mode);
	eoi_check_target_unchanged(job, rel, cols);
	cs = eoi_changes_begin(rel, job->target, cols, keys, key_columns);

	errcb.callback = decode_error_callback;
	errcb.arg = &dp;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];

		CHECK_FOR_INTERRUPTS();
		dp.current = i;
		if (msg->payload == NULL)
		{
			if (msg->key == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("tombstone message has no key"),
						 errhint("A null value deletes the row of the message's key; this message has neither.")));
			(void) eoi_decode_kafka_message(keys, msg, eoi_message_topic(batch, i), true,
											eoi_changes_key_writer(cs), econtext);
			eoi_changes_add_delete(cs);
		}
		else if (eoi_decode_kafka_message(cols, msg, eoi_message_topic(batch, i), false,
										  eoi_changes_row_writer(cs), econtext))
		{
			eoi_changes_add_upsert(cs);
		}
		/* else a CSV header: no row, nothing to do */
		ResetExprContext(econtext);
	}
	error_context_stack = errcb.previous;

	processed = eoi_changes_apply(cs);

	FreeExecutorState(estate);
	table_close(rel, NoLock);
	return processed;
}

/* The target's primary key columns, in key order; NIL if it has none. */
List *
eoi_primary_key_columns(Relation rel)
{
	Oid			pk = eoi_primary_key_index(rel);
	List	   *names = NIL;
	Relation	idx;

	if (!OidIsValid(pk))
		return NIL;
	idx = index_open(pk, AccessShareLock);
	for (int i = 0; i < idx->rd_index->indnkeyatts; i++)
	{
		AttrNumber	attnum = idx->rd_index->indkey.values[i];

		names = lappend(names, makeString(pstrdup(get_attname(RelationGetRelid(rel), attnum, false))));
	}
	index_close(idx, AccessShareLock);
	return names;
}

static bool
index_matches_key(Relation idx, Relation rel, List *key_columns)
{
	Form_pg_index form = idx->rd_index;

	if (!form->indisunique || !form->indimmediate || !form->indisvalid ||
		form->indnkeyatts != list_length(key_columns) ||
		!heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL) ||
		!heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL))
		return false;
	for (int i = 0; i < form->indnkeyatts; i++)
	{
		AttrNumber	attnum = form->indkey.values[i];

		if (attnum <= 0 || !eoi_upsert_is_key(key_columns, get_attname(RelationGetRelid(rel), attnum, false)))
			return false;
	}
	return true;
}

/* ON CONFLICT (key) needs a unique index on exactly the key columns: its OID. */
static Oid
check_unique_index(Relation rel, List *key_columns)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		bool		matches = index_matches_key(idx, rel, key_columns);

		index_close(idx, AccessShareLock);
		if (matches)
			return lfirst_oid(lc);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
			 errmsg("mode upsert needs a unique index on exactly the key columns of \"%s\"",
					RelationGetRelationName(rel)),
			 errhint("Create a unique index (not partial, not deferrable) on the key_columns, or name the columns of an existing one.")));
}

/*
 * At create_job: the key columns must be filled by the format, decodable
 * from a message key, and backed by a unique index (planning the upsert
 * checks that, and the caller's INSERT, UPDATE and DELETE privileges).
 */
void
eoi_upsert_check(Relation rel, const EoiMapping *mapping, EoiFormat key_format, List *key_columns)
{
	EoiColumns *cols = eoi_columns_for(rel, mapping, NULL);
	EoiColumns *keys = eoi_columns_for_keys(rel, mapping, key_format, key_columns);
	char	   *target = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
													RelationGetRelationName(rel));
	Oid		   *types = palloc(sizeof(Oid) * Max(cols->ncolumns, 1));

	static const struct
	{
		AclMode		mode;
		const char *name;
	}			needed[] = {{ACL_INSERT, "INSERT"}, {ACL_UPDATE, "UPDATE"}, {ACL_DELETE, "DELETE"}};

	for (int i = 0; i < lengthof(needed); i++)
		if (pg_class_aclcheck(RelationGetRelid(rel), GetUserId(), needed[i].mode) != ACLCHECK_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("mode upsert needs %s privilege on \"%s\"", needed[i].name,
							RelationGetRelationName(rel)),
					 errhint("Upserts insert and update rows, and tombstones delete them: grant INSERT, UPDATE and DELETE.")));
	(void) key_positions(cols, key_columns);
	(void) check_unique_index(rel, key_columns);
	for (int c = 0; c < cols->ncolumns; c++)
		types[c] = TEXTARRAYOID;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_prepare(eoi_upsert_build_upsert_sql(rel, target, cols, key_columns, NULL), cols->ncolumns, types) == NULL)
		elog(ERROR, "could not prepare the upsert: %s", SPI_result_code_string(SPI_result));
	if (SPI_prepare(eoi_upsert_build_delete_sql(rel, target, keys), keys->ncolumns, types) == NULL)
		elog(ERROR, "could not prepare the delete: %s", SPI_result_code_string(SPI_result));
	SPI_finish();
}
