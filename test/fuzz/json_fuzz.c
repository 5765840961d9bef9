/*-------------------------------------------------------------------------
 *
 * json_fuzz.c
 *	  libFuzzer target for eoi_json_scan_object() (src/format/jsonscan.c), with
 *	  PostgreSQL's own JSON parser as the oracle.
 *
 * Build (test/fuzz/run.sh json does this): the scan with ASan and UBSan,
 * linked with the frontend libpgcommon of the PostgreSQL being tested (15 to
 * 18), whose pg_parse_json is the parser jsonb_in runs (src/common/jsonapi.c,
 * compiled for frontends):
 *   clang -fsanitize=fuzzer,address,undefined -g -O1 -I src \
 *         -I $(pg_config --includedir)/internal -I $(pg_config --includedir-server) \
 *         src/format/jsonscan.c test/fuzz/json_fuzz.c -L $(pg_config --pkglibdir) -lpgcommon -lpgport
 *
 * The input is one message, scanned as in a UTF-8 database, and parsed by
 * pg_parse_json with de-escaping on (as jsonb_in parses).  Asserted:
 *   - what the scan accepts, PostgreSQL accepts, as an object;
 *   - for each key of the top-level object, in order, the scan hands on the
 *     same key (unescaped) and a value of the same kind: the same unescaped
 *     string, the same number text, the same literal, or a nested value
 *     whose text is exactly the text PostgreSQL parsed for it;
 *   - every key and string lies within the input or within scratch, which
 *     holds `len` bytes (both are heap blocks of exactly that size);
 *   - what PostgreSQL accepts as an object the scan accepts too, unless it
 *     has a \u escape, nesting deeper than EOI_JSON_SCAN_MAX_DEPTH or a
 *     number beyond EOI_JSON_SCAN_MAX_NUMBER or with an exponent of 1000
 *     or more (where the scan may decline: see jsonscan.h);
 *   - removing the last byte of an accepted object makes the scan decline.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <stdint.h>

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"

#include "format/jsonscan.h"

#define CHECK(cond) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "json_fuzz: invariant failed: %s (%s:%d)\n", \
					#cond, __FILE__, __LINE__); \
			abort(); \
		} \
	} while (0)

#define MAX_FIELDS 4096

/*
 * The parser's API as it moved: 16 has the callbacks return a
 * JsonParseErrorType, 17 lets the caller supply the lexer and frees it.
 */
#if PG_VERSION_NUM >= 160000
typedef JsonParseErrorType OracleResult;
#define ORACLE_DONE JSON_SUCCESS
#else
typedef void OracleResult;
#define ORACLE_DONE
#endif

static JsonLexContext *
oracle_lexer(char *input, int len)
{
#if PG_VERSION_NUM >= 170000
	return makeJsonLexContextCstringLen(NULL, input, len, PG_UTF8, true);
#else
	return makeJsonLexContextCstringLen(input, len, PG_UTF8, true);
#endif
}

static void
oracle_lexer_free(JsonLexContext *lex)
{
#if PG_VERSION_NUM >= 170000
	freeJsonLexContext(lex);
#else
	if (lex->strval != NULL)
	{
		free(lex->strval->data);
		free(lex->strval);
	}
	free(lex);
#endif
}

typedef struct Field
{
	char	   *key;
	size_t		key_len;
	EoiJsonKind kind;
	char	   *value;			/* strings, numbers: PostgreSQL's token */
	size_t		value_len;
	const char *nested_start;	/* nested: where its text starts in the input */
	const char *nested_end;
} Field;

typedef struct Oracle
{
	JsonLexContext *lex;
	int			nfields;
	bool		is_object;
	bool		started;
	int			max_depth;
	bool		long_number;	/* an exponent, or longer than the scan reads */
	Field		fields[MAX_FIELDS]; /* last: the rest is reset per input */
} Oracle;

/* ---- PostgreSQL's view ---- */

static OracleResult
o_struct_start(void *state)
{
	Oracle	   *o = state;
	int			level = o->lex->lex_level;

	if (!o->started)
	{
		o->started = true;
		o->is_object = (o->lex->token_type == JSON_TOKEN_OBJECT_START);
	}
	if (level + 1 > o->max_depth)
		o->max_depth = level + 1;
	if (level == 1 && o->nfields > 0)
	{
		Field	   *f = &o->fields[o->nfields - 1];

		f->kind = EOI_JSON_NESTED;
		f->nested_start = o->lex->token_start;
	}
	return ORACLE_DONE;
}

static OracleResult
o_struct_end(void *state)
{
	Oracle	   *o = state;

	/* called after the closing token and the level's drop */
	if (o->lex->lex_level == 1 && o->nfields > 0)
		o->fields[o->nfields - 1].nested_end = o->lex->prev_token_terminator;
	return ORACLE_DONE;
}

static OracleResult
o_field_start(void *state, char *fname, bool isnull)
{
	Oracle	   *o = state;

	if (o->lex->lex_level == 1)
	{
		Field	   *f;

		CHECK(o->nfields < MAX_FIELDS);
		f = &o->fields[o->nfields++];
		memset(f, 0, sizeof(*f));
		f->key = fname;
		f->key_len = strlen(fname);
		return ORACLE_DONE;
	}
	free(fname);
	return ORACLE_DONE;
}

