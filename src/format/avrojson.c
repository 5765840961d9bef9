/*-------------------------------------------------------------------------
 *
 * avrojson.c
 *	  An Avro record as JSON text, straight from its bytes.
 *
 * eoingest.batch()'s value_json, a mapping's paths into a record and the
 * Debezium envelope read an Avro message as JSON text.  Avro C would read
 * the record into its generic values first (a malloc and a free for each
 * string, a reset of every field), and avrovalue.c would then ask for each
 * value back through the getters, a union at a time.  This file walks the
 * writer's schema (AvroType) over the bytes once instead.  The JSON of
 * each scalar is avrovalue.c's (eoi_avro_append_json_scalar), so that
 * both readers write the same text; eoingest.test_avro_json_check makes
 * every record go through both and compares them.  Record field names are
 * written from AvroType, escaped once per schema.
 *
 * The record has passed avrocheck.c's check first: every length, count,
 * branch and int here lies within the bytes and the schema, and a failure
 * to read one is an internal error.  Where the two readers part, this one
 * is stricter: a map key holding a NUL byte (Avro C cut it there) or a map
 * holding a key twice (Avro C merged the values) is the record's error;
 * and it reads the arrays of nulls or empty records that Avro C cannot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/json.h"

#include "format/avro_internal.h"
#include "format/avrocheck.h"
#include "format/wirenum.h"

/* Items of an array or map between checks for interrupts. */
#define ITEMS_PER_CHECK 1024

static void
cut(void)
{
	elog(ERROR, "Avro record ends inside a value that was checked");
}

static int64
in_long(EoiAvroBytes *in)
{
	int64_t		v = 0;

	if (eoi_avro_read_varint(&in->p, in->end, &v) != EOI_AVRO_VARINT_OK)
		cut();
	return v;
}

/* The scalar of type t (not null, record, map, array or union) at in->p. */
static void
in_scalar(EoiAvroBytes *in, AvroType *t, EoiAvroScalar *sc)
{
	if (t->kind == AVRO_FIXED)
	{
		int64_t		n = avro_schema_fixed_size(t->schema);

		if (n < 0 || n > in->end - in->p)
			cut();
		sc->kind = AVRO_FIXED;
		sc->s = (const char *) in->p;
		sc->len = (size_t) n;
		in->p += n;
		return;
	}
	if (!eoi_avro_read_scalar(in, t->kind, sc))
		cut();
}

/*
 * Debezium's VariableScaleDecimal, a record {scale int, value bytes}: its
 * digits as a JSON number, as avrovalue.c writes them.  False, with nothing
 * read, for a record of that name whose fields are something else.
 */
static bool
append_variable_decimal(StringInfo out, EoiAvroBytes *in, AvroType *t)
{
	int			si = avro_schema_record_field_get_index(t->schema, "scale");
	int			vi = avro_schema_record_field_get_index(t->schema, "value");
	EoiAvroScalar field[2];

	if (si < 0 || vi < 0 || t->nchildren != 2 ||
		t->children[si]->kind != AVRO_INT32 || t->children[vi]->kind != AVRO_BYTES)
		return false;
	for (int i = 0; i < 2; i++)
		in_scalar(in, t->children[i], &field[i]);
	eoi_append_decimal(out, (const unsigned char *) field[vi].s, field[vi].len, (int) field[si].l);
	return true;
}

static void append_value(StringInfo out, EoiAvroBytes *in, AvroType *t);

/* A map's key, in the record's bytes. */
typedef struct MapKey
{
	const char *s;
	size_t		len;
} MapKey;

static int
map_key_cmp(const void *a, const void *b)
{
	const MapKey *x = a;
	const MapKey *y = b;
	int			c = memcmp(x->s, y->s, Min(x->len, y->len));

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/*
 * Refuse a map that holds a key twice.  Avro C kept one entry for it and
 * read the later values into the first (merging arrays and maps), and the
 * JSON would keep the last: neither is what the writer meant.
 */
static void
check_distinct_keys(MapKey *keys, int64 n)
{
	qsort(keys, n, sizeof(MapKey), map_key_cmp);
	for (int64 i = 1; i < n; i++)
		if (map_key_cmp(&keys[i - 1], &keys[i]) == 0)
		{
			EoiAvroScalar key = {.kind = AVRO_STRING, .s = keys[i].s, .len = keys[i].len};
			StringInfoData text;

			initStringInfo(&text);
			eoi_avro_scalar_text(&text, &key);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("Avro map holds the key \"%s\" more than once", text.data),
					 errhint("The keys of an Avro map are distinct; the record is refused rather than keep one of the values.")));
		}
}

/*
 * An array's or a map's blocks: a count, its items (a map's each after its
 * key), until a count of zero.  A negative count is followed by the
 * block's size in bytes, which a reader may use to skip it.
 */
