/*-------------------------------------------------------------------------
 *
 * avro.c
 *	  Format avro: Confluent's wire format, decoded with Avro C.
 *
 * A message is byte 0 = magic 0x00, bytes 1-4 = the schema's id in the
 * registry (big-endian), then the Avro binary encoding of one datum, with
 * no container header; or magic 0x01 with a 16-byte schema GUID instead of
 * the id.  The writer's schema comes from the registry (registry.c) the
 * first time an id is met, and is kept for the worker's life: schemas are
 * immutable by id.  Records are decoded with the writer's schema, and
 * their fields fill the target's columns by name, as format json maps an
 * object's keys: a field that is absent takes the column's default, other
 * fields are ignored.  So records written with different versions of a
 * schema land in one batch, and Avro C's schema resolution (which cannot
 * fill a reader's defaults) is not needed.
 *
 * Avro C knows no logical types: the schema's JSON is read (avrotype.c) for
 * logicalType, precision and scale, into a tree (AvroType) that parallels
 * Avro C's schema.  Each field becomes the text of a COPY field
 * (avrovalue.c): the sink parses the text with the column type's input
 * function, as for the other formats.  Strings are checked for the
 * database encoding (and NUL bytes) there, since a binary message cannot
 * be checked as a whole.
 *
 * Every fault of a record (a bad header, an unknown schema, bytes that do
 * not decode, a value out of range) is a record error (class 22; 54000
 * for a record beyond the limits of avrocheck.c): it goes to the dead
 * letters with the schema id in its message.  Avro C is given a record
 * only once avrocheck.c has walked it: it trusts the lengths it reads.  A
 * flat record (fields of primitives) on the direct path is not given to
 * Avro C at all: avroflat.c reads it from its bytes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <avro/errors.h>
#include <avro/generic.h>
#include <avro/io.h>

#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "format/avro.h"
#include "format/avro_internal.h"
#include "format/avrocheck.h"
#include "format/registry.h"

/* A schema of the registry, by the path it was read from. */
#define SCHEMA_KEY_LEN 64
/* How long "not in the registry" is believed before it is asked again. */
#define NOT_FOUND_TTL_MS 10000

typedef struct SchemaEntry
{
	char		key[SCHEMA_KEY_LEN];	/* "/schemas/ids/42" */
	bool		ready;			/* schema, iface, value and type are set */
	char	   *error;			/* a record error of this schema, or NULL */
	bool		error_expires;	/* not found: ask again after a while */
	TimestampTz error_at;
	avro_schema_t schema;
	avro_schema_t with_references;	/* the record schema is the last field of, or NULL */
	avro_value_iface_t *iface;
	avro_value_t container;		/* with references: the record value is a field of */
	avro_value_t value;			/* reused for every record of the schema */
	AvroType   *type;
	EoiAvroFlat *flat;			/* a record of primitives: avroflat.c reads it */
	EoiSchemaFields *fields;	/* its fields as columns, once asked for */
	EoiSchemaFields *field_fields;	/* those of a field's record, once asked for */
	char	   *field_fields_of;	/* that field's name */
	MemoryContext cxt;			/* the type tree */
} SchemaEntry;

static HTAB *schemas = NULL;
static uint64 schemas_generation = 0;
static avro_reader_t reader = NULL;

/*
 * The header and schema of the last message read: consecutive records
 * mostly share one, and then neither the path nor the name is formatted
 * again, nor the cache searched.  drop_schemas forgets it.
 */
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
		if (e->ready)
		{
			/* with references, value is the container's field: it owns it */
			avro_value_decref(e->with_references ? &e->container : &e->value);
			avro_value_iface_decref(e->iface);
			avro_schema_decref(e->schema);
			if (e->with_references)
				avro_schema_decref(e->with_references);
			free(e->flat);
		}
		if (e->cxt)
			MemoryContextDelete(e->cxt);
		if (e->error)
			pfree(e->error);
	}
	hash_destroy(schemas);
	schemas = NULL;
	last_entry = NULL;
}

void
eoi_avro_use_job(const EoiJob *job)
{
	uint64		generation;

	if (!eoi_format_has_schema_id(job->format) && !eoi_format_has_schema_id(job->key_format) &&
		job->schema_registry == NULL)
		return;
	generation = eoi_registry_configure(job->schema_registry, job->options, job->owner);
	if (generation != schemas_generation)
	{
		drop_schemas();
		schemas_generation = generation;
	}
}

