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
#include "common/hashfn.h"
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

#include "format/connect.h"
#include "format/decodejson.h"
#include "format/jsonscan.h"
#include "format/jsonschema.h"
#include "format/registry.h"

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

/* ---- the keys of a message ---- */

/*
 * What the scan (and jsonb's way, for the wrapper) found of a message's
 * keys besides its columns.
 */
typedef struct KeyMatchState
{
	EoiColumns *cols;
	int			next;			/* where exact_column looks first */
	int			nkeys;			/* distinct keys, as far as the wrapper's go */
	bool		has_schema;		/* "schema" and "payload", not yet reported */
	bool		has_payload;
	EoiJsonToken schema;
	EoiJsonToken payload;
} KeyMatchState;

/*
 * The members of Kafka Connect's wrapper: kept, and reported as keys that
 * match no column only once the message is known not to be a wrapper.  A
 * repeated one replaces the earlier (jsonb keeps the last).
 */
static bool
wrapper_member(KeyMatchState *st, const char *key, size_t key_len, const EoiJsonToken *value)
{
	if (key_len == 6 && memcmp(key, "schema", 6) == 0)
	{
		st->nkeys += !st->has_schema;
		st->has_schema = true;
		st->schema = *value;
		return true;
	}
	if (key_len == 7 && memcmp(key, "payload", 7) == 0)
	{
		st->nkeys += !st->has_payload;
		st->has_payload = true;
		st->payload = *value;
		return true;
	}
	return false;
}

/* jsonb's way: a member of the wrapper, kept unreported as the scan does. */
static bool
defer_wrapper_member(KeyMatchState *st, const JsonbValue *key)
{
	EoiJsonToken none = {EOI_JSON_NULL};

	return wrapper_member(st, key->val.string.val, key->val.string.len, &none);
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
match_other_keys(EoiColumns *cols, JsonbContainer *root, KeyMatchState *defer)
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
			if (defer == NULL || shadowed != NULL || !defer_wrapper_member(defer, &key))
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
		st->nkeys++;
		return true;
	}
	c = fold_column(cols, key, key_len);
	if (c < 0)
	{
		if (!wrapper_member(st, key, key_len, value))
		{
			st->nkeys++;
			report_unmatched_key(cols, key, (int) key_len, NULL);
		}
		return true;
	}
	st->nkeys++;
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
scan_json(EoiColumns *cols, const char *value, size_t len, KeyMatchState *st)
{
	memset(st, 0, sizeof(KeyMatchState));
	st->cols = cols;
	if (len > SCAN_MAX_MESSAGE)
		return false;
	for (int c = 0; c < cols->ncolumns; c++)
	{
		EoiJsonSlot *slot = &cols->json_slots[c];

		slot->found = slot->exact = slot->fold_found = slot->fold_keys = false;
	}
	if (!eoi_json_scan_object(value, len, reserve_scan_buffer(cols, len),
							  GetDatabaseEncoding() == PG_UTF8, scan_field, st))
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

/*
 * The text of a token as Connect's encodings are read: a string's
 * contents, a number's or a nested value's JSON text.
 */
static char *
token_text(const EoiJsonToken *t)
{
	switch (t->kind)
	{
		case EOI_JSON_TRUE:
			return pstrdup("true");
		case EOI_JSON_FALSE:
			return pstrdup("false");
		default:
			return pnstrdup(t->data, t->len);
	}
}

/*
 * Column c's value from the scanned token `t`: a datum when the writer
 * takes one and the column's type has a direct way, else the text its
 * input function reads.  Also for a mapping's paths (mapping.c).
 */
void
eoi_json_write_token(EoiColumns *cols, int c, EoiRowWriter *writer, const EoiJsonToken *t)
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

/* Column c's value from its token, through its Connect codec if it has one. */
static void
write_json_token(EoiColumns *cols, int c, EoiRowWriter *writer, const EoiJsonToken *t,
				 const EoiFieldCodec *codecs)
{
	if (t->kind != EOI_JSON_NULL && codecs != NULL && codecs[c].conv != CONV_NONE)
	{
		char	   *s = eoi_connect_convert(&codecs[c], token_text(t));

		writer->field(writer, c, s, strlen(s));
	}
	else
		eoi_json_write_token(cols, c, writer, t);
}

/*
 * The text of a jsonb scalar or container: a string's contents, a
 * number's or boolean's text, a container's JSON; NULL for a JSON null.
 * As Connect's encodings are read, and a mapping's constants.
 */
char *
eoi_jsonb_value_text(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v->val.numeric)));
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		case jbvBinary:
			return JsonbToCString(NULL, v->val.binary.data, v->val.binary.len);
		default:
			return NULL;
	}
}

