/*
 * Fuzz harness: the revocation list file (sn_auth_revocations_parse in
 * lib/auth, read by snd from token.revoked): any bytes give SN_OK with
 * every id a valid token id, or an error with a message; never a crash.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sn/auth.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool check_id(void *ctx, const char *id)
{
    size_t *count = ctx;
    size_t n = strlen(id);
    if (n == 0 || n >= SN_AUTH_ID_MAX || strspn(id, "0123456789abcdef") != n)
        abort();
    (*count)++;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    uint64_t generation = 0;
    size_t count = 0;
    struct sn_error err = {0};
    enum sn_err rc = sn_auth_revocations_parse("fuzz", (const char *)data, size, &generation,
                                               check_id, &count, &err);
    if (rc != SN_OK && !err.message[0])
        abort();
    if (count > SN_AUTH_REVOCATIONS_MAX)
        abort();
    return 0;
}
