/*-------------------------------------------------------------------------
 *
 * job.c
 *	  Job definitions: reading a row of eoingest.jobs, and the names of
 *	  modes, formats, error policies, envelopes and transaction settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/value.h"
#include "regex/regex.h"
#include "utils/array.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "store/job.h"

/* A Debezium transaction topic's name ends so (source_transactions). */
#define TXN_TOPIC_SUFFIX ".transaction"

static const char *const mode_names[] = {
	[EOI_MODE_EXACTLY_ONCE] = "exactly_once",
	[EOI_MODE_TWO_PHASE] = "two_phase",
	[EOI_MODE_UPSERT] = "upsert",
	[EOI_MODE_AT_LEAST_ONCE] = "at_least_once",
	[EOI_MODE_AT_MOST_ONCE] = "at_most_once",
};

static const char *const format_names[] = {
	[EOI_FORMAT_TEXT] = "text",
	[EOI_FORMAT_CSV] = "csv",
	[EOI_FORMAT_JSON] = "json",
	[EOI_FORMAT_AVRO] = "avro",
	[EOI_FORMAT_PROTOBUF] = "protobuf",
};

static const char *const on_error_names[] = {
	[EOI_ON_ERROR_FAIL] = "fail",
	[EOI_ON_ERROR_DEAD_LETTER] = "dead_letter",
};

static const char *const timestamp_unit_names[] = {
	[EOI_TS_AUTO] = "auto",
	[EOI_TS_SECONDS] = "seconds",
	[EOI_TS_MILLISECONDS] = "milliseconds",
	[EOI_TS_MICROSECONDS] = "microseconds",
	[EOI_TS_NANOSECONDS] = "nanoseconds",
};

static int
lookup_name(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

EoiMode
eoi_parse_mode(const char *mode)
{
	int			i = lookup_name(mode_names, lengthof(mode_names), mode);

	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized mode \"%s\"", mode),
				 errhint("Choose one of exactly_once, two_phase, upsert, at_least_once, at_most_once.")));
	return (EoiMode) i;
}

const char *
eoi_mode_name(EoiMode mode)
{
	return mode_names[mode];
}

const char *
eoi_format_name(EoiFormat format)
{
	return format_names[format];
}

const char *
eoi_on_error_name(EoiOnError on_error)
{
	return on_error_names[on_error];
}

EoiFormat
eoi_parse_format(const char *format)
{
	int			i = lookup_name(format_names, lengthof(format_names), format);

	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized format \"%s\"", format),
				 errhint("Choose one of text, csv, json, avro, protobuf.")));
	return (EoiFormat) i;
}

EoiOnError
eoi_parse_on_error(const char *on_error)
{
	int			i = lookup_name(on_error_names, lengthof(on_error_names), on_error);

	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized on_error policy \"%s\"", on_error),
				 errhint("Choose fail (stop the job on a bad record) or dead_letter.")));
	return (EoiOnError) i;
}

EoiTimestampUnit
eoi_parse_timestamp_unit(const char *unit)
{
	int			i = lookup_name(timestamp_unit_names, lengthof(timestamp_unit_names), unit);

	if (i < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized timestamp_unit \"%s\"", unit),
				 errhint("Choose one of auto, seconds, milliseconds, microseconds, nanoseconds.")));
	return (EoiTimestampUnit) i;
}

const char *
eoi_timestamp_unit_name(EoiTimestampUnit unit)
{
	return timestamp_unit_names[unit];
}

EoiEnvelope
eoi_parse_envelope(const char *envelope)
{
	if (strcmp(envelope, "none") == 0)
		return EOI_ENVELOPE_NONE;
	if (strcmp(envelope, "debezium") == 0)
		return EOI_ENVELOPE_DEBEZIUM;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized envelope \"%s\"", envelope),
			 errhint("Choose none (each message is a row) or debezium (each message is a change event).")));
}

const char *
eoi_envelope_name(EoiEnvelope envelope)
{
	return envelope == EOI_ENVELOPE_DEBEZIUM ? "debezium" : "none";
}

