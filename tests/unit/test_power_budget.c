/*
 * Unit tests of the power budgets at placement (lib/sched/sched_power.c):
 * the scheduler core over examples/good-64.yaml (two supernodes, each one
 * rack of 4 HGX-H100-8 servers, 700 W GPUs, 4.6 kW server base, two ToRs of
 * 1.692 kW with their optics and two 150 W management switches per rack)
 * with its rack feeds cut from 125 A to 50 A. Worked by hand:
 *   one 415 V 3-phase 50 A feed: sqrt(3) x 415 x 50 = 35,940 W; n+n, two
 *   feeds: one survives; continuous 80 %: limit 28,752 W per rack;
 *   base (all but the GPUs): 4 x 4,600 + 2 x 1,692 + 2 x 150 = 22,084 W;
 *   room for jobs: 6,668 W = 9.5 GPUs at 700 W (power_util 1), 19 at 0.5.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <sn/model.h>
#include <sn/sched.h>
#include <sn/spec.h>

#include "sched/sched_int.h"
#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_sched *s;
};

static void check(const struct sn_sched *s)
{
    struct sn_error err = {0};
    if (sn_sched_check_invariants(s, &err) != SN_OK)
        fail_msg("%s", err.message);
}

/* good-64 with feeds of `amps`, a core with power_util util. */
static void fx_open(struct fx *f, const char *amps, double util)
{
    char path[512];
    sn_test_path(path, sizeof(path), "examples/good-64.yaml");
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    static char text[65536];
    size_t n = fread(text, 1, sizeof(text) - 1, in);
    fclose(in);
    text[n] = '\0';
    char *at = strstr(text, "current: 125 A");
    assert_non_null(at);
    char edited[65536];
    snprintf(edited, sizeof(edited), "%.*scurrent: %s%s", (int)(at - text), text, amps,
             at + strlen("current: 125 A"));
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_spec_parse_buffer("good-64-feed.yaml", edited, strlen(edited), &f->spec, &err) !=
            SN_OK ||
        sn_model_build(f->spec, &f->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.power_util = util;
    if (sn_sched_create(f->model, &cfg, &f->s, &err) != SN_OK)
        fail_msg("%s", err.message);
    check(f->s);
}

static void fx_close(struct fx *f)
{
    sn_sched_destroy(f->s);
    sn_model_free(f->model);
    sn_spec_free(f->spec);
}

static uint32_t submit(struct fx *f, uint32_t gpus)
{
    struct sn_job_spec spec = {.gpus = gpus, .group_gpus = 8 < gpus ? 8 : gpus, .walltime_s = 3600};
    uint32_t id;
    struct sn_error err = {0};
    if (sn_sched_submit(f->s, &spec, &id, &err) != SN_OK)
        fail_msg("%s", err.message);
    return id;
}

static enum sn_pending_reason reason(struct fx *f, uint32_t id)
{
    struct sn_job_info info;
    sn_sched_job_info(f->s, id, &info);
    return info.reason;
}

static bool running(struct fx *f, uint32_t id)
{
    struct sn_job_info info;
    sn_sched_job_info(f->s, id, &info);
    return info.state == SN_JOB_RUNNING;
}

/* The rack of job id's first GPU. */
static uint32_t rack_of(struct fx *f, uint32_t id)
{
    uint32_t n;
    const uint32_t *g = sn_sched_job_gpus(f->s, id, &n);
    assert_non_null(g);
    return sn_model_gpu_rack(f->model, g[0]);
}

static void test_limits_from_the_spec(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "50 A", 1.0);
    /* the two compute racks, and the network rack of the spine (no feeds
     * in the spec: no limit) */
    assert_int_equal(f.model->n_racks, 3);
    double draw, limit;
    for (uint32_t r = 0; r < 3; r++) {
        assert_true(sn_sched_power_rack(f.s, r, &draw, &limit));
        if (f.model->rack_supernode[r] == SN_NONE) {
            assert_true(isinf(limit));
            continue;
        }
        assert_true(fabs(draw - 22084) < 0.5);
        assert_true(fabs(limit - 0.8 * sqrt(3) * 415 * 50) < 0.5);
        assert_true(fabs(limit - 28752) < 1);
    }
    fx_close(&f);
}

/* At power_util 1: an 8-GPU job (5,600 W) fits a rack; a 16-GPU job
 * (11,200 W > 6,668 W on either rack) is refused with power-budget although
 * 56 GPUs are free; the 8-GPU job's rack then draws 27,684 W. Without
 * budgets (power_util 0) the same 16-GPU job starts. */
static void test_feed_refuses_placement(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "50 A", 1.0);
    uint32_t a = submit(&f, 8);
    assert_true(sn_sched_try_place(f.s, a, 0));
    check(f.s);
    double draw, limit;
    assert_true(sn_sched_power_rack(f.s, rack_of(&f, a), &draw, &limit));
    assert_true(fabs(draw - (22084 + 8 * 700)) < 0.5);
    uint32_t b = submit(&f, 16);
    assert_false(sn_sched_try_place(f.s, b, 0));
    assert_int_equal(reason(&f, b), SN_PENDING_POWER);
    assert_string_equal(sn_pending_reason_name(SN_PENDING_POWER), "power-budget");
    /* a pass gives the same reason, and nothing was taken */
    struct sn_error err = {0};
    assert_int_equal(sn_sched_pass(f.s, 1, &err), SN_OK);
    assert_false(running(&f, b));
    assert_int_equal(reason(&f, b), SN_PENDING_POWER);
    assert_true(sn_sched_power_rack(f.s, rack_of(&f, a), &draw, &limit));
    assert_true(fabs(draw - (22084 + 8 * 700)) < 0.5);
    check(f.s);
    /* when the first job ends, its draw is released: still 11,200 W > 6,668 W */
    assert_int_equal(sn_sched_finish(f.s, a, 2, &err), SN_OK);
    for (uint32_t r = 0; r < f.model->n_racks; r++) {
        assert_true(sn_sched_power_rack(f.s, r, &draw, &limit));
        assert_true(f.model->rack_supernode[r] == SN_NONE || fabs(draw - 22084) < 0.5);
    }
    fx_close(&f);

    fx_open(&f, "50 A", 0);
    b = submit(&f, 16);
    assert_true(sn_sched_try_place(f.s, b, 0));
    assert_false(sn_sched_power_rack(f.s, 0, &draw, &limit));
    fx_close(&f);
}

/* At power_util 0.5 the 16-GPU job draws 5,600 W: it fits, and a 9-GPU
 * job more would not fit its rack (6,300 W more than 1,068 W) . With the
 * design's 125 A feeds (71,880 W) all 64 GPUs fit at power_util 1. */
static void test_util_and_design_feeds(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "50 A", 0.5);
    uint32_t b = submit(&f, 16);
    assert_true(sn_sched_try_place(f.s, b, 0));
    double draw, limit;
    assert_true(sn_sched_power_rack(f.s, rack_of(&f, b), &draw, &limit));
    assert_true(fabs(draw - (22084 + 16 * 350)) < 0.5);
    fx_close(&f);

    fx_open(&f, "125 A", 1.0);
    uint32_t c = submit(&f, 32), d = submit(&f, 32);
    assert_true(sn_sched_try_place(f.s, c, 0));
    assert_true(sn_sched_try_place(f.s, d, 0));
    check(f.s);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_from_the_spec),
        cmocka_unit_test(test_feed_refuses_placement),
        cmocka_unit_test(test_util_and_design_feeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
