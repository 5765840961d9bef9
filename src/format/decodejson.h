/*-------------------------------------------------------------------------
 *
 * decodejson.h
 *	  Format json: the keys of a JSON object into the target's columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DECODEJSON_H
#define EOI_DECODEJSON_H

#include "format/columns.h"
#include "format/writerschema.h"

#include "utils/jsonb.h"

/*
 * eoingest.json_decode (superuser, for tests): how format json reads a
 * message: with jsonscan.c's scan (falling back to jsonb where it
 * declines), always through jsonb_in as before the scan, or (to show
 * which messages the scan reads) with the scan alone, a declined message
 * being a record error.
 */
typedef enum EoiJsonDecode
{
	EOI_JSON_DECODE_SCAN,
	EOI_JSON_DECODE_JSONB,
	EOI_JSON_DECODE_SCAN_ONLY
} EoiJsonDecode;

extern int	eoingest_json_decode;

extern void eoi_json_columns_prepare(EoiColumns *cols, Relation rel, EState *estate);
extern void eoi_json_write_token(EoiColumns *cols, int c, EoiRowWriter *writer,
								 const EoiJsonToken *t);
extern char *eoi_jsonb_value_text(JsonbValue *v);
extern void eoi_decode_json(EoiColumns *cols, const char *value, size_t len,
							EoiRowWriter *writer, ExprContext *econtext);
extern void eoi_decode_json_object(EoiColumns *cols, JsonbContainer *object,
								   EoiRowWriter *writer, ExprContext *econtext);
extern const EoiSchemaFields *eoi_json_schema_fields(const char *value, size_t len, bool registry);
extern void eoi_decode_json_text(EoiColumns *cols, const char *text, size_t len,
								 EoiRowWriter *writer, ExprContext *econtext);

#endif
