/*-------------------------------------------------------------------------
 *
 * jsonscan.c
 *	  A strict scan of one JSON object per Kafka message, for format json.
 *
 * Format json used to parse each message into a jsonb (jsonb_in) and read
 * the keys back from it; most of a JSON row's cost was that parse, its
 * numeric_in for every number and the sorting of keys.  This scan reads the
 * top-level object once, hands each key with its value's text to decodejson.c
 * and keeps nothing else.  Nested objects and arrays are only checked here:
 * their text goes to jsonb_in later when a column takes them.
 *
 * It accepts a strict subset of what PostgreSQL's JSON parser accepts, and
 * declines (returns false) everything else, so that decodejson.c can fall back
 * to jsonb's path, which then reads the message or raises the very error
 * it always raised.  The grammar and lexical rules are PostgreSQL's
 * (src/common/jsonapi.c): white space is space, tab, CR and LF; a literal
 * or number must not run on into a letter, digit, '_' or a byte >= 0x80;
 * strings take no control characters; escapes are \" \\ \/ \b \f \n \r \t
 * and \uXXXX.  Declined although PostgreSQL may accept them: \u0000 and
 * lone surrogates (jsonb refuses them), \u beyond ASCII outside UTF-8
 * databases, nesting deeper than EOI_JSON_SCAN_MAX_DEPTH and numbers
 * beyond EOI_JSON_SCAN_MAX_NUMBER or with an exponent of 1000 or more
 * (numeric_in's limits lie far beyond: with these no number the scan takes
 * can fail in numeric_in, which jsonb_in runs on every number).
 *
 * Duplicate keys are all handed on, in order (jsonb keeps the last one).
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "format/jsonscan.h"

typedef struct Scan
{
	const char *p;
	const char *end;
	char	   *out;			/* next free byte of scratch */
	bool		utf8;
} Scan;

#define IS_WS(c) ((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
/* What PostgreSQL's lexer reads as part of a literal or number token. */
#define IS_WORD(c) (((c) >= 'a' && (c) <= 'z') || ((c) >= 'A' && (c) <= 'Z') || \
					IS_DIGIT(c) || (c) == '_' || ((unsigned char) (c) & 0x80))

static void
skip_ws(Scan *s)
{
	while (s->p < s->end && IS_WS(*s->p))
		s->p++;
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The code unit of the \uXXXX at p (its backslash), or -1. */
static long
code_unit(const Scan *s, const char *p)
{
	long		cu = 0;

	if (s->end - p < 6 || p[0] != '\\' || p[1] != 'u')
		return -1;
	for (int i = 2; i < 6; i++)
	{
		int			d = hex_digit(p[i]);

		if (d < 0)
			return -1;
		cu = (cu << 4) | d;
	}
	return cu;
}

/*
 * The code point of the escape at p ("\u..."), and in *width the bytes it
 * takes (6, or 12 for a surrogate pair); -1 where the scan declines.
 */
static long
unicode_escape(const Scan *s, const char *p, int *width)
{
	long		cp = code_unit(s, p);

	*width = 6;
	if (cp <= 0 || (cp >= 0xDC00 && cp <= 0xDFFF))
		return -1;				/* invalid, \u0000, or a lone low surrogate */
	if (cp >= 0xD800 && cp <= 0xDBFF)
	{
		long		lo = code_unit(s, p + 6);

		if (lo < 0xDC00 || lo > 0xDFFF)
			return -1;
		cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		*width = 12;
	}
	if (cp > 0x7F && !s->utf8)
		return -1;
	return cp;
}

static char *
put_utf8(char *out, long cp)
{
	if (cp < 0x80)
		*out++ = (char) cp;
	else if (cp < 0x800)
	{
		*out++ = (char) (0xC0 | (cp >> 6));
		*out++ = (char) (0x80 | (cp & 0x3F));
	}
	else if (cp < 0x10000)
	{
		*out++ = (char) (0xE0 | (cp >> 12));
		*out++ = (char) (0x80 | ((cp >> 6) & 0x3F));
		*out++ = (char) (0x80 | (cp & 0x3F));
	}
	else
	{
		*out++ = (char) (0xF0 | (cp >> 18));
		*out++ = (char) (0x80 | ((cp >> 12) & 0x3F));
		*out++ = (char) (0x80 | ((cp >> 6) & 0x3F));
		*out++ = (char) (0x80 | (cp & 0x3F));
	}
	return out;
}

/* The contents from..to (checked by scan_string) unescaped at s->out. */
static void
unescape(Scan *s, const char *from, const char *to)
{
	char	   *out = s->out;

	while (from < to)
	{
		int			width;

		if (*from != '\\')
		{
			*out++ = *from++;
			continue;
		}
		switch (from[1])
		{
			case 'b':
				*out++ = '\b';
				break;
			case 'f':
				*out++ = '\f';
				break;
			case 'n':
				*out++ = '\n';
				break;
			case 'r':
				*out++ = '\r';
				break;
			case 't':
				*out++ = '\t';
				break;
			case 'u':
				out = put_utf8(out, unicode_escape(s, from, &width));
				from += width;
				continue;
			default:			/* " \ / */
				*out++ = from[1];
				break;
		}
		from += 2;
	}
	s->out = out;
}

/*
 * Past the plain bytes of a string: up to the first quote, backslash or
 * control character (below 0x20) at or after p, or to the last bytes
 * before end that the caller reads one by one.  With SSE2 (every x86-64),
 * sixteen bytes at a time, to the exact byte: a byte is one of them if it
 * equals '"' or '\\', or if its unsigned minimum with 0x1F is itself.
 * Then eight at a time: a word has one of them if it has a zero byte after
 * an XOR with '"' or '\\', or a byte below 0x20 (the usual tests for a
 * zero or a small byte, which flag no byte of 0x80 and above); the word
 * that has one is left to the caller.
 */
#define ONES ((uint64_t) 0x0101010101010101)
#define HIGHS ((uint64_t) 0x8080808080808080)
#define HAS_ZERO(v) (((v) - ONES) & ~(v) & HIGHS)
#define HAS_BELOW(v, n) (((v) - ONES * (n)) & ~(v) & HIGHS)

static const char *
skip_plain(const char *p, const char *end)
{
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"');
	const __m128i backslash = _mm_set1_epi8('\\');
	const __m128i control = _mm_set1_epi8(0x1F);

	while (end - p >= 16)
	{
		__m128i		v = _mm_loadu_si128((const __m128i *) p);
		__m128i		hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
												  _mm_cmpeq_epi8(v, backslash)),
									   _mm_cmpeq_epi8(_mm_min_epu8(v, control), v));
		int			mask = _mm_movemask_epi8(hit);

		if (mask != 0)
			return p + __builtin_ctz((unsigned int) mask);
		p += 16;
	}
