/*-------------------------------------------------------------------------
 *
 * cdc.c
 *	  Change data capture: applying Debezium change events to the target.
 *
 * With envelope => 'debezium' (format json) each message is a change event
 * {before, after, op, source, ts_ms, ...}, bare or inside Kafka Connect's
 * schema wrapper {"schema": ..., "payload": ...}.  The events become the
 * upserts and deletes of an EoiChangeSet (upsert.c), so that a batch is
 * applied as upsert mode applies one: the net effect per key, in partition
 * order, one DELETE and one INSERT ... ON CONFLICT, in the transaction that
 * also moves the offsets (whatever the mode).
 *
 *	c, r	the after image is inserted, or updates the row of its key (a
 *			snapshot may overlap the stream).
 *	u		the after image replaces the row of the old key: the key of the
 *			before image, else of the message key, else of the after image.
 *			When the old key differs from the new one, the old row is deleted.
 *			A u whose key is not in the target inserts the row (see README).
 *	d		deletes the row of the before image's key, else the message key's.
 *	t		truncates the target if the job allows it (on_truncate), else is
 *			an error of the record.
 *	null	(a tombstone, after a delete, for compaction) does nothing.
 *
 * An event that Debezium sends again after Kafka Connect restarts, one of a
 * source position before the last one applied from its partition, is
 * skipped (cdcreplay.c).
 *
 * The images' fields fill the columns of those names, as format json maps
 * an object (decode.c).  A field that is not a column of the target, or a
 * missing or null key, is an error of the record, as is an unknown op.
 *
 * Debezium encodes many types as numbers, base64 strings or structs.  With
 * the schema wrapper each field's Connect type names the encoding (a
 * Conversion); without it, the encoding is assumed from the target column's
 * type and the JSON value's type.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "common/base64.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "apply/shape.h"
#include "apply/sink.h"
#include "apply/upsert.h"
#include "envelope/cdc.h"
#include "envelope/cdcreplay.h"
#include "envelope/cdctxn.h"
#include "format/avro.h"
#include "format/decode.h"
#include "format/jsonscan.h"
#include "format/wirenum.h"

/* How a field's JSON value encodes the column's value. */
typedef enum Conversion
{
	CONV_NONE,					/* the value's text is the column's input */
	CONV_DAYS,					/* days since 1970-01-01 */
	CONV_TIME_MS,				/* time of day in ms, us, ns */
	CONV_TIME_US,
	CONV_TIME_NS,
	CONV_TIMESTAMP_MS,			/* since the epoch, a local date-time as UTC */
	CONV_TIMESTAMP_US,
	CONV_TIMESTAMP_NS,
	CONV_INTERVAL_US,			/* io.debezium.time.MicroDuration */
	CONV_DECIMAL,				/* base64 big-endian two's complement, scale */
	CONV_VARIABLE_DECIMAL,		/* {"scale": s, "value": base64} */
	CONV_BYTES,					/* base64 */
	CONV_BITS					/* base64, little-endian bits, length */
} Conversion;

typedef struct FieldCodec
{
	Conversion	conv;
	int			param;			/* CONV_DECIMAL: scale; CONV_BITS: length */
	bool		zoned;			/* timestamps into timestamptz: at UTC */
} FieldCodec;

/*
 * A row writer that converts each field as its codec says, keeps the text
 * it passes on (the key columns are compared and checked), and passes it to
 * the change set's writer, or nowhere.
 */
typedef struct ConvertingWriter
{
	EoiRowWriter writer;
	EoiRowWriter *inner;		/* NULL: only keep the fields */
	FieldCodec *codecs;
	char	  **fields;			/* the text written per column, NULL for NULL */
	int			ncolumns;
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
 * A message of the batch as a change event or a message key (cdc.c's
 * split_message, event_parts).
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
	FieldCodec *codecs;
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
	FieldCodec *col_codecs;
	int			col_codecs_tag;	/* CODECS_TAG of col_codecs, 0: none kept */
	bool	   *seen;			/* image_is_plain's, a flag per column */
	KeyCodecs	before_key;		/* of the key columns in before images */
	KeyCodecs	message_key;	/* of the key columns in message keys */
	EventPosition *position;	/* for errors: the event being applied */
	struct CdcRoutes *routes;
} CdcContext;

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
	EoiReplayFilter *replays;	/* NULL for dead letters being replayed */
} CdcRoutes;

/* ---- JSON helpers ---- */

/* The value of key `name` of `object`, or NULL; a JSON null counts as absent. */
static JsonbValue *
json_get(JsonbContainer *object, const char *name, JsonbValue *v)
{
	if (object == NULL || !JsonContainerIsObject(object))
		return NULL;
	if (getKeyJsonValueFromContainer(object, name, strlen(name), v) == NULL ||
		v->type == jbvNull)
		return NULL;
	return v;
}

/* The object at key `name` of `object`, or NULL if it is absent or null. */
static JsonbContainer *
json_get_object(JsonbContainer *object, const char *name)
{
	JsonbValue	v;

	if (json_get(object, name, &v) == NULL)
		return NULL;
	if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("\"%s\" of the change event is not an object", name)));
	return v.val.binary.data;
}

/* The string at key `name`, as a palloc'd C string, or NULL. */
static char *
json_get_string(JsonbContainer *object, const char *name)
{
	JsonbValue	v;

	if (json_get(object, name, &v) == NULL)
		return NULL;
	if (v.type == jbvString)
		return pnstrdup(v.val.string.val, v.val.string.len);
	if (v.type == jbvNumeric)
		return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
	return NULL;
}

/*
 * Kafka Connect's JsonConverter with schemas.enable wraps a value in
 * {"schema": ..., "payload": ...}: the payload, and the schema in *schema.
 * A bare value is its own payload, without schema.
 */
static JsonbContainer *
unwrap(Jsonb *jb, JsonbContainer **schema)
{
	JsonbValue	v;
	JsonbContainer *root = &jb->root;

	*schema = NULL;
	if (!JB_ROOT_IS_OBJECT(jb))
		return NULL;
	if (getKeyJsonValueFromContainer(root, "schema", 6, &v) != NULL &&
		getKeyJsonValueFromContainer(root, "payload", 7, &v) != NULL &&
		JsonContainerSize(root) == 2)
	{
		*schema = json_get_object(root, "schema");
		return json_get_object(root, "payload");
	}
	return root;
}

/* The field schema named `name` in a struct schema's "fields", or NULL. */
static JsonbContainer *
schema_field(JsonbContainer *struct_schema, const char *name)
{
	JsonbValue	v;
	JsonbContainer *fields;
	int			n;

	if (struct_schema == NULL || json_get(struct_schema, "fields", &v) == NULL ||
		v.type != jbvBinary || !JsonContainerIsArray(v.val.binary.data))
		return NULL;
	fields = v.val.binary.data;
	n = JsonContainerSize(fields);
	for (int i = 0; i < n; i++)
	{
		JsonbValue *f = getIthJsonbValueFromContainer(fields, i);
		char	   *fname;

		if (f == NULL || f->type != jbvBinary || !JsonContainerIsObject(f->val.binary.data))
			continue;
		fname = json_get_string(f->val.binary.data, "field");
		if (fname != NULL && strcmp(fname, name) == 0)
			return f->val.binary.data;
	}
	return NULL;
}

