/*-------------------------------------------------------------------------
 *
 * avrocheck.c
 *	  Checking one Avro binary datum against its writer's schema before
 *	  Avro C reads it.
 *
 * Avro C trusts the bytes it reads: a string's length prefix is handed to
 * malloc before the string is read (a record of a few bytes may ask for
 * gigabytes), a
 * recursive schema is read by recursion as deep as the record nests (a
 * record of a few hundred kilobytes overflows the stack and kills the
 * server process), and an array of items that take no bytes may claim
 * 2^62 of them.  A message comes from whoever may write to the topic, so
 * every datum is walked here first, without allocating anything: lengths
 * against the bytes that remain, union branches and enum indexes against
 * the schema, nesting against EOI_AVRO_MAX_DEPTH, items that take no bytes
 * against EOI_AVRO_MAX_FREE_ITEMS.  What passes, Avro C reads with string
 * and bytes buffers no larger than the message, recursing no deeper than
 * EOI_AVRO_MAX_DEPTH.
 *
 * The walk follows the binary encoding of the specification as Avro C
 * reads it (zigzag varints of at most 10 bytes, blocks of arrays and maps
 * with an optional byte size, ignored).  test/fuzz/avro_fuzz.c checks that
 * every datum this accepts, Avro C reads, to the last byte.
 *
 *-------------------------------------------------------------------------
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "format/avrocheck.h"

typedef struct Walk
{
	const unsigned char *start;
	const unsigned char *p;
	const unsigned char *end;
	size_t		free_items;		/* items so far that took no bytes */
	EoiAvroCheck result;
	char	   *err;
	size_t		errlen;
} Walk;

static size_t
at(const Walk *w)
{
	return (size_t) (w->p - w->start);
}

static size_t
left(const Walk *w)
{
	return (size_t) (w->end - w->p);
}

