/*-------------------------------------------------------------------------
 *
 * decodejson.c
 *	  Format json: mapping the keys of a JSON object onto the target's
 *	  columns.
 *
 * Each key goes into the column of that name (or, if none has it, the one
 * whose name differs only in ASCII case); a key that is absent takes the
 * column's default; other keys are ignored and logged once per target;
 * values convert as jsonvalue.c says.  jsonscan.c reads the object in one
 * pass, straight into the columns; jsonb stays where it is still needed:
 * for the messages the scan declines (invalid JSON, whose errors jsonb_in
 * raises, and the rare shapes listed in jsonscan.h), for two keys that
 * match one column ignoring case (the error names them in jsonb's order),
 * and for objects inside a message (the images of a Debezium change event,
 * eoi_decode_json_object).
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
#include "utils/memutils.h"
#include "utils/rel.h"

#include "format/decodejson.h"
#include "format/jsonscan.h"

int			eoingest_json_decode = EOI_JSON_DECODE_SCAN;

/*
 * eoi_decode_json's view of one column in the message being decoded: jsonb's
 * way fills value, the scan's token (and the fold_ fields while it runs).
 */
typedef struct EoiJsonSlot
{
	JsonbValue	value;
	EoiJsonToken token;
	bool		found;
	bool		exact;			/* by a key of exactly its name */
	const char *key;			/* the key that matched it ignoring case */
	int			key_len;
	bool		fold_found;		/* scan: a key matched it ignoring case */
	bool		fold_keys;		/* scan: two different such keys */
	EoiJsonToken fold_token;
} EoiJsonSlot;

/*
 * What format json needs for each column: how its values convert, its
 * default (a value table, not key columns), and whether a key may match it
 * ignoring case: only when no other column's name is the same but for case.
 */
void
eoi_json_columns_prepare(EoiColumns *cols, Relation rel, EState *estate)
{
	cols->defaults = palloc0(sizeof(ExprState *) * Max(cols->ncolumns, 1));
	cols->outfuncs = palloc0(sizeof(FmgrInfo) * Max(cols->ncolumns, 1));
	cols->typids = palloc0(sizeof(Oid) * Max(cols->ncolumns, 1));
	cols->typmods = palloc0(sizeof(int32) * Max(cols->ncolumns, 1));
	cols->json = palloc0(sizeof(EoiJsonColumn) * Max(cols->ncolumns, 1));
	cols->json_slots = palloc0(sizeof(EoiJsonSlot) * Max(cols->ncolumns, 1));
	cols->json_text = makeStringInfo();
	cols->json_scratch = makeStringInfo();
	for (int c = 0; c < cols->ncolumns; c++)
	{
		AttrNumber	attnum = attnameAttNum(rel, cols->colnames[c], false);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
		Oid			outfunc;
		bool		isvarlena;

		eoi_json_column_init(&cols->json[c], cols->colnames[c], att->atttypid);
		cols->json[c].fold_case = true;
		for (int d = 0; d < cols->ncolumns; d++)
			if (d != c && pg_strcasecmp(cols->colnames[c], cols->colnames[d]) == 0)
				cols->json[c].fold_case = false;
		getTypeOutputInfo(att->atttypid, &outfunc, &isvarlena);
		fmgr_info(outfunc, &cols->outfuncs[c]);
		cols->typids[c] = att->atttypid;
		cols->typmods[c] = att->atttypmod;
		if (estate != NULL && !cols->is_key)
		{
			Node	   *expr = build_column_default(rel, att->attnum);

			if (expr != NULL)
				cols->defaults[c] = ExecPrepareExpr(expression_planner((Expr *) expr), estate);
		}
	}
}

static void
write_json_value(EoiColumns *cols, int col, EoiRowWriter *writer, JsonbValue *v)
{
	StringInfo	text = cols->json_text;

	resetStringInfo(text);
	if (eoi_json_value_text(&cols->json[col], cols->timestamp_unit, v, text, cols->json_scratch))
		writer->field(writer, col, text->data, text->len);
	else
		writer->field(writer, col, NULL, 0);
}

/* ---- json keys that match no column ---- */

/*
 * Keys already reported by this process, per target: a typo in a key is
 * logged the first time it is seen, not for every message, and the memory
 * this takes is bounded.
 */
#define MAX_REPORTED_KEYS 64
#define MAX_REPORTED_KEY_LEN 200

typedef struct ReportedKey
{
	Oid			relid;
	int			len;
	char	   *key;
} ReportedKey;

