/*-------------------------------------------------------------------------
 *
 * sink.h
 *	  Writing a batch's rows: COPY into the target, or the job's transform.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_SINK_H
#define EOI_SINK_H

#include "apply/attempt.h"
#include "base/eoingest.h"
#include "base/pgcompat.h"
#include "kafka/batch.h"

extern uint64 eoi_sink_write_rows(const EoiJob *job, EoiBatch *batch);
extern uint64 eoi_sink_write(const EoiJob *job, EoiBatch *batch, EoiBatchWriter writer);
extern uint64 eoi_sink_write_batch(const EoiJob *job, EoiBatch *batch, EoiBatchWriter writer,
								   int *dead);
extern void eoi_sink_supersede_dead_letters(const EoiJob *job, EoiBatch *batch,
											const bool *applied);

extern bool eoi_target_missing(void);
pg_noreturn extern void eoi_sink_missing_target(const EoiJob *job, const char *target, const char *topic);

#endif