EoiCdcMode
eoi_parse_cdc_mode(const char *cdc_mode)
{
	if (strcmp(cdc_mode, "apply") == 0)
		return EOI_CDC_APPLY;
	if (strcmp(cdc_mode, "history") == 0)
		return EOI_CDC_HISTORY;
	if (strcmp(cdc_mode, "soft_delete") == 0)
		return EOI_CDC_SOFT_DELETE;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized cdc_mode \"%s\"", cdc_mode),
			 errhint("Choose apply (the target holds the source's rows), history (every change appended as a row) or soft_delete (a delete marks the row).")));
}

const char *
eoi_cdc_mode_name(EoiCdcMode cdc_mode)
{
	switch (cdc_mode)
	{
		case EOI_CDC_HISTORY:
			return "history";
		case EOI_CDC_SOFT_DELETE:
			return "soft_delete";
		default:
			return "apply";
	}
}

/* durability: true for 'async', false for 'sync'. */
bool
eoi_parse_durability(const char *durability)
{
	if (strcmp(durability, "sync") == 0)
		return false;
	if (strcmp(durability, "async") == 0)
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized durability \"%s\"", durability),
			 errhint("Choose sync (each batch's commit waits for its WAL flush) or async (it does not; a crash loses the last batches' rows and offsets together, and the job reads them again).")));
}

EoiSchemaChanges
eoi_parse_schema_changes(const char *schema_changes)
{
	if (strcmp(schema_changes, "none") == 0)
		return EOI_SCHEMA_CHANGES_NONE;
	if (strcmp(schema_changes, "add_columns") == 0)
		return EOI_SCHEMA_CHANGES_ADD_COLUMNS;
	if (strcmp(schema_changes, "widen") == 0)
		return EOI_SCHEMA_CHANGES_WIDEN;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized schema_changes \"%s\"", schema_changes),
			 errhint("Choose none (the target stays as it is), add_columns (a field the target lacks becomes a nullable column) or widen (also the safe widenings of a column's type).")));
}

const char *
eoi_schema_changes_name(EoiSchemaChanges schema_changes)
{
	switch (schema_changes)
	{
		case EOI_SCHEMA_CHANGES_ADD_COLUMNS:
			return "add_columns";
		case EOI_SCHEMA_CHANGES_WIDEN:
			return "widen";
		default:
			return "none";
	}
}

/* on_truncate: true for 'truncate', false for 'refuse'. */
bool
eoi_parse_on_truncate(const char *on_truncate)
{
	if (strcmp(on_truncate, "refuse") == 0)
		return false;
	if (strcmp(on_truncate, "truncate") == 0)
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized on_truncate \"%s\"", on_truncate),
			 errhint("Choose refuse (a truncate event is a bad record) or truncate (it truncates the target).")));
}

bool
eoi_parse_transactions(const char *transactions)
{
	if (strcmp(transactions, "batch") == 0)
		return false;
	if (strcmp(transactions, "source") == 0)
		return true;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized transactions \"%s\"", transactions),
			 errhint("Choose batch (commits at batch boundaries) or source (commits at the source's transaction boundaries, from Debezium's transaction topic).")));
}

const char *
eoi_transactions_name(bool source)
{
	return source ? "source" : "batch";
}

/* The job's topic whose name ends in ".transaction", or NULL. */
char *
eoi_transaction_topic(List *topics)
{
	ListCell   *lc;
	size_t		slen = strlen(TXN_TOPIC_SUFFIX);

	foreach(lc, topics)
	{
		char	   *t = lfirst(lc);
		size_t		len = strlen(t);

		if (len > slen && strcmp(t + len - slen, TXN_TOPIC_SUFFIX) == 0)
			return t;
	}
	return NULL;
}

/*
 * Run as the bootstrap superuser, with search_path pg_catalog only: the
 * statements eoingest runs on its own tables must not resolve a function or
 * operator that the caller (or a job owner) put on their search_path.
 */
