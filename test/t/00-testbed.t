#!/usr/bin/env bash
# Smoke test of the test bed itself (no extension needed): PostgreSQL answers,
# the Kafka broker answers, eoi-kafka creates/produces/reads watermarks, and
# the tap.sh helpers behave.
set -euo pipefail
. "$(dirname "$0")/../lib/tap.sh"

plan 9

is "$(sql 'select 40 + 2')" 42 "psql reaches the test cluster"
is "$(sql 'show port')" "$PGPORT" "cluster listens on PGPORT"
kafka_up() { timeout 20 kcat -b "$KAFKA_BROKERS" -L -m 5 >/dev/null; }
check "kafka broker answers metadata requests" kafka_up

topic=testbed_$$_$RANDOM
check "create-topic with 3 partitions" eoi-kafka create-topic "$topic" 3 retention.ms=600000
check "produce-seq 3000 json messages" eoi-kafka produce-seq "$topic" --count 3000 --format json
printf 'a\nb\n\n' | eoi-kafka produce "$topic" -z -p 1 && r=0 || r=$?
ok "$r" "produce from stdin to one partition"
is "$(eoi-kafka watermarks "$topic" | awk '{n += $3 - $2} END {print n}')" 3003 "watermarks add up"

check "wait_until sees a true condition" wait_until 10 "select 1 = 1"
check "delete-topic" eoi-kafka delete-topic "$topic"

done_testing