static ReportedKey reported_keys[MAX_REPORTED_KEYS];
static int	n_reported_keys = 0;

static bool
names_generated_column(EoiColumns *cols, const char *key, int len)
{
	ListCell   *lc;

	foreach(lc, cols->generated)
		if (eoi_spells_name(key, len, strVal(lfirst(lc))))
			return true;
	return false;
}

/*
 * Log a key that fills no column; `shadowed`, if not NULL, is the column
 * it spells ignoring case, which a key of exactly its name filled.
 */
static void
report_unmatched_key(EoiColumns *cols, const char *key, int len, const char *shadowed)
{
	int			clipped;

	if (cols->is_key)
		return;
	clipped = pg_mbcliplen(key, len, Min(len, MAX_REPORTED_KEY_LEN));
	for (int i = 0; i < n_reported_keys; i++)
		if (reported_keys[i].relid == cols->relid && reported_keys[i].len == clipped &&
			memcmp(reported_keys[i].key, key, clipped) == 0)
			return;
	if (n_reported_keys == MAX_REPORTED_KEYS)
		return;
	reported_keys[n_reported_keys].relid = cols->relid;
	reported_keys[n_reported_keys].len = clipped;
	reported_keys[n_reported_keys].key = MemoryContextStrdup(TopMemoryContext,
															 pnstrdup(key, clipped));
	n_reported_keys++;

	if (shadowed != NULL)
		ereport(LOG,
				(errmsg("JSON key \"%.*s\" is ignored: column \"%s\" of \"%s\" takes the key of exactly its name",
						clipped, key, shadowed, cols->relname),
				 errdetail("A key fills a column whose name differs only in case when the message has no key of exactly the column's name. This is logged once per worker process."),
				 errhint("Send one key per column.")));
	else if (names_generated_column(cols, key, len))
		ereport(LOG,
				(errmsg("JSON key \"%.*s\" names a GENERATED ALWAYS identity column of \"%s\", which takes no values from messages",
						clipped, key, cols->relname),
				 errdetail("PostgreSQL generates the column's values, as INSERT ... OVERRIDING USER VALUE does; the key is ignored. This is logged once per worker process."),
				 errhint("To store the messages' values, make the column GENERATED BY DEFAULT AS IDENTITY.")));
	else
		ereport(LOG,
				(errmsg("JSON key \"%.*s\" matches no column of \"%s\"", clipped, key, cols->relname),
				 errdetail("A key fills the column of its name, or else the one column whose name differs only in case; other keys are ignored. %s",
						   n_reported_keys == MAX_REPORTED_KEYS ?
						   "Further keys that match no column are not logged by this worker process." :
						   "Each such key is logged once per worker process."),
				 errhint("Rename the key or the column, or use a transform to map it.")));
}

/* ---- json ---- */

static bool
key_is_exactly(const JsonbValue *key, const EoiJsonColumn *jc)
{
	return key->val.string.len == jc->name_len &&
		memcmp(key->val.string.val, jc->name, jc->name_len) == 0;
}

/* The columns with a key of exactly their name: how many. */
static int
match_exact_keys(EoiColumns *cols, JsonbContainer *root)
{
	int			found = 0;

	for (int c = 0; c < cols->ncolumns; c++)
	{
		EoiJsonSlot *slot = &cols->json_slots[c];

		slot->found = slot->exact =
			getKeyJsonValueFromContainer(root, cols->json[c].name, cols->json[c].name_len,
										 &slot->value) != NULL;
		found += slot->found;
	}
	return found;
}

/*
 * The column `key` fills ignoring case, or -1; *shadowed is set to a
 * column it spells that a key of exactly its name filled.
 */
static int
fold_case_column(EoiColumns *cols, const JsonbValue *key, const char **shadowed)
{
	*shadowed = NULL;
	for (int c = 0; c < cols->ncolumns; c++)
		if (cols->json[c].fold_case &&
			eoi_spells_name(key->val.string.val, key->val.string.len, cols->json[c].name))
		{
			if (!cols->json_slots[c].exact)
				return c;
			*shadowed = cols->json[c].name;
			return -1;
		}
	return -1;
}

/*
 * The keys that matched no column exactly: each fills the column whose
 * name it spells ignoring case, when that column has no exact key and no
 * other column's name is the same ignoring case; two such keys for one
 * column are an error (which one was meant?); the rest are reported.
 */
