/*
 * libFuzzer harness: a Fabric Manager log as the "fabricmanager" telemetry
 * format (lib/health/ingest_fmlog.c, records read by lib/fabric/fmlog.c)
 * into the telemetry store. The first byte picks where the input is split
 * between two feeds, so partial lines reach the parser and the store.
 */
#include "fuzz_telem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_telem_one(SN_TELEM_FMT_FABRICMANAGER, NULL, data, size);
}
