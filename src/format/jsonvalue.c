/*-------------------------------------------------------------------------
 *
 * jsonvalue.c
 *	  Format json: one JSON value as the text its column's type reads.
 *
 * The rows go to COPY (or to the upsert's text arrays) as text, which the
 * column's input function reads.  For most types the JSON value's own text
 * is that text (a string's contents, a number's digits, true/false, an
 * object's JSON).  Some JSON values mean something else for some types:
 *
 *	array into an array column:	a PostgreSQL array literal, each element
 *			converted as a value of the element type, quoted and escaped;
 *			nested arrays are dimensions and must be rectangular.
 *	number into timestamptz, timestamp, date: a time since 1970-01-01 UTC,
 *			in the job's timestamp_unit (auto: by magnitude, see
 *			epoch_unit()), written in ISO 8601 with an explicit UTC offset.
 *	string into bytea: hex after "\x", as bytea's input reads it, otherwise
 *			base64 (Kafka Connect's JSON converter writes bytes so).
 *
 * Errors are the record's (SQLSTATE class 22), with a hint.
 *
 * The values come as JsonbValues (jsonb's way, and Debezium's envelope) or
 * as jsonscan.c's tokens (format json's scan): eoi_json_token_text gives
 * for a token the very text eoi_json_value_text gives for the JsonbValue
 * jsonb_in makes of it, and eoi_json_token_datum, on the direct path, the
 * value the column's input function would make of that text, where that
 * is plainly the same and cannot fail.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "format/decfloat.h"
#include "format/jsonvalue.h"

static bool scalar_text(const EoiJsonColumn *jc, EoiTimestampUnit unit, JsonbValue *v,
						StringInfo out);

static EoiValueKind
value_kind(Oid typid)
{
	switch (getBaseType(typid))
	{
		case BYTEAOID:
			return EOI_VALUE_BYTEA;
		case TIMESTAMPTZOID:
			return EOI_VALUE_TIMESTAMPTZ;
		case TIMESTAMPOID:
			return EOI_VALUE_TIMESTAMP;
		case DATEOID:
			return EOI_VALUE_DATE;
		case JSONOID:
		case JSONBOID:
			return EOI_VALUE_JSON;
		default:
			return EOI_VALUE_TEXT;
	}
}

/* How values for column `name` of type `typid` convert. */
void
eoi_json_column_init(EoiJsonColumn *jc, const char *name, Oid typid)
{
	Oid			base = getBaseType(typid);
	Oid			elemtype = get_base_element_type(base);

	jc->name = name;
	jc->name_len = strlen(name);
	jc->fold_case = false;
	/* int2vector and oidvector are arrays with an input syntax of their own */
	jc->is_array = OidIsValid(elemtype) && base != INT2VECTOROID && base != OIDVECTOROID;
	jc->delim = ',';
	jc->kind = value_kind(jc->is_array ? elemtype : typid);
	if (jc->is_array)
	{
		int16		typlen;
		bool		typbyval;
		char		typalign;
		Oid			typioparam;
		Oid			func;

		get_type_io_data(elemtype, IOFunc_input, &typlen, &typbyval, &typalign,
						 &jc->delim, &typioparam, &func);
	}
}

/* ---- numbers into time columns ---- */

/*
 * The unit of a number for a time column.  auto reads it by magnitude:
 * every instant from 1973-03-03 to 5138-11-16 has a distinct magnitude in
 * each unit (seconds below 1e11, milliseconds below 1e14, microseconds
 * below 1e17, nanoseconds above), and so has every instant from 1966-10-31 back
 * to 1199 BC; nearer 1970, a number is taken as seconds.  A date column
 * reads a number below 1e7 as days (Kafka Connect's, Debezium's and Avro's
 * dates), which as seconds would be the first 116 days of 1970.
 */
