/*
 * Cooperative preemption and eviction, and expedited requeue (issue 27
 * item 3; docs/scheduler.md "Cooperative preemption").
 *
 * A running job that must leave (a preemption by a higher priority, an
 * operator's requeue) is not stopped at once when preempt_grace_s > 0:
 *  - the scheduler core signals it instead of evicting it (a SIGNAL
 *    decision, sn_sched_config preempt_signal): it keeps its GPUs, is no
 *    victim again, and its preemptor preempts nobody else meanwhile;
 *  - here it becomes "preempting": signalled at preempt_since_s with
 *    preempt_signal, deadline preempt_deadline_s = now + preempt_grace_s,
 *    one batch (job row, event "preempting"). Its agents read the signal and
 *    the deadline in the heartbeat answer ("preempt") and signal every rank;
 *  - it is evicted (requeued) at the first of: its next checkpoint report
 *    (CHECKPOINT; how "checkpoint", nothing lost since), a rank exiting
 *    with any status (RANK_EXIT; "exit": many jobs save and exit 0 on
 *    SIGTERM, so a 0 is not taken for the job's end; as Slurm's requeue
 *    preemption, a job that really finished within the grace runs again
 *    from its last checkpoint), or TIMER past the deadline ("deadline"). On an eviction the
 * preemptor is placed at once (sn_sched_try_place), as it would have been in the pass that
 * preempted, so a job earlier in the next pass's order cannot take the freed GPUs and make it
 * preempt again. A preemptor that starts elsewhere before its victims left (other GPUs freed first)
 * no longer needs them: the core's UNSIGNAL decision cancels their preemption (event
 * "preempt-cancelled"; they keep running). Their ranks had the signal, so until the old deadline a
 * rank exit still requeues the job (how "exit") instead of failing or completing it.
 *
 * Every eviction and requeue records the work it lost: the GPUs x the run's
 * time since its last checkpoint (since its start without one), in the job
 * (last_eviction), and in the counters by how (sn_preempt_evictions_total,
 * sn_preempt_lost_gpu_seconds_total).
 *
 * Cooperative drains (drain_grace_s > 0): a drain of a server or GPU
 * (ADMIN to draining, by an operator or by snd:health's rack escalation)
 * signals every running job with a GPU there the same way (by 0,
 * preempt_drain saying whose drain, deadline now + drain_grace_s), and
 * evicts it at the same first of checkpoint, rank exit or deadline, then
 * requeues it (event "requeued", the work lost recorded); after a drain by
 * snd:health (infrastructure) the requeue is expedited as after a failure.
 * The part becomes drained when its last job has left (control_sched.c).
 * A resume before then cancels the eviction of each such job no longer on
 * a draining part (event "preempt-cancelled", as a cancelled preemption).
 *
 * Expedited requeue (expedite_hold_s > 0): a job requeued because a GPU or
 * server under it failed, or evicted by a drain of snd:health, has its
 * GPUs on servers still up held for it (out of placement for everyone
 * else) for expedite_hold_s; before each pass it is tried first, on its
 * held GPUs and whatever else is free, by the placement rules
 * (sn_sched_try_place). Its hold ends when it starts, leaves the queue,
 * or the window passes.
 *
 * Invariants: n_preempting counts the running jobs with
 * preempt_deadline_s > 0, each marked leaving in the core; a GPU is held
 * (expedite_hold[g] = job id) only for a waiting job whose expedite_gpus
 * list it is in, and is then cordoned in the core.
 */
#include "control_int.h"

#include <math.h>

enum evict_how {
    HOW_CHECKPOINT,
    HOW_DEADLINE,
    HOW_EXIT,
    HOW_IMMEDIATE,
    HOW_INTERRUPTED,
    HOW_REQUEUED
};
static const char *const how_names[] = {"checkpoint", "deadline",    "exit",
                                        "immediate",  "interrupted", "requeued"};

const char *sn__control_evict_how_name(unsigned how)
{
    return how < sizeof(how_names) / sizeof(how_names[0]) ? how_names[how] : "?";
}

/* The preempting view's "drain": whose drain (NULL: not a drain). */
static const char *drain_name(uint8_t drain)
{
    return drain == SN_CONTROL_DRAIN_OPERATOR ? "operator"
           : drain == SN_CONTROL_DRAIN_HEALTH ? "health"
                                              : NULL;
}

