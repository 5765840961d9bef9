/*-------------------------------------------------------------------------
 *
 * api.c
 *	  The SQL-callable job functions: create_job, start_job, stop_job,
 *	  drop_job, and the worker status behind eoingest.job_status.
 *
 * Every argument is checked here, with an error that says what to do, so
 * that a job that was created can run.  Start and stop only record what the
 * owner wants; the launcher, woken when the transaction commits, does it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "catalog/pg_authid.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "api/batchfunc.h"
#include "apply/sink.h"
#include "apply/upsert.h"
#include "base/settings.h"
#include "base/shmem.h"
#include "base/txn.h"
#include "envelope/cdc.h"
#include "envelope/cdctxn.h"
#include "format/decode.h"
#include "kafka/batch.h"
#include "kafka/kafka.h"
#include "kafka/policy.h"
#include "kafka/positions.h"
#include "store/deadletter.h"
#include "store/job.h"
#include "store/offsets.h"

PG_FUNCTION_INFO_V1(eoingest_create_job);
PG_FUNCTION_INFO_V1(eoingest_start_job);
PG_FUNCTION_INFO_V1(eoingest_stop_job);
PG_FUNCTION_INFO_V1(eoingest_drop_job);
PG_FUNCTION_INFO_V1(eoingest_worker_status);
PG_FUNCTION_INFO_V1(eoingest_mask_options);
PG_FUNCTION_INFO_V1(eoingest_may_see_job);

#define MAX_BATCH_SIZE 1000000
#define MAX_BATCH_TIMEOUT_MS 3600000
/* At most twice this in COPY text (escapes), well under MaxAllocSize. */
#define MAX_BATCH_BYTES (256 * 1024 * 1024)

/* ---- waking the launcher when the transaction commits ---- */

static bool wake_registered = false;
static bool wake_pending = false;

static void
wake_at_commit(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && wake_pending)
		eoi_wake_launcher();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		wake_pending = false;
}

static void
wake_launcher_at_commit(void)
{
	if (!wake_registered)
	{
		RegisterXactCallback(wake_at_commit, NULL);
		wake_registered = true;
	}
	wake_pending = true;
}

/* ---- argument checks ---- */

static char *
required_text(FunctionCallInfo fcinfo, int argno, const char *name)
{
	char	   *s;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	s = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (s[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be empty", name)));
	return s;
}

static char *
optional_text(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		return NULL;
	return text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/*
 * The target argument, declared "any": a name (a text or an untyped
 * literal, resolved later with the caller's search_path), or a regclass,
 * named here schema-qualified.
 */
static char *
optional_target(FunctionCallInfo fcinfo, int argno)
{
	Oid			type;
	Oid			relid;
	char	   *nspname;
	char	   *relname;

	if (PG_ARGISNULL(argno))
		return NULL;
	type = get_fn_expr_argtype(fcinfo->flinfo, argno);
	switch (type)
	{
		case UNKNOWNOID:
		case CSTRINGOID:
			return pstrdup(DatumGetCString(PG_GETARG_DATUM(argno)));
		case TEXTOID:
		case VARCHAROID:
			return text_to_cstring(PG_GETARG_TEXT_PP(argno));
		case NAMEOID:
			return pstrdup(NameStr(*PG_GETARG_NAME(argno)));
		case REGCLASSOID:
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("target must be a table's name or a regclass, not %s", format_type_be(type)),
					 errhint("Pass target => 'schema.table' or target => 'schema.table'::regclass.")));
	}
	relid = PG_GETARG_OID(argno);
	nspname = get_namespace_name(get_rel_namespace(relid));
	relname = get_rel_name(relid);
	if (nspname == NULL || relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("target table with OID %u does not exist", relid)));
	return quote_qualified_identifier(nspname, relname);
}

static int
int_in_range(FunctionCallInfo fcinfo, int argno, const char *name, int min, int max)
{
	int			v;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", name)));
	v = PG_GETARG_INT32(argno);
	if (v < min || v > max)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between %d and %d, not %d", name, min, max, v)));
	return v;
}

static void
check_database(void)
{
	char	   *current = get_database_name(MyDatabaseId);

	if (strcmp(current, eoingest_database) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("eoingest jobs can only be created in database \"%s\", not \"%s\"",
						eoingest_database, current),
				 errhint("Connect to database \"%s\", or set eoingest.database = '%s' in postgresql.conf and restart the server.",
						 eoingest_database, current)));
}

static void
check_job_name(const char *name)
{
	if (strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("job name \"%s\" is too long", name),
				 errdetail("A job name has at most %d bytes.", NAMEDATALEN - 1)));
}

static void
check_one_topic(const char *topic)
{
	if (strlen(topic) > 249)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Kafka topic name is longer than 249 characters")));
	for (const char *p = topic; *p; p++)
		if (!(isalnum((unsigned char) *p) || *p == '.' || *p == '_' || *p == '-'))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"%s\" is not a valid Kafka topic name", topic),
					 errhint("Kafka topic names use only letters, digits, '.', '_' and '-'.")));
}

/*
 * Resolve the target with the caller's search_path, check that the caller
 * may insert what the format writes, and return its schema-qualified name.
 */
/* One topic, or several separated by commas, each a valid Kafka name. */
static void
check_topic(const char *topic)
{
	List	   *topics = eoi_split_topics(topic);
	ListCell   *lc;

	if (topics == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("topic names no Kafka topic")));
	foreach(lc, topics)
	{
		ListCell   *other;

		check_one_topic(lfirst(lc));
		for_each_cell(other, topics, lnext(topics, lc))
			if (strcmp(lfirst(lc), lfirst(other)) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("Kafka topic \"%s\" is named twice", (char *) lfirst(lc))));
	}
}

