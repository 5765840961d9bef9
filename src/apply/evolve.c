/*-------------------------------------------------------------------------
 *
 * evolve.c
 *	  A target that follows its messages' writer schema: created from the
 *	  first message's when it does not exist (create_target), given the
 *	  fields it lacks and its columns widened as the producers' schemas
 *	  evolve (schema_changes), in the batch's transaction, before the rows
 *	  that need the change.  The change, the rows and the offsets commit
 *	  together: a crash between them leaves neither.
 *
 * The writer schemas of a batch are those of its messages, each taken once
 * (the format keeps a schema by its id), in the order they first come.  A
 * field maps to a column of its name and of the type docs/formats.md's
 * table gives it (format/avrotype.c, format/protovalue.c).  With
 * schema_changes:
 *	- a field the table lacks becomes a new nullable column
 *	  (add_columns, widen); one ALTER TABLE adds all of a schema's;
 *	- a column narrower than its field's type, of the same kind, is widened
 *	  (widen only): integers to a larger integer or numeric, real to
 *	  double precision, numeric to more digits, a scalar to jsonb where
 *	  the field became a record, map, array or union;
 *	- a field whose values the column cannot hold, and that no widening
 *	  fixes (or, with add_columns, that only a widening would fix), stops
 *	  the job (SQLSTATE 55000), its offsets where they are,
 *	  with both types, the schema and the ALTER TABLE a person could run:
 *	  a person decides; nothing is dead-lettered for it;
 *	- nothing is dropped, renamed or narrowed: a field that disappears
 *	  leaves its column, NULL from then on.
 *
 * Every statement runs as the job's owner (a write's current user), waits
 * for its lock no longer than eoingest.lock_timeout (the worker's
 * lock_timeout: past it the batch is retried, and job_status shows the
 * statement), is logged, and is recorded in eoingest.target_changes with
 * the topic and schema that asked for it.  Writers evolving one table
 * (the workers of a job, or several jobs) take turns on an advisory lock
 * of its name, and plan the change again under the table's ACCESS
 * EXCLUSIVE lock, so that no two add the same column.  The recorded
 * shapes of the table (shape.c) are forgotten, every job's: new nullable
 * columns and wider types fail no writer, and each job's next write
 * records the table as it is now.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/heap.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/inval.h"
#include "utils/backend_status.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"

#include "apply/errclass.h"
#include "apply/evolve.h"
#include "apply/shape.h"
#include "apply/target.h"
#include "format/avro.h"
#include "format/decode.h"
#include "format/decodejson.h"
#include "format/protobuf.h"
#include "store/job.h"
#include "store/targetchanges.h"

/* The first key of the advisory locks that serialize changes of one table. */
#define EVOLVE_LOCK_CLASS 0x454f4945	/* "EOIE" */

typedef EoiSchemaUse SchemaUse;

/* For error context: which change of which table, for which schema. */
typedef struct ChangeContext
{
	const char *target;
	const SchemaUse *use;
} ChangeContext;

static void
change_error_callback(void *arg)
{
	ChangeContext *cc = arg;

	errcontext("changing target %s for %s of topic \"%s\"",
			   cc->target, cc->use->fields->what, cc->use->topic);
}

/* ---- the batch's writer schemas ---- */

/*
 * A copy of `from` in the current memory context: the format keeps a few
 * schemas only, and a batch of many outlives some.
 */
const EoiSchemaFields *
eoi_schema_fields_copy(const EoiSchemaFields *from)
{
	EoiSchemaFields *f = palloc(sizeof(EoiSchemaFields));

	*f = *from;
	f->what = pstrdup(from->what);
	f->type_name = pstrdup(from->type_name);
	f->fields = palloc(sizeof(EoiSchemaField) * Max(from->nfields, 1));
	for (int i = 0; i < from->nfields; i++)
	{
		f->fields[i] = from->fields[i];
		f->fields[i].name = pstrdup(from->fields[i].name);
	}
	return f;
}

/*
 * The writer schema of a message's value (key) as fields, or NULL when it
 * carries none: an Avro or Protobuf message's from the registry, a JSON
 * message's from Kafka Connect's wrapper or, with a registry, its JSON
 * Schema (format json reads values only).
 */
