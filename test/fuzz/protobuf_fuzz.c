/*-------------------------------------------------------------------------
 *
 * protobuf_fuzz.c
 *	  libFuzzer target for format protobuf's reading: the .proto parser
 *	  (src/format/protoparse.c) and the decoder of Protobuf's binary
 *	  encoding into column text, datums and JSON (src/format/protovalue.c).
 *
 * Build (test/fuzz/run.sh protobuf does this): the two files are backend
 * code, compiled here against the server's headers with the few backend
 * calls they make given below (memory, errors as a longjmp, encoding
 * checks) and PostgreSQL's frontend libpgcommon for the rest (StringInfo,
 * psprintf, base64, and its JSON parser as the oracle).
 *
 * Input layout: byte 0 picks the case.  0xff: the rest is the text of a
 * .proto file, parsed and linked; 0xfe: the rest is a serialized
 * FileDescriptorProto, given to the parser in base64 as a registry that
 * keeps what a client registered serves it.  Otherwise byte 0 picks one of the
 * schemas below (modulo their number) and the rest is one message of its
 * first message type: read, every field as text for a column of any type,
 * for json, and as the datums of the direct path, and the whole message
 * as JSON.
 *
 * Asserted: every input is refused with an error (22P03, 22023, 54000,
 * 0A000, 22008, 22003 or 22021: the record's faults) or read; what the JSON rendering
 * writes is JSON PostgreSQL's own parser accepts; every string that comes
 * out is valid UTF-8 without NUL bytes.  No crash, no sanitizer report, no
 * leak, no unbounded time or memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "catalog/pg_type_d.h"
#include "common/jsonapi.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/datetime.h"
#include "utils/float.h"

#include "base/pgcompat.h"
#include "format/protoschema.h"
#include "format/protovalue.h"

static const char *const schema_texts[] = {
	/* proto3: every scalar, repeated, maps, oneof, enums, the well-known types */
	"syntax = \"proto3\";\n"
	"package fz;\n"
	"import \"google/protobuf/timestamp.proto\";\n"
	"import \"google/protobuf/duration.proto\";\n"
	"import \"google/protobuf/wrappers.proto\";\n"
	"import \"google/protobuf/struct.proto\";\n"
	"import \"confluent/type/decimal.proto\";\n"
	"message All {\n"
	"  double d = 1; float f = 2; int64 i64 = 3; uint64 u64 = 4; int32 i32 = 5;\n"
	"  fixed64 f64 = 6; fixed32 f32 = 7; bool b = 8; string s = 9; bytes by = 12;\n"
	"  uint32 u32 = 13; Color e = 14; sfixed32 sf32 = 15; sfixed64 sf64 = 16;\n"
	"  sint32 si32 = 17; sint64 si64 = 18;\n"
	"  repeated int32 ri = 20; repeated string rs = 21; repeated double rd = 22 [packed = false];\n"
	"  repeated Color re = 23; repeated bool rb = 24;\n"
	"  map<string, int32> m = 25; map<int64, Inner> mi = 26; map<bool, string> mb = 27;\n"
	"  Inner inner = 28; repeated Inner inners = 29;\n"
	"  oneof pick { string a = 30; Inner b2 = 31; int64 c = 32; }\n"
	"  optional string opt = 33;\n"
	"  google.protobuf.Timestamp ts = 34; google.protobuf.Duration du = 35;\n"
	"  google.protobuf.Int32Value w32 = 36; google.protobuf.StringValue ws = 37;\n"
	"  google.protobuf.BytesValue wb = 38; google.protobuf.Struct st = 39;\n"
	"  google.protobuf.Value v = 40; google.protobuf.ListValue lv = 41;\n"
	"  confluent.type.Decimal dec = 42; repeated google.protobuf.Timestamp rts = 43;\n"
	"  enum Color { RED = 0; GREEN = 1; BLUE = -2; }\n"
	"  message Inner { int32 x = 1; optional string y = 2; repeated Inner kids = 3; }\n"
	"}\n",
	/* proto2: required, defaults, a recursive message */
	"syntax = \"proto2\"; package fz2;\n"
	"/* a comment */ message Node {\n"
	"  required int64 v = 1;\n"
	"  optional string name = 2 [default = \"n\\x41\\101\"];\n"
	"  optional int32 level = 3 [default = -7];\n"
	"  optional bool flag = 4 [default = true];\n"
	"  optional Kind kind = 5 [default = TWO];\n"
	"  optional double ratio = 6 [default = inf];\n"
	"  optional bytes raw = 7 [default = \"\\001\\002\"];\n"
	"  optional Node next = 8; repeated Node kids = 9;\n"
	"  repeated sint64 packed = 10 [packed = true];\n"
	"  enum Kind { ONE = 1; TWO = 2; }\n"
	"  extensions 100 to max;\n"
	"}\n",
	/* field numbers beyond the indexed ones, unknown fields skipped */
	"syntax = \"proto3\";\n"
	"message Sparse { int32 a = 1; string far = 100000; int64 farther = 536870911;"
	" repeated fixed32 f = 5000; }\n",
};