/* partitions => ARRAY[...]: distinct, non-negative partition numbers. */
static void
check_partitions(ArrayType *partitions)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(partitions, INT4OID, 4, true, TYPALIGN_INT, &elems, &nulls, &n);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("partitions must name at least one partition"),
				 errhint("Leave partitions NULL for all of them.")));
	for (int i = 0; i < n; i++)
	{
		if (nulls[i] || DatumGetInt32(elems[i]) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partitions must be partition numbers, 0 or more")));
		for (int j = 0; j < i; j++)
			if (DatumGetInt32(elems[j]) == DatumGetInt32(elems[i]))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("partition %d is named twice", DatumGetInt32(elems[i]))));
	}
}

static char *
resolve_target(const char *target, const EoiMapping *mapping, EoiMode mode)
{
	List	   *names;
	RangeVar   *rv;
	Oid			relid;
	Relation	rel;
	EoiColumns *cols;
	char	   *qualified;

#if PG_VERSION_NUM >= 160000
	names = stringToQualifiedNameList(target, NULL);
#else
	names = stringToQualifiedNameList(target);
#endif
	rv = makeRangeVarFromNameList(names);
	relid = RangeVarGetRelid(rv, RowExclusiveLock, true);
	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("target table \"%s\" does not exist", target),
				 errhint("Create the table first, or check the schema in the name and your search_path.")));

	rel = table_open(relid, NoLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" is not a table", target),
				 errhint("eoingest writes into ordinary or partitioned tables; use a transform for anything else.")));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" is a temporary table", target),
				 errhint("A job's worker is another session and cannot see it.")));
	eoi_check_target_kind(rel, mode);

	cols = eoi_columns_for(rel, mapping, NULL);
	eoi_check_target_insert(rel, cols->names);

	qualified = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
										   RelationGetRelationName(rel));
	table_close(rel, NoLock);
	return qualified;
}

static List *
text_array_list(ArrayType *arr, const char *what)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *result = NIL;

	deconstruct_array(arr, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("%s must not contain nulls", what)));
		result = lappend(result, makeString(TextDatumGetCString(elems[i])));
	}
	return result;
}

static Datum
list_text_array(List *names)
{
	Datum	   *elems = palloc(sizeof(Datum) * Max(list_length(names), 1));
	ListCell   *lc;

	foreach(lc, names)
		elems[foreach_current_index(lc)] = CStringGetTextDatum(strVal(lfirst(lc)));
	return PointerGetDatum(construct_array(elems, list_length(names), TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Mode upsert: the key columns (given, or the target's primary key) must
 * have a unique index, be filled by the format and decodable from a message
 * key.  Returns them.
 */
static List *
check_upsert(const char *target, const EoiMapping *mapping, EoiFormat key_format, List *key_columns,
			 const char *what)
{
	Relation	rel = eoi_open_target(target, AccessShareLock);

	if (key_columns == NIL)
		key_columns = eoi_primary_key_columns(rel);
	if (key_columns == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s needs key columns, and \"%s\" has no primary key", what, target),
				 errhint("Pass key_columns => ARRAY['col', ...] naming columns of a unique index, or add a primary key.")));
	eoi_upsert_check(rel, mapping, key_format, key_columns);
	table_close(rel, NoLock);
	return key_columns;
}

/* Parse and plan the transform now, so that a mistake shows here. */
static void
check_transform(const char *transform)
{
	List	   *parsed = raw_parser(transform, RAW_PARSE_DEFAULT);
	SPIPlanPtr	plan;

	if (list_length(parsed) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("transform must be exactly one SQL statement, not %d", list_length(parsed)),
				 errhint("Combine several writes with a WITH query, or call a function.")));

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(transform, 0, NULL);
	if (plan == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("transform cannot be prepared: %s", SPI_result_code_string(SPI_result))));
	SPI_finish();
}

static bool
job_exists(const char *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	bool		found;

	if (SPI_execute_with_args("SELECT 1 FROM eoingest.jobs WHERE name = $1",
							  1, types, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.jobs");
	found = (SPI_processed > 0);
	return found;
}

/*
 * A job's definition as create_job takes it and as alter_job makes it from
 * the stored job and the changes: both check it with check_definition(),
 * so that no definition can be stored that create_job would have refused.
 */
typedef struct JobDefinition
{
	int32		id;				/* alter_job: the job's; create_job: 0 */
	const char *name;
	Oid			owner;
	const char *brokers;
	const char *topic;
	const char *target;			/* as given (or as stored), NULL with a transform */
	const char *format_s;
	const char *mode_s;
	const char *transform;
	const char *start_offset;
	Jsonb	   *options;
	const char *on_error_s;
	List	   *key_columns;	/* NIL: the target's primary key */
	const char *key_format_s;	/* NULL: the default for the key */
	ArrayType  *partitions;
	int			parallelism;
	const char *search_path;	/* the transform's names resolve with it */
	bool		running;		/* alter_job of a running job */
	List	   *columns;		/* NIL: the format's default columns */
	const char *timestamp_unit_s;
	const char *envelope_s;		/* none, debezium */
	const char *on_truncate_s;	/* debezium: refuse, truncate */
	const char *schema_registry;	/* avro: the registry's URLs, or NULL */
	Jsonb	   *targets;		/* debezium: {"schema.table": target}, NULL or {}: none */
	const char *transactions_s; /* debezium: batch, source */

	/* set by check_definition */
	EoiFormat	format;
	EoiMode		mode;
	EoiFormat	key_format;
	const char *qualified_target;
	EoiEnvelope envelope;
	Jsonb	   *qualified_targets;	/* targets with their names schema-qualified, or NULL */
} JobDefinition;

static void check_can_start_mode(int32 job_id, const char *name, Oid owner, EoiMode mode, int parallelism);

/*
 * Format avro (of values or keys) reads schemas from a registry, which the
 * job must name; other formats have no use for one.
 */
static void
check_schema_registry(JobDefinition *def)
{
	if (def->format != EOI_FORMAT_AVRO && def->key_format != EOI_FORMAT_AVRO)
	{
		if (def->schema_registry != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schema_registry is only used by format avro"),
					 errhint("Leave schema_registry out, or use format => 'avro'.")));
		return;
	}
	if (def->schema_registry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("format avro needs a schema registry"),
				 errhint("Pass schema_registry => 'http://registry:8081' (several URLs separated by commas are tried in turn).")));
	(void) eoi_check_registry_urls(def->schema_registry, def->owner);
}

