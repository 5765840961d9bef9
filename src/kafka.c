/*-------------------------------------------------------------------------
 *
 * kafka.c
 *	  librdkafka consumer wrapper.
 *
 * Offsets live in PostgreSQL, so the consumer never joins a group, never
 * commits and never stores offsets: partitions are assigned by hand at the
 * absolute offsets the worker read from eoingest.offsets.  Records of
 * aborted upstream transactions are skipped by read_committed, and an
 * offset that is out of range is an error (never a silent jump).
 *
 * librdkafka calls its callbacks from the thread that polls, which is ours
 * for error_cb; its log callback may run on its own threads, so it is left
 * to write to stderr, which the postmaster's log collects.  The handle's
 * configuration is never logged: it holds credentials.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "kafka.h"
#include "policy.h"

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
	/* The message that would have overflowed the last batch: the next one's first. */
	rd_kafka_message_t *held;
};

/*
 * Defaults that bound the prefetch memory; the user may override them.
 * The queue holds librdkafka's default 100,000 messages (queued.min.messages)
 * or 16 MB, whichever comes first: a worker peak of about 70 MB with
 * 100-byte records.  Fetches of up to 8 MB per partition refill it in few
 * round trips, and wake_starved_fetcher keeps librdkafka from idling once
 * it is full (bench/results: about 160k rows/s without, 600k with).
 */
static const char *const default_properties[][2] = {
	{"queued.max.messages.kbytes", "16384"},
	{"fetch.max.bytes", "8388608"},
	{"max.partition.fetch.bytes", "8388608"},
	{"socket.keepalive.enable", "true"},
	{"statistics.interval.ms", "5000"}, /* for the last stable offset in eoingest.lag */
};

/*
 * How long the prefetch queue may stay dry, with records waiting at the
 * broker, after a queue's worth has arrived, before we take the fetcher to
 * be asleep (wake_starved_fetcher).  Short, because the worker idles for
 * it once per queue; a wrong guess costs one fetch fetched again.
 */
#define STARVED_AFTER_MS	3

/* Properties whose values are credentials: never echoed in a message. */
bool
eoi_kafka_property_is_secret(const char *name)
{
	return strstr(name, "password") != NULL || strstr(name, "secret") != NULL ||
		strncmp(name, "sasl.oauthbearer.", 17) == 0 || strcmp(name, "sasl.username") == 0 ||
		strcmp(name, "ssl.key.pem") == 0 || strcmp(name, "ssl_key") == 0 ||
		strcmp(name, "ssl.keystore.password") == 0 ||
		strcmp(name, "schema.registry.basic.auth.user.info") == 0;
}

static void
conf_set_or_error(rd_kafka_conf_t *conf, const char *name, const char *value)
{
	char		errstr[512];
	rd_kafka_conf_res_t res;

	res = rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr));
	if (res == RD_KAFKA_CONF_OK)
		return;
	rd_kafka_conf_destroy(conf);
	if (eoi_kafka_property_is_secret(name))
		strlcpy(errstr, "(the value is not shown: it is a credential)", sizeof(errstr));
	if (res == RD_KAFKA_CONF_UNKNOWN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown Kafka client property \"%s\"", name),
				 errhint("options takes librdkafka consumer properties, see librdkafka's CONFIGURATION.md.")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for Kafka client property \"%s\"", name),
			 errdetail("%s", errstr)));
}

/* Apply the job's options, already checked by eoi_check_options_allowed. */
static void
apply_options(rd_kafka_conf_t *conf, Jsonb *options)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *name = NULL;

	if (options == NULL)
		return;
	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			name = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok == WJB_VALUE && !eoi_property_is_eoingest(name))
		{
			char	   *value = eoi_option_value_text(&v);

			if (value == NULL)
				elog(ERROR, "Kafka client property \"%s\" has no scalar value", name);
			conf_set_or_error(conf, name, value);
		}
	}
}

/*
 * The client configuration of a job.  Nothing reaches librdkafka before
 * the policy has checked the brokers and every property against what the
 * owner may do (policy.c): this is the one place a configuration is built.
 */
