/*-------------------------------------------------------------------------
 *
 * avrocheck.h
 *	  Checking one Avro binary datum against its writer's schema before
 *	  Avro C reads it.  Plain C with no server dependency, so that a fuzzer
 *	  can drive it on its own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_AVROCHECK_H
#define EOI_AVROCHECK_H

#include <stddef.h>
#include <stdint.h>

#include <avro/schema.h>

/*
 * How deep values may nest (records, arrays and maps, each a level; a
 * union is not one): Avro C reads a value by recursion, with no bound of
 * its own.
 */
#define EOI_AVRO_MAX_DEPTH 1000

/*
 * Items of arrays and maps that take no bytes (of null, of an empty
 * record) cost Avro C time and memory that the message's size does not
 * bound: at most this many in one message, beyond one per byte.
 */
#define EOI_AVRO_MAX_FREE_ITEMS 65536

typedef enum EoiAvroCheck
{
	EOI_AVRO_OK,				/* Avro C may read it */
	EOI_AVRO_MALFORMED,			/* not a datum of the schema */
	EOI_AVRO_TOO_DEEP,			/* nests deeper than EOI_AVRO_MAX_DEPTH */
	EOI_AVRO_TOO_MANY_ITEMS,	/* more items than EOI_AVRO_MAX_FREE_ITEMS allows */
	EOI_AVRO_TRAILING			/* a datum, followed by more bytes */
} EoiAvroCheck;

/* How reading one varint went. */
typedef enum EoiAvroVarint
{
	EOI_AVRO_VARINT_OK,
	EOI_AVRO_VARINT_CUT,		/* the bytes end inside it */
	EOI_AVRO_VARINT_TOO_LONG	/* more than 10 bytes */
} EoiAvroVarint;

/*
 * Avro's long: a zigzag varint of at most 10 bytes at *p, before `end`,
 * as Avro C reads one; *p moves past what was read.
 */
extern EoiAvroVarint eoi_avro_read_varint(const unsigned char **p, const unsigned char *end,
										  int64_t *out);

/*
 * Walk `len` bytes of `data` as one datum of `schema` without allocating:
 * every length, count, union branch and enum index is checked against the
 * schema and against the bytes that remain.  Returns EOI_AVRO_OK, or
 * another code with a message of at most `errlen` bytes in `err`.
 */
extern EoiAvroCheck eoi_avro_check(avro_schema_t schema, const unsigned char *data, size_t len,
								   char *err, size_t errlen);

#endif
