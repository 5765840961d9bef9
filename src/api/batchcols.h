/*-------------------------------------------------------------------------
 *
 * batchcols.h
 *	  Which columns of eoingest.batch() a job's transform reads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_BATCHCOLS_H
#define EOI_BATCHCOLS_H

#include "executor/spi.h"
#include "nodes/execnodes.h"

extern void eoi_batch_columns_read(ReturnSetInfo *rsinfo, SPIPlanPtr plan, Oid batch_fn,
								   int natts, bool *read);

#endif