static void
write_json_value(EoiColumns *cols, int col, EoiRowWriter *writer, JsonbValue *v,
				 const EoiFieldCodec *codecs)
{
	StringInfo	text = cols->json_text;

	if (v->type != jbvNull && codecs != NULL && codecs[col].conv != CONV_NONE)
	{
		char	   *s = eoi_connect_convert(&codecs[col], eoi_jsonb_value_text(v));

		writer->field(writer, col, s, strlen(s));
		return;
	}
	resetStringInfo(text);
	if (eoi_json_value_text(&cols->json[col], cols->timestamp_unit, v, text, cols->json_scratch))
		writer->field(writer, col, text->data, text->len);
	else
		writer->field(writer, col, NULL, 0);
}

/* ---- what fills no column, and Kafka Connect's wrapper ---- */

static int
columns_found(EoiColumns *cols)
{
	int			found = 0;

	for (int c = 0; c < cols->ncolumns; c++)
		found += cols->json_slots[c].found;
	return found;
}

/*
 * A message none of whose keys fills a column is no row of defaults: it is
 * the record's error (a typo in every key, another producer's messages, a
 * wrapper the job does not read).  `payload`: the keys were those of
 * Kafka Connect's wrapper's payload.
 */
static void
fills_no_column(EoiColumns *cols, bool empty, bool payload)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 cols->is_key ?
			 errmsg("JSON message key fills no key column of \"%s\"", cols->relname) :
			 errmsg("JSON message fills no column of \"%s\"", cols->relname),
			 empty ?
			 (payload ? errdetail("The payload of its Kafka Connect wrapper is an empty object.") :
			  errdetail("It is an empty object.")) :
			 (payload ? errdetail("None of the keys of its Kafka Connect wrapper's payload names a column, even ignoring case.") :
			  errdetail("None of its keys names a column, even ignoring case.")),
			 errhint("Format json puts each key into the column of its name; rename the keys or the columns, or map them with a transform.")));
}

static void
null_payload(EoiColumns *cols)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("Kafka Connect wrapper of a JSON message for \"%s\" has a null payload", cols->relname),
			 errdetail("JsonConverter writes a null value so when its schema is optional; format json makes rows of a struct's fields only."),
			 errhint("Produce a null message value (a tombstone) to delete a key in mode upsert.")));
}

static void
payload_not_object(EoiColumns *cols)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("Kafka Connect wrapper of a JSON message for \"%s\" has a payload that is not an object", cols->relname),
			 errdetail("Format json puts the fields of a struct's payload into the columns of their names."),
			 errhint("Read other payloads with a transform over value_json->'payload', or with format text.")));
}

/*
 * Kafka Connect's JsonConverter with schemas.enable=true wraps every value
 * as {"schema": <schema or null>, "payload": <value>}.  Such a message is
 * read as its payload, the schema's logical types (Decimal, Date, Time,
 * Timestamp) and bytes saying how each field's value reads, when its keys
 * are exactly those two and neither fills a column.
 */
static bool
is_wrapper_scan(const KeyMatchState *st)
{
	return st->nkeys == 2 && st->has_schema && st->has_payload &&
		(st->schema.kind == EOI_JSON_NULL ||
		 (st->schema.kind == EOI_JSON_NESTED && st->schema.data[0] == '{'));
}

static bool
is_wrapper_jsonb(EoiColumns *cols, JsonbContainer *root, JsonbValue *schema, JsonbValue *payload)
{
	return JsonContainerSize(root) == 2 && columns_found(cols) == 0 &&
		getKeyJsonValueFromContainer(root, "schema", 6, schema) != NULL &&
		getKeyJsonValueFromContainer(root, "payload", 7, payload) != NULL &&
		(schema->type == jbvNull ||
		 (schema->type == jbvBinary && JsonContainerIsObject(schema->val.binary.data)));
}

