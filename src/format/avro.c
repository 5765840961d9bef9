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
 * Avro C knows no logical types: the schema's JSON is read here for
 * logicalType, precision and scale, into a tree (AvroType) that parallels
 * Avro C's schema.  Each field becomes the text of a COPY field: the sink
 * parses the text with the column type's input function, as for the other
 * formats.  Strings are checked for the database encoding (and NUL bytes)
 * here, since a binary message cannot be checked as a whole.
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
#include <avro/schema.h>
#include <avro/value.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
#include "utils/varbit.h"

#include "format/avro.h"
#include "format/avrocheck.h"
#include "format/avroflat.h"
#include "format/registry.h"
#include "format/wirenum.h"
#include "kafka/batch.h"

/* Logical types, as the schema's JSON names them. */
typedef enum Logical
{
	L_NONE,
	L_DECIMAL,
	L_DATE,
	L_TIME_MILLIS,
	L_TIME_MICROS,
	L_TIMESTAMP_MILLIS,
	L_TIMESTAMP_MICROS,
	L_TIMESTAMP_NANOS,
	L_LOCAL_TIMESTAMP_MILLIS,
	L_LOCAL_TIMESTAMP_MICROS,
	L_LOCAL_TIMESTAMP_NANOS,
	L_UUID,
	L_DURATION,
	/* Debezium's, by connect.name */
	L_TIME_NANOS,				/* io.debezium.time.NanoTime: long */
	L_VARIABLE_DECIMAL,			/* io.debezium.data.VariableScaleDecimal: record */
	L_BITS						/* io.debezium.data.Bits: bytes, scale = length */
} Logical;

/* A node of the writer's schema, with what Avro C does not keep. */
typedef struct AvroType
{
	avro_schema_t schema;		/* Avro C's node, links resolved */
	avro_type_t kind;
	Logical		logical;
	int			scale;			/* decimal; bits: their number, or -1 */
	int			nchildren;		/* record fields, union branches, items, values */
	struct AvroType **children;
} AvroType;

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

	if (job->format != EOI_FORMAT_AVRO && job->key_format != EOI_FORMAT_AVRO)
		return;
	generation = eoi_registry_configure(job->schema_registry, job->options, job->owner);
	if (generation != schemas_generation)
	{
		drop_schemas();
		schemas_generation = generation;
	}
}

/* ---- the schema's JSON, for logical types ---- */

static bool
json_key(JsonbValue *obj, const char *key, JsonbValue *out)
{
	if (obj == NULL || obj->type != jbvBinary || !JsonContainerIsObject(obj->val.binary.data))
		return false;
	return getKeyJsonValueFromContainer(obj->val.binary.data, key, strlen(key), out) != NULL;
}

static bool
json_elem(JsonbValue *arr, int i, JsonbValue *out)
{
	JsonbValue *v;

	if (arr == NULL || arr->type != jbvBinary || !JsonContainerIsArray(arr->val.binary.data))
		return false;
	v = getIthJsonbValueFromContainer(arr->val.binary.data, i);
	if (v == NULL)
		return false;
	*out = *v;
	return true;
}

static bool
json_is(JsonbValue *v, const char *s)
{
	return v->type == jbvString && v->val.string.len == strlen(s) &&
		strncmp(v->val.string.val, s, v->val.string.len) == 0;
}

static int
json_int(JsonbValue *obj, const char *key, int fallback)
{
	JsonbValue	v;

	if (!json_key(obj, key, &v) || v.type != jbvNumeric)
		return fallback;
	return DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(v.val.numeric)));
}

/*
 * Kafka Connect's AvroConverter marks Debezium's time types with a
 * "connect.name" property and no logicalType (io.debezium.time.Date is an
 * int of days, MicroTimestamp a long of microseconds, ...): read them as
 * the logical type of the same unit, so that they come out as dates and
 * times, not as numbers.  Debezium's timestamps count from the epoch in
 * UTC, with or without a zone in the source: rendered with "+00", they are
 * right for timestamp and timestamptz columns alike.
 */
static Logical
connect_logical_of(JsonbValue *json, avro_type_t kind, int *scale)
{
	static const struct
	{
		const char *name;
		avro_type_t kind;
		Logical		logical;
	}			names[] = {
		{"io.debezium.time.Date", AVRO_INT32, L_DATE},
		{"io.debezium.time.Time", AVRO_INT32, L_TIME_MILLIS},
		{"io.debezium.time.MicroTime", AVRO_INT64, L_TIME_MICROS},
		{"io.debezium.time.Timestamp", AVRO_INT64, L_TIMESTAMP_MILLIS},
		{"io.debezium.time.MicroTimestamp", AVRO_INT64, L_TIMESTAMP_MICROS},
		{"io.debezium.time.NanoTimestamp", AVRO_INT64, L_TIMESTAMP_NANOS},
		{"io.debezium.time.NanoTime", AVRO_INT64, L_TIME_NANOS},
		{"io.debezium.data.VariableScaleDecimal", AVRO_RECORD, L_VARIABLE_DECIMAL},
		{"io.debezium.data.Bits", AVRO_BYTES, L_BITS},
	};
	JsonbValue	cn;
	JsonbValue	params;
	JsonbValue	length;

	if (!json_key(json, "connect.name", &cn) || cn.type != jbvString)
		return L_NONE;
	for (int i = 0; i < lengthof(names); i++)
	{
		if (names[i].kind != kind || !json_is(&cn, names[i].name))
			continue;
		/* Bits: as many as connect.parameters' length (a string), else all the bytes' */
		*scale = -1;
		if (names[i].logical == L_BITS && json_key(json, "connect.parameters", &params) &&
			json_key(&params, "length", &length) && length.type == jbvString)
		{
			char	   *text = pnstrdup(length.val.string.val, length.val.string.len);
			char	   *end;
			long		n = strtol(text, &end, 10);

			if (*text != '\0' && *end == '\0' && n >= 0 && n <= VARBITMAXLEN)
				*scale = (int) n;
		}
		return names[i].logical;
	}
	return L_NONE;
}

