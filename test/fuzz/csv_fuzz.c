/*-------------------------------------------------------------------------
 *
 * csv_fuzz.c
 *	  libFuzzer target for eoi_csv_split() (src/format/csv.c).
 *
 * Build (test/fuzz/run.sh does this):
 *   clang -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *         -g -O1 -I src src/format/csv.c test/fuzz/csv_fuzz.c -o csv_fuzz
 *
 * Input layout: byte 0 is a control byte, the rest is the payload.
 *
 *   control < 0xC0: raw mode.  The payload is one CSV message, split with
 *     max_fields = control % 64 (so the printable '@' is 0, 'A' 1, 'C' 3,
 *     '\x7f' 63) and again with room for every possible field (len + 1).
 *   control >= 0xC0: round-trip mode.  The payload drives a generator that
 *     picks fields, encodes them as CSV (quoting some, doubling quotes), and
 *     checks that splitting gives the fields back.
 *
 * Only what csv.h documents is asserted:
 *   - the result is -1 with a non-NULL, non-empty *error, or 1..max_fields+1;
 *   - max_fields + 1 means "more fields than max_fields": a record that splits
 *     into n fields gives n when max_fields >= n and max_fields + 1 otherwise;
 *   - every field handed back lies within the input or within scratch, which
 *     holds `len` bytes (scratch, input and the fields array are heap blocks
 *     of exactly the documented size, so ASan reports any access beyond them);
 *   - isnull implies len == 0; isnull means "an empty, unquoted field";
 *   - unquoted fields are trimmed of spaces and tabs (only those); quoted
 *     fields keep everything, with "" standing for ";
 *   - one final line break (\n or \r\n) is ignored;
 *   - the input is not modified, and the result does not depend on what
 *     scratch held before the call.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/csv.h"

#define CHECK(cond) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "csv_fuzz: invariant failed: %s (%s:%d)\n", \
					#cond, __FILE__, __LINE__); \
			abort(); \
		} \
	} while (0)

static void *
xmalloc(size_t n)
{
	/* malloc(0) may return NULL; ASan gives a unique 0-byte block. */
	void	   *p = malloc(n);

	CHECK(p != NULL || n == 0);
	return p;
}

static int
is_blank(unsigned char c)
{
	return c == ' ' || c == '\t';
}

/* Whether the field lies within the `size` bytes at `block`. */
static int
within(const char *block, size_t size, const EoiCsvField *field)
{
	uintptr_t	b = (uintptr_t) block;
	uintptr_t	d = (uintptr_t) field->data;

	return field->len <= size && d >= b && d - b <= size - field->len;
}

/* Result checks that hold for any input. */
static void
check_basic(const char *in, size_t len, const char *scratch, const EoiCsvField *fields,
			int max_fields, int rc, const char *error)
{
	if (rc == -1)
	{
		CHECK(error != NULL);
		CHECK(error[0] != '\0');
		return;
	}
	CHECK(rc >= 1);
	CHECK(rc <= max_fields + 1);

	int			nf = rc < max_fields ? rc : max_fields;

	for (int i = 0; i < nf; i++)
	{
		CHECK(fields[i].data != NULL || len == 0);
		CHECK(within(in, len, &fields[i]) || within(scratch, len, &fields[i]));
		if (fields[i].isnull)
			CHECK(fields[i].len == 0);
	}
}

static void
check_same_fields(const EoiCsvField *a, const EoiCsvField *b, int n)
{
	for (int i = 0; i < n; i++)
	{
		CHECK(a[i].len == b[i].len);
		CHECK(a[i].isnull == b[i].isnull);
		if (a[i].len > 0)
			CHECK(memcmp(a[i].data, b[i].data, a[i].len) == 0);
	}
}

/*
 * Quote-free oracle: without any '"' and without line breaks (besides one
 * final \n or \r\n), a record is its comma-separated segments, each trimmed
 * of spaces and tabs, an empty one being NULL.
 */