static const EoiSchemaFields *
message_schema(EoiFormat format, rd_kafka_message_t *msg, bool key, bool registry)
{
	const char *data;
	size_t		len;

	if (format == EOI_FORMAT_JSON)
		return eoi_json_schema_fields(msg->payload, msg->len, registry);
	data = eoi_framed_message(format, msg, key, false, &len);
	if (format == EOI_FORMAT_PROTOBUF)
		return eoi_protobuf_schema_fields(data, len);
	return eoi_avro_schema_fields(data, len);
}

/*
 * The distinct writer schemas of the batch's values, in the order they
 * come (messages that carry none are passed over).
 */
static List *
batch_schemas(EoiBatch *batch, EoiFormat format, bool registry)
{
	List	   *uses = NIL;
	char	   *last = NULL;		/* the last message's schema */

	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];
		const EoiSchemaFields *fields;
		ListCell   *lc;
		bool		seen = false;

		CHECK_FOR_INTERRUPTS();
		if (msg->payload == NULL)
			continue;			/* a tombstone has no schema */
		fields = message_schema(format, msg, false, registry);
		if (fields == NULL || (last != NULL && strcmp(fields->what, last) == 0))
			continue;
		last = pstrdup(fields->what);
		foreach(lc, uses)
			if (strcmp(((SchemaUse *) lfirst(lc))->fields->what, fields->what) == 0)
				seen = true;
		if (!seen)
		{
			SchemaUse  *use = palloc(sizeof(SchemaUse));

			use->fields = eoi_schema_fields_copy(fields);
			use->topic = eoi_message_topic(batch, i);
			uses = lappend(uses, use);
		}
	}
	return uses;
}

/* ---- types ---- */

/* The kinds of values a column holds, as far as a field's fit goes. */
typedef enum Kind
{
	K_INTEGER,
	K_NUMERIC,
	K_FLOAT,
	K_STRING,
	K_BOOL,
	K_BYTES,
	K_DATETIME,					/* date, timestamp, timestamptz */
	K_TIME,
	K_UUID,
	K_INTERVAL,
	K_BITS,
	K_JSON,
	K_ARRAY,
	K_OTHER						/* enums, composites, ...: their input decides */
} Kind;

static Kind
kind_of(Oid typid)
{
	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			return K_INTEGER;
		case NUMERICOID:
			return K_NUMERIC;
		case FLOAT4OID:
		case FLOAT8OID:
			return K_FLOAT;
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
			return K_STRING;
		case BOOLOID:
			return K_BOOL;
		case BYTEAOID:
			return K_BYTES;
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return K_DATETIME;
		case TIMEOID:
		case TIMETZOID:
			return K_TIME;
		case UUIDOID:
			return K_UUID;
		case INTERVALOID:
			return K_INTERVAL;
		case BITOID:
		case VARBITOID:
			return K_BITS;
		case JSONBOID:
		case JSONOID:
			return K_JSON;
		default:
			return type_is_array(typid) ? K_ARRAY : K_OTHER;
	}
}

/* An integer type's size, for widening. */
static int
integer_rank(Oid typid)
{
	return typid == INT2OID ? 2 : typid == INT4OID ? 4 : 8;
}

