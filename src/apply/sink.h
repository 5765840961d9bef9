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
#include "kafka/batch.h"

#include "storage/lockdefs.h"
#include "utils/relcache.h"

extern uint64 eoi_sink_write_rows(const EoiJob *job, EoiBatch *batch);
extern uint64 eoi_sink_write(const EoiJob *job, EoiBatch *batch, EoiBatchWriter writer);
extern uint64 eoi_sink_write_batch(const EoiJob *job, EoiBatch *batch, EoiBatchWriter writer,
								   int *dead);
extern Relation eoi_open_target(const char *target, LOCKMODE lockmode);
extern Relation eoi_open_job_target(const EoiJob *job, LOCKMODE lockmode);
extern bool eoi_target_exists(const char *target);
extern void eoi_check_target_kind(Relation rel, EoiMode mode);
extern void eoi_check_target_insert(Relation rel, List *colnames);
struct ParseState;
struct RangeTblEntry;
extern struct RangeTblEntry *eoi_target_rte(struct ParseState *pstate, Relation rel, List *colnames);

#endif
