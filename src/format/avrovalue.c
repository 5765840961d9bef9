/*-------------------------------------------------------------------------
 *
 * avrovalue.c
 *	  Format avro's values: an Avro C value of the writer's schema as the
 *	  text of a COPY field, as JSON, or as a datum of its column's type,
 *	  and avroflat.c's scalars as the same.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <avro/errors.h>

#include "common/int.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "format/avro.h"
#include "format/avro_internal.h"
#include "format/wirenum.h"
#include "kafka/batch.h"

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

void
eoi_avro_append_uuid(StringInfo out, const unsigned char *b)
{
	appendStringInfo(out, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
					 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
					 b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

void
eoi_avro_failed(const char *call)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("could not read an Avro value (%s): %s", call, avro_strerror())));
}

/* Follow a union to the branch the value holds. */
void
eoi_avro_resolve_union(avro_value_t **v, avro_value_t *branch, AvroType **t)
{
	while ((*t)->kind == AVRO_UNION)
	{
		int			d = -1;

		if (avro_value_get_discriminant(*v, &d) != 0 ||
			avro_value_get_current_branch(*v, branch) != 0 ||
			d < 0 || d >= (*t)->nchildren)
			eoi_avro_failed("union");
		*v = branch;
		*t = (*t)->children[d];
	}
}
static bool append_variable_decimal(StringInfo out, avro_value_t *v, AvroType *t);

/* An enum's symbol of index i, which Avro C reads whatever it is. */
static const char *
enum_symbol(AvroType *t, int64 i)
{
	const char *symbol = NULL;

	if (i < 0 || i >= avro_schema_enum_number_of_symbols(t->schema) ||
		(symbol = avro_schema_enum_get(t->schema, (int) i)) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("Avro enum %s has no symbol %lld", avro_schema_name(t->schema), (long long) i)));
	return symbol;
}

/*
 * The scalar `v` holds (not null, record, map, array or union), through
 * Avro C's getters, whatever its logical type: bytes and fixed into s and
 * len, an enum's index into l.
 */
static void
get_scalar(avro_value_t *v, AvroType *t, EoiAvroScalar *sc)
{
	int32_t		i = 0;
	int64_t		l = 0;
	int			b = 0;
	int			rc = 0;
	const void *buf = NULL;

	sc->kind = t->kind;
	switch (t->kind)
	{
		case AVRO_BOOLEAN:
			rc = avro_value_get_boolean(v, &b);
			sc->b = b != 0;
			break;
		case AVRO_INT32:
			rc = avro_value_get_int(v, &i);
			sc->l = i;
			break;
		case AVRO_INT64:
			rc = avro_value_get_long(v, &l);
			sc->l = l;
			break;
		case AVRO_FLOAT:
			rc = avro_value_get_float(v, &sc->f);
			break;
		case AVRO_DOUBLE:
			rc = avro_value_get_double(v, &sc->d);
			break;
		case AVRO_STRING:
			sc->s = NULL;
			sc->len = 0;
			rc = avro_value_get_string(v, &sc->s, &sc->len);
			/* Avro C counts a NUL it adds, except for an empty string */
			if (rc == 0 && (sc->s == NULL || sc->len == 0))
			{
				sc->s = "";
				sc->len = 0;
			}
			else if (rc == 0 && sc->s[sc->len - 1] == '\0')
				sc->len--;
			break;
		case AVRO_BYTES:
		case AVRO_FIXED:
			sc->len = 0;
			rc = t->kind == AVRO_BYTES ? avro_value_get_bytes(v, &buf, &sc->len) :
				avro_value_get_fixed(v, &buf, &sc->len);
			sc->s = buf;
			break;
		case AVRO_ENUM:
			rc = avro_value_get_enum(v, &b);
			sc->l = b;
			break;
		default:
			elog(ERROR, "unexpected Avro type %d for a scalar", (int) t->kind);
	}
	if (rc != 0)
		eoi_avro_failed(avro_schema_type_name(t->schema));
}

