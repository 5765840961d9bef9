#!/usr/bin/env bash
# libFuzzer on Avro C's reading as format avro uses it (test/fuzz/avro_fuzz.c),
# bounded in time.  EOINGEST_FUZZ_SECONDS sets the budget (default 30).
exec bash "$(dirname "$0")/../fuzz/run.sh" "${EOINGEST_FUZZ_SECONDS:-30}" avro
