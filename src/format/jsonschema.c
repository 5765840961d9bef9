/*-------------------------------------------------------------------------
 *
 * jsonschema.c
 *	  A JSON Schema (Confluent's JSONSerializer registers one per topic) as
 *	  the columns of a table: the properties of its top-level object, each
 *	  with the type its values fill best.  For create_target and
 *	  schema_changes with format json (apply/evolve.c).
 *
 * Only the top level is read: a property whose schema is an object, an
 * array of anything but scalars, a $ref or a combination other than a
 * nullable one fills a jsonb column, which takes any JSON.  The schema
 * comes from the registry, whose text is bounded by the registry client;
 * nesting deeper than jsonb's own limits is refused by jsonb_in.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"

#include "format/connect.h"
#include "format/jsonschema.h"

int			eoingest_json_schema_number = EOI_JSON_NUMBER_DOUBLE;

/* The object or array at `key` of an object, or NULL. */
static JsonbContainer *
member_container(JsonbContainer *obj, const char *key)
{
	JsonbValue	v;

	if (eoi_connect_member(obj, key, &v) == NULL || v.type != jbvBinary)
		return NULL;
	return v.val.binary.data;
}

static bool
is_null_schema(JsonbContainer *s)
{
	char	   *type = eoi_connect_member_string(s, "type");

	return type != NULL && strcmp(type, "null") == 0;
}

/*
 * The one type a "type" member names besides "null" ("string", or
 * ["null", "string"]), or NULL when it names none or several.
 */
static char *
single_type(JsonbContainer *s)
{
	JsonbContainer *types;
	char	   *found = NULL;
	int			n;

	if ((found = eoi_connect_member_string(s, "type")) != NULL)
		return found;
	if ((types = member_container(s, "type")) == NULL || !JsonContainerIsArray(types))
		return NULL;
	n = JsonContainerSize(types);
	for (int i = 0; i < n; i++)
	{
		JsonbValue *t = getIthJsonbValueFromContainer(types, i);

		if (t == NULL || t->type != jbvString)
			return NULL;
		if (t->val.string.len == 4 && memcmp(t->val.string.val, "null", 4) == 0)
			continue;
		if (found != NULL)
			return NULL;
		found = pnstrdup(t->val.string.val, t->val.string.len);
	}
	return found;
}

/* A oneOf/anyOf of null and one schema: that schema; else NULL. */
static JsonbContainer *
nullable_branch(JsonbContainer *s)
{
	static const char *const combiners[] = {"oneOf", "anyOf"};

	for (int c = 0; c < lengthof(combiners); c++)
	{
		JsonbContainer *branches = member_container(s, combiners[c]);
		JsonbContainer *other = NULL;
		int			n;

		if (branches == NULL || !JsonContainerIsArray(branches))
			continue;
		n = JsonContainerSize(branches);
		for (int i = 0; i < n; i++)
		{
			JsonbValue *b = getIthJsonbValueFromContainer(branches, i);

			if (b == NULL || b->type != jbvBinary || !JsonContainerIsObject(b->val.binary.data))
				return NULL;
			if (is_null_schema(b->val.binary.data))
				continue;
			if (other != NULL)
				return NULL;
			other = b->val.binary.data;
		}
		return other;
	}
	return NULL;
}

