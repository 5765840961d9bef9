/*-------------------------------------------------------------------------
 *
 * groupfence.c
 *	  The split-brain guard's look at Kafka: the commits in the job's
 *	  consumer group say which servers ran the job (fence.c says why).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "kafka/groupfence.h"

#define FENCE_TIMEOUT_MS	10000

/*
 * Before reading `positions`: refuse if the job's consumer group holds a
 * commit of this cluster from a later timeline for any of them.  Commits
 * of another cluster (a copy made with pg_dump, say) are only logged: the
 * two are not related by promotion, and either may be the one meant to run.
 */
void
eoi_fence_check(const EoiJob *job, EoiKafka *kafka, const EoiPosition *positions, int n)
{
	EoiServerId here;
	char	  **metadata;
	const char *why = NULL;

	if (!job->commit_to_kafka || n == 0)
		return;
	eoi_this_server(&here);
	metadata = eoi_kafka_committed_metadata(kafka, positions, n, FENCE_TIMEOUT_MS, &why);
	if (metadata == NULL)
	{
		ereport(WARNING,
				(errmsg("eoingest job \"%s\" cannot check its consumer group for a newer server: %s",
						job->name, why),
				 errhint("Grant the job's Kafka principal Describe and Read on its consumer group, or the split-brain guard cannot see a promoted server.")));
		return;
	}
	for (int i = 0; i < n; i++)
	{
		EoiServerId there;

		if (!eoi_fence_parse(metadata[i], &there))
			continue;
		if (there.system_id == here.system_id && there.timeline > here.timeline)
			eoi_fence_refuse(job, &here, there.timeline,
				   psprintf("The job's consumer group has a commit from timeline %u for topic \"%s\" partition %d.",
							there.timeline, positions[i].topic, positions[i].partition));
		if (there.system_id != here.system_id)
			ereport(LOG,
					(errmsg("consumer group offset of eoingest job \"%s\" was committed by another database cluster",
							job->name),
					 errdetail("The offset for topic \"%s\" partition %d carries system identifier " UINT64_FORMAT ".",
							   positions[i].topic, positions[i].partition, there.system_id),
					 errhint("If that server still runs a job on this topic with the same group, both ingest the topic.")));
	}
}
