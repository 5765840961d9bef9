/*-------------------------------------------------------------------------
 *
 * targetchanges.c
 *	  eoingest.target_changes: the CREATE TABLE and ALTER TABLE statements a
 *	  job ran on its targets, each with the topic and writer schema that
 *	  asked for it.  Written in the transaction of the statement, so that
 *	  the record and the change commit or roll back together.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "store/job.h"
#include "store/targetchanges.h"

void
eoi_target_change_record(const EoiJob *job, const char *topic, const char *target,
						 const char *schema, const char *statement)
{
	EoiSavedUser saved;
	Oid			types[7] = {TEXTOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID};
	Datum		args[7];

	args[0] = CStringGetTextDatum(job->name);
	args[1] = ObjectIdGetDatum(job->owner);
	args[2] = CStringGetTextDatum(topic);
	args[3] = CStringGetTextDatum(target);
	args[4] = CStringGetTextDatum(schema);
	args[5] = CStringGetTextDatum(statement);
	args[6] = Int32GetDatum(job->id);

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("INSERT INTO eoingest.target_changes (job, owner, topic, target, schema, statement, job_id)"
							  " VALUES ($1, $2, $3, $4, $5, $6, $7)",
							  7, types, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not insert into eoingest.target_changes");
	SPI_finish();
	eoi_restore_user(&saved);
}
