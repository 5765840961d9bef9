/*-------------------------------------------------------------------------
 *
 * errtext.c
 *	  An error as one line of text, as job_status and dead letters keep it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"

#include "base/eoingest.h"

/*
 * An error as one line for job_status and dead letters: message, detail,
 * hint and context (which names the Kafka message, when there is one).
 */
char *
eoi_describe_error(ErrorData *edata)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfoString(&buf, edata->message);
	if (edata->detail)
		appendStringInfo(&buf, " DETAIL: %s", edata->detail);
	if (edata->hint)
		appendStringInfo(&buf, " HINT: %s", edata->hint);
	if (edata->context)
		appendStringInfo(&buf, " CONTEXT: %s", edata->context);
	return buf.data;
}
