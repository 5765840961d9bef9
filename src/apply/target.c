/*-------------------------------------------------------------------------
 *
 * target.c
 *	  A job's target table: finding it by its stored name, and checking
 *	  that it is a table the job may write, as COPY would check it; and
 *	  the checks every write makes of one message (its size, a tombstone).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "executor/executor.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/regproc.h"

#include "apply/execcompat.h"
#include "apply/target.h"
#include "kafka/batch.h"
#include "store/job.h"

static RangeVar *
target_rangevar(const char *target)
{
	List	   *names;

	names = eoi_qualified_name_list(target);
	return makeRangeVarFromNameList(names);
}

static void
check_is_table(Relation rel, const char *target)
{
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("target \"%s\" is not a table", target)));
}

/* Open the job's target by its stored, schema-qualified name. */
Relation
eoi_open_target(const char *target, LOCKMODE lockmode)
{
	Relation	rel = table_openrv(target_rangevar(target), lockmode);

	check_is_table(rel, target);
	return rel;
}

/*
 * A target template names each topic's table: "schema".prefix${topic}suffix
 * as stored, the schema quoted, the table's part as written, where each
 * ${topic} stands for the message's topic (the whole, one identifier); a
 * change event's may name ${source.db}, ${source.schema} and
 * ${source.table} too, the members of its source block.
 */
bool
eoi_target_is_template(const char *target)
{
	return target != NULL && strstr(target, "${") != NULL;
}

/*
 * A template's schema, unquoted, and its table part: the schema is what
 * stands before the last '.' ahead of the first ${ (one name, quoted or
 * not), the table part what follows it, as written.  False when the
 * template names no schema.
 */
bool
eoi_target_split_template(const char *template, char **schema, const char **table)
{
	const char *placeholder = strstr(template, "${");
	const char *dot = NULL;
	List	   *names;

	for (const char *p = template; p < placeholder; p++)
		if (*p == '.')
			dot = p;
	if (dot == NULL)
		return false;
	names = eoi_qualified_name_list(pnstrdup(template, dot - template));
	if (list_length(names) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("target template \"%s\" names more than a schema before its table", template),
				 errhint("Write schema.table, with ${topic} in the table's part, e.g. 'raw.${topic}'.")));
	*schema = strVal(linitial(names));
	*table = dot + 1;
	return true;
}

/* The placeholders of a target template, and where their values come from. */
static const struct
{
	const char *placeholder;
	size_t		offset;			/* of the value in EoiTemplateValues */
}			placeholders[] = {
	{"${topic}", offsetof(EoiTemplateValues, topic)},
	{"${source.db}", offsetof(EoiTemplateValues, source_db)},
	{"${source.schema}", offsetof(EoiTemplateValues, source_schema)},
	{"${source.table}", offsetof(EoiTemplateValues, source_table)},
};

/*
 * The placeholder `p` begins with, counted as in placeholders[], or -1.
 * Change events' templates may name their source block's members;
 * other messages' only their topic.
 */
int
eoi_template_placeholder(const char *p, bool change_events)
{
	for (int i = 0; i < (change_events ? lengthof(placeholders) : 1); i++)
		if (strncmp(p, placeholders[i].placeholder, strlen(placeholders[i].placeholder)) == 0)
			return i;
	return -1;
}

/* Does the template name a member of a change event's source block? */
bool
eoi_template_uses_source(const char *template)
{
	return strstr(template, "${source.") != NULL;
}

/* Has every placeholder of `template` a value? */
bool
eoi_template_values_complete(const char *template, const EoiTemplateValues *values)
{
	for (const char *p = strstr(template, "${"); p != NULL; p = strstr(p + 1, "${"))
	{
		int			i = eoi_template_placeholder(p, true);

		if (i >= 0 && *(const char *const *) ((const char *) values + placeholders[i].offset) == NULL)
			return false;
	}
	return true;
}

/*
 * The schema-qualified, quoted name of the table `template` routes a
 * message to, each placeholder replaced by its value (the whole value, as
 * one identifier).  A name longer than PostgreSQL's identifiers is an
 * error that names the topic, never a truncation; a change event without
 * the source member a placeholder names is an error of the record.
 */
