/*-------------------------------------------------------------------------
 *
 * fault.c
 *	  Fault points for tests: at a point that eoingest.fault_point names,
 *	  the process kills itself, raises an error or sleeps, as
 *	  eoingest.fault_action says (EOI_FAULT_POINT in eoingest.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "base/eoingest.h"

/* Sleep at a fault point: interruptible, ends early on SIGTERM or postmaster death. */
static void
fault_sleep(const char *point)
{
	TimestampTz end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), eoingest_fault_sleep_ms);

	ereport(LOG,
			(errmsg("eoingest fault point \"%s\" reached, process %d sleeps for %d ms",
					point, MyProcPid, eoingest_fault_sleep_ms)));
	for (;;)
	{
		long		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), end);

		if (remaining <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 Min(remaining, 1000L), PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	ereport(LOG,
			(errmsg("eoingest fault point \"%s\" passed, process %d goes on", point, MyProcPid)));
}

void
eoi_fault_fire(const char *point)
{
	if (strcmp(eoingest_fault_point, point) != 0)
		return;
	if (eoingest_fault_action == EOI_FAULT_SLEEP)
	{
		fault_sleep(point);
		return;
	}
	if (eoingest_fault_action == EOI_FAULT_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("eoingest fault point \"%s\" reached, raising an error", point)));
	ereport(LOG,
			(errmsg("eoingest fault point \"%s\" reached, killing process %d",
					point, MyProcPid)));
	kill(MyProcPid, SIGKILL);
	/* SIGKILL cannot be caught; don't go on in the meantime */
	for (;;)
		pg_usleep(1000000L);
}
