/*-------------------------------------------------------------------------
 *
 * txn.h
 *	  The short transactions eoingest's background processes run: start,
 *	  snapshot, activity; then commit, statistics, idle.  And the
 *	  subtransaction that catches an error.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_TXN_H
#define EOI_TXN_H

#include "base/eoingest.h"

extern void eoi_begin_work(const char *activity);
extern void eoi_commit_work(void);

typedef void (*EoiSubxactFn) (void *arg);
extern ErrorData *eoi_try_subxact(EoiSubxactFn fn, void *arg);

#endif
