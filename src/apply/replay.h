/*-------------------------------------------------------------------------
 *
 * replay.h
 *	  Replaying dead letters through the job's writer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_REPLAY_H
#define EOI_REPLAY_H

#include "apply/sink.h"
#include "base/eoingest.h"
#include "kafka/batch.h"

#include "utils/array.h"

extern uint64 eoi_replay_dead_letters(const EoiJob *job, ArrayType *ids, EoiBatchWriter writer,
									  bool force);

#endif