char *
eoi_target_for(const char *template, const EoiTemplateValues *values)
{
	char	   *schema;
	const char *table;
	StringInfoData name;

	/* stored with its schema (jobdef.c) */
	if (!eoi_target_split_template(template, &schema, &table))
		elog(ERROR, "target template \"%s\" has no schema", template);
	initStringInfo(&name);
	for (const char *p = table; *p;)
	{
		int			i = strncmp(p, "${", 2) == 0 ? eoi_template_placeholder(p, true) : -1;
		const char *value;

		if (i < 0)
		{
			appendStringInfoChar(&name, *p++);
			continue;
		}
		value = *(const char *const *) ((const char *) values + placeholders[i].offset);
		if (value == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_EXCEPTION),
					 errmsg("a change event of topic \"%s\" has no %.*s, which target template \"%s\" names",
							values->topic, (int) strlen(placeholders[i].placeholder) - 3,
							placeholders[i].placeholder + 2, template),
					 errhint("Route the topic's events with a template of the members their source block has, or with targets.")));
		appendStringInfoString(&name, value);
		p += strlen(placeholders[i].placeholder);
	}
	if (name.len >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("the target table of topic \"%s\" would be named \"%s\", longer than %d bytes",
						values->topic, name.data, NAMEDATALEN - 1),
				 errhint("Shorten the fixed part of the target template, or read this topic with a job of its own.")));
	return quote_qualified_identifier(schema, name.data);
}

/* The table `template` routes the messages of `topic` to (see eoi_target_for). */
char *
eoi_target_for_topic(const char *template, const char *topic)
{
	EoiTemplateValues values = {topic, NULL, NULL, NULL};

	return eoi_target_for(template, &values);
}

/* Does a relation of the stored, schema-qualified name exist now? */
bool
eoi_target_exists(const char *target)
{
	return OidIsValid(RangeVarGetRelid(target_rangevar(target), NoLock, true));
}

/*
 * Open the target a job writes into.  The job stores the target by name:
 * a table renamed, moved to another schema or dropped under it is not
 * found, and the error says which and how to go on.  A table this process
 * wrote into before is recognised by its OID under its new name.
 */
Relation
eoi_open_job_target(const EoiJob *job, LOCKMODE lockmode)
{
	static Oid	last_relid = InvalidOid;
	Relation	rel = table_openrv_extended(target_rangevar(job->target), lockmode, true);
	char	   *relname;

	if (rel != NULL)
	{
		check_is_table(rel, job->target);
		last_relid = RelationGetRelid(rel);
		return rel;
	}

	relname = OidIsValid(last_relid) ? get_rel_name(last_relid) : NULL;
	if (relname != NULL)
	{
		char	   *now = quote_qualified_identifier(get_namespace_name(get_rel_namespace(last_relid)),
													 relname);

		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("target \"%s\" of job \"%s\" no longer exists under that name",
						job->target, job->name),
				 errdetail("The table was renamed or moved to another schema; it is now %s.", now),
				 errhint("Point the job at it with eoingest.alter_job(%s, target => %s), then run eoingest.start_job(%s); or give the table its old name back.",
						 quote_literal_cstr(job->name), quote_literal_cstr(now),
						 quote_literal_cstr(job->name))));
	}
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("target \"%s\" of job \"%s\" does not exist", job->target, job->name),
			 errdetail("The table was dropped, renamed or moved to another schema."),
			 errhint("Create the table again (the job resumes at its stored offsets), or point the job at the table's new name with eoingest.alter_job(%s, target => ...); then run eoingest.start_job(%s).",
					 quote_literal_cstr(job->name), quote_literal_cstr(job->name))));
	pg_unreachable();
}

/*
 * Put the target in `pstate`'s range table, for an INSERT of the given
 * columns: what the executor and COPY FROM are then started with.
 */
void
eoi_target_range_table(ParseState *pstate, Relation rel, List *colnames)
{
	ParseNamespaceItem *nsitem;
	ListCell   *lc;
	Bitmapset  *cols = NULL;

	nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL, false, false);
	foreach(lc, colnames)
	{
		AttrNumber	attnum = attnameAttNum(rel, strVal(lfirst(lc)), false);

		cols = bms_add_member(cols, attnum - FirstLowInvalidHeapAttributeNumber);
	}
	eoi_require_insert(nsitem, cols);
}

/*
 * Check the permissions eoi_target_range_table() put in `pstate`'s range table, and
 * refuse a target with row-level security, as COPY FROM does.
 */
void
eoi_check_insert(struct ParseState *pstate, Relation rel)
{
	eoi_check_range_table_permissions(pstate);
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("target \"%s\" has row-level security enabled",
						RelationGetRelationName(rel)),
				 errdetail("A target's rows go in as COPY FROM or INSERT ... ON CONFLICT would write them, but without the policies' checks."),
				 errhint("Write through a transform (INSERT INTO ... SELECT ... FROM eoingest.batch()), where the policies apply, and a row they refuse is a dead letter.")));
}

/* Do the mode's guarantees rest on the WAL: rows and offsets alike? */
static bool
mode_is_exact(EoiMode mode)
{
	return mode == EOI_MODE_EXACTLY_ONCE || mode == EOI_MODE_TWO_PHASE ||
		mode == EOI_MODE_UPSERT;
}

