/*
 * Unit tests of lib/control: the daemon's rules driven by events with a
 * virtual clock, no sockets, no store, no threads. Clusters are built in
 * memory with sn_sim_shape_build() (2 supernodes of 4 servers of 8 GPUs,
 * 2 power domains each, unless a test says otherwise); each test asserts
 * the states, the placements and the store rows the effects carry, worked
 * out by hand in the comments. The same rules run in snd, where the
 * end-to-end tests (test_daemon_*, test_partition, test_job_*) check them
 * again through HTTP, the store and real agents.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/api.h>
#include <math.h>
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

static void fx_open(struct fx *f, uint32_t supernodes, const char *tenant_doc)
{
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = supernodes;
    sh.servers = 4;
    sh.gpus_per_server = 8;
    sh.power_domains = 2;
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_sim_shape_build(&sh, &f->spec, &f->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_control_config cfg = {
        .max_jobs = 1000,
        .heartbeat_timeout_s = 10,
        .default_walltime_s = 3600,
        .partition_share_pct = 10,
        .partition_window_s = 5,
        .max_tenants_per_supernode = 4,
    };
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
    f->c = sn_control_new(f->model, f->spec, &cfg, &err);
    if (!f->c)
        fail_msg("%s", err.message);
    json_error_t jerr;
    json_t *doc = json_loads(tenant_doc ? tenant_doc : "{\"prefix\": \"/data/acme\"}", 0, &jerr);
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

/* A durable pending job of tenant acme with the given spec. */
static int64_t submit(struct fx *f, const char *spec)
{
    struct sn_control_job *j = calloc(1, sizeof(*j));
    assert_non_null(j);
    json_error_t jerr;
    j->spec = json_loads(spec, 0, &jerr);
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

static const struct sn_control_job *job(struct fx *f, int64_t id)
{
    const struct sn_control_job *j = sn_control_job_get(f->c, id);
    assert_non_null(j);
    return j;
}

/* The last row of kind in the effects for job id (num[0]), or NULL. */
static const struct sn_store_write *last_row(const struct fx *f, enum sn_store_write_kind kind,
                                             int64_t id)
{
    const struct sn_store_write *found = NULL;
    for (size_t b = 0; b < f->out.n_batches; b++)
        for (size_t i = 0; i < f->out.batches[b].n; i++) {
            const struct sn_store_write *w = &f->out.batches[b].rows[i];
            if (w->kind == kind && (id < 0 || w->num[0] == id))
                found = w;
        }
    return found;
}

static uint32_t supernode_of(const struct fx *f, uint32_t gpu)
{
    return f->model->server_supernode[f->model->gpu_server[gpu]];
}

static void verify(const struct fx *f)
{
    struct sn_error err = {0};
    if (sn_control_verify(f->c, &err) != SN_OK)
        fail_msg("%s", err.message);
}

/* A 16-GPU job in TP groups of 8 on one supernode starts at the first
 * pass: its start is one batch (job row running, allocation row, event)
 * whose seq is the job's alloc_seq; its 16 GPUs lie in one supernode. */
static void start_makes_one_batch(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 2, NULL);
    int64_t id =
        submit(&f, "{\"name\":\"tp\",\"gpus\":16,\"group_gpus\":8,\"one_supernode\":true}");
    assert_string_equal(sn_control_reason(f.c, job(&f, id)), "none");
    pass(&f);
    const struct sn_control_job *j = job(&f, id);
    assert_int_equal(j->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(j->n_alloc, 16);
    for (uint32_t i = 1; i < j->n_alloc; i++)
        assert_int_equal(supernode_of(&f, j->alloc[i]), supernode_of(&f, j->alloc[0]));
    assert_true(j->alloc_seq > 0);
    const struct sn_effect_batch *start = NULL;
    for (size_t b = 0; b < f.out.n_batches; b++)
        if (f.out.batches[b].seq == j->alloc_seq)
            start = &f.out.batches[b];
    assert_non_null(start);
    assert_int_equal(start->n, 3);
    assert_int_equal(start->rows[0].kind, SN_STORE_PUT_JOB);
    assert_string_equal(start->rows[0].text[2], "running");
    assert_int_equal(start->rows[1].kind, SN_STORE_PUT_ALLOC);
    assert_int_equal(start->rows[2].kind, SN_STORE_ADD_EVENT);
    assert_true(j->master_port >= SN_CONTROL_MASTER_PORT_BASE);
    verify(&f);
    fx_close(&f);
}

/* Rank exits: 0 from every rank completes the job (END rows first in
 * their batch); a non-zero status fails it with the rank in the detail. */
static void rank_exits_complete_or_fail(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1, NULL);
    int64_t ok = submit(&f, "{\"name\":\"ok\",\"gpus\":2}");
    int64_t bad = submit(&f, "{\"name\":\"bad\",\"gpus\":2}");
    pass(&f);
    assert_int_equal(job(&f, ok)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, bad)->state, SN_CONTROL_JOB_RUNNING);
    sn_effects_reset(&f.out);
    struct sn_control_event ex = {.kind = SN_CONTROL_EVENT_RANK_EXIT, .job = ok, .id = 0};
    assert_int_equal(apply(&f, ex), SN_OK);
    assert_int_equal(job(&f, ok)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(f.out.n_batches, 1);
    assert_int_equal(f.out.batches[0].rows[0].kind, SN_STORE_PUT_ALLOC);
    assert_string_equal(f.out.batches[0].rows[0].text[1], "0");
    /* A repeat of the same rank is refused, nothing changes. */
    assert_int_equal(apply(&f, ex), SN_ERR_INVALID);
    sn_effects_reset(&f.out);
    ex.id = 1;
    assert_int_equal(apply(&f, ex), SN_OK);
    assert_int_equal(job(&f, ok)->state, SN_CONTROL_JOB_COMPLETED);
    assert_int_equal(f.out.batches[0].rows[0].kind, SN_STORE_PUT_JOB);
    assert_string_equal(f.out.batches[0].rows[0].text[2], "completed");
    assert_int_equal(job(&f, ok)->n_alloc, 0);
    sn_effects_reset(&f.out);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                                         .job = bad,
                                                         .id = 1,
                                                         .status = 3,
                                                         .text = "oom"}),
                     SN_OK);
    const struct sn_control_job *j = job(&f, bad);
    assert_int_equal(j->state, SN_CONTROL_JOB_FAILED);
    assert_int_equal(j->exit_status, 3);
    assert_int_equal(j->failed_rank, 1);
    assert_string_equal(j->detail, "rank 1 exited with status 3: oom");
    verify(&f);
    fx_close(&f);
}

