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

extern uint64 eoi_cdc_batch(const EoiJob *job, EoiBatch *batch);

#endif
