/*-------------------------------------------------------------------------
 *
 * cdcreplay.c
 *	  Change events that Debezium sends again after Kafka Connect restarts,
 *	  recognised by their source position and skipped.
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
 * "<LSN of the change>"].  Transactions come in commit order and the
 * changes of one in LSN order, so along each partition the positions never
 * go down; only the delete and the create that one key change becomes share
 * a position.  An event whose position is below the last one applied from
 * its partition was applied already: it is skipped (and counted).  An event
 * at the last position applied is applied again: nothing after it was, so
 * that changes nothing.
 *
 * Events without a position are applied as they come and leave the last
 * position as it was: snapshot reads (op r, the current rows), events of
 * other connectors, an absent, null or unreadable sequence, and a null last
 * commit (the first transaction after the connector's first start).
 *
 * The last position and the count are kept per partition in
 * eoingest.offsets, read when a batch is applied and written at its end, in
 * its transaction: a batch, or a slice of one tried while isolating a bad
 * record, that rolls back leaves them as they were.  reset_offsets clears
 * them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlogdefs.h"

#include "envelope/cdcreplay.h"
#include "store/offsets.h"

typedef struct ReplayPartition
{
	char	   *topic;
	int32		partition;
	bool		known;			/* a position is stored, or was applied */
	EoiSourcePosition last;		/* the last position applied */
	bool		changed;		/* last or skipped differ from the stored ones */
	int64		skipped;		/* in this batch */
} ReplayPartition;

struct EoiReplayFilter
{
	const EoiJob *job;
	MemoryContext cxt;
	ReplayPartition *parts;
	int			nparts;
	int			capacity;
	int			recent;			/* the partition found last: events come in runs */
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

static int
position_cmp(const EoiSourcePosition *a, const EoiSourcePosition *b)
{
	if (a->commit_lsn != b->commit_lsn)
		return a->commit_lsn < b->commit_lsn ? -1 : 1;
	if (a->lsn != b->lsn)
		return a->lsn < b->lsn ? -1 : 1;
	return 0;
}

/* ---- the filter ---- */

static ReplayPartition *
add_partition(EoiReplayFilter *f, const char *topic, int32 partition)
{
	ReplayPartition *p;

	if (f->nparts >= f->capacity)
	{
		f->capacity = Max(f->capacity * 2, 8);
		f->parts = f->parts == NULL ?
			MemoryContextAlloc(f->cxt, sizeof(ReplayPartition) * f->capacity) :
			repalloc(f->parts, sizeof(ReplayPartition) * f->capacity);
	}
	p = &f->parts[f->nparts++];
	memset(p, 0, sizeof(ReplayPartition));
	p->topic = MemoryContextStrdup(f->cxt, topic);
	p->partition = partition;
	return p;
}

static ReplayPartition *
find_partition(EoiReplayFilter *f, const char *topic, int32 partition)
{
	for (int n = 0; n < f->nparts; n++)
	{
		int			i = (f->recent + n) % f->nparts;
		ReplayPartition *p = &f->parts[i];

		if (p->partition == partition && strcmp(p->topic, topic) == 0)
		{
			f->recent = i;
			return p;
		}
	}
	f->recent = f->nparts;
	return add_partition(f, topic, partition);
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
		ReplayPartition *p = add_partition(f, stored[i].topic, stored[i].partition);

		p->last.commit_lsn = stored[i].commit_lsn;
		p->last.lsn = stored[i].lsn;
		p->known = true;
	}
	return f;
}

/*
 * Is this event of the partition one that was applied already?  If not,
 * its position becomes the partition's last one.
 */
bool
eoi_replay_filter_skip(EoiReplayFilter *filter, const char *topic, int32 partition,
					   const EoiSourcePosition *pos)
{
	ReplayPartition *p = find_partition(filter, topic, partition);

	p->changed = true;
	if (p->known && position_cmp(pos, &p->last) < 0)
	{
		p->skipped++;
		return true;
	}
	p->last = *pos;
	p->known = true;
	return false;
}

static void
store_partition(const EoiJob *job, const ReplayPartition *p)
{
	EoiOffsetSourcePosition pos = {p->topic, p->partition, p->last.commit_lsn, p->last.lsn};

	eoi_offsets_store_source_position(job, &pos, p->skipped);
	if (p->skipped > 0)
		ereport(LOG,
				(errmsg("job \"%s\" skipped %lld change events of topic \"%s\" partition %d that Debezium sent again",
						job->name, (long long) p->skipped, p->topic, p->partition),
				 errdetail("Their source positions come before %X/%X %X/%X, the last one applied.",
						   LSN_FORMAT_ARGS((XLogRecPtr) p->last.commit_lsn),
						   LSN_FORMAT_ARGS((XLogRecPtr) p->last.lsn))));
}

/* Store the positions the batch moved, in the batch's transaction. */
void
eoi_replay_filter_end(EoiReplayFilter *filter)
{
	for (int i = 0; i < filter->nparts; i++)
		if (filter->parts[i].changed)
			store_partition(filter->job, &filter->parts[i]);
}
