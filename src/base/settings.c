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
 * The launcher also reads one setting for other roles than its own: the
 * number of workers a job owner's jobs may run at once.
 *
 * The variables behind eoingest's own settings are here too, so that every
 * layer can read them; _PG_init (eoingest.c) registers the settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "base/settings.h"

char	   *eoingest_database = NULL;
int			eoingest_max_workers = 32;
int			eoingest_max_workers_per_role = -1;
char	   *eoingest_fault_point = NULL;
int			eoingest_fault_action = EOI_FAULT_KILL;
int			eoingest_fault_sleep_ms = 5000;
int			eoingest_lock_timeout = 10000;
int			eoingest_dead_letter_retention = 0;
int			eoingest_test_batch_text_limit = 0;
bool		eoingest_test_avro_json_check = false;

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

/*
 * How many eoingest workers the jobs of `roleid` may run at once, -1 for
 * no limit: the role's eoingest.max_workers_per_role in this database,
 * else the role's in every database (ALTER ROLE ... [IN DATABASE ...]
 * SET), else the server's.  Superusers have no limit, as they have no
 * connection limit.  In a transaction.
 */
int
eoi_role_worker_limit(Oid roleid)
{
	Oid			types[2] = {OIDOID, OIDOID};
	Datum		args[2] = {ObjectIdGetDatum(MyDatabaseId), ObjectIdGetDatum(roleid)};
	int			limit = eoingest_max_workers_per_role;

	if (superuser_arg(roleid))
		return -1;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT pg_catalog.substr(c, pg_catalog.strpos(c, '=') OPERATOR(pg_catalog.+) 1)"
							  "  FROM pg_catalog.pg_db_role_setting s, pg_catalog.unnest(s.setconfig) c"
							  " WHERE s.setdatabase OPERATOR(pg_catalog.=) ANY (ARRAY[0, $1]::pg_catalog.oid[])"
							  "   AND s.setrole OPERATOR(pg_catalog.=) $2"
							  "   AND pg_catalog.lower(pg_catalog.split_part(c, '=', 1))"
							  "       OPERATOR(pg_catalog.=) 'eoingest.max_workers_per_role'"
							  " ORDER BY s.setdatabase DESC LIMIT 1",
							  2, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_db_role_setting");
	if (SPI_processed == 1)
	{
		char	   *value = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		int			n;

		/* ALTER ROLE checked it against the setting's range when it was set */
		if (value != NULL && parse_int(value, &n, 0, NULL) && n >= -1)
			limit = n;
	}
	SPI_finish();
	return limit;
}

/*
 * Whether jobs run in the database `name`: in every database when
 * eoingest.database is empty, else in those it lists, separated by commas,
 * each name as written (spaces around it aside).
 */
bool
eoi_database_served(const char *name)
{
	const char *p = eoingest_database;

	if (p == NULL)
		return true;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0')
		return true;
	while (*p != '\0')
	{
		const char *end = strchr(p, ',');
		size_t		len = end ? (size_t) (end - p) : strlen(p);

		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == strlen(name) && strncmp(p, name, len) == 0)
			return true;
		if (end == NULL)
			break;
		for (p = end + 1; *p == ' ' || *p == '\t'; p++)
			;
	}
	return false;
}
