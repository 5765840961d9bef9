/*
 * eoi-kafka: small Kafka helper for the eoingest test bed (librdkafka).
 *
 *   eoi-kafka [-b BROKERS] [-t TIMEOUT_S] COMMAND ARGS...
 *
 *   create-topic TOPIC PARTITIONS [--if-not-exists] [config=value ...]
 *   delete-topic TOPIC
 *   add-partitions TOPIC NEW_TOTAL
 *   produce TOPIC [-p PARTITION] [-k KEY] [-z] [-K] [-H NAME=VALUE ...]  (one message per stdin line)
 *   produce-seq TOPIC --count N [--start S] [--format csv|json|text] [--keyed]
 *   produce-tx TOPIC --count N --commit|--abort [--start S] [--format ...] [--keyed]
 *   watermarks TOPIC                                    (prints "partition low high")
 *
 * The broker list comes from -b or $KAFKA_BROKERS. Every network operation is
 * bounded by TIMEOUT_S (default 30 s). Exit status: 0 ok, 1 error, 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

static const char *g_brokers;
static int g_timeout_ms = 30000;
static const char *g_cmd = "eoi-kafka";

static long g_delivered;
static long g_failed;
static char g_first_dr_error[512];

static void
die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "eoi-kafka %s: ", g_cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stdout);
	/* _exit: do not wait for librdkafka's background threads. */
	_exit(1);
}

static void
usage(void)
{
	fprintf(stderr,
			"usage: eoi-kafka [-b BROKERS] [-t TIMEOUT_S] COMMAND ARGS...\n"
			"  create-topic TOPIC PARTITIONS [--if-not-exists] [config=value ...]\n"
			"  delete-topic TOPIC\n"
			"  add-partitions TOPIC NEW_TOTAL\n"
			"  produce TOPIC [-p PARTITION] [-k KEY] [-z] [-K] [-H NAME=VALUE ...]\n"
			"  produce-seq TOPIC --count N [--start S] [--format csv|json|text] [--keyed]\n"
			"  produce-tx TOPIC --count N --commit|--abort [--start S] [--format csv|json|text] [--keyed]\n"
			"  watermarks TOPIC\n"
			"  committed GROUP TOPIC\n"
			"brokers default to $KAFKA_BROKERS; timeout defaults to 30 s\n");
	exit(2);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
remaining_ms(int64_t deadline)
{
	int64_t r = deadline - now_ms();

	return r < 0 ? 0 : (int) r;
}

static long long
parse_ll(const char *s, const char *what, long long min)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < min)
		die("invalid %s '%s'", what, s);
	return v;
}

static void
conf_set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char		errstr[512];

	if (rd_kafka_conf_set(conf, k, v, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
		die("config %s=%s: %s", k, v, errstr);
}

static void
dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void) rk;
	(void) opaque;
	if (m->err)
	{
		if (g_failed++ == 0)
			snprintf(g_first_dr_error, sizeof(g_first_dr_error), "partition %d: %s",
					 (int) m->partition, rd_kafka_err2str(m->err));
	}
	else
		g_delivered++;
}

static void
error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	(void) rk;
	(void) opaque;
	/* Fatal errors (idempotence/transactions) end the run at once. */
	if (err == RD_KAFKA_RESP_ERR__FATAL)
	{
		char		buf[512];
		rd_kafka_resp_err_t ferr = rd_kafka_fatal_error(rk, buf, sizeof(buf));

		die("fatal producer error %s: %s", rd_kafka_err2name(ferr), buf);
	}
	/* Others (broker down, ...) are retried by librdkafka until our timeouts. */
	fprintf(stderr, "eoi-kafka %s: warning: %s: %s\n", g_cmd,
			rd_kafka_err2name((rd_kafka_resp_err_t) err), reason);
}

/*
 * Creates a producer handle; transactional_id may be NULL. fast: batch for
 * throughput; admin: a plain handle for admin/metadata requests only.
 */
