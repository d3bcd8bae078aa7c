/*
 * Cooperative preemption, eviction, victim choice and expedited requeue
 * (lib/control/preempt.c, lib/sched victim cost) on a virtual clock, with
 * hand-worked figures: one supernode of 4 servers x 8 GPUs (32 GPUs), a
 * preemptible class "scav" (priority 0) and the fixture's "high" (100).
 */
#include "control_fixture.h"

#include <math.h>

#define T0 1700000000LL

static void at(struct fx *f, int64_t s)
{
    f->now.wall_ms = (T0 + s) * 1000;
    f->now.mono_ms = 1000000 + s * 1000;
}

/* The fixture on one supernode with grace_s, expedite_s and class scav. */
static void open_with(struct fx *f, int64_t grace_s, int64_t expedite_s)
{
    fx_open_sized(f, 1, "");
    put_named(&f->c->classes, &f->c->n_classes, "scav", "{\"priority\": 0, \"preemptible\": true}");
    f->c->cfg.preempt_grace_s = grace_s;
    f->c->cfg.expedite_hold_s = expedite_s;
    at(f, 0);
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_REBUILD}), SN_OK);
}

static void ckpt(struct fx *f, int64_t id, int64_t step)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_CHECKPOINT,
                                                        .job = id,
                                                        .text = "/ckpt/x",
                                                        .step = step}),
                     SN_OK);
}

static void timer(struct fx *f)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}), SN_OK);
}

static const char *how(struct fx *f, int64_t id)
{
    return job(f, id)->evict_how;
}

/* A (scav, 32 GPUs) runs from 0, checkpoints at 100; B (high, 32) comes at
 * 300: A is signalled, keeps its GPUs; its checkpoint at 320 evicts it
 * (nothing lost since), and B starts on the freed GPUs at once. */
static void checkpoint_evicts(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 60, 0);
    int64_t a = submit(&f, "{\"gpus\":32,\"priority_class\":\"scav\"}");
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    at(&f, 100);
    ckpt(&f, a, 10);
    at(&f, 300);
    int64_t b = submit(&f, "{\"gpus\":32,\"priority_class\":\"high\"}");
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->preempt_since_s, T0 + 300);
    assert_int_equal(job(&f, a)->preempt_deadline_s, T0 + 360);
    assert_int_equal(job(&f, a)->preempt_by, b);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_PENDING);
    assert_int_equal(f.c->n_preempting, 1);
    /* What the agents read: the signal and the deadline. */
    json_t *as = sn_control_assignment(f.c, job(&f, a), 0, NULL);
    json_t *p = json_object_get(as, "preempt");
    assert_string_equal(json_string_value(json_object_get(p, "signal")), "TERM");
    assert_int_equal(json_integer_value(json_object_get(p, "deadline_s")), T0 + 360);
    json_decref(as);
    json_t *o = sn_control_job_json(f.c, job(&f, a));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "preempting"), "by")),
                     b);
    json_decref(o);
    /* Passes meanwhile preempt nobody else and start nothing. */
    at(&f, 310);
    pass(&f);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_PENDING);
    at(&f, 320);
    ckpt(&f, a, 11);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "checkpoint");
    assert_true(job(&f, a)->evict_lost_gpu_s == 0);
    assert_int_equal(job(&f, a)->evict_time_s, T0 + 320);
    assert_int_equal(f.c->n_preempting, 0);
    assert_non_null(strstr(job(&f, a)->detail, "preempted by job 2 after its checkpoint"));
    /* The preemptor takes the freed GPUs at once, before any pass. */
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    char *m = sn_control_metrics_text(f.c, T0 + 320);
    assert_non_null(strstr(m, "sn_preempt_evictions_total{how=\"checkpoint\"} 1\n"));
    assert_non_null(strstr(m, "sn_preempt_signals_total 1\n"));
    free(m);
    verify(&f);
    fx_close(&f);
}

/* No checkpoint after the signal: TIMER evicts at the deadline (360) and
 * the work since the checkpoint at 100 is lost: 32 x 260 = 8320 GPU-s. */