#define NSCHEMAS ((int) lengthof(schema_texts))

/* ---- the backend calls the two files make ---- */

/* Memory: every allocation of one input is freed after it. */
typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	size_t		size;
	max_align_t data[];
} Chunk;

static Chunk arena = {&arena, &arena, 0};
static Chunk kept = {&kept, &kept, 0};	/* the schemas', parsed once */
static bool keep_memory = false;

static void *
chunk_alloc(size_t size)
{
	Chunk	   *c = malloc(sizeof(Chunk) + size);

	if (c == NULL)
		abort();
	c->size = size;
	c->next = (keep_memory ? &kept : &arena)->next;
	c->prev = keep_memory ? &kept : &arena;
	c->next->prev = c;
	c->prev->next = c;
	return c->data;
}

static void
free_arena(void)
{
	while (arena.next != &arena)
	{
		Chunk	   *c = arena.next;

		arena.next = c->next;
		free(c);
	}
	arena.prev = &arena;
}

void *
palloc(Size size)
{
	return chunk_alloc(size);
}

void *
palloc0(Size size)
{
	void	   *p = chunk_alloc(size);

	memset(p, 0, size);
	return p;
}

void *
palloc_extended(Size size, int flags)
{
	return (flags & MCXT_ALLOC_ZERO) ? palloc0(size) : palloc(size);
}

void
pfree(void *p)
{
	Chunk	   *c = (Chunk *) ((char *) p - offsetof(Chunk, data));

	c->prev->next = c->next;
	c->next->prev = c->prev;
	free(c);
}

void *
repalloc(void *p, Size size)
{
	Chunk	   *c = (Chunk *) ((char *) p - offsetof(Chunk, data));
	void	   *n = chunk_alloc(size);

	memcpy(n, p, Min(size, c->size));
	pfree(p);
	return n;
}

char *
pstrdup(const char *s)
{
	return pnstrdup(s, strlen(s));
}