static rd_kafka_conf_t *
build_conf(const char *brokers, Jsonb *options, Oid owner, const char *group,
		   const char *client_id)
{
	rd_kafka_conf_t *conf;

	eoi_check_brokers_allowed(brokers);
	eoi_check_options_allowed(options, owner);
	conf = rd_kafka_conf_new();

	for (int i = 0; i < lengthof(default_properties); i++)
		conf_set_or_error(conf, default_properties[i][0], default_properties[i][1]);
	apply_options(conf, options);

	conf_set_or_error(conf, "bootstrap.servers", brokers);
	conf_set_or_error(conf, "group.id", group);
	conf_set_or_error(conf, "client.id", client_id);
	conf_set_or_error(conf, "enable.auto.commit", "false");
	conf_set_or_error(conf, "enable.auto.offset.store", "false");
	conf_set_or_error(conf, "isolation.level", "read_committed");
	conf_set_or_error(conf, "auto.offset.reset", "error");
	conf_set_or_error(conf, "enable.partition.eof", "false");
	return conf;
}

static void
error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	EoiKafka   *kafka = opaque;

	/*
	 * Runs in our thread, from rd_kafka_consumer_poll(): only record it.
	 * "All brokers are down" follows the broker's own reason (bad
	 * credentials, untrusted certificate): keep the reason.
	 */
	if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN && kafka->last_error[0] != '\0')
		return;
	if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL ||
		err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED)
		kafka->auth_error = err;
	snprintf(kafka->last_error, sizeof(kafka->last_error), "%s: %s",
			 rd_kafka_err2name(err), reason);
}

/*
 * librdkafka's statistics, served from rd_kafka_consumer_poll() in our
 * thread.  Only kept here (plain malloc: no server code runs inside
 * librdkafka's call); eoi_kafka_last_stable_offset() reads them later.
 */
static int
stats_cb(rd_kafka_t *rk, char *json, size_t json_len, void *opaque)
{
	EoiKafka   *kafka = opaque;
	char	   *copy = malloc(json_len + 1);

	if (copy == NULL)
		return 0;
	memcpy(copy, json, json_len);
	copy[json_len] = '\0';
	free(kafka->stats);
	kafka->stats = copy;
	kafka->stats_seq++;
	return 0;
}

/*
 * The last stable offset of a partition (the end of what read_committed can
 * read) from the latest statistics; false if not known yet.
 */
bool
eoi_kafka_last_stable_offset(EoiKafka *kafka, const char *topic, int32 partition, int64 *lso)
{
	Jsonb	   *jb;
	JsonbValue	v;
	char		key[16];
	const char *path[3];
	bool		found = false;

	if (kafka->stats == NULL)
		return false;
	if (kafka->stats_parsed == NULL || kafka->parsed_seq != kafka->stats_seq)
	{
		/* parse each new statistics once, for all partitions */
		MemoryContext old = MemoryContextSwitchTo(GetMemoryChunkContext(kafka));

		if (kafka->stats_parsed)
			pfree(kafka->stats_parsed);
		kafka->stats_parsed = DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
																 CStringGetDatum(kafka->stats)));
		kafka->parsed_seq = kafka->stats_seq;
		MemoryContextSwitchTo(old);
	}
	jb = kafka->stats_parsed;
	snprintf(key, sizeof(key), "%d", partition);
	path[0] = "topics";
	path[1] = topic;
	path[2] = "partitions";
	{
		JsonbContainer *c = &jb->root;

		for (int i = 0; i < 3 && c != NULL; i++)
		{
			if (getKeyJsonValueFromContainer(c, path[i], strlen(path[i]), &v) == NULL ||
				v.type != jbvBinary)
				c = NULL;
			else
				c = v.val.binary.data;
		}
		if (c != NULL && getKeyJsonValueFromContainer(c, key, strlen(key), &v) != NULL &&
			v.type == jbvBinary &&
			getKeyJsonValueFromContainer(v.val.binary.data, "ls_offset", 9, &v) != NULL &&
			v.type == jbvNumeric)
		{
			*lso = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v.val.numeric)));
			found = (*lso >= 0);
		}
	}
	return found;
}

