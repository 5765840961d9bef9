/*-------------------------------------------------------------------------
 *
 * connect.h
 *	  Kafka Connect's JSON: the schemas JsonConverter writes beside a value
 *	  (schemas.enable=true), the encodings their logical types name
 *	  (Decimal, Date, Time, Timestamp, bytes, and Debezium's own), and the
 *	  conversion of each into the text a column's input reads.  Format json
 *	  and envelope debezium both read them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_CONNECT_H
#define EOI_CONNECT_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "format/columns.h"
#include "format/writerschema.h"

/* How a field's JSON value encodes the column's value. */
typedef enum EoiConversion
{
	CONV_NONE,					/* the value's text is the column's input */
	CONV_DAYS,					/* days since 1970-01-01 */
	CONV_TIME_MS,				/* time of day in ms, us, ns */
	CONV_TIME_US,
	CONV_TIME_NS,
	CONV_TIMESTAMP_MS,			/* since the epoch, a local date-time as UTC */
	CONV_TIMESTAMP_US,
	CONV_TIMESTAMP_NS,
	CONV_INTERVAL_US,			/* io.debezium.time.MicroDuration */
	CONV_DECIMAL,				/* base64 big-endian two's complement, scale */
	CONV_VARIABLE_DECIMAL,		/* {"scale": s, "value": base64} */
	CONV_BYTES,					/* base64 */
	CONV_BITS					/* base64, little-endian bits, length */
} EoiConversion;

typedef struct EoiFieldCodec
{
	EoiConversion conv;
	int			param;			/* CONV_DECIMAL: scale; CONV_BITS: length */
	bool		zoned;			/* timestamps into timestamptz: at UTC */
} EoiFieldCodec;

/* JSON members, as Connect's schemas and payloads are read */
extern JsonbValue *eoi_connect_member(JsonbContainer *object, const char *name, JsonbValue *v);
extern char *eoi_connect_member_string(JsonbContainer *object, const char *name);
extern JsonbContainer *eoi_connect_schema_field(JsonbContainer *struct_schema, const char *name);

extern EoiFieldCodec eoi_connect_codec(JsonbContainer *field, Oid coltype);
extern EoiSchemaFields *eoi_connect_struct_fields(JsonbContainer *schema, const char *what);
extern char *eoi_connect_convert(const EoiFieldCodec *fc, char *s);

/*
 * Format json's cache of the wrapper's schemas in a batch, by their text
 * (EoiColumns.connect): the codecs of the target's columns, NULL when none
 * converts.
 */
#define EOI_CONNECT_SCHEMAS 8

typedef struct EoiConnectSchema
{
	char	   *text;
	size_t		len;
	EoiFieldCodec *codecs;
} EoiConnectSchema;

typedef struct EoiConnectCache
{
	EoiConnectSchema schemas[EOI_CONNECT_SCHEMAS];
	int			n;
	int			next;			/* full: the one to replace */
} EoiConnectCache;

extern EoiFieldCodec *eoi_connect_column_codecs(EoiColumns *cols, JsonbContainer *schema);
extern EoiFieldCodec *eoi_connect_cached_codecs(EoiColumns *cols, const char *text, size_t len);

#endif
