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
#include "store_fixture.h"

#include <unistd.h>

#include <sn/store.h>

static int64_t fx_spares; /* spare_gpus_per_supernode of the next fx_open (replace in place) */

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
        .spare_gpus_per_supernode = fx_spares,
        .replace_in_place = fx_spares > 0,
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

/* preflight: full is accepted: the assignment and the job JSON say which
 * check runs; the rest of the gate is quick's. */
static void full_check_is_named(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0, 0);
    int64_t a = submit_job(&f, 8, "full"), b = submit_job(&f, 8, "quick");
    pass(&f);
    assert_true(job(&f, a)->preflight_full);
    assert_false(job(&f, b)->preflight_full);
    json_t *as = sn_control_assignment(f.c, job(&f, a), server_of(&f, a, 0), NULL);
    assert_string_equal(json_string_value(json_object_get(as, "preflight")), "full");
    /* The figures the agent judges by (sim_shape's H100: 989 TFLOP/s dense
     * BF16, 3.35 TB/s HBM, 18 x 25 GB/s NVLink per direction): the busbw
     * floor of 8 GPUs on one server, 0.80 x 18 x 25 GB/s. */
    assert_float_equal(json_number_value(json_object_get(as, "expect_tflops")), 989.0, 1e-9);
    assert_float_equal(json_number_value(json_object_get(as, "expect_hbm_gb_per_s")), 3350.0, 1e-9);
    assert_float_equal(json_number_value(json_object_get(as, "expect_busbw_gb_per_s")), 360.0,
                       1e-9);
    assert_non_null(strstr(json_string_value(json_object_get(as, "busbw_basis")), "0.80 x "));
    json_decref(as);
    as = sn_control_assignment(f.c, job(&f, b), server_of(&f, b, 0), NULL);
    assert_string_equal(json_string_value(json_object_get(as, "preflight")), "quick");
    assert_float_equal(json_number_value(json_object_get(as, "expect_tflops")), 989.0, 1e-9);
    assert_null(json_object_get(as, "expect_busbw_gb_per_s")); /* quick: no all-reduce */
    json_decref(as);
    json_t *o = sn_control_job_json(f.c, job(&f, a));
    assert_string_equal(json_string_value(json_object_get(o, "preflight_check")), "full");
    json_decref(o);
    report(&f, server_of(&f, a, 0), a, "pass", NULL);
    assert_false(sn_control_preflight_waiting(job(&f, a)));
    fx_close(&f);
}

/* A released job loses a GPU and is replaced in place on a spare: the new
 * run (its run number one up) preflights again on every server of the new
 * allocation; a report for the old run changes nothing. */
static void spare_swap_preflights_again(void **state)
{
    (void)state;
    struct fx f;
    fx_spares = 8;
    fx_open(&f, 0, 0);
    fx_spares = 0;
    int64_t a = submit_job(&f, 16, "quick");
    pass(&f);
    uint32_t s0 = server_of(&f, a, 0), s1 = server_of(&f, a, 15);
    report(&f, s0, a, "pass", NULL);
    report(&f, s1, a, "pass", NULL);
    assert_false(sn_control_preflight_waiting(job(&f, a)));
    uint32_t bad = job(&f, a)->alloc[0];
    advance(&f, 1000);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .id = bad,
                                                         .admin = SN_CONTROL_ADMIN_DOWN,
                                                         .detail = "xid 79",
                                                         .actor = "test"}),
                     SN_OK);
    struct sn_control_job *j = job(&f, a);
    assert_int_equal(j->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(j->requeues, 1); /* replaced in place: a new run */
    assert_int_not_equal(j->alloc[0], bad);
    uint32_t s2 = server_of(&f, a, 0);
    assert_true(s2 != s0 && s2 != s1);
    assert_true(sn_control_preflight_waiting(j));
    assert_int_equal(j->preflight_servers, 3);
    assert_int_equal(f.c->preflight_waiting, 1);
    assert_false(released(&f, a, s1));
    char stale[64];
    snprintf(stale, sizeof(stale), "%lld:0:pass", (long long)a);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_PREFLIGHT,
                                                         .id = s2,
                                                         .text = stale}),
                     SN_OK);
    assert_int_equal(j->preflight_done_n, 0);
    report(&f, s0, a, "pass", NULL);
    report(&f, s1, a, "pass", NULL);
    assert_true(sn_control_preflight_waiting(j));
    report(&f, s2, a, "pass", NULL);
    assert_false(sn_control_preflight_waiting(j));
    assert_true(released(&f, a, s2));
    verify(&f);
    fx_close(&f);
}

