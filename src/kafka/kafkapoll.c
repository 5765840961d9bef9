/*-------------------------------------------------------------------------
 *
 * kafkapoll.c
 *	  The librdkafka wrapper's consumer: assigning partitions at absolute
 *	  offsets, pausing them, its positions, and the poll of a batch with
 *	  the wake-up of a starved fetcher.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "utils/timestamp.h"

#include "kafka/kafka.h"
#include "kafka/kafka_internal.h"

/*
 * How long the prefetch queue may stay dry, with records waiting at the
 * broker, after a queue's worth has arrived, before we take the fetcher to
 * be asleep (wake_starved_fetcher).  Short, because the worker idles for
 * it once per queue; a wrong guess costs one fetch fetched again.
 */
#define STARVED_AFTER_MS	3

/* Assign exactly these partitions, at these absolute offsets. */
void
eoi_kafka_assign(EoiKafka *kafka, const EoiPosition *positions, int n)
{
	rd_kafka_topic_partition_list_t *list = eoi_kafka_position_list(kafka, positions, n);
	rd_kafka_resp_err_t err;

	eoi_kafka_drop_pending(kafka);
	err = rd_kafka_assign(kafka->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	kafka->assigned = (err == RD_KAFKA_RESP_ERR_NO_ERROR && n > 0);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not assign the job's partitions: %s", rd_kafka_err2str(err))));
}

/*
 * Stop (pause) or go on (resume) fetching one partition; a resumed
 * partition fetches from the message after the last one handed out.  For
 * source transactions (cdctxn.c): a partition that has run ahead of the
 * others waits while they catch up.
 */
void
eoi_kafka_pause(EoiKafka *kafka, const char *topic, int32 partition, bool pause)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
	rd_kafka_resp_err_t err;

	rd_kafka_topic_partition_list_add(list, topic, partition);
	err = pause ? rd_kafka_pause_partitions(kafka->rk, list) : rd_kafka_resume_partitions(kafka->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR && pause)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not pause partition %d of topic \"%s\": %s",
						partition, topic, rd_kafka_err2str(err))));
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not resume partition %d of topic \"%s\": %s",
						partition, topic, rd_kafka_err2str(err))));
}

/*
 * The messages a poll had taken when it failed, or when the process exits
 * in the middle of it: nobody else has them, and rd_kafka_destroy() waits
 * for every message.  They are in the caller's array, which must still be
 * there: at exit the worker drops them before it frees its batch.  Those
 * still pending follow them, and go too: no later poll may hand out a
 * message whose predecessors were dropped.
 */
static void
drop_polled(EoiKafka *kafka)
{
	for (int i = 0; i < kafka->npolled; i++)
		rd_kafka_message_destroy(kafka->polled[i]);
	kafka->npolled = 0;
	eoi_kafka_drop_pending(kafka);
}

void
eoi_kafka_drop_polled(EoiKafka *kafka)
{
	if (kafka != NULL)
		drop_polled(kafka);
}

/* Messages taken from librdkafka and not handed out yet? */
static bool
has_pending(EoiKafka *kafka)
{
	return kafka->next_pending < kafka->npending;
}

/*
 * The consumer's position in each of these partitions: the offset after the
 * last record, or control record, it handed out (-1 where it has none yet).
 * Records of aborted transactions and transaction markers are never handed
 * to us, but the position moves past them.  False while messages are
 * pending for the next batch: the position counts them, yet they are not
 * written.
 */
