/*
 * libFuzzer harness: LBNL/Azure NHC output into the telemetry store. The first byte
 * picks where the input is split between two feeds (and, for JSON, whether
 * the store is inventory-only), so partial lines and every code path of the
 * parser and the store see arbitrary bytes.
 */
#include "fuzz_telem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_telem_one(SN_TELEM_FMT_NHC, NULL, data, size);
}
