/*-------------------------------------------------------------------------
 *
 * offsets.c
 *	  Reading and advancing eoingest.offsets.
 *
 * Advancing is a compare-and-set: the row must still hold the offset this
 * worker last read or committed, and the job must still be the one the
 * worker runs.  A stale worker (another one took its partitions over, or
 * the job was dropped and created again) fails instead of double-writing.
 * All of this runs as the extension's owner, inside the caller's
 * transaction: the offsets commit or roll back with the rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/pg_lsn.h"
#include "utils/timestamp.h"

#include "store/job.h"
#include "store/offsets.h"

static void
offsets_spi_begin(EoiSavedUser *saved)
{
	eoi_become_extension_owner(saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

static void
offsets_spi_end(EoiSavedUser *saved)
{
	SPI_finish();
	eoi_restore_user(saved);
}

/* The stored positions of one of the job's topics, sorted by partition. */
int
eoi_offsets_read(const EoiJob *job, const char *topic, EoiPosition *positions, int max)
{
	EoiSavedUser saved;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2] = {CStringGetTextDatum(job->name), CStringGetTextDatum(topic)};
	int			n = 0;
	int			ret;

	offsets_spi_begin(&saved);
	ret = SPI_execute_with_args("SELECT \"partition\", next_offset FROM eoingest.offsets"
								" WHERE job = $1 AND topic = $2 ORDER BY \"partition\"",
								2, types, args, NULL, true, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.offsets: %s", SPI_result_code_string(ret));
	for (uint64 i = 0; i < SPI_processed && n < max; i++)
	{
		bool		isnull;

		positions[n].topic = topic;
		positions[n].partition = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
															 SPI_tuptable->tupdesc, 1, &isnull));
		positions[n].offset = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 2, &isnull));
		n++;
	}
	offsets_spi_end(&saved);
	return n;
}

/*
 * Lock the job's row until the transaction ends: the workers of a job take
 * it to decide the job's first positions one at a time (alter_job, stop_job
 * and drop_job wait for that too, briefly).
 */
void
eoi_offsets_lock_job(const EoiJob *job)
{
	EoiSavedUser saved;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(job->id)};
	int			ret;

	offsets_spi_begin(&saved);
	ret = SPI_execute_with_args("SELECT 1 FROM eoingest.jobs WHERE id = $1 FOR NO KEY UPDATE",
								1, types, args, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not lock the job's row: %s", SPI_result_code_string(ret));
	offsets_spi_end(&saved);
}

/*
 * Has the job stored any position yet, on any topic?  Seen with a snapshot
 * taken now, not the transaction's: the caller has just waited for the
 * job's row (eoi_offsets_lock_job), and the sibling it waited for may have
 * stored the positions and committed meanwhile.
 */
bool
eoi_offsets_any(const EoiJob *job)
{
	EoiSavedUser saved;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(job->name)};
	bool		found;
	int			ret;

	offsets_spi_begin(&saved);
	ret = SPI_execute_with_args("SELECT 1 FROM eoingest.offsets WHERE job = $1 LIMIT 1",
								1, types, args, NULL, false, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.offsets: %s", SPI_result_code_string(ret));
	found = (SPI_processed > 0);
	offsets_spi_end(&saved);
	return found;
}

/* Record the starting position of a partition, unless one is stored. */
void
eoi_offsets_insert(const EoiJob *job, const EoiPosition *position)
{
	EoiSavedUser saved;
	Oid			types[4] = {TEXTOID, TEXTOID, INT4OID, INT8OID};
	Datum		args[4] = {
		CStringGetTextDatum(job->name), CStringGetTextDatum(position->topic),
		Int32GetDatum(position->partition), Int64GetDatum(position->offset)
	};
	int			ret;

	offsets_spi_begin(&saved);
	ret = SPI_execute_with_args("INSERT INTO eoingest.offsets (job, topic, \"partition\", next_offset)"
								" VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
								4, types, args, NULL, false, 0);
	if (ret != SPI_OK_INSERT)
		elog(ERROR, "could not insert into eoingest.offsets: %s", SPI_result_code_string(ret));
	offsets_spi_end(&saved);
}

