/*-------------------------------------------------------------------------
 *
 * cdcevolve.c
 *	  create_target and schema_changes for change events: a target that
 *	  does not exist is made from the schema of its first event's after
 *	  image, keyed by the fields of the key's schema (or key_columns), with
 *	  the columns its cdc_mode fills; a column a source table gains becomes
 *	  a column of its target.  apply/evolve.c does the work, as for plain
 *	  records, in the batch's transaction and before its events.
 *
 * The schemas are those the events carry: Kafka Connect's wrapper (format
 * json, JsonConverter with schemas.enable=true) or the Avro writer schema
 * (the record of its "after" field).  An event without one
 * (schemas.enable=false) tells nothing: its target must exist.
 *
 * Before a batch's events are applied, the schema of each is looked at
 * once per topic: the first event of each decides the target (routed by
 * its source table) that the schema is for, and the target is made to hold
 * all the batch's schemas for it in the order they came.  Debezium writes
 * a table's events with a schema of its own, named after it; a topic of
 * tables that share one (shards merged by a routing transform) has its
 * other tables made to hold their first event's schema as the batch first
 * comes to them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "apply/evolve.h"
#include "envelope/cdc_internal.h"
#include "format/avro.h"

/* What the batch's events ask of one target. */
typedef struct TargetSchemas
{
	char	   *target;
	List	   *uses;			/* of EoiSchemaUse, in the order they came */
	int			first;			/* the batch's first message for it */
} TargetSchemas;

/* The name Kafka Connect gives `schema`, or "unnamed". */
static const char *
connect_schema_name(JsonbContainer *schema)
{
	char	   *name = eoi_connect_member_string(schema, "name");

	return name != NULL ? name : "unnamed";
}

/*
 * The fields of a Connect struct schema, named by its name and a hash of
 * its text, so that two versions of a table's schema are two schemas.
 */
static const EoiSchemaFields *
connect_fields(JsonbContainer *schema)
{
	char	   *text = JsonbToCString(NULL, schema, -1);
	uint64		hash = hash_bytes_extended((const unsigned char *) text, strlen(text), 0);

	return eoi_connect_struct_fields(schema, psprintf("Kafka Connect schema %s %016llx",
													  connect_schema_name(schema),
													  (unsigned long long) hash));
}

/*
 * Whether an event carries the schema of its after image, and which: an
 * Avro schema's fields (*fields, also *key), or, format json, the serial
 * of a schema in the batch's cache (*key; NULL for one not cached).  *ev is
 * the message as a change event (format json).
 */
static bool
event_schema(CdcRoutes *routes, rd_kafka_message_t *msg, EventJson *ev,
			 const EoiSchemaFields **fields, const void **key)
{
	const char *data;
	size_t		len;

	memset(ev, 0, sizeof(*ev));
	*fields = NULL;
	if (routes->job->format == EOI_FORMAT_AVRO)
	{
		data = eoi_framed_message(EOI_FORMAT_AVRO, msg, false, false, &len);
		*fields = eoi_avro_schema_field_fields(data, len, "after");
		*key = *fields;
		return (*fields)->record;
	}
	eoi_cdc_split_message(routes, msg, false, ev);
	*key = (const void *) (intptr_t) ev->serial;
	return ev->after_schema != NULL;
}

/* The fields of a message key's schema, or NIL when it has none that is a record. */
static List *
key_fields(CdcRoutes *routes, rd_kafka_message_t *msg)
{
	const EoiSchemaFields *f;
	List	   *names = NIL;

	if (msg->key == NULL)
		return NIL;
	if (routes->job->format == EOI_FORMAT_AVRO)
	{
		const char *data;
		size_t		len;

		data = eoi_framed_message(EOI_FORMAT_AVRO, msg, true, false, &len);
		f = eoi_avro_schema_fields(data, len);
	}
	else
	{
		EventJson	key;

		eoi_cdc_split_message(routes, msg, true, &key);
		if (key.schema == NULL)
			return NIL;
		f = eoi_connect_struct_fields(key.schema, "the key's schema");
	}
	if (!f->record)
		return NIL;
	for (int i = 0; i < f->nfields; i++)
		names = lappend(names, makeString(pstrdup(f->fields[i].name)));
	return names;
}

