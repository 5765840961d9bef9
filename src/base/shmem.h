/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  Shared state between the launchers, the workers and the SQL functions:
 *	  one slot per running worker, one entry per database launcher, and the
 *	  cluster launcher's latch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_SHMEM_H
#define EOI_SHMEM_H

#include "base/eoingest.h"

#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lwlock.h"

#define EOI_ERROR_LEN 1024
#define EOI_RATE_SAMPLES 6		/* one every 10 s: the last minute */
#define EOI_MAX_PARALLELISM_GIDS 64	/* most workers of one job */

typedef enum EoiWorkerState
{
	EOI_WORKER_STARTING,		/* connecting, resolving, assigning */
	EOI_WORKER_RUNNING,			/* consuming and committing */
	EOI_WORKER_RETRYING,		/* a batch failed; backing off before retry */
	EOI_WORKER_WAITING			/* waiting for Kafka (topic missing, broker down) */
} EoiWorkerState;

typedef struct EoiWorkerSlot
{
	bool		in_use;			/* claimed by a database launcher */
	uint64		generation;		/* tells a slot's successive owners apart */
	Oid			database;		/* the job's, and its launcher's */
	int32		job_id;
	Oid			owner;			/* the job's owner, for who may see the slot */
	int32		config_version; /* of the job when the worker was started */
	int			worker_index;
	pid_t		pid;			/* 0 until the worker attaches, and after */
	EoiWorkerState state;
	bool		progressed;		/* committed a batch since it started */
	TimestampTz started_at;
	uint64		messages;
	uint64		rows;
	uint64		bytes;
	uint64		batches;
	uint64		dead_letters;
	int64		heap_bytes;		/* malloc'd and not freed, -1 if unknown */
	TimestampTz last_commit_at;
	TimestampTz last_error_at;
	char		last_error[EOI_ERROR_LEN];
	TimestampTz rate_at[EOI_RATE_SAMPLES];	/* when messages was sampled */
	uint64		rate_messages[EOI_RATE_SAMPLES];

	Latch	   *latch;			/* the worker's, for the coordinator to wake it */
	TimestampTz stop_asked_at;	/* the launcher asked the worker to stop (0: no) */

	/*
	 * two_phase: the coordinator sets current_epoch (the epoch to write) and
	 * committed_epoch once it committed one; an epoch that current_epoch
	 * passed without being committed was rolled back.  The worker sets
	 * prepared_epoch (with prepared_empty when it had nothing to write), or
	 * failed_epoch when it could not finish an epoch it had begun.
	 */
	uint64		current_epoch;
	uint64		prepared_epoch;
	bool		prepared_empty;
	uint64		committed_epoch;
	uint64		failed_epoch;
} EoiWorkerSlot;

/*
 * A worker of a running job that the launcher could not start for want of
 * a slot: an eoingest worker slot (eoingest.max_workers), a background
 * worker slot (max_worker_processes), or one its owner may take
 * (eoingest.max_workers_per_role).  The launcher rewrites the list every
 * tick, so a worker leaves it as soon as it is started; job_status shows
 * the entries as workers in state 'waiting' with the reason.
 */
typedef enum EoiWaitReason
{
	EOI_WAIT_WORKER_SLOT,		/* eoingest.max_workers used up */
	EOI_WAIT_BGWORKER_SLOT,		/* max_worker_processes used up */
	EOI_WAIT_ROLE_LIMIT			/* the owner's eoingest.max_workers_per_role */
} EoiWaitReason;

#define EOI_WAIT_REASONS 3

#define EOI_MAX_WAITING 1024	/* entries kept; more wait unlisted */

typedef struct EoiWaitingWorker
{
	Oid			database;
	int32		job_id;
	Oid			owner;
	int			worker_index;
	EoiWaitReason reason;
	TimestampTz since;
} EoiWaitingWorker;

/*
 * Why a database launcher ended, as it tells the cluster launcher, which
 * decides from it when to start one again in that database.
 */
typedef enum EoiDbExit
{
	EOI_DB_EXIT_FAILED,			/* an error, a crash or a settings change: soon */
	EOI_DB_EXIT_NO_EXTENSION,	/* nothing to run: when a session asks */
	EOI_DB_EXIT_LEFT			/* asked to leave: when the database is wanted again */
} EoiDbExit;

/*
 * A database launcher, one per database that has the extension.  The
 * cluster launcher makes the entry when it starts one and frees it once
 * the process ended; the database launcher fills in its pid and latch when
 * it attaches, and its exit reason before it leaves.
 */
typedef struct EoiDbLauncher
{
	Oid			database;		/* InvalidOid: a free entry */
	pid_t		pid;			/* 0 until it attaches, and after it left */
	Latch	   *latch;
	EoiDbExit	exit_reason;
	bool		leave_asked;	/* stop the workers, then exit */
	bool		woken;			/* a session asked it to look since its tick began */
	bool		serving;		/* it found the extension: not a probe any more */
	/* the waiting workers' messages of this database, one per reason */
	char		wait_message[EOI_WAIT_REASONS][EOI_ERROR_LEN];
} EoiDbLauncher;

#define EOI_MAX_START_REQUESTS 64

struct EoiJobStats;				/* jobstats.h */

typedef struct EoiShared
{
	LWLock	   *lock;
	pid_t		cluster_launcher_pid;
	Latch	   *cluster_launcher_latch;
	/* databases where a session asked for a launcher that did not run */
	int			nstart_requests;
	Oid			start_requests[EOI_MAX_START_REQUESTS];
	bool		start_requests_lost;	/* the list was full: probe every database */
	int			ndatabases;
	EoiDbLauncher *databases;	/* ndatabases entries, after the slots */
	uint64		next_generation;
	/* workers waiting for a slot, and why (per database: EoiDbLauncher) */
	int			nwaiting;
	EoiWaitingWorker waiting[EOI_MAX_WAITING];
	/* each job's cumulative statistics, in their own segment (jobstats.c) */
	int			nstats;
	struct EoiJobStats *stats;
	int			nslots;
	EoiWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} EoiShared;

extern EoiShared *eoi_shared;

extern void eoi_shmem_request(void);
extern void eoi_shmem_startup(void);
extern void eoi_wake_launcher(void);
extern EoiDbLauncher *eoi_db_launcher(Oid database);
extern int	eoi_db_launchers_running(void);
extern bool eoi_ask_to_leave(Oid database);
extern bool eoi_database_in_use(Oid database);
extern int	eoi_forget_database(Oid database);
extern bool eoi_job_has_slot(int32 job_id, bool attached_only);
extern pid_t eoi_job_worker_pid(int32 job_id, int32 config_version);

/* Is the slot held for the job `job_id` of this database? */
static inline bool
eoi_slot_is_job(const EoiWorkerSlot *slot, int32 job_id)
{
	return slot->in_use && slot->database == MyDatabaseId && slot->job_id == job_id;
}

#endif