/*
 * The first partition of a partitioned `rel`, at any depth, whose rows
 * would not commit with this transaction's offsets, or InvalidOid: one not
 * WAL-logged (unlogged; a temporary one cannot be attached to a permanent
 * table, but costs nothing to look for), or a foreign table (its rows
 * commit on the remote server before this transaction does), as *foreign
 * says.  The partitions are read from pg_inherits without locking them: the
 * caller holds a lock on `rel`, and a partition attached or altered after
 * this look is seen the next time the target is opened.
 */
static Oid
inexact_partition(Relation rel, bool *foreign)
{
	List	   *tree;
	ListCell   *lc;

	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		return InvalidOid;
	tree = find_all_inheritors(RelationGetRelid(rel), NoLock, NULL);
	foreach(lc, tree)
	{
		Oid			relid = lfirst_oid(lc);

		*foreign = get_rel_relkind(relid) == RELKIND_FOREIGN_TABLE;
		if (*foreign || get_rel_persistence(relid) != RELPERSISTENCE_PERMANENT)
			return relid;
	}
	return InvalidOid;
}

/*
 * Is `rel` a table a job may write into?  Not a system catalog (nor
 * information_schema), and, in the modes whose guarantee is that rows and
 * offsets survive together, not UNLOGGED, nor holding an UNLOGGED partition
 * anywhere in its tree: a crash empties an unlogged table while the
 * WAL-logged offsets stay, and the rows are lost for good.  Nor holding a
 * foreign partition: a local failure after the remote commit leaves its rows
 * there, uncounted, and the batch is written again.  Checked at
 * create_job and alter_job, and by the worker whenever it opens the table
 * (ALTER TABLE ... SET UNLOGGED, or ATTACH PARTITION, under a running job).
 */
void
eoi_check_target_kind(Relation rel, EoiMode mode)
{
	const char *nspname = get_namespace_name(RelationGetNamespace(rel));
	Oid			partition;
	bool		foreign = false;

	if (IsCatalogRelation(rel) || IsToastRelation(rel) ||
		strcmp(nspname, "information_schema") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("target \"%s\" is a system catalog", RelationGetRelationName(rel)),
				 errhint("Write into a table of your own.")));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED && mode_is_exact(mode))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target \"%s\" is an unlogged table, which mode %s cannot write into",
						RelationGetRelationName(rel), eoi_mode_name(mode)),
				 errdetail("A crash empties an unlogged table, while the offsets saying its rows were consumed survive: those rows would be lost."),
				 errhint("Make the table logged (ALTER TABLE ... SET LOGGED), or use mode at_least_once or at_most_once, which promise less.")));
	if (!mode_is_exact(mode) || !OidIsValid(partition = inexact_partition(rel, &foreign)))
		return;
	if (foreign)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target \"%s\" has a foreign partition \"%s\", which mode %s cannot write into",
						RelationGetRelationName(rel), get_rel_name(partition), eoi_mode_name(mode)),
				 errdetail("The rows of a foreign table commit on its server before the batch's transaction commits here: should this transaction fail afterwards, they stay there while the offsets do not count them, and the batch is written again."),
				 errhint("Detach the foreign partition (ALTER TABLE %s DETACH PARTITION %s), or use mode at_least_once or at_most_once, which promise less.",
						 quote_qualified_identifier(nspname, RelationGetRelationName(rel)),
						 quote_qualified_identifier(get_namespace_name(get_rel_namespace(partition)),
													get_rel_name(partition)))));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("target \"%s\" has an unlogged partition \"%s\", which mode %s cannot write into",
					RelationGetRelationName(rel), get_rel_name(partition), eoi_mode_name(mode)),
			 errdetail("A crash empties an unlogged partition, while the offsets saying its rows were consumed survive: those rows would be lost."),
			 errhint("Make the partition logged (ALTER TABLE %s SET LOGGED), or use mode at_least_once or at_most_once, which promise less.",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(partition)),
												get_rel_name(partition)))));
}

/* Check, as COPY would, that the current user may insert these columns. */
void
eoi_check_target_insert(Relation rel, List *colnames)
{
	ParseState *pstate = make_parsestate(NULL);

	eoi_target_range_table(pstate, rel, colnames);
	eoi_check_insert(pstate, rel);
	free_parsestate(pstate);
}

/* A message larger than max_message_bytes is a bad record. */
void
eoi_check_message_size(const EoiJob *job, rd_kafka_message_t *msg, const char *topic)
{
	if (msg->len + msg->key_len > (size_t) job->max_message_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("message of %zu bytes is larger than max_message_bytes (%d)",
						msg->len + msg->key_len, job->max_message_bytes),
				 errcontext(EOI_MESSAGE_CONTEXT, topic, msg->partition, (long long) msg->offset)));
}

/* A tombstone where a row is written: only mode upsert takes them. */
void
eoi_refuse_tombstone(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
			 errmsg("message has a null value (a tombstone)"),
			 errhint("Tombstones delete rows in mode upsert only; use a transform to handle them otherwise.")));
}
