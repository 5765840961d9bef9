/*-------------------------------------------------------------------------
 *
 * protovalue.c
 *	  Protobuf's binary encoding: a message's fields read off the wire, and
 *	  their values as PostgreSQL's columns take them.
 *
 * A message is a sequence of fields, each a tag (the field's number and a
 * wire type) and a value: a varint, 8 or 4 fixed bytes, or a length and
 * that many bytes (strings, bytes, messages, packed repeated numbers).
 * A field may occur more than once: the last occurrence of a scalar wins,
 * the occurrences of a message merge (read as their bytes concatenated),
 * and those of a repeated field are its items, in order.  Fields the
 * schema does not know are skipped, as Protobuf's readers do: a writer
 * with a newer schema may add them.
 *
 * What a field holds when absent is what Protobuf says: NULL for a field
 * with presence (a message, a proto3 optional field, a oneof's member, a
 * proto2 field without a default), else its type's zero (0, false, "", the
 * enum's value 0), or the proto2 default.
 *
 * The value mapping (the same one create_target's column types follow,
 * eoi_pb_column_type): integers as integers (uint64 as numeric), float and
 * double, bool, string as text checked for the database encoding, bytes
 * as bytea, an enum as its value's name (its number into an integer
 * column); google.protobuf.Timestamp as timestamptz, Duration as interval,
 * the wrappers as their value or NULL, Struct, Value and ListValue as
 * JSON, confluent.type.Decimal as numeric; other messages and maps as JSON
 * objects, repeated scalars as arrays (JSON arrays into json columns).
 *
 * Every length, count and nesting is the message's: each is checked
 * against the bytes there are, and messages nest at most
 * EOI_PROTO_MAX_DEPTH deep.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "catalog/pg_type.h"
#include "common/base64.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "base/pgcompat.h"
#include "format/protovalue.h"
#include "format/wirenum.h"

#define WIRE_VARINT 0
#define WIRE_I64 1
#define WIRE_LEN 2
#define WIRE_START_GROUP 3
#define WIRE_END_GROUP 4
#define WIRE_I32 5

/*
 * The most text a record's value may render to: an empty item of a repeated
 * message takes two bytes on the wire and can take a kilobyte as JSON, and
 * no datum may pass 1 GB.
 */
#define MAX_TEXT (256 * 1024 * 1024)

/* ---- errors ---- */

void
eoi_pb_malformed(const PbRecord *rec, const unsigned char *at, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
			 errmsg("Protobuf record written with %s does not decode at byte %ld: %s",
					rec->what, (long) (at - rec->start), why)));
	pg_unreachable();
}

pg_noreturn static void too_deep(const PbRecord *rec);
pg_noreturn static void out_of_range(const PbRecord *rec, const char *field, const char *what);

static void
too_deep(const PbRecord *rec)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("Protobuf record written with %s nests messages deeper than eoingest reads", rec->what),
			 errhint("A worker reads messages nested at most %d levels deep.", EOI_PROTO_MAX_DEPTH)));
	pg_unreachable();
}

static void
check_text_size(const StringInfo out, const PbRecord *rec)
{
	if (out->len > MAX_TEXT)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("Protobuf record written with %s renders to more than %d MB of text", rec->what,
						MAX_TEXT / (1024 * 1024))));
}

static void
out_of_range(const PbRecord *rec, const char *field, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("Protobuf record written with %s has a %s in field %s that PostgreSQL cannot hold",
					rec->what, what, field)));
	pg_unreachable();
}

/* ---- the wire ---- */

typedef struct Wire
{
	const unsigned char *p;
	const unsigned char *end;
	const PbRecord *rec;
} Wire;

static uint64
read_varint(Wire *w)
{
	uint64		v = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		unsigned char b;

		if (w->p >= w->end)
			eoi_pb_malformed(w->rec, w->p, "a varint runs past the end");
		b = *w->p++;
		v |= (uint64) (b & 0x7f) << shift;
		if ((b & 0x80) == 0)
			return v;
	}
	eoi_pb_malformed(w->rec, w->p, "a varint is longer than 10 bytes");
}

static uint64
read_fixed(Wire *w, int n)
{
	uint64		v = 0;

	if (w->end - w->p < n)
		eoi_pb_malformed(w->rec, w->p, psprintf("a %d-byte number runs past the end", n));
	for (int i = n - 1; i >= 0; i--)
		v = (v << 8) | w->p[i];
	w->p += n;
	return v;
}

static const unsigned char *
read_len(Wire *w, uint32 *len)
{
	const unsigned char *at = w->p;
	uint64		n = read_varint(w);
	const unsigned char *data = w->p;

	if (n > (uint64) (w->end - w->p))
		eoi_pb_malformed(w->rec, at, psprintf("a length of " UINT64_FORMAT " bytes runs past the end", n));
	w->p += n;
	*len = (uint32) n;
	return data;
}

