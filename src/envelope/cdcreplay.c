/*-------------------------------------------------------------------------
 *
 * cdcreplay.c
 *	  Change events that Debezium sends again after Kafka Connect restarts,
 *	  recognised by their source and position and skipped.
 *
 * Kafka Connect flushes a source connector's offsets every
 * offset.flush.interval.ms.  After a crash it starts the connector from the
 * offsets it last flushed, and the connector sends the events since then a
 * second time, at new Kafka offsets.  Applied again, those events would take
 * the target back to older rows beside newer ones until the stream caught
 * up: a state the source never had.
 *
 * Debezium's PostgreSQL connector writes in each event's source block
 * sequence = ["<LSN of the last commit before the event's transaction>",
 * "<LSN of the change>"], and ts_ms, the commit time of the event's
 * transaction.  Events of one source (name: the connector's logical name,
 * db: its database) come in commit order and the changes of one
 * transaction in LSN order, so along each partition the positions of one
 * source never go down.  Some events share a position: the delete and the
 * create that one key change becomes, the rows of one multi-row insert (a
 * COPY).  Several sources may write into one topic (a routing transform
 * merging shards): each has its own positions.
 *
 * An event whose position is below the last one applied from its source and
 * partition, and whose commit time is no more than SOURCE_CLOCK_MARGIN
 * after that one's, was applied already: it is skipped (and counted).  An
 * event at the last position was applied already if its fingerprint (its
 * op and message key) is one of those applied there: skipped too, so that
 * cdc_mode history does not append it twice.  An event at the last
 * position with another fingerprint, or none (no message key), is applied:
 * at worst again, which leaves the final state as it was.  The
 * fingerprints of at most MAX_AT_POSITION events of one position are kept.
 * An event below the last position but committed
 * later than that starts a new history of the source: a new cluster, a
 * restore, or a failover to a standby that lost the old primary's last
 * transactions, whose LSNs start again lower.  It is applied, and its
 * position becomes the last one.  When in doubt the filter applies: an
 * event applied twice leaves the final state as it was, a new one skipped
 * is lost.  The margin allows for commit times that go back a little along
 * the log (a commit's time is taken before its WAL record is inserted).
 *
 * Events without a usable position are applied as they come and leave the
 * positions as they were: snapshot reads (op r, the current rows), events
 * of other connectors, an absent, null or unreadable sequence, name, db or
 * ts_ms, a null last commit (the first transaction after the connector's
 * first start), and events of a source beyond the first MAX_SOURCES of a
 * partition.
 *
 * The last positions, with the fingerprints of the events applied at them,
 * are kept in eoingest.source_positions, the count of
 * events skipped per partition in eoingest.offsets, read when a batch is
 * applied and written at its end, in its transaction: a batch, or a slice
 * of one tried while isolating a bad record, that rolls back leaves them as
 * they were.  reset_offsets deletes them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlogdefs.h"
#include "common/hashfn.h"
#include "utils/timestamp.h"

#include "envelope/cdcreplay.h"
#include "store/offsets.h"

/* How much later an event sent again may say its transaction committed. */
#define SOURCE_CLOCK_MARGIN ((TimestampTz) USECS_PER_SEC)

/* The most sources whose positions one partition keeps. */
#define MAX_SOURCES 64

/* The most fingerprints of events at one position a source keeps. */
#define MAX_AT_POSITION 1000

typedef struct ReplaySource
{
	char	   *topic;
	int32		partition;
	char	   *name;
	char	   *db;
	bool		known;			/* a position is stored, or was applied */
	EoiSourcePosition last;		/* the last position applied */
	uint32	   *at_last;		/* the fingerprints of the events applied there */
	int			nat_last;
	int			at_last_capacity;
	bool		changed;		/* last differs from the stored one */
	int64		skipped;		/* in this batch */
	int64		histories;		/* new histories begun in this batch */
	EoiSourcePosition left;		/* the position the first of them left */
	EoiSourcePosition began;	/* and the position it began at */
} ReplaySource;

