/*-------------------------------------------------------------------------
 *
 * attempt.h
 *	  One attempt at writing a batch, or a slice of one while failing
 *	  records are isolated: what the attempt needs to remember lives in an
 *	  EoiAttempt that begins and ends with it, whether it commits or fails,
 *	  so that nothing carries over into the next slice, retry or batch.
 *
 * Only the callbacks PostgreSQL calls without an argument of ours (COPY's
 * data source, the transform's eoingest.batch()) read eoi_attempt; every
 * other function gets what it needs as arguments.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_ATTEMPT_H
#define EOI_ATTEMPT_H

#include "base/eoingest.h"
#include "kafka/batch.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"

/*
 * Applies a batch (or a slice of one) in the current subtransaction and
 * returns the rows written: the writer of rows (sink.c), or an envelope's
 * (change events), which the envelope layer picks for the job.
 */
typedef uint64 (*EoiBatchWriter) (const EoiJob *job, EoiBatch *batch);

typedef struct EoiAttempt
{
	const EoiJob *job;
	EoiBatch   *batch;			/* the messages being written */
	EoiBatch   *transform_batch;	/* while the transform runs: what
									 * eoingest.batch() returns */
	SPIPlanPtr	transform_plan; /* and the transform's statement */
	StringInfo	copy_lines;		/* while COPY runs: the batch as its lines */
	int			copy_pos;		/* how far COPY has read them */
} EoiAttempt;

/* The attempt under way in this process, or NULL. */
extern EoiAttempt *eoi_attempt;

extern uint64 eoi_attempt_run(const EoiJob *job, EoiBatch *batch, EoiBatchWriter writer);

#endif