static const char *signal_name(const struct sn_control *c)
{
    return c->cfg.preempt_signal[0] ? c->cfg.preempt_signal : "TERM";
}

/* GPU-seconds lost if j's run ended now: its GPUs x the time since the
 * run's last checkpoint (since its start without one in this run). */
double sn__control_lost_now(const struct sn_control *c, const struct sn_control_job *j)
{
    int64_t now = sn_control_now_s(c);
    if (!j->n_alloc || j->start_s <= 0 || now <= j->start_s)
        return 0;
    int64_t from = j->ckpt_path && j->ckpt_time_s >= j->start_s ? j->ckpt_time_s : j->start_s;
    return (double)j->n_alloc * (double)(now > from ? now - from : 0);
}

/* Records the eviction of j's run now (before its GPUs are released). */
static void record(struct sn_control *c, struct sn_control_job *j, enum evict_how how)
{
    double lost = sn__control_lost_now(c, j);
    j->evict_time_s = sn_control_now_s(c);
    j->evict_lost_gpu_s = lost;
    snprintf(j->evict_how, sizeof(j->evict_how), "%s", how_names[how]);
    c->evictions[how]++;
    c->evictions_lost_gpu_s[how] += lost;
}

void sn__control_evict_record(struct sn_control *c, struct sn_control_job *j, bool preempted,
                              bool operator_requeue)
{
    enum evict_how how = HOW_INTERRUPTED;
    if (j->preempt_deadline_s > 0 && c->evict_pending > 0)
        how = (enum evict_how)(c->evict_pending - 1);
    else if (preempted)
        how = HOW_IMMEDIATE;
    else if (operator_requeue)
        how = HOW_REQUEUED;
    record(c, j, how);
}

/* The job leaves its GPUs (any way): it is no longer preempting. */
void sn__control_preempt_end(struct sn_control *c, struct sn_control_job *j)
{
    if (j->preempt_deadline_s > 0 && c->n_preempting > 0)
        c->n_preempting--;
    j->preempt_since_s = j->preempt_deadline_s = j->preempt_by = 0;
    j->preempt_signalled_until_s = 0;
    j->preempt_drain = SN_CONTROL_DRAIN_NONE;
}

void sn__control_preempt_cancel(struct sn_control *c, struct sn_control_job *j, int64_t by)
{
    if (j->state != SN_CONTROL_JOB_RUNNING || j->preempt_deadline_s <= 0)
        return;
    j->preempt_signalled_until_s = j->preempt_deadline_s;
    j->preempt_deadline_s = 0; /* preempt_since_s and preempt_by kept for an exit's message */
    if (c->n_preempting > 0)
        c->n_preempting--;
    c->preempt_cancels++;
    j->updated_s = sn_control_now_s(c);
    char msg[300];
    snprintf(msg, sizeof(msg),
             "preemption cancelled: job %lld started elsewhere first; it keeps its GPUs (a "
             "rank exit on the signal still requeues it until %lld)",
             (long long)by, (long long)j->preempt_signalled_until_s);
    sn_control_job_rows(c, j, "preempt-cancelled", msg);
    sn_control_log(c, "job %lld: %s", (long long)j->id, msg);
}

/* Marks running j preempting with grace_s (the core already marked it
 * leaving) and writes its rows: event "preempting". by: the preemptor's
 * id (0: an operator's requeue or a drain, why then says which). */
static void signal_job(struct sn_control *c, struct sn_control_job *j, int64_t by, const char *why,
                       int64_t grace_s)
{
    if (j->state != SN_CONTROL_JOB_RUNNING || j->preempt_deadline_s > 0)
        return;
    int64_t now = sn_control_now_s(c);
    j->preempt_since_s = j->updated_s = now;
    j->preempt_deadline_s = now + grace_s;
    j->preempt_by = by;
    c->n_preempting++;
    c->preempt_signals++;
    char msg[400];
    if (by > 0)
        snprintf(msg, sizeof(msg),
                 "preempting for job %lld: SIG%s to every rank, evicted at its next checkpoint "
                 "or in %lld s",
                 (long long)by, signal_name(c), (long long)grace_s);
    else
        snprintf(msg, sizeof(msg),
                 "%.250s: SIG%s to every rank, evicted at its next checkpoint or in %lld s",
                 why ? why : "requeued", signal_name(c), (long long)grace_s);
    sn_control_job_rows(c, j, "preempting", msg);
    sn_control_log(c, "job %lld: %s", (long long)j->id, msg);
}

