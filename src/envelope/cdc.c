/*-------------------------------------------------------------------------
 *
 * cdc.c
 *	  Change data capture: applying Debezium change events to the target.
 *
 * With envelope => 'debezium' (format json) each message is a change event
 * {before, after, op, source, ts_ms, ...}, bare or inside Kafka Connect's
 * schema wrapper {"schema": ..., "payload": ...}.  The events become the
 * upserts and deletes of an EoiChangeSet (upsert.c), so that a batch is
 * applied as upsert mode applies one: the net effect per key, in partition
 * order, one DELETE and one INSERT ... ON CONFLICT, in the transaction that
 * also moves the offsets (whatever the mode).
 *
 *	c, r	the after image is inserted, or updates the row of its key (a
 *			snapshot may overlap the stream).
 *	u		the after image replaces the row of the old key: the key of the
 *			before image, else of the message key, else of the after image.
 *			When the old key differs from the new one, the old row is deleted.
 *			A u whose key is not in the target inserts the row (docs/cdc.md).
 *	d		deletes the row of the before image's key, else the message key's.
 *	t		truncates the target if the job allows it (on_truncate), else is
 *			an error of the record.
 *	null	(a tombstone, after a delete, for compaction) does nothing.
 *
 * An event that Debezium sends again after Kafka Connect restarts, one of a
 * source position before the last one applied from its partition, is
 * skipped (cdcreplay.c).
 *
 * With create_target and schema_changes, a target is created, or given
 * the columns the events' schemas add, before the events that need it are
 * applied (cdcevolve.c).
 *
 * The images' fields fill the columns of those names, as format json maps
 * an object (format/decodejson.c).  A field that is not a column of the target, or a
 * missing or null key, is an error of the record, as is an unknown op.
 *
 * Debezium encodes many types as numbers, base64 strings or structs.  With
 * the schema wrapper each field's Connect type names the encoding (a
 * Conversion); without it, the encoding is assumed from the target column's
 * type and the JSON value's type.
 *
 * This file owns the events: their keys and images, and applying them to
 * their targets.  A message is read as a change event in cdcjson.c, and
 * its fields' encodings (codecs) and their conversions are in cdcconv.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"

#include "apply/evolve.h"
#include "apply/sink.h"
#include "envelope/cdc.h"
#include "envelope/cdc_internal.h"
#include "envelope/cdctxn.h"
#include "store/offsets.h"

/* ---- events ---- */

/*
 * The codecs of `cols` for an image, from its struct schema or the target.
 * *tag says which codecs `codecs` holds; want: the CODECS_TAG of this
 * image's schema, 0 if it is not cached.
 */
static void
image_codecs(CdcContext *cx, EoiColumns *cols, EoiFieldCodec *codecs, int *tag, int want,
			 JsonbContainer *struct_schema, JsonbContainer *image)
{
	TupleDesc	desc = RelationGetDescr(cx->rel);
	bool		from_schema = true;

	if (cx->job->format == EOI_FORMAT_AVRO)
	{
		/* avro.c wrote each value as the column type reads it */
		if (*tag != -1)
			memset(codecs, 0, sizeof(EoiFieldCodec) * cols->ncolumns);	/* CONV_NONE */
		*tag = -1;
		return;
	}
	if (want != 0 && *tag == want)
		return;
	for (int c = 0; c < cols->ncolumns; c++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, attnameAttNum(cx->rel, cols->colnames[c], false) - 1);
		JsonbContainer *field = eoi_connect_schema_field(struct_schema, cols->colnames[c]);
		JsonbValue	v;

		if (field != NULL)
			codecs[c] = eoi_connect_codec(field, att->atttypid);
		else
		{
			codecs[c] = eoi_cdc_codec_from_column(att->atttypid, att->atttypmod,
										  eoi_connect_member(image, cols->colnames[c], &v));
			from_schema = false;
		}
	}
	/* codecs that depend on the image's values are for this image only */
	*tag = from_schema ? want : 0;
}

static int
codecs_tag(const EventJson *ev, int kind)
{
	return ev->serial != 0 ? CODECS_TAG(ev->serial, kind) : 0;
}

/*
 * May an image's text go straight into `cols`, with the codecs `codecs`
 * (tagged *tag) holds?  Format avro: always, once they are set to none here
 * (the text is avrojson.c's, each value as the column type reads it).
 * Format json: when they are those of the image's cached schema (want).
 */
static bool
ready_text_codecs(CdcContext *cx, EoiColumns *cols, EoiFieldCodec *codecs, int *tag, int want)
{
	if (cx->job->format == EOI_FORMAT_AVRO)
	{
		image_codecs(cx, cols, codecs, tag, want, NULL, NULL);
		return true;
	}
	return cx->job->format == EOI_FORMAT_JSON && want != 0 && *tag == want;
}

/* Every field of the after image must be a column of the target. */
static void
check_image_fields(CdcContext *cx, JsonbContainer *image)
{
	JsonbIterator *it = JsonbIteratorInit(image);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		bool		found = false;

		if (tok != WJB_KEY)
			continue;
		for (int c = 0; c < cx->cols->ncolumns && !found; c++)
			found = strlen(cx->cols->colnames[c]) == v.val.string.len &&
				memcmp(cx->cols->colnames[c], v.val.string.val, v.val.string.len) == 0;
		if (!found)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("field \"%.*s\" of the change event's after image is not a column of \"%s\"",
							(int) v.val.string.len, v.val.string.val, RelationGetRelationName(cx->rel)),
					 errhint("The target must have a column for every column of the source table: add it, or drop it from the capture.")));
	}
}

/* Error unless each key field is there and not null. */
static void
check_key_fields(CdcContext *cx, char **fields, const int *positions, const char *where)
{
	for (int k = 0; k < cx->keys->ncolumns; k++)
		if (fields[positions ? positions[k] : k] == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("change event has no key: no value for key column \"%s\" in %s",
							cx->keys->colnames[k], where),
					 errhint("The key columns (key_columns, or the target's primary key) must be in the event's images or its message key.")));
}

