/*-------------------------------------------------------------------------
 *
 * cdcreplay.h
 *	  Change events that Debezium sends again after Kafka Connect restarts,
 *	  recognised by their source position and skipped.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_CDCREPLAY_H
#define EOI_CDCREPLAY_H

#include "base/eoingest.h"

/*
 * Where a change event is in the source's log: Debezium's PostgreSQL
 * connector's source.sequence, the LSN of the last commit before the
 * event's transaction and the LSN of the change.
 */
typedef struct EoiSourcePosition
{
	uint64		commit_lsn;
	uint64		lsn;
} EoiSourcePosition;

typedef struct EoiReplayFilter EoiReplayFilter;

extern bool eoi_parse_source_sequence(const char *text, size_t len, EoiSourcePosition *pos);

extern EoiReplayFilter *eoi_replay_filter_begin(const EoiJob *job);
extern bool eoi_replay_filter_skip(EoiReplayFilter *filter, const char *topic, int32 partition,
								   const EoiSourcePosition *pos);
extern void eoi_replay_filter_end(EoiReplayFilter *filter);

#endif
