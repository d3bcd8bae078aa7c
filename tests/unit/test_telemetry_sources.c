/*
 * The telemetry store's source names at daemon scale: snd names each node's
 * batches by the node, so a 131,072-GPU cluster has 16,384 sources. Each
 * reading must keep its own node's name (it is the evidence's location), and
 * a source past the cap is attributed to the first one, as documented.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <sn/telemetry.h>

static void feed(struct sn_telem_store *store, int nodes)
{
    struct sn_telem_sink sink = sn_telem_store_sink(store);
    for (int n = 0; n < nodes; n++) {
        char host[32], body[160];
        snprintf(host, sizeof(host), "node-%05d", n);
        int len = snprintf(body, sizeof(body),
                           "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"%s\"} %d\n", host, 30 + n % 50);
        struct sn_telem_opts o = {.source = host, .host = host, .prefix = SN_TELEM_PREFIX_NONE};
        struct sn_error err = {0};
        assert_int_equal(sn_telem_parse_buffer(SN_TELEM_FMT_PROM, &o, &sink, body, (size_t)len,
                                               NULL, &err),
                         SN_OK);
    }
}

/* The name of the source of GPU 0 of host. */
static const char *source_of(const struct sn_telem_store *store, const char *host)
{
    for (uint32_t i = 0; i < sn_telem_store_gpu_count(store); i++) {
        const struct sn_telem_gpu *g = sn_telem_store_gpu(store, i);
        if (strcmp(sn_telem_store_host_name(store, g->host), host) == 0)
            return sn_telem_store_source_name(store, g->m[SN_METRIC_TEMP_GPU].source);
    }
    return NULL;
}

static void many_sources_keep_their_names(void **state)
{
    (void)state;
    struct sn_telem_store_limits lim = {.sources = 20000};
    struct sn_telem_store *store = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(&lim, &store, &err), SN_OK);
    feed(store, 16384);
    assert_string_equal(source_of(store, "node-00000"), "node-00000");
    assert_string_equal(source_of(store, "node-04096"), "node-04096");
    assert_string_equal(source_of(store, "node-16383"), "node-16383");
    sn_telem_store_free(store);
}

static void past_the_cap_is_the_first_source(void **state)
{
    (void)state;
    struct sn_telem_store *store = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &store, &err), SN_OK); /* 4,096 names */
    feed(store, 4100);
    assert_string_equal(source_of(store, "node-04095"), "node-04095");
    assert_string_equal(source_of(store, "node-04099"), "node-00000");
    sn_telem_store_free(store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(many_sources_keep_their_names),
        cmocka_unit_test(past_the_cap_is_the_first_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