/* A rank the agent lost with its host processes (status 255, reason
 * "infrastructure-lost: ...", docs/agent.md "Restarts") requeues the run:
 * never failed, its GPUs released, and it runs again at the next pass. */
static void lost_rank_requeues(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1, NULL);
    int64_t id = submit(&f, "{\"name\":\"j\",\"gpus\":2}");
    pass(&f);
    sn_effects_reset(&f.out);
    assert_int_equal(
        apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                            .job = id,
                                            .id = 1,
                                            .status = 255,
                                            .text = "infrastructure-lost: keeper gone"}),
        SN_OK);
    const struct sn_control_job *j = job(&f, id);
    assert_int_equal(j->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(j->requeues, 1);
    assert_int_equal(j->n_alloc, 0);
    assert_string_equal(j->detail, "interrupted: rank 1 lost:  keeper gone");
    assert_string_equal(f.out.batches[0].rows[0].text[2], "requeued");
    /* Any other status 255 is the job's own failure. */
    pass(&f);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                                         .job = id,
                                                         .id = 0,
                                                         .status = 255}),
                     SN_OK);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_FAILED);
    verify(&f);
    fx_close(&f);
}

/* A server lost under a running job: the node row, the job requeued with
 * its GPUs released (the next pass places it again, off the lost server,
 * in the supernode that has room). */
static void node_lost_requeues(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 2, NULL);
    int64_t id = submit(&f, "{\"name\":\"j\",\"gpus\":8}");
    pass(&f);
    uint32_t server = f.model->gpu_server[job(&f, id)->alloc[0]];
    sn_effects_reset(&f.out);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_NODE_LOST,
                                                         .id = server,
                                                         .detail = "power",
                                                         .actor = "test"}),
                     SN_OK);
    assert_int_equal(f.c->nodes[server].state, SN_CONTROL_ADMIN_DOWN);
    const struct sn_store_write *admin = last_row(&f, SN_STORE_PUT_ADMIN, -1);
    assert_non_null(admin);
    assert_string_equal(admin->text[2], "down");
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(job(&f, id)->n_alloc, 0);
    assert_int_equal(job(&f, id)->requeues, 1);
    assert_int_equal(f.out.n_logs, 1);
    assert_non_null(strstr(f.out.logs[0], "marked down: power"));
    advance(&f, 1000);
    pass(&f);
    const struct sn_control_job *j = job(&f, id);
    assert_int_equal(j->state, SN_CONTROL_JOB_RUNNING);
    for (uint32_t i = 0; i < j->n_alloc; i++)
        assert_int_not_equal(f.model->gpu_server[j->alloc[i]], server);
    verify(&f);
    fx_close(&f);
}

/* A tenant's per-supernode limit of 8 GPUs: the second 8-GPU job of one
 * supernode-bound pair waits with a quota reason while GPUs are free in
 * that supernode, then the per-job cap refuses a 32-GPU submission. */
