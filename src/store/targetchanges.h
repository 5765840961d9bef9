/*-------------------------------------------------------------------------
 *
 * targetchanges.h
 *	  eoingest.target_changes: every statement a job ran on a target
 *	  (create_target, schema_changes), kept in the batch's transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_TARGETCHANGES_H
#define EOI_TARGETCHANGES_H

#include "base/eoingest.h"

extern void eoi_target_change_record(const EoiJob *job, const char *topic, const char *target,
									 const char *schema, const char *statement);

#endif
