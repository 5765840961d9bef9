/*-------------------------------------------------------------------------
 *
 * offsets.h
 *	  The checkpoint in eoingest.offsets: where each partition of a job is
 *	  to be read next.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_OFFSETS_H
#define EOI_OFFSETS_H

#include "base/eoingest.h"
#include "datatype/timestamp.h"

/* One partition of one of the job's topics, and where to read it next. */
typedef struct EoiPosition
{
	const char *topic;			/* one of the job's topics (EoiJob.topics) */
	int32		partition;
	int64		offset;
} EoiPosition;

extern int	eoi_offsets_read(const EoiJob *job, const char *topic, EoiPosition *positions, int max);
extern void eoi_offsets_lock_job(const EoiJob *job);
extern bool eoi_offsets_any(const EoiJob *job);
extern void eoi_offsets_insert(const EoiJob *job, const EoiPosition *position);
extern void eoi_offsets_note_watermarks(const EoiJob *job, const EoiPosition *position,
										int64 low, int64 high, int64 lso);
extern void eoi_offsets_advance(const EoiJob *job, const EoiPosition *position,
								int64 next_offset, TimestampTz message_at);

/*
 * envelope debezium: the position of the last change event applied from a
 * source (a connector's name and database) into a partition (cdcreplay.c).
 */
typedef struct EoiOffsetSourcePosition
{
	char	   *topic;
	int32		partition;
	char	   *source_name;
	char	   *source_db;
	uint64		commit_lsn;
	uint64		lsn;
	TimestampTz commit_time;
	int			nevents;		/* the events applied at that position: */
	uint32	   *events;			/* their fingerprints (cdcreplay.c) */
} EoiOffsetSourcePosition;

extern int	eoi_offsets_read_source_positions(const EoiJob *job,
											  EoiOffsetSourcePosition **positions);
extern void eoi_offsets_store_source_position(const EoiJob *job,
											  const EoiOffsetSourcePosition *position);
extern void eoi_offsets_add_replays_skipped(const EoiJob *job, const char *topic,
											int32 partition, int64 skipped);
extern void eoi_offsets_add_unchanged_nulled(const EoiJob *job, const char *topic,
											 int32 partition, int64 rows);

/* transactions => 'source': the LSN of the last END committed, per topic. */
extern uint64 eoi_offsets_read_txn_end_lsn(const EoiJob *job, const char *txn_topic);
extern void eoi_offsets_store_txn_end_lsn(const EoiJob *job, const char *txn_topic,
										  int32 partition, uint64 lsn);

#endif