static void tenant_limits_hold_and_refuse(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1,
            "{\"prefix\": \"/data/acme\", \"limits\": {\"gpus_per_supernode\": 8, "
            "\"max_job_gpus\": 16}}");
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_REBUILD}), SN_OK);
    int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":8}");
    int64_t b = submit(&f, "{\"name\":\"b\",\"gpus\":8}");
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_PENDING);
    assert_non_null(strstr(sn_control_reason(f.c, job(&f, b)), "quota"));
    char detail[300];
    sn_control_quota_pending_detail(f.c, job(&f, b), sn_control_reason(f.c, job(&f, b)), detail,
                                    sizeof(detail));
    assert_non_null(strstr(detail, "per-supernode 8 of 8 GPUs"));
    fx_close(&f);
}

/* Partition safety: every agent silent past the heartbeat timeout fences
 * the control (nothing declared down, nothing requeued); the operator's
 * unfence declares them all down and requeues the job. */
static void partition_fences_then_unfence(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1, NULL);
    for (uint32_t s = 0; s < f.model->n_servers; s++)
        assert_int_equal(
            apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = s}),
            SN_OK);
    int64_t id = submit(&f, "{\"name\":\"j\",\"gpus\":4}");
    pass(&f);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_RUNNING);
    for (int i = 0; i < 6; i++) {
        advance(&f, 5000);
        assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}),
                         SN_OK);
    }
    assert_true(f.c->fenced);
    assert_int_equal(f.c->n_silent, f.model->n_servers);
    /* The fence is an event row and a log line, never a write of its own. */
    const struct sn_store_write *fence = last_row(&f, SN_STORE_ADD_EVENT, 0);
    assert_non_null(fence);
    assert_string_equal(fence->text[0], "fenced");
    bool logged = false;
    for (size_t i = 0; i < f.out.n_logs; i++)
        logged |= strncmp(f.out.logs[i], "fenced: 4 of 4 servers silent", 29) == 0;
    assert_true(logged);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_RUNNING);
    for (uint32_t s = 0; s < f.model->n_servers; s++)
        assert_int_equal(f.c->nodes[s].state, SN_CONTROL_ADMIN_UP);
    assert_int_equal(
        apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_UNFENCE, .actor = "ops"}),
        SN_OK);
    assert_false(f.c->fenced);
    assert_int_equal(f.c->last_unfenced, f.model->n_servers);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_REQUEUED);
    verify(&f);
    fx_close(&f);
}

/* Drain of a busy server: draining while its job runs, drained (with its
 * row) once the job ends. */
static void drain_settles_when_job_ends(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1, NULL);
    int64_t id = submit(&f, "{\"name\":\"j\",\"gpus\":8}");
    pass(&f);
    uint32_t server = f.model->gpu_server[job(&f, id)->alloc[0]];
    uint32_t first = f.model->server_first_gpu[server];
    int to =
        sn_control_admin_transition(SN_CONTROL_ADMIN_UP, "drain", sn_control_busy(f.c, first, 8));
    assert_int_equal(to, SN_CONTROL_ADMIN_DRAINING);
    assert_int_equal(sn_control_admin_transition(SN_CONTROL_ADMIN_UP, "bogus", false), -2);
    assert_int_equal(sn_control_admin_transition(SN_CONTROL_ADMIN_UP, "resume", false), -1);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .is_node = true,
                                                         .id = server,
                                                         .admin = SN_CONTROL_ADMIN_DRAINING,
                                                         .detail = "maintenance",
                                                         .actor = "ops"}),
                     SN_OK);
    sn_effects_reset(&f.out);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_END,
                                                         .job = id,
                                                         .to = SN_CONTROL_JOB_CANCELLED,
                                                         .text = "cancelled",
                                                         .detail = "cancelled by ops",
                                                         .actor = "ops"}),
                     SN_OK);
    assert_int_equal(f.c->nodes[server].state, SN_CONTROL_ADMIN_DRAINED);
    /* The request's own rows come first (the shell commits them with the
     * answer), the drained node's row after. */
    assert_true(f.out.n_batches >= 2);
    assert_int_equal(f.out.batches[0].rows[0].kind, SN_STORE_PUT_JOB);
    assert_string_equal(f.out.batches[0].rows[0].text[2], "cancelled");
    const struct sn_store_write *admin = last_row(&f, SN_STORE_PUT_ADMIN, -1);
    assert_non_null(admin);
    assert_string_equal(admin->text[2], "drained");
    verify(&f);
    fx_close(&f);
}

