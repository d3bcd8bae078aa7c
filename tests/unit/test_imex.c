/*
 * Unit tests of lib/control/imex.c: the IMEX channel lifecycle of jobs on
 * several servers of one NVLink domain, driven by events with a virtual
 * clock. Clusters are built with sn_sim_shape_build(): supernodes of 4
 * servers of 8 GPUs with an NVL72-like scale-up domain (the supernode's
 * switch trays), so a 16-GPU job spans two servers of one domain and an
 * 8-GPU job one server. Each test works out by hand which channel a job
 * gets (the lowest free in its domain, from 1) and asserts it, the
 * assignment's ranks_released, the pending reason and the store rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdlib.h>
#include <unistd.h>

#include <sn/control.h>
#include <sn/sim.h>

#include "sn_test.h"
#include "store_fixture.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_control *c;
    struct sn_control_clock now;
    struct sn_effects out;
};

static int64_t fx_spares; /* spare_gpus_per_supernode of the next fx_open (replace in place) */

static void fx_open_with(struct fx *f, uint32_t supernodes, bool nvlink, int64_t channels)
{
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = supernodes;
    sh.servers = 4;
    sh.gpus_per_server = 8;
    sh.power_domains = 2;
    sh.scaleup_supernode = nvlink;
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_sim_shape_build(&sh, &f->spec, &f->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_control_config cfg = {
        .max_jobs = 1000,
        .heartbeat_timeout_s = 1000,
        .default_walltime_s = 36000,
        .partition_share_pct = 10,
        .partition_window_s = 5,
        .max_tenants_per_supernode = 4,
        .imex_channel_count = channels,
        .imex_setup_timeout_s = 120,
        .spare_gpus_per_supernode = fx_spares,
        .replace_in_place = fx_spares > 0,
    };
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
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

static void fx_open(struct fx *f, int64_t channels)
{
    fx_open_with(f, 1, true, channels);
}

static void fx_close(struct fx *f)
{
    sn_effects_free(&f->out);
    sn_control_free(f->c);
    sn_sim_shape_free(f->spec, f->model);
}

static void advance(struct fx *f, int64_t ms)
{
    f->now.wall_ms += ms;
    f->now.mono_ms += ms;
}

static enum sn_err apply(struct fx *f, struct sn_control_event ev)
{
    struct sn_error err = {0};
    return sn_control_apply(f->c, &ev, &f->now, &f->out, &err);
}

static int64_t submit(struct fx *f, uint32_t gpus)
{
    struct sn_control_job *j = calloc(1, sizeof(*j));
    assert_non_null(j);
    j->spec = json_pack("{s:s,s:i,s:i}", "name", "imex", "gpus", (int)gpus, "group_gpus",
                        (int)(gpus < 8 ? gpus : 8));
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
    return j->id;
}

static void pass(struct fx *f)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_PASS}), SN_OK);
}

static void timer(struct fx *f)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}), SN_OK);
}

static struct sn_control_job *job(struct fx *f, int64_t id)
{
    struct sn_control_job *j = sn_control_job_get(f->c, id);
    assert_non_null(j);
    return j;
}

/* The server of rank r's GPU. */
static uint32_t server_of(struct fx *f, int64_t id, uint32_t r)
{
    const struct sn_control_job *j = job(f, id);
    assert_true(r < j->n_alloc);
    return f->model->gpu_server[j->alloc[r]];
}

static void ready(struct fx *f, uint32_t server, const char *text)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_IMEX_READY,
                                                        .id = server, .text = text}),
                     SN_OK);
}

/* Server s reports job id's current run and channel ready. */
static void ready_job(struct fx *f, uint32_t s, int64_t id)
{
    const struct sn_control_job *j = job(f, id);
    char text[64];
    snprintf(text, sizeof(text), "%lld:%u:%d", (long long)id, j->requeues, j->imex_channel);
    ready(f, s, text);
}

static bool released(struct fx *f, int64_t id, uint32_t s)
{
    json_t *a = sn_control_assignment(f->c, job(f, id), s, NULL);
    assert_non_null(a);
    bool r = json_is_true(json_object_get(a, "ranks_released"));
    json_decref(a);
    return r;
}

/* Whether a committed effect row carries a job event of that name. */
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

/* Two 16-GPU jobs in one 4-server domain: each spans two servers, the
 * first gets channel 1 and the second 2; an 8-GPU job (one server) gets
 * none and runs at once. */