static rd_kafka_t *
make_handle(const char *transactional_id, int fast, int admin)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errstr[512];
	char		buf[32];
	rd_kafka_t *rk;

	conf_set(conf, "bootstrap.servers", g_brokers);
	conf_set(conf, "client.id", "eoi-kafka");
	conf_set(conf, "acks", "all");
	conf_set(conf, "enable.idempotence", admin ? "false" : "true");
	conf_set(conf, "log.connection.close", "false");
	conf_set(conf, "log_level", "3");	/* errors only; no transient warnings */
	snprintf(buf, sizeof(buf), "%d", g_timeout_ms);
	conf_set(conf, "message.timeout.ms", buf);
	conf_set(conf, "socket.timeout.ms", g_timeout_ms < 10000 ? "10000" : buf);
	if (fast)
	{
		conf_set(conf, "linger.ms", "5");
		conf_set(conf, "batch.num.messages", "10000");
		conf_set(conf, "batch.size", "1000000");
		conf_set(conf, "queue.buffering.max.messages", "1000000");
		conf_set(conf, "queue.buffering.max.kbytes", "1048576");
	}
	else
		conf_set(conf, "linger.ms", "0");
	if (transactional_id)
	{
		conf_set(conf, "transactional.id", transactional_id);
		snprintf(buf, sizeof(buf), "%d", g_timeout_ms * 2);
		conf_set(conf, "transaction.timeout.ms", buf);
	}
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rd_kafka_conf_set_error_cb(conf, error_cb);

	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk)
		die("cannot create producer: %s", errstr);
	return rk;
}

static rd_kafka_t *
make_producer(const char *transactional_id, int fast)
{
	return make_handle(transactional_id, fast, 0);
}

static rd_kafka_t *
make_admin(void)
{
	return make_handle(NULL, 0, 1);
}

/*
 * Fetches metadata for one topic. Returns the partition count once the topic
 * exists and all partitions have a leader (and, if want_parts > 0, exactly
 * want_parts partitions); waits until the deadline. If want_absent, waits
 * until the topic is gone and returns 0.
 */
