/*
 * sn_preflight_judge() (lib/health/health_preflight.c): the judgement of a
 * preflight on real GPUs. H100 SXM figures (examples/std-unit-64.yaml):
 * 989 TFLOP/s dense BF16, 3350 GB/s HBM; the full check's expected busbw
 * 360 GB/s (0.80 x 18 x 25 GB/s, sn_health_busbw_floor). The busbw peaks
 * are the two real nccl-tests outputs of tests/fakes/preflight: 839.16
 * GB/s (CoreWeave NVL72) and 97.37 GB/s (nccl-tests issue 252).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/preflight.h>

static struct sn_preflight_gpu gpu(int index, double tflops, double hbm_gb_per_s)
{
    return (struct sn_preflight_gpu){
        .index = index, .flops = tflops * 1e12, .hbm_bytes_per_s = hbm_gb_per_s * 1e9};
}

static struct sn_preflight_input input(const struct sn_preflight_gpu *g, size_t n)
{
    return (struct sn_preflight_input){.gpus = g,
                                       .n_gpus = n,
                                       .expect_flops = 989e12,
                                       .expect_hbm_bytes_per_s = 3350e9,
                                       .expect_busbw_bytes_per_s = 360e9,
                                       .slow_floor = 0.05};
}

static void healthy_passes(void **state)
{
    (void)state;
    struct sn_preflight_gpu g[] = {gpu(2, 690.5, 3020), gpu(5, 688.0, 3011)};
    struct sn_preflight_input in = input(g, 2);
    in.full = true;
    in.nccl_peak_busbw_bytes_per_s = 839.16e9;
    struct sn_preflight_verdict v;
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 0);
    assert_false(v.failed[0] || v.failed[1]);
    assert_string_equal(v.evidence, "");
}

static void below_spec_share_fails_that_gpu(void **state)
{
    (void)state;
    /* 382.1 < 0.5 x 989 = 494.5; HBM 1500 < 1675 on another GPU. */
    struct sn_preflight_gpu g[] = {gpu(0, 690.5, 3020), gpu(3, 382.1, 3020), gpu(4, 690, 1500)};
    struct sn_preflight_input in = input(g, 3);
    struct sn_preflight_verdict v;
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 2);
    assert_false(v.failed[0]);
    assert_true(v.failed[1]);
    assert_true(v.failed[2]);
    assert_string_equal(v.evidence, "GPU 3 gemm 382.1 TFLOP/s < 0.50 x 989.0 TFLOP/s (GPU model); "
                                    "GPU 4 hbm 1500.0 GB/s < 0.50 x 3350.0 GB/s (GPU model)");
}

static void below_peer_median_fails_only_with_three(void **state)
{
    (void)state;
    /* 600 is above the spec share but below 0.95 x the median 690. */
    struct sn_preflight_gpu g[] = {gpu(0, 690, 3020), gpu(1, 691, 3020), gpu(2, 600, 3020)};
    struct sn_preflight_input in = input(g, 3);
    struct sn_preflight_verdict v;
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 1);
    assert_true(v.failed[2]);
    assert_string_equal(
        v.evidence, "GPU 2 gemm 600.0 TFLOP/s < 0.95 x 690.0 TFLOP/s (median of the job's GPUs)");
    /* Two GPUs: no median to judge by; the spec share alone passes it. */
    in.n_gpus = 2;
    g[1] = g[2];
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 0);
}

static void probe_failure_and_missing_rows_fail(void **state)
{
    (void)state;
    struct sn_preflight_gpu g[] = {gpu(0, 690, 3020), gpu(1, NAN, NAN), gpu(2, 690, 3020)};
    g[2].probe_failed = true;
    struct sn_preflight_input in = input(g, 3);
    struct sn_preflight_verdict v;
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 2);
    assert_false(v.failed[0]);
    assert_string_equal(v.evidence, "GPU 1 probe printed no rows; GPU 2 probe failed");
}

static void slow_all_reduce_fails_every_gpu(void **state)
{
    (void)state;
    struct sn_preflight_gpu g[] = {gpu(2, 690.5, 3020), gpu(5, 690.5, 3020)};
    struct sn_preflight_input in = input(g, 2);
    in.full = true;
    in.nccl_peak_busbw_bytes_per_s = 97.37e9;
    struct sn_preflight_verdict v;
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 2);
    assert_true(v.failed[0] && v.failed[1]);
    assert_string_equal(v.evidence, "all-reduce peak busbw 97.4 GB/s < 360.0 GB/s expected");
    /* Not full: the same figures pass (the all-reduce did not run). */
    in.full = false;
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 0);
    /* A failed tool fails them whatever its figure; no expectation: no floor. */
    in.full = true;
    in.nccl_failed = true;
    in.nccl_detail = "exit status 3";
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 2);
    assert_string_equal(v.evidence, "all-reduce failed: exit status 3");
    in.nccl_failed = false;
    in.expect_busbw_bytes_per_s = NAN;
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, 0);
}

static void evidence_stays_in_its_buffer(void **state)
{
    (void)state;
    struct sn_preflight_gpu g[SN_PREFLIGHT_GPUS_MAX];
    for (int i = 0; i < SN_PREFLIGHT_GPUS_MAX; i++)
        g[i] = gpu(i, 100, 3020);
    struct sn_preflight_input in = input(g, SN_PREFLIGHT_GPUS_MAX);
    struct sn_preflight_verdict v;
    sn_preflight_judge(&in, &v);
    assert_int_equal(v.n_failed, SN_PREFLIGHT_GPUS_MAX);
    assert_true(strlen(v.evidence) < sizeof(v.evidence));
    /* Whole items only: it ends with a GPU's item, not a cut one. */
    assert_non_null(strstr(v.evidence, "(GPU model)"));
    size_t n = strlen(v.evidence);
    assert_string_equal(v.evidence + n - strlen("(GPU model)"), "(GPU model)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(healthy_passes),
        cmocka_unit_test(below_spec_share_fails_that_gpu),
        cmocka_unit_test(below_peer_median_fails_only_with_three),
        cmocka_unit_test(probe_failure_and_missing_rows_fail),
        cmocka_unit_test(slow_all_reduce_fails_every_gpu),
        cmocka_unit_test(evidence_stays_in_its_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