/* The restore: the runtime facts keep whether a running job still waits
 * for its preflight and the seconds spent. A control restored from the
 * rows holds the waiting job's ranks (reason preflight), with a fresh
 * wait: every server reports again, and the timeout counts from the
 * restore; a released job stays released. */
static bool restore_or_fail(void *ctx, const struct sn_store_write *row)
{
    struct sn_control *c = ctx;
    struct sn_error err = {0};
    if (sn_control_restore_row(c, row, &err) != SN_OK)
        fail_msg("%s", err.message);
    return true;
}

static int64_t submit_stored(struct fx *f, struct sn_store *st, uint32_t gpus, const char *mode)
{
    int64_t id = submit_job(f, gpus, mode);
    store_job(st, id, job(f, id));
    return id;
}

static void restore_keeps_the_wait(void **state)
{
    (void)state;
    char dir[] = "/tmp/sn-preflight-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/state.db", dir);
    struct sn_error err = {0};
    struct sn_store *st = NULL;
    if (sn_store_open_sqlite(path, NULL, &st, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct fx f;
    fx_open(&f, 0, 0);
    struct sn_store_write tenant = {.kind = SN_STORE_PUT_TENANT,
                                    .text = {"acme", "{\"prefix\": \"/data/acme\"}"}};
    store_commit(st, &tenant, 1);
    int64_t a = submit_stored(&f, st, 16, "quick"), b = submit_stored(&f, st, 16, "full");
    pass(&f);
    advance(&f, 7000);
    report(&f, server_of(&f, a, 0), a, "pass", NULL);
    report(&f, server_of(&f, a, 15), a, "pass", NULL);
    report(&f, server_of(&f, b, 0), b, "pass", NULL); /* b: one of its two servers */
    assert_false(sn_control_preflight_waiting(job(&f, a)));
    assert_true(sn_control_preflight_waiting(job(&f, b)));
    assert_int_equal(job(&f, a)->preflight_s, 7);
    for (size_t i = 0; i < f.out.n_batches; i++)
        store_commit(st, f.out.batches[i].rows, f.out.batches[i].n);
    sn_effects_reset(&f.out);

    advance(&f, 100000); /* snd down 100 s; b started 107 s ago */
    struct sn_control *c2 = sn_control_new(f.model, f.spec, &f.c->cfg, &err);
    assert_non_null(c2);
    assert_int_equal(sn_store_load(st, restore_or_fail, c2, &err), SN_OK);
    if (sn_control_start(c2, &f.now, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct fx g = f;
    g.c = c2;
    sn_effects_init(&g.out);
    struct sn_control_job *a2 = job(&g, a), *b2 = job(&g, b);
    assert_int_equal(a2->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(b2->state, SN_CONTROL_JOB_RUNNING);
    assert_false(sn_control_preflight_waiting(a2));
    assert_true(released(&g, a, server_of(&g, a, 0)));
    assert_int_equal(a2->preflight_s, 7);
    assert_true(sn_control_preflight_waiting(b2));
    assert_true(b2->preflight_full);
    assert_int_equal(c2->preflight_waiting, 1);
    assert_int_equal(b2->preflight_done_n, 0); /* every server reports again */
    assert_int_equal(b2->preflight_since_s, g.now.wall_ms / 1000);
    assert_string_equal(sn_control_reason(c2, b2), "preflight");
    assert_false(released(&g, b, server_of(&g, b, 0)));
    assert_false(released(&g, b, server_of(&g, b, 15)));
    /* 100 s after the restart (207 s after its start): still waiting. */
    advance(&g, 100000);
    timer(&g);
    assert_int_equal(b2->state, SN_CONTROL_JOB_RUNNING);
    assert_true(sn_control_preflight_waiting(b2));
    report(&g, server_of(&g, b, 0), b, "pass", NULL);
    assert_true(sn_control_preflight_waiting(b2));
    report(&g, server_of(&g, b, 15), b, "pass", NULL);
    assert_false(sn_control_preflight_waiting(b2));
    assert_true(released(&g, b, server_of(&g, b, 15)));
    assert_int_equal(b2->preflight_s, 100); /* the wait since the restore */
    assert_int_equal(c2->preflight_waiting, 0);
    if (sn_control_verify(c2, &err) != SN_OK)
        fail_msg("%s", err.message);
    sn_effects_free(&g.out);
    sn_control_free(c2);

    /* Restored again with nothing reported for 121 s: the timeout. */
    struct sn_control *c3 = sn_control_new(f.model, f.spec, &f.c->cfg, &err);
    assert_non_null(c3);
    assert_int_equal(sn_store_load(st, restore_or_fail, c3, &err), SN_OK);
    if (sn_control_start(c3, &f.now, &err) != SN_OK)
        fail_msg("%s", err.message);
    g.c = c3;
    sn_effects_init(&g.out);
    g.now = f.now;
    advance(&g, 121000);
    timer(&g);
    assert_int_equal(job(&g, b)->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(c3->preflight_timeouts, 1);
    sn_effects_free(&g.out);
    sn_control_free(c3);
    sn_store_close(st);
    fx_close(&f);
    unlink(path);
    rmdir(dir);
}

/* An API pool's preflight (POST /v1/pools "preflight") applies to the
 * jobs of that pool whose spec says nothing; a job's own preflight wins;
 * anything but quick, full or off is refused naming the field. */
static void pool_preflight_applies(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 0, 0);
    struct sn_store_write w;
    json_t *reply = NULL;
    struct sn_control_refusal why;
    struct sn_control_named_def bad = {.name = "checked", .kind = "mixed", .preflight = "slow"};
    assert_false(sn_control_named_define(f.c, &bad, &w, &reply, &why));
    assert_int_equal(why.status, 400);
    assert_string_equal(why.field, "preflight");
    struct sn_control_named_def pool = {.name = "checked", .kind = "mixed", .preflight = "full"};
    assert_true(sn_control_named_define(f.c, &pool, &w, &reply, &why));
    assert_string_equal(json_string_value(json_object_get(reply, "preflight")), "full");
    json_decref(reply);
    free((char *)w.text[1]);
    int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":8,\"group_gpus\":8,\"pool\":\"checked\"}");
    int64_t b = submit(&f, "{\"name\":\"b\",\"gpus\":8,\"group_gpus\":8,\"pool\":\"checked\","
                           "\"preflight\":\"off\"}");
    int64_t c = submit(&f, "{\"name\":\"c\",\"gpus\":8,\"group_gpus\":8}");
    pass(&f);
    assert_true(sn_control_preflight_waiting(job(&f, a)));
    assert_true(job(&f, a)->preflight_full);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    assert_false(sn_control_preflight_waiting(job(&f, b)));
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_RUNNING);
    assert_false(sn_control_preflight_waiting(job(&f, c)));
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
        cmocka_unit_test(full_check_is_named),
        cmocka_unit_test(spare_swap_preflights_again),
        cmocka_unit_test(restore_keeps_the_wait),
        cmocka_unit_test(pool_preflight_applies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
