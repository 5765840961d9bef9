/*
 * bench-kafka: the benchmark's record generator and producer (librdkafka).
 *
 *   bench-kafka [-b BROKERS] rows    --count N [--size B]
 *   bench-kafka [-b BROKERS] preload TOPIC --count N [--first S] [--size B] [--format csv|json|connect|avro|protobuf|debezium|debezium-avro|upsert-csv] [--keys K] [--schema-id ID]
 *   bench-kafka cdc-expected --count N [--keys K]
 *   bench-kafka [-b BROKERS] paced   TOPIC --rate R --seconds S [--size B] [--format csv|connect]
 *
 * rows:    prints the N records as CSV lines on stdout (the file for COPY).
 * preload: produces the same N records to TOPIC, record i to partition
 *          i % partitions, and waits until every one is acknowledged;
 *          with --first S, records S to S + N - 1 (of the plain formats).
 * paced:   produces R records per second for S seconds, each carrying its
 *          produce time (microseconds since the epoch, CLOCK_REALTIME) in
 *          the ts field, as CSV or in Kafka Connect's envelope (--format
 *          connect, for Kafka Connect's sinks); prints the number produced.
 *
 * Record i is the sensor reading "sensor_<i>_xxx…,<i>,<i*0.5>": the id is
 * padded with 'x' so that the CSV line is B bytes (default 100) whatever i.
 * The json variant carries the same three values (the same row), so it is
 * about 35 bytes longer:  {"id":"sensor_<i>_xxx…","ts":<i>,"temperature":<i*0.5>}
 * The connect variant is the json row in Kafka Connect's JSON converter envelope
 * (schemas.enable=true): {"schema": {struct id string, ts int64, temperature
 * double}, "payload": <the json row>}, about 370 bytes, what Kafka Connect's
 * sinks read.
 * The avro variant is the same row in Confluent's wire format: magic 0, the
 * schema id (--schema-id, of the record {id: string, ts: long, temperature:
 * double} in the registry), then the Avro binary encoding.
 * The protobuf variant is the same row as Confluent's Protobuf serializer
 * writes it: magic 0, the schema id (--schema-id, of message SensorReading
 * {string id = 1; int64 ts = 2; double temperature = 3;}), the message-index
 * path [0] as the single byte 0, then the Protobuf binary encoding.
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

static const char *brokers;
static long failed;
static char first_error[256];

static void
die(const char *fmt, ...)
{
	va_list		ap;

	fputs("bench-kafka: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(1);
}

static int64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
epoch_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int	schema_id = 1;

/* Avro's zig-zag varint of v at p; returns the bytes written. */
static int
avro_long(unsigned char *p, long long v)
{
	unsigned long long z = ((unsigned long long) v << 1) ^ (unsigned long long) (v >> 63);
	int			n = 0;

	while (z >= 0x80)
	{
		p[n++] = (unsigned char) (z | 0x80);
		z >>= 7;
	}
	p[n++] = (unsigned char) z;
	return n;
}

/* Confluent's header at p: magic 0 and schema id id; returns the bytes written. */
static int
confluent_header_of(unsigned char *p, int id)
{
	p[0] = 0;
	p[1] = (unsigned char) (id >> 24);
	p[2] = (unsigned char) (id >> 16);
	p[3] = (unsigned char) (id >> 8);
	p[4] = (unsigned char) id;
	return 5;
}

/* The same with the --schema-id given. */
static int
confluent_header(unsigned char *p)
{
	return confluent_header_of(p, schema_id);
}

/* Avro's string s of len bytes at p; returns the bytes written. */
static int
avro_string(unsigned char *p, const char *s, int len)
{
	int			n = avro_long(p, len);

	memcpy(p + n, s, (size_t) len);
	return n + len;
}

/* The record in Confluent's wire format (format 2, avro). */
static int
format_avro(char *buf, const char *id, int idlen, long long ts, double temperature)
{
	unsigned char *p = (unsigned char *) buf;
	int			n = confluent_header(p);

	n += avro_long(p + n, idlen);
	memcpy(p + n, id, (size_t) idlen);
	n += idlen;
	n += avro_long(p + n, ts);
	memcpy(p + n, &temperature, 8);	/* little-endian, as Avro's double */
	return n + 8;
}