/*
 * Plan the transform with the search_path its job will run it with.
 * Planning can run the owner's functions (constant folding): whatever
 * settings they change are discarded with the nest level.
 */
static void
check_transform_with_path(const char *transform, const char *search_path)
{
	int			nest = NewGUCNestLevel();

	(void) set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	check_transform(transform);
	AtEOXact_GUC(false, nest);
}

/*
 * The Debezium envelope applies change events to a target by key, whatever
 * the mode: json or avro, no transform; the keys of change events are
 * records in the value's format.
 */
static void
check_envelope(JobDefinition *def)
{
	def->envelope = eoi_parse_envelope(def->envelope_s);
	(void) eoi_parse_on_truncate(def->on_truncate_s);
	if (def->envelope != EOI_ENVELOPE_DEBEZIUM)
		return;
	if (def->format != EOI_FORMAT_JSON && def->format != EOI_FORMAT_AVRO)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("envelope debezium needs format json or avro, not %s", def->format_s),
				 errhint("Debezium's JsonConverter writes JSON change events, an Avro converter Avro ones: pass format => 'json' or 'avro'.")));
	if (def->transform != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("envelope debezium applies change events to a target, not through a transform"),
				 errhint("Pass target => 'table'; a transform reads the raw events with eoingest.batch() and envelope none.")));
	/* the key is a record of the key columns, in the value's format */
	def->key_format = def->format;
	def->key_format_s = def->format_s;
}

/*
 * targets: a Debezium job's routing, {"schema.table": "target", ...}.  Each
 * target is checked as target is (a table of this database, not temporary,
 * not UNLOGGED in the exact modes, the privileges to insert, update and
 * delete, its primary key backed by a unique index), and stored
 * schema-qualified.  Each is keyed by its primary key.
 */
static void
check_targets(JobDefinition *def, const EoiMapping *mapping)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	JsonbParseState *state = NULL;
	char	   *key = NULL;
	int			n = 0;

	def->qualified_targets = NULL;
	if (def->targets == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(def->targets) || JB_ROOT_IS_SCALAR(def->targets))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("targets must be a JSON object"),
				 errhint("Map each source table to its target: targets => '{\"public.accounts\": \"accounts_copy\"}'.")));
	if (JsonContainerSize(&def->targets->root) == 0)
	{
		def->targets = NULL;	/* '{}': no routing */
		return;
	}
	if (def->envelope != EOI_ENVELOPE_DEBEZIUM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("targets routes Debezium change events, and the job has envelope %s", def->envelope_s),
				 errhint("Pass envelope => 'debezium', or a single target.")));
	if (def->target != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target and targets cannot both be given"),
				 errhint("With targets every source table names its target; leave target out (alter_job: targets => '{}' goes back to one target).")));
	if (def->key_columns != NIL || def->columns != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key_columns and columns apply to one target, and the job has targets"),
				 errhint("With targets each target is keyed by its primary key and takes the fields of its events by name.")));

	(void) pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	it = JsonbIteratorInit(&def->targets->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			key = pnstrdup(v.val.string.val, v.val.string.len);
			if (v.val.string.len == 0 || v.val.string.len > 2 * NAMEDATALEN ||
				strchr(key, '.') == NULL || strchr(key, '.') == key)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("targets key \"%s\" is not a source table", key),
						 errhint("Name each source table as schema.table, as Debezium's source block has it (source.schema and source.table), e.g. \"public.accounts\".")));
			continue;
		}
		if (tok != WJB_VALUE)
			continue;
		if (v.type != jbvString || v.val.string.len == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("target of \"%s\" in targets is not a table name", key),
					 errhint("Each value of targets names a table, e.g. \"accounts_copy\" or \"copy.accounts\".")));
		{
			char	   *qualified = resolve_target(pnstrdup(v.val.string.val, v.val.string.len),
												   mapping, def->mode);
			JsonbValue	kv;
			JsonbValue	tv;

			(void) check_upsert(qualified, mapping, EOI_FORMAT_JSON, NIL, "envelope debezium");
			kv.type = jbvString;
			kv.val.string.val = key;
			kv.val.string.len = strlen(key);
			tv.type = jbvString;
			tv.val.string.val = qualified;
			tv.val.string.len = strlen(qualified);
			(void) pushJsonbValue(&state, WJB_KEY, &kv);
			(void) pushJsonbValue(&state, WJB_VALUE, &tv);
			n++;
		}
	}
	def->qualified_targets = JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, NULL));
}

/*
 * transactions => 'source': the job commits whole source transactions
 * (cdctxn.c), which it can only tell with Debezium's transaction topic and
 * every data topic in one worker, and one local transaction per commit.
 */
