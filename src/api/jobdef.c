/*-------------------------------------------------------------------------
 *
 * jobdef.c
 *	  The checks of the job functions' arguments, and of a job's definition
 *	  as create_job takes it and alter_job makes it (check_definition): so
 *	  that no definition is stored that create_job would refuse.  Whether a
 *	  job may start in its mode (prepared transactions for two_phase) is
 *	  checked here too, for start_job and for the definition.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/htup_details.h"
#include "access/twophase.h"
#include "catalog/pg_class.h"
#include "catalog/pg_database.h"
#include "catalog/pg_namespace.h"
#include "catalog/namespace.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "api/api_internal.h"
#include "apply/target.h"
#include "apply/upsert.h"
#include "base/pgcompat.h"
#include "base/settings.h"
#include "envelope/cdc.h"
#include "format/decode.h"
#include "kafka/policy.h"
#include "kafka/positions.h"
#include "store/job.h"

/* The longest topic pattern create_job takes, in bytes. */
#define EOI_MAX_TOPIC_PATTERN 1000

/* ---- argument checks ---- */

char *
eoi_api_required_text(FunctionCallInfo fcinfo, int argno, const char *name)
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

char *
eoi_api_optional_text(FunctionCallInfo fcinfo, int argno)
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
char *
eoi_api_optional_target(FunctionCallInfo fcinfo, int argno)
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

int
eoi_api_int_in_range(FunctionCallInfo fcinfo, int argno, const char *name, int min, int max)
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

/*
 * Jobs run in every database, or in those eoingest.database lists when it
 * is set.
 */
void
eoi_api_check_database(void)
{
	char	   *current = get_database_name(MyDatabaseId);
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(MyDatabaseId));
	bool		template = false;

	if (HeapTupleIsValid(tup))
	{
		Form_pg_database form = (Form_pg_database) GETSTRUCT(tup);

		template = form->datistemplate || !form->datallowconn;
		ReleaseSysCache(tup);
	}
	if (template)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("eoingest jobs do not run in database \"%s\"", current),
				 errdetail("It is a template or does not allow connections, and eoingest serves neither."),
				 errhint("Create the job in the database it writes into.")));
	if (eoi_database_served(current))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("eoingest jobs do not run in database \"%s\"", current),
			 errdetail("eoingest.database lists the databases whose jobs run: %s.", eoingest_database),
			 errhint("Connect to one of them, or add \"%s\" to eoingest.database (or set it to '' for every database) in postgresql.conf and restart the server.",
					 current)));
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
 * A topic pattern: a regular expression PostgreSQL compiles (an invalid one
 * is an error here, SQLSTATE 2201B), of a bounded length.
 */
static void
check_topic_pattern(const char *pattern)
{
	if (strlen(pattern) > EOI_MAX_TOPIC_PATTERN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("Kafka topic pattern is longer than %d bytes", EOI_MAX_TOPIC_PATTERN)));
	(void) eoi_topic_matches(pattern, "");
}

/*
 * One topic, or several separated by commas, each a valid Kafka name; or
 * one pattern, beginning with '^'.
 */
static void
check_topic(const char *topic)
{
	List	   *topics = eoi_split_topics(topic);
	ListCell   *lc;

	if (eoi_topic_is_pattern(topic))
	{
		check_topic_pattern(linitial(topics));
		return;
	}
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

/*
 * Resolve the target with the caller's search_path, check that the caller
 * may insert what the format writes, and return its schema-qualified name.
 */
static char *
resolve_target(const char *target, const EoiMapping *mapping, EoiMode mode)
{
	List	   *names;
	RangeVar   *rv;
	Oid			relid;
	Relation	rel;
	EoiColumns *cols;
	char	   *qualified;

	names = eoi_qualified_name_list(target);
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

/*
 * create_target creates tables as the job's owner (the caller): in a schema
 * it may create in, and not a temporary one.
 */
static void
check_may_create_in(Oid nsp, const char *target)
{
	char	   *schema = get_namespace_name(nsp);

	if (isAnyTempNamespace(nsp))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("create_target cannot create target \"%s\" in a temporary schema", target),
				 errhint("A job's worker is another session and cannot see it: name a schema, e.g. 'public.%s'.", target)));
	if (!eoi_may_create_in_schema(nsp, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create target \"%s\" in schema %s", target, quote_identifier(schema)),
				 errdetail("create_target creates the table as the job's owner, %s.", GetUserNameFromId(GetUserId(), false)),
				 errhint("GRANT CREATE ON SCHEMA %s TO %s; or create the table yourself.",
						 quote_identifier(schema), quote_identifier(GetUserNameFromId(GetUserId(), false)))));
}