/*
 * The logical type `json` annotates on a node of kind `kind`.  One that
 * does not fit its base type is ignored, as the Avro specification says.
 */
static Logical
logical_of(JsonbValue *json, avro_schema_t s, avro_type_t kind, int *scale)
{
	JsonbValue	lt;

	if (!json_key(json, "logicalType", &lt) || lt.type != jbvString)
		return connect_logical_of(json, kind, scale);
	if (json_is(&lt, "decimal") && (kind == AVRO_BYTES || kind == AVRO_FIXED))
	{
		*scale = json_int(json, "scale", 0);
		return L_DECIMAL;
	}
	if (json_is(&lt, "uuid") && (kind == AVRO_STRING ||
								 (kind == AVRO_FIXED && avro_schema_fixed_size(s) == 16)))
		return L_UUID;
	if (json_is(&lt, "duration") && kind == AVRO_FIXED && avro_schema_fixed_size(s) == 12)
		return L_DURATION;
	if (kind == AVRO_INT32)
	{
		if (json_is(&lt, "date"))
			return L_DATE;
		if (json_is(&lt, "time-millis"))
			return L_TIME_MILLIS;
	}
	if (kind == AVRO_INT64)
	{
		static const struct
		{
			const char *name;
			Logical		logical;
		}			longs[] = {
			{"time-micros", L_TIME_MICROS},
			{"timestamp-millis", L_TIMESTAMP_MILLIS},
			{"timestamp-micros", L_TIMESTAMP_MICROS},
			{"timestamp-nanos", L_TIMESTAMP_NANOS},
			{"local-timestamp-millis", L_LOCAL_TIMESTAMP_MILLIS},
			{"local-timestamp-micros", L_LOCAL_TIMESTAMP_MICROS},
			{"local-timestamp-nanos", L_LOCAL_TIMESTAMP_NANOS},
		};

		for (int i = 0; i < lengthof(longs); i++)
			if (json_is(&lt, longs[i].name))
				return longs[i].logical;
	}
	return L_NONE;
}

typedef struct Builder
{
	List	   *named;			/* of AvroType: records, enums, fixed seen */
} Builder;

/*
 * The tree for Avro C's node `s`, whose JSON is `json` (an object, an
 * array for a union, or a name).  A named type is built once, where it is
 * defined; references to it (Avro C's links, or the same node again) share
 * that AvroType, so recursive schemas are finite here too.
 */
static AvroType *
build_type(Builder *b, avro_schema_t s, JsonbValue *json)
{
	AvroType   *t;
	JsonbValue	sub;
	JsonbValue	field;

	check_stack_depth();
	if (is_avro_link(s))
		s = avro_schema_link_target(s);
	if (is_avro_named_type(s))
	{
		ListCell   *lc;

		foreach(lc, b->named)
			if (((AvroType *) lfirst(lc))->schema == s)
				return lfirst(lc);
	}
	t = palloc0(sizeof(AvroType));
	t->schema = s;
	t->kind = avro_typeof(s);
	if (is_avro_named_type(s))
		b->named = lappend(b->named, t);
	t->logical = logical_of(json, s, t->kind, &t->scale);

	switch (t->kind)
	{
		case AVRO_RECORD:
			t->nchildren = avro_schema_record_size(s);
			t->children = palloc0(sizeof(AvroType *) * Max(t->nchildren, 1));
			for (int i = 0; i < t->nchildren; i++)
			{
				JsonbValue	fields;
				bool		have = json_key(json, "fields", &fields) &&
					json_elem(&fields, i, &field) && json_key(&field, "type", &sub);

				t->children[i] = build_type(b, avro_schema_record_field_get_by_index(s, i),
											have ? &sub : NULL);
			}
			break;
		case AVRO_UNION:
			t->nchildren = avro_schema_union_size(s);
			t->children = palloc0(sizeof(AvroType *) * Max(t->nchildren, 1));
			for (int i = 0; i < t->nchildren; i++)
			{
				bool		have = json_elem(json, i, &sub);

				t->children[i] = build_type(b, avro_schema_union_branch(s, i), have ? &sub : NULL);
			}
			break;
		case AVRO_ARRAY:
		case AVRO_MAP:
			t->nchildren = 1;
			t->children = palloc0(sizeof(AvroType *));
			{
				bool		have = json_key(json, t->kind == AVRO_ARRAY ? "items" : "values", &sub);

				t->children[0] = build_type(b, t->kind == AVRO_ARRAY ? avro_schema_array_items(s) :
											avro_schema_map_values(s), have ? &sub : NULL);
			}
			break;
		default:
			break;
	}
	return t;
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
	e->type = build_type(&b, schema, &root);
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

/* ---- values as text ---- */

static void
bad_value(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("Avro %s is out of range for PostgreSQL", what)));
}

