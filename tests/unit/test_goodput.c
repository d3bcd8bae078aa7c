/*
 * Unit tests of lib/goodput (sn/goodput.h), the one goodput definition of
 * sn sim and snd: hand-worked sums, clamping of bad input, and the same
 * job history counted by both paths. The simulator runs a two-job workload
 * in which a high-priority job preempts a checkpointing one (no failures,
 * no checkpoint or restart cost, so a second of a run is a second of work,
 * as in snd); the same history, as snd records it (runs on a wall clock
 * with their last reported checkpoint), goes through
 * sn_goodput_add_wall_run, the function cmd/snd/goodput.c calls, and both
 * give the hand-computed 39,600 / 41,400.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/goodput.h>
#include <sn/sim.h>

#include "sn_test.h"

static void sums_by_hand(void **state)
{
    (void)state;
    struct sn_goodput g = {0};
    assert_true(isnan(sn_goodput_ratio(&g)));
    sn_goodput_add_run(&g, 8, 100, 100, false); /* finished: all kept */
    sn_goodput_add_run(&g, 4, 50, 20, true);    /* interrupted: 30 s lost */
    assert_near(g.allocated_gpu_s, 800 + 200, 1e-12);
    assert_near(g.useful_gpu_s, 800 + 80, 1e-12);
    assert_near(g.lost_gpu_s, 120, 1e-12);
    assert_int_equal(g.runs, 2);
    assert_int_equal(g.interrupted_runs, 1);
    assert_near(sn_goodput_ratio(&g), 880.0 / 1000.0, 1e-12);
    /* kept is clamped to [0, wall]; NaN and negative count as 0 */
    struct sn_goodput c = {0};
    sn_goodput_add_run(&c, 2, 10, 15, false);
    sn_goodput_add_run(&c, 2, NAN, 5, true);
    sn_goodput_add_run(&c, 2, 10, -1, true);
    assert_near(c.allocated_gpu_s, 40, 1e-12);
    assert_near(c.useful_gpu_s, 20, 1e-12);
    assert_near(c.lost_gpu_s, 20, 1e-12);
    sn_goodput_merge(&g, &c);
    assert_near(g.allocated_gpu_s, 1040, 1e-12);
    assert_int_equal(g.runs, 5);
}

static void wall_runs(void **state)
{
    (void)state;
    struct sn_goodput g = {0};
    /* interrupted at 1,000 after a checkpoint at 700: 300 s lost */
    sn_goodput_add_wall_run(&g, 8, 100, 1000, 700, true);
    assert_near(g.useful_gpu_s, 8 * 600, 1e-9);
    assert_near(g.lost_gpu_s, 8 * 300, 1e-9);
    /* a checkpoint of an earlier run (before this start) saves nothing */
    struct sn_goodput h = {0};
    sn_goodput_add_wall_run(&h, 8, 2000, 2500, 700, true);
    assert_near(h.useful_gpu_s, 0, 1e-12);
    assert_near(h.lost_gpu_s, 8 * 500, 1e-9);
    /* a run that ends otherwise keeps everything, checkpoint or not */
    struct sn_goodput k = {0};
    sn_goodput_add_wall_run(&k, 8, 2000, 2500, 0, false);
    assert_near(sn_goodput_ratio(&k), 1, 1e-12);
    assert_near(k.lost_gpu_s, 0, 1e-12);
}

/* One supernode of the simulator's default shape (64 GPUs). Job A (64 GPUs,
 * 36,000 s of work, priority 0) starts at 0 and checkpoints every 3,600 s;
 * job B (64 GPUs, 3,600 s, priority 10) arrives at 9,000 and preempts it.
 * A kept 7,200 s (its checkpoint at 7,200), lost 1,800 s; B runs to
 * 12,600; A's second run does the remaining 28,800 s to 41,400. Goodput =
 * (7,200 + 3,600 + 28,800) / (9,000 + 3,600 + 28,800) = 39,600 / 41,400. */
static void sim_and_snd_agree(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    struct sn_spec *spec;
    struct sn_model *m;
    struct sn_error err = {0};
    if (sn_sim_shape_build(&sh, &spec, &m, &err) != SN_OK)
        fail_msg("%s", err.message);
    uint32_t n = m->n_gpus;
    assert_int_equal(n, 64);
    struct sn_sim_job jobs[2] = {
        {.submit_s = 0, .duration_s = 36000, .gpus = n, .group_gpus = 8, .priority = 0},
        {.submit_s = 9000, .duration_s = 3600, .gpus = n, .group_gpus = 8, .priority = 10},
    };
    struct sn_sim_workload w = {.n_jobs = 2, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.failures = false;
    cfg.ckpt = SN_CKPT_FIXED;
    cfg.ckpt_fixed_s = 3600;
    cfg.ckpt_cost_s = 0;
    cfg.restart_s = 0;
    cfg.estimate_error = 0;
    struct sn_sim_result *r;
    if (sn_sim_run(m, &w, &cfg, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(r->preemptions, 1);
    assert_int_equal(r->jobs_done, 2);
    double want = 39600.0 / 41400.0;
    assert_near(r->goodput, want, 1e-9);
    assert_near(r->lost_gpu_h, n * 1800.0 / 3600, 1e-6);

    /* The same history as snd counts it: runs on the wall clock, each with
     * the last checkpoint its job reported (A reported at 3,600 and 7,200). */
    struct sn_goodput snd = {0};
    sn_goodput_add_wall_run(&snd, n, 0, 9000, 7200, true);       /* A, preempted */
    sn_goodput_add_wall_run(&snd, n, 9000, 12600, 0, false);     /* B */
    sn_goodput_add_wall_run(&snd, n, 12600, 41400, 7200, false); /* A again */
    assert_near(sn_goodput_ratio(&snd), want, 1e-12);
    assert_near(sn_goodput_ratio(&snd), r->goodput, 1e-9);
    assert_near(snd.lost_gpu_s / 3600, r->lost_gpu_h, 1e-6);
    assert_near(snd.allocated_gpu_s / 3600, r->busy_gpu_h, 1e-6);
    sn_sim_result_free(r);
    sn_sim_shape_free(spec, m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sums_by_hand),
        cmocka_unit_test(wall_runs),
        cmocka_unit_test(sim_and_snd_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
