/*-------------------------------------------------------------------------
 *
 * batchfunc.h
 *	  eoingest.batch(), and the set-up of a set-returning function that
 *	  the job functions share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_BATCHFUNC_H
#define EOI_BATCHFUNC_H

#include "base/eoingest.h"

#include "access/tupdesc.h"
#include "fmgr.h"

struct Tuplestorestate;
extern void eoi_materialize_srf(FunctionCallInfo fcinfo, struct Tuplestorestate **store,
								TupleDesc *tupdesc);

extern PGDLLEXPORT Datum eoingest_batch(PG_FUNCTION_ARGS);

#endif
