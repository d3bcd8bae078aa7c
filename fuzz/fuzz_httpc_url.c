/*
 * Fuzz harness: normalisation of a server address (sn_httpc_normalize in
 * lib/httpc, on libcurl's URL parser): any bytes give SN_OK with a URL
 * that normalises to itself, or an error with a message; never a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sn/httpc.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1024)
        return 0;
    char in[1025];
    memcpy(in, data, size);
    in[size] = '\0';
    char out[SN_HTTPC_URL_MAX], again[SN_HTTPC_URL_MAX];
    struct sn_error err = {0};
    if (sn_httpc_normalize(in, out, &err) == SN_OK) {
        /* A normalised URL is stable, so logs and errors name one form. */
        if (sn_httpc_normalize(out, again, NULL) != SN_OK || strcmp(out, again) != 0)
            abort();
    } else if (!err.message[0]) {
        abort();
    }
    return 0;
}
