/*
 * The simulator's control engine (`sn sim --engine control`): the
 * workload, failures and checkpoints of a run are turned into the events
 * snd feeds lib/control (sn/control.h), applied with virtual time, so
 * pools, quotas, job shapes, partition safety, spares, checkpoints and
 * heartbeat loss follow the daemon's rules, not a copy of them.
 *
 * What snd does, and the event it becomes here:
 *  - a submission: the job record snd's submit route stores (its spec as
 *    JSON: name, gpus, group_gpus, time_limit_s, preemptible, pool,
 *    priority_class), inserted, durable at once (no store), then SUBMIT;
 *    one PASS after all events of a timestamp when one of them poked the
 *    control (sched_dirty), as snd's pass after a burst of requests;
 *  - a run's end: RANK_EXIT with status 0 from every rank when its work is
 *    done (the job completes when all ranks exited 0); a software fault is
 *    rank 0 exiting with status 1 (the job fails, as in snd);
 *  - checkpoints: CHECKPOINT each tau of work (tau fixed, or the Daly
 *    interval the control computed at start: ckpt_interval_s);
 *  - a GPU failure: ADMIN down on the GPU, ADMIN up at its repair;
 *  - a host or network failure: the server's agent goes silent. Its jobs'
 *    runs stop making progress at once; lib/control finds out only through
 *    TIMER events (snd's timer), declares it lost after heartbeat_timeout_s
 *    plus partition_window_s, or fences when too many go silent together;
 *    at the repair the agent heartbeats again and reports the ranks it lost
 *    with their host (status 255 "infrastructure-lost:"), which requeues
 *    a run the control still thought alive.
 *
 * Heartbeats are cheap to fake: lib/control only compares last_seen_ms
 * with the timer's clock, so the live agents' heartbeats are applied just
 * before each TIMER event, and TIMER events run (every heartbeat_timeout_s
 * / 3) only while an agent is silent and the control has not settled it
 * (not yet declared down, or fenced). A failure-free run applies none.
 *
 * The control's effects are read, then dropped (no store): the job rows
 * of each batch say which jobs changed, and a job's alloc_seq tells a new
 * run from the one the simulator follows. A fatal effect is an error.
 * A job that completed or failed is removed from the control's table
 * (snd keeps it): nothing in a simulation reads it again (no dependencies,
 * arrays, idempotency keys or queries), and lib/control's settle steps
 * scan every job in the table after each job's end, which made a replay
 * quadratic in its jobs (Helios, 125,303 jobs: over 10 minutes, 45 s with
 * the removal).
 * The tallies and the result are the sched engine's (sim_int.h).
 *
 * Cooperative preemption (preempt_grace_s > 0): a victim's "preempting"
 * row arms a TIMER at its deadline (the heartbeats of the live agents
 * first, as snd's timer) and, with probability preempt_ckpt_p (a random
 * stream of its own, so the failures drawn stay the same as without),
 * a just-in-time CHECKPOINT ckpt_cost_s after the signal when that is
 * within the grace: it keeps the run's progress at the signal, and the
 * control evicts the job on it. Work since then, or since the last
 * interval checkpoint without one, is lost.
 *
 * Switch-tray failures (tray_failures_per_sn_hour > 0; their own random
 * stream): each picks a supernode uniformly and degrades its NVLink
 * domain for tray_repair_s. The engine then applies a HEALTH event with a
 * report holding one nvlink-domain-degraded finding per degraded domain
 * (as snd's health pass would after nvswitch-down), and another when a
 * repair leaves a domain whole: lib/control/health.c limits and lifts the
 * single-server limit, as in snd. degraded_gpu_h sums the domains' GPUs
 * over their degraded time.
 *
 * Slow GPUs are drawn as the sched engine draws them (their own random
 * stream); once found, health exclusion cordons them as snd:health does
 * (on_slow).
 *
 * Preflight (preflight_mode > 0): a share of the jobs opt in through
 * their spec's preflight (quick or full; drawn at submission from the
 * preflight stream). lib/control holds an opted-in run's ranks (its
 * preflight wait); the run's GPUs are busy from its start, its work
 * begins preflight_s later (then the restart), and at that time the
 * agent of each of its live servers reports (PREFLIGHT): its ranks on a
 * slow GPU, each found with probability preflight_detect_p (same stream),
 * fail; else it passes. On a failure the control cordons the GPUs as
 * snd:preflight and requeues the job (counted in preflight_fails, not in
 * interruptions); the cordon is lifted when the GPU is replaced, as
 * health's. A silent agent never reports: the host's loss requeues the
 * job, as in snd. Not modelled here (the sched engine has them): re-rating of
 * jobs whose GPUs turn slow or whose uplinks load changes (a run's rate is
 * set at its start), the sched engine's move of a job off a slow GPU at
 * its next checkpoint (snd does not move it), and the estimate's refresh
 * at a requeue (time_limit_s is the job's own).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <sn/control.h>
#include <sn/health.h>
#include <sn/sim.h>

#include "sim_int.h"

#define CLOCK_BASE_MS 1000000000LL /* virtual time 0: lib/control reads 0 as "never" */
#define MAX_CLASSES 256            /* distinct trace priorities (priority classes) */

enum { EV_CKPT = 100, EV_TIMER, EV_JIT, EV_DEADLINE, EV_PREFLIGHT, EV_TRAY, EV_TRAY_FIX };
/* (beside sim_int.h's kinds) */

struct csim {
    struct sim x; /* x.s is the control's core */
    struct sn_control *ctl;
    struct sn_effects fx;
    uint32_t *wid;      /* by control job id: its workload index */
    int64_t *cid;       /* by workload index: its control job id, 0 = none yet */
    uint64_t *run_seq;  /* by workload index: alloc_seq of the run followed, 0 = none */
    uint8_t *stalled;   /* by workload index: its run lost a host and makes no progress */
    uint8_t *host_down; /* by server: failures keeping its agent silent */
    uint8_t *gpu_down;  /* by GPU: failures keeping it down */
    uint32_t n_hosts_down, failed;
    bool timer_armed;
    /* Cooperative preemption: by workload index, the progress a
     * just-in-time checkpoint keeps (< 0: none in this run) and the
     * progress at the signal; the draws' own stream. */
    double *jit_saved, *sig_progress;
    struct sn_rng jit_rng;
    struct sn_rng slow_rng; /* slow GPUs: their own stream (on_slow) */
    struct sn_rng pf_rng;   /* preflight: opt-in and detection draws */
    uint8_t *pf_wait;       /* by workload index: its run waits for its preflight */
    struct sn_rng tray_rng; /* switch-tray failures */
    uint32_t *trays_down;   /* by supernode: tray failures not yet repaired */
    double *degraded_since; /* by supernode: when its domain was degraded */
    double degraded_gpu_s;
    uint64_t tray_failures;
    int32_t classes[MAX_CLASSES];
    uint32_t n_classes;
    uint32_t capped; /* power caps: GPUs capped since capped_at (s) */
    double capped_at;
};

static struct sn_control_clock clock_at(double t)
{
    int64_t ms = CLOCK_BASE_MS + (int64_t)llround(t * 1000);
    return (struct sn_control_clock){ms, ms};
}

static double period_s(const struct csim *cs)
{
    double p = cs->x.cfg->heartbeat_timeout_s / 3.0;
    return p >= 1 ? p : 1;
}

/* ---- following the control's runs ----------------------------------------- */

