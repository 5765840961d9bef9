/*-------------------------------------------------------------------------
 *
 * deadletter.h
 *	  eoingest.dead_letters: records that could not be decoded or stored,
 *	  kept with their bytes, position and error.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DEADLETTER_H
#define EOI_DEADLETTER_H

#include "base/eoingest.h"

/* A failed record, as its row keeps it. */
typedef struct EoiDeadLetter
{
	const char *topic;
	int32		partition;
	int64		offset;
	bytea	   *key;			/* NULL for none */
	bytea	   *value;			/* NULL for none */
	Datum		timestamp;		/* timestamptz */
	bool		timestamp_isnull;
} EoiDeadLetter;

extern void eoi_dead_letter_insert(const EoiJob *job, const EoiDeadLetter *letter,
								   ErrorData *edata);
extern int64 eoi_dead_letter_count(int32 job_id);
extern bool eoi_dead_letters_supersedable(int32 job_id);
extern int64 eoi_dead_letters_prune(int retention_min, int limit);
extern void eoi_dead_letters_supersede(int32 job_id, int n, Datum *topics, Datum *partitions,
									   Datum *offsets, Datum *keys);

#endif
