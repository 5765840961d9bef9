/*-------------------------------------------------------------------------
 *
 * groupfence.h
 *	  The split-brain guard's check of the job's consumer group.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_GROUPFENCE_H
#define EOI_GROUPFENCE_H

#include "base/eoingest.h"
#include "kafka/kafka.h"
#include "store/fence.h"

extern void eoi_fence_check(const EoiJob *job, EoiKafka *kafka,
							const EoiPosition *positions, int n);

#endif
