#!/usr/bin/env bash
# Checks the running test broker's SASL_PLAINTEXT and SSL listeners with kcat
# (librdkafka, as used by the extension): the test credentials work for
# metadata, produce and consume; a wrong password, a wrong mechanism and an
# untrusted CA are refused with librdkafka's usual error text.
#   test/kafka/check-security.sh        (broker started by test/kafka.sh; needs eoi-kafka)
# Prints TAP; exit status 0 only if every check passed.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../env.sh"

command -v eoi-kafka >/dev/null || eoi_die "eoi-kafka not found (run test/tools/build.sh)"
password=$(kafka_sasl_password) || eoi_die "no SASL password in $KAFKA_SASL_PASSWORD_FILE (start the broker with test/kafka.sh)"
sasl=(-b "$KAFKA_SASL_BROKERS" -X security.protocol=SASL_PLAINTEXT -X "sasl.mechanism=$KAFKA_SASL_MECHANISM"
  -X "sasl.username=$KAFKA_SASL_USER")
ssl=(-b "$KAFKA_SSL_BROKERS" -X security.protocol=SSL)
topic=eoi_security_check_$$
n=0 failed=0
ok() { n=$((n + 1)); if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi; }
# refused DESC PATTERN kcat-args...: metadata fails and stderr matches PATTERN.
refused() {
  local desc=$1 pat=$2 out
  shift 2
  if ! out=$(timeout 20 kcat "$@" -L -m 3 2>&1 >/dev/null) && grep -qE "$pat" <<<"$out"; then
    ok 0 "$desc"
  else
    ok 1 "$desc"
    printf '#   %s\n' "$out"
  fi
}

eoi-kafka create-topic "$topic" 1 >/dev/null
trap 'eoi-kafka delete-topic "$topic" >/dev/null 2>&1' EXIT

timeout 20 kcat "${sasl[@]}" -X "sasl.password=$password" -L -m 10 >/dev/null 2>&1
ok $? "SASL $KAFKA_SASL_MECHANISM metadata"
printf 'sasl-1\nsasl-2\n' | timeout 20 kcat "${sasl[@]}" -X "sasl.password=$password" -P -t "$topic" 2>/dev/null
ok $? "SASL produce"
timeout 20 kcat "${ssl[@]}" -X "ssl.ca.location=$KAFKA_SSL_CA" -L -m 10 >/dev/null 2>&1
ok $? "SSL metadata (ssl.ca.location)"
printf 'ssl-1\nssl-2\n' | timeout 20 kcat "${ssl[@]}" -X "ssl.ca.location=$KAFKA_SSL_CA" -P -t "$topic" 2>/dev/null
ok $? "SSL produce"
want=$'sasl-1\nsasl-2\nssl-1\nssl-2'
got=$(timeout 20 kcat "${sasl[@]}" -X "sasl.password=$password" -C -t "$topic" -e -q 2>/dev/null)
[ "$got" = "$want" ]; ok $? "SASL consume"
got=$(timeout 20 kcat "${ssl[@]}" -X "ssl.ca.pem=$(cat "$KAFKA_SSL_CA")" -C -t "$topic" -e -q 2>/dev/null)
[ "$got" = "$want" ]; ok $? "SSL consume (ssl.ca.pem)"

refused "SASL wrong password refused" \
  'SASL authentication error: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256' \
  "${sasl[@]}" -X sasl.password=wrong
refused "SASL unknown user refused" 'SASL authentication error: Authentication failed' \
  -b "$KAFKA_SASL_BROKERS" -X security.protocol=SASL_PLAINTEXT -X "sasl.mechanism=$KAFKA_SASL_MECHANISM" \
  -X sasl.username=nobody -X "sasl.password=$password"
refused "SASL PLAIN mechanism refused" 'Unsupported SASL mechanism' \
  -b "$KAFKA_SASL_BROKERS" -X security.protocol=SASL_PLAINTEXT -X sasl.mechanism=PLAIN \
  -X "sasl.username=$KAFKA_SASL_USER" -X "sasl.password=$password"
refused "SSL untrusted CA refused" 'certificate verify failed' "${ssl[@]}" -X "ssl.ca.location=$KAFKA_SSL_WRONG_CA"
refused "SSL without the test CA refused" 'certificate verify failed' "${ssl[@]}"

echo "1..$n"
[ "$failed" -eq 0 ]
