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
