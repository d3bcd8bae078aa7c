/*
 * libFuzzer harness: the host and NIC readers (ethtool -S, ibstat/ibstatus,
 * perfquery, ibqueryerrors, rdma statistic, /proc/interrupts and softirqs,
 * sysfs 'grep .' output, NCCL_DEBUG logs) into a health history, whose net
 * table keeps what they read. The first byte picks the format (low three
 * bits) and where the input is split between two feeds, so partial lines
 * and every path of the readers and of the table see arbitrary bytes.
 */
#include <sn/health.h>
#include <sn/telemetry.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum sn_telem_format formats[8] = {
    SN_TELEM_FMT_ETHTOOL_S,     SN_TELEM_FMT_IBSTAT,     SN_TELEM_FMT_PERFQUERY,
    SN_TELEM_FMT_IBQUERYERRORS, SN_TELEM_FMT_RDMA_STAT,  SN_TELEM_FMT_INTERRUPTS,
    SN_TELEM_FMT_SYSFS,         SN_TELEM_FMT_NCCL_DEBUG,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_telem_store *store;
    struct sn_health_history *hist;
    struct sn_telem_parser *p;
    unsigned mode = size ? data[0] : 0;
    struct sn_telem_store_limits lim = {.skips = 8};
    if (sn_telem_store_new(&lim, &store, NULL) != SN_OK)
        return 0;
    if (sn_health_history_new(store, NULL, &hist, NULL) != SN_OK) {
        sn_telem_store_free(store);
        return 0;
    }
    struct sn_telem_sink sink = sn_health_history_sink(hist);
    struct sn_telem_opts opts = {.source = "fuzz", .host = "fuzzhost"};
    if (sn_telem_parser_new(formats[mode & 7], &opts, &sink, &p, NULL) == SN_OK) {
        size_t cut = size ? (mode * 131u) % size : 0;
        enum sn_err rc = sn_telem_parser_feed(p, data, cut, NULL);
        if (rc == SN_OK)
            rc = sn_telem_parser_feed(p, data + cut, size - cut, NULL);
        if (rc == SN_OK)
            rc = sn_telem_parser_finish(p, NULL);
        (void)rc;
        sn_telem_parser_free(p);
    }
    /* The table reads back what it kept. */
    for (uint32_t i = 0; i < sn_health_history_net_count(hist); i++)
        (void)sn_health_history_net(hist, i)->rise;
    sn_health_history_free(hist);
    sn_telem_store_free(store);
    return 0;
}
