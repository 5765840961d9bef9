/*-------------------------------------------------------------------------
 *
 * cdcmode.c
 *	  What cdc_mode history and soft_delete add to envelope debezium: the
 *	  columns they fill themselves, checked on the target, and their values.
 *
 * history appends every change event as a row of its image with six more
 * columns (HistoryColumns below): the op, the source's commit time and LSN,
 * and the message's Kafka coordinates, which name the row once.
 *
 * soft_delete applies events by key as apply does, but a delete sets the
 * job's deleted_column (boolean) of the row and keeps its other values; an
 * insert or update of the key sets it false again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "envelope/cdc.h"
#include "envelope/cdc_internal.h"

/* The columns of a history target that the job fills, and the types they take. */
static const struct
{
	const char *name;
	const char *type;			/* as the hint spells it */
	Oid			types[3];		/* the types accepted (a domain by its base type) */
}			HistoryColumns[EOI_HISTORY_NCOLUMNS] = {
	[EOI_HISTORY_OP] = {"__op", "text", {TEXTOID, VARCHAROID, BPCHAROID}},
	[EOI_HISTORY_SOURCE_TS] = {"__source_ts", "timestamptz", {TIMESTAMPTZOID}},
	[EOI_HISTORY_SOURCE_LSN] = {"__source_lsn", "pg_lsn", {PG_LSNOID}},
	[EOI_HISTORY_TOPIC] = {"__topic", "text", {TEXTOID, VARCHAROID}},
	[EOI_HISTORY_PARTITION] = {"__partition", "integer", {INT4OID, INT8OID}},
	[EOI_HISTORY_OFFSET] = {"__offset", "bigint", {INT8OID, NUMERICOID}},
};

#define DEFAULT_DELETED_COLUMN "__deleted"

/* The column's place among `cols`, or -1. */
static int
column_position(EoiColumns *cols, const char *name)
{
	for (int c = 0; c < cols->ncolumns; c++)
		if (strcmp(cols->colnames[c], name) == 0)
			return c;
	return -1;
}

static bool
type_accepted(Oid type, const Oid *accepted, int n)
{
	type = getBaseType(type);
	for (int i = 0; i < n; i++)
		if (accepted[i] == type)
			return true;
	return false;
}

/* Error unless column `c` of `cols` (the target's `name`) has a type of `accepted`. */
static void
check_column_type(Relation rel, const char *target, const char *name, const char *mode,
				  const Oid *accepted, int naccepted, const char *type)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnameAttNum(rel, name, false) - 1);

	if (!type_accepted(att->atttypid, accepted, naccepted))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" of %s is of type %s, and cdc_mode %s writes %s there",
						name, target, format_type_be(att->atttypid), mode, type),
				 errhint("Run ALTER TABLE %s ALTER COLUMN %s TYPE %s.", target, quote_identifier(name), type)));
}

/* Add `name` to the list `names`, and the clause that fixes it to `clauses`. */
static void
add_fix(StringInfo names, StringInfo clauses, const char *name, const char *clause)
{
	appendStringInfo(names, "%s%s", names->len ? ", " : "", name);
	appendStringInfo(clauses, "%s%s", clauses->len ? ", " : "", clause);
}

/*
 * A history row of a delete has only the fields of the before image (the
 * key's, without REPLICA IDENTITY FULL), one of a truncate none: the data
 * columns must take NULL.  Error naming those that do not.
 */
static void
check_history_nullable(Relation rel, const char *target, EoiColumns *cols, const int *history)
{
	StringInfoData names;
	StringInfoData alter;

	initStringInfo(&names);
	initStringInfo(&alter);
	for (int c = 0; c < cols->ncolumns; c++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel),
											  attnameAttNum(rel, cols->colnames[c], false) - 1);
		bool		ours = false;

		for (int i = 0; i < EOI_HISTORY_NCOLUMNS; i++)
			ours |= (history[i] == c);
		if (ours || !att->attnotnull)
			continue;
		add_fix(&names, &alter, quote_identifier(cols->colnames[c]),
				psprintf("ALTER COLUMN %s DROP NOT NULL", quote_identifier(cols->colnames[c])));
	}
	if (names.len > 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("cdc_mode history writes NULL into columns %s of %s, which are NOT NULL", names.data, target),
				 errdetail("The row of a delete holds the fields of the before image (only the key's, unless the source table has REPLICA IDENTITY FULL), the row of a truncate none; CREATE TABLE ... (LIKE source) copies NOT NULL."),
				 errhint("Run ALTER TABLE %s %s.", target, alter.data)));
}

/*
 * The columns of `cols` (the columns the job fills in target `rel`) that
 * cdc_mode fills itself: history's, each at history[EOI_HISTORY_...], and
 * soft_delete's deleted column at *deleted; -1 where the mode has none.
 * Errors that say what to add or change when the target lacks one, or has
 * it of another type, or as a key column.
 */
