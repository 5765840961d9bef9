/*-------------------------------------------------------------------------
 *
 * target.h
 *	  A job's target table: opening it, the checks COPY would make, and
 *	  those every write makes of one message.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_TARGET_H
#define EOI_TARGET_H

#include "base/eoingest.h"

#include "storage/lockdefs.h"
#include "utils/relcache.h"

#include <librdkafka/rdkafka.h>

struct ParseState;

extern Relation eoi_open_target(const char *target, LOCKMODE lockmode);
extern void eoi_check_message_size(const EoiJob *job, rd_kafka_message_t *msg, const char *topic);
extern void eoi_refuse_tombstone(void);
extern Relation eoi_open_job_target(const EoiJob *job, LOCKMODE lockmode);
extern bool eoi_target_exists(const char *target);
extern bool eoi_target_is_template(const char *target);
extern char *eoi_target_for_topic(const char *template, const char *topic);

/* What a target template's placeholders stand for; NULL for what is not known. */
typedef struct EoiTemplateValues
{
	const char *topic;
	const char *source_db;		/* a change event's source block's db, schema, table */
	const char *source_schema;
	const char *source_table;
} EoiTemplateValues;

extern char *eoi_target_for(const char *template, const EoiTemplateValues *values);
extern int	eoi_template_placeholder(const char *p, bool change_events);
extern bool eoi_template_uses_source(const char *template);
extern bool eoi_template_values_complete(const char *template, const EoiTemplateValues *values);
extern bool eoi_target_split_template(const char *template, char **schema, const char **table);
extern void eoi_check_target_kind(Relation rel, EoiMode mode);
extern void eoi_check_target_insert(Relation rel, List *colnames);
extern void eoi_check_insert(struct ParseState *pstate, Relation rel);
extern void eoi_target_range_table(struct ParseState *pstate, Relation rel, List *colnames);

#endif
