/*
 * libFuzzer harness: nvidia-smi CSV (--query-gpu / --query-compute-apps)
 * into the telemetry store. The first byte picks the split point of two
 * feeds and whether a noheader field list and host prefixes are in force,
 * so line reassembly and both header modes are exercised; without a field
 * list, header-less rows go through the layout inference (the seeds
 * infer-*.csv start with an even byte for that).
 */
#include <sn/telemetry.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_telem_store *store;
    struct sn_telem_parser *p;
    if (sn_telem_store_new(NULL, &store, NULL) != SN_OK)
        return 0;
    struct sn_telem_sink sink = sn_telem_store_sink(store);
    unsigned mode = size ? data[0] : 0;
    struct sn_telem_opts opts = {
        .source = "fuzz.csv",
        .host = "fuzzhost",
        .fields = (mode & 1) ? "index,uuid,pci.bus_id,timestamp,temperature.gpu,power.draw,"
                               "memory.used,clocks_event_reasons.hw_slowdown,pstate,pid"
                             : NULL,
        .prefix = (mode & 2) ? SN_TELEM_PREFIX_REQUIRED : SN_TELEM_PREFIX_AUTO,
    };
    if (sn_telem_parser_new(SN_TELEM_FMT_SMI_CSV, &opts, &sink, &p, NULL) == SN_OK) {
        size_t cut = size ? (mode * 131u) % size : 0;
        enum sn_err rc = sn_telem_parser_feed(p, data, cut, NULL);
        if (rc == SN_OK)
            rc = sn_telem_parser_feed(p, data + cut, size - cut, NULL);
        if (rc == SN_OK)
            rc = sn_telem_parser_finish(p, NULL);
        const struct sn_telem_layout *l = sn_telem_parser_layout(p);
        for (unsigned c = 0; l && c < l->ncols; c++)
            if (!l->cols[c].field || !l->cols[c].basis)
                __builtin_trap();
        (void)rc;
        sn_telem_parser_free(p);
    }
    sn_telem_store_free(store);
    return 0;
}