static void deadline_evicts(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 60, 0);
    int64_t a = submit(&f, "{\"gpus\":32,\"priority_class\":\"scav\"}");
    pass(&f);
    at(&f, 100);
    ckpt(&f, a, 10);
    at(&f, 300);
    int64_t b = submit(&f, "{\"gpus\":32,\"priority_class\":\"high\"}");
    pass(&f);
    at(&f, 359);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    at(&f, 360);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "deadline");
    assert_true(job(&f, a)->evict_lost_gpu_s == 32.0 * 260);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    char *m = sn_control_metrics_text(f.c, T0 + 360);
    assert_non_null(strstr(m, "sn_preempt_lost_gpu_seconds_total{how=\"deadline\"} 8320\n"));
    free(m);
    verify(&f);
    fx_close(&f);
}

/* A rank exiting on the signal evicts, whatever its status: 143 (killed
 * by SIGTERM) is not a failure, 0 (saved and exited) not a completion. */
static void exit_evicts(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        struct fx f;
        open_with(&f, 60, 0);
        int64_t a = submit(&f, "{\"gpus\":32,\"priority_class\":\"scav\"}");
        pass(&f);
        at(&f, 300);
        submit(&f, "{\"gpus\":32,\"priority_class\":\"high\"}");
        pass(&f);
        at(&f, 305);
        assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                                             .job = a,
                                                             .id = 3,
                                                             .status = k ? 0 : 143}),
                         SN_OK);
        assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
        assert_string_equal(how(&f, a), "exit");
        /* no checkpoint: lost since its start */
        assert_true(job(&f, a)->evict_lost_gpu_s == 32.0 * 305);
        fx_close(&f);
    }
}

/* Grace 0: the old behaviour, evicted in the pass that preempts; the loss
 * is recorded all the same: 32 x (300 - 100) = 6400 GPU-s. */
static void grace_zero_immediate(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 0);
    int64_t a = submit(&f, "{\"gpus\":32,\"priority_class\":\"scav\"}");
    pass(&f);
    at(&f, 100);
    ckpt(&f, a, 10);
    at(&f, 300);
    int64_t b = submit(&f, "{\"gpus\":32,\"priority_class\":\"high\"}");
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    assert_string_equal(how(&f, a), "immediate");
    assert_true(job(&f, a)->evict_lost_gpu_s == 32.0 * 200);
    fx_close(&f);
}

/* An operator's requeue with a grace signals; the checkpoint evicts it
 * with event "requeued" (actor named). */
static void requeue_cooperative(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 60, 0);
    int64_t a = submit(&f, "{\"gpus\":8,\"priority_class\":\"low\"}");
    pass(&f);
    at(&f, 50);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_REQUEUE_JOB,
                                                         .job = a,
                                                         .actor = "alice"}),
                     SN_OK);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->preempt_by, 0);
    assert_int_equal(job(&f, a)->preempt_deadline_s, T0 + 110);
    at(&f, 70);
    ckpt(&f, a, 1);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "checkpoint");
    assert_non_null(strstr(job(&f, a)->detail, "requeued after its checkpoint"));
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING); /* runs again */
    assert_int_equal(job(&f, a)->requeues, 1);
    fx_close(&f);
}

/* Victim choice, hand-worked. Four scav jobs of 8 GPUs fill the supernode
 * from 0; at 300 a high job of 8 needs one of them. Work since the last
 * checkpoint x GPUs: J1 (checkpoint 50) 8 x 250 = 2000, J2 (250) 400, J3
 * (none) 2400, J4 (280) 160: J4 goes; a second high job then takes J2. */
