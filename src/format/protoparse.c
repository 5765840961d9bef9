/*-------------------------------------------------------------------------
 *
 * protoparse.c
 *	  The .proto files of a Protobuf schema, read into messages and enums
 *	  and linked: what format protobuf needs to decode a message, and no
 *	  more.
 *
 * A registry holds a Protobuf schema as the text of a .proto file, and the
 * files it imports as references (registry.c fetches them).  This reads
 * the language's proto2 and proto3 syntax: package, import, message
 * (nested), enum, oneof, map, field labels, and the field options
 * `default` and `packed`.  Everything else a file may hold is skipped
 * whole: options, reserved ranges, extensions, extend blocks, services.
 * Groups (a proto2 feature long deprecated) and editions are refused.
 *
 * The text is the job owner's registry's: every name, number and nesting is
 * checked, and an error names the file and the line.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "lib/stringinfo.h"
#include "miscadmin.h"

#include "base/pgcompat.h"
#include "format/protoschema.h"

/* Nothing in a .proto file needs more fields than this in one message. */
#define MAX_FIELDS 32767
/* A field number up to this is found by index; larger ones are searched. */
#define INDEXED_NUMBERS 4096

/* ---- the well-known types, built in ---- */

static const struct
{
	const char *name;
	const char *text;
}			builtin_files[] = {
	{"google/protobuf/timestamp.proto",
	"syntax = \"proto3\"; package google.protobuf; message Timestamp { int64 seconds = 1; int32 nanos = 2; }"},
	{"google/protobuf/duration.proto",
	"syntax = \"proto3\"; package google.protobuf; message Duration { int64 seconds = 1; int32 nanos = 2; }"},
	{"google/protobuf/wrappers.proto",
		"syntax = \"proto3\"; package google.protobuf;"
		" message DoubleValue { double value = 1; } message FloatValue { float value = 1; }"
		" message Int64Value { int64 value = 1; } message UInt64Value { uint64 value = 1; }"
		" message Int32Value { int32 value = 1; } message UInt32Value { uint32 value = 1; }"
		" message BoolValue { bool value = 1; } message StringValue { string value = 1; }"
	" message BytesValue { bytes value = 1; }"},
	{"google/protobuf/struct.proto",
		"syntax = \"proto3\"; package google.protobuf;"
		" message Struct { map<string, Value> fields = 1; }"
		" message Value { oneof kind { NullValue null_value = 1; double number_value = 2;"
		" string string_value = 3; bool bool_value = 4; Struct struct_value = 5; ListValue list_value = 6; } }"
		" enum NullValue { NULL_VALUE = 0; }"
	" message ListValue { repeated Value values = 1; }"},
	{"google/protobuf/empty.proto",
	"syntax = \"proto3\"; package google.protobuf; message Empty { }"},
	{"google/protobuf/any.proto",
	"syntax = \"proto3\"; package google.protobuf; message Any { string type_url = 1; bytes value = 2; }"},
	{"google/protobuf/field_mask.proto",
	"syntax = \"proto3\"; package google.protobuf; message FieldMask { repeated string paths = 1; }"},
	/* options live here; they are skipped, so nothing of it is needed */
	{"google/protobuf/descriptor.proto",
	"syntax = \"proto2\"; package google.protobuf;"},
	{"confluent/meta.proto",
	"syntax = \"proto3\"; package confluent;"},
	{"confluent/type/decimal.proto",
		"syntax = \"proto3\"; package confluent.type;"
	" message Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }"},
	{"google/protobuf/source_context.proto",
	"syntax = \"proto3\"; package google.protobuf; message SourceContext { string file_name = 1; }"},
	/* Google's common types, which Confluent's serializers count as known too */
	{"google/type/calendar_period.proto",
		"syntax = \"proto3\"; package google.type; enum CalendarPeriod { CALENDAR_PERIOD_UNSPECIFIED = 0;"
	" DAY = 1; WEEK = 2; FORTNIGHT = 3; MONTH = 4; QUARTER = 5; HALF = 6; YEAR = 7; }"},
	{"google/type/color.proto",
		"syntax = \"proto3\"; package google.type; import \"google/protobuf/wrappers.proto\";"
		" message Color { float red = 1; float green = 2; float blue = 3;"
	" google.protobuf.FloatValue alpha = 4; }"},
	{"google/type/date.proto",
	"syntax = \"proto3\"; package google.type; message Date { int32 year = 1; int32 month = 2; int32 day = 3; }"},
	{"google/type/datetime.proto",
		"syntax = \"proto3\"; package google.type; import \"google/protobuf/duration.proto\";"
		" message DateTime { int32 year = 1; int32 month = 2; int32 day = 3; int32 hours = 4; int32 minutes = 5;"
		" int32 seconds = 6; int32 nanos = 7;"
		" oneof time_offset { google.protobuf.Duration utc_offset = 8; TimeZone time_zone = 9; } }"
	" message TimeZone { string id = 1; string version = 2; }"},
	{"google/type/dayofweek.proto",
		"syntax = \"proto3\"; package google.type; enum DayOfWeek { DAY_OF_WEEK_UNSPECIFIED = 0;"
	" MONDAY = 1; TUESDAY = 2; WEDNESDAY = 3; THURSDAY = 4; FRIDAY = 5; SATURDAY = 6; SUNDAY = 7; }"},
	{"google/type/decimal.proto",
	"syntax = \"proto3\"; package google.type; message Decimal { string value = 1; }"},
	{"google/type/expr.proto",
		"syntax = \"proto3\"; package google.type; message Expr { string expression = 1; string title = 2;"
	" string description = 3; string location = 4; }"},
	{"google/type/fraction.proto",
	"syntax = \"proto3\"; package google.type; message Fraction { int64 numerator = 1; int64 denominator = 2; }"},
	{"google/type/interval.proto",
		"syntax = \"proto3\"; package google.type; import \"google/protobuf/timestamp.proto\";"
	" message Interval { google.protobuf.Timestamp start_time = 1; google.protobuf.Timestamp end_time = 2; }"},
	{"google/type/latlng.proto",
	"syntax = \"proto3\"; package google.type; message LatLng { double latitude = 1; double longitude = 2; }"},
	{"google/type/money.proto",
		"syntax = \"proto3\"; package google.type;"
	" message Money { string currency_code = 1; int64 units = 2; int32 nanos = 3; }"},
	{"google/type/month.proto",
		"syntax = \"proto3\"; package google.type; enum Month { MONTH_UNSPECIFIED = 0; JANUARY = 1;"
		" FEBRUARY = 2; MARCH = 3; APRIL = 4; MAY = 5; JUNE = 6; JULY = 7; AUGUST = 8; SEPTEMBER = 9;"
	" OCTOBER = 10; NOVEMBER = 11; DECEMBER = 12; }"},
	{"google/type/phone_number.proto",
		"syntax = \"proto3\"; package google.type; message PhoneNumber {"
		" message ShortCode { string region_code = 1; string number = 2; }"
	" oneof kind { string e164_number = 1; ShortCode short_code = 2; } string extension = 3; }"},
	{"google/type/postal_address.proto",
		"syntax = \"proto3\"; package google.type; message PostalAddress { int32 revision = 1;"
		" string region_code = 2; string language_code = 3; string postal_code = 4; string sorting_code = 5;"
		" string administrative_area = 6; string locality = 7; string sublocality = 8;"
	" repeated string address_lines = 9; repeated string recipients = 10; string organization = 11; }"},
	{"google/type/quaternion.proto",
		"syntax = \"proto3\"; package google.type;"
	" message Quaternion { double x = 1; double y = 2; double z = 3; double w = 4; }"},
	{"google/type/timeofday.proto",
		"syntax = \"proto3\"; package google.type;"
	" message TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; int32 nanos = 4; }"},
};

