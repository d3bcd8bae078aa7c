#!/bin/sh
# Makes a throw-away PKI for the TLS tests with GnuTLS's certtool (the
# same commands docs/operations.md "TLS" shows): a CA, a server
# certificate for localhost / 127.0.0.1 / ::1, a client certificate
# (an agent's, for mutual TLS) and a second, unrelated CA.
#   make_certs.sh DIR
# Writes DIR/{ca,ca2,server,client}.{pem,key}. Exits 77 when certtool is
# not installed.
set -eu
command -v certtool >/dev/null 2>&1 || { echo "certtool not installed"; exit 77; }
D=$1
mkdir -p "$D"
cd "$D"
key() { certtool --generate-privkey --key-type ecdsa --sec-param high --outfile "$1.key" 2>/dev/null; }
ca() {
    key "$1"
    printf 'cn = "%s"\nca\ncert_signing_key\nexpiration_days = 2\n' "$2" >"$1.tmpl"
    certtool --generate-self-signed --load-privkey "$1.key" --template "$1.tmpl" \
        --outfile "$1.pem" 2>/dev/null
}
signed() {
    key "$1"
    certtool --generate-certificate --load-privkey "$1.key" --load-ca-certificate ca.pem \
        --load-ca-privkey ca.key --template "$1.tmpl" --outfile "$1.pem" 2>/dev/null
}
ca ca "sn test CA"
ca ca2 "another CA"
printf 'cn = "localhost"\ndns_name = "localhost"\nip_address = "127.0.0.1"\nip_address = "::1"\ntls_www_server\nsigning_key\nencryption_key\nexpiration_days = 2\n' >server.tmpl
signed server
printf 'cn = "node01"\ntls_www_client\nsigning_key\nexpiration_days = 2\n' >client.tmpl
signed client
