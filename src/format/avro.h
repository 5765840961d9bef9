/*-------------------------------------------------------------------------
 *
 * avro.h
 *	  Format avro: Confluent's wire format (a magic byte, the schema's id in
 *	  the registry, the Avro binary), decoded with Avro C into the target's
 *	  columns by field name.
 *
 * (The system's Avro C headers are included as <avro/...h>, so that this
 * header's name does not hide them.)
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_AVRO_H
#define EOI_AVRO_H

#include <librdkafka/rdkafka.h>

#include "format/columns.h"
#include "format/jsonscan.h"
#include "format/writerschema.h"

/* Use this job's registry for what follows (sink.c, before decoding). */
extern void eoi_avro_use_job(const EoiJob *job);

/* Decode one Avro message into one row of `cols` for `writer`. */
extern void eoi_avro_decode(EoiColumns *cols, const char *value, size_t len,
							EoiRowWriter *writer, ExprContext *econtext);

/*
 * The fields of the writer's schema of one Avro message (value as
 * eoi_framed_message gives it), from the cache or the registry: kept with the
 * schema, valid until the job's registry settings change.  Errors as
 * decoding's: a bad header or an unknown schema is a record error.
 */
extern const EoiSchemaFields *eoi_avro_schema_fields(const char *value, size_t len);
extern const EoiSchemaFields *eoi_avro_subject_fields(const char *subject);
extern const EoiSchemaFields *eoi_avro_schema_field_fields(const char *value, size_t len, const char *name);

/*
 * An Avro message as JSON text (records and maps as objects), and its
 * length; with `spans`, where its members lie (see eoi_avro_bytes_json).
 */
extern char *eoi_avro_json(const char *value, size_t len, size_t *json_len, EoiJsonSpans *spans);

#endif