/*
 * The text of a scalar (not null, record, map or array), as the column
 * type's input function reads it.
 */
void
eoi_avro_append_scalar(StringInfo out, AvroType *t, const EoiAvroScalar *sc)
{
	const unsigned char *buf = (const unsigned char *) sc->s;

	switch (t->kind)
	{
		case AVRO_INT32:
			if (t->logical == L_DATE)
				append_date(out, (int32) sc->l);
			else if (t->logical == L_TIME_MILLIS)
				append_time(out, sc->l * 1000);
			else
				eoi_avro_scalar_text(out, sc);
			return;
		case AVRO_INT64:
			switch (t->logical)
			{
				case L_TIME_MICROS:
					append_time(out, sc->l);
					break;
				case L_TIME_NANOS:
					append_time(out, floor_div_1000(sc->l));
					break;
				case L_TIMESTAMP_MILLIS:
				case L_TIMESTAMP_MICROS:
				case L_TIMESTAMP_NANOS:
					append_timestamp(out, sc->l, t->logical - L_TIMESTAMP_MILLIS + 1, true);
					break;
				case L_LOCAL_TIMESTAMP_MILLIS:
				case L_LOCAL_TIMESTAMP_MICROS:
				case L_LOCAL_TIMESTAMP_NANOS:
					append_timestamp(out, sc->l, t->logical - L_LOCAL_TIMESTAMP_MILLIS + 1, false);
					break;
				default:
					eoi_avro_scalar_text(out, sc);
			}
			return;
		case AVRO_BOOLEAN:
		case AVRO_FLOAT:
		case AVRO_DOUBLE:
		case AVRO_STRING:
			eoi_avro_scalar_text(out, sc);
			return;
		case AVRO_BYTES:
		case AVRO_FIXED:
			if (t->logical == L_DECIMAL)
				eoi_append_decimal(out, buf, sc->len, t->scale);
			else if (t->logical == L_DURATION && sc->len == 12)
				append_duration(out, buf);
			else if (t->logical == L_UUID && sc->len == 16)
				eoi_avro_append_uuid(out, buf);
			else if (t->logical == L_BITS)
				eoi_append_bits(out, buf, sc->len, t->scale);
			else
				eoi_append_bytea_hex(out, buf, sc->len);
			return;
		case AVRO_ENUM:
			appendStringInfoString(out, enum_symbol(t, sc->l));
			return;
		default:
			elog(ERROR, "unexpected Avro type %d for a scalar", (int) t->kind);
	}
}

/* The text of a scalar value, or of anything else its JSON. */
static void
append_scalar(StringInfo out, avro_value_t *v, AvroType *t)
{
	EoiAvroScalar sc;

	switch (t->kind)
	{
		case AVRO_NULL:
		case AVRO_RECORD:
		case AVRO_MAP:
		case AVRO_ARRAY:
		case AVRO_UNION:
			eoi_avro_append_json(out, v, t);
			return;
		default:
			get_scalar(v, t, &sc);
			eoi_avro_append_scalar(out, t, &sc);
	}
}

static void
append_json_string(StringInfo out, const char *s)
{
	escape_json(out, s);
}

/*
 * A scalar (or null) as JSON: numbers without a logical type and decimals
 * as JSON numbers, booleans as such, everything else as its text in a
 * JSON string.
 */