/* numeric(p, s): its digits before the point and its scale; false if unconstrained */
static bool
numeric_digits(int32 typmod, int *whole, int *scale)
{
	if (typmod < (int32) VARHDRSZ)
		return false;
	/* the scale in 11 bits, signed (PostgreSQL 15 allows a negative one) */
	*scale = ((((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024);
	*whole = (((typmod - VARHDRSZ) >> 16) & 0xffff) - *scale;
	return true;
}

/* The digits an integer type's values may have. */
static int
integer_digits(Oid typid)
{
	return typid == INT2OID ? 5 : typid == INT4OID ? 10 : 19;
}

typedef enum Fit
{
	FIT,						/* the column holds the field's values */
	FIT_WIDER,					/* once widened to *wide */
	FIT_NOT						/* no widening makes it hold them */
} Fit;

/*
 * Does a column of type `col` hold the values of a field of type `field`
 * (the type the field maps to)?  A string field fits any column: the
 * column's input function reads each value, as it always has.  A column of
 * a kind the field's kind cannot become (a bytea field into a date) does
 * not fit.  A column of the field's kind that is narrower fits once it is
 * widened to *wide.
 */
static Fit field_fits_type(Oid field, int32 field_mod, Oid col, int32 col_mod, Oid *wide, int32 *wide_mod);

/*
 * As field_fits_type; a column of a domain is not widened (its base type
 * would lose the domain's constraints): a person decides.
 */
static Fit
field_fits(Oid field, int32 field_mod, Oid col, int32 col_mod, Oid *wide, int32 *wide_mod)
{
	Fit			fit = field_fits_type(field, field_mod, col, col_mod, wide, wide_mod);

	return (fit == FIT_WIDER && getBaseType(col) != col) ? FIT_NOT : fit;
}

static Fit
field_fits_type(Oid field, int32 field_mod, Oid col, int32 col_mod, Oid *wide, int32 *wide_mod)
{
	Kind		fk = kind_of(field);
	Kind		ck = kind_of(getBaseType(col));

	*wide = InvalidOid;
	*wide_mod = -1;
	col = getBaseType(col);
	if (ck == K_STRING || ck == K_OTHER || ck == K_JSON || fk == K_STRING)
		return FIT;
	if (fk == K_JSON || (fk == K_ARRAY && ck != K_ARRAY))
	{
		*wide = JSONBOID;
		return FIT_WIDER;
	}
	switch (ck)
	{
		case K_INTEGER:
			if (fk == K_INTEGER)
			{
				if (integer_rank(field) <= integer_rank(col))
					return FIT;
				*wide = field;
				return FIT_WIDER;
			}
			if (fk == K_NUMERIC)
			{
				/* without a limit: the integers already there keep their digits */
				*wide = NUMERICOID;
				return FIT_WIDER;
			}
			return FIT_NOT;
		case K_NUMERIC:
			if (fk == K_FLOAT)
				return FIT;		/* a float's values go through numeric's input */
			if (fk == K_INTEGER)
			{
				int			cw,
							cs;

				if (!numeric_digits(col_mod, &cw, &cs) || cw >= integer_digits(field))
					return FIT;
				*wide = NUMERICOID;
				if (integer_digits(field) + Max(cs, 0) <= NUMERIC_MAX_PRECISION)
					*wide_mod = (((integer_digits(field) + Max(cs, 0)) << 16) | Max(cs, 0)) + VARHDRSZ;
				return FIT_WIDER;
			}
			if (fk == K_NUMERIC)
			{
				int			cw,
							cs,
							fw,
							fs;

				if (!numeric_digits(col_mod, &cw, &cs))
					return FIT;
				*wide = NUMERICOID;
				if (!numeric_digits(field_mod, &fw, &fs))
					return FIT_WIDER;	/* to numeric without a limit */
				if (fw <= cw && fs <= cs)
					return FIT;
				if (Max(cw, fw) + Max(Max(cs, fs), 0) <= NUMERIC_MAX_PRECISION)
					*wide_mod = (((Max(cw, fw) + Max(Max(cs, fs), 0)) << 16) | Max(Max(cs, fs), 0)) + VARHDRSZ;
				return FIT_WIDER;
			}
			return FIT_NOT;
		case K_FLOAT:
			if (fk == K_INTEGER || fk == K_NUMERIC)
				return FIT;
			if (fk == K_FLOAT)
			{
				if (field == FLOAT4OID || col == FLOAT8OID)
					return FIT;
				*wide = FLOAT8OID;
				return FIT_WIDER;
			}
			return FIT_NOT;
		case K_ARRAY:
			if (fk != K_ARRAY)
				return FIT_NOT;
			{
				Oid			elem_wide;
				int32		elem_wide_mod;
				Fit			fit = field_fits_type(get_element_type(field), field_mod, get_element_type(col), col_mod,
											 &elem_wide, &elem_wide_mod);

				if (fit == FIT_WIDER)
				{
					*wide = elem_wide == JSONBOID ? JSONBOID : get_array_type(elem_wide);
					*wide_mod = elem_wide_mod;
					if (!OidIsValid(*wide))
						*wide = JSONBOID;
				}
				return fit;
			}
		case K_DATETIME:
			/* a date or an instant into a timestamp; into a date, a date only */
			if (fk != K_DATETIME)
				return FIT_NOT;
			return col != DATEOID || field == DATEOID ? FIT : FIT_NOT;
		default:
			return fk == ck ? FIT : FIT_NOT;
	}
}

/* A type as a statement names it: qualified, so that no search_path can change it. */
static char *
type_sql(Oid typid, int32 typmod)
{
	return format_type_extended(typid, typmod, FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
}

/* A type as a person reads it, in messages. */
static char *
type_text(Oid typid, int32 typmod)
{
	return format_type_with_typemod(typid, typmod);
}

/* ---- the statements ---- */

/*
 * A statement of a change that failed is never a record's fault: no
 * message is to be set aside for it.  An error of the kind that would
 * blame a record (a default that does not convert, a name taken
 * meanwhile) stops the job instead, with the statement; the others (a
 * lock not had in time, a deadlock, resources) go on as they are.  Called
 * in PG_CATCH.
 */
static void
statement_failed(MemoryContext cxt, const char *statement)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	if (!eoi_is_record_error(edata))
		ReThrowError(edata);
	FlushErrorState();
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("%s", edata->message),
			 errdetail("The statement was: %s", statement),
			 edata->hint ? errhint("%s", edata->hint) :
			 errhint("Change the table so that the statement is not needed, then run eoingest.start_job().")));
}

/*
 * Run one statement on `target` as the current user (the job's owner),
 * then record it.  pg_stat_activity shows it while it waits for its lock.
 */
static void
run_change(const EoiJob *job, const char *target, const SchemaUse *use, const char *statement)
{
	ChangeContext cc = {target, use};
	ErrorContextCallback errcb;
	char	   *activity = MyBEEntry ? pstrdup(MyBEEntry->st_activity_raw) : NULL;
	MemoryContext cxt = CurrentMemoryContext;
	int			rc = 0;

	errcb.callback = change_error_callback;
	errcb.arg = &cc;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;

	ereport(LOG,
			(errmsg("job \"%s\" changes its target: %s", job->name, statement),
			 errdetail("The writer schema of topic \"%s\" (%s) asks for it.", use->topic, use->fields->what)));
	/* job_status shows it as the worker's step, with the lock it waits for */
	pgstat_report_activity(STATE_RUNNING, statement);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	PG_TRY();
	{
		rc = SPI_execute(statement, false, 0);
	}
	PG_CATCH();
	{
		statement_failed(cxt, statement);
	}
	PG_END_TRY();
	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "could not run \"%s\": %s", statement, SPI_result_code_string(rc));
	SPI_finish();
	pgstat_report_activity(STATE_RUNNING, activity);
	eoi_target_change_record(job, use->topic, target, use->fields->what, statement);
	eoi_shape_forget(target);
	EOI_FAULT_POINT("after_target_change");

	error_context_stack = errcb.previous;
}

