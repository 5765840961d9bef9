/*-------------------------------------------------------------------------
 *
 * cdcconv.c
 *	  The codecs of a change event's fields, from their Connect schema or
 *	  from the target column's type, and the conversion of Debezium's
 *	  encodings (days, times, timestamps, decimals, bytes, bits) into the
 *	  text of the column's input; the row writer that converts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/rel.h"

#include "base/pgcompat.h"
#include "envelope/cdc_internal.h"
#include "format/wirenum.h"

/* ---- codecs ---- */

static int
schema_int_parameter(JsonbContainer *field, const char *name, int otherwise)
{
	JsonbContainer *params = eoi_cdc_json_get_object(field, "parameters");
	char	   *s = params ? eoi_cdc_json_get_string(params, name) : NULL;

	return s ? pg_strtoint32(s) : otherwise;
}

/* The codec of a field, from its Connect schema. */
FieldCodec
eoi_cdc_codec_from_schema(JsonbContainer *field, Oid coltype)
{
	FieldCodec	fc = {CONV_NONE, 0, coltype == TIMESTAMPTZOID};
	char	   *name = eoi_cdc_json_get_string(field, "name");
	char	   *type = eoi_cdc_json_get_string(field, "type");
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
FieldCodec
eoi_cdc_codec_from_column(Oid coltype, int32 typmod, JsonbValue *v)
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

	*len = eoi_b64_decode(s, slen, bytes, pg_b64_dec_len(slen));
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
	Jsonb	   *jb = eoi_cdc_parse_json(json, strlen(json));
	char	   *scale = JB_ROOT_IS_OBJECT(jb) ? eoi_cdc_json_get_string(&jb->root, "scale") : NULL;
	char	   *value = JB_ROOT_IS_OBJECT(jb) ? eoi_cdc_json_get_string(&jb->root, "value") : NULL;
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

	if (cw->unchanged != NULL && cw->unchanged[col])
	{
		/* Debezium's placeholder: the row keeps its value (upsertkeep.c) */
		cw->fields[col] = NULL;
		if (cw->inner != NULL)
			cw->inner->field(cw->inner, col, eoi_unchanged_value, 0);
		return;
	}
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

void
eoi_cdc_converting_writer_init(ConvertingWriter *cw, EoiRowWriter *inner, FieldCodec *codecs, int ncolumns)
{
	cw->writer.field = converting_field;
	cw->writer.datum = NULL;
	cw->writer.end_row = converting_end_row;
	cw->inner = inner;
	cw->codecs = codecs;
	cw->ncolumns = ncolumns;
	cw->fields = palloc0(sizeof(char *) * Max(ncolumns, 1));
	cw->unchanged = NULL;
}
