/*-------------------------------------------------------------------------
 *
 * upsertbulk.c
 *	  Mode upsert's bulk path (see upsert.c's header comment): where the
 *	  target allows (bulk_fits), a batch's keys are looked up in the key's
 *	  unique index (probe_keys), the rows of existing keys updated in place
 *	  and the new ones inserted as tuples, in a subtransaction that falls
 *	  back to the ON CONFLICT statement on a unique_violation; deletes go
 *	  through the same index (delete_by_index).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "parser/parse_relation.h"
#include "utils/acl.h"
#include "utils/rls.h"
#include "utils/lsyscache.h"

#include "apply/direct.h"
#include "apply/execcompat.h"
#include "apply/upsert_internal.h"
#include "base/txn.h"

/*
 * Does the column's text read the same through the statement's cast
 * (text::type) as through its type's input function (direct.c)?
 */
static bool
cast_is_input(Form_pg_attribute att)
{
	int32		typmod = att->atttypmod;
	Oid			base = getBaseTypeAndTypmod(att->atttypid, &typmod);
	Oid			func;
	CoercionPathType path;

	/* The input functions of these apply a typmod as the cast does: rounding. */
	if (typmod >= 0 && base != NUMERICOID && base != TIMESTAMPOID && base != TIMESTAMPTZOID &&
		base != TIMEOID && base != TIMETZOID && base != INTERVALOID)
		return false;
	path = find_coercion_pathway(base, TEXTOID, COERCION_EXPLICIT, &func);
	return path == COERCION_PATH_RELABELTYPE || path == COERCION_PATH_COERCEVIAIO;
}

/* May the changes to `rel` take the bulk path?  See the header comment. */
bool
eoi_upsert_bulk_fits(Relation rel, EoiColumns *cols, List *key_columns, KeyOrder *ko)
{
	List	   *indexes;
	ListCell   *lc;
	bool		fits = true;
	bool		has_value_column = false;

	if (eoingest_upsert_path != EOI_UPSERT_PATH_BULK || !ko->nulls_distinct ||
		rel->trigdesc != NULL || !eoi_direct_target_fits(rel, cols) ||
		check_enable_rls(RelationGetRelid(rel), InvalidOid, true) != RLS_NONE ||
		pg_class_aclmask(RelationGetRelid(rel), GetUserId(), ACL_INSERT | ACL_UPDATE | ACL_SELECT,
						 ACLMASK_ALL) != (ACL_INSERT | ACL_UPDATE | ACL_SELECT))
		return false;
	for (int c = 0; c < cols->ncolumns; c++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel),
											  attnameAttNum(rel, cols->colnames[c], false) - 1);

		if (!eoi_upsert_is_key(key_columns, cols->colnames[c]))
			has_value_column = true;
		if (!cast_is_input(att))
			return false;
	}
	if (!has_value_column)
		return false;
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	idx;

		if (lfirst_oid(lc) == ko->index)
			continue;
		idx = index_open(lfirst_oid(lc), AccessShareLock);
		fits &= !idx->rd_index->indisunique && !idx->rd_index->indisexclusion;
		index_close(idx, AccessShareLock);
	}
	list_free(indexes);
	return fits;
}

/*
 * The row version of op's key that `scan` (of the key's unique index) sees,
 * into `slot`; false if none.
 */
static bool
find_key(KeyOrder *ko, IndexScanDesc scan, const Op *op, TupleTableSlot *slot)
{
	ScanKeyData skeys[INDEX_MAX_KEYS];

	if (op->distinct)
		return false;			/* a null in the key: no row has it */
	for (int k = 0; k < ko->nkeys; k++)
		ScanKeyEntryInitialize(&skeys[k], 0, ko->index_att[k], BTEqualStrategyNumber,
							   InvalidOid, ko->collations[k], ko->eqproc[k], op->key[k]);
	index_rescan(scan, skeys, ko->nkeys, NULL, 0);
	return index_getnext_slot(scan, ForwardScanDirection, slot);
}

/*
 * Which of the rows' keys are in the key's unique index: one descent each
 * (the keys are sorted), with a dirty snapshot, as ON CONFLICT looks.  A
 * hint only: a key seen here that is gone by the time its row is written
 * is inserted by the ON CONFLICT statement, and one not seen that a
 * concurrent writer inserts meanwhile makes the multi-insert raise
 * unique_violation (see try_bulk).  Returns how many exist; tids[] has
 * the row version each found.
 */
static int
probe_keys(EoiChangeSet *cs, Op *const *ops, int nrows, bool *exists, ItemPointerData *tids)
{
	KeyOrder   *ko = cs->ko;
	Relation	idx = index_open(ko->index, AccessShareLock);
	TupleTableSlot *slot = table_slot_create(cs->rel, NULL);
	SnapshotData dirty;
	IndexScanDesc scan;
	int			nexist = 0;

	InitDirtySnapshot(dirty);
	scan = eoi_index_beginscan(cs->rel, idx, &dirty, ko->nkeys);
	for (int i = 0; i < nrows; i++)
	{
		const Op   *op = ops[i];

		exists[i] = false;
		if (find_key(ko, scan, op, slot))
		{
			exists[i] = true;
			tids[i] = slot->tts_tid;
			nexist++;
		}
		CHECK_FOR_INTERRUPTS();
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, AccessShareLock);
	return nexist;
}

