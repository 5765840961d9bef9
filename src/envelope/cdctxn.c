/*-------------------------------------------------------------------------
 *
 * cdctxn.c
 *	  Source transactions of Debezium change events (transactions =>
 *	  'source'): a batch commits only whole source transactions.
 *
 * With provide.transaction.metadata=true Debezium writes a BEGIN and an
 * END event for every source transaction to its transaction topic
 * (<topic.prefix>.transaction), in commit order, the END with the number
 * of events per data collection ({"status": "END", "id": ..., "event_count":
 * n, "data_collections": [{"data_collection": "public.t", "event_count":
 * k}, ...]}), and a block {"id", "total_order", "data_collection_order"} in
 * every change event.  PostgreSQL's logical decoding emits each transaction
 * whole, in commit order, so in every partition of every data topic the
 * events are in commit order too.
 *
 * A batch (messages of the transaction topic and of every data topic, each
 * partition's in offset order) may therefore end after the END of a
 * transaction T when, in each data partition, the events up to the first
 * one of a transaction not ended by then are every event that the ENDs up
 * to T announce for the job's data collections (the keys of its targets).
 * eoi_txn_cut() finds the last such END and moves the messages before that
 * point, per partition, to the front of the batch: that is what commits,
 * the rest is kept for the next batch (eoi_txn_keep_pending).  An event is
 * counted once per data_collection_order: events Debezium sends again after
 * a restart of its own do not complete a transaction twice.  An event
 * without a transaction block (a snapshot read, a tombstone, a message that
 * is not an event) stands alone: it commits once its partition reaches it.
 *
 * After Kafka Connect restarts, Debezium sends again what followed the
 * source offset it last flushed: the END of a transaction that a batch has
 * committed already may come again, with the tail of its events or with
 * none.  Counted afresh, its events would never be all there, and every
 * later transaction would wait behind it.  The ENDs come in commit order,
 * and so do their LSNs: the LSN of the last END committed is kept with the
 * transaction topic's offset (its source_lsn in eoingest.offsets, written
 * by cdc.c in the batch's transaction), and an END at or below it is of a
 * transaction committed already: it is whole as it is, and the events of
 * it that come again pass (the replay filter, cdcreplay.c, skips those it
 * knows as applied).  Those events may also come after the cut that took
 * their END: an event whose source.sequence names a prior commit below
 * that LSN is of a transaction committed already, and passes too.
 *
 * Debezium's PostgreSQL connector writes the id as "txid:lsn" with the LSN
 * of each message (captured from 3.6.1: BEGIN 726:22282808, change events
 * 726:22282808, 726:22282896, 726:22283136, END 726:22283360, the next
 * BEGIN 727:22283360): only the txid names the transaction, so an id of
 * two decimal numbers is matched by the first (txn_key; messages name the
 * id as written).  Any other id (MySQL's GTID "uuid:n", SQL Server's
 * "hex:hex:hex") is matched whole, as it was: those connectors are not
 * tested against the real thing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"

#include "base/pgcompat.h"
#include "envelope/cdcreplay.h"
#include "envelope/cdctxn.h"
#include "kafka/kafka.h"
#include "store/offsets.h"

#define TXID_LEN 128

typedef enum MsgKind
{
	MSG_ALONE,					/* no transaction: commits when reached */
	MSG_BEGIN,
	MSG_END,
	MSG_EVENT					/* a change event of a transaction */
} MsgKind;

typedef struct MsgInfo
{
	MsgKind		kind;
	char	   *id;				/* the transaction id as written */
	char	   *txid;			/* the transaction, as txn_key names it */
	int			coll;			/* MSG_EVENT: its data collection among the targets, or -1 */
	int64		order;			/* MSG_EVENT: data_collection_order */
	int64	   *expected;		/* MSG_END: events per data collection */
	uint64		lsn;			/* MSG_END: the LSN of "txid:lsn", or 0 */
	uint64		prior_commit;	/* MSG_EVENT: the commit before its transaction's, or 0 */
} MsgInfo;

/* A partition of the batch: its messages, in offset order. */
typedef struct Part
{
	const char *topic;
	int32		partition;
	bool		is_txn;
	int		   *msgs;
	int			len;
	int			ptr;			/* how many are in the cut being tried */
} Part;