void
eoi_cdc_mode_columns(Relation rel, const char *target, EoiColumns *cols, EoiCdcMode mode,
					 const char *deleted_column, List *key_columns, int *history, int *deleted)
{
	for (int i = 0; i < EOI_HISTORY_NCOLUMNS; i++)
		history[i] = -1;
	*deleted = -1;
	if (mode == EOI_CDC_HISTORY)
	{
		StringInfoData missing;
		StringInfoData add;

		initStringInfo(&missing);
		initStringInfo(&add);
		for (int i = 0; i < EOI_HISTORY_NCOLUMNS; i++)
		{
			history[i] = column_position(cols, HistoryColumns[i].name);
			if (history[i] >= 0)
				continue;
			add_fix(&missing, &add, HistoryColumns[i].name,
					psprintf("ADD COLUMN %s %s", HistoryColumns[i].name, HistoryColumns[i].type));
		}
		if (missing.len > 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("cdc_mode history needs the columns %s in %s", missing.data, target),
					 errdetail("Each change is appended with its op, the source's commit time and LSN, and its topic, partition and offset (a job's columns, if it names them, must include these)."),
					 errhint("Run ALTER TABLE %s %s.", target, add.data)));
		for (int i = 0; i < EOI_HISTORY_NCOLUMNS; i++)
			check_column_type(rel, target, HistoryColumns[i].name, "history", HistoryColumns[i].types,
							  lengthof(HistoryColumns[i].types), HistoryColumns[i].type);
		check_history_nullable(rel, target, cols, history);
	}
	else if (mode == EOI_CDC_SOFT_DELETE)
	{
		static const Oid boolean[1] = {BOOLOID};
		ListCell   *lc;

		Assert(deleted_column != NULL);
		*deleted = column_position(cols, deleted_column);
		if (*deleted < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("cdc_mode soft_delete needs a boolean column \"%s\" in %s", deleted_column, target),
					 errdetail("A delete sets it and keeps the row; an insert or update of the key clears it (a job's columns, if it names them, must include it)."),
					 errhint("Run ALTER TABLE %s ADD COLUMN %s boolean NOT NULL DEFAULT false, or name another column with deleted_column.",
							 target, quote_identifier(deleted_column))));
		check_column_type(rel, target, deleted_column, "soft_delete", boolean, 1, "boolean");
		foreach(lc, key_columns)
			if (strcmp(strVal(lfirst(lc)), deleted_column) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("deleted_column \"%s\" is a key column of %s", deleted_column, target),
						 errhint("Name a boolean column outside the key.")));
	}
}

/* cdc_mode soft_delete's column when the job names none. */
const char *
eoi_cdc_default_deleted_column(void)
{
	return DEFAULT_DELETED_COLUMN;
}

/*
 * The columns cdc_mode fills itself, as CREATE TABLE defines them for a
 * target that create_target makes, or NULL for none (apply).
 */
char *
eoi_cdc_mode_column_definitions(EoiCdcMode mode, const char *deleted_column)
{
	StringInfoData sql;

	if (mode == EOI_CDC_SOFT_DELETE)
		return psprintf("%s boolean NOT NULL DEFAULT false", quote_identifier(deleted_column));
	if (mode != EOI_CDC_HISTORY)
		return NULL;
	initStringInfo(&sql);
	for (int i = 0; i < EOI_HISTORY_NCOLUMNS; i++)
		appendStringInfo(&sql, "%s%s %s", i > 0 ? ", " : "",
						 quote_identifier(HistoryColumns[i].name),
						 format_type_extended(HistoryColumns[i].types[0], -1, FORMAT_TYPE_FORCE_QUALIFY));
	return sql.data;
}

/* A number of the source block, as text, or NULL. */
static char *
source_number(JsonbContainer *source, const char *name)
{
	JsonbValue	v;

	if (source == NULL || eoi_connect_member(source, name, &v) == NULL || v.type != jbvNumeric)
		return NULL;
	return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
}

/* An integer's text as int64; false for NULL, a fraction, or out of range. */
static bool
parse_int64(const char *text, int64 *n)
{
	char	   *end;

	if (text == NULL)
		return false;
	errno = 0;
	*n = strtoi64(text, &end, 10);
	return errno == 0 && end != text && *end == '\0';
}

/*
 * The source block's commit time (ts_ms) and LSN (lsn, the PostgreSQL
 * connector's), as the text their columns read, into `meta`; NULL where
 * the event has none, or one that is no such value.
 */
void
eoi_cdc_history_source(JsonbContainer *source, HistoryMeta *meta)
{
	char	   *ts_ms = source_number(source, "ts_ms");
	TimestampTz ts;
	int64		n;

	meta->source_ts = NULL;
	meta->source_lsn = NULL;
	/* read as the replay filter reads it (cdcreplay.c) */
	if (ts_ms != NULL && eoi_parse_source_time(ts_ms, strlen(ts_ms), &ts))
		meta->source_ts = DatumGetCString(DirectFunctionCall1(timestamptz_out, TimestampTzGetDatum(ts)));
	if (parse_int64(source_number(source, "lsn"), &n) && n >= 0)
		meta->source_lsn = psprintf("%X/%X", (uint32) ((uint64) n >> 32), (uint32) n);
}

/*
 * Write the columns cdc_mode fills itself into the row being written to
 * `w` (after its image's fields, before its end): history's from `meta`,
 * soft_delete's `deleted`.
 */
void
eoi_cdc_mode_write(CdcContext *cx, EoiRowWriter *w, const HistoryMeta *meta, bool deleted)
{
	if (cx->deleted_col >= 0)
		w->field(w, cx->deleted_col, deleted ? "true" : "false", deleted ? 4 : 5);
	if (cx->history[0] < 0 || meta == NULL)
		return;
	{
		const char *values[EOI_HISTORY_NCOLUMNS];

		values[EOI_HISTORY_OP] = meta->op;
		values[EOI_HISTORY_SOURCE_TS] = meta->source_ts;
		values[EOI_HISTORY_SOURCE_LSN] = meta->source_lsn;
		values[EOI_HISTORY_TOPIC] = meta->topic;
		values[EOI_HISTORY_PARTITION] = psprintf("%d", meta->partition);
		values[EOI_HISTORY_OFFSET] = psprintf(INT64_FORMAT, meta->offset);
		for (int i = 0; i < EOI_HISTORY_NCOLUMNS; i++)
			w->field(w, cx->history[i], values[i], values[i] ? strlen(values[i]) : 0);
	}
}
