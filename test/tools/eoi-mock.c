/*
 * eoi-mock: librdkafka's mock cluster as a stand-alone broker, for tests
 * that check eoingest against a Kafka implementation other than Apache
 * Kafka.  The mock answers the protocol from memory, in its own threads,
 * and differs from Apache Kafka in ways that matter to a consumer: it
 * returns one record batch per partition per fetch, and delays an empty
 * fetch answer by the whole fetch.wait.max.ms.
 *
 *   eoi-mock [--brokers N] [--topic T --partitions P]... BOOTSTRAP_FILE
 *
 * Creates the cluster (N brokers, default 1) and the topics, writes the
 * cluster's bootstrap.servers to BOOTSTRAP_FILE (atomically, so a reader
 * never sees half of it), then serves until SIGTERM or SIGINT.  Records
 * are produced into it with any client, e.g. eoi-kafka -b "$(cat FILE)".
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static volatile sig_atomic_t g_stop;

static void
on_signal(int sig)
{
	(void) sig;
	g_stop = 1;
}

static void
usage(void)
{
	fprintf(stderr, "usage: eoi-mock [--brokers N] [--topic T --partitions P]... BOOTSTRAP_FILE\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	char		errstr[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;
	rd_kafka_mock_cluster_t *mcluster;
	const char *topics[64];
	int			partitions[64];
	int			ntopics = 0;
	int			brokers = 1;
	const char *out = NULL;
	char		tmp[4096];
	FILE	   *f;
	struct sigaction sa;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--brokers") == 0 && i + 1 < argc)
			brokers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--topic") == 0 && i + 1 < argc && ntopics < 64)
		{
			topics[ntopics] = argv[++i];
			partitions[ntopics++] = 1;
		}
		else if (strcmp(argv[i], "--partitions") == 0 && i + 1 < argc && ntopics > 0)
			partitions[ntopics - 1] = atoi(argv[++i]);
		else if (argv[i][0] != '-' && out == NULL)
			out = argv[i];
		else
			usage();
	}
	if (out == NULL || brokers < 1)
		usage();

	/* The handle only hosts the cluster; it never connects anywhere. */
	if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK)
	{
		fprintf(stderr, "eoi-mock: %s\n", errstr);
		return 1;
	}
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (rk == NULL)
	{
		fprintf(stderr, "eoi-mock: %s\n", errstr);
		return 1;
	}
	mcluster = rd_kafka_mock_cluster_new(rk, brokers);
	if (mcluster == NULL)
	{
		fprintf(stderr, "eoi-mock: could not create the mock cluster\n");
		return 1;
	}
	for (int i = 0; i < ntopics; i++)
	{
		rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mcluster, topics[i],
															 partitions[i], 1);

		if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		{
			fprintf(stderr, "eoi-mock: could not create topic %s: %s\n", topics[i],
					rd_kafka_err2str(err));
			return 1;
		}
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	f = fopen(tmp, "w");
	if (f == NULL || fprintf(f, "%s\n", rd_kafka_mock_cluster_bootstraps(mcluster)) < 0 ||
		fclose(f) != 0 || rename(tmp, out) != 0)
	{
		perror("eoi-mock: writing the bootstrap file");
		return 1;
	}

	while (!g_stop)
		sleep(1);

	unlink(out);
	rd_kafka_mock_cluster_destroy(mcluster);
	rd_kafka_destroy(rk);
	return 0;
}