typedef struct TxState
{
	char		txid[TXID_LEN]; /* hash key */
	bool		included;		/* its END is in the cut being tried */
	int64	   *expected;
	int64	   *have;			/* distinct events seen, per collection */
	bool	  **seen;			/* per collection, per data_collection_order */
	int64		missing;
} TxState;

typedef struct Cut
{
	const EoiJob *job;
	EoiBatch   *batch;
	MsgInfo    *info;
	Part	   *parts;
	int			nparts;
	char	  **colls;			/* the job's data collections */
	int			ncolls;
	HTAB	   *txs;
	int			incomplete;		/* included transactions with events missing */
} Cut;

/* ---- reading events, without raising errors: the writer reports those ---- */

static char *
get_string(JsonbContainer *object, const char *name)
{
	JsonbValue	v;

	if (object == NULL || !JsonContainerIsObject(object) ||
		getKeyJsonValueFromContainer(object, name, strlen(name), &v) == NULL)
		return NULL;
	if (v.type == jbvString)
		return pnstrdup(v.val.string.val, v.val.string.len);
	if (v.type == jbvNumeric)
		return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(v.val.numeric)));
	return NULL;
}

static JsonbContainer *
get_container(JsonbContainer *object, const char *name, bool array)
{
	JsonbValue	v;

	if (object == NULL || !JsonContainerIsObject(object) ||
		getKeyJsonValueFromContainer(object, name, strlen(name), &v) == NULL ||
		v.type != jbvBinary)
		return NULL;
	if (array ? !JsonContainerIsArray(v.val.binary.data) : !JsonContainerIsObject(v.val.binary.data))
		return NULL;
	return v.val.binary.data;
}

static int64
get_int(JsonbContainer *object, const char *name)
{
	char	   *s = get_string(object, name);
	char	   *end;
	long long	v;

	if (s == NULL)
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	return (errno != 0 || end == s || *end != '\0') ? -1 : (int64) v;
}

/*
 * The event (or transaction event) of a message: the payload of Kafka
 * Connect's schema wrapper, or the bare object; NULL for a null value or
 * anything that is not a JSON object.  A JSON Schema serializer's 5-byte
 * prefix (magic 0, schema id) is skipped.
 */
static JsonbContainer *
message_object(rd_kafka_message_t *msg)
{
	const char *data = msg->payload;
	size_t		len = msg->len;
	char	   *copy;
	JsonLexContext *lex;
	Jsonb	   *jb;
	JsonbContainer *root;
	JsonbContainer *payload;

	if (data == NULL)
		return NULL;
	if (len > 5 && data[0] == '\0')
	{
		data += 5;
		len -= 5;
	}
	if (!pg_verifymbstr(data, (int) len, true))
		return NULL;
	copy = pnstrdup(data, len);
	lex = eoi_json_lexer(copy, (int) len, GetDatabaseEncoding(), true);
	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
		return NULL;
	jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(copy)));
	if (!JB_ROOT_IS_OBJECT(jb))
		return NULL;
	root = &jb->root;
	payload = get_container(root, "payload", false);
	if (payload != NULL && JsonContainerSize(root) == 2 &&
		(get_container(root, "schema", false) != NULL))
		return payload;
	return root;
}

char *
eoi_cdc_source_table(JsonbContainer *event)
{
	char	   *db;
	char	   *schema;
	char	   *table;

	eoi_cdc_source_names(eoi_cdc_source_block(event), &db, &schema, &table);
	if (schema == NULL)
		schema = db;
	if (table == NULL)
		return NULL;
	return schema ? psprintf("%s.%s", schema, table) : table;
}

/* An event's source block, or NULL. */
JsonbContainer *
eoi_cdc_source_block(JsonbContainer *event)
{
	return get_container(event, "source", false);
}

/* The db, schema and table a source block (or NULL) names, each NULL if it does not. */
void
eoi_cdc_source_names(JsonbContainer *source, char **db, char **schema, char **table)
{
	*db = get_string(source, "db");
	*schema = get_string(source, "schema");
	*table = get_string(source, "table");
}

bool
eoi_cdc_has_transaction(JsonbContainer *event)
{
	return get_container(event, "transaction", false) != NULL;
}

/* ---- classifying the batch ---- */

static int
collection_index(Cut *cut, const char *name)
{
	if (name == NULL)
		return -1;
	for (int c = 0; c < cut->ncolls; c++)
		if (strcmp(cut->colls[c], name) == 0)
			return c;
	return -1;
}