/* ---- messages ---- */

static Jsonb *
parse_json(const char *data, size_t len)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(pnstrdup(data, len))));
}

static char *
scratch_for(CdcRoutes *routes, size_t len)
{
	if (len > routes->scratch_size)
	{
		routes->scratch_size = Max(len, 2 * routes->scratch_size);
		routes->scratch = MemoryContextAlloc(routes->cxt, routes->scratch_size);
	}
	return routes->scratch;
}

static bool
scan_object(CdcRoutes *routes, const char *data, size_t len, EoiJsonFieldFn field, void *arg)
{
	return eoi_json_scan_object(data, len, scratch_for(routes, len),
								GetDatabaseEncoding() == PG_UTF8, field, arg);
}

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

static bool
take_member(void *arg, const char *key, size_t key_len, const EoiJsonToken *value)
{
	MemberScan *ms = arg;

	for (int i = 0; i < ms->n; i++)
	{
		Member	   *m = &ms->members[i];

		if (strlen(m->name) == key_len && memcmp(m->name, key, key_len) == 0)
		{
			m->found = true;
			m->value = *value;
			return true;
		}
	}
	ms->other = true;
	return !ms->stop_at_other;
}

/* Scan an object for these members; false if the scan declines (or stops). */
static bool
scan_members(CdcRoutes *routes, const char *data, size_t len, MemberScan *ms)
{
	for (int i = 0; i < ms->n; i++)
		ms->members[i].found = false;
	ms->other = false;
	return scan_object(routes, data, len, take_member, ms);
}

static bool
is_object_or_null(const EoiJsonToken *t)
{
	return t->kind == EOI_JSON_NULL || (t->kind == EOI_JSON_NESTED && t->data[0] == '{');
}

static void
set_schema(EventJson *ev, JsonbContainer *schema)
{
	ev->schema = schema;
	ev->before_schema = schema_field(schema, "before");
	ev->after_schema = schema_field(schema, "after");
}

static void
use_cached_schema(EventJson *ev, const CachedSchema *cs)
{
	ev->schema = cs->schema;
	ev->before_schema = cs->before;
	ev->after_schema = cs->after;
	ev->serial = cs->serial;
}

/*
 * The wrapper's schema of this text: from the batch's cache, where it is
 * parsed the first time it comes.  Once the cache is full, a new schema is
 * the event's own, in the event's memory, so that a stream of distinct
 * schemas cannot grow the batch's.
 */
static void
cached_schema(CdcRoutes *routes, const char *text, size_t len, EventJson *ev)
{
	CachedSchema *cs;
	MemoryContext old;

	for (int i = 0; i < routes->nschemas; i++)
	{
		cs = &routes->schemas[i];
		if (cs->len == len && memcmp(cs->text, text, len) == 0)
		{
			use_cached_schema(ev, cs);
			return;
		}
	}
	if (routes->nschemas == SCHEMA_CACHE_SIZE)
	{
		set_schema(ev, &parse_json(text, len)->root);
		return;
	}
	old = MemoryContextSwitchTo(routes->cxt);
	cs = &routes->schemas[routes->nschemas];
	cs->text = pnstrdup(text, len);
	cs->len = len;
	set_schema(ev, &parse_json(text, len)->root);
	cs->schema = ev->schema;
	cs->before = ev->before_schema;
	cs->after = ev->after_schema;
	cs->serial = ev->serial = ++routes->nschemas;
	MemoryContextSwitchTo(old);
}

static bool
is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

#define WRAPPER_HEAD "{\"schema\":"
#define WRAPPER_MIDDLE ",\"payload\":"

/*
 * The wrapper as JsonConverter writes it, around a schema of the cache:
 * {"schema":<cached>,"payload":<payload>}.  Then the payload is all that is
 * left to read (ev->text): the schema's text is known to be valid JSON, so
 * the message is valid JSON if its payload is, which the scan of the
 * payload checks.  *checked is how many of the message's first bytes are
 * known to be valid in the database encoding: the wrapper's head and the
 * schema, checked when the schema came first.  False if the message is
 * not of this shape.
 */
static bool
known_wrapper(CdcRoutes *routes, const char *data, size_t len, EventJson *ev, size_t *checked)
{
	size_t		head = strlen(WRAPPER_HEAD);
	size_t		middle = strlen(WRAPPER_MIDDLE);

	if (len < head || memcmp(data, WRAPPER_HEAD, head) != 0)
		return false;
	while (len > 0 && is_json_space(data[len - 1]))
		len--;
	for (int i = 0; i < routes->nschemas; i++)
	{
		const CachedSchema *cs = &routes->schemas[i];

		if (head + cs->len + middle < len && data[len - 1] == '}' &&
			memcmp(data + head, cs->text, cs->len) == 0 &&
			memcmp(data + head + cs->len, WRAPPER_MIDDLE, middle) == 0)
		{
			const char *payload = data + head + cs->len + middle;
			const char *end = data + len - 1;	/* the wrapper's closing brace */

			while (payload < end && is_json_space(*payload))
				payload++;
			while (end > payload && is_json_space(end[-1]))
				end--;
			if (end - payload == 4 && memcmp(payload, "null", 4) == 0)
				ev->null_payload = true;
			else if (*payload != '{')
				return false;
			use_cached_schema(ev, cs);
			ev->text = ev->null_payload ? NULL : payload;
			ev->len = end - payload;
			ev->whole = data;
			ev->whole_len = len;
			*checked = head + cs->len;
			return true;
		}
	}
	return false;
}

/*
 * Split a message (value or key) into its payload and its schema.  The
 * payload is left as text (ev->text) when it may be read part by part:
 * Kafka Connect's wrapper around a known schema (known_wrapper), any other
 * wrapper that jsonscan.c reads (its schema then parsed once per batch), or
 * a message without wrapper, which is all payload.  A wrapper's null
 * payload is ev->null_payload.  A message the scan declines (whose errors
 * are then jsonb_in's) is parsed whole into ev->payload, as is a wrapper
 * whose members are not objects (unwrap reports them).
 *
 * Format avro (Debezium with an Avro converter): avro.c renders the record
 * with the writer's schema as JSON, its logical types (decimal, date,
 * timestamps, uuid), Debezium's time types named by "connect.name", and
 * bytes already as PostgreSQL's text of them; from then on the event is a
 * bare JSON event, through the same code as format json.  That is less
 * code than a second path for decoded Avro values, and keeps one set of
 * semantics.
 */
