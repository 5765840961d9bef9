/*-------------------------------------------------------------------------
 *
 * avro_fuzz.c
 *	  libFuzzer target for the Avro C reading that format avro relies on
 *	  (src/format/avro.c): Confluent's header, then eoi_avro_check()
 *	  (src/format/avrocheck.c) of the body with a fixed writer's schema, then, for
 *	  what it lets through, avro_value_read() and a walk over the value with
 *	  the getters src/format/avro.c uses (unions, records, maps, arrays, strings,
 *	  bytes, fixed, enums); for the flat schema, eoi_avro_flat_read()
 *	  (src/format/avroflat.c) too, field by field against Avro C's values, and it
 *	  must accept exactly what the check accepts (a flat record is read
 *	  unchecked).
 *
 * Build (test/fuzz/run.sh avro does this):
 *   clang -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *         -g -O1 -I src src/format/avrocheck.c src/format/avroflat.c test/fuzz/avro_fuzz.c -lavro -o avro_fuzz
 *
 * Input layout: byte 0 picks one of the schemas below (modulo their
 * number), the rest is the message: Confluent's 5-byte header (magic 0 and
 * a schema id, which is not looked at) and the Avro binary.
 *
 * Asserted: every input is either refused by the check with a message, or
 * read by Avro C to its last byte (and then every value can be walked): the
 * check accepts nothing that Avro C cannot read.  No crash, no sanitizer
 * report, no leak, no unbounded time or memory: libFuzzer's malloc limit
 * (its -rss_limit_mb) fails the run if Avro C asks for a buffer larger
 * than that, which the check is there to prevent.  libavro itself is not
 * instrumented here (Debian's build): ASan sees its allocations, not its
 * reads.  src/format/avro.c's conversion to PostgreSQL text needs the server and
 * is exercised by test/t/45-avro.t with random payloads instead.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <avro/errors.h>
#include <avro/generic.h>
#include <avro/io.h>
#include <avro/schema.h>
#include <avro/value.h>

#include "format/avrocheck.h"
#include "format/avroflat.h"

static const char *const schema_texts[] = {
	/* every primitive, logical types, nested record, map, arrays */
	"{\"type\": \"record\", \"name\": \"All\", \"fields\": ["
	" {\"name\": \"id\", \"type\": \"int\"}, {\"name\": \"b\", \"type\": \"boolean\"},"
	" {\"name\": \"l\", \"type\": \"long\"}, {\"name\": \"f\", \"type\": \"float\"},"
	" {\"name\": \"d\", \"type\": \"double\"}, {\"name\": \"s\", \"type\": \"string\"},"
	" {\"name\": \"by\", \"type\": \"bytes\"},"
	" {\"name\": \"dec\", \"type\": {\"type\": \"bytes\", \"logicalType\": \"decimal\", \"precision\": 38, \"scale\": 10}},"
	" {\"name\": \"fx\", \"type\": {\"type\": \"fixed\", \"name\": \"F16\", \"size\": 16}},"
	" {\"name\": \"e\", \"type\": {\"type\": \"enum\", \"name\": \"Color\", \"symbols\": [\"RED\", \"GREEN\", \"BLUE\"]}},"
	" {\"name\": \"n\", \"type\": [\"null\", \"string\"]},"
	" {\"name\": \"rec\", \"type\": {\"type\": \"record\", \"name\": \"Inner\", \"fields\": ["
	"   {\"name\": \"x\", \"type\": \"int\"}, {\"name\": \"y\", \"type\": [\"null\", \"string\"]}]}},"
	" {\"name\": \"m\", \"type\": {\"type\": \"map\", \"values\": \"long\"}},"
	" {\"name\": \"ai\", \"type\": {\"type\": \"array\", \"items\": \"int\"}},"
	" {\"name\": \"ar\", \"type\": {\"type\": \"array\", \"items\": \"Inner\"}}]}",
	/* a recursive list */
	"{\"type\": \"record\", \"name\": \"Node\", \"fields\": ["
	" {\"name\": \"v\", \"type\": \"long\"}, {\"name\": \"next\", \"type\": [\"null\", \"Node\"]}]}",
	/* unions of many branches, maps of arrays of maps */
	"{\"type\": \"record\", \"name\": \"U\", \"fields\": ["
	" {\"name\": \"u\", \"type\": [\"null\", \"int\", \"string\", \"bytes\", \"double\", {\"type\": \"array\", \"items\": \"string\"}]},"
	" {\"name\": \"mm\", \"type\": {\"type\": \"map\", \"values\": {\"type\": \"array\", \"items\": {\"type\": \"map\", \"values\": \"boolean\"}}}}]}",
	/* a primitive top level, as a key schema may be */
	"\"string\"",
	/* items that take no bytes: nulls, empty records, fixed of size 0 */
	"{\"type\": \"record\", \"name\": \"Z\", \"fields\": ["
	" {\"name\": \"n\", \"type\": {\"type\": \"array\", \"items\": \"null\"}},"
	" {\"name\": \"e\", \"type\": {\"type\": \"array\", \"items\": {\"type\": \"record\", \"name\": \"E\", \"fields\": []}}},"
	" {\"name\": \"f\", \"type\": {\"type\": \"array\", \"items\": {\"type\": \"fixed\", \"name\": \"F0\", \"size\": 0}}}]}",
	/* a flat record: src/format/avroflat.c reads it too, and must read the same */
	"{\"type\": \"record\", \"name\": \"Flat\", \"fields\": ["
	" {\"name\": \"b\", \"type\": \"boolean\"}, {\"name\": \"i\", \"type\": \"int\"},"
	" {\"name\": \"l\", \"type\": \"long\"}, {\"name\": \"f\", \"type\": \"float\"},"
	" {\"name\": \"d\", \"type\": \"double\"}, {\"name\": \"s\", \"type\": \"string\"},"
	" {\"name\": \"n\", \"type\": [\"null\", \"string\"]},"
	" {\"name\": \"u\", \"type\": [\"null\", \"int\", \"double\", \"string\", \"boolean\", \"long\", \"float\"]},"
	" {\"name\": \"z\", \"type\": \"null\"}]}",
};

