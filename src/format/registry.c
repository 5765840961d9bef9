/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The Schema Registry client of format avro.
 *
 * A worker asks the registry for a schema the first time it meets its id
 * (avro.c caches the answer for the worker's life: schemas are immutable
 * by id), so a request is rare, but it happens inside a batch's
 * transaction and must not hold the worker hostage: libcurl's multi
 * interface runs the request while we wait in slices of at most 100 ms,
 * checking for interrupts (stop_job, pg_terminate_backend, shutdown) and
 * for the postmaster's death between them, and each URL gets a bounded
 * time.  Only http and https are allowed, redirects are not followed, and
 * an answer is at most a few megabytes.
 *
 * What an answer means decides who is at fault:
 *	200 with a schema			the schema
 *	404 with Confluent's error code 40403 (schema not found)
 *								the record's: it names a schema that does not exist
 *	401, 403, an untrusted TLS certificate
 *								the job's configuration: the job stops
 *	anything else, no answer	transient: the next URL, then the batch is
 *								retried (the job shows retrying)
 * A 404 without Confluent's error body is the URL's fault (it is not a
 * registry's base URL), not every record's: transient, with a hint.
 *
 * Credentials and the registry's answers never appear in error messages;
 * URLs are shown without credentials (policy.c refuses URLs with any).
 * Why a request failed (libcurl's text, the HTTP status) is told to a
 * superuser's job only; any other job owner reads that the registry could
 * not be read, and the reason goes to the server log: otherwise the client
 * would tell a job owner which hosts and ports of the server's network
 * answer, and how.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <curl/curl.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/pmsignal.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "format/registry.h"
#include "kafka/policy.h"

/* How long one URL may take, and how long to wait to connect. */
#define REGISTRY_TIMEOUT_MS		10000
#define REGISTRY_CONNECT_MS		5000
/* The longest wait between two checks for interrupts. */
#define REGISTRY_SLICE_MS		100
/* The largest answer we read: schemas are kilobytes. */
#define REGISTRY_MAX_ANSWER		(8 * 1024 * 1024)
/* How many references one schema may pull in, and how deep they may chain. */
#define REGISTRY_MAX_REFERENCES	100
#define REGISTRY_MAX_REF_DEPTH	16

typedef struct RegistryConfig
{
	char	   *urls_text;		/* as configured, to notice a change */
	List	   *urls;			/* of char *, without a final slash */
	char	   *userinfo;		/* "user:password", or NULL */
	char	   *ca_pem;			/* trusted CA certificates, or NULL */
	Oid			owner;			/* the job's */
	char	   *allowed;		/* eoingest.allowed_brokers when checked */
	bool		verbose;		/* may the owner see why a request failed? */
	uint64		generation;
} RegistryConfig;

static RegistryConfig config = {0};
static bool curl_ready = false;

/* An answer, read by libcurl's callback into malloc'd memory (no ereport there). */
typedef struct Answer
{
	char	   *data;
	size_t		len;
	bool		too_large;
} Answer;

static char *
option_text(Jsonb *options, const char *name)
{
	JsonbValue	v;

	if (options == NULL || !JB_ROOT_IS_OBJECT(options) ||
		getKeyJsonValueFromContainer(&options->root, name, strlen(name), &v) == NULL)
		return NULL;
	return eoi_option_value_text(&v);
}

static bool
same_text(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

uint64
eoi_registry_configure(const char *urls, Jsonb *options, Oid owner)
{
	char	   *userinfo = option_text(options, "schema.registry.basic.auth.user.info");
	char	   *ca_pem = option_text(options, "schema.registry.ssl.ca.pem");
	MemoryContext old;
	List	   *checked;
	ListCell   *lc;

	if (config.generation != 0 && same_text(urls, config.urls_text) &&
		same_text(userinfo, config.userinfo) && same_text(ca_pem, config.ca_pem) &&
		owner == config.owner &&
		same_text(eoingest_allowed_brokers ? eoingest_allowed_brokers : "", config.allowed))
		return config.generation;

	checked = urls ? eoi_check_registry_urls(urls, owner) : NIL;
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (config.urls_text)
		pfree(config.urls_text);
	if (config.userinfo)
		pfree(config.userinfo);
	if (config.ca_pem)
		pfree(config.ca_pem);
	list_free_deep(config.urls);
	config.urls = NIL;
	foreach(lc, checked)
		config.urls = lappend(config.urls, pstrdup(lfirst(lc)));
	config.urls_text = urls ? pstrdup(urls) : NULL;
	config.userinfo = userinfo ? pstrdup(userinfo) : NULL;
	config.ca_pem = ca_pem ? pstrdup(ca_pem) : NULL;
	config.owner = owner;
	if (config.allowed)
		pfree(config.allowed);
	config.allowed = pstrdup(eoingest_allowed_brokers ? eoingest_allowed_brokers : "");
	config.verbose = superuser_arg(owner);
	config.generation++;
	MemoryContextSwitchTo(old);
	return config.generation;
}

static size_t
answer_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	Answer	   *a = userdata;
	size_t		n = size * nmemb;
	char	   *grown;

	if (a->len + n > REGISTRY_MAX_ANSWER)
	{
		a->too_large = true;
		return 0;				/* makes libcurl fail the transfer */
	}
	grown = realloc(a->data, a->len + n + 1);
	if (grown == NULL)
		return 0;
	a->data = grown;
	memcpy(a->data + a->len, ptr, n);
	a->len += n;
	a->data[a->len] = '\0';
	return n;
}

static void
ensure_curl(void)
{
	if (curl_ready)
		return;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not initialize libcurl for the schema registry")));
	curl_ready = true;
}

/*
 * One GET of `url`, waiting in interruptible slices.  Returns libcurl's
 * result; *status is the HTTP status, the answer in *answer (malloc'd,
 * the caller frees it), libcurl's message in errbuf.
 */
static CURLcode
http_get(const char *url, long *status, Answer *answer, char *errbuf)
{
	CURLM	   *multi = curl_multi_init();
	CURL	   *easy = curl_easy_init();
	struct curl_slist *headers = NULL;
	CURLcode	result = CURLE_FAILED_INIT;

	*status = 0;
	errbuf[0] = '\0';
	if (multi == NULL || easy == NULL)
	{
		if (easy)
			curl_easy_cleanup(easy);
		if (multi)
			curl_multi_cleanup(multi);
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory for a schema registry request")));
	}
	headers = curl_slist_append(headers, "Accept: application/vnd.schemaregistry.v1+json, application/json");

	PG_TRY();
	{
		int			running = 1;
		CURLMsg    *msg;
		int			left;

		curl_easy_setopt(easy, CURLOPT_URL, url);
		curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
		curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
		curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
		curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long) REGISTRY_TIMEOUT_MS);
		curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, (long) REGISTRY_CONNECT_MS);
		curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
		curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, answer_write);
		curl_easy_setopt(easy, CURLOPT_WRITEDATA, answer);
		curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
		curl_easy_setopt(easy, CURLOPT_USERAGENT, "eoingest");
		if (config.userinfo != NULL)
		{
			curl_easy_setopt(easy, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
			curl_easy_setopt(easy, CURLOPT_USERPWD, config.userinfo);
		}
		if (config.ca_pem != NULL)
		{
			struct curl_blob blob;

			blob.data = config.ca_pem;
			blob.len = strlen(config.ca_pem);
			blob.flags = CURL_BLOB_COPY;
			curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &blob);
		}
		curl_multi_add_handle(multi, easy);

		while (running > 0)
		{
			CHECK_FOR_INTERRUPTS();
			if (!PostmasterIsAlive())
				proc_exit(1);
			if (curl_multi_perform(multi, &running) != CURLM_OK)
				break;
			if (running > 0 &&
				curl_multi_poll(multi, NULL, 0, REGISTRY_SLICE_MS, NULL) != CURLM_OK)
				break;
		}
		while ((msg = curl_multi_info_read(multi, &left)) != NULL)
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == easy)
				result = msg->data.result;
		if (result == CURLE_OK)
			curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, status);
	}
	PG_FINALLY();
	{
		curl_multi_remove_handle(multi, easy);
		curl_easy_cleanup(easy);
		curl_multi_cleanup(multi);
		curl_slist_free_all(headers);
	}
	PG_END_TRY();
	return result;
}