static void victim_least_work(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 0);
    int64_t j[4];
    for (int i = 0; i < 4; i++)
        j[i] = submit(&f, "{\"gpus\":8,\"priority_class\":\"scav\"}");
    pass(&f);
    for (int i = 0; i < 4; i++)
        assert_int_equal(job(&f, j[i])->state, SN_CONTROL_JOB_RUNNING);
    at(&f, 50);
    ckpt(&f, j[0], 1);
    at(&f, 250);
    ckpt(&f, j[1], 1);
    at(&f, 280);
    ckpt(&f, j[3], 1);
    at(&f, 300);
    int64_t h = submit(&f, "{\"gpus\":8,\"priority_class\":\"high\"}");
    pass(&f);
    assert_int_equal(job(&f, h)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, j[3])->state, SN_CONTROL_JOB_REQUEUED);
    assert_true(job(&f, j[3])->evict_lost_gpu_s == 8.0 * 20);
    for (int i = 0; i < 3; i++)
        assert_int_equal(job(&f, j[i])->state, SN_CONTROL_JOB_RUNNING);
    /* Next: J2 400 < J1 2000 < J3 2400 (at 300). */
    int64_t h2 = submit(&f, "{\"gpus\":8,\"priority_class\":\"high\"}");
    pass(&f);
    assert_int_equal(job(&f, h2)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, j[1])->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(job(&f, j[0])->state, SN_CONTROL_JOB_RUNNING);
    fx_close(&f);
}

/* Ties: equal work since the checkpoint x GPUs goes to the lower ID (the
 * earlier submission): J1 (16 GPUs, checkpoint at 290: 16 x 10 = 160) and
 * J2 (8 GPUs, checkpoint at 280: 8 x 20 = 160) tie; J3 (8 GPUs, 8 x 300)
 * costs more. J1 goes although it frees more GPUs than needed. */
static void victim_tie_by_id(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 0);
    int64_t j1 = submit(&f, "{\"gpus\":16,\"priority_class\":\"scav\"}");
    int64_t j2 = submit(&f, "{\"gpus\":8,\"priority_class\":\"scav\"}");
    int64_t j3 = submit(&f, "{\"gpus\":8,\"priority_class\":\"scav\"}");
    pass(&f);
    at(&f, 280);
    ckpt(&f, j2, 1);
    at(&f, 290);
    ckpt(&f, j1, 1);
    at(&f, 300);
    int64_t h = submit(&f, "{\"gpus\":8,\"priority_class\":\"high\"}");
    pass(&f);
    assert_int_equal(job(&f, h)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, j1)->state, SN_CONTROL_JOB_REQUEUED);
    assert_true(job(&f, j1)->evict_lost_gpu_s == 16.0 * 10);
    assert_int_equal(job(&f, j2)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, j3)->state, SN_CONTROL_JOB_RUNNING);
    fx_close(&f);
}

static uint32_t server_of(struct fx *f, int64_t id, uint32_t rank)
{
    return f->model->gpu_server[job(f, id)->alloc[rank]];
}

/* Expedited requeue: A (16 GPUs) and B (16) fill the supernode, C (8)
 * waits. A server of A fails: A is requeued and its GPUs on its other
 * server are held for it, so C does not take them; once B ends, A starts
 * first, on its held GPUs. */
static void expedite_holds_servers(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 120);
    int64_t a = submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    int64_t b = submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    pass(&f);
    int64_t c = submit(&f, "{\"gpus\":8,\"priority_class\":\"low\"}");
    pass(&f);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_PENDING);
    uint32_t s0 = server_of(&f, a, 0), s1 = server_of(&f, a, 8);
    assert_int_not_equal(s0, s1);
    at(&f, 100);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .is_node = true,
                                                         .id = s1,
                                                         .admin = SN_CONTROL_ADMIN_DOWN,
                                                         .detail = "psu",
                                                         .actor = "ops"}),
                     SN_OK);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "interrupted");
    assert_int_equal(job(&f, a)->expedite_until_s, T0 + 220);
    assert_int_equal(job(&f, a)->n_expedite, 8); /* the GPUs of s0; s1 is down */
    uint32_t g0 = f.model->server_first_gpu[s0];
    assert_true(sn_sched_gpu_cordoned(f.c->sched, g0));
    pass(&f);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_PENDING); /* s0 is held for A */
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    at(&f, 150);
    for (uint32_t r = 0; r < 16; r++)
        assert_int_equal(
            apply(&f,
                  (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT, .job = b, .id = r}),
            SN_OK);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_COMPLETED);
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->expedite_until_s, 0);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_RUNNING); /* the 8 GPUs left */
    assert_false(sn_sched_gpu_cordoned(f.c->sched, g0));
    verify(&f);
    fx_close(&f);
}

