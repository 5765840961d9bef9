/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The per-database and per-role settings of a session.
 *
 * A session takes ALTER DATABASE/ROLE ... SET values when it starts and
 * never looks at them again.  That is right for a client, which reconnects;
 * a launcher or worker that waits because default_transaction_read_only is
 * on would wait forever for a RESET it cannot see.  So they note what the
 * catalog held when they started, compare while they wait, and start
 * afresh (a new session) once it changed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "settings.h"

/*
 * The settings of pg_db_role_setting that apply to a session of `roleid`
 * in this database, as one string (empty if none), in the caller's memory
 * context.  In a transaction.
 */
char *
eoi_session_settings(Oid roleid)
{
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(MyDatabaseId), ObjectIdGetDatum(roleid)};
	MemoryContext caller = CurrentMemoryContext;
	char	   *result;
	char	   *value;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT pg_catalog.string_agg(s.setdatabase::text OPERATOR(pg_catalog.||) '/'"
							  "  OPERATOR(pg_catalog.||) s.setrole::text OPERATOR(pg_catalog.||) ':'"
							  "  OPERATOR(pg_catalog.||) pg_catalog.array_to_string(s.setconfig, ','),"
							  "  ';' ORDER BY s.setdatabase, s.setrole)"
							  " FROM pg_catalog.pg_db_role_setting s"
							  " WHERE s.setdatabase OPERATOR(pg_catalog.=) ANY (ARRAY[0, $1]::pg_catalog.oid[])"
							  "   AND s.setrole OPERATOR(pg_catalog.=) ANY (ARRAY[0, $2]::pg_catalog.oid[])",
							  2, types, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not read pg_db_role_setting");
	value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	result = MemoryContextStrdup(caller, value ? value : "");
	SPI_finish();
	return result;
}