/* Report the wrapper's members of a message that is not a wrapper. */
static void
report_wrapper_keys(EoiColumns *cols, const KeyMatchState *st)
{
	if (st->has_schema)
		report_unmatched_key(cols, "schema", 6, NULL);
	if (st->has_payload)
		report_unmatched_key(cols, "payload", 7, NULL);
}

#define WRAPPER_HEAD "{\"schema\":"
#define WRAPPER_MIDDLE ",\"payload\":"

static bool
is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * A wrapper as JsonConverter writes it, around a schema of the batch's
 * cache: {"schema":<cached>,"payload":{...}}.  Then only the payload is
 * left to scan (*payload, *payload_len): the schema's text is known to be
 * valid JSON, and the scan of the payload checks the rest.  False if the
 * message is not of this shape.
 */
static bool
known_wrapper(EoiColumns *cols, const char *data, size_t len,
			  EoiFieldCodec **codecs, const char **payload, size_t *payload_len)
{
	EoiConnectCache *cache = cols->connect;
	size_t		head = strlen(WRAPPER_HEAD);
	size_t		middle = strlen(WRAPPER_MIDDLE);

	if (cache == NULL || len < head || memcmp(data, WRAPPER_HEAD, head) != 0)
		return false;
	while (len > 0 && is_json_space(data[len - 1]))
		len--;
	if (data[len - 1] != '}')
		return false;
	for (int i = 0; i < cache->n; i++)
	{
		const EoiConnectSchema *s = &cache->schemas[i];
		const char *p;
		const char *end = data + len - 1;	/* the wrapper's closing brace */

		if (head + s->len + middle >= len || memcmp(data + head, s->text, s->len) != 0 ||
			memcmp(data + head + s->len, WRAPPER_MIDDLE, middle) != 0)
			continue;
		p = data + head + s->len + middle;
		while (p < end && is_json_space(*p))
			p++;
		while (end > p && is_json_space(end[-1]))
			end--;
		if (p == end || *p != '{' || end[-1] != '}')
			return false;
		*codecs = s->codecs;
		*payload = p;
		*payload_len = end - p;
		return true;
	}
	return false;
}

/* What a JSON text is to the decoder. */
typedef enum JsonText
{
	JSON_MESSAGE,				/* a message's value or key: may be a wrapper */
	JSON_PAYLOAD,				/* a wrapper's payload */
	JSON_IMAGE					/* an object inside a message (a change event's image) */
} JsonText;

/*
 * Format json through jsonb (eoingest.json_decode = jsonb, and the
 * messages the scan declines): the message parsed by jsonb_in, its keys
 * read back from the jsonb; a wrapper's payload read so, with `codecs`
 * (found here when the wrapper is).
 */
static void
decode_json_jsonb(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
				  ExprContext *econtext, const EoiFieldCodec *codecs, JsonText what)
{
	Jsonb	   *jb;
	JsonbContainer *root;
	JsonbValue	schema;
	JsonbValue	payload;
	KeyMatchState deferred = {cols};

	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
											CStringGetDatum(pnstrdup(value, len))));
	if (!JB_ROOT_IS_OBJECT(jb))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("JSON message is not an object"),
				 errhint("Format json maps the keys of an object to columns; use a transform for other shapes.")));
	root = &jb->root;
	if (match_exact_keys(cols, root) < (int) JsonContainerSize(root))
		match_other_keys(cols, root, what == JSON_MESSAGE ? &deferred : NULL);
	if (what == JSON_MESSAGE && is_wrapper_jsonb(cols, root, &schema, &payload))
	{
		if (payload.type == jbvNull)
			null_payload(cols);
		if (payload.type != jbvBinary || !JsonContainerIsObject(payload.val.binary.data))
			payload_not_object(cols);
		if (schema.type == jbvBinary)
			codecs = eoi_connect_column_codecs(cols, schema.val.binary.data);
		root = payload.val.binary.data;
		what = JSON_PAYLOAD;
		if (match_exact_keys(cols, root) < (int) JsonContainerSize(root))
			match_other_keys(cols, root, NULL);
	}
	else
		report_wrapper_keys(cols, &deferred);
	if (what != JSON_IMAGE && columns_found(cols) == 0)
		fills_no_column(cols, JsonContainerSize(root) == 0, what == JSON_PAYLOAD);
	for (int c = 0; c < cols->ncolumns; c++)
	{
		if (cols->json_slots[c].found)
			write_json_value(cols, c, writer, &cols->json_slots[c].value, codecs);
		else
			eoi_write_default(cols, c, writer, econtext);
	}
}

