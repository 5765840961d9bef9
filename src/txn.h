/*-------------------------------------------------------------------------
 *
 * txn.h
 *	  The short transactions eoingest's background processes run: start,
 *	  snapshot, activity; then commit, statistics, idle.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_TXN_H
#define EOI_TXN_H

#include "eoingest.h"

extern void eoi_begin_work(const char *activity);
extern void eoi_commit_work(void);

#endif