/*
 * The schema's fields must be able to name columns.  A message brings its
 * schema (with format json, each message its own): one that cannot is the
 * message's fault, a bad record, not the job's.
 */
static void
check_fields(const char *target, const SchemaUse *use)
{
	const EoiSchemaFields *f = use->fields;

	if (!f->record || f->nfields == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of topic \"%s\" is %s, not a record with fields: it gives no columns for target %s",
						f->what, use->topic, f->record ? "a record without fields" : f->type_name, target),
				 errhint("Create the table yourself: a value that is not a record fills a table of one column.")));
	if (f->nfields > MaxHeapAttributeNumber)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s of topic \"%s\" has %d fields, more than a table's %d columns",
						f->what, use->topic, f->nfields, MaxHeapAttributeNumber)));
	for (int i = 0; i < f->nfields; i++)
	{
		const char *name = f->fields[i].name;
		const char *why = NULL;

		CHECK_FOR_INTERRUPTS();
		if (name[0] == '\0')
			why = "is empty";
		else if (strlen(name) >= NAMEDATALEN)
			why = psprintf("is longer than a column name can be (%d bytes)", NAMEDATALEN - 1);
		else if (SystemAttributeByName(name) != NULL)
			why = "is the name of a system column";
		else
			for (int j = 0; j < i && why == NULL; j++)
				if (strcmp(f->fields[j].name, name) == 0)
					why = "is the name of another field too";
		if (why != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("field name \"%s\" of %s %s: it cannot name a column of target %s",
							name, f->what, why, target),
					 errhint("Rename the field in the producer's schema, or create the table yourself and fill it with a mapping.")));
	}
}

