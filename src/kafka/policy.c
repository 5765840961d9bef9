/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  What a job owner may hand to librdkafka, and where a job may connect.
 *
 * librdkafka runs in the server process with the server's operating-system
 * rights, and some of its properties make it act on the host: run a
 * program (Kerberos kinit, whose default command line also interpolates
 * the principal and keytab unquoted), load a shared library, read a file.
 * So the job's options pass an allowlist: each property eoingest knows is
 * sorted into a class, and its setter needs the privilege of that class,
 * following PostgreSQL's own model for COPY: pg_read_server_files for what
 * reads a server path, pg_execute_server_program for what runs a program,
 * superuser for what loads code.  A property not on the list is
 * superuser-only, so that a newer librdkafka cannot open a hole by adding
 * one.  The check runs where options enter (create_job, alter_job) and
 * again in the worker, against the owner's role memberships of that moment.
 *
 * eoingest.allowed_brokers limits the hosts a job makes the server connect
 * to (the bootstrap brokers, and an OAUTHBEARER token endpoint).
 *
 * docs/security.md documents the classes, docs/kafka-properties.md lists
 * them; the table below is the list.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

#include "kafka/policy.h"
#include "store/job.h"

char	   *eoingest_allowed_brokers = NULL;

typedef struct PropertyClass
{
	const char *name;
	int			needs;
} PropertyClass;

/*
 * Every property a job owner may set, with what it needs.  Consumer and
 * global properties of librdkafka 2.0.2 through 2.14; producer-only ones,
 * callbacks, and anything not listed are superuser-only by omission.
 */
