/*-------------------------------------------------------------------------
 *
 * decfloat.h
 *	  A short decimal read as a double precision value without strtod, when
 *	  one rounding gives the same value strtod would.  Plain C with no
 *	  server dependency, so that a test can compare it with strtod alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_DECFLOAT_H
#define EOI_DECFLOAT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Read the `len` bytes at `s` as a decimal: an optional '-', digits with an
 * optional '.' among or after them (at least one digit), and an optional
 * exponent ('e' or 'E', an optional sign, up to four digits), nothing else.
 * When its significant digits fit in 2^53 and the power of ten it is scaled
 * by is at most 10^22 either way, sets *out to the correctly rounded value
 * (the one strtod, and so float8in, returns) and returns true.  Anything
 * else (white space, '+', "NaN", "Infinity", hexadecimal, more digits, a
 * larger scale) returns false, and the caller reads the text as before.
 */
extern bool eoi_decimal_to_double(const char *s, size_t len, double *out);

#endif							/* EOI_DECFLOAT_H */