/* The answer as jsonb, or NULL when it is not JSON (a proxy's page). */
static Jsonb *
answer_json(const char *text)
{
	MemoryContext cxt = CurrentMemoryContext;
	Jsonb	   *jb = NULL;

	if (text == NULL)
		return NULL;
	PG_TRY();
	{
		jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		jb = NULL;
	}
	PG_END_TRY();
	if (jb != NULL && !JB_ROOT_IS_OBJECT(jb))
		jb = NULL;
	return jb;
}

static bool
json_key(Jsonb *jb, const char *key, JsonbValue *v)
{
	return jb != NULL && getKeyJsonValueFromContainer(&jb->root, key, strlen(key), v) != NULL;
}

/* Confluent's "schema not found" (40403) and the subject/version variants. */
static bool
is_not_found_answer(Jsonb *jb)
{
	JsonbValue	v;
	int64		code;

	if (!json_key(jb, "error_code", &v) || v.type != jbvNumeric)
		return false;
	code = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v.val.numeric)));
	/* schema, subject, version not found */
	return code == 40403 || code == 40401 || code == 40402 || code == 404;
}

/* The schema text of a 200 answer; an answer without one is the registry's fault. */
static char *
schema_text_of_answer(Jsonb *jb, const char *url, const char *what)
{
	JsonbValue	v;

	if (!json_key(jb, "schema", &v) || v.type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("schema registry at %s answered the request for %s without a schema", url, what),
				 errhint("Check that schema_registry is the registry's base URL (for Apicurio Registry, ending in /apis/ccompat/v7).")));
	return pnstrdup(v.val.string.val, v.val.string.len);
}

