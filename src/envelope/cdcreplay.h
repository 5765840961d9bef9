/*-------------------------------------------------------------------------
 *
 * cdcreplay.h
 *	  Change events that Debezium sends again after Kafka Connect restarts,
 *	  recognised by their source and position and skipped.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_CDCREPLAY_H
#define EOI_CDCREPLAY_H

#include "base/eoingest.h"
#include "datatype/timestamp.h"

/* The longest source.name and source.db the filter keeps, in bytes. */
#define EOI_SOURCE_NAME_MAX 255

/*
 * Where a change event is in its source's log.  The source: the
 * connector's logical name and the database (source.name, source.db).  The
 * position: Debezium's PostgreSQL connector's source.sequence, the LSN of
 * the last commit before the event's transaction and the LSN of the change;
 * and the commit time of the event's transaction (source.ts_ms).
 */
typedef struct EoiSourcePosition
{
	const char *name;
	const char *db;
	uint64		commit_lsn;
	uint64		lsn;
	TimestampTz commit_time;
	uint32		fingerprint;	/* of the event at its position, 0: none (see cdcreplay.c) */
} EoiSourcePosition;

typedef struct EoiReplayFilter EoiReplayFilter;

extern bool eoi_parse_source_sequence(const char *text, size_t len, EoiSourcePosition *pos);
extern bool eoi_parse_source_time(const char *text, size_t len, TimestampTz *time);
extern bool eoi_source_name_usable(const char *name, size_t len);
extern uint32 eoi_source_event_fingerprint(const char *op, const char *key, size_t key_len);

extern EoiReplayFilter *eoi_replay_filter_begin(const EoiJob *job);
extern bool eoi_replay_filter_skip(EoiReplayFilter *filter, const char *topic, int32 partition,
								   const EoiSourcePosition *pos);
extern void eoi_replay_filter_end(EoiReplayFilter *filter);

#endif