static void two_jobs_get_different_channels(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 8);
    int64_t a = submit(&f, 16), b = submit(&f, 16);
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_not_equal(server_of(&f, a, 0), server_of(&f, a, 15));
    assert_int_equal(job(&f, a)->imex_channel, 1);
    assert_int_equal(job(&f, b)->imex_channel, 2);
    assert_int_equal(job(&f, a)->imex_servers, 2);
    assert_int_equal(f.c->imex_waiting, 2);
    json_t *as = sn_control_assignment(f.c, job(&f, a), server_of(&f, a, 0), NULL);
    assert_int_equal(json_integer_value(json_object_get(as, "imex_channel")), 1);
    json_t *nodes = json_object_get(as, "imex_nodes");
    assert_int_equal(json_array_size(nodes), 2);
    char name[64];
    sn_model_server_name(f.model, server_of(&f, a, 15), name, sizeof(name));
    assert_string_equal(json_string_value(json_array_get(nodes, 1)), name);
    json_decref(as);
    json_t *jj = sn_control_job_json(f.c, job(&f, b));
    assert_int_equal(json_integer_value(json_object_get(jj, "imex_channel")), 2);
    assert_true(json_is_false(json_object_get(jj, "ranks_released")));
    assert_string_equal(json_string_value(json_object_get(jj, "pending_reason")), "domain-setup");
    assert_non_null(strstr(json_string_value(json_object_get(jj, "pending_detail")),
                           "IMEX channel 2 ready on 0 of 2 servers"));
    json_decref(jj);
    fx_close(&f);

    fx_open(&f, 8);
    int64_t c = submit(&f, 8);
    pass(&f);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, c)->imex_channel, 0);
    assert_true(released(&f, c, server_of(&f, c, 0)));
    assert_string_equal(sn_control_reason(f.c, job(&f, c)), "none");
    fx_close(&f);

    /* Without an NVLink domain (scale-up per server) or with channels off:
     * no channel, the ranks go at once. */
    fx_open_with(&f, 1, false, 8);
    int64_t d = submit(&f, 16);
    pass(&f);
    assert_int_equal(job(&f, d)->imex_channel, 0);
    assert_true(released(&f, d, server_of(&f, d, 0)));
    fx_close(&f);
    fx_open(&f, 0);
    d = submit(&f, 16);
    pass(&f);
    assert_int_equal(job(&f, d)->imex_channel, 0);
    assert_true(released(&f, d, server_of(&f, d, 0)));
    fx_close(&f);
}

/* The ranks are released only once both servers reported the channel of
 * the current run; stale or foreign reports change nothing. */
static void release_after_all_ready(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 8);
    int64_t a = submit(&f, 16);
    pass(&f);
    uint32_t s0 = server_of(&f, a, 0), s1 = server_of(&f, a, 15);
    assert_string_equal(sn_control_reason(f.c, job(&f, a)), "domain-setup");
    assert_false(released(&f, a, s0));
    char text[64];
    snprintf(text, sizeof(text), "%lld:0:2,%lld:1:1,999:0:1", (long long)a, (long long)a);
    ready(&f, s0, text); /* wrong channel, wrong run, no such job */
    ready(&f, s1, text);
    assert_int_equal(job(&f, a)->imex_ready_n, 0);
    ready(&f, s0, "garbage");
    assert_int_equal(job(&f, a)->imex_ready_n, 0);
    ready_job(&f, s0, a);
    ready_job(&f, s0, a); /* repeated every heartbeat: counted once */
    assert_int_equal(job(&f, a)->imex_ready_n, 1);
    assert_false(released(&f, a, s0));
    assert_false(released(&f, a, s1));
    uint32_t other = (s0 + 1) % 4 == s1 ? (s1 + 1) % 4 : (s0 + 1) % 4;
    ready_job(&f, other, a); /* a server the job is not on */
    assert_int_equal(job(&f, a)->imex_ready_n, 1);
    sn_effects_reset(&f.out);
    ready_job(&f, s1, a);
    assert_true(job(&f, a)->imex_released);
    assert_true(released(&f, a, s0));
    assert_true(released(&f, a, s1));
    assert_string_equal(sn_control_reason(f.c, job(&f, a)), "none");
    assert_int_equal(f.c->imex_waiting, 0);
    assert_true(saw_event(&f, a, "domain-ready"));
    /* Released, the timeout no longer applies. */
    advance(&f, 500000);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    fx_close(&f);
}

/* A job whose second server never reports is requeued after 120 s with
 * the reason domain-setup, and its channel is free again. */
