/*
 * The control's one entry point, sn_control_apply(): an event at a time
 * in, its effects out (see sn/control.h). The rules themselves live in
 * the module's other files; this file dispatches, and owns the effects'
 * storage.
 */
#include "control_int.h"

static const char *const event_names[] = {
#define SN_X(name, text) text,
    SN_CONTROL_EVENT_LIST(SN_X)
#undef SN_X
};

const char *sn_control_event_name(enum sn_control_event_kind kind)
{
    return (unsigned)kind < SN_CONTROL_EVENT_KIND_COUNT ? event_names[kind] : "?";
}

/* ---- effects ------------------------------------------------------------ */

void sn_effects_init(struct sn_effects *fx)
{
    memset(fx, 0, sizeof(*fx));
}

void sn_effects_reset(struct sn_effects *fx)
{
    for (size_t i = 0; i < fx->n_batches; i++)
        free(fx->batches[i].rows);
    for (size_t i = 0; i < fx->n_logs; i++)
        free(fx->logs[i]);
    fx->n_batches = fx->n_logs = 0;
    fx->fatal = false;
}

void sn_effects_free(struct sn_effects *fx)
{
    sn_effects_reset(fx);
    free(fx->batches);
    free(fx->logs);
    sn_effects_init(fx);
}

static bool grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t cap2 = *cap ? *cap * 2 : 16;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*v, cap2 * size);
    if (!p)
        return false;
    *v = p;
    *cap = cap2;
    return true;
}

/* One allocation holds the rows and the copies of their strings. */
static struct sn_store_write *rows_copy(const struct sn_store_write *rows, size_t n)
{
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        for (int t = 0; t < SN_STORE_TEXT_MAX; t++)
            bytes += rows[i].text[t] ? strlen(rows[i].text[t]) + 1 : 0;
    struct sn_store_write *w = malloc(n * sizeof(*w) + bytes);
    if (!w)
        return NULL;
    char *p = (char *)&w[n];
    for (size_t i = 0; i < n; i++) {
        w[i] = rows[i];
        for (int t = 0; t < SN_STORE_TEXT_MAX; t++) {
            if (!rows[i].text[t])
                continue;
            size_t len = strlen(rows[i].text[t]) + 1;
            memcpy(p, rows[i].text[t], len);
            w[i].text[t] = p;
            p += len;
        }
    }
    return w;
}

static bool batch_add(struct sn_effects *fx, uint64_t seq, const struct sn_store_write *rows,
                      size_t n)
{
    struct sn_store_write *w = rows_copy(rows, n);
    if (!w ||
        !grow((void **)&fx->batches, &fx->cap_batches, fx->n_batches + 1, sizeof(*fx->batches))) {
        free(w);
        fx->fatal = true;
        return false;
    }
    fx->batches[fx->n_batches++] = (struct sn_effect_batch){seq, n, w};
    return true;
}

void sn_control_emit(struct sn_control *c, const struct sn_store_write *rows, size_t n)
{
    if (batch_add(&c->fx, c->batch_seq + 1, rows, n))
        c->batch_seq++;
}

void sn_control_log(struct sn_control *c, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    char *copy = strdup(line);
    if (!copy || !grow((void **)&c->fx.logs, &c->fx.cap_logs, c->fx.n_logs + 1, sizeof(char *))) {
        free(copy);
        c->fx.fatal = true;
        return;
    }
    c->fx.logs[c->fx.n_logs++] = copy;
}

/* Moves the effects made while applying an event to out (in order). */
static void effects_move(struct sn_effects *from, struct sn_effects *out)
{
    for (size_t i = 0; i < from->n_batches; i++) {
        if (!grow((void **)&out->batches, &out->cap_batches, out->n_batches + 1,
                  sizeof(*out->batches))) {
            out->fatal = true;
            free(from->batches[i].rows);
            continue;
        }
        out->batches[out->n_batches++] = from->batches[i];
    }
    for (size_t i = 0; i < from->n_logs; i++) {
        if (!grow((void **)&out->logs, &out->cap_logs, out->n_logs + 1, sizeof(char *))) {
            out->fatal = true;
            free(from->logs[i]);
            continue;
        }
        out->logs[out->n_logs++] = from->logs[i];
    }
    out->fatal |= from->fatal;
    from->n_batches = from->n_logs = 0;
    from->fatal = false;
}