static EoiTimestampUnit
epoch_unit(Numeric num, EoiTimestampUnit unit, bool is_date, bool *days)
{
	double		mag;

	*days = false;
	if (unit != EOI_TS_AUTO)
		return unit;
	mag = fabs(DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
												  NumericGetDatum(num))));
	if (is_date && mag < 1e7)
	{
		*days = true;
		return EOI_TS_SECONDS;
	}
	if (mag < 1e11)
		return EOI_TS_SECONDS;
	if (mag < 1e14)
		return EOI_TS_MILLISECONDS;
	if (mag < 1e17)
		return EOI_TS_MICROSECONDS;
	return EOI_TS_NANOSECONDS;
}

static void
epoch_out_of_range(const EoiJsonColumn *jc, Numeric num)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("JSON number %s for column \"%s\" is out of range as a time since 1970",
					numeric_out_sci(num, 6), jc->name),
			 errhint("Numbers for timestamptz, timestamp and date columns count from 1970-01-01 UTC in the job's timestamp_unit; check that it matches the messages (eoingest.alter_job).")));
}

/* The number as a PostgreSQL timestamp (microseconds since 2000), UTC. */
static Timestamp
epoch_timestamp(const EoiJsonColumn *jc, EoiTimestampUnit unit, Numeric num)
{
	bool		days;
	EoiTimestampUnit u = epoch_unit(num, unit, jc->kind == EOI_VALUE_DATE, &days);
	Datum		d = NumericGetDatum(num);
	double		estimate;
	int64		usecs;
	Timestamp	ts;

	switch (u)
	{
		case EOI_TS_AUTO:
		case EOI_TS_SECONDS:
			d = DirectFunctionCall2(numeric_mul, d,
									NumericGetDatum(int64_to_numeric(days ? USECS_PER_DAY : USECS_PER_SEC)));
			break;
		case EOI_TS_MILLISECONDS:
			d = DirectFunctionCall2(numeric_mul, d, NumericGetDatum(int64_to_numeric(1000)));
			break;
		case EOI_TS_MICROSECONDS:
			break;
		case EOI_TS_NANOSECONDS:
			d = DirectFunctionCall2(numeric_div, d, NumericGetDatum(int64_to_numeric(1000)));
			break;
		case EOI_TS_NONE:
			elog(ERROR, "no timestamp unit to read a number with");
	}
	/* Beyond about 9e18 microseconds, no int64 and no timestamp holds it. */
	estimate = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
	if (fabs(estimate) >= 9.0e18)
		epoch_out_of_range(jc, num);
	d = DirectFunctionCall2(numeric_round, d, Int32GetDatum(0));
	usecs = DatumGetInt64(DirectFunctionCall1(numeric_int8, d));
	if (pg_sub_s64_overflow(usecs, (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY, &ts) ||
		!IS_VALID_TIMESTAMP(ts))
		epoch_out_of_range(jc, num);
	return ts;
}

/*
 * ISO 8601, with an explicit +00 for timestamptz: the text reads back the
 * same whatever the session's DateStyle and TimeZone.  A timestamp column
 * gets the UTC time of the instant, a date column its UTC date.
 */
static bool
epoch_encode(const EoiJsonColumn *jc, Timestamp ts, StringInfo out)
{
	struct pg_tm tm;
	fsec_t		fsec;
	char		buf[MAXDATELEN + 1];

	if (timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0)
		return false;
	switch (jc->kind)
	{
		case EOI_VALUE_TIMESTAMPTZ:
			EncodeDateTime(&tm, fsec, true, 0, NULL, USE_ISO_DATES, buf);
			break;
		case EOI_VALUE_TIMESTAMP:
			EncodeDateTime(&tm, fsec, false, 0, NULL, USE_ISO_DATES, buf);
			break;
		default:
			EncodeDateOnly(&tm, USE_ISO_DATES, buf);
			break;
	}
	appendStringInfoString(out, buf);
	return true;
}

static void
epoch_text(const EoiJsonColumn *jc, EoiTimestampUnit unit, Numeric num, StringInfo out)
{
	if (!epoch_encode(jc, epoch_timestamp(jc, unit, num), out))
		epoch_out_of_range(jc, num);
}

/* A JSON integer of at most 19 digits (and a sign) as an int64. */
static bool
token_int64(const EoiJsonToken *t, int64 *result)
{
	const char *p = t->data;
	const char *end = t->data + t->len;
	bool		neg = (p < end && *p == '-');
	int64		v = 0;

	if (!t->integer || t->len > 20)
		return false;
	if (neg)
		p++;
	for (; p < end; p++)
	{
		/* negative, so that INT64_MIN fits */
		if (pg_mul_s64_overflow(v, 10, &v) || pg_sub_s64_overflow(v, *p - '0', &v))
			return false;
	}
	if (!neg && v == PG_INT64_MIN)
		return false;
	*result = neg ? v : -v;
	return true;
}

/*
 * epoch_timestamp's result for a JSON integer, in int64 arithmetic that
 * gives exactly what its numeric arithmetic gives; false for anything
 * where it would raise an error (or that this does not cover), so that
 * the caller goes the numeric way and raises it.
 */
static bool
epoch_integer(const EoiJsonColumn *jc, EoiTimestampUnit unit, const EoiJsonToken *t,
			  Timestamp *result)
{
	int64		n;
	int64		usecs;
	int64		rest;
	bool		days = false;
	EoiTimestampUnit u = unit;
	Timestamp	ts;

	if (!token_int64(t, &n))
		return false;
	if (u == EOI_TS_AUTO)
	{
		/* as epoch_unit: (double) rounds an int64 as strtod rounds its digits */
		double		mag = fabs((double) n);

		if (jc->kind == EOI_VALUE_DATE && mag < 1e7)
		{
			days = true;
			u = EOI_TS_SECONDS;
		}
		else
			u = mag < 1e11 ? EOI_TS_SECONDS : mag < 1e14 ? EOI_TS_MILLISECONDS :
				mag < 1e17 ? EOI_TS_MICROSECONDS : EOI_TS_NANOSECONDS;
	}
	switch (u)
	{
		case EOI_TS_SECONDS:
			if (pg_mul_s64_overflow(n, days ? USECS_PER_DAY : USECS_PER_SEC, &usecs))
				return false;
			break;
		case EOI_TS_MILLISECONDS:
			if (pg_mul_s64_overflow(n, 1000, &usecs))
				return false;
			break;
		case EOI_TS_MICROSECONDS:
			usecs = n;
			break;
		case EOI_TS_NANOSECONDS:
			/* numeric_round: halves away from zero */
			usecs = n / 1000;
			rest = n % 1000;
			if (rest >= 500)
				usecs++;
			else if (rest <= -500)
				usecs--;
			break;
		default:
			return false;
	}
	if (fabs((double) usecs) >= 9.0e18 ||
		pg_sub_s64_overflow(usecs, (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY, &ts) ||
		!IS_VALID_TIMESTAMP(ts))
		return false;
	*result = ts;
	return true;
}

/* date_in's value for epoch_encode's text of `ts`, when it has one. */
static bool
epoch_date(Timestamp ts, DateADT *result)
{
	struct pg_tm tm;
	fsec_t		fsec;
	DateADT		date;

	if (timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0 ||
		!IS_VALID_JULIAN(tm.tm_year, tm.tm_mon, tm.tm_mday))
		return false;
	date = date2j(tm.tm_year, tm.tm_mon, tm.tm_mday) - POSTGRES_EPOCH_JDATE;
	if (!IS_VALID_DATE(date))
		return false;
	*result = date;
	return true;
}

/* ---- strings into bytea ---- */

static int
base64_digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static void
not_base64(const EoiJsonColumn *jc, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("JSON string for bytea column \"%s\" is neither base64 nor hex", jc->name),
			 errdetail("%s", detail),
			 errhint("Send bytes as base64 (RFC 4648: A-Z a-z 0-9 + /, padded with = to a multiple of 4 characters), as Kafka Connect's JSON converter does, or as hex after \\x.")));
}

