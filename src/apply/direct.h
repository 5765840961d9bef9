/*-------------------------------------------------------------------------
 *
 * direct.h
 *	  Writing decoded messages straight into the target as tuples, without
 *	  the COPY text round trip.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DIRECT_H
#define EOI_DIRECT_H

#include "base/eoingest.h"

#include "access/tableam.h"
#include "parser/parse_node.h"
#include "utils/relcache.h"

#include "format/decode.h"
#include "kafka/batch.h"

/* eoingest.insert_path (hidden, for tests): direct when the target allows, or always COPY. */
typedef enum EoiInsertPath
{
	EOI_INSERT_PATH_COPY,
	EOI_INSERT_PATH_DIRECT
} EoiInsertPath;

extern int	eoingest_insert_path;

/* Called with the message being decoded or inserted (-1: none). */
typedef void (*EoiDirectPositionFn) (void *arg, int message);

extern bool eoi_direct_fits(Relation rel, EoiColumns *cols);
extern bool eoi_direct_target_fits(Relation rel, EoiColumns *cols);
extern uint64 eoi_direct_insert(Relation rel, ParseState *pstate, EoiColumns *cols,
								EoiBatch *batch, EState *estate,
								EoiDirectPositionFn position, void *arg);

/* Rows of text fields into the target (mode upsert's rows of new keys). */
typedef struct EoiDirectRows EoiDirectRows;

extern EoiDirectRows *eoi_direct_rows_begin(Relation rel, ParseState *pstate, EoiColumns *cols,
											EState *estate);
extern void eoi_direct_rows_add(EoiDirectRows *dr, char *const *fields);
extern void eoi_direct_rows_end(EoiDirectRows *dr);

/* Rows updated in place to text fields (mode upsert's rows of existing keys). */
typedef struct EoiDirectUpdate EoiDirectUpdate;

extern EoiDirectUpdate *eoi_direct_update_begin(Relation rel, ParseState *pstate, EoiColumns *cols,
												const bool *set, EState *estate);
extern TupleTableSlot *eoi_direct_update_fetch(EoiDirectUpdate *du, ItemPointer tid);
extern TM_Result eoi_direct_update_row(EoiDirectUpdate *du, ItemPointer tid, char *const *fields);
extern void eoi_direct_update_end(EoiDirectUpdate *du);

#endif
