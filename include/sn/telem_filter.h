/*
 * Telemetry filters for a daemon's agent route: a physical range check of
 * a batch's readings, and a filter that passes on only the records of the
 * host that sent it (lib/health/telem_filter.c).
 */
#ifndef SN_TELEM_FILTER_H
#define SN_TELEM_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include <sn/error.h>
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

/* An agent's batch as snd's telemetry route takes it (telem_batch.c): the
 * body of format, sent by host (source: the store's name for it), parsed
 * into a buffer of at most buffer_cap bytes with the range check, then,
 * only when every reading is possible, replayed through a host filter of
 * host into to (now_s and on_leak as the filter's). */
struct sn_telem_batch {
    enum sn_telem_format format;
    const char *host, *source;
    const char *body;
    size_t len, buffer_cap;
    struct sn_telem_sink to;
    double now_s;
    void (*on_leak)(void *ctx);
    void *leak_ctx;
    /* Out: samples stored, records skipped (the parser's skips other than
     * unused metrics), foreign records dropped; bad_metric names the
     * impossible reading's metric on SN_ERR_RANGE. */
    uint64_t samples, skipped, foreign;
    const char *bad_metric;
};
/* SN_OK: the batch went on. SN_ERR_RANGE: an impossible reading (err names
 * its line, value and range; nothing stored); SN_ERR_LIMIT: too large to
 * buffer; SN_ERR_NOMEM, or the parser's error. */
enum sn_err sn_telem_batch_ingest(struct sn_telem_batch *b, struct sn_error *err);

#endif
