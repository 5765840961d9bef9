/*-------------------------------------------------------------------------
 *
 * protovalue.h
 *	  Protobuf's binary encoding read (protovalue.c): a message's fields as
 *	  they occur on the wire, and their values as the text, datums and JSON
 *	  PostgreSQL's columns take.  For format protobuf's decoder
 *	  (protobuf.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_PROTOVALUE_H
#define EOI_PROTOVALUE_H

#include "base/pgcompat.h"
#include "lib/stringinfo.h"

#include "format/protoschema.h"

/* Where the bytes being read are: errors name the record and the byte. */
typedef struct PbRecord
{
	const unsigned char *start; /* the record's first byte, for offsets */
	const char *what;			/* "schema id 42", for errors */
} PbRecord;

/* One occurrence of a field in a message's bytes. */
typedef struct PbOcc
{
	const unsigned char *data;	/* a length-delimited value's bytes */
	uint32		len;
	uint8		wire;			/* its wire type */
	uint64		value;			/* a varint's or a fixed number's bits */
	int			next;			/* the field's next occurrence, or -1 */
} PbOcc;

/* The fields of one message as read: each field's occurrences, in order. */
typedef struct PbFields
{
	const EoiProtoMessage *msg;
	int		   *first;			/* per field: its first occurrence, or -1 */
	int		   *last;			/* and its last */
	PbOcc	   *occ;
	int			nocc;
	int			capacity;
} PbFields;

/*
 * Read the fields of a message of type `msg` from `len` bytes at `data`
 * (nested `depth` deep) into `pf`.  A malformed message, a field whose wire
 * type is not its type's, a required field that is absent: a record error.
 */
extern void eoi_pb_read(PbFields *pf, const EoiProtoMessage *msg, const unsigned char *data,
						size_t len, const PbRecord *rec, int depth);

/* Free what eoi_pb_read allocated for `pf`. */
extern void eoi_pb_free(PbFields *pf);

/*
 * The value of field `f` (`index` in pf->msg) as the text a column of
 * type `typid` (InvalidOid: any) reads; false for NULL.
 */
extern bool eoi_pb_field_text(StringInfo out, const PbFields *pf, int index, Oid typid,
							  const PbRecord *rec);

/*
 * The same as a datum of type `typid`, for the pairs whose type is the
 * column's (int32 and int64 into integer and bigint, float, double, bool,
 * string into text, Timestamp into timestamptz), with *isnull; false for
 * other pairs, which take the text.
 */
extern bool eoi_pb_field_datum(const PbFields *pf, int index, Oid typid, Datum *value,
							   bool *isnull, const PbRecord *rec);

/* A whole message as a JSON object. */
extern void eoi_pb_append_json(StringInfo out, const EoiProtoMessage *msg, const unsigned char *data,
							   size_t len, const PbRecord *rec, int depth);

/* The column type that holds field `f`'s values best. */
extern void eoi_pb_column_type(const EoiProtoField *f, Oid *typid, int32 *typmod);

/* A record error for the byte at `at`: "... does not decode at byte N: why". */
pg_noreturn extern void eoi_pb_malformed(const PbRecord *rec, const unsigned char *at, const char *why);

#endif
