/*-------------------------------------------------------------------------
 *
 * columns.h
 *	  What the decoders fill: the target's columns a job's messages map
 *	  onto, and the writer a decoder hands each row's fields to.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_COLUMNS_H
#define EOI_COLUMNS_H

#include "base/eoingest.h"

#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "utils/jsonb.h"
#include "utils/relcache.h"

#include "format/csv.h"
#include "format/jsonvalue.h"

/* What a job says about mapping its messages onto the target's columns. */
typedef struct EoiMapping
{
	EoiFormat	format;
	List	   *columns;		/* of String; NIL: the format's default columns */
	EoiTimestampUnit timestamp_unit;	/* json numbers into time columns */
	Jsonb	   *mapping;		/* {"column": source}, or NULL (mapping.c) */
	EoiFormat	key_format;		/* of the keys the mapping's "$key/..." read */
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
	void	   *protobuf;		/* protobuf: protobuf.c's state */
	bool		is_key;			/* decodes message keys (upsert tombstones) */
	EoiJsonColumn *json;		/* json: how each column reads values */
	List	   *generated;		/* json: names of GENERATED ALWAYS identity columns */
	EoiTimestampUnit timestamp_unit;
	struct EoiJsonSlot *json_slots; /* json: decodejson.c's buffers, reused */
	StringInfo	json_text;
	StringInfo	json_scratch;
	char	   *json_scan;		/* json: jsonscan.c's scratch, reused */
	size_t		json_scan_size;
	struct EoiConnectCache *connect;	/* json: Connect's schemas (connect.c) */
	EoiCsvField *csv_fields;	/* csv: decode_csv's buffers, reused */
	char	   *csv_scratch;
	size_t		csv_scratch_size;
	struct EoiMapSource *sources;	/* mapped: each column's source, else NULL */
	EoiFormat	map_key_format; /* mapped: how "$key/..." paths read keys */
	void	   *map_state;		/* mapped: mapping.c's buffers, reused */
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

extern EoiMapping eoi_job_mapping(const EoiJob *job);
extern EoiColumns *eoi_columns_map(Relation rel, const EoiMapping *mapping);
extern EoiColumns *eoi_columns_map_named(Relation rel, EoiFormat format, List *names);
extern EoiColumns *eoi_columns_map_keys(Relation rel, const EoiMapping *mapping, List *names);
extern int	eoi_errdetail_columns(const EoiColumns *cols);
extern bool eoi_spells_name(const char *data, size_t len, const char *name);
extern void eoi_write_default(EoiColumns *cols, int c, EoiRowWriter *writer,
							  ExprContext *econtext);

/*
 * Which field of a record type fills each column (-1: none), for the
 * formats that map fields by name (avro, protobuf): `index_of` finds a
 * name's field in `type`.  Looked up once per type and columns and kept
 * in *maps (cols->avro, cols->protobuf), for one `generation` of the
 * format's schema cache, whose types they point to: a map of another
 * generation is dropped.
 */
typedef int (*EoiFieldIndex) (const void *type, const char *name);

extern const int *eoi_field_map(EoiColumns *cols, void **maps, const void *type, uint64 generation,
								EoiFieldIndex index_of);

#endif