/* Avro strings are UTF-8: check (and convert) for the database, no NUL. */
static const char *
server_string(const char *s, size_t len)
{
	if (len == 0)
		return "";
	return pg_any_to_server(s, (int) len, PG_UTF8);
}

static void
append_hex(StringInfo out, const unsigned char *b, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	enlargeStringInfo(out, 2 * n + 2);
	appendStringInfoString(out, "\\x");
	for (size_t i = 0; i < n; i++)
	{
		out->data[out->len++] = hex[b[i] >> 4];
		out->data[out->len++] = hex[b[i] & 15];
	}
	out->data[out->len] = '\0';
}

/* Nanoseconds as microseconds: PostgreSQL keeps those; towards minus infinity. */
static int64
floor_div_1000(int64 v)
{
	return v / 1000 - (v % 1000 < 0 ? 1 : 0);
}

/* Days since 1970-01-01 as a PostgreSQL date. */
static DateADT
date_of(int32 days)
{
	int64		d = (int64) days - (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE);

	if (!IS_VALID_DATE(d))
		bad_value("date");
	return (DateADT) d;
}

static TimeADT
time_of(int64 usecs)
{
	if (usecs < 0 || usecs > USECS_PER_DAY)
		bad_value("time");
	return (TimeADT) usecs;
}

/* A Unix-epoch count in `unit` (1 ms, 2 us, 3 ns) as a PostgreSQL timestamp. */
static Timestamp
timestamp_of(int64 v, int unit)
{
	int64		us = v;
	Timestamp	ts;

	if (unit == 1 && pg_mul_s64_overflow(v, 1000, &us))
		bad_value("timestamp");
	if (unit == 3)
		us = floor_div_1000(v);
	if (pg_sub_s64_overflow(us, (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY, &ts) ||
		!IS_VALID_TIMESTAMP(ts))
		bad_value("timestamp");
	return ts;
}

static void
append_date(StringInfo out, int32 days)
{
	appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(date_out, DateADTGetDatum(date_of(days)))));
}

static void
append_time(StringInfo out, int64 usecs)
{
	appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(time_out, TimeADTGetDatum(time_of(usecs)))));
}

static void
append_timestamp(StringInfo out, int64 v, int unit, bool with_zone)
{
	Timestamp	ts = timestamp_of(v, unit);

	appendStringInfoString(out, DatumGetCString(with_zone ?
												DirectFunctionCall1(timestamptz_out, TimestampTzGetDatum(ts)) :
												DirectFunctionCall1(timestamp_out, TimestampGetDatum(ts))));
}

static uint32
le32(const unsigned char *b)
{
	return (uint32) b[0] | ((uint32) b[1] << 8) | ((uint32) b[2] << 16) | ((uint32) b[3] << 24);
}

/* A duration (fixed(12): months, days, milliseconds, little-endian). */
static Interval *
interval_of(const unsigned char *b)
{
	Interval   *iv = palloc0(sizeof(Interval));
	uint32		months = le32(b);
	uint32		days = le32(b + 4);

	if (months > PG_INT32_MAX || days > PG_INT32_MAX)
		bad_value("duration");
	iv->month = (int32) months;
	iv->day = (int32) days;
	iv->time = (int64) le32(b + 8) * 1000;
	return iv;
}

static void
append_duration(StringInfo out, const unsigned char *b)
{
	appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(interval_of(b)))));
}

static void
append_uuid(StringInfo out, const unsigned char *b)
{
	appendStringInfo(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
					 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
					 b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

static void
avro_failed(const char *call)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("could not read an Avro value (%s): %s", call, avro_strerror())));
}

/* Follow a union to the branch the value holds. */
static void
resolve_union(avro_value_t **v, avro_value_t *branch, AvroType **t)
{
	while ((*t)->kind == AVRO_UNION)
	{
		int			d = -1;

		if (avro_value_get_discriminant(*v, &d) != 0 ||
			avro_value_get_current_branch(*v, branch) != 0 ||
			d < 0 || d >= (*t)->nchildren)
			avro_failed("union");
		*v = branch;
		*t = (*t)->children[d];
	}
}

static void append_json(StringInfo out, avro_value_t *v, AvroType *t);
static bool append_variable_decimal(StringInfo out, avro_value_t *v, AvroType *t);

