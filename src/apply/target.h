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
extern bool eoi_target_split_template(const char *template, char **schema, const char **table);
extern void eoi_check_target_kind(Relation rel, EoiMode mode);
extern void eoi_check_target_insert(Relation rel, List *colnames);
extern void eoi_check_insert(struct ParseState *pstate, Relation rel);
extern void eoi_target_range_table(struct ParseState *pstate, Relation rel, List *colnames);

#endif
