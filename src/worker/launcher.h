/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  The launcher: one static background worker that keeps a worker running
 *	  for every index of every running job, restarting crashed ones with
 *	  backoff and stopping those of stopped or dropped jobs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_LAUNCHER_H
#define EOI_LAUNCHER_H

#include "postgres.h"

/* What the launcher hands a worker in bgw_extra. */
typedef struct EoiWorkerArgs
{
	uint64		generation;
	Oid			database;
	Oid			owner;
	int32		job_id;
	int			worker_index;
} EoiWorkerArgs;

extern PGDLLEXPORT void eoingest_launcher_main(Datum main_arg);

#endif