static const struct
{
	const char *name;
	EoiProtoWellKnown kind;
}			well_known_messages[] = {
	{"google.protobuf.Timestamp", WK_TIMESTAMP},
	{"google.protobuf.Duration", WK_DURATION},
	{"google.protobuf.DoubleValue", WK_WRAPPER},
	{"google.protobuf.FloatValue", WK_WRAPPER},
	{"google.protobuf.Int64Value", WK_WRAPPER},
	{"google.protobuf.UInt64Value", WK_WRAPPER},
	{"google.protobuf.Int32Value", WK_WRAPPER},
	{"google.protobuf.UInt32Value", WK_WRAPPER},
	{"google.protobuf.BoolValue", WK_WRAPPER},
	{"google.protobuf.StringValue", WK_WRAPPER},
	{"google.protobuf.BytesValue", WK_WRAPPER},
	{"google.protobuf.Struct", WK_STRUCT},
	{"google.protobuf.Value", WK_VALUE},
	{"google.protobuf.ListValue", WK_LIST_VALUE},
	{"confluent.type.Decimal", WK_DECIMAL},
};

static const struct
{
	const char *name;
	EoiProtoType type;
}			scalar_types[] = {
	{"double", PT_DOUBLE}, {"float", PT_FLOAT}, {"int64", PT_INT64}, {"uint64", PT_UINT64},
	{"int32", PT_INT32}, {"fixed64", PT_FIXED64}, {"fixed32", PT_FIXED32}, {"bool", PT_BOOL},
	{"string", PT_STRING}, {"bytes", PT_BYTES}, {"uint32", PT_UINT32}, {"sfixed32", PT_SFIXED32},
	{"sfixed64", PT_SFIXED64}, {"sint32", PT_SINT32}, {"sint64", PT_SINT64},
};

/* ---- the lexer ---- */

typedef enum TokenKind
{
	T_EOF, T_IDENT, T_NUMBER, T_STRING, T_SYMBOL
} TokenKind;

typedef struct Lexer
{
	const char *p;				/* what is not read yet */
	int			line;
	const char *file;			/* the file's name, for errors */
	const char *what;			/* the schema, for errors */
	TokenKind	kind;			/* the current token */
	const char *start;
	int			len;
	StringInfoData string;		/* a string token's bytes, unescaped */
} Lexer;

static void
syntax_error(Lexer *lx, const char *message)
{
	if (lx->line == 0)			/* a serialized descriptor's */
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s cannot be read as a Protobuf schema: the descriptor %s: %s",
						lx->what, lx->file, message)));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s cannot be read as a Protobuf schema: %s, line %d: %s",
					lx->what, lx->file, lx->line, message)));
}

/* A feature the parser does not read: the record's error too (22023), with a hint. */
static void
unsupported(Lexer *lx, const char *message, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 lx->line == 0 ?
			 errmsg("%s uses what format protobuf does not read: the descriptor %s: %s",
					lx->what, lx->file, message) :
			 errmsg("%s uses what format protobuf does not read: %s, line %d: %s",
					lx->what, lx->file, lx->line, message),
			 errhint("%s", hint)));
}

