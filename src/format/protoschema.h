/*-------------------------------------------------------------------------
 *
 * protoschema.h
 *	  Protobuf schemas as the registry holds them: the text of .proto files
 *	  (protoparse.c reads it), linked into messages whose fields name their
 *	  types, for format protobuf's decoder (protobuf.c).
 *
 * Everything here lives in the memory context current when the schema is
 * parsed: the decoder keeps one per schema id and deletes it with the
 * schema.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_PROTOSCHEMA_H
#define EOI_PROTOSCHEMA_H

#include "postgres.h"

#include "nodes/pg_list.h"

#include "format/registry.h"

/* How deep messages nest, in a schema and in a message, at most. */
#define EOI_PROTO_MAX_DEPTH 64
/* The largest field number Protobuf allows. */
#define EOI_PROTO_MAX_FIELD_NUMBER 536870911

/* A field's type: descriptor.proto's numbers. */
typedef enum EoiProtoType
{
	PT_DOUBLE = 1,
	PT_FLOAT = 2,
	PT_INT64 = 3,
	PT_UINT64 = 4,
	PT_INT32 = 5,
	PT_FIXED64 = 6,
	PT_FIXED32 = 7,
	PT_BOOL = 8,
	PT_STRING = 9,
	PT_GROUP = 10,
	PT_MESSAGE = 11,
	PT_BYTES = 12,
	PT_UINT32 = 13,
	PT_ENUM = 14,
	PT_SFIXED32 = 15,
	PT_SFIXED64 = 16,
	PT_SINT32 = 17,
	PT_SINT64 = 18
} EoiProtoType;

/* The messages a decoder reads as values of their own (protovalue.c). */
typedef enum EoiProtoWellKnown
{
	WK_NONE,
	WK_TIMESTAMP,				/* google.protobuf.Timestamp: timestamptz */
	WK_DURATION,				/* google.protobuf.Duration: interval */
	WK_WRAPPER,					/* google.protobuf.Int32Value, ...: its value, or NULL */
	WK_STRUCT,					/* google.protobuf.Struct: a JSON object */
	WK_VALUE,					/* google.protobuf.Value: a JSON value */
	WK_LIST_VALUE,				/* google.protobuf.ListValue: a JSON array */
	WK_DECIMAL					/* confluent.type.Decimal: numeric */
} EoiProtoWellKnown;

typedef struct EoiProtoEnum
{
	const char *full_name;		/* "evo.Status" */
	int			nvalues;
	const char **names;
	int32	   *numbers;
} EoiProtoEnum;

struct EoiProtoMessage;

typedef struct EoiProtoField
{
	const char *name;
	int32		number;
	EoiProtoType type;
	bool		repeated;
	bool		required;		/* proto2's required */
	bool		presence;		/* absent means NULL, not the type's zero */
	int			oneof;			/* the index of its oneof in the message, or -1 */
	const char *default_text;	/* proto2's [default = ...], as written, or NULL */
	const char *type_name;		/* a message's or enum's name, as written */
	const char *scope;			/* where type_name is looked up from */
	struct EoiProtoMessage *message;	/* PT_MESSAGE, once linked */
	EoiProtoEnum *enumtype;		/* PT_ENUM, once linked */
} EoiProtoField;

typedef struct EoiProtoMessage
{
	const char *full_name;		/* "evo.Order" */
	int			nfields;
	EoiProtoField *fields;		/* in the order of the text */
	int			nnested;
	struct EoiProtoMessage **nested;	/* the messages it declares, in order */
	bool		map_entry;		/* a map field's entry: key 1, value 2 */
	int			noneofs;
	EoiProtoWellKnown well_known;
	/* the field of each number: by index below by_number_size, else searched in sorted */
	int			by_number_size;
	int16	   *by_number;		/* index + 1, 0 for none */
	int		   *sorted;			/* field indexes by number, for the others */
} EoiProtoMessage;

typedef struct EoiProtoFile
{
	const char *name;			/* its import path ("evo/order.proto") */
	const char *package;		/* "" when none */
	bool		proto3;
	bool		builtin;		/* one of the well-known types' files */
	List	   *imports;		/* import paths (char *) */
	int			nmessages;
	EoiProtoMessage **messages; /* top level, in order */
	List	   *all_messages;	/* at every level */
	List	   *all_enums;
} EoiProtoFile;

/* A file with every file it imports, linked: its messages' types resolved. */
typedef struct EoiProtoSchema
{
	EoiProtoFile *main;
	List	   *files;			/* imports first, main last */
} EoiProtoSchema;

/*
 * Parse and link `sources`, EoiSchemaFile (the referenced files first, the
 * schema last), into a schema.  The well-known types (the files google/protobuf/...) and
 * Confluent's decimal are built in.  A text that does not parse, an import
 * none of the sources or built-in files answers, a type name that names
 * nothing: a record error (SQLSTATE 22023) whose message starts with `what`;
 * a feature eoingest does not read (groups, editions): 0A000.
 */
extern EoiProtoSchema *eoi_proto_schema(List *sources, const char *what);

/* The field of `msg` with `number`, or NULL. */
extern const EoiProtoField *eoi_proto_field(const EoiProtoMessage *msg, uint32 number);

/* The name of an enum's value `number`, or NULL when it has none. */
extern const char *eoi_proto_enum_name(const EoiProtoEnum *e, int32 number);

#endif
