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
 * and every write of every worker of the job compares the table as it is
 * with it.  (A write that stores no row, its records all dead letters,
 * records nothing: its subtransactions were rolled back.)  A difference is the person's to look at: the job fails, its
 * offsets where they are, until start_job or alter_job clears the record
 * and the next write takes the table as it is.
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

#include "decode.h"
#include "job.h"
#include "shape.h"

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

/* The shape recorded for the job's `target`, or NULL. */
static char *
recorded_shape(int32 job_id, const char *target)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		args[2] = {Int32GetDatum(job_id), CStringGetTextDatum(target)};

	/*
	 * Not read-only: the batch's own record, made by an earlier
	 * subtransaction of it (a slice that went in before a record failed),
	 * must be seen, and the statement's snapshot is older.
	 */
	if (SPI_execute_with_args("SELECT columns FROM eoingest.target_shapes"
							  " WHERE job_id = $1 AND target = $2",
							  2, types, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.target_shapes");
	if (SPI_processed == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * Record `shape` for the job's `target` unless another worker of the job
 * recorded one first (which this waits for, as ON CONFLICT does); returns
 * the one recorded.
 */
static char *
record_shape(int32 job_id, const char *target, const char *shape)
{
	Oid			types[3] = {INT4OID, TEXTOID, TEXTOID};
	Datum		args[3] = {Int32GetDatum(job_id), CStringGetTextDatum(target), CStringGetTextDatum(shape)};
	char	   *recorded;

	if (SPI_execute_with_args("INSERT INTO eoingest.target_shapes (job_id, target, columns)"
							  " VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
							  3, types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into eoingest.target_shapes");
	if (SPI_processed == 1)
		return pstrdup(shape);
	recorded = recorded_shape(job_id, target);
	if (recorded == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("another worker of the job recorded the shape of \"%s\" meanwhile", target),
				 errhint("The batch is tried again.")));
	return recorded;
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
	char	   *recorded;
	EoiSavedUser saved;
	MemoryContext cxt = CurrentMemoryContext;

	if (!IsBackgroundWorker)
		return;
	target = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
										RelationGetRelationName(rel));
	eoi_become_extension_owner(&saved);
	shape = target_shape(rel, cols);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	recorded = recorded_shape(job->id, target);
	if (recorded == NULL)
		recorded = record_shape(job->id, target, shape);
	recorded = MemoryContextStrdup(cxt, recorded);
	SPI_finish();
	eoi_restore_user(&saved);
	if (strcmp(recorded, shape) == 0)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("target \"%s\" was altered while the job was running",
					RelationGetRelationName(rel)),
			 errdetail("The job writes columns (%s); the table now has them as (%s).", recorded, shape),
			 errhint("Check that the job's format still fits the table, then run eoingest.start_job() again.")));
}
