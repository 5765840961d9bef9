/*-------------------------------------------------------------------------
 *
 * decode_internal.h
 *	  What decode.c (columns, csv, text, the dispatch) and decodejson.c
 *	  (format json) share.  Not for use outside format/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DECODE_INTERNAL_H
#define EOI_DECODE_INTERNAL_H

#include "format/decode.h"

extern bool eoi_spells_name(const char *data, size_t len, const char *name);
extern void eoi_json_columns_prepare(EoiColumns *cols, Relation rel, EState *estate);
extern void eoi_decode_json(EoiColumns *cols, const char *value, size_t len,
							EoiRowWriter *writer, ExprContext *econtext);

#endif