/* Pushes the end and the next checkpoint of workload job i's run. */
static enum sn_err schedule_run(struct csim *cs, uint32_t i, struct sn_error *err)
{
    struct sim *x = &cs->x;
    struct sim_job *j = &x->jobs[i];
    double from = fmax(j->seg_start, x->now), p = sn__sim_progress_at(j, x->now);
    enum sn_err rc =
        sn__sim_push(x, from + (j->remaining - p) / j->rate_eff, EV_FINISH, i, j->gen, 0, err);
    if (rc != SN_OK || !(j->tau > 0))
        return rc;
    double k = floor(p / j->tau + 1e-9) + 1;
    if (k * j->tau >= j->remaining || k > UINT32_MAX)
        return SN_OK;
    return sn__sim_push(x, from + (k * j->tau - p) / j->rate_eff, EV_CKPT, i, j->gen, (uint32_t)k,
                        err);
}

/* The run stops making progress now (a host under it failed). */
static void stall(struct csim *cs, uint32_t i)
{
    struct sim_job *j = &cs->x.jobs[i];
    if (cs->stalled[i])
        return;
    if (cs->pf_wait[i]) /* its preflight's time so far */
        cs->x.r->preflight_gpu_h += cs->x.w->jobs[i].gpus * (cs->x.now - j->run_start) / 3600;
    cs->pf_wait[i] = 0;
    j->progress = sn__sim_progress_at(j, cs->x.now);
    j->seg_start = cs->x.now;
    j->rate_eff = 0;
    j->gen++;
    cs->stalled[i] = 1;
}

static bool on_dead_host(const struct csim *cs, const struct sn_control_job *j)
{
    for (uint32_t k = 0; k < j->n_alloc; k++)
        if (cs->host_down[cs->x.m->gpu_server[j->alloc[k]]])
            return true;
    return false;
}

/* A check's duration: the configured one, else quick 60 s, full 300 s. */
static double preflight_s(const struct sn_sim_config *c, bool full)
{
    return c->preflight_s > 0 ? c->preflight_s : full ? 300 : 60;
}

static enum sn_err start_run(struct csim *cs, uint32_t i, const struct sn_control_job *cj,
                             struct sn_error *err)
{
    struct sim *x = &cs->x;
    struct sim_job *j = &x->jobs[i];
    const struct sn_sim_job *wj = &x->w->jobs[i];
    if (isnan(x->queue_s[i])) {
        x->queue_s[i] = x->now - wj->submit_s;
        j->first_start = x->now;
        enum sn_err rc = sn__sim_note_first_servers(x, cj->sched_id, i, err);
        if (rc != SN_OK)
            return rc;
    }
    j->run_start = x->now;
    j->progress = 0;
    cs->jit_saved[i] = -1;
    j->seg_start = x->now + (j->runs++ > 0 ? x->cfg->restart_s : 0);
    j->tau = x->cfg->ckpt == SN_CKPT_YOUNG_DALY && cj->ckpt_interval_s > 0
                 ? cj->ckpt_interval_s
                 : sn__sim_job_tau(x, wj->gpus);
    j->rate_eff = sn__sim_eff(j, sn__sim_job_rate(x, cj->sched_id, i), x->cfg->ckpt_cost_s);
    j->gen++;
    cs->run_seq[i] = cj->alloc_seq;
    cs->stalled[i] = 0;
    struct sn_job_info info;
    sn_sched_job_info(x->s, cj->sched_id, &info);
    x->r->groups_split += info.groups_split;
    x->r->groups_cross += info.groups_cross_sn;
    x->r->decisions++;
    cs->pf_wait[i] = 0;
    if (on_dead_host(cs, cj)) { /* placed on a server whose agent is gone */
        stall(cs, i);
        return SN_OK;
    }
    if (cj->preflight_wait) { /* the check first, then the restart and the work */
        double pf = preflight_s(x->cfg, cj->preflight_full);
        cs->pf_wait[i] = 1;
        j->seg_start += pf;
        x->r->preflights++;
        return sn__sim_push(x, x->now + pf, EV_PREFLIGHT, i, j->gen, 0, err);
    }
    return schedule_run(cs, i, err);
}

/* The run ended unfinished: the work up to its last checkpoint is kept. */
static void stop_run(struct csim *cs, uint32_t i)
{
    struct sim *x = &cs->x;
    struct sim_job *j = &x->jobs[i];
    double p = sn__sim_progress_at(j, x->now);
    double saved = j->tau > 0 ? floor(p / j->tau + 1e-9) * j->tau : 0;
    if (cs->jit_saved[i] > saved && cs->jit_saved[i] <= p)
        saved = cs->jit_saved[i]; /* a just-in-time checkpoint on the signal */
    cs->jit_saved[i] = -1;
    sn_goodput_add_run(&x->gp, x->w->jobs[i].gpus, x->now - j->run_start, saved, true);
    if (cs->pf_wait[i])
        x->r->preflight_gpu_h += x->w->jobs[i].gpus * (x->now - j->run_start) / 3600;
    cs->pf_wait[i] = 0;
    j->remaining -= saved;
    j->gen++;
    cs->stalled[i] = 0;
}

static void finish_run(struct csim *cs, uint32_t i)
{
    struct sim *x = &cs->x;
    struct sim_job *j = &x->jobs[i];
    const struct sn_sim_job *wj = &x->w->jobs[i];
    sn_goodput_add_run(&x->gp, wj->gpus, x->now - j->run_start, j->remaining, false);
    j->remaining = 0;
    j->gen++;
    x->jct_s[i] = x->now - wj->submit_s;
    x->done++;
    x->r->makespan_s = x->now;
}

/* Job id changed in the control (a job row of a batch): follow its run. */
static enum sn_err sync_job(struct csim *cs, int64_t id, const char *event, struct sn_error *err)
{
    struct sim *x = &cs->x;
    const struct sn_control_job *cj = sn_control_job_get(cs->ctl, id);
    if (!cj || id > (int64_t)x->w->n_jobs)
        return SN_OK;
    uint32_t i = cs->wid[id];
    bool was = cs->run_seq[i] != 0;
    if (cj->state == SN_CONTROL_JOB_RUNNING && was && cs->run_seq[i] == cj->alloc_seq)
        return SN_OK;
    /* timeout ends the run as failed does (the simulator does not enforce
     * time limits; this keeps the two in step if it ever does). */
    bool failed = cj->state == SN_CONTROL_JOB_FAILED || cj->state == SN_CONTROL_JOB_TIMEOUT;
    if (was && cj->state != SN_CONTROL_JOB_COMPLETED && !failed) {
        stop_run(cs, i);
        /* A cooperative eviction at a checkpoint comes with the
         * checkpoint's rows first: the job's detail says it was preempted. */
        bool preempted = (event && strcmp(event, "preempted") == 0) ||
                         (cj->state == SN_CONTROL_JOB_REQUEUED && cj->detail &&
                          strncmp(cj->detail, "preempted", 9) == 0);
        /* preflight-fail, preflight-refused, or a preflight's timeout. */
        bool preflight = event && strncmp(event, "preflight", 9) == 0;
        x->r->preemptions += preempted;
        x->r->interruptions += !preempted && !preflight;
        x->r->preflight_fails += preflight;
        x->r->replacements += event && strcmp(event, "replaced") == 0;
    }
    cs->run_seq[i] = 0;
    if (cj->state == SN_CONTROL_JOB_RUNNING)
        return start_run(cs, i, cj, err);
    if (was && cj->state == SN_CONTROL_JOB_COMPLETED) {
        finish_run(cs, i);
    } else if (was && failed) {
        struct sim_job *j = &x->jobs[i];
        sn_goodput_add_run(&x->gp, x->w->jobs[i].gpus, x->now - j->run_start, 0, true);
        j->gen++;
        cs->failed++;
    }
    /* Ended: out of the table (see the top). */
    if (was && (cj->state == SN_CONTROL_JOB_COMPLETED || failed))
        sn_control_job_remove(cs->ctl, id);
    return SN_OK;
}

