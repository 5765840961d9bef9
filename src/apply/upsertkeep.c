/*-------------------------------------------------------------------------
 *
 * upsertkeep.c
 *	  Upserts that keep some columns' current values.
 *
 * An update that Debezium reads from a table with replica identity default
 * carries no value for a TOASTed column the update left unchanged, only a
 * placeholder; cdc.c writes such a field as eoi_unchanged_value.  Storing
 * the placeholder would replace the row's real value.  So, for each such
 * column, the row takes the value of its key's latest earlier upsert in the
 * same change set if there is one (newer than the table's); after a delete
 * of the key in the set the row is new and takes NULL; otherwise the row
 * in the table keeps its value: the rows are updated with the columns they
 * carry, and those the table does not have are inserted with NULL in the
 * others.  Each row inserted with such a NULL is noted with its message,
 * for the job to count (eoi_changes_nulled).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "apply/upsert_internal.h"

/* A row of message `message` went in new, with NULL for an unchanged value. */
static void
note_nulled(EoiChangeSet *cs, int message)
{
	if (cs->nnulled >= cs->nulled_capacity)
	{
		int			capacity = Max(cs->nulled_capacity * 2, 16);

		cs->nulled = cs->nulled ? repalloc(cs->nulled, sizeof(int) * capacity) :
			MemoryContextAlloc(cs->cxt, sizeof(int) * capacity);
		cs->nulled_capacity = capacity;
	}
	cs->nulled[cs->nnulled++] = message;
}

/*
 * The key's changes are ops[first .. last], in order, ops[last] an upsert,
 * ops[last_delete] the last delete among them (-1: none).  Fill what
 * ops[last] keeps from the upserts before it, or with NULL where the row
 * is new; true if it still keeps some columns' values from the table.
 */
bool
eoi_upsert_resolve_unchanged(EoiChangeSet *cs, Op *ops, int first, int last, int last_delete)
{
	ArrayWriter *aw = &cs->values;
	int			from = last_delete >= 0 ? last_delete + 1 : first;
	bool		nulled = false;
	bool		kept = false;

	if (!eoi_upsert_row_unchanged(aw, ops[last].row, NULL))
		return false;
	for (int c = 0; c < aw->ncols; c++)
	{
		char	  **cellp = &aw->cells[ops[last].row * aw->ncols + c];

		for (int j = last - 1; j >= from && *cellp == eoi_unchanged_value; j--)
			*cellp = aw->cells[ops[j].row * aw->ncols + c];
		if (*cellp != eoi_unchanged_value)
			continue;
		if (last_delete >= 0)
		{
			*cellp = NULL;
			nulled = true;
		}
		else
			kept = true;
	}
	if (nulled)
		note_nulled(cs, ops[last].message);
	return kept;
}

/* A name for WITH ORDINALITY's column that no column of cols has. */
static char *
ordinality_name(EoiColumns *cols)
{
	StringInfoData name;
	bool		taken;

	initStringInfo(&name);
	appendStringInfoString(&name, "ord");
	do
	{
		taken = false;
		for (int c = 0; c < cols->ncolumns && !taken; c++)
			taken = strcmp(cols->colnames[c], name.data) == 0;
		if (taken)
			appendStringInfoChar(&name, '_');
	} while (taken);
	return name.data;
}

/*
 * The statement that finds which of the rows exist in the target and
 * updates their columns but the keys and the `unchanged` ones, returning
 * each one's position among the rows (from 1):
 *
 * UPDATE target AS t SET c = u.c::type, ...
 *   FROM ROWS FROM (unnest($1), ...) WITH ORDINALITY AS u(cols, ord)
 *  WHERE t.k OPERATOR(eq) u.k::type ... RETURNING u.ord
 *
 * or, when no column is left to set, SELECT u.ord ... WHERE EXISTS (...).
 */
