/*-------------------------------------------------------------------------
 *
 * partitions.c
 *	  Which partitions a worker owns, where it starts reading them, and
 *	  whether its topics have grown.
 *
 * Worker i of a job owns partition p when p % parallelism = i (or, with an
 * explicit partitions list, when p's place in the list is).  A job's first
 * positions follow its start_offset and are decided once for all its
 * workers; partitions added to a topic later start at their beginning.
 * The positions are PostgreSQL's (eoingest.offsets): the consumer is
 * assigned there by hand.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/txn.h"
#include "kafka/partitions.h"
#include "kafka/positions.h"
#include "store/offsets.h"

#define DISCOVERY_INTERVAL_MS	10000
#define METADATA_TIMEOUT_MS		5000

/* The owned position of (topic, partition), or NULL. */
EoiPosition *
eoi_partitions_find(EoiOwnership *o, const char *topic, int32 partition)
{
	for (int i = 0; i < o->nowned; i++)
		if (o->owned[i].partition == partition && strcmp(o->owned[i].topic, topic) == 0)
			return &o->owned[i];
	return NULL;
}

/* Does the job take partition p (all, or those its `partitions` name)? */
static bool
job_owns(const EoiJob *job, int32 p)
{
	return job->partitions == NIL || list_member_int(job->partitions, p);
}

/*
 * Which worker of the job owns partition p of `topic`: p % parallelism,
 * or, with an explicit list, the partition's place in the list %
 * parallelism, so that the listed partitions spread over the workers.  A
 * pattern's topics, often of one partition each, start at a place their
 * name's hash decides, so that they spread too; a partition's owner never
 * depends on which other topics match.
 */
static int
owner_index(const EoiJob *job, const char *topic, int32 p)
{
	uint64		first = 0;

	if (job->topic_pattern != NULL)
		first = hash_bytes((const unsigned char *) topic, strlen(topic));
	if (job->partitions == NIL)
		return (int) ((first + p) % job->parallelism);
	for (int i = 0; i < list_length(job->partitions); i++)
		if (list_nth_int(job->partitions, i) == p)
			return (int) ((first + i) % job->parallelism);
	return -1;
}

/* Kafka's topic names have at most 249 characters. */
#define TOPIC_NAME_SIZE 256

typedef struct KeptName
{
	char		name[TOPIC_NAME_SIZE];
} KeptName;

/* A topic's name, kept for the worker's life: positions point at it. */
static char *
kept_name(const char *name)
{
	static HTAB *names = NULL;
	bool		found;

	if (names == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(KeptName);
		ctl.entrysize = sizeof(KeptName);
		names = hash_create("eoingest topic names", 64, &ctl, HASH_ELEM | HASH_STRINGS);
	}
	if (strlen(name) >= TOPIC_NAME_SIZE)
		elog(ERROR, "Kafka topic name of %zu bytes is longer than Kafka allows", strlen(name));
	return ((KeptName *) hash_search(names, name, HASH_ENTER, &found))->name;
}

/* The topics a pattern job's pattern matches now, as kept names. */
static List *
matched_topics(EoiOwnership *o)
{
	List	   *matched = eoi_kafka_matching_topics(o->kafka, o->job->topic_pattern,
													METADATA_TIMEOUT_MS);
	ListCell   *lc;

	foreach(lc, matched)
		lfirst(lc) = kept_name(lfirst(lc));
	return matched;
}

/*
 * The topics an assignment reads: the job's, or those its pattern matches
 * now (kept in o->topics until the next assignment).
 */
static void
choose_topics(EoiOwnership *o)
{
	List	   *matched;
	MemoryContext old;

	if (o->job->topic_pattern == NULL)
	{
		o->topics = o->job->topics;
		return;
	}
	matched = matched_topics(o);
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (o->topics != NIL)
		list_free(o->topics);
	o->topics = list_copy(matched);
	MemoryContextSwitchTo(old);
}

/*
 * Have the topics a pattern job's pattern matches changed since the last
 * assignment?  Say which came and went.
 */
