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
extern EoiEnvelope eoi_parse_envelope(const char *envelope);
extern const char *eoi_envelope_name(EoiEnvelope envelope);
extern bool eoi_parse_on_truncate(const char *on_truncate);

#endif
