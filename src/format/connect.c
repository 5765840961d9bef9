/*-------------------------------------------------------------------------
 *
 * connect.c
 *	  Kafka Connect's JSON schemas: the members of a schema and a payload,
 *	  the codec a field's schema names, and the conversion of Connect's and
 *	  Debezium's encodings (days, times, timestamps, decimals, bytes, bits)
 *	  into the text of the column's input.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"

#include "base/pgcompat.h"
#include "format/connect.h"
#include "format/wirenum.h"

/* ---- members ---- */

/* The value of key `name` of `object`, or NULL; a JSON null counts as absent. */
JsonbValue *
eoi_connect_member(JsonbContainer *object, const char *name, JsonbValue *v)
{
	if (object == NULL || !JsonContainerIsObject(object))
		return NULL;
	if (getKeyJsonValueFromContainer(object, name, strlen(name), v) == NULL ||
		v->type == jbvNull)
		return NULL;
	return v;
}

/* The string (or number) at key `name`, as a palloc'd C string, or NULL. */
char *
eoi_connect_member_string(JsonbContainer *object, const char *name)
{
	JsonbValue	v;

	if (eoi_connect_member(object, name, &v) == NULL)
		return NULL;
	if (v.type == jbvString)
		return pnstrdup(v.val.string.val, v.val.string.len);
	if (v.type == jbvNumeric)
		return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
	return NULL;
}

/* The field schema named `name` in a struct schema's "fields", or NULL. */
JsonbContainer *
eoi_connect_schema_field(JsonbContainer *struct_schema, const char *name)
{
	JsonbValue	v;
	JsonbContainer *fields;
	int			n;

	if (struct_schema == NULL || eoi_connect_member(struct_schema, "fields", &v) == NULL ||
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
		fname = eoi_connect_member_string(f->val.binary.data, "field");
		if (fname != NULL && strcmp(fname, name) == 0)
			return f->val.binary.data;
	}
	return NULL;
}

/* ---- codecs ---- */

static int
schema_int_parameter(JsonbContainer *field, const char *name, int otherwise)
{
	JsonbValue	v;
	char	   *s = NULL;

	if (eoi_connect_member(field, "parameters", &v) != NULL &&
		v.type == jbvBinary && JsonContainerIsObject(v.val.binary.data))
		s = eoi_connect_member_string(v.val.binary.data, name);

	return s ? pg_strtoint32(s) : otherwise;
}

/* The codec of a field into a column of type `coltype`, from its Connect schema. */
EoiFieldCodec
eoi_connect_codec(JsonbContainer *field, Oid coltype)
{
	EoiFieldCodec fc = {CONV_NONE, 0, coltype == TIMESTAMPTZOID};
	char	   *name = eoi_connect_member_string(field, "name");
	char	   *type = eoi_connect_member_string(field, "type");
	static const struct
	{
		const char *name;
		EoiConversion conv;
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

	*len = eoi_b64_decode(s, slen, bytes, pg_b64_dec_len(slen));
	if (*len < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid base64 %s \"%s\"", what, s),
				 errhint("Kafka Connect writes bytes, Decimal and Bits values as base64 text.")));
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
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
	char	   *scale = eoi_connect_member_string(&jb->root, "scale");
	char	   *value = eoi_connect_member_string(&jb->root, "value");
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
char *
eoi_connect_convert(const EoiFieldCodec *fc, char *s)
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

/* ---- the codecs of a target's columns ---- */

/*
 * The field of a struct schema that fills column `jc`: the field of
 * exactly its name, or else one that spells it ignoring case when the
 * column takes such keys (decodejson.c matches a payload's keys so).
 */
static JsonbContainer *
column_field(JsonbContainer *fields, const EoiJsonColumn *jc)
{
	JsonbContainer *folded = NULL;
	int			n = JsonContainerSize(fields);

	for (int i = 0; i < n; i++)
	{
		JsonbValue *f = getIthJsonbValueFromContainer(fields, i);
		JsonbValue	name;

		if (f == NULL || f->type != jbvBinary || !JsonContainerIsObject(f->val.binary.data) ||
			eoi_connect_member(f->val.binary.data, "field", &name) == NULL ||
			name.type != jbvString)
			continue;
		if (name.val.string.len == jc->name_len &&
			memcmp(name.val.string.val, jc->name, jc->name_len) == 0)
			return f->val.binary.data;
		if (folded == NULL && jc->fold_case &&
			eoi_spells_name(name.val.string.val, name.val.string.len, jc->name))
			folded = f->val.binary.data;
	}
	return folded;
}

