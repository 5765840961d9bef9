/*-------------------------------------------------------------------------
 *
 * lifecycle.c
 *	  start_job, stop_job, drop_job and rename_job: they record what the
 *	  owner wants, and the launcher, woken when the transaction commits,
 *	  does it; a committed stop_job waits for the job's workers to exit.
 *	  Also the job's owner by name, and the warning that the server has no
 *	  room for the job's workers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/builtins.h"

#include "api/api_internal.h"
#include "base/pgcompat.h"
#include "base/settings.h"
#include "base/shmem.h"
#include "base/txn.h"
#include "kafka/positions.h"
#include "store/deadletter.h"

PG_FUNCTION_INFO_V1(eoingest_start_job);
PG_FUNCTION_INFO_V1(eoingest_stop_job);
PG_FUNCTION_INFO_V1(eoingest_drop_job);
PG_FUNCTION_INFO_V1(eoingest_rename_job);

/* ---- at commit: waking the launcher, waiting for stopped jobs ---- */

/*
 * How long a committed stop_job waits for the job's workers to exit: the
 * launcher asks a worker to stop after its batch and terminates it after
 * two seconds (launcher.c); a worker stuck longer than this is named in a
 * warning.
 */
#define STOP_WAIT_MS 30000

static bool callback_registered = false;
static bool wake_pending = false;
/* What commit waits for, in TopMemoryContext: the workers of a job to exit. */
typedef struct PendingWait
{
	int32		job_id;
	int32		config_version; /* those started before it; PG_INT32_MAX: all */
	char	   *name;
	const char *function;		/* stop_job, alter_job */
} PendingWait;

static List *waits_pending = NIL;

/*
 * Wait until no worker of the jobs stopped in the transaction that has
 * just committed is attached to its slot, as reset_offsets and the other
 * functions of a stopped job require; for a job altered, until none that
 * runs the old definition is, so that what the caller does next meets the
 * new one (a message produced in the new format, read by a worker of the
 * old one, would be a dead letter).  The change has committed: nothing
 * here may raise an error.  A cancel ends the wait early (the workers
 * still stop); postmaster death ends the process.
 */
static void
wait_for_workers(List *waits)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), STOP_WAIT_MS);
	ListCell   *lc;

	foreach(lc, waits)
	{
		PendingWait *w = lfirst(lc);
		pid_t		pid;

		while ((pid = eoi_job_worker_pid(w->job_id, w->config_version)) != 0)
		{
			if (QueryCancelPending || ProcDiePending)
				return;
			if (GetCurrentTimestamp() >= deadline)
			{
				ereport(WARNING,
						(errmsg("worker %d of eoingest job \"%s\" has not exited %d s after %s",
								(int) pid, w->name, STOP_WAIT_MS / 1000, w->function),
						 errdetail("The change is committed; the worker exits when its current step ends."),
						 errhint("eoingest.job_status shows the worker until it has exited; pg_terminate_backend(%d) ends it now.",
								 (int) pid)));
				return;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 10, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
	}
}

static void
at_commit(XactEvent event, void *arg)
{
	List	   *waits = waits_pending;
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PARALLEL_COMMIT && event != XACT_EVENT_PARALLEL_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	waits_pending = NIL;
	if (event == XACT_EVENT_COMMIT && wake_pending)
		eoi_wake_launcher();
	wake_pending = false;
	/* a background process (a worker's transform) never waits: maybe for itself */
	if (event == XACT_EVENT_COMMIT && waits != NIL && !AmBackgroundWorkerProcess())
		wait_for_workers(waits);
	foreach(lc, waits)
		pfree(((PendingWait *) lfirst(lc))->name);
	list_free_deep(waits);
}

static void
register_callback(void)
{
	if (!callback_registered)
	{
		RegisterXactCallback(at_commit, NULL);
		callback_registered = true;
	}
}

void
eoi_api_wake_launcher_at_commit(void)
{
	register_callback();
	wake_pending = true;
}

/*
 * When the transaction commits, wait for the job's workers started with a
 * definition older than `config_version` (PG_INT32_MAX: all of them) to
 * exit; `function` names the caller in the warning of a wait too long.
 */
void
eoi_api_wait_for_workers_at_commit(int32 job_id, const char *name, int32 config_version,
								   const char *function)
{
	MemoryContext old;
	PendingWait *w;

	register_callback();
	old = MemoryContextSwitchTo(TopMemoryContext);
	w = palloc(sizeof(PendingWait));
	w->job_id = job_id;
	w->config_version = config_version;
	w->name = pstrdup(name);
	w->function = function;
	waits_pending = lappend(waits_pending, w);
	MemoryContextSwitchTo(old);
}

/* ---- start, stop, drop ---- */

/* The job's owner, or InvalidOid if there is no such job. */
Oid
eoi_api_find_job_owner(const char *name)
{
	EoiSavedUser saved;
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	Oid			owner = InvalidOid;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT owner FROM eoingest.jobs WHERE name = $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.jobs");
	if (SPI_processed == 1)
	{
		bool		isnull;

		owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	}
	SPI_finish();
	eoi_restore_user(&saved);
	return owner;
}

/* The job's owner, or an error that the job does not exist. */
static Oid
job_owner(const char *name)
{
	Oid			owner = eoi_api_find_job_owner(name);

	if (!OidIsValid(owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("eoingest job \"%s\" does not exist", name),
				 errhint("eoingest.job_status lists the jobs.")));
	return owner;
}

/* Run one statement on the catalog about job `name`, as the extension. */
static void
update_job(const char *sql, const char *name, const char *state)
{
	EoiSavedUser saved;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2] = {CStringGetTextDatum(name), CStringGetTextDatum(state ? state : "")};

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, state ? 2 : 1, types, args, NULL, false, 0) < 0)
		elog(ERROR, "could not update eoingest.jobs");
	SPI_finish();
	eoi_restore_user(&saved);
	eoi_api_wake_launcher_at_commit();
}

