/*
 * naive-consumer: the "usual" Kafka-to-PostgreSQL consumer the benchmark
 * compares against: one INSERT, one commit per message.
 *
 *   naive-consumer -b BROKERS -t TOPIC -n COUNT -d CONNINFO -T TABLE
 *
 * It is written the way such consumers usually are, but without handicaps:
 * a consumer group with librdkafka's defaults (auto commit of the Kafka
 * offsets every 5 s, so it is at-least-once at best), a CSV split in the
 * client, and a prepared INSERT executed in autocommit mode, so that every
 * message is its own transaction.  It stops after COUNT messages and prints
 * "COUNT FIRST" where FIRST is the time (seconds since the epoch) at which
 * the first message arrived: the benchmark times it from there, so that the
 * consumer group's join is not held against it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <librdkafka/rdkafka.h>

static void
die(const char *fmt, ...)
{
	va_list		ap;

	fputs("naive-consumer: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(1);
}

static void
conf_set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char		errstr[512];

	if (rd_kafka_conf_set(conf, k, v, errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
		die("config %s=%s: %s", k, v, errstr);
}

int
main(int argc, char **argv)
{
	const char *brokers = NULL,
			   *topic = NULL,
			   *conninfo = "",
			   *table = NULL;
	long		count = -1;
	long		done = 0;
	int			opt;
	char		group[64];
	char		errstr[512];
	char		sql[512];
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	rd_kafka_topic_partition_list_t *subs;
	PGconn	   *pg;
	PGresult   *res;
	time_t		idle_since = time(NULL);
	struct timespec first = {0, 0};

	while ((opt = getopt(argc, argv, "b:t:n:d:T:")) != -1)
	{
		switch (opt)
		{
			case 'b':
				brokers = optarg;
				break;
			case 't':
				topic = optarg;
				break;
			case 'n':
				count = strtol(optarg, NULL, 10);
				break;
			case 'd':
				conninfo = optarg;
				break;
			case 'T':
				table = optarg;
				break;
			default:
				die("usage: naive-consumer -b BROKERS -t TOPIC -n COUNT -d CONNINFO -T TABLE");
		}
	}
	if (!brokers || !topic || !table || count <= 0)
		die("usage: naive-consumer -b BROKERS -t TOPIC -n COUNT -d CONNINFO -T TABLE");

	pg = PQconnectdb(conninfo);
	if (PQstatus(pg) != CONNECTION_OK)
		die("connect: %s", PQerrorMessage(pg));
	snprintf(sql, sizeof(sql), "INSERT INTO %s (id, ts, temperature) VALUES ($1, $2, $3)", table);
	res = PQprepare(pg, "ins", sql, 3, NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		die("prepare: %s", PQerrorMessage(pg));
	PQclear(res);

	conf = rd_kafka_conf_new();
	snprintf(group, sizeof(group), "bench-naive-%ld", (long) getpid());
	conf_set(conf, "bootstrap.servers", brokers);
	conf_set(conf, "group.id", group);
	conf_set(conf, "auto.offset.reset", "earliest");
	conf_set(conf, "log_level", "3");
	rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
	if (!rk)
		die("consumer: %s", errstr);
	rd_kafka_poll_set_consumer(rk);
	subs = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(subs, topic, RD_KAFKA_PARTITION_UA);
	if (rd_kafka_subscribe(rk, subs))
		die("subscribe failed");
	rd_kafka_topic_partition_list_destroy(subs);

	while (done < count)
	{
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
		char		value[1024];
		const char *params[3];
		char	   *c1,
				   *c2;

		if (!m)
		{
			if (time(NULL) - idle_since > 60)
				die("no message for 60 s after %ld", done);
			continue;
		}
		idle_since = time(NULL);
		if (first.tv_sec == 0 && !m->err)
			clock_gettime(CLOCK_REALTIME, &first);
		if (m->err)
		{
			if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				fprintf(stderr, "naive-consumer: %s\n", rd_kafka_message_errstr(m));
			rd_kafka_message_destroy(m);
			continue;
		}
		if (m->len >= sizeof(value))
			die("message too long");
		memcpy(value, m->payload, m->len);
		value[m->len] = '\0';
		rd_kafka_message_destroy(m);

		/* id,ts,temperature (the id has no comma) */
		c1 = strchr(value, ',');
		c2 = c1 ? strchr(c1 + 1, ',') : NULL;
		if (!c2)
			die("malformed message '%s'", value);
		*c1 = *c2 = '\0';
		params[0] = value;
		params[1] = c1 + 1;
		params[2] = c2 + 1;
		res = PQexecPrepared(pg, "ins", 3, params, NULL, NULL, 0);
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			die("insert: %s", PQerrorMessage(pg));
		PQclear(res);
		done++;
	}
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	PQfinish(pg);
	printf("%ld %ld.%06ld\n", done, (long) first.tv_sec, first.tv_nsec / 1000);
	return 0;
}
