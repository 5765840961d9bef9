/*-------------------------------------------------------------------------
 *
 * mapping.h
 *	  A job's mapping (create_job's mapping => '{"column": "source"}'): where
 *	  each column's value comes from, and the decoding of a message through
 *	  it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_MAPPING_H
#define EOI_MAPPING_H

#include "base/eoingest.h"

#include "utils/jsonb.h"

#include <librdkafka/rdkafka.h>

#include "format/columns.h"

/* Where a column's value comes from. */
typedef enum EoiMapKind
{
	EOI_MAP_VALUE_PATH,			/* "/a/b": a field of the value */
	EOI_MAP_KEY_PATH,			/* "$key/a/b": a field of the key */
	EOI_MAP_VALUE,				/* "$value": the whole value */
	EOI_MAP_KEY,				/* "$key": the whole key */
	EOI_MAP_TOPIC,				/* "$topic" */
	EOI_MAP_PARTITION,			/* "$partition" */
	EOI_MAP_OFFSET,				/* "$offset" */
	EOI_MAP_TIMESTAMP,			/* "$timestamp": the message's */
	EOI_MAP_HEADERS,			/* "$headers": all of them, a JSON object */
	EOI_MAP_HEADER,				/* "$header/name": one header's value */
	EOI_MAP_CONST				/* {"const": value} */
} EoiMapKind;

/*
 * One column's source.  A path is a JSON pointer (RFC 6901) into a json or
 * avro value or key, its segments unescaped; for csv it is one field number
 * (1 for the first field).
 */
typedef struct EoiMapSource
{
	EoiMapKind	kind;
	const char *spec;			/* as written, for errors */
	int			npath;
	char	  **path;
	size_t		first_len;		/* strlen(path[0]) */
	int			field;			/* csv: the field's index, from 0 */
	char	   *text;			/* const: its text, NULL for null; header: the name */
} EoiMapSource;

/* The most columns and path segments a mapping may name, and its longest source. */
#define EOI_MAP_MAX_COLUMNS 1600
#define EOI_MAP_MAX_DEPTH 64
#define EOI_MAP_MAX_SOURCE 1000

extern void eoi_mapping_check_shape(Jsonb *mapping);
extern EoiMapSource *eoi_mapping_source(Jsonb *mapping, const char *column, EoiFormat format,
										EoiFormat key_format);
extern List *eoi_mapping_columns(Jsonb *mapping);
extern bool eoi_map_decode(EoiColumns *cols, rd_kafka_message_t *msg, const char *topic,
						   EoiRowWriter *writer, ExprContext *econtext);

#endif