#define NSCHEMAS (sizeof(schema_texts) / sizeof(schema_texts[0]))

static avro_schema_t schemas[NSCHEMAS];
static avro_value_iface_t *ifaces[NSCHEMAS];
static avro_value_t values[NSCHEMAS];
static EoiAvroFlat *layouts[NSCHEMAS];	/* the flat schema's */
static avro_reader_t reader;
static volatile size_t sink;

static void
setup(void)
{
	for (size_t i = 0; i < NSCHEMAS; i++)
	{
		if (avro_schema_from_json_length(schema_texts[i], strlen(schema_texts[i]), &schemas[i]) != 0)
		{
			fprintf(stderr, "schema %zu: %s\n", i, avro_strerror());
			abort();
		}
		ifaces[i] = avro_generic_class_from_schema(schemas[i]);
		if (ifaces[i] == NULL || avro_generic_value_new(ifaces[i], &values[i]) != 0)
			abort();
		if (eoi_avro_flat_schema(schemas[i]) && (layouts[i] = eoi_avro_flat_layout(schemas[i])) == NULL)
			abort();
	}
	reader = avro_reader_memory("", 0);
}

/* Touch every value as src/format/avro.c does; the depth is the schema's nesting. */
static void
walk(avro_value_t *v, int depth)
{
	avro_value_t child;
	const char *s;
	const void *buf;
	size_t		size = 0;
	int			i = 0;
	avro_schema_t schema = avro_value_get_schema(v);

	if (depth > 100000)
		abort();				/* a recursive value deeper than its input */
	switch (avro_value_get_type(v))
	{
		case AVRO_STRING:
			/* Avro C counts a NUL it adds, except for an empty string */
			if (avro_value_get_string(v, &s, &size) != 0 || (size > 0 && s[size - 1] != '\0'))
				abort();
			sink += size;
			break;
		case AVRO_BYTES:
			if (avro_value_get_bytes(v, &buf, &size) != 0)
				abort();
			for (size_t k = 0; k < size; k++)
				sink += ((const unsigned char *) buf)[k];
			break;
		case AVRO_FIXED:
			if (avro_value_get_fixed(v, &buf, &size) != 0 || (int64_t) size != avro_schema_fixed_size(schema))
				abort();
			sink += ((const unsigned char *) buf)[size - 1];
			break;
		case AVRO_ENUM:
			/*
			 * Avro C reads an enum's index without checking it against the
			 * symbols (found here: src/format/avro.c checks it, a bad record).
			 */
			if (avro_value_get_enum(v, &i) != 0)
				abort();
			if (i >= 0 && i < avro_schema_enum_number_of_symbols(schema) &&
				avro_schema_enum_get(schema, i) == NULL)
				abort();
			break;
		case AVRO_UNION:
			if (avro_value_get_discriminant(v, &i) != 0 || i < 0 ||
				(size_t) i >= avro_schema_union_size(schema) ||
				avro_value_get_current_branch(v, &child) != 0)
				abort();
			walk(&child, depth + 1);
			break;
		case AVRO_RECORD:
		case AVRO_MAP:
		case AVRO_ARRAY:
			if (avro_value_get_size(v, &size) != 0)
				abort();
			for (size_t k = 0; k < size; k++)
			{
				const char *key = NULL;

				if (avro_value_get_by_index(v, k, &child, &key) != 0)
					abort();
				if (avro_value_get_type(v) == AVRO_MAP)
				{
					if (key == NULL)
						abort();
					sink += strlen(key);
				}
				walk(&child, depth + 1);
			}
			break;
		default:
			break;
	}
}

