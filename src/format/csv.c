/*-------------------------------------------------------------------------
 *
 * csv.c
 *	  A strict splitter for one CSV record per Kafka message.
 *
 * COPY's own CSV parser reads a stream, where an unbalanced quote in one
 * message would swallow the next ones; each message is split here on its
 * own instead, so that a message is always exactly one row or one error.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "format/csv.h"

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* What ends an unquoted field: anything else is its data. */
static const bool ends_unquoted[256] = {
	[','] = true, ['"'] = true, ['\n'] = true, ['\r'] = true,
};

/*
 * The quoted field at input[*pos] (just after its opening quote), unescaped
 * into scratch at *out.  False if the closing quote is missing.
 */
static bool
take_quoted(const char *input, size_t len, size_t *pos, char *scratch, size_t *out)
{
	for (;;)
	{
		const char *quote = memchr(input + *pos, '"', len - *pos);
		size_t		span;

		if (quote == NULL)
			return false;
		span = (size_t) (quote - (input + *pos));
		memcpy(scratch + *out, input + *pos, span);
		*out += span;
		*pos += span + 1;
		if (*pos < len && input[*pos] == '"')
		{
			scratch[(*out)++] = '"';	/* "" stands for " */
			(*pos)++;
			continue;
		}
		return true;
	}
}

int
eoi_csv_split(const char *input, size_t len, char *scratch,
			  EoiCsvField *fields, int max_fields, const char **error)
{
	size_t		pos = 0;
	size_t		out = 0;
	int			nfields = 0;

	/* One trailing line break is the producer's, not the data's. */
	if (len > 0 && input[len - 1] == '\n')
		len--;
	if (len > 0 && input[len - 1] == '\r')
		len--;

	for (;;)
	{
		EoiCsvField field;

		while (pos < len && is_blank(input[pos]))
			pos++;

		if (pos < len && input[pos] == '"')
		{
			field.data = scratch + out;
			field.isnull = false;
			pos++;
			if (!take_quoted(input, len, &pos, scratch, &out))
			{
				*error = "unterminated quoted field";
				return -1;
			}
			field.len = (size_t) (scratch + out - field.data);
			while (pos < len && is_blank(input[pos]))
				pos++;
			if (pos < len && input[pos] != ',')
			{
				*error = "unexpected character after a closing quote";
				return -1;
			}
		}
		else
		{
			size_t		start = pos;
			size_t		end;

			/* Unquoted data is used where it lies, without a copy. */
			while (pos < len && !ends_unquoted[(unsigned char) input[pos]])
				pos++;
			if (pos < len && input[pos] == '"')
			{
				*error = "quote inside an unquoted field";
				return -1;
			}
			if (pos < len && input[pos] != ',')
			{
				*error = "line break outside quotes: a message must hold one record";
				return -1;
			}
			end = pos;
			while (end > start && is_blank(input[end - 1]))
				end--;
			field.data = input + start;
			field.len = end - start;
			field.isnull = (field.len == 0);
		}

		if (nfields < max_fields)
			fields[nfields] = field;
		nfields++;
		if (nfields > max_fields)
			return max_fields + 1;

		if (pos >= len)
			break;
		pos++;					/* the comma */
	}
	return nfields;
}