void sn__control_preempt_signal(struct sn_control *c, struct sn_control_job *j, int64_t by,
                                const char *why)
{
    signal_job(c, j, by, why, c->cfg.preempt_grace_s);
}

/* Evicts preempting j now (how): a preemption through the core, an
 * operator's requeue as REQUEUE_JOB does. */
static void evict(struct sn_control *c, struct sn_control_job *j, enum evict_how how)
{
    char why[300];
    int64_t now = sn_control_now_s(c);
    double lost = sn__control_lost_now(c, j);
    const char *what = how == HOW_CHECKPOINT ? "after its checkpoint"
                       : how == HOW_EXIT     ? "after a rank exited"
                                             : "at its deadline";
    if (j->preempt_by > 0)
        snprintf(why, sizeof(why),
                 "preempted by job %lld %s, %lld s after the signal (%.0f GPU-s lost)",
                 (long long)j->preempt_by, what, (long long)(now - j->preempt_since_s), lost);
    else
        snprintf(why, sizeof(why), "%s %s, %lld s after the signal (%.0f GPU-s lost)",
                 j->preempt_drain ? "drained: requeued" : "requeued", what,
                 (long long)(now - j->preempt_since_s), lost);
    c->evict_pending = (int)how + 1;
    c->evict_expedite = j->preempt_drain == SN_CONTROL_DRAIN_HEALTH;
    int64_t by = j->preempt_by; /* the eviction clears it */
    bool ok;
    if (j->preempt_by > 0) {
        ok = sn__control_evict(c, j, why);
    } else {
        c->interrupt_event = "requeued";
        ok = sn_control_requeue_lost(c, j, why);
        c->interrupt_event = NULL;
    }
    c->evict_pending = 0;
    c->evict_expedite = false;
    if (!ok) {
        sn_control_log(c, "job %lld: eviction refused by the core", (long long)j->id);
        return;
    }
    sn_control_log(c, "job %lld: %s", (long long)j->id, why);
    /* The preemptor takes the freed GPUs now, as it would have in the pass
     * that preempted (else a job earlier in the next pass's order could). */
    struct sn_control_job *p = by > 0 ? sn_control_job_get(c, by) : NULL;
    if (p && (p->state == SN_CONTROL_JOB_PENDING || p->state == SN_CONTROL_JOB_REQUEUED) &&
        !p->held && p->sched_id != SN_NONE &&
        sn_sched_try_place(c->sched, p->sched_id, (double)c->clock.wall_ms / 1000.0))
        sn__control_apply_decisions(c, (double)c->clock.wall_ms / 1000.0);
}

void sn__control_preempt_checkpoint(struct sn_control *c, struct sn_control_job *j)
{
    if (j->state == SN_CONTROL_JOB_RUNNING && j->preempt_deadline_s > 0)
        evict(c, j, HOW_CHECKPOINT);
}

bool sn__control_preempt_exit(struct sn_control *c, struct sn_control_job *j)
{
    if (j->state == SN_CONTROL_JOB_RUNNING && j->preempt_deadline_s <= 0 &&
        j->preempt_signalled_until_s >= sn_control_now_s(c)) {
        /* Its preemption was cancelled, but the rank exited on the signal. */
        j->preempt_deadline_s = j->preempt_signalled_until_s;
        c->n_preempting++;
    }
    if (j->state != SN_CONTROL_JOB_RUNNING || j->preempt_deadline_s <= 0)
        return false;
    evict(c, j, HOW_EXIT);
    return j->state != SN_CONTROL_JOB_RUNNING;
}

void sn__control_preempt_timer(struct sn_control *c)
{
    int64_t now = sn_control_now_s(c);
    for (int64_t id = 1; id < c->next_job_id && c->n_preempting; id++) {
        struct sn_control_job *j = sn_control_job_get(c, id);
        if (j && j->state == SN_CONTROL_JOB_RUNNING && j->preempt_deadline_s > 0 &&
            now >= j->preempt_deadline_s)
            evict(c, j, HOW_DEADLINE);
    }
}

