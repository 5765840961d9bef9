/*-------------------------------------------------------------------------
 *
 * wirenum.h
 *	  Decimals and bit strings as Avro, Protobuf and Kafka Connect put them
 *	  on the wire, and bytes, turned into the text their PostgreSQL types
 *	  read.
 *
 *-------------------------------------------------------------------------
 */
#ifndef EOI_WIRENUM_H
#define EOI_WIRENUM_H

#include "lib/stringinfo.h"

extern void eoi_append_decimal(StringInfo out, const unsigned char *bytes, size_t n, int64 scale);
extern void eoi_append_bytea_hex(StringInfo out, const unsigned char *bytes, size_t n);
extern void eoi_append_bits(StringInfo out, const unsigned char *bytes, size_t n, int64 length);

#endif
