/*-------------------------------------------------------------------------
 *
 * csv.h
 *	  Splitting one Kafka message into CSV fields.  Plain C with no server
 *	  dependency, so that a fuzzer can drive it on its own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_CSV_H
#define EOI_CSV_H

#include <stdbool.h>
#include <stddef.h>

typedef struct EoiCsvField
{
	const char *data;			/* into the input (unquoted) or scratch (quoted) */
	size_t		len;
	bool		isnull;			/* an empty, unquoted field */
} EoiCsvField;

/*
 * Split `len` bytes of `input` (one record; a final line break is ignored)
 * into at most `max_fields` fields.  Unquoted fields are trimmed of spaces
 * and tabs; quoted fields keep everything, with "" standing for ".
 * Quoted fields are unescaped into `scratch`, which must hold `len` bytes;
 * unquoted ones point into `input`.  Returns the number of fields, or -1
 * with *error set to a static message; returns max_fields + 1 when there
 * are more fields than that.
 */
extern int	eoi_csv_split(const char *input, size_t len, char *scratch,
						  EoiCsvField *fields, int max_fields, const char **error);

#endif