/* Does the target, as given (resolved with the caller's search_path), exist? */
static bool
target_named_exists(const char *target)
{
	return OidIsValid(RangeVarGetRelid(makeRangeVarFromNameList(eoi_qualified_name_list(target)),
									   NoLock, true));
}

/*
 * The schema-qualified name of a target that does not exist yet, which
 * create_target makes from the first message's schema: its schema (the
 * caller's first, if the name has none) must exist and let the caller
 * create in it.
 */
static char *
resolve_target_to_create(const char *target)
{
	RangeVar   *rv = makeRangeVarFromNameList(eoi_qualified_name_list(target));
	Oid			nsp = RangeVarGetCreationNamespace(rv);

	check_may_create_in(nsp, target);
	ereport(NOTICE,
			(errmsg("target table %s does not exist yet",
					quote_qualified_identifier(get_namespace_name(nsp), rv->relname)),
			 errdetail("The job creates it from the writer schema of its first message.")));
	return quote_qualified_identifier(get_namespace_name(nsp), rv->relname);
}

/*
 * schema_changes alters the target as the job's owner, who must own it
 * (a target template's tables are checked as the job meets them).
 */
static void
check_may_alter_table(const JobDefinition *def, const char *target)
{
	Relation	rel;

	if (def->schema_changes == EOI_SCHEMA_CHANGES_NONE)
		return;
	rel = eoi_open_target(target, AccessShareLock);
	if (!eoi_owns_relation(RelationGetRelid(rel), GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("schema_changes %s alters target %s, which role %s does not own",
						def->schema_changes_s, target,
						quote_identifier(GetUserNameFromId(GetUserId(), false))),
				 errhint("Give the job's owner the table (ALTER TABLE %s OWNER TO %s), or leave schema_changes at none.",
						 target, quote_identifier(GetUserNameFromId(GetUserId(), false)))));
	table_close(rel, NoLock);
}

static void
check_may_alter(const JobDefinition *def)
{
	if (def->target_missing || def->qualified_target == NULL ||
		eoi_target_is_template(def->qualified_target))
		return;
	check_may_alter_table(def, def->qualified_target);
}

/*
 * create_target and schema_changes: a target that follows the writer
 * schema of the messages.  For a format whose messages carry one (avro,
 * protobuf, json with a schema), into a target table the format fills by
 * field name (or change events' images): not with a transform, a columns
 * list or a mapping.
 */