/* The hold ends with its window: C takes the held GPUs after 120 s. */
static void expedite_window_ends(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 120);
    int64_t a = submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    pass(&f);
    int64_t c = submit(&f, "{\"gpus\":8,\"priority_class\":\"low\"}");
    pass(&f);
    uint32_t s1 = server_of(&f, a, 8);
    at(&f, 100);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .is_node = true,
                                                         .id = s1,
                                                         .admin = SN_CONTROL_ADMIN_DOWN,
                                                         .actor = "ops"}),
                     SN_OK);
    at(&f, 219);
    pass(&f);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_PENDING);
    at(&f, 220);
    pass(&f);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(f.c->n_expedited, 0);
    verify(&f);
    fx_close(&f);
}

/* Off (0): the same failure holds nothing, C takes the free server. */
static void expedite_off(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 0);
    int64_t a = submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    pass(&f);
    int64_t c = submit(&f, "{\"gpus\":8,\"priority_class\":\"low\"}");
    pass(&f);
    at(&f, 100);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .is_node = true,
                                                         .id = server_of(&f, a, 8),
                                                         .admin = SN_CONTROL_ADMIN_DOWN,
                                                         .actor = "ops"}),
                     SN_OK);
    pass(&f);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_RUNNING);
    fx_close(&f);
}

/* The preemptor starts elsewhere first: A (scav, 16) and F (low, 16) fill
 * the supernode, B (high, 16) signals A; F ends, B starts on F's GPUs at
 * the next pass and A's preemption is cancelled (it keeps running, no
 * deadline, event "preempt-cancelled"); a rank of A exiting 143 before the
 * old deadline (on the signal it had) requeues it, it does not fail. */
static void preemptor_elsewhere_cancels(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 60, 0);
    int64_t a = submit(&f, "{\"gpus\":16,\"priority_class\":\"scav\"}");
    int64_t fl = submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    pass(&f);
    at(&f, 300);
    int64_t b = submit(&f, "{\"gpus\":16,\"priority_class\":\"high\"}");
    pass(&f);
    assert_int_equal(job(&f, a)->preempt_by, b);
    assert_int_equal(job(&f, a)->preempt_deadline_s, T0 + 360);
    at(&f, 310);
    for (uint32_t r = 0; r < 16; r++)
        assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                                             .job = fl,
                                                             .id = r}),
                         SN_OK);
    pass(&f);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->preempt_deadline_s, 0);
    assert_int_equal(job(&f, a)->preempt_signalled_until_s, T0 + 360);
    assert_int_equal(f.c->n_preempting, 0);
    assert_int_equal(f.c->preempt_cancels, 1);
    uint32_t pre = SN_NONE;
    assert_false(sn_sched_leaving(f.c->sched, job(&f, a)->sched_id, &pre));
    json_t *o = sn_control_job_json(f.c, job(&f, a));
    assert_true(json_is_null(json_object_get(o, "preempting")));
    json_decref(o);
    at(&f, 320);
    timer(&f); /* nothing to evict any more */
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                                         .job = a,
                                                         .id = 0,
                                                         .status = 143}),
                     SN_OK);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "exit");
    verify(&f);
    fx_close(&f);
}

/* A restart of snd while a job is preempting: its rows (the effects, in
 * order) restore a control in which the job is still preempting with the
 * same deadline and preemptor, marked leaving in the new core for that
 * preemptor; the deadline then evicts it there and the preemptor starts. */