static void
check_transactions(JobDefinition *def)
{
	List	   *topics;
	char	   *txn_topic;

	if (!eoi_parse_transactions(def->transactions_s))
		return;
	if (def->envelope != EOI_ENVELOPE_DEBEZIUM || def->qualified_targets == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("transactions source needs envelope debezium and targets"),
				 errhint("Pass envelope => 'debezium' and targets => '{\"public.t\": \"t\", ...}': the ENDs of the transaction topic count events per source table, and targets names the tables the job applies.")));
	if (def->format != EOI_FORMAT_JSON)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("transactions source needs format json, not %s", def->format_s),
				 errdetail("The transaction topic's BEGIN and END events are read as JSON; Avro transaction metadata is not read yet."),
				 errhint("Use Kafka Connect's JsonConverter for the connector, or transactions => 'batch'.")));
	if (def->mode != EOI_MODE_EXACTLY_ONCE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("transactions source needs mode exactly_once, not %s", def->mode_s),
				 errdetail("upsert and at_least_once apply batches again after a crash, which shows a reader older images beside newer ones; two_phase adds nothing with the one worker that source transactions need."),
				 errhint("Use mode => 'exactly_once'.")));
	if (def->parallelism != 1 || def->partitions != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("transactions source needs parallelism 1 and every partition"),
				 errdetail("A source transaction spans topics and partitions: one worker must read the transaction topic and every partition of every data topic."),
				 errhint("Leave parallelism and partitions out.")));
	topics = eoi_split_topics(def->topic);
	txn_topic = eoi_transaction_topic(topics);
	if (txn_topic == NULL || list_length(topics) < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("transactions source needs Debezium's transaction topic and the data topics"),
				 errhint("Name the transaction topic (topic.prefix.transaction, from provide.transaction.metadata=true) and each table's topic: topic => 'src.transaction, src.public.accounts, src.public.transfers'.")));
	{
		ListCell   *lc;
		int			ntxn = 0;

		foreach(lc, topics)
			ntxn += (eoi_transaction_topic(list_make1(lfirst(lc))) != NULL);
		if (ntxn > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("transactions source needs one transaction topic, and %d topics end in \".transaction\"", ntxn),
					 errhint("Name the transaction topic of one connector only.")));
	}
}

/*
 * Check a whole definition, as the job's owner will run it; fill in the
 * parsed fields, the qualified target, the key columns and key format.
 * The caller acts as the owner (create_job is called by it).
 */
static void
check_definition(JobDefinition *def)
{
	EoiMapping	mapping;

	check_job_name(def->name);
	if (def->partitions != NULL)
		check_partitions(def->partitions);
	check_topic(def->topic);
	def->format = eoi_parse_format(def->format_s);
	def->mode = eoi_parse_mode(def->mode_s);
	mapping.format = def->format;
	mapping.columns = def->columns;
	mapping.timestamp_unit = eoi_parse_timestamp_unit(def->timestamp_unit_s);
	(void) eoi_parse_on_error(def->on_error_s);
	def->key_format = def->key_format_s ? eoi_parse_format(def->key_format_s) : EOI_FORMAT_TEXT;
	eoi_check_start_offset(def->start_offset);
	check_schema_registry(def);

	if (def->target == NULL && def->transform == NULL &&
		(def->targets == NULL || JsonContainerSize(&def->targets->root) == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a job needs a target table or a transform"),
				 errhint("Pass target => 'table', or transform => 'INSERT INTO ... SELECT ... FROM eoingest.batch()'.")));
	if (def->target != NULL && def->transform != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target and transform cannot both be given"),
				 errhint("A transform writes where it likes; name the table inside it. To switch a job between the two, create a new job.")));
	if (def->columns != NIL && def->target == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("columns applies to a target table, and the job has a transform"),
				 errhint("A transform maps the messages itself; leave columns out.")));
	def->qualified_target = NULL;
	if (def->target != NULL)
		def->qualified_target = resolve_target(def->target, &mapping, def->mode);
	else if (def->transform != NULL)
		check_transform_with_path(def->transform, def->search_path);

	check_envelope(def);
	check_targets(def, &mapping);
	check_transactions(def);
	if ((def->mode == EOI_MODE_UPSERT || def->envelope == EOI_ENVELOPE_DEBEZIUM) && def->target != NULL)
	{
		Relation	rel = eoi_open_target(def->qualified_target, AccessShareLock);

		if (def->key_columns == NIL)
			def->key_columns = eoi_primary_key_columns(rel);
		table_close(rel, NoLock);
		/* By default a one-column key is the message key's text, else like the value. */
		if (def->key_format_s == NULL && list_length(def->key_columns) > 1)
		{
			def->key_format = (def->format == EOI_FORMAT_JSON || def->format == EOI_FORMAT_AVRO) ?
				def->format : EOI_FORMAT_CSV;
			def->key_format_s = eoi_format_name(def->key_format);
		}
		def->key_columns = check_upsert(def->qualified_target, &mapping, def->key_format,
										def->key_columns,
										def->envelope == EOI_ENVELOPE_DEBEZIUM ? "envelope debezium" : "mode upsert");
	}
	if (def->key_format_s == NULL)
		def->key_format_s = "text";
	if (def->running)
		check_can_start_mode(def->id, def->name, def->owner, def->mode, def->parallelism);

	eoi_kafka_check_options(def->brokers, def->options, def->owner);
}