/* ---- events -------------------------------------------------------------- */

/* A request's own rows are the event's first batch: the shell commits
 * that batch with its answer and the rest after it. */
static void put_first(struct sn_control *c, size_t since)
{
    struct sn_effects *fx = &c->fx;
    if (fx->n_batches <= since + 1)
        return;
    struct sn_effect_batch last = fx->batches[fx->n_batches - 1];
    memmove(&fx->batches[since + 1], &fx->batches[since],
            (fx->n_batches - 1 - since) * sizeof(*fx->batches));
    fx->batches[since] = last;
}

static void job_row_text(const struct sn_control_job *j, char **doc, char **run)
{
    *doc = json_dumps(j->spec, JSON_COMPACT | JSON_SORT_KEYS);
    *run = sn_control_job_run_text(j);
}

/* END: the job leaves the core and its GPUs now (cancel, the exit of its
 * ranks); its rows (job, allocation removed, the event) come first. */
static enum sn_err end_job(struct sn_control *c, struct sn_control_job *j,
                           const struct sn_control_event *ev, struct sn_error *err)
{
    size_t since = c->fx.n_batches;
    sn_control_drop(c, j);
    sn_control_job_set_state(c, j, ev->to);
    j->updated_s = j->end_s = sn_control_now_s(c);
    sn_control_job_set_detail(j, ev->detail);
    char *doc, *run;
    job_row_text(j, &doc, &run);
    struct sn_store_write w[3] = {
        {.kind = SN_STORE_PUT_JOB,
         .text = {j->tenant, j->idem_key, sn_control_job_state_name(ev->to), doc, run},
         .num = {j->id, j->submit_s, j->updated_s}},
        {.kind = SN_STORE_DEL_ALLOC, .num = {j->id}},
        {.kind = SN_STORE_ADD_EVENT,
         .text = {ev->text, ev->detail ? ev->detail : ev->actor},
         .num = {j->id, j->updated_s}},
    };
    if (doc && run)
        sn_control_emit(c, w, 3);
    else
        c->fx.fatal = true;
    free(doc);
    free(run);
    put_first(c, since);
    (void)err;
    return SN_OK;
}

/* ADMIN: the admin state of a node or GPU is set (the caller checked the
 * transition); its row comes first, then what the change causes. */
static enum sn_err set_admin(struct sn_control *c, const struct sn_control_event *ev,
                             struct sn_error *err)
{
    if (ev->id >= (ev->is_node ? c->model->n_servers : c->model->n_gpus))
        return sn_error_set(err, SN_ERR_NOTFOUND, "no %s %u", ev->is_node ? "node" : "gpu", ev->id);
    sn_control_set_admin(c, ev);
    return SN_OK;
}

void sn_control_set_admin(struct sn_control *c, const struct sn_control_event *ev)
{
    const struct sn_model *m = c->model;
    struct sn_control_admin *a = ev->is_node ? &c->nodes[ev->id] : &c->gpus[ev->id];
    uint8_t old = a->state;
    int64_t now = sn_control_now_s(c);
    sn_control_admin_set(a, ev->admin, ev->admin == SN_CONTROL_ADMIN_UP ? NULL : ev->detail,
                         ev->actor, now);
    char name[64];
    if (ev->is_node)
        sn_model_server_name(m, ev->id, name, sizeof(name));
    else
        sn_model_gpu_name(m, ev->id, name, sizeof(name));
    struct sn_store_write w = {.kind = SN_STORE_PUT_ADMIN,
                               .text = {ev->is_node ? "node" : "gpu", name,
                                        sn_control_admin_state_name(ev->admin),
                                        a->reason ? a->reason : "", a->actor ? a->actor : ""},
                               .num = {now}};
    sn_control_emit(c, &w, 1);
    sn_control_admin_changed(c, ev->is_node, ev->id, old);
}

