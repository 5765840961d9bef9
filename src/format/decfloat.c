/*-------------------------------------------------------------------------
 *
 * decfloat.c
 *	  A short decimal read as a double precision value without strtod.
 *
 * float8in reads its text with strtod, which is exact for every input and
 * takes its time for it: several percent of a worker's time for each float
 * column of its rows.  Most such fields are short decimals ("0.5", "-12.75", "3e-4"),
 * and for those Clinger's fast path gives the same double: when the digits,
 * read as an integer M, fit in 2^53 and the decimal exponent E is at most
 * 22 either way, both M and 10^|E| are doubles exactly, so M * 10^E (or
 * M / 10^-E) is one IEEE operation and is rounded once, to the nearest
 * double, as strtod rounds.  That holds only where doubles are evaluated
 * in double precision (FLT_EVAL_METHOD 0, as on x86-64 and ARM64); where
 * they are not, every text takes the caller's strtod path.
 *
 * test/tools/decfloat-check.c compares this with strtod, bit for bit, over
 * the shapes a field takes.
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>
#include <stdint.h>

#include "format/decfloat.h"

/* Every integer below 2^53 is a double exactly. */
#define EXACT_MANTISSA_LIMIT ((uint64_t) 1 << 53)

/* Beyond 10^22, powers of ten are no longer doubles exactly. */
#define EXACT_POWER_MAX 22

/*
 * Longer texts are left to strtod: more digits can only be leading or
 * trailing zeros, a longer exponent only a value out of reach.  So the
 * reading stops within a few dozen bytes, whatever the field's length.
 */
#define DIGITS_MAX 64
#define EXPONENT_MAX_DIGITS 4

static const double exact_powers[EXACT_POWER_MAX + 1] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

/* The exponent after 'e' or 'E' at *p; false unless it is one. */
static bool
read_exponent(const char **p, const char *end, int *exponent)
{
	const char *q = *p;
	bool		negative = false;
	int			digits = 0;
	int			value = 0;

	if (q < end && (*q == '+' || *q == '-'))
		negative = (*q++ == '-');
	for (; q < end && *q >= '0' && *q <= '9'; q++)
	{
		if (++digits > EXPONENT_MAX_DIGITS)
			return false;
		value = value * 10 + (*q - '0');
	}
	if (digits == 0)
		return false;
	*p = q;
	*exponent = negative ? -value : value;
	return true;
}

bool
eoi_decimal_to_double(const char *s, size_t len, double *out)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
	const char *p = s;
	const char *end = s + len;
	bool		negative = false;
	bool		point = false;
	uint64_t	mantissa = 0;
	int			digits = 0;
	int			exponent = 0;
	double		d;

	if (p < end && *p == '-')
	{
		negative = true;
		p++;
	}
	for (; p < end; p++)
	{
		if (*p >= '0' && *p <= '9')
		{
			/* below 2^53 before, so below 2^57 after: no overflow */
			mantissa = mantissa * 10 + (uint64_t) (*p - '0');
			if (mantissa >= EXACT_MANTISSA_LIMIT || ++digits > DIGITS_MAX)
				return false;
			if (point)
				exponent--;
		}
		else if (*p == '.' && !point)
			point = true;
		else
			break;
	}
	if (digits == 0)
		return false;
	if (p < end && (*p == 'e' || *p == 'E'))
	{
		int			stated;

		p++;
		if (!read_exponent(&p, end, &stated))
			return false;
		exponent += stated;
	}
	if (p != end)
		return false;

	if (mantissa == 0)
		d = 0.0;
	else if (exponent >= 0 && exponent <= EXACT_POWER_MAX)
		d = (double) mantissa * exact_powers[exponent];
	else if (exponent < 0 && exponent >= -EXACT_POWER_MAX)
		d = (double) mantissa / exact_powers[-exponent];
	else
		return false;
	*out = negative ? -d : d;
	return true;
#else
	(void) s;
	(void) len;
	(void) out;
	return false;
#endif
}