/* Skip white space and comments. */
static void
skip_space(Lexer *lx)
{
	for (;;)
	{
		if (*lx->p == '\n')
			lx->line++;
		if (isspace((unsigned char) *lx->p))
			lx->p++;
		else if (lx->p[0] == '/' && lx->p[1] == '/')
		{
			while (*lx->p && *lx->p != '\n')
				lx->p++;
		}
		else if (lx->p[0] == '/' && lx->p[1] == '*')
		{
			lx->p += 2;
			while (*lx->p && !(lx->p[0] == '*' && lx->p[1] == '/'))
			{
				if (*lx->p == '\n')
					lx->line++;
				lx->p++;
			}
			if (!*lx->p)
				syntax_error(lx, "a comment is not closed");
			lx->p += 2;
		}
		else
			return;
	}
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

/* A string literal at lx->p, unescaped into lx->string (appended). */
static void
read_string(Lexer *lx)
{
	char		quote = *lx->p++;

	while (*lx->p != quote)
	{
		char		c = *lx->p++;

		if (c == '\0' || c == '\n')
			syntax_error(lx, "a string is not closed");
		if (c != '\\')
		{
			appendStringInfoChar(&lx->string, c);
			continue;
		}
		c = *lx->p++;
		if (c != '\0' && strchr("ntrabfv\\'\"?", c) != NULL)
		{
			static const char from[] = "ntrabfv\\'\"?";
			static const char to[] = "\n\t\r\a\b\f\v\\'\"?";

			appendStringInfoChar(&lx->string, to[strchr(from, c) - from]);
			continue;
		}
		switch (c)
		{
			case 'x':
			case 'X':
				{
					int			v = 0;
					int			n = 0;

					while (n < 2 && hex_digit(*lx->p) >= 0)
						v = v * 16 + hex_digit(*lx->p++), n++;
					if (n == 0)
						syntax_error(lx, "\\x without hex digits in a string");
					appendStringInfoChar(&lx->string, (char) v);
					break;
				}
			default:
				if (c >= '0' && c <= '7')
				{
					int			v = c - '0';
					int			n = 1;

					while (n < 3 && *lx->p >= '0' && *lx->p <= '7')
						v = v * 8 + (*lx->p++ - '0'), n++;
					if (v > 255)
						syntax_error(lx, "an octal escape beyond a byte in a string");
					appendStringInfoChar(&lx->string, (char) v);
					break;
				}
				syntax_error(lx, (c >= 0x20 && c < 0x7f) ? psprintf("the escape \\%c in a string", c) :
							 psprintf("the escape \\ before byte 0x%02x in a string", (unsigned char) c));
		}
	}
	lx->p++;
}

static void
next_token(Lexer *lx)
{
	char		c;

	skip_space(lx);
	lx->start = lx->p;
	c = *lx->p;
	if (c == '\0')
	{
		lx->kind = T_EOF;
		lx->len = 0;
		return;
	}
	if (isalpha((unsigned char) c) || c == '_' ||
		(c == '.' && (isalpha((unsigned char) lx->p[1]) || lx->p[1] == '_')))
	{
		lx->p++;
		while (isalnum((unsigned char) *lx->p) || *lx->p == '_' || *lx->p == '.')
			lx->p++;
		lx->kind = T_IDENT;
	}
	else if (isdigit((unsigned char) c) || (c == '.' && isdigit((unsigned char) lx->p[1])))
	{
		lx->p++;
		while (isalnum((unsigned char) *lx->p) || *lx->p == '.' ||
			   ((*lx->p == '+' || *lx->p == '-') && (lx->p[-1] == 'e' || lx->p[-1] == 'E') &&
				lx->start[1] != 'x' && lx->start[1] != 'X'))
			lx->p++;
		lx->kind = T_NUMBER;
	}
	else if (c == '"' || c == '\'')
	{
		/* adjacent strings are one */
		resetStringInfo(&lx->string);
		do
		{
			read_string(lx);
			skip_space(lx);
		} while (*lx->p == '"' || *lx->p == '\'');
		lx->kind = T_STRING;
	}
	else
	{
		lx->p++;
		lx->kind = T_SYMBOL;
	}
	lx->len = (int) (lx->p - lx->start);
}

static bool
is_symbol(Lexer *lx, char c)
{
	return lx->kind == T_SYMBOL && lx->start[0] == c;
}

static bool
is_word(Lexer *lx, const char *word)
{
	return lx->kind == T_IDENT && lx->len == (int) strlen(word) &&
		strncmp(lx->start, word, lx->len) == 0;
}

/* The current token for an error: at most 64 bytes, other than printable ASCII in hex. */
static const char *
token_text(Lexer *lx)
{
	StringInfoData out;

	if (lx->kind == T_EOF)
		return "the end of the file";
	initStringInfo(&out);
	appendStringInfoChar(&out, '"');
	for (int i = 0; i < Min(lx->len, 64); i++)
	{
		unsigned char c = (unsigned char) lx->start[i];

		if (c >= 0x20 && c < 0x7f)
			appendStringInfoChar(&out, (char) c);
		else
			appendStringInfo(&out, "\\x%02x", c);
	}
	appendStringInfoChar(&out, '"');
	return out.data;
}

static void
expect_symbol(Lexer *lx, char c)
{
	next_token(lx);
	if (!is_symbol(lx, c))
		syntax_error(lx, psprintf("expected \"%c\", found %s", c, token_text(lx)));
}

/* The next token, an identifier: a copy of it. */
static char *
take_ident(Lexer *lx, const char *of)
{
	next_token(lx);
	if (lx->kind != T_IDENT)
		syntax_error(lx, psprintf("expected %s, found %s", of, token_text(lx)));
	return pnstrdup(lx->start, lx->len);
}

/* A simple name: an identifier without dots. */
static char *
take_name(Lexer *lx, const char *of)
{
	char	   *name = take_ident(lx, of);

	if (strchr(name, '.') != NULL)
		syntax_error(lx, psprintf("%s \"%s\" has a dot", of, name));
	return name;
}

/* The next token, an integer, with an optional minus sign before it. */
static int64
take_integer(Lexer *lx, const char *of)
{
	bool		negative = false;
	char	   *text;
	char	   *end;
	int64		v;

	next_token(lx);
	if (is_symbol(lx, '-'))
	{
		negative = true;
		next_token(lx);
	}
	if (lx->kind != T_NUMBER)
		syntax_error(lx, psprintf("expected %s, found %s", of, token_text(lx)));
	text = pnstrdup(lx->start, lx->len);
	errno = 0;
	v = strtoll(text, &end, 0);
	if (*end != '\0' || errno != 0)
		syntax_error(lx, psprintf("%s \"%s\" is not an integer in range", of, text));
	return negative ? -v : v;
}

/* Are the next characters (past space and comments) `c`?  Nothing is read. */
static bool
next_char_is(Lexer *lx, char c)
{
	const char *p = lx->p;
	int			line = lx->line;
	bool		result;

	skip_space(lx);
	result = *lx->p == c;
	lx->p = p;
	lx->line = line;
	return result;
}

/* Skip a block whose "{" is the current token, through its "}". */
static void
skip_block(Lexer *lx)
{
	int			depth = 1;

	while (depth > 0)
	{
		next_token(lx);
		if (lx->kind == T_EOF)
			syntax_error(lx, "a block is not closed");
		if (is_symbol(lx, '{'))
			depth++;
		else if (is_symbol(lx, '}'))
			depth--;
	}
}

/* Skip a statement through its ";" (braces and brackets in it included). */
static void
skip_statement(Lexer *lx)
{
	int			depth = 0;

	for (;;)
	{
		next_token(lx);
		if (lx->kind == T_EOF)
			syntax_error(lx, "a statement does not end with \";\"");
		if (is_symbol(lx, '{') || is_symbol(lx, '[') || is_symbol(lx, '('))
			depth++;
		else if (is_symbol(lx, '}') || is_symbol(lx, ']') || is_symbol(lx, ')'))
			depth--;
		else if (is_symbol(lx, ';') && depth <= 0)
			return;
		if (depth < 0)
			syntax_error(lx, psprintf("unexpected %s", token_text(lx)));
	}
}

/* Skip a definition that ends with a block: its name, then "{ ... }". */
static void
skip_definition(Lexer *lx)
{
	do
	{
		next_token(lx);
		if (lx->kind == T_EOF || is_symbol(lx, ';') || is_symbol(lx, '}'))
			syntax_error(lx, psprintf("expected \"{\", found %s", token_text(lx)));
	} while (!is_symbol(lx, '{'));
	skip_block(lx);
}

/* ---- the parser ---- */

typedef struct Parser
{
	Lexer		lx;
	EoiProtoFile *file;
	Lexer	   *lx_for_desc;	/* a serialized descriptor's: names it in errors */
} Parser;

typedef struct MessageBuilder
{
	EoiProtoMessage *msg;
	List	   *fields;			/* EoiProtoField * */
	List	   *nested;
} MessageBuilder;

static char *
qualified(const char *scope, const char *name)
{
	return scope[0] ? psprintf("%s.%s", scope, name) : pstrdup(name);
}

static bool
scalar_type(const char *name, EoiProtoType *type)
{
	for (int i = 0; i < lengthof(scalar_types); i++)
		if (strcmp(name, scalar_types[i].name) == 0)
		{
			*type = scalar_types[i].type;
			return true;
		}
	return false;
}

/* A field's type, by name: a scalar, or a message or enum linked later. */
static void
set_field_type(EoiProtoField *f, const char *name, const char *scope)
{
	if (scalar_type(name, &f->type))
		return;
	f->type = PT_MESSAGE;		/* or PT_ENUM: linking decides */
	f->type_name = name;
	f->scope = scope;
}

/* The value of an option: a token, a minus sign and a number, or a block. */
static char *
option_value(Lexer *lx)
{
	next_token(lx);
	if (is_symbol(lx, '-'))
	{
		next_token(lx);
		return psprintf("-%.*s", lx->len, lx->start);
	}
	if (is_symbol(lx, '{'))
	{
		skip_block(lx);
		return NULL;
	}
	if (lx->kind == T_STRING)
		return pnstrdup(lx->string.data, lx->string.len);
	if (lx->kind == T_EOF || lx->kind == T_SYMBOL)
		syntax_error(lx, psprintf("expected an option's value, found %s", token_text(lx)));
	return pnstrdup(lx->start, lx->len);
}

/* A field's options "[name = value, ...]", if any; then its ";". */
static void
field_options(Lexer *lx, EoiProtoField *f)
{
	next_token(lx);
	if (is_symbol(lx, '['))
	{
		do
		{
			StringInfoData name;
			char	   *value;

			initStringInfo(&name);
			for (;;)
			{
				next_token(lx);
				if (is_symbol(lx, '=') || lx->kind == T_EOF)
					break;
				appendBinaryStringInfo(&name, lx->start, lx->len);
			}
			if (lx->kind == T_EOF)
				syntax_error(lx, "field options are not closed");
			value = option_value(lx);
			if (strcmp(name.data, "default") == 0 && f != NULL)
				f->default_text = value;
			next_token(lx);
		} while (is_symbol(lx, ','));
		if (!is_symbol(lx, ']'))
			syntax_error(lx, psprintf("expected \"]\", found %s", token_text(lx)));
		next_token(lx);
	}
	if (!is_symbol(lx, ';'))
		syntax_error(lx, psprintf("expected \";\", found %s", token_text(lx)));
}

static int32
field_number(Lexer *lx)
{
	int64		n = take_integer(lx, "a field number");

	if (n < 1 || n > EOI_PROTO_MAX_FIELD_NUMBER)
		syntax_error(lx, psprintf("field number " INT64_FORMAT " is out of range (1 to %d)",
								  n, EOI_PROTO_MAX_FIELD_NUMBER));
	return (int32) n;
}

/* "type name = number [options];", the label (if any) read already. */
/* Add a field to the message being built, within the fields a message may have. */
static void
add_field(Lexer *lx, MessageBuilder *mb, EoiProtoField *f)
{
	if (list_length(mb->fields) >= MAX_FIELDS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s has a message with more than %d fields: %s", lx->what, MAX_FIELDS,
						mb->msg->full_name)));
	mb->fields = lappend(mb->fields, f);
}

