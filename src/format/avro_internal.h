/*-------------------------------------------------------------------------
 *
 * avro_internal.h
 *	  What format avro's files share (avro.c, avrotype.c, avrovalue.c): the
 *	  tree of the writer's schema and the conversions of its values.  Not
 *	  for use outside format/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_AVRO_INTERNAL_H
#define EOI_AVRO_INTERNAL_H

#include "base/eoingest.h"

#include <avro/schema.h>
#include <avro/value.h>

#include "lib/stringinfo.h"
#include "utils/jsonb.h"

#include "format/avroflat.h"
#include "format/jsonscan.h"

/* Logical types, as the schema's JSON names them. */
typedef enum Logical
{
	L_NONE,
	L_DECIMAL,
	L_DATE,
	L_TIME_MILLIS,
	L_TIME_MICROS,
	L_TIMESTAMP_MILLIS,
	L_TIMESTAMP_MICROS,
	L_TIMESTAMP_NANOS,
	L_LOCAL_TIMESTAMP_MILLIS,
	L_LOCAL_TIMESTAMP_MICROS,
	L_LOCAL_TIMESTAMP_NANOS,
	L_UUID,
	L_DURATION,
	/* Debezium's, by connect.name */
	L_TIME_NANOS,				/* io.debezium.time.NanoTime: long */
	L_VARIABLE_DECIMAL,			/* io.debezium.data.VariableScaleDecimal: record */
	L_BITS						/* io.debezium.data.Bits: bytes, scale = length */
} Logical;

/* A node of the writer's schema, with what Avro C does not keep. */
typedef struct AvroType
{
	avro_schema_t schema;		/* Avro C's node, links resolved */
	avro_type_t kind;
	Logical		logical;
	int			scale;			/* decimal; bits: their number, or -1 */
	int			precision;		/* decimal, as the schema says (0: not said) */
	Oid			connect_column;	/* the column type of a Debezium type, or InvalidOid */
	int			nchildren;		/* record fields, union branches, items, values */
	struct AvroType **children;
	char	  **json_names;		/* record fields: each name as a JSON string, then ':' */
} AvroType;

typedef struct Builder
{
	List	   *named;			/* of AvroType: records, enums, fixed seen */
} Builder;

/* avrotype.c */
extern AvroType *eoi_avro_build_type(Builder *b, avro_schema_t s, JsonbValue *json);
extern void eoi_avro_column_type(const AvroType *t, Oid *typid, int32 *typmod);

/* avrovalue.c */
extern void eoi_avro_failed(const char *call);
extern void eoi_avro_append_uuid(StringInfo out, const unsigned char *b);
extern void eoi_avro_resolve_union(avro_value_t **v, avro_value_t *branch, AvroType **t);
extern void eoi_avro_append_json(StringInfo out, avro_value_t *v, AvroType *t);
extern void eoi_avro_append_scalar(StringInfo out, AvroType *t, const EoiAvroScalar *sc);
extern void eoi_avro_append_json_scalar(StringInfo out, AvroType *t, const EoiAvroScalar *sc);
extern bool eoi_avro_value_text(StringInfo out, avro_value_t *v, AvroType *t, Oid typid);
extern bool eoi_avro_scalar_datum(const EoiAvroScalar *sc, Oid typid, Datum *out);
extern void eoi_avro_scalar_text(StringInfo out, const EoiAvroScalar *sc);
extern bool eoi_avro_value_datum(avro_value_t *v, AvroType *t, Oid typid, Datum *out);

/* avrojson.c */
extern void eoi_avro_bytes_json(StringInfo out, const unsigned char *data, size_t len, AvroType *t,
								EoiJsonSpans *spans);

#endif
