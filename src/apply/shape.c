/*-------------------------------------------------------------------------
 *
 * shape.c
 *	  The shape of a job's target, recorded in the catalog and checked.
 *
 * A worker writes the columns its mapping names, decoded as their types.
 * If the table is altered under a running job (a column dropped, renamed
 * or given another type), records the old shape fitted would fail as the
 * new one's, and be dead-lettered one by one.  So the first write of a job
 * into a target after the job was created, altered or started records the
 * target's shape in eoingest.target_shapes (in the write's transaction),
 * one row per worker, and every write of every worker of the job compares
 * the table as it is with all of them.  Two workers cannot record two
 * shapes: until its transaction ends, each holds a lock on the target that
 * ALTER TABLE waits for.  (A write that stores no row, its records all
 * dead letters, records nothing: its subtransactions were rolled back.)
 * A difference is the person's to look at: the job fails, its offsets
 * where they are, until start_job or alter_job clears the record and the
 * next write takes the table as it is.
 *
 * The shape is text: each column's quoted name and its type with its
 * typmod, named as with search_path = pg_catalog (built-in types bare, the
 * others schema-qualified), so that it survives a dump and restore and
 * does not depend on the job's search_path.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "apply/shape.h"
#include "base/pgcompat.h"
#include "format/decode.h"
#include "store/job.h"

/* The columns written, as "name type, ..." */
static char *
target_shape(Relation rel, EoiColumns *cols)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int c = 0; c < cols->ncolumns; c++)
	{
		AttrNumber	attnum = attnameAttNum(rel, cols->colnames[c], false);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);

		appendStringInfo(&buf, "%s%s %s", c > 0 ? ", " : "", quote_identifier(cols->colnames[c]),
						 format_type_with_typemod(att->atttypid, att->atttypmod));
	}
	return buf.data;
}

/* Which worker of its job this process is (eoi_shape_set_worker). */
static int	shape_worker = -1;

void
eoi_shape_set_worker(int worker_index)
{
	shape_worker = worker_index;
}

/*
 * The shapes recorded for the job's `target`, by any of its workers: one
 * that differs from `shape` (palloc'd in `cxt`), or NULL.  *mine says
 * whether this worker's own is among them.
 *
 * Not read-only: the batch's own record, made by an earlier subtransaction
 * of it (a slice that went in before a record failed), must be seen, and
 * the statement's snapshot is older.
 */
static char *
other_shape(int32 job_id, const char *target, const char *shape, bool *mine, MemoryContext cxt)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		args[2] = {Int32GetDatum(job_id), CStringGetTextDatum(target)};

	*mine = false;
	if (SPI_execute_with_args("SELECT worker, columns FROM eoingest.target_shapes"
							  " WHERE job_id = $1 AND target = $2",
							  2, types, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.target_shapes");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		char	   *worker = SPI_getvalue(tup, SPI_tuptable->tupdesc, 1);
		char	   *columns = SPI_getvalue(tup, SPI_tuptable->tupdesc, 2);

		if (strcmp(columns, shape) != 0)
			return MemoryContextStrdup(cxt, columns);
		if (atoi(worker) == shape_worker)
			*mine = true;
	}
	return NULL;
}

/*
 * Record `shape` as this worker's for the job's `target`.  Only this
 * worker writes its row, so the insert waits for nobody but, in two_phase,
 * this worker's own earlier epoch, which the coordinator commits without it.
 */
static void
record_shape(int32 job_id, const char *target, const char *shape)
{
	Oid			types[4] = {INT4OID, TEXTOID, INT4OID, TEXTOID};
	Datum		args[4] = {Int32GetDatum(job_id), CStringGetTextDatum(target),
	Int32GetDatum(shape_worker), CStringGetTextDatum(shape)};

	if (SPI_execute_with_args("INSERT INTO eoingest.target_shapes (job_id, target, worker, columns)"
							  " VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
							  4, types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into eoingest.target_shapes");
}

/*
 * Is the target as the job first wrote it since it was created, altered or
 * started (see above)?  An error if not.  The record is the catalog's, so
 * a worker that starts after the table was altered, or had not written yet,
 * meets the change as the others do.  replay_dead_letters writes into the
 * table as it is now.
 */
void
eoi_check_target_unchanged(const EoiJob *job, Relation rel, EoiColumns *cols)
{
	char	   *target;
	char	   *shape;
	char	   *other;
	bool		mine;
	EoiSavedUser saved;
	MemoryContext cxt = CurrentMemoryContext;

	if (!AmBackgroundWorkerProcess())
		return;
	target = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
										RelationGetRelationName(rel));
	eoi_become_extension_owner(&saved);
	shape = target_shape(rel, cols);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	other = other_shape(job->id, target, shape, &mine, cxt);
	if (other == NULL && !mine)
		record_shape(job->id, target, shape);
	SPI_finish();
	eoi_restore_user(&saved);
	if (other == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("target \"%s\" was altered while the job was running",
					RelationGetRelationName(rel)),
			 errdetail("The job writes columns (%s); the table now has them as (%s).", other, shape),
			 errhint("Check that the job's format still fits the table, then run eoingest.start_job() again.")));
}

/*
 * Forget the shapes recorded for `target` (schema-qualified, quoted), by
 * every job: a job changed the table (evolve.c) in the current
 * transaction, adding nullable columns or widening them, which no writer's
 * records fail for; each job's next write records the table as it is now.
 */
void
eoi_shape_forget(const char *target)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(target)};
	EoiSavedUser saved;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("DELETE FROM eoingest.target_shapes WHERE target = $1",
							  1, types, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete from eoingest.target_shapes");
	SPI_finish();
	eoi_restore_user(&saved);
}
