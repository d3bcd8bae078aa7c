/*
 * The body shared by the telemetry readers' libFuzzer harnesses: one
 * reader (format) feeding the telemetry store. The first byte picks where
 * the input is split between two feeds, whether the store is
 * inventory-only (bit 2), whether line prefixes are detected (bit 1) and,
 * where the harness gives a field list, whether it is used (bit 3), so
 * partial lines and every code path of the parser and the store see
 * arbitrary bytes. Each fuzz_<format>.c is one call of fuzz_telem_one();
 * this is a header because every harness (and its corpus replay) is built
 * from its own single source file (fuzz/CMakeLists.txt).
 */
#ifndef SN_FUZZ_TELEM_H
#define SN_FUZZ_TELEM_H

#include <sn/telemetry.h>

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs data through the reader of format; fields: the field list given
 * when bit 3 of the first byte is set (NULL: never). Always 0. */
static inline int fuzz_telem_one(enum sn_telem_format format, const char *fields,
                                 const uint8_t *data, size_t size)
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
        .fields = (mode & 8) ? fields : NULL,
    };
    if (sn_telem_parser_new(format, &opts, &sink, &p, NULL) == SN_OK) {
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

#endif
