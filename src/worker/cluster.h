/*-------------------------------------------------------------------------
 *
 * cluster.h
 *	  The cluster launcher: the static background worker that runs a
 *	  database launcher in every database that has the extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_CLUSTER_H
#define EOI_CLUSTER_H

#include "postgres.h"

extern PGDLLEXPORT void eoingest_cluster_launcher_main(Datum main_arg);

#endif
