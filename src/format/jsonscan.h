/*-------------------------------------------------------------------------
 *
 * jsonscan.h
 *	  Format json: one pass over a message's top-level object, handing each
 *	  key and its value to the caller, without building a jsonb.  Plain C
 *	  with no server dependency, so that a fuzzer can drive it on its own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_JSONSCAN_H
#define EOI_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>

typedef enum EoiJsonKind
{
	EOI_JSON_NULL,
	EOI_JSON_TRUE,
	EOI_JSON_FALSE,
	EOI_JSON_NUMBER,
	EOI_JSON_STRING,
	EOI_JSON_NESTED				/* an object or an array */
} EoiJsonKind;

/*
 * A value of the top-level object.  data: a string's contents, unescaped
 * (pointing into the input when it has no escapes, else into scratch); a
 * number's or a nested value's JSON text, in the input.
 */
typedef struct EoiJsonToken
{
	EoiJsonKind kind;
	const char *data;
	size_t		len;
	bool		integer;		/* number: digits only, no fraction, no exponent */
	bool		exponent;		/* number: has an exponent */
} EoiJsonToken;

/* Called for each key of the top-level object, in order; false stops the scan. */
typedef bool (*EoiJsonFieldFn) (void *arg, const char *key, size_t key_len,
								const EoiJsonToken *value);

/*
 * The most nesting and the longest number the scan reads; beyond them it
 * declines (jsonb's path then reads the message, or reports what is wrong).
 */
#define EOI_JSON_SCAN_MAX_DEPTH 64
#define EOI_JSON_SCAN_MAX_NUMBER 1000

/*
 * Scan `len` bytes of `input`: one JSON object and nothing else but white
 * space.  Keys and strings are unescaped into `scratch`, which must hold
 * `len` bytes.  `utf8`: the database encoding is UTF-8 (a \u escape beyond
 * ASCII is read only then).
 *
 * Returns true when the input is an object that PostgreSQL's JSON parser
 * (as jsonb_in uses it) reads without error and this scan has read exactly
 * as that parser would; false otherwise, which is not a verdict: invalid
 * JSON, a value that is not an object, \u0000, a lone surrogate, nesting
 * deeper than EOI_JSON_SCAN_MAX_DEPTH, a number longer than
 * EOI_JSON_SCAN_MAX_NUMBER or with an exponent of 1000 or more (numeric's
 * limits are far beyond these), or `field` said stop.  Keys are handed to
 * `field` as they come, before the rest of the input is checked.
 */
extern bool eoi_json_scan_object(const char *input, size_t len, char *scratch, bool utf8,
								 EoiJsonFieldFn field, void *arg);

/*
 * Where the members of an object lie in its JSON text, as the writer of the
 * text noted them (avrojson.c): the object's own (parent -1) and those of
 * one of its members that is an object itself (`inner`).  A reader takes
 * them instead of scanning the text again.
 */
#define EOI_JSON_SPANS_MAX 64

typedef struct EoiJsonSpan
{
	int			parent;			/* -1, or the span of the object holding it */
	const char *name;			/* the member's name, unescaped */
	size_t		start;			/* its value: bytes [start, end) of the text */
	size_t		end;
} EoiJsonSpan;

typedef struct EoiJsonSpans
{
	const char *inner;			/* in: the member whose members are noted too */
	const char *text;			/* out: the text they are in */
	int			n;				/* out: the spans noted; 0 if none were */
	EoiJsonSpan span[EOI_JSON_SPANS_MAX];
} EoiJsonSpans;

extern int	eoi_json_span_find(const EoiJsonSpans *spans, int parent, const char *name);
extern bool eoi_json_span_token(const char *text, const EoiJsonSpan *span, char **scratch,
								bool utf8, EoiJsonToken *t);

#endif