static void
value_bytes(avro_value_t *v, AvroType *t, const void **buf, size_t *size)
{
	int			rc = t->kind == AVRO_BYTES ? avro_value_get_bytes(v, buf, size) :
	avro_value_get_fixed(v, buf, size);

	if (rc != 0)
		avro_failed(t->kind == AVRO_BYTES ? "bytes" : "fixed");
}

static const char *
enum_symbol(avro_value_t *v, AvroType *t)
{
	int			i = -1;
	const char *symbol = NULL;

	if (avro_value_get_enum(v, &i) != 0)
		avro_failed("enum");
	/* Avro C reads any index: check it against the symbols */
	if (i < 0 || i >= avro_schema_enum_number_of_symbols(t->schema) ||
		(symbol = avro_schema_enum_get(t->schema, i)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("Avro enum %s has no symbol %d", avro_schema_name(t->schema), i)));
	return symbol;
}

/*
 * The text of a scalar value (not null, record, map or array), as the
 * column type's input function reads it.
 */
static void
append_scalar(StringInfo out, avro_value_t *v, AvroType *t)
{
	switch (t->kind)
	{
		case AVRO_BOOLEAN:
			{
				int			b = 0;

				if (avro_value_get_boolean(v, &b) != 0)
					avro_failed("boolean");
				appendStringInfoString(out, b ? "true" : "false");
				return;
			}
		case AVRO_INT32:
			{
				int32_t		i = 0;

				if (avro_value_get_int(v, &i) != 0)
					avro_failed("int");
				if (t->logical == L_DATE)
					append_date(out, i);
				else if (t->logical == L_TIME_MILLIS)
					append_time(out, (int64) i * 1000);
				else
					appendStringInfo(out, "%d", (int) i);
				return;
			}
		case AVRO_INT64:
			{
				int64_t		l = 0;

				if (avro_value_get_long(v, &l) != 0)
					avro_failed("long");
				switch (t->logical)
				{
					case L_TIME_MICROS:
						append_time(out, l);
						break;
					case L_TIME_NANOS:
						append_time(out, floor_div_1000(l));
						break;
					case L_TIMESTAMP_MILLIS:
					case L_TIMESTAMP_MICROS:
					case L_TIMESTAMP_NANOS:
						append_timestamp(out, l, t->logical - L_TIMESTAMP_MILLIS + 1, true);
						break;
					case L_LOCAL_TIMESTAMP_MILLIS:
					case L_LOCAL_TIMESTAMP_MICROS:
					case L_LOCAL_TIMESTAMP_NANOS:
						append_timestamp(out, l, t->logical - L_LOCAL_TIMESTAMP_MILLIS + 1, false);
						break;
					default:
						appendStringInfo(out, INT64_FORMAT, (int64) l);
				}
				return;
			}
		case AVRO_FLOAT:
			{
				float		f = 0;

				if (avro_value_get_float(v, &f) != 0)
					avro_failed("float");
				appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(float4out, Float4GetDatum(f))));
				return;
			}
		case AVRO_DOUBLE:
			{
				double		d = 0;

				if (avro_value_get_double(v, &d) != 0)
					avro_failed("double");
				appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(float8out, Float8GetDatum(d))));
				return;
			}
		case AVRO_STRING:
			{
				const char *s = NULL;
				size_t		size = 0;

				if (avro_value_get_string(v, &s, &size) != 0)
					avro_failed("string");
				/* Avro C counts a NUL it adds, except for an empty string */
				if (s == NULL || size == 0)
					return;
				if (s[size - 1] == '\0')
					size--;
				{
					const char *converted = server_string(s, size);

					if (converted == s)
						appendBinaryStringInfo(out, s, size);
					else
						appendStringInfoString(out, converted);
				}
				return;
			}
		case AVRO_BYTES:
		case AVRO_FIXED:
			{
				const void *buf = NULL;
				size_t		size = 0;

				value_bytes(v, t, &buf, &size);
				if (t->logical == L_DECIMAL)
					eoi_append_decimal(out, buf, size, t->scale);
				else if (t->logical == L_DURATION && size == 12)
					append_duration(out, buf);
				else if (t->logical == L_UUID && size == 16)
					append_uuid(out, buf);
				else if (t->logical == L_BITS)
					eoi_append_bits(out, buf, size, t->scale);
				else
					append_hex(out, buf, size);
				return;
			}
		case AVRO_ENUM:
			appendStringInfoString(out, enum_symbol(v, t));
			return;
		default:
			append_json(out, v, t);
			return;
	}
}

static void
append_json_string(StringInfo out, const char *s)
{
	escape_json(out, s);
}

