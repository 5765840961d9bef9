/*-------------------------------------------------------------------------
 *
 * wirenum.c
 *	  Decimals and bit strings as Avro and Kafka Connect put them on the
 *	  wire, turned into the text their PostgreSQL types read.
 *
 * A decimal is a big-endian two's-complement unscaled integer with a scale
 * the schema states; a bit string (Debezium's Bits) a Java BitSet's bytes,
 * bit 0 the least significant, with a length the schema states.  Both the
 * bytes and the figures come from a message or a registry schema, so each
 * is bounded by what the PostgreSQL type can hold before any work is done,
 * and the conversions check for interrupts as they go: a hostile value is
 * its record's error (SQLSTATE 22003 or 54000), within milliseconds.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "utils/numeric.h"

#include "format/wirenum.h"

/*
 * numeric holds up to 131072 digits before the point and 16383 after it
 * (PostgreSQL's documented limits, NUMERIC_DSCALE_MAX for the scale).
 */
#define DECIMAL_MAX_INT_DIGITS 131072
#define DECIMAL_MAX_SCALE 16383
/* bytes of an unscaled value of at most that many digits: 10^147455 < 256^61242 */
#define DECIMAL_MAX_BYTES 61242

#define BIT_MAX_LENGTH ((int64) MaxAttrSize * BITS_PER_BYTE)

static void
decimal_out_of_range(const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("decimal value out of range for type numeric"),
			 errdetail_internal("%s", detail),
			 errhint("Type numeric holds at most %d digits before the decimal point and %d after it.",
					 DECIMAL_MAX_INT_DIGITS, DECIMAL_MAX_SCALE)));
}

/*
 * The magnitude of a two's-complement big-endian integer, as 32-bit limbs,
 * most significant first; *nlimbs of them, leading zeros dropped.
 */
static uint32 *
magnitude_limbs(const unsigned char *bytes, size_t n, bool negative, int *nlimbs)
{
	size_t		padded = (n + 3) / 4 * 4;
	unsigned char *mag = palloc0(Max(padded, 4));
	uint32	   *limbs;
	int			count = (int) (padded / 4);
	int			first = 0;

	/* right-aligned, sign-extended to whole limbs */
	memset(mag, negative ? 0xff : 0, padded - n);
	memcpy(mag + (padded - n), bytes, n);
	if (negative)
	{
		int			carry = 1;

		for (size_t i = padded; i-- > 0;)
		{
			int			b = (unsigned char) ~mag[i] + carry;

			mag[i] = (unsigned char) b;
			carry = b >> 8;
		}
	}
	limbs = palloc(sizeof(uint32) * Max(count, 1));
	for (int i = 0; i < count; i++)
		limbs[i] = ((uint32) mag[4 * i] << 24) | ((uint32) mag[4 * i + 1] << 16) |
			((uint32) mag[4 * i + 2] << 8) | mag[4 * i + 3];
	pfree(mag);
	while (first < count && limbs[first] == 0)
		first++;
	*nlimbs = count - first;
	return limbs + first;
}

/*
 * The decimal digits of a magnitude, most significant first, NUL-ended.
 * Repeated division by 10^9 of 32-bit limbs: for the largest value numeric
 * holds, some 16,000 passes over at most 15,000 limbs.
 */
static char *
magnitude_digits(uint32 *limbs, int nlimbs, int *ndigits)
{
	uint32	   *chunks = palloc(sizeof(uint32) * (nlimbs * 10 / 9 + 2));
	int			nchunks = 0;
	int			start = 0;
	char	   *digits;
	int			nd;

	while (start < nlimbs)
	{
		uint64		rem = 0;

		CHECK_FOR_INTERRUPTS();
		for (int i = start; i < nlimbs; i++)
		{
			uint64		cur = (rem << 32) | limbs[i];

			limbs[i] = (uint32) (cur / 1000000000);
			rem = cur % 1000000000;
		}
		chunks[nchunks++] = (uint32) rem;
		while (start < nlimbs && limbs[start] == 0)
			start++;
	}
	digits = palloc(nchunks * 9 + 2);
	if (nchunks == 0)
		nd = sprintf(digits, "0");
	else
	{
		nd = sprintf(digits, "%u", chunks[nchunks - 1]);
		for (int i = nchunks - 2; i >= 0; i--)
			nd += sprintf(digits + nd, "%09u", chunks[i]);
	}
	pfree(chunks);
	*ndigits = nd;
	return digits;
}

