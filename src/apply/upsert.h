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

#include "base/eoingest.h"
#include "kafka/batch.h"

#include "format/decode.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"

/* eoingest.upsert_path (hidden, for tests): bulk when the target allows, or always ON CONFLICT. */
typedef enum EoiUpsertPath
{
	EOI_UPSERT_PATH_ON_CONFLICT,
	EOI_UPSERT_PATH_BULK
} EoiUpsertPath;

extern int	eoingest_upsert_path;

extern uint64 eoi_upsert_batch(const EoiJob *job, EoiBatch *batch);

/*
 * Changes to one target applied set-wise, with the net effect per key in
 * the order they were added (mode upsert, and the Debezium envelope).
 */
struct EoiColumns;
struct EoiRowWriter;
typedef struct EoiChangeSet EoiChangeSet;

extern EoiChangeSet *eoi_changes_begin(Relation rel, const char *target, struct EoiColumns *cols,
									   struct EoiColumns *keys, List *key_columns);
extern EoiChangeSet *eoi_changes_begin_append(Relation rel, const char *target, struct EoiColumns *cols);
extern struct EoiRowWriter *eoi_changes_row_writer(EoiChangeSet *cs);
extern struct EoiRowWriter *eoi_changes_key_writer(EoiChangeSet *cs);
extern void eoi_changes_add_upsert(EoiChangeSet *cs);
extern void eoi_changes_add_delete(EoiChangeSet *cs);
extern uint64 eoi_changes_apply(EoiChangeSet *cs);
extern void eoi_changes_at_message(EoiChangeSet *cs, int message);
extern int	eoi_changes_nulled(EoiChangeSet *cs, const int **messages);
extern void eoi_changes_describe(EoiChangeSet *cs, JsonbParseState **state);
extern void eoi_changes_forget(EoiChangeSet *cs);

/*
 * A field written to a change set's row writer with this pointer as its
 * data keeps the row's current value: the change did not carry the
 * column's value (Debezium's placeholder for an unchanged TOASTed value).
 */
extern const char eoi_unchanged_value[];
extern List *eoi_primary_key_columns(Relation rel);
extern void eoi_upsert_check(Relation rel, const EoiMapping *mapping, EoiFormat key_format,
							 List *key_columns);

#endif