/*
 * Background workers running now that are not eoingest's: parallel
 * workers, logical replication, other extensions' workers.  They share
 * max_worker_processes with eoingest.  pg_stat_activity shows a background
 * worker with its own type; these are the types of the other processes
 * (17 adds the WAL summarizer and the slot sync worker, 18 the I/O workers,
 * none of which takes a background worker slot).
 */
static int
other_background_workers(void)
{
	bool		isnull;
	int64		n;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute("SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity"
					" WHERE backend_type OPERATOR(pg_catalog.<>) ALL (ARRAY['client backend',"
					" 'autovacuum launcher', 'autovacuum worker', 'background writer', 'checkpointer',"
					" 'archiver', 'startup', 'walreceiver', 'walsender', 'walwriter', 'standalone backend',"
					" 'walsummarizer', 'slotsync worker', 'io worker',"
					" 'eoingest cluster launcher', 'eoingest launcher', 'eoingest worker'])",
					true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not count the background workers");
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	return (int) n;
}

/*
 * The job's workers cannot all start now when the running jobs want more
 * eoingest worker slots (eoingest.max_workers) or more background worker
 * slots (max_worker_processes) than there are: warn.  start_job goes on;
 * the workers that do not fit wait, in state 'waiting' in job_status,
 * until slots are free.
 */
/*
 * What eoingest takes in the other databases: their jobs' worker slots, and
 * the launchers (the cluster's, and one per database with the extension,
 * this one's counted even before it started).
 */
static void
count_shared_use(int *elsewhere, int *launchers)
{
	EoiDbLauncher *mine;

	*elsewhere = 0;
	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	for (int i = 0; i < eoi_shared->nslots; i++)
		if (eoi_shared->slots[i].in_use && eoi_shared->slots[i].database != MyDatabaseId)
			(*elsewhere)++;
	mine = eoi_db_launcher(MyDatabaseId);
	*launchers = 1 + eoi_db_launchers_running() + (mine == NULL || mine->pid == 0 ? 1 : 0);
	LWLockRelease(eoi_shared->lock);
}

static void
warn_if_no_room(const EoiJob *job)
{
	int			here = (int) eoi_job_query_int("SELECT coalesce(sum(parallelism), 0)::int8 FROM eoingest.jobs"
											   " WHERE state = 'running' AND id <> $1",
											   job->id);
	int			elsewhere;
	int			launchers;
	int			others;
	int			free_slots;
	int			other_bgw;
	int			free_bgw;
	int			limit = eoi_role_worker_limit(job->owner);

	count_shared_use(&elsewhere, &launchers);
	others = here + elsewhere;
	free_slots = Max(eoingest_max_workers - others, 0);

	if (limit >= 0 && job->parallelism > limit)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("job \"%s\" wants %d workers, but its owner may run %d eoingest workers at once",
						job->name, job->parallelism, limit),
				 errdetail("eoingest.max_workers_per_role is %d for role \"%s\", for all of its jobs together. Workers over the limit wait in state \"waiting\".",
						   limit, GetUserNameFromId(job->owner, false)),
				 errhint("Lower the job's parallelism, or have a superuser raise the role's limit with ALTER ROLE ... SET eoingest.max_workers_per_role.")));

	if (free_slots < job->parallelism)
	{
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 free_slots == 0 ?
				 errmsg("no eoingest worker slot is free for job \"%s\"", job->name) :
				 errmsg_plural("job \"%s\" wants %d workers, but only %d eoingest worker slot is free",
							   "job \"%s\" wants %d workers, but only %d eoingest worker slots are free",
							   free_slots, job->name, job->parallelism, free_slots),
				 errdetail("Running jobs want %d workers in all; eoingest.max_workers is %d. Workers that do not fit wait in state \"waiting\" until slots are free.",
						   others + job->parallelism, eoingest_max_workers),
				 errhint("Raise eoingest.max_workers (and max_worker_processes with it) and restart the server, or stop another job.")));
		return;
	}

	/* the launchers take background worker slots too */
	other_bgw = other_background_workers();
	free_bgw = Max(max_worker_processes - other_bgw - launchers - others, 0);
	if (free_bgw < job->parallelism)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 free_bgw == 0 ?
				 errmsg("no background worker slot is free for job \"%s\"", job->name) :
				 errmsg_plural("job \"%s\" wants %d workers, but only %d background worker slot is free",
							   "job \"%s\" wants %d workers, but only %d background worker slots are free",
							   free_bgw, job->name, job->parallelism, free_bgw),
				 errdetail("max_worker_processes is %d: other background workers take %d, eoingest's launchers %d, the other running jobs want %d. Workers that do not fit wait in state \"waiting\" until slots are free.",
						   max_worker_processes, other_bgw, launchers, others),
				 errhint("Raise max_worker_processes and restart the server, or stop another job.")));
}