/*
 * Append the decimal whose unscaled value is `bytes` (n of them, big-endian
 * two's complement) with the point `scale` places from the right (a
 * negative scale appends zeros).  A value or scale numeric cannot hold is
 * an error.
 */
void
eoi_append_decimal(StringInfo out, const unsigned char *bytes, size_t n, int64 scale)
{
	bool		negative = n > 0 && (bytes[0] & 0x80);
	uint32	   *limbs;
	int			nlimbs;
	char	   *digits;
	int			nd;
	bool		zero;

	if (scale > DECIMAL_MAX_SCALE || scale < -DECIMAL_MAX_INT_DIGITS)
		decimal_out_of_range(psprintf("The value's scale is " INT64_FORMAT ".", scale));
	if (n > DECIMAL_MAX_BYTES)
		decimal_out_of_range(psprintf("The unscaled value has %zu bytes.", n));
	limbs = magnitude_limbs(bytes, n, negative, &nlimbs);
	if (nlimbs > 0)
	{
		/* at least this many digits: refuse before dividing */
		int64		bits = (int64) (nlimbs - 1) * 32 + pg_leftmost_one_pos32(limbs[0]) + 1;
		int64		min_digits = (bits - 1) * 30102 / 100000 + 1;

		if (min_digits - scale > DECIMAL_MAX_INT_DIGITS)
			decimal_out_of_range(psprintf("The value has at least " INT64_FORMAT " digits before the decimal point.",
										  min_digits - scale));
	}
	digits = magnitude_digits(limbs, nlimbs, &nd);
	zero = (nd == 1 && digits[0] == '0');
	if (!zero && nd - scale > DECIMAL_MAX_INT_DIGITS)
		decimal_out_of_range(psprintf("The value has " INT64_FORMAT " digits before the decimal point.",
									  nd - scale));

	if (negative && !zero)
		appendStringInfoChar(out, '-');
	if (scale <= 0)
	{
		appendBinaryStringInfo(out, digits, nd);
		for (int64 i = 0; i < -scale && !zero; i++)
			appendStringInfoChar(out, '0');
	}
	else if (nd <= scale)
	{
		appendStringInfoString(out, "0.");
		for (int64 i = nd; i < scale; i++)
			appendStringInfoChar(out, '0');
		appendBinaryStringInfo(out, digits, nd);
	}
	else
	{
		appendBinaryStringInfo(out, digits, nd - (int) scale);
		appendStringInfoChar(out, '.');
		appendBinaryStringInfo(out, digits + nd - scale, (int) scale);
	}
	pfree(digits);
}

/*
 * Append the bit string of `length` bits (-1: all of the n bytes') that a
 * Java BitSet's bytes hold: bit 0 is the last character.  Bits past the
 * bytes are zeros (BitSet drops the high zero bytes).
 */
void
eoi_append_bits(StringInfo out, const unsigned char *bytes, size_t n, int64 length)
{
	int64		nbits = length >= 0 ? length : (int64) n * BITS_PER_BYTE;

	if (nbits > BIT_MAX_LENGTH || (int64) n > BIT_MAX_LENGTH / BITS_PER_BYTE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("bit string of " INT64_FORMAT " bits (%zu bytes) is longer than type bit can hold",
						nbits, n),
				 errhint("A bit string holds at most " INT64_FORMAT " bits.", BIT_MAX_LENGTH)));
	enlargeStringInfo(out, (int) nbits);
	for (int64 i = nbits; i-- > 0;)
	{
		if ((i & 0xfffff) == 0)
			CHECK_FOR_INTERRUPTS();
		appendStringInfoChar(out, i / 8 < (int64) n && (bytes[i / 8] >> (i % 8)) & 1 ? '1' : '0');
	}
}

/* Bytes as bytea's hex text: \x and two digits a byte. */
void
eoi_append_bytea_hex(StringInfo out, const unsigned char *bytes, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	enlargeStringInfo(out, 2 * n + 2);
	appendStringInfoString(out, "\\x");
	for (size_t i = 0; i < n; i++)
	{
		out->data[out->len++] = hex[bytes[i] >> 4];
		out->data[out->len++] = hex[bytes[i] & 15];
	}
	out->data[out->len] = '\0';
}