/* The Avro schema of a 200 answer, with the record errors the issue names. */
static char *
schema_of_answer(Jsonb *jb, const char *url, const char *what)
{
	char	   *schema = schema_text_of_answer(jb, url, what);
	JsonbValue	v;

	if (json_key(jb, "schemaType", &v) && v.type == jbvString &&
		!(v.val.string.len == 4 && strncmp(v.val.string.val, "AVRO", 4) == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is a %.*s schema, not an Avro schema", what,
						Min(v.val.string.len, 32), v.val.string.val),
				 errhint("Format avro reads Avro records only; use a job of another format for this topic.")));
	return schema;
}

/*
 * Why a request failed, as the job's owner may read it: the reason for a
 * superuser's job; for any other, a pointer to the server log, where the
 * reason goes instead.
 */
static const char *
shown_reason(const char *base, const char *reason)
{
	if (config.verbose)
		return reason;
	ereport(LOG,
			(errmsg("schema registry at %s could not be read: %s", base, reason)));
	return "the reason is in the server log";
}

/*
 * The registry's answer at `path`, a JSON object, from the first URL that
 * gives one; *base is that URL.  Errors as eoi_registry_fetch_schema says.
 */
static Jsonb *fetch_answer_extended(const char *path, const char *what, const char **base_out,
									 bool missing_ok);

static Jsonb *
fetch_answer(const char *path, const char *what, const char **base_out)
{
	return fetch_answer_extended(path, what, base_out, false);
}

/* fetch_answer, or NULL when `missing_ok` and the registry has no such thing. */
static Jsonb *
fetch_answer_extended(const char *path, const char *what, const char **base_out, bool missing_ok)
{
	StringInfoData errors;
	ListCell   *lc;

	if (config.urls == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("format avro needs a schema registry"),
				 errhint("Give the job one with eoingest.alter_job(name, schema_registry => 'http://...').")));
	ensure_curl();
	initStringInfo(&errors);
	foreach(lc, config.urls)
	{
		const char *base = lfirst(lc);
		char	   *url = psprintf("%s%s", base, path);
		Answer		answer = {0};
		char		errbuf[CURL_ERROR_SIZE];
		long		status;
		CURLcode	rc;
		char	   *text;
		Jsonb	   *jb;

		rc = http_get(url, &status, &answer, errbuf);
		text = answer.data ? pstrdup(answer.data) : NULL;
		free(answer.data);

		if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
					 errmsg("schema registry at %s could not be trusted: %s", base,
							shown_reason(base, errbuf[0] ? errbuf : curl_easy_strerror(rc))),
					 errhint("Give its CA certificate in options as schema.registry.ssl.ca.pem, then eoingest.start_job() again.")));
		if (rc != CURLE_OK)
		{
			appendStringInfo(&errors, "%s%s: %s", errors.len ? "; " : "", base,
							 shown_reason(base, answer.too_large ? "answer too large" :
										  errbuf[0] ? errbuf : curl_easy_strerror(rc)));
			continue;
		}
		if (status == 401 || status == 403)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
					 config.verbose ?
					 errmsg("schema registry at %s refused the credentials (HTTP %ld)", base, status) :
					 errmsg("schema registry at %s refused the credentials", base),
					 errhint("Set options' schema.registry.basic.auth.user.info to 'user:password' with eoingest.alter_job(), then eoingest.start_job() again.")));
		jb = answer_json(text);
		if (status == 200)
		{
			if (jb == NULL)
			{
				appendStringInfo(&errors, "%s%s: %s", errors.len ? "; " : "", base,
								 shown_reason(base, "the answer is not a JSON object"));
				continue;
			}
			*base_out = base;
			return jb;
		}
		if (status == 404 && is_not_found_answer(jb) && missing_ok)
			return NULL;
		if (status == 404 && is_not_found_answer(jb))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s is not in the schema registry", what),
					 errdetail("The registry at %s answered 404 Not Found.", base)));
		appendStringInfo(&errors, "%s%s: %s", errors.len ? "; " : "", base,
						 shown_reason(base, psprintf("HTTP %ld%s", status,
													 status == 404 ? " without a registry error (not the registry's base URL?)" : "")));
	}
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("could not read %s from the schema registry", what),
			 errdetail("Every registry URL failed: %s.", errors.data),
			 errhint("The job retries the batch until the registry answers.")));
	return NULL;				/* not reached */
}