/*
 * Delete the rows of the keys of ops[0..n-1] (their rows rows[]) as the
 * DELETE statement would, by the key's unique index: one descent each with
 * a snapshot taken as the statement takes its own, then the row through
 * the table AM.  A row that a concurrent writer updated or deleted after
 * that snapshot is left to the statement, which follows it to its newest
 * version: its row goes into later[] (*nlater of them).  Returns how many
 * rows were deleted here.
 */
uint64
eoi_upsert_delete_by_index(EoiChangeSet *cs, Op *const *ops, const int *rows, int n, int *later, int *nlater)
{
	KeyOrder   *ko = cs->ko;
	Relation	idx = index_open(ko->index, AccessShareLock);
	TupleTableSlot *slot = table_slot_create(cs->rel, NULL);
	CommandId	cid;
	Snapshot	snapshot;
	IndexScanDesc scan;
	uint64		deleted = 0;

	/* what this transaction wrote so far is seen, as by a new statement */
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	cid = GetCurrentCommandId(true);
	/* For tests: a concurrent writer changes a row to delete here. */
	EOI_FAULT_POINT("upsert-bulk-delete");
	*nlater = 0;
	scan = eoi_index_beginscan(cs->rel, idx, snapshot, ko->nkeys);
	for (int i = 0; i < n; i++)
	{
		TM_FailureData tmfd;
		TM_Result	result;

		if (!find_key(ko, scan, ops[i], slot))
			continue;			/* no such row */
		result = table_tuple_delete(cs->rel, &slot->tts_tid, cid, snapshot, InvalidSnapshot,
									true, &tmfd, false);
		switch (result)
		{
			case TM_Ok:
				deleted++;
				break;
			case TM_Updated:
			case TM_Deleted:
			case TM_SelfModified:
				later[(*nlater)++] = rows[i];
				break;
			default:
				elog(ERROR, "unexpected table_tuple_delete status: %u", result);
		}
		CHECK_FOR_INTERRUPTS();
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	index_close(idx, AccessShareLock);
	UnregisterSnapshot(snapshot);
	CommandCounterIncrement();
	return deleted;
}

/*
 * The deletes of a batch: by the key's index where the bulk path may take
 * them, the rest (or all) by the DELETE statement.
 */
uint64
eoi_upsert_apply_deletes(EoiChangeSet *cs, Op *const *ops, int *rows, int n)
{
	uint64		processed = 0;

	if (cs->eoi_upsert_delete_by_index)
	{
		int		   *later = palloc(sizeof(int) * n);

		processed = eoi_upsert_delete_by_index(cs, ops, rows, n, later, &n);
		rows = later;
	}
	if (n > 0)
		processed += eoi_upsert_execute_with_arrays(eoi_upsert_build_delete_sql(cs->rel, cs->target, cs->keys),
										 &cs->tombstones, rows, n, cs->keys->ncolumns);
	return processed;
}

/* Insert the rows whose keys did not exist, as tuples (direct.c). */
static void
insert_new(EoiChangeSet *cs, const int *rows, int nrows, const bool *exists)
{
	ParseState *pstate = make_parsestate(NULL);
	EState	   *estate = CreateExecutorState();
	EoiDirectRows *dr;

	eoi_target_range_table(pstate, cs->rel, cs->cols->names);
	eoi_check_range_table_permissions(pstate);
	dr = eoi_direct_rows_begin(cs->rel, pstate, cs->cols, estate);
	for (int i = 0; i < nrows; i++)
		if (!exists[i])
			eoi_direct_rows_add(dr, &cs->values.cells[rows[i] * cs->values.ncols]);
	eoi_direct_rows_end(dr);
	FreeExecutorState(estate);
	free_parsestate(pstate);
}

/* Does the row version in `slot` have op's key? */
static bool
has_key(KeyOrder *ko, TupleTableSlot *slot, const Op *op)
{
	for (int k = 0; k < ko->nkeys; k++)
	{
		bool		isnull;
		Datum		value = slot_getattr(slot, ko->heap_att[k], &isnull);

		if (isnull || DatumGetInt32(FunctionCall2Coll(&ko->cmp[k], ko->collations[k],
													  value, op->key[k])) != 0)
			return false;
	}
	return true;
}

/*
 * Update the rows whose keys exist, at the versions the probe found
 * (tids), as the ON CONFLICT statement updates the row it meets (direct.c).
 * A row that a concurrent writer changed since the probe is left to the
 * statement, which waits for it and follows it: its row goes into later[].
 * So is one whose version this update's snapshot does not see (another
 * session's transaction inserted it and is still open, or committed after
 * the probe), is gone, or no longer has the key (the probe held no pin: a
 * version whose inserter aborted can be pruned, and its slot reused).
 * Returns how many are left.
 */
static int
update_existing(EoiChangeSet *cs, const int *rows, Op *const *ops, ItemPointerData *tids,
				int nrows, int *later)
{
	ParseState *pstate = make_parsestate(NULL);
	EState	   *estate = CreateExecutorState();
	EoiDirectUpdate *du;
	int			nlater = 0;

	/* the UPDATE privilege on the whole table: bulk_fits */
	eoi_target_range_table(pstate, cs->rel, cs->cols->names);
	du = eoi_direct_update_begin(cs->rel, pstate, cs->cols, cs->set_columns, estate);
	for (int i = 0; i < nrows; i++)
	{
		TupleTableSlot *old = eoi_direct_update_fetch(du, &tids[i]);

		if (old == NULL || !has_key(cs->ko, old, ops[i]) ||
			eoi_direct_update_row(du, &tids[i], &cs->values.cells[rows[i] * cs->values.ncols]) != TM_Ok)
			later[nlater++] = rows[i];
		CHECK_FOR_INTERRUPTS();
	}
	eoi_direct_update_end(du);
	FreeExecutorState(estate);
	free_parsestate(pstate);
	return nlater;
}

/*
 * Where no key exists the probe is wasted: after a probe that found none,
 * the next batch of that target is inserted without one, and probed only
 * if that meets an existing key (a unique_violation).
 */
static Oid	unprobed_relid = InvalidOid;

typedef enum BulkResult
{
	BULK_DONE,
	BULK_UNIQUE_VIOLATION		/* rolled back: nothing done */
} BulkResult;

/*
 * The rows through the bulk path, in a subtransaction: those whose keys
 * exist updated in place (the ON CONFLICT statement for those a concurrent
 * writer changed meanwhile), the new ones as tuples; without `probe`,
 * every row as a new one.  BULK_UNIQUE_VIOLATION if an existing key (or, after a probe, a
 * concurrent writer's) made the inserts raise unique_violation.
 */
typedef struct BulkRows
{
	EoiChangeSet *cs;
	const int  *rows;
	Op		   *const *ops;
	int			nrows;
	bool		probe;
} BulkRows;

static void
write_bulk(void *arg)
{
	BulkRows   *br = arg;
	EoiChangeSet *cs = br->cs;
	Oid			relid = RelationGetRelid(cs->rel);
	bool	   *exists = palloc0(sizeof(bool) * Max(br->nrows, 1));
	ItemPointerData *tids = palloc(sizeof(ItemPointerData) * Max(br->nrows, 1));
	int		   *old_rows = palloc(sizeof(int) * Max(br->nrows, 1));
	Op		  **old_ops = palloc(sizeof(Op *) * Max(br->nrows, 1));
	int			nold = 0;
	int			nlater;

	if (br->probe)
		(void) probe_keys(cs, br->ops, br->nrows, exists, tids);
	for (int i = 0; i < br->nrows; i++)
		if (exists[i])
		{
			tids[nold] = tids[i];
			old_ops[nold] = br->ops[i];
			old_rows[nold++] = br->rows[i];
		}
	/* For tests: a concurrent writer changes a row of an existing key here. */
	EOI_FAULT_POINT("upsert-bulk-update");
	nlater = nold > 0 ? update_existing(cs, old_rows, old_ops, tids, nold, old_rows) : 0;
	if (nlater > 0)
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		(void) eoi_upsert_execute_with_arrays(eoi_upsert_build_upsert_sql(cs->rel, cs->target, cs->cols, cs->key_columns, NULL),
								   &cs->values, old_rows, nlater, cs->cols->ncolumns);
		SPI_finish();
	}
	/* For tests: a concurrent writer inserts one of the new keys here. */
	EOI_FAULT_POINT("upsert-bulk-insert");
	if (nold < br->nrows)
		insert_new(cs, br->rows, br->nrows, exists);
	unprobed_relid = (!br->probe || nold == 0) ? relid : InvalidOid;
}