/* Admission refusals carry the API's answer. */
static void admission_refusals(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1, NULL);
    struct sn_api_job b;
    memset(&b, 0, sizeof(b));
    b.gpus = 64;
    struct sn_control_refusal why;
    assert_false(sn_control_admit(f.c, "acme", &b, &why));
    assert_int_equal(why.status, 422);
    assert_string_equal(why.code, "unsatisfiable");
    assert_string_equal(why.field, "gpus");
    assert_string_equal(why.message, "64 GPUs asked, the cluster has 32");
    assert_false(sn_control_admit(f.c, "nobody", &b, &why));
    assert_string_equal(why.message, "no tenant 'nobody'");
    b.gpus = 4;
    snprintf(b.after_ok, sizeof(b.after_ok), "7");
    assert_false(sn_control_admit(f.c, "acme", &b, &why));
    assert_string_equal(why.field, "after_ok");
    b.after_ok[0] = '\0';
    assert_true(sn_control_admit(f.c, "acme", &b, &why));
    fx_close(&f);
}

/* The rules are deterministic in their inputs: the same events at the
 * same times give the same rows, byte for byte. */
static void same_events_same_effects(void **state)
{
    (void)state;
    struct fx f[2];
    for (int k = 0; k < 2; k++) {
        fx_open(&f[k], 2, NULL);
        for (int i = 0; i < 12; i++) {
            char spec[96];
            snprintf(spec, sizeof(spec), "{\"name\":\"j%d\",\"gpus\":%d}", i, 1 << (i % 5));
            submit(&f[k], spec);
            advance(&f[k], 250);
        }
        pass(&f[k]);
        assert_int_equal(apply(&f[k], (struct sn_control_event){.kind = SN_CONTROL_EVENT_NODE_LOST,
                                                                .id = 1,
                                                                .detail = "x",
                                                                .actor = "t"}),
                         SN_OK);
        advance(&f[k], 1000);
        pass(&f[k]);
    }
    assert_int_equal(f[0].out.n_batches, f[1].out.n_batches);
    for (size_t b = 0; b < f[0].out.n_batches; b++) {
        const struct sn_effect_batch *x = &f[0].out.batches[b], *y = &f[1].out.batches[b];
        assert_int_equal(x->seq, y->seq);
        assert_int_equal(x->n, y->n);
        for (size_t i = 0; i < x->n; i++) {
            assert_int_equal(x->rows[i].kind, y->rows[i].kind);
            for (int t = 0; t < SN_STORE_TEXT_MAX; t++) {
                const char *p = x->rows[i].text[t], *q = y->rows[i].text[t];
                assert_true((p == NULL) == (q == NULL));
                if (p)
                    assert_string_equal(p, q);
            }
            for (int n = 0; n < SN_STORE_NUM_MAX; n++)
                assert_int_equal(x->rows[i].num[n], y->rows[i].num[n]);
        }
    }
    fx_close(&f[0]);
    fx_close(&f[1]);
}

/* Hold, release, requeue (scontrol's verbs): a held pending job stays out
 * of the core through passes with reason "held" and the holder in its
 * pending detail; released, the next pass starts it; requeued while
 * running, it gives its GPUs back and the next pass starts it again.
 * Holding a running job or releasing one not held is refused. */
static void hold_release_requeue(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1, NULL);
    int64_t id = submit(&f, "{\"name\":\"h\",\"gpus\":4}");
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HOLD_JOB,
                                                         .job = id,
                                                         .actor = "alice",
                                                         .detail = "data not ready"}),
                     SN_OK);
    assert_non_null(last_row(&f, SN_STORE_PUT_JOB, id));
    assert_true(job(&f, id)->held);
    pass(&f);
    pass(&f);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_PENDING);
    assert_int_equal(job(&f, id)->n_alloc, 0);
    assert_string_equal(sn_control_reason(f.c, job(&f, id)), "held");
    assert_string_equal(job(&f, id)->hold_detail, "held by alice: data not ready");
    /* A second hold is refused and changes nothing. */
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HOLD_JOB,
                                                         .job = id,
                                                         .actor = "alice"}),
                     SN_ERR_INVALID);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RELEASE_JOB,
                                                         .job = id,
                                                         .actor = "alice"}),
                     SN_OK);
    assert_false(job(&f, id)->held);
    pass(&f);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, id)->n_alloc, 4);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HOLD_JOB,
                                                         .job = id,
                                                         .actor = "alice"}),
                     SN_ERR_INVALID);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RELEASE_JOB,
                                                         .job = id,
                                                         .actor = "alice"}),
                     SN_ERR_INVALID);
    sn_effects_reset(&f.out);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_REQUEUE_JOB,
                                                         .job = id,
                                                         .actor = "root",
                                                         .detail = "node maintenance"}),
                     SN_OK);
    const struct sn_control_job *j = job(&f, id);
    assert_int_equal(j->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(j->n_alloc, 0);
    assert_string_equal(f.out.batches[0].rows[0].text[2], "requeued");
    pass(&f);
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_RUNNING);
    /* A pending job cannot be requeued. */
    int64_t other = submit(&f, "{\"name\":\"big\",\"gpus\":32}");
    assert_int_equal(
        apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_REQUEUE_JOB, .job = other}),
        SN_ERR_INVALID);
    verify(&f);
    fx_close(&f);
}