/* Job id was signalled (its "preempting" row): its deadline's TIMER, and
 * maybe a just-in-time checkpoint within the grace. */
static enum sn_err on_signal(struct csim *cs, int64_t id, struct sn_error *err)
{
    struct sim *x = &cs->x;
    const struct sn_control_job *cj = sn_control_job_get(cs->ctl, id);
    if (!cj || id > (int64_t)x->w->n_jobs || cj->preempt_deadline_s <= 0)
        return SN_OK;
    uint32_t i = cs->wid[id];
    if (!cs->run_seq[i])
        return SN_OK;
    struct sim_job *j = &x->jobs[i];
    double grace = x->cfg->preempt_grace_s;
    enum sn_err rc = sn__sim_push(x, x->now + grace, EV_DEADLINE, i, j->gen, 0, err);
    double u = sn_rng_uniform(&cs->jit_rng); /* drawn for every signal: same stream */
    if (rc != SN_OK || cs->stalled[i] || !(u < x->cfg->preempt_ckpt_p) ||
        !(x->cfg->ckpt_cost_s < grace))
        return rc;
    cs->sig_progress[i] = sn__sim_progress_at(j, x->now);
    return sn__sim_push(x, x->now + x->cfg->ckpt_cost_s, EV_JIT, i, j->gen, 0, err);
}

/* Reads the effects of one event (job rows: which jobs changed), then
 * drops them. */
static enum sn_err sync_effects(struct csim *cs, struct sn_error *err)
{
    enum sn_err rc = SN_OK;
    for (size_t b = 0; b < cs->fx.n_batches && rc == SN_OK; b++) {
        const struct sn_effect_batch *batch = &cs->fx.batches[b];
        const char *event = NULL;
        for (size_t k = 0; k < batch->n; k++)
            if (batch->rows[k].kind == SN_STORE_ADD_EVENT)
                event = batch->rows[k].text[0];
        for (size_t k = 0; k < batch->n && rc == SN_OK; k++)
            if (batch->rows[k].kind == SN_STORE_PUT_JOB)
                rc = event && strcmp(event, "preempting") == 0
                         ? on_signal(cs, batch->rows[k].num[0], err)
                         : sync_job(cs, batch->rows[k].num[0], event, err);
    }
    sn_effects_reset(&cs->fx);
    return rc;
}

/* Test mode (check_invariants): the control's and its core's invariants,
 * and every run the simulator follows is the control's current run. */
static enum sn_err check(const struct csim *cs, enum sn_control_event_kind kind,
                         struct sn_error *err)
{
    struct sn_error local = {0};
    if (sn_control_verify(cs->ctl, &local) != SN_OK ||
        sn_sched_check_invariants(cs->ctl->sched, &local) != SN_OK ||
        sn_control_power_caps_check(cs->ctl, &local) != SN_OK)
        return sn_error_set(err, SN_ERR_INTERNAL, "simulation: after %s at %.3f s: %s",
                            sn_control_event_name(kind), cs->x.now, local.message);
    for (uint32_t i = 0; i < cs->x.next_submit; i++) {
        const struct sn_control_job *cj =
            cs->cid[i] ? sn_control_job_get(cs->ctl, cs->cid[i]) : NULL;
        bool followed = cs->run_seq[i] != 0;
        bool running = cj && cj->state == SN_CONTROL_JOB_RUNNING;
        if (followed != running || (running && cj->alloc_seq != cs->run_seq[i]))
            return sn_error_set(err, SN_ERR_INTERNAL,
                                "simulation: after %s at %.3f s: job w%u is %s in the control "
                                "(run of batch %llu), the simulator follows %s (batch %llu)",
                                sn_control_event_name(kind), cs->x.now, i,
                                cj ? sn_control_job_state_name(cj->state) : "gone",
                                running ? (unsigned long long)cj->alloc_seq : 0ULL,
                                followed ? "a run" : "none", (unsigned long long)cs->run_seq[i]);
    }
    return SN_OK;
}

static enum sn_err apply(struct csim *cs, struct sn_control_event ev, struct sn_error *err)
{
    struct sn_control_clock now = clock_at(cs->x.now);
    struct sn_error local = {0};
    enum sn_err rc = sn_control_apply(cs->ctl, &ev, &now, &cs->fx, &local);
    cs->x.s = cs->ctl->sched;
    if (cs->fx.fatal) {
        sn_effects_reset(&cs->fx);
        return sn_error_set(err, SN_ERR_NOMEM,
                            "simulation: lib/control failed a rule (out of "
                            "memory) applying %s",
                            sn_control_event_name(ev.kind));
    }
    enum sn_err src = sync_effects(cs, err);
    if (rc != SN_OK)
        return sn_error_set(err, rc, "simulation: lib/control refused %s at %.3f s: %s",
                            sn_control_event_name(ev.kind), cs->x.now, local.message);
    if (src == SN_OK && cs->x.cfg->check_invariants)
        src = check(cs, ev.kind, err);
    if (cs->x.cfg->power_caps) { /* GPU-hours under a cap, piecewise constant */
        cs->x.r->power_capped_gpu_h += cs->capped * (cs->x.now - cs->capped_at) / 3600;
        cs->capped = sn_control_power_capped_gpus(cs->ctl);
        cs->capped_at = cs->x.now;
    }
    return src;
}

/* ---- setup ------------------------------------------------------------------ */

static enum sn_err put_named(struct sn_control_named **list, uint32_t *n, const char *name,
                             json_t *doc, struct sn_error *err)
{
    if (!doc)
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory");
    enum sn_err rc = sn_control_named_put(list, n, name, doc, err);
    if (rc != SN_OK)
        json_decref(doc);
    return rc;
}

/* Priority classes: one per distinct trace priority, every one
 * preemptible (the sched engine's jobs all are). */
static enum sn_err make_classes(struct csim *cs, struct sn_error *err)
{
    const struct sn_sim_workload *w = cs->x.w;
    for (uint32_t i = 0; i < w->n_jobs; i++) {
        bool seen = false;
        for (uint32_t k = 0; k < cs->n_classes && !seen; k++)
            seen = cs->classes[k] == w->jobs[i].priority;
        if (seen)
            continue;
        if (cs->n_classes == MAX_CLASSES)
            return sn_error_set(err, SN_ERR_LIMIT,
                                "simulation: more than %u distinct job priorities for the "
                                "control engine's priority classes",
                                MAX_CLASSES);
        int32_t p = w->jobs[i].priority;
        cs->classes[cs->n_classes++] = p;
        char name[32];
        snprintf(name, sizeof(name), "p%d", (int)p);
        enum sn_err rc =
            put_named(&cs->ctl->classes, &cs->ctl->n_classes, name,
                      json_pack("{s:i,s:b}", "priority", (int)p, "preemptible", 1), err);
        if (rc != SN_OK)
            return rc;
    }
    return SN_OK;
}