void
eoi_become_extension_owner(EoiSavedUser *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(BOOTSTRAP_SUPERUSERID,
						   saved->sec_context | SECURITY_LOCAL_USERID_CHANGE);
	saved->guc_nest_level = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Act for the job's owner, as its worker does: the owner's rights, the
 * job's search_path, and SECURITY_RESTRICTED_OPERATION, so that code the
 * owner wrote (triggers, the transform) cannot change the session it runs
 * in for a caller with more rights than the owner.
 */
void
eoi_become_job_owner(const EoiJob *job, EoiSavedUser *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(job->owner,
						   saved->sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	saved->guc_nest_level = NewGUCNestLevel();
	(void) set_config_option("search_path", job->search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Back to the saved user, with every setting as it was before the switch.
 * The code run meanwhile (the owner's triggers, transform, defaults, casts)
 * may have changed any setting its role may change, with SET or
 * set_config(..., false); AtEOXact_GUC(false, ...) discards those changes,
 * as PostgreSQL does after running code for a table's owner (index builds,
 * VACUUM, REFRESH MATERIALIZED VIEW).  Keeping them would hand the owner's
 * search_path, or any other setting, to a caller with more rights.
 */
void
eoi_restore_user(EoiSavedUser *saved)
{
	AtEOXact_GUC(false, saved->guc_nest_level);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}

/*
 * Jobs run on the primary only (the launcher starts once recovery has
 * finished): on a hot standby the job functions refuse, rather than fail
 * later with "cannot execute UPDATE in a read-only transaction".
 */
void
eoi_check_primary(void)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("eoingest jobs are managed on the primary"),
				 errdetail("This server is a standby: its jobs do not run here, they resume by themselves when it is promoted."),
				 errhint("Connect to the primary server to create, start, stop, alter or drop jobs.")));
}

/*
 * Only the job's owner, a member of the owner's role, or a superuser may
 * steer a job; only a superuser may steer a superuser's job.
 */
bool
eoi_may_steer_job(Oid owner)
{
	return superuser() || (!superuser_arg(owner) && has_privs_of_role(GetUserId(), owner));
}

/* The error of eoi_may_steer_job() refusing the current role. */
void
eoi_check_job_owner(const char *name, Oid owner)
{
	if (!eoi_may_steer_job(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of eoingest job \"%s\"", name),
				 errhint("Ask the job's owner or a superuser.")));
}

/*
 * One bigint that `sql`, a query on eoingest's own tables with the job id
 * as $1, returns, read as the extension's owner (a count, a sum).
 */
int64
eoi_job_query_int(const char *sql, int32 job_id)
{
	EoiSavedUser saved;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(job_id)};
	bool		isnull;
	int64		n;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql, 1, types, args, NULL, true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "could not run \"%s\"", sql);
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	eoi_restore_user(&saved);
	return n;
}

static char *
text_column(HeapTuple tup, TupleDesc desc, int col, MemoryContext cxt)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	if (isnull)
		return NULL;
	return MemoryContextStrdup(cxt, TextDatumGetCString(d));
}

/*
 * Is `topic` (create_job's) a pattern?  One that begins with '^' is a
 * regular expression, the spelling librdkafka's subscriptions use.
 */
bool
eoi_topic_is_pattern(const char *topic)
{
	return topic[strspn(topic, " \t")] == '^';
}

/*
 * Does topic `name` match `pattern`?  A POSIX regular expression in
 * PostgreSQL's advanced syntax (as the ~ operator reads it, in the "C"
 * collation), found anywhere in the name unless anchored, as librdkafka
 * matches its subscription patterns.  Kafka's internal topics
 * (__consumer_offsets, ...) match only a pattern that begins with "^__".
 */
bool
eoi_topic_matches(const char *pattern, const char *name)
{
	if (strncmp(name, "__", 2) == 0 && strncmp(pattern, "^__", 3) != 0)
		return false;
	return RE_compile_and_execute(cstring_to_text(pattern), unconstify(char *, name), strlen(name),
								  REG_ADVANCED, C_COLLATION_OID, 0, NULL);
}

/* `s` without its leading and trailing spaces and tabs, cut in place. */
static char *
trim_blanks(char *s)
{
	char	   *end;

	s += strspn(s, " \t");
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	return s;
}

/*
 * "a, b,c" as the list of topic names a, b, c (empty names dropped); a
 * pattern, commas and all, as a list of itself.
 */
List *
eoi_split_topics(const char *topic)
{
	List	   *topics = NIL;
	char	   *copy = pstrdup(topic);
	char	   *save = NULL;

	if (eoi_topic_is_pattern(topic))
		return list_make1(trim_blanks(copy));

	for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save))
	{
		t = trim_blanks(t);
		if (*t != '\0')
			topics = lappend(topics, pstrdup(t));
	}
	return topics;
}