/*
 * Decode the key of an image (the before image, or the message key) into
 * `cw`, which keeps it (and passes it on if it has an inner writer).  The
 * image comes parsed (`object`), or as the text of an object that a scan
 * has checked or avrojson.c wrote: that is read as format json reads a
 * message once the codecs `kc` keeps are ready (ready_text_codecs), and
 * parsed otherwise (jsonb_in of a key of a few bytes costs more than the
 * rest of its event).  Returns false if the image lacks a key column.
 */
static bool
decode_key(CdcContext *cx, KeyCodecs *kc, JsonbContainer *object, const char *text,
		   size_t len, JsonbContainer *struct_schema, int tag, ConvertingWriter *cw)
{
	cw->codecs = kc->codecs;
	if (object == NULL && ready_text_codecs(cx, cx->keys, kc->codecs, &kc->tag, tag))
		eoi_decode_json_text(cx->keys, text, len, &cw->writer, cx->econtext);
	else
	{
		if (object == NULL)
			object = &eoi_cdc_parse_json(text, len)->root;
		image_codecs(cx, cx->keys, kc->codecs, &kc->tag, tag, struct_schema, object);
		eoi_decode_json_object(cx->keys, object, &cw->writer, cx->econtext);
	}
	for (int k = 0; k < cx->keys->ncolumns; k++)
		if (cw->fields[k] == NULL)
			return false;
	return true;
}

/*
 * Is the payload an object whose text may be read as it is?  A payload
 * that known_wrapper found is scanned first, as payload_object does, so
 * that a payload the scan declines is parsed with the whole message.
 */
static bool
payload_text_checked(CdcRoutes *routes, EventJson *ev)
{
	MemberScan	any = {NULL, 0, false, false};

	if (ev->payload != NULL || ev->text == NULL || ev->text[0] != '{')
		return false;
	if (ev->whole != NULL && !eoi_cdc_scan_members(routes, ev->text, ev->len, &any))
		return false;
	ev->whole = NULL;			/* the text is checked */
	return true;
}

/*
 * The old key of an update or delete: of the before image if it has one
 * (`before` parsed, or the text event_parts kept), else of the message
 * key.  Returns false if neither has.
 */
static bool
old_key(CdcContext *cx, rd_kafka_message_t *msg, JsonbContainer *before,
		const EventJson *ev, ConvertingWriter *cw)
{
	EventJson	key;
	int			tag;

	if ((before != NULL || ev->before_text != NULL) &&
		decode_key(cx, &cx->before_key, before, ev->before_text, ev->before_len,
				   ev->before_schema, codecs_tag(ev, IMAGE_BEFORE), cw))
		return true;
	if (msg->key == NULL || msg->key_len == 0)
		return false;
	eoi_cdc_split_message(cx->routes, msg, true, &key);
	tag = codecs_tag(&key, IMAGE_KEY);
	if (payload_text_checked(cx->routes, &key))
		return decode_key(cx, &cx->message_key, NULL, key.text, key.len, key.schema, tag, cw);
	return eoi_cdc_payload_object(cx->routes, &key) != NULL &&
		decode_key(cx, &cx->message_key, key.payload, NULL, 0, key.schema, tag, cw);
}

static bool
same_key_text(CdcContext *cx, char **key, char **row)
{
	for (int k = 0; k < cx->keys->ncolumns; k++)
		if (strcmp(key[k], row[cx->keypos[k]]) != 0)
			return false;
	return true;
}

/*
 * Debezium's stand-in for a value it could not read: with replica identity
 * default, an update that leaves a TOASTed column unchanged carries no value
 * for it, and the after image has this (unavailable.value.placeholder's
 * default) as text, or its bytes for a bytes field (base64, or hex with
 * binary.handling.mode=hex; an Avro event's bytes come as bytea's hex
 * text), or an array of it.  Storing it would silently replace the row's
 * real value: the row keeps that value instead (apply/upsertkeep.c).
 */
#define DBZ_UNAVAILABLE "__debezium_unavailable_value"
#define DBZ_UNAVAILABLE_BASE64 "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
#define DBZ_UNAVAILABLE_HEX "5f5f646562657a69756d5f756e617661696c61626c655f76616c7565"
#define DBZ_UNAVAILABLE_BYTEA "\\x" DBZ_UNAVAILABLE_HEX

static bool
string_is(const JsonbValue *v, const char *s)
{
	return v->val.string.len == strlen(s) && memcmp(v->val.string.val, s, v->val.string.len) == 0;
}

static bool
is_unavailable_string(const JsonbValue *v)
{
	return v->type == jbvString &&
		(string_is(v, DBZ_UNAVAILABLE) || string_is(v, DBZ_UNAVAILABLE_BASE64) ||
		 string_is(v, DBZ_UNAVAILABLE_HEX) || string_is(v, DBZ_UNAVAILABLE_BYTEA));
}

static bool
is_unavailable(const JsonbValue *v)
{
	JsonbContainer *array;

	if (is_unavailable_string(v))
		return true;
	if (v->type != jbvBinary || !JsonContainerIsArray(v->val.binary.data))
		return false;
	array = v->val.binary.data;
	return JsonContainerSize(array) == 1 &&
		is_unavailable_string(getIthJsonbValueFromContainer(array, 0));
}

/*
 * The columns whose value an update's after image leaves unsent (Debezium's
 * placeholder): they are set in cx->unchanged; true if there is one.  A key
 * column's value must be there.
 */
static bool
find_unchanged(CdcContext *cx, JsonbContainer *after)
{
	JsonbIterator *it = JsonbIteratorInit(after);
	JsonbValue	v;
	JsonbValue	key = {0};
	JsonbIteratorToken tok;
	bool		any = false;

	memset(cx->unchanged, 0, sizeof(bool) * cx->cols->ncolumns);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			key = v;
		else if (tok == WJB_VALUE && is_unavailable(&v))
		{
			int			c;

			for (c = 0; c < cx->cols->ncolumns; c++)
				if (string_is(&key, cx->cols->colnames[c]))
					break;
			if (c == cx->cols->ncolumns)
				continue;		/* not a column: check_image_fields says */
			for (int k = 0; k < cx->keys->ncolumns; k++)
				if (cx->keypos[k] == c)
					ereport(ERROR,
							(errcode(ERRCODE_DATA_EXCEPTION),
							 errmsg("key field \"%s\" of the change event's after image is Debezium's placeholder \"%s\", not a value",
									cx->cols->colnames[c], DBZ_UNAVAILABLE),
							 errhint("Set REPLICA IDENTITY FULL on the source table, so that Debezium sends the value; then replay this dead letter.")));
			cx->unchanged[c] = true;
			any = true;
		}
	}
	return any;
}

