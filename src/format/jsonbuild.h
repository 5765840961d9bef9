/*-------------------------------------------------------------------------
 *
 * jsonbuild.h
 *	  Format json: a message's value as jsonb, built from the one-pass scan
 *	  of jsonscan.c instead of PostgreSQL's JSON parser where it can be.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_JSONBUILD_H
#define EOI_JSONBUILD_H

#include "base/eoingest.h"

extern Datum eoi_jsonb_from_text(const char *data, size_t len);

#endif