/* The shared counts (counts.c): every GPU in exactly one class, summing to
 * the cluster's 32 GPUs at each step, worked out by hand: a 16-GPU job
 * (busy 16), a free GPU cordoned, the job's first server draining (its 8
 * GPUs count as draining, not busy; allocated stays 16), an idle server
 * lost (down 8). */
static void counts_sum_to_the_cluster(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1, NULL);
    struct sn_control_counts k;
    sn_control_counts(f.c, 0, 32, &k);
    assert_int_equal(k.gpus, 32);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_FREE], 32);
    int64_t id = submit(&f, "{\"name\":\"j\",\"gpus\":16,\"group_gpus\":8}");
    pass(&f);
    const struct sn_control_job *j = job(&f, id);
    assert_int_equal(j->state, SN_CONTROL_JOB_RUNNING);
    uint32_t busy_server = f.model->gpu_server[j->alloc[0]], idle[4], n_idle = 0;
    for (uint32_t s = 0; s < 4; s++) {
        bool used = false;
        for (uint32_t i = 0; i < j->n_alloc; i++)
            used |= f.model->gpu_server[j->alloc[i]] == s;
        if (!used)
            idle[n_idle++] = s;
    }
    assert_int_equal(n_idle, 2);
    sn_control_counts(f.c, 0, 32, &k);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_BUSY], 16);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_FREE], 16);
    assert_int_equal(k.allocated, 16);
    uint32_t cordoned_gpu = f.model->server_first_gpu[idle[0]];
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .id = cordoned_gpu,
                                                         .admin = SN_CONTROL_ADMIN_CORDONED,
                                                         .detail = "test",
                                                         .actor = "root"}),
                     SN_OK);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .is_node = true,
                                                         .id = busy_server,
                                                         .admin = SN_CONTROL_ADMIN_DRAINING,
                                                         .detail = "maintenance",
                                                         .actor = "root"}),
                     SN_OK);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_NODE_LOST,
                                                         .id = idle[1],
                                                         .detail = "no heartbeat",
                                                         .actor = "snd:heartbeat"}),
                     SN_OK);
    sn_control_counts(f.c, 0, 32, &k);
    uint32_t sum = 0;
    for (int c = 0; c < SN_CONTROL_GPU_CLASS_COUNT; c++)
        sum += k.by_class[c];
    assert_int_equal(sum, 32);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_BUSY], 8);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_DRAINING], 8);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_CORDONED], 1);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_DOWN], 8);
    assert_int_equal(k.by_class[SN_CONTROL_GPU_FREE], 7);
    assert_int_equal(k.allocated, 16);
    assert_int_equal(sn_control_node_view(f.c, idle[0]), SN_CONTROL_NODE_VIEW_MIXED);
    assert_int_equal(sn_control_node_view(f.c, busy_server), SN_CONTROL_NODE_VIEW_DRAINING);
    assert_int_equal(sn_control_node_view(f.c, idle[1]), SN_CONTROL_NODE_VIEW_DOWN);
    /* /metrics says the same: sn_cluster_gpus sums to the cluster, each
     * class as counted here. */
    char *text = sn_control_metrics_text(f.c, f.now.wall_ms / 1000);
    assert_non_null(text);
    unsigned total = 0;
    for (int c = 0; c < SN_CONTROL_GPU_CLASS_COUNT; c++) {
        char key[64];
        snprintf(key, sizeof(key), "sn_cluster_gpus{state=\"%s\"} ",
                 sn_control_gpu_class_name((enum sn_control_gpu_class)c));
        const char *at = strstr(text, key);
        assert_non_null(at);
        unsigned v = (unsigned)strtoul(at + strlen(key), NULL, 10);
        assert_int_equal(v, k.by_class[c]);
        total += v;
    }
    assert_int_equal(total, f.model->n_gpus);
    assert_non_null(strstr(text, "sn_cluster_gpus_allocated 16\n"));
    free(text);
    verify(&f);
    fx_close(&f);
}

/* A health report's verdicts (HEALTH): a leak's power-off zone takes every
 * GPU of its rack down (the job there is requeued), a GPU off the bus goes
 * down, an up GPU scoring below the threshold is cordoned; each with its
 * admin row, an audit row and a log line, by snd:health. The same report
 * again changes nothing: a down GPU stays down, a cordoned one is no
 * longer up. */