static int
wait_topic(rd_kafka_t *rk, const char *topic, int want_parts, int want_absent,
		   int64_t deadline)
{
	char		last[512] = "no metadata received";

	for (;;)
	{
		const struct rd_kafka_metadata *md = NULL;
		rd_kafka_resp_err_t err;
		int			tmo = remaining_ms(deadline);

		if (tmo > 5000)
			tmo = 5000;
		if (tmo < 100)
			tmo = 100;
		err = rd_kafka_metadata(rk, 1, NULL, &md, tmo);
		if (err)
			snprintf(last, sizeof(last), "metadata request failed: %s", rd_kafka_err2str(err));
		else
		{
			const struct rd_kafka_metadata_topic *t = NULL;
			int			i;

			for (i = 0; i < md->topic_cnt; i++)
				if (strcmp(md->topics[i].topic, topic) == 0)
					t = &md->topics[i];
			if (want_absent)
			{
				if (!t || t->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
				{
					rd_kafka_metadata_destroy(md);
					return 0;
				}
				snprintf(last, sizeof(last), "topic still listed");
			}
			else if (!t)
				snprintf(last, sizeof(last), "topic does not exist");
			else if (t->err)
				snprintf(last, sizeof(last), "topic error: %s", rd_kafka_err2str(t->err));
			else if (want_parts > 0 && t->partition_cnt != want_parts)
				snprintf(last, sizeof(last), "topic has %d partitions, want %d",
						 t->partition_cnt, want_parts);
			else if (t->partition_cnt <= 0)
				snprintf(last, sizeof(last), "topic has no partitions");
			else
			{
				int			ok = 1;
				int			n = t->partition_cnt;

				for (i = 0; i < n; i++)
				{
					if (t->partitions[i].err || t->partitions[i].leader < 0)
					{
						snprintf(last, sizeof(last), "partition %d has no leader (%s)",
								 (int) t->partitions[i].id,
								 rd_kafka_err2str(t->partitions[i].err));
						ok = 0;
						break;
					}
				}
				if (ok)
				{
					rd_kafka_metadata_destroy(md);
					return n;
				}
			}
			rd_kafka_metadata_destroy(md);
		}
		if (now_ms() >= deadline)
			die("topic '%s' %s within the timeout: %s", topic,
				want_absent ? "not deleted" : "not ready", last);
		usleep(100 * 1000);
	}
}

/* Runs an admin request already sent to queue q and returns the result event. */
static rd_kafka_event_t *
admin_wait(rd_kafka_queue_t *q, rd_kafka_event_type_t type, int64_t deadline)
{
	for (;;)
	{
		rd_kafka_event_t *ev = rd_kafka_queue_poll(q, remaining_ms(deadline) > 0 ? remaining_ms(deadline) : 1);

		if (!ev)
		{
			if (now_ms() >= deadline)
				die("no reply from the broker within the timeout");
			continue;
		}
		if (rd_kafka_event_type(ev) == type)
			return ev;
		if (rd_kafka_event_error(ev))
			die("admin request failed: %s", rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
	}
}

static rd_kafka_AdminOptions_t *
admin_options(rd_kafka_t *rk, rd_kafka_admin_op_t op)
{
	rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, op);
	char		errstr[512];

	if (rd_kafka_AdminOptions_set_request_timeout(o, g_timeout_ms, errstr, sizeof(errstr)))
		die("%s", errstr);
	if (op != RD_KAFKA_ADMIN_OP_ANY &&
		rd_kafka_AdminOptions_set_operation_timeout(o, g_timeout_ms, errstr, sizeof(errstr)))
		die("%s", errstr);
	return o;
}

static void
check_topic_results(const rd_kafka_topic_result_t **res, size_t n, int if_exists_ok,
					const char *what)
{
	size_t		i;

	for (i = 0; i < n; i++)
	{
		rd_kafka_resp_err_t err = rd_kafka_topic_result_error(res[i]);

		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			continue;
		if (if_exists_ok && err == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
			continue;
		die("%s '%s' failed: %s (%s)", what, rd_kafka_topic_result_name(res[i]),
			rd_kafka_err2name(err),
			rd_kafka_topic_result_error_string(res[i]) ? rd_kafka_topic_result_error_string(res[i])
			: rd_kafka_err2str(err));
	}
}

static int
cmd_create_topic(int argc, char **argv)
{
	const char *topic = NULL;
	int			parts = -1;
	int			if_not_exists = 0;
	int			existed;
	char		errstr[512];
	rd_kafka_NewTopic_t *nt;
	rd_kafka_t *rk;
	rd_kafka_queue_t *q;
	rd_kafka_AdminOptions_t *o;
	rd_kafka_event_t *ev;
	const rd_kafka_topic_result_t **res;
	size_t		n;
	int64_t		deadline = now_ms() + 2 * (int64_t) g_timeout_ms;
	int			i;
	int			pos = 0;
	char	  **configs = calloc((size_t) argc + 1, sizeof(char *));
	int			nconfigs = 0;

	for (i = 0; i < argc; i++)
	{
		if (strcmp(argv[i], "--if-not-exists") == 0)
			if_not_exists = 1;
		else if (pos == 0)
			topic = argv[i], pos++;
		else if (pos == 1)
			parts = (int) parse_ll(argv[i], "partition count", 1), pos++;
		else if (strchr(argv[i], '=') && argv[i][0] != '=')
			configs[nconfigs++] = argv[i];
		else
			usage();
	}
	if (!topic || parts < 1)
		usage();

	nt = rd_kafka_NewTopic_new(topic, parts, 1, errstr, sizeof(errstr));
	if (!nt)
		die("%s", errstr);
	for (i = 0; i < nconfigs; i++)
	{
		char	   *eq = strchr(configs[i], '=');

		*eq = '\0';
		if (rd_kafka_NewTopic_set_config(nt, configs[i], eq + 1))
			die("bad topic config '%s'", configs[i]);
	}

	rk = make_admin();
	q = rd_kafka_queue_new(rk);
	o = admin_options(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_CreateTopics(rk, &nt, 1, o, q);
	ev = admin_wait(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT, deadline);
	if (rd_kafka_event_error(ev))
		die("create topic '%s' failed: %s", topic, rd_kafka_event_error_string(ev));
	res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
	check_topic_results(res, n, if_not_exists, "create topic");
	existed = n == 1 && rd_kafka_topic_result_error(res[0]) == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
	rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_NewTopic_destroy(nt);

	/* Wait until every partition has a leader (an existing topic keeps its count). */
	wait_topic(rk, topic, existed ? 0 : parts, 0, deadline);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	free(configs);
	return 0;
}

static int
cmd_delete_topic(int argc, char **argv)
{
	rd_kafka_t *rk;
	rd_kafka_queue_t *q;
	rd_kafka_AdminOptions_t *o;
	rd_kafka_DeleteTopic_t *dt;
	rd_kafka_event_t *ev;
	const rd_kafka_topic_result_t **res;
	size_t		n;
	int64_t		deadline = now_ms() + 2 * (int64_t) g_timeout_ms;

	if (argc != 1)
		usage();
	rk = make_admin();
	q = rd_kafka_queue_new(rk);
	o = admin_options(rk, RD_KAFKA_ADMIN_OP_DELETETOPICS);
	dt = rd_kafka_DeleteTopic_new(argv[0]);
	rd_kafka_DeleteTopics(rk, &dt, 1, o, q);
	ev = admin_wait(q, RD_KAFKA_EVENT_DELETETOPICS_RESULT, deadline);
	if (rd_kafka_event_error(ev))
		die("delete topic '%s' failed: %s", argv[0], rd_kafka_event_error_string(ev));
	res = rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &n);
	check_topic_results(res, n, 0, "delete topic");
	rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_DeleteTopic_destroy(dt);
	wait_topic(rk, argv[0], 0, 1, deadline);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	return 0;
}

static int
cmd_add_partitions(int argc, char **argv)
{
	rd_kafka_t *rk;
	rd_kafka_queue_t *q;
	rd_kafka_AdminOptions_t *o;
	rd_kafka_NewPartitions_t *np;
	rd_kafka_event_t *ev;
	const rd_kafka_topic_result_t **res;
	size_t		n;
	char		errstr[512];
	int			total;
	int64_t		deadline = now_ms() + 2 * (int64_t) g_timeout_ms;

	if (argc != 2)
		usage();
	total = (int) parse_ll(argv[1], "partition count", 1);
	rk = make_admin();
	q = rd_kafka_queue_new(rk);
	o = admin_options(rk, RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
	np = rd_kafka_NewPartitions_new(argv[0], (size_t) total, errstr, sizeof(errstr));
	if (!np)
		die("%s", errstr);
	rd_kafka_CreatePartitions(rk, &np, 1, o, q);
	ev = admin_wait(q, RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT, deadline);
	if (rd_kafka_event_error(ev))
		die("add partitions to '%s' failed: %s", argv[0], rd_kafka_event_error_string(ev));
	res = rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(ev), &n);
	check_topic_results(res, n, 0, "add partitions to");
	rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_NewPartitions_destroy(np);
	wait_topic(rk, argv[0], total, 0, deadline);
	rd_kafka_queue_destroy(q);
	rd_kafka_destroy(rk);
	return 0;
}

/* Partition count of an existing topic (waits briefly for it to show up). */
static int
partition_count(rd_kafka_t *rk, const char *topic)
{
	int			tmo = g_timeout_ms < 10000 ? g_timeout_ms : 10000;

	return wait_topic(rk, topic, 0, 0, now_ms() + tmo);
}

/* Headers every message of `produce` carries (-H), or NULL. */
static rd_kafka_headers_t *g_headers;

/* Produces one message, waiting (bounded) while the local queue is full. */
static void
produce_one(rd_kafka_t *rk, const char *topic, int32_t partition,
			const char *key, size_t keylen, const char *val, size_t vallen)
{
	int64_t		deadline = now_ms() + g_timeout_ms;

	for (;;)
	{
		rd_kafka_resp_err_t err;
		/* a message takes its headers when it is queued */
		rd_kafka_headers_t *hdrs = g_headers ? rd_kafka_headers_copy(g_headers) : NULL;

		err = rd_kafka_producev(rk,
								RD_KAFKA_V_TOPIC(topic),
								RD_KAFKA_V_PARTITION(partition),
								RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
								RD_KAFKA_V_KEY(key, key ? keylen : 0),
								RD_KAFKA_V_VALUE((void *) val, val ? vallen : 0),
								RD_KAFKA_V_HEADERS(hdrs),
								RD_KAFKA_V_END);
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			return;
		if (hdrs)
			rd_kafka_headers_destroy(hdrs);
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			die("produce to %s [%d] failed: %s", topic, (int) partition, rd_kafka_err2str(err));
		if (now_ms() >= deadline)
			die("local producer queue stayed full for the whole timeout");
		rd_kafka_poll(rk, 50);
	}
}

static void
flush_or_die(rd_kafka_t *rk)
{
	rd_kafka_resp_err_t err = rd_kafka_flush(rk, g_timeout_ms + 5000);

	if (err)
		die("flush failed: %s (%d message(s) still queued)", rd_kafka_err2str(err),
			rd_kafka_outq_len(rk));
	if (g_failed)
		die("%ld message(s) not delivered; first error: %s", g_failed, g_first_dr_error);
}

static int
cmd_produce(int argc, char **argv)
{
	const char *topic = NULL;
	int32_t		fixed_partition = RD_KAFKA_PARTITION_UA;
	const char *fixed_key = NULL;
	int			null_empty = 0;
	int			keyed_lines = 0;
	int			i;
	rd_kafka_t *rk;
	int			nparts;
	long		lineno = 0;
	char	   *line = NULL;
	size_t		cap = 0;
	ssize_t		len;

	for (i = 0; i < argc; i++)
	{
		if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
			fixed_partition = (int32_t) parse_ll(argv[++i], "partition", 0);
		else if (strcmp(argv[i], "-k") == 0 && i + 1 < argc)
			fixed_key = argv[++i];
		else if (strcmp(argv[i], "-z") == 0)
			null_empty = 1;
		else if (strcmp(argv[i], "-K") == 0)
			keyed_lines = 1;
		else if (strcmp(argv[i], "-H") == 0 && i + 1 < argc)
		{
			const char *eq = strchr(argv[++i], '=');

			if (!eq)
				die("-H expects NAME=VALUE");
			if (!g_headers)
				g_headers = rd_kafka_headers_new(4);
			rd_kafka_header_add(g_headers, argv[i], eq - argv[i], eq + 1, -1);
		}
		else if (argv[i][0] != '-' && !topic)
			topic = argv[i];
		else
			usage();
	}
	if (!topic)
		usage();
	if (keyed_lines && fixed_key)
		die("-k and -K are mutually exclusive");

	rk = make_producer(NULL, 0);
	nparts = partition_count(rk, topic);
	if (fixed_partition != RD_KAFKA_PARTITION_UA && fixed_partition >= nparts)
		die("topic '%s' has %d partitions, no partition %d", topic, nparts, (int) fixed_partition);

	while ((len = getline(&line, &cap, stdin)) >= 0)
	{
		const char *key = fixed_key;
		size_t		keylen = fixed_key ? strlen(fixed_key) : 0;
		const char *val = line;
		size_t		vallen;
		int32_t		part;

		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		vallen = (size_t) len;
		if (keyed_lines)
		{
			char	   *tab = memchr(line, '\t', (size_t) len);

			if (!tab)
				die("stdin line %ld has no TAB (-K expects key<TAB>value)", lineno + 1);
			key = line;
			keylen = (size_t) (tab - line);
			val = tab + 1;
			vallen = (size_t) len - keylen - 1;
		}
		if (null_empty && vallen == 0)
			val = NULL;
		part = fixed_partition != RD_KAFKA_PARTITION_UA ? fixed_partition
			: (int32_t) (lineno % nparts);
		produce_one(rk, topic, part, key, keylen, val, vallen);
		rd_kafka_poll(rk, 0);
		lineno++;
	}
	if (ferror(stdin))
		die("error reading stdin: %s", strerror(errno));
	free(line);
	flush_or_die(rk);
	rd_kafka_destroy(rk);
	return 0;
}

enum seq_format
{
	FMT_CSV,
	FMT_JSON,
	FMT_TEXT
};

/* i * 0.5 printed exactly and in its shortest form: 0, 0.5, 1, 1.5, ... */
static int
format_seq(char *buf, size_t size, enum seq_format fmt, long long i)
{
	char		half[32];

	snprintf(half, sizeof(half), (i % 2) ? "%lld.5" : "%lld", i / 2);
	if (i < 0 && (i % 2))
		snprintf(half, sizeof(half), "-%lld.5", -(i / 2));
	switch (fmt)
	{
		case FMT_CSV:
			return snprintf(buf, size, "seq_%lld,%lld,%s", i, i, half);
		case FMT_JSON:
			return snprintf(buf, size, "{\"id\":\"seq_%lld\",\"ts\":%lld,\"temperature\":%s}",
							i, i, half);
		case FMT_TEXT:
		default:
			return snprintf(buf, size, "seq_%lld", i);
	}
}

struct seq_opts
{
	const char *topic;
	long long	count;
	long long	start;
	enum seq_format fmt;
	int			keyed;
	int			tx;				/* 0 none, 1 commit, -1 abort */
};

static void
parse_seq_opts(int argc, char **argv, struct seq_opts *so, int want_tx)
{
	int			i;

	memset(so, 0, sizeof(*so));
	so->count = -1;
	for (i = 0; i < argc; i++)
	{
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			so->count = parse_ll(argv[++i], "count", 0);
		else if (strcmp(argv[i], "--start") == 0 && i + 1 < argc)
			so->start = parse_ll(argv[++i], "start", 0);
		else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc)
		{
			const char *f = argv[++i];

			if (strcmp(f, "csv") == 0)
				so->fmt = FMT_CSV;
			else if (strcmp(f, "json") == 0)
				so->fmt = FMT_JSON;
			else if (strcmp(f, "text") == 0)
				so->fmt = FMT_TEXT;
			else
				die("unknown format '%s' (csv, json or text)", f);
		}
		else if (strcmp(argv[i], "--keyed") == 0)
			so->keyed = 1;
		else if (want_tx && strcmp(argv[i], "--commit") == 0)
			so->tx = 1;
		else if (want_tx && strcmp(argv[i], "--abort") == 0)
			so->tx = -1;
		else if (argv[i][0] != '-' && !so->topic)
			so->topic = argv[i];
		else
			usage();
	}
	if (!so->topic || so->count < 0 || (want_tx && so->tx == 0))
		usage();
}

static void
produce_seq_range(rd_kafka_t *rk, const struct seq_opts *so, int nparts)
{
	long long	i;
	char		val[256];
	char		key[64];

	for (i = so->start; i < so->start + so->count; i++)
	{
		int			vlen = format_seq(val, sizeof(val), so->fmt, i);
		int			klen = snprintf(key, sizeof(key), "seq_%lld", i);

		produce_one(rk, so->topic, (int32_t) (i % nparts),
					so->keyed ? key : NULL, (size_t) klen, val, (size_t) vlen);
		if ((i & 1023) == 0)
			rd_kafka_poll(rk, 0);
	}
}

static int
cmd_produce_seq(int argc, char **argv)
{
	struct seq_opts so;
	rd_kafka_t *rk;
	int			nparts;

	parse_seq_opts(argc, argv, &so, 0);
	rk = make_producer(NULL, 1);
	nparts = partition_count(rk, so.topic);
	produce_seq_range(rk, &so, nparts);
	flush_or_die(rk);
	rd_kafka_destroy(rk);
	return 0;
}

static void
tx_check(rd_kafka_error_t *error, const char *what)
{
	if (error)
	{
		char		msg[512];

		snprintf(msg, sizeof(msg), "%s", rd_kafka_error_string(error));
		rd_kafka_error_destroy(error);
		die("%s failed: %s", what, msg);
	}
}

static int
cmd_produce_tx(int argc, char **argv)
{
	struct seq_opts so;
	rd_kafka_t *rk;
	int			nparts;
	char		txid[64];

	parse_seq_opts(argc, argv, &so, 1);
	snprintf(txid, sizeof(txid), "eoi-test-%ld", (long) getpid());
	rk = make_producer(txid, 1);
	nparts = partition_count(rk, so.topic);
	tx_check(rd_kafka_init_transactions(rk, g_timeout_ms), "init_transactions");
	tx_check(rd_kafka_begin_transaction(rk), "begin_transaction");
	produce_seq_range(rk, &so, nparts);
	if (so.tx > 0)
		tx_check(rd_kafka_commit_transaction(rk, g_timeout_ms), "commit_transaction");
	else
	{
		/* Make sure the data really is in the log before aborting, so that
		 * consumers see aborted records (and offsets are used up). */
		rd_kafka_resp_err_t err = rd_kafka_flush(rk, g_timeout_ms);

		if (err)
			die("flush before abort failed: %s", rd_kafka_err2str(err));
		tx_check(rd_kafka_abort_transaction(rk, g_timeout_ms), "abort_transaction");
	}
	if (g_failed)
		die("%ld message(s) not delivered; first error: %s", g_failed, g_first_dr_error);
	rd_kafka_destroy(rk);
	return 0;
}

static int
cmp_int32(const void *a, const void *b)
{
	int32_t		x = *(const int32_t *) a;
	int32_t		y = *(const int32_t *) b;

	return (x > y) - (x < y);
}

/* committed GROUP TOPIC: the group's committed offset of each partition. */
static int
cmd_committed(int argc, char **argv)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t err;
	char		errstr[512];
	rd_kafka_t *rk;
	int			n;

	if (argc != 2)
		usage();
	conf_set(conf, "bootstrap.servers", g_brokers);
	conf_set(conf, "group.id", argv[0]);
	conf_set(conf, "enable.auto.commit", "false");
	conf_set(conf, "log_level", "3");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (!rk)
		die("cannot create consumer: %s", errstr);
	n = partition_count(rk, argv[1]);
	list = rd_kafka_topic_partition_list_new(n);
	for (int i = 0; i < n; i++)
		rd_kafka_topic_partition_list_add(list, argv[1], i);
	err = rd_kafka_committed(rk, list, 10000);
	if (err)
		die("committed offsets of group %s: %s", argv[0], rd_kafka_err2str(err));
	for (int i = 0; i < list->cnt; i++)
		printf("%d %" PRId64 "\n", (int) list->elems[i].partition, list->elems[i].offset);
	rd_kafka_topic_partition_list_destroy(list);
	rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	if (fflush(stdout) != 0)
		die("write error: %s", strerror(errno));
	return 0;
}