/* Skip a value of wire type `wire` (a group through its end). */
static void
skip_value(Wire *w, int wire, uint32 number, int depth)
{
	uint32		len;

	switch (wire)
	{
		case WIRE_VARINT:
			(void) read_varint(w);
			break;
		case WIRE_I64:
			(void) read_fixed(w, 8);
			break;
		case WIRE_I32:
			(void) read_fixed(w, 4);
			break;
		case WIRE_LEN:
			(void) read_len(w, &len);
			break;
		case WIRE_START_GROUP:
			if (depth >= EOI_PROTO_MAX_DEPTH)
				too_deep(w->rec);
			for (;;)
			{
				const unsigned char *at = w->p;
				uint64		tag;

				if (w->p >= w->end)
					eoi_pb_malformed(w->rec, w->p, "a group is not closed");
				tag = read_varint(w);
				if ((tag & 7) == WIRE_END_GROUP)
				{
					if ((tag >> 3) != number)
						eoi_pb_malformed(w->rec, at, "a group is closed with another field's number");
					break;
				}
				skip_value(w, (int) (tag & 7), (uint32) (tag >> 3), depth + 1);
			}
			break;
		default:
			eoi_pb_malformed(w->rec, w->p, psprintf("wire type %d is not Protobuf's", wire));
	}
}

/* The wire type of a field's type, not packed. */
static int
wire_of(EoiProtoType type)
{
	switch (type)
	{
		case PT_DOUBLE:
		case PT_FIXED64:
		case PT_SFIXED64:
			return WIRE_I64;
		case PT_FLOAT:
		case PT_FIXED32:
		case PT_SFIXED32:
			return WIRE_I32;
		case PT_STRING:
		case PT_BYTES:
		case PT_MESSAGE:
			return WIRE_LEN;
		case PT_GROUP:
			return WIRE_START_GROUP;
		default:
			return WIRE_VARINT;
	}
}

static const char *const type_names[] = {
	[PT_DOUBLE] = "double", [PT_FLOAT] = "float", [PT_INT64] = "int64", [PT_UINT64] = "uint64",
	[PT_INT32] = "int32", [PT_FIXED64] = "fixed64", [PT_FIXED32] = "fixed32", [PT_BOOL] = "bool",
	[PT_STRING] = "string", [PT_GROUP] = "group", [PT_MESSAGE] = "message", [PT_BYTES] = "bytes",
	[PT_UINT32] = "uint32", [PT_ENUM] = "enum", [PT_SFIXED32] = "sfixed32", [PT_SFIXED64] = "sfixed64",
	[PT_SINT32] = "sint32", [PT_SINT64] = "sint64",
};

static void
add_occurrence(PbFields *pf, int field, const PbOcc *o)
{
	int			i;

	if (pf->nocc == pf->capacity)
	{
		pf->capacity *= 2;
		pf->occ = repalloc(pf->occ, sizeof(PbOcc) * pf->capacity);
	}
	i = pf->nocc++;
	pf->occ[i] = *o;
	pf->occ[i].next = -1;
	if (pf->first[field] < 0)
		pf->first[field] = i;
	else
		pf->occ[pf->last[field]].next = i;
	pf->last[field] = i;
}

/*
 * Of each oneof, the member that came last is the one set: the others'
 * occurrences are forgotten, as Protobuf's readers clear them.
 */
static void
keep_last_members(PbFields *pf)
{
	const EoiProtoMessage *msg = pf->msg;
	int		   *winner = palloc(sizeof(int) * msg->noneofs);

	for (int k = 0; k < msg->noneofs; k++)
		winner[k] = -1;
	for (int i = 0; i < msg->nfields; i++)
	{
		int			k = msg->fields[i].oneof;

		if (k >= 0 && pf->first[i] >= 0 && (winner[k] < 0 || pf->last[i] > pf->last[winner[k]]))
			winner[k] = i;
	}
	for (int i = 0; i < msg->nfields; i++)
	{
		int			k = msg->fields[i].oneof;

		if (k >= 0 && winner[k] != i)
			pf->first[i] = -1;
	}
	pfree(winner);
}

void
eoi_pb_free(PbFields *pf)
{
	pfree(pf->first);
	pfree(pf->occ);
}