static const PropertyClass property_classes[] = {
	/* set by eoingest: a user's value would break a guarantee */
	{"auto.commit.enable", EOI_PROP_MANAGED},
	{"auto.offset.reset", EOI_PROP_MANAGED},
	{"bootstrap.servers", EOI_PROP_MANAGED},
	{"client.id", EOI_PROP_MANAGED},
	{"enable.auto.commit", EOI_PROP_MANAGED},
	{"enable.auto.offset.store", EOI_PROP_MANAGED},
	{"enable.partition.eof", EOI_PROP_MANAGED},
	{"group.id", EOI_PROP_MANAGED},
	{"group.instance.id", EOI_PROP_MANAGED},
	{"isolation.level", EOI_PROP_MANAGED},
	{"metadata.broker.list", EOI_PROP_MANAGED},
	{"partition.assignment.strategy", EOI_PROP_MANAGED},

	/* connections, metadata, fetching: tuning only */
	{"allow.auto.create.topics", EOI_PROP_ANY},
	{"api.version.fallback.ms", EOI_PROP_ANY},
	{"api.version.request", EOI_PROP_ANY},
	{"api.version.request.timeout.ms", EOI_PROP_ANY},
	{"auto.commit.interval.ms", EOI_PROP_ANY},
	{"broker.address.family", EOI_PROP_ANY},
	{"broker.address.ttl", EOI_PROP_ANY},
	{"broker.version.fallback", EOI_PROP_ANY},
	{"check.crcs", EOI_PROP_ANY},
	{"client.dns.lookup", EOI_PROP_ANY},
	{"client.rack", EOI_PROP_ANY},
	{"client.software.name", EOI_PROP_ANY},
	{"client.software.version", EOI_PROP_ANY},
	{"connections.max.idle.ms", EOI_PROP_ANY},
	{"coordinator.query.interval.ms", EOI_PROP_ANY},
	{"enable.metrics.push", EOI_PROP_ANY},
	{"enable.random.seed", EOI_PROP_ANY},
	{"enable.sparse.connections", EOI_PROP_ANY},
	{"fetch.error.backoff.ms", EOI_PROP_ANY},
	{"fetch.max.bytes", EOI_PROP_ANY},
	{"fetch.message.max.bytes", EOI_PROP_ANY},
	{"fetch.min.bytes", EOI_PROP_ANY},
	{"fetch.queue.backoff.ms", EOI_PROP_ANY},
	{"fetch.wait.max.ms", EOI_PROP_ANY},
	{"heartbeat.interval.ms", EOI_PROP_ANY},
	{"log.connection.close", EOI_PROP_ANY},
	{"log.thread.name", EOI_PROP_ANY},
	{"max.in.flight", EOI_PROP_ANY},
	{"max.in.flight.requests.per.connection", EOI_PROP_ANY},
	{"max.partition.fetch.bytes", EOI_PROP_ANY},
	{"max.poll.interval.ms", EOI_PROP_ANY},
	{"max.poll.records", EOI_PROP_ANY},
	{"message.max.bytes", EOI_PROP_ANY},
	{"metadata.max.age.ms", EOI_PROP_ANY},
	{"metadata.recovery.rebootstrap.trigger.ms", EOI_PROP_ANY},
	{"metadata.recovery.strategy", EOI_PROP_ANY},
	{"metadata.request.timeout.ms", EOI_PROP_ANY},
	{"queued.max.messages.kbytes", EOI_PROP_ANY},
	{"queued.min.messages", EOI_PROP_ANY},
	{"receive.message.max.bytes", EOI_PROP_ANY},
	{"reconnect.backoff.jitter.ms", EOI_PROP_ANY},
	{"reconnect.backoff.max.ms", EOI_PROP_ANY},
	{"reconnect.backoff.ms", EOI_PROP_ANY},
	{"retry.backoff.max.ms", EOI_PROP_ANY},
	{"retry.backoff.ms", EOI_PROP_ANY},
	{"session.timeout.ms", EOI_PROP_ANY},
	{"socket.blocking.max.ms", EOI_PROP_ANY},
	{"socket.connection.setup.timeout.ms", EOI_PROP_ANY},
	{"socket.keepalive.enable", EOI_PROP_ANY},
	{"socket.max.fails", EOI_PROP_ANY},
	{"socket.nagle.disable", EOI_PROP_ANY},
	{"socket.receive.buffer.bytes", EOI_PROP_ANY},
	{"socket.send.buffer.bytes", EOI_PROP_ANY},
	{"socket.timeout.ms", EOI_PROP_ANY},
	{"statistics.interval.ms", EOI_PROP_ANY},
	{"topic.metadata.propagation.max.ms", EOI_PROP_ANY},
	{"topic.metadata.refresh.fast.cnt", EOI_PROP_ANY},
	{"topic.metadata.refresh.fast.interval.ms", EOI_PROP_ANY},
	{"topic.metadata.refresh.interval.ms", EOI_PROP_ANY},
	{"topic.metadata.refresh.sparse", EOI_PROP_ANY},

	/* TLS: inline material and settings for anyone, files need the role */
	{"enable.ssl.certificate.verification", EOI_PROP_ANY},
	{"security.protocol", EOI_PROP_ANY},
	{"ssl.ca.location", EOI_PROP_READ},
	{"ssl.ca.pem", EOI_PROP_ANY},
	{"ssl.certificate.location", EOI_PROP_READ},
	{"ssl.certificate.pem", EOI_PROP_ANY},
	{"ssl.cipher.suites", EOI_PROP_ANY},
	{"ssl.crl.location", EOI_PROP_READ},
	{"ssl.curves.list", EOI_PROP_ANY},
	{"ssl.endpoint.identification.algorithm", EOI_PROP_ANY},
	{"ssl.key.location", EOI_PROP_READ},
	{"ssl.key.password", EOI_PROP_ANY},
	{"ssl.key.pem", EOI_PROP_ANY},
	{"ssl.keystore.location", EOI_PROP_READ},
	{"ssl.keystore.password", EOI_PROP_ANY},
	{"ssl.sigalgs.list", EOI_PROP_ANY},

	/* SASL: PLAIN, SCRAM and OAUTHBEARER credentials for anyone */
	{"enable.sasl.oauthbearer.unsecure.jwt", EOI_PROP_ANY},
	{"https.ca.location", EOI_PROP_READ},
	{"https.ca.pem", EOI_PROP_ANY},
	{"sasl.mechanism", EOI_PROP_ANY},	/* GSSAPI: see kerberos_needed() */
	{"sasl.mechanisms", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.algorithm", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.claim.aud", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.claim.exp.seconds", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.claim.iss", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.claim.jti.include", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.claim.nbf.seconds", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.claim.sub", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.jwt.template.file", EOI_PROP_READ},
	{"sasl.oauthbearer.assertion.private.key.file", EOI_PROP_READ},
	{"sasl.oauthbearer.assertion.private.key.passphrase", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.private.key.pem", EOI_PROP_ANY},
	{"sasl.oauthbearer.assertion.file", EOI_PROP_READ},
	{"sasl.oauthbearer.client.credentials.client.id", EOI_PROP_ANY},
	{"sasl.oauthbearer.client.credentials.client.secret", EOI_PROP_ANY},
	{"sasl.oauthbearer.client.id", EOI_PROP_ANY},
	{"sasl.oauthbearer.client.secret", EOI_PROP_ANY},
	{"sasl.oauthbearer.config", EOI_PROP_ANY},
	{"sasl.oauthbearer.extensions", EOI_PROP_ANY},
	{"sasl.oauthbearer.grant.type", EOI_PROP_ANY},
	{"sasl.oauthbearer.method", EOI_PROP_ANY},
	{"sasl.oauthbearer.scope", EOI_PROP_ANY},
	{"sasl.oauthbearer.sub.claim.name", EOI_PROP_ANY},
	{"sasl.oauthbearer.token.endpoint.url", EOI_PROP_ANY},	/* see check_token_url() */
	{"sasl.password", EOI_PROP_ANY},
	{"sasl.username", EOI_PROP_ANY},

	/*
	 * The Schema Registry (format avro): eoingest's own client reads these,
	 * librdkafka never sees them.  Credentials and inline PEM only.
	 */
	{"schema.registry.basic.auth.user.info", EOI_PROP_EOINGEST},
	{"schema.registry.ssl.ca.pem", EOI_PROP_EOINGEST},

	/* Kerberos: librdkafka runs kinit, with these in its command line */
	{"sasl.kerberos.keytab", EOI_PROP_EXECUTE | EOI_PROP_READ},
	{"sasl.kerberos.kinit.cmd", EOI_PROP_EXECUTE},
	{"sasl.kerberos.min.time.before.relogin", EOI_PROP_EXECUTE},
	{"sasl.kerberos.principal", EOI_PROP_EXECUTE},
	{"sasl.kerberos.service.name", EOI_PROP_EXECUTE},
};

/*
 * The class of property `name`: its needs, or EOI_PROP_SUPERUSER for a
 * property eoingest does not know.  Names match exactly, as librdkafka's
 * own lookup does (case-sensitive), so no spelling can slip past.
 */
int
eoi_property_class(const char *name)
{
	for (int i = 0; i < lengthof(property_classes); i++)
		if (strcmp(property_classes[i].name, name) == 0)
			return property_classes[i].needs;
	return EOI_PROP_SUPERUSER;
}

/* Is `name` one of eoingest's own options, which librdkafka must not get? */
bool
eoi_property_is_eoingest(const char *name)
{
	return (eoi_property_class(name) & EOI_PROP_EOINGEST) != 0;
}

static void
refuse_managed(const char *name)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("Kafka client property \"%s\" is managed by eoingest", name),
			 errdetail("The job's offsets are kept in PostgreSQL, and eoingest sets this property itself to keep its guarantees."),
			 errhint("Remove \"%s\" from options; use the brokers and start_offset parameters instead.", name)));
}