static int
cmd_watermarks(int argc, char **argv)
{
	rd_kafka_t *rk;
	const struct rd_kafka_metadata *md = NULL;
	const struct rd_kafka_metadata_topic *t = NULL;
	rd_kafka_resp_err_t err;
	int32_t    *ids;
	int			n;
	int			i;

	if (argc != 1)
		usage();
	rk = make_admin();
	partition_count(rk, argv[0]);	/* waits for the topic, with a clear error */
	err = rd_kafka_metadata(rk, 1, NULL, &md, 10000);
	if (err)
		die("metadata request failed: %s", rd_kafka_err2str(err));
	for (i = 0; i < md->topic_cnt; i++)
		if (strcmp(md->topics[i].topic, argv[0]) == 0)
			t = &md->topics[i];
	if (!t || t->err)
		die("topic '%s' not found", argv[0]);
	n = t->partition_cnt;
	ids = malloc(sizeof(int32_t) * (size_t) (n > 0 ? n : 1));
	for (i = 0; i < n; i++)
		ids[i] = t->partitions[i].id;
	rd_kafka_metadata_destroy(md);
	qsort(ids, (size_t) n, sizeof(int32_t), cmp_int32);
	for (i = 0; i < n; i++)
	{
		int64_t		lo,
					hi;

		err = rd_kafka_query_watermark_offsets(rk, argv[0], ids[i], &lo, &hi, 10000);
		if (err)
			die("watermarks of %s [%d]: %s", argv[0], (int) ids[i], rd_kafka_err2str(err));
		printf("%d %" PRId64 " %" PRId64 "\n", (int) ids[i], lo, hi);
	}
	free(ids);
	rd_kafka_destroy(rk);
	if (fflush(stdout) != 0)
		die("write error: %s", strerror(errno));
	return 0;
}