static void
split_message(CdcRoutes *routes, rd_kafka_message_t *msg, bool key, EventJson *ev)
{
	const char *data = key ? msg->key : msg->payload;
	size_t		len = key ? msg->key_len : msg->len;
	Member		w[2] = {{"schema"}, {"payload"}};
	MemberScan	wrapper = {w, 2, true, false};
	Jsonb	   *jb;
	size_t		checked;

	memset(ev, 0, sizeof(*ev));
	if (routes->job->format == EOI_FORMAT_AVRO)
	{
		data = eoi_avro_framed(msg, key, true, &len);
		data = eoi_avro_json(data, len);
		len = strlen(data);
	}
	eoi_json_unframe(&data, &len);	/* Confluent's JsonSchemaConverter */
	if (known_wrapper(routes, data, len, ev, &checked))
	{
		(void) pg_verifymbstr(data + checked, (int) (len - checked), false);
		return;
	}
	(void) pg_verifymbstr(data, (int) len, false);
	/* a wrapper has both members (either may be null), and no other */
	if (scan_members(routes, data, len, &wrapper) && w[0].found && w[1].found &&
		is_object_or_null(&w[0].value) && is_object_or_null(&w[1].value))
	{
		if (w[0].value.kind != EOI_JSON_NULL)
			cached_schema(routes, w[0].value.data, w[0].value.len, ev);
		if (w[1].value.kind == EOI_JSON_NULL)
			ev->null_payload = true;
		else
		{
			ev->text = w[1].value.data;
			ev->len = w[1].value.len;
		}
		return;
	}
	if (wrapper.other)
	{
		/* no wrapper: the whole message is the payload, if it is an object */
		ev->text = data;
		ev->len = len;
		return;
	}
	jb = parse_json(data, len);
	ev->not_object = !JB_ROOT_IS_OBJECT(jb);
	ev->payload = unwrap(jb, &ev->schema);
	ev->null_payload = ev->payload == NULL && !ev->not_object;
	set_schema(ev, ev->schema);
}

/*
 * The payload as jsonb: a message key's, or a change event's when its
 * parts are not enough; NULL if it is null or no object (ev->not_object).
 * The text of a payload that known_wrapper found is checked first: if the
 * scan declines it, the whole message is parsed, so that its errors are
 * those of the message, as without the shortcut.
 */
static JsonbContainer *
payload_object(CdcRoutes *routes, EventJson *ev)
{
	MemberScan	any = {NULL, 0, false, false};
	Jsonb	   *jb;

	if (ev->payload != NULL || ev->text == NULL)
		return ev->payload;
	if (ev->whole != NULL && !scan_members(routes, ev->text, ev->len, &any))
	{
		JsonbContainer *schema;

		jb = parse_json(ev->whole, ev->whole_len);
		ev->not_object = !JB_ROOT_IS_OBJECT(jb);
		ev->payload = unwrap(jb, &schema);
	}
	else
	{
		jb = parse_json(ev->text, ev->len);
		ev->not_object = !JB_ROOT_IS_OBJECT(jb);
		ev->payload = ev->not_object ? NULL : &jb->root;
	}
	ev->text = NULL;
	ev->whole = NULL;
	return ev->payload;
}

/* An image member: true if it is an object, null or absent. */
static bool
is_image(const Member *m)
{
	return !m->found || m->value.kind == EOI_JSON_NULL ||
		(m->value.kind == EOI_JSON_NESTED && m->value.data[0] == '{');
}

static bool
has_image(const Member *m)
{
	return m->found && m->value.kind == EOI_JSON_NESTED;
}

/*
 * A change event's op and images, read from the payload's text by one
 * scan: the images are kept as text, parsed later only if they must be
 * (old_key, add_after); the source block is kept as text (event_position),
 * the rest is not read.
 * Falls back to the payload as jsonb (the member functions then read it,
 * with their errors) when the scan declines, when op is a number (whose
 * text json_get_string takes from numeric_out), or when an image is
 * neither an object nor null.
 */
static void
event_parts(CdcRoutes *routes, EventJson *ev)
{
	Member		m[4] = {{"op"}, {"before"}, {"after"}, {"source"}};
	MemberScan	parts = {m, 4, false, false};
	const Member *op = &m[0];
	const Member *before = &m[1];
	const Member *after = &m[2];
	const Member *source = &m[3];

	if (ev->text == NULL || !scan_members(routes, ev->text, ev->len, &parts))
		return;
	ev->whole = NULL;			/* the text is checked */
	if (op->found && op->value.kind == EOI_JSON_NUMBER)
		return;
	if (!is_image(before) || !is_image(after))
		return;
	if (has_image(before))
	{
		ev->before_text = before->value.data;
		ev->before_len = before->value.len;
	}
	if (has_image(after))
	{
		ev->after_text = after->value.data;
		ev->after_len = after->value.len;
	}
	if (has_image(source) && source->value.data[0] == '{')
	{
		ev->source_text = source->value.data;
		ev->source_len = source->value.len;
	}
	/* as json_get_string: a string, else (null, true, false, nested) none */
	ev->op = (op->found && op->value.kind == EOI_JSON_STRING) ?
		pnstrdup(op->value.data, op->value.len) : NULL;
	ev->has_parts = true;
}

/* ---- codecs ---- */

static int
schema_int_parameter(JsonbContainer *field, const char *name, int otherwise)
{
	JsonbContainer *params = json_get_object(field, "parameters");
	char	   *s = params ? json_get_string(params, name) : NULL;

	return s ? pg_strtoint32(s) : otherwise;
}

/* The codec of a field, from its Connect schema. */
static FieldCodec
codec_from_schema(JsonbContainer *field, Oid coltype)
{
	FieldCodec	fc = {CONV_NONE, 0, coltype == TIMESTAMPTZOID};
	char	   *name = json_get_string(field, "name");
	char	   *type = json_get_string(field, "type");
	static const struct
	{
		const char *name;
		Conversion	conv;
	}			names[] = {
		{"io.debezium.time.Date", CONV_DAYS},
		{"org.apache.kafka.connect.data.Date", CONV_DAYS},
		{"io.debezium.time.Time", CONV_TIME_MS},
		{"org.apache.kafka.connect.data.Time", CONV_TIME_MS},
		{"io.debezium.time.MicroTime", CONV_TIME_US},
		{"io.debezium.time.NanoTime", CONV_TIME_NS},
		{"io.debezium.time.Timestamp", CONV_TIMESTAMP_MS},
		{"org.apache.kafka.connect.data.Timestamp", CONV_TIMESTAMP_MS},
		{"io.debezium.time.MicroTimestamp", CONV_TIMESTAMP_US},
		{"io.debezium.time.NanoTimestamp", CONV_TIMESTAMP_NS},
		{"io.debezium.time.MicroDuration", CONV_INTERVAL_US},
		{"org.apache.kafka.connect.data.Decimal", CONV_DECIMAL},
		{"io.debezium.data.VariableScaleDecimal", CONV_VARIABLE_DECIMAL},
		{"io.debezium.data.Bits", CONV_BITS},
	};

	/* ZonedTimestamp, ZonedTime, Json, Uuid, Enum, Xml: strings as they are */
	if (name != NULL)
	{
		for (int i = 0; i < lengthof(names); i++)
			if (strcmp(names[i].name, name) == 0)
				fc.conv = names[i].conv;
		if (fc.conv == CONV_DECIMAL)
			fc.param = schema_int_parameter(field, "scale", 0);
		else if (fc.conv == CONV_BITS)
			fc.param = schema_int_parameter(field, "length", -1);
	}
	else if (type != NULL && strcmp(type, "bytes") == 0)
		fc.conv = CONV_BYTES;
	return fc;
}

