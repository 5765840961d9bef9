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
	avro_type_t kind;			/* AVRO_NULL, _BOOLEAN, _INT32, _INT64, _FLOAT, _DOUBLE, _STRING;
								 * outside flat records also _BYTES, _FIXED, _ENUM */
	bool		b;
	int64_t		l;				/* int and long; an enum's index */
	float		f;
	double		d;
	const char *s;				/* string, bytes, fixed: into the record's bytes, not NUL-terminated */
	size_t		len;
} EoiAvroScalar;

/* Bytes being read, from p up to end. */
typedef struct EoiAvroBytes
{
	const unsigned char *p;
	const unsigned char *end;
} EoiAvroBytes;

/*
 * Read one value of type `kind` at in->p and move past it: a primitive,
 * bytes (as a string) or an enum's index (not checked against the
 * symbols).  False if the bytes do not hold one; an int out of its range
 * is refused.
 */
extern bool eoi_avro_read_scalar(EoiAvroBytes *in, avro_type_t kind, EoiAvroScalar *out);

/*
 * Is `schema` a record whose every field is null, boolean, int, long,
 * float, double or string, or a union of at most EOI_AVRO_FLAT_BRANCHES
 * of those?
 */
#define EOI_AVRO_FLAT_BRANCHES 8

extern bool eoi_avro_flat_schema(avro_schema_t schema);

/*
 * A flat schema's fields, read out of Avro C's schema once, so that a
 * record is read without asking the schema again: each field's type, or
 * (nbranches > 0) its union's branches' types.
 */
typedef struct EoiAvroFlatField
{
	int			nbranches;
	avro_type_t kind[EOI_AVRO_FLAT_BRANCHES];
} EoiAvroFlatField;

typedef struct EoiAvroFlat
{
	size_t		nfields;
	EoiAvroFlatField fields[];
} EoiAvroFlat;

/*
 * The layout of flat schema `schema`, malloc'd (free() it); NULL when out
 * of memory.
 */
extern EoiAvroFlat *eoi_avro_flat_layout(avro_schema_t schema);

/*
 * Read the fields of a flat record from `len` bytes into out[i], one per
 * field in the schema's order.  True exactly when eoi_avro_check would
 * find the bytes one whole record of the schema (test/fuzz/avro_fuzz.c
 * checks that), so a flat record needs no check first: when this fails,
 * eoi_avro_check says why.
 */
extern bool eoi_avro_flat_read(const EoiAvroFlat *flat, const unsigned char *data, size_t len,
							   EoiAvroScalar *out);

#endif
