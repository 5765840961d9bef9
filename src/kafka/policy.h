/*-------------------------------------------------------------------------
 *
 * policy.h
 *	  What a job owner may hand to librdkafka, and where a job may connect.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_POLICY_H
#define EOI_POLICY_H

#include "base/eoingest.h"

#include "utils/guc.h"

/*
 * What a librdkafka property lets its setter make the server do, and so
 * which privilege its setter's role needs.  Privileges are bits: a
 * property may need several (the Kerberos keytab is read by a program).
 */
#define EOI_PROP_ANY		0x00	/* tuning, credentials, inline PEM */
#define EOI_PROP_READ		0x01	/* reads a server file: pg_read_server_files */
#define EOI_PROP_EXECUTE	0x02	/* runs a program: pg_execute_server_program */
#define EOI_PROP_SUPERUSER	0x04	/* loads code, or not known to be safe */
#define EOI_PROP_MANAGED	0x08	/* set by eoingest itself: nobody may */
#define EOI_PROP_EOINGEST	0x10	/* read by eoingest, never given to librdkafka */

/* GUC eoingest.allowed_brokers (eoingest.c defines it). */
extern char *eoingest_allowed_brokers;

extern int	eoi_property_class(const char *name);
extern char *eoi_option_value_text(JsonbValue *v);
extern void eoi_check_options_allowed(Jsonb *options, Oid owner);
extern void eoi_check_brokers_allowed(const char *brokers);
extern bool eoi_property_is_eoingest(const char *name);
extern List *eoi_check_registry_urls(const char *urls, Oid owner);
extern bool eoi_allowed_brokers_check_hook(char **newval, void **extra, GucSource source);

#endif