/* Declared fractional-second precision of a time or timestamp type, 6 if none. */
static int
time_precision(int32 typmod)
{
	return typmod >= 0 ? typmod : 6;
}

/*
 * The codec of a field without a schema: what Debezium's defaults
 * (time.precision.mode adaptive, decimal.handling.mode precise,
 * binary.handling.mode bytes) produce for a column of the target's type,
 * given the JSON value's type.
 */
static FieldCodec
codec_from_column(Oid coltype, int32 typmod, JsonbValue *v)
{
	FieldCodec	fc = {CONV_NONE, 0, coltype == TIMESTAMPTZOID};

	if (v == NULL)
		return fc;
	if (v->type == jbvNumeric)
	{
		switch (coltype)
		{
			case DATEOID:
				fc.conv = CONV_DAYS;
				break;
			case TIMEOID:
				fc.conv = time_precision(typmod) <= 3 ? CONV_TIME_MS : CONV_TIME_US;
				break;
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
				fc.conv = time_precision(typmod) <= 3 ? CONV_TIMESTAMP_MS : CONV_TIMESTAMP_US;
				break;
			case INTERVALOID:
				fc.conv = CONV_INTERVAL_US;
				break;
		}
	}
	else if (v->type == jbvString)
	{
		switch (coltype)
		{
			case BYTEAOID:
				fc.conv = CONV_BYTES;
				break;
			case NUMERICOID:
				/* with a declared scale, a string that is no number is base64 */
				if (typmod >= (int32) VARHDRSZ)
				{
					fc.conv = CONV_DECIMAL;
					fc.param = (int16) ((typmod - VARHDRSZ) & 0xffff);
				}
				break;
			case BITOID:
			case VARBITOID:
				fc.conv = CONV_BITS;
				fc.param = typmod > 0 ? typmod : -1;
				break;
		}
	}
	else if (v->type == jbvBinary && coltype == NUMERICOID)
		fc.conv = CONV_VARIABLE_DECIMAL;
	return fc;
}

/* ---- conversions ---- */

static int64
integer_field(const char *s, const char *what)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid %s \"%s\": an integer is expected", what, s)));
	return (int64) v;
}

/* Is `s` an integer (a value not yet converted)? */
static bool
is_integer(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '\0')
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Is `s` already a number (decimal.handling.mode string or double)? */
static bool
is_number(const char *s)
{
	if (strcmp(s, "NaN") == 0 || strcmp(s, "Infinity") == 0 || strcmp(s, "-Infinity") == 0)
		return true;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || *s == '.' || *s == '-' || *s == '+' || *s == 'e' || *s == 'E'))
			return false;
	return true;
}

static unsigned char *
base64_field(const char *s, int *len, const char *what)
{
	int			slen = strlen(s);
	unsigned char *bytes = palloc(pg_b64_dec_len(slen) + 1);

	*len = pg_b64_decode(s, slen, (char *) bytes, pg_b64_dec_len(slen));
	if (*len < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid base64 %s \"%s\"", what, s)));
	return bytes;
}

static int64
floor_div(int64 v, int64 d)
{
	return v / d - ((v % d != 0 && (v < 0)) ? 1 : 0);
}

static char *
days_text(int64 days)
{
	DateADT		d = (DateADT) (days - (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE));
	struct pg_tm tm;
	char		buf[MAXDATELEN + 1];

	if (days < -(int64) 100000000 || days > (int64) 100000000 || !IS_VALID_DATE(d))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("date of %lld days since 1970-01-01 is out of range", (long long) days)));
	j2date(d + POSTGRES_EPOCH_JDATE, &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
	EncodeDateOnly(&tm, USE_ISO_DATES, buf);
	return pstrdup(buf);
}

static char *
time_text(int64 usecs)
{
	struct pg_tm tm;
	fsec_t		fsec;
	char		buf[MAXDATELEN + 1];

	if (usecs < 0 || usecs > USECS_PER_DAY)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("time of %lld microseconds is out of range", (long long) usecs)));
	time2tm((TimeADT) usecs, &tm, &fsec);
	EncodeTimeOnly(&tm, fsec, false, 0, USE_ISO_DATES, buf);
	return pstrdup(buf);
}

static char *
timestamp_text(int64 unix_usecs, bool zoned)
{
	Timestamp	ts;
	struct pg_tm tm;
	fsec_t		fsec;
	char		buf[MAXDATELEN + 8];

	if (pg_sub_s64_overflow(unix_usecs,
							(int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY, &ts) ||
		!IS_VALID_TIMESTAMP(ts) || timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("timestamp of %lld microseconds since 1970 is out of range", (long long) unix_usecs)));
	EncodeDateTime(&tm, fsec, false, 0, NULL, USE_ISO_DATES, buf);
	if (zoned)
		strcat(buf, "+00");
	return pstrdup(buf);
}

/* Connect's Decimal: the unscaled value's bytes, the scale from the schema. */
static char *
decimal_text(const unsigned char *bytes, int len, int64 scale)
{
	StringInfoData out;

	initStringInfo(&out);
	eoi_append_decimal(&out, bytes, len, scale);
	return out.data;
}

static char *
variable_decimal_text(const char *json)
{
	Jsonb	   *jb = parse_json(json, strlen(json));
	char	   *scale = JB_ROOT_IS_OBJECT(jb) ? json_get_string(&jb->root, "scale") : NULL;
	char	   *value = JB_ROOT_IS_OBJECT(jb) ? json_get_string(&jb->root, "value") : NULL;
	unsigned char *bytes;
	int			len;

	if (scale == NULL || value == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid variable scale decimal %s", json),
				 errhint("Debezium's VariableScaleDecimal is an object {\"scale\": ..., \"value\": base64}.")));
	bytes = base64_field(value, &len, "decimal");
	return decimal_text(bytes, len, integer_field(scale, "decimal scale"));
}

static char *
bytes_text(const char *s)
{
	int			len;
	unsigned char *bytes = base64_field(s, &len, "bytes");
	char	   *out = palloc(len * 2 + 3);

	out[0] = '\\';
	out[1] = 'x';
	hex_encode((char *) bytes, len, out + 2);
	out[len * 2 + 2] = '\0';
	return out;
}

/* Debezium's Bits: a Java BitSet's bytes, bit 0 the least significant. */
static char *
bits_text(const char *s, int length)
{
	int			len;
	unsigned char *bytes = base64_field(s, &len, "bits");
	StringInfoData out;

	initStringInfo(&out);
	eoi_append_bits(&out, bytes, len, length);
	return out.data;
}

/*
 * The text of a field as the column's input reads it.  A value that is not
 * in the encoding the codec expects but already in the column's (another
 * decoder converted it, or Debezium was told to send strings) passes as it
 * is; a malformed one is this record's error.
 */
