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

#include "kafka/kafka.h"
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
	/* What eoi_kafka_poll has taken so far, until it hands the messages over. */
	rd_kafka_message_t **polled;
	int			npolled;
	bool		seek_wake;		/* wake_starved_fetcher is on */
	bool		end_at_watermark;	/* a poll ends once caught up (two_phase) */
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

/*
 * librdkafka versions that change what eoingest does, as rd_kafka_version()
 * encodes them (0xMMmmrrpp, pp = 0xff for a release).  The library is the
 * one loaded at run time, not the headers built against.
 */
#define RDKAFKA_VERSION_SCRAM_KAFKA4	0x020601ff	/* 2.6.1: SCRAM with Kafka 4 (bug #4895) */
#define RDKAFKA_VERSION_FETCH_BACKOFF	0x020200ff	/* 2.2.0: fetch.queue.backoff.ms */

/*
 * fetch.queue.backoff.ms of a job that does not set its own, with a
 * librdkafka that has it.  Its default (1 s) idles a worker that drains the
 * prefetch queue faster, and with 2.14.2 wake_starved_fetcher's seek does
 * not make up for it: bench/run.sh's exactly_once, 1 worker, ran at
 * 330k-351k rows/s against 806k-897k with Debian's 2.0.2 and the seek;
 * with 1, 10 or 100 ms here, 704k-966k (see README, Performance).
 */
#define DEFAULT_FETCH_QUEUE_BACKOFF_MS	"10"

/* How long a group request of reset_offsets and drop_job may take. */
#define GROUP_REQUEST_TIMEOUT_MS	10000

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
	rd_kafka_conf_set_opaque(conf, kafka);
	kafka->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (kafka->rk == NULL)
	{
		pfree(kafka);
		rd_kafka_conf_destroy(conf);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("could not create Kafka consumer for job \"%s\"", job->name),
				 errdetail("%s", errstr)));
	}
	remember_client(kafka);
	rd_kafka_poll_set_consumer(kafka->rk);
	/* librdkafka's own re-check when it has one, the seek otherwise */
	kafka->seek_wake = rd_kafka_version() < RDKAFKA_VERSION_FETCH_BACKOFF &&
		!job_sets_option(job, "fetch.queue.backoff.ms");
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

/*
 * The messages a poll had taken when it failed, or when the process exits
 * in the middle of it: nobody else has them, and rd_kafka_destroy() waits
 * for every message.  They are in the caller's array, which must still be
 * there: at exit the worker drops them before it frees its batch.
 */
static void
drop_polled(EoiKafka *kafka)
{
	for (int i = 0; i < kafka->npolled; i++)
		rd_kafka_message_destroy(kafka->polled[i]);
	kafka->npolled = 0;
}

void
eoi_kafka_drop_polled(EoiKafka *kafka)
{
	if (kafka != NULL)
		drop_polled(kafka);
}

void
eoi_kafka_close(EoiKafka *kafka)
{
	if (kafka == NULL || kafka->rk == NULL)
		return;
	drop_held(kafka);
	rd_kafka_assign(kafka->rk, NULL);
	forget_client(kafka);
	rd_kafka_destroy_flags(kafka->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	free(kafka->stats);
	if (kafka->stats_parsed != NULL)
		pfree(kafka->stats_parsed);
	pfree(kafka);
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
static void
check_refused(EoiKafka *kafka)
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
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("could not %s partition %d of topic \"%s\": %s", pause ? "pause" : "resume",
						partition, topic, rd_kafka_err2str(err))));
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
	list = position_list(kafka, positions, n);
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
	list = position_list(kafka, positions, n);
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

/*
 * The consumer's position in each of these partitions: the offset after the
 * last record, or control record, it handed out (-1 where it has none yet).
 * Records of aborted transactions and transaction markers are never handed
 * to us, but the position moves past them.  False while a message is held
 * back for the next batch: the position counts it, yet it is not written.
 */
bool
eoi_kafka_positions(EoiKafka *kafka, const EoiPosition *owned, int n, int64 *positions)
{
	rd_kafka_topic_partition_list_t *list;
	bool		ok;

	if (kafka->held != NULL || !kafka->assigned || n == 0)
		return false;
	list = position_list(kafka, owned, n);
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

		/*
		 * First the message held back from the last batch, then what is
		 * queued, without reading the clock per message.
		 */
		msg = kafka->held;
		kafka->held = NULL;
		if (msg == NULL)
			msg = rd_kafka_consumer_poll(kafka->rk, 0);
		if (msg == NULL && n > 0 && kafka->end_at_watermark && eoi_kafka_caught_up(kafka))
			break;
		if (msg == NULL)
		{
			remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
			if (remaining > 0)
			{
				bool		filled = kafka->seek_wake && queue_may_have_filled(kafka);
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
			drop_polled(kafka);
			check_refused(kafka);
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
		kafka->npolled = n;
	}
	kafka->npolled = 0;			/* the caller's now */
	return n;
}
