/*-------------------------------------------------------------------------
 *
 * mapping.c
 *	  A job's mapping: each column of the target it names takes its value
 *	  from one source, and the columns it does not name get their
 *	  defaults.  A source is
 *
 *		"/a/b"			a field of the message's value: a JSON pointer into
 *						a json or avro value ("/0" is an array's first
 *						element), a field number into a csv one ("/1" is the
 *						first field);
 *		"$key/a/b"		the same into the message's key (key_format);
 *		"$value", "$key"	the whole value or key, as text (bytea: its bytes);
 *		"$topic", "$partition", "$offset", "$timestamp"
 *						the message's coordinates and timestamp (into a
 *						number column, its milliseconds since 1970);
 *		"$headers"		every header, as a JSON object (a repeated name keeps
 *						its last value);
 *		"$header/name"	the last value of one header;
 *		{"const": v}	a constant: v's text (a JSON string's contents).
 *
 * A path the message does not have gives NULL.  Decoding goes straight to
 * the row writer, as unmapped columns do: a json value is scanned once
 * (jsonscan.c) for the first segments of every path, and parsed as jsonb
 * only where a path goes deeper, or when the scan declines; an avro
 * record is read as its JSON rendering.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "format/avro.h"
#include "format/csv.h"
#include "format/decode.h"
#include "format/decodejson.h"
#include "format/jsonscan.h"
#include "format/jsonvalue.h"
#include "format/mapping.h"
#include "kafka/batch.h"

#define SOURCES_HINT "A source is a path into the value (\"/field\", \"/1\" for csv), \"$key/field\", \"$value\", \"$key\", \"$topic\", \"$partition\", \"$offset\", \"$timestamp\", \"$headers\", \"$header/name\", or {\"const\": value}."

/* ---- the mapping as create_job takes it ---- */


/*
 * The mapping must be an object of at most EOI_MAP_MAX_COLUMNS column
 * names, each to a string or a {"const": value} object.
 */
void
eoi_mapping_check_shape(Jsonb *mapping)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *column = NULL;
	int			depth = 0;

	if (!JB_ROOT_IS_OBJECT(mapping) || JB_ROOT_COUNT(mapping) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mapping must be a JSON object of column names and their sources"),
				 errhint("For example mapping => '{\"order_id\": \"/order/id\", \"received\": \"$timestamp\"}'. '{}' given to alter_job removes the mapping.")));
	if (JB_ROOT_COUNT(mapping) > EOI_MAP_MAX_COLUMNS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("mapping names %u columns, more than a table can have (%d)",
						JB_ROOT_COUNT(mapping), EOI_MAP_MAX_COLUMNS)));

	it = JsonbIteratorInit(&mapping->root);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_BEGIN_OBJECT || tok == WJB_BEGIN_ARRAY)
			depth++;
		else if (tok == WJB_END_OBJECT || tok == WJB_END_ARRAY)
			depth--;
		else if (tok == WJB_KEY && depth == 1)
		{
			column = pnstrdup(v.val.string.val, v.val.string.len);
			if (v.val.string.len == 0 || v.val.string.len >= NAMEDATALEN)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("mapping has a column name of %d bytes", v.val.string.len),
						 errhint("Its keys are column names of the target: 1 to %d bytes.", NAMEDATALEN - 1)));
		}
		else if (tok == WJB_VALUE && depth == 1 && v.type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("mapping of column \"%s\" has a source that is not a string", column),
					 errhint(SOURCES_HINT)));
		else if (tok == WJB_KEY && depth == 2 &&
				 (v.val.string.len != 5 || memcmp(v.val.string.val, "const", 5) != 0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("mapping of column \"%s\" has an object source that is not {\"const\": value}", column),
					 errhint(SOURCES_HINT)));
	}
	/* {"const": v} objects: exactly one member */
	it = JsonbIteratorInit(&mapping->root);
	depth = 0;
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			column = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok == WJB_VALUE && v.type == jbvBinary &&
				 (!JsonContainerIsObject(v.val.binary.data) || JsonContainerSize(v.val.binary.data) != 1))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("mapping of column \"%s\" has an object source that is not {\"const\": value}", column),
					 errhint(SOURCES_HINT)));
	}
}

