/*-------------------------------------------------------------------------
 *
 * protobuf.c
 *	  Format protobuf: Confluent's wire format, decoded into columns.
 *
 * A message is byte 0 = magic 0x00, bytes 1-4 = the schema's id in the
 * registry (big-endian), or magic 0x01 and a 16-byte schema GUID; then the
 * path of the message's type in the schema's file, as Confluent's
 * serializers write it: a count and as many indexes (zig-zag varints), the
 * first among the file's top-level messages, each next among the nested
 * messages of the one before; the single byte 0 stands for [0], the
 * file's first message.  Then the message's Protobuf binary encoding.
 *
 * The schema, a .proto file and the files it imports, comes from the
 * registry the first time an id is met (registry.c), is parsed and linked
 * (protoparse.c), and kept for the worker's life: schemas are immutable by
 * id.  A message's fields fill the target's columns by name, as Avro
 * records' do: a column no field of the message's type names takes its
 * default; a field of the type that the message lacks holds what Protobuf
 * says it holds (protovalue.c); fields no column names are ignored.
 *
 * Every fault of a record (a bad header, an unknown schema or one that does
 * not parse, a path that names no message, bytes that do not decode) is a
 * record error (class 22; 54000 beyond what eoingest reads): it goes to the
 * dead letters with the schema id in its message.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "format/protobuf.h"
#include "format/protoschema.h"
#include "format/protovalue.h"
#include "format/registry.h"

/* A schema of the registry, by the path it was read from. */
#define SCHEMA_KEY_LEN 64
/* How long "not in the registry" is believed before it is asked again. */
#define NOT_FOUND_TTL_MS 10000

typedef struct SchemaEntry
{
	char		key[SCHEMA_KEY_LEN];	/* "/schemas/ids/42" */
	EoiProtoSchema *schema;		/* parsed and linked, or NULL */
	char	   *error;			/* a record error of this schema, or NULL */
	int			error_code;		/* its SQLSTATE */
	bool		error_expires;	/* not found: ask again after a while */
	TimestampTz error_at;
	List	   *fields;			/* MessageFields: its messages as columns */
	MemoryContext cxt;			/* all of the above */
} SchemaEntry;

typedef struct MessageFields
{
	const EoiProtoMessage *msg;
	EoiSchemaFields *fields;
} MessageFields;

static HTAB *schemas = NULL;
static uint64 schemas_generation = 0;

/* The header and schema of the last message read, as avro.c keeps them. */
static unsigned char last_header[17];
static size_t last_header_len = 0;
static SchemaEntry *last_entry = NULL;
static char last_what[64];

/* ---- the cache ---- */

static void
drop_schemas(void)
{
	HASH_SEQ_STATUS seq;
	SchemaEntry *e;

	if (schemas == NULL)
		return;
	hash_seq_init(&seq, schemas);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->cxt)
			MemoryContextDelete(e->cxt);
		if (e->error)
			pfree(e->error);
	}
	hash_destroy(schemas);
	schemas = NULL;
	last_entry = NULL;
}

/* Forget what an earlier registry configuration said. */
static void
check_generation(void)
{
	uint64		generation = eoi_registry_generation();

	if (generation != schemas_generation)
	{
		drop_schemas();
		schemas_generation = generation;
	}
}

static void
record_error_of_schema(SchemaEntry *e, const ErrorData *edata, bool expires)
{
	e->error = MemoryContextStrdup(TopMemoryContext, edata->message);
	e->error_code = edata->sqlerrcode;
	e->error_expires = expires;
	e->error_at = GetCurrentTimestamp();
}

/* Is this error the schema's, so that every record of it would raise it too? */
static bool
is_schema_error(int sqlerrcode)
{
	return sqlerrcode == ERRCODE_INVALID_PARAMETER_VALUE || sqlerrcode == ERRCODE_PROGRAM_LIMIT_EXCEEDED;
}