/* ---- schemas by id ---- */

static void
record_error_of_schema(SchemaEntry *e, const char *message, bool expires)
{
	e->error = MemoryContextStrdup(TopMemoryContext, message);
	e->error_expires = expires;
	e->error_at = GetCurrentTimestamp();
}

static EoiAvroFlat *flat_layout(SchemaEntry *e);

/*
 * Parse the registry's text of the schema into `e`.  With references, the
 * text is a record whose fields are the referenced types, each before its
 * first use, and last the schema itself (registry.c): that last field is
 * the schema.
 */
static void
parse_schema(SchemaEntry *e, const char *text, const char *what, bool with_references)
{
	avro_schema_t schema;
	Jsonb	   *jb;
	JsonbValue	root;
	Builder		b = {NIL};
	MemoryContext old;

	if (avro_schema_from_json_length(text, strlen(text), &schema) != 0)
	{
		char	   *message = psprintf("%s cannot be parsed as an Avro schema: %s", what, avro_strerror());

		record_error_of_schema(e, message, false);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg_internal("%s", message)));
	}
	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
	if (JB_ROOT_IS_SCALAR(jb))
		root = *getIthJsonbValueFromContainer(&jb->root, 0);
	else
	{
		root.type = jbvBinary;
		root.val.binary.data = &jb->root;
		root.val.binary.len = VARSIZE(jb) - VARHDRSZ;
	}

	e->cxt = AllocSetContextCreate(TopMemoryContext, "eoingest avro schema", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(e->cxt);
	e->type = eoi_avro_build_type(&b, schema, &root);
	MemoryContextSwitchTo(old);

	if (with_references)
	{
		/*
		 * Avro C makes a value class for a named type where the container
		 * defines it: the class is the container's, and the schema's value
		 * is its last field.
		 */
		int			last = e->type->nchildren - 1;

		Assert(e->type->kind == AVRO_RECORD && last >= 0);
		e->type = e->type->children[last];
		e->iface = avro_generic_class_from_schema(schema);
		if (e->iface == NULL || avro_generic_value_new(e->iface, &e->container) != 0 ||
			avro_value_get_by_index(&e->container, last, &e->value, NULL) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not set up Avro C for %s: %s", what, avro_strerror())));
		e->with_references = schema;
		e->schema = avro_schema_record_field_get_by_index(schema, last);
		if (is_avro_link(e->schema))
			e->schema = avro_schema_link_target(e->schema);
		avro_schema_incref(e->schema);
		e->flat = flat_layout(e);
		e->ready = true;
		return;
	}
	e->schema = schema;
	e->iface = avro_generic_class_from_schema(schema);
	if (e->iface == NULL || avro_generic_value_new(e->iface, &e->value) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not set up Avro C for %s: %s", what, avro_strerror())));
	e->flat = flat_layout(e);
	e->ready = true;
}

/*
 * Can avroflat.c read this schema's records?  A record of primitives and
 * unions of primitives, none with a logical type (those take avro.c's
 * conversions).  Its layout if so, NULL if not.
 */
static EoiAvroFlat *
flat_layout(SchemaEntry *e)
{
	EoiAvroFlat *flat;

	if (!eoi_avro_flat_schema(e->schema))
		return NULL;
	for (int i = 0; i < e->type->nchildren; i++)
	{
		AvroType   *t = e->type->children[i];

		if (t->logical != L_NONE)
			return NULL;
		for (int b = 0; t->kind == AVRO_UNION && b < t->nchildren; b++)
			if (t->children[b]->logical != L_NONE)
				return NULL;
	}
	flat = eoi_avro_flat_layout(e->schema);
	if (flat == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	return flat;
}

/* The schema at registry `path`, from the cache or the registry. */
static SchemaEntry *
schema_for(const char *path, const char *what)
{
	SchemaEntry *e;
	bool		found;

	if (schemas == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = SCHEMA_KEY_LEN;
		ctl.entrysize = sizeof(SchemaEntry);
		ctl.hcxt = TopMemoryContext;
		schemas = hash_create("eoingest avro schemas", 64, &ctl, HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	}
	e = hash_search(schemas, path, HASH_ENTER, &found);
	if (!found)
	{
		memset(((char *) e) + SCHEMA_KEY_LEN, 0, sizeof(SchemaEntry) - SCHEMA_KEY_LEN);
	}
	if (e->ready)
		return e;
	if (e->error != NULL)
	{
		if (!e->error_expires ||
			!TimestampDifferenceExceeds(e->error_at, GetCurrentTimestamp(), NOT_FOUND_TTL_MS))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg_internal("%s", e->error)));
		pfree(e->error);
		e->error = NULL;
	}

	{
		MemoryContext cxt = CurrentMemoryContext;
		char	   *text = NULL;
		bool		with_references = false;

		PG_TRY();
		{
			text = eoi_registry_fetch_schema(path, what, &with_references);
		}
		PG_CATCH();
		{
			/* "not in the registry": remember it for a while, for its siblings */
			if (geterrcode() == ERRCODE_INVALID_PARAMETER_VALUE)
			{
				ErrorData  *edata;

				MemoryContextSwitchTo(cxt);
				edata = CopyErrorData();
				record_error_of_schema(e, edata->message, true);
			}
			PG_RE_THROW();
		}
		PG_END_TRY();
		parse_schema(e, text, what, with_references);
	}
	return e;
}

/* ---- messages ---- */

/*
 * A field of a record, decoded, before it goes to the writer: a datum, a
 * text, a NULL, or the column's default (the record has no such field).
 */
typedef struct AvroField
{
	enum
	{
		AF_DEFAULT, AF_NULL, AF_TEXT, AF_DATUM
	}			kind;
	Datum		value;
	StringInfoData text;
} AvroField;

static void
decode_field(EoiColumns *cols, int c, EoiRowWriter *writer, avro_value_t *v, AvroType *t,
			 AvroField *f)
{
	Oid			typid = cols->typids ? cols->typids[c] : InvalidOid;

	if (writer->datum != NULL && eoi_avro_value_datum(v, t, typid, &f->value))
	{
		f->kind = AF_DATUM;
		return;
	}
	initStringInfo(&f->text);
	f->kind = eoi_avro_value_text(&f->text, v, t, typid) ? AF_TEXT : AF_NULL;
}

static void
write_field(EoiColumns *cols, int c, EoiRowWriter *writer, AvroField *f, ExprContext *econtext)
{
	switch (f->kind)
	{
		case AF_DEFAULT:
			eoi_write_default(cols, c, writer, econtext);
			break;
		case AF_NULL:
			writer->field(writer, c, NULL, 0);
			break;
		case AF_TEXT:
			writer->field(writer, c, f->text.data, f->text.len);
			break;
		case AF_DATUM:
			writer->datum(writer, c, f->value);
			break;
	}
}

static void
bad_message(const char *message, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg_internal("%s", message),
			 hint ? errhint("%s", hint) : 0));
}