/*
 * What add_after's shortcut needs to know of an after image's text: that
 * its every key is a column of the target, once, and that no value of an
 * update may be Debezium's placeholder (see find_unchanged).
 */
typedef struct ImageKeys
{
	CdcContext *cx;
	bool		update;
	bool	   *seen;
	bool		clean;
} ImageKeys;

/*
 * Could the value be Debezium's placeholder, or an array of it: a string
 * holding it (unescaped) or its base64, or a nested value holding either
 * or any escape.
 */
static bool
may_be_placeholder(const EoiJsonToken *v)
{
	if (v->kind != EOI_JSON_STRING && v->kind != EOI_JSON_NESTED)
		return false;
	return memmem(v->data, v->len, DBZ_UNAVAILABLE, strlen(DBZ_UNAVAILABLE)) != NULL ||
		memmem(v->data, v->len, DBZ_UNAVAILABLE_BASE64, strlen(DBZ_UNAVAILABLE_BASE64)) != NULL ||
		memmem(v->data, v->len, DBZ_UNAVAILABLE_HEX, strlen(DBZ_UNAVAILABLE_HEX)) != NULL ||
		(v->kind == EOI_JSON_NESTED && memchr(v->data, '\\', v->len) != NULL);
}

static bool
image_key(void *arg, const char *key, size_t key_len, const EoiJsonToken *value)
{
	ImageKeys  *ik = arg;
	EoiColumns *cols = ik->cx->cols;
	int			c;

	for (c = 0; c < cols->ncolumns; c++)
		if (strlen(cols->colnames[c]) == key_len && memcmp(cols->colnames[c], key, key_len) == 0)
			break;
	if (c == cols->ncolumns || ik->seen[c])
		return ik->clean = false;
	ik->seen[c] = true;
	if (ik->update && may_be_placeholder(value))
		return ik->clean = false;
	return true;
}

/*
 * True if the after image's text may be decoded as it is: its keys are
 * the target's columns, each once, none holds what could be the
 * placeholder, and the codecs kept are this image's.  Anything else takes
 * the image as jsonb, with its checks and their errors.
 */
static bool
image_is_plain(CdcContext *cx, const EventJson *ev, bool update)
{
	ImageKeys	ik = {cx, update, cx->seen, true};

	if (ev->after_text == NULL ||
		!ready_text_codecs(cx, cx->cols, cx->col_codecs, &cx->col_codecs_tag, codecs_tag(ev, IMAGE_AFTER)))
		return false;
	memset(cx->seen, 0, sizeof(bool) * cx->cols->ncolumns);
	return eoi_cdc_scan_object(cx->routes, ev->after_text, ev->after_len, image_key, &ik) && ik.clean;
}

/*
 * Decode a parsed image into the target's columns through `cw`: each of its
 * fields must be a column; the codecs come from its struct schema (tagged
 * `tag`, 0: for this image only) or the target; an update's fields that
 * hold Debezium's placeholder keep the row's value (find_unchanged).
 */
static void
decode_image(CdcContext *cx, ConvertingWriter *cw, JsonbContainer *image,
			 JsonbContainer *struct_schema, int tag, bool update)
{
	if (update && find_unchanged(cx, image))
		cw->unchanged = cx->unchanged;
	check_image_fields(cx, image);
	image_codecs(cx, cx->cols, cx->col_codecs, &cx->col_codecs_tag, tag, struct_schema, image);
	eoi_decode_json_object(cx->cols, image, &cw->writer, cx->econtext);
}

/*
 * The after image as the row to upsert; its fields are kept in *row.  The
 * columns of an update's image that hold Debezium's placeholder keep the
 * row's value (find_unchanged).
 */
static void
add_after(CdcContext *cx, JsonbContainer *after, EventJson *ev, bool update, char ***row)
{
	ConvertingWriter cw;

	eoi_cdc_converting_writer_init(&cw, eoi_changes_row_writer(cx->changes), cx->col_codecs, cx->cols->ncolumns);
	if (after == NULL && image_is_plain(cx, ev, update))
		eoi_decode_json_text(cx->cols, ev->after_text, ev->after_len, &cw.writer, cx->econtext);
	else
	{
		if (after == NULL)
			after = &eoi_cdc_parse_json(ev->after_text, ev->after_len)->root;
		decode_image(cx, &cw, after, ev->after_schema, codecs_tag(ev, IMAGE_AFTER), update);
	}
	check_key_fields(cx, cw.fields, cx->keypos, "the after image");
	eoi_cdc_mode_write(cx, cw.inner, NULL, false);
	cw.writer.end_row(&cw.writer);
	*row = cw.fields;
}

/*
 * cdc_mode soft_delete: the row of key `key` (the key columns' text) is
 * marked deleted, its other values kept (a row new to the target takes
 * NULL for them, counted as upsertkeep.c counts them).
 */
static void
add_soft_delete(CdcContext *cx, char **key)
{
	EoiRowWriter *w = eoi_changes_row_writer(cx->changes);

	for (int c = 0; c < cx->cols->ncolumns; c++)
	{
		int			k;

		for (k = 0; k < cx->keys->ncolumns && cx->keypos[k] != c; k++)
			;
		if (k < cx->keys->ncolumns)
			w->field(w, c, key[k], strlen(key[k]));
		else
			w->field(w, c, eoi_unchanged_value, 0);
	}
	eoi_cdc_mode_write(cx, w, NULL, true);
	w->end_row(w);
	eoi_changes_add_upsert(cx->changes);
}

/*
 * cdc_mode history: the event appended as a row: its after image (c, r,
 * u), its before image or else its message key (d), no image (t), with
 * the op, the source's commit time and LSN, and the Kafka coordinates.  An
 * unchanged TOASTed value (Debezium's placeholder) is NULL in the row.
 */
