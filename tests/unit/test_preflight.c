/*
 * Unit tests of lib/control/preflight.c: a job's ranks held back until
 * every one of its servers reported a preflight on exactly its GPUs,
 * driven by events with a virtual clock. Clusters are built with
 * sn_sim_shape_build(): one supernode of 4 servers of 8 GPUs, so a
 * 16-GPU job spans two servers. Each test asserts the assignment's
 * ranks_released, the pending reason, GPU admin states, the job's queue
 * position (submit time) and counters, worked out by hand.
 */
#include "control_fixture.h"

static void fx_open(struct fx *f, int64_t preflight_default, int64_t require)
{
    struct sn_control_config cfg = {
        .max_jobs = 1000,
        .heartbeat_timeout_s = 1000,
        .default_walltime_s = 36000,
        .partition_share_pct = 10,
        .partition_window_s = 5,
        .max_tenants_per_supernode = 4,
        .preflight_default = preflight_default,
        .preflight_require = require,
        .preflight_timeout_s = 120,
    };
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
    fx_open_with(f, 1, "", &cfg);
}

static void advance(struct fx *f, int64_t ms)
{
    f->now.wall_ms += ms;
    f->now.mono_ms += ms;
}

/* A job of `gpus` GPUs; mode: its spec's preflight, or NULL for none. */
static int64_t submit_job(struct fx *f, uint32_t gpus, const char *mode)
{
    char spec[160];
    snprintf(spec, sizeof(spec), "{\"name\":\"pf\",\"gpus\":%u,\"group_gpus\":%u%s%s%s}", gpus,
             gpus < 8 ? gpus : 8, mode ? ",\"preflight\":\"" : "", mode ? mode : "",
             mode ? "\"" : "");
    return submit(f, spec);
}

static void timer(struct fx *f)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}), SN_OK);
}

static uint32_t server_of(struct fx *f, int64_t id, uint32_t r)
{
    const struct sn_control_job *j = job(f, id);
    assert_true(r < j->n_alloc);
    return f->model->gpu_server[j->alloc[r]];
}

/* Server s reports "RESULT" for job id's current run, with evidence. */
static void report(struct fx *f, uint32_t s, int64_t id, const char *result, const char *evidence)
{
    char text[128];
    snprintf(text, sizeof(text), "%lld:%u:%s", (long long)id, job(f, id)->requeues, result);
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_PREFLIGHT,
                                                        .id = s,
                                                        .text = text,
                                                        .detail = evidence}),
                     SN_OK);
}

static bool released(struct fx *f, int64_t id, uint32_t s)
{
    json_t *a = sn_control_assignment(f->c, job(f, id), s, NULL);
    assert_non_null(a);
    bool r = json_is_true(json_object_get(a, "ranks_released"));
    json_decref(a);
    return r;
}

static bool saw_event(const struct fx *f, int64_t id, const char *name)
{
    for (size_t b = 0; b < f->out.n_batches; b++)
        for (size_t i = 0; i < f->out.batches[b].n; i++) {
            const struct sn_store_write *w = &f->out.batches[b].rows[i];
            if (w->kind == SN_STORE_ADD_EVENT && w->num[0] == id && w->text[0] &&
                strcmp(w->text[0], name) == 0)
                return true;
        }
    return false;
}

static uint32_t audits(const struct fx *f, const char *action)
{
    uint32_t n = 0;
    for (size_t b = 0; b < f->out.n_batches; b++)
        for (size_t i = 0; i < f->out.batches[b].n; i++) {
            const struct sn_store_write *w = &f->out.batches[b].rows[i];
            n += w->kind == SN_STORE_ADD_AUDIT && w->text[1] && strcmp(w->text[1], action) == 0;
        }
    return n;
}

/* A 16-GPU job with preflight: quick waits (reason preflight) until both
 * its servers pass; the 30 s it waited is its preflight_s. */
static void pass_on_every_server_releases_ranks(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0, 0);
    int64_t a = submit_job(&f, 16, "quick");
    pass(&f);
    struct sn_control_job *j = job(&f, a);
    assert_int_equal(j->state, SN_CONTROL_JOB_RUNNING);
    uint32_t s0 = server_of(&f, a, 0), s1 = server_of(&f, a, 15);
    assert_int_not_equal(s0, s1);
    assert_true(sn_control_preflight_waiting(j));
    assert_false(released(&f, a, s0));
    assert_string_equal(sn_control_reason(f.c, j), "preflight");
    assert_int_equal(f.c->preflight_waiting, 1);
    json_t *w = sn_control_job_json(f.c, j);
    assert_non_null(w);
    assert_string_equal(json_string_value(json_object_get(w, "preflight_state")), "running");
    assert_string_equal(json_string_value(json_object_get(w, "pending_reason")), "preflight");
    json_decref(w);
    advance(&f, 10000);
    report(&f, s0, a, "pass", NULL);
    assert_true(sn_control_preflight_waiting(j));
    report(&f, s0, a, "pass", NULL); /* twice from one server counts once */
    assert_true(sn_control_preflight_waiting(j));
    advance(&f, 20000);
    report(&f, s1, a, "pass", NULL);
    assert_false(sn_control_preflight_waiting(j));
    assert_true(released(&f, a, s0));
    assert_true(released(&f, a, s1));
    assert_int_equal(j->preflight_s, 30);
    assert_int_equal(f.c->preflight_waiting, 0);
    assert_int_equal(f.c->preflight_passed, 1);
    assert_true(saw_event(&f, a, "preflight-pass"));
    json_t *o = sn_control_job_json(f.c, j);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "preflight_s")), 30);
    assert_null(json_object_get(o, "preflight_state"));
    json_decref(o);
    fx_close(&f);
}