static EoiProtoField *
parse_field(Parser *ps, MessageBuilder *mb, char *type, bool repeated, bool required, bool optional,
			int oneof)
{
	Lexer	   *lx = &ps->lx;
	EoiProtoField *f = palloc0(sizeof(EoiProtoField));

	if (strcmp(type, "group") == 0)
		unsupported(lx, "a group field",
					"Groups are a deprecated proto2 feature: declare the group's fields as a message and the field with its type.");
	set_field_type(f, type, mb->msg->full_name);
	f->name = take_name(lx, "a field name");
	expect_symbol(lx, '=');
	f->number = field_number(lx);
	f->repeated = repeated;
	f->required = required;
	/* proto3's optional; proto2's fields other than repeated ones; oneofs */
	f->presence = !repeated && (optional || required || !ps->file->proto3 || oneof >= 0);
	f->oneof = oneof;
	field_options(lx, f);
	add_field(lx, mb, f);
	return f;
}

static void index_fields(Lexer *lx, EoiProtoMessage *msg);

/* "map<K, V> name = number [options];": a field of an entry message. */
static void
parse_map_field(Parser *ps, MessageBuilder *mb)
{
	Lexer	   *lx = &ps->lx;
	char	   *key_type = (expect_symbol(lx, '<'), take_ident(lx, "a map's key type"));
	char	   *value_type = (expect_symbol(lx, ','), take_ident(lx, "a map's value type"));
	EoiProtoField *f = palloc0(sizeof(EoiProtoField));
	EoiProtoMessage *entry = palloc0(sizeof(EoiProtoMessage));
	StringInfoData entry_name;
	EoiProtoType kt;

	expect_symbol(lx, '>');
	if (!scalar_type(key_type, &kt) || kt == PT_DOUBLE || kt == PT_FLOAT || kt == PT_BYTES)
		syntax_error(lx, psprintf("a map's key type must be an integer, bool or string type, not %s", key_type));
	f->name = take_name(lx, "a field name");
	expect_symbol(lx, '=');
	f->number = field_number(lx);
	f->repeated = true;
	f->oneof = -1;
	field_options(lx, NULL);

	/* the entry message protoc makes: "counts" gets "CountsEntry" */
	initStringInfo(&entry_name);
	for (const char *s = f->name; *s; s++)
	{
		if (*s == '_')
			continue;
		appendStringInfoChar(&entry_name, (s == f->name || s[-1] == '_') ? pg_ascii_toupper(*s) : *s);
	}
	appendStringInfoString(&entry_name, "Entry");
	entry->full_name = qualified(mb->msg->full_name, entry_name.data);
	entry->map_entry = true;
	entry->nfields = 2;
	entry->fields = palloc0(sizeof(EoiProtoField) * 2);
	entry->fields[0].name = "key";
	entry->fields[0].number = 1;
	entry->fields[0].type = kt;
	entry->fields[0].oneof = -1;
	entry->fields[1].name = "value";
	entry->fields[1].number = 2;
	entry->fields[1].oneof = -1;
	/* the value's type is named from the map's message */
	set_field_type(&entry->fields[1], value_type, mb->msg->full_name);
	index_fields(lx, entry);
	/*
	 * A type for the field, not a declaration: Confluent's readers count
	 * the messages the text declares in a message-index path, so it is
	 * not among the nested messages.
	 */
	ps->file->all_messages = lappend(ps->file->all_messages, entry);

	f->type = PT_MESSAGE;
	f->type_name = psprintf(".%s", entry->full_name);
	f->scope = "";
	add_field(lx, mb, f);
}

/* An enum's values from the lists read, and the enum among the file's. */
static void
finish_enum(Parser *ps, EoiProtoEnum *e, List *names, List *numbers)
{
	ListCell   *lc;
	int			i = 0;

	e->nvalues = list_length(names);
	e->names = palloc(sizeof(char *) * Max(e->nvalues, 1));
	e->numbers = palloc(sizeof(int32) * Max(e->nvalues, 1));
	foreach(lc, names)
	{
		e->names[i] = lfirst(lc);
		e->numbers[i] = list_nth_int(numbers, i);
		i++;
	}
	ps->file->all_enums = lappend(ps->file->all_enums, e);
}

static EoiProtoEnum *
parse_enum(Parser *ps, const char *scope)
{
	Lexer	   *lx = &ps->lx;
	EoiProtoEnum *e = palloc0(sizeof(EoiProtoEnum));
	List	   *names = NIL;
	List	   *numbers = NIL;

	e->full_name = qualified(scope, take_name(lx, "an enum's name"));
	expect_symbol(lx, '{');
	for (;;)
	{
		next_token(lx);
		if (is_symbol(lx, '}'))
			break;
		if (is_symbol(lx, ';'))
			continue;
		if (is_word(lx, "option") || is_word(lx, "reserved"))
		{
			skip_statement(lx);
			continue;
		}
		if (lx->kind != T_IDENT)
			syntax_error(lx, psprintf("expected an enum value, found %s", token_text(lx)));
		names = lappend(names, pnstrdup(lx->start, lx->len));
		expect_symbol(lx, '=');
		{
			int64		n = take_integer(lx, "an enum value's number");

			if (n < PG_INT32_MIN || n > PG_INT32_MAX)
				syntax_error(lx, "an enum value's number is out of range");
			numbers = lappend_int(numbers, (int) n);
		}
		field_options(lx, NULL);
	}
	finish_enum(ps, e, names, numbers);
	return e;
}

static EoiProtoMessage *parse_message(Parser *ps, const char *scope, int depth);

/*
 * The message `mb` has built, its lists made arrays: its fields indexed
 * (each naming a oneof it has), and a map entry's checked: key 1 and
 * value 2, zeros when absent.
 */
static void
finish_message(Lexer *lx, MessageBuilder *mb)
{
	EoiProtoMessage *msg = mb->msg;
	ListCell   *lc;
	int			i = 0;

	msg->nfields = list_length(mb->fields);
	msg->fields = palloc0(sizeof(EoiProtoField) * Max(msg->nfields, 1));
	foreach(lc, mb->fields)
	{
		EoiProtoField *f = lfirst(lc);

		if (f->oneof >= msg->noneofs)
			syntax_error(lx, psprintf("field %s names oneof %d of %d", f->name, f->oneof, msg->noneofs));
		msg->fields[i++] = *f;
	}
	msg->nnested = list_length(mb->nested);
	msg->nested = palloc(sizeof(EoiProtoMessage *) * Max(msg->nnested, 1));
	i = 0;
	foreach(lc, mb->nested)
		msg->nested[i++] = lfirst(lc);
	index_fields(lx, msg);
	if (!msg->map_entry)
		return;
	if (msg->nfields != 2 || msg->fields[0].number != 1 || msg->fields[1].number != 2 ||
		msg->fields[0].repeated || msg->fields[1].repeated)
		syntax_error(lx, psprintf("map entry %s does not have exactly the fields key = 1 and value = 2",
								  msg->full_name));
	msg->fields[0].presence = msg->fields[1].presence = false;
}

