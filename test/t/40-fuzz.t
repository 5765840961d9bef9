#!/usr/bin/env bash
# libFuzzer on the project's own CSV splitter (src/format/csv.c), bounded in time.
# EOINGEST_FUZZ_SECONDS sets the budget (default 30 in the test command).
exec bash "$(dirname "$0")/../fuzz/run.sh" "${EOINGEST_FUZZ_SECONDS:-30}"