static void timeout_requeues(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 8);
    int64_t a = submit(&f, 16);
    pass(&f);
    ready_job(&f, server_of(&f, a, 0), a);
    advance(&f, 119000);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    sn_effects_reset(&f.out);
    advance(&f, 1000);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_non_null(job(&f, a)->detail);
    assert_non_null(strstr(job(&f, a)->detail, "domain-setup: IMEX channel 1 ready on 1 of 2"));
    assert_true(saw_event(&f, a, "domain-setup"));
    assert_int_equal(job(&f, a)->imex_channel, 0);
    assert_int_equal(f.c->imex_waiting, 0);
    assert_int_equal(f.c->imex_used[0], 0);
    /* Placed again, it is a new run: channel 1 again, and a report for
     * run 0 does not count. */
    int64_t b = submit(&f, 16);
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->requeues, 1);
    assert_true(job(&f, a)->imex_channel >= 1);
    assert_int_not_equal(job(&f, a)->imex_channel, job(&f, b)->imex_channel);
    char text[64];
    snprintf(text, sizeof(text), "%lld:0:%d", (long long)a, job(&f, a)->imex_channel);
    ready(&f, server_of(&f, a, 0), text);
    assert_int_equal(job(&f, a)->imex_ready_n, 0);
    fx_close(&f);
}

/* With one channel, the second multi-server job of the domain gets none
 * (-1), never shares channel 1, waits with domain-setup and is requeued
 * after the timeout saying why. */
static void never_shared(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1);
    int64_t a = submit(&f, 16), b = submit(&f, 16);
    pass(&f);
    assert_int_equal(job(&f, a)->imex_channel, 1);
    assert_int_equal(job(&f, b)->imex_channel, -1);
    assert_string_equal(sn_control_reason(f.c, job(&f, b)), "domain-setup");
    json_t *as = sn_control_assignment(f.c, job(&f, b), server_of(&f, b, 0), NULL);
    assert_null(json_object_get(as, "imex_channel"));
    assert_true(json_is_false(json_object_get(as, "ranks_released")));
    json_decref(as);
    advance(&f, 120000);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_REQUEUED);
    assert_non_null(strstr(job(&f, b)->detail, "no free IMEX channel"));
    fx_close(&f);
}

/* The channel is freed at the job's end: the next job gets it. */
static void freed_on_end(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 8);
    int64_t a = submit(&f, 16), b = submit(&f, 16);
    pass(&f);
    assert_int_equal(job(&f, a)->imex_channel, 1);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_END,
                                                         .job = a,
                                                         .to = SN_CONTROL_JOB_CANCELLED,
                                                         .text = "cancelled",
                                                         .detail = "test",
                                                         .actor = "test"}),
                     SN_OK);
    assert_int_equal(job(&f, a)->imex_channel, 0);
    assert_int_equal(f.c->imex_waiting, 1);
    int64_t c = submit(&f, 16);
    /* Its GPUs wait for no agent report (none reports processes): c starts. */
    pass(&f);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, c)->imex_channel, 1);
    assert_int_equal(job(&f, b)->imex_channel, 2);
    json_t *jj = sn_control_job_json(f.c, job(&f, a));
    assert_true(json_is_null(json_object_get(jj, "imex_channel")));
    json_decref(jj);
    fx_close(&f);
}

/* A spare swap: a failed GPU of a released job is swapped for a spare on
 * a third server; the job keeps its channel (the bit stays set), the new
 * run's ranks wait again until all three servers reported it. */
static void channel_follows_spare_swap(void **state)
{
    (void)state;
    struct fx f;
    fx_spares = 8;
    fx_open(&f, 8);
    fx_spares = 0;
    int64_t a = submit(&f, 16);
    pass(&f);
    uint32_t s0 = server_of(&f, a, 0), s1 = server_of(&f, a, 15);
    ready_job(&f, s0, a);
    ready_job(&f, s1, a);
    assert_true(job(&f, a)->imex_released);
    assert_int_equal(f.c->imex_waiting, 0);
    uint32_t bad = job(&f, a)->alloc[0];
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .id = bad,
                                                         .admin = SN_CONTROL_ADMIN_DOWN,
                                                         .detail = "xid 79",
                                                         .actor = "test"}),
                     SN_OK);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->requeues, 1); /* replaced in place: a new run */
    assert_int_not_equal(job(&f, a)->alloc[0], bad);
    uint32_t s2 = server_of(&f, a, 0);
    assert_true(s2 != s0 && s2 != s1);
    assert_int_equal(job(&f, a)->imex_channel, 1);
    assert_int_equal(job(&f, a)->imex_servers, 3);
    assert_false(job(&f, a)->imex_released);
    assert_int_equal(f.c->imex_waiting, 1);
    assert_int_equal(f.c->imex_used[0], 0x1);
    assert_string_equal(sn_control_reason(f.c, job(&f, a)), "domain-setup");
    ready_job(&f, s0, a);
    ready_job(&f, s1, a);
    assert_false(job(&f, a)->imex_released);
    ready_job(&f, s2, a);
    assert_true(job(&f, a)->imex_released);
    json_t *as = sn_control_assignment(f.c, job(&f, a), s0, NULL);
    assert_int_equal(json_array_size(json_object_get(as, "imex_nodes")), 3);
    json_decref(as);
    fx_close(&f);
}

