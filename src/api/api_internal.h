/*-------------------------------------------------------------------------
 *
 * api_internal.h
 *	  What the job functions' files share (api.c, jobdef.c, lifecycle.c):
 *	  a job's definition as create_job and alter_job check it, and the
 *	  functions one file calls in another.  Not for use outside api/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_API_INTERNAL_H
#define EOI_API_INTERNAL_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/jsonb.h"

#include "store/job.h"

/*
 * A job's definition as create_job takes it and as alter_job makes it from
 * the stored job and the changes: both check it with eoi_api_check_definition(),
 * so that no definition can be stored that create_job would have refused.
 */
typedef struct JobDefinition
{
	int32		id;				/* alter_job: the job's; create_job: 0 */
	const char *name;
	Oid			owner;
	const char *brokers;
	const char *topic;
	const char *target;			/* as given (or as stored), NULL with a transform */
	const char *format_s;
	const char *mode_s;
	const char *transform;
	const char *start_offset;
	Jsonb	   *options;
	const char *on_error_s;
	List	   *key_columns;	/* NIL: the target's primary key */
	const char *key_format_s;	/* NULL: the default for the key */
	ArrayType  *partitions;
	int			parallelism;
	const char *search_path;	/* the transform's names resolve with it */
	bool		running;		/* alter_job of a running job */
	List	   *columns;		/* NIL: the format's default columns */
	const char *timestamp_unit_s;
	const char *envelope_s;		/* none, debezium */
	const char *on_truncate_s;	/* debezium: refuse, truncate */
	const char *schema_registry;	/* avro: the registry's URLs, or NULL */
	Jsonb	   *targets;		/* debezium: {"schema.table": target}, NULL or {}: none */
	const char *transactions_s; /* debezium: batch, source */
	const char *cdc_mode_s;		/* debezium: apply, history, soft_delete */
	const char *deleted_column; /* soft_delete: the boolean column, NULL: the default */
	const char *durability_s;	/* sync, async */
	Jsonb	   *mapping;		/* {"column": source}, or NULL */
	bool		create_target;	/* create a missing target from the writer schema */
	const char *schema_changes_s;	/* none, add_columns, widen */

	/* set by check_definition */
	EoiFormat	format;
	EoiMode		mode;
	EoiFormat	key_format;
	const char *qualified_target;
	EoiEnvelope envelope;
	EoiCdcMode	cdc_mode;
	Jsonb	   *qualified_targets;	/* targets with their names schema-qualified, or NULL */
	EoiSchemaChanges schema_changes;
	bool		target_missing;	/* create_target: the target is created when a message comes */
} JobDefinition;

/* jobdef.c */
extern char *eoi_api_required_text(FunctionCallInfo fcinfo, int argno, const char *name);
extern char *eoi_api_optional_text(FunctionCallInfo fcinfo, int argno);
extern char *eoi_api_optional_target(FunctionCallInfo fcinfo, int argno);
extern int eoi_api_int_in_range(FunctionCallInfo fcinfo, int argno, const char *name, int min, int max);
extern void eoi_api_check_database(void);
extern List *eoi_api_text_array_list(ArrayType *arr, const char *what);
extern Datum eoi_api_list_text_array(List *names);
extern bool eoi_api_job_exists(const char *name);
extern void eoi_api_check_definition(JobDefinition *def);
extern void eoi_api_check_can_start(const EoiJob *job);

/* lifecycle.c */
extern void eoi_api_wake_launcher_at_commit(void);
extern void eoi_install_utility_hook(void);
extern void eoi_api_wait_for_workers_at_commit(int32 job_id, const char *name, int32 config_version,
											   const char *function);
extern Oid eoi_api_find_job_owner(const char *name);

#endif