static void
add_history(CdcContext *cx, rd_kafka_message_t *msg, EventJson *ev, JsonbContainer *event, const char *op)
{
	CdcRoutes  *routes = cx->routes;
	EoiRowWriter *w = eoi_changes_row_writer(cx->changes);
	JsonbContainer *image = NULL;
	JsonbContainer *schema = NULL;
	JsonbContainer *source = NULL;
	int			kind = IMAGE_AFTER;
	HistoryMeta meta;

	if (strcmp(op, "c") == 0 || strcmp(op, "r") == 0 || strcmp(op, "u") == 0)
	{
		image = event ? eoi_cdc_json_get_object(event, "after") :
			ev->after_text ? &eoi_cdc_parse_json(ev->after_text, ev->after_len)->root : NULL;
		schema = ev->after_schema;
		if (image == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("change event of op \"%s\" has no after image", op)));
	}
	else if (strcmp(op, "d") == 0)
	{
		image = event ? eoi_cdc_json_get_object(event, "before") :
			ev->before_text ? &eoi_cdc_parse_json(ev->before_text, ev->before_len)->root : NULL;
		schema = ev->before_schema;
		kind = IMAGE_BEFORE;
		if (image == NULL && msg->key != NULL && msg->key_len > 0)
		{
			EventJson	key;

			eoi_cdc_split_message(routes, msg, true, &key);
			image = eoi_cdc_payload_object(routes, &key);
			schema = key.schema;
			kind = IMAGE_KEY;
		}
		if (image == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("change event of op \"d\" has neither a before image nor a message key"),
					 errhint("History keeps what a delete removed: the before image (REPLICA IDENTITY FULL gives every column), else the message key.")));
	}
	else if (strcmp(op, "t") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("change event has unrecognized op \"%s\"", op),
				 errhint("A Debezium change event has op c, r, u, d or t.")));

	if (image != NULL)
	{
		ConvertingWriter cw;

		eoi_cdc_converting_writer_init(&cw, w, cx->col_codecs, cx->cols->ncolumns);
		decode_image(cx, &cw, image, schema, kind == IMAGE_KEY ? 0 : codecs_tag(ev, kind), op[0] == 'u');
	}
	else
		for (int c = 0; c < cx->cols->ncolumns; c++)
			w->field(w, c, NULL, 0);

	/* the source block: of the parsed event, or parsed alone from its text */
	if (event != NULL)
		source = eoi_cdc_json_get_object(event, "source");
	else if (ev->source_text != NULL)
		source = &eoi_cdc_parse_json(ev->source_text, ev->source_len)->root;
	eoi_cdc_history_source(source, &meta);
	meta.op = op;
	meta.topic = eoi_message_topic(routes->position->batch, routes->position->current);
	meta.partition = msg->partition;
	meta.offset = msg->offset;
	eoi_cdc_mode_write(cx, w, &meta, false);
	w->end_row(w);
	eoi_changes_add_upsert(cx->changes);
}

/*
 * A truncate event deletes every row of the target (soft_delete: marks
 * every row deleted), with DELETE rather than
 * TRUNCATE: it stays in the batch's transaction like every other change,
 * takes no exclusive lock, and the target stays open for the rest of the
 * batch (TRUNCATE refuses a table in use by the session).
 */