static bool
matched_topics_changed(EoiOwnership *o)
{
	List	   *matched = matched_topics(o);
	StringInfoData added;
	StringInfoData gone;
	ListCell   *lc;

	initStringInfo(&added);
	initStringInfo(&gone);
	foreach(lc, matched)
		if (!list_member_ptr(o->topics, lfirst(lc)))
			appendStringInfo(&added, "%s\"%s\"", added.len > 0 ? ", " : "", (char *) lfirst(lc));
	foreach(lc, o->topics)
		if (!list_member_ptr(matched, lfirst(lc)))
			appendStringInfo(&gone, "%s\"%s\"", gone.len > 0 ? ", " : "", (char *) lfirst(lc));
	if (added.len == 0 && gone.len == 0)
		return false;
	ereport(LOG,
			(errmsg_plural("eoingest job \"%s\" now reads %d topic matching \"%s\"",
						   "eoingest job \"%s\" now reads %d topics matching \"%s\"",
						   list_length(matched),
						   o->job->name, list_length(matched), o->job->topic_pattern),
			 added.len > 0 && gone.len > 0 ?
			 errdetail("New: %s. No longer there: %s; their offsets are kept.", added.data, gone.data) :
			 added.len > 0 ?
			 errdetail("New: %s.", added.data) :
			 errdetail("No longer there: %s; their offsets are kept.", gone.data)));
	return true;
}

/* The beginning of a partition: where partitions added to a topic start. */
static int64
log_start(EoiOwnership *o, const char *topic, int32 partition)
{
	int64		low,
				high;

	eoi_kafka_watermarks(o->kafka, topic, partition, &low, &high, METADATA_TIMEOUT_MS);
	return low;
}

/*
 * A job's first positions follow its start_offset (earliest, latest, a
 * timestamp, explicit offsets: a partition these do not name starts at its
 * beginning), and they are decided once for the whole job, for the
 * partitions of every worker: whichever worker comes first stores them all
 * while holding the job's row, so that a sibling starting a moment later
 * finds them instead of mistaking the job for an old one (and starting its
 * partitions at their beginning, whatever start_offset said).
 */
static void
position_new_job(EoiOwnership *o, const int *counts)
{
	ListCell   *lc;

	/* For tests: the siblings of worker 0 come to decide late. */
	if (o->index > 0)
		EOI_FAULT_POINT("sibling_positions");
	eoi_begin_work("deciding the job's first positions");
	eoi_offsets_lock_job(o->job);
	/* For tests: whoever holds the job's row holds it a while. */
	EOI_FAULT_POINT("first_positions_locked");
	if (eoi_offsets_any(o->job))
	{
		eoi_commit_work();
		return;
	}
	foreach(lc, o->topics)
	{
		const char *topic = lfirst(lc);
		int			count = counts[foreach_current_index(lc)];
		int			known;
		int64	   *offsets = eoi_positions_for(o->kafka, o->job, topic, o->job->start_offset, &known);

		for (int32 p = 0; p < count; p++)
		{
			EoiPosition pos = {topic, p, 0};

			if (!job_owns(o->job, p))
				continue;
			pos.offset = (p < known && offsets[p] >= 0) ? offsets[p] : log_start(o, topic, p);
			eoi_offsets_insert(o->job, &pos);
		}
	}
	eoi_commit_work();
}

/*
 * Make sure every partition this worker owns has a stored position, read
 * them all, and assign them to the consumer there.  Returns false, with
 * the reason in `waiting`, while a topic of the job does not exist.
 */