/* RANK_EXIT: a failing exit fails the job; a clean one is recorded (the
 * allocation row lists the ranks done) and the last one completes it. */
static enum sn_err rank_exit(struct sn_control *c, struct sn_control_job *j,
                             const struct sn_control_event *ev, struct sn_error *err)
{
    if (j->state != SN_CONTROL_JOB_RUNNING)
        return sn_error_set(err, SN_ERR_INVALID, "job %lld is %s; only a running job's ranks exit",
                            (long long)j->id, sn_control_job_state_name(j->state));
    uint32_t rank = ev->id;
    if (rank >= j->n_alloc)
        return sn_error_set(err, SN_ERR_INVALID, "rank %u: job %lld has ranks 0 to %u", rank,
                            (long long)j->id, j->n_alloc - 1);
    if (j->ranks_done[rank / 64] & (1ull << (rank % 64)))
        return sn_error_set(err, SN_ERR_INVALID, "rank %u of job %lld exited already", rank,
                            (long long)j->id);
    /* A preempting job's rank that exits (on the signal, whatever its
     * status: many jobs save and exit 0 on SIGTERM) evicts the job:
     * requeued, neither failed nor completed (lib/control/preempt.c). */
    if (sn__control_preempt_exit(c, j))
        return SN_OK;
    if (ev->detail && ev->detail[0]) {
        free(j->isolation);
        j->isolation = strdup(ev->detail);
    }
    struct sn_control_event end = {.kind = SN_CONTROL_EVENT_END, .job = j->id, .actor = ev->actor};
    char detail[360];
    /* The agent lost the rank with the host's processes (its keeper died
     * while the agent was down): not the job's fault, so the run is
     * requeued, never failed, and never counted twice. */
    if (ev->status == 255 && ev->text && strncmp(ev->text, "infrastructure-lost:", 20) == 0) {
        snprintf(detail, sizeof(detail), "rank %u lost: %.300s", rank, ev->text + 20);
        if (sn_control_requeue_lost(c, j, detail))
            return SN_OK;
    }
    if (ev->status != 0) {
        snprintf(detail, sizeof(detail), "rank %u exited with status %lld%s%s", rank,
                 (long long)ev->status, ev->text && ev->text[0] ? ": " : "",
                 ev->text ? ev->text : "");
        j->exit_status = (int32_t)ev->status;
        j->failed_rank = (int32_t)rank;
        end.to = SN_CONTROL_JOB_FAILED;
        end.text = "failed";
        end.detail = detail;
        return end_job(c, j, &end, err);
    }
    j->ranks_done[rank / 64] |= 1ull << (rank % 64);
    j->n_ranks_done++;
    if (j->n_ranks_done == j->n_alloc) {
        end.to = SN_CONTROL_JOB_COMPLETED;
        end.text = "completed";
        end.detail = "every rank exited 0";
        return end_job(c, j, &end, err);
    }
    uint32_t *ranks = malloc(j->n_ranks_done * sizeof(*ranks));
    uint32_t k = 0;
    for (uint32_t i = 0; ranks && i < j->n_alloc; i++)
        if (j->ranks_done[i / 64] & (1ull << (i % 64)))
            ranks[k++] = i;
    char *gpus = sn_control_ranges_format(j->alloc, j->n_alloc);
    char *done = ranks ? sn_control_ranges_format(ranks, k) : NULL;
    free(ranks);
    enum sn_err rc = SN_OK;
    if (gpus && done) {
        struct sn_store_write w = {
            .kind = SN_STORE_PUT_ALLOC, .text = {gpus, done}, .num = {j->id, j->start_s}};
        sn_control_emit(c, &w, 1);
    } else {
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    }
    free(gpus);
    free(done);
    return rc;
}

