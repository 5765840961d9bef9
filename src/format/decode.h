/*-------------------------------------------------------------------------
 *
 * decode.h
 *	  The decoder, one interface for every format.  Open it for a job and
 *	  its target (eoi_columns_for: the columns the messages fill, with what
 *	  the format needs for each), then decode each message into one row of
 *	  fields for an EoiRowWriter (eoi_decode_kafka_message: COPY text
 *	  lines, arrays for upsert, a slot's values), or raise the record's
 *	  error, which the caller's error context ties to the message.  What
 *	  decoding a message allocates lives in the per-tuple memory the caller
 *	  resets after each one.
 *
 * The formats: text and csv (decode.c), json (decodejson.c), avro
 * (avro.c); columns.c maps the messages onto the target's columns.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DECODE_H
#define EOI_DECODE_H

#include "base/eoingest.h"

#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "utils/relcache.h"

#include <librdkafka/rdkafka.h>

#include "format/columns.h"
#include "format/decodejson.h"
#include "format/jsonscan.h"

typedef struct EoiCopyWriter
{
	EoiRowWriter writer;
	StringInfo	out;
} EoiCopyWriter;

extern EoiColumns *eoi_columns_for(Relation rel, const EoiMapping *mapping, EState *estate);
extern EoiColumns *eoi_columns_named(Relation rel, EoiFormat format, List *names);
extern EoiColumns *eoi_columns_for_keys(Relation rel, const EoiMapping *mapping,
										EoiFormat key_format, List *names);
extern void eoi_copy_writer_init(EoiCopyWriter *cw, StringInfo out);
extern void eoi_json_unframe(const char **data, size_t *len);
extern const char *eoi_framed_message(EoiFormat format, rd_kafka_message_t *msg, bool key, bool strict,
									  size_t *len);
extern const char *eoi_message_json(EoiFormat format, rd_kafka_message_t *msg, bool key,
									size_t *len);
extern const char *eoi_message_json_spans(EoiFormat format, rd_kafka_message_t *msg, bool key,
										  size_t *len, EoiJsonSpans *spans);
extern bool eoi_decode_message(EoiColumns *cols, const char *value, size_t len,
							   EoiRowWriter *writer, ExprContext *econtext);
extern bool eoi_decode_kafka_message(EoiColumns *cols, rd_kafka_message_t *msg, const char *topic,
									 bool key, EoiRowWriter *writer, ExprContext *econtext);

#endif