static void health_verdicts(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 2, NULL);
    const struct sn_model *m = f.model;
    int64_t id = submit(&f, "{\"name\":\"j\",\"gpus\":8}");
    pass(&f);
    uint32_t rack = m->server_rack[m->gpu_server[job(&f, id)->alloc[0]]];
    uint32_t off_bus = SN_NONE, slow = SN_NONE, rack_gpus = 0;
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        if (m->server_rack[m->gpu_server[g]] == rack)
            rack_gpus++;
        else if (off_bus == SN_NONE)
            off_bus = g;
        else if (slow == SN_NONE && m->gpu_server[g] != m->gpu_server[off_bus])
            slow = g;
    }
    assert_true(slow != SN_NONE && rack_gpus > 0);

    struct sn_health_finding findings[3] = {
        {.detector = SN_DET_GPU_OFF_BUS, .entity = SN_HEALTH_ENT_GPU, .id = off_bus,
         .gpu = off_bus, .server = m->gpu_server[off_bus]},
        {.detector = SN_DET_CLOCK_EVENT, .entity = SN_HEALTH_ENT_GPU, .id = slow, .gpu = slow,
         .server = m->gpu_server[slow]},
        {.detector = SN_DET_LEAK, .action = SN_HEALTH_ACT_POWER_OFF_ZONE,
         .entity = SN_HEALTH_ENT_RACK, .id = rack, .gpu = SN_NONE, .server = SN_NONE},
    };
    snprintf(findings[0].evidence, sizeof(findings[0].evidence), "kmsg:3: Xid 79");
    snprintf(findings[2].evidence, sizeof(findings[2].evidence), "cdu.csv:9: leak detected");
    struct sn_health_score *scores = calloc(m->n_gpus, sizeof(*scores));
    assert_non_null(scores);
    for (uint32_t g = 0; g < m->n_gpus; g++)
        scores[g] = (struct sn_health_score){.score = NAN, .reason = UINT32_MAX};
    scores[slow].score = 40;
    scores[slow].reason = 1;
    struct sn_health_report rep = {.findings = findings, .n_findings = 3, .n_gpus = m->n_gpus,
                                   .gpus = scores};
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_HEALTH, .report = &rep,
                                  .cordon_below = 60};
    sn_effects_reset(&f.out);
    assert_int_equal(apply(&f, ev), SN_OK);

    for (uint32_t g = 0; g < m->n_gpus; g++) {
        uint8_t want = m->server_rack[m->gpu_server[g]] == rack || g == off_bus
                           ? SN_CONTROL_ADMIN_DOWN
                       : g == slow ? SN_CONTROL_ADMIN_CORDONED
                                   : SN_CONTROL_ADMIN_UP;
        assert_int_equal(f.c->gpus[g].state, want);
        if (want != SN_CONTROL_ADMIN_UP)
            assert_string_equal(f.c->gpus[g].actor, "snd:health");
    }
    assert_non_null(strstr(f.c->gpus[off_bus].reason, "gpu-off-bus: kmsg:3: Xid 79"));
    assert_non_null(strstr(f.c->gpus[slow].reason, "score 40 below 60 (clock-event)"));
    assert_non_null(strstr(f.c->gpus[job(&f, id)->last_alloc[0]].reason, "power-off-zone"));
    assert_int_equal(job(&f, id)->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(f.c->health_fails, rack_gpus + 1);
    assert_int_equal(f.c->health_cordons, 1);
    size_t audits = 0, admins = 0, parts = 0;
    for (size_t b = 0; b < f.out.n_batches; b++)
        for (size_t i = 0; i < f.out.batches[b].n; i++) {
            const struct sn_store_write *w = &f.out.batches[b].rows[i];
            if (w->kind == SN_STORE_ADD_AUDIT) {
                audits++;
                assert_string_equal(w->text[0], "snd:health");
            } else if (w->kind == SN_STORE_PUT_ADMIN && strcmp(w->text[0], "part") == 0) {
                parts++; /* a finding on the part (offenders.c); a leak is none */
            } else if (w->kind == SN_STORE_PUT_ADMIN) {
                admins++;
            }
        }
    assert_int_equal(audits, rack_gpus + 2);
    assert_int_equal(admins, rack_gpus + 2);
    assert_int_equal(parts, 2);
    assert_int_equal(f.out.n_logs >= rack_gpus + 2, true);

    sn_effects_reset(&f.out);
    assert_int_equal(apply(&f, ev), SN_OK);
    assert_int_equal(f.out.n_batches, 0);
    assert_int_equal(f.c->health_fails, rack_gpus + 1);
    assert_int_equal(f.c->health_cordons, 1);
    verify(&f);
    free(scores);
    fx_close(&f);
}