/*
 * Base64 as bytea's hex input text.  Strict, so that a string that was not
 * meant as base64 is an error rather than bytes nobody sent: the standard
 * alphabet, padding to a multiple of 4 characters, no white space.
 */
static void
base64_as_hex(const EoiJsonColumn *jc, const char *s, int len, StringInfo out)
{
	static const char hex[] = "0123456789abcdef";
	int			pad = 0;

	if (len % 4 != 0)
		not_base64(jc, psprintf("Its length, %d, is not a multiple of 4.", len));
	if (len > 0 && s[len - 1] == '=')
		pad++;
	if (len > 1 && s[len - 2] == '=')
		pad++;
	appendStringInfoString(out, "\\x");
	for (int i = 0; i < len; i += 4)
	{
		uint32		group = 0;
		bool		last = (i + 4 == len);
		int			nbytes = last ? 3 - pad : 3;

		for (int j = 0; j < 4; j++)
		{
			unsigned char c = (unsigned char) s[i + j];
			int			digit = (last && j >= 4 - pad) ? 0 : base64_digit(c);

			if (digit < 0)
				not_base64(jc, (c >= 0x20 && c < 0x7f) ?
						   psprintf("Character \"%c\" at position %d is not a base64 digit.", c, i + j + 1) :
						   psprintf("The byte at position %d is not a base64 digit.", i + j + 1));
			group = (group << 6) | (uint32) digit;
		}
		for (int b = 0; b < nbytes; b++)
		{
			unsigned char byte = (group >> (16 - 8 * b)) & 0xff;

			appendStringInfoChar(out, hex[byte >> 4]);
			appendStringInfoChar(out, hex[byte & 0xf]);
		}
	}
}

