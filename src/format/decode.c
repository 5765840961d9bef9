/*-------------------------------------------------------------------------
 *
 * decode.c
 *	  The decoder: message values into rows of the target, field by field,
 *	  for the writer the caller passes (COPY text lines, arrays, or a
 *	  slot's values).
 *
 * The sink hands the lines to COPY, which does the type input, defaults of
 * the columns not listed, constraints, triggers and partition routing.
 * Each message is checked and split here on its own, so that one message is
 * exactly one line (or, for a CSV header, none) and an error names the
 * message that caused it:
 *
 *	text:	the value goes into the one target column that has no default,
 *			or into the one column the job's columns list names.
 *	csv:	the fields go into the target's columns (or the listed ones), in
 *			order; an empty, unquoted field is NULL; a message whose fields
 *			are the columns' names is a header, and makes no row.
 *	json:	an object, whose keys go into the columns of their names
 *			(decodejson.c).
 *	avro:	a record, whose fields go into the columns of their names
 *			(avro.c).
 *	protobuf: a message, whose fields go into the columns of their names
 *			(protobuf.c).
 *
 * GENERATED ALWAYS identity columns never take a message's value: csv and
 * text refuse to map one, json leaves it to PostgreSQL (as INSERT ...
 * OVERRIDING USER VALUE would) and logs the key.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tupdesc.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_relation.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "format/avro.h"
#include "format/decode.h"
#include "format/decodejson.h"
#include "format/mapping.h"
#include "format/protobuf.h"

/*
 * Open the decoding of a job's messages into `rel`: the columns `mapping`
 * fills, with what format json and avro need for each (how values
 * convert, the defaults, with `estate` to evaluate them).  Errors here are
 * the job's configuration errors: create_job calls this too, so they show
 * up there first.
 */
EoiColumns *
eoi_columns_for(Relation rel, const EoiMapping *mapping, EState *estate)
{
	EoiColumns *cols = eoi_columns_map(rel, mapping);

	if (mapping->format == EOI_FORMAT_JSON || eoi_format_has_schema_id(mapping->format) ||
		mapping->mapping != NULL)
		eoi_json_columns_prepare(cols, rel, estate);
	return cols;
}

/*
 * The same for a message key in `format` (upsert tombstones): the columns
 * `names` of `rel`, in that order.
 */
EoiColumns *
eoi_columns_named(Relation rel, EoiFormat format, List *names)
{
	EoiColumns *cols = eoi_columns_map_named(rel, format, names);

	if (format == EOI_FORMAT_JSON)
		eoi_json_columns_prepare(cols, rel, NULL);
	return cols;
}

/*
 * The key columns `names` of `rel` for an upsert tombstone: decoded from
 * the message key in `key_format`, or, for a mapped job, through the
 * mapping.
 */
EoiColumns *
eoi_columns_for_keys(Relation rel, const EoiMapping *mapping, EoiFormat key_format, List *names)
{
	EoiColumns *cols;

	if (mapping->mapping == NULL)
		return eoi_columns_named(rel, key_format, names);
	cols = eoi_columns_map_keys(rel, mapping, names);
	eoi_json_columns_prepare(cols, rel, NULL);
	return cols;
}

/* What COPY's text format writes after a backslash for a byte, or 0. */
static const char copy_escape[256] = {
	['\\'] = '\\', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
};

/* Append `len` bytes of `s` to `out`, escaped for COPY's text format. */
static void
append_escaped(StringInfo out, const char *s, size_t len)
{
	size_t		start = 0;

	for (size_t i = 0; i < len; i++)
	{
		char		esc = copy_escape[(unsigned char) s[i]];

		if (esc == 0)
			continue;
		appendBinaryStringInfo(out, s + start, i - start);
		appendStringInfoChar(out, '\\');
		appendStringInfoChar(out, esc);
		start = i + 1;
	}
	appendBinaryStringInfo(out, s + start, len - start);
}

/* ---- the COPY line writer ---- */

static void
copy_field(EoiRowWriter *writer, int col, const char *data, size_t len)
{
	EoiCopyWriter *cw = (EoiCopyWriter *) writer;

	if (col > 0)
		appendStringInfoChar(cw->out, '\t');
	if (data == NULL)
		appendStringInfoString(cw->out, "\\N");
	else
		append_escaped(cw->out, data, len);
}

static void
copy_end_row(EoiRowWriter *writer)
{
	appendStringInfoChar(((EoiCopyWriter *) writer)->out, '\n');
}

void
eoi_copy_writer_init(EoiCopyWriter *cw, StringInfo out)
{
	cw->writer.field = copy_field;
	cw->writer.datum = NULL;
	cw->writer.end_row = copy_end_row;
	cw->out = out;
}

/* ---- formats ---- */