/*
 * The codecs of the columns from a wrapper's value schema (a struct's
 * fields), or NULL when every column reads its field's JSON value as it is
 * (no schema, no struct, or no field of a logical type or bytes).
 */
EoiFieldCodec *
eoi_connect_column_codecs(EoiColumns *cols, JsonbContainer *schema)
{
	EoiFieldCodec *codecs = NULL;
	JsonbValue	v;
	char	   *type = eoi_connect_member_string(schema, "type");

	if (type == NULL || strcmp(type, "struct") != 0 ||
		eoi_connect_member(schema, "fields", &v) == NULL ||
		v.type != jbvBinary || !JsonContainerIsArray(v.val.binary.data))
		return NULL;
	for (int c = 0; c < cols->ncolumns; c++)
	{
		JsonbContainer *field = column_field(v.val.binary.data, &cols->json[c]);
		EoiFieldCodec fc;

		if (field == NULL)
			continue;
		fc = eoi_connect_codec(field, cols->typids[c]);
		if (fc.conv == CONV_NONE)
			continue;
		if (codecs == NULL)
			codecs = palloc0(sizeof(EoiFieldCodec) * cols->ncolumns);
		codecs[c] = fc;
	}
	return codecs;
}

/*
 * The same for a schema's JSON text, from the batch's cache: JsonConverter
 * repeats one schema in every message, so it is parsed the first time it
 * comes.  The cache holds a few schemas; beyond them the oldest goes, so a
 * stream of distinct schemas is parsed message by message in bounded
 * memory.
 */
EoiFieldCodec *
eoi_connect_cached_codecs(EoiColumns *cols, const char *text, size_t len)
{
	EoiConnectCache *cache = cols->connect;
	EoiConnectSchema *s;
	MemoryContext old;

	if (cache == NULL)
		cache = cols->connect = MemoryContextAllocZero(GetMemoryChunkContext(cols),
													  sizeof(EoiConnectCache));
	for (int i = 0; i < cache->n; i++)
	{
		s = &cache->schemas[i];
		if (s->len == len && memcmp(s->text, text, len) == 0)
			return s->codecs;
	}
	if (cache->n < EOI_CONNECT_SCHEMAS)
		s = &cache->schemas[cache->n++];
	else
	{
		s = &cache->schemas[cache->next];
		cache->next = (cache->next + 1) % EOI_CONNECT_SCHEMAS;
		pfree(s->text);
		if (s->codecs != NULL)
			pfree(s->codecs);
	}
	old = MemoryContextSwitchTo(GetMemoryChunkContext(cols));
	s->text = pnstrdup(text, len);
	s->len = len;
	s->codecs = NULL;
	MemoryContextSwitchTo(old);
	/* parsed in the caller's memory, the codecs kept in the cache's */
	{
		Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(s->text)));
		EoiFieldCodec *codecs = JB_ROOT_IS_OBJECT(jb) ? eoi_connect_column_codecs(cols, &jb->root) : NULL;

		if (codecs != NULL)
		{
			s->codecs = MemoryContextAlloc(GetMemoryChunkContext(cols),
										   sizeof(EoiFieldCodec) * cols->ncolumns);
			memcpy(s->codecs, codecs, sizeof(EoiFieldCodec) * cols->ncolumns);
		}
	}
	return s->codecs;
}

/* ---- a struct schema's fields as columns ---- */

/* The column type of a Connect schema's logical name, or InvalidOid. */
static Oid
connect_logical_type(const char *name, JsonbContainer *field, int32 *typmod)
{
	static const struct
	{
		const char *name;
		Oid			typid;
	}			names[] = {
		{"org.apache.kafka.connect.data.Date", DATEOID},
		{"org.apache.kafka.connect.data.Time", TIMEOID},
		{"org.apache.kafka.connect.data.Timestamp", TIMESTAMPTZOID},
		{"org.apache.kafka.connect.data.Decimal", NUMERICOID},
		{"io.debezium.time.Date", DATEOID},
		{"io.debezium.time.Time", TIMEOID},
		{"io.debezium.time.MicroTime", TIMEOID},
		{"io.debezium.time.NanoTime", TIMEOID},
		{"io.debezium.time.ZonedTime", TIMETZOID},
		{"io.debezium.time.Timestamp", TIMESTAMPOID},
		{"io.debezium.time.MicroTimestamp", TIMESTAMPOID},
		{"io.debezium.time.NanoTimestamp", TIMESTAMPOID},
		{"io.debezium.time.ZonedTimestamp", TIMESTAMPTZOID},
		{"io.debezium.time.MicroDuration", INTERVALOID},
		{"io.debezium.data.VariableScaleDecimal", NUMERICOID},
		{"io.debezium.data.Bits", VARBITOID},
		{"io.debezium.data.Json", JSONBOID},
		{"io.debezium.data.Uuid", UUIDOID},
		{"io.debezium.data.Enum", TEXTOID},
		{"io.debezium.data.Xml", TEXTOID},
	};

	for (int i = 0; i < lengthof(names); i++)
	{
		if (strcmp(names[i].name, name) != 0)
			continue;
		if (names[i].typid == NUMERICOID && strcmp(name, "org.apache.kafka.connect.data.Decimal") == 0)
		{
			/* numeric(p, s) when Debezium states the precision, else any digits */
			int			scale = schema_int_parameter(field, "scale", -1);
			int			precision = schema_int_parameter(field, "connect.decimal.precision", 0);

			if (precision >= 1 && precision <= NUMERIC_MAX_PRECISION && scale >= 0 && scale <= precision)
				*typmod = ((precision << 16) | scale) + VARHDRSZ;
		}
		return names[i].typid;
	}
	return InvalidOid;
}