static void
bytea_text(const EoiJsonColumn *jc, const char *s, int len, StringInfo out)
{
	if (len >= 2 && s[0] == '\\' && s[1] == 'x')
		appendBinaryStringInfo(out, s, len);	/* bytea's input checks the hex */
	else
		base64_as_hex(jc, s, len, out);
}

/* ---- arrays into array columns ---- */

typedef struct ArrayShape
{
	int			ndims;			/* -1 until the first element or empty array says */
	int			dims[MAXDIM];
	bool		known[MAXDIM];
	int			nelems;
	StringInfo	scratch;
} ArrayShape;

static void
not_rectangular(const EoiJsonColumn *jc, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
			 errmsg("JSON array for array column \"%s\" does not fit an array", jc->name),
			 errdetail("%s", detail),
			 errhint("Nested JSON arrays are the dimensions of a multi-dimensional array: nest them to the same depth, with sub-arrays of equal length; or use a jsonb column, or a transform.")));
}

/* Element text quoted for array_in: "..." with \ before " and \. */
static void
append_quoted_element(StringInfo out, const char *s, int len)
{
	appendStringInfoChar(out, '"');
	for (int i = 0; i < len; i++)
	{
		if (s[i] == '"' || s[i] == '\\')
			appendStringInfoChar(out, '\\');
		appendStringInfoChar(out, s[i]);
	}
	appendStringInfoChar(out, '"');
}

static void
append_element(const EoiJsonColumn *jc, EoiTimestampUnit unit, JsonbValue *v,
			   ArrayShape *shape, StringInfo out)
{
	resetStringInfo(shape->scratch);
	if (!scalar_text(jc, unit, v, shape->scratch))
		appendStringInfoString(out, "NULL");
	else
		append_quoted_element(out, shape->scratch->data, shape->scratch->len);
	shape->nelems++;
}

/*
 * The array `arr` at nesting `depth` as an array literal level.  The first
 * path down to a non-array element (or an empty array) fixes the number of
 * dimensions, as jsonb_populate_record does; each level must then have the
 * length its first sub-array had.
 */