/* The columns a mapping names, as String nodes, in the mapping's order. */
List *
eoi_mapping_columns(Jsonb *mapping)
{
	JsonbIterator *it = JsonbIteratorInit(&mapping->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	List	   *columns = NIL;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_KEY)
			columns = lappend(columns, makeString(pnstrdup(v.val.string.val, v.val.string.len)));
	return columns;
}

/* A JSON pointer's segments, unescaped (~1 is /, ~0 is ~). */
static void
parse_pointer(EoiMapSource *s, const char *column, const char *pointer)
{
	int			n = 0;
	const char *p;

	for (p = pointer; *p; p++)
		n += (*p == '/');
	if (n > EOI_MAP_MAX_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mapping of column \"%s\" has a path of more than %d segments", column, EOI_MAP_MAX_DEPTH),
				 errhint("Map a shallower field, or use a transform.")));
	s->path = palloc(sizeof(char *) * n);
	s->npath = 0;
	p = pointer;
	while (*p == '/')
	{
		StringInfoData seg;

		initStringInfo(&seg);
		for (p++; *p && *p != '/'; p++)
		{
			if (*p != '~')
				appendStringInfoChar(&seg, *p);
			else if (p[1] == '0' || p[1] == '1')
				appendStringInfoChar(&seg, *++p == '0' ? '~' : '/');
			else
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("mapping of column \"%s\" has a path \"%s\" with a \"~\" that is neither \"~0\" nor \"~1\"",
								column, s->spec),
						 errhint("In a JSON pointer, write ~0 for ~ and ~1 for / in a name.")));
		}
		s->path[s->npath++] = seg.data;
	}
	s->first_len = s->npath > 0 ? strlen(s->path[0]) : 0;
}

/* A path into a message of `format`, the value's or (key) the key's. */
static void
parse_path(EoiMapSource *s, const char *column, const char *pointer, EoiFormat format, bool key)
{
	switch (format)
	{
		case EOI_FORMAT_TEXT:
			if (key)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("mapping of column \"%s\" reads \"%s\", but key_format text has no fields",
								column, s->spec),
						 errhint("Map the whole key with \"$key\", or set key_format to json, avro or csv.")));
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("mapping of column \"%s\" reads \"%s\", but format text has no fields",
							column, s->spec),
					 errhint("Map the whole value with \"$value\".")));
			break;
		case EOI_FORMAT_CSV:
			{
				char	   *end;
				long		n;

				errno = 0;
				n = strtol(pointer + 1, &end, 10);
				if (pointer[1] < '0' || pointer[1] > '9' || *end != '\0' || errno != 0 ||
					n < 1 || n > EOI_MAP_MAX_COLUMNS)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("mapping of column \"%s\" reads \"%s\", which is not a csv field number",
									column, s->spec),
							 errhint("Number the fields from 1 to %d: \"/1\" is the first.", EOI_MAP_MAX_COLUMNS)));
				s->field = (int) n - 1;
				break;
			}
		case EOI_FORMAT_JSON:
		case EOI_FORMAT_AVRO:
		case EOI_FORMAT_PROTOBUF:
			parse_pointer(s, column, pointer);
			break;
	}
}

static const struct
{
	const char *name;
	EoiMapKind	kind;
}			named_sources[] = {
	{"$value", EOI_MAP_VALUE},
	{"$key", EOI_MAP_KEY},
	{"$topic", EOI_MAP_TOPIC},
	{"$partition", EOI_MAP_PARTITION},
	{"$offset", EOI_MAP_OFFSET},
	{"$timestamp", EOI_MAP_TIMESTAMP},
	{"$headers", EOI_MAP_HEADERS},
};

