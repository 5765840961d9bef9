/*-------------------------------------------------------------------------
 *
 * job.h
 *	  Reading and validating job definitions (eoingest.jobs).
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_JOB_H
#define EOI_JOB_H

#include "base/eoingest.h"

extern EoiJob *eoi_job_load(int32 job_id, bool missing_ok);
extern EoiJob *eoi_job_load_by_name(const char *name);
extern List *eoi_split_topics(const char *topic);
extern bool eoi_topic_is_pattern(const char *topic);
extern bool eoi_topic_matches(const char *pattern, const char *name);
extern EoiMode eoi_parse_mode(const char *mode);
extern EoiFormat eoi_parse_format(const char *format);
extern EoiOnError eoi_parse_on_error(const char *on_error);
extern const char *eoi_mode_name(EoiMode mode);
extern const char *eoi_format_name(EoiFormat format);
extern const char *eoi_on_error_name(EoiOnError on_error);
extern EoiTimestampUnit eoi_parse_timestamp_unit(const char *unit);
extern const char *eoi_timestamp_unit_name(EoiTimestampUnit unit);
extern EoiEnvelope eoi_parse_envelope(const char *envelope);
extern const char *eoi_envelope_name(EoiEnvelope envelope);
extern bool eoi_parse_on_truncate(const char *on_truncate);
extern EoiCdcMode eoi_parse_cdc_mode(const char *cdc_mode);
extern bool eoi_parse_durability(const char *durability);
extern EoiSchemaChanges eoi_parse_schema_changes(const char *schema_changes);
extern const char *eoi_schema_changes_name(EoiSchemaChanges schema_changes);
extern bool eoi_jobs_have_column(const char *name);
extern const char *eoi_cdc_mode_name(EoiCdcMode cdc_mode);
extern bool eoi_parse_transactions(const char *transactions);
extern const char *eoi_transactions_name(bool source);
extern char *eoi_transaction_topic(List *topics);



/*
 * eoingest's own tables are not writable by job owners; the worker and the
 * job functions read and write them as the bootstrap superuser, and only
 * them, with a pinned search_path.  Everything else runs as the job's owner
 * (in a worker) or the caller (in a job function).
 */
typedef struct EoiSavedUser
{
	Oid			userid;
	int			sec_context;
	int			guc_nest_level;
} EoiSavedUser;

extern void eoi_become_extension_owner(EoiSavedUser *saved);
extern void eoi_become_job_owner(const EoiJob *job, EoiSavedUser *saved);
extern void eoi_restore_user(EoiSavedUser *saved);
extern bool eoi_may_steer_job(Oid owner);
extern void eoi_check_job_owner(const char *name, Oid owner);
extern void eoi_check_primary(void);
extern int64 eoi_job_query_int(const char *sql, int32 job_id);
#endif