static void
append_array_level(const EoiJsonColumn *jc, EoiTimestampUnit unit, JsonbContainer *arr,
				   int depth, ArrayShape *shape, StringInfo out)
{
	JsonbIterator *it;
	JsonbValue	v;
	int			n = 0;

	check_stack_depth();
	if (depth >= MAXDIM)
		not_rectangular(jc, psprintf("It has more than %d dimensions, the most an array has.", MAXDIM));
	appendStringInfoChar(out, '{');
	it = JsonbIteratorInit(arr);
	(void) JsonbIteratorNext(&it, &v, true);	/* WJB_BEGIN_ARRAY */
	while (JsonbIteratorNext(&it, &v, true) == WJB_ELEM)
	{
		bool		is_array = (v.type == jbvBinary && JsonContainerIsArray(v.val.binary.data));

		if (shape->ndims < 0 && !is_array)
			shape->ndims = depth + 1;
		if (n > 0)
			appendStringInfoChar(out, jc->delim);
		if (shape->ndims < 0 || depth + 1 < shape->ndims)
		{
			if (!is_array)
				not_rectangular(jc, psprintf("At depth %d, a value stands where the other elements are arrays.", depth + 1));
			append_array_level(jc, unit, v.val.binary.data, depth + 1, shape, out);
		}
		else
		{
			if (is_array && jc->kind != EOI_VALUE_JSON)
				not_rectangular(jc, psprintf("At depth %d, an array stands where the other elements are values.", depth + 1));
			append_element(jc, unit, &v, shape, out);
		}
		n++;
	}
	if (n == 0 && shape->ndims < 0)
		shape->ndims = depth + 1;
	if (!shape->known[depth])
	{
		shape->dims[depth] = n;
		shape->known[depth] = true;
	}
	else if (shape->dims[depth] != n)
		not_rectangular(jc, psprintf("At depth %d, arrays of %d and of %d elements.", depth + 1,
									 shape->dims[depth], n));
	appendStringInfoChar(out, '}');
}

static void
array_text(const EoiJsonColumn *jc, EoiTimestampUnit unit, JsonbContainer *arr,
		   StringInfo out, StringInfo scratch)
{
	ArrayShape	shape = {-1, {0}, {false}, 0, scratch};
	int			start = out->len;

	append_array_level(jc, unit, arr, 0, &shape, out);
	/* An array of no elements is written {} whatever its nesting. */
	if (shape.nelems == 0)
	{
		out->len = start;
		out->data[start] = '\0';
		appendStringInfoString(out, "{}");
	}
}

/* ---- any value ---- */

/* A scalar (or a nested object or array, as JSON text); false for null. */
static bool
scalar_text(const EoiJsonColumn *jc, EoiTimestampUnit unit, JsonbValue *v, StringInfo out)
{
	switch (v->type)
	{
		case jbvNull:
			return false;
		case jbvString:
			if (jc->kind == EOI_VALUE_BYTEA)
				bytea_text(jc, v->val.string.val, v->val.string.len, out);
			else
				appendBinaryStringInfo(out, v->val.string.val, v->val.string.len);
			return true;
		case jbvNumeric:
			if (unit != EOI_TS_NONE &&
				(jc->kind == EOI_VALUE_TIMESTAMPTZ || jc->kind == EOI_VALUE_TIMESTAMP ||
				 jc->kind == EOI_VALUE_DATE))
				epoch_text(jc, unit, v->val.numeric, out);
			else
				appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(numeric_out,
																				NumericGetDatum(v->val.numeric))));
			return true;
		case jbvBool:
			appendStringInfoString(out, v->val.boolean ? "true" : "false");
			return true;
		case jbvBinary:
			(void) JsonbToCString(out, v->val.binary.data, v->val.binary.len);
			return true;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return false;
}

/*
 * Append to `out` the text that column `jc` reads for the JSON value `v`;
 * false (and nothing appended) for a JSON null, which is SQL NULL.
 * `scratch` is a buffer for array elements.
 */