/*
 * Move a partition's stored position from where this worker holds it to
 * next_offset, with message_at, the Kafka timestamp of the last message
 * the move accounts for (0: keep the one stored, as past transaction
 * markers, which carry none); eoingest.lag's time_lag starts from it.  A
 * position that moved meanwhile is another worker's: serialization failure.
 */
void
eoi_offsets_advance(const EoiJob *job, const EoiPosition *position, int64 next_offset,
					TimestampTz message_at)
{
	static SPIPlanPtr plan = NULL;
	EoiSavedUser saved;
	int32		partition = position->partition;
	int64		expected = position->offset;
	Datum		args[7] = {
		CStringGetTextDatum(job->name), CStringGetTextDatum(position->topic),
		Int32GetDatum(partition), Int64GetDatum(expected),
		Int64GetDatum(next_offset), Int32GetDatum(job->id),
		TimestampTzGetDatum(message_at)
	};
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', message_at == 0 ? 'n' : ' '};
	int			ret;

	offsets_spi_begin(&saved);
	if (plan == NULL)
	{
		Oid			types[7] = {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT4OID, TIMESTAMPTZOID};

		plan = SPI_prepare("UPDATE eoingest.offsets o"
						   "   SET next_offset = $5, updated_at = pg_catalog.now(),"
						   "       last_message_at = COALESCE($7, o.last_message_at)"
						   " WHERE o.job = $1 AND o.topic = $2 AND o.\"partition\" = $3"
						   "   AND o.next_offset = $4"
						   "   AND EXISTS (SELECT 1 FROM eoingest.jobs j"
						   "                WHERE j.id = $6 AND j.name = $1)",
						   7, types);
		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare the offsets update: %s",
				 SPI_result_code_string(SPI_result));
	}
	ret = SPI_execute_plan(plan, args, nulls, false, 0);
	if (ret != SPI_OK_UPDATE)
		elog(ERROR, "could not update eoingest.offsets: %s", SPI_result_code_string(ret));
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("offset of job \"%s\" topic \"%s\" partition %d moved under this worker",
						job->name, position->topic, partition),
				 errdetail("Expected next_offset %lld; another worker or a manual change updated it, or the job was dropped.",
						   (long long) expected)));
	offsets_spi_end(&saved);
}

