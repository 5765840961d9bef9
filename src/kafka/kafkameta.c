/*-------------------------------------------------------------------------
 *
 * kafkameta.c
 *	  The librdkafka wrapper's requests to the broker, made in
 *	  interruptible slices: partition counts, watermarks, offsets for
 *	  times, and the job's consumer group (its committed metadata, commits
 *	  for monitoring, its offsets reset, its deletion).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/timestamp.h"

#include "kafka/kafka.h"
#include "kafka/kafka_internal.h"
#include "store/job.h"

/* How long a group request of reset_offsets and drop_job may take. */
#define GROUP_REQUEST_TIMEOUT_MS	10000

/*
 * Requests to the broker block for up to their timeout, and a backend that
 * blocks in librdkafka notices neither a cancel nor a terminate.  So they
 * are made in slices of at most REQUEST_SLICE_MS, with an interrupt check
 * between slices, until the whole timeout has passed.  A slice that times
 * out leaves its request to librdkafka; the next slice asks again.
 */
#define REQUEST_SLICE_MS	250

static int
next_slice(TimestampTz deadline)
{
	long		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

	return (int) Max(Min(remaining, REQUEST_SLICE_MS), 1);
}

/*
 * After a slice: true to ask again, false once answered (or refused for a
 * reason that waiting will not cure), past the deadline, or interrupted.  The caller frees what it holds of librdkafka's, then
 * calls CHECK_FOR_INTERRUPTS() before reporting a timeout.
 */
static bool
again_after_slice(rd_kafka_resp_err_t err, TimestampTz deadline)
{
	/*
	 * A slice that ends before any broker is up says "transport failure"
	 * rather than "timed out" (librdkafka 2.0.2, a broker that accepts the
	 * connection and has not answered yet): both mean "not yet".
	 */
	if (err != RD_KAFKA_RESP_ERR__TIMED_OUT && err != RD_KAFKA_RESP_ERR__TRANSPORT)
		return false;
	if (GetCurrentTimestamp() >= deadline)
		return false;
	return !(InterruptPending && INTERRUPTS_CAN_BE_PROCESSED());
}

/*
 * Number of partitions of a topic, or -1 when the topic does not
 * exist (yet).  Broker trouble is an error of class 08, which the worker
 * treats as transient.
 */
/*
 * librdkafka before 2.6.1 cannot log in with SASL/SCRAM to Kafka 4 brokers
 * (librdkafka bug #4895: its final SCRAM message repeats the client nonce,
 * which Kafka 4 rejects as it should), and the broker then says "invalid
 * credentials" while they are right.  Whether the broker is Kafka 4 is not
 * known here (librdkafka keeps the broker's ApiVersions to itself, and a
 * refused login leaves nothing else to ask), so a refused SCRAM login with
 * such a librdkafka names both causes.
 */
static bool
scram_login_may_be_bug_4895(EoiKafka *kafka)
{
	char		mechanism[64];
	size_t		size = sizeof(mechanism);

	if (rd_kafka_version() >= RDKAFKA_VERSION_SCRAM_KAFKA4 ||
		kafka->auth_error == RD_KAFKA_RESP_ERR__SSL)
		return false;
	if (rd_kafka_conf_get(rd_kafka_conf(kafka->rk), "sasl.mechanisms", mechanism, &size) !=
		RD_KAFKA_CONF_OK)
		return false;
	return pg_strncasecmp(mechanism, "SCRAM-", 6) == 0;
}

/*
 * A refused login or an untrusted certificate will not cure itself: the
 * job fails with the broker's reason rather than retrying forever.
 */
void
eoi_kafka_check_refused(EoiKafka *kafka)
{
	if (kafka->auth_error == RD_KAFKA_RESP_ERR_NO_ERROR)
		return;
	if (scram_login_may_be_bug_4895(kafka))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
				 errmsg("the Kafka brokers refused the job's connection: %s", kafka->last_error),
				 errhint("Check the job's credentials (sasl.username, sasl.password) or, with a Kafka 4 broker, "
						 "librdkafka bug #4895, fixed in 2.6.1: librdkafka %s cannot log in to Kafka 4 with SCRAM even with the right credentials. "
						 "Build eoingest against librdkafka 2.6.1 or later, then start the job again.",
						 rd_kafka_version_str())));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
			 errmsg("the Kafka brokers refused the job's connection: %s", kafka->last_error),
			 errhint("Check the security settings in the job's options (sasl.*, ssl.*), then start the job again.")));
}

/*
 * Let librdkafka deliver its queued error events (to error_cb).  Only while
 * nothing is assigned, so that no message can come out of the queue.
 */
