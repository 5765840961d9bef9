/*-------------------------------------------------------------------------
 *
 * decode.c
 *	  Decoding of message values into COPY text-format lines.
 *
 * The sink hands the lines to COPY, which does the type input, defaults of
 * the columns not listed, constraints, triggers and partition routing.
 * Each message is checked and split here on its own, so that one message is
 * exactly one line and an error names the message that caused it:
 *
 *	text:	the value goes into the one target column that has no default.
 *	csv:	the fields go into the target's columns, in order; an empty,
 *			unquoted field is NULL.
 *	json:	an object; each key goes into the column of that name, a key that
 *			is absent takes the column's default, other keys are ignored.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_relation.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "avro.h"
#include "decode.h"

static bool
column_is_insertable(Form_pg_attribute att)
{
	return !att->attisdropped && att->attgenerated == '\0';
}

static bool
column_has_default(Form_pg_attribute att)
{
	return att->atthasdef || att->attidentity != '\0';
}

static void
add_column(EoiColumns *cols, Form_pg_attribute att)
{
	char	   *name = pstrdup(NameStr(att->attname));

	cols->names = lappend(cols->names, makeString(name));
	cols->colnames[cols->ncolumns++] = name;
}

/*
 * The columns `format` fills in `rel`, with what json needs to evaluate
 * defaults.  Errors here are the job's configuration errors: create_job
 * calls this too, so they show up there first.
 */
EoiColumns *
eoi_columns_for(Relation rel, EoiFormat format, EState *estate)
{
	TupleDesc	desc = RelationGetDescr(rel);
	EoiColumns *cols = palloc0(sizeof(EoiColumns));

	cols->format = format;
	cols->what = "the target has";
	cols->colnames = palloc0(sizeof(char *) * Max(desc->natts, 1));

	if (format == EOI_FORMAT_TEXT)
	{
		Form_pg_attribute chosen = NULL;

		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!column_is_insertable(att) || column_has_default(att))
				continue;
			if (chosen != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						 errmsg("format text needs a target with exactly one column without a default, but \"%s\" has several",
								RelationGetRelationName(rel)),
						 errdetail("Both \"%s\" and \"%s\" have no default.",
								   NameStr(chosen->attname), NameStr(att->attname)),
						 errhint("Give the other columns defaults, or use format csv or json, or a transform.")));
			chosen = att;
		}
		if (chosen == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("format text needs a target column without a default, but \"%s\" has none",
							RelationGetRelationName(rel)),
					 errhint("Add a text column without a default to receive the message value.")));
		add_column(cols, chosen);
		return cols;
	}

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (column_is_insertable(att))
			add_column(cols, att);
	}
	if (cols->ncolumns == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("target \"%s\" has no column to insert into",
						RelationGetRelationName(rel))));

	if (format == EOI_FORMAT_JSON || format == EOI_FORMAT_AVRO)
	{
		int			c = 0;

		cols->defaults = palloc0(sizeof(ExprState *) * cols->ncolumns);
		cols->outfuncs = palloc0(sizeof(FmgrInfo) * cols->ncolumns);
		cols->typids = palloc0(sizeof(Oid) * cols->ncolumns);
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);
			Node	   *expr;
			Oid			outfunc;
			bool		isvarlena;

			if (!column_is_insertable(att))
				continue;
			getTypeOutputInfo(att->atttypid, &outfunc, &isvarlena);
			fmgr_info(outfunc, &cols->outfuncs[c]);
			cols->typids[c] = att->atttypid;
			expr = build_column_default(rel, att->attnum);
			if (expr != NULL && estate != NULL)
				cols->defaults[c] = ExecPrepareExpr(expression_planner((Expr *) expr), estate);
			c++;
		}
	}
	return cols;
}

/*
 * The columns `names` of `rel`, in that order, for decoding a message key
 * in `format` (upsert tombstones).  Key columns have no defaults to fill.
 */
EoiColumns *
eoi_columns_named(Relation rel, EoiFormat format, List *names)
{
	EoiColumns *cols = palloc0(sizeof(EoiColumns));
	ListCell   *lc;

	cols->format = format;
	cols->what = "the key has";
	cols->colnames = palloc0(sizeof(char *) * Max(list_length(names), 1));
	foreach(lc, names)
	{
		char	   *name = strVal(lfirst(lc));

		if (attnameAttNum(rel, name, false) == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of \"%s\" does not exist", name, RelationGetRelationName(rel))));
		cols->names = lappend(cols->names, makeString(pstrdup(name)));
		cols->colnames[cols->ncolumns++] = pstrdup(name);
	}
	if (format == EOI_FORMAT_TEXT && cols->ncolumns != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key_format text needs exactly one key column, not %d", cols->ncolumns),
				 errhint("Use key_format csv or json for composite keys.")));
	return cols;
}

/* What COPY's text format writes after a backslash for a byte, or 0. */
static const char copy_escape[256] = {
	['\\'] = '\\', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
};

/* Append `len` bytes of `s` to `out`, escaped for COPY's text format. */
static void
append_escaped(StringInfo out, const char *s, size_t len)
{
	size_t		start = 0;

	for (size_t i = 0; i < len; i++)
	{
		char		esc = copy_escape[(unsigned char) s[i]];

		if (esc == 0)
			continue;
		appendBinaryStringInfo(out, s + start, i - start);
		appendStringInfoChar(out, '\\');
		appendStringInfoChar(out, esc);
		start = i + 1;
	}
	appendBinaryStringInfo(out, s + start, len - start);
}