static void restore_keeps_preempting(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 60, 0);
    int64_t a = submit(&f, "{\"gpus\":32,\"priority_class\":\"scav\"}");
    pass(&f);
    at(&f, 100);
    ckpt(&f, a, 10);
    at(&f, 300);
    int64_t b = submit(&f, "{\"gpus\":32,\"priority_class\":\"high\"}");
    pass(&f);
    assert_int_equal(job(&f, a)->preempt_deadline_s, T0 + 360);
    struct sn_error err = {0};
    struct sn_control *c2 = sn_control_new(f.model, f.spec, &f.c->cfg, &err);
    assert_non_null(c2);
    for (uint32_t i = 0; i < f.c->n_tenants; i++) {
        char *doc = json_dumps(f.c->tenants[i].doc, JSON_COMPACT);
        put_named(&c2->tenants, &c2->n_tenants, f.c->tenants[i].name, doc);
        free(doc);
    }
    for (uint32_t i = 0; i < f.c->n_classes; i++) {
        char *doc = json_dumps(f.c->classes[i].doc, JSON_COMPACT);
        put_named(&c2->classes, &c2->n_classes, f.c->classes[i].name, doc);
        free(doc);
    }
    /* What the store holds: each job's last row, then its last allocation
     * row (the effects are upserts, in order). */
    for (int pass_kind = 0; pass_kind < 2; pass_kind++)
        for (int64_t id = 1; id <= b; id++) {
            const struct sn_store_write *last = NULL;
            for (size_t k = 0; k < f.out.n_batches; k++)
                for (size_t r = 0; r < f.out.batches[k].n; r++) {
                    const struct sn_store_write *w = &f.out.batches[k].rows[r];
                    bool job_row = w->kind == SN_STORE_PUT_JOB;
                    bool alloc_row = w->kind == SN_STORE_PUT_ALLOC || w->kind == SN_STORE_DEL_ALLOC;
                    if (w->num[0] == id && (pass_kind == 0 ? job_row : alloc_row))
                        last = w;
                }
            if (last && last->kind != SN_STORE_DEL_ALLOC &&
                sn_control_restore_row(c2, last, &err) != SN_OK)
                fail_msg("%s", err.message);
        }
    /* B never wrote a row here (the submit route writes its first): as
     * snd would have it, pending and durable. */
    struct sn_control_job *nb = calloc(1, sizeof(*nb));
    assert_non_null(nb);
    nb->spec = json_deep_copy(job(&f, b)->spec);
    nb->id = b;
    snprintf(nb->tenant, sizeof(nb->tenant), "acme");
    nb->state = SN_CONTROL_JOB_PENDING;
    nb->sched_id = SN_NONE;
    nb->failed_rank = -1;
    nb->durable = true;
    nb->submit_s = nb->updated_s = job(&f, b)->submit_s;
    assert_int_equal(sn_control_job_insert(c2, nb, &err), SN_OK);
    at(&f, 310);
    if (sn_control_start(c2, &f.now, &err) != SN_OK)
        fail_msg("%s", err.message);
    const struct sn_control_job *ra = sn_control_job_get(c2, a), *rb = sn_control_job_get(c2, b);
    assert_non_null(ra);
    assert_non_null(rb);
    assert_int_equal(ra->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(ra->preempt_deadline_s, T0 + 360);
    assert_int_equal(ra->preempt_since_s, T0 + 300);
    assert_int_equal(ra->preempt_by, b);
    assert_int_equal(c2->n_preempting, 1);
    uint32_t pre = SN_NONE;
    assert_true(sn_sched_leaving(c2->sched, ra->sched_id, &pre));
    assert_int_equal(pre, rb->sched_id);
    struct sn_effects out;
    sn_effects_init(&out);
    at(&f, 360);
    /* The agents of A's servers are back (the restore expects them). */
    for (uint32_t sv = 0; sv < f.model->n_servers; sv++) {
        struct sn_control_event hb = {.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = sv};
        assert_int_equal(sn_control_apply(c2, &hb, &f.now, &out, &err), SN_OK);
    }
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_TIMER};
    assert_int_equal(sn_control_apply(c2, &ev, &f.now, &out, &err), SN_OK);
    assert_int_equal(ra->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(ra->evict_how, "deadline");
    assert_true(ra->evict_lost_gpu_s == 32.0 * 260);
    assert_int_equal(rb->state, SN_CONTROL_JOB_RUNNING);
    sn_effects_free(&out);
    sn_control_free(c2);
    fx_close(&f);
}

/* ---- cooperative drains -------------------------------------------------- */

static void drain(struct fx *f, bool is_node, uint32_t id, const char *actor)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                        .is_node = is_node,
                                                        .id = id,
                                                        .admin = SN_CONTROL_ADMIN_DRAINING,
                                                        .detail = "maintenance",
                                                        .actor = actor}),
                     SN_OK);
}