static void
txid_check(const char *txid, rd_kafka_message_t *msg, const char *topic)
{
	if (strlen(txid) >= TXID_LEN)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("transaction id of %zu bytes is too long (at most %d)", strlen(txid), TXID_LEN - 1),
				 errcontext(EOI_MESSAGE_CONTEXT,
							topic, msg->partition, (long long) msg->offset)));
}

static bool
all_digits(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/*
 * The name under which a transaction's BEGIN, END and events are matched:
 * the txid of PostgreSQL's "txid:lsn" (the LSN differs from message to
 * message), any other id whole.  Cuts `id` in place.
 */
static char *
txn_key(char *id)
{
	char	   *colon = strchr(id, ':');

	if (colon != NULL && all_digits(id, colon - id) && all_digits(colon + 1, strlen(colon + 1)))
		*colon = '\0';
	return id;
}

/* The LSN of an id "txid:lsn" (a message's own), or 0 for any other id. */
static uint64
id_lsn(const char *id)
{
	const char *colon = strchr(id, ':');
	char	   *end;
	unsigned long long lsn;

	if (colon == NULL || !all_digits(id, colon - id) || !all_digits(colon + 1, strlen(colon + 1)))
		return 0;
	errno = 0;
	lsn = strtoull(colon + 1, &end, 10);
	return (errno != 0 || *end != '\0') ? 0 : (uint64) lsn;
}

static void
bad_transaction_event(rd_kafka_message_t *msg, const char *topic, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("message of the transaction topic \"%s\" is not a Debezium transaction event: %s", topic, what),
			 errdetail("Kafka message at partition %d offset %lld.", msg->partition, (long long) msg->offset),
			 errhint("The transaction topic holds only Debezium's BEGIN and END events (provide.transaction.metadata=true); with transactions => 'batch' the job ignores it.")));
}

static void
classify_transaction_event(Cut *cut, rd_kafka_message_t *msg, const char *topic, MsgInfo *mi)
{
	JsonbContainer *ev = message_object(msg);
	char	   *status;
	JsonbContainer *colls;

	if (msg->partition != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("transaction topic \"%s\" has more than one partition", topic),
				 errdetail("Only a topic of one partition keeps Debezium's BEGIN and END events in commit order."),
				 errhint("Create the transaction topic with one partition before the connector starts, or use transactions => 'batch'.")));
	if (msg->payload == NULL)
	{
		mi->kind = MSG_ALONE;
		return;
	}
	if (ev == NULL)
		bad_transaction_event(msg, topic, "not a JSON object");
	status = get_string(ev, "status");
	mi->txid = get_string(ev, "id");
	if (status == NULL || mi->txid == NULL)
		bad_transaction_event(msg, topic, "no status or no id");
	txid_check(mi->txid, msg, topic);
	mi->id = pstrdup(mi->txid);
	mi->txid = txn_key(mi->txid);
	mi->lsn = id_lsn(mi->id);
	if (strcmp(status, "BEGIN") == 0)
	{
		mi->kind = MSG_BEGIN;
		return;
	}
	if (strcmp(status, "END") != 0)
		bad_transaction_event(msg, topic, psprintf("status \"%s\"", status));
	mi->kind = MSG_END;
	mi->expected = palloc0(sizeof(int64) * Max(cut->ncolls, 1));
	colls = get_container(ev, "data_collections", true);
	if (colls == NULL && get_int(ev, "event_count") > 0)
		bad_transaction_event(msg, topic, "an END without data_collections");
	for (int i = 0; colls != NULL && i < (int) JsonContainerSize(colls); i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(colls, i);
		int			c;
		int64		count;

		if (e == NULL || e->type != jbvBinary || !JsonContainerIsObject(e->val.binary.data))
			bad_transaction_event(msg, topic, "an element of data_collections is not an object");
		c = collection_index(cut, get_string(e->val.binary.data, "data_collection"));
		count = get_int(e->val.binary.data, "event_count");
		if (count < 0 || count > (int64) 100 * 1000 * 1000)
			bad_transaction_event(msg, topic, "an event_count of data_collections is not a count");
		if (c >= 0)
			mi->expected[c] += count;
	}
}

/*
 * The LSN of the last commit before the event's transaction: the first of
 * source.sequence of Debezium's PostgreSQL connector, the LSN its ENDs'
 * ids carry; 0 if the event has none.
 */
