/*-------------------------------------------------------------------------
 *
 * eoingest.h
 *	  Declarations shared by every part of eoingest: settings, the job's
 *	  definition, fault points.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOINGEST_H
#define EOINGEST_H

#include "postgres.h"

#include "nodes/pg_list.h"
#include "utils/jsonb.h"

/* The SQL objects this library expects (eoingest.control's default_version). */
#define EOI_EXTENSION_VERSION "0.16"

/* Settings: their variables (settings.c), registered by _PG_init (eoingest.c) */
extern char *eoingest_database;
extern int	eoingest_max_workers;
extern int	eoingest_max_workers_per_role;
extern char *eoingest_fault_point;
extern int	eoingest_fault_action;
extern int	eoingest_fault_sleep_ms;
extern int	eoingest_lock_timeout;
extern int	eoingest_dead_letter_retention;
extern int	eoingest_test_batch_text_limit;
extern bool eoingest_test_avro_json_check;

/* The ingestion modes: the rows of the seed article's consistency table. */
typedef enum EoiMode
{
	EOI_MODE_EXACTLY_ONCE,
	EOI_MODE_TWO_PHASE,
	EOI_MODE_UPSERT,
	EOI_MODE_AT_LEAST_ONCE,
	EOI_MODE_AT_MOST_ONCE
} EoiMode;

typedef enum EoiFormat
{
	EOI_FORMAT_TEXT,
	EOI_FORMAT_CSV,
	EOI_FORMAT_JSON,
	EOI_FORMAT_AVRO,			/* Confluent wire format, Schema Registry */
	EOI_FORMAT_PROTOBUF			/* the same, Protobuf */
} EoiFormat;

/* Do the format's messages carry a registry's schema id (and need a registry)? */
static inline bool
eoi_format_has_schema_id(EoiFormat format)
{
	return format == EOI_FORMAT_AVRO || format == EOI_FORMAT_PROTOBUF;
}

/* How format json reads a number for a timestamptz, timestamp or date column. */
typedef enum EoiTimestampUnit
{
	EOI_TS_AUTO,				/* by magnitude (jsonvalue.c says how) */
	EOI_TS_SECONDS,
	EOI_TS_MILLISECONDS,
	EOI_TS_MICROSECONDS,
	EOI_TS_NANOSECONDS,
	EOI_TS_NONE					/* internal: numbers stay numbers (cdc.c converts) */
} EoiTimestampUnit;

/* How a message's value is wrapped: plainly, or as a Debezium change event. */
typedef enum EoiEnvelope
{
	EOI_ENVELOPE_NONE,
	EOI_ENVELOPE_DEBEZIUM
} EoiEnvelope;

/* How envelope debezium applies a change event. */
typedef enum EoiCdcMode
{
	EOI_CDC_APPLY,				/* the target holds the source's rows, by key */
	EOI_CDC_HISTORY,			/* every event appended as a row */
	EOI_CDC_SOFT_DELETE			/* as apply, a delete sets deleted_column */
} EoiCdcMode;

/* What a writer schema wider than the target does to it (apply/evolve.c). */
typedef enum EoiSchemaChanges
{
	EOI_SCHEMA_CHANGES_NONE,	/* nothing: the target stays as it is */
	EOI_SCHEMA_CHANGES_ADD_COLUMNS, /* a field the target lacks becomes a column */
	EOI_SCHEMA_CHANGES_WIDEN	/* also a column too narrow for its field widens */
} EoiSchemaChanges;

typedef enum EoiOnError
{
	EOI_ON_ERROR_FAIL,
	EOI_ON_ERROR_DEAD_LETTER
} EoiOnError;

/* A job as stored in eoingest.jobs. */
typedef struct EoiJob
{
	int32		id;
	char	   *name;
	Oid			owner;
	char	   *brokers;
	char	   *topic;			/* as given: one topic, or several, comma-separated */
	List	   *topics;			/* of char *: each topic (a pattern's: those
								 * it matches, once resolved) */
	char	   *topic_pattern;	/* topic when it begins with '^', or NULL */
	char	   *target;			/* schema-qualified, quoted; NULL with a transform */
	EoiFormat	format;
	List	   *columns;		/* of String: the columns the format fills; NIL: its default */
	Jsonb	   *mapping;		/* {"column": source} (format/mapping.c), or NULL */
	EoiTimestampUnit timestamp_unit;	/* json numbers into time columns */
	EoiMode		mode;
	char	   *transform;		/* NULL when rows go straight to target */
	char	   *start_offset;
	int			batch_size;
	int			batch_max_bytes;	/* most bytes (keys + values) in one batch */
	int			batch_timeout_ms;
	int			parallelism;
	int			checkpoint_interval_ms;	/* two_phase */
	List	   *key_columns;	/* upsert: of String */
	EoiFormat	key_format;		/* upsert: how tombstone keys decode */
	int			offset_commit_interval_ms;	/* upsert */
	int			max_message_bytes;	/* larger values are bad records */
	bool		commit_to_kafka;	/* also commit offsets to Kafka, for monitoring */
	List	   *partitions;		/* NIL for all, else the int partitions owned */
	Jsonb	   *options;		/* librdkafka properties */
	char	   *schema_registry;	/* avro: registry URLs, comma-separated */
	EoiOnError	on_error;
	char	   *search_path;
	char	   *state;
	int32		config_version;	/* bumped by alter_job */
	EoiEnvelope envelope;		/* debezium: change events by key_columns */
	bool		cdc_truncate;	/* debezium: a truncate event truncates the target */
	Jsonb	   *targets;		/* debezium: {"schema.table": qualified target}, or NULL */
	bool		source_transactions;	/* debezium: commit at source transaction boundaries */
	char	   *txn_topic;		/* with source_transactions: Debezium's transaction topic */
	EoiCdcMode	cdc_mode;		/* debezium */
	char	   *deleted_column;	/* EOI_CDC_SOFT_DELETE: the boolean column, else NULL */
	bool		durability_async;	/* commits do not wait for their WAL flush */
	bool		create_target;	/* create a missing target from the writer schema */
	EoiSchemaChanges schema_changes;	/* evolve the target with the writer schema */
} EoiJob;

/* An error as one line: message, detail, hint, context (errtext.c). */
extern char *eoi_describe_error(ErrorData *edata);

/*
 * Fault points for tests: when eoingest.fault_point names the point, the
 * process reaching it does what eoingest.fault_action says: kills itself
 * with SIGKILL (crash tests), raises an error, or sleeps for
 * eoingest.fault_sleep_ms (to force an interleaving).  Free when unset.
 * (fault.c)
 */
typedef enum EoiFaultAction
{
	EOI_FAULT_KILL,
	EOI_FAULT_ERROR,
	EOI_FAULT_SLEEP
} EoiFaultAction;

extern void eoi_fault_fire(const char *point);

#define EOI_FAULT_POINT(point) \
	do { \
		if (eoingest_fault_point[0] != '\0') \
			eoi_fault_fire(point); \
	} while (0)

#endif							/* EOINGEST_H */