/* {"const": v}: v's text, NULL for a JSON null. */
static char *
const_text(JsonbValue *obj)
{
	return eoi_jsonb_value_text(getKeyJsonValueFromContainer(obj->val.binary.data, "const", 5, NULL));
}

/*
 * The source of `column` in `mapping` (checked with
 * eoi_mapping_check_shape), for messages of `format` with keys of
 * `key_format`; an error says what is wrong with it.
 */
EoiMapSource *
eoi_mapping_source(Jsonb *mapping, const char *column, EoiFormat format, EoiFormat key_format)
{
	JsonbValue *v = getKeyJsonValueFromContainer(&mapping->root, column, strlen(column), NULL);
	EoiMapSource *s = palloc0(sizeof(EoiMapSource));
	char	   *spec;

	if (v->type == jbvBinary)
	{
		s->kind = EOI_MAP_CONST;
		s->spec = "{\"const\": ...}";
		s->text = const_text(v);
		return s;
	}
	spec = pnstrdup(v->val.string.val, v->val.string.len);
	s->spec = spec;
	if (strlen(spec) > EOI_MAP_MAX_SOURCE || strlen(spec) != (size_t) v->val.string.len)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mapping of column \"%s\" has a source longer than %d bytes", column, EOI_MAP_MAX_SOURCE),
				 errhint(SOURCES_HINT)));
	if (spec[0] == '/')
	{
		s->kind = EOI_MAP_VALUE_PATH;
		parse_path(s, column, spec, format, false);
		return s;
	}
	if (strncmp(spec, "$key/", 5) == 0)
	{
		s->kind = EOI_MAP_KEY_PATH;
		parse_path(s, column, spec + 4, key_format, true);
		return s;
	}
	if (strncmp(spec, "$header/", 8) == 0)
	{
		if (spec[8] == '\0')
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("mapping of column \"%s\" reads \"$header/\", which names no header", column),
					 errhint("Write \"$header/name\", or \"$headers\" for all of them.")));
		s->kind = EOI_MAP_HEADER;
		s->text = spec + 8;
		return s;
	}
	for (int i = 0; i < lengthof(named_sources); i++)
		if (strcmp(spec, named_sources[i].name) == 0)
		{
			s->kind = named_sources[i].kind;
			return s;
		}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("mapping of column \"%s\" has an unrecognized source \"%s\"", column, spec),
			 errhint(SOURCES_HINT)));
	return NULL;				/* keep the compiler quiet */
}

/* ---- decoding a message through the mapping ---- */

/* A message's value or key, read once for all the columns that need it. */
typedef struct MapDoc
{
	bool		read;
	const char *data;			/* NULL: the message has none */
	size_t		len;
	bool		scanned;		/* json: tokens[] hold the first segments */
	Jsonb	   *jsonb;			/* json: the whole document, when needed */
	EoiCsvField *fields;		/* csv */
	int			nfields;
} MapDoc;

typedef struct MapState
{
	EoiColumns *cols;
	rd_kafka_message_t *msg;
	MapDoc		docs[2];		/* [0] the value, [1] the key */
	EoiJsonToken *tokens;		/* per column: its path's first segment */
	bool	   *found;
	int			csv_fields[2];	/* csv: the most fields a column reads */
	int			nfirst[2];		/* json: the columns with a path, per document, */
	int		   *first[2];		/* sorted by their first segment (first_order) */
	uint64		members;		/* scanned, for the interrupt checks */
	char	   *scratch[2];		/* json: the scans' unescaped strings, per document */
	size_t		scratch_size[2];
	StringInfoData text;
} MapState;

static EoiFormat
doc_format(MapState *st, bool key)
{
	return key ? st->cols->map_key_format : st->cols->format;
}

