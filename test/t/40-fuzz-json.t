#!/usr/bin/env bash
# libFuzzer on format json's scan (src/format/jsonscan.c) with PostgreSQL's own JSON
# parser as the oracle (test/fuzz/json_fuzz.c), bounded in time.
# EOINGEST_FUZZ_SECONDS sets the budget (default 30).
exec bash "$(dirname "$0")/../fuzz/run.sh" "${EOINGEST_FUZZ_SECONDS:-30}" json