/* Tenants t0..tN-1 as snd restores them, every one with the configured
 * limits; the GPU quota per pool of the spec (lib/control has no quota
 * without pools). */
static enum sn_err make_tenants(struct csim *cs, struct sn_error *err)
{
    const struct sn_sim_config *c = cs->x.cfg;
    const struct sn_spec *spec = cs->x.m->spec;
    uint32_t nt = c->tenants ? c->tenants : 1, pools = spec->n_pools ? spec->n_pools : 1;
    if ((uint64_t)nt * pools > SN_SCHED_MAX_TENANTS)
        return sn_error_set(err, SN_ERR_INVALID,
                            "simulation: %u tenants x %u pools exceed the core's %u tenants", nt,
                            pools, SN_SCHED_MAX_TENANTS);
    if (c->quota_gpus && spec->n_pools == 0)
        return sn_error_set(err, SN_ERR_INVALID,
                            "simulation: --quota-gpus with --engine control needs pools (snd's "
                            "GPU quotas are per tenant and pool)");
    for (uint32_t t = 0; t < nt; t++) {
        char name[32], prefix[48];
        snprintf(name, sizeof(name), "t%u", t);
        snprintf(prefix, sizeof(prefix), "/sim/%s", name);
        json_t *doc = json_pack("{s:s}", "prefix", prefix);
        if (doc && c->quota_gpus_per_supernode)
            json_object_set_new(
                doc, "limits",
                json_pack("{s:I}", "gpus_per_supernode", (json_int_t)c->quota_gpus_per_supernode));
        enum sn_err rc = put_named(&cs->ctl->tenants, &cs->ctl->n_tenants, name, doc, err);
        for (uint32_t p = 0; rc == SN_OK && c->quota_gpus && p < spec->n_pools; p++)
            if (sn_control_quota_put(cs->ctl, name, spec->pools[p].name, c->quota_gpus) != SN_OK)
                rc = sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for quotas");
        if (rc != SN_OK)
            return rc;
    }
    return SN_OK;
}

/* snd's config from the sim's: the policy, spares, oversell, preemption's
 * minimum runtime, the heartbeat rules; --borrow lets every pool borrow
 * from every other. */
static enum sn_err control_config(const struct sim *x, struct sn_control_config *cc,
                                  struct sn_error *err)
{
    const struct sn_sim_config *c = x->cfg;
    const struct sn_spec *spec = x->m->spec;
    memset(cc, 0, sizeof(*cc));
    cc->max_jobs = (int64_t)x->w->n_jobs + 1;
    cc->heartbeat_timeout_s = c->heartbeat_timeout_s;
    cc->default_walltime_s = 86400;
    cc->pending_reason_hold_ms = SN_CONTROL_REASON_HOLD_MS_DEFAULT; /* as snd */
    snprintf(cc->sched_policy, sizeof(cc->sched_policy), "%s",
             sn_sched_policy_name(c->sched.policy));
    cc->preempt_min_runtime_s = (int64_t)c->sched.min_runtime_s;
    cc->partition_share_pct = c->partition_share_pct;
    cc->partition_window_s = c->partition_window_s;
    cc->max_tenants_per_supernode = c->sched.max_tenants_per_supernode;
    cc->spare_gpus_per_supernode = c->sched.spare_gpus_per_supernode;
    cc->replace_in_place = c->sched.replace_in_place;
    cc->cpu_oversell_pct =
        (int64_t)llround((c->sched.cpu_oversell > 0 ? c->sched.cpu_oversell : 1) * 100);
    cc->memory_oversell_pct =
        (int64_t)llround((c->sched.memory_oversell > 0 ? c->sched.memory_oversell : 1) * 100);
    cc->power_util_pct = (int64_t)llround(c->sched.power_util * 100);
    snprintf(cc->power_cap_policy, sizeof(cc->power_cap_policy), "%s",
             c->power_caps ? "fit" : "off");
    cc->preempt_grace_s = (int64_t)llround(c->preempt_grace_s > 0 ? c->preempt_grace_s : 0);
    /* The agents report when the check is done; the timeout is only for
     * a server that never does (as snd's 120 s default over a quick one). */
    cc->preflight_timeout_s = (int64_t)ceil(preflight_s(c, c->preflight_mode == 2)) + 60;
    size_t len = 0;
    for (uint32_t b = 0; c->borrow && b < spec->n_pools; b++)
        for (uint32_t l = 0; l < spec->n_pools; l++) {
            if (b == l)
                continue;
            int n = snprintf(cc->pool_borrow + len, sizeof(cc->pool_borrow) - len, "%s%s:%s",
                             len ? "," : "", spec->pools[b].name, spec->pools[l].name);
            if (n < 0 || (size_t)n >= sizeof(cc->pool_borrow) - len)
                return sn_error_set(err, SN_ERR_LIMIT,
                                    "simulation: --borrow: the pool pairs do not fit snd's "
                                    "pool_borrow (%zu characters)",
                                    sizeof(cc->pool_borrow) - 1);
            len += (size_t)n;
        }
    return SN_OK;
}

static enum sn_err setup(struct csim *cs, struct sn_error *err)
{
    struct sim *x = &cs->x;
    uint32_t n = x->w->n_jobs;
    enum sn_err rc = sn__sim_setup(x, err);
    if (rc != SN_OK)
        return rc;
    cs->wid = calloc((size_t)n + 1, sizeof(*cs->wid));
    cs->cid = calloc(n, sizeof(*cs->cid));
    cs->run_seq = calloc(n, sizeof(*cs->run_seq));
    cs->stalled = calloc(n, 1);
    cs->host_down = calloc(x->m->n_servers + 1, 1);
    cs->gpu_down = calloc(x->m->n_gpus + 1, 1);
    cs->jit_saved = malloc((size_t)(n ? n : 1) * sizeof(double));
    cs->sig_progress = calloc(n ? n : 1, sizeof(double));
    cs->pf_wait = calloc(n ? n : 1, 1);
    cs->trays_down = calloc(x->m->n_supernodes + 1, sizeof(uint32_t));
    cs->degraded_since = calloc(x->m->n_supernodes + 1, sizeof(double));
    for (uint32_t i = 0; cs->jit_saved && i < n; i++)
        cs->jit_saved[i] = -1;
    sn_rng_seed(&cs->jit_rng, x->cfg->seed ^ 0x9e3779b97f4a7c15ULL);
    sn_rng_seed(&cs->slow_rng, x->cfg->seed ^ 0xd1b54a32d192ed03ULL);
    sn_rng_seed(&cs->pf_rng, x->cfg->seed ^ 0x94d049bb133111ebULL);
    sn_rng_seed(&cs->tray_rng, x->cfg->seed ^ 0xbf58476d1ce4e5b9ULL);
    if (!cs->wid || !cs->cid || !cs->run_seq || !cs->stalled || !cs->host_down || !cs->gpu_down ||
        !cs->jit_saved || !cs->sig_progress || !cs->pf_wait || !cs->trays_down ||
        !cs->degraded_since)
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for %u jobs", n);
    x->n_pools = x->m->spec->n_pools <= SN_SCHED_MAX_POOLS ? x->m->spec->n_pools : 0;
    for (uint32_t p = 0; p < x->n_pools; p++)
        x->pool_kind[p] = (uint8_t)x->m->spec->pools[p].kind;
    struct sn_control_config cc;
    if ((rc = control_config(x, &cc, err)) != SN_OK)
        return rc;
    cs->ctl = sn_control_new(x->m, x->m->spec, &cc, err);
    if (!cs->ctl)
        return SN_ERR_NOMEM;
    if ((rc = make_tenants(cs, err)) != SN_OK || (rc = make_classes(cs, err)) != SN_OK)
        return rc;
    x->now = x->w->jobs[0].submit_s;
    struct sn_control_clock now = clock_at(x->now);
    struct sn_error local = {0};
    if (sn_control_start(cs->ctl, &now, &local) != SN_OK)
        return sn_error_set(err, SN_ERR_INVALID, "simulation: lib/control: %s", local.message);
    x->s = cs->ctl->sched;
    /* Every agent has heartbeated once: silence is noticed from here on. */
    for (uint32_t s = 0; s < x->m->n_servers && rc == SN_OK; s++)
        rc = apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = s}, err);
    if (rc == SN_OK)
        rc = sn__sim_first_events(x, false, err);
    /* Slow GPUs from their own stream, so that the failure draws are the
     * ones the engine made before it modelled them. */
    const struct sn_sim_config *c = x->cfg;
    if (rc == SN_OK && c->failures && c->fm.slow_per_gpu_hour > 0)
        rc = sn__sim_push(x,
                          x->w->jobs[0].submit_s +
                              sn_rng_exp(&cs->slow_rng,
                                         3600.0 / (c->fm.slow_per_gpu_hour * x->m->n_gpus)),
                          EV_SLOW, 0, 0, 0, err);
    if (rc == SN_OK && c->tray_failures_per_sn_hour > 0 && x->m->n_supernodes > 0)
        rc = sn__sim_push(x,
                          x->w->jobs[0].submit_s +
                              sn_rng_exp(&cs->tray_rng, 3600.0 / (c->tray_failures_per_sn_hour *
                                                                  x->m->n_supernodes)),
                          EV_TRAY, 0, 0, 0, err);
    return rc;
}