int
main(int argc, char **argv)
{
	int			i = 1;

	g_brokers = getenv("KAFKA_BROKERS");
	while (i < argc && argv[i][0] == '-')
	{
		if (strcmp(argv[i], "-b") == 0 && i + 1 < argc)
			g_brokers = argv[i + 1], i += 2;
		else if (strcmp(argv[i], "-t") == 0 && i + 1 < argc)
			g_timeout_ms = (int) parse_ll(argv[i + 1], "timeout", 1) * 1000, i += 2;
		else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			usage();
		else
			usage();
	}
	if (i >= argc)
		usage();
	g_cmd = argv[i++];
	/* "-b" is also accepted right after the command name. */
	if (i + 1 < argc && strcmp(argv[i], "-b") == 0)
		g_brokers = argv[i + 1], i += 2;
	if (!g_brokers || !*g_brokers)
		die("no brokers: use -b or set KAFKA_BROKERS");

	if (strcmp(g_cmd, "create-topic") == 0)
		return cmd_create_topic(argc - i, argv + i);
	if (strcmp(g_cmd, "delete-topic") == 0)
		return cmd_delete_topic(argc - i, argv + i);
	if (strcmp(g_cmd, "add-partitions") == 0)
		return cmd_add_partitions(argc - i, argv + i);
	if (strcmp(g_cmd, "produce") == 0)
		return cmd_produce(argc - i, argv + i);
	if (strcmp(g_cmd, "produce-seq") == 0)
		return cmd_produce_seq(argc - i, argv + i);
	if (strcmp(g_cmd, "produce-tx") == 0)
		return cmd_produce_tx(argc - i, argv + i);
	if (strcmp(g_cmd, "watermarks") == 0)
		return cmd_watermarks(argc - i, argv + i);
	if (strcmp(g_cmd, "committed") == 0)
		return cmd_committed(argc - i, argv + i);
	fprintf(stderr, "eoi-kafka: unknown command '%s'\n", g_cmd);
	usage();
	return 2;
}
