/*-------------------------------------------------------------------------
 *
 * partitions.h
 *	  The partitions one worker owns, and where it reads them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_PARTITIONS_H
#define EOI_PARTITIONS_H

#include "base/eoingest.h"
#include "kafka/kafka.h"

#include "utils/timestamp.h"

typedef struct EoiOwnership
{
	const EoiJob *job;
	int			index;			/* the worker's */
	EoiKafka   *kafka;
	EoiPosition *owned;			/* with their committed next offsets */
	int			nowned;
	List	   *topics;			/* read since the last assignment: the job's,
								 * or those its pattern matched */
	int		   *partition_counts;	/* of each topic, at the last assignment */
	TimestampTz next_discovery;
} EoiOwnership;

extern bool eoi_partitions_assign(EoiOwnership *o, char *waiting, size_t waiting_len);
extern bool eoi_partitions_grew(EoiOwnership *o);
extern EoiPosition *eoi_partitions_find(EoiOwnership *o, const char *topic, int32 partition);

#endif
