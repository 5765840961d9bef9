/*-------------------------------------------------------------------------
 *
 * twophase.h
 *	  Mode two_phase: checkpoint epochs committed with PostgreSQL's two-phase
 *	  commit, the seed article's two-phase-commit sink.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_TWOPHASE_H
#define EOI_TWOPHASE_H

#include "base/eoingest.h"

#define EOI_GID_LEN 96

/* A prepared transaction's name: database, job, epoch and worker. */
extern void eoi_gid_format(char *buf, Oid database, int32 job_id, uint64 epoch, int worker);

/* Worker side */
extern void eoi_tp_wait_for_resolution(int32 job_id, int worker_index);
extern void eoi_tp_begin_epoch(void);
extern bool eoi_tp_prepare_epoch(const char *gid);

/* Coordinator side (the launcher) */
typedef struct EoiTpJob
{
	int32		job_id;
	int			parallelism;
	bool		running;
} EoiTpJob;

extern void eoi_tp_coordinate(EoiTpJob *jobs, int njobs, bool read_only);
extern void eoi_tp_worker_died(int32 job_id);
extern void eoi_tp_release_epochs(void);

#endif
