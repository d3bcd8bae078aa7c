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
 * (11,200 W > 6,668 W on either rack; 8 + 8 would take the first rack to
 * 11,200 W of jobs) is refused with power-budget although 56 GPUs are free;
 * the 8-GPU job's rack then draws 27,684 W. Without budgets (power_util 0)
 * the same 16-GPU job starts. */
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

/* The first choice's feed is full: at power_util 1, A (8 GPUs, 5,600 W)
 * runs on one rack; B (8 GPUs) would go there too (best fit: 24 free
 * against 32), 11,200 W > 6,668 W: the search skips that rack and B lands
 * on the other supernode's rack. Then both racks draw 27,684 W with 1,068
 * W of room: an 8-GPU C fits nowhere (power-budget, though 48 GPUs are
 * free), a 1-GPU D (700 W) still fits. */
static void test_full_feed_next_supernode(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "50 A", 1.0);
    uint32_t a = submit(&f, 8);
    assert_true(sn_sched_try_place(f.s, a, 0));
    uint32_t b = submit(&f, 8);
    assert_true(sn_sched_try_place(f.s, b, 0));
    check(f.s);
    assert_int_not_equal(rack_of(&f, a), rack_of(&f, b));
    assert_int_not_equal(f.model->rack_supernode[rack_of(&f, a)],
                         f.model->rack_supernode[rack_of(&f, b)]);
    assert_int_equal(f.s->n_power_retries, 1);
    assert_int_equal(f.s->n_power_refusals, 0);
    double draw, limit;
    for (int k = 0; k < 2; k++) {
        assert_true(sn_sched_power_rack(f.s, rack_of(&f, k ? b : a), &draw, &limit));
        assert_true(fabs(draw - (22084 + 8 * 700)) < 0.5);
    }
    uint32_t c = submit(&f, 8);
    assert_false(sn_sched_try_place(f.s, c, 0));
    assert_int_equal(reason(&f, c), SN_PENDING_POWER);
    assert_int_equal(f.s->n_power_refusals, 1);
    uint32_t d = submit(&f, 1);
    assert_true(sn_sched_try_place(f.s, d, 0));
    check(f.s);
    /* the skip marks are gone after each plan */
    assert_false(f.s->power_skipping);
    for (uint32_t r = 0; r < f.model->n_racks; r++)
        assert_int_equal(f.s->power_skip[r], 0);
    /* a pass keeps C waiting with the same reason */
    struct sn_error err = {0};
    assert_int_equal(sn_sched_pass(f.s, 1, &err), SN_OK);
    assert_false(running(&f, c));
    assert_int_equal(reason(&f, c), SN_PENDING_POWER);
    check(f.s);
    fx_close(&f);
}

/* The invariant: no rack past its limit. A restore may leave one there (a
 * 16-GPU job placed back on one rack, 22,084 + 11,200 = 33,284 W > 28,752
 * W, as after a budget was lowered): allowed (power_over) until a release
 * brings it under; a rack past its limit without that mark breaks it. */
static void test_invariant_rack_over_limit(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "50 A", 1.0);
    uint32_t gpus[16], n = 0, r0 = sn_model_gpu_rack(f.model, 0);
    for (uint32_t g = 0; g < f.model->n_gpus && n < 16; g++)
        if (sn_model_gpu_rack(f.model, g) == r0)
            gpus[n++] = g;
    assert_int_equal(n, 16);
    uint32_t a = submit(&f, 16);
    struct sn_error err = {0};
    assert_int_equal(sn_sched_restore(f.s, a, gpus, 16, 0, &err), SN_OK);
    double draw, limit;
    assert_true(sn_sched_power_rack(f.s, r0, &draw, &limit));
    assert_true(fabs(draw - (22084 + 16 * 700)) < 0.5);
    assert_int_equal(f.s->power_over[r0], 1);
    check(f.s);
    f.s->power_over[r0] = 0;
    assert_int_equal(sn_sched_check_invariants(f.s, &err), SN_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "past its continuous limit"));
    f.s->power_over[r0] = 1;
    /* nothing more is placed on that rack meanwhile */
    uint32_t b = submit(&f, 1);
    assert_true(sn_sched_try_place(f.s, b, 0));
    assert_int_not_equal(rack_of(&f, b), r0);
    assert_int_equal(sn_sched_finish(f.s, a, 1, &err), SN_OK);
    assert_int_equal(f.s->power_over[r0], 0);
    check(f.s);
    fx_close(&f);
}

/* No single rack holds a 16-GPU job at power_util 1 (11,200 W > 6,668 W),
 * two do at 8 + 8 (5,600 W each): on an empty cluster it starts spread over
 * both supernodes; a 32-GPU job (9 + 9 GPUs of room, 8 + 8 in groups of 8)
 * fits no placement and waits with power-budget. */
static void test_spread_over_two_feeds(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "50 A", 1.0);
    uint32_t big = submit(&f, 32);
    assert_false(sn_sched_try_place(f.s, big, 0));
    assert_int_equal(reason(&f, big), SN_PENDING_POWER);
    uint32_t a = submit(&f, 16), n = 0;
    assert_true(sn_sched_try_place(f.s, a, 0));
    check(f.s);
    const uint32_t *g = sn_sched_job_gpus(f.s, a, &n);
    assert_int_equal(n, 16);
    uint32_t per_rack[3] = {0};
    for (uint32_t i = 0; i < n; i++)
        per_rack[sn_model_gpu_rack(f.model, g[i])]++;
    for (uint32_t r = 0; r < f.model->n_racks; r++) {
        if (f.model->rack_supernode[r] == SN_NONE)
            continue;
        assert_int_equal(per_rack[r], 8);
        double draw, limit;
        assert_true(sn_sched_power_rack(f.s, r, &draw, &limit));
        assert_true(fabs(draw - (22084 + 8 * 700)) < 0.5);
    }
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_from_the_spec),
        cmocka_unit_test(test_feed_refuses_placement),
        cmocka_unit_test(test_util_and_design_feeds),
        cmocka_unit_test(test_full_feed_next_supernode),
        cmocka_unit_test(test_invariant_rack_over_limit),
        cmocka_unit_test(test_spread_over_two_feeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
