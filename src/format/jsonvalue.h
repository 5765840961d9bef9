/*-------------------------------------------------------------------------
 *
 * jsonvalue.h
 *	  Format json: the text a column's input function reads for one JSON
 *	  value, by the column's type (arrays, bytea, time types, the rest).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_JSONVALUE_H
#define EOI_JSONVALUE_H

#include "base/eoingest.h"

#include "lib/stringinfo.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"

#include "format/jsonscan.h"

/*
 * How a value converts for a column, or for each element of an array
 * column: most types read the value's text with their input function;
 * bytea and the time types read strings and numbers their own way.
 */
typedef enum EoiValueKind
{
	EOI_VALUE_TEXT,
	EOI_VALUE_JSON,				/* json, jsonb: a nested array may be a value */
	EOI_VALUE_BYTEA,
	EOI_VALUE_TIMESTAMPTZ,
	EOI_VALUE_TIMESTAMP,
	EOI_VALUE_DATE
} EoiValueKind;

typedef struct EoiJsonColumn
{
	const char *name;			/* the column's, for errors */
	int			name_len;
	EoiValueKind kind;			/* of the column, or of its elements */
	bool		is_array;		/* a JSON array fills it element by element */
	char		delim;			/* the element type's array delimiter */
	bool		fold_case;		/* a key may match it ignoring ASCII case */
} EoiJsonColumn;

extern void eoi_json_column_init(EoiJsonColumn *jc, const char *name, Oid typid);
extern bool eoi_json_value_text(const EoiJsonColumn *jc, EoiTimestampUnit unit,
								JsonbValue *v, StringInfo out, StringInfo scratch);
extern bool eoi_json_token_text(const EoiJsonColumn *jc, EoiTimestampUnit unit,
								const EoiJsonToken *t, StringInfo out, StringInfo scratch);
extern Numeric eoi_json_token_numeric(const EoiJsonToken *t);
extern void eoi_json_token_binary(const EoiJsonToken *t, JsonbValue *v);
extern bool eoi_json_token_datum(const EoiJsonColumn *jc, EoiTimestampUnit unit,
								 Oid typid, int32 typmod, const EoiJsonToken *t, Datum *out);

#endif