static void
truncate_target(CdcContext *cx)
{
	int			current;

	if (!cx->job->cdc_truncate)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("change event truncates the source table, and job \"%s\" refuses truncate events",
						cx->job->name),
				 errhint("To let truncate events empty the target, alter the job with on_truncate => 'truncate'; then replay this dead letter.")));
	if (cx->routes->dry_run)
	{
		cx->routes->truncated = cx->target;
		return;
	}

	/*
	 * The changes before the truncate go first, and are deleted with the
	 * rest; an error in them is not the truncate event's.
	 */
	current = cx->position->current;
	cx->position->current = -1;
	(void) eoi_changes_apply(cx->changes);
	cx->position->current = current;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (cx->deleted_col >= 0)
	{
		const char *deleted = quote_identifier(cx->job->deleted_column);

		if (SPI_execute(psprintf("UPDATE %s SET %s = true WHERE %s IS NOT TRUE", cx->target, deleted, deleted),
						false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not mark the rows of %s deleted", cx->target);
	}
	else if (SPI_execute(psprintf("DELETE FROM %s", cx->target), false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not empty %s", cx->target);
	SPI_finish();
}

/* A string of the source block, copied if the filter can use it. */
static const char *
source_name(const char *data, size_t len)
{
	return eoi_source_name_usable(data, len) ? pnstrdup(data, len) : NULL;
}

/* A member of the source block from jsonb, as text, if of that type. */
static char *
source_member(JsonbContainer *source, const char *name, enum jbvType type)
{
	JsonbValue	v;

	if (eoi_connect_member(source, name, &v) == NULL || v.type != type)
		return NULL;
	return eoi_connect_member_string(source, name);
}

/*
 * The source and position of the event, when cdcreplay.c can compare
 * them: Debezium's PostgreSQL connector's source.name, db, sequence and
 * ts_ms, on any op but a snapshot read.  From the source block's text when
 * event_parts kept it and it scans, else from the payload as jsonb.
 */
static bool
event_position(CdcRoutes *routes, EventJson *ev, const char *op, EoiSourcePosition *pos)
{
	JsonbContainer *event;
	JsonbContainer *source;
	char	   *connector;
	char	   *sequence;
	char	   *name;
	char	   *db;
	char	   *ts_ms;

	if (strcmp(op, "r") == 0)
		return false;
	if (ev->has_parts)
	{
		Member		m[5] = {{"connector"}, {"sequence"}, {"name"}, {"db"}, {"ts_ms"}};
		MemberScan	ms = {m, 5, false, false};

		if (ev->source_text == NULL)
			return false;		/* no source block, or one that is no object */
		if (eoi_cdc_members(routes, ev, true, ev->source_text, ev->source_len, &ms))
		{
			for (int i = 0; i < 4; i++)
				if (!m[i].found || m[i].value.kind != EOI_JSON_STRING)
					return false;
			if (!m[4].found || m[4].value.kind != EOI_JSON_NUMBER || !m[4].value.integer)
				return false;
			pos->name = source_name(m[2].value.data, m[2].value.len);
			pos->db = source_name(m[3].value.data, m[3].value.len);
			return m[0].value.len == strlen("postgresql") &&
				memcmp(m[0].value.data, "postgresql", m[0].value.len) == 0 &&
				pos->name != NULL && pos->db != NULL &&
				eoi_parse_source_sequence(m[1].value.data, m[1].value.len, pos) &&
				eoi_parse_source_time(m[4].value.data, m[4].value.len, &pos->commit_time);
		}
	}
	if ((event = eoi_cdc_payload_object(routes, ev)) == NULL ||
		(source = eoi_cdc_json_get_object(event, "source")) == NULL)
		return false;
	connector = source_member(source, "connector", jbvString);
	sequence = source_member(source, "sequence", jbvString);
	name = source_member(source, "name", jbvString);
	db = source_member(source, "db", jbvString);
	ts_ms = source_member(source, "ts_ms", jbvNumeric);
	if (connector == NULL || strcmp(connector, "postgresql") != 0 ||
		sequence == NULL || name == NULL || db == NULL || ts_ms == NULL)
		return false;
	pos->name = source_name(name, strlen(name));
	pos->db = source_name(db, strlen(db));
	return pos->name != NULL && pos->db != NULL &&
		eoi_parse_source_sequence(sequence, strlen(sequence), pos) &&
		eoi_parse_source_time(ts_ms, strlen(ts_ms), &pos->commit_time);
}

static CdcContext *route_event(CdcRoutes *routes, EventJson *ev, rd_kafka_message_t *msg);

/*
 * Add one change event to the change set of its target.  Returns false for
 * a message that changes nothing: a tombstone, or an event Debezium sent
 * again.
 */
static bool
apply_event(CdcRoutes *routes, rd_kafka_message_t *msg)
{
	EventJson	ev;
	JsonbContainer *event = NULL;
	JsonbContainer *before;
	JsonbContainer *after;
	char	   *op;
	char	  **row;
	CdcContext *cx;
	EoiSourcePosition pos;

	eoi_cdc_split_message(routes, msg, false, &ev);
	if (ev.null_payload)
		return false;			/* {"schema": ..., "payload": null}: a tombstone */
	eoi_cdc_event_parts(routes, &ev);
	if (!ev.has_parts && (event = eoi_cdc_payload_object(routes, &ev)) == NULL)
	{
		if (!ev.not_object)
			return false;		/* a wrapper around a null payload */
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("change event is not a JSON object"),
				 errhint("With envelope debezium every message is a Debezium change event, with the schema wrapper or without.")));
	}
	op = ev.has_parts ? ev.op : eoi_connect_member_string(event, "op");
	if (op == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("change event has no \"op\""),
				 errhint("A Debezium change event has op c, r, u, d or t.")));
	routes->op = op;
	if (routes->replays != NULL && event_position(routes, &ev, op, &pos))
	{
		pos.fingerprint = eoi_source_event_fingerprint(op, msg->key, msg->key_len);
		if (eoi_replay_filter_skip(routes->replays,
								   eoi_message_topic(routes->position->batch, routes->position->current),
								   msg->partition, &pos))
			return false;		/* applied already: Debezium sent it again */
	}
	cx = route_event(routes, &ev, msg);
	eoi_changes_at_message(cx->changes, routes->position->current);
	/* a snapshot read stands alone; a change belongs to a source transaction */
	if (routes->job->source_transactions && strcmp(op, "r") != 0 &&
		!eoi_cdc_has_transaction(eoi_cdc_payload_object(routes, &ev)))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("change event of op \"%s\" has no transaction block", op),
				 errdetail("Job \"%s\" commits at source transaction boundaries.", routes->job->name),
				 errhint("Set provide.transaction.metadata=true in the Debezium connector, or alter the job with transactions => 'batch'.")));
	if (routes->job->cdc_mode == EOI_CDC_HISTORY)
	{
		add_history(cx, msg, &ev, event, op);
		return true;
	}
	before = ev.has_parts ? NULL : eoi_cdc_json_get_object(event, "before");
	after = ev.has_parts ? NULL : eoi_cdc_json_get_object(event, "after");

	if (strcmp(op, "c") == 0 || strcmp(op, "r") == 0 || strcmp(op, "u") == 0)
	{
		ConvertingWriter key;

		if (after == NULL && ev.after_text == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("change event of op \"%s\" has no after image", op)));
		add_after(cx, after, &ev, op[0] == 'u', &row);
		if (op[0] != 'u')
		{
			eoi_changes_add_upsert(cx->changes);
			return true;
		}
		/*
		 * An update that moves the row to another key deletes the old one
		 * (soft_delete: marks it, after the new row, which is the last one
		 * written).
		 */
		eoi_cdc_converting_writer_init(&key, NULL, cx->before_key.codecs, cx->keys->ncolumns);
		if (!old_key(cx, msg, before, &ev, &key) || same_key_text(cx, key.fields, row))
			eoi_changes_add_upsert(cx->changes);
		else if (cx->deleted_col >= 0)
		{
			eoi_changes_add_upsert(cx->changes);
			add_soft_delete(cx, key.fields);
		}
		else
		{
			EoiRowWriter *kw = eoi_changes_key_writer(cx->changes);

			for (int k = 0; k < cx->keys->ncolumns; k++)
				kw->field(kw, k, key.fields[k], strlen(key.fields[k]));
			kw->end_row(kw);
			eoi_changes_add_delete(cx->changes);
			eoi_changes_add_upsert(cx->changes);
		}
	}
	else if (strcmp(op, "d") == 0)
	{
		ConvertingWriter key;
		bool		soft = cx->deleted_col >= 0;

		eoi_cdc_converting_writer_init(&key, soft ? NULL : eoi_changes_key_writer(cx->changes),
									   cx->before_key.codecs, cx->keys->ncolumns);
		if (!old_key(cx, msg, before, &ev, &key))
			check_key_fields(cx, key.fields, NULL, "the before image or the message key");
		if (soft)
			add_soft_delete(cx, key.fields);
		else
		{
			key.writer.end_row(&key.writer);
			eoi_changes_add_delete(cx->changes);
		}
	}
	else if (strcmp(op, "t") == 0)
		truncate_target(cx);
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("change event has unrecognized op \"%s\"", op),
				 errhint("A Debezium change event has op c, r, u, d or t.")));
	return true;
}