static const EoiSchemaField *
field_named(const EoiSchemaFields *f, const char *name)
{
	for (int i = 0; i < f->nfields; i++)
		if (strcmp(f->fields[i].name, name) == 0)
			return &f->fields[i];
	return NULL;
}

/*
 * The fields of the first Avro or Protobuf key of the batch, as the
 * primary key of a table create_target makes for mode upsert without
 * key_columns.
 */
static List *
key_schema_columns(const EoiJob *job, EoiBatch *batch, const char *target)
{
	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];
		const EoiSchemaFields *f;
		List	   *names = NIL;

		CHECK_FOR_INTERRUPTS();
		if (msg->key == NULL)
			continue;
		f = message_schema(job->key_format, msg, true, true);
		if (!f->record || f->nfields == 0)
			continue;			/* names no columns: its record's own write says so */
		for (int k = 0; k < f->nfields; k++)
			names = lappend(names, makeString(pstrdup(f->fields[k].name)));
		return names;
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("target %s does not exist, and no message of the batch has a key whose schema (a record) names its primary key", target),
			 errhint("Name the key columns: eoingest.alter_job('%s', key_columns => '{id}').", job->name)));
	return NIL;					/* not reached */
}

/*
 * CREATE TABLE from a writer schema, with the columns `shape` adds after
 * the fields and its primary key.
 */
static void
create_target(const EoiJob *job, const char *target, const SchemaUse *use, const EoiNewTarget *shape)
{
	const EoiSchemaFields *f = use->fields;
	StringInfoData sql;
	ListCell   *lc;

	check_fields(target, use);
	initStringInfo(&sql);
	appendStringInfo(&sql, "CREATE TABLE %s (", target);
	for (int i = 0; i < f->nfields; i++)
		appendStringInfo(&sql, "%s%s %s", i > 0 ? ", " : "", quote_identifier(f->fields[i].name),
						 type_sql(f->fields[i].typid, f->fields[i].typmod));
	if (shape->columns != NULL)
		appendStringInfo(&sql, ", %s", shape->columns);
	if (shape->key != NIL)
	{
		appendStringInfoString(&sql, ", PRIMARY KEY (");
		foreach(lc, shape->key)
		{
			const char *key = strVal(lfirst(lc));

			if (field_named(f, key) == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("key column \"%s\" of job \"%s\" is not a field of %s", key, job->name, f->what),
						 errdetail("create_target makes target %s from the fields of the writer schema, keyed by key_columns or the fields of the key's schema.", target),
						 errhint("Name fields of the schema in key_columns (eoingest.alter_job), or create the table yourself.")));
			appendStringInfo(&sql, "%s%s", foreach_current_index(lc) > 0 ? ", " : "", quote_identifier(key));
		}
		appendStringInfoChar(&sql, ')');
	}
	appendStringInfoChar(&sql, ')');
	run_change(job, target, use, sql.data);
}

/*
 * The column a field fills, as the decoder finds it: of its name; for
 * format json, else of its name in another case when only one column has
 * it (decodejson.c).  NULL for none.
 */
static Form_pg_attribute
column_of_field(TupleDesc desc, const char *name, bool any_case)
{
	Form_pg_attribute found = NULL;
	int			matches = 0;

	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute each = TupleDescAttr(desc, a);

		if (!each->attisdropped && strcmp(NameStr(each->attname), name) == 0)
			return each;
	}
	if (!any_case)
		return NULL;
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute each = TupleDescAttr(desc, a);

		if (!each->attisdropped && pg_strcasecmp(NameStr(each->attname), name) == 0)
		{
			found = each;
			matches++;
		}
	}
	return matches == 1 ? found : NULL;
}

/*
 * The ALTER TABLE that makes `rel` hold the fields of `use`, or "" when it
 * does already.  A field that does not fit its column is an error.
 */