struct EoiReplayFilter
{
	const EoiJob *job;
	MemoryContext cxt;
	ReplaySource *sources;
	int			nsources;
	int			capacity;
	int			recent;			/* the source found last: events come in runs */
	int64		unkept;			/* events of sources beyond MAX_SOURCES */
};

/* ---- source.sequence ---- */

static const char *
skip_space(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* An LSN as Debezium writes it: a JSON string of decimal digits. */
static const char *
read_lsn(const char *p, const char *end, uint64 *lsn)
{
	uint64		v = 0;
	int			digits = 0;

	if (p >= end || *p != '"')
		return NULL;
	for (p++; p < end && *p >= '0' && *p <= '9'; p++, digits++)
	{
		int			d = *p - '0';

		if (v > (PG_UINT64_MAX - d) / 10)
			return NULL;
		v = v * 10 + d;
	}
	if (digits == 0 || p >= end || *p != '"')
		return NULL;
	*lsn = v;
	return p + 1;
}

/*
 * The position in source.sequence's text, ["<commit LSN>","<LSN>"]; false
 * for anything else, a null commit LSN included.
 */
bool
eoi_parse_source_sequence(const char *text, size_t len, EoiSourcePosition *pos)
{
	const char *end = text + len;
	const char *p = skip_space(text, end);

	if (p >= end || *p++ != '[')
		return false;
	if ((p = read_lsn(skip_space(p, end), end, &pos->commit_lsn)) == NULL)
		return false;
	p = skip_space(p, end);
	if (p >= end || *p++ != ',')
		return false;
	if ((p = read_lsn(skip_space(p, end), end, &pos->lsn)) == NULL)
		return false;
	p = skip_space(p, end);
	if (p >= end || *p++ != ']')
		return false;
	return skip_space(p, end) == end;
}

/*
 * The commit time in source.ts_ms's text: milliseconds since 1970, as a
 * JSON integer within timestamptz's range; false for anything else.
 */
bool
eoi_parse_source_time(const char *text, size_t len, TimestampTz *time)
{
	const char *p = text;
	const char *end = text + len;
	bool		negative = false;
	int64		ms = 0;

	if (p < end && *p == '-')
	{
		negative = true;
		p++;
	}
	if (p >= end || end - p > 15)
		return false;			/* beyond 30,000 years either way */
	for (; p < end; p++)
	{
		if (*p < '0' || *p > '9')
			return false;
		ms = ms * 10 + (*p - '0');
	}
	if (negative)
		ms = -ms;
	*time = ms * INT64CONST(1000) -
		(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
	return IS_VALID_TIMESTAMP(*time);
}

/* A source.name or source.db the filter keeps: not empty, not too long, no NUL. */
bool
eoi_source_name_usable(const char *name, size_t len)
{
	return len > 0 && len <= EOI_SOURCE_NAME_MAX && memchr(name, '\0', len) == NULL;
}

static int
position_cmp(const EoiSourcePosition *a, const EoiSourcePosition *b)
{
	if (a->commit_lsn != b->commit_lsn)
		return a->commit_lsn < b->commit_lsn ? -1 : 1;
	if (a->lsn != b->lsn)
		return a->lsn < b->lsn ? -1 : 1;
	return 0;
}

/*
 * The fingerprint of a change event, which tells it from the others at its
 * position: its op and its message key (a key change's delete and create
 * differ in both, the rows of a multi-row insert in their keys).  0 for an
 * event without a key: it cannot be told from another.
 */
uint32
eoi_source_event_fingerprint(const char *op, const char *key, size_t key_len)
{
	uint32		h;

	if (key == NULL || key_len == 0)
		return 0;
	h = hash_combine(hash_bytes((const unsigned char *) key, (int) Min(key_len, (size_t) PG_INT32_MAX)),
					 hash_bytes((const unsigned char *) op, (int) strlen(op)));
	return h != 0 ? h : 1;
}

/* ---- the filter ---- */

static bool
applied_at_last(const ReplaySource *s, uint32 fingerprint)
{
	for (int i = 0; i < s->nat_last; i++)
		if (s->at_last[i] == fingerprint)
			return true;
	return false;
}

static void
note_at_last(EoiReplayFilter *f, ReplaySource *s, uint32 fingerprint)
{
	if (fingerprint == 0 || s->nat_last >= MAX_AT_POSITION)
		return;
	if (s->nat_last >= s->at_last_capacity)
	{
		s->at_last_capacity = Max(s->at_last_capacity * 2, 4);
		s->at_last = s->at_last == NULL ?
			MemoryContextAlloc(f->cxt, sizeof(uint32) * s->at_last_capacity) :
			repalloc(s->at_last, sizeof(uint32) * s->at_last_capacity);
	}
	s->at_last[s->nat_last++] = fingerprint;
}

static ReplaySource *
add_source(EoiReplayFilter *f, const char *topic, int32 partition,
		   const char *name, const char *db)
{
	ReplaySource *s;

	if (f->nsources >= f->capacity)
	{
		f->capacity = Max(f->capacity * 2, 8);
		f->sources = f->sources == NULL ?
			MemoryContextAlloc(f->cxt, sizeof(ReplaySource) * f->capacity) :
			repalloc(f->sources, sizeof(ReplaySource) * f->capacity);
	}
	s = &f->sources[f->nsources++];
	memset(s, 0, sizeof(ReplaySource));
	s->topic = MemoryContextStrdup(f->cxt, topic);
	s->partition = partition;
	s->name = MemoryContextStrdup(f->cxt, name);
	s->db = MemoryContextStrdup(f->cxt, db);
	return s;
}

/*
 * The source's entry for the partition, added if new; NULL when the
 * partition keeps MAX_SOURCES already.
 */
static ReplaySource *
find_source(EoiReplayFilter *f, const char *topic, int32 partition,
			const char *name, const char *db)
{
	int			in_partition = 0;

	for (int n = 0; n < f->nsources; n++)
	{
		int			i = (f->recent + n) % f->nsources;
		ReplaySource *s = &f->sources[i];

		if (s->partition != partition || strcmp(s->topic, topic) != 0)
			continue;
		if (strcmp(s->name, name) == 0 && strcmp(s->db, db) == 0)
		{
			f->recent = i;
			return s;
		}
		in_partition++;
	}
	if (in_partition >= MAX_SOURCES)
		return NULL;
	f->recent = f->nsources;
	return add_source(f, topic, partition, name, db);
}

/* The job's stored positions, for a batch about to be applied. */
EoiReplayFilter *
eoi_replay_filter_begin(const EoiJob *job)
{
	EoiReplayFilter *f = palloc0(sizeof(EoiReplayFilter));
	EoiOffsetSourcePosition *stored;
	int			n;

	f->job = job;
	f->cxt = CurrentMemoryContext;
	n = eoi_offsets_read_source_positions(job, &stored);
	for (int i = 0; i < n; i++)
	{
		ReplaySource *s = add_source(f, stored[i].topic, stored[i].partition,
									 stored[i].source_name, stored[i].source_db);

		s->last.commit_lsn = stored[i].commit_lsn;
		s->last.lsn = stored[i].lsn;
		s->last.commit_time = stored[i].commit_time;
		for (int e = 0; e < stored[i].nevents; e++)
			note_at_last(f, s, stored[i].events[e]);
		s->known = true;
	}
	return f;
}

/*
 * Is this event of the partition one that was applied already?  If not,
 * its position becomes its source's last one.
 */
bool
eoi_replay_filter_skip(EoiReplayFilter *filter, const char *topic, int32 partition,
					   const EoiSourcePosition *pos)
{
	ReplaySource *s = find_source(filter, topic, partition, pos->name, pos->db);
	int			cmp;

	if (s == NULL)
	{
		filter->unkept++;
		return false;
	}
	cmp = s->known ? position_cmp(pos, &s->last) : 1;
	if (cmp == 0 && pos->fingerprint != 0 && applied_at_last(s, pos->fingerprint))
	{
		s->skipped++;
		return true;
	}
	if (cmp < 0)
	{
		if (pos->commit_time <= s->last.commit_time + SOURCE_CLOCK_MARGIN)
		{
			s->skipped++;
			return true;
		}
		if (s->histories++ == 0)
		{
			s->left = s->last;
			s->began = *pos;
		}
	}
	if (cmp != 0)
		s->nat_last = 0;		/* a new position */
	note_at_last(filter, s, pos->fingerprint);
	s->last = *pos;
	s->last.name = s->name;
	s->last.db = s->db;
	s->known = true;
	s->changed = true;
	return false;
}

static void
report_source(const EoiJob *job, const ReplaySource *s)
{
	if (s->skipped > 0)
		ereport(LOG,
				(errmsg("job \"%s\" skipped change events of source \"%s\" that Debezium sent again",
						job->name, s->name),
				 errdetail_plural("The job skipped %lld event of database \"%s\" in topic \"%s\" partition %d: its source position comes before %X/%X %X/%X, the last one applied, and it committed no later than that one.",
								  "The job skipped %lld events of database \"%s\" in topic \"%s\" partition %d: their source positions come before %X/%X %X/%X, the last one applied, and they committed no later than that one.",
								  (unsigned long) s->skipped,
								  (long long) s->skipped, s->db, s->topic, s->partition,
								  LSN_FORMAT_ARGS((XLogRecPtr) s->last.commit_lsn),
								  LSN_FORMAT_ARGS((XLogRecPtr) s->last.lsn))));
	if (s->histories > 0)
		ereport(LOG,
				(errmsg("job \"%s\" applied change events of source \"%s\" as a new history of the source",
						job->name, s->name),
				 errdetail("In database \"%s\", topic \"%s\" partition %d, the event at %X/%X %X/%X came after %X/%X %X/%X, the last one applied, and its transaction committed at %s, more than a second after that one's (%s).",
						   s->db, s->topic, s->partition,
						   LSN_FORMAT_ARGS((XLogRecPtr) s->began.commit_lsn),
						   LSN_FORMAT_ARGS((XLogRecPtr) s->began.lsn),
						   LSN_FORMAT_ARGS((XLogRecPtr) s->left.commit_lsn),
						   LSN_FORMAT_ARGS((XLogRecPtr) s->left.lsn),
						   pstrdup(timestamptz_to_str(s->began.commit_time)),
						   pstrdup(timestamptz_to_str(s->left.commit_time))),
				 errhint("The source's LSNs start again lower after it moves to another cluster, a restore, or a failover that lost the old primary's last transactions.")));
}

/* Store the positions the batch moved, in the batch's transaction. */
void
eoi_replay_filter_end(EoiReplayFilter *filter)
{
	for (int i = 0; i < filter->nsources; i++)
	{
		ReplaySource *s = &filter->sources[i];

		if (s->changed)
		{
			EoiOffsetSourcePosition pos = {
				s->topic, s->partition, s->name, s->db,
				s->last.commit_lsn, s->last.lsn, s->last.commit_time,
				s->nat_last, s->at_last
			};

			eoi_offsets_store_source_position(filter->job, &pos);
		}
		if (s->skipped > 0)
			eoi_offsets_add_replays_skipped(filter->job, s->topic, s->partition, s->skipped);
		report_source(filter->job, s);
	}
	if (filter->unkept > 0)
		ereport(LOG,
				(errmsg("job \"%s\" applied change events as they came", filter->job->name),
				 errdetail_plural("The job's partitions carry events of more than %d sources, and %lld change event was applied without a check. The positions of the first %d sources of a partition are kept; events of other sources are not checked for being sent again.",
								  "The job's partitions carry events of more than %d sources, and %lld change events were applied without a check. The positions of the first %d sources of a partition are kept; events of other sources are not checked for being sent again.",
								  (unsigned long) filter->unkept,
								  MAX_SOURCES, (long long) filter->unkept, MAX_SOURCES)));
}