/* Record a partition's log end as the worker last saw it (eoingest.lag). */
void
eoi_offsets_note_watermarks(const EoiJob *job, const EoiPosition *position, int64 low, int64 high,
							int64 lso)
{
	EoiSavedUser saved;
	Oid			types[6] = {TEXTOID, TEXTOID, INT4OID, INT8OID, INT8OID, INT8OID};
	Datum		args[6] = {
		CStringGetTextDatum(job->name), CStringGetTextDatum(position->topic),
		Int32GetDatum(position->partition), Int64GetDatum(low), Int64GetDatum(high),
		Int64GetDatum(lso)
	};
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', lso < 0 ? 'n' : ' '};

	offsets_spi_begin(&saved);
	if (SPI_execute_with_args("INSERT INTO eoingest.watermarks AS w"
							  " (job, topic, \"partition\", low_watermark, high_watermark,"
							  "  last_stable_offset, measured_at)"
							  " VALUES ($1, $2, $3, $4, $5, $6, pg_catalog.now())"
							  " ON CONFLICT (job, topic, \"partition\") DO UPDATE"
							  "   SET low_watermark = excluded.low_watermark,"
							  "       high_watermark = excluded.high_watermark,"
							  "       last_stable_offset = excluded.last_stable_offset,"
							  "       measured_at = excluded.measured_at",
							  6, types, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not update eoingest.watermarks");
	offsets_spi_end(&saved);
}

/* Prepare a statement once for the life of the process. */
static SPIPlanPtr
offsets_plan(SPIPlanPtr *plan, const char *query, int nargs, Oid *types)
{
	if (*plan == NULL)
	{
		SPIPlanPtr	p = SPI_prepare(query, nargs, types);

		if (p == NULL || SPI_keepplan(p) != 0)
			elog(ERROR, "could not prepare \"%s\": %s", query,
				 SPI_result_code_string(SPI_result));
		*plan = p;
	}
	return *plan;
}


/* last_events of a stored position, an int[] of fingerprints, into `pos`. */
static void
read_fingerprints(Datum array, bool isnull, MemoryContext cxt, EoiOffsetSourcePosition *pos)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	pos->nevents = 0;
	pos->events = NULL;
	if (isnull)
		return;
	deconstruct_array(DatumGetArrayTypeP(array), INT4OID, 4, true, TYPALIGN_INT, &elems, &nulls, &n);
	pos->events = MemoryContextAlloc(cxt, sizeof(uint32) * Max(n, 1));
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			pos->events[pos->nevents++] = (uint32) DatumGetInt32(elems[i]);
}
/*
 * The source positions stored for the job's partitions, in the caller's
 * memory; returns how many.
 */
int
eoi_offsets_read_source_positions(const EoiJob *job, EoiOffsetSourcePosition **positions)
{
	MemoryContext caller = CurrentMemoryContext;
	EoiSavedUser saved;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(job->name)};
	int			n;

	offsets_spi_begin(&saved);
	if (SPI_execute_with_args("SELECT topic, \"partition\", source_name, source_db,"
							  "       commit_lsn, lsn, commit_time, last_events"
							  "  FROM eoingest.source_positions"
							  " WHERE job = $1",
							  1, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.source_positions");
	n = (int) SPI_processed;
	*positions = MemoryContextAlloc(caller, sizeof(EoiOffsetSourcePosition) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		EoiOffsetSourcePosition *pos = &(*positions)[i];
		bool		isnull;

		pos->topic = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 1));
		pos->partition = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		pos->source_name = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 3));
		pos->source_db = MemoryContextStrdup(caller, SPI_getvalue(tup, desc, 4));
		pos->commit_lsn = DatumGetLSN(SPI_getbinval(tup, desc, 5, &isnull));
		pos->lsn = DatumGetLSN(SPI_getbinval(tup, desc, 6, &isnull));
		pos->commit_time = DatumGetTimestampTz(SPI_getbinval(tup, desc, 7, &isnull));
		read_fingerprints(SPI_getbinval(tup, desc, 8, &isnull), isnull, caller, pos);
	}
	offsets_spi_end(&saved);
	return n;
}

/* Store the position of the last event applied from a source into a partition. */
void
eoi_offsets_store_source_position(const EoiJob *job, const EoiOffsetSourcePosition *position)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[9] = {TEXTOID, TEXTOID, INT4OID, TEXTOID, TEXTOID,
	PG_LSNOID, PG_LSNOID, TIMESTAMPTZOID, INT4ARRAYOID};
	Datum	   *events = palloc(sizeof(Datum) * Max(position->nevents, 1));
	Datum		args[9];
	EoiSavedUser saved;

	for (int i = 0; i < position->nevents; i++)
		events[i] = Int32GetDatum((int32) position->events[i]);
	args[0] = CStringGetTextDatum(job->name);
	args[1] = CStringGetTextDatum(position->topic);
	args[2] = Int32GetDatum(position->partition);
	args[3] = CStringGetTextDatum(position->source_name);
	args[4] = CStringGetTextDatum(position->source_db);
	args[5] = LSNGetDatum((XLogRecPtr) position->commit_lsn);
	args[6] = LSNGetDatum((XLogRecPtr) position->lsn);
	args[7] = TimestampTzGetDatum(position->commit_time);
	args[8] = PointerGetDatum(construct_array(events, position->nevents, INT4OID, 4, true, TYPALIGN_INT));

	offsets_spi_begin(&saved);
	offsets_plan(&plan,
				 "INSERT INTO eoingest.source_positions AS p"
				 "       (job, topic, \"partition\", source_name, source_db, commit_lsn, lsn, commit_time,"
				 "        last_events)"
				 " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
				 " ON CONFLICT (job, topic, \"partition\", source_name, source_db) DO UPDATE"
				 "   SET commit_lsn = excluded.commit_lsn, lsn = excluded.lsn,"
				 "       commit_time = excluded.commit_time, last_events = excluded.last_events,"
				 "       updated_at = pg_catalog.now()",
				 9, types);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not update eoingest.source_positions");
	offsets_spi_end(&saved);
}