/*
 * Refuse a record that Avro C must not be given (avrocheck.c): one that
 * does not decode, and one within the encoding but beyond what a worker
 * reads (nested too deep, too many items that take no bytes).
 */
static void
check_record(SchemaEntry *e, const unsigned char *body, size_t len, const char *what)
{
	char		why[256];

	switch (eoi_avro_check(e->schema, body, len, why, sizeof(why)))
	{
		case EOI_AVRO_OK:
			return;
		case EOI_AVRO_MALFORMED:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("Avro record does not decode with %s: %s", what, why)));
			break;
		case EOI_AVRO_TRAILING:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("Avro record written with %s is followed by bytes that are not part of it (%s)",
							what, why)));
			break;
		case EOI_AVRO_TOO_DEEP:
		case EOI_AVRO_TOO_MANY_ITEMS:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("Avro record written with %s is beyond what eoingest reads: %s", what, why),
					 errhint("A worker reads Avro values nested at most %d levels deep, with at most %d array items that take no bytes in one record.",
							 EOI_AVRO_MAX_DEPTH, EOI_AVRO_MAX_FREE_ITEMS)));
			break;
	}
}

/*
 * A message's header and its writer's schema (from the cache or the
 * registry): returns the schema's entry and where the record's bytes are;
 * *what names the schema for errors.  The bytes are not checked yet:
 * check_record (or, for a flat record, avroflat.c's read) does that.
 */