bool
eoi_partitions_assign(EoiOwnership *o, char *waiting, size_t waiting_len)
{
	MemoryContext old;
	int			ntopics;
	int		   *counts;
	int			total = 0;
	ListCell   *lc;

	/* Start over: nothing prefetched survives, errors can be read. */
	eoi_kafka_unassign(o->kafka);
	o->next_discovery = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), DISCOVERY_INTERVAL_MS);
	choose_topics(o);
	ntopics = list_length(o->topics);
	counts = palloc0(sizeof(int) * Max(ntopics, 1));
	if (o->job->topic_pattern != NULL && ntopics == 0)
	{
		snprintf(waiting, waiting_len, "no Kafka topic matches \"%s\" yet; waiting for one",
				 o->job->topic_pattern);
		return false;
	}
	foreach(lc, o->topics)
	{
		const char *topic = lfirst(lc);
		int			count = eoi_kafka_partition_count(o->kafka, topic, METADATA_TIMEOUT_MS);

		if (count < 0 && o->job->topic_pattern != NULL)
			count = 0;			/* deleted since it matched: gone at the next look */
		else if (count < 0)
		{
			snprintf(waiting, waiting_len, "Kafka topic \"%s\" does not exist yet; waiting for it", topic);
			return false;
		}
		counts[foreach_current_index(lc)] = count;
		total += count;
	}

	position_new_job(o, counts);

	old = MemoryContextSwitchTo(TopMemoryContext);
	if (o->owned)
		pfree(o->owned);
	o->owned = palloc0(sizeof(EoiPosition) * Max(total, 1));
	/* a copy: counts lives in the loop's memory, reset every iteration */
	if (o->partition_counts)
		pfree(o->partition_counts);
	o->partition_counts = palloc(sizeof(int) * Max(ntopics, 1));
	memcpy(o->partition_counts, counts, sizeof(int) * ntopics);
	MemoryContextSwitchTo(old);
	o->nowned = 0;

	foreach(lc, o->topics)
	{
		const char *topic = lfirst(lc);
		int			count = counts[foreach_current_index(lc)];
		EoiPosition *stored = palloc(sizeof(EoiPosition) * Max(count, 1));
		int			nstored;

		eoi_begin_work("reading stored offsets");
		nstored = eoi_offsets_read(o->job, topic, stored, count);
		eoi_commit_work();

		for (int32 p = 0; p < count; p++)
		{
			EoiPosition *pos;
			int			i;

			if (!job_owns(o->job, p) || owner_index(o->job, topic, p) != o->index)
				continue;
			pos = &o->owned[o->nowned++];
			pos->topic = topic;
			pos->partition = p;
			for (i = 0; i < nstored && stored[i].partition != p; i++)
				;
			if (i < nstored)
			{
				pos->offset = stored[i].offset;
				continue;
			}
			/* a partition added to the topic since the job began */
			pos->offset = log_start(o, topic, p);
			eoi_begin_work("storing a partition's starting offset");
			eoi_offsets_insert(o->job, pos);
			eoi_commit_work();
			/* Another worker may have stored one first: read it back. */
			eoi_begin_work("reading stored offsets");
			nstored = eoi_offsets_read(o->job, topic, stored, count);
			eoi_commit_work();
			for (i = 0; i < nstored && stored[i].partition != p; i++)
				;
			if (i < nstored)
				pos->offset = stored[i].offset;
		}
		pfree(stored);
	}

	eoi_kafka_assign(o->kafka, o->owned, o->nowned);
	return true;
}

/*
 * Has a topic grown since the last assignment, or (a pattern job) has a
 * topic come or gone?  Looked at every 10 s.
 */
bool
eoi_partitions_grew(EoiOwnership *o)
{
	ListCell   *lc;
	bool		grew = false;

	if (GetCurrentTimestamp() < o->next_discovery)
		return false;
	o->next_discovery = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), DISCOVERY_INTERVAL_MS);
	if (o->job->topic_pattern != NULL && matched_topics_changed(o))
		return true;
	foreach(lc, o->topics)
	{
		const char *topic = lfirst(lc);
		int			before = o->partition_counts[foreach_current_index(lc)];
		int			count = eoi_kafka_partition_count(o->kafka, topic, METADATA_TIMEOUT_MS);

		if (count > before)
		{
			ereport(LOG,
					(errmsg("topic \"%s\" of eoingest job \"%s\" grew from %d to %d partitions",
							topic, o->job->name, before, count)));
			grew = true;
		}
	}
	return grew;
}
