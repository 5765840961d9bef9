/*
 * decfloat-check: src/format/decfloat.c against strtod, bit for bit.
 *
 *   cc -O2 -I src -o decfloat-check test/tools/decfloat-check.c src/format/decfloat.c
 *   ./decfloat-check [RANDOM_CASES]
 *
 * Every text eoi_decimal_to_double() takes must give the double strtod
 * gives (the sign of a zero included); the texts it must leave to strtod
 * (white space, '+', words, hexadecimal, a second point...) must be left.
 * The texts: fixed cases at the edges of its fast path (2^53, 10^22), then
 * random decimals of 1 to 19 digits, with and without a point and an
 * exponent, from a fixed seed.  Prints TAP: one test per group.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/decfloat.h"

static int	tests;
static int	failures;

/* The text taken or left as `taken` says, and when taken, strtod's double. */
static bool
check(const char *text, bool must_take, long *taken)
{
	double		fast = 0;
	double		slow;
	char	   *end;
	bool		took = eoi_decimal_to_double(text, strlen(text), &fast);

	if (must_take && !took)
	{
		printf("# \"%s\": left to strtod, but it is in the fast path's reach\n", text);
		return false;
	}
	if (!took)
		return true;
	(*taken)++;
	slow = strtod(text, &end);
	if (*end != '\0')
	{
		printf("# \"%s\": taken, but strtod stops at \"%s\"\n", text, end);
		return false;
	}
	if (memcmp(&fast, &slow, sizeof(double)) != 0)
	{
		printf("# \"%s\": %.17g (%a), strtod %.17g (%a)\n", text, fast, fast, slow, slow);
		return false;
	}
	return true;
}

static void
report(bool ok, const char *what)
{
	tests++;
	if (!ok)
		failures++;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", tests, what);
}

/* xorshift64*: the same cases on every machine and run. */
static uint64_t rng_state = 20261207;

static uint64_t
next_random(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

static int
random_below(int n)
{
	return (int) (next_random() % (uint64_t) n);
}

static void
random_decimal(char *buf)
{
	char	   *p = buf;
	int			ndigits = 1 + random_below(19);
	int			point = random_below(10) < 7 ? random_below(ndigits + 1) : -1;

	if (random_below(2))
		*p++ = '-';
	for (int i = 0; i < ndigits; i++)
	{
		if (i == point)
			*p++ = '.';
		*p++ = (char) ('0' + random_below(10));
	}
	if (point == ndigits)
		*p++ = '.';
	if (random_below(10) < 4)
		p += sprintf(p, "%c%s%d", random_below(2) ? 'e' : 'E',
					 (const char *[]) {"", "+", "-"}[random_below(3)], random_below(45));
	*p = '\0';
}

int
main(int argc, char **argv)
{
	static const char *const within[] = {
		"0", "-0", "0.0", "-0.0", "0e0", "-0e-9999", "1", "-1", "0.5", "-12.75", "3e-4", "3E+4",
		"1.", "-.5", ".5", "1e22", "1e-22", "9e22", "9007199254740991", "-9007199254740991",
		"900719925474099.1", "9007199254740991e22", "9007199254740991e-22", "0.1", "0.2", "0.3",
		"123456789012345e-22", "0.0000000000000000000001", "1.0000000000000",
		"4503599627370497e-1", "2.225073858507201e-7", "1e0001",
	};
	static const char *const beyond[] = {
		"", "-", ".", "-.", "+1", " 1", "1 ", "1e", "1e+", "1e-", "1.2.3", "--1", "1-", "nan", "NaN",
		"inf", "-Infinity", "0x10", "0x1p3", "1e23", "1e-23", "9007199254740992", "1e00001",
		"0.00000000000000000000001", "1,5", "1_000", "1e2.5", "1d5",
		"12345678901234567890", "00000000000000000000000000000000000000000000000000000000000000001",
	};
	long		cases = argc > 1 ? atol(argv[1]) : 5000000;
	long		taken = 0;
	bool		ok = true;
	char		buf[64];

	printf("1..3\n");

	for (size_t i = 0; i < sizeof(within) / sizeof(within[0]); i++)
		ok &= check(within[i], true, &taken);
	report(ok, "decimals within 2^53 and 10^22 are read, as strtod reads them");

	ok = true;
	for (size_t i = 0; i < sizeof(beyond) / sizeof(beyond[0]); i++)
	{
		double		d;

		if (eoi_decimal_to_double(beyond[i], strlen(beyond[i]), &d))
		{
			printf("# \"%s\": taken, but it is beyond the fast path\n", beyond[i]);
			ok = false;
		}
	}
	report(ok, "what is not a short plain decimal is left to strtod");

	ok = true;
	taken = 0;
	for (long i = 0; i < cases && ok; i++)
	{
		random_decimal(buf);
		ok &= check(buf, false, &taken);
	}
	/* a path that took nothing would prove nothing */
	if (taken < cases / 2)
	{
		printf("# only %ld of %ld random decimals were taken\n", taken, cases);
		ok = false;
	}
	printf("# %ld of %ld random decimals taken, each as strtod reads it\n", taken, cases);
	report(ok, "random decimals are read as strtod reads them");

	return failures > 0;
}