/* A text[] as a List of String, in `cxt`. */
static List *
text_array_to_list(Datum d, bool isnull, MemoryContext cxt)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *result = NIL;
	MemoryContext old;

	if (isnull)
		return NIL;
	deconstruct_array(DatumGetArrayTypeP(d), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	old = MemoryContextSwitchTo(cxt);
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			result = lappend(result, makeString(TextDatumGetCString(elems[i])));
	MemoryContextSwitchTo(old);
	return result;
}

/*
 * Does eoingest.jobs have column `name`?  The library is the newest
 * version, the installed extension may be older until ALTER EXTENSION
 * UPDATE: jobs are read (start_job, stop_job, job_status) but not run then.
 */
bool
eoi_jobs_have_column(const char *name)
{
	Oid			nsp = get_namespace_oid("eoingest", true);
	Oid			relid = OidIsValid(nsp) ? get_relname_relid("jobs", nsp) : InvalidOid;

	return OidIsValid(relid) && get_attnum(relid, name) != InvalidAttrNumber;
}

/*
 * Read job `job_id`, allocated in the caller's memory context.  Must be
 * called inside a transaction with a snapshot.  Returns NULL when the job
 * does not exist and missing_ok.
 */
static EoiJob *job_load(const char *where, Oid argtype, Datum arg);

EoiJob *
eoi_job_load(int32 job_id, bool missing_ok)
{
	EoiJob	   *job = job_load("id = $1", INT4OID, Int32GetDatum(job_id));

	if (job == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("eoingest job %d does not exist", job_id)));
	return job;
}

/* Job `name`, or an error that says so. */
EoiJob *
eoi_job_load_by_name(const char *name)
{
	EoiJob	   *job = job_load("name = $1", TEXTOID, CStringGetTextDatum(name));

	if (job == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("eoingest job \"%s\" does not exist", name),
				 errhint("eoingest.job_status lists the jobs.")));
	return job;
}