static enum sn_err checkpoint(struct sn_control *c, struct sn_control_job *j,
                              const struct sn_control_event *ev, struct sn_error *err)
{
    if (j->state != SN_CONTROL_JOB_RUNNING)
        return sn_error_set(err, SN_ERR_INVALID, "job %lld is %s; only a running job checkpoints",
                            (long long)j->id, sn_control_job_state_name(j->state));
    char *path = strdup(ev->text ? ev->text : "");
    if (!path)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    free(j->ckpt_path);
    j->ckpt_path = path;
    j->ckpt_time_s = sn_control_now_s(c);
    j->ckpt_step = ev->step;
    j->ckpt_count++;
    char *doc, *run;
    job_row_text(j, &doc, &run);
    char msg[1100];
    snprintf(msg, sizeof(msg), "checkpoint %s (step %lld)", path, (long long)ev->step);
    struct sn_store_write w[2] = {
        {.kind = SN_STORE_PUT_JOB,
         .text = {j->tenant, j->idem_key, sn_control_job_state_name(j->state), doc, run},
         .num = {j->id, j->submit_s, j->updated_s}},
        {.kind = SN_STORE_ADD_EVENT, .text = {"checkpoint", msg}, .num = {j->id, j->ckpt_time_s}},
    };
    enum sn_err rc = SN_OK;
    if (doc && run)
        sn_control_emit(c, w, 2);
    else
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    free(doc);
    free(run);
    if (j->sched_id != SN_NONE)
        sn_sched_set_checkpoint(c->sched, j->sched_id, (double)j->ckpt_time_s);
    sn__control_preempt_checkpoint(c, j); /* a preempting job leaves at its checkpoint */
    return rc;
}

/* HOLD_JOB, RELEASE_JOB, REQUEUE_JOB: a user's or admin's hand on a job,
 * as scontrol hold / release / requeue. The job's rows come first. */
static enum sn_err job_control(struct sn_control *c, struct sn_control_job *j,
                               const struct sn_control_event *ev, struct sn_error *err)
{
    const char *who = ev->actor ? ev->actor : "-";
    bool waiting = j->state == SN_CONTROL_JOB_PENDING || j->state == SN_CONTROL_JOB_REQUEUED;
    char msg[400];
    if (ev->detail && ev->detail[0])
        snprintf(msg, sizeof(msg), "%s by %s: %s",
                 ev->kind == SN_CONTROL_EVENT_HOLD_JOB ? "held" : "requeued", who, ev->detail);
    else
        snprintf(msg, sizeof(msg), "%s by %s",
                 ev->kind == SN_CONTROL_EVENT_HOLD_JOB ? "held" : "requeued", who);
    j->updated_s = sn_control_now_s(c);
    if (ev->kind == SN_CONTROL_EVENT_HOLD_JOB) {
        if (!waiting || j->held)
            return sn_error_set(err, SN_ERR_INVALID,
                                "job %lld is %s%s; only a pending or requeued job can be held",
                                (long long)j->id, sn_control_job_state_name(j->state),
                                j->held ? " and held already" : "");
        if (j->sched_id != SN_NONE) {
            enum sn_err rc = sn_sched_cancel(c->sched, j->sched_id, NULL);
            (void)rc;
            j->sched_id = SN_NONE;
        }
        char *copy = strdup(msg);
        if (!copy)
            return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
        free(j->hold_detail);
        j->hold_detail = copy;
        j->held = true;
        sn_control_job_rows(c, j, "held", msg);
        sn_control_poke(c);
        return SN_OK;
    }
    if (ev->kind == SN_CONTROL_EVENT_RELEASE_JOB) {
        if (!j->held || !waiting)
            return sn_error_set(err, SN_ERR_INVALID, "job %lld is %s and not held",
                                (long long)j->id, sn_control_job_state_name(j->state));
        j->held = false;
        free(j->hold_detail);
        j->hold_detail = NULL;
        snprintf(msg, sizeof(msg), "released by %s", who);
        sn_control_job_rows(c, j, "released", msg);
        if (json_object_get(j->spec, "after_ok") || sn_control_array_throttled(j))
            c->deps_dirty = true;
        else
            sn_control_submit(c, j);
        return SN_OK;
    }
    if (j->state != SN_CONTROL_JOB_RUNNING)
        return sn_error_set(err, SN_ERR_INVALID,
                            "job %lld is %s; only a running job can be requeued", (long long)j->id,
                            sn_control_job_state_name(j->state));
    if (sn__control_preempt_requeue(c, j, msg))
        return SN_OK; /* signalled: evicted at its checkpoint or deadline */
    c->interrupt_event = "requeued";
    bool ok = sn_control_requeue_lost(c, j, msg);
    c->interrupt_event = NULL;
    return ok ? SN_OK
              : sn_error_set(err, SN_ERR_INTERNAL, "job %lld could not be requeued",
                             (long long)j->id);
}

