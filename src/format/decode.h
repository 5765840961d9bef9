/*-------------------------------------------------------------------------
 *
 * decode.h
 *	  Turning Kafka message values (text, csv, json, avro) into rows of the target
 *	  table, written as COPY text-format lines: one message, one line.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DECODE_H
#define EOI_DECODE_H

#include "base/eoingest.h"

#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"

#include <librdkafka/rdkafka.h>

#include "format/csv.h"
#include "format/jsonvalue.h"

/* What a job says about mapping its messages onto the target's columns. */
typedef struct EoiMapping
{
	EoiFormat	format;
	List	   *columns;		/* of String; NIL: the format's default columns */
	EoiTimestampUnit timestamp_unit;	/* json numbers into time columns */
} EoiMapping;

/* The target columns a format fills, in COPY's column-list order. */
typedef struct EoiColumns
{
	EoiFormat	format;
	int			ncolumns;
	List	   *names;			/* of String, for BeginCopyFrom */
	char	  **colnames;
	Oid			relid;			/* the target, for reports */
	const char *relname;
	ExprState **defaults;		/* json, avro: evaluated for an absent key, or NULL */
	FmgrInfo   *outfuncs;		/* json, avro: to print a default */
	Oid		   *typids;			/* json, avro: the columns' types */
	int32	   *typmods;		/* json: their typmods */
	void	   *avro;			/* avro: avro.c's state */
	bool		is_key;			/* decodes message keys (upsert tombstones) */
	EoiJsonColumn *json;		/* json: how each column reads values */
	List	   *generated;		/* json: names of GENERATED ALWAYS identity columns */
	EoiTimestampUnit timestamp_unit;
	struct EoiJsonSlot *json_slots; /* json: decodejson.c's buffers, reused */
	StringInfo	json_text;
	StringInfo	json_scratch;
	char	   *json_scan;		/* json: jsonscan.c's scratch, reused */
	size_t		json_scan_size;
	const char *what;			/* for errors: "the target has" */
	EoiCsvField *csv_fields;	/* csv: decode_csv's buffers, reused */
	char	   *csv_scratch;
	size_t		csv_scratch_size;
} EoiColumns;

/*
 * Where decoded fields go: COPY text lines, arrays for upsert, or a slot's
 * values (direct.c).  `data` NULL means SQL NULL; fields arrive in column
 * order, then end_row.  A writer that takes values as well as text has
 * `datum`: a decoder that has the value of the column's type (the type in
 * EoiColumns.typids) may give it there instead of its text; NULL for the
 * writers of text.
 */
typedef struct EoiRowWriter EoiRowWriter;
struct EoiRowWriter
{
	void		(*field) (EoiRowWriter *writer, int col, const char *data, size_t len);
	void		(*datum) (EoiRowWriter *writer, int col, Datum value);
	void		(*end_row) (EoiRowWriter *writer);
};

typedef struct EoiCopyWriter
{
	EoiRowWriter writer;
	StringInfo	out;
} EoiCopyWriter;

/*
 * eoingest.json_decode (superuser, for tests): how format json reads a
 * message: with jsonscan.c's scan (falling back to jsonb where it
 * declines), always through jsonb_in as before the scan, or (to show
 * which messages the scan reads) with the scan alone, a declined message
 * being a record error.
 */
typedef enum EoiJsonDecode
{
	EOI_JSON_DECODE_SCAN,
	EOI_JSON_DECODE_JSONB,
	EOI_JSON_DECODE_SCAN_ONLY
} EoiJsonDecode;

extern int	eoingest_json_decode;

extern EoiMapping eoi_job_mapping(const EoiJob *job);
extern void eoi_write_default(EoiColumns *cols, int c, EoiRowWriter *writer,
							  ExprContext *econtext);
extern EoiColumns *eoi_columns_for(Relation rel, const EoiMapping *mapping, EState *estate);
extern EoiColumns *eoi_columns_named(Relation rel, EoiFormat format, List *names);
extern void eoi_copy_writer_init(EoiCopyWriter *cw, StringInfo out);
extern void eoi_json_unframe(const char **data, size_t *len);
extern const char *eoi_message_json(EoiFormat format, rd_kafka_message_t *msg, bool key,
									size_t *len);
extern bool eoi_decode_message(EoiColumns *cols, const char *value, size_t len,
							   EoiRowWriter *writer, ExprContext *econtext);
extern bool eoi_decode_kafka_message(EoiColumns *cols, rd_kafka_message_t *msg, bool key,
									 EoiRowWriter *writer, ExprContext *econtext);
extern void eoi_decode_json_object(EoiColumns *cols, JsonbContainer *object,
								   EoiRowWriter *writer, ExprContext *econtext);
extern void eoi_decode_json_text(EoiColumns *cols, const char *text, size_t len,
								 EoiRowWriter *writer, ExprContext *econtext);

#endif