static void
check_schema_following(JobDefinition *def)
{
	const char *what;

	def->schema_changes = eoi_parse_schema_changes(def->schema_changes_s);
	if (!def->create_target && def->schema_changes == EOI_SCHEMA_CHANGES_NONE)
		return;
	what = def->create_target ? "create_target" : psprintf("schema_changes %s", def->schema_changes_s);
	if (def->transform != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s applies to a target table, and the job has a transform", what),
				 errhint("The transform decides the columns: create and alter its tables yourself.")));
	if (!eoi_format_has_schema_id(def->format) && def->format != EOI_FORMAT_JSON)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s needs messages that carry their schema, and format %s has none", what, def->format_s),
				 errhint("Use format => 'avro' or 'protobuf' with a schema registry, or format => 'json' with Kafka Connect's wrapper (schemas.enable=true); for csv and text, create the table (and add its columns) yourself.")));
	/*
	 * A change holds the table's lock until its epoch commits, and the
	 * epoch commits when every worker has prepared: a worker that must
	 * write the table first would wait for it to the lock timeout, epoch
	 * after epoch.
	 */
	if (def->mode == EOI_MODE_TWO_PHASE && def->parallelism > 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot be used in mode two_phase with more than one worker", what),
				 errdetail("A change of the target holds its lock until the epoch commits, and the other workers' epoch writes wait for it."),
				 errhint("Use parallelism => 1, or mode => 'exactly_once'.")));
	if (def->columns != NIL || def->mapping != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s cannot be used with %s", what, def->columns != NIL ? "columns" : "mapping"),
				 errhint("%s names the columns the job fills; leave it out to fill the columns of the schema's fields, or create the table yourself.",
						 def->columns != NIL ? "columns" : "mapping")));
}

/* The schema a target template names, or the caller's first one. */
static char *
template_schema(const char *target, const char **table)
{
	char	   *schema;
	List	   *path;

	if (eoi_target_split_template(target, &schema, table))
		return schema;
	path = fetch_search_path(false);
	if (path == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_SCHEMA_NAME),
				 errmsg("target template \"%s\" names no schema, and search_path has none", target),
				 errhint("Name the schema, e.g. 'raw.${topic}'.")));
	*table = target;
	return get_namespace_name(linitial_oid(path));
}

/*
 * A target template ('raw.${topic}'): each topic's messages go into the
 * table named by the template with ${topic} replaced by the topic (one
 * identifier, taken as written).  Stored with its schema resolved now and
 * quoted, the table's part as given.  The tables of the topics the job
 * names now are checked as a target is, those that exist; a missing one is
 * said, and the job waits for it when it gets there.
 */
static char *
resolve_template(const JobDefinition *def, const EoiMapping *mapping)
{
	bool		change_events = eoi_parse_envelope(def->envelope_s) == EOI_ENVELOPE_DEBEZIUM;
	const char *table;
	char	   *schema = template_schema(def->target, &table);
	char	   *stored;
	ListCell   *lc;
	Oid			nsp;

	nsp = LookupExplicitNamespace(schema, false);	/* exists, and USAGE */
	if (def->create_target)
		check_may_create_in(nsp, def->target);
	for (const char *p = strstr(table, "${"); p != NULL; p = strstr(p + 1, "${"))
		if (eoi_template_placeholder(p, change_events) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("target template \"%s\" has an unrecognized placeholder", def->target),
					 change_events ?
					 errhint("A target template of change events names ${topic}, ${source.db}, ${source.schema} or ${source.table}, e.g. 'replica.${source.table}'.") :
					 errhint("A target template names ${topic}, the message's topic, e.g. 'raw.${topic}'.")));
	stored = psprintf("%s.%s", quote_identifier(schema), table);
	/* the tables of change events are checked as the job first opens each */
	if (eoi_topic_is_pattern(def->topic) || change_events)
		return stored;
	foreach(lc, eoi_split_topics(def->topic))
	{
		char	   *routed = eoi_target_for_topic(stored, lfirst(lc));

		if (eoi_target_exists(routed))
			(void) resolve_target(routed, mapping, def->mode);
		else
			ereport(NOTICE,
					(errmsg("target table %s of topic \"%s\" does not exist yet", routed, (char *) lfirst(lc)),
					 def->create_target ?
					 errdetail("The job creates it from the writer schema of the topic's first message.") :
					 errdetail("The job waits for it when it has messages of that topic.")));
	}
	return stored;
}

List *
eoi_api_text_array_list(ArrayType *arr, const char *what)
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

Datum
eoi_api_list_text_array(List *names)
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