/* TIMER with enforce_time_limits: a running job whose run reached its
 * time_limit_s ends in state timeout, as Slurm's TIMEOUT (event "timeout";
 * its agents kill the ranks of a job that is no longer running). */
static void time_limits(struct sn_control *c)
{
    int64_t now = sn_control_now_s(c);
    for (int64_t id = 1; id < c->next_job_id && c->jobs_by_state[SN_CONTROL_JOB_RUNNING]; id++) {
        struct sn_control_job *j = sn_control_job_get(c, id);
        if (!j || j->state != SN_CONTROL_JOB_RUNNING || j->start_s <= 0)
            continue;
        json_int_t limit = json_integer_value(json_object_get(j->spec, "time_limit_s"));
        if (limit <= 0 || now - j->start_s < limit)
            continue;
        char detail[160];
        snprintf(detail, sizeof(detail), "time limit %lld s reached (ran %lld s)",
                 (long long)limit, (long long)(now - j->start_s));
        struct sn_control_event end = {.kind = SN_CONTROL_EVENT_END,
                                       .job = j->id,
                                       .to = SN_CONTROL_JOB_TIMEOUT,
                                       .text = "timeout",
                                       .detail = detail,
                                       .actor = "snd:timer"};
        struct sn_error err = {0};
        end_job(c, j, &end, &err);
        sn_control_log(c, "job %lld: %s", (long long)j->id, detail);
    }
}