void
eoi_avro_append_json_scalar(StringInfo out, AvroType *t, const EoiAvroScalar *sc)
{
	StringInfoData text;

	switch (t->kind)
	{
		case AVRO_NULL:
			appendStringInfoString(out, "null");
			return;
		case AVRO_BOOLEAN:
			appendStringInfoString(out, sc->b ? "true" : "false");
			return;
		case AVRO_INT32:
		case AVRO_INT64:
		case AVRO_FLOAT:
		case AVRO_DOUBLE:
			if (t->logical == L_NONE)
			{
				int			start = out->len;

				eoi_avro_append_scalar(out, t, sc);
				/* JSON has no NaN or Infinity: those become strings */
				if (strspn(out->data + start, "0123456789+-.eE") != out->len - start)
				{
					initStringInfo(&text);
					appendStringInfoString(&text, out->data + start);
					out->len = start;
					out->data[start] = '\0';
					append_json_string(out, text.data);
					pfree(text.data);
				}
				return;
			}
			break;
		case AVRO_BYTES:
		case AVRO_FIXED:
			if (t->logical == L_DECIMAL)
			{
				eoi_avro_append_scalar(out, t, sc);
				return;
			}
			break;
		default:
			break;
	}
	/* strings, enums, logical types: their text as a JSON string */
	initStringInfo(&text);
	eoi_avro_append_scalar(&text, t, sc);
	append_json_string(out, text.data);
	pfree(text.data);
}