static uint64
prior_commit(JsonbContainer *ev)
{
	JsonbContainer *source = get_container(ev, "source", false);
	char	   *connector;
	char	   *sequence;
	EoiSourcePosition pos;

	if (source == NULL ||
		(connector = get_string(source, "connector")) == NULL ||
		strcmp(connector, "postgresql") != 0 ||
		(sequence = get_string(source, "sequence")) == NULL ||
		!eoi_parse_source_sequence(sequence, strlen(sequence), &pos))
		return 0;
	return pos.commit_lsn;
}

static void
classify_event(Cut *cut, rd_kafka_message_t *msg, const char *topic, MsgInfo *mi)
{
	JsonbContainer *ev = message_object(msg);
	JsonbContainer *txn = get_container(ev, "transaction", false);

	mi->kind = MSG_ALONE;
	if (txn == NULL || (mi->txid = get_string(txn, "id")) == NULL)
		return;
	txid_check(mi->txid, msg, topic);
	mi->id = pstrdup(mi->txid);
	mi->txid = txn_key(mi->txid);
	mi->kind = MSG_EVENT;
	mi->order = get_int(txn, "data_collection_order");
	mi->coll = collection_index(cut, eoi_cdc_source_table(ev));
	mi->prior_commit = prior_commit(ev);
}

static int
part_of(Cut *cut, const char *topic, int32 partition)
{
	for (int p = cut->nparts - 1; p >= 0; p--)
		if (cut->parts[p].partition == partition && strcmp(cut->parts[p].topic, topic) == 0)
			return p;
	cut->parts[cut->nparts].topic = topic;
	cut->parts[cut->nparts].partition = partition;
	cut->parts[cut->nparts].is_txn = strcmp(topic, cut->job->txn_topic) == 0;
	cut->parts[cut->nparts].msgs = palloc(sizeof(int) * cut->batch->n);
	return cut->nparts++;
}

static void
classify(Cut *cut)
{
	EoiBatch   *batch = cut->batch;
	int			last = -1;

	for (int i = 0; i < batch->n; i++)
	{
		rd_kafka_message_t *msg = batch->messages[i];
		const char *topic = eoi_message_topic(batch, i);
		MsgInfo    *mi = &cut->info[i];
		int			p;

		/* messages come in runs of one partition */
		if (last >= 0 && cut->parts[last].partition == msg->partition &&
			strcmp(cut->parts[last].topic, topic) == 0)
			p = last;
		else
			p = last = part_of(cut, topic, msg->partition);
		cut->parts[p].msgs[cut->parts[p].len++] = i;
		mi->coll = -1;
		if (cut->parts[p].is_txn)
			classify_transaction_event(cut, msg, topic, mi);
		else
			classify_event(cut, msg, topic, mi);
	}
}

/* ---- the cut ---- */

static TxState *
tx_lookup(Cut *cut, const char *txid, bool create)
{
	bool		found;
	TxState    *tx = hash_search(cut->txs, txid, create ? HASH_ENTER : HASH_FIND, &found);

	if (tx != NULL && !found)
	{
		tx->included = false;
		tx->expected = NULL;
		tx->missing = 0;
	}
	return tx;
}

/* The END of `tx` is in the cut: its events count from now on. */
static void
include(Cut *cut, TxState *tx, const int64 *expected)
{
	if (tx->included)
		return;					/* an END sent again: the first one counts */
	tx->included = true;
	tx->expected = palloc(sizeof(int64) * Max(cut->ncolls, 1));
	tx->have = palloc0(sizeof(int64) * Max(cut->ncolls, 1));
	tx->seen = palloc0(sizeof(bool *) * Max(cut->ncolls, 1));
	for (int c = 0; c < cut->ncolls; c++)
	{
		tx->expected[c] = expected[c];
		tx->seen[c] = palloc0(sizeof(bool) * Max(expected[c], 1));
		tx->missing += expected[c];
	}
	if (tx->missing > 0)
		cut->incomplete++;
}

/*
 * The END of `tx` came again after a batch committed the transaction: it
 * is whole as it is, and the events of it that come again pass.
 */
static void
include_committed(Cut *cut, TxState *tx)
{
	if (tx->included)
		return;
	tx->included = true;
	tx->expected = palloc0(sizeof(int64) * Max(cut->ncolls, 1));
	tx->have = palloc0(sizeof(int64) * Max(cut->ncolls, 1));
	tx->seen = palloc0(sizeof(bool *) * Max(cut->ncolls, 1));
}

