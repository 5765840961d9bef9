/*-------------------------------------------------------------------------
 *
 * shape.h
 *	  The shape of a job's target, recorded in the catalog and checked.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_SHAPE_H
#define EOI_SHAPE_H

#include "utils/relcache.h"

#include "base/eoingest.h"

struct EoiColumns;

extern void eoi_shape_set_worker(int worker_index);
extern void eoi_check_target_unchanged(const EoiJob *job, Relation rel, struct EoiColumns *cols);
extern void eoi_shape_forget(const char *target);

#endif							/* EOI_SHAPE_H */