static TargetSchemas *
target_schemas(List **targets, const char *target, int message)
{
	ListCell   *lc;
	TargetSchemas *ts;

	foreach(lc, *targets)
		if (strcmp(((TargetSchemas *) lfirst(lc))->target, target) == 0)
			return lfirst(lc);
	ts = palloc0(sizeof(TargetSchemas));
	ts->target = pstrdup(target);
	ts->first = message;
	*targets = lappend(*targets, ts);
	return ts;
}

static void
add_use(TargetSchemas *ts, const EoiSchemaFields *fields, const char *topic)
{
	ListCell   *lc;
	EoiSchemaUse *use;

	foreach(lc, ts->uses)
		if (strcmp(((EoiSchemaUse *) lfirst(lc))->fields->what, fields->what) == 0)
			return;
	use = palloc(sizeof(EoiSchemaUse));
	use->fields = eoi_schema_fields_copy(fields);
	use->topic = pstrdup(topic);
	ts->uses = lappend(ts->uses, use);
}

/* What the look at a batch's events has found, and the last event's schema. */
typedef struct Look
{
	List	   *seen;			/* of String: "topic\nschema", each once */
	List	   *targets;		/* of TargetSchemas */
	MemoryContext keep;			/* where they live */
	const char *last_topic;
	const void *last_schema;
} Look;

/*
 * Look at message i: when its schema is new for its topic, note it for
 * its target.  In a short-lived memory context; what is kept is copied
 * into look->keep.  A message of the last one's topic and schema is
 * passed over at once: most are.
 */
static void
look_at(CdcRoutes *routes, EoiBatch *batch, int i, Look *look)
{
	rd_kafka_message_t *msg = batch->messages[i];
	const char *topic = eoi_message_topic(batch, i);
	EventJson	ev;
	const EoiSchemaFields *fields;
	const void *key;
	bool		same;
	char	   *seen_as;
	char	   *target;
	MemoryContext old;

	if (!event_schema(routes, msg, &ev, &fields, &key))
		return;					/* none */
	same = key != NULL && key == look->last_schema &&
		look->last_topic != NULL && strcmp(look->last_topic, topic) == 0;
	if (same)
		return;
	seen_as = psprintf("%s\n%s", topic,
					   fields != NULL ? fields->what :
					   key != NULL ? psprintf("%d", (int) (intptr_t) key) :
					   JsonbToCString(NULL, ev.after_schema, -1));
	if (list_member(look->seen, makeString(seen_as)))
	{
		look->last_topic = topic;
		look->last_schema = key;
		return;
	}
	if (fields == NULL)
		fields = connect_fields(ev.after_schema);
	if (routes->job->format == EOI_FORMAT_AVRO)
		eoi_cdc_split_message(routes, msg, false, &ev);	/* to route it */
	target = eoi_cdc_event_target(routes, &ev, topic, true);
	if (target == NULL)
		return;					/* applying it says why it has no target */
	old = MemoryContextSwitchTo(look->keep);
	look->seen = lappend(look->seen, makeString(pstrdup(seen_as)));
	look->last_topic = topic;
	look->last_schema = key;
	add_use(target_schemas(&look->targets, target, i), fields, topic);
	MemoryContextSwitchTo(old);
}

/*
 * What a table made for the events of `msg` holds besides their fields:
 * the columns cdc_mode fills, and its primary key: key_columns, or the
 * fields of the schema of the message's key (the source table's primary
 * key).  History has none.
 */
