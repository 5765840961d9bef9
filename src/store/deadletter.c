/*-------------------------------------------------------------------------
 *
 * deadletter.c
 *	  Dead letters: a record that cannot be decoded or stored is kept in
 *	  eoingest.dead_letters, in the transaction that moves the offsets past
 *	  it, so that it is never dropped silently.  replay_dead_letters() puts
 *	  them through the job's write path again once the cause is fixed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "format/avro.h"
#include "store/deadletter.h"
#include "store/job.h"
#include "apply/sink.h"

PG_FUNCTION_INFO_V1(eoingest_replay_dead_letters);

/*
 * The inverse of eoi_message_bytes: column `col` of an SPI row as a NUL-terminated
 * copy in `cxt` (as librdkafka hands message bytes), or NULL with *len 0.
 */
static void *
bytes_copy(HeapTuple tup, TupleDesc desc, int col, MemoryContext cxt, size_t *len)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);
	bytea	   *b;
	char	   *copy;

	*len = 0;
	if (isnull)
		return NULL;
	b = DatumGetByteaPP(d);
	*len = VARSIZE_ANY_EXHDR(b);
	copy = MemoryContextAlloc(cxt, *len + 1);
	memcpy(copy, VARDATA_ANY(b), *len);
	copy[*len] = '\0';
	return copy;
}

/*
 * The key or value a dead letter keeps: the message's, with the schema id
 * of format avro put in front when it came in a record header, since a
 * replay has the dead letter's bytes only.
 */
static bytea *
dead_letter_bytes(const EoiJob *job, rd_kafka_message_t *msg, bool key)
{
	EoiFormat	format = key ? job->key_format : job->format;
	const char *data = key ? msg->key : msg->payload;
	size_t		len = key ? msg->key_len : msg->len;

	if (format == EOI_FORMAT_AVRO)
		data = eoi_avro_framed(msg, key, false, &len);
	return eoi_message_bytes(data, len);
}

/*
 * Keep one failed record, in the current transaction: once per position.
 * A record is read again after a restart when its offsets were not stored
 * yet (upsert and at_least_once store them after the data); its dead
 * letter then keeps its id and takes the latest error.
 */