/*
 * Read the JSON text with the scan; false when it declines and jsonb's way
 * is to read it.
 */
static bool
scan_message(EoiColumns *cols, const char *value, size_t len, KeyMatchState *st)
{
	if (eoingest_json_decode != EOI_JSON_DECODE_JSONB && scan_json(cols, value, len, st))
		return true;
	if (eoingest_json_decode == EOI_JSON_DECODE_SCAN_ONLY)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("JSON message declined by the scan (eoingest.json_decode = scan_only)"),
				 errhint("Set eoingest.json_decode to scan (the default) to read such messages through jsonb.")));
	return false;
}

/*
 * Format json: the scan's tokens when it reads the text, converted in the
 * columns' order after the whole text is read, as jsonb's way converts (so
 * that the first error is the same one); jsonb's way else.  A message in
 * Kafka Connect's wrapper is read as its payload; a message (or payload)
 * that fills no column is an error.
 */
static void
decode_json(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
			ExprContext *econtext, JsonText what)
{
	KeyMatchState st;
	EoiFieldCodec *codecs = NULL;

	if (what == JSON_MESSAGE && eoingest_json_decode != EOI_JSON_DECODE_JSONB &&
		known_wrapper(cols, value, len, &codecs, &value, &len))
		what = JSON_PAYLOAD;
	if (!scan_message(cols, value, len, &st))
	{
		decode_json_jsonb(cols, value, len, writer, econtext, codecs, what);
		return;
	}
	if (what == JSON_MESSAGE && columns_found(cols) == 0 && is_wrapper_scan(&st))
	{
		if (st.payload.kind == EOI_JSON_NULL)
			null_payload(cols);
		if (st.payload.kind != EOI_JSON_NESTED || st.payload.data[0] != '{')
			payload_not_object(cols);
		if (st.schema.kind == EOI_JSON_NESTED)
			codecs = eoi_connect_cached_codecs(cols, st.schema.data, st.schema.len);
		value = st.payload.data;
		len = st.payload.len;
		what = JSON_PAYLOAD;
		if (!scan_message(cols, value, len, &st))
		{
			decode_json_jsonb(cols, value, len, writer, econtext, codecs, what);
			return;
		}
	}
	report_wrapper_keys(cols, &st);
	if (what != JSON_IMAGE && columns_found(cols) == 0)
		fills_no_column(cols, st.nkeys == 0, what == JSON_PAYLOAD);
	/* For tests: which way a message was read. */
	EOI_FAULT_POINT("json-scan");
	for (int c = 0; c < cols->ncolumns; c++)
	{
		if (cols->json_slots[c].found)
			write_json_token(cols, c, writer, &cols->json_slots[c].token, codecs);
		else
			eoi_write_default(cols, c, writer, econtext);
	}
}