static char *
plan_changes(const EoiJob *job, Relation rel, const char *target, const SchemaUse *use)
{
	const EoiSchemaFields *f = use->fields;
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData sql;
	int			changes = 0;

	check_fields(target, use);
	initStringInfo(&sql);
	appendStringInfo(&sql, "ALTER TABLE %s ", target);
	for (int i = 0; i < f->nfields; i++)
	{
		const EoiSchemaField *field = &f->fields[i];
		AttrNumber	attnum = InvalidAttrNumber;
		Form_pg_attribute att = NULL;
		Oid			wide;
		int32		wide_mod;
		Fit			fit;

		CHECK_FOR_INTERRUPTS();
		att = column_of_field(desc, field->name, job->format == EOI_FORMAT_JSON);
		if (att != NULL)
			attnum = att->attnum;
		if (attnum == InvalidAttrNumber)
		{
			appendStringInfo(&sql, "%sADD COLUMN %s %s", changes++ > 0 ? ", " : "",
							 quote_identifier(field->name), type_sql(field->typid, field->typmod));
			continue;
		}
		fit = field_fits(field->typid, field->typmod, att->atttypid, att->atttypmod, &wide, &wide_mod);
		if (fit == FIT)
			continue;
		if (fit == FIT_NOT || job->schema_changes != EOI_SCHEMA_CHANGES_WIDEN)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("field \"%s\" of %s (%s) does not fit column %s of target %s (%s)",
							field->name, f->what, type_text(field->typid, field->typmod),
							quote_identifier(field->name), target, type_text(att->atttypid, att->atttypmod)),
					 fit == FIT_WIDER ?
					 errdetail("schema_changes %s does not widen columns; widen would make it %s.",
							   eoi_schema_changes_name(job->schema_changes), type_text(wide, wide_mod)) :
					 errdetail("No widening of a %s column holds values of type %s; the job stops here, its offsets where they are, until the table is changed.",
							   type_text(att->atttypid, att->atttypmod), type_text(field->typid, field->typmod)),
					 errhint("Change the column, e.g. ALTER TABLE %s ALTER COLUMN %s TYPE %s%s, then run eoingest.start_job('%s').",
							 target, quote_identifier(field->name),
							 type_text(fit == FIT_WIDER ? wide : field->typid, fit == FIT_WIDER ? wide_mod : field->typmod),
							 (fit == FIT_WIDER ? wide : field->typid) == JSONBOID ?
							 psprintf(" USING to_jsonb(%s)", quote_identifier(field->name)) : "",
							 job->name)));
		appendStringInfo(&sql, "%sALTER COLUMN %s TYPE %s", changes++ > 0 ? ", " : "",
						 quote_identifier(NameStr(att->attname)), type_sql(wide, wide_mod));
		if (wide == JSONBOID && getBaseType(att->atttypid) != JSONOID)
			appendStringInfo(&sql, " USING pg_catalog.to_jsonb(%s)", quote_identifier(NameStr(att->attname)));
	}
	return changes > 0 ? sql.data : "";
}

/*
 * Take the turn of changing `target`, for the rest of the transaction.
 * Only a batch that changes the table takes it: the others write side by
 * side.
 */
static void
lock_target_name(const char *target)
{
	uint32		h = hash_bytes((const unsigned char *) target, strlen(target));

	DirectFunctionCall2(pg_advisory_xact_lock_int4, Int32GetDatum(EVOLVE_LOCK_CLASS),
						Int32GetDatum((int32) h));
	/* see what the writer before committed: its table, its columns */
	AcceptInvalidationMessages();
}

/*
 * Add and widen the columns `use` asks for.  The plan is made without
 * holding on to the table; when there is something to do, it is made
 * again in this writer's turn and under the lock the statement takes, so
 * that what it does is what the table needs then.
 */
static void
evolve_for(const EoiJob *job, const char *target, const SchemaUse *use)
{
	Relation	rel = eoi_open_target(target, AccessShareLock);
	char	   *statement = plan_changes(job, rel, target, use);

	table_close(rel, AccessShareLock);
	if (statement[0] == '\0')
		return;
	lock_target_name(target);
	rel = eoi_open_target(target, AccessExclusiveLock);
	statement = plan_changes(job, rel, target, use);
	table_close(rel, NoLock);
	if (statement[0] != '\0')
		run_change(job, target, use, statement);
}