/* Error context: the event at an EventPosition. */
void
eoi_cdc_event_errcontext(void *arg)
{
	EventPosition *ep = arg;

	eoi_message_errcontext(ep->batch, ep->current);
}

/*
 * A context per target, opened when the batch first has an event for it
 * (a preview opens them at once).
 */
static CdcContext *
open_target(CdcRoutes *routes, const char *target)
{
	const EoiJob *job = routes->job;
	CdcContext *cx = palloc0(sizeof(CdcContext));
	EoiJob	   *tjob = palloc(sizeof(EoiJob));
	List	   *key_columns;

	/* a template's table that is not there (yet): the job waits for it */
	if (eoi_target_is_template(job->target) && !eoi_target_exists(target))
		eoi_sink_missing_target(job, target,
								eoi_message_topic(routes->position->batch, routes->position->current));
	/* the same checks and messages as the job's one target */
	*tjob = *job;
	tjob->target = (char *) target;
	cx->job = job;
	cx->target = target;
	cx->position = routes->position;
	cx->routes = routes;
	cx->rel = eoi_open_job_target(tjob, routes->dry_run ? AccessShareLock : RowExclusiveLock);
	cx->econtext = GetPerTupleExprContext(routes->estate);
	cx->mapping = eoi_job_mapping(job);
	/*
	 * A change event's time fields count in the unit their schema names
	 * (Timestamp: ms, MicroTimestamp: µs, ...), which the field codecs
	 * below apply; format json's guess by magnitude must not run first.
	 */
	cx->mapping.timestamp_unit = EOI_TS_NONE;
	/*
	 * With targets, each target's key is its primary key, as is that of a
	 * target create_target made after the job was created; history has none.
	 */
	key_columns = job->cdc_mode == EOI_CDC_HISTORY ? NIL :
		job->targets == NULL && job->key_columns != NIL ? job->key_columns : eoi_primary_key_columns(cx->rel);
	if (key_columns == NIL && job->cdc_mode != EOI_CDC_HISTORY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("target \"%s\" of job \"%s\" has no primary key", target, job->name),
				 errhint("Change events are applied by key: give the table its primary key again.")));
	cx->cols = eoi_columns_for(cx->rel, &cx->mapping, routes->estate);
	cx->keys = eoi_columns_named(cx->rel, EOI_FORMAT_JSON, key_columns);
	eoi_check_target_kind(cx->rel, job->mode);
	eoi_check_target_unchanged(job, cx->rel, cx->cols);
	eoi_cdc_mode_columns(cx->rel, target, cx->cols, job->cdc_mode, job->deleted_column, key_columns,
						 cx->history, &cx->deleted_col);
	cx->changes = key_columns == NIL ? eoi_changes_begin_append(cx->rel, target, cx->cols) :
		eoi_changes_begin(cx->rel, target, cx->cols, cx->keys, key_columns);
	cx->col_codecs = palloc0(sizeof(EoiFieldCodec) * cx->cols->ncolumns);
	cx->seen = palloc0(sizeof(bool) * Max(cx->cols->ncolumns, 1));
	cx->unchanged = palloc0(sizeof(bool) * Max(cx->cols->ncolumns, 1));
	cx->before_key.codecs = palloc0(sizeof(EoiFieldCodec) * Max(cx->keys->ncolumns, 1));
	cx->message_key.codecs = palloc0(sizeof(EoiFieldCodec) * Max(cx->keys->ncolumns, 1));
	cx->keypos = palloc(sizeof(int) * Max(cx->keys->ncolumns, 1));
	for (int k = 0; k < cx->keys->ncolumns; k++)
		for (int c = 0; c < cx->cols->ncolumns; c++)
			if (strcmp(cx->cols->colnames[c], cx->keys->colnames[k]) == 0)
				cx->keypos[k] = c;
	if (routes->ncontexts >= routes->capacity)
	{
		routes->capacity = Max(routes->capacity * 2, 8);
		routes->contexts = routes->contexts == NULL ?
			palloc(sizeof(CdcContext *) * routes->capacity) :
			repalloc(routes->contexts, sizeof(CdcContext *) * routes->capacity);
	}
	routes->contexts[routes->ncontexts++] = cx;
	return cx;
}

/* The context opened for `target`, or NULL. */
static CdcContext *
find_context(CdcRoutes *routes, const char *target)
{
	for (int i = 0; i < routes->ncontexts; i++)
		if (strcmp(routes->contexts[i]->target, target) == 0)
			return routes->contexts[i];
	return NULL;
}

/*
 * The table a target template names for an event of `topic`; with
 * missing_ok, NULL when the event lacks a source member it names.  The
 * source block is read from its text when the event's parts were.
 */
static char *
template_target(CdcRoutes *routes, EventJson *ev, const char *topic, bool missing_ok)
{
	EoiTemplateValues values = {topic, NULL, NULL, NULL};
	const char *template = routes->job->target;

	if (eoi_template_uses_source(template))
	{
		JsonbContainer *source = NULL;
		JsonbContainer *event;

		if (ev->has_parts && ev->source_text != NULL)
			source = &eoi_cdc_parse_json(ev->source_text, ev->source_len)->root;
		else if ((event = eoi_cdc_payload_object(routes, ev)) != NULL)
			source = eoi_cdc_source_block(event);
		eoi_cdc_source_names(source, (char **) &values.source_db, (char **) &values.source_schema,
							 (char **) &values.source_table);
		if (missing_ok && !eoi_template_values_complete(template, &values))
			return NULL;
	}
	return eoi_target_for(template, &values);
}