/* Refuse `name` unless `owner` has the privileges of predefined role `role`. */
static void
require_role(const char *name, Oid owner, Oid role, const char *role_name, const char *why)
{
	if (has_privs_of_role(owner, role))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to set Kafka client property \"%s\"", name),
			 errdetail("%s Only roles with the privileges of %s may set it, and the job's owner \"%s\" has not.",
					   why, role_name, GetUserNameFromId(owner, false)),
			 strstr(name, ".location") != NULL ?
			 errhint("Ask an administrator to GRANT %s to the job's owner, or leave the property out (pass the certificate or key inline: ssl.ca.pem, ssl.certificate.pem, ssl.key.pem).",
					 role_name) :
			 errhint("Ask an administrator to GRANT %s to the job's owner, or leave the property out.",
					 role_name)));
}

/* Does `owner` have what setting a property of class `needs` takes? */
static void
check_property(const char *name, int needs, Oid owner, const char *why)
{
	if (needs & EOI_PROP_MANAGED)
		refuse_managed(name);
	if (superuser_arg(owner))
		return;
	if (needs & EOI_PROP_SUPERUSER)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to set Kafka client property \"%s\"", name),
				 errdetail("Only superusers may set properties that load code into the server or that eoingest does not know to be safe."),
				 errhint("Leave the property out, or ask a superuser to own the job. docs/kafka-properties.md lists the properties every role may set.")));
	if (needs & EOI_PROP_READ)
		require_role(name, owner, ROLE_PG_READ_SERVER_FILES, "pg_read_server_files",
					 why ? why : "It makes the server read a file with the server's rights.");
	if (needs & EOI_PROP_EXECUTE)
		require_role(name, owner, ROLE_PG_EXECUTE_SERVER_PROGRAM, "pg_execute_server_program",
					 why ? why : "It makes the server run a program (Kerberos kinit).");
}