/* Server s1 finds rank 9 (a GPU of s1) slow: that GPU alone is cordoned
 * by snd:preflight with the evidence, the job requeued with its submit
 * time, and placed again off that GPU at the next pass. */
static void fail_cordons_the_gpu_and_replaces(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0, 0);
    int64_t a = submit_job(&f, 16, "quick");
    int64_t submitted = job(&f, a)->submit_s;
    pass(&f);
    struct sn_control_job *j = job(&f, a);
    uint32_t s1 = server_of(&f, a, 9), bad = j->alloc[9], other = j->alloc[10];
    advance(&f, 5000);
    report(&f, s1, a, "fail:9", "gemm 41% of baseline");
    assert_int_equal(f.c->gpus[bad].state, SN_CONTROL_ADMIN_CORDONED);
    assert_string_equal(f.c->gpus[bad].actor, "snd:preflight");
    assert_non_null(strstr(f.c->gpus[bad].reason, "gemm 41% of baseline"));
    assert_int_equal(f.c->gpus[other].state, SN_CONTROL_ADMIN_UP);
    assert_int_equal(audits(&f, "preflight cordon gpu"), 1);
    assert_int_equal(j->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(j->submit_s, submitted);
    assert_int_equal(j->preflight_s, 5);
    assert_int_equal(f.c->preflight_failed, 1);
    assert_int_equal(f.c->preflight_waiting, 0);
    assert_true(saw_event(&f, a, "preflight-fail"));
    pass(&f);
    assert_int_equal(j->state, SN_CONTROL_JOB_RUNNING);
    for (uint32_t r = 0; r < j->n_alloc; r++)
        assert_int_not_equal(j->alloc[r], bad);
    assert_true(sn_control_preflight_waiting(j)); /* the new run preflights again */
    fx_close(&f);
}

/* A rank on another server, or out of range, is not cordoned by s. */
static void fail_names_only_the_reporters_gpus(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0, 0);
    int64_t a = submit_job(&f, 16, "quick");
    pass(&f);
    struct sn_control_job *j = job(&f, a);
    uint32_t s0 = server_of(&f, a, 0), g9 = j->alloc[9];
    report(&f, s0, a, "fail:9/99", "bad");
    assert_int_equal(f.c->gpus[g9].state, SN_CONTROL_ADMIN_UP);
    assert_int_equal(f.c->preflight_cordons, 0);
    assert_int_equal(j->state, SN_CONTROL_JOB_REQUEUED);
    fx_close(&f);
}

/* Tools absent: "na" passes unless preflight_require, which requeues. */
static void not_available_passes_unless_required(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0, 0);
    int64_t a = submit_job(&f, 8, "quick");
    pass(&f);
    report(&f, server_of(&f, a, 0), a, "na", NULL);
    assert_false(sn_control_preflight_waiting(job(&f, a)));
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(f.c->preflight_na, 1);
    assert_true(saw_event(&f, a, "preflight-na"));
    fx_close(&f);

    fx_open(&f, 0, 1);
    a = submit_job(&f, 8, "quick");
    pass(&f);
    report(&f, server_of(&f, a, 0), a, "na", NULL);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_true(saw_event(&f, a, "preflight-refused"));
    fx_close(&f);
}

/* No report within preflight_timeout_s: requeued at the TIMER after it,
 * not before; a report for an older run is ignored. */
static void timeout_requeues_and_stale_runs_are_ignored(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0, 0);
    int64_t a = submit_job(&f, 8, "quick");
    pass(&f);
    struct sn_control_job *j = job(&f, a);
    uint32_t s0 = server_of(&f, a, 0);
    char text[64];
    snprintf(text, sizeof(text), "%lld:%u:pass", (long long)a, j->requeues + 1);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_PREFLIGHT,
                                                         .id = s0,
                                                         .text = text}),
                     SN_OK);
    assert_true(sn_control_preflight_waiting(j));
    advance(&f, 119000);
    timer(&f);
    assert_int_equal(j->state, SN_CONTROL_JOB_RUNNING);
    advance(&f, 2000);
    timer(&f);
    assert_int_equal(j->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(f.c->preflight_timeouts, 1);
    assert_int_equal(j->preflight_s, 121);
    fx_close(&f);
}

/* preflight_default 0: only jobs asking wait; 1: all but preflight: off. */
static void opt_in_by_job_or_default(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0, 0);
    int64_t a = submit_job(&f, 8, NULL), b = submit_job(&f, 8, "quick");
    pass(&f);
    assert_false(sn_control_preflight_waiting(job(&f, a)));
    assert_true(released(&f, a, server_of(&f, a, 0)));
    assert_true(sn_control_preflight_waiting(job(&f, b)));
    fx_close(&f);

    fx_open(&f, 1, 0);
    a = submit_job(&f, 8, NULL);
    b = submit_job(&f, 8, "off");
    pass(&f);
    assert_true(sn_control_preflight_waiting(job(&f, a)));
    assert_false(sn_control_preflight_waiting(job(&f, b)));
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pass_on_every_server_releases_ranks),
        cmocka_unit_test(fail_cordons_the_gpu_and_replaces),
        cmocka_unit_test(fail_names_only_the_reporters_gpus),
        cmocka_unit_test(not_available_passes_unless_required),
        cmocka_unit_test(timeout_requeues_and_stale_runs_are_ignored),
        cmocka_unit_test(opt_in_by_job_or_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