/* An operator drains a server of A (16 GPUs on two servers, checkpoint at
 * 50) at 100 with drain_grace_s 60: A is signalled (deadline 160, drain
 * "operator"), keeps running and the server is draining; A's checkpoint at
 * 120 evicts it with nothing lost, A is requeued (not expedited: an
 * operator's drain), the server becomes drained, and the next pass starts A
 * again off it. */
static void drain_checkpoint_evicts(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 120);
    f.c->cfg.drain_grace_s = 60;
    int64_t a = submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    pass(&f);
    uint32_t s0 = server_of(&f, a, 0);
    at(&f, 50);
    ckpt(&f, a, 5);
    at(&f, 100);
    drain(&f, true, s0, "ops");
    struct sn_control_job *ja = job(&f, a);
    assert_int_equal(ja->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(ja->preempt_since_s, T0 + 100);
    assert_int_equal(ja->preempt_deadline_s, T0 + 160);
    assert_int_equal(ja->preempt_by, 0);
    assert_int_equal(ja->preempt_drain, SN_CONTROL_DRAIN_OPERATOR);
    assert_int_equal(f.c->nodes[s0].state, SN_CONTROL_ADMIN_DRAINING);
    assert_int_equal(f.c->n_preempting, 1);
    json_t *as = sn_control_assignment(f.c, ja, 0, NULL);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(as, "preempt"), "deadline_s")),
        T0 + 160);
    json_decref(as);
    json_t *o = sn_control_job_json(f.c, ja);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(o, "preempting"), "drain")), "operator");
    json_decref(o);
    /* a pass meanwhile neither evicts nor preempts it */
    at(&f, 110);
    pass(&f);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    at(&f, 120);
    ckpt(&f, a, 6);
    ja = job(&f, a);
    assert_int_equal(ja->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "checkpoint");
    assert_true(ja->evict_lost_gpu_s == 0);
    assert_int_equal(ja->evict_time_s, T0 + 120);
    assert_non_null(strstr(ja->detail, "drained: requeued after its checkpoint, 20 s after"));
    assert_int_equal(ja->expedite_until_s, 0);
    assert_int_equal(ja->preempt_drain, SN_CONTROL_DRAIN_NONE);
    assert_string_equal(ja->ckpt_path, "/ckpt/x");
    assert_int_equal(f.c->nodes[s0].state, SN_CONTROL_ADMIN_DRAINED);
    assert_int_equal(f.c->n_preempting, 0);
    char *m = sn_control_metrics_text(f.c, T0 + 120);
    assert_non_null(strstr(m, "sn_preempt_drain_signals_total 1\n"));
    assert_non_null(strstr(m, "sn_preempt_evictions_total{how=\"checkpoint\"} 1\n"));
    free(m);
    pass(&f);
    ja = job(&f, a);
    assert_int_equal(ja->state, SN_CONTROL_JOB_RUNNING);
    for (uint32_t r = 0; r < 16; r++)
        assert_int_not_equal(f.model->gpu_server[ja->alloc[r]], s0);
    verify(&f);
    fx_close(&f);
}

/* A drain by snd:health (its rack escalation) is infrastructure: A ignores
 * the signal and is evicted at the deadline (160) with 16 GPUs x 110 s
 * since its checkpoint at 50 = 1,760 GPU-s lost, and its requeue is
 * expedited: its 8 GPUs on the other server (still up) are held for it
 * for 120 s; the drained server's are not. */