static void
match_other_keys(EoiColumns *cols, JsonbContainer *root)
{
	JsonbIterator *it = JsonbIteratorInit(root);
	JsonbValue	key;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &key, true)) != WJB_DONE)
	{
		JsonbValue	value;
		bool		exact = false;
		const char *shadowed;
		int			c;

		if (tok != WJB_KEY)
			continue;
		(void) JsonbIteratorNext(&it, &value, true);
		for (c = 0; c < cols->ncolumns && !exact; c++)
			exact = key_is_exactly(&key, &cols->json[c]);
		if (exact)
			continue;
		c = fold_case_column(cols, &key, &shadowed);
		if (c < 0)
		{
			report_unmatched_key(cols, key.val.string.val, key.val.string.len, shadowed);
			continue;
		}
		if (cols->json_slots[c].found)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("JSON keys \"%.*s\" and \"%.*s\" both match column \"%s\" ignoring case",
							cols->json_slots[c].key_len, cols->json_slots[c].key,
							key.val.string.len, key.val.string.val, cols->json[c].name),
					 errhint("Send one key per column; a key of exactly the column's name is taken before others.")));
		cols->json_slots[c].value = value;
		cols->json_slots[c].found = true;
		cols->json_slots[c].key = key.val.string.val;
		cols->json_slots[c].key_len = key.val.string.len;
	}
}

/* ---- json, in one scan (jsonscan.c) ---- */

/*
 * The column named exactly `key`, or -1.  Messages usually list the keys
 * in the columns' order: the search starts after the last match.
 */
static int
exact_column(EoiColumns *cols, const char *key, size_t len, int *next)
{
	for (int i = 0; i < cols->ncolumns; i++)
	{
		int			c = *next + i;

		if (c >= cols->ncolumns)
			c -= cols->ncolumns;
		if (cols->json[c].name_len == (int) len && memcmp(cols->json[c].name, key, len) == 0)
		{
			*next = (c + 1 == cols->ncolumns) ? 0 : c + 1;
			return c;
		}
	}
	return -1;
}

/* The column `key` may fill ignoring case (fold_case_column's), or -1. */
static int
fold_column(EoiColumns *cols, const char *key, size_t len)
{
	for (int c = 0; c < cols->ncolumns; c++)
		if (cols->json[c].fold_case && eoi_spells_name(key, len, cols->json[c].name))
			return c;
	return -1;
}

typedef struct KeyMatchState
{
	EoiColumns *cols;
	int			next;			/* where exact_column looks first */
} KeyMatchState;

/*
 * One key of the message, as match_exact_keys and match_other_keys would
 * take it: a later duplicate replaces an earlier one (jsonb keeps the
 * last); a key that matches a column only ignoring case counts once the
 * whole message is read (a key of exactly the name may still come).
 */
static bool
scan_field(void *arg, const char *key, size_t key_len, const EoiJsonToken *value)
{
	KeyMatchState  *st = arg;
	EoiColumns *cols = st->cols;
	int			c = exact_column(cols, key, key_len, &st->next);
	EoiJsonSlot *slot;

	if (c >= 0)
	{
		slot = &cols->json_slots[c];
		slot->token = *value;
		slot->found = slot->exact = true;
		return true;
	}
	c = fold_column(cols, key, key_len);
	if (c < 0)
	{
		report_unmatched_key(cols, key, (int) key_len, NULL);
		return true;
	}
	slot = &cols->json_slots[c];
	if (slot->fold_found &&
		(slot->key_len != (int) key_len || memcmp(slot->key, key, key_len) != 0))
		slot->fold_keys = true;
	slot->fold_found = true;
	slot->fold_token = *value;
	slot->key = key;
	slot->key_len = (int) key_len;
	return true;
}

/* jsonscan.c's scratch for a message of `len` bytes, kept in cols. */
static char *
reserve_scan_buffer(EoiColumns *cols, size_t len)
{
	if (len + 1 > cols->json_scan_size)
	{
		if (cols->json_scan != NULL)
			pfree(cols->json_scan);
		cols->json_scan_size = Max(len + 1, 2 * cols->json_scan_size);
		cols->json_scan = MemoryContextAlloc(GetMemoryChunkContext(cols), cols->json_scan_size);
	}
	return cols->json_scan;
}

/*
 * Messages longer than this take jsonb's way: jsonb refuses documents
 * whose binary form exceeds its limits (256 MB, a few times the text).
 */
#define SCAN_MAX_MESSAGE (16 * 1024 * 1024)

/*
 * Read the message with jsonscan.c into the columns' tokens; false (and
 * nothing written) when the scan declines, or when two keys match one
 * column ignoring case, whose error jsonb's way raises.
 */