bool
eoi_api_job_exists(const char *name)
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

static void check_can_start_mode(int32 job_id, const char *name, Oid owner, EoiMode mode, int parallelism);

/* By default a one-column key is the message key's text, else like the value. */
static void
default_key_format(JobDefinition *def)
{
	if (def->key_format_s != NULL || list_length(def->key_columns) <= 1)
		return;
	def->key_format = (def->format == EOI_FORMAT_JSON || eoi_format_has_schema_id(def->format)) ?
		def->format : EOI_FORMAT_CSV;
	def->key_format_s = eoi_format_name(def->key_format);
}


/*
 * Change events into a target template: each table is keyed by its
 * primary key (or, history, by none), found when the job first opens it.
 */
static void
check_template_events(const JobDefinition *def)
{
	if (def->key_columns != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("key_columns applies to one target, and the job's target is a template"),
				 errhint("Each table a template of change events names is keyed by its primary key; leave key_columns out.")));
}

/*
 * Mode upsert into a target template: the key columns are named (there is
 * no one table to take a primary key from), and each topic's table that
 * exists now is checked with them.
 */
static void
check_template_upsert(JobDefinition *def, const EoiMapping *mapping)
{
	ListCell   *lc;

	if (def->key_columns == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mode upsert with a target template needs key_columns"),
				 errhint("Name the key columns every topic's table has a unique index on: key_columns => '{id}'.")));
	default_key_format(def);
	if (eoi_topic_is_pattern(def->topic))
		return;
	foreach(lc, eoi_split_topics(def->topic))
	{
		char	   *routed = eoi_target_for_topic(def->qualified_target, lfirst(lc));

		if (eoi_target_exists(routed))
			(void) check_upsert(routed, mapping, def->key_format, def->key_columns, "mode upsert");
	}
}

/*
 * A mapping fills the columns of one target table from plain messages: not
 * with a transform, a columns list, or change events.  Its shape and
 * sources are checked against the target with the columns (columns.c,
 * mapping.c).
 */
static void
check_mapping(JobDefinition *def)
{
	if (def->mapping == NULL)
		return;
	if (def->transform != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mapping applies to a target table, and the job has a transform"),
				 errhint("A transform maps the messages itself; leave mapping out.")));
	if (def->columns != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mapping and columns cannot both be given"),
				 errhint("The mapping names the columns it fills: map each of them, e.g. '{\"id\": \"/id\"}' (alter_job's columns => '{}' drops the columns list).")));
	if (strcmp(def->envelope_s, "none") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("mapping cannot be used with envelope %s", def->envelope_s),
				 errhint("A change event's image fills the columns of its name; leave mapping out.")));
}

/*
 * Format avro (of values or keys) reads schemas from a registry, which the
 * job must name; other formats have no use for one.
 */
