/*
 * Unit tests of lib/control/power_caps.c: per-GPU power caps under
 * power_cap_policy fit, driven by events with a virtual clock, over
 * examples/good-64.yaml with its rack feeds cut from 125 A to 50 A (as in
 * test_power_budget.c). Worked by hand:
 *   limit 0.8 x sqrt(3) x 415 V x 50 A = 28,752 W per rack, base 22,084 W:
 *   room 6,668 W; power_util_pct 50: a GPU is planned at 350 W, so two
 *   8-GPU jobs (5,600 W planned) fit one rack, and supernode-first puts
 *   the second on the first's rack (24 free GPUs against 32);
 *   one job: worst case 8 x 700 = 5,600 W <= 6,668 W: no caps;
 *   two jobs: worst 16 x 700 = 11,200 W > 6,668 W: each GPU gets
 *   700 x 6,668 / 11,200 = 416.75 W, 416 W in whole watts.
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

#include <sn/control.h>
#include <sn/model.h>
#include <sn/sched.h>
#include <sn/sim.h>
#include <sn/spec.h>

#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_control *c;
    struct sn_control_clock now;
    struct sn_effects out;
};

static void fx_open(struct fx *f, const char *policy, int64_t util_pct)
{
    char path[512];
    sn_test_path(path, sizeof(path), "examples/good-64.yaml");
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    static char text[65536], edited[65536];
    size_t n = fread(text, 1, sizeof(text) - 1, in);
    fclose(in);
    text[n] = '\0';
    char *at = strstr(text, "current: 125 A");
    assert_non_null(at);
    snprintf(edited, sizeof(edited), "%.*scurrent: 50 A%s", (int)(at - text), text,
             at + strlen("current: 125 A"));
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_spec_parse_buffer("good-64-feed.yaml", edited, strlen(edited), &f->spec, &err) !=
            SN_OK ||
        sn_model_build(f->spec, &f->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_control_config cfg = {
        .max_jobs = 1000,
        .heartbeat_timeout_s = 1000,
        .default_walltime_s = 36000,
        .partition_share_pct = 10,
        .partition_window_s = 5,
        .max_tenants_per_supernode = 4,
        .power_util_pct = util_pct,
    };
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
    snprintf(cfg.power_cap_policy, sizeof(cfg.power_cap_policy), "%s", policy);
    f->c = sn_control_new(f->model, f->spec, &cfg, &err);
    if (!f->c)
        fail_msg("%s", err.message);
    json_t *doc = json_loads("{\"prefix\": \"/data/acme\"}", 0, NULL);
    assert_non_null(doc);
    assert_int_equal(sn_control_named_put(&f->c->tenants, &f->c->n_tenants, "acme", doc, &err),
                     SN_OK);
    f->now = (struct sn_control_clock){1700000000000LL, 1000000};
    sn_effects_init(&f->out);
    assert_int_equal(sn_control_start(f->c, &f->now, &err), SN_OK);
}

static void fx_close(struct fx *f)
{
    sn_effects_free(&f->out);
    sn_control_free(f->c);
    sn_model_free(f->model);
    sn_spec_free(f->spec);
}

static enum sn_err apply(struct fx *f, struct sn_control_event ev)
{
    struct sn_error err = {0};
    f->now.wall_ms += 1000;
    f->now.mono_ms += 1000;
    return sn_control_apply(f->c, &ev, &f->now, &f->out, &err);
}

static int64_t submit(struct fx *f, uint32_t gpus)
{
    struct sn_control_job *j = calloc(1, sizeof(*j));
    assert_non_null(j);
    j->spec = json_pack("{s:s,s:i,s:i}", "name", "caps", "gpus", (int)gpus, "group_gpus", 8);
    assert_non_null(j->spec);
    j->id = f->c->next_job_id;
    snprintf(j->tenant, sizeof(j->tenant), "acme");
    j->state = SN_CONTROL_JOB_PENDING;
    j->sched_id = SN_NONE;
    j->failed_rank = -1;
    j->submit_s = j->updated_s = f->now.wall_ms / 1000;
    struct sn_error err = {0};
    assert_int_equal(sn_control_job_insert(f->c, j, &err), SN_OK);
    assert_int_equal(
        apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_SUBMIT, .job = j->id}), SN_OK);
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_PASS}), SN_OK);
    assert_int_equal(sn_control_job_get(f->c, j->id)->state, SN_CONTROL_JOB_RUNNING);
    return j->id;
}

static void cancel(struct fx *f, int64_t id)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_END,
                                                        .job = id,
                                                        .to = SN_CONTROL_JOB_CANCELLED,
                                                        .text = "cancelled",
                                                        .detail = "test",
                                                        .actor = "test"}),
                     SN_OK);
}

static uint32_t rack_of(struct fx *f, int64_t id)
{
    const struct sn_control_job *j = sn_control_job_get(f->c, id);
    assert_true(j && j->n_alloc > 0);
    return sn_model_gpu_rack(f->model, j->alloc[0]);
}

/* The caps of every GPU of job id, all equal to want (0: none). */
static void assert_job_caps(struct fx *f, int64_t id, double want)
{
    const struct sn_control_job *j = sn_control_job_get(f->c, id);
    for (uint32_t r = 0; r < j->n_alloc; r++)
        assert_true(sn_control_power_cap_w(f->c, j->alloc[r]) == want);
}

