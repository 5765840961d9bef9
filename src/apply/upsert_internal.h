/*-------------------------------------------------------------------------
 *
 * upsert_internal.h
 *	  What mode upsert's files share (upsert.c, upsertbulk.c): the change
 *	  set (struct EoiChangeSet) with its rows, ops and key order, and the
 *	  functions one file calls in another.  Not for use outside apply/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_UPSERT_INTERNAL_H
#define EOI_UPSERT_INTERNAL_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/rel.h"

#include "apply/target.h"
#include "apply/upsert.h"
#include "format/decode.h"

/* Rows of text fields, row-major. */
typedef struct ArrayWriter
{
	EoiRowWriter writer;
	MemoryContext cxt;			/* where the cells live */
	int			ncols;
	int			nrows;
	int			capacity;		/* rows */
	char	  **cells;
	bool		has_unchanged;	/* some cell is eoi_unchanged_value */
} ArrayWriter;

/* One message's effect: upsert row `row`, or delete key row `row`. */
typedef struct Op
{
	Datum	   *key;			/* the key columns' values */
	bool	   *key_null;
	bool		distinct;		/* a null in the key: equal to no other key */
	int			seq;			/* position in the batch */
	bool		is_delete;
	int			row;
	int			message;		/* the batch's message it came from, or -1 */
} Op;

/*
 * How the key columns read and compare: each one's type input, and the
 * btree order of its column in the key's unique index, the equality that
 * ON CONFLICT applies.
 */
typedef struct KeyOrder
{
	int			nkeys;
	FmgrInfo   *input;
	Oid		   *ioparams;
	int32	   *typmods;
	FmgrInfo   *cmp;
	Oid		   *collations;
	bool		nulls_distinct;
	Oid			index;			/* the key's unique index */
	AttrNumber *index_att;		/* each key column's position in it */
	AttrNumber *heap_att;		/* and in the table */
	RegProcedure *eqproc;		/* its "=", for the bulk path's probe */
} KeyOrder;

/*
 * A set of changes to one target, applied set-wise: rows to upsert and keys
 * to delete, in the order they were added.  Mode upsert fills it from the
 * messages; the Debezium envelope (cdc.c) from change events.
 */
struct EoiChangeSet
{
	Relation	rel;
	const char *target;
	EoiColumns *cols;			/* the upserted rows' columns */
	EoiColumns *keys;			/* the deleted keys' columns */
	List	   *key_columns;
	int		   *keypos;			/* the key columns among cols */
	int			all_keypos[INDEX_MAX_KEYS];
	KeyOrder   *ko;
	ArrayWriter values;
	ArrayWriter tombstones;
	Op		   *ops;
	int			nops;
	int			capacity;
	int			seq;
	MemoryContext cxt;			/* where the ops and their keys live */
	bool		bulk;			/* the bulk path (see upsert.c's header comment) */
	bool		eoi_upsert_delete_by_index;	/* bulk, and the owner may DELETE */
	bool	   *set_columns;	/* the columns of cols an update sets */
	int			message;		/* the message the next ops come from, or -1 */
	int		   *nulled;			/* messages whose new rows took NULL for unchanged values */
	int			nnulled;
	int			nulled_capacity;
	bool		append;			/* no key: every row is inserted, in order */
};

/* upsert.c */
extern bool eoi_upsert_is_key(List *key_columns, const char *name);
extern char *eoi_upsert_build_upsert_sql(Relation rel, const char *target, EoiColumns *cols, List *key_columns,
										 const bool *unchanged);
extern char *eoi_upsert_column_type(Relation rel, const char *name);
extern char *eoi_upsert_key_equality(Relation rel, Oid index, const char *colname);
extern bool eoi_upsert_row_unchanged(ArrayWriter *aw, int row, bool *unchanged);
extern char *eoi_upsert_build_delete_sql(Relation rel, const char *target, EoiColumns *keys);
extern uint64 eoi_upsert_execute_with_arrays(const char *sql, ArrayWriter *aw, const int *rows, int nrows, int ncols);

/* upsertkeep.c */
extern bool eoi_upsert_resolve_unchanged(EoiChangeSet *cs, Op *ops, int first, int last, int last_delete);
extern uint64 eoi_upsert_apply_unchanged(EoiChangeSet *cs, Op *const *ops, const int *rows, int n);

/* upsertbulk.c */
extern bool eoi_upsert_bulk_fits(Relation rel, EoiColumns *cols, List *key_columns, KeyOrder *ko);
extern uint64 eoi_upsert_delete_by_index(EoiChangeSet *cs, Op *const *ops, const int *rows, int n, int *later, int *nlater);
extern uint64 eoi_upsert_apply_deletes(EoiChangeSet *cs, Op *const *ops, int *rows, int n);
extern bool eoi_upsert_apply_bulk(EoiChangeSet *cs, const int *rows, Op *const *ops, int nrows);

#endif
