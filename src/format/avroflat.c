/*-------------------------------------------------------------------------
 *
 * avroflat.c
 *	  Reading a flat Avro record straight from its bytes.
 *
 * Most Avro topics carry flat records: fields of primitives, some of them
 * nullable.  Avro C reads such a record into generic values (a malloc and
 * a free for each string, a reset of every field), and avro.c then asks
 * for each field back through the getters.  For a flat record, this file
 * reads the fields from the bytes in one pass instead, checking every
 * length, branch and int's range on the way as avrocheck.c would, so that
 * a flat record takes one pass, not a check and then a read.  The encoding
 * is the specification's, as Avro C reads it: zigzag varints, little-endian
 * floats and doubles, a union's branch as a long.  test/fuzz/avro_fuzz.c
 * checks that it accepts what avrocheck.c accepts and reads what Avro C
 * reads.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "format/avrocheck.h"
#include "format/avroflat.h"

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
			if (avro_schema_union_size(f) > EOI_AVRO_FLAT_BRANCHES)
				return false;
			for (size_t b = 0; b < avro_schema_union_size(f); b++)
				if (!is_flat_primitive(avro_schema_union_branch(f, (int) b)))
					return false;
		}
		else if (!is_flat_primitive(f))
			return false;
	}
	return true;
}

EoiAvroFlat *
eoi_avro_flat_layout(avro_schema_t schema)
{
	size_t		n = avro_schema_record_size(schema);
	EoiAvroFlat *flat = calloc(1, sizeof(EoiAvroFlat) + n * sizeof(EoiAvroFlatField));

	if (flat == NULL)
		return NULL;
	flat->nfields = n;
	for (size_t i = 0; i < n; i++)
	{
		avro_schema_t f = avro_schema_record_field_get_by_index(schema, (int) i);
		EoiAvroFlatField *field = &flat->fields[i];

		if (avro_typeof(f) != AVRO_UNION)
		{
			field->kind[0] = avro_typeof(f);
			continue;
		}
		field->nbranches = (int) avro_schema_union_size(f);
		for (int b = 0; b < field->nbranches; b++)
			field->kind[b] = avro_typeof(avro_schema_union_branch(f, b));
	}
	return flat;
}

static bool
read_long(EoiAvroBytes *in, int64_t *out)
{
	return eoi_avro_read_varint(&in->p, in->end, out) == EOI_AVRO_VARINT_OK;
}

/* n little-endian bytes */
static bool
read_le(EoiAvroBytes *in, int n, uint64_t *out)
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

bool
eoi_avro_read_scalar(EoiAvroBytes *in, avro_type_t kind, EoiAvroScalar *out)
{
	uint64_t	bits;
	int64_t		n;

	out->kind = kind;
	switch (kind)
	{
		case AVRO_NULL:
			return true;
		case AVRO_BOOLEAN:
			if (in->p == in->end)
				return false;
			out->b = *in->p++ != 0;
			return true;
		case AVRO_INT32:
			/* avrocheck.c refuses an int out of its range too */
			return read_long(in, &out->l) && out->l >= INT32_MIN && out->l <= INT32_MAX;
		case AVRO_INT64:
		case AVRO_ENUM:
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
		case AVRO_BYTES:
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
eoi_avro_flat_read(const EoiAvroFlat *flat, const unsigned char *data, size_t len,
				   EoiAvroScalar *out)
{
	EoiAvroBytes in = {data, data + len};

	for (size_t i = 0; i < flat->nfields; i++)
	{
		const EoiAvroFlatField *f = &flat->fields[i];
		avro_type_t kind = f->kind[0];

		if (f->nbranches > 0)
		{
			int64_t		branch;

			if (!read_long(&in, &branch) || branch < 0 || branch >= f->nbranches)
				return false;
			kind = f->kind[branch];
		}
		if (!eoi_avro_read_scalar(&in, kind, &out[i]))
			return false;
	}
	return in.p == in.end;
}
