/*
 * Telemetry filters for a daemon's agent route: a physical range check of
 * a batch's readings, and a filter that passes on only the records of the
 * host that sent it (lib/health/telem_filter.c).
 */
#ifndef SN_TELEM_FILTER_H
#define SN_TELEM_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include <sn/telemetry.h>

/* True when v is a possible reading of metric m (docs/api.md "Telemetry
 * ranges", by the metric's unit); *min and *max get the range. */
bool sn_telem_in_range(enum sn_metric m, double v, double *min, double *max);

/* The first impossible reading seen (bad), with its line, metric, value and
 * range. */
struct sn_telem_range_check {
    bool bad;
    unsigned line;
    enum sn_metric metric;
    double value, min, max;
};
/* A sink (samples only) that records the first reading out of range. */
struct sn_telem_sink sn_telem_range_sink(struct sn_telem_range_check *c);

/* Passes to `to` only the records of host: GPU records and diag results
 * naming it, BMC (server) facility readings of it, host/NIC readings of it
 * (stamped now_s when they carry no time); nccl-tests, excerpt and skip
 * records as they are. Counts samples passed and foreign records dropped;
 * a leak reading of the host calls on_leak (may be NULL). */
struct sn_telem_host_filter {
    struct sn_telem_sink to;
    const char *host;
    double now_s;
    void (*on_leak)(void *ctx);
    void *leak_ctx;
    uint64_t samples, foreign;
};
struct sn_telem_sink sn_telem_host_filter_sink(struct sn_telem_host_filter *f);

#endif