/* ---- events ------------------------------------------------------------------- */

static enum sn_err submit_next(struct csim *cs, struct sn_error *err)
{
    struct sim *x = &cs->x;
    const struct sn_sim_config *c = x->cfg;
    uint32_t i = x->next_submit++;
    const struct sn_sim_job *wj = &x->w->jobs[i];
    double est = wj->duration_s * (1 + c->estimate_error * sn_rng_uniform(&x->rng));
    x->jobs[i].remaining = wj->duration_s;
    double limit = ceil(est > 0 ? est : 1) + c->restart_s;
    char name[32], cls[32], tenant[32];
    snprintf(name, sizeof(name), "w%u", i);
    snprintf(cls, sizeof(cls), "p%d", (int)wj->priority);
    snprintf(tenant, sizeof(tenant), "t%u", wj->tenant % (c->tenants ? c->tenants : 1));
    json_t *spec =
        json_pack("{s:s,s:I,s:I,s:b,s:s}", "name", name, "gpus", (json_int_t)wj->gpus,
                  "time_limit_s", (json_int_t)limit, "preemptible", 1, "priority_class", cls);
    struct sn_control_job *j = calloc(1, sizeof(*j));
    if (!spec || !j) {
        json_decref(spec);
        free(j);
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory");
    }
    if (wj->group_gpus > 1)
        json_object_set_new(spec, "group_gpus", json_integer(wj->group_gpus));
    if (x->n_pools)
        json_object_set_new(spec, "pool",
                            json_string(x->m->spec->pools[sn__sim_job_pool(x, wj->gpus)].name));
    if (c->xsn_bytes_per_s > 0)
        json_object_set_new(spec, "xsn_bytes_per_s", json_integer((json_int_t)c->xsn_bytes_per_s));
    if (c->cpu_cores_per_gpu > 0)
        json_object_set_new(spec, "cpu_cores_per_gpu",
                            json_integer((json_int_t)ceil(c->cpu_cores_per_gpu)));
    if (c->memory_bytes_per_gpu > 0)
        json_object_set_new(spec, "memory_bytes_per_gpu",
                            json_integer((json_int_t)ceil(c->memory_bytes_per_gpu)));
    if (c->ckpt == SN_CKPT_YOUNG_DALY && c->ckpt_cost_s > 0)
        json_object_set_new(spec, "checkpoint_write_s",
                            json_integer((json_int_t)ceil(c->ckpt_cost_s)));
    if (c->preflight_mode > 0 &&
        (c->preflight_share >= 1 || sn_rng_uniform(&cs->pf_rng) < c->preflight_share))
        json_object_set_new(spec, "preflight",
                            json_string(c->preflight_mode == 2 ? "full" : "quick"));
    j->spec = spec;
    j->id = cs->ctl->next_job_id;
    snprintf(j->tenant, sizeof(j->tenant), "%s", tenant);
    j->state = SN_CONTROL_JOB_PENDING;
    j->sched_id = SN_NONE;
    j->failed_rank = -1;
    j->submit_s = j->updated_s = clock_at(x->now).wall_ms / 1000;
    enum sn_err rc = sn_control_job_insert(cs->ctl, j, err);
    if (rc != SN_OK) {
        sn_control_job_free(j);
        return rc;
    }
    cs->wid[j->id] = i;
    cs->cid[i] = j->id;
    rc = apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_SUBMIT, .job = j->id}, err);
    /* The core refused it (it never fits this cluster): counted, as the
     * sched engine counts it. */
    if (rc == SN_OK && sn_control_job_get(cs->ctl, j->id)->state == SN_CONTROL_JOB_FAILED)
        x->rejected++;
    return rc;
}

static enum sn_err on_finish(struct csim *cs, const struct event *e, struct sn_error *err)
{
    struct sim *x = &cs->x;
    uint32_t i = e->a;
    if (x->jobs[i].gen != e->b || !cs->run_seq[i])
        return SN_OK;
    const struct sn_control_job *cj = sn_control_job_get(cs->ctl, cs->cid[i]);
    uint32_t n = cj->n_alloc;
    enum sn_err rc = SN_OK;
    /* A preempting job's first rank exit evicts it (lib/control/preempt.c):
     * the other ranks' exits then belong to no run. */
    for (uint32_t r = 0; r < n && rc == SN_OK && cs->run_seq[i]; r++)
        rc = apply(
            cs,
            (struct sn_control_event){
                .kind = SN_CONTROL_EVENT_RANK_EXIT, .job = cs->cid[i], .id = r, .actor = "sim"},
            err);
    return rc;
}

static enum sn_err on_checkpoint(struct csim *cs, const struct event *e, struct sn_error *err)
{
    struct sim *x = &cs->x;
    uint32_t i = e->a;
    if (x->jobs[i].gen != e->b || !cs->run_seq[i])
        return SN_OK;
    char path[48];
    snprintf(path, sizeof(path), "sim://w%u/%u", i, e->c);
    enum sn_err rc = apply(
        cs,
        (struct sn_control_event){
            .kind = SN_CONTROL_EVENT_CHECKPOINT, .job = cs->cid[i], .text = path, .step = e->c},
        err);
    if (rc != SN_OK)
        return rc;
    struct sim_job *j = &x->jobs[i];
    double next = ((double)e->c + 1) * j->tau, p = sn__sim_progress_at(j, x->now);
    if (next >= j->remaining || e->c == UINT32_MAX)
        return SN_OK;
    return sn__sim_push(x, x->now + (next - p) / j->rate_eff, EV_CKPT, i, j->gen, e->c + 1, err);
}