/* The value as JSON text (records and maps as objects, arrays as arrays). */
static void
append_json(StringInfo out, avro_value_t *v, AvroType *t)
{
	avro_value_t branch;
	size_t		n = 0;

	check_stack_depth();
	resolve_union(&v, &branch, &t);
	switch (t->kind)
	{
		case AVRO_NULL:
			appendStringInfoString(out, "null");
			return;
		case AVRO_BOOLEAN:
			append_scalar(out, v, t);
			return;
		case AVRO_INT32:
		case AVRO_INT64:
		case AVRO_FLOAT:
		case AVRO_DOUBLE:
			if (t->logical == L_NONE)
			{
				StringInfoData num;

				initStringInfo(&num);
				append_scalar(&num, v, t);
				/* JSON has no NaN or Infinity: those become strings */
				if (strspn(num.data, "0123456789+-.eE") != num.len)
					append_json_string(out, num.data);
				else
					appendStringInfoString(out, num.data);
				return;
			}
			break;
		case AVRO_BYTES:
		case AVRO_FIXED:
			if (t->logical == L_DECIMAL)
			{
				append_scalar(out, v, t);
				return;
			}
			break;
		case AVRO_RECORD:
			if (t->logical == L_VARIABLE_DECIMAL && append_variable_decimal(out, v, t))
				return;
			appendStringInfoChar(out, '{');
			for (int i = 0; i < t->nchildren; i++)
			{
				avro_value_t child;

				if (avro_value_get_by_index(v, i, &child, NULL) != 0)
					avro_failed("record");
				if (i > 0)
					appendStringInfoChar(out, ',');
				append_json_string(out, avro_schema_record_field_name(t->schema, i));
				appendStringInfoChar(out, ':');
				append_json(out, &child, t->children[i]);
			}
			appendStringInfoChar(out, '}');
			return;
		case AVRO_MAP:
		case AVRO_ARRAY:
			if (avro_value_get_size(v, &n) != 0)
				avro_failed(t->kind == AVRO_MAP ? "map" : "array");
			appendStringInfoChar(out, t->kind == AVRO_MAP ? '{' : '[');
			for (size_t i = 0; i < n; i++)
			{
				avro_value_t child;
				const char *key = NULL;

				if (avro_value_get_by_index(v, i, &child, &key) != 0)
					avro_failed(t->kind == AVRO_MAP ? "map" : "array");
				if (i > 0)
					appendStringInfoChar(out, ',');
				if (t->kind == AVRO_MAP)
				{
					append_json_string(out, server_string(key, strlen(key)));
					appendStringInfoChar(out, ':');
				}
				append_json(out, &child, t->children[0]);
			}
			appendStringInfoChar(out, t->kind == AVRO_MAP ? '}' : ']');
			return;
		default:
			break;
	}
	/* strings, enums, logical types: their text as a JSON string */
	{
		StringInfoData text;

		initStringInfo(&text);
		append_scalar(&text, v, t);
		append_json_string(out, text.data);
	}
}

/*
 * Debezium's VariableScaleDecimal, a record {scale int, value bytes (a
 * decimal's unscaled value)}: its digits, as a JSON number.  False for a
 * record of that name whose fields are something else.
 */
static bool
append_variable_decimal(StringInfo out, avro_value_t *v, AvroType *t)
{
	int			si = avro_schema_record_field_get_index(t->schema, "scale");
	int			vi = avro_schema_record_field_get_index(t->schema, "value");
	avro_value_t scale;
	avro_value_t value;
	int32_t		s = 0;
	const void *buf = NULL;
	size_t		size = 0;

	if (si < 0 || vi < 0 || t->nchildren != 2 ||
		t->children[si]->kind != AVRO_INT32 || t->children[vi]->kind != AVRO_BYTES)
		return false;
	if (avro_value_get_by_index(v, si, &scale, NULL) != 0 || avro_value_get_int(&scale, &s) != 0 ||
		avro_value_get_by_index(v, vi, &value, NULL) != 0 || avro_value_get_bytes(&value, &buf, &size) != 0)
		avro_failed("VariableScaleDecimal");
	eoi_append_decimal(out, buf, size, s);
	return true;
}

/* An Avro array as the text of a PostgreSQL array of `elemtype`. */
static void
append_pg_array(StringInfo out, avro_value_t *v, AvroType *t, Oid elemtype)
{
	size_t		n = 0;
	StringInfoData elem;

	check_stack_depth();
	if (avro_value_get_size(v, &n) != 0)
		avro_failed("array");
	initStringInfo(&elem);
	appendStringInfoChar(out, '{');
	for (size_t i = 0; i < n; i++)
	{
		avro_value_t child;
		avro_value_t branch;
		avro_value_t *c = &child;
		AvroType   *ct = t->children[0];

		if (avro_value_get_by_index(v, i, &child, NULL) != 0)
			avro_failed("array");
		if (i > 0)
			appendStringInfoChar(out, ',');
		resolve_union(&c, &branch, &ct);
		if (ct->kind == AVRO_NULL)
		{
			appendStringInfoString(out, "NULL");
			continue;
		}
		if (ct->kind == AVRO_ARRAY && elemtype != JSONBOID && elemtype != JSONOID)
		{
			append_pg_array(out, c, ct, elemtype);	/* a dimension more */
			continue;
		}
		resetStringInfo(&elem);
		if (elemtype == JSONBOID || elemtype == JSONOID)
			append_json(&elem, c, ct);
		else
			append_scalar(&elem, c, ct);
		appendStringInfoChar(out, '"');
		for (int k = 0; k < elem.len; k++)
		{
			if (elem.data[k] == '"' || elem.data[k] == '\\')
				appendStringInfoChar(out, '\\');
			appendStringInfoChar(out, elem.data[k]);
		}
		appendStringInfoChar(out, '"');
	}
	appendStringInfoChar(out, '}');
}

