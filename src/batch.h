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

#include "eoingest.h"

#include <librdkafka/rdkafka.h>

#include "fmgr.h"

typedef struct EoiBatch
{
	rd_kafka_message_t **messages;
	int			n;
	int			capacity;
	const char *topic;
} EoiBatch;

/* The batch a transform may read through eoingest.batch(); NULL otherwise. */
extern EoiBatch *eoi_current_batch;

extern EoiBatch *eoi_batch_create(MemoryContext cxt, int capacity, const char *topic);

extern Datum eoi_message_timestamp(rd_kafka_message_t *msg, bool *isnull);

extern PGDLLEXPORT Datum eoingest_batch(PG_FUNCTION_ARGS);

#endif