Datum
eoingest_create_job(PG_FUNCTION_ARGS)
{
	JobDefinition def = {0};
	char	   *name = required_text(fcinfo, 0, "name");
	char	   *brokers = required_text(fcinfo, 1, "brokers");
	char	   *topic = required_text(fcinfo, 2, "topic");
	char	   *target = optional_target(fcinfo, 3);
	char	   *format_s = required_text(fcinfo, 4, "format");
	char	   *mode_s = required_text(fcinfo, 5, "mode");
	char	   *transform = optional_text(fcinfo, 6);
	char	   *start_offset = required_text(fcinfo, 7, "start_offset");
	int			batch_size = int_in_range(fcinfo, 8, "batch_size", 1, MAX_BATCH_SIZE);
	int			batch_timeout_ms = int_in_range(fcinfo, 9, "batch_timeout_ms", 1, MAX_BATCH_TIMEOUT_MS);
	int			parallelism = int_in_range(fcinfo, 10, "parallelism", 1,
											   Min(eoingest_max_workers, EOI_MAX_PARALLELISM_GIDS));
	Jsonb	   *options = PG_ARGISNULL(11) ? NULL : PG_GETARG_JSONB_P(11);
	char	   *on_error_s = required_text(fcinfo, 12, "on_error");
	int			checkpoint_interval_ms = int_in_range(fcinfo, 13, "checkpoint_interval_ms", 10, MAX_BATCH_TIMEOUT_MS);
	List	   *key_columns = PG_ARGISNULL(14) ? NIL : text_array_list(PG_GETARG_ARRAYTYPE_P(14), "key_columns");
	char	   *key_format_s = optional_text(fcinfo, 15);
	int			offset_commit_interval_ms = int_in_range(fcinfo, 16, "offset_commit_interval_ms", 10, MAX_BATCH_TIMEOUT_MS);
	int			max_message_bytes = int_in_range(fcinfo, 17, "max_message_bytes", 1, MaxAllocSize - VARHDRSZ);
	bool		commit_to_kafka = PG_NARGS() > 18 && !PG_ARGISNULL(18) && PG_GETARG_BOOL(18);
	ArrayType  *partitions = (PG_NARGS() > 19 && !PG_ARGISNULL(19)) ? PG_GETARG_ARRAYTYPE_P(19) : NULL;
	char	   *qualified_target;
	/* Called through an older definition, there is no batch_max_bytes: the column's default. */
	bool		v03 = PG_NARGS() > 20;
	int			batch_max_bytes = v03 ? int_in_range(fcinfo, 20, "batch_max_bytes", 1, MAX_BATCH_BYTES) : 0;
	/* Called through an older definition, there is no columns or timestamp_unit, ... */
	bool		v04 = PG_NARGS() > 22;
	List	   *columns = (v04 && !PG_ARGISNULL(21)) ?
		text_array_list(PG_GETARG_ARRAYTYPE_P(21), "columns") : NIL;
	char	   *timestamp_unit_s = v04 ? required_text(fcinfo, 22, "timestamp_unit") : "auto";
	/* ... nor envelope and on_truncate (issue 16) */
	bool		v04_envelope = PG_NARGS() > 24;
	char	   *envelope_s = v04_envelope ? required_text(fcinfo, 23, "envelope") : "none";
	char	   *on_truncate_s = v04_envelope ? required_text(fcinfo, 24, "on_truncate") : "refuse";
	/* ... nor schema_registry (issue 15) */
	bool		v04_registry = PG_NARGS() > 25;
	char	   *schema_registry = v04_registry ? optional_text(fcinfo, 25) : NULL;
	/* ... nor targets and transactions (issue 16, item 5) */
	bool		v04_txn = PG_NARGS() > 27;
	Jsonb	   *targets = (v04_txn && !PG_ARGISNULL(26)) ? PG_GETARG_JSONB_P(26) : NULL;
	char	   *transactions_s = v04_txn ? required_text(fcinfo, 27, "transactions") : "batch";
	EoiSavedUser saved;
	/* The transform's names resolve as they do for the caller now. */
	const char *search_path = pstrdup(GetConfigOption("search_path", false, false));

	eoi_check_primary();
	check_database();
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
	check_definition(&def);
	qualified_target = (char *) def.qualified_target;
	key_columns = def.key_columns;
	key_format_s = (char *) def.key_format_s;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (job_exists(name))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("eoingest job \"%s\" already exists", name),
				 errhint("Choose another name, or drop the existing job with eoingest.drop_job('%s').", name)));
	{
		Oid			types[30] = {TEXTOID, OIDOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
			TEXTOID, TEXTOID, INT4OID, INT4OID, INT4OID, JSONBOID, TEXTOID, INT4OID,
			TEXTARRAYOID, TEXTOID, INT4OID, TEXTOID, INT4OID, BOOLOID, INT4ARRAYOID, INT4OID,
		TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID};
		Datum		args[30];
		char		nulls[30];
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
			args[15] = list_text_array(key_columns);
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
		args[23] = columns != NIL ? list_text_array(columns) : (Datum) 0;
		nulls[23] = columns != NIL ? ' ' : 'n';
		args[24] = CStringGetTextDatum(timestamp_unit_s);
		args[25] = CStringGetTextDatum(envelope_s);
		args[26] = CStringGetTextDatum(on_truncate_s);
		args[27] = schema_registry ? CStringGetTextDatum(schema_registry) : (Datum) 0;
		nulls[27] = schema_registry ? ' ' : 'n';
		args[28] = def.qualified_targets ? JsonbPGetDatum(def.qualified_targets) : (Datum) 0;
		nulls[28] = def.qualified_targets ? ' ' : 'n';
		args[29] = CStringGetTextDatum(transactions_s);

		if (SPI_execute_with_args(psprintf("INSERT INTO eoingest.jobs (name, owner, brokers, topic, target,"
										   " format, mode, transform, start_offset, batch_size, batch_timeout_ms,"
										   " parallelism, options, on_error, search_path, checkpoint_interval_ms,"
										   " key_columns, key_format, offset_commit_interval_ms, max_message_bytes%s%s%s%s%s%s)"
										   " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $19, $14, $15,"
										   "         $16, $17, $18, $20%s%s%s%s%s%s)",
										   v02 ? ", commit_to_kafka, partitions" : "", v03 ? ", batch_max_bytes" : "",
										   v04 ? ", columns, timestamp_unit" : "",
										   v04_envelope ? ", envelope, on_truncate" : "",
										   v04_registry ? ", schema_registry" : "",
										   v04_txn ? ", targets, transactions" : "",
										   v02 ? ", $21, $22" : "", v03 ? ", $23" : "", v04 ? ", $24, $25" : "",
										   v04_envelope ? ", $26, $27" : "", v04_registry ? ", $28" : "",
										   v04_txn ? ", $29, $30" : ""),
								  v04_txn ? 30 : v04_registry ? 28 : v04_envelope ? 27 : v04 ? 25 : v03 ? 23 : v02 ? 22 : 20,
								  types, args, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not insert into eoingest.jobs");
	}
	SPI_finish();
	eoi_restore_user(&saved);
	PG_RETURN_VOID();
}

/* The job's owner, or InvalidOid if there is no such job. */
static Oid
find_job_owner(const char *name)
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
	Oid			owner = find_job_owner(name);

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
	wake_launcher_at_commit();
}

