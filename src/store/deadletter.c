/*-------------------------------------------------------------------------
 *
 * deadletter.c
 *	  Dead letters: a record that cannot be decoded or stored is kept in
 *	  eoingest.dead_letters, in the transaction that moves the offsets past
 *	  it, so that it is never dropped silently.  replay_dead_letters()
 *	  (replay.c) puts them through the job's write path again once the
 *	  cause is fixed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "store/deadletter.h"
#include "store/job.h"

/*
 * Keep one failed record, in the current transaction: once per position.
 * A record is read again after a restart when its offsets were not stored
 * yet (upsert and at_least_once store them after the data); its dead
 * letter then keeps its id and takes the latest error.  The writer makes
 * the record's row from its message (replay.c).
 */
void
eoi_dead_letter_insert(const EoiJob *job, const EoiDeadLetter *letter, ErrorData *edata)
{
	EoiSavedUser saved;
	Oid			types[11] = {TEXTOID, TEXTOID, INT4OID, INT8OID, BYTEAOID, BYTEAOID,
	TIMESTAMPTZOID, TEXTOID, TEXTOID, OIDOID, INT4OID};
	Datum		args[11];
	char		nulls[11] = "           ";

	args[0] = CStringGetTextDatum(job->name);
	args[1] = CStringGetTextDatum(letter->topic);
	args[2] = Int32GetDatum(letter->partition);
	args[3] = Int64GetDatum(letter->offset);
	args[4] = PointerGetDatum(letter->key);
	nulls[4] = letter->key ? ' ' : 'n';
	args[5] = PointerGetDatum(letter->value);
	nulls[5] = letter->value ? ' ' : 'n';
	args[6] = letter->timestamp;
	nulls[6] = letter->timestamp_isnull ? 'n' : ' ';
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
 * Whether job `job_id` keeps a dead letter with a key that no later record
 * of its key has superseded yet: only then does a write need to call
 * eoi_dead_letters_supersede.  It reads what this transaction wrote.
 */
bool
eoi_dead_letters_supersedable(int32 job_id)
{
	EoiSavedUser saved;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(job_id)};
	bool		found;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT 1 FROM eoingest.dead_letters"
							  " WHERE job_id = $1 AND key IS NOT NULL AND superseded_by IS NULL LIMIT 1",
							  1, types, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.dead_letters");
	found = SPI_processed > 0;
	SPI_finish();
	eoi_restore_user(&saved);
	return found;
}

/*
 * The job applied records (topic, partition, offset, key) i of n, in the
 * current transaction: each supersedes the job's dead letters of its key
 * from earlier in its partition, whose image is older than the one the
 * key now has.  A dead letter keeps the offset of the first record that
 * superseded it; replay_dead_letters skips it unless forced (replay.c).
 */
void
eoi_dead_letters_supersede(int32 job_id, int n, Datum *topics, Datum *partitions,
						   Datum *offsets, Datum *keys)
{
	EoiSavedUser saved;
	Oid			types[5] = {INT4OID, TEXTARRAYOID, INT4ARRAYOID, INT8ARRAYOID, BYTEAARRAYOID};
	Datum		args[5];

	if (n == 0)
		return;
	args[0] = Int32GetDatum(job_id);
	args[1] = PointerGetDatum(construct_array(topics, n, TEXTOID, -1, false, TYPALIGN_INT));
	args[2] = PointerGetDatum(construct_array(partitions, n, INT4OID, 4, true, TYPALIGN_INT));
	args[3] = PointerGetDatum(construct_array(offsets, n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	args[4] = PointerGetDatum(construct_array(keys, n, BYTEAOID, -1, false, TYPALIGN_INT));

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("UPDATE eoingest.dead_letters d SET superseded_by = m.o"
							  "  FROM (SELECT t, p, k, max(o) AS o"
							  "          FROM unnest($2, $3, $4, $5) AS u(t, p, o, k)"
							  "         GROUP BY t, p, k) m"
							  " WHERE d.job_id = $1 AND d.superseded_by IS NULL"
							  "   AND d.topic = m.t AND d.\"partition\" = m.p AND d.key = m.k"
							  "   AND d.\"offset\" < m.o",
							  5, types, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update eoingest.dead_letters");
	SPI_finish();
	eoi_restore_user(&saved);
}

/*
 * Delete at most `limit` dead letters, of any job, that failed more than
 * `retention_min` minutes ago (eoingest.dead_letter_retention), in the
 * current transaction; returns how many.
 */
int64
eoi_dead_letters_prune(int retention_min, int limit)
{
	EoiSavedUser saved;
	Oid			types[2] = {INT4OID, INT4OID};
	Datum		args[2] = {Int32GetDatum(retention_min), Int32GetDatum(limit)};
	int64		n;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("DELETE FROM eoingest.dead_letters WHERE id IN"
							  " (SELECT id FROM eoingest.dead_letters"
							  "   WHERE failed_at < pg_catalog.now() - pg_catalog.make_interval(mins => $1)"
							  "   LIMIT $2)",
							  2, types, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete from eoingest.dead_letters");
	n = (int64) SPI_processed;
	SPI_finish();
	eoi_restore_user(&saved);
	return n;
}
