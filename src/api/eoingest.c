/*-------------------------------------------------------------------------
 *
 * eoingest.c
 *	  Entry point of the library: settings, shared memory and utility hooks
 *	  and the cluster launcher's registration.  eoingest must be in
 *	  shared_preload_libraries.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "api/api_internal.h"
#include "apply/direct.h"
#include "apply/sink.h"
#include "apply/upsert.h"
#include "base/eoingest.h"
#include "base/jobstats.h"
#include "base/shmem.h"
#include "format/decodejson.h"
#include "format/jsonschema.h"
#include "kafka/policy.h"
#include "worker/cluster.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static int	eoingest_stall_after = 30000;

static const struct config_enum_entry json_decode_options[] = {
	{"scan", EOI_JSON_DECODE_SCAN, false},
	{"jsonb", EOI_JSON_DECODE_JSONB, false},
	{"scan_only", EOI_JSON_DECODE_SCAN_ONLY, false},
	{NULL, 0, false}
};

static const struct config_enum_entry json_schema_number_options[] = {
	{"double precision", EOI_JSON_NUMBER_DOUBLE, false},
	{"double", EOI_JSON_NUMBER_DOUBLE, true},
	{"numeric", EOI_JSON_NUMBER_NUMERIC, false},
	{NULL, 0, false}
};

static const struct config_enum_entry insert_path_options[] = {
	{"copy", EOI_INSERT_PATH_COPY, false},
	{"direct", EOI_INSERT_PATH_DIRECT, false},
	{NULL, 0, false}
};

static const struct config_enum_entry upsert_path_options[] = {
	{"bulk", EOI_UPSERT_PATH_BULK, false},
	{"on_conflict", EOI_UPSERT_PATH_ON_CONFLICT, false},
	{NULL, 0, false}
};

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
eoi_shmem_request_hook(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	eoi_shmem_request();
	eoi_job_stats_request();
}

static void
eoi_shmem_startup_hook(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	eoi_shmem_startup();
	eoi_job_stats_startup();
}

static const struct config_enum_entry fault_action_options[] = {
	{"kill", EOI_FAULT_KILL, false},
	{"error", EOI_FAULT_ERROR, false},
	{"sleep", EOI_FAULT_SLEEP, false},
	{NULL, 0, false}
};

static void
eoi_define_settings(void)
{
	DefineCustomStringVariable("eoingest.database",
							   "Databases whose eoingest jobs run; empty for every database.",
							   "Database names separated by commas, each as written. Jobs can only be created in these databases.",
							   &eoingest_database,
							   "",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("eoingest.max_workers",
							"Maximum number of eoingest workers running at once.",
							"Each takes a background worker slot too: raise max_worker_processes with it.",
							&eoingest_max_workers,
							32, 1, 1024,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	/*
	 * Read by the launcher, for each job's owner: ALTER ROLE ... SET gives a
	 * role its own limit (SUSET, so that only a superuser can), and the
	 * server's value is for every other role.
	 */
	DefineCustomIntVariable("eoingest.max_workers_per_role",
							"Maximum number of eoingest workers the jobs of one role run at once.",
							"-1 means no limit. Set per role with ALTER ROLE ... SET eoingest.max_workers_per_role; superusers' jobs have no limit.",
							&eoingest_max_workers_per_role,
							-1, -1, 1024,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("eoingest.lock_timeout",
							"Longest wait of a worker for a lock before it rolls back, reports and retries.",
							"A target locked by someone else shows in job_status instead of stalling silently. 0 waits forever.",
							&eoingest_lock_timeout,
							10000, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("eoingest.dead_letter_retention",
							"How long dead letters are kept before the launcher deletes them.",
							"Counted from when the record failed. 0 keeps them until they are replayed or discarded.",
							&eoingest_dead_letter_retention,
							0, 0, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MIN,
							NULL, NULL, NULL);

	DefineCustomIntVariable("eoingest.stall_after",
							"How long a worker's write may wait before job_status calls the worker stalled.",
							"job_status then shows what it waits on (synchronous replication, I/O, a lock).",
							&eoingest_stall_after,
							30000, 1, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomStringVariable("eoingest.allowed_brokers",
							   "Kafka brokers that jobs may connect to, as a comma-separated list of host:port patterns.",
							   "A host may be *, *.domain or a name or address; a port may be * or be left out for any port. Empty allows any broker.",
							   &eoingest_allowed_brokers,
							   "",
							   PGC_SIGHUP,
							   0,
							   eoi_allowed_brokers_check_hook, NULL, NULL);

	DefineCustomStringVariable("eoingest.fault_point",
							   "For tests: a named point at which eoingest processes kill themselves.",
							   "Empty (the default) disables fault injection.",
							   &eoingest_fault_point,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomEnumVariable("eoingest.fault_action",
							 "For tests: what a process does at eoingest.fault_point.",
							 "kill (SIGKILL itself), error (raise an error) or sleep (for eoingest.fault_sleep_ms).",
							 &eoingest_fault_action,
							 EOI_FAULT_KILL,
							 fault_action_options,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("eoingest.fault_sleep_ms",
							"For tests: how long fault_action sleep waits at the fault point.",
							NULL,
							&eoingest_fault_sleep_ms,
							5000, 0, 600000,
							PGC_SUSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("eoingest.test_batch_text_limit",
							"For tests: the size of a batch's COPY text past which it cannot grow.",
							"Stands in for the 1 GB a buffer can hold, so that tests need not fill one. 0 (the default) disables it.",
							&eoingest_test_batch_text_limit,
							0, 0, MaxAllocSize,
							PGC_SUSET,
							GUC_UNIT_BYTE | GUC_NOT_IN_SAMPLE,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("eoingest.test_avro_json_check",
							 "For tests: read each Avro record made JSON a second time, with Avro C, and compare.",
							 "A record whose two readings differ is an internal error. Off (the default) reads it once, from its bytes.",
							 &eoingest_test_avro_json_check,
							 false,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("eoingest.insert_path",
							 "How rows without a transform go into the target: direct (tuples) or copy (COPY's text).",
							 "direct builds tuples from the decoded fields when the target allows it (src/apply/direct.c says when) and uses COPY otherwise; copy always goes through COPY's text.",
							 &eoingest_insert_path,
							 EOI_INSERT_PATH_DIRECT, insert_path_options,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("eoingest.json_decode",
							 "How format json reads a message: scan (one pass into the columns) or jsonb (jsonb_in, then the keys).",
							 "scan reads the top-level object in one pass (src/format/jsonscan.c) and takes jsonb's way only for the messages it declines; jsonb always parses into jsonb first. Both give the same rows and errors; jsonb is there for the tests that show it, and so is scan_only (a message the scan declines is a record error).",
							 &eoingest_json_decode,
							 EOI_JSON_DECODE_SCAN, json_decode_options,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("eoingest.upsert_path",
							 "How mode upsert and envelope debezium write a batch's rows: bulk or on_conflict.",
							 "bulk looks the batch's keys up in the key's index, inserts the new rows as tuples and updates the existing ones in place when the target allows it (src/apply/upsertbulk.c says when), with INSERT ... ON CONFLICT for the whole batch as the fallback; on_conflict always uses INSERT ... ON CONFLICT.",
							 &eoingest_upsert_path,
							 EOI_UPSERT_PATH_BULK, upsert_path_options,
							 PGC_SUSET,
							 GUC_NOT_IN_SAMPLE,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("eoingest.json_schema_number",
							 "The column type create_target and schema_changes give a JSON Schema number: double precision or numeric.",
							 "A job takes it from its owner's settings in its database (ALTER ROLE ... IN DATABASE ... SET). numeric keeps every digit a number has; double precision keeps about 15.",
							 &eoingest_json_schema_number,
							 EOI_JSON_NUMBER_DOUBLE, json_schema_number_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	MarkGUCPrefixReserved("eoingest");
}

static void
eoi_register_cluster_launcher(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "eoingest");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "eoingest_cluster_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "eoingest cluster launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "eoingest cluster launcher");
	RegisterBackgroundWorker(&worker);
}

void
_PG_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("eoingest must be loaded via shared_preload_libraries"),
				 errhint("Add 'eoingest' to shared_preload_libraries in postgresql.conf and restart the server.")));

	eoi_define_settings();

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = eoi_shmem_request_hook;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = eoi_shmem_startup_hook;

	eoi_install_utility_hook();
	eoi_register_cluster_launcher();
}
