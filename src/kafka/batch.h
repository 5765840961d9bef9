/*-------------------------------------------------------------------------
 *
 * batch.h
 *	  A batch of Kafka messages, owned by the batch's memory context: the
 *	  messages are handed back to librdkafka when that context is reset,
 *	  whether the batch committed or failed.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_BATCH_H
#define EOI_BATCH_H

#include "base/eoingest.h"

#include <librdkafka/rdkafka.h>

typedef struct EoiBatch
{
	rd_kafka_message_t **messages;
	int			n;
	const char **topics;		/* messages rebuilt from dead letters: their topics */
	EoiFormat	format;			/* for eoingest.batch(): how values decode */
	EoiFormat	key_format;		/* and keys */
} EoiBatch;

/* Read from the job's partitions, not rebuilt from dead letters. */
static inline bool
eoi_batch_from_partitions(const EoiBatch *batch)
{
	return batch->topics == NULL;
}

/*
 * The context line that names a message in an error raised while it was
 * decoded or written; eoi_blamed_message() finds the message again from an
 * error's context, so that a failed batch can set that one message aside.
 */
#define EOI_MESSAGE_CONTEXT "Kafka message at topic \"%s\" partition %d offset %lld"

extern void eoi_message_errcontext(EoiBatch *batch, int index);
extern int	eoi_blamed_message(EoiBatch *batch, const ErrorData *edata);
extern EoiBatch eoi_batch_slice(EoiBatch *batch, int from, int to);
extern EoiBatch *eoi_batch_by_topic(EoiBatch *batch, int *nparts);

extern EoiBatch *eoi_batch_create(MemoryContext cxt, int capacity);
extern const char *eoi_message_topic(EoiBatch *batch, int index);

extern Datum eoi_message_timestamp(rd_kafka_message_t *msg, bool *isnull);
extern bytea *eoi_message_bytes(const void *data, size_t len);
extern char *eoi_message_headers_json(rd_kafka_message_t *msg, bool as_list);
extern bool eoi_message_header(rd_kafka_message_t *msg, const char *name,
							   const void **value, size_t *size);

#endif