/* Protobuf's varint of v at p; returns the bytes written. */
static int
proto_varint(unsigned char *p, unsigned long long v)
{
	int			n = 0;

	while (v >= 0x80)
	{
		p[n++] = (unsigned char) (v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char) v;
	return n;
}

/* The record in Confluent's Protobuf wire format (format 6, protobuf). */
static int
format_protobuf(char *buf, const char *id, int idlen, long long ts, double temperature)
{
	unsigned char *p = (unsigned char *) buf;
	int			n = confluent_header(p);

	p[n++] = 0;					/* the message-index path [0] */
	p[n++] = (1 << 3) | 2;		/* id: length-delimited */
	n += proto_varint(p + n, (unsigned long long) idlen);
	memcpy(p + n, id, (size_t) idlen);
	n += idlen;
	p[n++] = (2 << 3) | 0;		/* ts: varint */
	n += proto_varint(p + n, (unsigned long long) ts);
	p[n++] = (3 << 3) | 1;		/* temperature: 64 bits, little-endian */
	memcpy(p + n, &temperature, 8);
	return n + 8;
}

/* Kafka Connect's JSON envelope of the row: the schema, then "payload". */
#define CONNECT_SCHEMA "{\"schema\":{\"type\":\"struct\",\"fields\":[" \
	"{\"type\":\"string\",\"optional\":false,\"field\":\"id\"}," \
	"{\"type\":\"int64\",\"optional\":false,\"field\":\"ts\"}," \
	"{\"type\":\"double\",\"optional\":false,\"field\":\"temperature\"}]," \
	"\"optional\":false,\"name\":\"bench.SensorReading\"},\"payload\":"

/* The id of record i, padded so that the CSV line has `size` bytes. */
static int
format_record(char *buf, size_t cap, int json, long long i, long long ts, int size)
{
	char		tail[64];
	char		id[512];
	int			taillen;
	int			idlen;
	int			pad;

	/* i * 0.5, exactly: 0, 0.5, 1, 1.5, ... */
	taillen = snprintf(tail, sizeof(tail), (i % 2) ? ",%lld,%lld.5" : ",%lld,%lld", ts, i / 2);
	idlen = snprintf(id, sizeof(id), "sensor_%lld_", i);
	pad = size - idlen - taillen;
	if (pad > 0)
	{
		if (idlen + pad >= (int) sizeof(id))
			die("record size %d too large", size);
		memset(id + idlen, 'x', (size_t) pad);
		idlen += pad;
		id[idlen] = '\0';
	}
	if (json == 2 || json == 6)
	{
		if (cap < (size_t) idlen + 40)
			die("record size %d too large", size);
		return json == 2 ? format_avro(buf, id, idlen, ts, (double) i * 0.5) :
			format_protobuf(buf, id, idlen, ts, (double) i * 0.5);
	}
	if (!json)
		return snprintf(buf, cap, "%s%s", id, tail);
	if (json == 3)
		return snprintf(buf, cap, (i % 2) ? CONNECT_SCHEMA "{\"id\":\"%s\",\"ts\":%lld,\"temperature\":%lld.5}}"
						: CONNECT_SCHEMA "{\"id\":\"%s\",\"ts\":%lld,\"temperature\":%lld}}", id, ts, i / 2);
	return snprintf(buf, cap, (i % 2) ? "{\"id\":\"%s\",\"ts\":%lld,\"temperature\":%lld.5}"
					: "{\"id\":\"%s\",\"ts\":%lld,\"temperature\":%lld}", id, ts, i / 2);
}


/*
 * The CDC stream (--format debezium / upsert-csv, and the cdc-expected command):
 * `count` changes to the table bench_cdc (pk int PRIMARY KEY, id text, ts bigint,
 * temperature double precision) over `keys` keys.  Changes 0..keys-1 insert keys
 * 0..keys-1 (a snapshot-like prefix); each later change is, by a fixed LCG, an
 * update (7 in 9) of a present key, an insert (1 in 9) of an absent key (an update
 * when none is absent) or a delete (1 in 9) of a present key: with count = 10 x keys,
 * about 70% updates, 20% inserts, 10% deletes.  Change s writes the row
 * (k, "sensor_<k>_<s>", s, s * 0.5); key k goes to partition k % partitions.
 */
struct cdc
{
	long long	keys;
	long long	seq;
	unsigned long long rng;
	int		   *slot;			/* key -> index in order[] */
	int		   *order;			/* order[0..present-1] present, the rest absent */
	long long	present;
	long long	n_ins, n_upd, n_del;
};

static void
cdc_init(struct cdc *c, long long keys)
{
	memset(c, 0, sizeof(*c));
	c->keys = keys;
	c->rng = 0x9E3779B97F4A7C15ULL;
	c->slot = malloc(sizeof(int) * (size_t) keys);
	c->order = malloc(sizeof(int) * (size_t) keys);
	if (!c->slot || !c->order)
		die("out of memory");
	for (long long k = 0; k < keys; k++)
		c->slot[k] = (int) k, c->order[k] = (int) k;
}

static unsigned long long
cdc_rand(struct cdc *c)
{
	c->rng = c->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return c->rng >> 17;
}

static void
cdc_swap(struct cdc *c, long long a, long long b)
{
	int			ka = c->order[a], kb = c->order[b];

	c->order[a] = kb, c->slot[kb] = (int) a;
	c->order[b] = ka, c->slot[ka] = (int) b;
}

/* The next change: its op ('c', 'u', 'd') and key. */
static char
cdc_next(struct cdc *c, long long *key)
{
	long long	s = c->seq++;
	unsigned long long r;
	long long	i;

	if (s < c->keys)
	{
		*key = s;
		c->present++;
		c->n_ins++;
		return 'c';
	}
	r = cdc_rand(c) % 9;
	if (r == 7 && c->present < c->keys)
	{
		i = c->present + (long long) (cdc_rand(c) % (unsigned long long) (c->keys - c->present));
		*key = c->order[i];
		cdc_swap(c, i, c->present++);
		c->n_ins++;
		return 'c';
	}
	if (r == 8 && c->present > 1)
	{
		i = (long long) (cdc_rand(c) % (unsigned long long) c->present);
		*key = c->order[i];
		cdc_swap(c, i, --c->present);
		c->n_del++;
		return 'd';
	}
	i = (long long) (cdc_rand(c) % (unsigned long long) c->present);
	*key = c->order[i];
	c->n_upd++;
	return 'u';
}

#define CDC_VALUE_FIELDS "[{\"type\":\"int32\",\"optional\":false,\"field\":\"pk\"}," \
	"{\"type\":\"string\",\"optional\":true,\"field\":\"id\"}," \
	"{\"type\":\"int64\",\"optional\":true,\"field\":\"ts\"}," \
	"{\"type\":\"double\",\"optional\":true,\"field\":\"temperature\"}]"
#define CDC_SCHEMA "{\"type\":\"struct\",\"fields\":[" \
	"{\"type\":\"struct\",\"fields\":" CDC_VALUE_FIELDS ",\"optional\":true,\"name\":\"bench.public.bench_cdc.Value\",\"field\":\"before\"}," \
	"{\"type\":\"struct\",\"fields\":" CDC_VALUE_FIELDS ",\"optional\":true,\"name\":\"bench.public.bench_cdc.Value\",\"field\":\"after\"}," \
	"{\"type\":\"struct\",\"fields\":[{\"type\":\"string\",\"optional\":false,\"field\":\"version\"}," \
	"{\"type\":\"string\",\"optional\":false,\"field\":\"connector\"},{\"type\":\"string\",\"optional\":false,\"field\":\"name\"}," \
	"{\"type\":\"int64\",\"optional\":false,\"field\":\"ts_ms\"}," \
	"{\"type\":\"string\",\"optional\":true,\"name\":\"io.debezium.data.Enum\",\"version\":1,\"parameters\":{\"allowed\":\"true,last,false,incremental\"},\"default\":\"false\",\"field\":\"snapshot\"}," \
	"{\"type\":\"string\",\"optional\":false,\"field\":\"db\"},{\"type\":\"string\",\"optional\":true,\"field\":\"sequence\"}," \
	"{\"type\":\"string\",\"optional\":false,\"field\":\"schema\"}," \
	"{\"type\":\"string\",\"optional\":false,\"field\":\"table\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"txId\"}," \
	"{\"type\":\"int64\",\"optional\":true,\"field\":\"lsn\"}],\"optional\":false,\"name\":\"io.debezium.connector.postgresql.Source\",\"field\":\"source\"}," \
	"{\"type\":\"string\",\"optional\":false,\"field\":\"op\"},{\"type\":\"int64\",\"optional\":true,\"field\":\"ts_ms\"}]," \
	"\"optional\":false,\"name\":\"bench.public.bench_cdc.Envelope\",\"version\":1}"
#define CDC_KEY_SCHEMA "{\"type\":\"struct\",\"fields\":[{\"type\":\"int32\",\"optional\":false,\"field\":\"pk\"}]," \
	"\"optional\":false,\"name\":\"bench.public.bench_cdc.Key\"}"
#define CDC_TS_MS 1767225600000LL	/* 2026-01-01, plus the change's number */

/* The row image of change s to key k, as JSON. */
static int
cdc_image(char *buf, size_t cap, long long k, long long s)
{
	return snprintf(buf, cap, (s % 2) ? "{\"pk\":%lld,\"id\":\"sensor_%lld_%lld\",\"ts\":%lld,\"temperature\":%lld.5}"
					: "{\"pk\":%lld,\"id\":\"sensor_%lld_%lld\",\"ts\":%lld,\"temperature\":%lld}",
					k, k, s, s, s / 2);
}

/* Debezium's change event of change s (Connect's JsonConverter, schemas.enable=true). */
static int
cdc_debezium(char *buf, size_t cap, char op, long long k, long long s)
{
	char		img[256];
	char		before[256];
	char		sequence[64];
	const char *snap = "false";
	long long	lsn = 100000000 + s * 64;

	cdc_image(img, sizeof(img), k, s);
	/* each change is a transaction of its own: the last commit is the previous change's */
	if (s == 0)
		snprintf(sequence, sizeof(sequence), "[null,\\\"%lld\\\"]", lsn);
	else
		snprintf(sequence, sizeof(sequence), "[\\\"%lld\\\",\\\"%lld\\\"]", lsn - 32, lsn);
	/* REPLICA IDENTITY DEFAULT: no before image of an update, the key only in a delete's. */
	snprintf(before, sizeof(before), "{\"pk\":%lld,\"id\":null,\"ts\":null,\"temperature\":null}", k);
	return snprintf(buf, cap, "{\"schema\":" CDC_SCHEMA ",\"payload\":{\"before\":%s,\"after\":%s,"
					"\"source\":{\"version\":\"3.0.0.Final\",\"connector\":\"postgresql\",\"name\":\"bench\","
					"\"ts_ms\":%lld,\"snapshot\":\"%s\",\"db\":\"postgres\",\"sequence\":\"%s\",\"schema\":\"public\","
					"\"table\":\"bench_cdc\",\"txId\":%lld,\"lsn\":%lld},\"op\":\"%c\",\"ts_ms\":%lld}}",
					op == 'd' ? before : "null", op == 'd' ? "null" : img,
					CDC_TS_MS + s, snap, sequence, 1000 + s, lsn, op, CDC_TS_MS + s + 5);
}

/*
 * The same change as Debezium's AvroConverter writes it, in Confluent's wire
 * format: the value with bench/tools/cdc-value.avsc (registered as schema id
 * CDC_AVRO_VALUE_ID), the key with cdc-key.avsc (CDC_AVRO_KEY_ID).  A union
 * [null, T] is its branch's index (zig-zag: 0 for null, 2 for T), then T.
 */
#define CDC_AVRO_VALUE_ID 3
#define CDC_AVRO_KEY_ID 4

/* Record Value {pk int, id [null, string], ts [null, long], temperature [null, double]}. */
static int
cdc_avro_image(unsigned char *p, long long k, long long s, int key_only)
{
	char		id[64];
	int			idlen;
	int			n = avro_long(p, k);
	double		temperature = (double) (s / 2) + ((s % 2) ? 0.5 : 0.0);

	if (key_only)
	{
		/* a delete's before image under REPLICA IDENTITY DEFAULT: the key alone */
		p[n++] = 0;
		p[n++] = 0;
		p[n++] = 0;
		return n;
	}
	idlen = snprintf(id, sizeof(id), "sensor_%lld_%lld", k, s);
	p[n++] = 2;
	n += avro_string(p + n, id, idlen);
	p[n++] = 2;
	n += avro_long(p + n, s);
	p[n++] = 2;
	memcpy(p + n, &temperature, 8);	/* little-endian, as Avro's double */
	return n + 8;
}

#define AVRO_LITERAL(p, lit) avro_string((p), (lit), (int) sizeof(lit) - 1)

/* The change event of change s, as cdc_debezium()'s, in Avro. */
static int
cdc_debezium_avro(unsigned char *p, char op, long long k, long long s)
{
	char		sequence[64];
	int			seqlen;
	long long	lsn = 100000000 + s * 64;
	char		opstr[1] = {op};
	int			n = confluent_header_of(p, CDC_AVRO_VALUE_ID);

	if (s == 0)
		seqlen = snprintf(sequence, sizeof(sequence), "[null,\"%lld\"]", lsn);
	else
		seqlen = snprintf(sequence, sizeof(sequence), "[\"%lld\",\"%lld\"]", lsn - 32, lsn);
	/* before, after */
	if (op == 'd')
	{
		p[n++] = 2;
		n += cdc_avro_image(p + n, k, s, 1);
		p[n++] = 0;
	}
	else
	{
		p[n++] = 0;
		p[n++] = 2;
		n += cdc_avro_image(p + n, k, s, 0);
	}
	/* source */
	n += AVRO_LITERAL(p + n, "3.0.0.Final");
	n += AVRO_LITERAL(p + n, "postgresql");
	n += AVRO_LITERAL(p + n, "bench");
	n += avro_long(p + n, CDC_TS_MS + s);
	p[n++] = 0;					/* snapshot: [Enum string, null], the string */
	n += AVRO_LITERAL(p + n, "false");
	n += AVRO_LITERAL(p + n, "postgres");
	p[n++] = 2;
	n += avro_string(p + n, sequence, seqlen);
	n += AVRO_LITERAL(p + n, "public");
	n += AVRO_LITERAL(p + n, "bench_cdc");
	p[n++] = 2;
	n += avro_long(p + n, 1000 + s);	/* txId */
	p[n++] = 2;
	n += avro_long(p + n, lsn);
	p[n++] = 0;					/* xmin */
	/* op, ts_ms, transaction */
	n += avro_string(p + n, opstr, 1);
	p[n++] = 2;
	n += avro_long(p + n, CDC_TS_MS + s + 5);
	p[n++] = 0;
	return n;
}

/*
 * preload of the CDC stream: format 4 = debezium, 5 = upsert-csv (key text,
 * CSV value, tombstones), 7 = debezium-avro.
 */
static void
cdc_preload(rd_kafka_t *rk, const char *topic, int parts, long long count, long long keys, int fmt)
{
	struct cdc	c;
	static char buf[8192];
	char		key[256];

	cdc_init(&c, keys);
	for (long long s = 0; s < count; s++)
	{
		long long	k;
		char		op = cdc_next(&c, &k);
		int			len = 0, klen;
		int32_t		part = (int32_t) (k % parts);
		rd_kafka_resp_err_t err;

		if (fmt == 4)
		{
			klen = snprintf(key, sizeof(key), "{\"schema\":" CDC_KEY_SCHEMA ",\"payload\":{\"pk\":%lld}}", k);
			len = cdc_debezium(buf, sizeof(buf), op, k, s);
		}
		else if (fmt == 7)
		{
			klen = confluent_header_of((unsigned char *) key, CDC_AVRO_KEY_ID);
			klen += avro_long((unsigned char *) key + klen, k);
			len = cdc_debezium_avro((unsigned char *) buf, op, k, s);
		}
		else
		{
			klen = snprintf(key, sizeof(key), "%lld", k);
			if (op != 'd')
				len = snprintf(buf, sizeof(buf), (s % 2) ? "%lld,sensor_%lld_%lld,%lld,%lld.5" : "%lld,sensor_%lld_%lld,%lld,%lld",
							   k, k, s, s, s / 2);
		}
		for (;;)
		{
			err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
									RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
									RD_KAFKA_V_KEY(key, (size_t) klen),
									RD_KAFKA_V_VALUE(len ? (void *) buf : NULL, (size_t) len), RD_KAFKA_V_END);
			if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
				break;
			rd_kafka_poll(rk, 10);
		}
		if (err)
			die("produce to %s [%d]: %s", topic, (int) part, rd_kafka_err2str(err));
		if ((s & 4095) == 0)
			rd_kafka_poll(rk, 0);
	}
	fprintf(stderr, "bench-kafka: %lld changes over %lld keys: %lld inserts, %lld updates, %lld deletes; %lld rows at the end\n",
			count, keys, c.n_ins, c.n_upd, c.n_del, c.present);
}