/*
 * The target of an event of `topic`: the job's; the table its target
 * template names for it; or the one that targets maps the event's source
 * table (source.schema.table) to.  An event that names no source table, or
 * one without a target, is an error of the record; or, when missing_ok,
 * NULL.
 */
char *
eoi_cdc_event_target(CdcRoutes *routes, EventJson *ev, const char *topic, bool missing_ok)
{
	char	   *table;
	JsonbValue	v;

	if (eoi_target_is_template(routes->job->target))
		return template_target(routes, ev, topic, missing_ok);
	if (routes->job->targets == NULL)
		return routes->job->target;
	table = eoi_cdc_source_table(eoi_cdc_payload_object(routes, ev));
	if (table == NULL && !missing_ok)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("change event names no source table"),
				 errhint("Job \"%s\" routes change events by their source.schema and source.table, which this event lacks.",
						 routes->job->name)));
	if (table == NULL ||
		getKeyJsonValueFromContainer(&routes->job->targets->root, table, strlen(table), &v) == NULL ||
		v.type != jbvString)
	{
		if (missing_ok)
			return NULL;
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("change event of source table \"%s\" has no target in job \"%s\"",
						table, routes->job->name),
				 errhint("Map the table to a target with eoingest.alter_job(%s, targets => ...), then replay its dead letters with eoingest.replay_dead_letters().",
						 quote_literal_cstr(routes->job->name))));
	}
	return pnstrdup(v.val.string.val, v.val.string.len);
}

/*
 * The context of the event's target, opened when the batch first has an
 * event for it: a table create_target makes, or schema_changes changes, is
 * made to hold this event's schema first (cdcevolve.c).
 */
static CdcContext *
route_event(CdcRoutes *routes, EventJson *ev, rd_kafka_message_t *msg)
{
	const char *topic = eoi_message_topic(routes->position->batch, routes->position->current);
	char	   *target;
	MemoryContext old;
	CdcContext *cx;

	if (routes->ncontexts == 1 && routes->job->targets == NULL && !eoi_target_is_template(routes->job->target))
		return routes->contexts[0];
	target = eoi_cdc_event_target(routes, ev, topic, false);
	if ((cx = find_context(routes, target)) != NULL)
		return cx;
	/* what the contexts hold lives as long as the batch, not the event */
	old = MemoryContextSwitchTo(routes->cxt);
	if (!routes->dry_run)
		eoi_cdc_evolve_for_event(routes, target, ev, msg, topic);
	cx = open_target(routes, pstrdup(target));
	MemoryContextSwitchTo(old);
	return cx;
}

typedef struct TransactionEnd
{
	int32		partition;
	uint64		lsn;			/* 0: no END of an id with an LSN */
} TransactionEnd;

/*
 * The last END of the transaction topic that the batch commits, kept with
 * the topic's offset (cdctxn.c: an END at or below it that comes again is
 * of a transaction committed already).
 */
static void
note_transaction_end(TransactionEnd *end, rd_kafka_message_t *msg)
{
	uint64		lsn;

	if (msg->payload == NULL || (lsn = eoi_txn_end_lsn(msg)) <= end->lsn)
		return;
	end->partition = msg->partition;
	end->lsn = lsn;
}

static int
int_cmp(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/*
 * Count, per partition, the rows of `cx`'s target that were new to it and
 * took NULL for a value their update did not carry (upsertkeep.c), and say
 * so: the table lacks those values.
 */
static void
count_nulled(CdcContext *cx, EoiBatch *batch)
{
	const int  *messages;
	int			n = eoi_changes_nulled(cx->changes, &messages);
	int		   *sorted;
	int64		count = 0;

	if (n == 0)
		return;
	/* in batch order, a partition's messages come in runs: one update per run */
	sorted = palloc(sizeof(int) * n);
	memcpy(sorted, messages, sizeof(int) * n);
	qsort(sorted, n, sizeof(int), int_cmp);
	for (int i = 0; i < n; i++)
	{
		rd_kafka_message_t *msg;
		rd_kafka_message_t *next;

		CHECK_FOR_INTERRUPTS();
		if (sorted[i] < 0)
			continue;			/* not from a message of the batch */
		msg = batch->messages[sorted[i]];
		next = i + 1 < n ? batch->messages[sorted[i + 1]] : NULL;
		count++;
		if (next != NULL && next->partition == msg->partition &&
			strcmp(eoi_message_topic(batch, sorted[i + 1]), eoi_message_topic(batch, sorted[i])) == 0)
			continue;
		eoi_offsets_add_unchanged_nulled(cx->job, eoi_message_topic(batch, sorted[i]), msg->partition, count);
		count = 0;
	}
	pfree(sorted);
	ereport(WARNING,
			(errmsg_plural("%d row new to \"%s\" took NULL for values its change did not carry",
						   "%d rows new to \"%s\" took NULL for values their change did not carry",
						   n, n, RelationGetRelationName(cx->rel)),
			 errdetail("An update of a row the target did not have carried Debezium's placeholder for an unchanged TOASTed value, or a delete (cdc_mode soft_delete) marked a row the target did not have."),
			 errhint("Set REPLICA IDENTITY FULL on the source table so that Debezium sends every value, and snapshot the table again to fill them.")));
}

/*
 * Apply a batch of change events to the job's target, or targets.  Returns
 * the rows deleted, inserted and updated.  With transactions => 'source',
 * the batch holds whole source transactions (cdctxn.c), and the messages of
 * the transaction topic are skipped here.
 */
uint64
eoi_cdc_batch(const EoiJob *job, EoiBatch *batch)
{
	CdcRoutes	routes = {0};
	EventPosition ep = {batch, -1};
	ErrorContextCallback errcb;
	uint64		processed = 0;
	TransactionEnd txn_end = {0};
	bool	   *applied = palloc0(sizeof(bool) * Max(batch->n, 1));

	routes.job = job;
	routes.position = &ep;
	routes.estate = CreateExecutorState();
	routes.cxt = CurrentMemoryContext;
	if (eoi_batch_from_partitions(batch))
		routes.replays = eoi_replay_filter_begin(job);
	/* a routed target not there yet is said anew by this batch (sink.c) */
	(void) eoi_target_missing();
	/* the targets are opened as their first events come, once made to hold them */
	eoi_cdc_evolve_targets(&routes, batch);

	errcb.callback = eoi_cdc_event_errcontext;
	errcb.arg = &ep;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];
		ExprContext *econtext = GetPerTupleExprContext(routes.estate);
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		ep.current = i;
		/* a tombstone follows a delete, for compaction: nothing to do */
		if (msg->payload == NULL)
			continue;
		if (job->txn_topic != NULL && strcmp(eoi_message_topic(batch, i), job->txn_topic) == 0)
		{
			note_transaction_end(&txn_end, msg);
			continue;
		}
		old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
		applied[i] = apply_event(&routes, msg);
		MemoryContextSwitchTo(old);
		ResetExprContext(econtext);
	}
	ep.current = -1;
	error_context_stack = errcb.previous;

	for (int i = 0; i < routes.ncontexts; i++)
		processed += eoi_changes_apply(routes.contexts[i]->changes);
	for (int i = 0; i < routes.ncontexts; i++)
		count_nulled(routes.contexts[i], batch);
	/* a history row replaces nothing: its dead letters stay replayable */
	if (job->cdc_mode != EOI_CDC_HISTORY)
		eoi_sink_supersede_dead_letters(job, batch, applied);
	if (routes.replays != NULL)
		eoi_replay_filter_end(routes.replays);
	if (txn_end.lsn != 0 && eoi_batch_from_partitions(batch))
		eoi_offsets_store_txn_end_lsn(job, job->txn_topic, txn_end.partition, txn_end.lsn);

	FreeExecutorState(routes.estate);
	for (int i = 0; i < routes.ncontexts; i++)
		table_close(routes.contexts[i]->rel, NoLock);
	return processed;
}

