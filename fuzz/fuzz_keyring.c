/*
 * Fuzz harness: the token key ring file (sn_auth_ring_parse in lib/auth,
 * read by snd from token.keys): any bytes give SN_OK with a ring that
 * formats back to the same text and parses again to the same ring, or an
 * error with a message; never a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sn/auth.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_auth_ring ring, again;
    struct sn_error err = {0};
    if (sn_auth_ring_parse("fuzz", (const char *)data, size, &ring, &err) != SN_OK) {
        if (!err.message[0])
            abort();
        return 0;
    }
    /* One ring has one text: what parsed is exactly what format writes. */
    char text[SN_AUTH_RING_TEXT_MAX];
    size_t n = sn_auth_ring_format(&ring, text, sizeof(text));
    if (n != size || memcmp(text, data, size) != 0)
        abort();
    if (sn_auth_ring_parse("fuzz", text, n, &again, NULL) != SN_OK ||
        memcmp(&again, &ring, sizeof(ring)) != 0)
        abort();
    return 0;
}