/* ---- the COPY line writer ---- */

static void
copy_field(EoiRowWriter *writer, int col, const char *data, size_t len)
{
	EoiCopyWriter *cw = (EoiCopyWriter *) writer;

	if (col > 0)
		appendStringInfoChar(cw->out, '\t');
	if (data == NULL)
		appendStringInfoString(cw->out, "\\N");
	else
		append_escaped(cw->out, data, len);
}

static void
copy_end_row(EoiRowWriter *writer)
{
	appendStringInfoChar(((EoiCopyWriter *) writer)->out, '\n');
}

void
eoi_copy_writer_init(EoiCopyWriter *cw, StringInfo out)
{
	cw->writer.field = copy_field;
	cw->writer.end_row = copy_end_row;
	cw->out = out;
}

/* ---- formats ---- */

/* decode_csv's buffers for a message of `len` bytes, kept in cols. */
static void
reserve_csv_buffers(EoiColumns *cols, size_t len)
{
	MemoryContext cxt = GetMemoryChunkContext(cols);

	if (cols->csv_fields == NULL)
		cols->csv_fields = MemoryContextAlloc(cxt, sizeof(EoiCsvField) * Max(cols->ncolumns, 1));
	if (len + 1 > cols->csv_scratch_size)
	{
		if (cols->csv_scratch != NULL)
			pfree(cols->csv_scratch);
		cols->csv_scratch_size = Max(len + 1, 2 * cols->csv_scratch_size);
		cols->csv_scratch = MemoryContextAlloc(cxt, cols->csv_scratch_size);
	}
}

static void
decode_csv(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer)
{
	EoiCsvField *fields;
	const char *error = NULL;
	int			n;

	reserve_csv_buffers(cols, len);
	fields = cols->csv_fields;
	n = eoi_csv_split(value, len, cols->csv_scratch, fields, cols->ncolumns, &error);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
				 errmsg("malformed CSV message: %s", error)));
	if (n != cols->ncolumns)
		ereport(ERROR,
				(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
				 errmsg("CSV message has %s%d fields, %s %d columns",
						n > cols->ncolumns ? "more than " : "", Min(n, cols->ncolumns),
						cols->what, cols->ncolumns),
				 errhint("The fields fill the columns in order; use a transform to map them otherwise.")));

	for (int i = 0; i < n; i++)
		writer->field(writer, i, fields[i].isnull ? NULL : fields[i].data, fields[i].len);
}

static void
write_json_value(EoiRowWriter *writer, int col, JsonbValue *v)
{
	const char *s;

	switch (v->type)
	{
		case jbvNull:
			writer->field(writer, col, NULL, 0);
			return;
		case jbvString:
			writer->field(writer, col, v->val.string.val, v->val.string.len);
			return;
		case jbvNumeric:
			s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
			break;
		case jbvBool:
			s = v->val.boolean ? "true" : "false";
			break;
		case jbvBinary:
			s = JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
			break;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	writer->field(writer, col, s, strlen(s));
}

static void
write_default(EoiColumns *cols, int c, EoiRowWriter *writer, ExprContext *econtext)
{
	bool		isnull = true;
	Datum		d = (Datum) 0;

	if (cols->defaults != NULL && cols->defaults[c] != NULL)
		d = ExecEvalExprSwitchContext(cols->defaults[c], econtext, &isnull);
	if (isnull)
		writer->field(writer, c, NULL, 0);
	else
	{
		char	   *s = OutputFunctionCall(&cols->outfuncs[c], d);

		writer->field(writer, c, s, strlen(s));
	}
}

static void
decode_json(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
			ExprContext *econtext)
{
	Jsonb	   *jb;

	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
											CStringGetDatum(pnstrdup(value, len))));
	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("JSON message is not an object"),
				 errhint("Format json maps the keys of an object to columns; use a transform for other shapes.")));

	for (int c = 0; c < cols->ncolumns; c++)
	{
		JsonbValue	v;

		if (getKeyJsonValueFromContainer(&jb->root, cols->colnames[c],
										 strlen(cols->colnames[c]), &v) != NULL)
			write_json_value(writer, c, &v);
		else
			write_default(cols, c, writer, econtext);
	}
}

/*
 * Decode one message value into one row for `writer`.  The value must be
 * valid in the database encoding, without NUL bytes: anything else is an
 * error that names the message (the caller's error context).
 *
 * What decoding allocates (a copy of the value, a parsed JSON document)
 * goes in econtext's per-tuple memory, which the caller resets after each
 * message; writers keep their output in memory of their own.
 */
void
eoi_decode_message(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
				   ExprContext *econtext)
{
	MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);

	if (cols->format == EOI_FORMAT_AVRO)
	{
		/* binary: avro.c checks each string it finds */
		eoi_avro_decode(cols, value, len, writer, econtext);
		writer->end_row(writer);
		MemoryContextSwitchTo(old);
		return;
	}
	(void) pg_verifymbstr(value, (int) len, false);

	switch (cols->format)
	{
		case EOI_FORMAT_TEXT:
			writer->field(writer, 0, value, len);
			break;
		case EOI_FORMAT_CSV:
			decode_csv(cols, value, len, writer);
			break;
		case EOI_FORMAT_JSON:
			decode_json(cols, value, len, writer, econtext);
			break;
		case EOI_FORMAT_AVRO:
			break;				/* above */
	}
	writer->end_row(writer);
	MemoryContextSwitchTo(old);
}