static BulkResult
try_bulk(EoiChangeSet *cs, const int *rows, Op *const *ops, int nrows, bool probe)
{
	BulkRows	br = {cs, rows, ops, nrows, probe};
	ErrorData  *edata = eoi_try_subxact(write_bulk, &br);

	if (edata == NULL)
		return BULK_DONE;
	if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
		ReThrowError(edata);
	unprobed_relid = InvalidOid;
	if (probe)
		ereport(LOG,
				(errmsg("a concurrent writer inserted a key of the batch into \"%s\"",
						RelationGetRelationName(cs->rel)),
				 errdetail("The batch's rows go in with INSERT ... ON CONFLICT instead; the bulk write failed: %s.",
						   edata->message)));
	FreeErrorData(edata);
	return BULK_UNIQUE_VIOLATION;
}

/* The rows through the bulk path if it may take them (see above); false if not. */
bool
eoi_upsert_apply_bulk(EoiChangeSet *cs, const int *rows, Op *const *ops, int nrows)
{
	Oid			relid = RelationGetRelid(cs->rel);

	if (!cs->bulk)
		return false;
	if (unprobed_relid == relid && try_bulk(cs, rows, ops, nrows, false) == BULK_DONE)
		return true;
	return try_bulk(cs, rows, ops, nrows, true) == BULK_DONE;
}
