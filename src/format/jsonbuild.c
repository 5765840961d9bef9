/*-------------------------------------------------------------------------
 *
 * jsonbuild.c
 *	  Format json: a message's value as jsonb, built from the one-pass scan
 *	  of jsonscan.c.
 *
 * The result is the jsonb that jsonb_in makes of the same text, datum for
 * datum: the members go through pushJsonbValue as jsonb_in's parser hands
 * them over (so duplicate keys and key order are jsonb's), numbers through
 * numeric_in, and an object or array inside the message through jsonb_in
 * itself.  The scan reads only what PostgreSQL's parser reads the same way
 * (jsonscan.h); any other text, invalid JSON included, and any text long
 * enough to come near jsonb's size limits goes to jsonb_in whole, which
 * reports what is wrong with it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "format/jsonbuild.h"
#include "format/jsonscan.h"
#include "format/jsonvalue.h"

/*
 * The longest text built here.  jsonb takes at most about six times the
 * length of its text (a digit and its comma in an array become a 12-byte
 * element), so no part of a shorter text's jsonb comes near jsonb's limit
 * of JENTRY_OFFLENMASK bytes: a nested value made on its own, before the
 * scan has read the rest of the text or the keys after it, raises nothing
 * that jsonb_in would not raise for the whole.  Longer texts go to
 * jsonb_in whole.
 */
#define BUILD_MAX_TEXT (JENTRY_OFFLENMASK / 16)

/* A member's value as jsonb_in's parser makes it. */
static void
token_value(const EoiJsonToken *t, JsonbValue *v)
{
	switch (t->kind)
	{
		case EOI_JSON_NULL:
			v->type = jbvNull;
			break;
		case EOI_JSON_TRUE:
		case EOI_JSON_FALSE:
			v->type = jbvBool;
			v->val.boolean = (t->kind == EOI_JSON_TRUE);
			break;
		case EOI_JSON_NUMBER:
			v->type = jbvNumeric;
			v->val.numeric = eoi_json_token_numeric(t);
			break;
		case EOI_JSON_STRING:
			v->type = jbvString;
			v->val.string.val = (char *) t->data;
			v->val.string.len = (int) t->len;
			break;
		case EOI_JSON_NESTED:
			eoi_json_token_binary(t, v);
			break;
	}
}

typedef struct BuildState
{
	JsonbParseState *parse;
	uint32		members;
} BuildState;

/* jsonscan's callback: one member of the top-level object. */
static bool
add_member(void *arg, const char *key, size_t key_len, const EoiJsonToken *value)
{
	BuildState *st = arg;
	JsonbValue	k;
	JsonbValue	v;

	if ((++st->members & 1023) == 0)
		CHECK_FOR_INTERRUPTS();
	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = (int) key_len;
	(void) pushJsonbValue(&st->parse, WJB_KEY, &k);
	token_value(value, &v);
	(void) pushJsonbValue(&st->parse, WJB_VALUE, &v);
	return true;
}

/*
 * `len` bytes of JSON text (valid in the database encoding) as jsonb.
 * The strings stay where the scan left them, in the text or in scratch,
 * until the jsonb is made: both live as long as this call.
 */
Datum
eoi_jsonb_from_text(const char *data, size_t len)
{
	BuildState	st = {NULL, 0};
	JsonbValue *object;
	char	   *scratch;

	if (len <= BUILD_MAX_TEXT)
	{
		scratch = palloc(Max(len, 1));
		(void) pushJsonbValue(&st.parse, WJB_BEGIN_OBJECT, NULL);
		if (eoi_json_scan_object(data, len, scratch, GetDatabaseEncoding() == PG_UTF8,
								 add_member, &st))
		{
			object = pushJsonbValue(&st.parse, WJB_END_OBJECT, NULL);
			return JsonbPGetDatum(JsonbValueToJsonb(object));
		}
		pfree(scratch);
	}
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(pnstrdup(data, len)));
}