/* What resolving one schema's references has gathered. */
typedef struct References
{
	List	   *seen;			/* "subject/version" of each reference met */
	bool		protobuf;		/* gather .proto files, not Avro schemas */
	StringInfoData fields;		/* avro: the referenced schemas, as record fields */
	int			nfields;
	List	   *files;			/* protobuf: EoiSchemaFile, imports first */
} References;

static char *protobuf_of_answer(Jsonb *jb, const char *base, const char *what);

static char *
reference_string(JsonbValue *ref, const char *key, const char *what)
{
	JsonbValue	v;

	if (getKeyJsonValueFromContainer(ref->val.binary.data, key, strlen(key), &v) == NULL ||
		v.type != jbvString)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s has a schema reference without a \"%s\"", what, key)));
	return pnstrdup(v.val.string.val, v.val.string.len);
}

static int
reference_version(JsonbValue *ref, const char *what)
{
	JsonbValue	v;

	if (getKeyJsonValueFromContainer(ref->val.binary.data, "version", 7, &v) == NULL ||
		v.type != jbvNumeric)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s has a schema reference without a version", what)));
	return DatumGetInt32(DirectFunctionCall1(numeric_int4, NumericGetDatum(v.val.numeric)));
}

/* The subject, escaped for a URL's path. */
static char *
escaped_subject(const char *subject)
{
	char	   *escaped = curl_easy_escape(NULL, subject, (int) strlen(subject));
	char	   *result;

	if (escaped == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	result = pstrdup(escaped);
	curl_free(escaped);
	return result;
}

/*
 * Append the schemas that `answer` references to refs->texts, the ones
 * they reference first, each once (by subject and version).
 */
static void
add_references(Jsonb *answer, const char *what, References *refs, int depth)
{
	JsonbValue	list;
	int			n;

	if (!json_key(answer, "references", &list) || list.type != jbvBinary ||
		!JsonContainerIsArray(list.val.binary.data))
		return;
	n = JsonContainerSize(list.val.binary.data);
	for (int i = 0; i < n; i++)
	{
		JsonbValue *ref = getIthJsonbValueFromContainer(list.val.binary.data, i);
		char	   *name;
		char	   *subject;
		int			version;
		char	   *key;
		char	   *ref_what;
		const char *base;
		Jsonb	   *jb;
		ListCell   *lc;
		bool		seen = false;

		/* the registry is the job owner's: an entry may be anything */
		if (ref == NULL || ref->type != jbvBinary || !JsonContainerIsObject(ref->val.binary.data))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s has a schema reference that is not a JSON object", what)));
		name = reference_string(ref, "name", what);
		subject = reference_string(ref, "subject", what);
		version = reference_version(ref, what);
		key = psprintf("%s/%d", subject, version);
		foreach(lc, refs->seen)
			seen = seen || strcmp(lfirst(lc), key) == 0;
		if (seen)
			continue;
		if (depth >= REGISTRY_MAX_REF_DEPTH || list_length(refs->seen) >= REGISTRY_MAX_REFERENCES)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s has more schema references than eoingest resolves", what),
					 errdetail("At most %d references are followed, chained at most %d deep.",
							   REGISTRY_MAX_REFERENCES, REGISTRY_MAX_REF_DEPTH)));
		refs->seen = lappend(refs->seen, key);
		ref_what = psprintf("%s's reference %s (subject %s, version %d)", what, name, subject, version);
		jb = fetch_answer(version < 0 ? psprintf("/subjects/%s/versions/latest", escaped_subject(subject)) :
						  psprintf("/subjects/%s/versions/%d", escaped_subject(subject), version),
						  ref_what, &base);
		add_references(jb, ref_what, refs, depth + 1);
		if (refs->protobuf)
		{
			EoiSchemaFile *file = palloc(sizeof(EoiSchemaFile));

			file->name = name;
			file->text = protobuf_of_answer(jb, base, ref_what);
			refs->files = lappend(refs->files, file);
			continue;
		}
		appendStringInfo(&refs->fields, "{\"name\": \"r%d\", \"type\": %s}, ",
						 ++refs->nfields, schema_of_answer(jb, base, ref_what));
	}
}

