/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  A job's worker: consumes its partitions and commits batches.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_WORKER_H
#define EOI_WORKER_H

#include "postgres.h"

extern PGDLLEXPORT void eoingest_worker_main(Datum main_arg);

#endif