/*
 * "option map_entry = true;" (the current token is "option"), read whole
 * if so: how Confluent's registry writes a map's entry message, declared.
 */
static bool
is_map_entry_option(Lexer *lx)
{
	const char *p = lx->p;
	int			line = lx->line;

	next_token(lx);
	if (is_word(lx, "map_entry"))
	{
		next_token(lx);
		if (is_symbol(lx, '='))
		{
			next_token(lx);
			if (is_word(lx, "true"))
			{
				expect_symbol(lx, ';');
				return true;
			}
		}
	}
	lx->p = p;
	lx->line = line;
	return false;
}

/* "oneof name { fields }" */
static void
parse_oneof(Parser *ps, MessageBuilder *mb)
{
	Lexer	   *lx = &ps->lx;
	int			index = mb->msg->noneofs++;

	(void) take_name(lx, "a oneof's name");
	expect_symbol(lx, '{');
	for (;;)
	{
		next_token(lx);
		if (is_symbol(lx, '}'))
			break;
		if (is_symbol(lx, ';'))
			continue;
		if (is_word(lx, "option"))
		{
			skip_statement(lx);
			continue;
		}
		if (lx->kind != T_IDENT)
			syntax_error(lx, psprintf("expected a field of a oneof, found %s", token_text(lx)));
		(void) parse_field(ps, mb, pnstrdup(lx->start, lx->len), false, false, false, index);
	}
}

static int
number_cmp(const void *a, const void *b, void *arg)
{
	const EoiProtoField *fields = arg;
	int32		x = fields[*(const int *) a].number;
	int32		y = fields[*(const int *) b].number;

	return (x > y) - (x < y);
}

static int
name_cmp(const void *a, const void *b, void *arg)
{
	const EoiProtoField *fields = arg;

	return strcmp(fields[*(const int *) a].name, fields[*(const int *) b].name);
}

static void
duplicate_fields(Lexer *lx, const EoiProtoMessage *msg, const EoiProtoField *a, const EoiProtoField *b)
{
	syntax_error(lx, psprintf("message %s has two fields %s (%d) and %s (%d)", msg->full_name,
							  a->name, a->number, b->name, b->number));
}

/*
 * The lookup of a message's fields by number, duplicate numbers and names
 * refused: by index when the numbers are dense enough (the largest no more
 * than INDEXED_NUMBERS, and not far beyond the field count, so that a
 * schema's text cannot make large tables of few fields), else by binary
 * search of the fields sorted by number.
 */
static void
index_fields(Lexer *lx, EoiProtoMessage *msg)
{
	int			n = msg->nfields;
	int		   *by_name = palloc(sizeof(int) * Max(n, 1));
	int32		max = 0;

	msg->sorted = palloc(sizeof(int) * Max(n, 1));
	for (int i = 0; i < n; i++)
		msg->sorted[i] = by_name[i] = i;
	qsort_arg(msg->sorted, n, sizeof(int), number_cmp, msg->fields);
	qsort_arg(by_name, n, sizeof(int), name_cmp, msg->fields);
	for (int i = 1; i < n; i++)
	{
		if (msg->fields[msg->sorted[i]].number == msg->fields[msg->sorted[i - 1]].number)
			duplicate_fields(lx, msg, &msg->fields[msg->sorted[i - 1]], &msg->fields[msg->sorted[i]]);
		if (strcmp(msg->fields[by_name[i]].name, msg->fields[by_name[i - 1]].name) == 0)
			duplicate_fields(lx, msg, &msg->fields[by_name[i - 1]], &msg->fields[by_name[i]]);
	}
	pfree(by_name);
	if (n > 0)
		max = msg->fields[msg->sorted[n - 1]].number;
	msg->by_number_size = 0;
	if (max <= INDEXED_NUMBERS && max <= 4 * n + 16)
	{
		msg->by_number_size = max + 1;
		msg->by_number = palloc0(sizeof(int16) * msg->by_number_size);
		for (int i = 0; i < n; i++)
			msg->by_number[msg->fields[i].number] = (int16) (i + 1);
	}
}

static EoiProtoMessage *
parse_message(Parser *ps, const char *scope, int depth)
{
	Lexer	   *lx = &ps->lx;
	MessageBuilder mb = {0};

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	if (depth > EOI_PROTO_MAX_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s nests messages deeper than format protobuf reads: %s, line %d",
						lx->what, lx->file, lx->line),
				 errhint("Messages are read nested at most %d levels deep.", EOI_PROTO_MAX_DEPTH)));
	mb.msg = palloc0(sizeof(EoiProtoMessage));
	mb.msg->full_name = qualified(scope, take_name(lx, "a message's name"));
	ps->file->all_messages = lappend(ps->file->all_messages, mb.msg);
	expect_symbol(lx, '{');
	for (;;)
	{
		bool		repeated = false;
		bool		required = false;
		bool		optional = false;

		next_token(lx);
		if (is_symbol(lx, '}'))
			break;
		if (lx->kind == T_EOF)
			syntax_error(lx, psprintf("message %s is not closed", mb.msg->full_name));
		if (is_symbol(lx, ';'))
			continue;
		if (is_word(lx, "message"))
		{
			mb.nested = lappend(mb.nested, parse_message(ps, mb.msg->full_name, depth + 1));
			continue;
		}
		if (is_word(lx, "enum"))
		{
			(void) parse_enum(ps, mb.msg->full_name);
			continue;
		}
		if (is_word(lx, "option") && is_map_entry_option(lx))
		{
			mb.msg->map_entry = true;
			continue;
		}
		if (is_word(lx, "option") || is_word(lx, "reserved") || is_word(lx, "extensions"))
		{
			skip_statement(lx);
			continue;
		}
		if (is_word(lx, "extend"))
		{
			skip_definition(lx);
			continue;
		}
		if (is_word(lx, "oneof"))
		{
			parse_oneof(ps, &mb);
			continue;
		}
		if (is_word(lx, "map") && next_char_is(lx, '<'))
		{
			parse_map_field(ps, &mb);
			continue;
		}
		if (lx->kind != T_IDENT)
			syntax_error(lx, psprintf("expected a field, found %s", token_text(lx)));
		if (is_word(lx, "repeated") || is_word(lx, "required") || is_word(lx, "optional"))
		{
			repeated = is_word(lx, "repeated");
			required = is_word(lx, "required");
			optional = is_word(lx, "optional");
			next_token(lx);
			if (lx->kind != T_IDENT)
				syntax_error(lx, psprintf("expected a field's type, found %s", token_text(lx)));
		}
		(void) parse_field(ps, &mb, pnstrdup(lx->start, lx->len), repeated, required, optional, -1);
	}

	finish_message(lx, &mb);
	return mb.msg;
}

/* The file's top-level messages, in order. */
static void
set_messages(EoiProtoFile *file, List *messages)
{
	ListCell   *lc;
	int			i = 0;

	file->nmessages = list_length(messages);
	file->messages = palloc(sizeof(EoiProtoMessage *) * Max(file->nmessages, 1));
	foreach(lc, messages)
		file->messages[i++] = lfirst(lc);
}