static void
check_schema_registry(JobDefinition *def)
{
	if (!eoi_format_has_schema_id(def->format) && !eoi_format_has_schema_id(def->key_format))
	{
		/* format json: the registry holds the JSON Schemas of JSON Schema records */
		if (def->schema_registry != NULL && def->format == EOI_FORMAT_JSON)
			(void) eoi_check_registry_urls(def->schema_registry, def->owner);
		else if (def->schema_registry != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schema_registry is only used by formats avro, protobuf and json"),
					 errhint("Leave schema_registry out, or use format => 'avro' or 'protobuf' (or 'json', for JSON Schema records).")));
		return;
	}
	if (def->schema_registry == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("format %s needs a schema registry",
						eoi_format_has_schema_id(def->format) ? def->format_s : def->key_format_s),
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
 * cdc_mode: how envelope debezium applies an event.  history appends every
 * event, so a mode that applies a batch again after a crash would append
 * it twice, and has no key; soft_delete marks deleted rows in
 * deleted_column ("__deleted", Debezium's name, by default).  Each target's
 * columns are checked by check_cdc_mode_target.
 */
static void
check_cdc_mode(JobDefinition *def)
{
	def->cdc_mode = eoi_parse_cdc_mode(def->cdc_mode_s);
	if (def->deleted_column != NULL && def->cdc_mode != EOI_CDC_SOFT_DELETE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("deleted_column applies to cdc_mode soft_delete, and the job has cdc_mode %s", def->cdc_mode_s),
				 errhint("Pass cdc_mode => 'soft_delete', or leave deleted_column out.")));
	if (def->cdc_mode == EOI_CDC_APPLY)
		return;
	if (def->envelope != EOI_ENVELOPE_DEBEZIUM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cdc_mode %s applies Debezium change events, and the job has envelope %s",
						def->cdc_mode_s, def->envelope_s),
				 errhint("Pass envelope => 'debezium', or leave cdc_mode out.")));
	if (def->cdc_mode == EOI_CDC_SOFT_DELETE)
	{
		if (def->deleted_column == NULL)
			def->deleted_column = eoi_cdc_default_deleted_column();
		if (def->deleted_column[0] == '\0' || strlen(def->deleted_column) >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("deleted_column must name a column"),
					 errhint("Pass the name of a boolean column of the target, at most %d bytes.", NAMEDATALEN - 1)));
		return;
	}
	if (def->mode != EOI_MODE_EXACTLY_ONCE && def->mode != EOI_MODE_TWO_PHASE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cdc_mode history needs mode exactly_once or two_phase, not %s", def->mode_s),
				 errdetail("History appends a row for each change: a mode that applies a batch again after a crash would append its changes twice, one that skips it would lose them."),
				 errhint("Use mode => 'exactly_once'.")));
	if (def->key_columns != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cdc_mode history appends every change and has no key columns"),
				 errhint("Leave key_columns out.")));
}

/*
 * durability => 'async': commits do not wait for their WAL flush.  A crash
 * loses the last batches' rows and offsets together, and the job reads them
 * again.  two_phase gains nothing: PREPARE TRANSACTION is always flushed.
 */
static void
check_durability(JobDefinition *def)
{
	if (eoi_parse_durability(def->durability_s) && def->mode == EOI_MODE_TWO_PHASE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("durability async does not apply to mode two_phase"),
				 errdetail("PREPARE TRANSACTION always waits for its WAL to be flushed."),
				 errhint("Use mode => 'exactly_once' with durability => 'async', or durability => 'sync'.")));
}