#endif
	while (end - p >= 8)
	{
		uint64_t	v;

		memcpy(&v, p, 8);
		if (HAS_ZERO(v ^ (ONES * '"')) | HAS_ZERO(v ^ (ONES * '\\')) | HAS_BELOW(v, 0x20))
			break;
		p += 8;
	}
	return p;
}

/*
 * The string at s->p (its opening quote); with `data`, its contents
 * unescaped: in the input when it has no escape, else in scratch.
 */
static bool
scan_string(Scan *s, const char **data, size_t *len)
{
	const char *start = ++s->p;
	bool		escaped = false;

	for (;;)
	{
		unsigned char c;

		s->p = skip_plain(s->p, s->end);
		if (s->p >= s->end)
			return false;
		c = (unsigned char) *s->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return false;
		if (c != '\\')
		{
			s->p++;
			continue;
		}
		escaped = true;
		if (s->end - s->p < 2)
			return false;
		switch (s->p[1])
		{
			case '"':
			case '\\':
			case '/':
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't':
				s->p += 2;
				break;
			case 'u':
				{
					int			width;

					if (unicode_escape(s, s->p, &width) < 0)
						return false;
					s->p += width;
					break;
				}
			default:
				return false;
		}
	}
	if (data != NULL)
	{
		if (!escaped)
		{
			*data = start;
			*len = (size_t) (s->p - start);
		}
		else
		{
			*data = s->out;
			unescape(s, start, s->p);
			*len = (size_t) (s->out - *data);
		}
	}
	s->p++;						/* the closing quote */
	return true;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?, within our limits */
static bool
scan_number(Scan *s, EoiJsonToken *t)
{
	const char *start = s->p;
	const char *p = s->p;
	const char *end = s->end;

	t->integer = true;
	t->exponent = false;
	if (p < end && *p == '-')
		p++;
	if (p >= end || !IS_DIGIT(*p))
		return false;
	if (*p++ != '0')
		while (p < end && IS_DIGIT(*p))
			p++;
	if (p < end && *p == '.')
	{
		t->integer = false;
		if (++p >= end || !IS_DIGIT(*p))
			return false;
		while (p < end && IS_DIGIT(*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E'))
	{
		int			magnitude = 0;

		t->integer = false;
		t->exponent = true;
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !IS_DIGIT(*p))
			return false;
		for (; p < end && IS_DIGIT(*p); p++)
		{
			magnitude = magnitude * 10 + (*p - '0');
			if (magnitude >= 1000)
				return false;
		}
	}
	if ((p < end && IS_WORD(*p)) || p - start > EOI_JSON_SCAN_MAX_NUMBER)
		return false;
	t->kind = EOI_JSON_NUMBER;
	t->data = start;
	t->len = (size_t) (p - start);
	s->p = p;
	return true;
}

static bool
scan_word(Scan *s, const char *word, size_t len)
{
	if ((size_t) (s->end - s->p) < len || memcmp(s->p, word, len) != 0)
		return false;
	s->p += len;
	return s->p == s->end || !IS_WORD(*s->p);
}

static bool scan_value(Scan *s, EoiJsonToken *t, int depth);

/*
 * After a member or element: past ',' and the white space after it, or
 * (*done) just past `close`.
 */
static bool
next_member(Scan *s, char close, bool *done)
{
	skip_ws(s);
	if (s->p >= s->end)
		return false;
	*done = (*s->p == close);
	if (!*done && *s->p != ',')
		return false;
	s->p++;
	if (!*done)
		skip_ws(s);
	return true;
}

/* The object or array at s->p, checked. */
static bool
scan_nested(Scan *s, int depth)
{
	bool		is_object = (*s->p == '{');
	char		close = is_object ? '}' : ']';
	bool		done = false;
	EoiJsonToken t;

	if (depth > EOI_JSON_SCAN_MAX_DEPTH)
		return false;
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == close)
	{
		s->p++;
		return true;
	}
	while (!done)
	{
		if (is_object)
		{
			if (s->p >= s->end || *s->p != '"' || !scan_string(s, NULL, NULL))
				return false;
			skip_ws(s);
			if (s->p >= s->end || *s->p != ':')
				return false;
			s->p++;
			skip_ws(s);
		}
		if (!scan_value(s, &t, depth) || !next_member(s, close, &done))
			return false;
	}
	return true;
}

/* The value at s->p; strings unescaped, nested values checked. */
static bool
scan_value(Scan *s, EoiJsonToken *t, int depth)
{
	const char *start = s->p;

	if (s->p >= s->end)
		return false;
	switch (*s->p)
	{
		case '"':
			t->kind = EOI_JSON_STRING;
			return scan_string(s, &t->data, &t->len);
		case '{':
		case '[':
			if (!scan_nested(s, depth + 1))
				return false;
			t->kind = EOI_JSON_NESTED;
			t->data = start;
			t->len = (size_t) (s->p - start);
			return true;
		case 't':
			t->kind = EOI_JSON_TRUE;
			return scan_word(s, "true", 4);
		case 'f':
			t->kind = EOI_JSON_FALSE;
			return scan_word(s, "false", 5);
		case 'n':
			t->kind = EOI_JSON_NULL;
			return scan_word(s, "null", 4);
		default:
			return scan_number(s, t);
	}
}

bool
eoi_json_scan_object(const char *input, size_t len, char *scratch, bool utf8,
					 EoiJsonFieldFn field, void *arg)
{
	Scan		s = {input, input + len, scratch, utf8};
	bool		done = false;

	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return false;
	s.p++;
	skip_ws(&s);
	if (s.p < s.end && *s.p == '}')
	{
		s.p++;
		done = true;
	}
	while (!done)
	{
		const char *key;
		size_t		key_len;
		EoiJsonToken value;

		if (s.p >= s.end || *s.p != '"' || !scan_string(&s, &key, &key_len))
			return false;
		skip_ws(&s);
		if (s.p >= s.end || *s.p != ':')
			return false;
		s.p++;
		skip_ws(&s);
		if (!scan_value(&s, &value, 1) || !field(arg, key, key_len, &value) ||
			!next_member(&s, '}', &done))
			return false;
	}
	skip_ws(&s);
	return s.p == s.end;
}

/* ---- spans ---- */

/* The span of member `name` of the object of span `parent`, or -1. */
int
eoi_json_span_find(const EoiJsonSpans *spans, int parent, const char *name)
{
	for (int i = 0; i < spans->n; i++)
		if (spans->span[i].parent == parent && strcmp(spans->span[i].name, name) == 0)
			return i;
	return -1;
}

/*
 * The token of a span's value, as a scan would give it: a string with an
 * escape unescaped at *scratch, which moves past it (the caller's scratch
 * holds the object's length, as for a scan).  The text was written as
 * valid JSON by the caller's own writer, which is trusted: a nested value
 * is not checked (nor its depth), a number not read.  False for what a
 * scan may decline or read otherwise (a string it declines, a number with
 * an exponent or beyond the length limit), so that the caller scans.
 */
bool
eoi_json_span_token(const char *text, const EoiJsonSpan *span, char **scratch, bool utf8,
					EoiJsonToken *t)
{
	const char *p = text + span->start;
	size_t		len = span->end - span->start;

	memset(t, 0, sizeof(*t));
	if (len == 0)
		return false;
	t->data = p;
	t->len = len;
	switch (p[0])
	{
		case 'n':
			t->kind = EOI_JSON_NULL;
			return len == 4;
		case 't':
			t->kind = EOI_JSON_TRUE;
			return len == 4;
		case 'f':
			t->kind = EOI_JSON_FALSE;
			return len == 5;
		case '{':
		case '[':
			t->kind = EOI_JSON_NESTED;
			return true;
		case '"':
			{
				Scan		s = {p, p + len, *scratch, utf8};

				t->kind = EOI_JSON_STRING;
				if (!scan_string(&s, &t->data, &t->len) || s.p != s.end)
					return false;
				*scratch = s.out;
				return true;
			}
		default:
			t->kind = EOI_JSON_NUMBER;
			t->exponent = memchr(p, 'e', len) != NULL || memchr(p, 'E', len) != NULL;
			t->integer = !t->exponent && memchr(p, '.', len) == NULL;
			return !t->exponent && len <= EOI_JSON_SCAN_MAX_NUMBER;
	}
}
