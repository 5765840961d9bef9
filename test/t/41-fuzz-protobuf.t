#!/usr/bin/env bash
# libFuzzer on format protobuf's reading, the .proto parser and the decoder
# (test/fuzz/protobuf_fuzz.c), bounded in time.  EOINGEST_FUZZ_SECONDS sets the
# budget (default 30).
exec bash "$(dirname "$0")/../fuzz/run.sh" "${EOINGEST_FUZZ_SECONDS:-30}" protobuf