bool
eoi_kafka_positions(EoiKafka *kafka, const EoiPosition *owned, int n, int64 *positions)
{
	rd_kafka_topic_partition_list_t *list;
	bool		ok;

	if (has_pending(kafka) || !kafka->assigned || n == 0)
		return false;
	list = eoi_kafka_position_list(kafka, owned, n);
	ok = (rd_kafka_position(kafka->rk, list) == RD_KAFKA_RESP_ERR_NO_ERROR);
	for (int i = 0; i < n; i++)
		positions[i] = (ok && list->elems[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) ?
			list->elems[i].offset : -1;
	rd_kafka_topic_partition_list_destroy(list);
	return ok;
}

/* Drop the assignment and whatever was prefetched for it. */
void
eoi_kafka_unassign(EoiKafka *kafka)
{
	eoi_kafka_drop_pending(kafka);
	(void) rd_kafka_assign(kafka->rk, NULL);
	kafka->assigned = false;
}

/*
 * An error delivered in place of a message.  Out-of-range offsets mean the
 * stored position is gone (retention, or a recreated topic): that needs a
 * person, never a silent jump.  Other errors are informational; librdkafka
 * retries by itself.
 */
static void
handle_consumer_error(EoiKafka *kafka, rd_kafka_message_t *msg)
{
	rd_kafka_resp_err_t err = msg->err;
	int32		partition = msg->partition;
	int64		offset = msg->offset;
	char	   *topic = pstrdup(msg->rkt ? rd_kafka_topic_name(msg->rkt) : "?");
	char	   *reason;

	if (err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
	{
		rd_kafka_message_destroy(msg);
		return;
	}
	reason = pstrdup(rd_kafka_message_errstr(msg));
	rd_kafka_message_destroy(msg);

	if (err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
		err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("stored offset of Kafka topic \"%s\" partition %d is out of range",
						topic, partition),
				 errdetail("The consumer reported at offset %lld: %s.", (long long) offset, reason),
				 errhint("The records were deleted by retention or the topic was recreated. "
						 "Choose where to resume by updating eoingest.offsets, then start the job again.")));

	if (err == RD_KAFKA_RESP_ERR__FATAL ||
		err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
		err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("Kafka consumer error on topic \"%s\": %s", topic, reason)));

	snprintf(kafka->last_error, sizeof(kafka->last_error), "%s: %s",
			 rd_kafka_err2name(err), reason);
}

/*
 * librdkafka 2.0 stops fetching for a partition whose prefetch queue is over
 * queued.min.messages or queued.max.messages.kbytes, and looks again only
 * when its broker thread wakes: on I/O, on an operation, or after a second
 * (fetch.queue.backoff.ms makes that tunable from 2.2 on).  A worker that
 * drains the queue in less than a second then idles for the rest of it, so
 * a backlog ingests at a fraction of the speed the worker can write, unless
 * the queue is made to hold a whole second of records, which costs
 * hundreds of megabytes.
 *
 * So when the queue has run dry although the broker holds more records
 * than we have consumed, wake the fetcher by seeking each such partition
 * to our own position: the next record we need.  The seek bumps the
 * partition's version before it returns, and the consumer drops whatever
 * was fetched under an older one, so a fetch response in flight is
 * discarded and fetched again: each record is still delivered once, in
 * order, from that position, and the queue being empty, nothing is lost.
 *
 * With librdkafka 2.2 and later, fetch.queue.backoff.ms (10 ms unless the
 * job sets it, DEFAULT_FETCH_QUEUE_BACKOFF_MS) makes librdkafka re-check
 * soon by itself: no seek then.  Measured with 2.14.2, the seek left the
 * worker idle half of the time.
 *
 * Only when the queue can have reached a threshold since it was last dry
 * (queue_may_have_filled): a live stream that the worker keeps up with
 * never fills it, and there a dry queue means a fetch is on its way, which
 * a seek would only throw away.  A partition whose high watermark stays
 * ahead of what can be read (an open upstream transaction under
 * read_committed) costs one seek per filled queue, not a loop.
 */
static bool
queue_may_have_filled(EoiKafka *kafka)
{
	return kafka->since_dry_messages >= kafka->fill_messages ||
		kafka->since_dry_bytes >= kafka->fill_bytes;
}