static EoiNewTarget
new_target(CdcRoutes *routes, const char *target, rd_kafka_message_t *msg)
{
	const EoiJob *job = routes->job;
	EoiNewTarget shape = {0};

	shape.columns = eoi_cdc_mode_column_definitions(job->cdc_mode, job->deleted_column);
	if (job->cdc_mode == EOI_CDC_HISTORY)
		return shape;
	if (job->targets == NULL && job->key_columns != NIL)
		shape.key = job->key_columns;
	else
		shape.key = key_fields(routes, msg);
	if (shape.key == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("target %s does not exist, and the change event has no key with a schema to make its primary key of", target),
				 errdetail("Change events are applied by key: create_target makes the table's primary key of the fields of the events' key schema."),
				 errhint("Give the source table a primary key, or create the target yourself with one.")));
	return shape;
}

/*
 * Before the events of `batch` are applied: create their missing targets
 * and add and widen their columns, as the job's create_target and
 * schema_changes say and the events' schemas ask.
 */
void
eoi_cdc_evolve_targets(CdcRoutes *routes, EoiBatch *batch)
{
	const EoiJob *job = routes->job;
	MemoryContext keep = CurrentMemoryContext;
	MemoryContext each;
	EventPosition ep = {batch, -1};
	ErrorContextCallback errcb;
	Look		look = {NIL, NIL, keep, NULL, NULL};
	ListCell   *lc;

	if (!job->create_target && job->schema_changes == EOI_SCHEMA_CHANGES_NONE)
		return;
	each = AllocSetContextCreate(CurrentMemoryContext, "eoingest change event schemas",
								 ALLOCSET_DEFAULT_SIZES);
	errcb.callback = eoi_cdc_event_errcontext;
	errcb.arg = &ep;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	for (int i = 0; i < batch->n; i++)
	{
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		if (batch->messages[i]->payload == NULL ||
			(job->txn_topic != NULL && strcmp(eoi_message_topic(batch, i), job->txn_topic) == 0))
			continue;
		ep.current = i;
		old = MemoryContextSwitchTo(each);
		look_at(routes, batch, i, &look);
		MemoryContextSwitchTo(old);
		MemoryContextReset(each);
	}
	ep.current = -1;

	foreach(lc, look.targets)
	{
		TargetSchemas *ts = lfirst(lc);
		EoiNewTarget shape = {0};

		/* what the table needs is its first event's */
		ep.current = ts->first;
		if (job->create_target && !eoi_target_exists(ts->target))
			shape = new_target(routes, ts->target, batch->messages[ts->first]);
		ep.current = -1;
		eoi_evolve_target_to(job, ts->target, ts->uses, &shape);
	}
	error_context_stack = errcb.previous;
	MemoryContextDelete(each);
}

/*
 * As an event's target is first opened in a batch: make it hold the
 * event's schema (create it, add and widen its columns), as the job says.
 * The look at the batch's schemas above did that for the first event of
 * each topic and schema; a topic of several source tables that share a
 * schema (a routing transform that merges shards) has its other tables
 * handled here.  Errors are the event's.
 */
void
eoi_cdc_evolve_for_event(CdcRoutes *routes, const char *target, EventJson *ev,
						 rd_kafka_message_t *msg, const char *topic)
{
	const EoiJob *job = routes->job;
	const EoiSchemaFields *fields = NULL;
	EoiNewTarget shape = {0};
	List	   *uses = NIL;

	if (!job->create_target && job->schema_changes == EOI_SCHEMA_CHANGES_NONE)
		return;
	if (job->format == EOI_FORMAT_AVRO)
	{
		size_t		len;
		const char *data = eoi_framed_message(EOI_FORMAT_AVRO, msg, false, false, &len);

		fields = eoi_avro_schema_field_fields(data, len, "after");
		if (!fields->record)
			fields = NULL;
	}
	else if (ev->after_schema != NULL)
		fields = connect_fields(ev->after_schema);
	if (fields != NULL)
	{
		EoiSchemaUse *use = palloc(sizeof(EoiSchemaUse));

		use->fields = eoi_schema_fields_copy(fields);
		use->topic = topic;
		uses = list_make1(use);
	}
	if (job->create_target && uses != NIL && !eoi_target_exists(target))
		shape = new_target(routes, target, msg);
	eoi_evolve_target_to(job, target, uses, &shape);
}