/* avroflat.c's reading of field i must be Avro C's. */
static void
compare_flat(avro_value_t *record, const EoiAvroScalar *sc, size_t nfields)
{
	for (size_t i = 0; i < nfields; i++)
	{
		avro_value_t field;
		avro_value_t branch;
		avro_value_t *v = &field;
		int32_t		i32 = 0;
		int64_t		i64 = 0;
		int			b = 0;
		float		f = 0;
		double		d = 0;
		const char *s = NULL;
		size_t		len = 0;

		if (avro_value_get_by_index(record, i, &field, NULL) != 0)
			abort();
		if (avro_value_get_type(v) == AVRO_UNION)
		{
			if (avro_value_get_current_branch(v, &branch) != 0)
				abort();
			v = &branch;
		}
		if (avro_value_get_type(v) != sc[i].kind)
			abort();
		switch (sc[i].kind)
		{
			case AVRO_NULL:
				break;
			case AVRO_BOOLEAN:
				if (avro_value_get_boolean(v, &b) != 0 || (b != 0) != sc[i].b)
					abort();
				break;
			case AVRO_INT32:
				if (avro_value_get_int(v, &i32) != 0 || i32 != sc[i].l)
					abort();
				break;
			case AVRO_INT64:
				if (avro_value_get_long(v, &i64) != 0 || i64 != sc[i].l)
					abort();
				break;
			case AVRO_FLOAT:
				if (avro_value_get_float(v, &f) != 0 || memcmp(&f, &sc[i].f, sizeof(f)) != 0)
					abort();
				break;
			case AVRO_DOUBLE:
				if (avro_value_get_double(v, &d) != 0 || memcmp(&d, &sc[i].d, sizeof(d)) != 0)
					abort();
				break;
			case AVRO_STRING:
				/* Avro C counts a NUL it adds, except for an empty string */
				if (avro_value_get_string(v, &s, &len) != 0)
					abort();
				if (len > 0)
					len--;
				if (len != sc[i].len || (len > 0 && memcmp(s, sc[i].s, len) != 0))
					abort();
				break;
			default:
				abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t		which;
	avro_value_t *value;
	EoiAvroCheck checked;
	char		why[256];
	EoiAvroScalar flat[16];		/* the flat schema has 9 fields */

	if (reader == NULL)
		setup();
	if (size < 1 + 5)
		return 0;
	which = data[0] % NSCHEMAS;
	/* Confluent's header: src/format/avro.c reads the body after 5 bytes */
	if (data[1] != 0)
		return 0;
	value = &values[which];
	why[0] = '\0';
	checked = eoi_avro_check(schemas[which], data + 6, size - 6, why, sizeof(why));
	/* avroflat.c reads a flat record unchecked: it must refuse what the check refuses */
	if (layouts[which] != NULL &&
		eoi_avro_flat_read(layouts[which], data + 6, size - 6, flat) != (checked == EOI_AVRO_OK))
		abort();
	if (checked != EOI_AVRO_OK && checked != EOI_AVRO_TRAILING)
	{
		if (why[0] == '\0')
			abort();			/* a refusal must say something */
		return 0;				/* src/format/avro.c gives Avro C nothing else */
	}
	avro_reader_memory_set_source(reader, (const char *) data + 6, (int64_t) (size - 6));
	avro_value_reset(value);
	avro_set_error("%s", "");
	if (avro_value_read(reader, value) != 0)
	{
		/*
		 * Avro C's one refusal of a well-formed datum: it keeps the items of
		 * an array in a buffer of their size, and cannot append an item of
		 * size 0 (null, an empty record) to it.
		 */
		if (strstr(avro_strerror(), "Couldn't expand array") != NULL)
			return 0;
		fprintf(stderr, "the check let through what Avro C cannot read: %s\n", avro_strerror());
		abort();
	}
	{
		char		extra;

		/* the check found where the datum ends, as Avro C did */
		if ((avro_read(reader, &extra, 1) == 0) != (checked == EOI_AVRO_TRAILING))
			abort();
	}
	walk(value, 0);
	if (checked == EOI_AVRO_OK && layouts[which] != NULL)
		compare_flat(value, flat, layouts[which]->nfields);
	return 0;
}