static void drain_health_deadline_expedites(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 120);
    f.c->cfg.drain_grace_s = 60;
    int64_t a = submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    pass(&f);
    uint32_t s0 = server_of(&f, a, 0), s1 = server_of(&f, a, 8);
    at(&f, 50);
    ckpt(&f, a, 5);
    at(&f, 100);
    drain(&f, true, s0, "snd:health");
    assert_int_equal(job(&f, a)->preempt_drain, SN_CONTROL_DRAIN_HEALTH);
    at(&f, 159);
    timer(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    at(&f, 160);
    timer(&f);
    struct sn_control_job *ja = job(&f, a);
    assert_int_equal(ja->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "deadline");
    assert_true(ja->evict_lost_gpu_s == 16.0 * 110);
    assert_non_null(strstr(ja->detail, "drained: requeued at its deadline"));
    assert_int_equal(ja->expedite_until_s, T0 + 280);
    assert_int_equal(ja->n_expedite, 8);
    for (uint32_t i = 0; i < ja->n_expedite; i++)
        assert_int_equal(f.model->gpu_server[ja->expedite_gpus[i]], s1);
    assert_int_equal(f.c->nodes[s0].state, SN_CONTROL_ADMIN_DRAINED);
    char *m = sn_control_metrics_text(f.c, T0 + 160);
    assert_non_null(strstr(m, "sn_preempt_lost_gpu_seconds_total{how=\"deadline\"} 1760\n"));
    free(m);
    verify(&f);
    fx_close(&f);
}

/* drain_grace_s 0 (the default): a drain lets the job run, as before; a
 * GPU drain with a grace signals only the job on that GPU. */
static void drain_grace_zero_and_gpu(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 0);
    int64_t a = submit(&f, "{\"gpus\":8,\"priority_class\":\"low\"}");
    int64_t b = submit(&f, "{\"gpus\":8,\"priority_class\":\"low\"}");
    pass(&f);
    uint32_t sa = server_of(&f, a, 0);
    drain(&f, true, sa, "ops");
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, a)->preempt_deadline_s, 0);
    assert_int_equal(f.c->nodes[sa].state, SN_CONTROL_ADMIN_DRAINING);
    assert_int_equal(f.c->n_preempting, 0);
    f.c->cfg.drain_grace_s = 30;
    uint32_t gb = job(&f, b)->alloc[3];
    at(&f, 10);
    drain(&f, false, gb, "ops");
    assert_int_equal(job(&f, b)->preempt_deadline_s, T0 + 40);
    assert_int_equal(job(&f, a)->preempt_deadline_s, 0);
    assert_int_equal(f.c->n_preempting, 1);
    at(&f, 40);
    timer(&f);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_REQUEUED);
    assert_int_equal(f.c->gpus[gb].state, SN_CONTROL_ADMIN_DRAINED);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    verify(&f);
    fx_close(&f);
}

/* The automatic path: snd:health's rack escalation (escalate_rack_pct 50)
 * drains every server of A's rack as one decision; A (32 GPUs, the whole
 * one-supernode fixture) is signalled as a health drain rather than left
 * to run, ignores it, and is evicted at the deadline (30 s) with its work
 * since its start at 0 lost (32 x 130 s), requeued expedited; the servers are
 * drained once it left. */
static void drain_escalation_cooperative(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 120);
    f.c->cfg.drain_grace_s = 30;
    f.c->cfg.escalate_rack_pct = 50;
    f.c->cfg.breaker_cluster = 64;
    f.c->cfg.breaker_window_s = 3600;
    int64_t a = submit(&f, "{\"gpus\":32,\"priority_class\":\"low\"}");
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    const struct sn_model *m = f.model;
    uint32_t rack = m->server_rack[0], srv[16], n = 0;
    for (uint32_t s = 0; s < m->n_servers; s++)
        if (m->server_rack[s] == rack && n < 16)
            srv[n++] = s;
    assert_true(n >= 2);
    struct sn_health_score *scores = calloc(m->n_gpus, sizeof(*scores));
    assert_non_null(scores);
    for (uint32_t g = 0; g < m->n_gpus; g++)
        scores[g] = (struct sn_health_score){.score = NAN, .reason = UINT32_MAX};
    for (uint32_t i = 0; i < (n + 1) / 2; i++)
        scores[m->server_first_gpu[srv[i]] + 3].score = 20;
    struct sn_health_report rep = {.n_gpus = m->n_gpus, .gpus = scores};
    at(&f, 100);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEALTH,
                                                         .report = &rep,
                                                         .cordon_below = 60}),
                     SN_OK);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(f.c->nodes[srv[i]].state, SN_CONTROL_ADMIN_DRAINING);
        assert_string_equal(f.c->nodes[srv[i]].actor, "snd:health");
    }
    struct sn_control_job *ja = job(&f, a);
    assert_int_equal(ja->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(ja->preempt_drain, SN_CONTROL_DRAIN_HEALTH);
    assert_int_equal(ja->preempt_deadline_s, T0 + 130);
    assert_int_equal(f.c->drain_signals, 1); /* one job, however many of its servers */
    at(&f, 130);
    timer(&f);
    ja = job(&f, a);
    assert_int_equal(ja->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "deadline");
    assert_true(ja->evict_lost_gpu_s == 32.0 * 130);
    assert_int_equal(ja->expedite_until_s, T0 + 250);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(f.c->nodes[srv[i]].state, SN_CONTROL_ADMIN_DRAINED);
    free(scores);
    verify(&f);
    fx_close(&f);
}