void
eoi_pb_read(PbFields *pf, const EoiProtoMessage *msg, const unsigned char *data, size_t len,
			const PbRecord *rec, int depth)
{
	Wire		w = {data, data + len, rec};
	int			n = Max(msg->nfields, 1);
	uint32		count = 0;

	if (depth > EOI_PROTO_MAX_DEPTH)
		too_deep(rec);
	pf->msg = msg;
	pf->first = palloc(sizeof(int) * n * 2);
	pf->last = pf->first + n;
	memset(pf->first, -1, sizeof(int) * n);
	pf->capacity = Max(msg->nfields, 4);	/* each field once, mostly */
	pf->nocc = 0;
	pf->occ = palloc(sizeof(PbOcc) * pf->capacity);

	while (w.p < w.end)
	{
		const unsigned char *at = w.p;
		uint64		tag = read_varint(&w);
		int			wire = (int) (tag & 7);
		uint64		number = tag >> 3;
		const EoiProtoField *f;
		PbOcc		o = {0};

		if ((++count & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (number == 0 || number > EOI_PROTO_MAX_FIELD_NUMBER)
			eoi_pb_malformed(rec, at, psprintf("field number " UINT64_FORMAT " is out of range", number));
		if (wire == WIRE_END_GROUP)
			eoi_pb_malformed(rec, at, "a group ends that did not start");
		f = eoi_proto_field(msg, (uint32) number);
		if (f == NULL)
		{
			skip_value(&w, wire, (uint32) number, depth);
			continue;
		}
		if (wire != wire_of(f->type) &&
			!(wire == WIRE_LEN && f->repeated && wire_of(f->type) != WIRE_LEN))
			eoi_pb_malformed(rec, at,
							 psprintf("field %s (%d) of message %s has wire type %d, which is not its type %s's",
									  f->name, f->number, msg->full_name, wire,
									  f->type == PT_ENUM ? "enum" : type_names[f->type]));
		o.wire = (uint8) wire;
		switch (wire)
		{
			case WIRE_VARINT:
				o.value = read_varint(&w);
				break;
			case WIRE_I64:
				o.value = read_fixed(&w, 8);
				break;
			case WIRE_I32:
				o.value = read_fixed(&w, 4);
				break;
			case WIRE_LEN:
				o.data = read_len(&w, &o.len);
				break;
		}
		add_occurrence(pf, (int) (f - msg->fields), &o);
	}

	if (msg->noneofs > 0)
		keep_last_members(pf);
	for (int i = 0; i < msg->nfields; i++)
		if (msg->fields[i].required && pf->first[i] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("Protobuf record written with %s lacks required field %s of message %s",
							rec->what, msg->fields[i].name, msg->full_name)));
}

/* ---- scalars ---- */

/* A scalar's value, its bits as the wire had them. */
typedef struct PbScalar
{
	const EoiProtoField *field;
	EoiProtoType type;
	uint64		value;
	const unsigned char *data;	/* string, bytes */
	uint32		len;
} PbScalar;

static int64
zigzag(uint64 v)
{
	return (int64) (v >> 1) ^ -(int64) (v & 1);
}

static int64
signed_value(const PbScalar *s)
{
	switch (s->type)
	{
		case PT_INT32:
		case PT_ENUM:
		case PT_SFIXED32:
			return (int32) (uint32) s->value;
		case PT_SINT32:
			return (int32) zigzag((uint32) s->value);
		case PT_SINT64:
			return zigzag(s->value);
		case PT_UINT32:
		case PT_FIXED32:
			return (uint32) s->value;
		default:
			return (int64) s->value;
	}
}

static float4
float_value(const PbScalar *s)
{
	uint32		bits = (uint32) s->value;
	float4		f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static float8
double_value(const PbScalar *s)
{
	float8		d;

	memcpy(&d, &s->value, sizeof(d));
	return d;
}

/*
 * Protobuf's strings are UTF-8: checked, and converted for the database.
 * The result is the string's own bytes (not terminated) when nothing
 * needed converting, else a terminated copy.
 */
static const char *
server_string(const PbScalar *s)
{
	if (s->len == 0)
		return "";
	return pg_any_to_server((const char *) s->data, (int) s->len, PG_UTF8);
}

/* The string as a terminated string of the database encoding. */
static const char *
server_cstring(const PbScalar *s)
{
	const char *converted = server_string(s);

	if (converted == (const char *) s->data)
		return pnstrdup(converted, s->len);
	return converted;
}

static void
append_string(StringInfo out, const PbScalar *s)
{
	const char *converted = server_string(s);

	if (converted == (const char *) s->data)
		appendBinaryStringInfo(out, converted, (int) s->len);
	else
		appendStringInfoString(out, converted);
}

static bool
is_integer_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID || typid == NUMERICOID;
}

static void
append_scalar_text(StringInfo out, const PbScalar *s, Oid typid)
{
	switch (s->type)
	{
		case PT_DOUBLE:
			appendStringInfoString(out, float8out_internal(double_value(s)));
			break;
		case PT_FLOAT:
			appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(float4out, Float4GetDatum(float_value(s)))));
			break;
		case PT_UINT64:
		case PT_FIXED64:
			appendStringInfo(out, UINT64_FORMAT, s->value);
			break;
		case PT_BOOL:
			appendStringInfoString(out, s->value ? "true" : "false");
			break;
		case PT_STRING:
			append_string(out, s);
			break;
		case PT_BYTES:
			eoi_append_bytea_hex(out, s->data, s->len);
			break;
		case PT_ENUM:
			{
				const char *name = is_integer_type(typid) ? NULL :
					eoi_proto_enum_name(s->field->enumtype, (int32) signed_value(s));

				if (name != NULL)
					appendStringInfoString(out, name);
				else
					appendStringInfo(out, INT64_FORMAT, signed_value(s));
				break;
			}
		default:
			appendStringInfo(out, INT64_FORMAT, signed_value(s));
			break;
	}
}