/*
 * How many prepared transactions the other running two_phase jobs may
 * hold at once besides the `parallelism` of job `job_id` of `owner`: one
 * per worker that can run at once, so no more for one role than its
 * eoingest.max_workers_per_role.  A role capped at a few workers cannot
 * take every prepared-transaction slot by starting many jobs.
 */
static int
other_two_phase_workers(int32 job_id, Oid owner, int parallelism)
{
	EoiSavedUser saved;
	Oid			types[1] = {INT4OID};
	Datum		args[1] = {Int32GetDatum(job_id)};
	int64		total = parallelism;

	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT owner, sum(parallelism)::int8 FROM eoingest.jobs"
							  " WHERE mode = 'two_phase' AND state = 'running' AND id <> $1"
							  " GROUP BY owner",
							  1, types, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read eoingest.jobs");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			role = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));
		int64		workers = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 2, &isnull));
		int			limit = eoi_role_worker_limit(role);

		if (role == owner)
		{
			workers += parallelism;
			total -= parallelism;
		}
		total += limit >= 0 ? Min(workers, limit) : workers;
	}
	SPI_finish();
	eoi_restore_user(&saved);
	return (int) Min(total - parallelism, INT_MAX);
}

/*
 * A two_phase job holds up to one prepared transaction per worker, and so
 * does every other running two_phase job: refuse to start it where the
 * server cannot hold them all.  Jobs that cannot all prepare would keep
 * each other's epochs from completing.
 */
static void
check_can_start_mode(int32 job_id, const char *name, Oid owner, EoiMode mode, int parallelism)
{
	int			others;
	int			limit;

	if (mode != EOI_MODE_TWO_PHASE)
		return;
	/* every worker must prepare before an epoch completes */
	limit = eoi_role_worker_limit(owner);
	if (limit >= 0 && parallelism > limit)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("two_phase job \"%s\" needs its %d workers at once, but its owner may run %d eoingest workers",
						name, parallelism, limit),
				 errdetail("A checkpoint epoch completes once every worker of the job has prepared its part."),
				 errhint("Lower the job's parallelism, or have a superuser raise the owner's limit with ALTER ROLE ... SET eoingest.max_workers_per_role.")));
	if (max_prepared_xacts < parallelism)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("two_phase job \"%s\" needs %d prepared transactions, but max_prepared_transactions is %d",
						name, parallelism, max_prepared_xacts),
				 errhint("Set max_prepared_transactions to at least %d (plus what other clients use) and restart the server.",
						 parallelism)));
	others = other_two_phase_workers(job_id, owner, parallelism);
	if (max_prepared_xacts < parallelism + others)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("two_phase job \"%s\" needs %d prepared transactions and the running two_phase jobs need %d more, but max_prepared_transactions is %d",
						name, parallelism, others, max_prepared_xacts),
				 errdetail("Each worker of a two_phase job holds a prepared transaction at the end of every checkpoint epoch."),
				 errhint("Set max_prepared_transactions to at least %d (plus what other clients use) and restart the server, or stop another two_phase job first.",
						 parallelism + others)));
}

static void
check_can_start(const EoiJob *job)
{
	check_can_start_mode(job->id, job->name, job->owner, job->mode, job->parallelism);
}

/*
 * Background workers running now that are not eoingest's: parallel
 * workers, logical replication, other extensions' workers.  They share
 * max_worker_processes with eoingest.  pg_stat_activity shows a background
 * worker with its own type; these are the types of the other processes.
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
					" 'eoingest launcher', 'eoingest worker'])",
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
static void
warn_if_no_room(const EoiJob *job)
{
	int			others = (int) eoi_job_query_int("SELECT coalesce(sum(parallelism), 0)::int8 FROM eoingest.jobs"
												 " WHERE state = 'running' AND id <> $1",
												 job->id);
	int			free_slots = Max(eoingest_max_workers - others, 0);
	int			other_bgw;
	int			free_bgw;
	int			limit = eoi_role_worker_limit(job->owner);

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

	/* the launcher takes one background worker slot too */
	other_bgw = other_background_workers();
	free_bgw = Max(max_worker_processes - other_bgw - 1 - others, 0);
	if (free_bgw < job->parallelism)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 free_bgw == 0 ?
				 errmsg("no background worker slot is free for job \"%s\"", job->name) :
				 errmsg_plural("job \"%s\" wants %d workers, but only %d background worker slot is free",
							   "job \"%s\" wants %d workers, but only %d background worker slots are free",
							   free_bgw, job->name, job->parallelism, free_bgw),
				 errdetail("max_worker_processes is %d: other background workers take %d, eoingest's launcher 1, the other running jobs want %d. Workers that do not fit wait in state \"waiting\" until slots are free.",
						   max_worker_processes, other_bgw, others),
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
	check_can_start(job);
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

	eoi_check_primary();
	eoi_check_job_owner(name, job_owner(name));
	update_job("UPDATE eoingest.jobs SET state = $2 WHERE name = $1 AND state = 'running'",
			   name, "stopped");
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
				(errmsg("dropped " INT64_FORMAT " dead letters of job \"%s\"", letters, name)));
	PG_RETURN_VOID();
}

static const char *
worker_state_name(EoiWorkerState state)
{
	switch (state)
	{
		case EOI_WORKER_STARTING:
			return "starting";
		case EOI_WORKER_RUNNING:
			return "running";
		case EOI_WORKER_RETRYING:
			return "retrying";
		case EOI_WORKER_WAITING:
			return "waiting";
	}
	return "unknown";
}

