/*-------------------------------------------------------------------------
 *
 * batch.c
 *	  The batch of messages a worker is writing: its messages, which one an
 *	  error blames, and their bytes and timestamps.  A transform reads it
 *	  through eoingest.batch() (batchfunc.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/timestamp.h"

#include "kafka/batch.h"


/* For error context callbacks: name the message. */
void
eoi_message_errcontext(EoiBatch *batch, int index)
{
	rd_kafka_message_t *msg;

	if (index < 0 || index >= batch->n)
		return;
	msg = batch->messages[index];
	errcontext(EOI_MESSAGE_CONTEXT,
			   eoi_message_topic(batch, index), msg->partition, (long long) msg->offset);
}

/*
 * The message of `batch` that error `edata` names in its context, or -1.
 * The error itself says which message it is about: its context holds the
 * line eoi_message_errcontext() wrote while that very error was raised.
 * Nothing is remembered between errors, so an error caught meanwhile (in a
 * trigger's EXCEPTION block, say) cannot be blamed on a later one that names
 * no message (a foreign key checked at the end of the statement).
 */
int
eoi_blamed_message(EoiBatch *batch, const ErrorData *edata)
{
	static const char prefix[] = "Kafka message at topic \"";
	const char *line = edata->context;

	while (line != NULL && (line = strstr(line, prefix)) != NULL)
	{
		const char *topic = line + sizeof(prefix) - 1;
		const char *end = strchr(topic, '"');
		int			partition;
		long long	offset;

		line = topic;
		if (end == NULL || sscanf(end, "\" partition %d offset %lld", &partition, &offset) != 2)
			continue;
		for (int i = 0; i < batch->n; i++)
		{
			rd_kafka_message_t *msg = batch->messages[i];
			const char *t = eoi_message_topic(batch, i);

			if (msg->partition == partition && msg->offset == offset &&
				strlen(t) == (size_t) (end - topic) && strncmp(t, topic, end - topic) == 0)
				return i;
		}
	}
	return -1;
}

/* The topic of message `index` of the batch. */
const char *
eoi_message_topic(EoiBatch *batch, int index)
{
	rd_kafka_message_t *msg = batch->messages[index];

	if (msg->rkt != NULL)
		return rd_kafka_topic_name(msg->rkt);
	return batch->topics[index];
}

/* Messages [from, to) of a batch, as a batch that does not own them. */
EoiBatch
eoi_batch_slice(EoiBatch *batch, int from, int to)
{
	EoiBatch	slice = *batch;

	slice.messages = batch->messages + from;
	if (batch->topics != NULL)
		slice.topics = batch->topics + from;
	slice.n = to - from;
	return slice;
}

static void
batch_release(void *arg)
{
	EoiBatch   *batch = arg;

	for (int i = 0; i < batch->n; i++)
		rd_kafka_message_destroy(batch->messages[i]);
	batch->n = 0;
}

/*
 * A batch in `cxt`; its messages are destroyed when `cxt` is reset or
 * deleted, so that no error path can leak them.
 */
EoiBatch *
eoi_batch_create(MemoryContext cxt, int capacity)
{
	EoiBatch   *batch = MemoryContextAllocZero(cxt, sizeof(EoiBatch));
	MemoryContextCallback *cb = MemoryContextAllocZero(cxt, sizeof(MemoryContextCallback));

	batch->messages = MemoryContextAllocHuge(cxt, sizeof(rd_kafka_message_t *) * capacity);
	cb->func = batch_release;
	cb->arg = batch;
	MemoryContextRegisterResetCallback(cxt, cb);
	return batch;
}

Datum
eoi_message_timestamp(rd_kafka_message_t *msg, bool *isnull)
{
	rd_kafka_timestamp_type_t tstype = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
	int64		ms = -1;

	/* Messages rebuilt from eoingest.dead_letters carry no librdkafka state. */
	if (msg->_private != NULL)
		ms = rd_kafka_message_timestamp(msg, &tstype);
	*isnull = (tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE || ms < 0);
	if (*isnull)
		return (Datum) 0;
	return TimestampTzGetDatum(ms * INT64CONST(1000) -
							   (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
}

/* A message's key or payload as bytea, as it came; NULL for none. */
bytea *
eoi_message_bytes(const void *data, size_t len)
{
	bytea	   *b;

	if (data == NULL)
		return NULL;
	b = palloc(VARHDRSZ + len);
	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), data, len);
	return b;
}