static void
serve_events(EoiKafka *kafka)
{
	if (kafka->assigned)
		return;
	for (int i = 0; i < 100; i++)
	{
		rd_kafka_message_t *msg = rd_kafka_consumer_poll(kafka->rk, 0);

		if (msg == NULL)
			break;
		rd_kafka_message_destroy(msg);
	}
}

/*
 * Ask for the metadata of one topic (rkt), or of every topic (rkt NULL), in
 * slices until it is answered or timeout_ms has passed.  *md is set when
 * the result is RD_KAFKA_RESP_ERR_NO_ERROR.
 */
static rd_kafka_resp_err_t
request_metadata(EoiKafka *kafka, rd_kafka_topic_t *rkt, const struct rd_kafka_metadata **md,
				 int timeout_ms)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	rd_kafka_resp_err_t err;

	do
		err = rd_kafka_metadata(kafka->rk, rkt == NULL, rkt, md, next_slice(deadline));
	while (again_after_slice(err, deadline));
	return err;
}

/*
 * After a metadata request failed, and before saying so: an interrupt
 * first, then brokers that refused the login, which say more than a
 * timeout.
 */
static void
check_failed_request(EoiKafka *kafka)
{
	CHECK_FOR_INTERRUPTS();
	serve_events(kafka);
	eoi_kafka_check_refused(kafka);
}

int
eoi_kafka_partition_count(EoiKafka *kafka, const char *topic, int timeout_ms)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(kafka->rk, topic, NULL);
	int			count;

	err = request_metadata(kafka, rkt, &md, timeout_ms);
	rd_kafka_topic_destroy(rkt);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		check_failed_request(kafka);
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read metadata of Kafka topic \"%s\": %s",
						topic, rd_kafka_err2str(err)),
				 errhint("Check that the brokers are reachable.")));
	}

	if (md->topic_cnt != 1 ||
		md->topics[0].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
		count = -1;
	else if (md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		err = md->topics[0].err;
		rd_kafka_metadata_destroy(md);
		ereport(ERROR,
				(errcode(err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ?
						 ERRCODE_INSUFFICIENT_PRIVILEGE : ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read metadata of Kafka topic \"%s\": %s",
						topic, rd_kafka_err2str(err))));
	}
	else
		count = md->topics[0].partition_cnt;
	rd_kafka_metadata_destroy(md);
	return count;
}

static int
compare_names(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/*
 * The names of the cluster's topics that `pattern` matches (see
 * eoi_topic_matches), sorted.  Only the topics the client may describe are
 * listed, and one being deleted is left out.
 */
List *
eoi_kafka_matching_topics(EoiKafka *kafka, const char *pattern, int timeout_ms)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err = request_metadata(kafka, NULL, &md, timeout_ms);
	List	   *names = NIL;
	List	   *matched = NIL;
	ListCell   *lc;

	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		check_failed_request(kafka);
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not list the Kafka cluster's topics: %s", rd_kafka_err2str(err)),
				 errhint("Check that the brokers are reachable.")));
	}
	/* copied first: matching may fail, and md is librdkafka's */
	for (int i = 0; i < md->topic_cnt; i++)
		if (md->topics[i].err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
			names = lappend(names, pstrdup(md->topics[i].topic));
	rd_kafka_metadata_destroy(md);
	foreach(lc, names)
	{
		CHECK_FOR_INTERRUPTS();
		if (eoi_topic_matches(pattern, lfirst(lc)))
			matched = lappend(matched, lfirst(lc));
	}
	list_sort(matched, compare_names);
	return matched;
}

/*
 * A job whose topic is a pattern reads the topics it matches: set
 * job->topics to those it matches now, in the current memory context.
 */
void
eoi_kafka_resolve_topics(EoiKafka *kafka, EoiJob *job, int timeout_ms)
{
	if (job->topic_pattern != NULL)
		job->topics = eoi_kafka_matching_topics(kafka, job->topic_pattern, timeout_ms);
}

void
eoi_kafka_watermarks(EoiKafka *kafka, const char *topic, int32 partition, int64 *low,
					 int64 *high, int timeout_ms)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	rd_kafka_resp_err_t err;

	do
		err = rd_kafka_query_watermark_offsets(kafka->rk, topic, partition,
											   low, high, next_slice(deadline));
	while (again_after_slice(err, deadline));
	CHECK_FOR_INTERRUPTS();
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read offsets of Kafka topic \"%s\" partition %d: %s",
						topic, partition, rd_kafka_err2str(err))));
}

/*
 * The watermarks librdkafka learned from its last fetch response for this
 * partition, without asking the broker; false if it has none yet.
 */