static void
append_json_text(StringInfo out, const char *s)
{
	escape_json(out, s);
}

static void
append_json_double(StringInfo out, float8 d)
{
	if (isnan(d))
		appendStringInfoString(out, "\"NaN\"");
	else if (isinf(d))
		appendStringInfoString(out, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else
		appendStringInfoString(out, float8out_internal(d));
}

static void
append_scalar_json(StringInfo out, const PbScalar *s)
{
	switch (s->type)
	{
		case PT_DOUBLE:
			append_json_double(out, double_value(s));
			break;
		case PT_FLOAT:
			{
				float4		f = float_value(s);

				if (isnan(f) || isinf(f))
					append_json_double(out, f);
				else
					appendStringInfoString(out, DatumGetCString(DirectFunctionCall1(float4out, Float4GetDatum(f))));
				break;
			}
		case PT_STRING:
			append_json_text(out, server_cstring(s));
			break;
		case PT_BYTES:
			{
				int			n = pg_b64_enc_len((int) s->len);
				char	   *b64 = palloc(n + 1);
				int			written = eoi_b64_encode(s->data, (int) s->len, b64, n);

				if (written < 0)
					elog(ERROR, "could not encode bytes as base64");
				b64[written] = '\0';
				append_json_text(out, b64);
				break;
			}
		case PT_ENUM:
			{
				const char *name = eoi_proto_enum_name(s->field->enumtype, (int32) signed_value(s));

				if (name != NULL)
					append_json_text(out, name);
				else
					appendStringInfo(out, INT64_FORMAT, signed_value(s));
				break;
			}
		default:
			append_scalar_text(out, s, InvalidOid);
			break;
	}
}

/* The scalar of an occurrence that is not a packed run. */
static PbScalar
scalar_of(const EoiProtoField *f, const PbOcc *o)
{
	PbScalar	s = {f, f->type, o->value, o->data, o->len};

	return s;
}

/* The type's zero: what an absent field without presence holds. */
static PbScalar
zero_of(const EoiProtoField *f)
{
	PbScalar	s = {f, f->type, 0, (const unsigned char *) "", 0};

	return s;
}

/*
 * The items of a repeated scalar field, packed runs unpacked, in order.
 * Returns how many; *items is palloc'd.
 */
static int
scalar_items(const PbFields *pf, int index, const PbRecord *rec, PbScalar **items)
{
	const EoiProtoField *f = &pf->msg->fields[index];
	int			n = 0;
	int			cap = 8;

	*items = palloc(sizeof(PbScalar) * cap);
	for (int i = pf->first[index]; i >= 0; i = pf->occ[i].next)
	{
		const PbOcc *o = &pf->occ[i];
		Wire		w;

		if (o->wire != WIRE_LEN || f->type == PT_STRING || f->type == PT_BYTES)
		{
			if (n == cap)
				*items = repalloc(*items, sizeof(PbScalar) * (cap *= 2));
			(*items)[n++] = scalar_of(f, o);
			continue;
		}
		w.p = o->data;
		w.end = o->data + o->len;
		w.rec = rec;
		while (w.p < w.end)
		{
			PbScalar	s = zero_of(f);
			int			wire = wire_of(f->type);

			s.value = wire == WIRE_I64 ? read_fixed(&w, 8) :
				wire == WIRE_I32 ? read_fixed(&w, 4) : read_varint(&w);
			if (n == cap)
			{
				CHECK_FOR_INTERRUPTS();
				*items = repalloc(*items, sizeof(PbScalar) * (cap *= 2));
			}
			(*items)[n++] = s;
		}
	}
	return n;
}

/* ---- messages as values ---- */

/*
 * The bytes of message field `index`: its one occurrence's, or, when it
 * occurs more than once, all of theirs concatenated (Protobuf merges them
 * so).  Those are in a buffer of their own, which *rec then points to
 * (filled in `merged`), so that an error's byte offset is within them.
 */
static const unsigned char *
message_bytes(const PbFields *pf, int index, const PbRecord **rec, PbRecord *merged, size_t *len)
{
	const PbOcc *o = &pf->occ[pf->first[index]];
	StringInfoData buf;

	if (o->next < 0)
	{
		*len = o->len;
		return o->data;
	}
	initStringInfo(&buf);
	for (int i = pf->first[index]; i >= 0; i = pf->occ[i].next)
		appendBinaryStringInfo(&buf, (const char *) pf->occ[i].data, pf->occ[i].len);
	merged->start = (const unsigned char *) buf.data;
	merged->what = psprintf("%s (the occurrences of field %s merged)", (*rec)->what,
							pf->msg->fields[index].name);
	*rec = merged;
	*len = buf.len;
	return (const unsigned char *) buf.data;
}

/* The scalar of field `index` of a message read (its last occurrence), or its zero. */
static PbScalar
member_scalar(const PbFields *pf, int index)
{
	const EoiProtoField *f = &pf->msg->fields[index];

	if (pf->first[index] < 0)
		return zero_of(f);
	return scalar_of(f, &pf->occ[pf->last[index]]);
}

/* A Timestamp's seconds and nanos as a timestamptz. */
static TimestampTz
timestamp_of(const PbFields *pf, const PbRecord *rec, const char *field)
{
	int64		seconds = (int64) member_scalar(pf, 0).value;
	int64		nanos = (int32) (uint32) member_scalar(pf, 1).value;
	int64		us;
	TimestampTz ts;

	if (nanos < 0 || nanos > 999999999)
		out_of_range(rec, field, "Timestamp whose nanos are out of range");
	if (pg_sub_s64_overflow(seconds, (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY, &us) ||
		pg_mul_s64_overflow(us, USECS_PER_SEC, &us) ||
		pg_add_s64_overflow(us, nanos / 1000, &ts) || !IS_VALID_TIMESTAMP(ts))
		out_of_range(rec, field, "Timestamp");
	return ts;
}

/* A timestamp as ISO text in UTC, ' ' or 'T' between date and time. */
static void
append_utc_timestamp(StringInfo out, TimestampTz ts, bool xsd)
{
	struct pg_tm tm;
	fsec_t		fsec;
	char		buf[MAXDATELEN + 1];

	if (timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0)
		elog(ERROR, "timestamp out of range");
	EncodeDateTime(&tm, fsec, true, 0, NULL, xsd ? USE_XSD_DATES : USE_ISO_DATES, buf);
	appendStringInfoString(out, buf);
}

/* Protobuf's limit of a Duration: about 10,000 years either way. */
#define MAX_DURATION_SECONDS INT64CONST(315576000000)

static void
append_duration(StringInfo out, const PbFields *pf, const PbRecord *rec, const char *field)
{
	int64		seconds = (int64) member_scalar(pf, 0).value;
	int32		nanos = (int32) (uint32) member_scalar(pf, 1).value;

	if (seconds < -MAX_DURATION_SECONDS || seconds > MAX_DURATION_SECONDS ||
		nanos < -999999999 || nanos > 999999999 ||
		(seconds < 0 && nanos > 0) || (seconds > 0 && nanos < 0))
		out_of_range(rec, field, "Duration");
	if (seconds < 0 || nanos < 0)
		appendStringInfoChar(out, '-');
	if (seconds < 0)
		seconds = -seconds;
	if (nanos < 0)
		nanos = -nanos;
	/* as Protobuf's JSON writes it: no fraction, or 3, 6 or 9 digits */
	if (nanos == 0)
		appendStringInfo(out, INT64_FORMAT, seconds);
	else if (nanos % 1000000 == 0)
		appendStringInfo(out, INT64_FORMAT ".%03d", seconds, (int) (nanos / 1000000));
	else if (nanos % 1000 == 0)
		appendStringInfo(out, INT64_FORMAT ".%06d", seconds, (int) (nanos / 1000));
	else
		appendStringInfo(out, INT64_FORMAT ".%09d", seconds, (int) nanos);
}

static void append_field_json(StringInfo out, const PbFields *pf, int index, const PbRecord *rec, int depth);

/*
 * A message of a well-known type as JSON, or false for another type.  The
 * message `m`'s fields are read in `pf`.
 */
static bool
append_well_known_json(StringInfo out, const PbFields *pf, const PbRecord *rec, int depth)
{
	const EoiProtoMessage *m = pf->msg;

	switch (m->well_known)
	{
		case WK_TIMESTAMP:
			appendStringInfoChar(out, '"');
			append_utc_timestamp(out, timestamp_of(pf, rec, m->full_name), true);
			appendStringInfoChar(out, '"');
			return true;
		case WK_DURATION:
			appendStringInfoChar(out, '"');
			append_duration(out, pf, rec, m->full_name);
			appendStringInfoString(out, "s\"");
			return true;
		case WK_WRAPPER:
			{
				PbScalar	s = member_scalar(pf, 0);

				append_scalar_json(out, &s);
				return true;
			}
		case WK_STRUCT:
			append_field_json(out, pf, 0, rec, depth);
			return true;
		case WK_LIST_VALUE:
			append_field_json(out, pf, 0, rec, depth);
			return true;
		case WK_VALUE:
			{
				/* the oneof's member that came last */
				int			member = -1;

				for (int k = 0; k < m->nfields; k++)
					if (pf->first[k] >= 0 && (member < 0 || pf->last[k] > pf->last[member]))
						member = k;
				if (member < 0 || m->fields[member].number == 1)
					appendStringInfoString(out, "null");
				else
					append_field_json(out, pf, member, rec, depth);
				return true;
			}
		case WK_DECIMAL:
			{
				PbScalar	v = member_scalar(pf, 0);
				int64		scale = (int32) (uint32) member_scalar(pf, 2).value;

				if (v.len == 0)
					appendStringInfoChar(out, '0');
				else
					eoi_append_decimal(out, v.data, v.len, scale);
				return true;
			}
		default:
			return false;
	}
}

/* A message's bytes as JSON: a well-known type's value, else an object. */
void
eoi_pb_append_json(StringInfo out, const EoiProtoMessage *msg, const unsigned char *data, size_t len,
				   const PbRecord *rec, int depth)
{
	PbFields	pf;
	bool		first = true;

	check_stack_depth();
	eoi_pb_read(&pf, msg, data, len, rec, depth);
	if (append_well_known_json(out, &pf, rec, depth))
	{
		eoi_pb_free(&pf);
		return;
	}
	appendStringInfoChar(out, '{');
	for (int i = 0; i < msg->nfields; i++)
	{
		const EoiProtoField *f = &msg->fields[i];

		if (pf.first[i] < 0 && f->presence && f->default_text == NULL)
			continue;
		if (!first)
			appendStringInfoString(out, ", ");
		first = false;
		append_json_text(out, f->name);
		appendStringInfoString(out, ": ");
		append_field_json(out, &pf, i, rec, depth);
	}
	appendStringInfoChar(out, '}');
	check_text_size(out, rec);
	eoi_pb_free(&pf);
}

/* A proto2 default (protoparse.c has put it in canonical form) as JSON. */
static void
append_default_json(StringInfo out, const EoiProtoField *f)
{
	switch (f->type)
	{
		case PT_STRING:
			(void) pg_verifymbstr(f->default_text, (int) strlen(f->default_text), false);
			append_json_text(out, f->default_text);
			break;
		case PT_ENUM:
			append_json_text(out, f->default_text);
			break;
		case PT_BYTES:
			{
				PbScalar	s = {f, PT_BYTES, 0, (const unsigned char *) f->default_text,
				(uint32) strlen(f->default_text)};

				append_scalar_json(out, &s);
				break;
			}
		case PT_DOUBLE:
		case PT_FLOAT:
			if (!isdigit((unsigned char) f->default_text[f->default_text[0] == '-']))
			{
				append_json_text(out, f->default_text);	/* Infinity, NaN */
				break;
			}
			/* FALLTHROUGH */
		default:
			appendStringInfoString(out, f->default_text);
	}
}

/* One item of a field (a scalar, or a message occurrence) as JSON. */
static void
append_item_json(StringInfo out, const EoiProtoField *f, const PbScalar *s, const PbOcc *o,
				 const PbRecord *rec, int depth)
{
	if (f->type == PT_MESSAGE)
		eoi_pb_append_json(out, f->message, o->data, o->len, rec, depth + 1);
	else
		append_scalar_json(out, s);
}

/* A map entry's key, as a JSON object's key. */
static void
append_map_key(StringInfo out, const PbFields *entry)
{
	PbScalar	k = member_scalar(entry, 0);

	if (k.type == PT_STRING)
		append_json_text(out, server_cstring(&k));
	else
	{
		StringInfoData text;

		initStringInfo(&text);
		append_scalar_text(&text, &k, InvalidOid);
		append_json_text(out, text.data);
	}
}

static void
append_map_json(StringInfo out, const PbFields *pf, int index, const PbRecord *rec, int depth)
{
	const EoiProtoField *f = &pf->msg->fields[index];
	const EoiProtoMessage *entry_type = f->message;
	bool		first = true;

	appendStringInfoChar(out, '{');
	for (int i = pf->first[index]; i >= 0; i = pf->occ[i].next)
	{
		PbFields	entry;

		CHECK_FOR_INTERRUPTS();
		eoi_pb_read(&entry, entry_type, pf->occ[i].data, pf->occ[i].len, rec, depth + 1);
		if (!first)
			appendStringInfoString(out, ", ");
		first = false;
		append_map_key(out, &entry);
		appendStringInfoString(out, ": ");
		if (entry_type->fields[1].type == PT_MESSAGE && entry.first[1] < 0)
		{
			/* an absent message value is the message with no fields */
			eoi_pb_append_json(out, entry_type->fields[1].message, (const unsigned char *) "", 0, rec,
							   depth + 2);
		}
		else
			append_field_json(out, &entry, 1, rec, depth + 1);
		check_text_size(out, rec);
		eoi_pb_free(&entry);
	}
	appendStringInfoChar(out, '}');
}

/* Field `index` of a message read as JSON: its value, its items, or its zero. */
static void
append_field_json(StringInfo out, const PbFields *pf, int index, const PbRecord *rec, int depth)
{
	const EoiProtoField *f = &pf->msg->fields[index];

	if (depth > EOI_PROTO_MAX_DEPTH)
		too_deep(rec);
	if (f->repeated && f->type == PT_MESSAGE && f->message->map_entry)
	{
		append_map_json(out, pf, index, rec, depth);
		return;
	}
	if (f->repeated)
	{
		appendStringInfoChar(out, '[');
		if (f->type == PT_MESSAGE)
		{
			for (int i = pf->first[index]; i >= 0; i = pf->occ[i].next)
			{
				CHECK_FOR_INTERRUPTS();
				if (i != pf->first[index])
					appendStringInfoString(out, ", ");
				append_item_json(out, f, NULL, &pf->occ[i], rec, depth);
			}
		}
		else
		{
			PbScalar   *items;
			int			n = scalar_items(pf, index, rec, &items);

			for (int i = 0; i < n; i++)
			{
				if (i > 0)
					appendStringInfoString(out, ", ");
				append_scalar_json(out, &items[i]);
			}
			pfree(items);
		}
		appendStringInfoChar(out, ']');
		return;
	}
	if (pf->first[index] < 0)
	{
		PbScalar	zero = zero_of(f);

		if (f->default_text != NULL)
			append_default_json(out, f);
		else if (f->presence)
			appendStringInfoString(out, "null");
		else
			append_scalar_json(out, &zero);
		return;
	}
	if (f->type == PT_MESSAGE)
	{
		size_t		len;
		PbRecord	merged;
		const unsigned char *data = message_bytes(pf, index, &rec, &merged, &len);

		eoi_pb_append_json(out, f->message, data, len, rec, depth + 1);
		return;
	}
	{
		PbScalar	s = member_scalar(pf, index);

		append_scalar_json(out, &s);
	}
}

/* ---- fields as columns ---- */

/* The items of a repeated scalar field as a PostgreSQL array's text. */
static void
append_pg_array(StringInfo out, const PbFields *pf, int index, Oid elemtype, const PbRecord *rec)
{
	PbScalar   *items;
	int			n = scalar_items(pf, index, rec, &items);
	StringInfoData elem;

	initStringInfo(&elem);
	appendStringInfoChar(out, '{');
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoChar(out, ',');
		resetStringInfo(&elem);
		append_scalar_text(&elem, &items[i], elemtype);
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

/* A message field's value for a column: a well-known type's, or JSON. */
static bool
message_text(StringInfo out, const PbFields *pf, int index, Oid typid, const PbRecord *rec)
{
	const EoiProtoField *f = &pf->msg->fields[index];
	const EoiProtoMessage *m = f->message;
	size_t		len;
	PbRecord	merged;
	const unsigned char *data = message_bytes(pf, index, &rec, &merged, &len);
	PbFields	inner;

	if (typid == JSONBOID || typid == JSONOID ||
		(m->well_known != WK_TIMESTAMP && m->well_known != WK_DURATION &&
		 m->well_known != WK_WRAPPER && m->well_known != WK_DECIMAL))
	{
		eoi_pb_append_json(out, m, data, len, rec, 1);
		return true;
	}
	eoi_pb_read(&inner, m, data, len, rec, 1);
	switch (m->well_known)
	{
		case WK_TIMESTAMP:
			append_utc_timestamp(out, timestamp_of(&inner, rec, f->name), false);
			break;
		case WK_DURATION:
			append_duration(out, &inner, rec, f->name);
			appendStringInfoString(out, " seconds");
			break;
		case WK_WRAPPER:
			{
				PbScalar	s = member_scalar(&inner, 0);

				append_scalar_text(out, &s, typid);
				break;
			}
		default:
			(void) append_well_known_json(out, &inner, rec, 1);
			break;
	}
	return true;
}

static void
append_default_text(StringInfo out, const EoiProtoField *f, Oid typid)
{
	if (f->type == PT_ENUM && is_integer_type(typid))
	{
		/* protoparse.c checked that the enum has the name */
		for (int i = 0; i < f->enumtype->nvalues; i++)
			if (strcmp(f->enumtype->names[i], f->default_text) == 0)
			{
				appendStringInfo(out, "%d", (int) f->enumtype->numbers[i]);
				return;
			}
	}
	if (f->type == PT_STRING)
	{
		/* the schema's text: checked as the record's strings are */
		(void) pg_verifymbstr(f->default_text, (int) strlen(f->default_text), false);
		appendStringInfoString(out, f->default_text);
	}
	else if (f->type == PT_BYTES)
		eoi_append_bytea_hex(out, (const unsigned char *) f->default_text, strlen(f->default_text));
	else
		appendStringInfoString(out, f->default_text);
}

bool
eoi_pb_field_text(StringInfo out, const PbFields *pf, int index, Oid typid, const PbRecord *rec)
{
	const EoiProtoField *f = &pf->msg->fields[index];

	if (!f->repeated && pf->first[index] < 0 && f->presence && f->default_text == NULL)
		return false;
	if (typid == JSONBOID || typid == JSONOID)
	{
		append_field_json(out, pf, index, rec, 1);
		return true;
	}
	if (f->repeated)
	{
		Oid			elemtype = OidIsValid(typid) ? get_element_type(typid) : InvalidOid;

		if (f->type != PT_MESSAGE && OidIsValid(elemtype) && elemtype != JSONBOID && elemtype != JSONOID)
			append_pg_array(out, pf, index, elemtype, rec);
		else
			append_field_json(out, pf, index, rec, 1);
		return true;
	}
	if (pf->first[index] < 0)
	{
		PbScalar	zero = zero_of(f);

		if (f->default_text != NULL)
			append_default_text(out, f, typid);
		else
			append_scalar_text(out, &zero, typid);
		return true;
	}
	if (f->type == PT_MESSAGE)
		return message_text(out, pf, index, typid, rec);
	{
		PbScalar	s = member_scalar(pf, index);

		append_scalar_text(out, &s, typid);
	}
	return true;
}

bool
eoi_pb_field_datum(const PbFields *pf, int index, Oid typid, Datum *value, bool *isnull,
				   const PbRecord *rec)
{
	const EoiProtoField *f = &pf->msg->fields[index];
	PbScalar	s;

	if (f->repeated || f->default_text != NULL)
		return false;
	*isnull = false;
	if (pf->first[index] < 0)
	{
		if (f->presence)
		{
			*isnull = true;
			return true;
		}
		s = zero_of(f);
	}
	else if (f->type == PT_MESSAGE)
	{
		PbFields	inner;
		size_t		len;
		PbRecord	merged;
		const unsigned char *data;

		if (f->message->well_known != WK_TIMESTAMP || typid != TIMESTAMPTZOID)
			return false;
		data = message_bytes(pf, index, &rec, &merged, &len);
		eoi_pb_read(&inner, f->message, data, len, rec, 1);
		*value = TimestampTzGetDatum(timestamp_of(&inner, rec, f->name));
		return true;
	}
	else
		s = member_scalar(pf, index);

	switch (s.type)
	{
		case PT_INT32:
		case PT_SINT32:
		case PT_SFIXED32:
			if (typid == INT4OID)
				*value = Int32GetDatum((int32) signed_value(&s));
			else if (typid == INT8OID)
				*value = Int64GetDatum(signed_value(&s));
			else
				return false;
			return true;
		case PT_INT64:
		case PT_SINT64:
		case PT_SFIXED64:
		case PT_UINT32:
		case PT_FIXED32:
			if (typid != INT8OID)
				return false;
			*value = Int64GetDatum(signed_value(&s));
			return true;
		case PT_DOUBLE:
			if (typid != FLOAT8OID)
				return false;
			*value = Float8GetDatum(double_value(&s));
			return true;
		case PT_FLOAT:
			if (typid != FLOAT4OID)
				return false;
			*value = Float4GetDatum(float_value(&s));
			return true;
		case PT_BOOL:
			if (typid != BOOLOID)
				return false;
			*value = BoolGetDatum(s.value != 0);
			return true;
		case PT_STRING:
			{
				const char *converted;

				if (typid != TEXTOID)
					return false;
				converted = server_string(&s);
				*value = PointerGetDatum(converted == (const char *) s.data ?
										 cstring_to_text_with_len(converted, (int) s.len) :
										 cstring_to_text(converted));
				return true;
			}
		default:
			return false;
	}
}

/* ---- column types ---- */

static Oid
scalar_column_type(EoiProtoType type, int32 *typmod)
{
	*typmod = -1;
	switch (type)
	{
		case PT_DOUBLE:
			return FLOAT8OID;
		case PT_FLOAT:
			return FLOAT4OID;
		case PT_INT32:
		case PT_SINT32:
		case PT_SFIXED32:
			return INT4OID;
		case PT_INT64:
		case PT_SINT64:
		case PT_SFIXED64:
		case PT_UINT32:
		case PT_FIXED32:
			return INT8OID;
		case PT_UINT64:
		case PT_FIXED64:
			*typmod = ((20 << 16) | 0) + VARHDRSZ;
			return NUMERICOID;
		case PT_BOOL:
			return BOOLOID;
		case PT_BYTES:
			return BYTEAOID;
		default:
			return TEXTOID;		/* string, enum */
	}
}

void
eoi_pb_column_type(const EoiProtoField *f, Oid *typid, int32 *typmod)
{
	*typmod = -1;
	if (f->type == PT_MESSAGE)
	{
		const EoiProtoMessage *m = f->message;

		if (f->repeated)
			*typid = JSONBOID;
		else if (m->well_known == WK_TIMESTAMP)
			*typid = TIMESTAMPTZOID;
		else if (m->well_known == WK_DURATION)
			*typid = INTERVALOID;
		else if (m->well_known == WK_WRAPPER)
			*typid = scalar_column_type(m->fields[0].type, typmod);
		else if (m->well_known == WK_DECIMAL)
			*typid = NUMERICOID;
		else
			*typid = JSONBOID;
		return;
	}
	*typid = scalar_column_type(f->type, typmod);
	if (f->repeated)
		*typid = get_array_type(*typid);
}