static void test_two_jobs_on_one_rack_are_capped(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "fit", 50);
    assert_true(sn_control_power_caps_on(f.c));
    int64_t a = submit(&f, 8);
    assert_job_caps(&f, a, 0); /* 5,600 W at TDP fits 6,668 W */
    uint32_t srv_a = f.model->gpu_server[sn_control_job_get(f.c, a)->alloc[0]];
    json_t *caps = sn_control_power_caps_json(f.c, srv_a);
    assert_non_null(caps);
    assert_int_equal(json_array_size(caps), 0);
    json_decref(caps);

    int64_t b = submit(&f, 8);
    assert_int_equal(rack_of(&f, a), rack_of(&f, b));
    assert_job_caps(&f, a, 416);
    assert_job_caps(&f, b, 416);
    /* The heartbeat answer of a's server: its 8 GPUs by index on the node. */
    caps = sn_control_power_caps_json(f.c, srv_a);
    assert_int_equal(json_array_size(caps), 8);
    for (size_t i = 0; i < 8; i++) {
        json_t *e = json_array_get(caps, i);
        uint32_t g = sn_control_job_get(f.c, a)->alloc[i];
        assert_int_equal(json_integer_value(json_object_get(e, "gpu")),
                         g - f.model->server_first_gpu[srv_a]);
        assert_int_equal(json_integer_value(json_object_get(e, "watts")), 416);
    }
    json_decref(caps);
    /* Idle GPUs of the same rack get none. */
    uint32_t idle = SN_NONE;
    for (uint32_t g = 0; g < f.model->n_gpus && idle == SN_NONE; g++)
        if (sn_model_gpu_rack(f.model, g) == rack_of(&f, a) &&
            sn_sched_gpu_owner(f.c->sched, g) == SN_NONE)
            idle = g;
    assert_true(idle != SN_NONE);
    assert_true(sn_control_power_cap_w(f.c, idle) == 0);

    cancel(&f, a); /* back to 5,600 W at TDP: the caps go */
    assert_job_caps(&f, b, 0);
    fx_close(&f);
}

static void test_off_and_without_budgets(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "off", 50);
    assert_false(sn_control_power_caps_on(f.c));
    int64_t a = submit(&f, 8), b = submit(&f, 8);
    assert_int_equal(rack_of(&f, a), rack_of(&f, b));
    assert_job_caps(&f, a, 0);
    assert_null(sn_control_power_caps_json(f.c, 0));
    fx_close(&f);
    /* power_util_pct 100: the planned draw is the worst case, which
     * placement keeps within the room: never a cap (the second 8-GPU job
     * goes to the other supernode). */
    fx_open(&f, "fit", 100);
    a = submit(&f, 8);
    b = submit(&f, 8);
    assert_int_not_equal(rack_of(&f, a), rack_of(&f, b));
    assert_job_caps(&f, a, 0);
    assert_job_caps(&f, b, 0);
    fx_close(&f);
    /* fit without budgets (power_util_pct 0): no rack figures, no caps. */
    fx_open(&f, "fit", 0);
    assert_false(sn_control_power_caps_on(f.c));
    a = submit(&f, 8);
    assert_job_caps(&f, a, 0);
    fx_close(&f);
}

static void test_bad_policy_refused(void **state)
{
    (void)state;
    struct sn_spec *spec;
    struct sn_model *model;
    char path[512];
    struct sn_error err = {0};
    sn_test_path(path, sizeof(path), "examples/good-64.yaml");
    assert_int_equal(sn_spec_parse_file(path, &spec, &err), SN_OK);
    assert_int_equal(sn_model_build(spec, &model, &err), SN_OK);
    struct sn_control_config cfg = {
        .max_jobs = 10, .heartbeat_timeout_s = 10, .default_walltime_s = 10, .power_util_pct = 50};
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
    snprintf(cfg.power_cap_policy, sizeof(cfg.power_cap_policy), "max");
    struct sn_control *c = sn_control_new(model, spec, &cfg, &err);
    assert_non_null(c);
    struct sn_control_clock now = {1700000000000LL, 1000000};
    assert_int_equal(sn_control_start(c, &now, &err), SN_ERR_INVALID);
    assert_string_equal(err.message, "power_cap_policy 'max': expected off or fit");
    sn_control_free(c);
    sn_model_free(model);
    sn_spec_free(spec);
}