bool
eoi_kafka_cached_watermarks(EoiKafka *kafka, const char *topic, int32 partition,
							int64 *low, int64 *high)
{
	return rd_kafka_get_watermark_offsets(kafka->rk, topic, partition, low, high) ==
		RD_KAFKA_RESP_ERR_NO_ERROR && *high >= 0;
}

/*
 * The earliest offset whose timestamp is at or after `ms` (milliseconds
 * since the epoch); the high watermark when there is none.
 */
int64
eoi_kafka_offset_for_time(EoiKafka *kafka, const char *topic, int32 partition, int64 ms,
						  int timeout_ms)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	rd_kafka_resp_err_t err;
	int64		offset;

	rd_kafka_topic_partition_list_add(list, topic, partition);
	do
	{
		/* each slice asks anew: the call overwrites the offset with its answer */
		list->elems[0].offset = ms;
		err = rd_kafka_offsets_for_times(kafka->rk, list, next_slice(deadline));
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			err = list->elems[0].err;
	} while (again_after_slice(err, deadline));
	offset = list->elems[0].offset;
	rd_kafka_topic_partition_list_destroy(list);
	CHECK_FOR_INTERRUPTS();
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not look up offsets by time in Kafka topic \"%s\" partition %d: %s",
						topic, partition, rd_kafka_err2str(err))));
	if (offset < 0)
	{
		int64		low;

		eoi_kafka_watermarks(kafka, topic, partition, &low, &offset, timeout_ms);
	}
	return offset;
}

rd_kafka_topic_partition_list_t *
eoi_kafka_position_list(EoiKafka *kafka, const EoiPosition *positions, int n)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		Assert(positions[i].offset >= 0);
		rd_kafka_topic_partition_list_add(list, positions[i].topic,
										  positions[i].partition)->offset = positions[i].offset;
	}
	return list;
}

/* Commit `metadata` (or nothing, if NULL) with each partition of `list`. */
static void
set_metadata(rd_kafka_topic_partition_list_t *list, const char *metadata)
{
	for (int i = 0; metadata != NULL && i < list->cnt; i++)
	{
		/* librdkafka frees it with the list, with free() */
		list->elems[i].metadata = strdup(metadata);
		list->elems[i].metadata_size = list->elems[i].metadata ? strlen(metadata) : 0;
	}
}

/*
 * Commit these positions to the job's consumer group, asynchronously, so
 * that Kafka's own tools (kafka-consumer-groups, lag exporters) see the
 * job.  eoingest never reads the offsets back; `metadata` (or NULL) goes
 * with each partition's commit, and only it is read back (fence.c).
 */
void
eoi_kafka_commit_for_monitoring(EoiKafka *kafka, const EoiPosition *positions, int n,
								const char *metadata)
{
	rd_kafka_topic_partition_list_t *list;

	if (n == 0)
		return;
	list = eoi_kafka_position_list(kafka, positions, n);
	set_metadata(list, metadata);
	(void) rd_kafka_commit(kafka->rk, list, 1);
	rd_kafka_topic_partition_list_destroy(list);
}

/*
 * The metadata last committed to the job's consumer group for each of
 * `positions` (palloc'd strings, NULL where there is none), asked in
 * interruptible slices for up to `timeout_ms`.  Broker trouble is an error
 * of class 08, which the worker treats as transient; a group the job may
 * not read (Kafka ACLs) gives NULL, with the reason in `*why`.
 */
char **
eoi_kafka_committed_metadata(EoiKafka *kafka, const EoiPosition *positions, int n,
							 int timeout_ms, const char **why)
{
	rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(Max(n, 1));
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	rd_kafka_resp_err_t err;
	char	  **result = palloc0(sizeof(char *) * Max(n, 1));

	for (int i = 0; i < n; i++)
		rd_kafka_topic_partition_list_add(list, positions[i].topic, positions[i].partition);
	do
		err = rd_kafka_committed(kafka->rk, list, next_slice(deadline));
	while (again_after_slice(err, deadline));
	if (err == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
		err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
	{
		rd_kafka_topic_partition_list_destroy(list);
		*why = rd_kafka_err2str(err);
		return NULL;
	}
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		rd_kafka_topic_partition_list_destroy(list);
		CHECK_FOR_INTERRUPTS();
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read the job's consumer group offsets: %s", rd_kafka_err2str(err))));
	}
	for (int i = 0; i < list->cnt && i < n; i++)
		if (list->elems[i].err == RD_KAFKA_RESP_ERR_NO_ERROR && list->elems[i].metadata_size > 0)
			result[i] = pnstrdup(list->elems[i].metadata, list->elems[i].metadata_size);
	rd_kafka_topic_partition_list_destroy(list);
	return result;
}