/* The column type that values of a field of Connect schema `field` fill best. */
static void
connect_column_type(JsonbContainer *field, Oid *typid, int32 *typmod, int depth)
{
	char	   *name = eoi_connect_member_string(field, "name");
	char	   *type = eoi_connect_member_string(field, "type");
	static const struct
	{
		const char *type;
		Oid			typid;
	}			types[] = {
		{"int8", INT2OID}, {"int16", INT2OID}, {"int32", INT4OID}, {"int64", INT8OID},
		/* JsonConverter writes FLOAT32 and FLOAT64 as "float" and "double" */
		{"float", FLOAT4OID}, {"double", FLOAT8OID},
		{"float32", FLOAT4OID}, {"float64", FLOAT8OID}, {"boolean", BOOLOID},
		{"string", TEXTOID}, {"bytes", BYTEAOID},
	};

	check_stack_depth();
	*typmod = -1;
	*typid = name != NULL ? connect_logical_type(name, field, typmod) : InvalidOid;
	if (OidIsValid(*typid))
		return;
	*typid = JSONBOID;			/* struct, map, and what is not known */
	if (type == NULL)
		return;
	for (int i = 0; i < lengthof(types); i++)
		if (strcmp(types[i].type, type) == 0)
			*typid = types[i].typid;
	if (strcmp(type, "array") == 0 && depth < 1)
	{
		JsonbValue	items;
		Oid			elem;
		int32		elem_typmod;

		*typid = JSONBOID;
		if (eoi_connect_member(field, "items", &items) == NULL || items.type != jbvBinary ||
			!JsonContainerIsObject(items.val.binary.data))
			return;
		connect_column_type(items.val.binary.data, &elem, &elem_typmod, depth + 1);
		if (elem != JSONBOID && elem != BYTEAOID && OidIsValid(get_array_type(elem)))
			*typid = get_array_type(elem);
	}
}

/*
 * The fields of a Connect struct schema, as columns: each field's name
 * ("field") and the type its values fill best.  `what` names the schema in
 * messages.  A schema that is not a struct has no fields (record false).
 */
EoiSchemaFields *
eoi_connect_struct_fields(JsonbContainer *schema, const char *what)
{
	EoiSchemaFields *f = palloc0(sizeof(EoiSchemaFields));
	char	   *type = eoi_connect_member_string(schema, "type");
	JsonbValue	fields;
	int			n;

	f->what = pstrdup(what);
	f->type_name = type ? type : "schema without a type";
	if (type == NULL || strcmp(type, "struct") != 0 ||
		eoi_connect_member(schema, "fields", &fields) == NULL || fields.type != jbvBinary ||
		!JsonContainerIsArray(fields.val.binary.data))
		return f;
	f->record = true;
	n = JsonContainerSize(fields.val.binary.data);
	f->fields = palloc0(sizeof(EoiSchemaField) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		JsonbValue *field = getIthJsonbValueFromContainer(fields.val.binary.data, i);
		char	   *name;

		CHECK_FOR_INTERRUPTS();
		if (field == NULL || field->type != jbvBinary || !JsonContainerIsObject(field->val.binary.data) ||
			(name = eoi_connect_member_string(field->val.binary.data, "field")) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("field %d of the Kafka Connect schema (%s) has no name", i + 1, what)));
		f->fields[f->nfields].name = name;
		connect_column_type(field->val.binary.data, &f->fields[f->nfields].typid,
							&f->fields[f->nfields].typmod, 0);
		f->nfields++;
	}
	return f;
}
