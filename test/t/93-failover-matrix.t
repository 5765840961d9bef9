#!/usr/bin/env bash
# EOINGEST_LONG=1: eight more failover runs (test/lib/failover.sh) besides the
# five of 90-failover.t: each mode, each replication, each kill, and a
# two_phase epoch left undecided or decided-but-not-committed at the kill.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"
[ "${EOINGEST_LONG:-0}" = 1 ] || skip_all "long mode only (EOINGEST_LONG=1)"
. "$(dirname "$0")/../lib/failover.sh"

plan 56
sql "CREATE EXTENSION IF NOT EXISTS eoingest" >/dev/null 2>&1
: >"$FO_TABLE"
fo_run m1 exactly_once 2 async sigkill
fo_run m2 exactly_once 1 sync immediate
fo_run m3 exactly_once 1 gap immediate
fo_run m4 two_phase 2 async immediate
fo_run m5 two_phase 2 gap immediate
fo_run m6 two_phase 2 gap sigkill
fo_run m9 two_phase 1 async sigkill undecided
fo_run m10 two_phase 2 sync immediate decided
diag "| mode | replication | kill | lost | duplicated | re-read | ms to resume |" "$(cat "$FO_TABLE")"
done_testing
