/*
 * lib/gpuhist: per-GPU telemetry rings (step, wrap, fixed point, NaN, memory).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/gpu_history.h>

#include "sn_test.h"

static void step_and_wrap(void **state)
{
    (void)state;
    struct sn_gpu_history *h = NULL;
    assert_int_equal(sn_gpu_history_new(4, 3, 10, &h, NULL), SN_OK);
    size_t empty = sn_gpu_history_bytes(h);
    double v[SN_GPU_HIST_METRIC_COUNT] = {71.25, 650.4, 1980, 97.6, 40.0 * 1073741824.0};
    assert_int_equal(sn_gpu_history_add(h, 2, 1000, v), 1);
    assert_true(sn_gpu_history_bytes(h) > empty); /* allocated on first report */
    assert_int_equal(sn_gpu_history_add(h, 2, 1005, v), 0); /* within step */
    for (int k = 1; k <= 4; k++) {
        v[SN_GPU_HIST_TEMP] = 70 + k;
        assert_int_equal(sn_gpu_history_add(h, 2, 1000 + 10 * k, v), 1);
    }
    assert_int_equal(sn_gpu_history_add(h, 9, 5000, v), 0); /* out of range */
    int64_t t[8];
    double out[8][SN_GPU_HIST_METRIC_COUNT];
    uint32_t n = sn_gpu_history_read(h, 2, t, out, 8);
    assert_int_equal(n, 3); /* the ring keeps the newest 3 */
    assert_int_equal(t[0], 1020);
    assert_int_equal(t[2], 1040);
    assert_near(out[0][SN_GPU_HIST_TEMP], 72, 0.05);
    assert_near(out[2][SN_GPU_HIST_TEMP], 74, 0.05);
    assert_near(out[2][SN_GPU_HIST_POWER], 650, 0.5);
    assert_near(out[2][SN_GPU_HIST_CLOCK_SM], 1980, 0.5);
    assert_near(out[2][SN_GPU_HIST_UTIL], 98, 0.5);
    assert_near(out[2][SN_GPU_HIST_MEM_USED], 40, 0.001);
    n = sn_gpu_history_read(h, 2, t, out, 2); /* the newest 2 */
    assert_int_equal(n, 2);
    assert_int_equal(t[0], 1030);
    assert_int_equal(sn_gpu_history_read(h, 1, t, out, 8), 0);
    sn_gpu_history_free(h);
    sn_gpu_history_free(NULL);
}

static void missing_and_clamped(void **state)
{
    (void)state;
    struct sn_gpu_history *h = NULL;
    assert_int_equal(sn_gpu_history_new(1, 4, 1, &h, NULL), SN_OK);
    double v[SN_GPU_HIST_METRIC_COUNT] = {NAN, -5, NAN, 150, NAN};
    assert_int_equal(sn_gpu_history_add(h, 0, 1, v), 1);
    int64_t t[4];
    double out[4][SN_GPU_HIST_METRIC_COUNT];
    assert_int_equal(sn_gpu_history_read(h, 0, t, out, 4), 1);
    assert_true(isnan(out[0][SN_GPU_HIST_TEMP]));
    assert_true(isnan(out[0][SN_GPU_HIST_CLOCK_SM]));
    assert_true(isnan(out[0][SN_GPU_HIST_MEM_USED]));
    assert_near(out[0][SN_GPU_HIST_POWER], 0, 0);
    assert_near(out[0][SN_GPU_HIST_UTIL], 100, 0);
    sn_gpu_history_free(h);
    struct sn_error err = {0};
    assert_int_equal(sn_gpu_history_new(1, 0, 1, &h, &err), SN_ERR_RANGE);
    assert_non_null(strstr(err.message, "0 samples"));
    assert_int_equal(sn_gpu_history_new(1, 5, 0, &h, NULL), SN_ERR_RANGE);
    assert_string_equal(sn_gpu_history_metric_key(SN_GPU_HIST_CLOCK_SM), "clock_sm_mhz");
    assert_string_equal(sn_gpu_history_metric_unit(SN_GPU_HIST_POWER), "W");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(step_and_wrap),
        cmocka_unit_test(missing_and_clamped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
