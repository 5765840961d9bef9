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

extern EoiSchemaFields *eoi_json_schema_columns(const char *text, const char *what);

#endif