bool
eoi_json_value_text(const EoiJsonColumn *jc, EoiTimestampUnit unit, JsonbValue *v,
					StringInfo out, StringInfo scratch)
{
	if (jc->is_array && v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data))
	{
		array_text(jc, unit, v->val.binary.data, out, scratch);
		return true;
	}
	return scalar_text(jc, unit, v, out);
}

/* ---- values from jsonscan.c's tokens ---- */

/*
 * The tokens of jsonscan.c stand for the JsonbValues jsonb_in would have
 * made of the same text, and convert exactly as eoi_json_value_text
 * converts those: the same text for every column, the same errors.
 */

/* A number as the Numeric numeric_in reads of its text. */
Numeric
eoi_json_token_numeric(const EoiJsonToken *t)
{
	return DatumGetNumeric(DirectFunctionCall3(numeric_in,
											   CStringGetDatum(pnstrdup(t->data, t->len)),
											   ObjectIdGetDatum(InvalidOid),
											   Int32GetDatum(-1)));
}

/* A number's text as numeric_out writes the Numeric numeric_in reads of it. */
static void
number_text(const EoiJsonToken *t, StringInfo out)
{
	bool		zero = true;

	/* Without an exponent that is its own text, but that numeric has no -0. */
	for (size_t i = 0; i < t->len && zero; i++)
		zero = (t->data[i] == '-' || t->data[i] == '0' || t->data[i] == '.');
	if (!t->exponent && !(zero && t->data[0] == '-'))
	{
		appendBinaryStringInfo(out, t->data, t->len);
		return;
	}
	appendStringInfoString(out,
						   DatumGetCString(DirectFunctionCall1(numeric_out,
															   NumericGetDatum(eoi_json_token_numeric(t)))));
}

static bool
is_time_kind(const EoiJsonColumn *jc)
{
	return jc->kind == EOI_VALUE_TIMESTAMPTZ || jc->kind == EOI_VALUE_TIMESTAMP ||
		jc->kind == EOI_VALUE_DATE;
}

/* A nested object or array, as jsonb_in reads its text. */
static Jsonb *
token_jsonb(const EoiJsonToken *t)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
											  CStringGetDatum(pnstrdup(t->data, t->len))));
}

/* A nested object or array as the JsonbValue (jbvBinary) of that jsonb. */
void
eoi_json_token_binary(const EoiJsonToken *t, JsonbValue *v)
{
	Jsonb	   *jb = token_jsonb(t);

	v->type = jbvBinary;
	v->val.binary.data = &jb->root;
	v->val.binary.len = VARSIZE(jb) - VARHDRSZ;
}

/*
 * Append to `out` the text column `jc` reads for the value `t`; false for
 * a JSON null.  As eoi_json_value_text for the JsonbValue of `t`.
 */
bool
eoi_json_token_text(const EoiJsonColumn *jc, EoiTimestampUnit unit, const EoiJsonToken *t,
					StringInfo out, StringInfo scratch)
{
	switch (t->kind)
	{
		case EOI_JSON_NULL:
			return false;
		case EOI_JSON_TRUE:
		case EOI_JSON_FALSE:
			appendStringInfoString(out, t->kind == EOI_JSON_TRUE ? "true" : "false");
			return true;
		case EOI_JSON_STRING:
			if (jc->kind == EOI_VALUE_BYTEA)
				bytea_text(jc, t->data, (int) t->len, out);
			else
				appendBinaryStringInfo(out, t->data, t->len);
			return true;
		case EOI_JSON_NUMBER:
			if (unit != EOI_TS_NONE && is_time_kind(jc))
			{
				Timestamp	ts;
				int			start = out->len;

				if (epoch_integer(jc, unit, t, &ts) && epoch_encode(jc, ts, out))
					return true;
				out->len = start;
				out->data[start] = '\0';
				epoch_text(jc, unit, eoi_json_token_numeric(t), out);
			}
			else
				number_text(t, out);
			return true;
		case EOI_JSON_NESTED:
			{
				JsonbValue	v;

				eoi_json_token_binary(t, &v);
				return eoi_json_value_text(jc, unit, &v, out, scratch);
			}
	}
	return false;
}