/* The columns cdc_mode fills itself must be in `target` (cdcmode.c). */
static void
check_cdc_mode_target(const JobDefinition *def, const char *target, const EoiMapping *mapping,
					  List *key_columns)
{
	Relation	rel;
	int			history[EOI_HISTORY_NCOLUMNS];
	int			deleted;

	if (def->cdc_mode == EOI_CDC_APPLY)
		return;
	rel = eoi_open_target(target, AccessShareLock);
	eoi_cdc_mode_columns(rel, target, eoi_columns_for(rel, mapping, NULL), def->cdc_mode,
						 def->deleted_column, key_columns, history, &deleted);
	table_close(rel, NoLock);
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
			char	   *target = pnstrdup(v.val.string.val, v.val.string.len);
			char	   *qualified;
			JsonbValue	kv;
			JsonbValue	tv;
			List	   *keys = NIL;

			if (def->create_target && !target_named_exists(target))
				qualified = resolve_target_to_create(target);
			else
			{
				qualified = resolve_target(target, mapping, def->mode);
				if (def->cdc_mode != EOI_CDC_HISTORY)
					keys = check_upsert(qualified, mapping, EOI_FORMAT_JSON, NIL, "envelope debezium");
				check_cdc_mode_target(def, qualified, mapping, keys);
				check_may_alter_table(def, qualified);
			}
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
void
eoi_api_check_definition(JobDefinition *def)
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
	mapping.mapping = def->mapping;
	mapping.key_format = def->key_format;
	eoi_check_start_offset(def->start_offset);
	check_schema_registry(def);
	check_mapping(def);
	check_schema_following(def);

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
	def->target_missing = false;
	if (def->target != NULL && eoi_target_is_template(def->target))
		def->qualified_target = resolve_template(def, &mapping);
	else if (def->target != NULL && def->create_target && !target_named_exists(def->target))
	{
		def->target_missing = true;
		def->qualified_target = resolve_target_to_create(def->target);
	}
	else if (def->target != NULL)
		def->qualified_target = resolve_target(def->target, &mapping, def->mode);
	else if (def->transform != NULL)
		check_transform_with_path(def->transform, def->search_path);

	check_envelope(def);
	check_cdc_mode(def);
	check_durability(def);
	check_targets(def, &mapping);
	check_transactions(def);
	check_may_alter(def);
	if (def->target_missing)
	{
		/*
		 * The table is created with the key columns, or the key schema's
		 * fields, as its primary key: change events' keys have a schema.
		 */
		if (def->mode == EOI_MODE_UPSERT && def->envelope != EOI_ENVELOPE_DEBEZIUM &&
			def->key_columns == NIL && !eoi_format_has_schema_id(def->key_format))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("mode upsert with create_target needs key_columns, or Avro or Protobuf keys, while the target does not exist"),
					 errhint("Name the fields of the key: key_columns => '{id}', or take the key schema's fields with key_format => 'avro' or 'protobuf'; the table is created with them as its primary key.")));
		if (def->mode == EOI_MODE_UPSERT)
			default_key_format(def);
	}
	else if (def->envelope == EOI_ENVELOPE_DEBEZIUM && eoi_target_is_template(def->qualified_target))
		check_template_events(def);
	else if (def->cdc_mode == EOI_CDC_HISTORY && def->target != NULL)
		check_cdc_mode_target(def, def->qualified_target, &mapping, NIL);
	else if (def->mode == EOI_MODE_UPSERT && eoi_target_is_template(def->qualified_target))
		check_template_upsert(def, &mapping);
	else if ((def->mode == EOI_MODE_UPSERT || def->envelope == EOI_ENVELOPE_DEBEZIUM) && def->target != NULL)
	{
		Relation	rel = eoi_open_target(def->qualified_target, AccessShareLock);

		if (def->key_columns == NIL)
			def->key_columns = eoi_primary_key_columns(rel);
		table_close(rel, NoLock);
		default_key_format(def);
		def->key_columns = check_upsert(def->qualified_target, &mapping, def->key_format,
										def->key_columns,
										def->envelope == EOI_ENVELOPE_DEBEZIUM ? "envelope debezium" : "mode upsert");
		check_cdc_mode_target(def, def->qualified_target, &mapping, def->key_columns);
	}
	if (def->key_format_s == NULL)
		def->key_format_s = "text";
	if (def->running)
		check_can_start_mode(def->id, def->name, def->owner, def->mode, def->parallelism);

	eoi_kafka_check_options(def->brokers, def->options, def->owner);
}

/* ---- may the job start in its mode ---- */

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
				 errmsg("two_phase job \"%s\" needs %d more prepared transactions than max_prepared_transactions allows",
						name, parallelism + others - max_prepared_xacts),
				 errdetail("The job needs %d, the running two_phase jobs %d more, and max_prepared_transactions is %d. Each worker of a two_phase job holds a prepared transaction at the end of every checkpoint epoch.",
						   parallelism, others, max_prepared_xacts),
				 errhint("Set max_prepared_transactions to at least %d (plus what other clients use) and restart the server, or stop another two_phase job first.",
						 parallelism + others)));
}

void
eoi_api_check_can_start(const EoiJob *job)
{
	check_can_start_mode(job->id, job->name, job->owner, job->mode, job->parallelism);
}