static bool
scan_json(EoiColumns *cols, const char *value, size_t len)
{
	KeyMatchState	st = {cols, 0};

	if (len > SCAN_MAX_MESSAGE)
		return false;
	for (int c = 0; c < cols->ncolumns; c++)
	{
		EoiJsonSlot *slot = &cols->json_slots[c];

		slot->found = slot->exact = slot->fold_found = slot->fold_keys = false;
	}
	if (!eoi_json_scan_object(value, len, reserve_scan_buffer(cols, len),
							  GetDatabaseEncoding() == PG_UTF8, scan_field, &st))
		return false;
	for (int c = 0; c < cols->ncolumns; c++)
	{
		EoiJsonSlot *slot = &cols->json_slots[c];

		if (!slot->fold_found)
			continue;
		if (slot->exact)
			report_unmatched_key(cols, slot->key, slot->key_len, cols->json[c].name);
		else if (slot->fold_keys)
			return false;
		else
		{
			slot->token = slot->fold_token;
			slot->found = true;
		}
	}
	return true;
}

/* Column c's value from its token: a datum when the writer takes one. */
static void
write_json_token(EoiColumns *cols, int c, EoiRowWriter *writer, const EoiJsonToken *t)
{
	const EoiJsonColumn *jc = &cols->json[c];
	StringInfo	text = cols->json_text;
	Datum		d;

	if (t->kind == EOI_JSON_NULL)
		writer->field(writer, c, NULL, 0);
	else if (writer->datum != NULL &&
			 eoi_json_token_datum(jc, cols->timestamp_unit, cols->typids[c], cols->typmods[c], t, &d))
		writer->datum(writer, c, d);
	else if (t->kind == EOI_JSON_STRING && jc->kind != EOI_VALUE_BYTEA)
		writer->field(writer, c, t->data, t->len);	/* its text is its contents */
	else
	{
		resetStringInfo(text);
		if (eoi_json_token_text(jc, cols->timestamp_unit, t, text, cols->json_scratch))
			writer->field(writer, c, text->data, text->len);
		else
			writer->field(writer, c, NULL, 0);
	}
}

/*
 * Format json through jsonb (eoingest.json_decode = jsonb, and the
 * messages the scan declines): the message parsed by jsonb_in, its keys
 * read back from the jsonb.
 */
static void
decode_json_jsonb(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
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
	eoi_decode_json_object(cols, &jb->root, writer, econtext);
}

/*
 * Format json: the scan's tokens when it reads the message, converted in
 * the columns' order after the whole message is read, as jsonb's way
 * converts (so that the first error is the same one); jsonb's way else.
 */
void
eoi_decode_json(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
			ExprContext *econtext)
{
	if (eoingest_json_decode == EOI_JSON_DECODE_JSONB || !scan_json(cols, value, len))
	{
		if (eoingest_json_decode == EOI_JSON_DECODE_SCAN_ONLY)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("JSON message declined by the scan (eoingest.json_decode = scan_only)"),
					 errhint("Set eoingest.json_decode to scan (the default) to read such messages through jsonb.")));
		decode_json_jsonb(cols, value, len, writer, econtext);
		return;
	}
	/* For tests: which way a message was read. */
	EOI_FAULT_POINT("json-scan");
	for (int c = 0; c < cols->ncolumns; c++)
	{
		if (cols->json_slots[c].found)
			write_json_token(cols, c, writer, &cols->json_slots[c].token);
		else
			eoi_write_default(cols, c, writer, econtext);
	}
}

/*
 * Map the keys of a JSON object onto the columns, as format json does,
 * without ending the row: for objects inside a message (the images of a
 * Debezium change event).
 */
void
eoi_decode_json_object(EoiColumns *cols, JsonbContainer *object, EoiRowWriter *writer,
					   ExprContext *econtext)
{
	/* The usual message has a key for a column each: no need to look further. */
	if (match_exact_keys(cols, object) < (int) JsonContainerSize(object))
		match_other_keys(cols, object);

	for (int c = 0; c < cols->ncolumns; c++)
	{
		if (cols->json_slots[c].found)
			write_json_value(cols, c, writer, &cols->json_slots[c].value);
		else
			eoi_write_default(cols, c, writer, econtext);
	}
}

/*
 * The same for an object's JSON text, through the scan when it reads the
 * object (as format json reads a message): for the after image of a change
 * event whose keys cdc.c has checked.
 */
void
eoi_decode_json_text(EoiColumns *cols, const char *text, size_t len, EoiRowWriter *writer,
					 ExprContext *econtext)
{
	eoi_decode_json(cols, text, len, writer, econtext);
}