/* The bytes of the value or key, unframed and checked; avro and protobuf as JSON. */
static void
read_doc(MapState *st, bool key)
{
	MapDoc	   *doc = &st->docs[key];
	rd_kafka_message_t *msg = st->msg;
	EoiFormat	format = doc_format(st, key);

	doc->read = true;
	doc->data = key ? msg->key : msg->payload;
	doc->len = key ? msg->key_len : msg->len;
	if (doc->data == NULL)
		return;
	if (eoi_format_has_schema_id(format))
	{
		doc->data = eoi_message_json(format, msg, key, &doc->len);
		return;
	}
	if (format == EOI_FORMAT_JSON)
		eoi_json_unframe(&doc->data, &doc->len);
	(void) pg_verifymbstr(doc->data, (int) doc->len, false);
}

typedef struct ScanArg
{
	MapState   *st;
	bool		key;
} ScanArg;

/* A member's name against column c's first segment: by length, then bytes. */
static int
compare_first(const EoiMapSource *s, const char *name, size_t len)
{
	if (len != s->first_len)
		return len < s->first_len ? -1 : 1;
	return memcmp(name, s->path[0], len);
}

/*
 * Each top-level member: the token of every path whose first segment it
 * is, found by binary search, so that a message of many members costs
 * no more per member than the log of the mapping's columns.
 */
static bool
scan_member(void *arg, const char *name, size_t len, const EoiJsonToken *value)
{
	ScanArg    *sa = arg;
	MapState   *st = sa->st;
	EoiMapSource *sources = st->cols->sources;
	int		   *first = st->first[sa->key];
	int			lo = 0;
	int			hi = st->nfirst[sa->key];

	if ((++st->members & 1023) == 0)
		CHECK_FOR_INTERRUPTS();
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (compare_first(&sources[first[mid]], name, len) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < st->nfirst[sa->key] && compare_first(&sources[first[lo]], name, len) == 0; lo++)
	{
		st->tokens[first[lo]] = *value;
		st->found[first[lo]] = true;	/* a repeated name: its last value, as jsonb */
	}
	return true;
}

static Jsonb *
parse_jsonb(const char *data, size_t len)
{
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(pnstrdup(data, len))));
}

/* Read a json (or avro) document's first segments, or the whole of it. */
static void
scan_doc(MapState *st, bool key)
{
	MapDoc	   *doc = &st->docs[key];
	ScanArg		sa = {st, key};
	EoiMapKind	kind = key ? EOI_MAP_KEY_PATH : EOI_MAP_VALUE_PATH;
	char	   *scratch;

	/* the value's tokens must outlive a scan of the key: a buffer each */
	if (doc->len + 1 > st->scratch_size[key])
	{
		if (st->scratch[key] != NULL)
			pfree(st->scratch[key]);
		st->scratch_size[key] = Max(doc->len + 1, 2 * st->scratch_size[key]);
		st->scratch[key] = MemoryContextAlloc(GetMemoryChunkContext(st), st->scratch_size[key]);
	}
	scratch = st->scratch[key];

	for (int c = 0; c < st->cols->ncolumns; c++)
		if (st->cols->sources[c].kind == kind)
			st->found[c] = false;
	doc->scanned = eoi_json_scan_object(doc->data, doc->len, scratch,
										GetDatabaseEncoding() == PG_UTF8, scan_member, &sa);
	if (doc->scanned)
		return;
	/* the scan declined: jsonb reads it, or says what is wrong */
	doc->jsonb = parse_jsonb(doc->data, doc->len);
	if (!JB_ROOT_IS_OBJECT(doc->jsonb))
	{
		if (key)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
					 errmsg("JSON key is not an object"),
					 errhint("The mapping's paths read the members of an object; use a transform for other shapes.")));
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("JSON message is not an object"),
				 errhint("The mapping's paths read the members of an object; use a transform for other shapes.")));
	}
}

