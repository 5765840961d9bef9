/*-------------------------------------------------------------------------
 *
 * upsert.h
 *	  Mode upsert, the seed article's idempotent sink: INSERT ... ON CONFLICT
 *	  on the key columns, tombstones delete.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_UPSERT_H
#define EOI_UPSERT_H

#include "eoingest.h"
#include "batch.h"

#include "decode.h"
#include "utils/relcache.h"

extern uint64 eoi_upsert_batch(const EoiJob *job, EoiBatch *batch);
extern List *eoi_primary_key_columns(Relation rel);
extern void eoi_upsert_check(Relation rel, const EoiMapping *mapping, EoiFormat key_format,
							 List *key_columns);

#endif