static void
count_event(Cut *cut, TxState *tx, const MsgInfo *mi)
{
	if (mi->coll < 0 || mi->order < 1 || mi->order > tx->expected[mi->coll] ||
		tx->seen[mi->coll][mi->order - 1])
		return;
	tx->seen[mi->coll][mi->order - 1] = true;
	tx->have[mi->coll]++;
	if (--tx->missing == 0)
		cut->incomplete--;
}

static bool committed_already(const MsgInfo *mi);

/* Extend each data partition's part of the cut as far as it may go. */
static void
advance(Cut *cut)
{
	for (int p = 0; p < cut->nparts; p++)
	{
		Part	   *part = &cut->parts[p];

		if (part->is_txn)
			continue;
		while (part->ptr < part->len)
		{
			MsgInfo    *mi = &cut->info[part->msgs[part->ptr]];

			if (mi->kind == MSG_EVENT)
			{
				TxState    *tx = tx_lookup(cut, mi->txid, false);

				if (tx != NULL && tx->included)
					count_event(cut, tx, mi);
				else if (!committed_already(mi))
					break;
			}
			part->ptr++;
		}
	}
}

/* Why the batch cannot end after the transactions that follow the cut. */
static char *
explain(Cut *cut, Part *txn, int from)
{
	for (int j = from; txn != NULL && j < txn->len; j++)
	{
		MsgInfo    *mi = &cut->info[txn->msgs[j]];
		TxState    *tx;

		if (mi->kind != MSG_END)
			continue;
		tx = tx_lookup(cut, mi->txid, false);
		if (tx != NULL && tx->missing > 0)
		{
			StringInfoData buf;
			bool		first = true;

			initStringInfo(&buf);
			appendStringInfo(&buf, "Source transaction %s: its END announces", mi->id);
			for (int c = 0; c < cut->ncolls; c++)
				if (tx->expected[c] > 0)
				{
					appendStringInfo(&buf, "%s " INT64_FORMAT " events of %s (" INT64_FORMAT " in the batch)",
									 first ? "" : ",", tx->expected[c], cut->colls[c], tx->have[c]);
					first = false;
				}
			appendStringInfoString(&buf, ", counting each partition's events up to the first of a later transaction.");
			return buf.data;
		}
	}
	for (int p = 0; p < cut->nparts; p++)
	{
		Part	   *part = &cut->parts[p];

		if (!part->is_txn && part->ptr < part->len)
			return psprintf("Source transaction %s (an event at topic \"%s\" partition %d offset %lld): its END is not in the batch's part of the transaction topic \"%s\".",
							cut->info[part->msgs[part->ptr]].id, part->topic, part->partition,
							(long long) cut->batch->messages[part->msgs[part->ptr]]->offset,
							cut->job->txn_topic);
	}
	return pstrdup("");
}

/* ---- fetching aligned: partitions that ran ahead wait ---- */

typedef struct PartitionId
{
	char	   *topic;
	int32		partition;
} PartitionId;

static PartitionId *blocked = NULL;	/* of the last cut */
static int	nblocked = 0;
static PartitionId *paused = NULL;
static int	npaused = 0;
static int	id_capacity = 0;

static void
ids_reserve(int n)
{
	if (n <= id_capacity)
		return;
	id_capacity = Max(n, 64);
	blocked = blocked ? repalloc(blocked, sizeof(PartitionId) * id_capacity) :
		MemoryContextAlloc(TopMemoryContext, sizeof(PartitionId) * id_capacity);
	paused = paused ? repalloc(paused, sizeof(PartitionId) * id_capacity) :
		MemoryContextAlloc(TopMemoryContext, sizeof(PartitionId) * id_capacity);
}

static bool
ids_contain(PartitionId *ids, int n, const char *topic, int32 partition)
{
	for (int i = 0; i < n; i++)
		if (ids[i].partition == partition && strcmp(ids[i].topic, topic) == 0)
			return true;
	return false;
}

/*
 * With every END of the batch counted, a data partition whose events stop
 * at one of a transaction not yet ended has delivered every event of the
 * transactions before it (each partition is in commit order): it need not
 * be read until that END comes.  And while an END in the batch waits for
 * its events, the transaction topic need not be read further.  Fetching only
 * the others keeps one partition's backlog from filling the batch while
 * another holds the rest of a transaction.
 */