/* The restore: the runtime facts keep each running job's channel and
 * whether its ranks were released; a control restored from the rows
 * holds both channels and gives a new job only a freed one. */
static int64_t submit_stored(struct fx *f, struct sn_store *st, uint32_t gpus)
{
    int64_t id = submit(f, gpus);
    store_job(st, id, job(f, id));
    return id;
}

static void restore_keeps_channels(void **state)
{
    (void)state;
    char dir[] = "/tmp/sn-imex-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/state.db", dir);
    struct sn_error err = {0};
    struct sn_store *st = NULL;
    if (sn_store_open_sqlite(path, NULL, &st, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct fx f;
    fx_open(&f, 8);
    struct sn_store_write tenant = {.kind = SN_STORE_PUT_TENANT,
                                    .text = {"acme", "{\"prefix\": \"/data/acme\"}"}};
    store_commit(st, &tenant, 1);
    int64_t a = submit_stored(&f, st, 16), b = submit_stored(&f, st, 16);
    pass(&f);
    ready_job(&f, server_of(&f, a, 0), a);
    ready_job(&f, server_of(&f, a, 15), a);
    assert_true(job(&f, a)->imex_released);
    for (size_t i = 0; i < f.out.n_batches; i++)
        store_commit(st, f.out.batches[i].rows, f.out.batches[i].n);
    sn_effects_reset(&f.out);

    struct sn_control *c2 = sn_control_new(f.model, f.spec, &f.c->cfg, &err);
    assert_non_null(c2);
    struct restore_ctx rc = {.c = c2};
    assert_int_equal(sn_store_load(st, restore_one, &rc, &err), SN_OK);
    if (rc.rc != SN_OK)
        fail_msg("%s", rc.err.message);
    if (sn_control_start(c2, &f.now, &err) != SN_OK)
        fail_msg("%s", err.message);
    const struct sn_control_job *a2 = sn_control_job_get(c2, a), *b2 = sn_control_job_get(c2, b);
    assert_int_equal(a2->imex_channel, 1);
    assert_true(a2->imex_released);
    assert_int_equal(b2->imex_channel, 2);
    assert_false(b2->imex_released);
    assert_int_equal(c2->imex_waiting, 1);
    assert_string_equal(sn_control_reason(c2, b2), "domain-setup");
    assert_int_equal(c2->imex_used[0], 0x3); /* channels 1 and 2 of the one domain */
    /* With a cancelled, a new multi-server job gets its channel 1, and b
     * keeps 2. */
    struct fx g = f;
    g.c = c2;
    sn_effects_init(&g.out);
    assert_int_equal(apply(&g, (struct sn_control_event){.kind = SN_CONTROL_EVENT_END,
                                                         .job = a,
                                                         .to = SN_CONTROL_JOB_CANCELLED,
                                                         .text = "cancelled",
                                                         .detail = "test",
                                                         .actor = "test"}),
                     SN_OK);
    assert_int_equal(c2->imex_used[0], 0x2);
    int64_t c = submit(&g, 16);
    pass(&g);
    assert_int_equal(job(&g, c)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&g, c)->imex_channel, 1);
    assert_int_equal(c2->imex_used[0], 0x3);
    /* b's agents report again after the restart: released. */
    ready_job(&g, server_of(&g, b, 0), b);
    ready_job(&g, server_of(&g, b, 15), b);
    assert_true(job(&g, b)->imex_released);
    if (sn_control_verify(c2, &err) != SN_OK)
        fail_msg("%s", err.message);
    sn_effects_free(&g.out);
    sn_control_free(c2);

    /* Restored with channels turned off: b's ranks are not held back. */
    struct sn_control_config off = f.c->cfg;
    off.imex_channel_count = 0;
    struct sn_control *c3 = sn_control_new(f.model, f.spec, &off, &err);
    assert_non_null(c3);
    rc = (struct restore_ctx){.c = c3};
    assert_int_equal(sn_store_load(st, restore_one, &rc, &err), SN_OK);
    if (rc.rc != SN_OK || sn_control_start(c3, &f.now, &err) != SN_OK)
        fail_msg("%s", rc.rc != SN_OK ? rc.err.message : err.message);
    assert_int_equal(sn_control_job_get(c3, b)->imex_channel, 0);
    assert_false(sn_control_imex_waiting(sn_control_job_get(c3, b)));
    assert_int_equal(c3->imex_waiting, 0);
    sn_control_free(c3);
    fx_close(&f);
    sn_store_close(st);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_jobs_get_different_channels),
        cmocka_unit_test(release_after_all_ready),
        cmocka_unit_test(timeout_requeues),
        cmocka_unit_test(never_shared),
        cmocka_unit_test(freed_on_end),
        cmocka_unit_test(channel_follows_spare_swap),
        cmocka_unit_test(restore_keeps_channels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
