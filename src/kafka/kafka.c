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
 * A process never exits with a client open (close_at_exit): exit() runs the
 * libraries' atexit cleanups, OpenSSL's among them, which free locks that
 * librdkafka's threads go on taking.  Broker threads still running crashed
 * exiting workers that way ("segfault at 18" in pthread_rwlock_wrlock), and
 * the postmaster answers any crashed process with a restart of every
 * session.
 *
 * This file owns the client's configuration, opening and closing it;
 * requests to the broker (metadata, watermarks, the consumer group's
 * offsets) are in kafkameta.c, the assignment and polling in kafkapoll.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/ipc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "kafka/kafka.h"
#include "kafka/kafka_internal.h"
#include "kafka/policy.h"

/*
 * The clients this process has open, to close at its exit.  They live in
 * TopMemoryContext until closed, so that no error leaves a dangling entry.
 */
#define MAX_OPEN_CLIENTS 8
static EoiKafka *open_clients[MAX_OPEN_CLIENTS];
static int	nopen_clients = 0;
static bool exit_hook_set = false;

/* fetch.wait.max.ms of a job with transactions => 'source', unless it sets its own */
#define SOURCE_TXN_FETCH_WAIT_MS "10"

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
 * fetch.queue.backoff.ms of a job that does not set its own, with a
 * librdkafka that has it.  Its default (1 s) idles a worker that drains the
 * prefetch queue faster, and with 2.14.2 wake_starved_fetcher's seek does
 * not make up for it: bench/run.sh's exactly_once, 1 worker, ran at
 * 330k-351k rows/s against 806k-897k with Debian's 2.0.2 and the seek;
 * with 1, 10 or 100 ms here, 704k-966k (see bench/HISTORY.md).
 */
#define DEFAULT_FETCH_QUEUE_BACKOFF_MS	"10"

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
				 errmsg("unrecognized Kafka client property \"%s\"", name),
				 errhint("The options parameter takes librdkafka consumer properties; see librdkafka's CONFIGURATION.md.")));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid value for Kafka client property \"%s\"", name),
			 errdetail("The Kafka client library reported: %s.", errstr)));
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
				 errdetail("The Kafka client library reported: %s.", errstr)));
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

/* Does the job's options set this librdkafka property? */
static bool
job_sets_option(const EoiJob *job, const char *name)
{
	JsonbValue	v;

	return job->options != NULL && JB_ROOT_IS_OBJECT(job->options) &&
		getKeyJsonValueFromContainer(&job->options->root, name, strlen(name), &v) != NULL;
}

/*
 * on_proc_exit: close what is still open (a worker's proc_exit, a FATAL
 * error inside a request), so that librdkafka's threads are gone before
 * exit() runs the atexit cleanups.  rd_kafka_destroy() waits for every
 * message the process holds: the worker's before_shmem_exit callback has
 * handed back its batch and what a poll interrupted by the exit had taken
 * (eoi_kafka_drop_polled).
 */
static void
close_at_exit(int code, Datum arg)
{
	while (nopen_clients > 0)
		eoi_kafka_close(open_clients[nopen_clients - 1]);
}

static void
remember_client(EoiKafka *kafka)
{
	if (!exit_hook_set)
	{
		on_proc_exit(close_at_exit, (Datum) 0);
		exit_hook_set = true;
	}
	Assert(nopen_clients < MAX_OPEN_CLIENTS);
	open_clients[nopen_clients++] = kafka;
}

static void
forget_client(EoiKafka *kafka)
{
	for (int i = 0; i < nopen_clients; i++)
		if (open_clients[i] == kafka)
		{
			open_clients[i] = open_clients[--nopen_clients];
			return;
		}
}