/* cdc-expected: the final state of the CDC stream as CSV lines (pk,id,ts,temperature). */
static void
cdc_expected(long long count, long long keys)
{
	struct cdc	c;
	long long  *last = malloc(sizeof(long long) * (size_t) keys);

	if (!last)
		die("out of memory");
	cdc_init(&c, keys);
	for (long long s = 0; s < count; s++)
	{
		long long	k;

		cdc_next(&c, &k);
		last[k] = s;
	}
	for (long long i = 0; i < c.present; i++)
	{
		long long	k = c.order[i], s = last[k];

		printf((s % 2) ? "%lld,sensor_%lld_%lld,%lld,%lld.5\n" : "%lld,sensor_%lld_%lld,%lld,%lld\n", k, k, s, s, s / 2);
	}
	if (fflush(stdout))
		die("write: %s", strerror(errno));
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
	if (m->err && failed++ == 0)
		snprintf(first_error, sizeof(first_error), "%s", rd_kafka_err2str(m->err));
}

static rd_kafka_t *
producer(int paced)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char		errstr[512];
	rd_kafka_t *rk;

	conf_set(conf, "bootstrap.servers", brokers);
	conf_set(conf, "client.id", "bench-kafka");
	/*
	 * The paced (latency) producer is not idempotent: an idempotent producer
	 * holds its first records until it has a producer id, which would count
	 * as latency.  With one broker and no failures nothing is reordered.
	 */
	conf_set(conf, "enable.idempotence", paced ? "false" : "true");
	conf_set(conf, "acks", "all");
	conf_set(conf, "log_level", "3");
	conf_set(conf, "message.timeout.ms", "120000");
	if (paced)
	{
		/* Latency run: send at once (librdkafka still batches what queues up). */
		conf_set(conf, "linger.ms", "0");
	}
	else
	{
		conf_set(conf, "linger.ms", "20");
		conf_set(conf, "batch.num.messages", "10000");
		conf_set(conf, "batch.size", "1000000");
		conf_set(conf, "queue.buffering.max.messages", "1000000");
		conf_set(conf, "queue.buffering.max.kbytes", "1048576");
	}
	rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (!rk)
		die("cannot create producer: %s", errstr);
	return rk;
}