/* The just-in-time checkpoint of a signalled run is written: reported. */
static enum sn_err on_jit(struct csim *cs, const struct event *e, struct sn_error *err)
{
    uint32_t i = e->a;
    if (cs->x.jobs[i].gen != e->b || !cs->run_seq[i] || cs->stalled[i])
        return SN_OK;
    cs->jit_saved[i] = cs->sig_progress[i];
    char path[48];
    snprintf(path, sizeof(path), "sim://w%u/jit", i);
    return apply(cs,
                 (struct sn_control_event){
                     .kind = SN_CONTROL_EVENT_CHECKPOINT, .job = cs->cid[i], .text = path},
                 err);
}

/* A signalled run's deadline: snd's timer (live agents' heartbeats, TIMER). */
static enum sn_err on_deadline(struct csim *cs, const struct event *e, struct sn_error *err)
{
    uint32_t i = e->a;
    if (cs->x.jobs[i].gen != e->b || !cs->run_seq[i])
        return SN_OK;
    enum sn_err rc = SN_OK;
    for (uint32_t s = 0; s < cs->x.m->n_servers && rc == SN_OK; s++)
        if (!cs->host_down[s])
            rc = apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = s},
                       err);
    return rc == SN_OK ? apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}, err)
                       : rc;
}

/* Job i's preflight is done (preflight_s after its start): the agent of
 * each of its live servers reports, in the order of their first ranks,
 * its ranks on a slow GPU found (each with probability preflight_detect_p)
 * or a pass. A failure requeues the job (sync_job), which ends the loop;
 * once every server passed the control releases the ranks and the work
 * begins (schedule_run from seg_start: the restart after the check). */
static enum sn_err on_preflight(struct csim *cs, const struct event *e, struct sn_error *err)
{
    struct sim *x = &cs->x;
    uint32_t i = e->a;
    if (x->jobs[i].gen != e->b || !cs->run_seq[i] || !cs->pf_wait[i])
        return SN_OK;
    const struct sn_control_job *cj = sn_control_job_get(cs->ctl, cs->cid[i]);
    uint64_t seq = cs->run_seq[i];
    uint32_t n = cj->n_alloc;
    uint8_t *done = calloc(x->m->n_servers + 1, 1);
    if (!done)
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory");
    enum sn_err rc = SN_OK;
    for (uint32_t r0 = 0; r0 < n && rc == SN_OK && cs->run_seq[i] == seq; r0++) {
        cj = sn_control_job_get(cs->ctl, cs->cid[i]);
        uint32_t s = x->m->gpu_server[cj->alloc[r0]];
        if (done[s] || cs->host_down[s])
            continue;
        done[s] = 1;
        char text[512], evidence[256];
        int len = snprintf(text, sizeof(text), "%lld:%u:", (long long)cj->id, cj->requeues);
        size_t at = (size_t)len, bad = 0;
        evidence[0] = '\0';
        for (uint32_t r = r0; r < n; r++) {
            uint32_t g = cj->alloc[r];
            if (x->m->gpu_server[g] != s || !x->gpu_slow[g] ||
                !(sn_rng_uniform(&cs->pf_rng) < x->cfg->preflight_detect_p))
                continue;
            int k = snprintf(text + at, sizeof(text) - at, "%s%u", bad ? "/" : "fail:", r);
            if (k < 0 || (size_t)k >= sizeof(text) - at)
                break;
            at += (size_t)k;
            if (!bad++)
                snprintf(evidence, sizeof(evidence), "GPU %u at %.0f %% speed (simulated)", g,
                         x->cfg->fm.slow_speed * 100);
        }
        if (!bad)
            snprintf(text + at, sizeof(text) - at, "pass");
        rc = apply(cs,
                   (struct sn_control_event){.kind = SN_CONTROL_EVENT_PREFLIGHT,
                                             .id = s,
                                             .text = text,
                                             .detail = evidence[0] ? evidence : NULL,
                                             .actor = "sim"},
                   err);
    }
    free(done);
    cj = sn_control_job_get(cs->ctl, cs->cid[i]);
    if (rc != SN_OK || cs->run_seq[i] != seq || !cj || cj->preflight_wait)
        return rc; /* requeued, or a server not heard from: the control decides */
    cs->pf_wait[i] = 0;
    x->r->preflight_gpu_h += x->w->jobs[i].gpus * preflight_s(x->cfg, cj->preflight_full) / 3600;
    return schedule_run(cs, i, err);
}

static uint32_t job_of_gpu(const struct csim *cs, uint32_t g)
{
    uint32_t sid = sn_sched_gpu_owner(cs->ctl->sched, g);
    if (sid == SN_NONE || sid >= cs->ctl->sched_jobs_cap)
        return SN_NONE;
    int64_t id = cs->ctl->sched_jobs[sid];
    return id > 0 && id <= (int64_t)cs->x.w->n_jobs ? cs->wid[id] : SN_NONE;
}

static enum sn_err arm_timer(struct csim *cs, struct sn_error *err)
{
    if (cs->timer_armed)
        return SN_OK;
    cs->timer_armed = true;
    return sn__sim_push(&cs->x, cs->x.now + period_s(cs), EV_TIMER, 0, 0, 0, err);
}

/* The agent of server s goes silent: its last heartbeat is now. */
static enum sn_err host_fail(struct csim *cs, uint32_t s, struct sn_error *err)
{
    const struct sn_model *m = cs->x.m;
    if (cs->host_down[s]++ > 0)
        return SN_OK;
    cs->n_hosts_down++;
    enum sn_err rc =
        apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = s}, err);
    uint32_t first = m->server_first_gpu[s], count = sn_model_server_spec(m, s)->gpus;
    for (uint32_t g = first; g < first + count; g++) {
        uint32_t i = job_of_gpu(cs, g);
        if (i != SN_NONE && cs->run_seq[i])
            stall(cs, i);
    }
    return rc == SN_OK ? arm_timer(cs, err) : rc;
}

/* The agent of server s is back: it heartbeats, and reports the ranks it
 * lost with the host of runs the control still holds there. */
static enum sn_err host_repair(struct csim *cs, uint32_t s, struct sn_error *err)
{
    const struct sn_model *m = cs->x.m;
    if (cs->host_down[s] == 0 || --cs->host_down[s] > 0)
        return SN_OK;
    cs->n_hosts_down--;
    enum sn_err rc =
        apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = s}, err);
    uint32_t first = m->server_first_gpu[s], count = sn_model_server_spec(m, s)->gpus;
    for (uint32_t g = first; g < first + count && rc == SN_OK; g++) {
        uint32_t i = job_of_gpu(cs, g);
        if (i == SN_NONE || !cs->run_seq[i] || !cs->stalled[i])
            continue;
        const struct sn_control_job *cj = sn_control_job_get(cs->ctl, cs->cid[i]);
        uint32_t rank = 0;
        while (rank < cj->n_alloc && cj->alloc[rank] != g)
            rank++;
        rc = apply(cs,
                   (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                             .job = cs->cid[i],
                                             .id = rank,
                                             .status = 255,
                                             .text = "infrastructure-lost: the host failed",
                                             .actor = "sim"},
                   err);
    }
    return rc;
}