static void
check_quote_free(const char *in, size_t len, int rc, const EoiCsvField *fields)
{
	size_t		body = len;

	if (body > 0 && in[body - 1] == '\n')
	{
		body--;
		if (body > 0 && in[body - 1] == '\r')
			body--;
	}
	for (size_t i = 0; i < body; i++)
		if (in[i] == '"' || in[i] == '\n' || in[i] == '\r')
			return;				/* not for this oracle */

	int			expected = 1;

	for (size_t i = 0; i < body; i++)
		if (in[i] == ',')
			expected++;
	CHECK(rc == expected);

	size_t		start = 0;

	for (int f = 0; f < expected; f++)
	{
		size_t		end = start;

		while (end < body && in[end] != ',')
			end++;

		size_t		a = start,
					b = end;

		while (a < b && is_blank((unsigned char) in[a]))
			a++;
		while (b > a && is_blank((unsigned char) in[b - 1]))
			b--;
		CHECK(fields[f].len == b - a);
		CHECK(fields[f].isnull == (b == a));
		if (b > a)
			CHECK(memcmp(fields[f].data, in + a, b - a) == 0);
		start = end + 1;
	}
}

static void
raw_mode(const uint8_t *data, size_t size)
{
	int			max_fields = data[0] % 64;
	size_t		len = size - 1;

	/* exact-size heap copies so that ASan sees both ends */
	char	   *in = xmalloc(len);

	if (len)
		memcpy(in, data + 1, len);

	/* 1. with room for every possible field: at most one per comma + 1 */
	CHECK(len < (size_t) INT32_MAX - 2);
	int			big = (int) len + 1;
	char	   *scratch1 = xmalloc(len);
	EoiCsvField *f1 = xmalloc(sizeof(EoiCsvField) * (size_t) big);
	const char *err1 = NULL;

	memset(scratch1, 0xAA, len);
	int			rc1 = eoi_csv_split(in, len, scratch1, f1, big, &err1);

	check_basic(in, len, scratch1, f1, big, rc1, err1);
	CHECK(rc1 != big + 1);
	CHECK(len == 0 || memcmp(in, data + 1, len) == 0);

	/* 2. same again, scratch prefilled differently: same result */
	char	   *scratch2 = xmalloc(len);
	EoiCsvField *f2 = xmalloc(sizeof(EoiCsvField) * (size_t) big);
	const char *err2 = NULL;

	memset(scratch2, 0x55, len);
	int			rc2 = eoi_csv_split(in, len, scratch2, f2, big, &err2);

	check_basic(in, len, scratch2, f2, big, rc2, err2);
	CHECK(rc2 == rc1);
	if (rc1 > 0)
		check_same_fields(f1, f2, rc1);
	else
		CHECK(strcmp(err1, err2) == 0);

	/* 3. with max_fields from the control byte */
	EoiCsvField *f3 = xmalloc(sizeof(EoiCsvField) * (size_t) max_fields);
	const char *err3 = NULL;

	memset(scratch2, 0x00, len);
	int			rc3 = eoi_csv_split(in, len, scratch2, f3, max_fields, &err3);

	check_basic(in, len, scratch2, f3, max_fields, rc3, err3);
	if (rc1 > 0)
	{
		if (rc1 <= max_fields)
		{
			CHECK(rc3 == rc1);
			check_same_fields(f1, f3, rc1);
		}
		else
			CHECK(rc3 == max_fields + 1);
	}
	else
		CHECK(rc3 == -1 || rc3 == max_fields + 1);

	if (rc1 > 0)
		check_quote_free(in, len, rc1, f1);
	else
		check_quote_free(in, len, -1, NULL);	/* fails if quote-free */

	CHECK(len == 0 || memcmp(in, data + 1, len) == 0);
	free(f3);
	free(f2);
	free(scratch2);
	free(f1);
	free(scratch1);
	free(in);
}

/* ---- round-trip mode ---- */

typedef struct
{
	const uint8_t *p;
	size_t		n;
} Src;

static uint8_t
take(Src *s)
{
	if (s->n == 0)
		return 0;
	s->n--;
	return *s->p++;
}

#define RT_MAX_FIELDS	24
#define RT_MAX_LEN		12
#define RT_MAX_PAD		3

typedef struct
{
	char		data[RT_MAX_LEN];
	size_t		len;
	int			isnull;
} Expected;

/* a byte for an unquoted field: anything but , " \r \n */
static char
unquoted_byte(uint8_t b)
{
	if (b == ',' || b == '"' || b == '\r' || b == '\n')
		return (char) ('a' + b % 26);
	return (char) b;
}