static void
note_blocked(Cut *cut)
{
	for (int i = 0; i < nblocked; i++)
		pfree(blocked[i].topic);
	nblocked = 0;
	ids_reserve(cut->nparts + npaused);
	for (int p = 0; p < cut->nparts; p++)
		if (cut->parts[p].is_txn ? cut->incomplete > 0 : cut->parts[p].ptr < cut->parts[p].len)
		{
			blocked[nblocked].topic = MemoryContextStrdup(TopMemoryContext, cut->parts[p].topic);
			blocked[nblocked++].partition = cut->parts[p].partition;
		}
}

/* Pause the partitions the last cut found blocked, resume the others paused. */
void
eoi_txn_align_fetching(EoiKafka *kafka)
{
	int			kept = 0;

	ids_reserve(npaused + nblocked);
	for (int i = 0; i < npaused; i++)
	{
		if (ids_contain(blocked, nblocked, paused[i].topic, paused[i].partition))
		{
			paused[kept++] = paused[i];
			continue;
		}
		eoi_kafka_pause(kafka, paused[i].topic, paused[i].partition, false);
		pfree(paused[i].topic);
	}
	npaused = kept;
	for (int i = 0; i < nblocked; i++)
		if (!ids_contain(paused, npaused, blocked[i].topic, blocked[i].partition))
		{
			eoi_kafka_pause(kafka, blocked[i].topic, blocked[i].partition, true);
			paused[npaused].topic = MemoryContextStrdup(TopMemoryContext, blocked[i].topic);
			paused[npaused++].partition = blocked[i].partition;
		}
}

/* ---- transactions committed already ---- */

static uint64 committed_end_lsn = 0;	/* of the last END committed */
static bool committed_known = false;	/* read from eoingest.offsets yet? */
static uint64 cut_end_lsn = 0;	/* of the last END in the last cut */

/*
 * Read the LSN of the last END the job committed (the transaction topic's
 * source_lsn), in the caller's transaction: once, before the first cut of
 * a worker.
 */
void
eoi_txn_load_committed(const EoiJob *job)
{
	committed_end_lsn = eoi_offsets_read_txn_end_lsn(job, job->txn_topic);
	committed_known = true;
}

/*
 * Is the event of a transaction a batch committed already, though its END
 * is not in the cut?  Debezium sends again, after Kafka Connect restarts,
 * the events of a transaction whose END an earlier batch committed (as
 * include_committed takes it), and a cut may end before the last of them.
 * Transactions commit in order: one whose prior commit is below the last
 * END committed committed at or before that END.
 */
static bool
committed_already(const MsgInfo *mi)
{
	return mi->prior_commit != 0 && mi->prior_commit < committed_end_lsn;
}

bool
eoi_txn_committed_known(void)
{
	return committed_known;
}

/* The batch of the last cut committed: its ENDs are committed now. */
void
eoi_txn_cut_committed(void)
{
	committed_end_lsn = Max(committed_end_lsn, cut_end_lsn);
}

/*
 * The LSN of a message of the transaction topic if it is an END of an id
 * "txid:lsn", else 0: cdc.c stores the largest of a batch's with the
 * topic's offset.  Reads the message as the cut did; what the cut let
 * through is readable.
 */
uint64
eoi_txn_end_lsn(rd_kafka_message_t *msg)
{
	JsonbContainer *ev = message_object(msg);
	char	   *status = get_string(ev, "status");
	char	   *id = get_string(ev, "id");

	if (status == NULL || id == NULL || strcmp(status, "END") != 0)
		return 0;
	return id_lsn(id);
}

/*
 * Move the messages the batch may commit (whole source transactions, and
 * what stands alone before them) to its front, each partition's in order;
 * returns how many.  *why says what keeps the rest out.
 */