/*
 * start_job, stop_job and drop_job record what the owner wants; the
 * launcher, woken when the transaction commits, does it.  All idempotent.
 */
Datum
eoingest_start_job(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	EoiJob	   *job = eoi_job_load_by_name(name);

	eoi_check_primary();
	eoi_check_job_owner(name, job->owner);
	eoi_api_check_can_start(job);
	warn_if_no_room(job);
	/* a job started again takes its targets as they are (shape.c) */
	update_job("DELETE FROM eoingest.target_shapes s USING eoingest.jobs j"
			   " WHERE s.job_id = j.id AND j.name = $1 AND j.state <> 'running'",
			   name, NULL);
	update_job("UPDATE eoingest.jobs SET state = $2, last_error = NULL WHERE name = $1",
			   name, "running");
	PG_RETURN_VOID();
}

Datum
eoingest_stop_job(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));

	EoiJob	   *job;

	eoi_check_primary();
	eoi_check_job_owner(name, job_owner(name));
	job = eoi_job_load_by_name(name);
	update_job("UPDATE eoingest.jobs SET state = $2 WHERE name = $1 AND state = 'running'",
			   name, "stopped");
	eoi_api_wait_for_workers_at_commit(job->id, name, PG_INT32_MAX, "stop_job");
	PG_RETURN_VOID();
}

static void
delete_group(void *job)
{
	eoi_kafka_delete_group(job);
}

/*
 * Delete a dropped job's consumer group (eoi_kafka_delete_group), with a
 * warning rather than an error should even that fail (brokers no longer in
 * eoingest.allowed_brokers, options no longer allowed to its owner): the
 * group only mirrored the job, which must be droppable all the same.  A
 * cancel still cancels.
 */
