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
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "api/batchcols.h"
#include "api/batchfunc.h"
#include "apply/attempt.h"
#include "base/txn.h"
#include "format/avro.h"
#include "format/decode.h"
#include "format/jsonbuild.h"
#include "kafka/batch.h"

PG_FUNCTION_INFO_V1(eoingest_batch);

/* The columns of eoingest.batch(), since 0.4. */
#define EOI_BATCH_NATTS 11

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

/* A message's headers as jsonb (eoi_message_headers_json), or NULL. */
static Datum
headers_jsonb(rd_kafka_message_t *msg, bool as_list, bool *isnull)
{
	char	   *json = eoi_message_headers_json(msg, as_list);

	*isnull = (json == NULL);
	return json == NULL ? (Datum) 0 : DirectFunctionCall1(jsonb_in, CStringGetDatum(json));
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
typedef struct SchemaKey
{
	EoiFormat	format;
	rd_kafka_message_t *msg;
	Datum		text;
} SchemaKey;

static void
schema_key_json(void *arg)
{
	SchemaKey  *key = arg;
	size_t		len;
	const char *json = eoi_message_json(key->format, key->msg, true, &len);

	key->text = PointerGetDatum(cstring_to_text_with_len(json, (int) len));
}

static Datum
schema_key_text(EoiFormat format, rd_kafka_message_t *msg, bool *isnull)
{
	SchemaKey	key = {format, msg, (Datum) 0};
	ErrorData  *edata = eoi_try_subxact(schema_key_json, &key);

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
	if (data == NULL || !eoi_format_has_schema_id(format))
		return bytes_as_text(data, len, key, isnull);
	if (key)
		return schema_key_text(format, msg, isnull);
	*isnull = false;
	*json = (char *) eoi_message_json(format, msg, false, &len);
	return CStringGetTextDatum(*json);
}

/* The value's text: a JSON Schema record's without its framing. */
static const char *
value_bytes(EoiFormat format, rd_kafka_message_t *msg, size_t *len)
{
	const char *data = msg->payload;

	*len = msg->len;
	if (format == EOI_FORMAT_JSON)
		eoi_json_unframe(&data, len);
	return data;
}

/*
 * A value that is not read is still checked as message_text() checks it,
 * so that whether a record fails does not depend on the columns the
 * transform reads: it must be text of the database encoding.
 */
static void
check_value_text(EoiFormat format, rd_kafka_message_t *msg)
{
	size_t		len;
	const char *data = value_bytes(format, msg, &len);

	(void) pg_verifymbstr(data, (int) len, false);
}

/*
 * A json job's value: as jsonb (value_json) when read; else only checked to
 * be JSON, as it is when read.  The text was checked to be of the database
 * encoding (message_text or check_value_text).
 */
static Datum
json_value(rd_kafka_message_t *msg, bool as_jsonb)
{
	size_t		len;
	const char *data = value_bytes(EOI_FORMAT_JSON, msg, &len);

	if (as_jsonb)
		return eoi_jsonb_from_text(data, len);
	(void) DirectFunctionCall1(json_in, CStringGetDatum(pnstrdup(data, len)));
	return (Datum) 0;
}

/*
 * One message as a row of batch(): the columns in read[], the others NULL.
 * An avro value is always decoded (value is its JSON), so that an
 * undecodable record fails whatever the transform reads.
 */
static void
message_row(EoiBatch *batch, int i, TupleDesc tupdesc, const bool *read, Datum *values, bool *nulls)
{
	rd_kafka_message_t *msg = batch->messages[i];
	bool		need_value = read[4] || eoi_format_has_schema_id(batch->format);
	char	   *key_json;
	char	   *value_json = NULL;

	for (int c = 0; c < tupdesc->natts; c++)
		nulls[c] = true;
	if (read[0])
		values[0] = CStringGetTextDatum(eoi_message_topic(batch, i));
	nulls[0] = !read[0];
	values[1] = Int32GetDatum(msg->partition);
	nulls[1] = false;
	values[2] = Int64GetDatum(msg->offset);
	nulls[2] = false;
	if (read[3])
		values[3] = message_text(batch->key_format, msg, true, &nulls[3], &key_json);
	if (need_value)
		values[4] = message_text(batch->format, msg, false, &nulls[4], &value_json);
	else if (msg->payload != NULL)
		check_value_text(batch->format, msg);
	if (read[5])
		values[5] = eoi_message_timestamp(msg, &nulls[5]);
	if (read[6])
		values[6] = headers_jsonb(msg, false, &nulls[6]);
	/* the 0.1 to 0.3 definitions end here */
	if (tupdesc->natts < 11)
		return;
	if (value_json != NULL && read[7])
	{
		values[7] = eoi_jsonb_from_text(value_json, strlen(value_json));
		nulls[7] = false;
	}
	else if (batch->format == EOI_FORMAT_JSON && msg->payload != NULL)
	{
		values[7] = json_value(msg, read[7]);
		nulls[7] = !read[7];
	}
	if (read[8])
	{
		bytea	   *key = eoi_message_bytes(msg->key, msg->key_len);

		values[8] = PointerGetDatum(key);
		nulls[8] = (key == NULL);
	}
	if (read[9])
	{
		bytea	   *value = eoi_message_bytes(msg->payload, msg->len);

		values[9] = PointerGetDatum(value);
		nulls[9] = (value == NULL);
	}
	if (read[10])
		values[10] = headers_jsonb(msg, true, &nulls[10]);
}

Datum
eoingest_batch(PG_FUNCTION_ARGS)
{
	EoiBatch   *batch = eoi_attempt != NULL ? eoi_attempt->transform_batch : NULL;
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	bool		read[EOI_BATCH_NATTS];
	MemoryContext row_cxt;

	if (batch == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("eoingest.batch() can only be called from a job's transform"),
				 errhint("Give the SQL statement as create_job's transform parameter.")));

	eoi_materialize_srf(fcinfo, &store, &tupdesc);
	if (tupdesc->natts > EOI_BATCH_NATTS)
		elog(ERROR, "eoingest.batch() returns %d columns, more than the library knows", tupdesc->natts);
	eoi_batch_columns_read((ReturnSetInfo *) fcinfo->resultinfo, eoi_attempt->transform_plan,
						   fcinfo->flinfo->fn_oid, tupdesc->natts, read);
	/*
	 * A row's values are made in a context of their own, emptied after the
	 * tuplestore copied them: the memory stays the same few blocks, instead
	 * of growing by what parsing every message takes.
	 */
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "eoingest.batch() row",
									ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < batch->n; i++)
	{
		Datum		values[EOI_BATCH_NATTS];
		bool		nulls[EOI_BATCH_NATTS];
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(row_cxt);
		message_row(batch, i, tupdesc, read, values, nulls);
		MemoryContextSwitchTo(old);
		tuplestore_putvalues(store, tupdesc, values, nulls);
		MemoryContextReset(row_cxt);
	}
	MemoryContextDelete(row_cxt);
	return (Datum) 0;
}
