/*-------------------------------------------------------------------------
 *
 * api.c
 *	  The SQL-callable job functions that define a job: create_job and
 *	  alter_job.
 *
 * Every argument is checked (jobdef.c), with an error that says what to do, so
 * that a job that was created can run.  Start and stop only record what the
 * owner wants; the launcher, woken when the transaction commits, does it.
 *
 * start_job, stop_job and drop_job are in lifecycle.c, and the worker
 * status behind eoingest.job_status in jobstatus.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "api/api_internal.h"
#include "apply/evolve.h"
#include "apply/target.h"
#include "base/shmem.h"
#include "base/txn.h"
#include "format/decode.h"
#include "store/offsets.h"

/* create_target at create_job: one target, for one topic (evolve.c). */
typedef struct CreateNow
{
	const EoiJob *job;
	const char *topic;
	const char *target;
	bool		created;
} CreateNow;

static void
create_now(void *arg)
{
	CreateNow  *c = arg;

	c->created = eoi_evolve_create_now(c->job, c->topic, c->target);
}

/*
 * create_target: the job's missing targets are created now where the
 * registry already has a schema for their topic, so that they are there to
 * grant and look at before the first message; the others when it comes.
 * Not for a topic pattern (which topics it will match is not known).  A
 * registry that cannot be read now is said, and does not fail create_job.
 */
static void
create_targets_now(const char *name)
{
	EoiJob	   *job;
	bool		template;
	ListCell   *lc;

	/* the job as this command inserted it */
	CommandCounterIncrement();
	PushCopiedSnapshot(GetActiveSnapshot());
	UpdateActiveSnapshotCommandId();
	job = eoi_job_load_by_name(name);
	PopActiveSnapshot();

	/* change events: a table from the first event's after image */
	if (!job->create_target || job->target == NULL || job->topic_pattern != NULL ||
		job->envelope != EOI_ENVELOPE_NONE)
		return;
	template = eoi_target_is_template(job->target);
	foreach(lc, job->topics)
	{
		const char *topic = lfirst(lc);
		CreateNow	c = {job, topic, template ? eoi_target_for_topic(job->target, topic) : job->target, false};
		ErrorData  *edata;

		if (eoi_target_exists(c.target))
			continue;
		edata = eoi_try_subxact(create_now, &c);
		if (edata != NULL && (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
							  edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN))
			ReThrowError(edata);
		if (edata != NULL)
			ereport(NOTICE,
					(errmsg("target table %s is not created yet: %s", c.target, edata->message),
					 errdetail("The job creates it from the writer schema of the first message of topic \"%s\".", topic)));
		/* a registry that did not answer is not asked again for each topic */
		if (edata != NULL && ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_CONNECTION_EXCEPTION)
			break;
		if (edata == NULL && c.created)
			ereport(NOTICE,
					(errmsg("created target table %s from the schema registry's latest schema for topic \"%s\"",
							c.target, topic)));
		if (!template && c.created)
			break;
	}
}

PG_FUNCTION_INFO_V1(eoingest_create_job);

#define MAX_BATCH_SIZE 1000000
#define MAX_BATCH_TIMEOUT_MS 3600000
/* At most twice this in COPY text (escapes), well under MaxAllocSize. */
#define MAX_BATCH_BYTES (256 * 1024 * 1024)