void
eoi_dead_letter_store(const EoiJob *job, const char *topic, rd_kafka_message_t *msg,
					  ErrorData *edata)
{
	EoiSavedUser saved;
	Oid			types[11] = {TEXTOID, TEXTOID, INT4OID, INT8OID, BYTEAOID, BYTEAOID,
	TIMESTAMPTZOID, TEXTOID, TEXTOID, OIDOID, INT4OID};
	Datum		args[11];
	char		nulls[11] = "           ";
	bool		isnull;
	bytea	   *key;
	bytea	   *value;

	args[0] = CStringGetTextDatum(job->name);
	args[1] = CStringGetTextDatum(topic);
	args[2] = Int32GetDatum(msg->partition);
	args[3] = Int64GetDatum(msg->offset);
	key = dead_letter_bytes(job, msg, true);
	value = dead_letter_bytes(job, msg, false);
	args[4] = PointerGetDatum(key);
	nulls[4] = key ? ' ' : 'n';
	args[5] = PointerGetDatum(value);
	nulls[5] = value ? ' ' : 'n';
	args[6] = eoi_message_timestamp(msg, &isnull);
	nulls[6] = isnull ? 'n' : ' ';
	args[7] = CStringGetTextDatum(eoi_describe_error(edata));
	args[8] = CStringGetTextDatum(unpack_sql_state(edata->sqlerrcode));
	args[9] = ObjectIdGetDatum(job->owner);
	args[10] = Int32GetDatum(job->id);

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("INSERT INTO eoingest.dead_letters"
							  " (job, topic, \"partition\", \"offset\", key, value, \"timestamp\", error, sqlstate, owner, job_id)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
							  " ON CONFLICT (job_id, topic, \"partition\", \"offset\") DO UPDATE"
							  " SET error = excluded.error, sqlstate = excluded.sqlstate,"
							  "     failed_at = excluded.failed_at",
							  11, types, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into eoingest.dead_letters");
	SPI_finish();
	eoi_restore_user(&saved);
}

/* How many dead letters job `job_id` has (drop_job says what it removes). */
int64
eoi_dead_letter_count(int32 job_id)
{
	return eoi_job_query_int("SELECT count(*) FROM eoingest.dead_letters WHERE job_id = $1", job_id);
}

/*
 * eoingest.replay_dead_letters(job, ids): write the job's dead letters
 * (all, or those ids) through its write path, in the caller's transaction,
 * and delete them.  All or nothing: a record that still fails raises its
 * error, and nothing is replayed.
 *
 * The write path runs exactly as in the job's worker: as the job's owner,
 * with the job's search_path, and under SECURITY_RESTRICTED_OPERATION, as
 * PostgreSQL runs maintenance on behalf of a table's owner.  A superuser
 * replaying a job must not run the owner's triggers or transform with the
 * superuser's rights.
 */
Datum
eoingest_replay_dead_letters(PG_FUNCTION_ARGS)
{
	ArrayType  *ids = PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1);
	char	   *name;
	EoiSavedUser saved;
	EoiJob	   *job;
	Oid			types[2] = {INT4OID, INT8ARRAYOID};
	Datum		args[2];
	char		nulls[2] = "  ";
	MemoryContext cxt = CurrentMemoryContext;
	EoiBatch	batch;
	int64	   *dl_ids;
	uint64		n;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("job must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	job = eoi_job_load_by_name(name);
	eoi_check_primary();
	eoi_check_job_owner(name, job->owner);
	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	args[0] = Int32GetDatum(job->id);
	args[1] = ids ? PointerGetDatum(ids) : (Datum) 0;
	nulls[1] = ids ? ' ' : 'n';
	if (SPI_execute_with_args("SELECT id, topic, \"partition\", \"offset\", key, value"
							  "  FROM eoingest.dead_letters"
							  " WHERE job_id = $1 AND ($2 IS NULL OR id = ANY ($2))"
							  " ORDER BY id FOR UPDATE",
							  2, types, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.dead_letters");
	n = SPI_processed;

	batch.n = (int) n;
	batch.messages = MemoryContextAllocZero(cxt, sizeof(rd_kafka_message_t *) * Max(n, 1));
	batch.topics = MemoryContextAllocZero(cxt, sizeof(char *) * Max(n, 1));
	dl_ids = MemoryContextAlloc(cxt, sizeof(int64) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		rd_kafka_message_t *msg = MemoryContextAllocZero(cxt, sizeof(rd_kafka_message_t));
		bool		isnull;

		dl_ids[i] = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		batch.topics[i] = MemoryContextStrdup(cxt, SPI_getvalue(tup, desc, 2));
		msg->partition = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		msg->offset = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
		msg->key = bytes_copy(tup, desc, 5, cxt, &msg->key_len);
		msg->payload = bytes_copy(tup, desc, 6, cxt, &msg->len);
		batch.messages[i] = msg;
	}
	SPI_finish();
	eoi_restore_user(&saved);

	if (n > 0)
	{
		/* The rows go in as the job's owner, the dead letters go as ours. */
		eoi_become_job_owner(job, &saved);
		(void) eoi_sink_write(job, &batch);
		eoi_restore_user(&saved);

		eoi_become_extension_owner(&saved);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		{
			Datum	   *elems = palloc(sizeof(Datum) * n);
			Oid			dtypes[1] = {INT8ARRAYOID};
			Datum		dargs[1];

			for (uint64 i = 0; i < n; i++)
				elems[i] = Int64GetDatum(dl_ids[i]);
			dargs[0] = PointerGetDatum(construct_array(elems, (int) n, INT8OID, 8, true, TYPALIGN_DOUBLE));
			if (SPI_execute_with_args("DELETE FROM eoingest.dead_letters WHERE id = ANY ($1)",
									  1, dtypes, dargs, NULL, false, 0) != SPI_OK_DELETE)
				elog(ERROR, "could not delete from eoingest.dead_letters");
		}
		SPI_finish();
		eoi_restore_user(&saved);
	}
	PG_RETURN_INT64((int64) n);
}
