/*-------------------------------------------------------------------------
 *
 * replay.c
 *	  The replay of dead letters, which puts them through the job's writer
 *	  again once the cause is fixed.  The table is store/deadletter.c's;
 *	  keeping a failed message, sink.c's; the SQL function,
 *	  api/deadletters.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "apply/replay.h"
#include "apply/sink.h"
#include "store/deadletter.h"
#include "store/job.h"

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

/* The ids a NOTICE names at most. */
#define MAX_NAMED 20

/*
 * Say which dead letters a replay left because a later record of their key
 * had been applied (eoi_sink_supersede_dead_letters).
 */
static void
report_superseded(const EoiJob *job, StringInfo ids, int count)
{
	if (count == 0)
		return;
	if (count > MAX_NAMED)
		appendStringInfo(ids, " and %d more", count - MAX_NAMED);
	ereport(NOTICE,
			(errmsg_plural("left %d dead letter of job \"%s\" whose key the job has written again since: %s",
						   "left %d dead letters of job \"%s\" whose keys the job has written again since: %s",
						   count, count, job->name, ids->data),
			 errdetail("Replaying them would give their keys an older image than they have."),
			 errhint("Replay them with force => true to write the older images anyway, or discard them with eoingest.discard_dead_letters().")));
}

/*
 * Write the job's dead letters (all, or those ids) with `writer`, in the
 * caller's transaction, in the order of their positions, and delete them;
 * returns how many.  All or nothing: a record that still fails raises its
 * error, and nothing is replayed.
 *
 * A dead letter that a later record of its key has superseded is left
 * where it is, and named in a NOTICE, unless `force`: its image is older
 * than the one its key has.
 *
 * The caller has checked that it may act on the job.  The write runs
 * exactly as in the job's worker: as the job's owner, with the job's
 * search_path, and under SECURITY_RESTRICTED_OPERATION, as PostgreSQL runs
 * maintenance on behalf of a table's owner.  A superuser replaying a job
 * must not run the owner's triggers or transform with the superuser's
 * rights.
 */
uint64
eoi_replay_dead_letters(const EoiJob *job, ArrayType *ids, EoiBatchWriter writer, bool force)
{
	EoiSavedUser saved;
	Oid			types[2] = {INT4OID, INT8ARRAYOID};
	Datum		args[2];
	char		nulls[2] = "  ";
	MemoryContext cxt = CurrentMemoryContext;
	EoiBatch	batch = {0};
	int64	   *dl_ids;
	uint64		n;
	StringInfoData superseded;
	int			nsuperseded = 0;

	initStringInfo(&superseded);
	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	args[0] = Int32GetDatum(job->id);
	args[1] = ids ? PointerGetDatum(ids) : (Datum) 0;
	nulls[1] = ids ? ' ' : 'n';
	if (SPI_execute_with_args("SELECT id, topic, \"partition\", \"offset\", key, value, superseded_by"
							  "  FROM eoingest.dead_letters"
							  " WHERE job_id = $1 AND ($2 IS NULL OR id = ANY ($2))"
							  " ORDER BY topic, \"partition\", \"offset\" FOR UPDATE",
							  2, types, args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.dead_letters");
	n = SPI_processed;

	batch.messages = MemoryContextAllocZero(cxt, sizeof(rd_kafka_message_t *) * Max(n, 1));
	batch.topics = MemoryContextAllocZero(cxt, sizeof(char *) * Max(n, 1));
	dl_ids = MemoryContextAlloc(cxt, sizeof(int64) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		rd_kafka_message_t *msg;
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));

		CHECK_FOR_INTERRUPTS();
		(void) SPI_getbinval(tup, desc, 7, &isnull);
		if (!isnull && !force)
		{
			if (nsuperseded < MAX_NAMED)
				appendStringInfo(&superseded, "%s" INT64_FORMAT, nsuperseded > 0 ? ", " : "", id);
			nsuperseded++;
			continue;
		}
		msg = MemoryContextAllocZero(cxt, sizeof(rd_kafka_message_t));
		dl_ids[batch.n] = id;
		batch.topics[batch.n] = MemoryContextStrdup(cxt, SPI_getvalue(tup, desc, 2));
		msg->partition = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		msg->offset = DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
		msg->key = bytes_copy(tup, desc, 5, cxt, &msg->key_len);
		msg->payload = bytes_copy(tup, desc, 6, cxt, &msg->len);
		batch.messages[batch.n++] = msg;
	}
	SPI_finish();
	eoi_restore_user(&saved);

	if (batch.n > 0)
	{
		/*
		 * The dead letters go first, as ours: the write then marks the ones
		 * left whose keys it takes further (eoi_sink_supersede_dead_letters).
		 */
		eoi_become_extension_owner(&saved);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		{
			Datum	   *elems = palloc(sizeof(Datum) * batch.n);
			Oid			dtypes[1] = {INT8ARRAYOID};
			Datum		dargs[1];

			for (int i = 0; i < batch.n; i++)
				elems[i] = Int64GetDatum(dl_ids[i]);
			dargs[0] = PointerGetDatum(construct_array(elems, batch.n, INT8OID, 8, true, TYPALIGN_DOUBLE));
			if (SPI_execute_with_args("DELETE FROM eoingest.dead_letters WHERE id = ANY ($1)",
									  1, dtypes, dargs, NULL, false, 0) != SPI_OK_DELETE)
				elog(ERROR, "could not delete from eoingest.dead_letters");
		}
		SPI_finish();
		eoi_restore_user(&saved);

		/* The rows go in as the job's owner. */
		eoi_become_job_owner(job, &saved);
		(void) eoi_sink_write(job, &batch, writer);
		eoi_restore_user(&saved);
	}
	report_superseded(job, &superseded, nsuperseded);
	return (uint64) batch.n;
}