/* Follow path[from..] from `container`; NULL where the document has no such member. */
static JsonbValue *
follow(JsonbContainer *container, EoiMapSource *s, int from)
{
	JsonbValue *v = NULL;

	for (int i = from; i < s->npath; i++)
	{
		const char *seg = s->path[i];

		if (JsonContainerIsObject(container))
			v = getKeyJsonValueFromContainer(container, seg, strlen(seg), NULL);
		else if (JsonContainerIsArray(container))
		{
			char	   *end;
			long		index;

			errno = 0;
			index = strtol(seg, &end, 10);
			if (seg[0] < '0' || seg[0] > '9' || *end != '\0' || errno != 0 || index > INT_MAX ||
				(seg[0] == '0' && seg[1] != '\0'))
				return NULL;
			v = getIthJsonbValueFromContainer(container, (uint32) index);
		}
		else
			v = NULL;			/* a scalar has no members */
		if (v == NULL)
			return NULL;
		if (i + 1 < s->npath)
		{
			if (v->type != jbvBinary)
				return NULL;
			container = v->val.binary.data;
		}
	}
	return v;
}

/* Column c from its path into a json (or avro) document. */
static void
write_json_path(MapState *st, int c, bool key, EoiRowWriter *writer)
{
	EoiColumns *cols = st->cols;
	EoiMapSource *s = &cols->sources[c];
	MapDoc	   *doc = &st->docs[key];
	JsonbValue *v;

	if (!doc->scanned && doc->jsonb == NULL)
		scan_doc(st, key);
	if (doc->scanned)
	{
		EoiJsonToken *t = &st->tokens[c];
		Jsonb	   *nested;

		if (!st->found[c] || (s->npath > 1 && t->kind != EOI_JSON_NESTED))
		{
			writer->field(writer, c, NULL, 0);
			return;
		}
		if (s->npath == 1)
		{
			eoi_json_write_token(cols, c, writer, t);
			return;
		}
		nested = parse_jsonb(t->data, t->len);
		v = follow(&nested->root, s, 1);
	}
	else
		v = follow(&doc->jsonb->root, s, 0);
	resetStringInfo(&st->text);
	if (v != NULL &&
		eoi_json_value_text(&cols->json[c], cols->timestamp_unit, v, &st->text, cols->json_scratch))
		writer->field(writer, c, st->text.data, st->text.len);
	else
		writer->field(writer, c, NULL, 0);
}

/* Column c from its field of a csv document. */
static void
write_csv_field(MapState *st, int c, bool key, EoiRowWriter *writer)
{
	MapDoc	   *doc = &st->docs[key];
	EoiMapSource *s = &st->cols->sources[c];

	if (doc->fields == NULL)
	{
		const char *error = NULL;

		/* up to the last field a column reads: more are not looked at */
		doc->fields = palloc(sizeof(EoiCsvField) * (st->csv_fields[key] + 1));
		doc->nfields = eoi_csv_split(doc->data, doc->len, palloc(doc->len + 1), doc->fields,
									 st->csv_fields[key], &error);
		if (doc->nfields < 0 && key)
			ereport(ERROR,
					(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
					 errmsg("malformed CSV key: %s", error)));
		if (doc->nfields < 0)
			ereport(ERROR,
					(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
					 errmsg("malformed CSV message: %s", error)));
	}
	if (s->field >= doc->nfields || doc->fields[s->field].isnull)
		writer->field(writer, c, NULL, 0);
	else
		writer->field(writer, c, doc->fields[s->field].data, doc->fields[s->field].len);
}

/* Column c from its path into the value or key: NULL when there is none. */
static void
write_path(MapState *st, int c, bool key, EoiRowWriter *writer)
{
	MapDoc	   *doc = &st->docs[key];

	if (!doc->read)
		read_doc(st, key);
	if (doc->data == NULL)
		writer->field(writer, c, NULL, 0);
	else if (doc_format(st, key) == EOI_FORMAT_CSV)
		write_csv_field(st, c, key, writer);
	else
		write_json_path(st, c, key, writer);
}

