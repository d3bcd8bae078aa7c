/*
 * libFuzzer harness: the baseline JSON reader (sn_baseline_from_json()).
 *
 * Checked beyond "no crash": a document that reads is written back with
 * sn_baseline_to_json(), that text must read again, and writing the second
 * reading must give the same bytes (the format round-trips without loss);
 * entries stay sorted and unique by (kind, key) so sn_baseline_find() works;
 * every error names the source.
 */
#include <sn/health.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_sorted(const struct sn_baseline *b)
{
    for (uint32_t i = 0; i < b->n; i++) {
        if (sn_baseline_find(b, b->e[i].kind, b->e[i].key) != &b->e[i])
            abort();
        if (i && (b->e[i - 1].kind > b->e[i].kind ||
                  (b->e[i - 1].kind == b->e[i].kind && strcmp(b->e[i - 1].key, b->e[i].key) >= 0)))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sn_baseline b, b2;
    struct sn_error err = {0};
    char *json = NULL, *json2 = NULL;
    sn_baseline_init(&b);
    sn_baseline_init(&b2);
    enum sn_err rc = sn_baseline_from_json(&b, (const char *)data, size, "fuzz.json", &err);
    if (rc != SN_OK) {
        if (rc != SN_ERR_NOMEM && strncmp(err.message, "fuzz.json", 9) != 0)
            abort();
        goto out;
    }
    check_sorted(&b);
    if (sn_baseline_to_json(&b, &json, &err) != SN_OK)
        goto out;
    if (sn_baseline_from_json(&b2, json, strlen(json), "again.json", &err) != SN_OK)
        abort(); /* what we write, we must read */
    check_sorted(&b2);
    if (b2.n != b.n || sn_baseline_to_json(&b2, &json2, &err) != SN_OK || strcmp(json, json2) != 0)
        abort(); /* lossy round trip */
out:
    free(json);
    free(json2);
    sn_baseline_release(&b);
    sn_baseline_release(&b2);
    return 0;
}