/* ---- a dry run (api/preview.c) ---- */

struct EoiCdcPreview
{
	CdcRoutes	routes;
	EventPosition position;
};

/*
 * Begin a dry run of the change events of `batch`, as the job's owner.
 * Every target is opened now: one opened in a message's subtransaction
 * would be closed with it.  Events are applied as if new: the replay
 * filter is not consulted.
 */
EoiCdcPreview *
eoi_cdc_preview_begin(const EoiJob *job, EoiBatch *batch)
{
	EoiCdcPreview *p = palloc0(sizeof(EoiCdcPreview));
	CdcRoutes  *routes = &p->routes;

	p->position.batch = batch;
	p->position.current = -1;
	routes->job = job;
	routes->position = &p->position;
	routes->estate = CreateExecutorState();
	routes->cxt = CurrentMemoryContext;
	routes->dry_run = true;
	Assert(!eoi_target_is_template(job->target));	/* preview.c refuses them */
	if (job->targets == NULL)
		(void) open_target(routes, job->target);
	else
	{
		JsonbIterator *it = JsonbIteratorInit(&job->targets->root);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			char	   *target;

			if (tok != WJB_VALUE || v.type != jbvString)
				continue;
			target = pnstrdup(v.val.string.val, v.val.string.len);
			if (find_context(routes, target) == NULL)
				(void) open_target(routes, target);
		}
	}
	return p;
}

/*
 * What message `message` would change: {"op": ..., "changes": [...]} (see
 * eoi_changes_describe; a truncate is {"truncate": target}), or NULL for
 * one that changes nothing (a tombstone, a message of the transaction
 * topic).  Errors are the message's, as the job would raise them.
 */
Jsonb *
eoi_cdc_preview_event(EoiCdcPreview *p, int message)
{
	CdcRoutes  *routes = &p->routes;
	EoiBatch   *batch = p->position.batch;
	rd_kafka_message_t *msg = batch->messages[message];
	ErrorContextCallback errcb;
	JsonbParseState *state = NULL;
	JsonbValue	v;
	bool		applied;

	if (msg->payload == NULL ||
		(routes->job->txn_topic != NULL &&
		 strcmp(eoi_message_topic(batch, message), routes->job->txn_topic) == 0))
		return NULL;
	/* what an earlier message left, had it failed half-way */
	for (int i = 0; i < routes->ncontexts; i++)
		eoi_changes_forget(routes->contexts[i]->changes);
	routes->op = NULL;
	routes->truncated = NULL;
	p->position.current = message;
	errcb.callback = eoi_cdc_event_errcontext;
	errcb.arg = &p->position;
	errcb.previous = error_context_stack;
	error_context_stack = &errcb;
	applied = apply_event(routes, msg);
	error_context_stack = errcb.previous;
	p->position.current = -1;
	if (!applied)
		return NULL;

	(void) pushJsonbValue(&state, WJB_BEGIN_OBJECT, NULL);
	v.type = jbvString;
	v.val.string.val = "op";
	v.val.string.len = 2;
	(void) pushJsonbValue(&state, WJB_KEY, &v);
	v.val.string.val = (char *) routes->op;
	v.val.string.len = strlen(routes->op);
	(void) pushJsonbValue(&state, WJB_VALUE, &v);
	if (routes->truncated != NULL)
	{
		v.val.string.val = "truncate";
		v.val.string.len = strlen("truncate");
		(void) pushJsonbValue(&state, WJB_KEY, &v);
		v.val.string.val = (char *) routes->truncated;
		v.val.string.len = strlen(routes->truncated);
		(void) pushJsonbValue(&state, WJB_VALUE, &v);
	}
	v.val.string.val = "changes";
	v.val.string.len = strlen("changes");
	(void) pushJsonbValue(&state, WJB_KEY, &v);
	(void) pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	for (int i = 0; i < routes->ncontexts; i++)
	{
		eoi_changes_describe(routes->contexts[i]->changes, &state);
		eoi_changes_forget(routes->contexts[i]->changes);
	}
	(void) pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	return JsonbValueToJsonb(pushJsonbValue(&state, WJB_END_OBJECT, NULL));
}

void
eoi_cdc_preview_end(EoiCdcPreview *p)
{
	FreeExecutorState(p->routes.estate);
	for (int i = 0; i < p->routes.ncontexts; i++)
		table_close(p->routes.contexts[i]->rel, NoLock);
}
