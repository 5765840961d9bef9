/*-------------------------------------------------------------------------
 *
 * cdc_internal.h
 *	  What envelope debezium's files share (cdc.c, cdcjson.c, cdcconv.c):
 *	  a message as a change event, the codecs of its fields, the targets
 *	  of a batch, and the functions one file calls in another.  Not for
 *	  use outside envelope/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_CDC_INTERNAL_H
#define EOI_CDC_INTERNAL_H

#include "postgres.h"

#include "nodes/execnodes.h"
#include "utils/jsonb.h"
#include "utils/rel.h"

#include "apply/shape.h"
#include "apply/target.h"
#include "apply/upsert.h"
#include "envelope/cdc.h"
#include "envelope/cdcreplay.h"
#include "format/connect.h"
#include "format/decode.h"
#include "format/jsonscan.h"

/*
 * A row writer that converts each field as its codec says, keeps the text
 * it passes on (the key columns are compared and checked), and passes it to
 * the change set's writer, or nowhere.
 */
typedef struct ConvertingWriter
{
	EoiRowWriter writer;
	EoiRowWriter *inner;		/* NULL: only keep the fields */
	EoiFieldCodec *codecs;
	char	  **fields;			/* the text written per column, NULL for NULL */
	int			ncolumns;
	const bool *unchanged;		/* columns to pass on as eoi_unchanged_value, or NULL */
} ConvertingWriter;

/* Error context: the message being applied. */
typedef struct EventPosition
{
	EoiBatch   *batch;
	int			current;
} EventPosition;

/*
 * A value schema of Kafka Connect's wrapper, parsed once per batch: every
 * event of a table carries the same one, most of its bytes.  serial names
 * it to the codecs computed from it.
 */
typedef struct CachedSchema
{
	char	   *text;
	size_t		len;
	int			serial;
	JsonbContainer *schema;
	JsonbContainer *before;		/* its fields' struct schemas, or NULL */
	JsonbContainer *after;
} CachedSchema;

#define SCHEMA_CACHE_SIZE 16

/*
 * A message of the batch as a change event or a message key (cdcjson.c's
 * eoi_cdc_split_message, eoi_cdc_event_parts).
 */
typedef struct EventJson
{
	/* the payload: as text, or parsed, or null */
	const char *text;			/* its JSON text, not yet parsed, or NULL */
	size_t		len;
	const char *whole;			/* known_wrapper: the message, until text is checked */
	size_t		whole_len;
	JsonbContainer *payload;	/* parsed: the event or key, or NULL */
	bool		null_payload;	/* the wrapper's payload is null: a tombstone */
	bool		not_object;		/* the message is no JSON object */
	/* its schema */
	JsonbContainer *schema;		/* NULL without one */
	JsonbContainer *before_schema;	/* the schema's before and after fields */
	JsonbContainer *after_schema;
	int			serial;			/* the cached schema's, 0 if not cached */
	/* a change event's parts, when read from the text (has_parts) */
	bool		has_parts;
	char	   *op;
	const char *before_text;	/* the before image, left as text (old_key) */
	size_t		before_len;
	const char *after_text;		/* the after image, left as text (add_after) */
	size_t		after_len;
	const char *source_text;	/* the source block, as text, or NULL */
	size_t		source_len;
	/* where the payload's members lie, if its reader noted it (format avro) */
	const EoiJsonSpans *spans;	/* NULL if not */
	const char *spans_text;		/* the text they are in (the payload's) */
	int			source_span;	/* the span whose members are the source block's, or -1 */
} EventJson;

/*
 * The codecs of an image depend only on its struct schema when every
 * column has a field in it: then they are kept, tagged with the schema's
 * serial and the image's kind, until a different schema comes.
 */
#define CODECS_TAG(serial, kind) ((serial) * 4 + (kind))
#define IMAGE_AFTER 1
#define IMAGE_BEFORE 2
#define IMAGE_KEY 3

/*
 * The codecs of the key columns, for one kind of image (before images, or
 * message keys: events alternate between them) and the tag of the schema
 * they were made for (see image_codecs).
 */
typedef struct KeyCodecs
{
	EoiFieldCodec *codecs;
	int			tag;
} KeyCodecs;

