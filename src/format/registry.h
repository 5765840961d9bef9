/*-------------------------------------------------------------------------
 *
 * registry.h
 *	  A client of Confluent's Schema Registry REST API (and the registries
 *	  that speak it), for formats avro, json and protobuf: schemas by id,
 *	  over libcurl.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_REGISTRY_H
#define EOI_REGISTRY_H

#include "base/eoingest.h"

/*
 * The registry a job reads from: its URLs (tried in turn) and the options
 * schema.registry.basic.auth.user.info and schema.registry.ssl.ca.pem.
 * Returns a number that changes whenever the configuration does, so that
 * caches of what the registry said can be dropped.
 */
extern uint64 eoi_registry_configure(const char *urls, Jsonb *options, Oid owner);

/*
 * The schema text that the registry holds at `path` (such as
 * "/schemas/ids/42"), for the record whose schema `what` names
 * ("schema id 42").  When the schema has references (named types
 * registered under other subjects), the text is an Avro record named
 * EOI_REFERENCES_RECORD whose fields are the referenced types, each before
 * its first use, and last the schema (field "schema"), and
 * *with_references is set.  A record, not a union: the schema may be a
 * union itself (Confluent's way to keep several types in one topic), and
 * a union cannot hold a union.  Errors:
 *	- the registry does not know it or one of its references, or it is not
 *	  an Avro schema: a record error (SQLSTATE 22023), the record's fault;
 *	- no registry answered, or answered nonsense: a transient error
 *	  (class 08), the batch is retried;
 *	- the registry refused the credentials or could not be trusted: a job
 *	  error (class 28), the job stops.
 */
#define EOI_REFERENCES_RECORD "eoingest_schema_with_references"

extern char *eoi_registry_fetch_schema(const char *path, const char *what, bool *with_references);

/*
 * The id of the latest schema registered under `subject` ("orders-value"),
 * or -1 when the registry has no such subject.
 */
extern int64 eoi_registry_latest_id(const char *subject);

extern uint64 eoi_registry_generation(void);

/* A schema's text, and the name it is imported by (NULL for the schema itself). */
typedef struct EoiSchemaFile
{
	const char *name;
	const char *text;
} EoiSchemaFile;

/*
 * The Protobuf schema at `path` and, before it, the files it imports (its
 * references, named by their import paths), each once.
 */
extern List *eoi_registry_fetch_protobuf(const char *path, const char *what);

/* The JSON Schema at `path`, for JSON Schema records (format json). */
extern char *eoi_registry_fetch_json_schema(const char *path, const char *what);

#endif