/* snd's timer: the live agents' heartbeats of this period, then TIMER;
 * again in a period while the control has a silence left to settle. */
static enum sn_err on_timer(struct csim *cs, struct sn_error *err)
{
    const struct sn_model *m = cs->x.m;
    cs->timer_armed = false;
    enum sn_err rc = SN_OK;
    for (uint32_t s = 0; s < m->n_servers && rc == SN_OK; s++)
        if (!cs->host_down[s])
            rc = apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEARTBEAT, .id = s},
                       err);
    if (rc == SN_OK)
        rc = apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}, err);
    bool unsettled = cs->ctl->fenced || cs->ctl->n_silent > 0;
    for (uint32_t s = 0; s < m->n_servers && !unsettled; s++)
        unsettled = cs->host_down[s] && cs->ctl->nodes[s].state != SN_CONTROL_ADMIN_DOWN;
    return rc == SN_OK && unsettled ? arm_timer(cs, err) : rc;
}

static enum sn_err gpu_admin(struct csim *cs, uint32_t g, bool down, struct sn_error *err)
{
    return apply(
        cs,
        (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                  .id = g,
                                  .admin = down ? SN_CONTROL_ADMIN_DOWN : SN_CONTROL_ADMIN_UP,
                                  .detail = down ? "simulated GPU failure" : NULL,
                                  .actor = "sim"},
        err);
}

/* A software fault: rank 0 of a running job, picked uniformly, exits 1. */
static enum sn_err software_fault(struct csim *cs, uint64_t pick, struct sn_error *err)
{
    struct sim *x = &cs->x;
    uint32_t n_run = 0;
    /* A run waiting for its preflight has no ranks started to fault. */
    for (uint32_t i = 0; i < x->next_submit; i++)
        n_run += cs->run_seq[i] && !cs->stalled[i] && !cs->pf_wait[i];
    if (n_run == 0)
        return SN_OK;
    uint32_t k = (uint32_t)(pick % n_run);
    for (uint32_t i = 0; i < x->next_submit; i++)
        if (cs->run_seq[i] && !cs->stalled[i] && !cs->pf_wait[i] && k-- == 0)
            return apply(cs,
                         (struct sn_control_event){.kind = SN_CONTROL_EVENT_RANK_EXIT,
                                                   .job = cs->cid[i],
                                                   .id = 0,
                                                   .status = 1,
                                                   .text = "simulated software fault",
                                                   .actor = "sim"},
                         err);
    return SN_OK;
}

static enum sn_err on_fail(struct csim *cs, struct sn_error *err)
{
    struct sim *x = &cs->x;
    enum sn_fail_class cls;
    uint64_t pick;
    enum sn_err rc = sn__sim_fail_draw(x, &cls, &pick, err);
    if (rc != SN_OK)
        return rc;
    if (cls == SN_FAIL_SOFTWARE)
        return software_fault(cs, pick, err);
    double repair = x->now + x->cfg->fm.repair_s[cls];
    if (cls == SN_FAIL_GPU) {
        uint32_t g = (uint32_t)(pick % x->m->n_gpus);
        if (cs->gpu_down[g] == UINT8_MAX)
            return SN_OK; /* 255 nested failures: skip this one */
        if (cs->gpu_down[g]++ == 0 && (rc = gpu_admin(cs, g, true, err)) != SN_OK)
            return rc;
        return sn__sim_push(x, repair, EV_REPAIR, SN_DOMAIN_GPU, g, 0, err);
    }
    /* A host, or the NIC or cable that carries its agent's heartbeats. */
    uint32_t s = (uint32_t)(pick % x->m->n_servers);
    if (cs->host_down[s] == UINT8_MAX)
        return SN_OK;
    if ((rc = host_fail(cs, s, err)) != SN_OK)
        return rc;
    return sn__sim_push(x, repair, EV_REPAIR, SN_DOMAIN_SERVER, s, 0, err);
}

static enum sn_err on_repair(struct csim *cs, const struct event *e, struct sn_error *err)
{
    if (e->a == SN_DOMAIN_SERVER)
        return host_repair(cs, e->b, err);
    if (cs->gpu_down[e->b] == 0 || --cs->gpu_down[e->b] > 0)
        return SN_OK;
    return gpu_admin(cs, e->b, false, err);
}

/* Slow GPUs, drawn as the sched engine draws them (lib/sim/sim_run.c): a
 * GPU runs at slow_speed until it is replaced slow_repair_s later (a run
 * started on it takes that rate; a running one keeps its rate, as the
 * engine does not re-rate). slow_detect_s after it turned slow, health
 * finds it, and with health exclusion the control is told what
 * snd:health tells it for a score below health_cordon_below: the GPU is
 * cordoned (no new placement; the job on it goes on, as in snd), and
 * resumed once replaced. A GPU down for a failure meanwhile is left to
 * the failure's repair. */
static enum sn_err slow_admin(struct csim *cs, uint32_t g, bool cordon, struct sn_error *err)
{
    const struct sn_control_admin *a = &cs->ctl->gpus[g];
    bool ours =
        a->actor && (strcmp(a->actor, "snd:health") == 0 || strcmp(a->actor, "snd:preflight") == 0);
    if (cordon ? a->state != SN_CONTROL_ADMIN_UP
               : a->state != SN_CONTROL_ADMIN_CORDONED || !ours)
        return SN_OK;
    return apply(cs,
                 (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                           .id = g,
                                           .admin = cordon ? SN_CONTROL_ADMIN_CORDONED
                                                           : SN_CONTROL_ADMIN_UP,
                                           .detail = cordon ? "health: slow-gpu (simulated)" : NULL,
                                           .actor = "snd:health"},
                 err);
}

static enum sn_err on_slow(struct csim *cs, const struct event *e, struct sn_error *err)
{
    struct sim *x = &cs->x;
    const struct sn_sim_failure_model *fm = &x->cfg->fm;
    uint32_t g = e->a;
    if (e->kind == EV_SLOW) {
        g = (uint32_t)(sn_rng_next(&cs->slow_rng) % x->m->n_gpus);
        double gap = 3600.0 / (fm->slow_per_gpu_hour * x->m->n_gpus);
        enum sn_err rc =
            sn__sim_push(x, x->now + sn_rng_exp(&cs->slow_rng, gap), EV_SLOW, 0, 0, 0, err);
        if (rc != SN_OK || x->gpu_slow[g])
            return rc;
        x->gpu_slow[g] = 1;
        x->r->slow_gpus++;
        if ((rc = sn__sim_push(x, x->now + fm->slow_detect_s, EV_DETECT, g, 0, 0, err)) != SN_OK)
            return rc;
        return sn__sim_push(x, x->now + fm->slow_repair_s, EV_SLOW_FIX, g, 0, 0, err);
    }
    if (e->kind == EV_DETECT)
        return x->cfg->sched.health_exclusion && x->gpu_slow[g] && !cs->gpu_down[g]
                   ? slow_admin(cs, g, true, err)
                   : SN_OK;
    x->gpu_slow[g] = 0; /* EV_SLOW_FIX: replaced */
    return slow_admin(cs, g, false, err);
}

/* The health report snd's pass would make of the degraded domains: one
 * nvlink-domain-degraded finding per supernode with a tray down, no GPU
 * scores; applied as a HEALTH event. */
