/*-------------------------------------------------------------------------
 *
 * kafka_internal.h
 *	  What the librdkafka wrapper's files share (kafka.c, kafkameta.c,
 *	  kafkapoll.c): the client (struct EoiKafka), the librdkafka versions
 *	  that change what it does, and the functions one file calls in
 *	  another.  Not for use outside kafka/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_KAFKA_INTERNAL_H
#define EOI_KAFKA_INTERNAL_H

#include "postgres.h"

#include "utils/jsonb.h"

#include "kafka/kafka.h"

struct EoiKafka
{
	rd_kafka_t *rk;
	char		last_error[512];
	rd_kafka_resp_err_t auth_error;	/* set when the broker refused us */
	bool		assigned;		/* partitions are assigned */
	char	   *stats;			/* librdkafka's last statistics (JSON), malloc'd */
	uint64		stats_seq;		/* bumped by each new statistics */
	Jsonb	   *stats_parsed;	/* stats, parsed once per stats_seq */
	uint64		parsed_seq;
	/* For wake_starved_fetcher: what arrived since the queue was last dry. */
	int64		since_dry_messages;
	int64		since_dry_bytes;
	int64		fill_messages;	/* half of queued.min.messages */
	int64		fill_bytes;		/* half of queued.max.messages.kbytes, in bytes */
	/*
	 * Messages taken from librdkafka and not handed out yet, in order: the
	 * rest of a batch poll, or the message that would have overflowed the
	 * last batch (the next one's first).
	 */
	rd_kafka_message_t **pending;
	int			npending;
	int			next_pending;
	rd_kafka_queue_t *queue;	/* the consumer's queue, for batch polls */
	int64		message_bytes;	/* the mean size of the last poll's messages */
	/* What eoi_kafka_poll has taken so far, until it hands the messages over. */
	rd_kafka_message_t **polled;
	int			npolled;
	bool		seek_wake;		/* wake_starved_fetcher is on */
	bool		end_at_watermark;	/* a poll ends once caught up (two_phase) */
};

/*
 * librdkafka versions that change what eoingest does, as rd_kafka_version()
 * encodes them (0xMMmmrrpp, pp = 0xff for a release).  The library is the
 * one loaded at run time, not the headers built against.
 */
#define RDKAFKA_VERSION_SCRAM_KAFKA4	0x020601ff	/* 2.6.1: SCRAM with Kafka 4 (bug #4895) */
#define RDKAFKA_VERSION_FETCH_BACKOFF	0x020200ff	/* 2.2.0: fetch.queue.backoff.ms */
#define RDKAFKA_VERSION_BATCH_QUEUE		0x020d02ff	/* 2.13.2: batch polls keep positions (librdkafka #5213) */

/* How many messages one batch poll takes from librdkafka at most. */
#define POLL_CHUNK			1024

/* kafka.c */
extern void eoi_kafka_drop_pending(EoiKafka *kafka);

/* kafkameta.c */
extern void eoi_kafka_check_refused(EoiKafka *kafka);
extern rd_kafka_topic_partition_list_t *eoi_kafka_position_list(EoiKafka *kafka, const EoiPosition *positions, int n);

#endif