static void
append_items(StringInfo out, EoiAvroBytes *in, AvroType *t)
{
	bool		map = t->kind == AVRO_MAP;
	int64		done = 0;
	int64		count;
	StringInfoData keytext = {NULL};
	MapKey	   *keys = NULL;
	int64		nkeys_max = 0;

	appendStringInfoChar(out, map ? '{' : '[');
	while ((count = in_long(in)) != 0)
	{
		if (count < 0)
		{
			count = -count;
			(void) in_long(in);
		}
		for (int64 i = 0; i < count; i++, done++)
		{
			if (done > 0)
				appendStringInfoChar(out, ',');
			if (done % ITEMS_PER_CHECK == ITEMS_PER_CHECK - 1)
				CHECK_FOR_INTERRUPTS();
			if (map)
			{
				EoiAvroScalar key;

				/* a string, checked and converted for the database */
				if (!eoi_avro_read_scalar(in, AVRO_STRING, &key))
					cut();
				if (keytext.data == NULL)
					initStringInfo(&keytext);
				resetStringInfo(&keytext);
				eoi_avro_scalar_text(&keytext, &key);
				escape_json(out, keytext.data);
				appendStringInfoChar(out, ':');
				if (done >= nkeys_max)
				{
					nkeys_max = Max(16, nkeys_max * 2);
					keys = keys ? repalloc_huge(keys, sizeof(MapKey) * nkeys_max) :
						palloc(sizeof(MapKey) * nkeys_max);
				}
				keys[done].s = key.s;
				keys[done].len = key.len;
			}
			append_value(out, in, t->children[0]);
		}
	}
	appendStringInfoChar(out, map ? '}' : ']');
	if (done > 1 && map)
		check_distinct_keys(keys, done);
	if (keys != NULL)
		pfree(keys);
	if (keytext.data != NULL)
		pfree(keytext.data);
}

static void
append_value(StringInfo out, EoiAvroBytes *in, AvroType *t)
{
	EoiAvroScalar sc;

	check_stack_depth();
	while (t->kind == AVRO_UNION)
	{
		int64		branch = in_long(in);

		if (branch < 0 || branch >= t->nchildren)
			cut();
		t = t->children[branch];
	}
	switch (t->kind)
	{
		case AVRO_NULL:
			eoi_avro_append_json_scalar(out, t, NULL);
			return;
		case AVRO_RECORD:
			if (t->logical == L_VARIABLE_DECIMAL && append_variable_decimal(out, in, t))
				return;
			appendStringInfoChar(out, '{');
			for (int i = 0; i < t->nchildren; i++)
			{
				if (i > 0)
					appendStringInfoChar(out, ',');
				appendStringInfoString(out, t->json_names[i]);
				append_value(out, in, t->children[i]);
			}
			appendStringInfoChar(out, '}');
			return;
		case AVRO_ARRAY:
		case AVRO_MAP:
			append_items(out, in, t);
			return;
		default:
			in_scalar(in, t, &sc);
			eoi_avro_append_json_scalar(out, t, &sc);
	}
}

/* A record whose members are noted as spans: not a union, not a decimal. */
static bool
spanned_record(const AvroType *t)
{
	return t->kind == AVRO_RECORD && t->logical != L_VARIABLE_DECIMAL;
}

/*
 * A record, noting where each member's value lies (parent: the span of
 * the record, -1 for the outermost), and the members of its member
 * `spans->inner` too if that is a record.  The caller has made sure that
 * they all fit.
 */
static void
append_record_spans(StringInfo out, EoiAvroBytes *in, AvroType *t, EoiJsonSpans *spans, int parent)
{
	appendStringInfoChar(out, '{');
	for (int i = 0; i < t->nchildren; i++)
	{
		EoiJsonSpan *sp = &spans->span[spans->n];
		AvroType   *child = t->children[i];

		if (i > 0)
			appendStringInfoChar(out, ',');
		appendStringInfoString(out, t->json_names[i]);
		sp->parent = parent;
		sp->name = avro_schema_record_field_name(t->schema, i);
		sp->start = out->len;
		spans->n++;
		if (parent < 0 && spans->inner != NULL && spanned_record(child) &&
			strcmp(sp->name, spans->inner) == 0)
			append_record_spans(out, in, child, spans, (int) (sp - spans->span));
		else
			append_value(out, in, child);
		sp->end = out->len;
	}
	appendStringInfoChar(out, '}');
}

/* How many spans the record of type t takes (append_record_spans). */
static int
count_spans(const AvroType *t, const char *inner)
{
	int			n = t->nchildren;

	for (int i = 0; inner != NULL && i < t->nchildren; i++)
		if (spanned_record(t->children[i]) &&
			strcmp(avro_schema_record_field_name(t->schema, i), inner) == 0)
			n += t->children[i]->nchildren;
	return n;
}

/*
 * Append the JSON of the record of type t in `len` bytes at `data`, which
 * avrocheck.c found one whole datum of its schema.  With `spans`, note
 * where the record's members lie, if it is a record and they fit, and its
 * member spans->inner's too if those fit as well (else spans->inner is
 * reset); spans->n is 0 if none are noted.
 */
void
eoi_avro_bytes_json(StringInfo out, const unsigned char *data, size_t len, AvroType *t,
					EoiJsonSpans *spans)
{
	EoiAvroBytes in = {data, data + len};

	if (spans != NULL)
		spans->n = 0;
	if (spans != NULL && spanned_record(t) && t->nchildren <= EOI_JSON_SPANS_MAX)
	{
		if (count_spans(t, spans->inner) > EOI_JSON_SPANS_MAX)
			spans->inner = NULL;	/* the record's own members alone */
		append_record_spans(out, &in, t, spans, -1);
	}
	else
		append_value(out, &in, t);
	if (in.p != in.end)
		elog(ERROR, "Avro record has %d bytes after its value, which were checked",
			 (int) (in.end - in.p));
}