static enum sn_err dispatch(struct sn_control *c, const struct sn_control_event *ev,
                            struct sn_error *err)
{
    const struct sn_model *m = c->model;
    struct sn_control_job *j = NULL;
    switch (ev->kind) {
    case SN_CONTROL_EVENT_SUBMIT:
    case SN_CONTROL_EVENT_END:
    case SN_CONTROL_EVENT_RANK_EXIT:
    case SN_CONTROL_EVENT_HOLD_JOB:
    case SN_CONTROL_EVENT_RELEASE_JOB:
    case SN_CONTROL_EVENT_REQUEUE_JOB:
    case SN_CONTROL_EVENT_UPDATE_JOB:
    case SN_CONTROL_EVENT_PROGRESS:
    case SN_CONTROL_EVENT_CHECKPOINT:
        j = sn_control_job_get(c, ev->job);
        if (!j)
            return sn_error_set(err, SN_ERR_NOTFOUND, "no job %lld", (long long)ev->job);
        break;
    case SN_CONTROL_EVENT_HEARTBEAT:
    case SN_CONTROL_EVENT_PROCS:
    case SN_CONTROL_EVENT_NODE_LOST:
    case SN_CONTROL_EVENT_HOLD:
    case SN_CONTROL_EVENT_IMEX_READY:
        if (ev->id >= m->n_servers)
            return sn_error_set(err, SN_ERR_NOTFOUND, "no server %u", ev->id);
        break;
    default:
        break;
    }
    switch (ev->kind) {
    case SN_CONTROL_EVENT_SUBMIT:
        j->durable = true;
        if (json_object_get(j->spec, "after_ok") || sn_control_array_throttled(j))
            c->deps_dirty = true; /* held until its dependencies end, or its array has room */
        else
            sn_control_submit(c, j);
        return SN_OK;
    case SN_CONTROL_EVENT_END:
        return end_job(c, j, ev, err);
    case SN_CONTROL_EVENT_RANK_EXIT:
        return rank_exit(c, j, ev, err);
    case SN_CONTROL_EVENT_HEARTBEAT:
        sn_control_heartbeat(c, ev->id);
        return SN_OK;
    case SN_CONTROL_EVENT_PROCS:
        sn_control_procs_report(c, ev->id, ev->text ? ev->text : "");
        return SN_OK;
    case SN_CONTROL_EVENT_ADMIN:
        return set_admin(c, ev, err);
    case SN_CONTROL_EVENT_NODE_LOST:
        sn_control_node_lost(c, ev->id, ev->detail ? ev->detail : "lost", ev->actor);
        return SN_OK;
    case SN_CONTROL_EVENT_HOLD:
        sn_control_hold(c, ev->id, ev->on);
        return SN_OK;
    case SN_CONTROL_EVENT_HEALTH:
        if (ev->report)
            sn_control_health(c, ev->report, ev->cordon_below);
        return SN_OK;
    case SN_CONTROL_EVENT_TIMER:
        sn_control_partition_check(c, c->clock.mono_ms);
        sn__control_imex_timer(c);
        sn__control_preflight_timer(c);
        if (c->cfg.enforce_time_limits)
            time_limits(c);
        if (c->n_preempting)
            sn__control_preempt_timer(c);
        sn_control_poke(c);
        return SN_OK;
    case SN_CONTROL_EVENT_SETTLE:
        if (c->deps_dirty)
            sn_control_settle(c);
        return SN_OK;
    case SN_CONTROL_EVENT_PASS:
        sn_control_pass(c);
        return SN_OK;
    case SN_CONTROL_EVENT_BREAKER_RESET:
        sn_control_breaker_reset(c, ev->actor);
        return SN_OK;
    case SN_CONTROL_EVENT_UNFENCE:
        c->last_unfenced = sn_control_partition_unfence(c, ev->actor);
        return SN_OK;
    case SN_CONTROL_EVENT_PROGRESS:
        if (j->state != SN_CONTROL_JOB_RUNNING)
            return sn_error_set(err, SN_ERR_INVALID,
                                "job %lld is %s; only a running job reports progress",
                                (long long)j->id, sn_control_job_state_name(j->state));
        j->progress_ms = c->clock.mono_ms;
        j->progress_reports++;
        return SN_OK;
    case SN_CONTROL_EVENT_CHECKPOINT:
        return checkpoint(c, j, ev, err);
    case SN_CONTROL_EVENT_HOLD_JOB:
    case SN_CONTROL_EVENT_RELEASE_JOB:
    case SN_CONTROL_EVENT_REQUEUE_JOB:
        return job_control(c, j, ev, err);
    case SN_CONTROL_EVENT_UPDATE_JOB:
        return sn__control_update(c, j, ev, err);
    case SN_CONTROL_EVENT_REBUILD:
        return sn_control_rebuild(c, err);
    case SN_CONTROL_EVENT_IMEX_READY:
        sn__control_imex_ready(c, ev->id, ev->text);
        return SN_OK;
    case SN_CONTROL_EVENT_PREFLIGHT:
        sn__control_preflight_result(c, ev->id, ev->text, ev->detail);
        return SN_OK;
    case SN_CONTROL_EVENT_PARTS:
        sn__control_parts_seen(c, ev->parts, ev->parts_time_s);
        return SN_OK;
    case SN_CONTROL_EVENT_REPAIR:
        return sn__control_parts_repair(c, ev, err);
    case SN_CONTROL_EVENT_REQUALIFY:
        return sn__control_parts_requalify(c, ev, err);
    default:
        return sn_error_set(err, SN_ERR_INVALID, "unknown event %d", (int)ev->kind);
    }
}

enum sn_err sn_control_apply(struct sn_control *c, const struct sn_control_event *ev,
                             const struct sn_control_clock *now, struct sn_effects *out,
                             struct sn_error *err)
{
    c->clock = *now;
    enum sn_err rc = dispatch(c, ev, err);
    effects_move(&c->fx, out);
    return rc;
}