/* REQUEUE_JOB with a grace: the job is signalled, not stopped. */
bool sn__control_preempt_requeue(struct sn_control *c, struct sn_control_job *j, const char *msg)
{
    if (c->cfg.preempt_grace_s <= 0 || j->state != SN_CONTROL_JOB_RUNNING || j->sched_id == SN_NONE)
        return false;
    if (j->preempt_deadline_s > 0)
        return true; /* already leaving: its deadline stands */
    sn_sched_set_leaving(c->sched, j->sched_id, SN_NONE);
    sn__control_preempt_signal(c, j, 0, msg);
    return true;
}

/* A drain of a server or GPU (is_node, id) by actor: every running job
 * with a GPU there is signalled with drain_grace_s (one already leaving
 * keeps its deadline). */
void sn__control_drain_signal(struct sn_control *c, bool is_node, uint32_t id, const char *actor)
{
    const struct sn_model *m = c->model;
    if (c->cfg.drain_grace_s <= 0 || !c->sched)
        return;
    uint32_t first = is_node ? m->server_first_gpu[id] : id;
    uint32_t count = is_node ? sn_model_server_spec(m, id)->gpus : 1;
    const struct sn_control_admin *a = is_node ? &c->nodes[id] : &c->gpus[id];
    bool health = actor && strcmp(actor, "snd:health") == 0;
    char name[64], why[300];
    if (is_node)
        sn_model_server_name(m, id, name, sizeof(name));
    else
        sn_model_gpu_name(m, id, name, sizeof(name));
    snprintf(why, sizeof(why), "draining %s %s by %.40s (%.160s)", is_node ? "node" : "gpu", name,
             actor ? actor : "?", a->reason ? a->reason : "");
    for (uint32_t g = first; g < first + count; g++) {
        uint32_t sid = sn_sched_gpu_owner(c->sched, g);
        struct sn_control_job *j = sid != SN_NONE && sid < c->sched_jobs_cap
                                       ? sn_control_job_get(c, c->sched_jobs[sid])
                                       : NULL;
        if (!j || j->state != SN_CONTROL_JOB_RUNNING || j->preempt_deadline_s > 0 ||
            j->sched_id == SN_NONE)
            continue;
        sn_sched_set_leaving(c->sched, j->sched_id, SN_NONE);
        j->preempt_drain = health ? SN_CONTROL_DRAIN_HEALTH : SN_CONTROL_DRAIN_OPERATOR;
        signal_job(c, j, 0, why, c->cfg.drain_grace_s);
        c->drain_signals++;
    }
}

/* Whether any GPU of j is draining (its own state or its server's). */
static bool on_draining(const struct sn_control *c, const struct sn_control_job *j)
{
    for (uint32_t i = 0; i < j->n_alloc; i++) {
        uint32_t g = j->alloc[i];
        if (c->gpus[g].state == SN_CONTROL_ADMIN_DRAINING ||
            c->nodes[c->model->gpu_server[g]].state == SN_CONTROL_ADMIN_DRAINING)
            return true;
    }
    return false;
}

/* A drain of (is_node, id) ended before its jobs left (resumed or
 * cordoned): a job signalled for a drain and on no draining part any more
 * keeps running; as after a cancelled preemption, a rank exit on the
 * signal still requeues it until the old deadline. */
void sn__control_drain_cancel(struct sn_control *c, bool is_node, uint32_t id)
{
    const struct sn_model *m = c->model;
    uint32_t first = is_node ? m->server_first_gpu[id] : id;
    uint32_t count = is_node ? sn_model_server_spec(m, id)->gpus : 1;
    for (uint32_t g = first; g < first + count && c->n_preempting && c->sched; g++) {
        uint32_t sid = sn_sched_gpu_owner(c->sched, g);
        struct sn_control_job *j = sid != SN_NONE && sid < c->sched_jobs_cap
                                       ? sn_control_job_get(c, c->sched_jobs[sid])
                                       : NULL;
        if (!j || j->state != SN_CONTROL_JOB_RUNNING || j->preempt_deadline_s <= 0 ||
            !j->preempt_drain || on_draining(c, j))
            continue;
        sn_sched_clear_leaving(c->sched, j->sched_id);
        j->preempt_signalled_until_s = j->preempt_deadline_s;
        j->preempt_deadline_s = 0;
        j->preempt_drain = SN_CONTROL_DRAIN_NONE;
        c->n_preempting--;
        c->preempt_cancels++;
        j->updated_s = sn_control_now_s(c);
        char name[64], msg[300];
        if (is_node)
            sn_model_server_name(m, id, name, sizeof(name));
        else
            sn_model_gpu_name(m, id, name, sizeof(name));
        snprintf(msg, sizeof(msg),
                 "eviction cancelled: the drain of %s ended; it keeps its GPUs (a rank exit on "
                 "the signal still requeues it until %lld)",
                 name, (long long)j->preempt_signalled_until_s);
        sn_control_job_rows(c, j, "preempt-cancelled", msg);
        sn_control_log(c, "job %lld: %s", (long long)j->id, msg);
    }
}