/*
 * Check a job's brokers and options at create_job time, so that a typo is
 * an error there rather than a crash loop later.  Builds a whole client to
 * catch properties that are only checked together (security settings).
 */
void
eoi_kafka_check_options(const char *brokers, Jsonb *options, Oid owner)
{
	rd_kafka_conf_t *conf = build_conf(brokers, options, owner, "eoingest.check", "eoingest-check");
	char		errstr[512];
	rd_kafka_t *rk;

	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (rk == NULL)
	{
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid Kafka client configuration"),
				 errdetail("%s", errstr)));
	}
	rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
}

/* An integer property of the handle's configuration, or `fallback`. */
static int64
conf_int(EoiKafka *kafka, const char *name, int64 fallback)
{
	char		value[64];
	size_t		size = sizeof(value);

	if (rd_kafka_conf_get(rd_kafka_conf(kafka->rk), name, value, &size) != RD_KAFKA_CONF_OK)
		return fallback;
	return strtoll(value, NULL, 10);
}

EoiKafka *
eoi_kafka_open(const EoiJob *job, int worker_index)
{
	EoiKafka   *kafka = palloc0(sizeof(EoiKafka));
	char		group[NAMEDATALEN + 16];
	char		client_id[NAMEDATALEN + 32];
	char		errstr[512];
	rd_kafka_conf_t *conf;

	snprintf(group, sizeof(group), "eoingest.%s", job->name);
	snprintf(client_id, sizeof(client_id), "eoingest-%s-%d", job->name, worker_index);
	conf = build_conf(job->brokers, job->options, job->owner, group, client_id);
	rd_kafka_conf_set_opaque(conf, kafka);
	rd_kafka_conf_set_error_cb(conf, error_cb);
	rd_kafka_conf_set_stats_cb(conf, stats_cb);

	kafka->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (kafka->rk == NULL)
	{
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not create Kafka consumer for job \"%s\"", job->name),
				 errdetail("%s", errstr)));
	}
	rd_kafka_poll_set_consumer(kafka->rk);
	kafka->fill_messages = conf_int(kafka, "queued.min.messages", 100000) / 2;
	kafka->fill_bytes = conf_int(kafka, "queued.max.messages.kbytes", 65536) * 1024 / 2;
	return kafka;
}

/* A held message belongs to the assignment it was fetched under. */
static void
drop_held(EoiKafka *kafka)
{
	if (kafka->held != NULL)
		rd_kafka_message_destroy(kafka->held);
	kafka->held = NULL;
}

void
eoi_kafka_close(EoiKafka *kafka)
{
	if (kafka == NULL || kafka->rk == NULL)
		return;
	drop_held(kafka);
	rd_kafka_assign(kafka->rk, NULL);
	rd_kafka_destroy_flags(kafka->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	kafka->rk = NULL;
	free(kafka->stats);
	kafka->stats = NULL;
}

const char *
eoi_kafka_last_error(EoiKafka *kafka)
{
	return kafka->last_error[0] ? kafka->last_error : NULL;
}

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
 * A refused login or an untrusted certificate will not cure itself: the
 * job fails with the broker's reason rather than retrying forever.
 */
static void
check_refused(EoiKafka *kafka)
{
	if (kafka->auth_error == RD_KAFKA_RESP_ERR_NO_ERROR)
		return;
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

int
eoi_kafka_partition_count(EoiKafka *kafka, const char *topic, int timeout_ms)
{
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(kafka->rk, topic, NULL);
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
	int			count;

	do
		err = rd_kafka_metadata(kafka->rk, 0, rkt, &md, next_slice(deadline));
	while (again_after_slice(err, deadline));
	rd_kafka_topic_destroy(rkt);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		CHECK_FOR_INTERRUPTS();
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
	{
		serve_events(kafka);
		check_refused(kafka);
	}
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not read metadata of Kafka topic \"%s\": %s",
						topic, rd_kafka_err2str(err)),
				 errhint("Check that the brokers are reachable.")));

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