char *
eoi_registry_fetch_schema(const char *path, const char *what, bool *with_references)
{
	const char *base;
	Jsonb	   *jb = fetch_answer(path, what, &base);
	char	   *schema = schema_of_answer(jb, base, what);
	References	refs = {NIL};

	initStringInfo(&refs.fields);
	add_references(jb, what, &refs, 0);
	*with_references = refs.nfields > 0;
	if (!*with_references)
		return schema;
	return psprintf("{\"type\": \"record\", \"name\": \"%s\", \"fields\": [%s{\"name\": \"schema\", \"type\": %s}]}",
					EOI_REFERENCES_RECORD, refs.fields.data, schema);
}

/*
 * The id of the latest schema registered under `subject`, or -1 when the
 * registry has no such subject.  Errors as eoi_registry_fetch_schema's.
 */
int64
eoi_registry_latest_id(const char *subject)
{
	char	   *what = psprintf("the latest version of subject \"%s\"", subject);
	const char *base;
	Jsonb	   *jb = fetch_answer_extended(psprintf("/subjects/%s/versions/latest", escaped_subject(subject)),
										   what, &base, true);
	JsonbValue	v;
	int64		id;

	if (jb == NULL)
		return -1;
	if (!json_key(jb, "id", &v) || v.type != jbvNumeric ||
		(id = DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v.val.numeric)))) < 0 ||
		id > PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("schema registry at %s answered the request for %s without a schema id", base, what)));
	return id;
}

/*
 * The JSON Schema that the registry holds at `path` ("/schemas/ids/42"),
 * for the record whose schema `what` names; its references are not
 * followed (a property that refers to one fills a jsonb column).  Errors
 * as eoi_registry_fetch_schema's; a schema of another type is a record
 * error.
 */
char *
eoi_registry_fetch_json_schema(const char *path, const char *what)
{
	const char *base;
	Jsonb	   *jb = fetch_answer(path, what, &base);
	char	   *schema = schema_text_of_answer(jb, base, what);
	JsonbValue	v;

	if (!json_key(jb, "schemaType", &v) || v.type != jbvString ||
		!(v.val.string.len == 4 && strncmp(v.val.string.val, "JSON", 4) == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not a JSON Schema", what),
				 errhint("Format json takes the JSON Schema of a record in Confluent's framing; this id names a schema of another type.")));
	return schema;
}

/* The text of a Protobuf schema in a 200 answer; another type is a record error. */
static char *
protobuf_of_answer(Jsonb *jb, const char *base, const char *what)
{
	JsonbValue	v;

	if (!json_key(jb, "schemaType", &v) || v.type != jbvString ||
		!(v.val.string.len == 8 && strncmp(v.val.string.val, "PROTOBUF", 8) == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is not a Protobuf schema", what),
				 errhint("Format protobuf reads records whose schema id names a Protobuf schema; use a job of another format for this topic.")));
	return schema_text_of_answer(jb, base, what);
}

/*
 * The Protobuf schema at `path` and the files it imports, as the registry
 * holds them: each reference (named by its import path) before the files
 * that import it, and last the schema itself (name NULL).  Errors as
 * eoi_registry_fetch_schema's; a schema of another type is a record error.
 */
List *
eoi_registry_fetch_protobuf(const char *path, const char *what)
{
	const char *base;
	Jsonb	   *jb = fetch_answer(path, what, &base);
	EoiSchemaFile *file = palloc(sizeof(EoiSchemaFile));
	References	refs = {NIL};

	file->name = NULL;
	file->text = protobuf_of_answer(jb, base, what);
	refs.protobuf = true;
	add_references(jb, what, &refs, 0);
	return lappend(refs.files, file);
}

/* The number eoi_registry_configure last returned (0: never called). */
uint64
eoi_registry_generation(void)
{
	return config.generation;
}
