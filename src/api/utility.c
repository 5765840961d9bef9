/*-------------------------------------------------------------------------
 *
 * utility.c
 *	  The utility hook: CREATE EXTENSION eoingest and ALTER EXTENSION
 *	  eoingest UPDATE have the database's launcher started when the
 *	  transaction commits, and DROP DATABASE (and the other commands that
 *	  need a database to themselves) first has the launcher of that
 *	  database stop its workers and leave.
 *
 * A database without the extension has no launcher (the cluster launcher
 * probed it and the launcher left).  Job functions ask for one when they
 * commit; this hook covers a database whose jobs arrive without any of them
 * being called, as a restored dump's do.
 *
 * DROP DATABASE, ALTER DATABASE ... RENAME and SET TABLESPACE, and CREATE
 * DATABASE ... TEMPLATE refuse while anyone is connected to the database,
 * and a database with the extension always has its launcher connected.  The
 * launcher asked to leave comes back after a few seconds if the database
 * is still there (the DROP failed or was rolled back).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "api/api_internal.h"
#include "base/pgcompat.h"
#include "base/shmem.h"

/* How long a command waits for the launcher and workers to leave. */
#define LEAVE_WAIT_MS 10000

static ProcessUtility_hook_type prev_utility_hook = NULL;

static bool
names_eoingest(Node *stmt)
{
	if (IsA(stmt, CreateExtensionStmt))
		return strcmp(((CreateExtensionStmt *) stmt)->extname, "eoingest") == 0;
	if (IsA(stmt, AlterExtensionStmt))
		return strcmp(((AlterExtensionStmt *) stmt)->extname, "eoingest") == 0;
	return false;
}

/*
 * Ask the launcher of the database `name` to stop its workers and leave,
 * and wait until they are gone (bounded: the command then says who is
 * still connected).
 */
static void
clear_database(const char *name)
{
	Oid			database;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), LEAVE_WAIT_MS);

	/* a command that will be refused in a transaction block: nothing to clear */
	if (name == NULL || eoi_shared == NULL || IsTransactionBlock())
		return;
	database = get_database_oid(name, true);
	/* only for whom the command can succeed: nobody else stops our jobs */
	if (!OidIsValid(database) || !eoi_owns_database(database, GetUserId()) ||
		!eoi_ask_to_leave(database))
		return;
	while (eoi_database_in_use(database) && GetCurrentTimestamp() < deadline)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 50, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* The value of option `name` of a CREATE or ALTER DATABASE, or NULL. */
static const char *
option_value(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *opt = lfirst(lc);

		if (strcmp(opt->defname, name) == 0 && opt->arg != NULL)
			return defGetString(opt);
	}
	return NULL;
}

/* Whether the current role may create databases, as RENAME and CREATE DATABASE need. */
static bool
may_create_databases(void)
{
	HeapTuple	tup = SearchSysCache1(AUTHOID, ObjectIdGetDatum(GetUserId()));
	bool		createdb = false;

	if (HeapTupleIsValid(tup))
	{
		createdb = ((Form_pg_authid) GETSTRUCT(tup))->rolcreatedb;
		ReleaseSysCache(tup);
	}
	return createdb || superuser();
}

/*
 * The database a command needs no one else connected to: DROP DATABASE's,
 * ALTER DATABASE's RENAME and SET TABLESPACE's, CREATE DATABASE's
 * template; NULL for other commands, and where the role lacks CREATEDB
 * that RENAME and CREATE DATABASE need.
 */
static const char *
database_to_clear(Node *stmt)
{
	if (IsA(stmt, DropdbStmt))
		return ((DropdbStmt *) stmt)->dbname;
	if (IsA(stmt, RenameStmt) && ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		return may_create_databases() ? ((RenameStmt *) stmt)->subname : NULL;
	if (IsA(stmt, AlterDatabaseStmt) &&
		option_value(((AlterDatabaseStmt *) stmt)->options, "tablespace") != NULL)
		return ((AlterDatabaseStmt *) stmt)->dbname;
	if (IsA(stmt, CreatedbStmt))
		return may_create_databases() ?
			option_value(((CreatedbStmt *) stmt)->options, "template") : NULL;
	return NULL;
}

static void
eoi_process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
					ProcessUtilityContext context, ParamListInfo params,
					QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	clear_database(database_to_clear(pstmt->utilityStmt));

	if (prev_utility_hook)
		prev_utility_hook(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);

	if (names_eoingest(pstmt->utilityStmt))
		eoi_api_wake_launcher_at_commit();
}

void
eoi_install_utility_hook(void)
{
	prev_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = eoi_process_utility;
}
