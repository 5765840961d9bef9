/*-------------------------------------------------------------------------
 *
 * pgcompat.h
 *	  Backend calls whose spelling differs between the PostgreSQL majors
 *	  eoingest builds against (15 to 18), for every layer.
 *
 * Each definition names the newest major's call and gives the older
 * spelling behind PG_VERSION_NUM, here and nowhere else; the executor's
 * calls, which only src/apply/ makes, are in apply/execcompat.h.  Include
 * this header only where one of its names is used.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_PGCOMPAT_H
#define EOI_PGCOMPAT_H

#include "postgres.h"

#include "catalog/pg_database.h"
#include "common/base64.h"
#include "common/jsonapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/regproc.h"

#if PG_VERSION_NUM < 150000
#error "eoingest needs PostgreSQL 15 or later"
#endif

/*
 * Whether this process is a background worker (a job's worker, the
 * launcher): PostgreSQL 17 replaced the IsBackgroundWorker flag by the
 * backend type.
 */
#if PG_VERSION_NUM < 170000
#define AmBackgroundWorkerProcess() (IsBackgroundWorker)
#endif

/*
 * Whether a role owns a database (superusers own everything):
 * PostgreSQL 16 folded the per-catalog owner checks into one.
 */
#if PG_VERSION_NUM < 160000
#define eoi_owns_database(db, role) pg_database_ownercheck((db), (role))
#else
#define eoi_owns_database(db, role) object_ownercheck(DatabaseRelationId, (db), (role))
#endif

/*
 * Whether a role may create in a schema, and whether it owns a relation
 * (callers include utils/acl.h, catalog/pg_namespace.h and pg_class.h).
 */
#if PG_VERSION_NUM < 160000
#define eoi_may_create_in_schema(nsp, role) (pg_namespace_aclcheck((nsp), (role), ACL_CREATE) == ACLCHECK_OK)
#define eoi_owns_relation(relid, role) pg_class_ownercheck((relid), (role))
#else
#define eoi_may_create_in_schema(nsp, role) (object_aclcheck(NamespaceRelationId, (nsp), (role), ACL_CREATE) == ACLCHECK_OK)
#define eoi_owns_relation(relid, role) object_ownercheck(RelationRelationId, (relid), (role))
#endif

/*
 * A database a DROP DATABASE left half-dropped (it cannot be connected to):
 * marked since 15.4 and 16.0; before, there were none.
 */
#ifdef DATCONNLIMIT_INVALID_DB
#define eoi_database_is_invalid(form) database_is_invalid_form(form)
#else
#define eoi_database_is_invalid(form) (false)
#endif

/* "schema.name" (quoted parts allowed) as a list of String nodes; errors go up. */
static inline List *
eoi_qualified_name_list(const char *name)
{
#if PG_VERSION_NUM >= 160000
	return stringToQualifiedNameList(name, NULL);
#else
	return stringToQualifiedNameList(name);
#endif
}

/*
 * A JSON lexer over `len` bytes of `json` in `encoding`, in the current
 * memory context (17 lets the caller supply the struct; NULL allocates it,
 * as before).
 */
static inline JsonLexContext *
eoi_json_lexer(char *json, int len, int encoding, bool need_escapes)
{
#if PG_VERSION_NUM >= 170000
	return makeJsonLexContextCstringLen(NULL, json, len, encoding, need_escapes);
#else
	return makeJsonLexContextCstringLen(json, len, encoding, need_escapes);
#endif
}

/* Base64 text to bytes: -1 when `src` is not base64 (18 types `dst` as uint8). */
static inline int
eoi_b64_decode(const char *src, int len, unsigned char *dst, int dstlen)
{
#if PG_VERSION_NUM >= 180000
	return pg_b64_decode(src, len, dst, dstlen);
#else
	return pg_b64_decode(src, len, (char *) dst, dstlen);
#endif
}

/* Bytes to base64 text: the number of characters written, or -1. */
static inline int
eoi_b64_encode(const unsigned char *src, int len, char *dst, int dstlen)
{
#if PG_VERSION_NUM >= 180000
	return pg_b64_encode(src, len, dst, dstlen);
#else
	return pg_b64_encode((const char *) src, len, dst, dstlen);
#endif
}

/* A function that does not return: 18's prefix, and before it the attribute. */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

#endif							/* EOI_PGCOMPAT_H */
