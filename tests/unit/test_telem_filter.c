/*
 * Unit tests of lib/health/telem_filter.c (sn/telem_filter.h): the range
 * check finds the first impossible reading of a batch (its line, metric,
 * value and range) and passes a possible one; the host filter passes only
 * the sending host's GPU records, drops and counts another host's, and
 * calls its leak hook for a leak reading of the host's own BMC only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/telem_filter.h>

#include <math.h>
#include <string.h>

#include "sn_test.h"

struct seen {
    unsigned samples, facility;
};

static void count_samples(void *ctx, const struct sn_telem_samples *r)
{
    (void)r;
    ((struct seen *)ctx)->samples++;
}

static void count_facility(void *ctx, const struct sn_telem_facility *r)
{
    (void)r;
    ((struct seen *)ctx)->facility++;
}

static void leak(void *ctx)
{
    (*(int *)ctx)++;
}

static void test_range(void **state)
{
    (void)state;
    double lo, hi;
    assert_true(sn_telem_in_range(SN_METRIC_TEMP_GPU, 85, &lo, &hi));
    assert_false(sn_telem_in_range(SN_METRIC_TEMP_GPU, 500, &lo, &hi));
    assert_true(hi >= 100 && hi < 500);
    struct sn_telem_range_check c = {0};
    struct sn_telem_sink s = sn_telem_range_sink(&c);
    struct sn_telem_sample ok = {SN_METRIC_TEMP_GPU, SN_TELEM_OK, 60};
    struct sn_telem_sample bad[2] = {{SN_METRIC_POWER, SN_TELEM_OK, 300},
                                     {SN_METRIC_TEMP_GPU, SN_TELEM_OK, 500}};
    struct sn_telem_samples r = {.gpu = {.host = "sn00-t00", .index = 0},
                                 .at = {.source = "b", .line = 3, .time_s = NAN},
                                 .v = &ok,
                                 .n = 1};
    s.samples(s.ctx, &r);
    assert_false(c.bad);
    r.v = bad;
    r.n = 2;
    r.at.line = 7;
    s.samples(s.ctx, &r);
    assert_true(c.bad);
    assert_int_equal(c.line, 7);
    assert_int_equal(c.metric, SN_METRIC_TEMP_GPU);
    assert_true(c.value == 500);
    r.at.line = 9; /* the first stays */
    s.samples(s.ctx, &r);
    assert_int_equal(c.line, 7);
}

static void test_host_filter(void **state)
{
    (void)state;
    struct seen seen = {0};
    int leaks = 0;
    struct sn_telem_host_filter f = {
        .to = {.ctx = &seen, .samples = count_samples, .facility = count_facility},
        .host = "sn00-t00",
        .on_leak = leak,
        .leak_ctx = &leaks};
    struct sn_telem_sink s = sn_telem_host_filter_sink(&f);
    struct sn_telem_sample v[2] = {{SN_METRIC_TEMP_GPU, SN_TELEM_OK, 60},
                                   {SN_METRIC_POWER, SN_TELEM_OK, 300}};
    struct sn_telem_samples own = {.gpu = {.host = "sn00-t00"}, .v = v, .n = 2};
    struct sn_telem_samples other = {.gpu = {.host = "sn00-t01"}, .v = v, .n = 2};
    s.samples(s.ctx, &own);
    s.samples(s.ctx, &other);
    assert_int_equal(seen.samples, 1);
    assert_int_equal(f.samples, 2);
    assert_int_equal(f.foreign, 1);
    struct sn_telem_facility bmc = {.kind = SN_FACILITY_KIND_SERVER,
                                    .name = "sn00-t01",
                                    .metric = SN_FACILITY_LEAK,
                                    .value = 1};
    s.facility(s.ctx, &bmc); /* another server's BMC: dropped, no leak */
    assert_int_equal(leaks, 0);
    assert_int_equal(f.foreign, 2);
    bmc.name = "sn00-t00";
    s.facility(s.ctx, &bmc);
    assert_int_equal(seen.facility, 1);
    assert_int_equal(leaks, 1);
}

/* The route's pipeline: a foreign record dropped and counted, an
 * impossible reading refusing the whole batch, a batch over the buffer. */
static void test_batch(void **state)
{
    (void)state;
    struct seen seen = {0};
    struct sn_telem_sink to = {.ctx = &seen, .samples = count_samples};
    const char *good = "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\",Hostname=\"sn00-t00\"} 51\n"
                       "DCGM_FI_DEV_GPU_TEMP{gpu=\"4\",Hostname=\"sn00-t01\"} 52\n";
    struct sn_telem_batch b = {.format = SN_TELEM_FMT_PROM,
                               .host = "sn00-t00",
                               .source = "sn00-t00",
                               .body = good,
                               .len = strlen(good),
                               .buffer_cap = 1 << 20,
                               .to = to,
                               .now_s = 1000};
    struct sn_error err = {0};
    assert_int_equal(sn_telem_batch_ingest(&b, &err), SN_OK);
    assert_int_equal(seen.samples, 1);
    assert_int_equal(b.samples, 1);
    assert_int_equal(b.foreign, 1);

    const char *bad = "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\",Hostname=\"sn00-t00\"} 51\n"
                      "DCGM_FI_DEV_GPU_TEMP{gpu=\"2\",Hostname=\"sn00-t00\"} 900\n";
    b.body = bad;
    b.len = strlen(bad);
    assert_int_equal(sn_telem_batch_ingest(&b, &err), SN_ERR_RANGE);
    assert_int_equal(seen.samples, 1); /* nothing of the batch went on */
    assert_string_equal(b.bad_metric, sn_metric_name(SN_METRIC_TEMP_GPU));
    assert_non_null(strstr(err.message, "line 2: "));
    assert_non_null(strstr(err.message, " 900 "));

    b.body = good;
    b.len = strlen(good);
    b.buffer_cap = 16;
    assert_int_equal(sn_telem_batch_ingest(&b, &err), SN_ERR_LIMIT);
    assert_int_equal(seen.samples, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_host_filter),
        cmocka_unit_test(test_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
