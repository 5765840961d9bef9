/*-------------------------------------------------------------------------
 *
 * avroflat.h
 *	  Reading a flat Avro record (fields of primitives, or of unions of
 *	  primitives) straight from its bytes, without Avro C's values.  Plain C
 *	  with no server dependency, so that a fuzzer can compare it with Avro C.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_AVROFLAT_H
#define EOI_AVROFLAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <avro/schema.h>

/* One field's value: `kind` is the branch's type for a union. */
typedef struct EoiAvroScalar
{
	avro_type_t kind;			/* AVRO_NULL, _BOOLEAN, _INT32, _INT64, _FLOAT, _DOUBLE, _STRING */
	bool		b;
	int64_t		l;				/* int and long */
	float		f;
	double		d;
	const char *s;				/* string: into the record's bytes, not NUL-terminated */
	size_t		len;
} EoiAvroScalar;

/*
 * Is `schema` a record whose every field is null, boolean, int, long,
 * float, double or string, or a union of those?
 */
extern bool eoi_avro_flat_schema(avro_schema_t schema);

/*
 * Read the fields of flat record `schema` from `len` bytes into out[i],
 * one per field in the schema's order.  The bytes must have passed
 * eoi_avro_check against `schema`; false if they end too early all the
 * same.
 */
extern bool eoi_avro_flat_read(avro_schema_t schema, const unsigned char *data, size_t len,
							   EoiAvroScalar *out);

#endif