/*
 * The text of `v` for a column of type `typid` (InvalidOid: not known);
 * false for NULL.
 */
static bool
value_text(StringInfo out, avro_value_t *v, AvroType *t, Oid typid)
{
	avro_value_t branch;

	resolve_union(&v, &branch, &t);
	if (t->kind == AVRO_NULL)
		return false;
	if (typid == JSONBOID || typid == JSONOID)
	{
		append_json(out, v, t);
		return true;
	}
	if (t->kind == AVRO_ARRAY && OidIsValid(typid))
	{
		Oid			elemtype = get_element_type(typid);

		if (OidIsValid(elemtype))
		{
			append_pg_array(out, v, t, elemtype);
			return true;
		}
	}
	append_scalar(out, v, t);
	return true;
}

/*
 * A primitive as a datum of type `typid`, for the pairs whose type is the
 * column's (int and long into int4 and int8, float, double, boolean,
 * string into text): exactly what the type's input function makes of
 * scalar_text's text, without the text.  False for other pairs, which take
 * the text.
 */
static bool
scalar_datum(const EoiAvroScalar *sc, Oid typid, Datum *out)
{
	switch (sc->kind)
	{
		case AVRO_INT32:
			if (typid != INT4OID && typid != INT8OID)
				return false;
			*out = typid == INT4OID ? Int32GetDatum((int32) sc->l) : Int64GetDatum(sc->l);
			return true;
		case AVRO_INT64:
			if (typid != INT8OID)
				return false;
			*out = Int64GetDatum(sc->l);
			return true;
		case AVRO_FLOAT:
			if (typid != FLOAT4OID)
				return false;
			*out = Float4GetDatum(sc->f);
			return true;
		case AVRO_DOUBLE:
			if (typid != FLOAT8OID)
				return false;
			*out = Float8GetDatum(sc->d);
			return true;
		case AVRO_BOOLEAN:
			if (typid != BOOLOID)
				return false;
			*out = BoolGetDatum(sc->b);
			return true;
		case AVRO_STRING:
			{
				const char *converted;

				if (typid != TEXTOID)
					return false;
				converted = server_string(sc->s, sc->len);
				*out = PointerGetDatum(converted == sc->s ?
									   cstring_to_text_with_len(sc->s, (int) sc->len) :
									   cstring_to_text(converted));
				return true;
			}
		default:
			return false;
	}
}

/* A primitive's text, as append_scalar writes it. */
static void
scalar_text(StringInfo out, const EoiAvroScalar *sc)
{
	switch (sc->kind)
	{
		case AVRO_BOOLEAN:
			appendStringInfoString(out, sc->b ? "true" : "false");
			break;
		case AVRO_INT32:
			appendStringInfo(out, "%d", (int) sc->l);
			break;
		case AVRO_INT64:
			appendStringInfo(out, INT64_FORMAT, (int64) sc->l);
			break;
		case AVRO_FLOAT:
			appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(float4out, Float4GetDatum(sc->f))));
			break;
		case AVRO_DOUBLE:
			appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(float8out, Float8GetDatum(sc->d))));
			break;
		case AVRO_STRING:
			if (sc->len > 0)
			{
				const char *converted = server_string(sc->s, sc->len);

				if (converted == sc->s)
					appendBinaryStringInfo(out, sc->s, sc->len);
				else
					appendStringInfoString(out, converted);
			}
			break;
		default:
			elog(ERROR, "unexpected Avro type %d in a flat record", (int) sc->kind);
	}
}

/*
 * The primitive `v` holds, through Avro C's getters; false for another
 * type or a logical type.
 */
static bool
value_scalar(avro_value_t *v, AvroType *t, EoiAvroScalar *sc)
{
	int32_t		i = 0;
	int64_t		l = 0;
	int			b = 0;

	if (t->logical != L_NONE)
		return false;
	sc->kind = t->kind;
	switch (t->kind)
	{
		case AVRO_INT32:
			if (avro_value_get_int(v, &i) != 0)
				avro_failed("int");
			sc->l = i;
			return true;
		case AVRO_INT64:
			if (avro_value_get_long(v, &l) != 0)
				avro_failed("long");
			sc->l = l;
			return true;
		case AVRO_FLOAT:
			if (avro_value_get_float(v, &sc->f) != 0)
				avro_failed("float");
			return true;
		case AVRO_DOUBLE:
			if (avro_value_get_double(v, &sc->d) != 0)
				avro_failed("double");
			return true;
		case AVRO_BOOLEAN:
			if (avro_value_get_boolean(v, &b) != 0)
				avro_failed("boolean");
			sc->b = b != 0;
			return true;
		case AVRO_STRING:
			sc->s = NULL;
			sc->len = 0;
			if (avro_value_get_string(v, &sc->s, &sc->len) != 0)
				avro_failed("string");
			/* Avro C counts a NUL it adds, except for an empty string */
			if (sc->s == NULL || sc->len == 0)
			{
				sc->s = "";
				sc->len = 0;
			}
			else if (sc->s[sc->len - 1] == '\0')
				sc->len--;
			return true;
		default:
			return false;
	}
}