static rd_kafka_topic_partition_list_t *
position_list(EoiKafka *kafka, const EoiPosition *positions, int n)
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

/* Assign exactly these partitions, at these absolute offsets. */
void
eoi_kafka_assign(EoiKafka *kafka, const EoiPosition *positions, int n)
{
	rd_kafka_topic_partition_list_t *list = position_list(kafka, positions, n);
	rd_kafka_resp_err_t err;

	drop_held(kafka);
	err = rd_kafka_assign(kafka->rk, list);
	rd_kafka_topic_partition_list_destroy(list);
	kafka->assigned = (err == RD_KAFKA_RESP_ERR_NO_ERROR && n > 0);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not assign the job's partitions: %s", rd_kafka_err2str(err))));
}

/*
 * Commit these positions to the job's consumer group, asynchronously, so
 * that Kafka's own tools (kafka-consumer-groups, lag exporters) see the
 * job.  Only for monitoring: eoingest never reads them back.
 */
void
eoi_kafka_commit_for_monitoring(EoiKafka *kafka, const EoiPosition *positions, int n)
{
	rd_kafka_topic_partition_list_t *list;

	if (n == 0)
		return;
	list = position_list(kafka, positions, n);
	(void) rd_kafka_commit(kafka->rk, list, 1);
	rd_kafka_topic_partition_list_destroy(list);
}

/* Drop the assignment and whatever was prefetched for it. */
void
eoi_kafka_unassign(EoiKafka *kafka)
{
	drop_held(kafka);
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
				 errdetail("%s (offset %lld)", reason, (long long) offset),
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
 * (fetch.queue.backoff.ms makes that tunable from 2.1 on).  A worker that
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
 * A worker polls librdkafka, not a latch, so WL_EXIT_ON_PM_DEATH does not
 * cover it: without its postmaster it must not go on committing.
 */
static void
exit_if_postmaster_died(EoiKafka *kafka, rd_kafka_message_t **messages, int n)
{
	if (PostmasterIsAlive())
		return;
	for (int i = 0; i < n; i++)
		rd_kafka_message_destroy(messages[i]);
	proc_exit(1);
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

	while (n < max_messages)
	{
		long		remaining = 0;
		rd_kafka_message_t *msg;
		int64		size;

		/*
		 * First the message held back from the last batch, then what is
		 * queued, without reading the clock per message.
		 */
		msg = kafka->held;
		kafka->held = NULL;
		if (msg == NULL)
			msg = rd_kafka_consumer_poll(kafka->rk, 0);
		if (msg == NULL)
		{
			remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
			if (remaining > 0)
			{
				bool		filled = queue_may_have_filled(kafka);
				int			wait_ms = (int) Min(remaining, filled ? STARVED_AFTER_MS : 100);

				msg = rd_kafka_consumer_poll(kafka->rk, wait_ms);
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
			for (int i = 0; i < n; i++)
				rd_kafka_message_destroy(messages[i]);
			check_refused(kafka);
		}
		if (msg == NULL)
		{
			if (remaining <= 0)
				break;
			CHECK_FOR_INTERRUPTS();
			exit_if_postmaster_died(kafka, messages, n);
			continue;
		}
		if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			PG_TRY();
			{
				handle_consumer_error(kafka, msg);
			}
			PG_CATCH();
			{
				for (int i = 0; i < n; i++)
					rd_kafka_message_destroy(messages[i]);
				PG_RE_THROW();
			}
			PG_END_TRY();
			continue;
		}
		size = msg->len + msg->key_len;
		if (n > 0 && bytes + size > max_bytes)
		{
			kafka->held = msg;
			break;
		}
		kafka->last_error[0] = '\0';
		kafka->since_dry_messages++;
		kafka->since_dry_bytes += size;
		bytes += size;
		messages[n++] = msg;
	}
	return n;
}