/* A resume before the job left cancels its eviction: A keeps running
 * (not leaving in the core, no deadline, event preempt-cancelled) and the
 * old deadline passes without an eviction; a rank exiting on the signal
 * before that deadline still requeues it (how "exit"), neither completed
 * nor failed. A second job B, whose server's drain also ends, is signalled
 * on two servers: a resume of one of them does not cancel it. */
static void drain_resume_cancels(void **state)
{
    (void)state;
    struct fx f;
    open_with(&f, 0, 0);
    f.c->cfg.drain_grace_s = 60;
    int64_t a = submit(&f, "{\"gpus\":8,\"priority_class\":\"low\"}");
    int64_t b = submit(&f, "{\"gpus\":16,\"priority_class\":\"low\"}");
    pass(&f);
    uint32_t sa = server_of(&f, a, 0), b0 = server_of(&f, b, 0), b1 = server_of(&f, b, 8);
    assert_int_not_equal(b0, b1);
    at(&f, 10);
    drain(&f, true, sa, "ops");
    drain(&f, true, b0, "ops");
    drain(&f, true, b1, "ops");
    assert_int_equal(f.c->n_preempting, 2);
    at(&f, 20);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .is_node = true,
                                                         .id = sa,
                                                         .admin = SN_CONTROL_ADMIN_UP,
                                                         .actor = "ops"}),
                     SN_OK);
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                         .is_node = true,
                                                         .id = b0,
                                                         .admin = SN_CONTROL_ADMIN_UP,
                                                         .actor = "ops"}),
                     SN_OK);
    struct sn_control_job *ja = job(&f, a);
    assert_int_equal(ja->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(ja->preempt_deadline_s, 0);
    assert_int_equal(ja->preempt_signalled_until_s, T0 + 70);
    assert_false(sn_sched_leaving(f.c->sched, ja->sched_id, NULL));
    assert_int_equal(job(&f, b)->preempt_deadline_s, T0 + 70); /* b1 still draining */
    assert_int_equal(f.c->n_preempting, 1);
    at(&f, 30);
    assert_int_equal(
        apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT, .job = a, .id = 0}),
        SN_OK);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, a), "exit");
    at(&f, 70);
    timer(&f);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_REQUEUED);
    assert_string_equal(how(&f, b), "deadline");
    verify(&f);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(checkpoint_evicts),
        cmocka_unit_test(deadline_evicts),
        cmocka_unit_test(exit_evicts),
        cmocka_unit_test(grace_zero_immediate),
        cmocka_unit_test(requeue_cooperative),
        cmocka_unit_test(victim_least_work),
        cmocka_unit_test(victim_tie_by_id),
        cmocka_unit_test(expedite_holds_servers),
        cmocka_unit_test(expedite_window_ends),
        cmocka_unit_test(expedite_off),
        cmocka_unit_test(preemptor_elsewhere_cancels),
        cmocka_unit_test(restore_keeps_preempting),
        cmocka_unit_test(drain_checkpoint_evicts),
        cmocka_unit_test(drain_health_deadline_expedites),
        cmocka_unit_test(drain_grace_zero_and_gpu),
        cmocka_unit_test(drain_escalation_cooperative),
        cmocka_unit_test(drain_resume_cancels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