/* The column type a property's schema fills best (jsonb for what is not a scalar). */
static Oid
property_type(JsonbContainer *s, int depth)
{
	JsonbContainer *branch;
	char	   *type;
	char	   *format;

	check_stack_depth();
	if ((branch = nullable_branch(s)) != NULL && depth < 8)
		return property_type(branch, depth + 1);
	type = single_type(s);
	if (type == NULL)
		return JSONBOID;
	if (strcmp(type, "integer") == 0)
		return INT8OID;
	if (strcmp(type, "number") == 0)
		return eoingest_json_schema_number == EOI_JSON_NUMBER_NUMERIC ? NUMERICOID : FLOAT8OID;
	if (strcmp(type, "boolean") == 0)
		return BOOLOID;
	if (strcmp(type, "string") == 0)
	{
		format = eoi_connect_member_string(s, "format");
		if (format == NULL)
			return TEXTOID;
		if (strcmp(format, "date-time") == 0)
			return TIMESTAMPTZOID;
		if (strcmp(format, "date") == 0)
			return DATEOID;
		if (strcmp(format, "time") == 0)
			return TIMEOID;
		if (strcmp(format, "uuid") == 0)
			return UUIDOID;
		return TEXTOID;
	}
	if (strcmp(type, "array") == 0 && depth < 1)
	{
		JsonbContainer *items = member_container(s, "items");
		Oid			elem = items != NULL && JsonContainerIsObject(items) ? property_type(items, depth + 1) : JSONBOID;

		if (elem != JSONBOID && OidIsValid(get_array_type(elem)))
			return get_array_type(elem);
	}
	return JSONBOID;
}

/*
 * Where the name of property `name` first appears in the schema's text
 * after its "properties" member: the order the schema lists them in
 * (jsonb keeps its keys sorted by length).
 */
static size_t
listed_at(const char *text, const char *properties, const char *name)
{
	char	   *quoted = psprintf("\"%s\"", name);
	const char *at = strstr(properties, quoted);

	return at != NULL ? (size_t) (at - text) : strlen(text);
}

typedef struct Listed
{
	size_t		at;
	EoiSchemaField field;
} Listed;

static int
listed_cmp(const void *a, const void *b)
{
	size_t		x = ((const Listed *) a)->at;
	size_t		y = ((const Listed *) b)->at;

	return x < y ? -1 : x > y ? 1 : 0;
}

/*
 * The columns of JSON Schema `text`: its top-level object's properties.
 * `what` names the schema in messages.  A schema that is not an object
 * with properties has no fields (record false).
 */
EoiSchemaFields *
eoi_json_schema_columns(const char *text, const char *what)
{
	EoiSchemaFields *f = palloc0(sizeof(EoiSchemaFields));
	Jsonb	   *jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
	JsonbContainer *root = &jb->root;
	JsonbContainer *props;
	const char *properties;
	Listed	   *listed;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			n = 0;
	char	   *type;

	f->what = pstrdup(what);
	type = JsonContainerIsObject(root) ? single_type(root) : NULL;
	f->type_name = type ? type : "schema that is not an object";
	props = JsonContainerIsObject(root) ? member_container(root, "properties") : NULL;
	if ((type != NULL && strcmp(type, "object") != 0) || props == NULL || !JsonContainerIsObject(props))
		return f;
	f->record = true;
	properties = strstr(text, "\"properties\"");
	if (properties == NULL)
		properties = text;
	listed = palloc0(sizeof(Listed) * Max(JsonContainerSize(props), 1));
	it = JsonbIteratorInit(props);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *name;
		JsonbValue	value;

		CHECK_FOR_INTERRUPTS();
		if (tok != WJB_KEY)
			continue;
		name = pnstrdup(v.val.string.val, v.val.string.len);
		listed[n].at = listed_at(text, properties, name);
		listed[n].field.name = name;
		listed[n].field.typmod = -1;
		listed[n].field.typid = JSONBOID;
		if (getKeyJsonValueFromContainer(props, v.val.string.val, v.val.string.len, &value) != NULL &&
			value.type == jbvBinary && JsonContainerIsObject(value.val.binary.data))
			listed[n].field.typid = property_type(value.val.binary.data, 0);
		n++;
	}
	qsort(listed, n, sizeof(Listed), listed_cmp);
	f->nfields = n;
	f->fields = palloc0(sizeof(EoiSchemaField) * Max(n, 1));
	for (int i = 0; i < n; i++)
		f->fields[i] = listed[i].field;
	return f;
}