static enum sn_err tray_report(struct csim *cs, struct sn_error *err)
{
    const struct sn_model *m = cs->x.m;
    struct sn_health_finding *f = calloc(m->n_supernodes + 1, sizeof(*f));
    if (!f)
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for a health report");
    uint32_t n = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        if (!cs->trays_down[sn])
            continue;
        char name[64];
        sn_model_supernode_name(m, sn, name, sizeof(name));
        f[n] = (struct sn_health_finding){.detector = SN_DET_NVLINK_DOMAIN_DEGRADED,
                                          .severity = SN_HEALTH_SEV_CRIT,
                                          .action = SN_HEALTH_ACT_DRAIN,
                                          .entity = SN_HEALTH_ENT_SUPERNODE,
                                          .id = sn,
                                          .gpu = SN_NONE,
                                          .server = SN_NONE,
                                          .value = NAN,
                                          .expected = NAN};
        snprintf(f[n].evidence, sizeof(f[n].evidence),
                 "sim: %s lost %u NVLink switch tray(s), below min_nvlink_share", name,
                 cs->trays_down[sn]);
        n++;
    }
    struct sn_health_report rep = {.now_s = cs->x.now, .findings = f, .n_findings = n};
    enum sn_err rc =
        apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HEALTH, .report = &rep}, err);
    free(f);
    return rc;
}

/* EV_TRAY: the next tray failure is drawn, this one degrades a domain
 * picked uniformly; EV_TRAY_FIX: its repair. */
static enum sn_err on_tray(struct csim *cs, const struct event *e, struct sn_error *err)
{
    struct sim *x = &cs->x;
    const struct sn_model *m = x->m;
    uint32_t sn = e->a;
    if (e->kind == EV_TRAY) {
        sn = (uint32_t)(sn_rng_next(&cs->tray_rng) % m->n_supernodes);
        double gap = 3600.0 / (x->cfg->tray_failures_per_sn_hour * m->n_supernodes);
        enum sn_err rc =
            sn__sim_push(x, x->now + sn_rng_exp(&cs->tray_rng, gap), EV_TRAY, 0, 0, 0, err);
        if (rc == SN_OK)
            rc = sn__sim_push(x, x->now + x->cfg->tray_repair_s, EV_TRAY_FIX, sn, 0, 0, err);
        if (rc != SN_OK)
            return rc;
        cs->tray_failures++;
        if (cs->trays_down[sn]++ > 0)
            return SN_OK; /* already degraded: the same decision */
        cs->degraded_since[sn] = x->now;
        return tray_report(cs, err);
    }
    if (cs->trays_down[sn] == 0 || --cs->trays_down[sn] > 0)
        return SN_OK;
    cs->degraded_gpu_s += (double)m->supernodes[sn].n_gpus * (x->now - cs->degraded_since[sn]);
    return tray_report(cs, err);
}

static enum sn_err handle(struct csim *cs, const struct event *e, struct sn_error *err)
{
    switch (e->kind) {
    case EV_FINISH:
        return on_finish(cs, e, err);
    case EV_CKPT:
        return on_checkpoint(cs, e, err);
    case EV_FAIL:
        return on_fail(cs, err);
    case EV_REPAIR:
        return on_repair(cs, e, err);
    case EV_TIMER:
        return on_timer(cs, err);
    case EV_JIT:
        return on_jit(cs, e, err);
    case EV_DEADLINE:
        return on_deadline(cs, e, err);
    case EV_PREFLIGHT:
        return on_preflight(cs, e, err);
    case EV_SAMPLE:
        return sn__sim_sample(&cs->x, err);
    case EV_SNAPSHOT:
        sn__sim_snapshot(&cs->x);
        return SN_OK;
    case EV_SLOW:
    case EV_DETECT:
    case EV_SLOW_FIX:
        return on_slow(cs, e, err);
    case EV_TRAY:
    case EV_TRAY_FIX:
        return on_tray(cs, e, err);
    default:
        return SN_OK;
    }
}

/* As the sched engine's loop: submissions first at equal times, one PASS
 * after the last event of a timestamp. */
static enum sn_err loop(struct csim *cs, struct sn_error *err)
{
    struct sim *x = &cs->x;
    const struct sn_sim_workload *w = x->w;
    double horizon = w->jobs[w->n_jobs - 1].submit_s + SN__SIM_HORIZON_S;
    enum sn_err rc = SN_OK;
    while (rc == SN_OK && x->done + x->rejected + cs->failed < w->n_jobs) {
        bool submit = x->next_submit < w->n_jobs &&
                      (x->n_heap == 0 || w->jobs[x->next_submit].submit_s <= x->heap[0].t);
        if (!submit && x->n_heap == 0)
            break;
        double t = submit ? w->jobs[x->next_submit].submit_s : x->heap[0].t;
        if (t > horizon)
            break;
        x->now = t;
        if (submit) {
            rc = submit_next(cs, err);
        } else {
            struct event e = sn__sim_pop(x);
            rc = handle(cs, &e, err);
        }
        bool more_now = (x->next_submit < w->n_jobs && w->jobs[x->next_submit].submit_s <= t) ||
                        (x->n_heap > 0 && x->heap[0].t <= t);
        /* As snd, a pass only after an event that can change placement
         * (a checkpoint report or a heartbeat does not). */
        if (rc == SN_OK && !more_now && (cs->ctl->sched_dirty || cs->ctl->deps_dirty)) {
            uint64_t t0 = x->cfg->clock_ns ? x->cfg->clock_ns(x->cfg->clock_ctx) : 0;
            rc = apply(cs, (struct sn_control_event){.kind = SN_CONTROL_EVENT_PASS}, err);
            if (x->cfg->clock_ns)
                x->sched_ns += x->cfg->clock_ns(x->cfg->clock_ctx) - t0;
        }
    }
    return rc;
}

enum sn_err sn__sim_run_control(const struct sn_model *m, const struct sn_sim_workload *w,
                                const struct sn_sim_config *c, struct sn_sim_result **out,
                                struct sn_error *err)
{
    struct csim cs = {.x = {.m = m, .w = w, .cfg = c}};
    sn_effects_init(&cs.fx);
    enum sn_err rc = setup(&cs, err);
    if (rc == SN_OK)
        rc = loop(&cs, err);
    if (rc == SN_OK)
        rc = sn__sim_finish_results(&cs.x, err);
    if (rc == SN_OK) {
        cs.x.r->jobs_failed = cs.failed;
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++) /* still degraded at the end */
            if (cs.trays_down[sn])
                cs.degraded_gpu_s +=
                    (double)m->supernodes[sn].n_gpus * (cs.x.now - cs.degraded_since[sn]);
        cs.x.r->tray_failures = cs.tray_failures;
        cs.x.r->degraded_gpu_h = cs.degraded_gpu_s / 3600;
    }
    sn_effects_free(&cs.fx);
    sn_control_free(cs.ctl);
    sn__sim_release(&cs.x);
    free(cs.wid);
    free(cs.cid);
    free(cs.run_seq);
    free(cs.stalled);
    free(cs.host_down);
    free(cs.gpu_down);
    free(cs.jit_saved);
    free(cs.sig_progress);
    free(cs.pf_wait);
    free(cs.trays_down);
    free(cs.degraded_since);
    if (rc != SN_OK) {
        sn_sim_result_free(cs.x.r);
        return rc;
    }
    *out = cs.x.r;
    return SN_OK;
}
