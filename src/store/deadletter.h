/*-------------------------------------------------------------------------
 *
 * deadletter.h
 *	  eoingest.dead_letters: records that could not be decoded or stored,
 *	  kept with their bytes, position and error, and replayed on request.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DEADLETTER_H
#define EOI_DEADLETTER_H

#include "base/eoingest.h"
#include "kafka/batch.h"

extern void eoi_dead_letter_store(const EoiJob *job, const char *topic,
								  rd_kafka_message_t *msg, ErrorData *edata);
extern int64 eoi_dead_letter_count(int32 job_id);

extern PGDLLEXPORT Datum eoingest_replay_dead_letters(PG_FUNCTION_ARGS);

#endif
