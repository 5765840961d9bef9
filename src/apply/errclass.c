/*-------------------------------------------------------------------------
 *
 * errclass.c
 *	  Whose an error is, decided in one place.
 *
 * Every error a worker meets while it writes a batch is one of four kinds,
 * and what it does follows from the kind alone:
 *
 *	kind		SQLSTATEs									what happens
 *	record		22 data exception, 23 integrity, 44, 38,		the record is a dead letter
 *				39, P0 (a trigger's or transform's RAISE),	(on_error = dead_letter), or
 *				42804 datatype mismatch, 54000 program		the job fails (on_error = fail)
 *				limit, 22021, a row-level security policy's
 *				refusal (42501 with its message)
 *	resource	53 insufficient resources (out of memory,	the batch is halved and retried
 *				disk full, too many connections)
 *	fatal		42 (privileges, undefined or wrong objects,	the job fails: state 'failed',
 *				syntax), 28 credentials refused, 0A not		the error in job_status, until a
 *				supported, 55 object not in prerequisite	person fixes it and starts it
 *				state (an unlogged or altered target, the
 *				fence) but 55P03 and 55006, 3D, 3F, 0L, 0P,
 *				2B, 54 but 54000
 *	transient	everything else: 08 (Kafka, the registry),	retried with backoff (0.5 s up
 *				40 (deadlock, serialization), 57 (cancel,	to 30 s), the error shown in
 *				timeouts), 58 (I/O), 55P03 lock not			job_status, state 'retrying'
 *				available, 55006 object in use, 25006 read
 *				only, XX internal errors, and any SQLSTATE
 *				not named here
 *
 * An error nobody foresaw is retried rather than made fatal: it may come
 * from a race that the next attempt does not meet, and a job that stops
 * for it stops ingestion until a person notices.  What only a person can
 * mend is named, and fails the job at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "apply/errclass.h"

/*
 * A row-level security policy's WITH CHECK refusing a row a transform
 * writes: SQLSTATE 42501, like a missing privilege, which is the job's;
 * only the message tells the row's refusal apart (in the server's language,
 * or in English).
 */
static bool
is_policy_violation(const ErrorData *edata)
{
	static const char english[] = "new row violates row-level security policy";
	const char *translated = dgettext(PG_TEXTDOMAIN("postgres"),
									  "new row violates row-level security policy for table \"%s\"");
	size_t		n = strcspn(translated, "%\"");

	if (edata->sqlerrcode != ERRCODE_INSUFFICIENT_PRIVILEGE || edata->message == NULL)
		return false;
	return strncmp(edata->message, english, strlen(english)) == 0 ||
		(n > 0 && strncmp(edata->message, translated, n) == 0);
}

/*
 * Errors that belong to one record (its bytes, its values, its
 * constraints, what the transform or a trigger raised for it), as opposed
 * to errors of the job or the server, which no record should be blamed for.
 * Insufficient resources (class 53: out of memory, disk full) are never a
 * record's: the worker retries the batch, smaller.  A program limit (54000)
 * is the record's when it outgrows a limit alone (max_message_bytes, an
 * index row's size); the write path reports a batch that outgrows one of
 * its buffers as out of memory instead.  A row a row-level security
 * policy refuses is the record's too.
 */
static bool
is_record_error(const ErrorData *edata)
{
	if (is_policy_violation(edata))
		return true;
	switch (ERRCODE_TO_CATEGORY(edata->sqlerrcode))
	{
		case ERRCODE_DATA_EXCEPTION:
		case ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION:
		case ERRCODE_WITH_CHECK_OPTION_VIOLATION:
		case ERRCODE_PLPGSQL_ERROR:
		case ERRCODE_EXTERNAL_ROUTINE_EXCEPTION:
		case ERRCODE_EXTERNAL_ROUTINE_INVOCATION_EXCEPTION:
			return true;
		default:
			break;
	}
	return edata->sqlerrcode == ERRCODE_DATATYPE_MISMATCH ||
		edata->sqlerrcode == ERRCODE_PROGRAM_LIMIT_EXCEEDED ||
		edata->sqlerrcode == ERRCODE_CHARACTER_NOT_IN_REPERTOIRE;
}

/* Errors only a person can mend: the job's definition, privileges, objects. */
static bool
is_fatal_error(int sqlerrcode)
{
	switch (ERRCODE_TO_CATEGORY(sqlerrcode))
	{
		case ERRCODE_SYNTAX_ERROR_OR_ACCESS_RULE_VIOLATION:	/* 42 */
		case ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION:	/* 28 */
		case ERRCODE_FEATURE_NOT_SUPPORTED: /* 0A */
		case ERRCODE_INVALID_CATALOG_NAME:	/* 3D */
		case ERRCODE_INVALID_SCHEMA_NAME:	/* 3F */
		case ERRCODE_INVALID_GRANTOR:	/* 0L */
		case ERRCODE_INVALID_ROLE_SPECIFICATION:	/* 0P */
		case ERRCODE_DEPENDENT_PRIVILEGE_DESCRIPTORS_STILL_EXIST:	/* 2B */
		case ERRCODE_PROGRAM_LIMIT_EXCEEDED:	/* 54, but 54000: a record's */
			return true;
		case ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE:	/* 55 */
			return sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE &&
				sqlerrcode != ERRCODE_OBJECT_IN_USE;
		default:
			return false;
	}
}

/* Whose the error is: the table at the top of this file. */
EoiErrorClass
eoi_classify_error(const ErrorData *edata)
{
	if (is_record_error(edata))
		return EOI_ERROR_RECORD;
	if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_INSUFFICIENT_RESOURCES)
		return EOI_ERROR_RESOURCE;
	if (is_fatal_error(edata->sqlerrcode))
		return EOI_ERROR_FATAL;
	return EOI_ERROR_TRANSIENT;
}

bool
eoi_is_record_error(const ErrorData *edata)
{
	return eoi_classify_error(edata) == EOI_ERROR_RECORD;
}