char *
pnstrdup(const char *s, Size len)
{
	char	   *p;

	len = strnlen(s, len);
	p = palloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

/* Errors: ERROR unwinds to the input's setjmp, with its SQLSTATE. */
static sigjmp_buf *error_jump = NULL;
static int	error_code;
static int	error_level;
static char error_message[512];

bool
errstart(int elevel, const char *domain)
{
	error_level = elevel;
	error_code = ERRCODE_INTERNAL_ERROR;
	error_message[0] = '\0';
	return true;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	if (error_level < ERROR)
		return;
	if (error_jump == NULL)
	{
		fprintf(stderr, "error outside an input: %s\n", error_message);
		abort();
	}
	siglongjmp(*error_jump, 1);
}

int
errcode(int sqlerrcode)
{
	error_code = sqlerrcode;
	return 0;
}

static int
set_message(const char *fmt, va_list args)
{
	if (error_message[0] == '\0')
		vsnprintf(error_message, sizeof(error_message), fmt, args);
	return 0;
}

int
errmsg(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	set_message(fmt, args);
	va_end(args);
	return 0;
}

int
errmsg_internal(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	set_message(fmt, args);
	va_end(args);
	return 0;
}

int
errdetail(const char *fmt,...)
{
	return 0;
}

int
errdetail_internal(const char *fmt,...)
{
	return 0;
}

int
errhint(const char *fmt,...)
{
	return 0;
}

volatile sig_atomic_t InterruptPending = false;

void
ProcessInterrupts(void)
{
}

void
check_stack_depth(void)
{
}

/* Encodings: the database's is UTF-8 here. */
static void
check_utf8(const char *s, int len)
{
	if (pg_encoding_verifymbstr(PG_UTF8, s, len) != len)
		ereport(ERROR,
				(errcode(ERRCODE_CHARACTER_NOT_IN_REPERTOIRE),
				 errmsg("invalid byte sequence for encoding \"UTF8\"")));
}

char *
pg_any_to_server(const char *s, int len, int encoding)
{
	check_utf8(s, len);
	return (char *) s;
}

bool
pg_verifymbstr(const char *mbstr, int len, bool noError)
{
	check_utf8(mbstr, len);
	return true;
}

void
escape_json(StringInfo buf, const char *str)
{
	appendStringInfoChar(buf, '"');
	for (const unsigned char *p = (const unsigned char *) str; *p; p++)
	{
		if (*p == '"' || *p == '\\')
			appendStringInfo(buf, "\\%c", *p);
		else if (*p < 0x20)
			appendStringInfo(buf, "\\u%04x", *p);
		else
			appendStringInfoChar(buf, (char) *p);
	}
	appendStringInfoChar(buf, '"');
}

text *
cstring_to_text_with_len(const char *s, int len)
{
	text	   *t = palloc(len + VARHDRSZ);

	SET_VARSIZE(t, len + VARHDRSZ);
	memcpy(VARDATA(t), s, len);
	return t;
}

text *
cstring_to_text(const char *s)
{
	return cstring_to_text_with_len(s, strlen(s));
}

char *
float8out_internal(double num)
{
	return psprintf("%.17g", num);
}

Datum
float4out(PG_FUNCTION_ARGS)
{
	return CStringGetDatum(psprintf("%.9g", (double) PG_GETARG_FLOAT4(0)));
}

Datum
DirectFunctionCall1Coll(PGFunction func, Oid collation, Datum arg1)
{
	LOCAL_FCINFO(fcinfo, 1);

	InitFunctionCallInfoData(*fcinfo, NULL, 1, collation, NULL, NULL);
	fcinfo->args[0].value = arg1;
	fcinfo->args[0].isnull = false;
	return func(fcinfo);
}

int
timestamp2tm(Timestamp dt, int *tzp, struct pg_tm *tm, fsec_t *fsec, const char **tzn,
			 pg_tz *attimezone)
{
	memset(tm, 0, sizeof(*tm));
	tm->tm_year = 2000 + (int) (dt / INT64CONST(31556952000000));
	*fsec = (fsec_t) (dt % 1000000);
	return 0;
}

void
EncodeDateTime(struct pg_tm *tm, fsec_t fsec, bool print_tz, int tz, const char *tzn, int style,
			   char *str)
{
	snprintf(str, MAXDATELEN, "%04d-01-01T00:00:00.%06d+00:00", tm->tm_year, (int) (fsec < 0 ? -fsec : fsec));
}

Oid
get_element_type(Oid typid)
{
	return typid == INT4ARRAYOID ? INT4OID : typid == TEXTARRAYOID ? TEXTOID : InvalidOid;
}

Oid
get_array_type(Oid typid)
{
	return InvalidOid;
}

/* Lists: the few calls protoparse.c makes. */
static List *
new_list(NodeTag type, int n)
{
	List	   *l = palloc(offsetof(List, initial_elements) + sizeof(ListCell) * n);

	l->type = type;
	l->length = 0;
	l->max_length = n;
	l->elements = l->initial_elements;
	return l;
}

static List *
grow(List *l, NodeTag type)
{
	List	   *n;

	if (l == NIL)
		return new_list(type, 8);
	if (l->length < l->max_length)
		return l;
	n = new_list(type, l->max_length * 2);
	memcpy(n->elements, l->elements, sizeof(ListCell) * l->length);
	n->length = l->length;
	return n;
}

List *
lappend(List *list, void *datum)
{
	list = grow(list, T_List);
	list->elements[list->length++].ptr_value = datum;
	return list;
}

List *
lappend_int(List *list, int datum)
{
	list = grow(list, T_IntList);
	list->elements[list->length++].int_value = datum;
	return list;
}

List *
list_make1_impl(NodeTag t, ListCell datum1)
{
	List	   *list = new_list(t, 8);

	list->elements[0] = datum1;
	list->length = 1;
	return list;
}

List *
lcons(void *datum, List *list)
{
	list = grow(list, T_List);
	memmove(list->elements + 1, list->elements, sizeof(ListCell) * list->length);
	list->elements[0].ptr_value = datum;
	list->length++;
	return list;
}

/* ---- the target ---- */

static EoiProtoSchema *schemas[NSCHEMAS];

/* Refused with one of the record's errors, or a bug. */
static void
check_refusal(const char *what)
{
	switch (error_code)
	{
		case ERRCODE_INVALID_BINARY_REPRESENTATION:
		case ERRCODE_INVALID_PARAMETER_VALUE:
		case ERRCODE_PROGRAM_LIMIT_EXCEEDED:
		case ERRCODE_FEATURE_NOT_SUPPORTED:
		case ERRCODE_DATETIME_VALUE_OUT_OF_RANGE:
		case ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE:
		case ERRCODE_CHARACTER_NOT_IN_REPERTOIRE:
			return;
		default:
			fprintf(stderr, "%s: unexpected error (code %d): %s\n", what, error_code, error_message);
			abort();
	}
}

static void
check_json(const StringInfo out)
{
	JsonLexContext *lex;

#if PG_VERSION_NUM >= 170000
	lex = makeJsonLexContextCstringLen(NULL, out->data, out->len, PG_UTF8, true);
#else
	lex = makeJsonLexContextCstringLen(out->data, out->len, PG_UTF8, true);
#endif
	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
	{
		fprintf(stderr, "not JSON: %.*s\n", Min(out->len, 2000), out->data);
		abort();
	}
}

static void
read_message(const EoiProtoMessage *msg, const unsigned char *data, size_t len)
{
	PbRecord	rec = {data, "schema id 1"};
	PbFields	pf;
	StringInfoData out;
	static const Oid typids[] = {InvalidOid, JSONBOID, INT4OID, INT8OID, TEXTOID, INT4ARRAYOID,
	TEXTARRAYOID, FLOAT8OID, TIMESTAMPTZOID, BOOLOID};

	eoi_pb_read(&pf, msg, data, len, &rec, 1);
	initStringInfo(&out);
	for (int i = 0; i < msg->nfields; i++)
		for (int t = 0; t < (int) lengthof(typids); t++)
		{
			Datum		value;
			bool		isnull;

			resetStringInfo(&out);
			if (eoi_pb_field_text(&out, &pf, i, typids[t], &rec))
			{
				check_utf8(out.data, out.len);
				if (typids[t] == JSONBOID)
					check_json(&out);
			}
			(void) eoi_pb_field_datum(&pf, i, typids[t], &value, &isnull, &rec);
		}
	resetStringInfo(&out);
	eoi_pb_append_json(&out, msg, data, len, &rec, 1);
	check_json(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sigjmp_buf	jump;

	if (size < 1)
		return 0;
	if (sigsetjmp(jump, 0) == 0)
	{
		error_jump = &jump;
		if (data[0] == 0xff)
		{
			char	   *text = pnstrdup((const char *) data + 1, size - 1);
			EoiSchemaFile file = {NULL, text};

			(void) eoi_proto_schema(list_make1(&file), "the fuzzed schema");
		}
		else if (data[0] == 0xfe)
		{
			/* a serialized descriptor, as a registry may keep it: base64 */
			int			n = pg_b64_enc_len((int) size - 1);
			char	   *text = palloc(n + 1);
			EoiSchemaFile file = {NULL, text};

			n = eoi_b64_encode(data + 1, (int) size - 1, text, n);
			if (n < 0)
				abort();
			text[n] = '\0';
			(void) eoi_proto_schema(list_make1(&file), "the fuzzed schema");
		}
		else
		{
			EoiProtoSchema *schema = schemas[data[0] % NSCHEMAS];

			read_message(schema->main->messages[0], data + 1, size - 1);
		}
	}
	else
		check_refusal(data[0] >= 0xfe ? "parsing" : "reading");
	error_jump = NULL;
	free_arena();
	return 0;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	keep_memory = true;
	for (int i = 0; i < NSCHEMAS; i++)
	{
		EoiSchemaFile file = {NULL, schema_texts[i]};

		schemas[i] = eoi_proto_schema(list_make1(&file), "a fuzzing schema");
	}
	keep_memory = false;
	return 0;
}