/*
 * The text librdkafka gets for an option's value, or NULL for objects and
 * arrays (which the check refuses).  kafka.c hands librdkafka the same text.
 */
char *
eoi_option_value_text(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvString:
			return pnstrdup(v->val.string.val, v->val.string.len);
		case jbvNumeric:
			return DatumGetCString(DirectFunctionCall1(numeric_out,
													   NumericGetDatum(v->val.numeric)));
		case jbvBool:
			return pstrdup(v->val.boolean ? "true" : "false");
		default:
			return NULL;
	}
}

/* librdkafka skips a string value's leading white space: so do we. */
static const char *
skip_space(const char *value)
{
	while (value != NULL && isspace((unsigned char) *value))
		value++;
	return value;
}

/*
 * SASL's GSSAPI mechanism (librdkafka's default mechanism!) runs the kinit
 * program when the client starts, whatever else is set.
 */
static bool
kerberos_needed(const char *protocol, const char *mechanism)
{
	protocol = skip_space(protocol);
	mechanism = skip_space(mechanism);
	if (protocol == NULL || pg_strncasecmp(protocol, "sasl", 4) != 0)
		return false;
	/* any spelling and padding counts: stricter than librdkafka is harmless */
	return mechanism == NULL || pg_strncasecmp(mechanism, "GSSAPI", 6) == 0;
}

static void check_token_url(const char *url, Oid owner);

/*
 * Check every property of `options` against what the job's owner may set.
 * Raises the first refusal, naming the property and the role it needs.
 */
void
eoi_check_options_allowed(Jsonb *options, Oid owner)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *name = NULL;
	char	   *protocol = NULL;
	char	   *mechanism = NULL;

	if (options == NULL)
		return;
	if (!JB_ROOT_IS_OBJECT(options))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("options must be a JSON object of Kafka client properties"),
				 errhint("For example: options => '{\"fetch.wait.max.ms\": 50}'.")));

	it = JsonbIteratorInit(&options->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *value;

		if (tok == WJB_KEY)
		{
			name = pnstrdup(v.val.string.val, v.val.string.len);
			check_property(name, eoi_property_class(name), owner, NULL);
			continue;
		}
		if (tok != WJB_VALUE)
			continue;
		value = eoi_option_value_text(&v);
		if (value == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("Kafka client property \"%s\" must be a string, number or boolean", name)));
		if (strcmp(name, "security.protocol") == 0)
			protocol = value;
		else if (strcmp(name, "sasl.mechanism") == 0 || strcmp(name, "sasl.mechanisms") == 0)
			mechanism = value;
		else if (strcmp(name, "sasl.oauthbearer.token.endpoint.url") == 0)
			check_token_url(value, owner);
	}

	if (kerberos_needed(protocol, mechanism))
		check_property(mechanism ? "sasl.mechanisms" : "security.protocol",
					   EOI_PROP_EXECUTE, owner,
					   mechanism ? "SASL mechanism GSSAPI (Kerberos) makes the server run the kinit program." :
					   "SASL without sasl.mechanisms means GSSAPI (Kerberos), librdkafka's default, which makes the server run the kinit program.");
}

/* ---- eoingest.allowed_brokers ---- */

/*
 * One "host:port" of a broker list, or of the pattern list: host
 * lower-cased, "[v6]" kept with its brackets, an optional "proto://"
 * dropped.  *port is -1 when none is given.  False if malformed.
 */