/* Messages per second over the last minute, from the worker's samples. */
static double
messages_per_second(EoiWorkerSlot *s)
{
	int			oldest = -1;
	long		ms;

	for (int i = 0; i < EOI_RATE_SAMPLES; i++)
		if (s->rate_at[i] != 0 && (oldest < 0 || s->rate_at[i] < s->rate_at[oldest]))
			oldest = i;
	if (oldest < 0)
		return 0.0;
	ms = TimestampDifferenceMilliseconds(s->rate_at[oldest], GetCurrentTimestamp());
	if (ms <= 0)
		return 0.0;
	return (double) (s->messages - s->rate_messages[oldest]) * 1000.0 / ms;
}

/* The current role sees the workers of jobs it could steer, or all as pg_monitor. */
static bool
may_see(Oid owner)
{
	return superuser() || has_privs_of_role(GetUserId(), owner) ||
		has_privs_of_role(GetUserId(), ROLE_PG_MONITOR);
}

/*
 * eoingest._may_see_job(job): may the current role see the job's rows
 * (the row-level policy on eoingest.offsets)?  False for a job that does
 * not exist, so that it tells nobody which jobs exist beyond their own.
 * A policy calls it once per row, and rows come by job: the last answer
 * is kept for the next call.
 */
typedef struct MaySeeCache
{
	Oid			role;
	char	   *job;
	bool		result;
} MaySeeCache;

Datum
eoingest_may_see_job(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	MaySeeCache *cache = fcinfo->flinfo->fn_extra;
	Oid			owner;

	if (cache != NULL && cache->role == GetUserId() && strcmp(cache->job, name) == 0)
		PG_RETURN_BOOL(cache->result);
	if (cache == NULL)
		cache = fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(MaySeeCache));
	else if (cache->job != NULL)
		pfree(cache->job);
	owner = find_job_owner(name);
	cache->role = GetUserId();
	cache->job = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt, name);
	cache->result = OidIsValid(owner) && may_see(owner);
	PG_RETURN_BOOL(cache->result);
}

/*
 * eoingest._mask_options(options): the values of credential properties
 * replaced by ********, for roles that are not the job's owner.
 */
Datum
eoingest_mask_options(PG_FUNCTION_ARGS)
{
	Jsonb	   *options = PG_GETARG_JSONB_P(0);
	JsonbParseState *state = NULL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbValue *result = NULL;
	JsonbIteratorToken tok;
	bool		secret = false;

	if (!JB_ROOT_IS_OBJECT(options))
		PG_RETURN_JSONB_P(options);
	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			secret = eoi_kafka_property_is_secret(pnstrdup(v.val.string.val, v.val.string.len));
		else if (tok == WJB_VALUE && secret)
		{
			v.type = jbvString;
			v.val.string.val = "********";
			v.val.string.len = 8;
		}
		result = pushJsonbValue(&state, tok, tok < WJB_BEGIN_ARRAY ? &v : NULL);
	}
	PG_RETURN_JSONB_P(JsonbValueToJsonb(result));
}

/*
 * The workers' shared-memory status, for job_status: one row per attached
 * worker, and one per worker the launcher could not start for want of a
 * slot (state 'waiting', no pid, the reason as its last error).
 */
Datum
eoingest_worker_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Tuplestorestate *store;
	EoiWorkerSlot *copy;
	EoiWaitingWorker *waiting;
	char		wait_message[EOI_WAIT_REASONS][EOI_ERROR_LEN];
	int			nslots;
	int			nwaiting;

	eoi_materialize_srf(fcinfo, &store, &tupdesc);

	/* Copy under the lock, build tuples without it. */
	nslots = eoi_shared->nslots;
	copy = palloc(sizeof(EoiWorkerSlot) * nslots);
	waiting = palloc(sizeof(EoiWaitingWorker) * EOI_MAX_WAITING);
	LWLockAcquire(eoi_shared->lock, LW_SHARED);
	memcpy(copy, eoi_shared->slots, sizeof(EoiWorkerSlot) * nslots);
	nwaiting = eoi_shared->nwaiting;
	memcpy(waiting, eoi_shared->waiting, sizeof(EoiWaitingWorker) * nwaiting);
	memcpy(wait_message, eoi_shared->wait_message, sizeof(wait_message));
	LWLockRelease(eoi_shared->lock);

	for (int i = 0; i < nslots; i++)
	{
		EoiWorkerSlot *s = &copy[i];
		Datum		values[15];
		bool		nulls[15] = {false};

		if (!s->in_use || s->pid == 0 || !may_see(s->owner))
			continue;
		values[0] = Int32GetDatum(s->job_id);
		values[1] = Int32GetDatum(s->worker_index);
		values[2] = Int32GetDatum(s->pid);
		values[3] = CStringGetTextDatum(worker_state_name(s->state));
		values[4] = TimestampTzGetDatum(s->started_at);
		values[5] = Int64GetDatum((int64) s->messages);
		values[6] = Int64GetDatum((int64) s->rows);
		values[7] = Int64GetDatum((int64) s->bytes);
		values[8] = Int64GetDatum((int64) s->batches);
		values[9] = TimestampTzGetDatum(s->last_commit_at);
		nulls[9] = (s->last_commit_at == 0);
		values[10] = CStringGetTextDatum(s->last_error);
		nulls[10] = (s->last_error[0] == '\0');
		values[11] = TimestampTzGetDatum(s->last_error_at);
		nulls[11] = (s->last_error_at == 0);
		values[12] = Int64GetDatum((int64) s->dead_letters);
		values[13] = Float8GetDatum(messages_per_second(s));
		values[14] = Int64GetDatum(s->heap_bytes);
		nulls[14] = (s->heap_bytes <= 0);	/* not sampled yet, or unknown */
		/* the definitions before 0.5 have fewer columns */
		Assert(tupdesc->natts <= lengthof(values));
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}

	for (int i = 0; i < nwaiting; i++)
	{
		EoiWaitingWorker *wt = &waiting[i];
		Datum		values[15] = {0};
		bool		nulls[15];
		bool		started = false;

		if (!may_see(wt->owner))
			continue;
		/* started since the launcher's last tick: the slot's row stands for it */
		for (int k = 0; k < nslots && !started; k++)
			started = copy[k].in_use && copy[k].job_id == wt->job_id &&
				copy[k].worker_index == wt->worker_index;
		if (started)
			continue;
		memset(nulls, true, sizeof(nulls));
		values[0] = Int32GetDatum(wt->job_id);
		nulls[0] = false;
		values[1] = Int32GetDatum(wt->worker_index);
		nulls[1] = false;
		values[3] = CStringGetTextDatum(worker_state_name(EOI_WORKER_WAITING));
		nulls[3] = false;
		values[10] = CStringGetTextDatum(wait_message[wt->reason]);
		nulls[10] = false;
		values[11] = TimestampTzGetDatum(wt->since);
		nulls[11] = false;
		tuplestore_putvalues(store, tupdesc, values, nulls);
	}
	return (Datum) 0;
}