struct seen {
    uint32_t gpu[16];
    double old_w[16], new_w[16];
    int n;
};

static void on_change(void *ctx, uint32_t g, double old_w, double new_w)
{
    struct seen *s = ctx;
    assert_true(s->n < 16);
    s->gpu[s->n] = g;
    s->old_w[s->n] = old_w;
    s->new_w[s->n++] = new_w;
}

static void test_applied_reports(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "fit", 50);
    uint32_t first = f.model->server_first_gpu[1];
    struct seen s = {0};
    assert_int_equal(sn_control_power_caps_applied(f.c, 1, "", on_change, &s), 0);
    assert_null(f.c->power_cap_applied_w); /* nothing kept before the first cap */
    assert_int_equal(sn_control_power_caps_applied(f.c, 1, "0:416,3:500", on_change, &s), 2);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.gpu[0], first);
    assert_true(s.old_w[0] == 0 && s.new_w[0] == 416);
    assert_int_equal(s.gpu[1], first + 3);
    assert_true(sn_control_power_cap_applied_w(f.c, first + 3) == 500);
    /* The same report again changes nothing; dropping GPU 3 clears it. */
    assert_int_equal(sn_control_power_caps_applied(f.c, 1, "0:416,3:500", on_change, &s), 0);
    assert_int_equal(sn_control_power_caps_applied(f.c, 1, "0:416", on_change, &s), 1);
    assert_true(s.old_w[2] == 500 && s.new_w[2] == 0);
    assert_true(sn_control_power_cap_applied_w(f.c, first + 3) == 0);
    /* Malformed: nothing recorded. */
    const char *bad[] = {"8:400", "0:", "0:0", "x", "0:400,0:300", "0:400;1:300", "1:400,"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(sn_control_power_caps_applied(f.c, 1, bad[i], on_change, &s), -1);
    assert_true(sn_control_power_cap_applied_w(f.c, first) == 416);
    /* GET /v1/gpus/{gpu}'s fields. */
    json_t *o = sn_control_gpu_json(f.c, first, true);
    assert_int_equal(json_integer_value(json_object_get(o, "power_cap_applied_w")), 416);
    assert_true(json_is_null(json_object_get(o, "power_cap_w")));
    json_decref(o);
    fx_close(&f);
}

/* sn sim's control engine (the same lib/control, virtual time) on
 * tests/specs/power/feed-tight-64.yaml (the same 50 A feeds), power_util
 * 0.5: two 8-GPU jobs of 1,000 s submitted at 0 share one rack, so 16
 * GPUs are capped for 1,000 s: 16,000 GPU-s = 4.444 GPU-hours, with the
 * invariants (no rack's running GPUs at their caps past its room) checked
 * after every event. A third job of 1,000 s submitted at 1,500 s runs
 * alone: no more. Without caps the figure is 0. */
static void test_sim_counts_capped_hours(void **state)
{
    (void)state;
    char path[512];
    struct sn_error err = {0};
    struct sn_spec *spec;
    struct sn_model *model;
    sn_test_path(path, sizeof(path), "tests/specs/power/feed-tight-64.yaml");
    if (sn_spec_parse_file(path, &spec, &err) != SN_OK ||
        sn_model_build(spec, &model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_sim_job jobs[3] = {
        {.submit_s = 0, .duration_s = 1000, .gpus = 8, .group_gpus = 8},
        {.submit_s = 0, .duration_s = 1000, .gpus = 8, .group_gpus = 8},
        {.submit_s = 1500, .duration_s = 1000, .gpus = 8, .group_gpus = 8}};
    struct sn_sim_workload w = {.n_jobs = 3, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.failures = false;
    cfg.ckpt_fixed_s = 0;
    cfg.tenants = 1;
    cfg.sample_s = 100;
    cfg.sched.power_util = 0.5;
    cfg.power_caps = true;
    struct sn_sim_result *r = NULL;
    if (sn_sim_run(model, &w, &cfg, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_near(r->power_capped_gpu_h, 16000.0 / 3600, 1e-6);
    assert_near(r->jct_sorted[1], 1000, 1e-6);
    sn_sim_result_free(r);
    cfg.power_caps = false;
    if (sn_sim_run(model, &w, &cfg, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_true(r->power_capped_gpu_h == 0);
    sn_sim_result_free(r);
    sn_model_free(model);
    sn_spec_free(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_jobs_on_one_rack_are_capped),
        cmocka_unit_test(test_off_and_without_budgets),
        cmocka_unit_test(test_bad_policy_refused),
        cmocka_unit_test(test_applied_reports),
        cmocka_unit_test(test_sim_counts_capped_hours),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