/* decode_csv's buffers for a message of `len` bytes, kept in cols. */
static void
reserve_csv_buffers(EoiColumns *cols, size_t len)
{
	MemoryContext cxt = GetMemoryChunkContext(cols);

	if (cols->csv_fields == NULL)
		cols->csv_fields = MemoryContextAlloc(cxt, sizeof(EoiCsvField) * Max(cols->ncolumns, 1));
	if (len + 1 > cols->csv_scratch_size)
	{
		if (cols->csv_scratch != NULL)
			pfree(cols->csv_scratch);
		cols->csv_scratch_size = Max(len + 1, 2 * cols->csv_scratch_size);
		cols->csv_scratch = MemoryContextAlloc(cxt, cols->csv_scratch_size);
	}
}

/*
 * A header: a message whose fields are the names of the columns they
 * would fill, in order, quoted or not, in any case.  Producers that write
 * CSV files line by line send their header line too.
 */
static bool
csv_is_header(EoiColumns *cols, EoiCsvField *fields, int n)
{
	static bool reported = false;

	if (cols->is_key)
		return false;
	for (int i = 0; i < n; i++)
		if (fields[i].isnull || !eoi_spells_name(fields[i].data, fields[i].len, cols->colnames[i]))
			return false;
	if (!reported)
	{
		reported = true;
		ereport(LOG,
				(errmsg("skipping CSV header messages for \"%s\"", cols->relname),
				 errdetail("A message whose fields are the names of the columns they fill makes no row; its offset is consumed. This is logged once per worker process.")));
	}
	return true;
}

static bool
decode_csv(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer)
{
	EoiCsvField *fields;
	const char *error = NULL;
	int			n;

	reserve_csv_buffers(cols, len);
	fields = cols->csv_fields;
	n = eoi_csv_split(value, len, cols->csv_scratch, fields, cols->ncolumns, &error);
	if (n < 0)
		ereport(ERROR,
				(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
				 errmsg("malformed CSV message: %s", error)));
	if (n != cols->ncolumns)
		ereport(ERROR,
				(errcode(ERRCODE_BAD_COPY_FILE_FORMAT),
				 n > cols->ncolumns ?
				 errmsg_plural("CSV message has more than %d field", "CSV message has more than %d fields",
							   cols->ncolumns, cols->ncolumns) :
				 errmsg_plural("CSV message has %d field", "CSV message has %d fields", n, n),
				 eoi_errdetail_columns(cols),
				 errhint("The fields fill the columns in order; name the columns they fill with create_job's columns parameter, or use a transform to map them otherwise.")));
	if (csv_is_header(cols, fields, n))
		return false;

	for (int i = 0; i < n; i++)
		writer->field(writer, i, fields[i].isnull ? NULL : fields[i].data, fields[i].len);
	return true;
}

/*
 * A JSON Schema record in Confluent's wire format (magic byte 0, a 4-byte
 * schema id, then the JSON text) is read as its JSON: a JSON text never
 * starts with byte 0, and the schema is not needed to read it (it is not
 * validated).  The prefix goes before the encoding check, which refuses
 * the NUL byte.  A value that starts with byte 0 but is shorter than the
 * prefix is a record error.
 */
void
eoi_json_unframe(const char **data, size_t *len)
{
	if (*data == NULL || *len == 0 || (*data)[0] != '\0')
		return;
	if (*len < 5)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("JSON message of %zu bytes is too short for Confluent's JSON Schema framing", *len),
				 errdetail("It starts with byte 0, which begins Confluent's framing: the magic byte 0 and a 4-byte schema id.")));
	*data += 5;
	*len -= 5;
}

/*
 * Decode one message value into one row for `writer`; false if it makes
 * no row (a CSV header).  The value must be valid in the database
 * encoding, without NUL bytes: anything else is an error that names the
 * message (the caller's error context).
 *
 * What decoding allocates (a copy of the value, a parsed JSON document)
 * goes in econtext's per-tuple memory, which the caller resets after each
 * message; writers keep their output in memory of their own.
 */
bool
eoi_decode_message(EoiColumns *cols, const char *value, size_t len, EoiRowWriter *writer,
				   ExprContext *econtext)
{
	MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	bool		row = true;

	if (cols->format == EOI_FORMAT_AVRO)
	{
		/* binary: avro.c checks each string it finds */
		eoi_avro_decode(cols, value, len, writer, econtext);
		writer->end_row(writer);
		MemoryContextSwitchTo(old);
		return true;
	}
	if (cols->format == EOI_FORMAT_PROTOBUF)
	{
		/* binary: protovalue.c checks each string it finds */
		eoi_protobuf_decode(cols, value, len, writer, econtext);
		writer->end_row(writer);
		MemoryContextSwitchTo(old);
		return true;
	}
	if (cols->format == EOI_FORMAT_JSON)
		eoi_json_unframe(&value, &len);
	(void) pg_verifymbstr(value, (int) len, false);

	switch (cols->format)
	{
		case EOI_FORMAT_TEXT:
			writer->field(writer, 0, value, len);
			break;
		case EOI_FORMAT_CSV:
			row = decode_csv(cols, value, len, writer);
			break;
		case EOI_FORMAT_JSON:
			eoi_decode_json(cols, value, len, writer, econtext);
			break;
		case EOI_FORMAT_AVRO:
		case EOI_FORMAT_PROTOBUF:
			break;				/* above */
	}
	if (row)
		writer->end_row(writer);
	MemoryContextSwitchTo(old);
	return row;
}