static int
partition_count(rd_kafka_t *rk, const char *topic)
{
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	const struct rd_kafka_metadata *md;
	rd_kafka_resp_err_t err;
	int			n;

	err = rd_kafka_metadata(rk, 0, rkt, &md, 30000);
	if (err)
		die("metadata of %s: %s", topic, rd_kafka_err2str(err));
	if (md->topic_cnt != 1 || md->topics[0].err || md->topics[0].partition_cnt < 1)
		die("topic %s does not exist (create it first)", topic);
	n = md->topics[0].partition_cnt;
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	return n;
}

static void
produce(rd_kafka_t *rk, const char *topic, int32_t partition, const char *buf, int len)
{
	for (;;)
	{
		rd_kafka_resp_err_t err;

		err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
								RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
								RD_KAFKA_V_VALUE((void *) buf, (size_t) len), RD_KAFKA_V_END);
		if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
			return;
		if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
			die("produce to %s [%d]: %s", topic, (int) partition, rd_kafka_err2str(err));
		rd_kafka_poll(rk, 10);
	}
}

static void
finish(rd_kafka_t *rk)
{
	rd_kafka_resp_err_t err = rd_kafka_flush(rk, 300000);

	if (err)
		die("flush: %s (%d still queued)", rd_kafka_err2str(err), rd_kafka_outq_len(rk));
	if (failed)
		die("%ld message(s) not delivered: %s", failed, first_error);
	rd_kafka_destroy(rk);
}

