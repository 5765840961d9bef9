/*-------------------------------------------------------------------------
 *
 * attempt.c
 *	  The bracket around one attempt at writing a batch: its state, and the
 *	  settings the job owner's code may change meanwhile.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/guc.h"

#include "apply/attempt.h"

EoiAttempt *eoi_attempt = NULL;

/*
 * Write `batch` with `writer` as one attempt, as the current user (the
 * job's owner), in the caller's (sub)transaction; returns the rows written.
 *
 * The attempt's state is gone when this returns or throws: an attempt
 * that fails leaves nothing behind for the next.  An attempt inside
 * another (replay_dead_letters called from a transform) restores the
 * outer one.  The owner's code that runs meanwhile (triggers, the
 * transform, defaults) may change settings with SET or set_config(...,
 * false); they are discarded at the end, so that nothing carries over into
 * the next batch, or into the session of whoever replays dead letters.
 * (On an error, the subtransaction's abort discards them.)
 */
uint64
eoi_attempt_run(const EoiJob *job, EoiBatch *batch, EoiBatchWriter writer)
{
	EoiAttempt	attempt = {0};
	EoiAttempt *volatile outer = eoi_attempt;
	int			nest = NewGUCNestLevel();
	uint64		rows = 0;

	attempt.job = job;
	attempt.batch = batch;
	eoi_attempt = &attempt;
	PG_TRY();
	{
		rows = writer(job, batch);
	}
	PG_FINALLY();
	{
		eoi_attempt = outer;
	}
	PG_END_TRY();
	AtEOXact_GUC(false, nest);
	return rows;
}