/* a byte for a quoted field: anything, with CSV specials made likely */
static char
quoted_byte(uint8_t b)
{
	static const char special[16] = {
		'"', '"', '"', ',', ',', '\n', '\r', ' ',
		'\t', '\0', 'x', '"', ',', '\n', ' ', '\\'
	};

	return b >= 0xF0 ? special[b & 0x0F] : (char) b;
}

static void
roundtrip_mode(const uint8_t *data, size_t size)
{
	Src			src = {data + 1, size - 1};
	Expected	exp[RT_MAX_FIELDS];
	/* worst case per field: pads + 2 quotes + doubled content + comma */
	char		buf[RT_MAX_FIELDS * (2 * RT_MAX_PAD + 2 + 2 * RT_MAX_LEN + 1) + 2];
	size_t		n = 0;
	int			k = 1 + take(&src) % RT_MAX_FIELDS;

	for (int i = 0; i < k; i++)
	{
		uint8_t		kind = take(&src) % 4;
		size_t		flen = take(&src) % RT_MAX_LEN;
		Expected   *e = &exp[i];

		if (i > 0)
			buf[n++] = ',';
		e->len = flen;
		if (kind == 0 || kind == 1)
		{
			/* unquoted, optionally padded with blanks (kind 1) */
			size_t		lpad = kind == 1 ? take(&src) % (RT_MAX_PAD + 1) : 0;
			size_t		rpad = kind == 1 ? take(&src) % (RT_MAX_PAD + 1) : 0;

			for (size_t j = 0; j < flen; j++)
				e->data[j] = unquoted_byte(take(&src));
			/* the content itself must not start or end with a blank */
			if (flen > 0 && is_blank((unsigned char) e->data[0]))
				e->data[0] = '_';
			if (flen > 0 && is_blank((unsigned char) e->data[flen - 1]))
				e->data[flen - 1] = '_';
			e->isnull = (flen == 0);
			for (size_t j = 0; j < lpad; j++)
				buf[n++] = (take(&src) & 1) ? '\t' : ' ';
			memcpy(buf + n, e->data, flen);
			n += flen;
			for (size_t j = 0; j < rpad; j++)
				buf[n++] = (take(&src) & 1) ? '\t' : ' ';
		}
		else
		{
			/* quoted: anything, quotes doubled; "" is an empty non-NULL */
			buf[n++] = '"';
			for (size_t j = 0; j < flen; j++)
			{
				char		c = quoted_byte(take(&src));

				e->data[j] = c;
				buf[n++] = c;
				if (c == '"')
					buf[n++] = '"';
			}
			buf[n++] = '"';
			e->isnull = 0;
		}
	}
	switch (take(&src) % 3)
	{
		case 1:
			buf[n++] = '\n';
			break;
		case 2:
			buf[n++] = '\r';
			buf[n++] = '\n';
			break;
		default:
			break;
	}
	CHECK(n <= sizeof(buf));

	char	   *in = xmalloc(n);
	char	   *scratch = xmalloc(n);

	if (n)
		memcpy(in, buf, n);

	/* max_fields = k, k + extra: exactly the fields; k - 1: "more than" */
	int			maxes[3] = {k, k + 1 + take(&src) % 8, k - 1};

	for (int m = 0; m < 3; m++)
	{
		int			max_fields = maxes[m];
		EoiCsvField *f = xmalloc(sizeof(EoiCsvField) * (size_t) max_fields);
		const char *err = NULL;
		int			rc;

		memset(scratch, 0xA5 + m, n);
		rc = eoi_csv_split(in, n, scratch, f, max_fields, &err);
		if (rc == -1)
			fprintf(stderr, "csv_fuzz: round trip: error \"%s\" for %zu bytes\n",
					err ? err : "(null)", n);
		check_basic(in, n, scratch, f, max_fields, rc, err);
		if (max_fields >= k)
		{
			CHECK(rc == k);
			for (int i = 0; i < k; i++)
			{
				CHECK(f[i].len == exp[i].len);
				CHECK(f[i].isnull == (exp[i].isnull != 0));
				if (exp[i].len > 0)
					CHECK(memcmp(f[i].data, exp[i].data, exp[i].len) == 0);
			}
		}
		else
			CHECK(rc == max_fields + 1);
		free(f);
	}
	CHECK(memcmp(in, buf, n) == 0 || n == 0);
	free(scratch);
	free(in);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] < 0xC0)
		raw_mode(data, size);
	else
		roundtrip_mode(data, size);
	return 0;
}