/* Add n to a partition's counter, with the statement `sql` (planned once in *plan). */
static void
add_to_counter(SPIPlanPtr *plan, const char *sql, const EoiJob *job, const char *topic,
			   int32 partition, int64 n)
{
	Oid			types[4] = {TEXTOID, TEXTOID, INT4OID, INT8OID};
	Datum		args[4] = {CStringGetTextDatum(job->name), CStringGetTextDatum(topic),
	Int32GetDatum(partition), Int64GetDatum(n)};
	EoiSavedUser saved;

	offsets_spi_begin(&saved);
	offsets_plan(plan, sql, 4, types);
	if (SPI_execute_plan(*plan, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update eoingest.offsets");
	offsets_spi_end(&saved);
}

/* Add to a partition's count of change events skipped as sent again. */
void
eoi_offsets_add_replays_skipped(const EoiJob *job, const char *topic, int32 partition,
								int64 skipped)
{
	static SPIPlanPtr plan = NULL;

	add_to_counter(&plan,
				   "UPDATE eoingest.offsets SET replays_skipped = replays_skipped + $4"
				   " WHERE job = $1 AND topic = $2 AND \"partition\" = $3",
				   job, topic, partition, skipped);
}

/*
 * Add to a partition's count of rows that were new to their target and
 * took NULL for values their change did not carry.
 */
void
eoi_offsets_add_unchanged_nulled(const EoiJob *job, const char *topic, int32 partition,
								 int64 rows)
{
	static SPIPlanPtr plan = NULL;

	add_to_counter(&plan,
				   "UPDATE eoingest.offsets SET unchanged_nulled = unchanged_nulled + $4"
				   " WHERE job = $1 AND topic = $2 AND \"partition\" = $3",
				   job, topic, partition, rows);
}

/* The LSN of the last END the job committed from its transaction topic; 0: none. */
uint64
eoi_offsets_read_txn_end_lsn(const EoiJob *job, const char *txn_topic)
{
	EoiSavedUser saved;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2] = {CStringGetTextDatum(job->name), CStringGetTextDatum(txn_topic)};
	uint64		lsn = 0;

	offsets_spi_begin(&saved);
	if (SPI_execute_with_args("SELECT pg_catalog.max(source_lsn) FROM eoingest.offsets"
							  " WHERE job = $1 AND topic = $2",
							  2, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.offsets");
	if (SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			lsn = DatumGetLSN(d);
	}
	offsets_spi_end(&saved);
	return lsn;
}

/*
 * Keep the LSN of the last END committed, with the transaction topic's
 * offset.  Never lower: a batch may hold only ENDs sent again, of
 * transactions before the last one committed.
 */
void
eoi_offsets_store_txn_end_lsn(const EoiJob *job, const char *txn_topic, int32 partition,
							  uint64 lsn)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[4] = {TEXTOID, TEXTOID, INT4OID, PG_LSNOID};
	Datum		args[4] = {CStringGetTextDatum(job->name), CStringGetTextDatum(txn_topic),
	Int32GetDatum(partition), LSNGetDatum((XLogRecPtr) lsn)};
	EoiSavedUser saved;

	offsets_spi_begin(&saved);
	offsets_plan(&plan,
				 "UPDATE eoingest.offsets SET source_lsn = GREATEST(source_lsn, $4)"
				 " WHERE job = $1 AND topic = $2 AND \"partition\" = $3",
				 4, types);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update eoingest.offsets");
	if (SPI_processed != 1)
		elog(ERROR, "job \"%s\" has no offset for topic \"%s\" partition %d",
			 job->name, txn_topic, partition);
	offsets_spi_end(&saved);
}