Datum
eoingest_create_job(PG_FUNCTION_ARGS)
{
	JobDefinition def = {0};
	char	   *name = eoi_api_required_text(fcinfo, 0, "name");
	char	   *brokers = eoi_api_required_text(fcinfo, 1, "brokers");
	char	   *topic = eoi_api_required_text(fcinfo, 2, "topic");
	char	   *target = eoi_api_optional_target(fcinfo, 3);
	char	   *format_s = eoi_api_required_text(fcinfo, 4, "format");
	char	   *mode_s = eoi_api_required_text(fcinfo, 5, "mode");
	char	   *transform = eoi_api_optional_text(fcinfo, 6);
	char	   *start_offset = eoi_api_required_text(fcinfo, 7, "start_offset");
	int			batch_size = eoi_api_int_in_range(fcinfo, 8, "batch_size", 1, MAX_BATCH_SIZE);
	int			batch_timeout_ms = eoi_api_int_in_range(fcinfo, 9, "batch_timeout_ms", 1, MAX_BATCH_TIMEOUT_MS);
	int			parallelism = eoi_api_int_in_range(fcinfo, 10, "parallelism", 1,
											   Min(eoingest_max_workers, EOI_MAX_PARALLELISM_GIDS));
	Jsonb	   *options = PG_ARGISNULL(11) ? NULL : PG_GETARG_JSONB_P(11);
	char	   *on_error_s = eoi_api_required_text(fcinfo, 12, "on_error");
	int			checkpoint_interval_ms = eoi_api_int_in_range(fcinfo, 13, "checkpoint_interval_ms", 10, MAX_BATCH_TIMEOUT_MS);
	List	   *key_columns = PG_ARGISNULL(14) ? NIL : eoi_api_text_array_list(PG_GETARG_ARRAYTYPE_P(14), "key_columns");
	char	   *key_format_s = eoi_api_optional_text(fcinfo, 15);
	int			offset_commit_interval_ms = eoi_api_int_in_range(fcinfo, 16, "offset_commit_interval_ms", 10, MAX_BATCH_TIMEOUT_MS);
	int			max_message_bytes = eoi_api_int_in_range(fcinfo, 17, "max_message_bytes", 1, MaxAllocSize - VARHDRSZ);
	bool		commit_to_kafka = PG_NARGS() > 18 && !PG_ARGISNULL(18) && PG_GETARG_BOOL(18);
	ArrayType  *partitions = (PG_NARGS() > 19 && !PG_ARGISNULL(19)) ? PG_GETARG_ARRAYTYPE_P(19) : NULL;
	char	   *qualified_target;
	/* Called through an older definition, there is no batch_max_bytes: the column's default. */
	bool		v03 = PG_NARGS() > 20;
	int			batch_max_bytes = v03 ? eoi_api_int_in_range(fcinfo, 20, "batch_max_bytes", 1, MAX_BATCH_BYTES) : 0;
	/* Called through an older definition, there is no columns or timestamp_unit, ... */
	bool		v04 = PG_NARGS() > 22;
	List	   *columns = (v04 && !PG_ARGISNULL(21)) ?
		eoi_api_text_array_list(PG_GETARG_ARRAYTYPE_P(21), "columns") : NIL;
	char	   *timestamp_unit_s = v04 ? eoi_api_required_text(fcinfo, 22, "timestamp_unit") : "auto";
	/* ... nor envelope and on_truncate (before 0.4) */
	bool		v04_envelope = PG_NARGS() > 24;
	char	   *envelope_s = v04_envelope ? eoi_api_required_text(fcinfo, 23, "envelope") : "none";
	char	   *on_truncate_s = v04_envelope ? eoi_api_required_text(fcinfo, 24, "on_truncate") : "refuse";
	/* ... nor schema_registry */
	bool		v04_registry = PG_NARGS() > 25;
	char	   *schema_registry = v04_registry ? eoi_api_optional_text(fcinfo, 25) : NULL;
	/* ... nor targets and transactions (before 0.5) */
	bool		v04_txn = PG_NARGS() > 27;
	Jsonb	   *targets = (v04_txn && !PG_ARGISNULL(26)) ? PG_GETARG_JSONB_P(26) : NULL;
	char	   *transactions_s = v04_txn ? eoi_api_required_text(fcinfo, 27, "transactions") : "batch";
	/* ... nor cdc_mode and deleted_column (before 0.13) */
	bool		v13 = PG_NARGS() > 30;
	char	   *cdc_mode_s = v13 ? eoi_api_required_text(fcinfo, 28, "cdc_mode") : "apply";
	char	   *deleted_column = v13 ? eoi_api_optional_text(fcinfo, 29) : NULL;
	char	   *durability_s = v13 ? eoi_api_required_text(fcinfo, 30, "durability") : "sync";
	/* ... nor mapping (before 0.15) */
	bool		v15 = PG_NARGS() > 31;
	Jsonb	   *mapping = (v15 && !PG_ARGISNULL(31)) ? PG_GETARG_JSONB_P(31) : NULL;
	/* ... nor create_target and schema_changes (before 0.16) */
	bool		v16 = PG_NARGS() > 33;
	bool		create_target = v16 && !PG_ARGISNULL(32) && PG_GETARG_BOOL(32);
	char	   *schema_changes_s = v16 ? eoi_api_required_text(fcinfo, 33, "schema_changes") : "none";
	EoiSavedUser saved;
	/* The transform's names resolve as they do for the caller now. */
	const char *search_path = pstrdup(GetConfigOption("search_path", false, false));

	eoi_check_primary();
	eoi_api_check_database();
	def.name = name;
	def.owner = GetUserId();
	def.brokers = brokers;
	def.topic = topic;
	def.target = target;
	def.format_s = format_s;
	def.mode_s = mode_s;
	def.transform = transform;
	def.start_offset = start_offset;
	def.options = options;
	def.on_error_s = on_error_s;
	def.key_columns = key_columns;
	def.key_format_s = key_format_s;
	def.partitions = partitions;
	def.parallelism = parallelism;
	def.search_path = search_path ? search_path : "";
	def.columns = columns;
	def.timestamp_unit_s = timestamp_unit_s;
	def.envelope_s = envelope_s;
	def.on_truncate_s = on_truncate_s;
	def.schema_registry = schema_registry;
	def.targets = targets;
	def.transactions_s = transactions_s;
	def.cdc_mode_s = cdc_mode_s;
	def.deleted_column = deleted_column;
	def.durability_s = durability_s;
	def.mapping = mapping;
	def.create_target = create_target;
	def.schema_changes_s = schema_changes_s;
	eoi_api_check_definition(&def);
	qualified_target = (char *) def.qualified_target;
	key_columns = def.key_columns;
	key_format_s = (char *) def.key_format_s;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (eoi_api_job_exists(name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("eoingest job \"%s\" already exists", name),
				 errhint("Choose another name, or drop the existing job with eoingest.drop_job('%s').", name)));
	{
		Oid			types[36] = {TEXTOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
			TEXTOID, TEXTOID, INT4OID, INT4OID, INT4OID, JSONBOID, TEXTOID, INT4OID,
			TEXTARRAYOID, TEXTOID, INT4OID, TEXTOID, INT4OID, BOOLOID, INT4ARRAYOID, INT4OID,
			TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, JSONBOID, BOOLOID, TEXTOID};
		Datum		args[36];
		char		nulls[36];
		/* Called through the 0.1 definition, there is no commit_to_kafka. */
		bool		v02 = PG_NARGS() > 18;

		memset(nulls, ' ', sizeof(nulls));
		args[0] = CStringGetTextDatum(name);
		args[1] = ObjectIdGetDatum(saved.userid);
		args[2] = CStringGetTextDatum(brokers);
		args[3] = CStringGetTextDatum(topic);
		if (qualified_target)
			args[4] = CStringGetTextDatum(qualified_target);
		else
			nulls[4] = 'n';
		args[5] = CStringGetTextDatum(format_s);
		args[6] = CStringGetTextDatum(mode_s);
		if (transform)
			args[7] = CStringGetTextDatum(transform);
		else
			nulls[7] = 'n';
		args[8] = CStringGetTextDatum(start_offset);
		args[9] = Int32GetDatum(batch_size);
		args[10] = Int32GetDatum(batch_timeout_ms);
		args[11] = Int32GetDatum(parallelism);
		if (options)
			args[12] = JsonbPGetDatum(options);
		else
			args[12] = DirectFunctionCall1(jsonb_in, CStringGetDatum("{}"));
		args[13] = CStringGetTextDatum(search_path ? search_path : "");
		args[14] = Int32GetDatum(checkpoint_interval_ms);
		if (key_columns != NIL)
			args[15] = eoi_api_list_text_array(key_columns);
		else
			nulls[15] = 'n';
		args[16] = CStringGetTextDatum(key_format_s);
		args[17] = Int32GetDatum(offset_commit_interval_ms);
		args[18] = CStringGetTextDatum(on_error_s);
		args[19] = Int32GetDatum(max_message_bytes);
		args[20] = BoolGetDatum(commit_to_kafka);
		args[21] = partitions ? PointerGetDatum(partitions) : (Datum) 0;
		nulls[21] = partitions ? ' ' : 'n';
		args[22] = Int32GetDatum(batch_max_bytes);
		args[23] = columns != NIL ? eoi_api_list_text_array(columns) : (Datum) 0;
		nulls[23] = columns != NIL ? ' ' : 'n';
		args[24] = CStringGetTextDatum(timestamp_unit_s);
		args[25] = CStringGetTextDatum(envelope_s);
		args[26] = CStringGetTextDatum(on_truncate_s);
		args[27] = schema_registry ? CStringGetTextDatum(schema_registry) : (Datum) 0;
		nulls[27] = schema_registry ? ' ' : 'n';
		args[28] = def.qualified_targets ? JsonbPGetDatum(def.qualified_targets) : (Datum) 0;
		nulls[28] = def.qualified_targets ? ' ' : 'n';
		args[29] = CStringGetTextDatum(transactions_s);
		args[30] = CStringGetTextDatum(eoi_cdc_mode_name(def.cdc_mode));
		args[31] = def.deleted_column ? CStringGetTextDatum(def.deleted_column) : (Datum) 0;
		nulls[31] = def.deleted_column ? ' ' : 'n';
		args[32] = CStringGetTextDatum(durability_s);
		args[33] = mapping ? JsonbPGetDatum(mapping) : (Datum) 0;
		nulls[33] = mapping ? ' ' : 'n';
		args[34] = BoolGetDatum(create_target);
		args[35] = CStringGetTextDatum(schema_changes_s);

		if (SPI_execute_with_args(psprintf("INSERT INTO eoingest.jobs (name, owner, brokers, topic, target,"
										   " format, mode, transform, start_offset, batch_size, batch_timeout_ms,"
										   " parallelism, options, on_error, search_path, checkpoint_interval_ms,"
										   " key_columns, key_format, offset_commit_interval_ms, max_message_bytes%s%s%s%s%s%s%s%s%s)"
										   " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $19, $14, $15,"
										   "         $16, $17, $18, $20%s%s%s%s%s%s%s%s%s)",
										   v02 ? ", commit_to_kafka, partitions" : "", v03 ? ", batch_max_bytes" : "",
										   v04 ? ", columns, timestamp_unit" : "",
										   v04_envelope ? ", envelope, on_truncate" : "",
										   v04_registry ? ", schema_registry" : "",
										   v04_txn ? ", targets, transactions" : "",
										   v13 ? ", cdc_mode, deleted_column, durability" : "",
										   v15 ? ", mapping" : "",
										   v16 ? ", create_target, schema_changes" : "",
										   v02 ? ", $21, $22" : "", v03 ? ", $23" : "", v04 ? ", $24, $25" : "",
										   v04_envelope ? ", $26, $27" : "", v04_registry ? ", $28" : "",
										   v04_txn ? ", $29, $30" : "", v13 ? ", $31, $32, $33" : "",
										   v15 ? ", $34" : "", v16 ? ", $35, $36" : ""),
								  v16 ? 36 : v15 ? 34 : v13 ? 33 : v04_txn ? 30 : v04_registry ? 28 : v04_envelope ? 27 : v04 ? 25 : v03 ? 23 : v02 ? 22 : 20,
								  types, args, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into eoingest.jobs");
	}
	SPI_finish();
	eoi_restore_user(&saved);
	if (create_target)
		create_targets_now(name);
	PG_RETURN_VOID();
}

/* ---- alter_job ---- */

/*
 * Refuse to change `what` of a running job: its workers own partitions by
 * the number of workers and read the topics they were started with.
 */
static void
check_not_running(const EoiJob *job, const char *what)
{
	if (strcmp(job->state, "running") == 0 || eoi_job_has_slot(job->id, true))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("eoingest job \"%s\" is running: %s cannot change", job->name, what),
				 errhint("Stop it with eoingest.stop_job('%s'), alter it, then start it again.", job->name)));
}

