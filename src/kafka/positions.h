/*-------------------------------------------------------------------------
 *
 * positions.h
 *	  Where a job reads from: start_offset and reset_offsets' choices
 *	  (earliest, latest, a timestamp, explicit offsets), where the job
 *	  would read now (preview_job), and wait_for_catchup.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_POSITIONS_H
#define EOI_POSITIONS_H

#include "base/eoingest.h"
#include "kafka/kafka.h"

extern int64 *eoi_positions_for(EoiKafka *kafka, const EoiJob *job, const char *topic,
								const char *to, int *count);
extern int64 *eoi_positions_to_read(EoiKafka *kafka, const EoiJob *job, const char *topic,
									int *count);
extern void eoi_check_start_offset(const char *start_offset);

#endif