static char *
convert_field(const FieldCodec *fc, char *s)
{
	switch (fc->conv)
	{
		case CONV_NONE:
			return s;
		case CONV_DAYS:
			return is_integer(s) ? days_text(integer_field(s, "date")) : s;
		case CONV_TIME_MS:
			return is_integer(s) ? time_text(integer_field(s, "time") * 1000) : s;
		case CONV_TIME_US:
			return is_integer(s) ? time_text(integer_field(s, "time")) : s;
		case CONV_TIME_NS:
			return is_integer(s) ? time_text(floor_div(integer_field(s, "time"), 1000)) : s;
		case CONV_TIMESTAMP_MS:
			{
				int64		ms;
				int64		us;

				if (!is_integer(s))
					return s;
				ms = integer_field(s, "timestamp");
				if (pg_mul_s64_overflow(ms, 1000, &us))
					ereport(ERROR,
							(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
							 errmsg("timestamp of %lld milliseconds since 1970 is out of range", (long long) ms)));
				return timestamp_text(us, fc->zoned);
			}
		case CONV_TIMESTAMP_US:
			return is_integer(s) ? timestamp_text(integer_field(s, "timestamp"), fc->zoned) : s;
		case CONV_TIMESTAMP_NS:
			return is_integer(s) ? timestamp_text(floor_div(integer_field(s, "timestamp"), 1000), fc->zoned) : s;
		case CONV_INTERVAL_US:
			return is_integer(s) ? psprintf("%s microseconds", s) : s;
		case CONV_DECIMAL:
			{
				unsigned char *bytes;
				int			len;

				if (is_number(s))
					return s;
				bytes = base64_field(s, &len, "decimal");
				return decimal_text(bytes, len, fc->param);
			}
		case CONV_VARIABLE_DECIMAL:
			return s[0] == '{' ? variable_decimal_text(s) : s;
		case CONV_BYTES:
			return (s[0] == '\\' && s[1] == 'x') ? s : bytes_text(s);
		case CONV_BITS:
			return strspn(s, "01") == strlen(s) && (fc->param < 0 || (int) strlen(s) == fc->param) ?
				s : bits_text(s, fc->param);
	}
	return s;
}

static void
converting_field(EoiRowWriter *writer, int col, const char *data, size_t len)
{
	ConvertingWriter *cw = (ConvertingWriter *) writer;
	char	   *s = NULL;

	if (data != NULL)
		s = convert_field(&cw->codecs[col], pnstrdup(data, len));
	cw->fields[col] = s;
	if (cw->inner != NULL)
		cw->inner->field(cw->inner, col, s, s ? strlen(s) : 0);
}

static void
converting_end_row(EoiRowWriter *writer)
{
	ConvertingWriter *cw = (ConvertingWriter *) writer;

	if (cw->inner != NULL)
		cw->inner->end_row(cw->inner);
}

static void
converting_writer_init(ConvertingWriter *cw, EoiRowWriter *inner, FieldCodec *codecs, int ncolumns)
{
	cw->writer.field = converting_field;
	cw->writer.datum = NULL;
	cw->writer.end_row = converting_end_row;
	cw->inner = inner;
	cw->codecs = codecs;
	cw->ncolumns = ncolumns;
	cw->fields = palloc0(sizeof(char *) * Max(ncolumns, 1));
}

/* ---- events ---- */

/*
 * The codecs of `cols` for an image, from its struct schema or the target.
 * *tag says which codecs `codecs` holds; want: the CODECS_TAG of this
 * image's schema, 0 if it is not cached.
 */
static void
image_codecs(CdcContext *cx, EoiColumns *cols, FieldCodec *codecs, int *tag, int want,
			 JsonbContainer *struct_schema, JsonbContainer *image)
{
	TupleDesc	desc = RelationGetDescr(cx->rel);
	bool		from_schema = true;

	if (cx->job->format == EOI_FORMAT_AVRO)
	{
		/* avro.c wrote each value as the column type reads it */
		if (*tag != -1)
			memset(codecs, 0, sizeof(FieldCodec) * cols->ncolumns);	/* CONV_NONE */
		*tag = -1;
		return;
	}
	if (want != 0 && *tag == want)
		return;
	for (int c = 0; c < cols->ncolumns; c++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnameAttNum(cx->rel, cols->colnames[c], false) - 1);
		JsonbContainer *field = schema_field(struct_schema, cols->colnames[c]);
		JsonbValue	v;

		if (field != NULL)
			codecs[c] = codec_from_schema(field, att->atttypid);
		else
		{
			codecs[c] = codec_from_column(att->atttypid, att->atttypmod,
										  json_get(image, cols->colnames[c], &v));
			from_schema = false;
		}
	}
	/* codecs that depend on the image's values are for this image only */
	*tag = from_schema ? want : 0;
}

static int
codecs_tag(const EventJson *ev, int kind)
{
	return ev->serial != 0 ? CODECS_TAG(ev->serial, kind) : 0;
}

/* Every field of the after image must be a column of the target. */
static void
check_image_fields(CdcContext *cx, JsonbContainer *image)
{
	JsonbIterator *it = JsonbIteratorInit(image);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		bool		found = false;

		if (tok != WJB_KEY)
			continue;
		for (int c = 0; c < cx->cols->ncolumns && !found; c++)
			found = strlen(cx->cols->colnames[c]) == v.val.string.len &&
				memcmp(cx->cols->colnames[c], v.val.string.val, v.val.string.len) == 0;
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("field \"%.*s\" of the change event's after image is not a column of \"%s\"",
							(int) v.val.string.len, v.val.string.val, RelationGetRelationName(cx->rel)),
					 errhint("The target must have a column for every column of the source table: add it, or drop it from the capture.")));
	}
}

/* Error unless each key field is there and not null. */
static void
check_key_fields(CdcContext *cx, char **fields, const int *positions, const char *where)
{
	for (int k = 0; k < cx->keys->ncolumns; k++)
		if (fields[positions ? positions[k] : k] == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("change event has no key: no value for key column \"%s\" in %s",
							cx->keys->colnames[k], where),
					 errhint("The key columns (key_columns, or the target's primary key) must be in the event's images or its message key.")));
}

/*
 * Decode the key of an image (the before image, or the message key) into
 * `cw`, which keeps it (and passes it on if it has an inner writer).  The
 * image comes parsed (`object`), or as the text of an object that a scan
 * has checked: that is read as format json reads a message once the
 * image's schema has given the codecs `kc` keeps, and parsed otherwise
 * (jsonb_in of a key of a few bytes costs more than the rest of its
 * event).  Returns false if the image lacks a key column.
 */
static bool
decode_key(CdcContext *cx, KeyCodecs *kc, JsonbContainer *object, const char *text,
		   size_t len, JsonbContainer *struct_schema, int tag, ConvertingWriter *cw)
{
	cw->codecs = kc->codecs;
	if (object == NULL && cx->job->format == EOI_FORMAT_JSON && tag != 0 && kc->tag == tag)
		eoi_decode_json_text(cx->keys, text, len, &cw->writer, cx->econtext);
	else
	{
		if (object == NULL)
			object = &parse_json(text, len)->root;
		image_codecs(cx, cx->keys, kc->codecs, &kc->tag, tag, struct_schema, object);
		eoi_decode_json_object(cx->keys, object, &cw->writer, cx->econtext);
	}
	for (int k = 0; k < cx->keys->ncolumns; k++)
		if (cw->fields[k] == NULL)
			return false;
	return true;
}