/* What one batch works with. */
typedef struct CdcContext
{
	const EoiJob *job;
	const char *target;			/* the schema-qualified target of this context */
	Relation	rel;
	EoiMapping	mapping;		/* the job's columns and timestamp_unit */
	EoiColumns *cols;			/* the target's columns, for after images */
	EoiColumns *keys;			/* the key columns */
	int		   *keypos;			/* the key columns among cols */
	EoiChangeSet *changes;
	ExprContext *econtext;
	EoiFieldCodec *col_codecs;
	int			col_codecs_tag;	/* CODECS_TAG of col_codecs, 0: none kept */
	bool	   *seen;			/* image_is_plain's, a flag per column */
	bool	   *unchanged;		/* add_after's: the columns an update left unsent */
	KeyCodecs	before_key;		/* of the key columns in before images */
	KeyCodecs	message_key;	/* of the key columns in message keys */
	EventPosition *position;	/* for errors: the event being applied */
	struct CdcRoutes *routes;
	int			history[EOI_HISTORY_NCOLUMNS];	/* cdc_mode history: its columns among cols */
	int			deleted_col;	/* cdc_mode soft_delete: deleted_column among cols, else -1 */
} CdcContext;

/* What cdc_mode history writes beside a change's image (cdcmode.c). */
typedef struct HistoryMeta
{
	const char *op;
	const char *source_ts;		/* timestamptz text, or NULL */
	const char *source_lsn;		/* pg_lsn text, or NULL */
	const char *topic;
	int32		partition;
	int64		offset;
} HistoryMeta;

/* The targets of one batch: a context for each target it has events for. */
typedef struct CdcRoutes
{
	const EoiJob *job;
	EState	   *estate;			/* shared by the contexts */
	EventPosition *position;
	MemoryContext cxt;			/* the batch's */
	CdcContext **contexts;
	int			ncontexts;
	int			capacity;
	CachedSchema schemas[SCHEMA_CACHE_SIZE];
	int			nschemas;
	char	   *scratch;		/* jsonscan.c's, for the wrapper's keys */
	size_t		scratch_size;
	EoiJsonSpans spans;			/* the event being applied's (EventJson.spans) */
	EoiReplayFilter *replays;	/* NULL for dead letters being replayed */
	bool		dry_run;		/* a preview: nothing is written */
	const char *op;				/* dry run: the op of the event last applied */
	const char *truncated;		/* dry run: the target its truncate event empties */
} CdcRoutes;
/*
 * The members of an object that one scan looks for (jsonscan.c hands each
 * member over): the last value of each name, as jsonb keeps it.
 */
typedef struct Member
{
	const char *name;
	bool		found;
	EoiJsonToken value;
} Member;

typedef struct MemberScan
{
	Member	   *members;
	int			n;
	bool		stop_at_other;	/* a member of another name ends the scan */
	bool		other;			/* there was one */
} MemberScan;

/* cdcjson.c */
extern JsonbContainer *eoi_cdc_json_get_object(JsonbContainer *object, const char *name);
extern Jsonb *eoi_cdc_parse_json(const char *data, size_t len);
extern bool eoi_cdc_scan_object(CdcRoutes *routes, const char *data, size_t len, EoiJsonFieldFn field, void *arg);
extern bool eoi_cdc_scan_members(CdcRoutes *routes, const char *data, size_t len, MemberScan *ms);
extern bool eoi_cdc_members(CdcRoutes *routes, const EventJson *ev, bool source, const char *data,
							size_t len, MemberScan *ms);
extern void eoi_cdc_split_message(CdcRoutes *routes, rd_kafka_message_t *msg, bool key, EventJson *ev);
extern JsonbContainer *eoi_cdc_payload_object(CdcRoutes *routes, EventJson *ev);
extern void eoi_cdc_event_parts(CdcRoutes *routes, EventJson *ev);

/* cdc.c */
extern void eoi_cdc_event_errcontext(void *arg);
extern char *eoi_cdc_event_target(CdcRoutes *routes, EventJson *ev, const char *topic, bool missing_ok);

/* cdcevolve.c */
extern void eoi_cdc_evolve_targets(CdcRoutes *routes, EoiBatch *batch);
extern void eoi_cdc_evolve_for_event(CdcRoutes *routes, const char *target, EventJson *ev,
									 rd_kafka_message_t *msg, const char *topic);

/* cdcmode.c */
extern void eoi_cdc_history_source(JsonbContainer *source, HistoryMeta *meta);
extern void eoi_cdc_mode_write(CdcContext *cx, EoiRowWriter *w, const HistoryMeta *meta, bool deleted);

/* cdcconv.c */
extern EoiFieldCodec eoi_cdc_codec_from_column(Oid coltype, int32 typmod, JsonbValue *v);
extern void eoi_cdc_converting_writer_init(ConvertingWriter *cw, EoiRowWriter *inner, EoiFieldCodec *codecs, int ncolumns);

#endif