static void
wake_starved_fetcher(EoiKafka *kafka)
{
	rd_kafka_topic_partition_list_t *assigned = NULL;
	rd_kafka_topic_partition_list_t *behind;
	rd_kafka_error_t *error;

	if (rd_kafka_assignment(kafka->rk, &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return;
	behind = rd_kafka_topic_partition_list_new(assigned->cnt);
	if (rd_kafka_position(kafka->rk, assigned) == RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		for (int i = 0; i < assigned->cnt; i++)
		{
			rd_kafka_topic_partition_t *p = &assigned->elems[i];
			int64		low;
			int64		high;

			if (p->offset >= 0 &&
				eoi_kafka_cached_watermarks(kafka, p->topic, p->partition, &low, &high) &&
				high > p->offset)
				rd_kafka_topic_partition_list_add(behind, p->topic, p->partition)->offset =
					p->offset;
		}
	}
	if (behind->cnt > 0)
	{
		/* Asynchronous (timeout 0); a failure surfaces as a consumer error. */
		error = rd_kafka_seek_partitions(kafka->rk, behind, 0);
		if (error != NULL)
			rd_kafka_error_destroy(error);
	}
	rd_kafka_topic_partition_list_destroy(behind);
	rd_kafka_topic_partition_list_destroy(assigned);
}

/*
 * Has the consumer read everything the broker had, as of the last fetch
 * response of each assigned partition (its cached high watermark)?  False
 * while a partition has no watermark yet or nothing is assigned.  A
 * transaction marker at a partition's end keeps it false: the caller then
 * waits for its poll timeout as before.
 */
bool
eoi_kafka_caught_up(EoiKafka *kafka)
{
	rd_kafka_topic_partition_list_t *assigned = NULL;
	bool		caught_up;

	if (rd_kafka_assignment(kafka->rk, &assigned) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return false;
	caught_up = assigned->cnt > 0 &&
		rd_kafka_position(kafka->rk, assigned) == RD_KAFKA_RESP_ERR_NO_ERROR;
	for (int i = 0; caught_up && i < assigned->cnt; i++)
	{
		rd_kafka_topic_partition_t *p = &assigned->elems[i];
		int64		low;
		int64		high;

		caught_up = p->offset >= 0 &&
			eoi_kafka_cached_watermarks(kafka, p->topic, p->partition, &low, &high) &&
			p->offset >= high;
	}
	rd_kafka_topic_partition_list_destroy(assigned);
	return caught_up;
}

/*
 * two_phase: end a poll with what it has as soon as the consumer caught up
 * to the watermarks it saw, instead of waiting out its timeout for a full
 * batch (the last epoch of a backlog would otherwise wait that long).
 */
void
eoi_kafka_end_polls_at_watermark(EoiKafka *kafka, bool on)
{
	kafka->end_at_watermark = on;
}

/*
 * A worker polls librdkafka, not a latch, so WL_EXIT_ON_PM_DEATH does not
 * cover it: without its postmaster it must not go on committing.
 */
static void
exit_if_postmaster_died(EoiKafka *kafka)
{
	if (PostmasterIsAlive())
		return;
	drop_polled(kafka);
	proc_exit(1);
}

/*
 * An interrupt in the middle of a poll: an error drops what the poll had
 * taken; a FATAL one exits, and the worker drops it at exit.
 */
static void
check_interrupts_polling(EoiKafka *kafka)
{
	if (!INTERRUPTS_PENDING_CONDITION())
		return;
	PG_TRY();
	{
		CHECK_FOR_INTERRUPTS();
	}
	PG_CATCH();
	{
		drop_polled(kafka);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/* A consumer error in the middle of a poll: one that raises drops what the poll had taken. */
static void
consumer_error_polling(EoiKafka *kafka, rd_kafka_message_t *msg)
{
	PG_TRY();
	{
		handle_consumer_error(kafka, msg);
	}
	PG_CATCH();
	{
		drop_polled(kafka);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * How many messages to take from librdkafka at most: those the batch has
 * room for, and, by the size of the last poll's messages, about those its
 * bytes have room for.  Messages taken and not handed out are outside
 * librdkafka's queue, whose limits (queued.max.messages.kbytes) no longer
 * count them: a poll that stops at max_bytes should leave few.
 */
static int
poll_want(EoiKafka *kafka, int messages, int64 bytes)
{
	if (kafka->message_bytes > 0)
		messages = (int) Min((int64) messages, bytes / kafka->message_bytes + 1);
	return Max(messages, 1);
}

/*
 * The next message, waiting up to wait_ms for one: first those pending,
 * then librdkafka's.  From librdkafka 2.13.2 on, what is queued is taken
 * in one call of up to the messages the batch has room for (poll_want, of
 * its room in messages and bytes; POLL_CHUNK at most), which reads the
 * clock and updates each partition's position once, not once per message;
 * a wait asks for one message, so that it returns with the first, as
 * rd_kafka_consumer_poll() does.  Earlier versions' batch polls could move
 * a position past an error, or skip records around a pause: one message
 * per call there.
 */
static rd_kafka_message_t *
next_message(EoiKafka *kafka, int room_messages, int64 room_bytes, int wait_ms)
{
	int			want;
	int			got;

	if (has_pending(kafka))
		return kafka->pending[kafka->next_pending++];
	kafka->npending = kafka->next_pending = 0;
	if (kafka->queue == NULL)
		return rd_kafka_consumer_poll(kafka->rk, wait_ms);
	want = (wait_ms > 0) ? 1 : Min(poll_want(kafka, room_messages, room_bytes), POLL_CHUNK);
	got = (int) rd_kafka_consume_batch_queue(kafka->queue, wait_ms, kafka->pending, want);
	if (got <= 0)
		return NULL;
	kafka->npending = got;
	kafka->next_pending = 1;
	return kafka->pending[0];
}

/* Put back the message next_message() returned last: the next one's first. */
static void
hold_back(EoiKafka *kafka, rd_kafka_message_t *msg)
{
	if (kafka->next_pending > 0)
	{
		Assert(kafka->pending[kafka->next_pending - 1] == msg);
		kafka->next_pending--;
		return;
	}
	Assert(kafka->npending == 0);
	kafka->pending[0] = msg;
	kafka->npending = 1;
}

/*
 * Poll up to max_messages messages, and up to max_bytes of keys and values,
 * within timeout_ms, in slices short enough to notice interrupts and the
 * postmaster's death.  A message that would take the batch past max_bytes
 * is held back for the next poll (librdkafka cannot take it back); one
 * larger than max_bytes on its own is a batch of its own.  Returns how many were stored in
 * messages; the caller owns them (rd_kafka_message_destroy).
 */
int
eoi_kafka_poll(EoiKafka *kafka, rd_kafka_message_t **messages, int max_messages,
			   int64 max_bytes, int timeout_ms)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	int			n = 0;
	int64		bytes = 0;

	kafka->polled = messages;
	kafka->npolled = 0;
	while (n < max_messages)
	{
		long		remaining = 0;
		rd_kafka_message_t *msg;
		int64		size;

		/* What is at hand first, without reading the clock per message. */
		msg = next_message(kafka, max_messages - n, max_bytes - bytes, 0);
		if (msg == NULL && n > 0 && kafka->end_at_watermark && eoi_kafka_caught_up(kafka))
			break;
		if (msg == NULL)
		{
			remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
			if (remaining > 0)
			{
				bool		filled = kafka->seek_wake && queue_may_have_filled(kafka);
				int			wait_ms = (int) Min(remaining, filled ? STARVED_AFTER_MS : 100);

				msg = next_message(kafka, max_messages - n, max_bytes - bytes, wait_ms);
				if (msg == NULL && wait_ms >= STARVED_AFTER_MS)
				{
					/* Dry. */
					if (filled)
						wake_starved_fetcher(kafka);
					kafka->since_dry_messages = 0;
					kafka->since_dry_bytes = 0;
				}
			}
		}
		if (msg == NULL && kafka->auth_error != RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			drop_polled(kafka);
			eoi_kafka_check_refused(kafka);
		}
		if (msg == NULL)
		{
			if (remaining <= 0)
				break;
			check_interrupts_polling(kafka);
			exit_if_postmaster_died(kafka);
			continue;
		}
		if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			consumer_error_polling(kafka, msg);
			continue;
		}
		size = msg->len + msg->key_len;
		if (n > 0 && bytes + size > max_bytes)
		{
			hold_back(kafka, msg);
			break;
		}
		kafka->last_error[0] = '\0';
		kafka->since_dry_messages++;
		kafka->since_dry_bytes += size;
		bytes += size;
		messages[n++] = msg;
		kafka->npolled = n;
	}
	kafka->npolled = 0;			/* the caller's now */
	if (n > 0)
		kafka->message_bytes = bytes / n;
	return n;
}