/*
 * Does a record header's value hold a schema id: magic 0 and 4 bytes, or
 * magic 1 and 16; for Protobuf, the message-index path after them (at
 * least its count).
 */
static bool
is_schema_id(EoiFormat format, const unsigned char *id, size_t len)
{
	size_t		path = format == EOI_FORMAT_PROTOBUF ? 1 : 0;

	if (len >= 5 + path && id[0] == 0)
		return path > 0 || len == 5;
	if (len >= 17 + path && id[0] == 1)
		return path > 0 || len == 17;
	return false;
}

/*
 * Confluent's serializers can carry the schema id in a record header
 * instead of in front of the value (header_schema_id_serializer: magic
 * byte 1 and the schema's GUID in __value_schema_id, the value bare Avro
 * or Protobuf; for Protobuf the header holds the message-index path after
 * the id).  The header then decides, whatever the value's first byte (a
 * bare record may well start with 0x00).  The framed copy is what the
 * decoder reads and what a dead letter keeps: a replayed dead letter has
 * no headers.
 */
const char *
eoi_framed_message(EoiFormat format, rd_kafka_message_t *msg, bool key, bool strict, size_t *len)
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
	if (id == NULL || !is_schema_id(format, id, idlen))
	{
		if (!strict)
			return data;
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("record header %s holds %zu bytes, which are no schema id", header,
						id == NULL ? (size_t) 0 : idlen),
				 errhint("The header holds magic byte 0 and a 4-byte schema id, or magic byte 1 and a 16-byte schema GUID, as Confluent's serializers write it (for Protobuf, followed by the message-index path).")));
	}
	framed = palloc(idlen + *len);
	memcpy(framed, id, idlen);
	memcpy(framed + idlen, data, *len);
	*len += idlen;
	return framed;
}

/*
 * Decode the value (key) of `msg`, a message of `topic`: through the job's
 * mapping, or eoi_decode_message, after formats avro and protobuf have put a schema id
 * that came in a record header in front.
 */
bool
eoi_decode_kafka_message(EoiColumns *cols, rd_kafka_message_t *msg, const char *topic, bool key,
						 EoiRowWriter *writer, ExprContext *econtext)
{
	const char *data = key ? msg->key : msg->payload;
	size_t		len = key ? msg->key_len : msg->len;

	if (cols->sources != NULL)
		return eoi_map_decode(cols, msg, topic, writer, econtext);

	if (eoi_format_has_schema_id(cols->format))
	{
		MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);

		data = eoi_framed_message(cols->format, msg, key, true, &len);
		MemoryContextSwitchTo(old);
	}
	return eoi_decode_message(cols, data, len, writer, econtext);
}

/*
 * The value (key) of `msg` as JSON text, for an envelope that reads a
 * message's structure itself (Debezium's change events): format json's
 * text, without Confluent's JSON Schema framing; format avro's record
 * rendered as JSON with its writer's schema (avro.c), its logical types
 * as PostgreSQL reads them.  Not checked for the encoding: the caller
 * checks what it reads.
 */
const char *
eoi_message_json(EoiFormat format, rd_kafka_message_t *msg, bool key, size_t *len)
{
	return eoi_message_json_spans(format, msg, key, len, NULL);
}

/*
 * The same, and with `spans`, where its members lie when the format's
 * reader noted them (format avro: see eoi_avro_bytes_json); spans->n is 0
 * when it did not.
 */
const char *
eoi_message_json_spans(EoiFormat format, rd_kafka_message_t *msg, bool key, size_t *len,
					   EoiJsonSpans *spans)
{
	const char *data = key ? msg->key : msg->payload;

	*len = key ? msg->key_len : msg->len;
	if (spans != NULL)
		spans->n = 0;
	if (format == EOI_FORMAT_AVRO)
	{
		data = eoi_framed_message(format, msg, key, true, len);
		return eoi_avro_json(data, *len, len, spans);
	}
	if (format == EOI_FORMAT_PROTOBUF)
	{
		data = eoi_framed_message(format, msg, key, true, len);
		data = eoi_protobuf_json(data, *len);
		*len = strlen(data);
	}
	eoi_json_unframe(&data, len);	/* Confluent's JsonSchemaConverter */
	return data;
}
