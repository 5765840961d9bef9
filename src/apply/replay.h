/*-------------------------------------------------------------------------
 *
 * replay.h
 *	  Dead letters from the writer's side: keeping a failed message, and
 *	  replaying dead letters through the job's write path.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_REPLAY_H
#define EOI_REPLAY_H

#include "apply/sink.h"
#include "base/eoingest.h"
#include "kafka/batch.h"

#include "utils/array.h"

extern void eoi_dead_letter_store(const EoiJob *job, const char *topic,
								  rd_kafka_message_t *msg, ErrorData *edata);

extern uint64 eoi_replay_dead_letters(const EoiJob *job, ArrayType *ids, EoiBatchWriter writer);

#endif