EoiKafka *
eoi_kafka_open(const EoiJob *job, int worker_index)
{
	EoiKafka   *kafka;
	char		group[NAMEDATALEN + 16];
	char		client_id[NAMEDATALEN + 32];
	char		errstr[512];
	rd_kafka_conf_t *conf;

	if (nopen_clients >= MAX_OPEN_CLIENTS)
		elog(ERROR, "more than %d Kafka clients open in one process", MAX_OPEN_CLIENTS);
	snprintf(group, sizeof(group), "eoingest.%s", job->name);
	snprintf(client_id, sizeof(client_id), "eoingest-%s-%d", job->name, worker_index);
	conf = build_conf(job->brokers, job->options, job->owner, group, client_id);
	/*
	 * Source transactions pause and resume partitions all the time
	 * (cdctxn.c); a resumed partition is fetched only in the fetch request
	 * after the one in flight, which the broker holds up to
	 * fetch.wait.max.ms (500 ms by default) while the partitions still
	 * fetched are at their ends.  Measured on t/44: 921 of 1217 batches
	 * waited 100 ms for nothing, catch-up at 6 transactions/s.
	 */
	if (job->source_transactions && !job_sets_option(job, "fetch.wait.max.ms"))
		conf_set_or_error(conf, "fetch.wait.max.ms", SOURCE_TXN_FETCH_WAIT_MS);
	if (rd_kafka_version() >= RDKAFKA_VERSION_FETCH_BACKOFF &&
		!job_sets_option(job, "fetch.queue.backoff.ms"))
		conf_set_or_error(conf, "fetch.queue.backoff.ms", DEFAULT_FETCH_QUEUE_BACKOFF_MS);
	rd_kafka_conf_set_error_cb(conf, error_cb);
	rd_kafka_conf_set_stats_cb(conf, stats_cb);

	kafka = MemoryContextAllocZero(TopMemoryContext, sizeof(EoiKafka));
	kafka->pending = MemoryContextAlloc(TopMemoryContext, sizeof(rd_kafka_message_t *) * POLL_CHUNK);
	rd_kafka_conf_set_opaque(conf, kafka);
	kafka->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (kafka->rk == NULL)
	{
		pfree(kafka->pending);
		pfree(kafka);
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not create Kafka consumer for job \"%s\"", job->name),
				 errdetail("The Kafka client library reported: %s.", errstr)));
	}
	remember_client(kafka);
	rd_kafka_poll_set_consumer(kafka->rk);
	/* librdkafka's own re-check when it has one, the seek otherwise */
	kafka->seek_wake = rd_kafka_version() < RDKAFKA_VERSION_FETCH_BACKOFF &&
		!job_sets_option(job, "fetch.queue.backoff.ms");
	kafka->fill_messages = conf_int(kafka, "queued.min.messages", 100000) / 2;
	kafka->fill_bytes = conf_int(kafka, "queued.max.messages.kbytes", 65536) * 1024 / 2;

	/*
	 * Take what is queued in one call rather than one call per message
	 * (kafkapoll.c), where the library's batch poll moves the consumer's
	 * position only past the records it hands out.
	 */
	if (rd_kafka_version() >= RDKAFKA_VERSION_BATCH_QUEUE)
		kafka->queue = rd_kafka_queue_get_consumer(kafka->rk);
	return kafka;
}

/* Pending messages belong to the assignment they were fetched under. */
void
eoi_kafka_drop_pending(EoiKafka *kafka)
{
	for (int i = kafka->next_pending; i < kafka->npending; i++)
		rd_kafka_message_destroy(kafka->pending[i]);
	kafka->npending = 0;
	kafka->next_pending = 0;
}

void
eoi_kafka_close(EoiKafka *kafka)
{
	if (kafka == NULL || kafka->rk == NULL)
		return;
	eoi_kafka_drop_pending(kafka);
	if (kafka->queue != NULL)
		rd_kafka_queue_destroy(kafka->queue);
	kafka->queue = NULL;
	rd_kafka_assign(kafka->rk, NULL);
	forget_client(kafka);
	rd_kafka_destroy_flags(kafka->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	free(kafka->stats);
	if (kafka->stats_parsed != NULL)
		pfree(kafka->stats_parsed);
	pfree(kafka->pending);
	pfree(kafka);
}

const char *
eoi_kafka_last_error(EoiKafka *kafka)
{
	return kafka->last_error[0] ? kafka->last_error : NULL;
}
