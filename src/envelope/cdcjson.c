/*-------------------------------------------------------------------------
 *
 * cdcjson.c
 *	  A message of envelope debezium as a change event: Kafka Connect's
 *	  schema wrapper taken apart (its value schemas cached per batch), the
 *	  payload's members and the event's parts read from the JSON text, and
 *	  the JSON helpers the other files use.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "envelope/cdc_internal.h"

/* ---- JSON helpers ---- */

/* The object at key `name` of `object`, or NULL if it is absent or null. */
JsonbContainer *
eoi_cdc_json_get_object(JsonbContainer *object, const char *name)
{
	JsonbValue	v;

	if (eoi_connect_member(object, name, &v) == NULL)
		return NULL;
	if (v.type != jbvBinary || !JsonContainerIsObject(v.val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("\"%s\" of the change event is not an object", name)));
	return v.val.binary.data;
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
		*schema = eoi_cdc_json_get_object(root, "schema");
		return eoi_cdc_json_get_object(root, "payload");
	}
	return root;
}

/* ---- messages ---- */

Jsonb *
eoi_cdc_parse_json(const char *data, size_t len)
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

bool
eoi_cdc_scan_object(CdcRoutes *routes, const char *data, size_t len, EoiJsonFieldFn field, void *arg)
{
	return eoi_json_scan_object(data, len, scratch_for(routes, len),
								GetDatabaseEncoding() == PG_UTF8, field, arg);
}

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
bool
eoi_cdc_scan_members(CdcRoutes *routes, const char *data, size_t len, MemberScan *ms)
{
	for (int i = 0; i < ms->n; i++)
		ms->members[i].found = false;
	ms->other = false;
	return eoi_cdc_scan_object(routes, data, len, take_member, ms);
}

/*
 * The members of the object of span `parent`, of `len` bytes, from the
 * spans; false if one may not be as a scan's.
 */
static bool
spanned_members(CdcRoutes *routes, const EventJson *ev, int parent, size_t len, MemberScan *ms)
{
	char	   *scratch = scratch_for(routes, len);
	bool		utf8 = GetDatabaseEncoding() == PG_UTF8;

	for (int i = 0; i < ms->n; i++)
	{
		Member	   *m = &ms->members[i];
		int			s = eoi_json_span_find(ev->spans, parent, m->name);

		m->found = s >= 0;
		if (m->found && !eoi_json_span_token(ev->spans_text, &ev->spans->span[s], &scratch, utf8, &m->value))
			return false;
	}
	ms->other = false;			/* not asked for where spans are taken */
	return true;
}

/*
 * eoingest.test_avro_json_check: the members from the spans must be those
 * a scan of the text finds, where the scan reads it.
 */
static void
check_spanned(const char *data, size_t len, const MemberScan *ms)
{
	Member	   *m = palloc(sizeof(Member) * ms->n);
	MemberScan	scan = {m, ms->n, false, false};
	char	   *scratch = palloc(len + 1);
	bool		scanned;

	for (int i = 0; i < ms->n; i++)
	{
		m[i].name = ms->members[i].name;
		m[i].found = false;
	}
	/* a scratch of its own: the members' strings may be in the routes' */
	scanned = eoi_json_scan_object(data, len, scratch, GetDatabaseEncoding() == PG_UTF8,
								   take_member, &scan);
	for (int i = 0; scanned && i < ms->n; i++)
	{
		const EoiJsonToken *a = &ms->members[i].value;
		const EoiJsonToken *b = &m[i].value;
		bool		has_text = a->kind == EOI_JSON_STRING || a->kind == EOI_JSON_NUMBER ||
			a->kind == EOI_JSON_NESTED;

		if (m[i].found != ms->members[i].found ||
			(m[i].found && (a->kind != b->kind ||
							(has_text && (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)) ||
							(a->kind == EOI_JSON_NUMBER && a->integer != b->integer))))
			elog(ERROR, "member \"%s\" noted while the event was written differs from its scan", m[i].name);
	}
	pfree(scratch);
	pfree(m);
}

/*
 * The members `ms` looks for, of the payload or of its source block
 * (`source`), whose text is `data`: from the spans the JSON writer noted,
 * if it noted that object's, else by a scan.  False if the scan declines.
 * Taken from spans, ms->other is not set: ms may not stop at another
 * member.  The spans are the last event's (routes->spans): `ev` must be
 * the event last split.
 */