static void
forget_consumer_group(const EoiJob *job)
{
	ErrorData  *edata = eoi_try_subxact(delete_group, (void *) job);

	if (edata == NULL)
		return;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
		ReThrowError(edata);
	ereport(WARNING,
			(errmsg("could not delete the Kafka consumer group of job \"%s\": %s",
					job->name, edata->message),
			 errhint("Delete it with kafka-consumer-groups --delete --group eoingest.%s.", job->name)));
}

Datum
eoingest_drop_job(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	EoiJob	   *job = eoi_job_load_by_name(name);
	int64		letters;

	eoi_check_primary();
	eoi_check_job_owner(name, job->owner);
	/* Its dead letters go with it (by job id: no later job inherits them). */
	letters = eoi_dead_letter_count(job->id);
	update_job("DELETE FROM eoingest.jobs WHERE name = $1", name, NULL);

	/*
	 * commit_to_kafka: the group goes too, or lag monitoring would report
	 * the job forever.  After the DELETE, which locks the job's offsets: a
	 * worker still running can commit no further batch, so none of its
	 * commits to the group follows, except one already on its way.
	 */
	if (job->commit_to_kafka)
		forget_consumer_group(job);
	if (letters > 0)
		ereport(NOTICE,
				(errmsg_plural("dropped " INT64_FORMAT " dead letter of job \"%s\"",
							   "dropped " INT64_FORMAT " dead letters of job \"%s\"",
							   (unsigned long) letters, letters, name)));
	PG_RETURN_VOID();
}

/*
 * eoingest.rename_job(name, new_name), for a job that is not running: its
 * offsets, source positions and watermarks follow by their foreign keys
 * (ON UPDATE CASCADE), everything else refers to the job by id; the job
 * column of its dead letters is renamed too.  With commit_to_kafka the
 * consumer group is named after the job: the new name's group starts at the
 * next commit, and the old one stays in Kafka until deleted (a NOTICE).
 */
Datum
eoingest_rename_job(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *new_name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	EoiJob	   *job;
	EoiSavedUser saved;
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2] = {CStringGetTextDatum(name), CStringGetTextDatum(new_name)};

	eoi_check_primary();
	eoi_check_job_owner(name, job_owner(name));
	job = eoi_job_load_by_name(name);
	if (new_name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job name must not be empty")));
	if (strlen(new_name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("job name \"%s\" is too long", new_name),
				 errdetail("A job name has at most %d bytes.", NAMEDATALEN - 1)));
	if (strcmp(job->state, "running") == 0 || eoi_job_has_slot(job->id, true))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("eoingest job \"%s\" is running", name),
				 errhint("Stop it first with eoingest.stop_job('%s'): its workers write its offsets by its name.", name)));

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (eoi_api_job_exists(new_name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("eoingest job \"%s\" already exists", new_name)));
	/* not running: a start_job between the check and here is refused too */
	if (SPI_execute_with_args("UPDATE eoingest.jobs SET name = $2 WHERE name = $1 AND state <> 'running'",
							  2, types, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update eoingest.jobs");
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("eoingest job \"%s\" was started meanwhile", name),
				 errhint("Stop it, then rename it.")));
	if (SPI_execute_with_args("UPDATE eoingest.dead_letters SET job = $2 WHERE job_id ="
							  " (SELECT id FROM eoingest.jobs WHERE name = $2)",
							  2, types, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update eoingest.dead_letters");
	if (eoi_jobs_have_column("create_target") &&
		SPI_execute_with_args("UPDATE eoingest.target_changes SET job = $2 WHERE job_id ="
							  " (SELECT id FROM eoingest.jobs WHERE name = $2)",
							  2, types, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update eoingest.target_changes");
	SPI_finish();
	eoi_restore_user(&saved);
	if (job->commit_to_kafka)
		ereport(NOTICE,
				(errmsg("the Kafka consumer group of job \"%s\" is now eoingest.%s, from its next commit on",
						new_name, new_name),
				 errhint("Delete the old group with kafka-consumer-groups --delete --group eoingest.%s.", name)));
	PG_RETURN_VOID();
}