/*
 * Is the payload an object whose text may be read as it is?  A payload
 * that known_wrapper found is scanned first, as payload_object does, so
 * that a payload the scan declines is parsed with the whole message.
 */
static bool
payload_text_checked(CdcRoutes *routes, EventJson *ev)
{
	MemberScan	any = {NULL, 0, false, false};

	if (ev->payload != NULL || ev->text == NULL || ev->text[0] != '{')
		return false;
	if (ev->whole != NULL && !scan_members(routes, ev->text, ev->len, &any))
		return false;
	ev->whole = NULL;			/* the text is checked */
	return true;
}

/*
 * The old key of an update or delete: of the before image if it has one
 * (`before` parsed, or the text event_parts kept), else of the message
 * key.  Returns false if neither has.
 */
static bool
old_key(CdcContext *cx, rd_kafka_message_t *msg, JsonbContainer *before,
		const EventJson *ev, ConvertingWriter *cw)
{
	EventJson	key;
	int			tag;

	if ((before != NULL || ev->before_text != NULL) &&
		decode_key(cx, &cx->before_key, before, ev->before_text, ev->before_len,
				   ev->before_schema, codecs_tag(ev, IMAGE_BEFORE), cw))
		return true;
	if (msg->key == NULL || msg->key_len == 0)
		return false;
	split_message(cx->routes, msg, true, &key);
	tag = codecs_tag(&key, IMAGE_KEY);
	if (payload_text_checked(cx->routes, &key))
		return decode_key(cx, &cx->message_key, NULL, key.text, key.len, key.schema, tag, cw);
	return payload_object(cx->routes, &key) != NULL &&
		decode_key(cx, &cx->message_key, key.payload, NULL, 0, key.schema, tag, cw);
}

static bool
same_key_text(CdcContext *cx, char **key, char **row)
{
	for (int k = 0; k < cx->keys->ncolumns; k++)
		if (strcmp(key[k], row[cx->keypos[k]]) != 0)
			return false;
	return true;
}

/*
 * Debezium's stand-in for a value it could not read: with replica identity
 * default, an update that leaves a TOASTed column unchanged carries no value
 * for it, and the after image has this (unavailable.value.placeholder's
 * default) as text, or its bytes (base64) for a bytes field, or an array of
 * it. Storing it would silently replace the row's real value.
 */
#define DBZ_UNAVAILABLE "__debezium_unavailable_value"
#define DBZ_UNAVAILABLE_BASE64 "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="

static bool
is_unavailable_string(const JsonbValue *v)
{
	return v->type == jbvString &&
		((v->val.string.len == strlen(DBZ_UNAVAILABLE) &&
		  memcmp(v->val.string.val, DBZ_UNAVAILABLE, v->val.string.len) == 0) ||
		 (v->val.string.len == strlen(DBZ_UNAVAILABLE_BASE64) &&
		  memcmp(v->val.string.val, DBZ_UNAVAILABLE_BASE64, v->val.string.len) == 0));
}

static bool
is_unavailable(const JsonbValue *v)
{
	JsonbContainer *array;

	if (is_unavailable_string(v))
		return true;
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return false;
	array = v->val.binary.data;
	return JsonContainerSize(array) == 1 &&
		is_unavailable_string(getIthJsonbValueFromContainer(array, 0));
}

/* Error if a field of an update's after image is Debezium's placeholder. */
static void
check_available(CdcContext *cx, JsonbContainer *after)
{
	JsonbIterator *it = JsonbIteratorInit(after);
	JsonbValue	v;
	JsonbValue	key = {0};
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			key = v;
		else if (tok == WJB_VALUE && is_unavailable(&v))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("field \"%.*s\" of the change event's after image is Debezium's placeholder \"%s\", not a value",
							(int) key.val.string.len, key.val.string.val, DBZ_UNAVAILABLE),
					 errdetail("Debezium sends it for a TOASTed column that an update leaves unchanged when the source table has replica identity default; the row of \"%s\" is left as it was.",
							   RelationGetRelationName(cx->rel)),
					 errhint("Set REPLICA IDENTITY FULL on the source table, so that Debezium sends the value; then replay this dead letter or re-snapshot the table.")));
	}
}

/*
 * What add_after's shortcut needs to know of an after image's text: that
 * its every key is a column of the target, once, and that no value of an
 * update may be Debezium's placeholder (see check_available).
 */
typedef struct ImageKeys
{
	CdcContext *cx;
	bool		update;
	bool	   *seen;
	bool		clean;
} ImageKeys;

/*
 * Could the value be Debezium's placeholder, or an array of it: a string
 * holding it (unescaped) or its base64, or a nested value holding either
 * or any escape.
 */
static bool
may_be_placeholder(const EoiJsonToken *v)
{
	if (v->kind != EOI_JSON_STRING && v->kind != EOI_JSON_NESTED)
		return false;
	return memmem(v->data, v->len, DBZ_UNAVAILABLE, strlen(DBZ_UNAVAILABLE)) != NULL ||
		memmem(v->data, v->len, DBZ_UNAVAILABLE_BASE64, strlen(DBZ_UNAVAILABLE_BASE64)) != NULL ||
		(v->kind == EOI_JSON_NESTED && memchr(v->data, '\\', v->len) != NULL);
}

static bool
image_key(void *arg, const char *key, size_t key_len, const EoiJsonToken *value)
{
	ImageKeys  *ik = arg;
	EoiColumns *cols = ik->cx->cols;
	int			c;

	for (c = 0; c < cols->ncolumns; c++)
		if (strlen(cols->colnames[c]) == key_len && memcmp(cols->colnames[c], key, key_len) == 0)
			break;
	if (c == cols->ncolumns || ik->seen[c])
		return ik->clean = false;
	ik->seen[c] = true;
	if (ik->update && may_be_placeholder(value))
		return ik->clean = false;
	return true;
}

/*
 * True if the after image's text may be decoded as it is: its keys are
 * the target's columns, each once, none holds what could be the
 * placeholder, and the codecs kept are this image's.  Anything else takes
 * the image as jsonb, with its checks and their errors.
 */
static bool
image_is_plain(CdcContext *cx, const EventJson *ev, bool update)
{
	ImageKeys	ik = {cx, update, cx->seen, true};
	int			want = codecs_tag(ev, IMAGE_AFTER);

	if (ev->after_text == NULL || cx->job->format != EOI_FORMAT_JSON ||
		want == 0 || cx->col_codecs_tag != want)
		return false;
	memset(cx->seen, 0, sizeof(bool) * cx->cols->ncolumns);
	return scan_object(cx->routes, ev->after_text, ev->after_len, image_key, &ik) && ik.clean;
}

