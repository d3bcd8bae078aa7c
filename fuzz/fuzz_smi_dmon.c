/*
 * libFuzzer harness: nvidia-smi dmon into the telemetry store. The first byte
 * picks where the input is split between two feeds (and, for JSON, whether
 * the store is inventory-only), so partial lines and every code path of the
 * parser and the store see arbitrary bytes.
 */
#include <sn/telemetry.h>

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_telem_store *store;
    struct sn_telem_parser *p;
    unsigned mode = size ? data[0] : 0;
    struct sn_telem_store_limits lim = {.inventory_only = (mode & 4) != 0, .skips = 8};
    if (sn_telem_store_new(&lim, &store, NULL) != SN_OK)
        return 0;
    struct sn_telem_gpu_ref inv = {"fuzzhost", 0, NULL, SN_TELEM_BUS_NONE};
    uint32_t id;
    if (sn_telem_store_add_gpu(store, &inv, &id, NULL) != SN_OK) {
        sn_telem_store_free(store);
        return 0;
    }
    struct sn_telem_sink sink = sn_telem_store_sink(store);
    struct sn_telem_opts opts = {
        .source = "fuzz",
        .host = "fuzzhost",
        .year = 2024,
        .prefix = (mode & 2) ? SN_TELEM_PREFIX_NONE : SN_TELEM_PREFIX_AUTO,
        .fields = (mode & 8) ? "gpu,pwr,gtemp,mtemp,sm,mem" : NULL,
    };
    if (sn_telem_parser_new(SN_TELEM_FMT_SMI_DMON, &opts, &sink, &p, NULL) == SN_OK) {
        size_t cut = size ? (mode * 131u) % size : 0;
        enum sn_err rc = sn_telem_parser_feed(p, data, cut, NULL);
        if (rc == SN_OK)
            rc = sn_telem_parser_feed(p, data + cut, size - cut, NULL);
        if (rc == SN_OK)
            rc = sn_telem_parser_finish(p, NULL);
        (void)rc;
        sn_telem_parser_free(p);
    }
    sn_telem_store_free(store);
    return 0;
}