void
eoi_decode_json(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
				ExprContext *econtext)
{
	decode_json(cols, value, len, writer, econtext, JSON_MESSAGE);
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
		match_other_keys(cols, object, NULL);

	for (int c = 0; c < cols->ncolumns; c++)
	{
		if (cols->json_slots[c].found)
			write_json_value(cols, c, writer, &cols->json_slots[c].value, NULL);
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
	decode_json(cols, text, len, writer, econtext, JSON_IMAGE);
}

/* ---- the schema a message carries, as columns ---- */

/*
 * The wrappers' schemas met lately, by their text: a topic repeats one
 * schema in every message, and it is parsed once.
 */
#define SCHEMAS_KEPT 8

typedef struct KeptSchema
{
	MemoryContext cxt;			/* the text and the fields */
	char	   *text;
	size_t		len;
	EoiSchemaFields *fields;
} KeptSchema;

static KeptSchema kept[SCHEMAS_KEPT];
static int	next_kept = 0;

/*
 * Where the JSON object at `p` ends, strings skipped (the bytes are checked
 * when parsed), or NULL if `p` holds no object.
 */
static const char *
object_end(const char *p, const char *end)
{
	int			depth = 0;
	bool		in_string = false;

	if (p >= end || *p != '{')
		return NULL;
	for (; p < end; p++)
	{
		if (in_string)
		{
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in_string = false;
		}
		else if (*p == '"')
			in_string = true;
		else if (*p == '{' || *p == '[')
			depth++;
		else if ((*p == '}' || *p == ']') && --depth == 0)
			return p + 1;
	}
	return NULL;
}

/* The JSON Schemas of the registry met lately, by id. */
typedef struct KeptId
{
	MemoryContext cxt;
	uint32		id;
	EoiSchemaFields *fields;
} KeptId;

static KeptId kept_ids[SCHEMAS_KEPT];
static int	next_kept_id = 0;
static uint64 kept_ids_generation = 0;

/* The fields of JSON Schema `id` of the job's registry. */
static const EoiSchemaFields *
registry_schema_fields(uint32 id)
{
	KeptId	   *k;
	char	   *what = psprintf("schema id %u", id);
	char	   *text;
	MemoryContext old;

	/* ids are a registry's: another registry's configuration, another cache */
	if (kept_ids_generation != eoi_registry_generation())
	{
		for (int i = 0; i < SCHEMAS_KEPT; i++)
			if (kept_ids[i].cxt != NULL)
				MemoryContextDelete(kept_ids[i].cxt);
		memset(kept_ids, 0, sizeof(kept_ids));
		kept_ids_generation = eoi_registry_generation();
	}
	for (int i = 0; i < SCHEMAS_KEPT; i++)
		if (kept_ids[i].fields != NULL && kept_ids[i].id == id)
			return kept_ids[i].fields;
	text = eoi_registry_fetch_json_schema(psprintf("/schemas/ids/%u", id), what);
	k = &kept_ids[next_kept_id];
	next_kept_id = (next_kept_id + 1) % SCHEMAS_KEPT;
	if (k->cxt != NULL)
		MemoryContextDelete(k->cxt);
	memset(k, 0, sizeof(KeptId));
	k->cxt = AllocSetContextCreate(TopMemoryContext, "eoingest json schema", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(k->cxt);
	k->fields = eoi_json_schema_columns(text, what);
	k->id = id;
	MemoryContextSwitchTo(old);
	return k->fields;
}

/*
 * The fields of the schema a JSON message carries: in Confluent's JSON
 * Schema framing, the registry's schema of its id (when `registry`: the job
 * names one, which eoi_avro_use_job has configured); in JsonConverter's wrapper ({"schema":{...},"payload":...},
 * as it writes it), that Kafka Connect schema.  NULL for a message without
 * one.  Valid until SCHEMAS_KEPT other schemas have come.
 */
const EoiSchemaFields *
eoi_json_schema_fields(const char *value, size_t len, bool registry)
{
	size_t		head = strlen(WRAPPER_HEAD);
	const char *text;
	const char *end;
	KeptSchema *k;
	Jsonb	   *jb;
	MemoryContext old;

	if (len >= 5 && value[0] == '\0')
	{
		const unsigned char *p = (const unsigned char *) value;
		uint32		id = ((uint32) p[1] << 24) | ((uint32) p[2] << 16) | ((uint32) p[3] << 8) | p[4];

		value += 5;				/* Confluent's framing: magic byte and schema id */
		len -= 5;
		if ((len < head || memcmp(value, WRAPPER_HEAD, head) != 0) && registry)
			return registry_schema_fields(id);
	}
	if (len < head || memcmp(value, WRAPPER_HEAD, head) != 0)
		return NULL;
	text = value + head;
	end = object_end(text, value + len);
	if (end == NULL)
		return NULL;
	for (int i = 0; i < SCHEMAS_KEPT; i++)
		if (kept[i].text != NULL && kept[i].len == (size_t) (end - text) &&
			memcmp(kept[i].text, text, kept[i].len) == 0)
			return kept[i].fields;

	k = &kept[next_kept];
	next_kept = (next_kept + 1) % SCHEMAS_KEPT;
	if (k->cxt != NULL)
		MemoryContextDelete(k->cxt);
	memset(k, 0, sizeof(KeptSchema));
	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(pnstrdup(text, end - text))));
	k->cxt = AllocSetContextCreate(TopMemoryContext, "eoingest connect schema", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(k->cxt);
	k->fields = eoi_connect_struct_fields(&jb->root,
										  psprintf("Kafka Connect schema %016llx",
												   (unsigned long long) hash_bytes_extended((const unsigned char *) text,
																							end - text, 0)));
	k->len = end - text;
	k->text = pnstrdup(text, k->len);
	MemoryContextSwitchTo(old);
	return k->fields;
}