static OracleResult
o_scalar(void *state, char *token, JsonTokenType type)
{
	Oracle	   *o = state;

	if (type == JSON_TOKEN_NUMBER)
	{
		const char *e = strpbrk(token, "eE");

		if (strlen(token) > EOI_JSON_SCAN_MAX_NUMBER)
			o->long_number = true;
		if (e != NULL)
		{
			e++;
			if (*e == '+' || *e == '-')
				e++;
			while (*e == '0')
				e++;
			if (strlen(e) > 3)
				o->long_number = true;	/* an exponent of 1000 or more */
		}
	}
	if (o->lex->lex_level == 1 && o->nfields > 0)
	{
		Field	   *f = &o->fields[o->nfields - 1];

		f->value = token;
		f->value_len = token ? strlen(token) : 0;
		switch (type)
		{
			case JSON_TOKEN_STRING:
				f->kind = EOI_JSON_STRING;
				break;
			case JSON_TOKEN_NUMBER:
				f->kind = EOI_JSON_NUMBER;
				break;
			case JSON_TOKEN_TRUE:
				f->kind = EOI_JSON_TRUE;
				break;
			case JSON_TOKEN_FALSE:
				f->kind = EOI_JSON_FALSE;
				break;
			default:
				f->kind = EOI_JSON_NULL;
				break;
		}
		return ORACLE_DONE;
	}
	if (o->lex->lex_level == 0 && !o->started)
		o->started = true;		/* a scalar document: not an object */
	free(token);
	return ORACLE_DONE;
}

/* ---- the scan's view ---- */

typedef struct Scanned
{
	int			nfields;
	const char *input;
	size_t		len;
	const char *scratch;
	struct
	{
		const char *key;
		size_t		key_len;
		EoiJsonToken value;
	}			fields[MAX_FIELDS];
} Scanned;

static bool
within(const Scanned *s, const char *p, size_t len)
{
	return (p >= s->input && p + len <= s->input + s->len) ||
		(p >= s->scratch && p + len <= s->scratch + s->len);
}

static bool
on_field(void *arg, const char *key, size_t key_len, const EoiJsonToken *value)
{
	Scanned    *s = arg;

	CHECK(s->nfields < MAX_FIELDS);
	CHECK(key_len == 0 || within(s, key, key_len));
	if (value->kind == EOI_JSON_STRING || value->kind == EOI_JSON_NUMBER ||
		value->kind == EOI_JSON_NESTED)
		CHECK(value->len == 0 || within(s, value->data, value->len));
	s->fields[s->nfields].key = key;
	s->fields[s->nfields].key_len = key_len;
	s->fields[s->nfields].value = *value;
	s->nfields++;
	return true;
}

static bool
has_unicode_escape(const char *data, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++)
		if (data[i] == '\\')
		{
			if (data[i + 1] == 'u')
				return true;
			i++;
		}
	return false;
}

static void
free_oracle(Oracle *o)
{
	for (int i = 0; i < o->nfields; i++)
	{
		free(o->fields[i].key);
		free(o->fields[i].value);
	}
	oracle_lexer_free(o->lex);
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static Oracle o;
	static Scanned s;
	char	   *input = malloc(size + 1);	/* PostgreSQL's wants a NUL after */
	char	   *scratch = malloc(size ? size : 1);
	JsonSemAction sem = {&o, o_struct_start, o_struct_end, o_struct_start, o_struct_end,
	o_field_start, NULL, NULL, NULL, o_scalar};
	bool		pg_ok;
	bool		scan_ok;

	CHECK(input != NULL && scratch != NULL);
	memcpy(input, data, size);
	input[size] = '\0';
	memset(&o, 0, offsetof(Oracle, fields));
	o.lex = oracle_lexer(input, (int) size);
	pg_ok = pg_parse_json(o.lex, &sem) == JSON_SUCCESS;

	s.nfields = 0;
	s.input = input;
	s.len = size;
	s.scratch = scratch;
	scan_ok = eoi_json_scan_object(input, size, scratch, true, on_field, &s);

	if (scan_ok)
	{
		CHECK(pg_ok && o.is_object);
		CHECK(s.nfields == o.nfields);
		for (int i = 0; i < s.nfields; i++)
		{
			const EoiJsonToken *v = &s.fields[i].value;
			const Field *f = &o.fields[i];

			CHECK(s.fields[i].key_len == f->key_len &&
				  memcmp(s.fields[i].key, f->key, f->key_len) == 0);
			CHECK(v->kind == f->kind);
			if (v->kind == EOI_JSON_STRING || v->kind == EOI_JSON_NUMBER)
				CHECK(v->len == f->value_len && memcmp(v->data, f->value, v->len) == 0);
			if (v->kind == EOI_JSON_NUMBER)
				CHECK(v->integer == (strpbrk(f->value, ".eE") == NULL) &&
					  v->exponent == (strpbrk(f->value, "eE") != NULL));
			if (v->kind == EOI_JSON_NESTED)
				CHECK(v->data == f->nested_start && v->data + v->len == f->nested_end);
		}
		/* an object cut short is no object */
		if (size > 0)
		{
			Scanned    *cut = malloc(sizeof(Scanned));

			CHECK(cut != NULL);
			cut->nfields = 0;
			cut->input = input;
			cut->len = size - 1;
			cut->scratch = scratch;
			if (input[size - 1] == '}')
				CHECK(!eoi_json_scan_object(input, size - 1, scratch, true, on_field, cut));
			free(cut);
		}
	}
	else if (pg_ok && o.is_object && !has_unicode_escape(input, size) &&
			 o.max_depth <= EOI_JSON_SCAN_MAX_DEPTH && !o.long_number)
		CHECK(!"the scan declined an object PostgreSQL reads, with nothing it may decline for");

	free_oracle(&o);
	free(input);
	free(scratch);
	return 0;
}
