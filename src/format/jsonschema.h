/*-------------------------------------------------------------------------
 *
 * jsonschema.h
 *	  A JSON Schema's top-level properties as the columns of a table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_JSONSCHEMA_H
#define EOI_JSONSCHEMA_H

#include "format/writerschema.h"

/* The column type of a JSON Schema "number" (eoingest.json_schema_number). */
typedef enum EoiJsonNumber
{
	EOI_JSON_NUMBER_DOUBLE,		/* double precision */
	EOI_JSON_NUMBER_NUMERIC		/* numeric, without a limit: every digit kept */
} EoiJsonNumber;

extern int	eoingest_json_schema_number;

extern EoiSchemaFields *eoi_json_schema_columns(const char *text, const char *what);

#endif