/* float8in's value of a number, when it takes it without a word. */
static bool
token_double(const EoiJsonToken *t, bool single, Datum *out)
{
	double		d = 0;
	float		f = 0;

	/* a short decimal needs no strtod (decfloat.c); a float4 keeps strtof's own rounding */
	if (single || !eoi_decimal_to_double(t->data, t->len, &d))
	{
		char		buf[64];
		char	   *end;

		if (t->len >= sizeof(buf))
			return false;
		memcpy(buf, t->data, t->len);
		buf[t->len] = '\0';
		errno = 0;
		if (single)
			f = strtof(buf, &end);
		else
			d = strtod(buf, &end);
		/* range errors (and subnormals) go the text's way, which reports them */
		if (errno != 0 || end != buf + t->len || isinf(single ? f : d))
			return false;
	}
	/* numeric has no -0: float8in reads "0" */
	if (single)
		*out = Float4GetDatum(f == 0 ? 0.0f : f);
	else
		*out = Float8GetDatum(d == 0 ? 0.0 : d);
	return true;
}

/*
 * The value of type `typid` (typmod `typmod`) that the column's input
 * function makes of eoi_json_token_text's text, without the text: for the
 * types and values where that is plainly the same; false otherwise (the
 * text's way then gives the value, or the error).
 */
bool
eoi_json_token_datum(const EoiJsonColumn *jc, EoiTimestampUnit unit, Oid typid, int32 typmod,
					 const EoiJsonToken *t, Datum *out)
{
	int64		i;
	Timestamp	ts;
	DateADT		date;

	switch (typid)
	{
		case INT8OID:
		case INT4OID:
		case INT2OID:
			if (t->kind != EOI_JSON_NUMBER || !token_int64(t, &i))
				return false;
			if (typid == INT8OID)
				*out = Int64GetDatum(i);
			else if (typid == INT4OID && i >= PG_INT32_MIN && i <= PG_INT32_MAX)
				*out = Int32GetDatum((int32) i);
			else if (typid == INT2OID && i >= PG_INT16_MIN && i <= PG_INT16_MAX)
				*out = Int16GetDatum((int16) i);
			else
				return false;
			return true;
		case FLOAT8OID:
		case FLOAT4OID:
			return t->kind == EOI_JSON_NUMBER && token_double(t, typid == FLOAT4OID, out);
		case BOOLOID:
			if (t->kind != EOI_JSON_TRUE && t->kind != EOI_JSON_FALSE)
				return false;
			*out = BoolGetDatum(t->kind == EOI_JSON_TRUE);
			return true;
		case TEXTOID:
			if (t->kind != EOI_JSON_STRING)
				return false;
			*out = PointerGetDatum(cstring_to_text_with_len(t->data, (int) t->len));
			return true;
		case TIMESTAMPTZOID:
		case TIMESTAMPOID:
			if (t->kind != EOI_JSON_NUMBER || typmod >= 0 || unit == EOI_TS_NONE ||
				!epoch_integer(jc, unit, t, &ts))
				return false;
			*out = typid == TIMESTAMPTZOID ? TimestampTzGetDatum(ts) : TimestampGetDatum(ts);
			return true;
		case DATEOID:
			if (t->kind != EOI_JSON_NUMBER || unit == EOI_TS_NONE ||
				!epoch_integer(jc, unit, t, &ts) || !epoch_date(ts, &date))
				return false;
			*out = DateADTGetDatum(date);
			return true;
		case JSONBOID:
			if (t->kind != EOI_JSON_NESTED)
				return false;
			*out = JsonbPGetDatum(token_jsonb(t));
			return true;
		default:
			return false;
	}
}