/*
 * A decimal's unscaled value of at most 8 bytes as a numeric: the same
 * digits and display scale as numeric_in makes of eoi_append_decimal's text
 * (the scale, or none for a negative one).  False for longer values and
 * scales beyond numeric's display scale, which take the text.
 */
static bool
decimal_datum(const unsigned char *b, size_t n, int scale, Datum *out)
{
	int64		unscaled = n > 0 && (b[0] & 0x80) ? -1 : 0;

	if (n > sizeof(int64) || scale > NUMERIC_MAX_DISPLAY_SCALE || scale < -NUMERIC_MAX_DISPLAY_SCALE)
		return false;
	for (size_t i = 0; i < n; i++)
		unscaled = (int64) (((uint64) unscaled << 8) | b[i]);
	*out = NumericGetDatum(int64_div_fast_to_numeric(unscaled, scale));
	return true;
}

/*
 * A logical type, bytes, fixed or an enum as a datum of the column's type,
 * for the pairs where the column's type is what the value means (date into
 * date, timestamp-* into timestamptz, local-timestamp-* into timestamp,
 * time-* into time, decimal into numeric, duration into interval, a fixed
 * uuid into uuid, bytes into bytea, an enum into text): the value
 * append_scalar's text would give through the type's input function,
 * with the same range checks (the column's typmod, if any, is the
 * writer's to apply).  False for the other pairs, which take the text.
 */
static bool
logical_datum(avro_value_t *v, AvroType *t, Oid typid, Datum *out)
{
	int32_t		i = 0;
	int64_t		l = 0;
	const void *buf = NULL;
	size_t		size = 0;

	switch (t->kind)
	{
		case AVRO_INT32:
			if (!((t->logical == L_DATE && typid == DATEOID) ||
				  (t->logical == L_TIME_MILLIS && typid == TIMEOID)))
				return false;
			if (avro_value_get_int(v, &i) != 0)
				avro_failed("int");
			*out = t->logical == L_DATE ? DateADTGetDatum(date_of(i)) :
				TimeADTGetDatum(time_of((int64) i * 1000));
			return true;
		case AVRO_INT64:
			if (!(((t->logical == L_TIME_MICROS || t->logical == L_TIME_NANOS) && typid == TIMEOID) ||
				  (t->logical >= L_TIMESTAMP_MILLIS && t->logical <= L_TIMESTAMP_NANOS &&
				   typid == TIMESTAMPTZOID) ||
				  (t->logical >= L_LOCAL_TIMESTAMP_MILLIS && t->logical <= L_LOCAL_TIMESTAMP_NANOS &&
				   typid == TIMESTAMPOID)))
				return false;
			if (avro_value_get_long(v, &l) != 0)
				avro_failed("long");
			if (t->logical == L_TIME_MICROS)
				*out = TimeADTGetDatum(time_of(l));
			else if (t->logical == L_TIME_NANOS)
				*out = TimeADTGetDatum(time_of(floor_div_1000(l)));
			else if (typid == TIMESTAMPTZOID)
				*out = TimestampTzGetDatum(timestamp_of(l, t->logical - L_TIMESTAMP_MILLIS + 1));
			else
				*out = TimestampGetDatum(timestamp_of(l, t->logical - L_LOCAL_TIMESTAMP_MILLIS + 1));
			return true;
		case AVRO_BYTES:
		case AVRO_FIXED:
			value_bytes(v, t, &buf, &size);
			if (t->logical == L_DECIMAL)
				return typid == NUMERICOID && decimal_datum(buf, size, t->scale, out);
			if (t->logical == L_DURATION && size == 12)
			{
				if (typid != INTERVALOID)
					return false;
				*out = IntervalPGetDatum(interval_of(buf));
				return true;
			}
			if (t->logical == L_UUID && size == 16)
			{
				pg_uuid_t  *uuid;

				if (typid != UUIDOID)
					return false;
				uuid = palloc(sizeof(pg_uuid_t));
				memcpy(uuid->data, buf, UUID_LEN);
				*out = UUIDPGetDatum(uuid);
				return true;
			}
			if (typid != BYTEAOID || t->logical == L_BITS)
				return false;
			/* Avro C may have no buffer for an empty value */
			*out = PointerGetDatum(eoi_message_bytes(size > 0 ? buf : "", size));
			return true;
		case AVRO_ENUM:
			if (typid != TEXTOID)
				return false;
			*out = CStringGetTextDatum(enum_symbol(v, t));
			return true;
		default:
			return false;
	}
}

/*
 * The value of `v` as a datum of type `typid`, when scalar_datum or
 * logical_datum has one.
 */