static EoiProtoFile *
parse_file(const char *name, const char *text, const char *what)
{
	Parser		ps = {{0}};
	Lexer	   *lx = &ps.lx;
	EoiProtoFile *file = palloc0(sizeof(EoiProtoFile));
	List	   *messages = NIL;

	file->name = name ? pstrdup(name) : NULL;
	file->package = "";
	ps.file = file;
	lx->p = text;
	lx->line = 1;
	lx->file = name ? name : "the schema";
	lx->what = what;
	initStringInfo(&lx->string);
	for (;;)
	{
		next_token(lx);
		if (lx->kind == T_EOF)
			break;
		if (is_symbol(lx, ';'))
			continue;
		if (is_word(lx, "syntax"))
		{
			expect_symbol(lx, '=');
			next_token(lx);
			if (lx->kind != T_STRING ||
				(strcmp(lx->string.data, "proto2") != 0 && strcmp(lx->string.data, "proto3") != 0))
				syntax_error(lx, "syntax is neither \"proto2\" nor \"proto3\"");
			file->proto3 = strcmp(lx->string.data, "proto3") == 0;
			expect_symbol(lx, ';');
		}
		else if (is_word(lx, "edition"))
			unsupported(lx, "an edition",
						"Format protobuf reads proto2 and proto3 files; write the schema with syntax = \"proto3\".");
		else if (is_word(lx, "package"))
		{
			file->package = take_ident(lx, "a package name");
			expect_symbol(lx, ';');
		}
		else if (is_word(lx, "import"))
		{
			next_token(lx);
			if (is_word(lx, "public") || is_word(lx, "weak"))
				next_token(lx);
			if (lx->kind != T_STRING)
				syntax_error(lx, psprintf("expected the imported file's name, found %s", token_text(lx)));
			file->imports = lappend(file->imports, pnstrdup(lx->string.data, lx->string.len));
			expect_symbol(lx, ';');
		}
		else if (is_word(lx, "option"))
			skip_statement(lx);
		else if (is_word(lx, "message"))
			messages = lappend(messages, parse_message(&ps, file->package, 1));
		else if (is_word(lx, "enum"))
			(void) parse_enum(&ps, file->package);
		else if (is_word(lx, "service") || is_word(lx, "extend"))
			skip_definition(lx);
		else
			syntax_error(lx, psprintf("unexpected %s", token_text(lx)));
	}
	set_messages(file, messages);
	return file;
}

/* ---- a schema sent as a serialized FileDescriptorProto ---- */

/*
 * Registries that keep what a client registered (Apicurio Registry's
 * Confluent API does) serve a Protobuf schema as confluent-kafka's
 * serializer sends it: the base64 of a serialized FileDescriptorProto
 * (descriptor.proto), not .proto text.  It is read with the wire format
 * itself into the same messages and enums, by the numbers of
 * descriptor.proto's fields.
 */
typedef struct DescReader
{
	const unsigned char *p;
	const unsigned char *end;
	const unsigned char *start;
	Lexer	   *lx;				/* names the file and the schema in errors */
} DescReader;

static void
desc_error(DescReader *r, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s cannot be read as a Protobuf schema: its serialized descriptor %s does not decode at byte %ld: %s",
					r->lx->what, r->lx->file, (long) (r->p - r->start), why)));
}

static uint64
desc_varint(DescReader *r)
{
	uint64		v = 0;

	for (int shift = 0; shift < 64; shift += 7)
	{
		if (r->p >= r->end)
			desc_error(r, "a varint runs past the end");
		v |= (uint64) (*r->p & 0x7f) << shift;
		if ((*r->p++ & 0x80) == 0)
			return v;
	}
	desc_error(r, "a varint is longer than 10 bytes");
	return 0;					/* not reached */
}

/*
 * The next field of the message r reads: its number, and for a
 * length-delimited one its bytes in *sub; false at the end.  Fields of
 * other wire types are read past (*sub is then empty, *value theirs).
 */
static bool
desc_field(DescReader *r, int *number, DescReader *sub, uint64 *value)
{
	uint64		tag;

	if (r->p >= r->end)
		return false;
	tag = desc_varint(r);
	*number = (int) Min(tag >> 3, (uint64) PG_INT32_MAX);
	*sub = *r;
	sub->p = sub->end = r->p;
	*value = 0;
	switch (tag & 7)
	{
		case 0:
			*value = desc_varint(r);
			break;
		case 1:
		case 5:
			if (r->end - r->p < ((tag & 7) == 1 ? 8 : 4))
				desc_error(r, "a fixed number runs past the end");
			r->p += (tag & 7) == 1 ? 8 : 4;
			break;
		case 2:
			{
				uint64		n = desc_varint(r);

				if (n > (uint64) (r->end - r->p))
					desc_error(r, "a length runs past the end");
				sub->p = r->p;
				sub->end = r->p + n;
				r->p += n;
				break;
			}
		default:
			desc_error(r, "a wire type descriptor.proto does not use");
	}
	return true;
}

static char *
desc_string(DescReader *r)
{
	char	   *s = pnstrdup((const char *) r->p, r->end - r->p);

	if (strlen(s) != (size_t) (r->end - r->p))
		desc_error(r, "a name holds a NUL byte");
	return s;
}

static EoiProtoEnum *
desc_enum(Parser *ps, DescReader *r, const char *scope)
{
	EoiProtoEnum *e = palloc0(sizeof(EoiProtoEnum));
	List	   *names = NIL;
	List	   *numbers = NIL;
	DescReader	sub;
	uint64		value;
	int			number;

	e->full_name = "";
	while (desc_field(r, &number, &sub, &value))
	{
		if (number == 1)
			e->full_name = qualified(scope, desc_string(&sub));
		else if (number == 2)
		{
			DescReader	v;
			char	   *name = "";
			int64		n = 0;

			while (desc_field(&sub, &number, &v, &value))
			{
				if (number == 1)
					name = desc_string(&v);
				else if (number == 2)
					n = (int32) (uint32) value;
			}
			names = lappend(names, name);
			numbers = lappend_int(numbers, (int) n);
		}
	}
	finish_enum(ps, e, names, numbers);
	return e;
}

static EoiProtoField *
desc_field_of(Parser *ps, DescReader *r, const char *scope)
{
	EoiProtoField *f = palloc0(sizeof(EoiProtoField));
	DescReader	sub;
	uint64		value;
	int			number;
	int			label = 1;
	bool		proto3_optional = false;

	f->name = "";
	f->oneof = -1;
	while (desc_field(r, &number, &sub, &value))
	{
		switch (number)
		{
			case 1:
				f->name = desc_string(&sub);
				break;
			case 3:
				if (value < 1 || value > EOI_PROTO_MAX_FIELD_NUMBER)
					desc_error(r, "a field number is out of range");
				f->number = (int32) value;
				break;
			case 4:
				label = (int) value;
				break;
			case 5:
				if (value < PT_DOUBLE || value > PT_SINT64)
					desc_error(r, "a field type descriptor.proto does not have");
				f->type = (EoiProtoType) value;
				break;
			case 6:
				f->type_name = desc_string(&sub);
				break;
			case 7:
				f->default_text = desc_string(&sub);
				break;
			case 9:
				f->oneof = (int) Min(value, (uint64) PG_INT16_MAX);
				break;
			case 17:
				proto3_optional = value != 0;
				break;
		}
	}
	if (f->type == PT_GROUP)
		unsupported(ps->lx_for_desc, "a group field",
					"Groups are a deprecated proto2 feature: declare the group's fields as a message and the field with its type.");
	if (f->type_name != NULL)
	{
		f->type = PT_MESSAGE;	/* or PT_ENUM: linking decides */
		f->scope = scope;
	}
	else if (f->type == 0 || f->type == PT_MESSAGE || f->type == PT_ENUM)
		desc_error(r, psprintf("field %s has no type, or a message's or enum's without its name", f->name));
	if (proto3_optional)
		f->oneof = -1;			/* its oneof is the synthetic one */
	f->repeated = label == 3;
	f->required = label == 2;
	f->presence = !f->repeated && (proto3_optional || f->required || !ps->file->proto3 || f->oneof >= 0);
	return f;
}

