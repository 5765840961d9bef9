/*-------------------------------------------------------------------------
 *
 * batchfunc.c
 *	  eoingest.batch(), the set-returning function through which a
 *	  transform reads the batch a worker is writing.
 *
 * eoingest.batch() materializes the batch into a tuplestore: no temporary
 * table is involved, so a two_phase batch can still be prepared.  Since 0.4
 * it also gives the value decoded as jsonb (json and avro jobs), the key and
 * value as bytea, and every header in order; an avro job's key and value
 * text are the records as JSON.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "api/batchfunc.h"
#include "apply/attempt.h"
#include "base/txn.h"
#include "format/avro.h"
#include "format/decode.h"
#include "kafka/batch.h"

PG_FUNCTION_INFO_V1(eoingest_batch);

/*
 * Set up a set-returning function that materializes its result: the
 * tuplestore to fill and its descriptor.
 */
void
eoi_materialize_srf(FunctionCallInfo fcinfo, Tuplestorestate **store, TupleDesc *tupdesc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext old;
	TupleDesc	desc;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	*tupdesc = CreateTupleDescCopy(desc);
	*store = tuplestore_begin_heap(true, false, work_mem);
	MemoryContextSwitchTo(old);

	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = *store;
	rsinfo->setDesc = *tupdesc;
}

static Datum
bytes_as_text(const void *data, size_t len, bool lenient, bool *isnull)
{
	*isnull = (data == NULL);
	if (data == NULL)
		return (Datum) 0;
	if (lenient && !pg_verifymbstr(data, (int) len, true))
	{
		*isnull = true;			/* a binary key: key_bytes has it */
		return (Datum) 0;
	}
	(void) pg_verifymbstr(data, (int) len, false);
	return PointerGetDatum(cstring_to_text_with_len(data, (int) len));
}

/* , "hex": "0a1b..." */
static void
append_hex_member(StringInfo buf, const void *value, size_t size)
{
	static const char digits[] = "0123456789abcdef";

	appendStringInfoString(buf, ", \"hex\": \"");
	for (size_t k = 0; k < size; k++)
	{
		appendStringInfoChar(buf, digits[((const unsigned char *) value)[k] >> 4]);
		appendStringInfoChar(buf, digits[((const unsigned char *) value)[k] & 0xf]);
	}
	appendStringInfoChar(buf, '"');
}

/*
 * A message's headers as jsonb: an object, where a repeated name keeps its
 * last value, or (as_list) every header in order, repeated names kept:
 * [{"name": ..., "value": ...}, ...].  A value that is no text of the
 * database encoding (a schema GUID, a binary trace id) is null, and in the
 * list its bytes are in "hex" as well: a transform that never reads a
 * header must not lose its record to one.
 */
static Datum
headers_jsonb(rd_kafka_message_t *msg, bool as_list, bool *isnull)
{
	rd_kafka_headers_t *hdrs;
	StringInfoData buf;
	const char *name;
	const void *value;
	size_t		size;

	*isnull = true;
	if (msg->_private == NULL ||
		rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return (Datum) 0;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, as_list ? '[' : '{');
	for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		(void) pg_verifymbstr(name, (int) strlen(name), false);
		if (as_list)
			appendStringInfoString(&buf, "{\"name\": ");
		escape_json(&buf, name);
		appendStringInfoString(&buf, as_list ? ", \"value\": " : ": ");
		if (value == NULL)
			appendStringInfoString(&buf, "null");
		else if (pg_verifymbstr(value, (int) size, true))
			escape_json(&buf, pnstrdup(value, size));
		else
		{
			appendStringInfoString(&buf, "null");
			if (as_list)
				append_hex_member(&buf, value, size);
		}
		if (as_list)
			appendStringInfoChar(&buf, '}');
	}
	appendStringInfoChar(&buf, as_list ? ']' : '}');
	*isnull = false;
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(buf.data));
}

/*
 * An Avro key as JSON text, or NULL (*isnull) when it is no record of its
 * schema: a transform that reads key_bytes only must not lose the record
 * to its key.  Only the record's own faults make it NULL (data exceptions,
 * class 22, and what is beyond eoingest's limits, 54000); a registry that
 * is down or refuses the credentials still fails the batch.  The decoder
 * may have left state behind an error: a subtransaction, as PL/pgSQL's
 * exception blocks use, cleans it.
 */
