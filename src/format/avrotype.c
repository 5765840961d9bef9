/*-------------------------------------------------------------------------
 *
 * avrotype.c
 *	  Format avro's tree of the writer's schema (AvroType): Avro C's schema,
 *	  with the logical types, precision and scale that Avro C does not
 *	  keep, read from the schema's JSON.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/varbit.h"

#include "format/avro_internal.h"

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
 * Kafka Connect's AvroConverter marks Debezium's types with a
 * "connect.name" property and no logicalType (io.debezium.time.Date is an
 * int of days, MicroTimestamp a long of microseconds, ...).  Each is read
 * as the logical type of the same unit, so that it comes out as a date or
 * time, not as a number; Debezium's timestamps count from the epoch in
 * UTC, with or without a zone in the source: rendered with "+00", they are
 * right for timestamp and timestamptz columns alike.  Where the column a
 * type fills best is not its Avro or logical type's, the table says which:
 * timestamps of a column without a zone are local ones, and the strings of
 * JSON, UUIDs and zoned times are those types' text.
 */
static const struct
{
	const char *name;
	avro_type_t kind;
	Logical		logical;		/* L_NONE: read as its Avro type */
	Oid			column;			/* InvalidOid: its logical or Avro type's */
}			debezium_types[] = {
	{"io.debezium.time.Date", AVRO_INT32, L_DATE, InvalidOid},
	{"io.debezium.time.Time", AVRO_INT32, L_TIME_MILLIS, InvalidOid},
	{"io.debezium.time.MicroTime", AVRO_INT64, L_TIME_MICROS, InvalidOid},
	{"io.debezium.time.Timestamp", AVRO_INT64, L_TIMESTAMP_MILLIS, TIMESTAMPOID},
	{"io.debezium.time.MicroTimestamp", AVRO_INT64, L_TIMESTAMP_MICROS, TIMESTAMPOID},
	{"io.debezium.time.NanoTimestamp", AVRO_INT64, L_TIMESTAMP_NANOS, TIMESTAMPOID},
	{"io.debezium.time.NanoTime", AVRO_INT64, L_TIME_NANOS, InvalidOid},
	{"io.debezium.data.VariableScaleDecimal", AVRO_RECORD, L_VARIABLE_DECIMAL, InvalidOid},
	{"io.debezium.data.Bits", AVRO_BYTES, L_BITS, InvalidOid},
	{"io.debezium.time.ZonedTimestamp", AVRO_STRING, L_NONE, TIMESTAMPTZOID},
	{"io.debezium.time.ZonedTime", AVRO_STRING, L_NONE, TIMETZOID},
	{"io.debezium.data.Json", AVRO_STRING, L_NONE, JSONBOID},
	{"io.debezium.data.Uuid", AVRO_STRING, L_NONE, UUIDOID},
};

/* The Debezium type a node of kind `kind` names with "connect.name", or -1. */
static int
debezium_type_of(JsonbValue *json, avro_type_t kind)
{
	JsonbValue	cn;

	if (!json_key(json, "connect.name", &cn) || cn.type != jbvString)
		return -1;
	for (int i = 0; i < lengthof(debezium_types); i++)
		if (debezium_types[i].kind == kind && json_is(&cn, debezium_types[i].name))
			return i;
	return -1;
}

/* The logical type of a Debezium type, or L_NONE; Bits' length in *scale. */
static Logical
connect_logical_of(JsonbValue *json, avro_type_t kind, int *scale)
{
	int			i = debezium_type_of(json, kind);
	JsonbValue	params;
	JsonbValue	length;

	if (i < 0 || debezium_types[i].logical == L_NONE)
		return L_NONE;
	/* Bits: as many as connect.parameters' length (a string), else all the bytes' */
	*scale = -1;
	if (debezium_types[i].logical == L_BITS && json_key(json, "connect.parameters", &params) &&
		json_key(&params, "length", &length) && length.type == jbvString)
	{
		char	   *text = pnstrdup(length.val.string.val, length.val.string.len);
		char	   *end;
		long		n = strtol(text, &end, 10);

		if (*text != '\0' && *end == '\0' && n >= 0 && n <= VARBITMAXLEN)
			*scale = (int) n;
	}
	return debezium_types[i].logical;
}

/* The column a Debezium type fills best, where the table names one; else InvalidOid. */
static Oid
connect_column_of(JsonbValue *json, avro_type_t kind)
{
	int			i = debezium_type_of(json, kind);

	return i < 0 ? InvalidOid : debezium_types[i].column;
}

/*
 * The logical type `json` annotates on a node of kind `kind`.  One that
 * does not fit its base type is ignored, as the Avro specification says.
 */