bool
eoi_cdc_members(CdcRoutes *routes, const EventJson *ev, bool source, const char *data, size_t len,
				MemberScan *ms)
{
	Assert(!ms->stop_at_other);
	Assert(ev->spans == NULL || ev->spans->text == ev->spans_text);
	if (ev->spans != NULL && (!source || ev->source_span >= 0) &&
		spanned_members(routes, ev, source ? ev->source_span : -1, len, ms))
	{
		if (eoingest_test_avro_json_check)
			check_spanned(data, len, ms);
		return true;
	}
	return eoi_cdc_scan_members(routes, data, len, ms);
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
	ev->before_schema = eoi_connect_schema_field(schema, "before");
	ev->after_schema = eoi_connect_schema_field(schema, "after");
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
		set_schema(ev, &eoi_cdc_parse_json(text, len)->root);
		return;
	}
	old = MemoryContextSwitchTo(routes->cxt);
	cs = &routes->schemas[routes->nschemas];
	cs->text = pnstrdup(text, len);
	cs->len = len;
	set_schema(ev, &eoi_cdc_parse_json(text, len)->root);
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

/* The payload's spans, and which of them is a source block noted member by member. */
static void
note_spans(EventJson *ev, const EoiJsonSpans *spans)
{
	int			source = eoi_json_span_find(spans, -1, "source");

	ev->spans = spans;
	ev->spans_text = ev->text;
	for (int i = 0; source >= 0 && i < spans->n; i++)
		if (spans->span[i].parent == source)
		{
			ev->source_span = source;
			break;
		}
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
 * semantics.  The renderer notes where the payload's members (and the
 * source block's) lie, which spares event_parts and event_position their
 * scans.
 */
void
eoi_cdc_split_message(CdcRoutes *routes, rd_kafka_message_t *msg, bool key, EventJson *ev)
{
	size_t		len;
	EoiJsonSpans *spans = key ? NULL : &routes->spans;
	const char *data;
	Member		w[2] = {{"schema"}, {"payload"}};
	MemberScan	wrapper = {w, 2, true, false};
	Jsonb	   *jb;
	size_t		checked;

	if (spans != NULL)
		spans->inner = "source";
	data = eoi_message_json_spans(routes->job->format, msg, key, &len, spans);
	memset(ev, 0, sizeof(*ev));
	ev->source_span = -1;
	if (known_wrapper(routes, data, len, ev, &checked))
	{
		(void) pg_verifymbstr(data + checked, (int) (len - checked), false);
		return;
	}
	(void) pg_verifymbstr(data, (int) len, false);
	/* a wrapper has both members (either may be null), and no other */
	if (eoi_cdc_scan_members(routes, data, len, &wrapper) && w[0].found && w[1].found &&
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
		if (spans != NULL && spans->n > 0)
			note_spans(ev, spans);
		return;
	}
	jb = eoi_cdc_parse_json(data, len);
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
JsonbContainer *
eoi_cdc_payload_object(CdcRoutes *routes, EventJson *ev)
{
	MemberScan	any = {NULL, 0, false, false};
	Jsonb	   *jb;

	if (ev->payload != NULL || ev->text == NULL)
		return ev->payload;
	if (ev->whole != NULL && !eoi_cdc_scan_members(routes, ev->text, ev->len, &any))
	{
		JsonbContainer *schema;

		jb = eoi_cdc_parse_json(ev->whole, ev->whole_len);
		ev->not_object = !JB_ROOT_IS_OBJECT(jb);
		ev->payload = unwrap(jb, &schema);
	}
	else
	{
		jb = eoi_cdc_parse_json(ev->text, ev->len);
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
 * scan (or from the spans its JSON writer noted, eoi_cdc_members): the
 * images are kept as text, parsed later only if they must be (old_key,
 * add_after); the source block is kept as text (event_position), the rest
 * is not read.
 * Falls back to the payload as jsonb (the member functions then read it,
 * with their errors) when the scan declines, when op is a number (whose
 * text json_get_string takes from numeric_out), or when an image is
 * neither an object nor null.
 */
void
eoi_cdc_event_parts(CdcRoutes *routes, EventJson *ev)
{
	Member		m[4] = {{"op"}, {"before"}, {"after"}, {"source"}};
	MemberScan	parts = {m, 4, false, false};
	const Member *op = &m[0];
	const Member *before = &m[1];
	const Member *after = &m[2];
	const Member *source = &m[3];

	if (ev->text == NULL || !eoi_cdc_members(routes, ev, false, ev->text, ev->len, &parts))
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
