/*-------------------------------------------------------------------------
 *
 * writerschema.h
 *	  The fields of a message's writer schema as columns: what a format
 *	  that carries a schema (avro) says a target table should hold, for
 *	  create_target and schema_changes (apply/evolve.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_WRITERSCHEMA_H
#define EOI_WRITERSCHEMA_H

#include "postgres.h"

/* A field of a record schema: its name, and the column type its values fit best. */
typedef struct EoiSchemaField
{
	const char *name;
	Oid			typid;
	int32		typmod;
} EoiSchemaField;

/* The top-level fields of one writer's schema. */
typedef struct EoiSchemaFields
{
	const char *what;			/* "schema id 42", for messages and the record of changes */
	const char *type_name;		/* the top level's type: "record", "string", ... */
	bool		record;			/* a record (fields follow), else nothing to map */
	int			nfields;
	EoiSchemaField *fields;
} EoiSchemaFields;

#endif