static long long
num(const char *s, const char *what)
{
	char	   *end;
	long long	v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		die("invalid %s '%s'", what, s);
	return v;
}

static void
usage(void)
{
	fprintf(stderr,
			"usage: bench-kafka [-b BROKERS] rows --count N [--size B]\n"
			"       bench-kafka [-b BROKERS] preload TOPIC --count N [--first S] [--size B] [--format csv|json|connect|avro|protobuf|debezium|debezium-avro|upsert-csv] [--keys K] [--schema-id ID]\n"
			"       bench-kafka cdc-expected --count N [--keys K]\n"
			"       bench-kafka [-b BROKERS] paced TOPIC --rate R --seconds S [--size B] [--format csv|connect]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	const char *cmd;
	const char *topic = NULL;
	long long	count = -1;
	long long	rate = -1;
	long long	seconds = -1;
	int			size = 100;
	long long	first = 0;
	int			json = 0;
	long long	keys = -1;
	char		buf[1024];
	int			i = 1;

	brokers = getenv("KAFKA_BROKERS");
	if (i + 1 < argc && strcmp(argv[i], "-b") == 0)
		brokers = argv[i + 1], i += 2;
	if (i >= argc)
		usage();
	cmd = argv[i++];
	for (; i < argc; i++)
	{
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc)
			count = num(argv[++i], "count");
		else if (strcmp(argv[i], "--first") == 0 && i + 1 < argc)
			first = num(argv[++i], "first");
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			size = (int) num(argv[++i], "size");
		else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
			rate = num(argv[++i], "rate");
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = num(argv[++i], "seconds");
		else if (strcmp(argv[i], "--format") == 0 && i + 1 < argc)
		{
			i++;
			if (strcmp(argv[i], "json") == 0)
				json = 1;
			else if (strcmp(argv[i], "avro") == 0)
				json = 2;
			else if (strcmp(argv[i], "connect") == 0)
				json = 3;
			else if (strcmp(argv[i], "debezium") == 0)
				json = 4;
			else if (strcmp(argv[i], "upsert-csv") == 0)
				json = 5;
			else if (strcmp(argv[i], "protobuf") == 0)
				json = 6;
			else if (strcmp(argv[i], "debezium-avro") == 0)
				json = 7;
			else if (strcmp(argv[i], "csv") != 0)
				die("unknown format '%s'", argv[i]);
		}
		else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
			keys = num(argv[++i], "keys");
		else if (strcmp(argv[i], "--schema-id") == 0 && i + 1 < argc)
			schema_id = (int) num(argv[++i], "schema id");
		else if (argv[i][0] != '-' && topic == NULL)
			topic = argv[i];
		else
			usage();
	}

	if (strcmp(cmd, "rows") == 0)
	{
		if (count < 0)
			usage();
		for (long long r = 0; r < count; r++)
		{
			int			len = format_record(buf, sizeof(buf), json, r, r, size);

			buf[len++] = '\n';
			if (fwrite(buf, 1, (size_t) len, stdout) != (size_t) len)
				die("write: %s", strerror(errno));
		}
		if (fflush(stdout))
			die("write: %s", strerror(errno));
		return 0;
	}
	if (strcmp(cmd, "cdc-expected") == 0)
	{
		if (count < 0)
			usage();
		cdc_expected(count, keys > 0 ? keys : (count + 9) / 10);
		return 0;
	}
	if (!brokers || !*brokers)
		die("no brokers: use -b or set KAFKA_BROKERS");

	if (strcmp(cmd, "preload") == 0)
	{
		rd_kafka_t *rk;
		int			parts;

		if (!topic || count < 0)
			usage();
		rk = producer(0);
		parts = partition_count(rk, topic);
		if (json == 4 || json == 5 || json == 7)
		{
			cdc_preload(rk, topic, parts, count, keys > 0 ? keys : (count + 9) / 10, json);
			finish(rk);
			return 0;
		}
		for (long long r = first; r < first + count; r++)
		{
			int			len = format_record(buf, sizeof(buf), json, r, r, size);

			produce(rk, topic, (int32_t) (r % parts), buf, len);
			if ((r & 4095) == 0)
				rd_kafka_poll(rk, 0);
		}
		finish(rk);
		return 0;
	}

	if (strcmp(cmd, "paced") == 0)
	{
		rd_kafka_t *rk;
		int			parts;
		long long	total;
		int64_t		start;

		if (!topic || rate <= 0 || seconds <= 0 || (json != 0 && json != 3))
			usage();
		rk = producer(1);
		parts = partition_count(rk, topic);
		total = rate * seconds;
		start = mono_us();
		for (long long r = 0; r < total; r++)
		{
			/* Record r is due at start + r / rate: never early, catch up if late. */
			int64_t		due = start + (int64_t) ((double) r * 1e6 / (double) rate);
			int64_t		now = mono_us();
			int			len;

			/* Sleep only when ahead by a millisecond: bursts of rate/1000 records. */
			if (due - now > 1000)
			{
				struct timespec ts = {(time_t) ((due - now) / 1000000),
				(long) ((due - now) % 1000000) * 1000};

				nanosleep(&ts, NULL);
			}
			len = format_record(buf, sizeof(buf), json, r, epoch_us(), size);
			produce(rk, topic, (int32_t) (r % parts), buf, len);
			rd_kafka_poll(rk, 0);
		}
		finish(rk);
		printf("%lld\n", total);
		return 0;
	}
	usage();
	return 2;
}
