/*-------------------------------------------------------------------------
 *
 * cdctxn.h
 *	  Source transactions of Debezium change events (transactions =>
 *	  'source'): where a batch may end so that it holds whole transactions,
 *	  and the messages read past that point, kept for the next batch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_CDCTXN_H
#define EOI_CDCTXN_H

#include "base/eoingest.h"
#include "kafka/batch.h"

/* A batch extended for a source transaction holds at most this many times batch_size messages ... */
#define EOI_TXN_BATCH_FACTOR 16
/* ... and at most this many bytes (and 16 × batch_max_bytes). */
#define EOI_TXN_MAX_BYTES ((int64) 1024 * 1024 * 1024)

/* The source table of a change event ("schema.table"), or NULL. */
extern char *eoi_cdc_source_table(JsonbContainer *event);
extern JsonbContainer *eoi_cdc_source_block(JsonbContainer *event);
extern void eoi_cdc_source_names(JsonbContainer *source, char **db, char **schema, char **table);
extern bool eoi_cdc_has_transaction(JsonbContainer *event);

extern int	eoi_txn_cut(const EoiJob *job, EoiBatch *batch, char **why);
extern int	eoi_txn_take_pending(rd_kafka_message_t **into, int max);
extern void eoi_txn_keep_pending(EoiBatch *batch, int from);
extern void eoi_txn_forget_pending(void);
struct EoiKafka;
extern void eoi_txn_align_fetching(struct EoiKafka *kafka);
extern int	eoi_txn_pending_count(void);
extern void eoi_txn_load_committed(const EoiJob *job);
extern bool eoi_txn_committed_known(void);
extern void eoi_txn_cut_committed(void);
extern uint64 eoi_txn_end_lsn(rd_kafka_message_t *msg);

#endif
