/*-------------------------------------------------------------------------
 *
 * cdc.h
 *	  Change data capture: applying Debezium change events to the target
 *	  (envelope => 'debezium').
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_CDC_H
#define EOI_CDC_H

#include "base/eoingest.h"
#include "kafka/batch.h"

#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"

extern uint64 eoi_cdc_batch(const EoiJob *job, EoiBatch *batch);

/* A dry run of change events (api/preview.c): what each would change. */
typedef struct EoiCdcPreview EoiCdcPreview;

extern EoiCdcPreview *eoi_cdc_preview_begin(const EoiJob *job, EoiBatch *batch);
extern Jsonb *eoi_cdc_preview_event(EoiCdcPreview *preview, int message);
extern void eoi_cdc_preview_end(EoiCdcPreview *preview);

/* The columns cdc_mode history fills in each row it appends (cdcmode.c). */
typedef enum EoiHistoryColumn
{
	EOI_HISTORY_OP,
	EOI_HISTORY_SOURCE_TS,
	EOI_HISTORY_SOURCE_LSN,
	EOI_HISTORY_TOPIC,
	EOI_HISTORY_PARTITION,
	EOI_HISTORY_OFFSET,
	EOI_HISTORY_NCOLUMNS
} EoiHistoryColumn;

struct EoiColumns;
extern void eoi_cdc_mode_columns(Relation rel, const char *target, struct EoiColumns *cols,
								 EoiCdcMode mode, const char *deleted_column, List *key_columns,
								 int *history, int *deleted);
extern const char *eoi_cdc_default_deleted_column(void);
extern char *eoi_cdc_mode_column_definitions(EoiCdcMode mode, const char *deleted_column);

#endif