/* After a restore: the core learns which running jobs were signalled. */
void sn__control_preempt_restore(struct sn_control *c)
{
    c->n_preempting = 0;
    for (int64_t id = 1; id < c->next_job_id; id++) {
        struct sn_control_job *j = sn_control_job_get(c, id);
        if (!j || j->state != SN_CONTROL_JOB_RUNNING || j->preempt_deadline_s <= 0 ||
            j->sched_id == SN_NONE)
            continue;
        const struct sn_control_job *p =
            j->preempt_by > 0 ? sn_control_job_get(c, j->preempt_by) : NULL;
        sn_sched_set_leaving(c->sched, j->sched_id, p ? p->sched_id : SN_NONE);
        c->n_preempting++;
    }
}

/* ---- expedited requeue ------------------------------------------------------ */

static void hold_release(struct sn_control *c, struct sn_control_job *j)
{
    for (uint32_t i = 0; i < j->n_expedite; i++) {
        uint32_t g = j->expedite_gpus[i];
        if (c->expedite_hold && c->expedite_hold[g] == j->id) {
            c->expedite_hold[g] = 0;
            sn__control_gpu_recheck(c, g);
        }
    }
    free(j->expedite_gpus);
    j->expedite_gpus = NULL;
    j->n_expedite = 0;
    if (j->expedite_until_s && c->n_expedited)
        c->n_expedited--;
    j->expedite_until_s = 0;
}

void sn__control_expedite(struct sn_control *c, struct sn_control_job *j)
{
    const struct sn_model *m = c->model;
    if (c->cfg.expedite_hold_s <= 0 || !j->n_alloc || j->expedite_until_s)
        return;
    if (!c->expedite_hold &&
        !(c->expedite_hold = calloc(m->n_gpus ? m->n_gpus : 1, sizeof(int64_t))))
        return;
    uint32_t *keep = malloc(j->n_alloc * sizeof(*keep)), n = 0;
    if (!keep)
        return;
    for (uint32_t i = 0; i < j->n_alloc; i++) {
        uint32_t g = j->alloc[i], s = m->gpu_server[g];
        if (c->nodes[s].state != SN_CONTROL_ADMIN_UP || c->gpus[g].state != SN_CONTROL_ADMIN_UP ||
            sn_sched_gpu_down(c->sched, g) || c->expedite_hold[g])
            continue; /* the failed part, or not healthy: not held */
        keep[n++] = g;
    }
    j->expedite_gpus = keep;
    j->n_expedite = n;
    j->expedite_until_s = sn_control_now_s(c) + c->cfg.expedite_hold_s;
    c->n_expedited++;
    for (uint32_t i = 0; i < n; i++) {
        c->expedite_hold[keep[i]] = j->id;
        sn__control_gpu_recheck(c, keep[i]); /* cordoned for everyone else */
    }
}

bool sn__control_expedite_held(const struct sn_control *c, uint32_t g)
{
    return c->expedite_hold && c->expedite_hold[g] != 0;
}

/* Before a pass: expedited jobs first, on their held GPUs; holds end. */
void sn__control_expedite_pass(struct sn_control *c)
{
    int64_t now = sn_control_now_s(c);
    for (int64_t id = 1; id < c->next_job_id && c->n_expedited; id++) {
        struct sn_control_job *j = sn_control_job_get(c, id);
        if (!j || !j->expedite_until_s)
            continue;
        bool waiting = j->state == SN_CONTROL_JOB_REQUEUED && !j->held && j->sched_id != SN_NONE;
        if (!waiting || now >= j->expedite_until_s) {
            hold_release(c, j);
            continue;
        }
        for (uint32_t i = 0; i < j->n_expedite; i++)
            if (c->expedite_hold[j->expedite_gpus[i]] == j->id) {
                c->expedite_hold[j->expedite_gpus[i]] = 0;
                sn__control_gpu_recheck(c, j->expedite_gpus[i]);
            }
        bool placed = sn_sched_try_place(c->sched, j->sched_id, (double)c->clock.wall_ms / 1000.0);
        if (placed) {
            sn__control_apply_decisions(c, (double)c->clock.wall_ms / 1000.0);
            hold_release(c, j);
            continue;
        }
        for (uint32_t i = 0; i < j->n_expedite; i++) {
            uint32_t g = j->expedite_gpus[i];
            if (!c->expedite_hold[g]) {
                c->expedite_hold[g] = j->id;
                sn__control_gpu_recheck(c, g);
            }
        }
    }
}