static char *
build_update_sql(EoiChangeSet *cs, const bool *unchanged)
{
	EoiColumns *cols = cs->cols;
	char	   *ord = ordinality_name(cols);
	StringInfoData from;
	StringInfoData where;
	StringInfoData set;
	ListCell   *lc;

	initStringInfo(&from);
	appendStringInfoString(&from, "ROWS FROM (");
	for (int c = 0; c < cols->ncolumns; c++)
		appendStringInfo(&from, "%spg_catalog.unnest($%d::pg_catalog.text[])", c ? ", " : "", c + 1);
	appendStringInfoString(&from, ") WITH ORDINALITY AS u(");
	for (int c = 0; c < cols->ncolumns; c++)
		appendStringInfo(&from, "%s, ", quote_identifier(cols->colnames[c]));
	appendStringInfo(&from, "%s)", quote_identifier(ord));

	initStringInfo(&where);
	foreach(lc, cs->key_columns)
	{
		const char *name = strVal(lfirst(lc));
		const char *q = quote_identifier(name);

		appendStringInfo(&where, "%st.%s OPERATOR(%s) u.%s::%s", foreach_current_index(lc) ? " AND " : "",
						 q, eoi_upsert_key_equality(cs->rel, cs->ko->index, name), q,
						 eoi_upsert_column_type(cs->rel, name));
	}

	initStringInfo(&set);
	for (int c = 0; c < cols->ncolumns; c++)
	{
		const char *q = quote_identifier(cols->colnames[c]);

		if (!cs->set_columns[c] || unchanged[c])
			continue;
		appendStringInfo(&set, "%s%s = u.%s::%s", set.len ? ", " : "", q, q,
						 eoi_upsert_column_type(cs->rel, cols->colnames[c]));
	}
	if (set.len == 0)
		return psprintf("SELECT u.%s FROM %s WHERE EXISTS (SELECT FROM %s AS t WHERE %s)",
						quote_identifier(ord), from.data, cs->target, where.data);
	return psprintf("UPDATE %s AS t SET %s FROM %s WHERE %s RETURNING u.%s",
					cs->target, set.data, from.data, where.data, quote_identifier(ord));
}

/*
 * Rows `rows` (of ops `ops`), which all keep the same columns' values:
 * update those the target has, insert the others with NULL there.
 */
static uint64
apply_group(EoiChangeSet *cs, Op *const *ops, const int *rows, int n, const bool *unchanged)
{
	bool	   *exists = palloc0(sizeof(bool) * n);
	int		   *new_rows = palloc(sizeof(int) * n);
	int			nnew = 0;
	uint64		processed;

	processed = eoi_upsert_execute_with_arrays(build_update_sql(cs, unchanged), &cs->values, rows, n,
											   cs->cols->ncolumns);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int64		ord = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull));

		if (!isnull && ord >= 1 && ord <= n)
			exists[ord - 1] = true;
	}
	for (int i = 0; i < n; i++)
		if (!exists[i])
		{
			new_rows[nnew++] = rows[i];
			note_nulled(cs, ops[i]->message);
		}
	/*
	 * A concurrent writer may insert one of these keys meanwhile: ON
	 * CONFLICT then updates it with the columns the change carries.
	 */
	if (nnew > 0)
		(void) eoi_upsert_execute_with_arrays(eoi_upsert_build_upsert_sql(cs->rel, cs->target, cs->cols,
																		  cs->key_columns, unchanged),
											  &cs->values, new_rows, nnew, cs->cols->ncolumns);
	pfree(exists);
	pfree(new_rows);
	return processed + nnew;
}

/*
 * Apply the upserts of rows `rows` (of ops `ops`), each of which keeps some
 * columns' current values, grouped by the columns they keep; inside the
 * caller's SPI connection.  Returns the rows updated and inserted.
 */
uint64
eoi_upsert_apply_unchanged(EoiChangeSet *cs, Op *const *ops, const int *rows, int n)
{
	int			ncols = cs->cols->ncolumns;
	bool	   *done = palloc0(sizeof(bool) * n);
	bool	   *mask = palloc(sizeof(bool) * ncols);
	bool	   *other = palloc(sizeof(bool) * ncols);
	int		   *group_rows = palloc(sizeof(int) * n);
	Op		  **group_ops = palloc(sizeof(Op *) * n);
	uint64		processed = 0;

	for (int i = 0; i < n; i++)
	{
		int			ngroup = 0;

		if (done[i])
			continue;
		(void) eoi_upsert_row_unchanged(&cs->values, rows[i], mask);
		for (int j = i; j < n; j++)
		{
			CHECK_FOR_INTERRUPTS();
			if (done[j])
				continue;
			(void) eoi_upsert_row_unchanged(&cs->values, rows[j], other);
			if (memcmp(mask, other, sizeof(bool) * ncols) != 0)
				continue;
			done[j] = true;
			group_rows[ngroup] = rows[j];
			group_ops[ngroup++] = ops[j];
		}
		processed += apply_group(cs, group_ops, group_rows, ngroup, mask);
	}
	pfree(done);
	pfree(mask);
	pfree(other);
	pfree(group_rows);
	pfree(group_ops);
	return processed;
}