static bool
value_datum(avro_value_t *v, AvroType *t, Oid typid, Datum *out)
{
	avro_value_t branch;
	EoiAvroScalar sc;

	resolve_union(&v, &branch, &t);
	if (t->logical != L_NONE || t->kind == AVRO_BYTES || t->kind == AVRO_FIXED || t->kind == AVRO_ENUM)
		return logical_datum(v, t, typid, out);
	return value_scalar(v, t, &sc) && scalar_datum(&sc, typid, out);
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

	if (writer->datum != NULL && value_datum(v, t, typid, &f->value))
	{
		f->kind = AF_DATUM;
		return;
	}
	initStringInfo(&f->text);
	f->kind = value_text(&f->text, v, t, typid) ? AF_TEXT : AF_NULL;
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
					 errhint("eoingest reads Avro values nested at most %d levels deep, with at most %d array items that take no bytes in one record.",
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
		append_uuid(&guid, p + 1);
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

/*
 * Which field of a record type fills each column (-1: none, the column's
 * default), looked up once per record type and columns, not per record.
 * The maps hang from cols->avro; they are of one generation of the schema
 * cache, whose types they point to, and go with it.
 */
typedef struct FieldMap
{
	AvroType   *type;
	uint64		generation;
	struct FieldMap *next;
	int			field[FLEXIBLE_ARRAY_MEMBER];
} FieldMap;

static const int *
field_map(EoiColumns *cols, AvroType *type)
{
	FieldMap   *m = cols->avro;

	if (m != NULL && m->generation != schemas_generation)
	{
		while (m != NULL)
		{
			FieldMap   *next = m->next;

			pfree(m);
			m = next;
		}
		cols->avro = NULL;
	}
	for (m = cols->avro; m != NULL; m = m->next)
		if (m->type == type)
			return m->field;
	m = MemoryContextAlloc(GetMemoryChunkContext(cols),
						   offsetof(FieldMap, field) + sizeof(int) * Max(cols->ncolumns, 1));
	m->type = type;
	m->generation = schemas_generation;
	for (int c = 0; c < cols->ncolumns; c++)
		m->field[c] = avro_schema_record_field_get_index(type->schema, cols->colnames[c]);
	m->next = cols->avro;
	cols->avro = m;
	return m->field;
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
	if (scalar_datum(sc, cols->typids[c], &f->value))
	{
		f->kind = AF_DATUM;
		return;
	}
	initStringInfo(&f->text);
	scalar_text(&f->text, sc);
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
		resolve_union(&top, &branch, &type);
	}

	if (type->kind != AVRO_RECORD)
	{
		if (cols->ncolumns != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("the value written with %s is %s, not a record, and %s %d columns", what,
							type->kind == AVRO_NULL ? "null" : psprintf("an Avro %s", avro_schema_type_name(type->schema)),
							cols->what, cols->ncolumns),
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
	field_of = field_map(cols, type);
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
				avro_failed("record");
			decode_field(cols, c, writer, &field, type->children[i], &fields[c]);
		}
	}
	for (int c = 0; c < cols->ncolumns; c++)
		write_field(cols, c, writer, &fields[c], econtext);
}

/*
 * Confluent's serializers can carry the schema id in a record header
 * instead of in front of the value (header_schema_id_serializer: magic
 * byte 1 and the schema's GUID in __value_schema_id, the value bare
 * Avro).  The header then decides, whatever the value's first byte (a
 * bare record may well start with 0x00).  The framed copy is what the
 * decoder reads and what a dead letter keeps: a replayed dead letter has
 * no headers.
 */
const char *
eoi_avro_framed(rd_kafka_message_t *msg, bool key, bool strict, size_t *len)
{
	const char *data = key ? msg->key : msg->payload;
	const char *header = key ? "__key_schema_id" : "__value_schema_id";
	rd_kafka_headers_t *hdrs;
	const void *id = NULL;
	size_t		idlen = 0;
	char	   *framed;

	*len = key ? msg->key_len : msg->len;
	/* a tombstone; a message of a replay (not librdkafka's), no headers */
	if (data == NULL || msg->_private == NULL ||
		rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
		rd_kafka_header_get_last(hdrs, header, &id, &idlen) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return data;
	if (id == NULL ||
		!((idlen == 5 && ((const unsigned char *) id)[0] == 0) ||
		  (idlen == 17 && ((const unsigned char *) id)[0] == 1)))
	{
		if (!strict)
			return data;
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("record header %s holds %zu bytes, which are no schema id", header,
						id == NULL ? (size_t) 0 : idlen),
				 errhint("The header holds magic byte 0 and a 4-byte schema id, or magic byte 1 and a 16-byte schema GUID, as Confluent's serializers write it.")));
	}
	framed = palloc(idlen + *len);
	memcpy(framed, id, idlen);
	memcpy(framed + idlen, data, *len);
	*len += idlen;
	return framed;
}

/* An Avro message as JSON text (eoingest.batch(): value_json). */
char *
eoi_avro_json(const char *value, size_t len)
{
	char	   *what;
	const unsigned char *body;
	size_t		body_len;
	SchemaEntry *e = read_message(value, len, &what, &body, &body_len);
	StringInfoData out;

	read_value(e, body, body_len, what);
	initStringInfo(&out);
	append_json(&out, &e->value, e->type);
	return out.data;
}
