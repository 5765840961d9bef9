/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The per-database and per-role settings a session started with, to
 *	  notice when ALTER DATABASE/ROLE ... SET changed them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_SETTINGS_H
#define EOI_SETTINGS_H

#include "base/eoingest.h"

extern char *eoi_session_settings(Oid roleid);
extern int	eoi_role_worker_limit(Oid roleid);
extern bool eoi_database_served(const char *name);

#endif
