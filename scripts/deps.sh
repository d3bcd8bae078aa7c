#!/bin/sh
# Installs the Debian 12 packages Supernode needs to build and test, when
# they are missing: with apt-get when run as root, otherwise it prints the
# exact command to run. Sourced or run by scripts/run and scripts/test.
set -eu
SN_PACKAGES="build-essential cmake pkg-config clang libclang-rt-14-dev libfyaml-dev libjansson-dev libcmocka-dev libsqlite3-dev libmicrohttpd-dev libgnutls28-dev gnutls-bin libssl-dev libcurl4-openssl-dev libpq-dev postgresql slurmctld slurmd slurm-client munge chromium prometheus"
missing=""
for p in $SN_PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "deps: installing$missing" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $missing >/dev/null
    else
        echo "deps: missing packages:$missing" >&2
        echo "deps: run: sudo apt-get install -y$missing" >&2
        exit 2
    fi
fi
