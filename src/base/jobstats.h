/*-------------------------------------------------------------------------
 *
 * jobstats.h
 *	  Each job's cumulative statistics, in shared memory: what its workers
 *	  did since the statistics were reset or a crash, kept across the
 *	  workers' restarts and clean restarts of the server
 *	  (eoingest.job_stats).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_JOBSTATS_H
#define EOI_JOBSTATS_H

#include "base/eoingest.h"

#include "datatype/timestamp.h"

/* What a worker adds to its job's statistics. */
typedef struct EoiJobCounters
{
	uint64		messages;		/* committed (dead letters included) */
	uint64		rows;			/* written into the targets */
	uint64		bytes;			/* of the messages committed: keys and values */
	uint64		batches;		/* committed */
	uint64		dead_letters;
	uint64		errors;			/* attempts at a batch that failed */
	uint64		retries;		/* of those, retried (the rest failed the job) */
	double		kafka_wait_ms;	/* in polls for messages */
	double		write_ms;		/* decoding and writing batches (interleaved) */
	double		commit_ms;		/* committing them, or preparing and deciding */
} EoiJobCounters;

typedef struct EoiJobStats
{
	Oid			database;		/* InvalidOid: a free entry */
	int32		job_id;
	TimestampTz stats_reset;	/* when the entry was made or reset */
	EoiJobCounters counters;
} EoiJobStats;

extern void eoi_job_stats_request(void);
extern void eoi_job_stats_startup(void);
extern bool eoi_job_stats_add(int32 job_id, const EoiJobCounters *delta);
extern bool eoi_job_stats_get(int32 job_id, EoiJobStats *stats);
extern void eoi_job_stats_reset(int32 job_id);
extern void eoi_job_stats_keep_only(int32 *job_ids, int njobs);

#endif