static EoiProtoMessage *
desc_message(Parser *ps, DescReader *r, const char *scope, int depth)
{
	MessageBuilder mb = {0};
	DescReader	sub;
	uint64		value;
	int			number;
	DescReader	name_at = *r;

	check_stack_depth();
	CHECK_FOR_INTERRUPTS();
	if (depth > EOI_PROTO_MAX_DEPTH)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s nests messages deeper than format protobuf reads", ps->lx.what),
				 errhint("Messages are read nested at most %d levels deep.", EOI_PROTO_MAX_DEPTH)));
	mb.msg = palloc0(sizeof(EoiProtoMessage));
	/* the name first: nested types and fields are named from it */
	while (desc_field(&name_at, &number, &sub, &value))
		if (number == 1)
			mb.msg->full_name = qualified(scope, desc_string(&sub));
	if (mb.msg->full_name == NULL)
		desc_error(r, "a message has no name");
	ps->file->all_messages = lappend(ps->file->all_messages, mb.msg);
	while (desc_field(r, &number, &sub, &value))
	{
		switch (number)
		{
			case 2:
				add_field(&ps->lx, &mb, desc_field_of(ps, &sub, mb.msg->full_name));
				break;
			case 3:
				mb.nested = lappend(mb.nested, desc_message(ps, &sub, mb.msg->full_name, depth + 1));
				break;
			case 4:
				(void) desc_enum(ps, &sub, mb.msg->full_name);
				break;
			case 7:
				{
					DescReader	o;

					while (desc_field(&sub, &number, &o, &value))
						if (number == 7)
							mb.msg->map_entry = value != 0;
					break;
				}
			case 8:
				mb.msg->noneofs++;
				break;
		}
	}
	finish_message(&ps->lx, &mb);
	return mb.msg;
}

/* The file of a serialized FileDescriptorProto, or NULL when `text` is not base64 of one. */
static EoiProtoFile *
parse_descriptor(const char *name, const char *text, const char *what)
{
	size_t		len = strlen(text);
	unsigned char *bytes;
	int			n;
	Parser		ps = {{0}};
	EoiProtoFile *file = palloc0(sizeof(EoiProtoFile));
	DescReader	r;
	DescReader	sub;
	uint64		value;
	int			number;
	List	   *messages = NIL;
	char	   *syntax = NULL;

	if (len == 0 || len % 4 != 0 || strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != len)
		return NULL;			/* .proto text has blanks and semicolons */
	bytes = palloc(len);
	n = eoi_b64_decode(text, (int) len, bytes, (int) len);
	if (n < 0)
		return NULL;
	file->name = name ? pstrdup(name) : NULL;
	file->package = "";
	ps.file = file;
	ps.lx.file = name ? name : "of the schema";
	ps.lx.what = what;
	ps.lx_for_desc = &ps.lx;
	r.start = r.p = bytes;
	r.end = bytes + n;
	r.lx = &ps.lx;
	/* the syntax and package first: the messages are read by them */
	sub = r;
	{
		DescReader	head = r;

		while (desc_field(&head, &number, &sub, &value))
		{
			if (number == 2)
				file->package = desc_string(&sub);
			else if (number == 12)
				syntax = desc_string(&sub);
			else if (number == 14)
				unsupported(&ps.lx, "an edition",
							"Format protobuf reads proto2 and proto3 files; write the schema with syntax = \"proto3\".");
		}
	}
	file->proto3 = syntax != NULL && strcmp(syntax, "proto3") == 0;
	if (syntax != NULL && syntax[0] != '\0' && !file->proto3 && strcmp(syntax, "proto2") != 0)
		unsupported(&ps.lx, psprintf("syntax \"%s\"", syntax),
					"Format protobuf reads proto2 and proto3 files.");
	while (desc_field(&r, &number, &sub, &value))
	{
		if (number == 3)
			file->imports = lappend(file->imports, desc_string(&sub));
		else if (number == 4)
			messages = lappend(messages, desc_message(&ps, &sub, file->package, 1));
		else if (number == 5)
			(void) desc_enum(&ps, &sub, file->package);
	}
	set_messages(file, messages);
	return file;
}

/* ---- linking ---- */

typedef struct NamedType
{
	const char *name;
	EoiProtoMessage *message;
	EoiProtoEnum *enumtype;
} NamedType;

static int
named_type_cmp(const void *a, const void *b)
{
	return strcmp(((const NamedType *) a)->name, ((const NamedType *) b)->name);
}

static const NamedType *
find_type(const NamedType *types, int n, const char *name)
{
	NamedType	key = {name};

	return bsearch(&key, types, n, sizeof(NamedType), named_type_cmp);
}

/* A type name as the language resolves it: from the innermost scope out. */
static const NamedType *
resolve(const NamedType *types, int n, const char *scope, const char *name, StringInfo buf)
{
	int			len = (int) strlen(scope);

	if (name[0] == '.')
		return find_type(types, n, name + 1);
	for (;;)
	{
		const NamedType *t;

		resetStringInfo(buf);
		appendBinaryStringInfo(buf, scope, len);
		if (len > 0)
			appendStringInfoChar(buf, '.');
		appendStringInfoString(buf, name);
		t = find_type(types, n, buf->data);
		if (t != NULL || len == 0)
			return t;
		/* the enclosing scope */
		while (len > 0 && scope[len - 1] != '.')
			len--;
		if (len > 0)
			len--;
	}
}

static void
bad_default(const EoiProtoField *f, const EoiProtoMessage *msg, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s cannot be read as a Protobuf schema: field %s of message %s has default \"%s\", which is not a value of its type",
					what, f->name, msg->full_name, f->default_text)));
}

/*
 * A proto2 default in the form the decoder writes it: integers in decimal,
 * floats as float8in reads them ("Infinity", "NaN"), bools as true or
 * false, an enum's value by a name it has; strings as they are.
 */