static SchemaEntry *
schema_of_header(const unsigned char *p, size_t len, size_t *header_out, char **what_out)
{
	char		path[SCHEMA_KEY_LEN];
	char	   *what;
	size_t		header;

	if (len == 0)
		bad_message("Avro message is empty", NULL);
	if (p[0] == 0)
	{
		uint32		id;

		if (len < 5)
			bad_message(psprintf("Avro message of %zu bytes is too short for Confluent's header (magic byte 0 and a 4-byte schema id)", len), NULL);
		id = ((uint32) p[1] << 24) | ((uint32) p[2] << 16) | ((uint32) p[3] << 8) | p[4];
		snprintf(path, sizeof(path), "/schemas/ids/%u", id);
		what = psprintf("schema id %u", id);
		header = 5;
	}
	else if (p[0] == 1)
	{
		StringInfoData guid;

		if (len < 17)
			bad_message(psprintf("Avro message of %zu bytes is too short for Confluent's header (magic byte 1 and a 16-byte schema GUID)", len), NULL);
		initStringInfo(&guid);
		eoi_avro_append_uuid(&guid, p + 1);
		snprintf(path, sizeof(path), "/schemas/guids/%s", guid.data);
		what = psprintf("schema GUID %s", guid.data);
		header = 17;
	}
	else
	{
		bad_message(psprintf("Avro message does not start with Confluent's magic byte 0 (schema id) or 1 (schema GUID), but with 0x%02x", p[0]),
					"Confluent's serializers put the schema id in front of the value, or in the record header __value_schema_id (__key_schema_id for keys); this record has neither.");
		return NULL;			/* not reached */
	}

	*header_out = header;
	*what_out = what;
	return schema_for(path, what);
}

static SchemaEntry *
read_message(const char *value, size_t len, char **what_out,
			 const unsigned char **body, size_t *body_len)
{
	const unsigned char *p = (const unsigned char *) value;
	size_t		header = len > 0 && p[0] == 1 ? 17 : 5;
	char	   *what;
	SchemaEntry *e;

	if (last_entry != NULL && len >= header && header == last_header_len &&
		memcmp(p, last_header, header) == 0)
	{
		e = last_entry;
		what = last_what;
	}
	else
	{
		e = schema_of_header(p, len, &header, &what);
		memcpy(last_header, p, header);
		last_header_len = header;
		strlcpy(last_what, what, sizeof(last_what));
		last_entry = e;
	}
	*what_out = what;
	*body = p + header;
	*body_len = len - header;
	return e;
}

/*
 * Check a record and read it into its schema's value, with Avro C: the
 * value holds it until the next message.
 */
static void
read_value(SchemaEntry *e, const unsigned char *body, size_t len, const char *what)
{
	int			rc;

	check_record(e, body, len, what);

	if (reader == NULL)
	{
		reader = avro_reader_memory("", 0);
		if (reader == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory for an Avro reader")));
	}
	avro_reader_memory_set_source(reader, (const char *) body, (int64_t) len);
	avro_value_reset(&e->value);
	/* Avro C prefixes each error to the last one: start from nothing */
	if (avro_strerror()[0] != '\0')
		avro_set_error("%s", "");
	rc = avro_value_read(reader, &e->value);
	if (rc != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("Avro record does not decode with %s: %s", what, avro_strerror())));
	/* nothing follows the record: avrocheck.c found where it ends */
}

/*
 * May avroflat.c read this record for these columns?  A flat record, for
 * a writer that takes datums (the direct path: COPY's stays on Avro C's
 * values, so that the differential test compares the two), and no column
 * of json or jsonb (a primitive's JSON is avro.c's to write).
 */
static bool
flat_fits(SchemaEntry *e, EoiColumns *cols, EoiRowWriter *writer)
{
	if (!e->flat || writer->datum == NULL || cols->typids == NULL)
		return false;
	for (int c = 0; c < cols->ncolumns; c++)
		if (cols->typids[c] == JSONBOID || cols->typids[c] == JSONOID)
			return false;
	return true;
}

/* The index of the field `name` of a record type, or -1 (for eoi_field_map). */
static int
record_field_index(const void *type, const char *name)
{
	return avro_schema_record_field_get_index(((const AvroType *) type)->schema, name);
}