/* Bytes as the column reads them: bytea takes them all, text must be valid. */
static void
write_bytes(MapState *st, int c, const char *data, size_t len, EoiRowWriter *writer)
{
	static const char hex[] = "0123456789abcdef";
	StringInfo	out = &st->text;

	if (data == NULL)
	{
		writer->field(writer, c, NULL, 0);
		return;
	}
	if (st->cols->typids[c] != BYTEAOID)
	{
		(void) pg_verifymbstr(data, (int) len, false);
		writer->field(writer, c, data, len);
		return;
	}
	resetStringInfo(out);
	appendStringInfoString(out, "\\x");
	for (size_t i = 0; i < len; i++)
	{
		appendStringInfoChar(out, hex[((const unsigned char *) data)[i] >> 4]);
		appendStringInfoChar(out, hex[((const unsigned char *) data)[i] & 0xf]);
	}
	writer->field(writer, c, out->data, out->len);
}

/*
 * An integer into column c: a datum when the writer takes one and the
 * column is an integer type it fits, else its text.
 */
static void
write_int(MapState *st, int c, int64 value, EoiRowWriter *writer)
{
	Oid			typid = st->cols->typids[c];

	if (writer->datum != NULL && typid == INT8OID)
		writer->datum(writer, c, Int64GetDatum(value));
	else if (writer->datum != NULL && typid == INT4OID && value >= PG_INT32_MIN && value <= PG_INT32_MAX)
		writer->datum(writer, c, Int32GetDatum((int32) value));
	else
	{
		resetStringInfo(&st->text);
		appendStringInfo(&st->text, INT64_FORMAT, value);
		writer->field(writer, c, st->text.data, st->text.len);
	}
}

static bool
is_number_type(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID || typid == NUMERICOID ||
		typid == FLOAT4OID || typid == FLOAT8OID;
}