static bool
split_host_port(const char *entry, char **host, int *port)
{
	const char *s = entry;
	const char *scheme = strstr(s, "://");
	const char *colon;
	char	   *end;
	long		p;

	if (scheme != NULL)
		s = scheme + 3;
	while (isspace((unsigned char) *s))
		s++;
	if (*s == '[')
	{
		const char *close = strchr(s, ']');

		if (close == NULL)
			return false;
		colon = (close[1] == ':') ? close + 1 : NULL;
		if (close[1] != '\0' && close[1] != ':')
			return false;
	}
	else
		colon = strrchr(s, ':');

	*host = pnstrdup(s, colon ? colon - s : strlen(s));
	for (char *c = *host; *c; c++)
		*c = pg_tolower((unsigned char) *c);
	while (**host && isspace((unsigned char) (*host)[strlen(*host) - 1]))
		(*host)[strlen(*host) - 1] = '\0';
	if ((*host)[0] == '\0')
		return false;
	*port = -1;
	if (colon == NULL)
		return true;
	if (strcmp(colon + 1, "*") == 0)
		return true;
	p = strtol(colon + 1, &end, 10);
	while (isspace((unsigned char) *end))
		end++;
	if (end == colon + 1 || *end != '\0' || p < 1 || p > 65535)
		return false;
	*port = (int) p;
	return true;
}

/* Entries of a comma-separated list, trimmed, empty ones dropped. */
static List *
split_list(const char *list)
{
	return eoi_split_topics(list);	/* the same splitting as topic lists */
}

/* Does host match pattern host `pattern` ("*", "*.suffix", or exact)? */
static bool
host_matches(const char *host, const char *pattern)
{
	size_t		hl = strlen(host);
	size_t		pl;

	if (strcmp(pattern, "*") == 0)
		return true;
	if (strncmp(pattern, "*.", 2) == 0)
	{
		pl = strlen(pattern + 1);	/* ".suffix" */
		return hl > pl && strcmp(host + hl - pl, pattern + 1) == 0;
	}
	return strcmp(host, pattern) == 0;
}

static bool
broker_allowed(const char *host, int port)
{
	List	   *patterns = split_list(eoingest_allowed_brokers);
	ListCell   *lc;

	foreach(lc, patterns)
	{
		char	   *phost;
		int			pport;

		if (!split_host_port(lfirst(lc), &phost, &pport))
			continue;			/* the check hook refused these */
		if (host_matches(host, phost) && (pport < 0 || pport == port))
			return true;
	}
	return false;
}

static bool
allowed_brokers_set(void)
{
	return eoingest_allowed_brokers != NULL && eoingest_allowed_brokers[0] != '\0';
}

static void
refuse_host(const char *what, const char *entry)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("%s \"%s\" is not allowed on this server", what, entry),
			 errdetail("eoingest.allowed_brokers is \"%s\".", eoingest_allowed_brokers),
			 errhint("Use a broker the setting allows, or ask a superuser to add it to eoingest.allowed_brokers.")));
}

/*
 * Refuse a broker list that names a host or port eoingest.allowed_brokers
 * does not allow (an empty setting allows any).  Brokers that the cluster
 * itself advertises in its metadata are the cluster's, and not checked.
 */
void
eoi_check_brokers_allowed(const char *brokers)
{
	List	   *entries = split_list(brokers);
	ListCell   *lc;

	if (entries == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("brokers names no Kafka broker"),
				 errhint("Pass a list of host:port, such as 'kafka1:9092,kafka2:9092'.")));
	if (!allowed_brokers_set())
		return;
	foreach(lc, entries)
	{
		char	   *host;
		int			port;

		if (!split_host_port(lfirst(lc), &host, &port))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("\"%s\" is not a Kafka broker address", (char *) lfirst(lc)),
					 errhint("Write each broker as host:port.")));
		if (!broker_allowed(host, port < 0 ? 9092 : port))
			refuse_host("Kafka broker", lfirst(lc));
	}
}

/*
 * OAUTHBEARER's OIDC token endpoint is fetched with libcurl (an HTTP POST
 * whose error response becomes the error text), which would read file://
 * and more: only http(s), and to a host eoingest.allowed_brokers allows.
 * With the setting empty nothing limits the host, so then only superusers
 * may name one: a job owner could otherwise read the server's internal
 * HTTP services.
 */
