/*-------------------------------------------------------------------------
 *
 * execcompat.h
 *	  The executor's, the table AM's and the index AM's calls whose
 *	  signatures differ between the PostgreSQL majors eoingest builds
 *	  against (15 to 18).
 *
 * src/apply/ writes rows as COPY FROM and logical replication's apply
 * worker do, through the executor's insert machinery; that machinery is
 * what moves between majors.  Each function here is one such call, with
 * the arguments every major needs and eoingest's fixed choices for the
 * others; PG_VERSION_NUM is tested here and in base/pgcompat.h only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_EXECCOMPAT_H
#define EOI_EXECCOMPAT_H

#include "postgres.h"

#include "access/genam.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "nodes/bitmapset.h"
#include "parser/parse_node.h"
#include "utils/relcache.h"

#include "base/pgcompat.h"

/*
 * The executor's range table: the one eoi_target_range_table() built in
 * `pstate`, its permissions (16 keeps them apart from the entries), every
 * entry unpruned (18).
 */
static inline void
eoi_init_range_table(EState *estate, ParseState *pstate)
{
#if PG_VERSION_NUM >= 180000
	ExecInitRangeTable(estate, pstate->p_rtable, pstate->p_rteperminfos,
					   bms_add_range(NULL, 1, list_length(pstate->p_rtable)));
#elif PG_VERSION_NUM >= 160000
	ExecInitRangeTable(estate, pstate->p_rtable, pstate->p_rteperminfos);
#else
	ExecInitRangeTable(estate, pstate->p_rtable);
#endif
}

/* Check the privileges `pstate`'s range table asks for; ERROR if one is missing. */
static inline void
eoi_check_range_table_permissions(ParseState *pstate)
{
#if PG_VERSION_NUM >= 160000
	ExecCheckPermissions(pstate->p_rtable, pstate->p_rteperminfos, true);
#else
	ExecCheckRTPerms(pstate->p_rtable, true);
#endif
}

/* Ask for INSERT on `cols` (attribute numbers offset as the executor wants). */
static inline void
eoi_require_insert(ParseNamespaceItem *nsitem, Bitmapset *cols)
{
#if PG_VERSION_NUM >= 160000
	nsitem->p_perminfo->requiredPerms = ACL_INSERT;
	nsitem->p_perminfo->insertedCols = cols;
#else
	nsitem->p_rte->requiredPerms = ACL_INSERT;
	nsitem->p_rte->insertedCols = cols;
#endif
}

/* ERROR unless `rri`'s relation can take INSERTs (a plain INSERT, no ON CONFLICT). */
static inline void
eoi_check_insert_target(ResultRelInfo *rri)
{
#if PG_VERSION_NUM >= 180000
	CheckValidResultRel(rri, CMD_INSERT, ONCONFLICT_NONE, NIL);
#elif PG_VERSION_NUM >= 170000
	CheckValidResultRel(rri, CMD_INSERT, NIL);
#else
	CheckValidResultRel(rri, CMD_INSERT);
#endif
}

/*
 * The index entries of the tuple in `slot` (no speculative insertion, no
 * arbiter indexes); `only_summarizing` after an update that left every
 * other index alone (16).  Returns the indexes whose uniqueness is checked
 * at commit, for the caller's after-row triggers.
 */
static inline List *
eoi_insert_index_tuples(ResultRelInfo *rri, TupleTableSlot *slot, EState *estate,
						bool update, bool only_summarizing)
{
#if PG_VERSION_NUM >= 160000
	return ExecInsertIndexTuples(rri, slot, estate, update, false, NULL, NIL, only_summarizing);
#else
	Assert(!only_summarizing);
	return ExecInsertIndexTuples(rri, slot, estate, update, false, NULL, NIL);
#endif
}

/*
 * Update the row version at `tid` to `slot`, waiting for a concurrent
 * writer.  On TM_Ok, *index_entries says whether the new version needs
 * index entries and *only_summarizing whether only the summarizing indexes
 * want them (16: HOT updates that change a BRIN-indexed column).
 */
static inline TM_Result
eoi_tuple_update(Relation rel, ItemPointer tid, TupleTableSlot *slot, CommandId cid,
				 Snapshot snapshot, TM_FailureData *tmfd, LockTupleMode *lockmode,
				 bool *index_entries, bool *only_summarizing)
{
	TM_Result	result;
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes update_indexes = TU_None;

	result = table_tuple_update(rel, tid, slot, cid, snapshot, InvalidSnapshot, true,
								tmfd, lockmode, &update_indexes);
	*index_entries = update_indexes != TU_None;
	*only_summarizing = update_indexes == TU_Summarizing;
#else
	bool		update_indexes = false;

	result = table_tuple_update(rel, tid, slot, cid, snapshot, InvalidSnapshot, true,
								tmfd, lockmode, &update_indexes);
	*index_entries = update_indexes;
	*only_summarizing = false;
#endif
	return result;
}

/* The map from the partitioned table's rowtype to partition `part`'s, NULL if alike. */
static inline TupleConversionMap *
eoi_root_to_partition_map(ResultRelInfo *part, EState *estate)
{
#if PG_VERSION_NUM >= 160000
	return ExecGetRootToChildMap(part, estate);
#else
	(void) estate;
	return part->ri_RootToPartitionMap;
#endif
}

/* An index scan with `nkeys` keys and no ordering (and, in 18, no instrumentation). */
static inline IndexScanDesc
eoi_index_beginscan(Relation heap, Relation index, Snapshot snapshot, int nkeys)
{
#if PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, 0);
#else
	return index_beginscan(heap, index, snapshot, nkeys, 0);
#endif
}

/*
 * The relation's primary key index, InvalidOid if it has none or if it is
 * DEFERRABLE (before 18 a deferrable one is never returned; 18 asks).
 */
static inline Oid
eoi_primary_key_index(Relation rel)
{
#if PG_VERSION_NUM >= 180000
	return RelationGetPrimaryKeyIndex(rel, false);
#else
	return RelationGetPrimaryKeyIndex(rel);
#endif
}

#endif							/* EOI_EXECCOMPAT_H */
