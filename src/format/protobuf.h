/*-------------------------------------------------------------------------
 *
 * protobuf.h
 *	  Format protobuf: Confluent's wire format (a magic byte, the schema's
 *	  id in the registry, the message's index in the schema, the Protobuf
 *	  binary), decoded into the target's columns by field name.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_PROTOBUF_H
#define EOI_PROTOBUF_H

#include "format/columns.h"
#include "format/writerschema.h"

/* Decode one Protobuf message into one row of `cols` for `writer`. */
extern void eoi_protobuf_decode(EoiColumns *cols, const char *value, size_t len,
								EoiRowWriter *writer, ExprContext *econtext);

/*
 * The fields of the message type of one Protobuf message (value framed as
 * eoi_framed_message gives it), from the cache or the registry, valid until
 * the job's registry settings change.  Errors as decoding's.
 */
extern const EoiSchemaFields *eoi_protobuf_schema_fields(const char *value, size_t len);

/*
 * The fields of the one top-level message of the schema the registry has
 * under `subject`; NULL for no such subject, or a file of several messages.
 */
extern const EoiSchemaFields *eoi_protobuf_subject_fields(const char *subject);

/* A Protobuf message as JSON text: messages and maps as objects. */
extern char *eoi_protobuf_json(const char *value, size_t len);

#endif