/* The message's timestamp: milliseconds into a number column, else the time. */
static void
write_timestamp(MapState *st, int c, EoiRowWriter *writer)
{
	bool		isnull;
	Datum		ts = eoi_message_timestamp(st->msg, &isnull);
	Oid			typid = st->cols->typids[c];

	if (isnull)
		writer->field(writer, c, NULL, 0);
	else if (is_number_type(typid))
		write_int(st, c, DatumGetTimestampTz(ts) / 1000 +
				  (int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY * 1000, writer);
	else if (writer->datum != NULL && typid == TIMESTAMPTZOID)
		writer->datum(writer, c, ts);
	else
	{
		char	   *text = DatumGetCString(DirectFunctionCall1(timestamptz_out, ts));

		writer->field(writer, c, text, strlen(text));
	}
}

/* Column c from its source. */
static void
write_source(MapState *st, int c, const char *topic, EoiRowWriter *writer)
{
	EoiMapSource *s = &st->cols->sources[c];
	rd_kafka_message_t *msg = st->msg;

	switch (s->kind)
	{
		case EOI_MAP_VALUE_PATH:
			write_path(st, c, false, writer);
			break;
		case EOI_MAP_KEY_PATH:
			write_path(st, c, true, writer);
			break;
		case EOI_MAP_VALUE:
			write_bytes(st, c, msg->payload, msg->len, writer);
			break;
		case EOI_MAP_KEY:
			write_bytes(st, c, msg->key, msg->key_len, writer);
			break;
		case EOI_MAP_TOPIC:
			writer->field(writer, c, topic, strlen(topic));
			break;
		case EOI_MAP_PARTITION:
			write_int(st, c, msg->partition, writer);
			break;
		case EOI_MAP_OFFSET:
			write_int(st, c, msg->offset, writer);
			break;
		case EOI_MAP_TIMESTAMP:
			write_timestamp(st, c, writer);
			break;
		case EOI_MAP_HEADERS:
			{
				char	   *json = eoi_message_headers_json(msg, false);

				writer->field(writer, c, json, json ? strlen(json) : 0);
				break;
			}
		case EOI_MAP_HEADER:
			{
				const void *value = NULL;

				size_t		size = 0;

				if (!eoi_message_header(msg, s->text, &value, &size))
					value = NULL;
				write_bytes(st, c, value, size, writer);
				break;
			}
		case EOI_MAP_CONST:
			writer->field(writer, c, s->text, s->text ? strlen(s->text) : 0);
			break;
	}
}

/* qsort_arg: columns by their first segment, as compare_first orders names. */
static int
first_order(const void *a, const void *b, void *arg)
{
	EoiMapSource *sources = arg;
	const EoiMapSource *sb = &sources[*(const int *) b];
	int			r = compare_first(&sources[*(const int *) a], sb->path[0], sb->first_len);

	return -r;
}

/* The columns with a path into the value (key), sorted by first segment. */
static void
index_first_segments(MapState *st, bool key)
{
	EoiColumns *cols = st->cols;
	EoiMapKind	kind = key ? EOI_MAP_KEY_PATH : EOI_MAP_VALUE_PATH;

	st->first[key] = palloc(sizeof(int) * Max(cols->ncolumns, 1));
	st->nfirst[key] = 0;
	for (int c = 0; c < cols->ncolumns; c++)
		if (cols->sources[c].kind == kind && cols->sources[c].npath > 0)
			st->first[key][st->nfirst[key]++] = c;
	qsort_arg(st->first[key], st->nfirst[key], sizeof(int), first_order, cols->sources);
}

/* The state kept in cols from message to message. */
static MapState *
map_state(EoiColumns *cols)
{
	MapState   *st = cols->map_state;

	if (st == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(cols));

		st = palloc0(sizeof(MapState));
		st->cols = cols;
		st->tokens = palloc0(sizeof(EoiJsonToken) * Max(cols->ncolumns, 1));
		st->found = palloc0(sizeof(bool) * Max(cols->ncolumns, 1));
		for (int c = 0; c < cols->ncolumns; c++)
		{
			EoiMapSource *s = &cols->sources[c];

			if (s->kind == EOI_MAP_VALUE_PATH || s->kind == EOI_MAP_KEY_PATH)
			{
				bool		key = (s->kind == EOI_MAP_KEY_PATH);

				st->csv_fields[key] = Max(st->csv_fields[key], s->field + 1);
			}
		}
		index_first_segments(st, false);
		index_first_segments(st, true);
		initStringInfo(&st->text);
		cols->map_state = st;
		MemoryContextSwitchTo(old);
	}
	return st;
}

/*
 * Decode `msg` of `topic` through the mapping into one row for `writer`.
 * For a key's columns (cols->is_key: an upsert tombstone's), a column that
 * reads the value, which a tombstone does not have, is an error.
 */
bool
eoi_map_decode(EoiColumns *cols, rd_kafka_message_t *msg, const char *topic,
			   EoiRowWriter *writer, ExprContext *econtext)
{
	MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	MapState   *st = map_state(cols);

	st->msg = msg;
	memset(st->docs, 0, sizeof(st->docs));
	for (int c = 0; c < cols->ncolumns; c++)
	{
		EoiMapSource *s = &cols->sources[c];

		CHECK_FOR_INTERRUPTS();
		if (cols->is_key && (s->kind == EOI_MAP_VALUE_PATH || s->kind == EOI_MAP_VALUE))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("tombstone message cannot give key column \"%s\" of \"%s\"",
							cols->colnames[c], cols->relname),
					 errdetail("The mapping reads it from the value (\"%s\"), and a tombstone has none.", s->spec),
					 errhint("Map the key columns from the message key (\"$key/field\") to delete rows by tombstones.")));
		write_source(st, c, topic, writer);
	}
	writer->end_row(writer);
	MemoryContextSwitchTo(old);
	return true;
}
