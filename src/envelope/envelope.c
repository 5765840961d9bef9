/*-------------------------------------------------------------------------
 *
 * envelope.c
 *	  Picking the writer of a job's batches from its envelope.
 *
 * Envelope none: each message is a row, which the writers of rows
 * (apply/sink.c) decode and insert, upsert or hand to the transform.
 * Envelope debezium: each message is a change event, which cdc.c turns
 * into upserts and deletes by key.  Either way apply/sink.c runs the
 * writer inside the batch's subtransaction and isolates failing records.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "envelope/cdc.h"
#include "envelope/envelope.h"

/* The writer of the job's batches: its envelope's. */
EoiBatchWriter
eoi_envelope_writer(const EoiJob *job)
{
	if (job->envelope == EOI_ENVELOPE_DEBEZIUM)
		return eoi_cdc_batch;
	return eoi_sink_write_rows;
}

/*
 * Apply a batch of the job's messages, in the caller's transaction, as the
 * job's on_error says; *dead is set to the records kept as dead letters.
 */
uint64
eoi_envelope_write_batch(const EoiJob *job, EoiBatch *batch, int *dead)
{
	return eoi_sink_write_batch(job, batch, eoi_envelope_writer(job), dead);
}