static bool refuse(Walk *w, EoiAvroCheck result, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Record why the datum is refused; returns false for the caller to return. */
static bool
refuse(Walk *w, EoiAvroCheck result, const char *fmt,...)
{
	va_list		ap;

	w->result = result;
	va_start(ap, fmt);
	vsnprintf(w->err, w->errlen, fmt, ap);
	va_end(ap);
	return false;
}

EoiAvroVarint
eoi_avro_read_varint(const unsigned char **p, const unsigned char *end, int64_t *out)
{
	uint64_t	v = 0;

	for (int shift = 0; shift < 70; shift += 7)
	{
		unsigned char b;

		if (*p == end)
			return EOI_AVRO_VARINT_CUT;
		b = *(*p)++;
		if (shift < 64)
			v |= (uint64_t) (b & 0x7f) << shift;
		if ((b & 0x80) == 0)
		{
			*out = (int64_t) ((v >> 1) ^ (0 - (v & 1)));
			return EOI_AVRO_VARINT_OK;
		}
	}
	return EOI_AVRO_VARINT_TOO_LONG;
}

static bool
read_long(Walk *w, const char *what, int64_t *out)
{
	size_t		start = at(w);

	switch (eoi_avro_read_varint(&w->p, w->end, out))
	{
		case EOI_AVRO_VARINT_OK:
			return true;
		case EOI_AVRO_VARINT_CUT:
			return refuse(w, EOI_AVRO_MALFORMED,
						  "%s at byte %zu is cut off by the end of the record", what, start);
		case EOI_AVRO_VARINT_TOO_LONG:
			break;
	}
	return refuse(w, EOI_AVRO_MALFORMED,
				  "%s at byte %zu is a varint longer than 10 bytes", what, start);
}

static bool
read_int(Walk *w, const char *what, int64_t *out)
{
	size_t		start = at(w);

	if (!read_long(w, what, out))
		return false;
	if (*out < INT32_MIN || *out > INT32_MAX)
		return refuse(w, EOI_AVRO_MALFORMED,
					  "%s at byte %zu is %" PRId64 ", out of range for an int", what, start, *out);
	return true;
}

static bool
skip(Walk *w, uint64_t n, const char *what)
{
	if (n > left(w))
		return refuse(w, EOI_AVRO_MALFORMED,
					  "%s at byte %zu needs %" PRIu64 " bytes, but the record has %zu left",
					  what, at(w), n, left(w));
	w->p += n;
	return true;
}

/* A length prefix and that many bytes: bytes, a string, a map's key. */
static bool
check_length(Walk *w, const char *what)
{
	size_t		start = at(w);
	int64_t		n;

	if (!read_long(w, what, &n))
		return false;
	if (n < 0)
		return refuse(w, EOI_AVRO_MALFORMED,
					  "%s at byte %zu has a negative length (%" PRId64 ")", what, start, n);
	if ((uint64_t) n > left(w))
		return refuse(w, EOI_AVRO_MALFORMED,
					  "%s at byte %zu claims %" PRId64 " bytes, but the record has %zu left",
					  what, start, n, left(w));
	w->p += n;
	return true;
}

static bool check_value(Walk *w, avro_schema_t s, int depth);

/* The blocks of an array or a map, up to the empty block that ends them. */
static bool
check_blocks(Walk *w, avro_schema_t items, bool map, int depth)
{
	const char *what = map ? "a map" : "an array";
	size_t		start = at(w);

	for (;;)
	{
		int64_t		count;
		int64_t		size;

		if (!read_long(w, map ? "a map's block count" : "an array's block count", &count))
			return false;
		if (count == 0)
			return true;
		if (count < 0)
		{
			/* a negative count is followed by the block's size in bytes */
			if (count == INT64_MIN)
				return refuse(w, EOI_AVRO_MALFORMED,
							  "%s at byte %zu has a block count out of range", what, start);
			count = -count;
			if (!read_long(w, map ? "a map's block size" : "an array's block size", &size))
				return false;
		}
		for (int64_t i = 0; i < count; i++)
		{
			const unsigned char *before = w->p;

			if (map && !check_length(w, "a map's key"))
				return false;
			if (!check_value(w, items, depth + 1))
				return false;
			if (w->p == before && ++w->free_items > EOI_AVRO_MAX_FREE_ITEMS)
				return refuse(w, EOI_AVRO_TOO_MANY_ITEMS,
							  "%s at byte %zu has more than %d items that take no bytes",
							  what, start, EOI_AVRO_MAX_FREE_ITEMS);
		}
	}
}

static bool
check_value(Walk *w, avro_schema_t s, int depth)
{
	int64_t		n;
	size_t		start = at(w);

	if (depth > EOI_AVRO_MAX_DEPTH)
		return refuse(w, EOI_AVRO_TOO_DEEP,
					  "the record nests deeper than %d levels at byte %zu", EOI_AVRO_MAX_DEPTH, start);
	switch (avro_typeof(s))
	{
		case AVRO_NULL:
			return true;
		case AVRO_BOOLEAN:
			return skip(w, 1, "a boolean");
		case AVRO_INT32:
			return read_int(w, "an int", &n);
		case AVRO_INT64:
			return read_long(w, "a long", &n);
		case AVRO_FLOAT:
			return skip(w, 4, "a float");
		case AVRO_DOUBLE:
			return skip(w, 8, "a double");
		case AVRO_STRING:
			return check_length(w, "a string");
		case AVRO_BYTES:
			return check_length(w, "bytes");
		case AVRO_FIXED:
			return skip(w, (uint64_t) avro_schema_fixed_size(s), "a fixed");
		case AVRO_ENUM:
			if (!read_long(w, "an enum's index", &n))
				return false;
			if (n < 0 || n >= avro_schema_enum_number_of_symbols(s))
				return refuse(w, EOI_AVRO_MALFORMED,
							  "an enum's index at byte %zu is %" PRId64 ", not one of its %d symbols",
							  start, n, avro_schema_enum_number_of_symbols(s));
			return true;
		case AVRO_UNION:
			if (!read_long(w, "a union's branch", &n))
				return false;
			if (n < 0 || (uint64_t) n >= avro_schema_union_size(s))
				return refuse(w, EOI_AVRO_MALFORMED,
							  "a union's branch at byte %zu is %" PRId64 ", not one of its %zu branches",
							  start, n, avro_schema_union_size(s));
			/* a union only wraps its branch: not a level of its own */
			return check_value(w, avro_schema_union_branch(s, (int) n), depth);
		case AVRO_RECORD:
			for (size_t i = 0; i < avro_schema_record_size(s); i++)
				if (!check_value(w, avro_schema_record_field_get_by_index(s, (int) i), depth + 1))
					return false;
			return true;
		case AVRO_ARRAY:
			return check_blocks(w, avro_schema_array_items(s), false, depth);
		case AVRO_MAP:
			return check_blocks(w, avro_schema_map_values(s), true, depth);
		case AVRO_LINK:
			return check_value(w, avro_schema_link_target(s), depth);
		default:
			return refuse(w, EOI_AVRO_MALFORMED,
						  "the schema has a node of Avro C's type %d, which eoingest does not read",
						  (int) avro_typeof(s));
	}
}

EoiAvroCheck
eoi_avro_check(avro_schema_t schema, const unsigned char *data, size_t len,
			   char *err, size_t errlen)
{
	Walk		w = {data, data, data + len, 0, EOI_AVRO_OK, err, errlen};

	if (!check_value(&w, schema, 0))
		return w.result;
	if (left(&w) > 0)
	{
		refuse(&w, EOI_AVRO_TRAILING,
			   "the record ends at byte %zu of %zu", at(&w), len);
		return w.result;
	}
	return EOI_AVRO_OK;
}