/* The restore: what a control wrote (its effect rows, and the rows the
 * submit route writes for a new job) committed to a real SQLite store and
 * read back into a new control gives the same jobs (state, GPUs in rank
 * order, ranks done) and admin states, and passes the invariants; an
 * admin row of a GPU the spec lacks is counted and skipped. */
static void commit_effects(struct sn_store *st, struct fx *f)
{
    for (size_t b = 0; b < f->out.n_batches; b++)
        store_commit(st, f->out.batches[b].rows, f->out.batches[b].n);
    sn_effects_reset(&f->out);
}

static int64_t submit_stored(struct fx *f, struct sn_store *st, const char *spec)
{
    int64_t id = submit(f, spec);
    store_job(st, id, job(f, id));
    return id;
}

static void restore_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/sn-restore-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/state.db", dir);
    struct sn_error err = {0};
    struct sn_store *st = NULL;
    if (sn_store_open_sqlite(path, NULL, &st, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct fx f;
    fx_open(&f, 2, NULL);
    struct sn_store_write tenant = {.kind = SN_STORE_PUT_TENANT,
                                    .text = {"acme", "{\"prefix\": \"/data/acme\"}"}};
    store_commit(st, &tenant, 1);
    int64_t a = submit_stored(&f, st, "{\"name\":\"a\",\"gpus\":8}");
    int64_t b = submit_stored(&f, st, "{\"name\":\"b\",\"gpus\":16,\"group_gpus\":8}");
    int64_t c = submit_stored(&f, st, "{\"name\":\"c\",\"gpus\":64}");
    pass(&f);
    commit_effects(st, &f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_PENDING);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                                         .job = b, .id = 3, .actor = "test"}),
                     SN_OK);
    uint32_t free_gpu = SN_NONE;
    for (uint32_t g = 0; g < f.model->n_gpus && free_gpu == SN_NONE; g++)
        if (!sn_control_busy(f.c, g, 1))
            free_gpu = g;
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .id = free_gpu,
                                                         .admin = SN_CONTROL_ADMIN_CORDONED,
                                                         .detail = "fan",
                                                         .actor = "ops"}),
                     SN_OK);
    commit_effects(st, &f);
    struct sn_store_write stray = {.kind = SN_STORE_PUT_ADMIN,
                                   .text = {"gpu", "sn99-t99/gpu9", "down", "gone", "ops"}};
    store_commit(st, &stray, 1);

    /* Also with a spare reserve: the placements come back as stored even
     * where the reserve would leave no room for a new one (the restore
     * once refused an 8-GPU job with spare_gpus_per_supernode = 8, found by
     * test_control_diff). */
    for (int spares = 0; spares <= 32; spares += 8) {
    struct sn_control_config cfg2 = f.c->cfg;
    cfg2.spare_gpus_per_supernode = spares;
    struct sn_control *c2 = sn_control_new(f.model, f.spec, &cfg2, &err);
    assert_non_null(c2);
    struct restore_ctx rc = {.c = c2};
    assert_int_equal(sn_store_load(st, restore_one, &rc, &err), SN_OK);
    if (rc.rc != SN_OK)
        fail_msg("%s", rc.err.message);
    if (sn_control_start(c2, &f.now, &err) != SN_OK)
        fail_msg("%s", err.message);
    assert_int_equal(c2->restore_ignored, 1);
    assert_non_null(strstr(c2->restore_ignored_what, "sn99-t99/gpu9"));
    for (int64_t id = a; id <= c; id++) {
        const struct sn_control_job *x = job(&f, id), *y = sn_control_job_get(c2, id);
        assert_non_null(y);
        assert_int_equal(y->state, x->state);
        assert_int_equal(y->n_alloc, x->n_alloc);
        assert_memory_equal(y->alloc, x->alloc, x->n_alloc * sizeof(uint32_t));
        assert_int_equal(y->n_ranks_done, x->n_ranks_done);
    }
    assert_int_equal(sn_control_job_get(c2, b)->n_ranks_done, 1);
    for (uint32_t g = 0; g < f.model->n_gpus; g++)
        assert_int_equal(c2->gpus[g].state, f.c->gpus[g].state);
    assert_string_equal(c2->gpus[free_gpu].reason, "fan");
    if (sn_control_verify(c2, &err) != SN_OK)
        fail_msg("%s", err.message);
    sn_control_free(c2);
    }

    /* A malformed job row stops the restore, naming the job. */
    struct sn_store_write bad = {.kind = SN_STORE_PUT_JOB,
                                 .text = {"acme", NULL, "pending", "not json"},
                                 .num = {99, 0, 0}};
    struct sn_control *c3 = sn_control_new(f.model, f.spec, &f.c->cfg, &err);
    assert_int_equal(sn_control_restore_row(c3, &bad, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "stored job 99 is malformed"));
    sn_control_free(c3);
    sn_store_close(st);
    fx_close(&f);
    unlink(path);
    char side[80];
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
    rmdir(dir);
}

