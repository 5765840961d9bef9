/*-------------------------------------------------------------------------
 *
 * evolve.h
 *	  A target that follows its messages' writer schema: created from it
 *	  (create_target), its columns added and widened as it evolves
 *	  (schema_changes), in the batch's transaction.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_EVOLVE_H
#define EOI_EVOLVE_H

#include "base/eoingest.h"
#include "format/writerschema.h"
#include "kafka/batch.h"

#include "nodes/pg_list.h"

/* A writer schema of a batch, and the topic of its first message. */
typedef struct EoiSchemaUse
{
	const EoiSchemaFields *fields;
	const char *topic;
} EoiSchemaUse;

/* What a table create_target makes holds besides the schema's fields. */
typedef struct EoiNewTarget
{
	List	   *key;			/* its primary key's columns (String), or NIL */
	const char *columns;		/* more column definitions, as SQL, or NULL */
} EoiNewTarget;

extern void eoi_evolve_target(const EoiJob *job, EoiBatch *batch, const char *target);
extern void eoi_evolve_target_to(const EoiJob *job, const char *target, List *uses,
								 const EoiNewTarget *shape);
extern bool eoi_evolve_create_now(const EoiJob *job, const char *topic, const char *target);
extern const EoiSchemaFields *eoi_schema_fields_copy(const EoiSchemaFields *from);

#endif							/* EOI_EVOLVE_H */
