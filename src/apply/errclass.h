/*-------------------------------------------------------------------------
 *
 * errclass.h
 *	  Whose an error is: a record's, the moment's, the batch's size, or a
 *	  person's to fix.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_ERRCLASS_H
#define EOI_ERRCLASS_H

#include "utils/elog.h"

typedef enum EoiErrorClass
{
	EOI_ERROR_RECORD,			/* one record's: a dead letter, or the job's failure if on_error = fail */
	EOI_ERROR_RESOURCE,			/* the batch outgrew memory or disk: halve it, retry */
	EOI_ERROR_FATAL,			/* a person must fix it: the job fails */
	EOI_ERROR_TRANSIENT			/* anything else: retry with backoff, shown in job_status */
} EoiErrorClass;

extern EoiErrorClass eoi_classify_error(const ErrorData *edata);
extern bool eoi_is_record_error(const ErrorData *edata);

#endif
