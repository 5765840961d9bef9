/*-------------------------------------------------------------------------
 *
 * kafka.h
 *	  A thin wrapper over librdkafka for eoingest's needs: a consumer whose
 *	  partitions are assigned by hand at offsets PostgreSQL stores, batch
 *	  polling with a deadline, and rewinding.  No transaction code here.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_KAFKA_H
#define EOI_KAFKA_H

#include "base/eoingest.h"
#include "store/offsets.h"

#include <librdkafka/rdkafka.h>

typedef struct EoiKafka EoiKafka;

extern void eoi_kafka_check_options(const char *brokers, Jsonb *options, Oid owner);
extern bool eoi_kafka_property_is_secret(const char *name);
extern EoiKafka *eoi_kafka_open(const EoiJob *job, int worker_index);
extern void eoi_kafka_close(EoiKafka *kafka);
extern void eoi_kafka_drop_polled(EoiKafka *kafka);

extern int	eoi_kafka_partition_count(EoiKafka *kafka, const char *topic, int timeout_ms);
extern List *eoi_kafka_matching_topics(EoiKafka *kafka, const char *pattern, int timeout_ms);
extern void eoi_kafka_resolve_topics(EoiKafka *kafka, EoiJob *job, int timeout_ms);
extern void eoi_kafka_watermarks(EoiKafka *kafka, const char *topic, int32 partition,
								 int64 *low, int64 *high, int timeout_ms);
extern bool eoi_kafka_cached_watermarks(EoiKafka *kafka, const char *topic, int32 partition,
										int64 *low, int64 *high);
extern bool eoi_kafka_last_stable_offset(EoiKafka *kafka, const char *topic, int32 partition,
										 int64 *lso);
extern int64 eoi_kafka_offset_for_time(EoiKafka *kafka, const char *topic, int32 partition,
									   int64 ms, int timeout_ms);
extern void eoi_kafka_assign(EoiKafka *kafka, const EoiPosition *positions, int n);
extern void eoi_kafka_unassign(EoiKafka *kafka);
extern void eoi_kafka_commit_for_monitoring(EoiKafka *kafka, const EoiPosition *positions, int n,
											const char *metadata);
extern char **eoi_kafka_committed_metadata(EoiKafka *kafka, const EoiPosition *positions, int n,
										   int timeout_ms, const char **why);
extern void eoi_kafka_commit_group(EoiKafka *kafka, const char *job_name,
								   const EoiPosition *positions, int n, const char *metadata);
extern void eoi_kafka_delete_group(const EoiJob *job);
extern bool eoi_kafka_positions(EoiKafka *kafka, const EoiPosition *owned, int n,
								int64 *positions);
extern int	eoi_kafka_poll(EoiKafka *kafka, rd_kafka_message_t **messages,
						   int max_messages, int64 max_bytes, int timeout_ms);
extern bool eoi_kafka_caught_up(EoiKafka *kafka);
extern void eoi_kafka_end_polls_at_watermark(EoiKafka *kafka, bool on);
extern const char *eoi_kafka_last_error(EoiKafka *kafka);

extern void eoi_kafka_pause(EoiKafka *kafka, const char *topic, int32 partition, bool pause);

#endif