static void
canonical_default(EoiProtoField *f, const EoiProtoMessage *msg, const char *what)
{
	const char *d = f->default_text;
	char	   *end;

	errno = 0;
	switch (f->type)
	{
		case PT_STRING:
		case PT_BYTES:
			return;
		case PT_BOOL:
			if (strcmp(d, "true") != 0 && strcmp(d, "false") != 0)
				bad_default(f, msg, what);
			return;
		case PT_ENUM:
			for (int i = 0; i < f->enumtype->nvalues; i++)
				if (strcmp(f->enumtype->names[i], d) == 0)
					return;
			bad_default(f, msg, what);
			return;
		case PT_MESSAGE:
		case PT_GROUP:
			bad_default(f, msg, what);
			return;
		case PT_DOUBLE:
		case PT_FLOAT:
			{
				double		v;
				bool		negative = d[0] == '-';
				const char *u = negative ? d + 1 : d;

				if (pg_strcasecmp(u, "inf") == 0 || pg_strcasecmp(u, "infinity") == 0)
				{
					f->default_text = negative ? "-Infinity" : "Infinity";
					return;
				}
				if (pg_strcasecmp(u, "nan") == 0)
				{
					f->default_text = "NaN";
					return;
				}
				v = strtod(d, &end);
				if (end == d || *end != '\0' || errno != 0 || isinf(v) || isnan(v))
					bad_default(f, msg, what);
				f->default_text = psprintf("%.17g", v);
				return;
			}
		case PT_UINT64:
		case PT_FIXED64:
		case PT_UINT32:
		case PT_FIXED32:
			{
				unsigned long long v = strtoull(d, &end, 0);

				if (end == d || *end != '\0' || errno != 0 || d[0] == '-' ||
					((f->type == PT_UINT32 || f->type == PT_FIXED32) && v > PG_UINT32_MAX))
					bad_default(f, msg, what);
				f->default_text = psprintf("%llu", v);
				return;
			}
		default:
			{
				long long	v = strtoll(d, &end, 0);

				if (end == d || *end != '\0' || errno != 0 ||
					((f->type == PT_INT32 || f->type == PT_SINT32 || f->type == PT_SFIXED32) &&
					 (v < PG_INT32_MIN || v > PG_INT32_MAX)))
					bad_default(f, msg, what);
				f->default_text = psprintf("%lld", v);
				return;
			}
	}
}

static void
link_fields(EoiProtoMessage *msg, const NamedType *types, int n, const EoiProtoFile *file, const char *what,
			StringInfo buf)
{
	for (int i = 0; i < msg->nfields; i++)
	{
		EoiProtoField *f = &msg->fields[i];
		const NamedType *t;

		if (f->type_name == NULL)
		{
			if (f->default_text != NULL)
				canonical_default(f, msg, what);
			continue;
		}
		t = resolve(types, n, f->scope, f->type_name, buf);
		if (t == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s cannot be read as a Protobuf schema: field %s of message %s has type %s, which no file of the schema defines",
							what, f->name, msg->full_name, f->type_name),
					 errdetail("The file is %s; it imports %d files.", file->name ? file->name : "the schema itself",
							   list_length(file->imports))));
		if (t->message != NULL)
		{
			f->type = PT_MESSAGE;
			f->message = t->message;
			/* a message field is NULL when absent, in proto3 too */
			f->presence = !f->repeated;
		}
		else
		{
			f->type = PT_ENUM;
			f->enumtype = t->enumtype;
		}
		if (f->default_text != NULL)
			canonical_default(f, msg, what);
	}
}

static const char *
builtin_text(const char *name)
{
	for (int i = 0; i < lengthof(builtin_files); i++)
		if (strcmp(builtin_files[i].name, name) == 0)
			return builtin_files[i].text;
	return NULL;
}

static bool
has_file(List *files, const char *name)
{
	ListCell   *lc;

	foreach(lc, files)
	{
		EoiProtoFile *f = lfirst(lc);

		if (f->name != NULL && strcmp(f->name, name) == 0)
			return true;
	}
	return false;
}

/* Add the built-in files `files` import, and what those import in turn. */
static List *
add_builtin_imports(List *files, const char *what)
{
	for (int k = 0; k < list_length(files); k++)
	{
		EoiProtoFile *file = list_nth(files, k);
		ListCell   *lc;

		foreach(lc, file->imports)
		{
			const char *name = lfirst(lc);
			const char *text;

			if (has_file(files, name))
				continue;
			text = builtin_text(name);
			if (text == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("%s cannot be read as a Protobuf schema: %s imports \"%s\", which is not among the schema's references",
								what, file->name ? file->name : "it", name),
						 errhint("Register the imported file under a subject of its own and list it in the schema's references, with the import's name as the reference's name.")));
			files = lcons(parse_file(name, text, what), files);
			((EoiProtoFile *) linitial(files))->builtin = true;
			k++;
		}
	}
	return files;
}

EoiProtoSchema *
eoi_proto_schema(List *sources, const char *what)
{
	EoiProtoSchema *schema = palloc0(sizeof(EoiProtoSchema));
	List	   *files = NIL;
	NamedType  *types;
	int			ntypes = 0;
	int			cap = 0;
	ListCell   *lc;
	StringInfoData buf;

	foreach(lc, sources)
	{
		EoiSchemaFile *src = lfirst(lc);
		EoiProtoFile *file;

		/* the well-known types are built in: a registry's copy is not read */
		if (src->name != NULL && builtin_text(src->name) != NULL)
			continue;
		file = parse_descriptor(src->name, src->text, what);
		if (file == NULL)
			file = parse_file(src->name, src->text, what);
		files = lappend(files, file);
	}
	Assert(files != NIL);
	schema->main = llast(files);
	files = add_builtin_imports(files, what);
	schema->files = files;

	foreach(lc, files)
	{
		EoiProtoFile *f = lfirst(lc);

		cap += list_length(f->all_messages) + list_length(f->all_enums);
	}
	types = palloc(sizeof(NamedType) * Max(cap, 1));
	foreach(lc, files)
	{
		EoiProtoFile *f = lfirst(lc);
		ListCell   *lc2;

		foreach(lc2, f->all_messages)
		{
			EoiProtoMessage *m = lfirst(lc2);

			types[ntypes++] = (NamedType) {m->full_name, m, NULL};
		}
		foreach(lc2, f->all_enums)
		{
			EoiProtoEnum *e = lfirst(lc2);

			types[ntypes++] = (NamedType) {e->full_name, NULL, e};
		}
	}
	qsort(types, ntypes, sizeof(NamedType), named_type_cmp);
	initStringInfo(&buf);
	for (int i = 1; i < ntypes; i++)
		if (strcmp(types[i - 1].name, types[i].name) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s cannot be read as a Protobuf schema: type %s is defined twice", what, types[i].name)));

	foreach(lc, files)
	{
		EoiProtoFile *f = lfirst(lc);
		ListCell   *lc2;

		foreach(lc2, f->all_messages)
		{
			EoiProtoMessage *m = lfirst(lc2);

			CHECK_FOR_INTERRUPTS();
			link_fields(m, types, ntypes, f, what, &buf);
			/* only the built-in files' (a schema's own Timestamp is a message) */
			for (int i = 0; f->builtin && i < lengthof(well_known_messages); i++)
				if (strcmp(m->full_name, well_known_messages[i].name) == 0)
					m->well_known = well_known_messages[i].kind;
		}
	}
	return schema;
}

/* ---- lookups ---- */

const EoiProtoField *
eoi_proto_field(const EoiProtoMessage *msg, uint32 number)
{
	int			lo = 0;
	int			hi = msg->nfields - 1;

	if (number < (uint32) msg->by_number_size)
	{
		int			i = msg->by_number[number];

		return i > 0 ? &msg->fields[i - 1] : NULL;
	}
	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;
		const EoiProtoField *f = &msg->fields[msg->sorted[mid]];

		if ((uint32) f->number == number)
			return f;
		if ((uint32) f->number < number)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

const char *
eoi_proto_enum_name(const EoiProtoEnum *e, int32 number)
{
	for (int i = 0; i < e->nvalues; i++)
		if (e->numbers[i] == number)
			return e->names[i];
	return NULL;
}
