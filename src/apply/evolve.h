/*-------------------------------------------------------------------------
 *
 * evolve.h
 *	  A target that follows its messages' writer schema: created from it
 *	  (create_target), its columns added and widened as it evolves
 *	  (schema_changes), in the batch's transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_EVOLVE_H
#define EOI_EVOLVE_H

#include "base/eoingest.h"
#include "kafka/batch.h"

extern void eoi_evolve_target(const EoiJob *job, EoiBatch *batch, const char *target);
extern bool eoi_evolve_create_now(const EoiJob *job, const char *topic, const char *target);

#endif							/* EOI_EVOLVE_H */
