/*-------------------------------------------------------------------------
 *
 * avroflat.c
 *	  Reading a flat Avro record straight from its bytes.
 *
 * Most Avro topics carry flat records: fields of primitives, some of them
 * nullable.  Avro C reads such a record into generic values (a malloc and
 * a free for each string, a reset of every field), and avro.c then asks
 * for each field back through the getters.  For a flat record, this file
 * reads the fields from the bytes in one pass instead, after avrocheck.c
 * has checked every length and branch, so nothing here can go past the
 * record.  The encoding is the specification's, as Avro C reads it: zigzag
 * varints, little-endian floats and doubles, a union's branch as a long.
 * test/fuzz/avro_fuzz.c checks that it reads what Avro C reads.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "avrocheck.h"
#include "avroflat.h"

static bool
is_flat_primitive(avro_schema_t s)
{
	switch (avro_typeof(s))
	{
		case AVRO_NULL:
		case AVRO_BOOLEAN:
		case AVRO_INT32:
		case AVRO_INT64:
		case AVRO_FLOAT:
		case AVRO_DOUBLE:
		case AVRO_STRING:
			return true;
		default:
			return false;
	}
}

bool
eoi_avro_flat_schema(avro_schema_t schema)
{
	if (avro_typeof(schema) != AVRO_RECORD)
		return false;
	for (size_t i = 0; i < avro_schema_record_size(schema); i++)
	{
		avro_schema_t f = avro_schema_record_field_get_by_index(schema, (int) i);

		if (avro_typeof(f) == AVRO_UNION)
		{
			for (size_t b = 0; b < avro_schema_union_size(f); b++)
				if (!is_flat_primitive(avro_schema_union_branch(f, (int) b)))
					return false;
		}
		else if (!is_flat_primitive(f))
			return false;
	}
	return true;
}

typedef struct Bytes
{
	const unsigned char *p;
	const unsigned char *end;
} Bytes;

static bool
read_long(Bytes *in, int64_t *out)
{
	return eoi_avro_read_varint(&in->p, in->end, out) == EOI_AVRO_VARINT_OK;
}

/* n little-endian bytes */
static bool
read_le(Bytes *in, int n, uint64_t *out)
{
	uint64_t	v = 0;

	if (in->end - in->p < n)
		return false;
	for (int k = 0; k < n; k++)
		v |= (uint64_t) in->p[k] << (8 * k);
	in->p += n;
	*out = v;
	return true;
}

static bool
read_scalar(Bytes *in, avro_schema_t s, EoiAvroScalar *out)
{
	uint64_t	bits;
	int64_t		n;

	out->kind = avro_typeof(s);
	switch (out->kind)
	{
		case AVRO_NULL:
			return true;
		case AVRO_BOOLEAN:
			if (in->p == in->end)
				return false;
			out->b = *in->p++ != 0;
			return true;
		case AVRO_INT32:
		case AVRO_INT64:
			return read_long(in, &out->l);
		case AVRO_FLOAT:
			{
				uint32_t	w;

				if (!read_le(in, 4, &bits))
					return false;
				w = (uint32_t) bits;
				memcpy(&out->f, &w, sizeof(out->f));
				return true;
			}
		case AVRO_DOUBLE:
			if (!read_le(in, 8, &bits))
				return false;
			memcpy(&out->d, &bits, sizeof(out->d));
			return true;
		case AVRO_STRING:
			if (!read_long(in, &n) || n < 0 || (uint64_t) n > (uint64_t) (in->end - in->p))
				return false;
			out->s = (const char *) in->p;
			out->len = (size_t) n;
			in->p += n;
			return true;
		default:
			return false;
	}
}

bool
eoi_avro_flat_read(avro_schema_t schema, const unsigned char *data, size_t len,
				   EoiAvroScalar *out)
{
	Bytes		in = {data, data + len};

	for (size_t i = 0; i < avro_schema_record_size(schema); i++)
	{
		avro_schema_t f = avro_schema_record_field_get_by_index(schema, (int) i);

		if (avro_typeof(f) == AVRO_UNION)
		{
			int64_t		branch;

			if (!read_long(&in, &branch) || branch < 0 ||
				(uint64_t) branch >= avro_schema_union_size(f))
				return false;
			f = avro_schema_union_branch(f, (int) branch);
		}
		if (!read_scalar(&in, f, &out[i]))
			return false;
	}
	return in.p == in.end;
}
