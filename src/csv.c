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
#include "csv.h"

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t';
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

		field.data = scratch + out;
		field.isnull = false;

		if (pos < len && input[pos] == '"')
		{
			pos++;
			for (;;)
			{
				if (pos >= len)
				{
					*error = "unterminated quoted field";
					return -1;
				}
				if (input[pos] == '"')
				{
					if (pos + 1 < len && input[pos + 1] == '"')
					{
						scratch[out++] = '"';
						pos += 2;
						continue;
					}
					pos++;
					break;
				}
				scratch[out++] = input[pos++];
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

			while (pos < len && input[pos] != ',')
			{
				if (input[pos] == '"')
				{
					*error = "quote inside an unquoted field";
					return -1;
				}
				if (input[pos] == '\n' || input[pos] == '\r')
				{
					*error = "line break outside quotes: a message must hold one record";
					return -1;
				}
				pos++;
			}
			end = pos;
			while (end > start && is_blank(input[end - 1]))
				end--;
			for (size_t i = start; i < end; i++)
				scratch[out++] = input[i];
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
