/*
 * The scheduler core's side of cooperative preemption (sn_sched_config
 * preempt_signal, sn_sched_evict, sn_sched_set_checkpoint; lib/control
 * drives it, test_preempt covers that): on one supernode of 4 servers x 8
 * GPUs (32), worked by hand. Invariants (sn_sched_check_invariants, the
 * signalled victims' counts among them) after every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/sched.h>
#include <sn/sim.h>

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

static void open_fx(struct fx *f, bool signal)
{
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    sh.servers = 4;
    sh.gpus_per_server = 8;
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_sim_shape_build(&sh, &f->spec, &f->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.min_runtime_s = 0;
    cfg.preempt_signal = signal;
    if (sn_sched_create(f->model, &cfg, &f->s, &err) != SN_OK)
        fail_msg("%s", err.message);
}

static void close_fx(struct fx *f)
{
    sn_sched_destroy(f->s);
    sn_sim_shape_free(f->spec, f->model);
}

static uint32_t submit(struct fx *f, uint32_t gpus, int32_t priority, bool preemptible)
{
    struct sn_job_spec js = {.gpus = gpus,
                             .group_gpus = 8,
                             .walltime_s = 3600,
                             .preemptible = preemptible,
                             .priority = priority};
    uint32_t id;
    struct sn_error err = {0};
    if (sn_sched_submit(f->s, &js, &id, &err) != SN_OK)
        fail_msg("%s", err.message);
    return id;
}

static void pass(struct fx *f, double now)
{
    struct sn_error err = {0};
    if (sn_sched_pass(f->s, now, &err) != SN_OK)
        fail_msg("%s", err.message);
    check(f->s);
}

static enum sn_job_state state_of(struct fx *f, uint32_t id)
{
    struct sn_job_info info;
    sn_sched_job_info(f->s, id, &info);
    return info.state;
}

/* Two 16-GPU victims V1 (checkpoint at 250: 16 x 50 = 800 GPU-s at 300)
 * and V2 (checkpoint at 100: 16 x 200 = 3,200) fill the supernode; H (16,
 * priority 10) comes at 300. Signal mode: V1 (the least work since its
 * checkpoint) gets a SIGNAL decision with cause H, keeps its GPUs, H
 * waits; a second pass signals nobody else (V2 stays no victim while H
 * waits for V1); sn_sched_evict(V1) is a PREEMPT decision with cause H,
 * and H then starts. */
static void signal_then_evict(void **state)
{
    (void)state;
    struct fx f;
    open_fx(&f, true);
    uint32_t v1 = submit(&f, 16, 0, true), v2 = submit(&f, 16, 0, true);
    pass(&f, 0);
    assert_int_equal(state_of(&f, v1), SN_JOB_RUNNING);
    assert_int_equal(state_of(&f, v2), SN_JOB_RUNNING);
    sn_sched_set_checkpoint(f.s, v1, 250);
    sn_sched_set_checkpoint(f.s, v2, 100);
    sn_sched_clear_decisions(f.s);
    uint32_t h = submit(&f, 16, 10, false);
    pass(&f, 300);
    size_t n;
    const struct sn_decision *d = sn_sched_decisions(f.s, &n);
    assert_int_equal(n, 1);
    assert_int_equal(d[0].kind, SN_DECISION_SIGNAL);
    assert_int_equal(d[0].job, v1);
    assert_int_equal(d[0].cause, h);
    assert_int_equal(state_of(&f, v1), SN_JOB_RUNNING);
    assert_int_equal(state_of(&f, h), SN_JOB_PENDING);
    uint32_t pre = SN_NONE;
    assert_true(sn_sched_leaving(f.s, v1, &pre));
    assert_int_equal(pre, h);
    assert_false(sn_sched_leaving(f.s, v2, NULL));
    sn_sched_clear_decisions(f.s);
    pass(&f, 310);
    sn_sched_decisions(f.s, &n);
    assert_int_equal(n, 0); /* no second victim while H waits for V1 */
    struct sn_error err = {0};
    assert_int_equal(sn_sched_evict(f.s, v1, 320, &err), SN_OK);
    check(f.s);
    d = sn_sched_decisions(f.s, &n);
    assert_int_equal(n, 1);
    assert_int_equal(d[0].kind, SN_DECISION_PREEMPT);
    assert_int_equal(d[0].cause, h);
    assert_int_equal(state_of(&f, v1), SN_JOB_PENDING);
    sn_sched_clear_decisions(f.s);
    pass(&f, 320);
    assert_int_equal(state_of(&f, h), SN_JOB_RUNNING);
    assert_int_equal(state_of(&f, v2), SN_JOB_RUNNING);
    assert_int_equal(sn_sched_evict(f.s, v1, 330, NULL), SN_ERR_INVALID); /* not running */
    close_fx(&f);
}

/* Without signal mode the same pass evicts V1 and starts H at once; with
 * it, H starting elsewhere first (V2 finished) unsignals V1: an UNSIGNAL
 * decision with cause H, V1 no longer leaving. */
static void immediate_and_unsignal(void **state)
{
    (void)state;
    struct fx f;
    open_fx(&f, false);
    uint32_t v1 = submit(&f, 16, 0, true);
    submit(&f, 16, 0, true);
    pass(&f, 0);
    sn_sched_set_checkpoint(f.s, v1, 250);
    uint32_t h = submit(&f, 16, 10, false);
    pass(&f, 300);
    assert_int_equal(state_of(&f, v1), SN_JOB_PENDING);
    assert_int_equal(state_of(&f, h), SN_JOB_RUNNING);
    close_fx(&f);

    open_fx(&f, true);
    v1 = submit(&f, 16, 0, true);
    uint32_t v2 = submit(&f, 16, 0, true);
    pass(&f, 0);
    sn_sched_set_checkpoint(f.s, v1, 250);
    sn_sched_set_checkpoint(f.s, v2, 100);
    h = submit(&f, 16, 10, false);
    pass(&f, 300);
    assert_true(sn_sched_leaving(f.s, v1, NULL));
    assert_int_equal(sn_sched_finish(f.s, v2, 305, NULL), SN_OK);
    sn_sched_clear_decisions(f.s);
    pass(&f, 305);
    size_t n;
    const struct sn_decision *d = sn_sched_decisions(f.s, &n);
    assert_int_equal(state_of(&f, h), SN_JOB_RUNNING);
    bool unsignalled = false;
    for (size_t i = 0; i < n; i++)
        unsignalled |= d[i].kind == SN_DECISION_UNSIGNAL && d[i].job == v1 && d[i].cause == h;
    assert_true(unsignalled);
    assert_false(sn_sched_leaving(f.s, v1, NULL));
    assert_int_equal(state_of(&f, v1), SN_JOB_RUNNING);
    close_fx(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(signal_then_evict),
        cmocka_unit_test(immediate_and_unsignal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