static EoiJob *
job_load(const char *where, Oid argtype, Datum arg)
{
	MemoryContext cxt = CurrentMemoryContext;
	EoiSavedUser saved;
	EoiJob	   *job = NULL;
	Oid			argtypes[1] = {argtype};
	Datum		args[1] = {arg};
	char	   *sql;
	int			ret;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	sql = psprintf("SELECT id, name, owner, brokers, topic, target, format, mode,"
				   "       transform, start_offset, batch_size, batch_timeout_ms,"
				   "       parallelism, options, on_error, search_path, state, checkpoint_interval_ms,"
				   "       key_columns, key_format, offset_commit_interval_ms, max_message_bytes,"
				   "       commit_to_kafka, partitions, config_version, batch_max_bytes,"
				   "       columns, timestamp_unit, envelope, on_truncate, schema_registry,"
				   "       targets, transactions, %s, %s, %s"
				   "  FROM eoingest.jobs WHERE %s",
				   /* before 0.13, 0.15, 0.16: their defaults */
				   eoi_jobs_have_column("durability") ? "cdc_mode, deleted_column, durability" :
				   "'apply', NULL::text, 'sync'",
				   eoi_jobs_have_column("mapping") ? "mapping" : "NULL::jsonb",
				   eoi_jobs_have_column("create_target") ? "create_target, schema_changes" :
				   "false, 'none'", where);
	ret = SPI_execute_with_args(sql, 1, argtypes, args, NULL, true, 1);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.jobs: %s", SPI_result_code_string(ret));

	if (SPI_processed == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;

		job = MemoryContextAllocZero(cxt, sizeof(EoiJob));
		job->id = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		job->name = text_column(tup, desc, 2, cxt);
		job->owner = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		job->brokers = text_column(tup, desc, 4, cxt);
		job->topic = text_column(tup, desc, 5, cxt);
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			job->topics = eoi_split_topics(job->topic);
			if (eoi_topic_is_pattern(job->topic))
			{
				/* the worker reads the topics it matches: see partitions.c */
				job->topic_pattern = linitial(job->topics);
				job->topics = NIL;
			}
			MemoryContextSwitchTo(old);
		}
		job->target = text_column(tup, desc, 6, cxt);
		job->format = eoi_parse_format(text_column(tup, desc, 7, cxt));
		job->mode = eoi_parse_mode(text_column(tup, desc, 8, cxt));
		job->transform = text_column(tup, desc, 9, cxt);
		job->start_offset = text_column(tup, desc, 10, cxt);
		job->batch_size = DatumGetInt32(SPI_getbinval(tup, desc, 11, &isnull));
		job->batch_timeout_ms = DatumGetInt32(SPI_getbinval(tup, desc, 12, &isnull));
		job->parallelism = DatumGetInt32(SPI_getbinval(tup, desc, 13, &isnull));
		{
			Datum		d = SPI_getbinval(tup, desc, 14, &isnull);
			MemoryContext old = MemoryContextSwitchTo(cxt);

			job->options = DatumGetJsonbPCopy(d);
			MemoryContextSwitchTo(old);
		}
		job->on_error = eoi_parse_on_error(text_column(tup, desc, 15, cxt));
		job->search_path = text_column(tup, desc, 16, cxt);
		job->state = text_column(tup, desc, 17, cxt);
		job->checkpoint_interval_ms = DatumGetInt32(SPI_getbinval(tup, desc, 18, &isnull));
		{
			Datum		keys = SPI_getbinval(tup, desc, 19, &isnull);

			job->key_columns = text_array_to_list(keys, isnull, cxt);
		}
		job->key_format = eoi_parse_format(text_column(tup, desc, 20, cxt));
		job->offset_commit_interval_ms = DatumGetInt32(SPI_getbinval(tup, desc, 21, &isnull));
		job->max_message_bytes = DatumGetInt32(SPI_getbinval(tup, desc, 22, &isnull));
		job->commit_to_kafka = DatumGetBool(SPI_getbinval(tup, desc, 23, &isnull));
		job->batch_max_bytes = DatumGetInt32(SPI_getbinval(tup, desc, 26, &isnull));
		{
			Datum		d = SPI_getbinval(tup, desc, 24, &isnull);

			if (!isnull)
			{
				Datum	   *elems;
				bool	   *nulls;
				int			n;
				MemoryContext old;

				deconstruct_array(DatumGetArrayTypeP(d), INT4OID, 4, true, TYPALIGN_INT,
								  &elems, &nulls, &n);
				old = MemoryContextSwitchTo(cxt);
				for (int i = 0; i < n; i++)
					job->partitions = lappend_int(job->partitions, DatumGetInt32(elems[i]));
				MemoryContextSwitchTo(old);
			}
		}
		job->config_version = DatumGetInt32(SPI_getbinval(tup, desc, 25, &isnull));
		{
			Datum		columns = SPI_getbinval(tup, desc, 27, &isnull);

			job->columns = text_array_to_list(columns, isnull, cxt);
		}
		job->timestamp_unit = eoi_parse_timestamp_unit(text_column(tup, desc, 28, cxt));
		job->envelope = eoi_parse_envelope(text_column(tup, desc, 29, cxt));
		job->cdc_truncate = eoi_parse_on_truncate(text_column(tup, desc, 30, cxt));
		job->schema_registry = text_column(tup, desc, 31, cxt);
		{
			Datum		d = SPI_getbinval(tup, desc, 32, &isnull);
			MemoryContext old = MemoryContextSwitchTo(cxt);

			job->targets = isnull ? NULL : DatumGetJsonbPCopy(d);
			job->source_transactions = eoi_parse_transactions(text_column(tup, desc, 33, cxt));
			job->txn_topic = job->source_transactions ? eoi_transaction_topic(job->topics) : NULL;
			MemoryContextSwitchTo(old);
		}
		job->cdc_mode = eoi_parse_cdc_mode(text_column(tup, desc, 34, cxt));
		job->deleted_column = text_column(tup, desc, 35, cxt);
		job->durability_async = eoi_parse_durability(text_column(tup, desc, 36, cxt));
		{
			Datum		d = SPI_getbinval(tup, desc, 37, &isnull);
			MemoryContext old = MemoryContextSwitchTo(cxt);

			job->mapping = isnull ? NULL : DatumGetJsonbPCopy(d);
			MemoryContextSwitchTo(old);
		}
		job->create_target = DatumGetBool(SPI_getbinval(tup, desc, 38, &isnull));
		job->schema_changes = eoi_parse_schema_changes(text_column(tup, desc, 39, cxt));
	}
	SPI_finish();
	eoi_restore_user(&saved);
	return job;
}
