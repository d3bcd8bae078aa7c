/*
 * Property tests of coverage in the health engine (lib/health/
 * health_analyze.c "evidence"): analysis over no input, an empty input or
 * garbage in every telemetry format never reports a GPU "healthy" (score
 * 100) without evidence: such GPUs score unknown (NaN), are in no exclusion
 * set, and the coverage counts say how many GPUs and servers had evidence.
 * Also: a GPU that reported and then stopped while its host kept reporting
 * is flagged gpu-missing; evidence older than stale_s is stale. The cluster
 * is examples/good-64.yaml (8 servers x 8 GPUs).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <sn/health.h>
#include <sn/spec.h>

#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char path[512];
    struct sn_error err = {0};
    assert_int_equal(sn_spec_parse_file(sn_test_path(path, sizeof(path), "examples/good-64.yaml"),
                                        &f->spec, &err),
                     SN_OK);
    assert_int_equal(sn_model_build(f->spec, &f->model, &err), SN_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sn_model_free(f->model);
    sn_spec_free(f->spec);
    free(f);
    return 0;
}

/* Feeds text (len bytes) in format fmt, analyzes at now and returns the
 * report (caller frees). */
static struct sn_health_report *pass(const struct fx *f, int fmt, const char *text, size_t len,
                                     double now)
{
    struct sn_telem_store *st;
    struct sn_health_history *h;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &st, &err), SN_OK);
    assert_int_equal(sn_health_history_new(st, NULL, &h, &err), SN_OK);
    if (fmt >= 0) {
        struct sn_telem_opts o = {.source = "in.txt", .host = "sn00-t01"};
        struct sn_telem_sink sink = sn_health_history_sink(h);
        /* JSON formats may refuse garbage at finish: that is an error, not data */
        enum sn_err rc =
            sn_telem_parse_buffer((enum sn_telem_format)fmt, &o, &sink, text, len, NULL, &err);
        assert_true(rc == SN_OK || rc == SN_ERR_SYNTAX || rc == SN_ERR_LIMIT);
    }
    struct sn_health_input in = {.model = f->model, .store = st, .history = h, .now_s = now};
    struct sn_health_report *r = NULL;
    if (sn_health_analyze(&in, NULL, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    sn_health_history_free(h);
    sn_telem_store_free(st);
    return r;
}

/* The property: no GPU or server is 100 without evidence, unknown ones are
 * excluded from nothing, and the coverage counts add up. */
static void check_never_healthy_blind(const struct sn_health_report *r)
{
    uint32_t none = 0;
    for (uint32_t g = 0; g < r->n_gpus; g++) {
        const struct sn_health_score *s = &r->gpus[g];
        if (s->evidence == SN_HEALTH_EV_NONE) {
            none++;
            assert_false(s->score >= 100);
        }
        if (isnan(s->score)) {
            assert_int_equal(s->evidence, SN_HEALTH_EV_NONE);
            assert_false(sn_bitset_test(&r->excluded, g));
            for (unsigned t = 0; t < r->n_thresholds; t++)
                assert_false(sn_bitset_test(&r->exclude[t], g));
        }
    }
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], none);
    uint32_t sum = 0, ssum = 0;
    for (int e = 0; e < SN_HEALTH_EV_COUNT; e++) {
        sum += r->coverage.gpus[e];
        ssum += r->coverage.servers[e];
    }
    assert_int_equal(sum, r->n_gpus);
    assert_int_equal(ssum, r->n_servers);
    for (uint32_t sv = 0; sv < r->n_servers; sv++)
        if (r->servers[sv].evidence == SN_HEALTH_EV_NONE)
            assert_false(r->servers[sv].score >= 100);
}

static void no_input_is_unknown(void **state)
{
    struct fx *f = *state;
    struct sn_health_report *r = pass(f, -1, NULL, 0, 1.7e9);
    check_never_healthy_blind(r);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], 64);
    assert_int_equal(r->coverage.servers[SN_HEALTH_EV_NONE], 8);
    for (uint32_t g = 0; g < r->n_gpus; g++)
        assert_true(isnan(r->gpus[g].score));
    assert_int_equal(sn_bitset_count(&r->excluded), 0);
    sn_health_report_free(r);
}

static void empty_and_garbage_never_healthy(void **state)
{
    struct fx *f = *state;
    uint64_t x = 0x9e3779b97f4a7c15ull; /* fixed seed: the same bytes every run */
    char buf[4096];
    for (int fmt = 0; fmt < SN_TELEM_FORMAT_COUNT; fmt++) {
        struct sn_health_report *r = pass(f, fmt, "", 0, 1.7e9);
        check_never_healthy_blind(r);
        assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], 64);
        sn_health_report_free(r);
        for (int round = 0; round < 8; round++) {
            for (size_t i = 0; i < sizeof(buf); i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                /* printable text with separators most of the time, any byte sometimes */
                unsigned b = (unsigned)(x >> 24) & 0xff;
                static const char alpha[] = " ,:\n0123456789abcdefGPU-[]%.";
                buf[i] = b < 200 ? alpha[b % 28] : (char)b;
            }
            r = pass(f, fmt, buf, sizeof(buf), 1.7e9);
            check_never_healthy_blind(r);
            sn_health_report_free(r);
        }
    }
}

static void stopped_and_stale(void **state)
{
    struct fx *f = *state;
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof(text),
                                "timestamp, index, name, temperature.gpu, clocks.sm [MHz]\n");
    static const char *const times[] = {"12:00:00", "12:30:00", "13:00:00"};
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 8; i++)
            if (i != 7 || t == 0)
                n += (size_t)snprintf(text + n, sizeof(text) - n,
                                      "2024/05/01 %s.000, %d, NVIDIA H100 80GB HBM3, 60, 1980 MHz\n",
                                      times[t], i);
    double t13 = 1714568400; /* 2024-05-01T13:00:00Z */
    struct sn_health_report *r = pass(f, SN_TELEM_FMT_SMI_CSV, text, n, t13);
    check_never_healthy_blind(r);
    uint32_t gpu7 = sn_model_find_gpu(f->model, "sn00-t01-gpu7"), missing = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].detector == SN_DET_GPU_MISSING) {
            missing++;
            assert_int_equal(r->findings[i].id, gpu7);
            assert_true(fabs(r->findings[i].value - 3600) < 1e-6);
        }
    assert_int_equal(missing, 1);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_FRESH], 7);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_STALE], 1);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], 56);
    assert_true(fabs(r->gpus[gpu7].age_s - 3600) < 1e-6);
    assert_true(sn_bitset_test(&r->excluded, gpu7));
    sn_health_report_free(r);
    /* two hours later everything is stale, and gpu7 is still missing */
    r = pass(f, SN_TELEM_FMT_SMI_CSV, text, n, t13 + 7200);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_STALE], 8);
    assert_int_equal(r->coverage.servers[SN_HEALTH_EV_STALE], 1);
    sn_health_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_input_is_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_and_garbage_never_healthy, setup, teardown),
        cmocka_unit_test_setup_teardown(stopped_and_stale, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