static void
check_token_url(const char *url, Oid owner)
{
	const char *rest;
	const char *slash;
	const char *at;
	char	   *hostport;
	char	   *host;
	int			port;
	bool		https;

	url = skip_space(url);
	https = pg_strncasecmp(url, "https://", 8) == 0;
	if (!https && pg_strncasecmp(url, "http://", 7) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("sasl.oauthbearer.token.endpoint.url must be an http:// or https:// URL"),
				 errhint("Other URL schemes (file://, ...) would make the server read its own files.")));
	if (!allowed_brokers_set())
	{
		if (!superuser_arg(owner))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to set Kafka client property \"sasl.oauthbearer.token.endpoint.url\""),
					 errdetail("eoingest.allowed_brokers is empty, so nothing limits the host the server would send the request to."),
					 errhint("Ask a superuser to set eoingest.allowed_brokers to include the token endpoint's host.")));
		return;
	}
	rest = url + (https ? 8 : 7);
	slash = strpbrk(rest, "/?#");
	hostport = pnstrdup(rest, slash ? slash - rest : strlen(rest));
	at = strrchr(hostport, '@');
	if (!split_host_port(at ? at + 1 : hostport, &host, &port))
		refuse_host("OAUTHBEARER token endpoint", url);
	if (!broker_allowed(host, port < 0 ? (https ? 443 : 80) : port))
		refuse_host("OAUTHBEARER token endpoint", url);
}

/* GUC check hook: every pattern must be host, host:port or host:*. */
bool
eoi_allowed_brokers_check_hook(char **newval, void **extra, GucSource source)
{
	List	   *patterns;
	ListCell   *lc;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	patterns = split_list(*newval);
	foreach(lc, patterns)
	{
		char	   *host;
		int			port;

		if (!split_host_port(lfirst(lc), &host, &port))
		{
			GUC_check_errdetail("\"%s\" is not host, host:port or host:*.", (char *) lfirst(lc));
			return false;
		}
	}
	list_free(patterns);
	return true;
}

/*
 * schema_registry: one URL or several, comma-separated, each http:// or
 * https:// (libcurl would read file:// and more), to a host
 * eoingest.allowed_brokers allows when it is set, as the brokers are
 * checked.  With the setting empty nothing limits the host, so then only
 * a superuser's job may name one, as for the OAUTHBEARER token endpoint:
 * the server would otherwise send any job owner's requests anywhere.
 * Checked against the job's owner, at create_job and alter_job and again
 * when a worker configures its client.  Credentials
 * belong in options (schema.registry.basic.auth.user.info), not in the
 * URL, where job_definitions would show them.  Returns the URLs, without
 * a final slash.
 */
List *
eoi_check_registry_urls(const char *urls, Oid owner)
{
	List	   *entries = split_list(urls);
	List	   *result = NIL;
	ListCell   *lc;

	if (entries == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("schema_registry names no URL"),
				 errhint("Pass the registry's URL, such as 'http://registry:8081', or several separated by commas.")));
	/* as for the OAUTHBEARER token endpoint: the server's requests go nowhere unchecked */
	if (!allowed_brokers_set() && !superuser_arg(owner))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to name a schema registry"),
				 errdetail("eoingest.allowed_brokers is empty, so nothing limits the host the server would send its requests to."),
				 errhint("Ask a superuser to set eoingest.allowed_brokers to include the registry's host.")));
	foreach(lc, entries)
	{
		char	   *url = lfirst(lc);
		bool		https = pg_strncasecmp(url, "https://", 8) == 0;
		const char *rest;
		const char *slash;
		char	   *hostport;
		char	   *host;
		int			port;

		if (!https && pg_strncasecmp(url, "http://", 7) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schema_registry URL \"%s\" is not an http:// or https:// URL", url)));
		rest = url + (https ? 8 : 7);
		slash = strpbrk(rest, "/?#");
		hostport = pnstrdup(rest, slash ? slash - rest : strlen(rest));
		if (strchr(hostport, '@') != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schema_registry URLs must not contain credentials"),
					 errhint("Put them in options as schema.registry.basic.auth.user.info ('user:password'), which only the job's owner can read.")));
		if (!split_host_port(hostport, &host, &port))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("schema_registry URL \"%s\" has no valid host and port", url)));
		if (allowed_brokers_set() && !broker_allowed(host, port < 0 ? (https ? 443 : 80) : port))
			refuse_host("schema registry", url);
		while (strlen(url) > 0 && url[strlen(url) - 1] == '/')
			url[strlen(url) - 1] = '\0';
		result = lappend(result, url);
	}
	return result;
}
