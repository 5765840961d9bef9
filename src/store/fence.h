/*-------------------------------------------------------------------------
 *
 * fence.h
 *	  Which server runs a job, and the split-brain guard: a job does not
 *	  run on a server that an evidently newer server of the same cluster
 *	  (a promoted standby, on a later timeline) has replaced.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_FENCE_H
#define EOI_FENCE_H

#include "base/eoingest.h"

#include "access/xlogdefs.h"

/* A server: its cluster (the system identifier) and its timeline. */
typedef struct EoiServerId
{
	uint64		system_id;
	TimeLineID	timeline;
} EoiServerId;

extern void eoi_this_server(EoiServerId *id);
extern char *eoi_fence_metadata(void);
extern bool eoi_fence_parse(const char *metadata, EoiServerId *id);
extern void eoi_fence_record(const EoiJob *job);
extern void eoi_fence_refuse(const EoiJob *job, const EoiServerId *here, TimeLineID newer,
							 const char *where);

#endif