static Logical
logical_of(JsonbValue *json, avro_schema_t s, avro_type_t kind, int *scale, int *precision)
{
	JsonbValue	lt;

	if (!json_key(json, "logicalType", &lt) || lt.type != jbvString)
		return connect_logical_of(json, kind, scale);
	if (json_is(&lt, "decimal") && (kind == AVRO_BYTES || kind == AVRO_FIXED))
	{
		*scale = json_int(json, "scale", 0);
		*precision = json_int(json, "precision", 0);
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

/*
 * The tree for Avro C's node `s`, whose JSON is `json` (an object, an
 * array for a union, or a name).  A named type is built once, where it is
 * defined; references to it (Avro C's links, or the same node again) share
 * that AvroType, so recursive schemas are finite here too.
 */
AvroType *
eoi_avro_build_type(Builder *b, avro_schema_t s, JsonbValue *json)
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
	t->logical = logical_of(json, s, t->kind, &t->scale, &t->precision);
	t->connect_column = connect_column_of(json, t->kind);

	switch (t->kind)
	{
		case AVRO_RECORD:
			t->nchildren = avro_schema_record_size(s);
			t->children = palloc0(sizeof(AvroType *) * Max(t->nchildren, 1));
			t->json_names = palloc0(sizeof(char *) * Max(t->nchildren, 1));
			for (int i = 0; i < t->nchildren; i++)
			{
				JsonbValue	fields;
				bool		have = json_key(json, "fields", &fields) &&
					json_elem(&fields, i, &field) && json_key(&field, "type", &sub);
				StringInfoData name;

				t->children[i] = eoi_avro_build_type(b, avro_schema_record_field_get_by_index(s, i),
											have ? &sub : NULL);
				initStringInfo(&name);
				escape_json(&name, avro_schema_record_field_name(s, i));
				appendStringInfoChar(&name, ':');
				t->json_names[i] = name.data;
			}
			break;
		case AVRO_UNION:
			t->nchildren = avro_schema_union_size(s);
			t->children = palloc0(sizeof(AvroType *) * Max(t->nchildren, 1));
			for (int i = 0; i < t->nchildren; i++)
			{
				bool		have = json_elem(json, i, &sub);

				t->children[i] = eoi_avro_build_type(b, avro_schema_union_branch(s, i), have ? &sub : NULL);
			}
			break;
		case AVRO_ARRAY:
		case AVRO_MAP:
			t->nchildren = 1;
			t->children = palloc0(sizeof(AvroType *));
			{
				bool		have = json_key(json, t->kind == AVRO_ARRAY ? "items" : "values", &sub);

				t->children[0] = eoi_avro_build_type(b, t->kind == AVRO_ARRAY ? avro_schema_array_items(s) :
											avro_schema_map_values(s), have ? &sub : NULL);
			}
			break;
		default:
			break;
	}
	return t;
}

/* ---- the column a value of the schema fills ---- */

/* A union of null and one other branch: that branch, else NULL. */
static const AvroType *
nullable_branch(const AvroType *t)
{
	if (t->kind != AVRO_UNION || t->nchildren != 2)
		return NULL;
	if (t->children[0]->kind == AVRO_NULL)
		return t->children[1];
	if (t->children[1]->kind == AVRO_NULL)
		return t->children[0];
	return NULL;
}

/* The type of a logical type's column, or InvalidOid for none. */
static Oid
logical_column_type(const AvroType *t, int32 *typmod)
{
	switch (t->logical)
	{
		case L_DECIMAL:
			/* numeric(p, s) where the schema states a precision numeric can hold */
			if (t->precision >= 1 && t->precision <= NUMERIC_MAX_PRECISION &&
				t->scale >= 0 && t->scale <= t->precision)
				*typmod = ((t->precision << 16) | t->scale) + VARHDRSZ;
			return NUMERICOID;
		case L_VARIABLE_DECIMAL:
			return NUMERICOID;
		case L_DATE:
			return DATEOID;
		case L_TIME_MILLIS:
		case L_TIME_MICROS:
		case L_TIME_NANOS:
			return TIMEOID;
		case L_TIMESTAMP_MILLIS:
		case L_TIMESTAMP_MICROS:
		case L_TIMESTAMP_NANOS:
			return TIMESTAMPTZOID;
		case L_LOCAL_TIMESTAMP_MILLIS:
		case L_LOCAL_TIMESTAMP_MICROS:
		case L_LOCAL_TIMESTAMP_NANOS:
			return TIMESTAMPOID;
		case L_UUID:
			return UUIDOID;
		case L_DURATION:
			return INTERVALOID;
		case L_BITS:
			return VARBITOID;
		case L_NONE:
			break;
	}
	return InvalidOid;
}

/*
 * The column type that values of `t` fill best, as docs/formats.md's table
 * of Avro types gives it: a logical type's, a primitive's, a nullable
 * union's other branch's, an array of a scalar's array type; records, maps,
 * other unions and arrays of anything else into jsonb.
 */
void
eoi_avro_column_type(const AvroType *t, Oid *typid, int32 *typmod)
{
	const AvroType *branch = nullable_branch(t);

	*typmod = -1;
	if (branch != NULL)
		t = branch;
	if (OidIsValid(t->connect_column))
	{
		*typid = t->connect_column;
		return;
	}
	*typid = logical_column_type(t, typmod);
	if (OidIsValid(*typid))
		return;
	switch (t->kind)
	{
		case AVRO_STRING:
		case AVRO_ENUM:
		case AVRO_NULL:
			*typid = TEXTOID;
			return;
		case AVRO_BYTES:
		case AVRO_FIXED:
			*typid = BYTEAOID;
			return;
		case AVRO_INT32:
			*typid = INT4OID;
			return;
		case AVRO_INT64:
			*typid = INT8OID;
			return;
		case AVRO_FLOAT:
			*typid = FLOAT4OID;
			return;
		case AVRO_DOUBLE:
			*typid = FLOAT8OID;
			return;
		case AVRO_BOOLEAN:
			*typid = BOOLOID;
			return;
		case AVRO_ARRAY:
			{
				Oid			elem;
				int32		elem_typmod;

				eoi_avro_column_type(t->children[0], &elem, &elem_typmod);
				*typid = (elem == JSONBOID || elem == BYTEAOID || type_is_array(elem)) ?
					InvalidOid : get_array_type(elem);
				if (!OidIsValid(*typid))
					*typid = JSONBOID;
				return;
			}
		default:
			*typid = JSONBOID;
			return;
	}
}