/* What snd wants Slurm to show: a cordoned server drains its Slurm node
 * with the reason, a down one is down, a GPU not up drains its server
 * naming the GPU, and a hold the mirror made from Slurm's side is not
 * snd's wish. */
static void slurm_wish(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, 1, NULL);
    char reason[256];
    bool down, by_slurm;
    sn_control_slurm_wish(f.c, 0, "slurm", reason, sizeof(reason), &down, &by_slurm);
    assert_string_equal(reason, "");
    assert_false(down || by_slurm);
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_ADMIN, .is_node = true, .id = 0,
                                  .admin = SN_CONTROL_ADMIN_CORDONED, .detail = "fan",
                                  .actor = "ops"};
    assert_int_equal(apply(&f, ev), SN_OK);
    sn_control_slurm_wish(f.c, 0, "slurm", reason, sizeof(reason), &down, &by_slurm);
    assert_non_null(strstr(reason, "cordoned node: fan"));
    assert_false(down || by_slurm);
    ev.admin = SN_CONTROL_ADMIN_DOWN;
    ev.detail = "psu";
    assert_int_equal(apply(&f, ev), SN_OK);
    sn_control_slurm_wish(f.c, 0, "slurm", reason, sizeof(reason), &down, &by_slurm);
    assert_true(down);
    ev.admin = SN_CONTROL_ADMIN_CORDONED;
    ev.detail = "slurm: drained by admin";
    ev.actor = "slurm";
    assert_int_equal(apply(&f, ev), SN_OK);
    sn_control_slurm_wish(f.c, 0, "slurm", reason, sizeof(reason), &down, &by_slurm);
    assert_true(by_slurm);
    assert_string_equal(reason, "");
    struct sn_control_event gpu = {.kind = SN_CONTROL_EVENT_ADMIN, .id = 9,
                                   .admin = SN_CONTROL_ADMIN_CORDONED, .detail = "xid 79",
                                   .actor = "ops"};
    assert_int_equal(apply(&f, gpu), SN_OK);
    uint32_t s9 = f.model->gpu_server[9];
    sn_control_slurm_wish(f.c, s9, "slurm", reason, sizeof(reason), &down, &by_slurm);
    assert_non_null(strstr(reason, "cordoned gpu"));
    assert_non_null(strstr(reason, "xid 79"));
    fx_close(&f);
}

/* Time limits (enforce_time_limits, as snd): a running job ends in state
 * timeout with event "timeout" at the first TIMER once its run reached
 * time_limit_s, not before; a job without a limit runs on; with the flag
 * off (the simulator) nothing ends. */
static void time_limit_ends_job(void **state)
{
    (void)state;
    for (int on = 0; on < 2; on++) {
        struct fx f;
        fx_open(&f, 1, NULL);
        f.c->cfg.enforce_time_limits = on;
        int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":8,\"time_limit_s\":60}");
        int64_t b = submit(&f, "{\"name\":\"b\",\"gpus\":8}");
        pass(&f);
        assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
        struct sn_control_event timer = {.kind = SN_CONTROL_EVENT_TIMER};
        advance(&f, 59000);
        assert_int_equal(apply(&f, timer), SN_OK);
        assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
        sn_effects_reset(&f.out);
        advance(&f, 2000);
        assert_int_equal(apply(&f, timer), SN_OK);
        if (on) {
            assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_TIMEOUT);
            assert_non_null(strstr(job(&f, a)->detail, "time limit 60 s reached"));
            const struct sn_store_write *ev = last_row(&f, SN_STORE_ADD_EVENT, a);
            assert_non_null(ev);
            assert_string_equal(ev->text[0], "timeout");
            assert_int_equal(job(&f, a)->n_alloc, 0);
        } else {
            assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
        }
        assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
        verify(&f);
        fx_close(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(start_makes_one_batch),
        cmocka_unit_test(rank_exits_complete_or_fail),
        cmocka_unit_test(node_lost_requeues),
        cmocka_unit_test(lost_rank_requeues),
        cmocka_unit_test(tenant_limits_hold_and_refuse),
        cmocka_unit_test(partition_fences_then_unfence),
        cmocka_unit_test(drain_settles_when_job_ends),
        cmocka_unit_test(admission_refusals),
        cmocka_unit_test(hold_release_requeue),
        cmocka_unit_test(counts_sum_to_the_cluster),
        cmocka_unit_test(health_verdicts),
        cmocka_unit_test(slurm_wish),
        cmocka_unit_test(time_limit_ends_job),
        cmocka_unit_test(restore_round_trip),
        cmocka_unit_test(same_events_same_effects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