/* Parse and link the registry's files of a schema into `e`. */
static void
parse_schema(SchemaEntry *e, List *files, const char *what)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "eoingest protobuf schema",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);

	PG_TRY();
	{
		e->schema = eoi_proto_schema(files, what);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(cxt);
		/* a schema that does not parse never will: remember it (not a cancel) */
		if (is_schema_error(geterrcode()))
		{
			ErrorData  *edata = CopyErrorData();

			record_error_of_schema(e, edata, false);
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	e->cxt = cxt;
}

/* The schema at registry `path`, from the cache or the registry. */
static SchemaEntry *
schema_for(const char *path, const char *what)
{
	SchemaEntry *e;
	bool		found;
	MemoryContext cxt = CurrentMemoryContext;
	List	   *files = NIL;

	if (schemas == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = SCHEMA_KEY_LEN;
		ctl.entrysize = sizeof(SchemaEntry);
		ctl.hcxt = TopMemoryContext;
		schemas = hash_create("eoingest protobuf schemas", 64, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	e = hash_search(schemas, path, HASH_ENTER, &found);
	if (!found)
		memset(((char *) e) + SCHEMA_KEY_LEN, 0, sizeof(SchemaEntry) - SCHEMA_KEY_LEN);
	if (e->schema != NULL)
		return e;
	if (e->error != NULL)
	{
		if (!e->error_expires ||
			!TimestampDifferenceExceeds(e->error_at, GetCurrentTimestamp(), NOT_FOUND_TTL_MS))
			ereport(ERROR,
					(errcode(e->error_code),
					 errmsg_internal("%s", e->error)));
		pfree(e->error);
		e->error = NULL;
	}

	PG_TRY();
	{
		files = eoi_registry_fetch_protobuf(path, what);
	}
	PG_CATCH();
	{
		/* "not in the registry": remember it for a while, for its siblings */
		if (geterrcode() == ERRCODE_INVALID_PARAMETER_VALUE)
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			record_error_of_schema(e, edata, true);
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	parse_schema(e, files, what);
	return e;
}

/* ---- the header ---- */

static void
bad_message(const char *message, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg_internal("%s", message),
			 hint ? errhint("%s", hint) : 0));
}

/* The schema id or GUID in front of a message: its registry path and name. */
static size_t
read_schema_id(const unsigned char *p, size_t len, char *path, char **what)
{
	if (len == 0)
		bad_message("Protobuf message is empty", NULL);
	if (p[0] == 0)
	{
		uint32		id;

		if (len < 5)
			bad_message(psprintf("Protobuf message of %zu bytes is too short for Confluent's header (magic byte 0 and a 4-byte schema id)", len), NULL);
		id = ((uint32) p[1] << 24) | ((uint32) p[2] << 16) | ((uint32) p[3] << 8) | p[4];
		snprintf(path, SCHEMA_KEY_LEN, "/schemas/ids/%u", id);
		*what = psprintf("schema id %u", id);
		return 5;
	}
	if (p[0] == 1)
	{
		static const char hex[] = "0123456789abcdef";
		char		guid[37];
		int			k = 0;

		if (len < 17)
			bad_message(psprintf("Protobuf message of %zu bytes is too short for Confluent's header (magic byte 1 and a 16-byte schema GUID)", len), NULL);
		for (int i = 0; i < 16; i++)
		{
			if (i == 4 || i == 6 || i == 8 || i == 10)
				guid[k++] = '-';
			guid[k++] = hex[p[1 + i] >> 4];
			guid[k++] = hex[p[1 + i] & 15];
		}
		guid[k] = '\0';
		snprintf(path, SCHEMA_KEY_LEN, "/schemas/guids/%s", guid);
		*what = psprintf("schema GUID %s", guid);
		return 17;
	}
	bad_message(psprintf("Protobuf message does not start with Confluent's magic byte 0 (schema id) or 1 (schema GUID), but with 0x%02x", p[0]),
				"Confluent's serializers put the schema id in front of the value, or in the record header __value_schema_id (__key_schema_id for keys); this record has neither.");
	return 0;					/* not reached */
}

/* A zig-zag varint of the message-index path, within its int32 range. */
static int64
read_index(const unsigned char **p, const unsigned char *end, const PbRecord *rec)
{
	uint64		v = 0;

	for (int shift = 0;; shift += 7)
	{
		if (*p >= end || shift > 28)
			eoi_pb_malformed(rec, *p, "the message-index path after the schema id does not decode");
		v |= (uint64) (**p & 0x7f) << shift;
		if ((*(*p)++ & 0x80) == 0)
			break;
	}
	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

/*
 * The message type the index path at *p names in `schema`; *p moves past
 * the path.
 */
static const EoiProtoMessage *
message_of_path(const EoiProtoSchema *schema, const unsigned char **p, const unsigned char *end,
				const PbRecord *rec)
{
	const unsigned char *at = *p;
	int64		count = read_index(p, end, rec);
	const EoiProtoMessage *msg = NULL;
	StringInfoData path;

	if (count == 0)
	{
		if (schema->main->nmessages == 0)
			eoi_pb_malformed(rec, at, "the schema has no message");
		return schema->main->messages[0];
	}
	if (count < 0 || count > EOI_PROTO_MAX_DEPTH)
		eoi_pb_malformed(rec, at, psprintf("the message-index path has " INT64_FORMAT " indexes", count));
	initStringInfo(&path);
	for (int64 i = 0; i < count; i++)
	{
		int64		index = read_index(p, end, rec);
		int			n = msg == NULL ? schema->main->nmessages : msg->nnested;

		appendStringInfo(&path, "%s" INT64_FORMAT, i ? ", " : "", index);
		if (index < 0 || index >= n)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("Protobuf record's message-index path [%s] names no message of %s",
							path.data, rec->what),
					 errdetail("Index " INT64_FORMAT " is out of range: there %s %d.", index,
							   n == 1 ? "is" : "are", n)));
		msg = msg == NULL ? schema->main->messages[index] : msg->nested[index];
	}
	return msg;
}

/*
 * A message's header and type (its schema from the cache or the
 * registry): returns the type and where the message's bytes are, and
 * fills *rec for errors.
 */
static const EoiProtoMessage *
read_message(const char *value, size_t len, PbRecord *rec, const unsigned char **body, size_t *body_len)
{
	const unsigned char *p = (const unsigned char *) value;
	const unsigned char *end = p + len;
	size_t		header = len > 0 && p[0] == 1 ? 17 : 5;
	SchemaEntry *e;
	const EoiProtoMessage *msg;

	check_generation();
	if (last_entry != NULL && len >= header && header == last_header_len &&
		memcmp(p, last_header, header) == 0)
		e = last_entry;
	else
	{
		char		path[SCHEMA_KEY_LEN];
		char	   *what;

		header = read_schema_id(p, len, path, &what);
		e = schema_for(path, what);
		memcpy(last_header, p, header);
		last_header_len = header;
		strlcpy(last_what, what, sizeof(last_what));
		last_entry = e;
	}
	rec->start = p;
	rec->what = last_what;
	p += header;
	msg = message_of_path(e->schema, &p, end, rec);
	*body = p;
	*body_len = end - p;
	return msg;
}

/* ---- messages into columns ---- */

/* The index of the field `name` of a message type, or -1 (for eoi_field_map). */
static int
message_field_index(const void *type, const char *name)
{
	const EoiProtoMessage *msg = type;

	for (int i = 0; i < msg->nfields; i++)
		if (strcmp(msg->fields[i].name, name) == 0)
			return i;
	return -1;
}

/* A column's value before it goes to the writer. */
typedef struct ColumnValue
{
	enum
	{
		CV_DEFAULT, CV_NULL, CV_TEXT, CV_DATUM
	}			kind;
	Datum		value;
	int			start;			/* CV_TEXT: where in the text buffer */
	int			len;
} ColumnValue;

void
eoi_protobuf_decode(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
					ExprContext *econtext)
{
	PbRecord	rec;
	const unsigned char *body;
	size_t		body_len;
	const EoiProtoMessage *msg = read_message(value, len, &rec, &body, &body_len);
	PbFields	pf;
	const int  *field_of;
	ColumnValue *values = palloc(sizeof(ColumnValue) * Max(cols->ncolumns, 1));
	StringInfoData text = {NULL};	/* made when a value needs it */

	eoi_pb_read(&pf, msg, body, body_len, &rec, 1);
	field_of = eoi_field_map(cols, &cols->protobuf, msg, schemas_generation, message_field_index);

	/*
	 * Every field is decoded before any goes to the writer, so that a
	 * record's own faults come before what the columns' types refuse.
	 */
	for (int c = 0; c < cols->ncolumns; c++)
	{
		int			i = field_of[c];
		Oid			typid = cols->typids ? cols->typids[c] : InvalidOid;
		bool		isnull;
		ColumnValue *v = &values[c];

		if (i < 0)
			v->kind = CV_DEFAULT;
		else if (writer->datum != NULL && eoi_pb_field_datum(&pf, i, typid, &v->value, &isnull, &rec))
			v->kind = isnull ? CV_NULL : CV_DATUM;
		else
		{
			if (text.data == NULL)
				initStringInfo(&text);
			v->start = text.len;
			v->kind = eoi_pb_field_text(&text, &pf, i, typid, &rec) ? CV_TEXT : CV_NULL;
			v->len = text.len - v->start;
		}
	}
	for (int c = 0; c < cols->ncolumns; c++)
	{
		ColumnValue *v = &values[c];

		switch (v->kind)
		{
			case CV_DEFAULT:
				eoi_write_default(cols, c, writer, econtext);
				break;
			case CV_NULL:
				writer->field(writer, c, NULL, 0);
				break;
			case CV_TEXT:
				writer->field(writer, c, text.data + v->start, v->len);
				break;
			case CV_DATUM:
				writer->datum(writer, c, v->value);
				break;
		}
	}
}

/* ---- the message type as columns ---- */

static EoiSchemaFields *
message_fields(SchemaEntry *e, const EoiProtoMessage *msg, const char *what)
{
	MemoryContext old = MemoryContextSwitchTo(e->cxt);
	EoiSchemaFields *f = palloc0(sizeof(EoiSchemaFields));
	MessageFields *mf = palloc(sizeof(MessageFields));

	f->what = psprintf("%s (message %s)", what, msg->full_name);
	f->type_name = "message";
	f->record = true;
	f->nfields = msg->nfields;
	f->fields = palloc0(sizeof(EoiSchemaField) * Max(msg->nfields, 1));
	for (int i = 0; i < msg->nfields; i++)
	{
		f->fields[i].name = msg->fields[i].name;
		eoi_pb_column_type(&msg->fields[i], &f->fields[i].typid, &f->fields[i].typmod);
	}
	mf->msg = msg;
	mf->fields = f;
	e->fields = lappend(e->fields, mf);
	MemoryContextSwitchTo(old);
	return f;
}

/*
 * The fields of the message type of the schema the registry has under
 * `subject` now (its latest version), or NULL when it has no such subject
 * or its file holds more than one top-level message (which one a topic's
 * records are is the producer's choice: the first record says).
 */
const EoiSchemaFields *
eoi_protobuf_subject_fields(const char *subject)
{
	int64		id;
	char		path[SCHEMA_KEY_LEN];
	char	   *what;
	SchemaEntry *e;
	const EoiProtoMessage *msg;
	ListCell   *lc;

	check_generation();
	id = eoi_registry_latest_id(subject);
	if (id < 0)
		return NULL;
	snprintf(path, sizeof(path), "/schemas/ids/%u", (uint32) id);
	what = psprintf("schema id %u", (uint32) id);
	e = schema_for(path, what);
	if (e->schema->main->nmessages != 1)
		return NULL;
	msg = e->schema->main->messages[0];
	foreach(lc, e->fields)
	{
		MessageFields *mf = lfirst(lc);

		if (mf->msg == msg)
			return mf->fields;
	}
	return message_fields(e, msg, what);
}

const EoiSchemaFields *
eoi_protobuf_schema_fields(const char *value, size_t len)
{
	PbRecord	rec;
	const unsigned char *body;
	size_t		body_len;
	const EoiProtoMessage *msg = read_message(value, len, &rec, &body, &body_len);
	ListCell   *lc;

	foreach(lc, last_entry->fields)
	{
		MessageFields *mf = lfirst(lc);

		if (mf->msg == msg)
			return mf->fields;
	}
	return message_fields(last_entry, msg, rec.what);
}

char *
eoi_protobuf_json(const char *value, size_t len)
{
	PbRecord	rec;
	const unsigned char *body;
	size_t		body_len;
	const EoiProtoMessage *msg = read_message(value, len, &rec, &body, &body_len);
	StringInfoData out;

	initStringInfo(&out);
	eoi_pb_append_json(&out, msg, body, body_len, &rec, 1);
	return out.data;
}