/*
 * The after image as the row to upsert; its fields are kept in *row.  An
 * update's image is checked for Debezium's placeholder first.
 */
static void
add_after(CdcContext *cx, JsonbContainer *after, EventJson *ev, bool update, char ***row)
{
	ConvertingWriter cw;

	converting_writer_init(&cw, eoi_changes_row_writer(cx->changes), cx->col_codecs, cx->cols->ncolumns);
	if (after == NULL && image_is_plain(cx, ev, update))
		eoi_decode_json_text(cx->cols, ev->after_text, ev->after_len, &cw.writer, cx->econtext);
	else
	{
		if (after == NULL)
			after = &parse_json(ev->after_text, ev->after_len)->root;
		if (update)
			check_available(cx, after);
		check_image_fields(cx, after);
		image_codecs(cx, cx->cols, cx->col_codecs, &cx->col_codecs_tag, codecs_tag(ev, IMAGE_AFTER),
					 ev->after_schema, after);
		eoi_decode_json_object(cx->cols, after, &cw.writer, cx->econtext);
	}
	check_key_fields(cx, cw.fields, cx->keypos, "the after image");
	cw.writer.end_row(&cw.writer);
	*row = cw.fields;
}

/*
 * A truncate event deletes every row of the target, with DELETE rather than
 * TRUNCATE: it stays in the batch's transaction like every other change,
 * takes no exclusive lock, and the target stays open for the rest of the
 * batch (TRUNCATE refuses a table in use by the session).
 */
static void
truncate_target(CdcContext *cx)
{
	int			current;

	if (!cx->job->cdc_truncate)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("change event truncates the source table, and job \"%s\" refuses truncate events",
						cx->job->name),
				 errhint("To let truncate events empty the target, alter the job with on_truncate => 'truncate'; then replay this dead letter.")));
	/*
	 * The changes before the truncate go first, and are deleted with the
	 * rest; an error in them is not the truncate event's.
	 */
	current = cx->position->current;
	cx->position->current = -1;
	(void) eoi_changes_apply(cx->changes);
	cx->position->current = current;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(psprintf("DELETE FROM %s", cx->target), false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not empty %s", cx->target);
	SPI_finish();
}

/*
 * The event's position in the source's log, when cdcreplay.c can compare
 * it: Debezium's PostgreSQL connector's source.sequence, on any op but a
 * snapshot read.  From the source block's text when event_parts kept it and
 * it scans, else from the payload as jsonb.
 */
static bool
event_position(CdcRoutes *routes, EventJson *ev, const char *op, EoiSourcePosition *pos)
{
	JsonbContainer *event;
	JsonbContainer *source;
	char	   *connector;
	char	   *sequence;

	if (strcmp(op, "r") == 0)
		return false;
	if (ev->has_parts)
	{
		Member		m[2] = {{"connector"}, {"sequence"}};
		MemberScan	ms = {m, 2, false, false};

		if (ev->source_text == NULL)
			return false;		/* no source block, or one that is no object */
		if (scan_members(routes, ev->source_text, ev->source_len, &ms))
			return m[0].found && m[0].value.kind == EOI_JSON_STRING &&
				m[0].value.len == strlen("postgresql") &&
				memcmp(m[0].value.data, "postgresql", m[0].value.len) == 0 &&
				m[1].found && m[1].value.kind == EOI_JSON_STRING &&
				eoi_parse_source_sequence(m[1].value.data, m[1].value.len, pos);
	}
	if ((event = payload_object(routes, ev)) == NULL ||
		(source = json_get_object(event, "source")) == NULL)
		return false;
	connector = json_get_string(source, "connector");
	sequence = json_get_string(source, "sequence");
	return connector != NULL && strcmp(connector, "postgresql") == 0 &&
		sequence != NULL && eoi_parse_source_sequence(sequence, strlen(sequence), pos);
}

static CdcContext *route_event(CdcRoutes *routes, EventJson *ev);

/* Add one change event to the change set of its target. */
static void
apply_event(CdcRoutes *routes, rd_kafka_message_t *msg)
{
	EventJson	ev;
	JsonbContainer *event = NULL;
	JsonbContainer *before;
	JsonbContainer *after;
	char	   *op;
	char	  **row;
	CdcContext *cx;
	EoiSourcePosition pos;

	split_message(routes, msg, false, &ev);
	if (ev.null_payload)
		return;					/* {"schema": ..., "payload": null}: a tombstone */
	event_parts(routes, &ev);
	if (!ev.has_parts && (event = payload_object(routes, &ev)) == NULL)
	{
		if (!ev.not_object)
			return;				/* a wrapper around a null payload */
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("change event is not a JSON object"),
				 errhint("With envelope debezium every message is a Debezium change event, with the schema wrapper or without.")));
	}
	op = ev.has_parts ? ev.op : json_get_string(event, "op");
	if (op == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("change event has no \"op\""),
				 errhint("A Debezium change event has op c, r, u, d or t.")));
	if (routes->replays != NULL && event_position(routes, &ev, op, &pos) &&
		eoi_replay_filter_skip(routes->replays,
							   eoi_message_topic(routes->position->batch, routes->position->current),
							   msg->partition, &pos))
		return;					/* applied already: Debezium sent it again */
	cx = route_event(routes, &ev);
	/* a snapshot read stands alone; a change belongs to a source transaction */
	if (routes->job->source_transactions && strcmp(op, "r") != 0 &&
		!eoi_cdc_has_transaction(payload_object(routes, &ev)))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("change event of op \"%s\" has no transaction block, and job \"%s\" commits at source transaction boundaries",
						op, routes->job->name),
				 errhint("Set provide.transaction.metadata=true in the Debezium connector, or alter the job with transactions => 'batch'.")));
	before = ev.has_parts ? NULL : json_get_object(event, "before");
	after = ev.has_parts ? NULL : json_get_object(event, "after");

	if (strcmp(op, "c") == 0 || strcmp(op, "r") == 0 || strcmp(op, "u") == 0)
	{
		ConvertingWriter key;

		if (after == NULL && ev.after_text == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("change event of op \"%s\" has no after image", op)));
		add_after(cx, after, &ev, op[0] == 'u', &row);
		if (op[0] != 'u')
		{
			eoi_changes_add_upsert(cx->changes);
			return;
		}
		/* an update that moves the row to another key deletes the old one */
		converting_writer_init(&key, NULL, cx->before_key.codecs, cx->keys->ncolumns);
		if (old_key(cx, msg, before, &ev, &key) && !same_key_text(cx, key.fields, row))
		{
			EoiRowWriter *kw = eoi_changes_key_writer(cx->changes);

			for (int k = 0; k < cx->keys->ncolumns; k++)
				kw->field(kw, k, key.fields[k], strlen(key.fields[k]));
			kw->end_row(kw);
			eoi_changes_add_delete(cx->changes);
		}
		eoi_changes_add_upsert(cx->changes);
	}
	else if (strcmp(op, "d") == 0)
	{
		ConvertingWriter key;

		converting_writer_init(&key, eoi_changes_key_writer(cx->changes), cx->before_key.codecs,
							   cx->keys->ncolumns);
		if (!old_key(cx, msg, before, &ev, &key))
			check_key_fields(cx, key.fields, NULL, "the before image or the message key");
		key.writer.end_row(&key.writer);
		eoi_changes_add_delete(cx->changes);
	}
	else if (strcmp(op, "t") == 0)
		truncate_target(cx);
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("change event has unknown op \"%s\"", op),
				 errhint("A Debezium change event has op c, r, u, d or t.")));
}