/* The job leaves the queue or the control: its hold ends. */
void sn__control_expedite_end(struct sn_control *c, struct sn_control_job *j)
{
    if (j->expedite_until_s)
        hold_release(c, j);
}

/* ---- views ------------------------------------------------------------------------- */

void sn_control_preempt_assignment(const struct sn_control *c, const struct sn_control_job *j,
                                   json_t *o)
{
    if (j->preempt_deadline_s > 0)
        json_object_set_new(o, "preempt",
                            json_pack("{s:s,s:I}", "signal", signal_name(c), "deadline_s",
                                      (json_int_t)j->preempt_deadline_s));
}

void sn_control_preempt_json(const struct sn_control *c, const struct sn_control_job *j, json_t *o)
{
    json_object_set_new(o, "preempting",
                        j->preempt_deadline_s > 0
                            ? json_pack("{s:I,s:I,s:I,s:s,s:s?}", "since_s",
                                        (json_int_t)j->preempt_since_s, "deadline_s",
                                        (json_int_t)j->preempt_deadline_s, "by",
                                        (json_int_t)j->preempt_by, "signal", signal_name(c),
                                        "drain", drain_name(j->preempt_drain))
                            : json_null());
    json_object_set_new(o, "last_eviction",
                        j->evict_time_s > 0
                            ? json_pack("{s:I,s:f,s:s}", "time_s", (json_int_t)j->evict_time_s,
                                        "lost_gpu_s", j->evict_lost_gpu_s, "how", j->evict_how)
                            : json_null());
    if (j->expedite_until_s > 0)
        json_object_set_new(o, "expedited_until_s", json_integer(j->expedite_until_s));
}

void sn__control_preempt_run_text(const struct sn_control_job *j, json_t *run)
{
    if (j->preempt_deadline_s > 0)
        json_object_set_new(run, "preempt",
                            json_pack("{s:I,s:I,s:I,s:i}", "since_s",
                                      (json_int_t)j->preempt_since_s, "deadline_s",
                                      (json_int_t)j->preempt_deadline_s, "by",
                                      (json_int_t)j->preempt_by, "drain", (int)j->preempt_drain));
    if (j->evict_time_s > 0)
        json_object_set_new(run, "last_eviction",
                            json_pack("{s:I,s:f,s:s}", "time_s", (json_int_t)j->evict_time_s,
                                      "lost_gpu_s", j->evict_lost_gpu_s, "how", j->evict_how));
}

void sn__control_preempt_load(struct sn_control_job *j, const json_t *run)
{
    const json_t *p = json_object_get(run, "preempt");
    j->preempt_since_s = json_integer_value(json_object_get(p, "since_s"));
    j->preempt_deadline_s = json_integer_value(json_object_get(p, "deadline_s"));
    j->preempt_by = json_integer_value(json_object_get(p, "by"));
    json_int_t drain = json_integer_value(json_object_get(p, "drain"));
    j->preempt_drain = drain == SN_CONTROL_DRAIN_OPERATOR || drain == SN_CONTROL_DRAIN_HEALTH
                           ? (uint8_t)drain
                           : SN_CONTROL_DRAIN_NONE;
    const json_t *e = json_object_get(run, "last_eviction");
    j->evict_time_s = json_integer_value(json_object_get(e, "time_s"));
    double lost = json_number_value(json_object_get(e, "lost_gpu_s"));
    j->evict_lost_gpu_s = isfinite(lost) && lost > 0 ? lost : 0;
    const char *how = json_string_value(json_object_get(e, "how"));
    snprintf(j->evict_how, sizeof(j->evict_how), "%s", how ? how : "");
}
