#!/bin/sh
# lib/control is pure (include/sn/control.h): no clock, no sockets, no
# files, no threads, no randomness, no output. Fails on any such call in
# its sources, and on any cmd/snd source lib/control includes.
set -eu
bad=$(grep -nE '\b(f?printf|puts|fputs|perror|time|clock_gettime|gettimeofday|rand|random|getrandom|getenv|fopen|open|read|write|socket|connect|pthread_[a-z_]+|sleep|usleep|nanosleep)\(' \
    lib/control/*.c lib/control/*.h | grep -vE 'snprintf|vsnprintf' || true)
if [ -n "$bad" ]; then
    echo "control_purity: lib/control calls the outside world:" >&2
    echo "$bad" >&2
    exit 1
fi
if grep -nE '#include "(snd|http|agent)\.h"|#include <(pthread|unistd|time|sys/[a-z]+)\.h>' lib/control/*.c lib/control/*.h; then
    echo "control_purity: lib/control includes a shell or system header" >&2
    exit 1
fi
echo "control_purity: $(ls lib/control/*.c | wc -l) files, no clock, I/O, threads or randomness"