/* A field of a flat record, as decode_field makes one of Avro C's values. */
static void
scalar_field(EoiColumns *cols, int c, const EoiAvroScalar *sc, AvroField *f)
{
	if (sc->kind == AVRO_NULL)
	{
		f->kind = AF_NULL;
		return;
	}
	if (eoi_avro_scalar_datum(sc, cols->typids[c], &f->value))
	{
		f->kind = AF_DATUM;
		return;
	}
	initStringInfo(&f->text);
	eoi_avro_scalar_text(&f->text, sc);
	f->kind = AF_TEXT;
}

void
eoi_avro_decode(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
				ExprContext *econtext)
{
	char	   *what;
	const unsigned char *body;
	size_t		body_len;
	SchemaEntry *e = read_message(value, len, &what, &body, &body_len);
	bool		flat = flat_fits(e, cols, writer);
	EoiAvroScalar *scalars = NULL;
	avro_value_t *top = NULL;	/* the value, a union followed to its branch */
	avro_value_t branch;
	AvroType   *type = e->type;
	AvroField	one;
	AvroField  *fields;
	const int  *field_of;

	if (flat)
	{
		scalars = palloc(sizeof(EoiAvroScalar) * Max(e->type->nchildren, 1));
		if (!eoi_avro_flat_read(e->flat, body, body_len, scalars))
		{
			/* it refuses what the check refuses: let the check say why */
			check_record(e, body, body_len, what);
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("Avro record does not decode with %s", what)));
		}
	}
	else
	{
		read_value(e, body, body_len, what);
		top = &e->value;
		eoi_avro_resolve_union(&top, &branch, &type);
	}

	if (type->kind != AVRO_RECORD)
	{
		if (cols->ncolumns != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 type->kind == AVRO_NULL ?
					 errmsg("the value written with %s is null, not a record", what) :
					 errmsg("the value written with %s is an Avro %s, not a record", what,
							avro_schema_type_name(type->schema)),
					 eoi_errdetail_columns(cols),
					 errhint("Format avro maps a record's fields to columns by name; a value of another type fills a target of one column.")));
		decode_field(cols, 0, writer, top, type, &one);
		write_field(cols, 0, writer, &one, econtext);
		return;
	}

	/*
	 * Every field is decoded before any goes to the writer, so that a
	 * record's own faults (a string not in the database encoding, a date
	 * out of range) come before what the columns' types refuse, on the
	 * direct path as through COPY's text.
	 */
	fields = palloc(sizeof(AvroField) * Max(cols->ncolumns, 1));
	field_of = eoi_field_map(cols, &cols->avro, type, schemas_generation, record_field_index);
	for (int c = 0; c < cols->ncolumns; c++)
	{
		int			i = field_of[c];
		avro_value_t field;

		if (i < 0)
			fields[c].kind = AF_DEFAULT;
		else if (flat)
			scalar_field(cols, c, &scalars[i], &fields[c]);
		else
		{
			if (avro_value_get_by_index(top, i, &field, NULL) != 0)
				eoi_avro_failed("record");
			decode_field(cols, c, writer, &field, type->children[i], &fields[c]);
		}
	}
	for (int c = 0; c < cols->ncolumns; c++)
		write_field(cols, c, writer, &fields[c], econtext);
}

/* ---- the writer's schema as columns ---- */

/* The fields of record type `t` (any other type has none), in the current context. */
static EoiSchemaFields *
record_fields(const AvroType *t, const char *what)
{
	EoiSchemaFields *f = palloc0(sizeof(EoiSchemaFields));

	f->what = pstrdup(what);
	f->type_name = pstrdup(avro_schema_type_name(t->schema));
	if (t->kind == AVRO_RECORD)
	{
		f->record = true;
		f->nfields = t->nchildren;
		f->fields = palloc0(sizeof(EoiSchemaField) * Max(t->nchildren, 1));
		for (int i = 0; i < t->nchildren; i++)
		{
			const char *name = avro_schema_record_field_name(t->schema, i);

			if (name == NULL)
				eoi_avro_failed("record field name");
			f->fields[i].name = pstrdup(name);
			eoi_avro_column_type(t->children[i], &f->fields[i].typid, &f->fields[i].typmod);
		}
	}
	return f;
}

static EoiSchemaFields *
schema_fields(SchemaEntry *e, const char *what)
{
	MemoryContext old = MemoryContextSwitchTo(e->cxt);
	EoiSchemaFields *f = record_fields(e->type, what);

	MemoryContextSwitchTo(old);
	return f;
}