/*
 * The topics job `name` has offsets in that `pattern` matches: those the
 * job keeps, a deleted topic's included, as the worker keeps them.
 */
static List *
stored_topics_matching(const char *name, const char *pattern)
{
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(name);
	List	   *topics = NIL;

	if (SPI_execute_with_args("SELECT DISTINCT topic FROM eoingest.offsets WHERE job = $1",
							  1, &type, &arg, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.offsets");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *topic = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);

		if (eoi_topic_matches(pattern, topic))
			topics = lappend(topics, topic);
	}
	return topics;
}

/*
 * Delete the offsets (and with them the source positions) of job `name`
 * in the topics that `topic` no longer names, or no longer matches: the
 * job reads them no more.
 * Inside the caller's SPI connection, as the extension.
 */
static void
forget_other_topics(const char *name, const char *topic)
{
	List	   *topics = eoi_split_topics(topic);
	Datum	   *elems;
	Oid			types[2] = {TEXTOID, TEXTARRAYOID};
	Datum		args[2];
	ListCell   *lc;

	if (eoi_topic_is_pattern(topic))
		topics = stored_topics_matching(name, linitial(topics));
	elems = palloc(sizeof(Datum) * Max(list_length(topics), 1));
	foreach(lc, topics)
		elems[foreach_current_index(lc)] = CStringGetTextDatum((const char *) lfirst(lc));
	args[0] = CStringGetTextDatum(name);
	args[1] = PointerGetDatum(construct_array(elems, list_length(topics), TEXTOID, -1, false, TYPALIGN_INT));
	if (SPI_execute_with_args("DELETE FROM eoingest.offsets WHERE job = $1 AND topic <> ALL ($2)",
							  2, types, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not delete from eoingest.offsets");
}

PG_FUNCTION_INFO_V1(eoingest_alter_job);

/* The stored definition of `job`, for alter_job to change. */
static JobDefinition
stored_definition(const EoiJob *job)
{
	JobDefinition def = {0};

	def.id = job->id;
	def.name = job->name;
	def.owner = job->owner;
	def.brokers = job->brokers;
	def.topic = job->topic;
	def.target = job->target;
	def.format_s = eoi_format_name(job->format);
	def.mode_s = eoi_mode_name(job->mode);
	def.transform = job->transform;
	def.start_offset = job->start_offset;
	def.options = job->options;
	def.on_error_s = eoi_on_error_name(job->on_error);
	def.key_columns = job->key_columns;
	def.key_format_s = eoi_format_name(job->key_format);
	if (job->partitions != NIL)
	{
		Datum	   *elems = palloc(sizeof(Datum) * list_length(job->partitions));
		ListCell   *lc;

		foreach(lc, job->partitions)
			elems[foreach_current_index(lc)] = Int32GetDatum(lfirst_int(lc));
		def.partitions = construct_array(elems, list_length(job->partitions), INT4OID, 4, true, TYPALIGN_INT);
	}
	def.parallelism = job->parallelism;
	def.search_path = job->search_path;
	def.running = strcmp(job->state, "running") == 0;
	def.columns = job->columns;
	def.timestamp_unit_s = eoi_timestamp_unit_name(job->timestamp_unit);
	def.envelope_s = eoi_envelope_name(job->envelope);
	def.on_truncate_s = job->cdc_truncate ? "truncate" : "refuse";
	def.schema_registry = job->schema_registry;
	def.targets = job->targets;
	def.transactions_s = eoi_transactions_name(job->source_transactions);
	def.cdc_mode_s = eoi_cdc_mode_name(job->cdc_mode);
	def.deleted_column = job->deleted_column;
	def.durability_s = job->durability_async ? "async" : "sync";
	def.mapping = job->mapping;
	def.create_target = job->create_target;
	def.schema_changes_s = eoi_schema_changes_name(job->schema_changes);
	return def;
}

/*
 * A job with committed offsets may gain source tables in its targets, but
 * not lose one or send it elsewhere: its offsets account for rows written
 * into those tables (as for target).
 */
static void
check_targets_kept(const EoiJob *job, Jsonb *targets)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *key = NULL;

	if (job->targets == NULL)
	{
		if (job->target != NULL && targets != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the target of job \"%s\" cannot change to targets: it has committed offsets", job->name),
					 errdetail("The stored offsets account for rows written into %s.", job->target),
					 errhint("Create a new job with targets, or drop this one.")));
		return;
	}
	it = JsonbIteratorInit(&job->targets->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		JsonbValue	now;

		if (tok == WJB_KEY)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			continue;
		}
		if (tok != WJB_VALUE)
			continue;
		if (targets == NULL ||
			getKeyJsonValueFromContainer(&targets->root, key, strlen(key), &now) == NULL ||
			now.type != jbvString || now.val.string.len != v.val.string.len ||
			memcmp(now.val.string.val, v.val.string.val, v.val.string.len) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the target of source table \"%s\" in job \"%s\" cannot change: the job has committed offsets", key, job->name),
					 errdetail("The stored offsets account for rows written into %.*s.", (int) v.val.string.len, v.val.string.val),
					 errhint("Keep every source table of targets with its target; adding source tables is allowed.")));
	}
}