/*
 * Make `target` hold the writer schemas `uses` (of EoiSchemaUse, in the
 * order they came): create it from the first when it does not exist and
 * the job creates targets (`shape` says what else it holds, or NULL when
 * there is none to create), then add and widen its columns as
 * schema_changes allows.  In the batch's transaction (or the attempt's
 * subtransaction), as the job's owner.
 */
void
eoi_evolve_target_to(const EoiJob *job, const char *target, List *uses, const EoiNewTarget *shape)
{
	ListCell   *lc;

	if (!eoi_target_exists(target))
	{
		if (!job->create_target)
			return;				/* the write says the table is missing */
		if (uses == NIL || shape == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("target %s does not exist, and no message of the batch carries a schema to create it from", target),
					 errdetail("Format json carries one in Kafka Connect's wrapper (JsonConverter with schemas.enable=true), or, for JSON Schema records, in the registry that schema_registry names."),
					 errhint("Create the table yourself; the job goes on from its offsets when started again.")));
		lock_target_name(target);
		if (!eoi_target_exists(target))
		{
			create_target(job, target, linitial(uses), shape);
			uses = list_delete_first(uses);
		}
	}
	if (job->schema_changes == EOI_SCHEMA_CHANGES_NONE)
		return;
	foreach(lc, uses)
		evolve_for(job, target, lfirst(lc));
}

/*
 * Before the rows of `batch` go into `target` (the job's, or a target
 * template's table for their topic): create it, or add and widen its
 * columns, as the job says and the batch's writer schemas ask.  A table
 * made for mode upsert is keyed by key_columns, or by the fields of the
 * key schema of the batch's first keyed message.
 */
void
eoi_evolve_target(const EoiJob *job, EoiBatch *batch, const char *target)
{
	List	   *uses;
	EoiNewTarget shape = {0};

	if (!job->create_target && job->schema_changes == EOI_SCHEMA_CHANGES_NONE)
		return;
	if (!eoi_format_has_schema_id(job->format) && job->format != EOI_FORMAT_JSON)
		return;					/* create_job allows them for these only */
	uses = batch_schemas(batch, job->format, job->schema_registry != NULL);
	/* made even when the table is there now: it may be dropped before the lock */
	if (job->create_target && uses != NIL && job->mode == EOI_MODE_UPSERT)
		shape.key = job->key_columns != NIL ? job->key_columns : key_schema_columns(job, batch, target);
	eoi_evolve_target_to(job, target, uses, &shape);
}

/*
 * create_job's part of create_target: create the job's missing `target`
 * for `topic` now, from the latest schema the registry has for the topic
 * (subject "<topic>-value", Confluent's default naming), so that it is
 * there to grant and look at before the first message.  Returns false
 * when there is nothing to create it from yet (not avro or protobuf, no
 * such subject, a Protobuf file of several messages, an upsert keyed by
 * the key's schema, or change events): the worker creates it then.  In
 * the caller's transaction, as the job's owner.
 */
bool
eoi_evolve_create_now(const EoiJob *job, const char *topic, const char *target)
{
	const EoiSchemaFields *fields;
	SchemaUse	use;
	EoiNewTarget shape = {0};

	if (!job->create_target || !eoi_format_has_schema_id(job->format) ||
		job->envelope != EOI_ENVELOPE_NONE ||
		(job->mode == EOI_MODE_UPSERT && job->key_columns == NIL))
		return false;
	eoi_avro_use_job(job);
	fields = job->format == EOI_FORMAT_AVRO ? eoi_avro_subject_fields(psprintf("%s-value", topic)) :
		eoi_protobuf_subject_fields(psprintf("%s-value", topic));
	if (fields == NULL)
		return false;
	use.fields = eoi_schema_fields_copy(fields);
	use.topic = topic;
	lock_target_name(target);
	if (eoi_target_exists(target))
		return false;
	if (job->mode == EOI_MODE_UPSERT)
		shape.key = job->key_columns;
	create_target(job, target, &use, &shape);
	return true;
}