int
eoi_txn_cut(const EoiJob *job, EoiBatch *batch, char **why)
{
	Cut			cut = {0};
	HASHCTL		ctl = {0};
	int		   *best;
	int			best_txn = 0;
	Part	   *txn = NULL;
	rd_kafka_message_t **ordered;
	bool	   *in;
	int			k = 0;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;

	Assert(committed_known);
	cut_end_lsn = committed_end_lsn;
	cut.job = job;
	cut.batch = batch;
	cut.info = palloc0(sizeof(MsgInfo) * Max(batch->n, 1));
	cut.parts = palloc0(sizeof(Part) * Max(batch->n, 1));
	if (job->targets != NULL)
	{
		int			ncolls = 0;

		cut.colls = palloc(sizeof(char *) * Max(JsonContainerSize(&job->targets->root), 1));
		it = JsonbIteratorInit(&job->targets->root);
		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
			if (tok == WJB_KEY)
				cut.colls[ncolls++] = pnstrdup(v.val.string.val, v.val.string.len);
		cut.ncolls = ncolls;
	}
	ctl.keysize = TXID_LEN;
	ctl.entrysize = sizeof(TxState);
	ctl.hcxt = CurrentMemoryContext;
	cut.txs = hash_create("eoingest source transactions", 256, &ctl,
						  HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);

	classify(&cut);
	best = palloc0(sizeof(int) * Max(cut.nparts, 1));
	for (int p = 0; p < cut.nparts; p++)
		if (cut.parts[p].is_txn)
			txn = &cut.parts[p];

	advance(&cut);
	for (int p = 0; p < cut.nparts; p++)
		best[p] = cut.parts[p].ptr;
	for (int j = 0; txn != NULL && j < txn->len; j++)
	{
		MsgInfo    *mi = &cut.info[txn->msgs[j]];

		if (mi->kind != MSG_END)
			continue;
		if (mi->lsn != 0 && mi->lsn <= committed_end_lsn)
			include_committed(&cut, tx_lookup(&cut, mi->txid, true));
		else
			include(&cut, tx_lookup(&cut, mi->txid, true), mi->expected);
		advance(&cut);
		if (cut.incomplete == 0)
		{
			best_txn = j + 1;
			cut_end_lsn = Max(cut_end_lsn, mi->lsn);
			for (int p = 0; p < cut.nparts; p++)
				best[p] = cut.parts[p].ptr;
		}
	}
	if (txn != NULL)
		best[txn - cut.parts] = best_txn;
	note_blocked(&cut);

	/* the cut first, then the rest, each in the batch's order */
	in = palloc0(sizeof(bool) * Max(batch->n, 1));
	for (int p = 0; p < cut.nparts; p++)
		for (int m = 0; m < best[p]; m++)
			in[cut.parts[p].msgs[m]] = true;
	ordered = palloc(sizeof(rd_kafka_message_t *) * Max(batch->n, 1));
	for (int i = 0; i < batch->n; i++)
		if (in[i])
			ordered[k++] = batch->messages[i];
	for (int i = 0, r = k; i < batch->n; i++)
		if (!in[i])
			ordered[r++] = batch->messages[i];
	memcpy(batch->messages, ordered, sizeof(rd_kafka_message_t *) * batch->n);

	/* for the explanation: each partition's cut as chosen */
	for (int p = 0; p < cut.nparts; p++)
		cut.parts[p].ptr = best[p];
	*why = k < batch->n ? explain(&cut, txn, best_txn) : pstrdup("");
	return k;
}

/* ---- messages read past the cut, for the next batch ---- */

static rd_kafka_message_t **pending = NULL;
static int	npending = 0;
static int	pending_capacity = 0;

int
eoi_txn_pending_count(void)
{
	return npending;
}

/* Messages [from, n) of the batch wait for the next one, which will own them. */
void
eoi_txn_keep_pending(EoiBatch *batch, int from)
{
	int			more = batch->n - from;

	if (npending + more > pending_capacity)
	{
		pending_capacity = Max(npending + more, 1024);
		pending = pending == NULL ?
			MemoryContextAllocHuge(TopMemoryContext, sizeof(rd_kafka_message_t *) * pending_capacity) :
			repalloc_huge(pending, sizeof(rd_kafka_message_t *) * pending_capacity);
	}
	memcpy(pending + npending, batch->messages + from, sizeof(rd_kafka_message_t *) * more);
	npending += more;
	batch->n = from;
}

/* Hand the kept messages (at most max) to a new batch, which owns them now. */
int
eoi_txn_take_pending(rd_kafka_message_t **into, int max)
{
	int			n = Min(npending, max);

	memcpy(into, pending, sizeof(rd_kafka_message_t *) * n);
	memmove(pending, pending + n, sizeof(rd_kafka_message_t *) * (npending - n));
	npending -= n;
	return n;
}

/* The partitions are assigned again (at the stored offsets): drop what was kept. */
void
eoi_txn_forget_pending(void)
{
	for (int i = 0; i < npending; i++)
		rd_kafka_message_destroy(pending[i]);
	npending = 0;
	for (int i = 0; i < nblocked; i++)
		pfree(blocked[i].topic);
	nblocked = 0;				/* the next align resumes every partition paused */
}
