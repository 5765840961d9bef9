/*-------------------------------------------------------------------------
 *
 * envelope.h
 *	  What a job's messages carry, and so how a batch of them is applied:
 *	  rows (envelope none) or Debezium's change events (envelope debezium).
 *	  The worker and the replay of dead letters hand a batch to this layer,
 *	  which picks the writer once; the batch then flows down through the
 *	  decoders and writers below, never back up.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_ENVELOPE_H
#define EOI_ENVELOPE_H

#include "apply/sink.h"
#include "base/eoingest.h"
#include "kafka/batch.h"

extern EoiBatchWriter eoi_envelope_writer(const EoiJob *job);
extern uint64 eoi_envelope_write_batch(const EoiJob *job, EoiBatch *batch, int *dead);

#endif
