/*-------------------------------------------------------------------------
 *
 * decode.h
 *	  Turning Kafka message values (text, csv, json) into rows of the target
 *	  table, written as COPY text-format lines: one message, one line.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DECODE_H
#define EOI_DECODE_H

#include "eoingest.h"

#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "utils/relcache.h"

/* The target columns a format fills, in COPY's column-list order. */
typedef struct EoiColumns
{
	EoiFormat	format;
	int			ncolumns;
	List	   *names;			/* of String, for BeginCopyFrom */
	char	  **colnames;
	ExprState **defaults;		/* json: evaluated for an absent key, or NULL */
	FmgrInfo   *outfuncs;		/* json: to print a default */
} EoiColumns;

extern EoiColumns *eoi_columns_for(Relation rel, EoiFormat format, EState *estate);
extern void eoi_decode_message(EoiColumns *cols, const char *value, size_t len,
							   StringInfo out, ExprContext *econtext);

#endif