/*
 * Commit these positions to the job's consumer group and wait for the
 * answer (reset_offsets: the group shows where the job will resume).  Only
 * for monitoring: a failure is a warning, and the job's next commit puts
 * the group right.
 */
void
eoi_kafka_commit_group(EoiKafka *kafka, const char *job_name, const EoiPosition *positions,
					   int n, const char *metadata)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_queue_t *queue;
	rd_kafka_event_t *event = NULL;
	rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__TIMED_OUT;
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   GROUP_REQUEST_TIMEOUT_MS);

	if (n == 0)
		return;
	list = eoi_kafka_position_list(kafka, positions, n);
	set_metadata(list, metadata);
	queue = rd_kafka_queue_new(kafka->rk);
	err = rd_kafka_commit_queue(kafka->rk, list, queue, NULL, NULL);
	rd_kafka_topic_partition_list_destroy(list);
	while (err == RD_KAFKA_RESP_ERR_NO_ERROR && event == NULL)
	{
		event = rd_kafka_queue_poll(queue, next_slice(deadline));
		if (event == NULL && !again_after_slice(RD_KAFKA_RESP_ERR__TIMED_OUT, deadline))
			err = RD_KAFKA_RESP_ERR__TIMED_OUT;
	}
	if (event != NULL)
	{
		const rd_kafka_topic_partition_list_t *done = rd_kafka_event_topic_partition_list(event);

		err = rd_kafka_event_error(event);
		for (int i = 0; done != NULL && i < done->cnt && err == RD_KAFKA_RESP_ERR_NO_ERROR; i++)
			err = done->elems[i].err;
		rd_kafka_event_destroy(event);
	}
	rd_kafka_queue_destroy(queue);
	CHECK_FOR_INTERRUPTS();
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(WARNING,
				(errmsg("could not commit the new offsets of job \"%s\" to its Kafka consumer group: %s",
						job_name, rd_kafka_err2str(err)),
				 errdetail("The offsets are stored in eoingest.offsets; the consumer group only mirrors them (commit_to_kafka), and the job's next commit updates it.")));
}

/*
 * Delete the job's consumer group, and the offsets committed to it
 * (drop_job of a job with commit_to_kafka), so that lag monitoring does
 * not report a job that is gone.  A group that does not exist is fine;
 * any other failure is a warning: the job is dropped all the same.
 */
void
eoi_kafka_delete_group(const EoiJob *job)
{
	EoiKafka   *kafka = eoi_kafka_open(job, 0);
	char		group[NAMEDATALEN + 16];
	rd_kafka_DeleteGroup_t *request;
	rd_kafka_queue_t *queue;
	rd_kafka_event_t *event = NULL;
	rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
	char		reason[512] = "";
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   GROUP_REQUEST_TIMEOUT_MS);

	snprintf(group, sizeof(group), "eoingest.%s", job->name);
	request = rd_kafka_DeleteGroup_new(group);
	queue = rd_kafka_queue_new(kafka->rk);
	rd_kafka_DeleteGroups(kafka->rk, &request, 1, NULL, queue);
	rd_kafka_DeleteGroup_destroy(request);
	while (event == NULL)
	{
		event = rd_kafka_queue_poll(queue, next_slice(deadline));
		if (event == NULL && !again_after_slice(RD_KAFKA_RESP_ERR__TIMED_OUT, deadline))
			break;
	}
	if (event == NULL)
		err = RD_KAFKA_RESP_ERR__TIMED_OUT;
	else
	{
		const rd_kafka_DeleteGroups_result_t *result = rd_kafka_event_DeleteGroups_result(event);
		size_t		count = 0;
		const rd_kafka_group_result_t **groups = NULL;

		err = rd_kafka_event_error(event);
		if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
			strlcpy(reason, rd_kafka_event_error_string(event), sizeof(reason));
		else if (result != NULL)
			groups = rd_kafka_DeleteGroups_result_groups(result, &count);
		for (size_t i = 0; i < count; i++)
		{
			const rd_kafka_error_t *error = rd_kafka_group_result_error(groups[i]);

			if (error == NULL || rd_kafka_error_code(error) == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND)
				continue;
			err = rd_kafka_error_code(error);
			strlcpy(reason, rd_kafka_error_string(error), sizeof(reason));
		}
		rd_kafka_event_destroy(event);
	}
	rd_kafka_queue_destroy(queue);
	eoi_kafka_close(kafka);
	CHECK_FOR_INTERRUPTS();
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(WARNING,
				(errmsg("could not delete the Kafka consumer group \"%s\" of job \"%s\": %s",
						group, job->name, reason[0] ? reason : rd_kafka_err2str(err)),
				 errhint("Delete it with kafka-consumer-groups --delete --group %s.", group)));
}
