/*-------------------------------------------------------------------------
 *
 * cdcconv.c
 *	  The codecs of a change event's fields without a schema, from the
 *	  target column's type (format/connect.c has those a Connect schema
 *	  names, and the conversions), and the row writer that converts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/rel.h"

#include "envelope/cdc_internal.h"

/* ---- codecs ---- */

/* Declared fractional-second precision of a time or timestamp type, 6 if none. */
static int
time_precision(int32 typmod)
{
	return typmod >= 0 ? typmod : 6;
}

/*
 * The codec of a field without a schema: what Debezium's defaults
 * (time.precision.mode adaptive, decimal.handling.mode precise,
 * binary.handling.mode bytes) produce for a column of the target's type,
 * given the JSON value's type.
 */
EoiFieldCodec
eoi_cdc_codec_from_column(Oid coltype, int32 typmod, JsonbValue *v)
{
	EoiFieldCodec	fc = {CONV_NONE, 0, coltype == TIMESTAMPTZOID};

	if (v == NULL)
		return fc;
	if (v->type == jbvNumeric)
	{
		switch (coltype)
		{
			case DATEOID:
				fc.conv = CONV_DAYS;
				break;
			case TIMEOID:
				fc.conv = time_precision(typmod) <= 3 ? CONV_TIME_MS : CONV_TIME_US;
				break;
			case TIMESTAMPOID:
			case TIMESTAMPTZOID:
				fc.conv = time_precision(typmod) <= 3 ? CONV_TIMESTAMP_MS : CONV_TIMESTAMP_US;
				break;
			case INTERVALOID:
				fc.conv = CONV_INTERVAL_US;
				break;
		}
	}
	else if (v->type == jbvString)
	{
		switch (coltype)
		{
			case BYTEAOID:
				fc.conv = CONV_BYTES;
				break;
			case NUMERICOID:
				/* with a declared scale, a string that is no number is base64 */
				if (typmod >= (int32) VARHDRSZ)
				{
					fc.conv = CONV_DECIMAL;
					fc.param = (int16) ((typmod - VARHDRSZ) & 0xffff);
				}
				break;
			case BITOID:
			case VARBITOID:
				fc.conv = CONV_BITS;
				fc.param = typmod > 0 ? typmod : -1;
				break;
		}
	}
	else if (v->type == jbvBinary && coltype == NUMERICOID)
		fc.conv = CONV_VARIABLE_DECIMAL;
	return fc;
}

static void
converting_field(EoiRowWriter *writer, int col, const char *data, size_t len)
{
	ConvertingWriter *cw = (ConvertingWriter *) writer;
	char	   *s = NULL;

	if (cw->unchanged != NULL && cw->unchanged[col])
	{
		/* Debezium's placeholder: the row keeps its value (upsertkeep.c) */
		cw->fields[col] = NULL;
		if (cw->inner != NULL)
			cw->inner->field(cw->inner, col, eoi_unchanged_value, 0);
		return;
	}
	if (data != NULL)
		s = eoi_connect_convert(&cw->codecs[col], pnstrdup(data, len));
	cw->fields[col] = s;
	if (cw->inner != NULL)
		cw->inner->field(cw->inner, col, s, s ? strlen(s) : 0);
}

static void
converting_end_row(EoiRowWriter *writer)
{
	ConvertingWriter *cw = (ConvertingWriter *) writer;

	if (cw->inner != NULL)
		cw->inner->end_row(cw->inner);
}

void
eoi_cdc_converting_writer_init(ConvertingWriter *cw, EoiRowWriter *inner, EoiFieldCodec *codecs, int ncolumns)
{
	cw->writer.field = converting_field;
	cw->writer.datum = NULL;
	cw->writer.end_row = converting_end_row;
	cw->inner = inner;
	cw->codecs = codecs;
	cw->ncolumns = ncolumns;
	cw->fields = palloc0(sizeof(char *) * Max(ncolumns, 1));
	cw->unchanged = NULL;
}