typedef struct AvroKey
{
	rd_kafka_message_t *msg;
	Datum		text;
} AvroKey;

static void
avro_key_json(void *arg)
{
	AvroKey    *key = arg;
	size_t		len;
	const char *data = eoi_avro_framed(key->msg, true, true, &len);

	key->text = CStringGetTextDatum(eoi_avro_json(data, len));
}

static Datum
avro_key_text(rd_kafka_message_t *msg, bool *isnull)
{
	AvroKey		key = {msg, (Datum) 0};
	ErrorData  *edata = eoi_try_subxact(avro_key_json, &key);

	*isnull = edata != NULL;
	if (edata == NULL)
		return key.text;
	if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_DATA_EXCEPTION &&
		edata->sqlerrcode != ERRCODE_PROGRAM_LIMIT_EXCEEDED)
		ReThrowError(edata);
	FreeErrorData(edata);
	return (Datum) 0;
}

/*
 * A key or value as text: as it is, or, for avro, the record as JSON
 * (whose text is kept in *json for value_json).  A key that is no text of
 * the database encoding, or no Avro record, is NULL (key_bytes has it): a
 * transform that never reads `key` must not lose the record to it.  A
 * value that is not text is the record's fault, as for the formats without
 * a transform.
 */
static Datum
message_text(EoiFormat format, rd_kafka_message_t *msg, bool key, bool *isnull, char **json)
{
	const void *data = key ? msg->key : msg->payload;
	size_t		len = key ? msg->key_len : msg->len;

	*json = NULL;
	if (data != NULL && format == EOI_FORMAT_JSON)
	{
		const char *text = data;

		eoi_json_unframe(&text, &len);	/* a JSON Schema record: its JSON */
		return bytes_as_text(text, len, key, isnull);
	}
	if (data == NULL || format != EOI_FORMAT_AVRO)
		return bytes_as_text(data, len, key, isnull);
	if (key)
		return avro_key_text(msg, isnull);
	*isnull = false;
	data = eoi_avro_framed(msg, key, true, &len);
	*json = eoi_avro_json(data, len);
	return CStringGetTextDatum(*json);
}

Datum
eoingest_batch(PG_FUNCTION_ARGS)
{
	EoiBatch   *batch = eoi_attempt != NULL ? eoi_attempt->transform_batch : NULL;
	TupleDesc	tupdesc;
	Tuplestorestate *store;

	if (batch == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("eoingest.batch() can only be called from a job's transform"),
				 errhint("Give the SQL statement as create_job's transform parameter.")));

	eoi_materialize_srf(fcinfo, &store, &tupdesc);
	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];
		Datum		values[11];
		bool		nulls[11] = {false};
		char	   *key_json;
		char	   *value_json;
		bytea	   *key;
		bytea	   *value;

		values[0] = CStringGetTextDatum(eoi_message_topic(batch, i));
		values[1] = Int32GetDatum(msg->partition);
		values[2] = Int64GetDatum(msg->offset);
		values[3] = message_text(batch->key_format, msg, true, &nulls[3], &key_json);
		values[4] = message_text(batch->format, msg, false, &nulls[4], &value_json);
		values[5] = eoi_message_timestamp(msg, &nulls[5]);
		values[6] = headers_jsonb(msg, false, &nulls[6]);
		/* the 0.1 to 0.3 definitions end here */
		if (tupdesc->natts >= 11)
		{
			nulls[7] = true;
			if (value_json != NULL)
				values[7] = DirectFunctionCall1(jsonb_in, CStringGetDatum(value_json));
			else if (batch->format == EOI_FORMAT_JSON && !nulls[4])
				values[7] = DirectFunctionCall1(jsonb_in, CStringGetDatum(TextDatumGetCString(values[4])));
			nulls[7] = (value_json == NULL && (batch->format != EOI_FORMAT_JSON || nulls[4]));
			key = eoi_message_bytes(msg->key, msg->key_len);
			value = eoi_message_bytes(msg->payload, msg->len);
			values[8] = PointerGetDatum(key);
			nulls[8] = (key == NULL);
			values[9] = PointerGetDatum(value);
			nulls[9] = (value == NULL);
			values[10] = headers_jsonb(msg, true, &nulls[10]);
		}
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}