/* ---- alter_job ---- */

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
 * eoingest.alter_job(name, batch_size, batch_timeout_ms, options,
 * transform, on_error, target, mode, batch_max_bytes, columns,
 * timestamp_unit): change what is given (NULL keeps it; columns => '{}'
 * goes back to the format's default columns).  The definition that results is checked exactly as create_job
 * checks one, as the job's owner (check_definition), the transform with
 * the job's search_path.  A running job's workers are restarted by the
 * launcher with the new settings within a second (an open batch rolls
 * back and is read again).  The target and the mode of a job that has
 * committed offsets cannot change: the offsets account for rows in that
 * table, written with that mode's guarantee.  Only a target that no longer
 * exists under its stored name may be replaced (by the table's new name).
 */
Datum
eoingest_alter_job(PG_FUNCTION_ARGS)
{
	char	   *name;
	EoiJob	   *job;
	JobDefinition def;
	StringInfoData sql;
	Datum		args[18];
	Oid			types[18] = {TEXTOID, INT4OID, INT4OID, JSONBOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID,
	TEXTOID, TEXTARRAYOID, INT4OID, TEXTARRAYOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, TEXTOID};
	char		nulls[18] = "                  ";
	/* targets and transactions (issue 16, item 5): the last two */
	bool		has_targets = PG_NARGS() > 14 && !PG_ARGISNULL(14);
	bool		has_transactions = PG_NARGS() > 15 && !PG_ARGISNULL(15);
	/* envelope and on_truncate (issue 16), where the definition has them */
	bool		has_envelope = PG_NARGS() > 12;
	/* Called through an older definition, there is no batch_max_bytes. */
	bool		has_batch_max_bytes = PG_NARGS() > 8 && !PG_ARGISNULL(8);
	/* ... nor columns, nor timestamp_unit (argument 10) */
	bool		has_columns = PG_NARGS() > 9 && !PG_ARGISNULL(9);
	bool		has_timestamp_unit = PG_NARGS() > 10 && !PG_ARGISNULL(10);
	/* schema_registry (issue 15): the last parameter */
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
		(void) int_in_range(fcinfo, 1, "batch_size", 1, MAX_BATCH_SIZE);
	if (!PG_ARGISNULL(2))
		(void) int_in_range(fcinfo, 2, "batch_timeout_ms", 1, MAX_BATCH_TIMEOUT_MS);
	if (has_batch_max_bytes)
		(void) int_in_range(fcinfo, 8, "batch_max_bytes", 1, MAX_BATCH_BYTES);
	/*
	 * A job whose target is gone (dropped, renamed, moved to another schema)
	 * may be pointed at another table: its offsets account for rows that
	 * are in the renamed table, or nowhere, as for a table created again.
	 */
	if ((!PG_ARGISNULL(6) || !PG_ARGISNULL(7)) && eoi_offsets_any(job) &&
		!(PG_ARGISNULL(7) && job->target != NULL && !eoi_target_exists(job->target)))
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
		def.target = optional_target(fcinfo, 6);
	/* columns => '{}' goes back to the format's default columns */
	if (has_columns)
		def.columns = text_array_list(PG_GETARG_ARRAYTYPE_P(9), "columns");
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

	/*
	 * Checked as the owner's worker will run it (target privileges), and as
	 * the owner: the caller may be a superuser, and planning the transform
	 * runs the owner's functions.
	 */
	eoi_become_job_owner(job, &saved);
	check_definition(&def);
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
	args[9] = def.key_columns != NIL ? list_text_array(def.key_columns) : (Datum) 0;
	nulls[10] = has_batch_max_bytes ? ' ' : 'n';
	args[10] = has_batch_max_bytes ? PG_GETARG_DATUM(8) : (Datum) 0;
	nulls[11] = def.columns != NIL ? ' ' : 'n';
	args[11] = def.columns != NIL ? list_text_array(def.columns) : (Datum) 0;
	args[12] = CStringGetTextDatum(def.timestamp_unit_s);
	args[13] = CStringGetTextDatum(def.envelope_s);
	args[14] = CStringGetTextDatum(def.on_truncate_s);
	nulls[15] = has_schema_registry ? ' ' : 'n';
	args[15] = has_schema_registry ? PG_GETARG_DATUM(13) : (Datum) 0;
	nulls[16] = def.qualified_targets ? ' ' : 'n';
	args[16] = def.qualified_targets ? JsonbPGetDatum(def.qualified_targets) : (Datum) 0;
	args[17] = CStringGetTextDatum(def.transactions_s);

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
						   " config_version = config_version + 1"
						   " WHERE name = $1");
	eoi_become_extension_owner(&saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(sql.data, 18, types, args, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update eoingest.jobs");
	/* an altered job takes its targets as they are (shape.c) */
	if (SPI_execute_with_args("DELETE FROM eoingest.target_shapes s USING eoingest.jobs j"
							  " WHERE s.job_id = j.id AND j.name = $1",
							  1, types, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not update eoingest.target_shapes");
	SPI_finish();
	eoi_restore_user(&saved);
	wake_launcher_at_commit();
	PG_RETURN_VOID();
}