/*
 * eoingest.alter_job(name, batch_size, ..., partitions): change what
 * is given (NULL keeps it; columns => '{}' goes back to the format's
 * default columns, key_columns => '{}' to the target's primary key).  The
 * definition that results is checked exactly as create_job checks one, as
 * the job's owner (check_definition), the transform with the job's
 * search_path.  A running job's workers are restarted by the launcher with
 * the new settings within a second (an open batch rolls back and is read
 * again, in the new format if that changed).  The offsets stay, whatever
 * changes: a new broker list must reach the same cluster (or a copy with
 * the same offsets).  The target and the mode of a job that has committed
 * offsets cannot change: the offsets account for rows in that table,
 * written with that mode's guarantee.  Only a target that no longer
 * exists under its stored name may be replaced (by the table's new name).
 */
Datum
eoingest_alter_job(PG_FUNCTION_ARGS)
{
	char	   *name;
	EoiJob	   *job;
	JobDefinition def;
	StringInfoData sql;
	Datum		args[33];
	Oid			types[33] = {TEXTOID, INT4OID, INT4OID, JSONBOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
		TEXTOID, TEXTARRAYOID, INT4OID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID,
		TEXTOID, TEXTOID, INT4OID, INT4OID, INT4OID, BOOLOID, TEXTOID, INT4OID, INT4ARRAYOID, TEXTOID, TEXTOID,
	TEXTOID, JSONBOID, BOOLOID, TEXTOID};
	char		nulls[33] = "                                 ";
	/* brokers ... partitions (0.12): eleven, 16 to 26 */
	bool		v12 = PG_NARGS() > 26;
	/* cdc_mode, deleted_column and durability (0.13): three after partitions */
	bool		v13 = PG_NARGS() > 29;
	/* mapping (0.15): the last one */
	bool		v15 = PG_NARGS() > 30;
	/* create_target and schema_changes (0.16): the last two */
	bool		v16 = PG_NARGS() > 32;
	/* what only a job that is not running may change: its topics, parallelism, partitions */
	bool		moves_partitions = v12 && (!PG_ARGISNULL(24) || !PG_ARGISNULL(25) || !PG_ARGISNULL(26));
	/* targets and transactions (0.5): the two before */
	bool		has_targets = PG_NARGS() > 14 && !PG_ARGISNULL(14);
	bool		has_transactions = PG_NARGS() > 15 && !PG_ARGISNULL(15);
	/* envelope and on_truncate, where the definition has them */
	bool		has_envelope = PG_NARGS() > 12;
	/* Called through an older definition, there is no batch_max_bytes. */
	bool		has_batch_max_bytes = PG_NARGS() > 8 && !PG_ARGISNULL(8);
	/* ... nor columns, nor timestamp_unit (argument 10) */
	bool		has_columns = PG_NARGS() > 9 && !PG_ARGISNULL(9);
	bool		has_timestamp_unit = PG_NARGS() > 10 && !PG_ARGISNULL(10);
	/* schema_registry: the last parameter */
	bool		has_schema_registry = PG_NARGS() > 13 && !PG_ARGISNULL(13);
	EoiSavedUser saved;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("name must not be null")));
	eoi_check_primary();
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	job = eoi_job_load_by_name(name);
	eoi_check_job_owner(name, job->owner);

	if (!PG_ARGISNULL(1))
		(void) eoi_api_int_in_range(fcinfo, 1, "batch_size", 1, MAX_BATCH_SIZE);
	if (!PG_ARGISNULL(2))
		(void) eoi_api_int_in_range(fcinfo, 2, "batch_timeout_ms", 1, MAX_BATCH_TIMEOUT_MS);
	if (has_batch_max_bytes)
		(void) eoi_api_int_in_range(fcinfo, 8, "batch_max_bytes", 1, MAX_BATCH_BYTES);
	/*
	 * A job whose target is gone (dropped, renamed, moved to another schema)
	 * may be pointed at another table: its offsets account for rows that
	 * are in the renamed table, or nowhere, as for a table created again.
	 */
	if ((!PG_ARGISNULL(6) || !PG_ARGISNULL(7)) && eoi_offsets_any(job) &&
		!(PG_ARGISNULL(7) && job->target != NULL && !eoi_target_is_template(job->target) &&
		  !eoi_target_exists(job->target)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the target and mode of job \"%s\" cannot change: it has committed offsets", name),
				 errdetail("The stored offsets account for rows written into %s in mode %s.",
						   job->target ? job->target : "its transform's tables", eoi_mode_name(job->mode)),
				 errhint("Create a new job (with start_offset, or reset_offsets, where it should begin), or drop this one.")));

	def = stored_definition(job);
	if (!PG_ARGISNULL(3))
		def.options = PG_GETARG_JSONB_P(3);
	if (!PG_ARGISNULL(4))
		def.transform = text_to_cstring(PG_GETARG_TEXT_PP(4));
	if (!PG_ARGISNULL(5))
		def.on_error_s = text_to_cstring(PG_GETARG_TEXT_PP(5));
	if (!PG_ARGISNULL(6))
		def.target = eoi_api_optional_target(fcinfo, 6);
	/* columns => '{}' goes back to the format's default columns */
	if (has_columns)
		def.columns = eoi_api_text_array_list(PG_GETARG_ARRAYTYPE_P(9), "columns");
	if (has_timestamp_unit)
		def.timestamp_unit_s = text_to_cstring(PG_GETARG_TEXT_PP(10));
	if (!PG_ARGISNULL(7))
	{
		def.mode_s = text_to_cstring(PG_GETARG_TEXT_PP(7));
		/* into upsert: the key's format follows the key, as at create_job */
		if (strcmp(def.mode_s, "upsert") == 0 && job->mode != EOI_MODE_UPSERT)
			def.key_format_s = NULL;
	}
	if (has_schema_registry)
		def.schema_registry = text_to_cstring(PG_GETARG_TEXT_PP(13));

	if (has_envelope && !PG_ARGISNULL(11))
	{
		def.envelope_s = text_to_cstring(PG_GETARG_TEXT_PP(11));
		/* the events' keys are JSON; back to none, the key is text again */
		if (strcmp(def.envelope_s, "none") == 0 && job->envelope != EOI_ENVELOPE_NONE &&
			def.mode_s != NULL && strcmp(def.mode_s, "upsert") == 0)
			def.key_format_s = NULL;
	}
	if (has_envelope && !PG_ARGISNULL(12))
		def.on_truncate_s = text_to_cstring(PG_GETARG_TEXT_PP(12));
	if (has_targets)
	{
		def.targets = PG_GETARG_JSONB_P(14);
		/* a target given replaces the targets; targets given replace the target */
		if (PG_ARGISNULL(6) && JsonContainerSize(&def.targets->root) > 0)
			def.target = NULL;
	}
	else if (!PG_ARGISNULL(6))
		def.targets = NULL;
	if (has_transactions)
		def.transactions_s = text_to_cstring(PG_GETARG_TEXT_PP(15));
	if (v12 && !PG_ARGISNULL(16))
		def.brokers = text_to_cstring(PG_GETARG_TEXT_PP(16));
	if (v12 && !PG_ARGISNULL(17))
		def.format_s = text_to_cstring(PG_GETARG_TEXT_PP(17));
	/* key_columns => '{}' goes back to the target's primary key */
	if (v12 && !PG_ARGISNULL(18))
		def.key_columns = eoi_api_text_array_list(PG_GETARG_ARRAYTYPE_P(18), "key_columns");
	if (v12 && !PG_ARGISNULL(19))
		def.key_format_s = text_to_cstring(PG_GETARG_TEXT_PP(19));
	if (v12 && !PG_ARGISNULL(20))
		(void) eoi_api_int_in_range(fcinfo, 20, "checkpoint_interval_ms", 10, MAX_BATCH_TIMEOUT_MS);
	if (v12 && !PG_ARGISNULL(21))
		(void) eoi_api_int_in_range(fcinfo, 21, "offset_commit_interval_ms", 10, MAX_BATCH_TIMEOUT_MS);
	if (v12 && !PG_ARGISNULL(22))
		(void) eoi_api_int_in_range(fcinfo, 22, "max_message_bytes", 1, MaxAllocSize - VARHDRSZ);
	if (moves_partitions)
		check_not_running(job, "its topics, parallelism or partitions");
	if (v12 && !PG_ARGISNULL(24))
		def.topic = text_to_cstring(PG_GETARG_TEXT_PP(24));
	if (v12 && !PG_ARGISNULL(25))
		def.parallelism = eoi_api_int_in_range(fcinfo, 25, "parallelism", 1,
											   Min(eoingest_max_workers, EOI_MAX_PARALLELISM_GIDS));
	/* partitions => '{}' goes back to every partition */
	if (v12 && !PG_ARGISNULL(26))
	{
		ArrayType  *parts = PG_GETARG_ARRAYTYPE_P(26);

		def.partitions = ArrayGetNItems(ARR_NDIM(parts), ARR_DIMS(parts)) > 0 ? parts : NULL;
	}

	if (v13 && !PG_ARGISNULL(27))
	{
		def.cdc_mode_s = text_to_cstring(PG_GETARG_TEXT_PP(27));
		/* out of soft_delete, the column goes; into it, the default comes */
		if (strcmp(def.cdc_mode_s, "soft_delete") != 0 || job->cdc_mode != EOI_CDC_SOFT_DELETE)
			def.deleted_column = NULL;
		/* history has no key; out of it, the target's primary key is the key */
		if ((strcmp(def.cdc_mode_s, "history") == 0) != (job->cdc_mode == EOI_CDC_HISTORY))
			def.key_columns = NIL;
	}
	if (v13 && !PG_ARGISNULL(28))
		def.deleted_column = text_to_cstring(PG_GETARG_TEXT_PP(28));
	if (v13 && !PG_ARGISNULL(29))
		def.durability_s = text_to_cstring(PG_GETARG_TEXT_PP(29));
	/* mapping => '{}' removes the mapping */
	if (v15 && !PG_ARGISNULL(30))
	{
		Jsonb	   *mapping = PG_GETARG_JSONB_P(30);

		def.mapping = (JB_ROOT_IS_OBJECT(mapping) && JB_ROOT_COUNT(mapping) == 0) ? NULL : mapping;
	}
	if (v16 && !PG_ARGISNULL(31))
		def.create_target = PG_GETARG_BOOL(31);
	if (v16 && !PG_ARGISNULL(32))
		def.schema_changes_s = text_to_cstring(PG_GETARG_TEXT_PP(32));

	/*
	 * Checked as the owner's worker will run it (target privileges), and as
	 * the owner: the caller may be a superuser, and planning the transform
	 * runs the owner's functions.
	 */
	eoi_become_job_owner(job, &saved);
	eoi_api_check_definition(&def);
	eoi_restore_user(&saved);
	if (has_targets && eoi_offsets_any(job))
		check_targets_kept(job, def.qualified_targets);

	args[0] = CStringGetTextDatum(name);
	for (int i = 1; i < 6; i++)
	{
		nulls[i] = PG_ARGISNULL(i) ? 'n' : ' ';
		args[i] = PG_ARGISNULL(i) ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	nulls[6] = def.qualified_target ? ' ' : 'n';
	args[6] = def.qualified_target ? CStringGetTextDatum(def.qualified_target) : (Datum) 0;
	args[7] = CStringGetTextDatum(def.mode_s);
	args[8] = CStringGetTextDatum(def.key_format_s);
	nulls[9] = def.key_columns != NIL ? ' ' : 'n';
	args[9] = def.key_columns != NIL ? eoi_api_list_text_array(def.key_columns) : (Datum) 0;
	nulls[10] = has_batch_max_bytes ? ' ' : 'n';
	args[10] = has_batch_max_bytes ? PG_GETARG_DATUM(8) : (Datum) 0;
	nulls[11] = def.columns != NIL ? ' ' : 'n';
	args[11] = def.columns != NIL ? eoi_api_list_text_array(def.columns) : (Datum) 0;
	args[12] = CStringGetTextDatum(def.timestamp_unit_s);
	args[13] = CStringGetTextDatum(def.envelope_s);
	args[14] = CStringGetTextDatum(def.on_truncate_s);
	nulls[15] = has_schema_registry ? ' ' : 'n';
	args[15] = has_schema_registry ? PG_GETARG_DATUM(13) : (Datum) 0;
	nulls[16] = def.qualified_targets ? ' ' : 'n';
	args[16] = def.qualified_targets ? JsonbPGetDatum(def.qualified_targets) : (Datum) 0;
	args[17] = CStringGetTextDatum(def.transactions_s);
	args[18] = CStringGetTextDatum(def.brokers);
	args[19] = CStringGetTextDatum(def.format_s);
	for (int i = 20; i < 24; i++)
	{
		nulls[i] = (!v12 || PG_ARGISNULL(i)) ? 'n' : ' ';
		args[i] = nulls[i] == 'n' ? (Datum) 0 : PG_GETARG_DATUM(i);
	}
	args[24] = CStringGetTextDatum(def.topic);
	args[25] = Int32GetDatum(def.parallelism);
	nulls[26] = def.partitions ? ' ' : 'n';
	args[26] = def.partitions ? PointerGetDatum(def.partitions) : (Datum) 0;
	args[27] = CStringGetTextDatum(eoi_cdc_mode_name(def.cdc_mode));
	nulls[28] = def.deleted_column ? ' ' : 'n';
	args[28] = def.deleted_column ? CStringGetTextDatum(def.deleted_column) : (Datum) 0;
	args[29] = CStringGetTextDatum(def.durability_s);
	nulls[30] = def.mapping ? ' ' : 'n';
	args[30] = def.mapping ? JsonbPGetDatum(def.mapping) : (Datum) 0;
	args[31] = BoolGetDatum(def.create_target);
	args[32] = CStringGetTextDatum(def.schema_changes_s);

	initStringInfo(&sql);
	appendStringInfoString(&sql,
						   "UPDATE eoingest.jobs SET"
						   " batch_size = coalesce($2, batch_size),"
						   " batch_timeout_ms = coalesce($3, batch_timeout_ms),"
						   " options = coalesce($4, options),"
						   " transform = coalesce($5, transform),"
						   " on_error = coalesce($6, on_error),"
						   " target = $7,"
						   " mode = $8,"
						   " key_format = $9,"
						   " key_columns = $10,"
						   " batch_max_bytes = coalesce($11, batch_max_bytes),"
						   " columns = $12,"
						   " timestamp_unit = $13,"
						   " envelope = $14,"
						   " on_truncate = $15,"
						   " schema_registry = coalesce($16, schema_registry),"
						   " targets = $17,"
						   " transactions = $18,"
						   " brokers = $19,"
						   " format = $20,"
						   " checkpoint_interval_ms = coalesce($21, checkpoint_interval_ms),"
						   " offset_commit_interval_ms = coalesce($22, offset_commit_interval_ms),"
						   " max_message_bytes = coalesce($23, max_message_bytes),"
						   " commit_to_kafka = coalesce($24, commit_to_kafka),"
						   " topic = $25,"
						   " parallelism = $26,"
						   " partitions = $27,"
						   " config_version = config_version + 1");
	/* through the 0.13 definition only: the extension has the columns */
	if (v13)
		appendStringInfoString(&sql, ", cdc_mode = $28, deleted_column = $29, durability = $30");
	if (v15)
		appendStringInfoString(&sql, ", mapping = $31");
	if (v16)
		appendStringInfoString(&sql, ", create_target = $32, schema_changes = $33");
	appendStringInfoString(&sql, " WHERE name = $1");
	/* a start_job between check_not_running and here is refused too */
	if (moves_partitions)
		appendStringInfoString(&sql, " AND state <> 'running'");
	appendStringInfoString(&sql, " RETURNING config_version, state = 'running'");
	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql.data, v16 ? 33 : v15 ? 31 : v13 ? 30 : 27, types, args, nulls, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "could not update eoingest.jobs");
	if (SPI_processed == 1)
	{
		bool		isnull;
		int32		config_version = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
		bool		running = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));

		/* what the caller does next meets the new definition */
		if (running)
			eoi_api_wait_for_workers_at_commit(job->id, name, config_version, "alter_job");
	}
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("eoingest job \"%s\" was started meanwhile: its topics, parallelism or partitions cannot change", name),
				 errhint("Stop it with eoingest.stop_job('%s'), alter it, then start it again.", name)));
	if (moves_partitions)
		forget_other_topics(name, def.topic);
	/* an altered job takes its targets as they are (shape.c) */
	if (SPI_execute_with_args("DELETE FROM eoingest.target_shapes s USING eoingest.jobs j"
							  " WHERE s.job_id = j.id AND j.name = $1",
							  1, types, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not update eoingest.target_shapes");
	SPI_finish();
	eoi_restore_user(&saved);
	eoi_api_wake_launcher_at_commit();
	PG_RETURN_VOID();
}