static void
event_error_callback(void *arg)
{
	EventPosition *ep = arg;

	eoi_message_errcontext(ep->batch, ep->current);
}

/*
 * A context per target, opened when the batch first has an event for it
 * (targets), or the job's one target, opened at once.
 */
static CdcContext *
open_target(CdcRoutes *routes, const char *target)
{
	const EoiJob *job = routes->job;
	CdcContext *cx = palloc0(sizeof(CdcContext));
	EoiJob	   *tjob = palloc(sizeof(EoiJob));
	List	   *key_columns;

	/* the same checks and messages as the job's one target */
	*tjob = *job;
	tjob->target = (char *) target;
	cx->job = job;
	cx->target = target;
	cx->position = routes->position;
	cx->routes = routes;
	cx->rel = eoi_open_job_target(tjob, RowExclusiveLock);
	cx->econtext = GetPerTupleExprContext(routes->estate);
	cx->mapping = eoi_job_mapping(job);
	/*
	 * A change event's time fields count in the unit their schema names
	 * (Timestamp: ms, MicroTimestamp: µs, ...), which the field codecs
	 * below apply; format json's guess by magnitude must not run first.
	 */
	cx->mapping.timestamp_unit = EOI_TS_NONE;
	/* with targets, each target's key is its primary key */
	key_columns = job->targets != NULL ? eoi_primary_key_columns(cx->rel) : job->key_columns;
	if (key_columns == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("target \"%s\" of job \"%s\" has no primary key", target, job->name),
				 errhint("Change events are applied by key: give the table its primary key again.")));
	cx->cols = eoi_columns_for(cx->rel, &cx->mapping, routes->estate);
	cx->keys = eoi_columns_named(cx->rel, EOI_FORMAT_JSON, key_columns);
	eoi_check_target_kind(cx->rel, job->mode);
	eoi_check_target_unchanged(job, cx->rel, cx->cols);
	cx->changes = eoi_changes_begin(cx->rel, target, cx->cols, cx->keys, key_columns);
	cx->col_codecs = palloc0(sizeof(FieldCodec) * cx->cols->ncolumns);
	cx->seen = palloc0(sizeof(bool) * Max(cx->cols->ncolumns, 1));
	cx->before_key.codecs = palloc0(sizeof(FieldCodec) * Max(cx->keys->ncolumns, 1));
	cx->message_key.codecs = palloc0(sizeof(FieldCodec) * Max(cx->keys->ncolumns, 1));
	cx->keypos = palloc(sizeof(int) * Max(cx->keys->ncolumns, 1));
	for (int k = 0; k < cx->keys->ncolumns; k++)
		for (int c = 0; c < cx->cols->ncolumns; c++)
			if (strcmp(cx->cols->colnames[c], cx->keys->colnames[k]) == 0)
				cx->keypos[k] = c;
	if (routes->ncontexts >= routes->capacity)
	{
		routes->capacity = Max(routes->capacity * 2, 8);
		routes->contexts = routes->contexts == NULL ?
			palloc(sizeof(CdcContext *) * routes->capacity) :
			repalloc(routes->contexts, sizeof(CdcContext *) * routes->capacity);
	}
	routes->contexts[routes->ncontexts++] = cx;
	return cx;
}

/*
 * The context of the event's target: the job's target, or the one that
 * targets maps the event's source table (source.schema.table) to.
 */
static CdcContext *
route_event(CdcRoutes *routes, EventJson *ev)
{
	char	   *table;
	JsonbValue	v;
	char	   *target;
	MemoryContext old;
	CdcContext *cx;

	if (routes->job->targets == NULL)
		return routes->contexts[0];
	table = eoi_cdc_source_table(payload_object(routes, ev));
	if (table == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("change event names no source table"),
				 errhint("Job \"%s\" routes change events by their source.schema and source.table, which this event lacks.",
						 routes->job->name)));
	if (getKeyJsonValueFromContainer(&routes->job->targets->root, table, strlen(table), &v) == NULL ||
		v.type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("change event of source table \"%s\" has no target in job \"%s\"",
						table, routes->job->name),
				 errhint("Map the table to a target with eoingest.alter_job(%s, targets => ...), then replay its dead letters with eoingest.replay_dead_letters().",
						 quote_literal_cstr(routes->job->name))));
	target = pnstrdup(v.val.string.val, v.val.string.len);
	for (int i = 0; i < routes->ncontexts; i++)
		if (strcmp(routes->contexts[i]->target, target) == 0)
			return routes->contexts[i];
	/* what the contexts hold lives as long as the batch, not the event */
	old = MemoryContextSwitchTo(routes->cxt);
	cx = open_target(routes, pstrdup(target));
	MemoryContextSwitchTo(old);
	return cx;
}

/*
 * Apply a batch of change events to the job's target, or targets.  Returns
 * the rows deleted, inserted and updated.  With transactions => 'source',
 * the batch holds whole source transactions (cdctxn.c), and the messages of
 * the transaction topic are skipped here.
 */
uint64
eoi_cdc_batch(const EoiJob *job, EoiBatch *batch)
{
	CdcRoutes	routes = {0};
	EventPosition ep = {batch, -1};
	ErrorContextCallback errcb;
	uint64		processed = 0;

	routes.job = job;
	routes.position = &ep;
	routes.estate = CreateExecutorState();
	routes.cxt = CurrentMemoryContext;
	if (eoi_batch_from_partitions(batch))
		routes.replays = eoi_replay_filter_begin(job);
	if (job->targets == NULL)
		(void) open_target(&routes, job->target);

	errcb.callback = event_error_callback;
	errcb.arg = &ep;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];
		ExprContext *econtext = GetPerTupleExprContext(routes.estate);
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		ep.current = i;
		/* a tombstone follows a delete, for compaction: nothing to do */
		if (msg->payload == NULL)
			continue;
		if (job->txn_topic != NULL && strcmp(eoi_message_topic(batch, i), job->txn_topic) == 0)
			continue;
		old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		apply_event(&routes, msg);
		MemoryContextSwitchTo(old);
		ResetExprContext(econtext);
	}
	ep.current = -1;
	error_context_stack = errcb.previous;

	for (int i = 0; i < routes.ncontexts; i++)
		processed += eoi_changes_apply(routes.contexts[i]->changes);
	if (routes.replays != NULL)
		eoi_replay_filter_end(routes.replays);

	FreeExecutorState(routes.estate);
	for (int i = 0; i < routes.ncontexts; i++)
		table_close(routes.contexts[i]->rel, NoLock);
	return processed;
}