/*
 * The fields of the schema the registry has under `subject` now (its
 * latest version), or NULL when it has no such subject.
 */
const EoiSchemaFields *
eoi_avro_subject_fields(const char *subject)
{
	int64		id = eoi_registry_latest_id(subject);
	char		path[SCHEMA_KEY_LEN];
	char	   *what;
	SchemaEntry *e;

	if (id < 0)
		return NULL;
	snprintf(path, sizeof(path), "/schemas/ids/%u", (uint32) id);
	what = psprintf("schema id %u", (uint32) id);
	e = schema_for(path, what);
	if (e->fields == NULL)
		e->fields = schema_fields(e, what);
	return e->fields;
}

const EoiSchemaFields *
eoi_avro_schema_fields(const char *value, size_t len)
{
	char	   *what;
	const unsigned char *body;
	size_t		body_len;
	SchemaEntry *e = read_message(value, len, &what, &body, &body_len);

	if (e->fields == NULL)
		e->fields = schema_fields(e, what);
	return e->fields;
}

/*
 * The fields of the record in field `name` of the writer's record schema
 * (the record, or a union of null and the record): a change event's image.
 * Its type is not a record when there is no such field (then type_name
 * says "no field"), or it holds no record.
 */
const EoiSchemaFields *
eoi_avro_schema_field_fields(const char *value, size_t len, const char *name)
{
	char	   *what;
	const unsigned char *body;
	size_t		body_len;
	SchemaEntry *e = read_message(value, len, &what, &body, &body_len);
	const AvroType *t = NULL;
	MemoryContext old;

	if (e->field_fields != NULL && strcmp(e->field_fields_of, name) == 0)
		return e->field_fields;
	if (e->type->kind == AVRO_RECORD)
		for (int i = 0; i < e->type->nchildren && t == NULL; i++)
		{
			const char *each = avro_schema_record_field_name(e->type->schema, i);

			if (each != NULL && strcmp(each, name) == 0)
				t = e->type->children[i];
		}
	if (t != NULL && t->kind == AVRO_UNION && t->nchildren == 2)
		t = t->children[t->children[0]->kind == AVRO_NULL ? 1 : 0];
	old = MemoryContextSwitchTo(e->cxt);
	if (t != NULL)
		e->field_fields = record_fields(t, psprintf("%s, field %s", what, name));
	else
	{
		e->field_fields = palloc0(sizeof(EoiSchemaFields));
		e->field_fields->what = psprintf("%s, field %s", what, name);
		e->field_fields->type_name = "no field";
	}
	e->field_fields_of = pstrdup(name);
	MemoryContextSwitchTo(old);
	return e->field_fields;
}

/*
 * eoingest.test_avro_json_check: the record read by Avro C too, whose JSON
 * must be the same.
 */
static void
check_json(SchemaEntry *e, const unsigned char *body, size_t len, const char *what,
		   const StringInfo json)
{
	StringInfoData avro_c;

	read_value(e, body, len, what);
	initStringInfo(&avro_c);
	eoi_avro_append_json(&avro_c, &e->value, e->type);
	if (avro_c.len != json->len || memcmp(avro_c.data, json->data, json->len) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("Avro record written with %s reads as different JSON from its bytes and with Avro C", what),
				 errdetail("From its bytes: %s; with Avro C: %s.", json->data, avro_c.data)));
	pfree(avro_c.data);
}

/*
 * An Avro message as JSON text (eoingest.batch()'s value_json, mappings,
 * the Debezium envelope), and its length in *json_len: read straight from
 * its bytes once checked (avrojson.c).
 */
char *
eoi_avro_json(const char *value, size_t len, size_t *json_len, EoiJsonSpans *spans)
{
	char	   *what;
	const unsigned char *body;
	size_t		body_len;
	SchemaEntry *e = read_message(value, len, &what, &body, &body_len);
	StringInfoData out;

	check_record(e, body, body_len, what);
	initStringInfo(&out);
	eoi_avro_bytes_json(&out, body, body_len, e->type, spans);
	if (spans != NULL)
		spans->text = out.data;	/* not moved again: nothing is appended */
	if (eoingest_test_avro_json_check)
		check_json(e, body, body_len, what, &out);
	*json_len = out.len;
	return out.data;
}