/* The value as JSON text (records and maps as objects, arrays as arrays). */
void
eoi_avro_append_json(StringInfo out, avro_value_t *v, AvroType *t)
{
	avro_value_t branch;
	size_t		n = 0;
	EoiAvroScalar sc;

	check_stack_depth();
	eoi_avro_resolve_union(&v, &branch, &t);
	switch (t->kind)
	{
		case AVRO_NULL:
			eoi_avro_append_json_scalar(out, t, NULL);
			return;
		case AVRO_RECORD:
			if (t->logical == L_VARIABLE_DECIMAL && append_variable_decimal(out, v, t))
				return;
			appendStringInfoChar(out, '{');
			for (int i = 0; i < t->nchildren; i++)
			{
				avro_value_t child;

				if (avro_value_get_by_index(v, i, &child, NULL) != 0)
					eoi_avro_failed("record");
				if (i > 0)
					appendStringInfoChar(out, ',');
				append_json_string(out, avro_schema_record_field_name(t->schema, i));
				appendStringInfoChar(out, ':');
				eoi_avro_append_json(out, &child, t->children[i]);
			}
			appendStringInfoChar(out, '}');
			return;
		case AVRO_MAP:
		case AVRO_ARRAY:
			if (avro_value_get_size(v, &n) != 0)
				eoi_avro_failed(t->kind == AVRO_MAP ? "map" : "array");
			appendStringInfoChar(out, t->kind == AVRO_MAP ? '{' : '[');
			for (size_t i = 0; i < n; i++)
			{
				avro_value_t child;
				const char *key = NULL;

				if (avro_value_get_by_index(v, i, &child, &key) != 0)
					eoi_avro_failed(t->kind == AVRO_MAP ? "map" : "array");
				if (i > 0)
					appendStringInfoChar(out, ',');
				if (t->kind == AVRO_MAP)
				{
					append_json_string(out, server_string(key, strlen(key)));
					appendStringInfoChar(out, ':');
				}
				eoi_avro_append_json(out, &child, t->children[0]);
			}
			appendStringInfoChar(out, t->kind == AVRO_MAP ? '}' : ']');
			return;
		default:
			get_scalar(v, t, &sc);
			eoi_avro_append_json_scalar(out, t, &sc);
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
		eoi_avro_failed("VariableScaleDecimal");
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
		eoi_avro_failed("array");
	initStringInfo(&elem);
	appendStringInfoChar(out, '{');
	for (size_t i = 0; i < n; i++)
	{
		avro_value_t child;
		avro_value_t branch;
		avro_value_t *c = &child;
		AvroType   *ct = t->children[0];

		if (avro_value_get_by_index(v, i, &child, NULL) != 0)
			eoi_avro_failed("array");
		if (i > 0)
			appendStringInfoChar(out, ',');
		eoi_avro_resolve_union(&c, &branch, &ct);
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
			eoi_avro_append_json(&elem, c, ct);
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
bool
eoi_avro_value_text(StringInfo out, avro_value_t *v, AvroType *t, Oid typid)
{
	avro_value_t branch;

	eoi_avro_resolve_union(&v, &branch, &t);
	if (t->kind == AVRO_NULL)
		return false;
	if (typid == JSONBOID || typid == JSONOID)
	{
		eoi_avro_append_json(out, v, t);
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
bool
eoi_avro_scalar_datum(const EoiAvroScalar *sc, Oid typid, Datum *out)
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
void
eoi_avro_scalar_text(StringInfo out, const EoiAvroScalar *sc)
{
	switch (sc->kind)
	{
		case AVRO_BOOLEAN:
			appendStringInfoString(out, sc->b ? "true" : "false");
			break;
		case AVRO_INT32:
		case AVRO_INT64:
			{
				char		digits[MAXINT8LEN + 1];

				appendBinaryStringInfo(out, digits, pg_lltoa((int64) sc->l, digits));
			}
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
	if (t->logical != L_NONE)
		return false;
	switch (t->kind)
	{
		case AVRO_INT32:
		case AVRO_INT64:
		case AVRO_FLOAT:
		case AVRO_DOUBLE:
		case AVRO_BOOLEAN:
		case AVRO_STRING:
			get_scalar(v, t, sc);
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
	const void *buf = NULL;
	size_t		size = 0;
	EoiAvroScalar sc;

	switch (t->kind)
	{
		case AVRO_INT32:
			if (!((t->logical == L_DATE && typid == DATEOID) ||
				  (t->logical == L_TIME_MILLIS && typid == TIMEOID)))
				return false;
			get_scalar(v, t, &sc);
			*out = t->logical == L_DATE ? DateADTGetDatum(date_of((int32) sc.l)) :
				TimeADTGetDatum(time_of(sc.l * 1000));
			return true;
		case AVRO_INT64:
			if (!(((t->logical == L_TIME_MICROS || t->logical == L_TIME_NANOS) && typid == TIMEOID) ||
				  (t->logical >= L_TIMESTAMP_MILLIS && t->logical <= L_TIMESTAMP_NANOS &&
				   typid == TIMESTAMPTZOID) ||
				  (t->logical >= L_LOCAL_TIMESTAMP_MILLIS && t->logical <= L_LOCAL_TIMESTAMP_NANOS &&
				   typid == TIMESTAMPOID)))
				return false;
			get_scalar(v, t, &sc);
			if (t->logical == L_TIME_MICROS)
				*out = TimeADTGetDatum(time_of(sc.l));
			else if (t->logical == L_TIME_NANOS)
				*out = TimeADTGetDatum(time_of(floor_div_1000(sc.l)));
			else if (typid == TIMESTAMPTZOID)
				*out = TimestampTzGetDatum(timestamp_of(sc.l, t->logical - L_TIMESTAMP_MILLIS + 1));
			else
				*out = TimestampGetDatum(timestamp_of(sc.l, t->logical - L_LOCAL_TIMESTAMP_MILLIS + 1));
			return true;
		case AVRO_BYTES:
		case AVRO_FIXED:
			get_scalar(v, t, &sc);
			buf = sc.s;
			size = sc.len;
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
			get_scalar(v, t, &sc);
			*out = CStringGetTextDatum(enum_symbol(t, sc.l));
			return true;
		default:
			return false;
	}
}

/*
 * The value of `v` as a datum of type `typid`, when scalar_datum or
 * logical_datum has one.
 */
bool
eoi_avro_value_datum(avro_value_t *v, AvroType *t, Oid typid, Datum *out)
{
	avro_value_t branch;
	EoiAvroScalar sc;

	eoi_avro_resolve_union(&v, &branch, &t);
	if (t->logical != L_NONE || t->kind == AVRO_BYTES || t->kind == AVRO_FIXED || t->kind == AVRO_ENUM)
		return logical_datum(v, t, typid, out);
	return value_scalar(v, t, &sc) && eoi_avro_scalar_datum(&sc, typid, out);
}
