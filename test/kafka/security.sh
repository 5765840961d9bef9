#!/usr/bin/env bash
# Credentials for the test broker's SASL_PLAINTEXT and SSL listeners, made by
# test/kafka.sh start (also runnable by hand). Everything goes to
# $KAFKA_SECURITY_DIR (default $EOINGEST_RUN/kafka-security), never into the
# repository. Existing material is kept; only what is missing is made
# (the TLS set is also remade when the broker certificate is about to expire
# or no longer matches the CA).
#
#   ca.pem, ca.key              test CA; clients trust ca.pem ($KAFKA_SSL_CA)
#   server.pem, server.key      broker certificate signed by the test CA,
#                               CN=127.0.0.1, SAN IP:127.0.0.1, DNS:localhost
#   server.p12                  PKCS12 keystore for the broker (key + chain)
#   keystore.password           its password (random)
#   wrong-ca.pem, wrong-ca.key  an unrelated CA for negative tests ($KAFKA_SSL_WRONG_CA)
#   sasl.password               random password of SASL user $KAFKA_SASL_USER
#   client-sasl.properties      librdkafka/kcat properties for the SASL listener (kcat -F)
#   client-ssl.properties       librdkafka/kcat properties for the SSL listener (kcat -F)
#
# CA certificates are world-readable (PostgreSQL runs as another OS user and
# its workers need ssl.ca.location); keys and passwords are 0600.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../env.sh"

command -v openssl >/dev/null || eoi_die "openssl not found"
dir=$KAFKA_SECURITY_DIR
mkdir -p "$dir"
chmod 755 "$dir"
exec 8>"$dir/.lock"
flock -w 60 8 || eoi_die "timed out waiting for the lock on $dir"

tls_ok() {
  local f
  for f in ca.pem ca.key server.pem server.key server.p12 keystore.password wrong-ca.pem wrong-ca.key; do
    [ -s "$dir/$f" ] || return 1
  done
  openssl x509 -in "$dir/server.pem" -noout -checkend 86400 >/dev/null 2>&1 || return 1
  openssl verify -CAfile "$dir/ca.pem" "$dir/server.pem" >/dev/null 2>&1 || return 1
}

# make_ca NAME CN: self-signed EC P-256 CA, NAME.pem / NAME.key in the cwd.
make_ca() {
  cat >"$1.cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
O = eoingest tests
CN = $2
[ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
EOF
  openssl req -x509 -new -config "$1.cnf" -extensions ext \
    -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$1.key" -out "$1.pem" -days 3650 -sha256 2>/dev/null
}

make_tls() {
  local tmp
  tmp=$(mktemp -d "$dir/.new.XXXXXX")
  (
    cd "$tmp"
    umask 077
    make_ca ca "eoingest test CA"
    make_ca wrong-ca "eoingest untrusted test CA"
    cat >server.cnf <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
O = eoingest tests
CN = 127.0.0.1
[ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyAgreement
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
    openssl req -new -config server.cnf -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
      -keyout server.key -out server.csr 2>/dev/null
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial "0x$(openssl rand -hex 16)" \
      -days 825 -sha256 -extfile server.cnf -extensions ext -out server.pem 2>/dev/null
    openssl rand -hex 16 >keystore.password
    openssl pkcs12 -export -name kafka -inkey server.key -in server.pem -certfile ca.pem \
      -passout file:keystore.password -out server.p12
    chmod 644 ca.pem wrong-ca.pem server.pem
    local f
    for f in ca.key wrong-ca.key server.key server.p12 keystore.password wrong-ca.pem server.pem ca.pem; do
      mv -f "$f" "$dir/$f"
    done
  ) || { rm -rf "$tmp"; eoi_die "could not generate the test TLS material in $dir"; }
  rm -rf "$tmp"
  echo "kafka security: generated test CA and broker certificate in $dir" >&2
}

tls_ok || make_tls

if [ ! -s "$dir/sasl.password" ]; then
  (umask 077 && openssl rand -hex 16 >"$dir/sasl.password.tmp" && mv -f "$dir/sasl.password.tmp" "$dir/sasl.password")
fi
chmod 600 "$dir/sasl.password"

read -r password <"$dir/sasl.password"
(
  umask 077
  cat >"$dir/client-sasl.properties.tmp" <<EOF
security.protocol=SASL_PLAINTEXT
sasl.mechanism=$KAFKA_SASL_MECHANISM
sasl.username=$KAFKA_SASL_USER
sasl.password=$password
EOF
  mv -f "$dir/client-sasl.properties.tmp" "$dir/client-sasl.properties"
  cat >"$dir/client-ssl.properties.tmp" <<EOF
security.protocol=SSL
ssl.ca.location=$KAFKA_SSL_CA
EOF
  chmod 644 "$dir/client-ssl.properties.tmp"
  mv -f "$dir/client-ssl.properties.tmp" "$dir/client-ssl.properties"
)