/* , "hex": "0a1b..." */
static void
append_hex_member(StringInfo buf, const void *value, size_t size)
{
	static const char digits[] = "0123456789abcdef";

	appendStringInfoString(buf, ", \"hex\": \"");
	for (size_t k = 0; k < size; k++)
	{
		appendStringInfoChar(buf, digits[((const unsigned char *) value)[k] >> 4]);
		appendStringInfoChar(buf, digits[((const unsigned char *) value)[k] & 0xf]);
	}
	appendStringInfoChar(buf, '"');
}

/*
 * A message's headers as JSON text (NULL when it has none, or was rebuilt
 * from a dead letter): an object, where a repeated name keeps its
 * last value, or (as_list) every header in order, repeated names kept:
 * [{"name": ..., "value": ...}, ...].  A value that is no text of the
 * database encoding (a schema GUID, a binary trace id) is null, and in the
 * list its bytes are in "hex" as well: a transform that never reads a
 * header must not lose its record to one.
 */
char *
eoi_message_headers_json(rd_kafka_message_t *msg, bool as_list)
{
	rd_kafka_headers_t *hdrs;
	StringInfoData buf;
	const char *name;
	const void *value;
	size_t		size;

	if (msg->_private == NULL ||
		rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return NULL;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, as_list ? '[' : '{');
	for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		(void) pg_verifymbstr(name, (int) strlen(name), false);
		if (as_list)
			appendStringInfoString(&buf, "{\"name\": ");
		escape_json(&buf, name);
		appendStringInfoString(&buf, as_list ? ", \"value\": " : ": ");
		if (value == NULL)
			appendStringInfoString(&buf, "null");
		else if (pg_verifymbstr(value, (int) size, true))
			escape_json(&buf, pnstrdup(value, size));
		else
		{
			appendStringInfoString(&buf, "null");
			if (as_list)
				append_hex_member(&buf, value, size);
		}
		if (as_list)
			appendStringInfoChar(&buf, '}');
	}
	appendStringInfoChar(&buf, as_list ? ']' : '}');
	return buf.data;
}

/*
 * The last value of the message's header `name` (a repeated name keeps its
 * last value, as in eoi_message_headers_json): false when the message has
 * no such header or was rebuilt from a dead letter.  *value is NULL for a
 * header without a value.
 */
bool
eoi_message_header(rd_kafka_message_t *msg, const char *name, const void **value, size_t *size)
{
	rd_kafka_headers_t *hdrs;

	if (msg->_private == NULL ||
		rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return false;
	return rd_kafka_header_get_last(hdrs, name, value, size) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

/*
 * The batch's messages by topic: one part per topic, in the order the
 * topics first come, each part's messages in their order, as batches that
 * do not own them (messages rebuilt from dead letters keep their topics).
 * One pass over the batch: a topic's messages come in runs (a fetch is of
 * one partition), so a message's topic is mostly the one before's.
 */
EoiBatch *
eoi_batch_by_topic(EoiBatch *batch, int *nparts)
{
	int		   *part_of = palloc(sizeof(int) * Max(batch->n, 1));
	const char **names = palloc(sizeof(char *) * 8);
	int		   *counts = palloc(sizeof(int) * 8);
	int			n = 0;
	int			capacity = 8;
	const char *last = NULL;
	int			last_part = -1;
	EoiBatch   *parts;

	for (int i = 0; i < batch->n; i++)
	{
		const char *topic = eoi_message_topic(batch, i);

		if (last == NULL || (topic != last && strcmp(topic, last) != 0))
		{
			last_part = -1;
			for (int p = 0; p < n && last_part < 0; p++)
				if (strcmp(names[p], topic) == 0)
					last_part = p;
			if (last_part < 0)
			{
				if (n == capacity)
				{
					capacity *= 2;
					names = repalloc(names, sizeof(char *) * capacity);
					counts = repalloc(counts, sizeof(int) * capacity);
				}
				names[n] = topic;
				counts[n] = 0;
				last_part = n++;
			}
			last = topic;
		}
		part_of[i] = last_part;
		counts[last_part]++;
	}
	parts = palloc(sizeof(EoiBatch) * Max(n, 1));
	for (int p = 0; p < n; p++)
	{
		parts[p] = *batch;
		parts[p].messages = palloc(sizeof(rd_kafka_message_t *) * counts[p]);
		parts[p].topics = batch->topics != NULL ? palloc(sizeof(char *) * counts[p]) : NULL;
		parts[p].n = 0;
	}
	for (int i = 0; i < batch->n; i++)
	{
		EoiBatch   *part = &parts[part_of[i]];

		if (part->topics != NULL)
			part->topics[part->n] = batch->topics[i];
		part->messages[part->n++] = batch->messages[i];
	}
	pfree(part_of);
	*nparts = n;
	return parts;
}
