/*
 * The discrete-event simulator: drives the scheduler core with virtual
 * time over a workload, with failures, slow GPUs, checkpoints and a
 * progress-rate performance model, and measures the run.
 *
 * Events sit in a binary heap ordered by (time, sequence number); trace
 * submissions are merged in from the sorted workload (a submission goes
 * first at equal times). After all events of one timestamp, one scheduler
 * pass runs and its decisions are applied. Every random draw comes from one
 * seeded RNG in a fixed order, so a run is a pure function of its inputs.
 *
 * Progress (docs/simulator.md): a running job advances its work at
 * rate_eff = rate x tau / (tau + ckpt_cost), where rate is the
 * communication model's rate for its placement (lib/sim/sim_perf.c: groups
 * outside their scale-up domain or crossing supernodes, the share of its
 * most oversubscribed uplink) times the speed of its slowest GPU, and tau
 * is the checkpoint interval in work-seconds. Jobs spanning supernodes are
 * kept in a list; whenever one starts or stops, uplink loads change and
 * every job on the list is re-rated. An interruption keeps floor(progress / tau) x tau of the
 * run's work; the rest is lost. A restart costs restart_s of no progress.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sn/goodput.h>
#include <sn/sim.h>

#include "sim_int.h"

#define MAX_EVENTS (1u << 24)
#define MAX_SAMPLES (1u << 20)

static const char *const ckpt_names[] = {
#define SN_X(name, text) text,
    SN_CKPT_POLICY_LIST(SN_X)
#undef SN_X
};
static const char *const class_names[] = {
#define SN_X(name, text) text,
    SN_FAIL_CLASS_LIST(SN_X)
#undef SN_X
};

static const char *const engine_names[] = {
#define SN_X(name, text) text,
    SN_SIM_ENGINE_LIST(SN_X)
#undef SN_X
};

const char *sn_sim_engine_name(enum sn_sim_engine e)
{
    return (unsigned)e < SN_SIM_ENGINE_COUNT ? engine_names[e] : "unknown";
}

enum sn_sim_engine sn_sim_engine_from_name(const char *name)
{
    for (int e = 0; e < SN_SIM_ENGINE_COUNT; e++)
        if (strcmp(name, engine_names[e]) == 0)
            return (enum sn_sim_engine)e;
    return SN_SIM_ENGINE_COUNT;
}

const char *sn_ckpt_policy_name(enum sn_ckpt_policy p)
{
    return (unsigned)p < SN_CKPT_POLICY_COUNT ? ckpt_names[p] : "unknown";
}

const char *sn_fail_class_name(enum sn_fail_class c)
{
    return (unsigned)c < SN_FAIL_CLASS_COUNT ? class_names[c] : "unknown";
}

void sn_sim_failure_defaults(struct sn_sim_failure_model *fm)
{
    memset(fm, 0, sizeof(*fm));
    /* Llama 3 405B (Dubey et al., 2024, "The Llama 3 Herd of Models",
     * section 3.3.4): 419 unexpected interruptions in 54 days on 16,384
     * GPUs = 419 / (54 x 24 x 16,384) per GPU-hour. */
    fm->per_gpu_hour = 419.0 / (54.0 * 24.0 * 16384.0);
    fm->fraction[SN_FAIL_GPU] = 0.587;      /* GPU and HBM related, same report */
    fm->fraction[SN_FAIL_NETWORK] = 0.084;  /* network switch and cable */
    fm->fraction[SN_FAIL_HOST] = 0.109;     /* rest of the 78 % hardware */
    fm->fraction[SN_FAIL_SOFTWARE] = 0.220; /* the other 22 % */
    /* Repair times are assumptions (the report gives none). */
    fm->repair_s[SN_FAIL_GPU] = 4 * 3600.0;
    fm->repair_s[SN_FAIL_NETWORK] = 2 * 3600.0;
    fm->repair_s[SN_FAIL_HOST] = 8 * 3600.0;
    fm->repair_s[SN_FAIL_SOFTWARE] = 0;
    /* Slow GPUs: assumptions as well. */
    fm->slow_per_gpu_hour = fm->per_gpu_hour / 10;
    fm->slow_speed = 0.6;
    fm->slow_detect_s = 1800;
    fm->slow_repair_s = 24 * 3600.0;
}

void sn_sim_config_defaults(struct sn_sim_config *c)
{
    memset(c, 0, sizeof(*c));
    sn_sched_config_defaults(&c->sched);
    c->seed = 1;
    c->failures = true;
    sn_sim_failure_defaults(&c->fm);
    c->ckpt = SN_CKPT_FIXED;
    c->ckpt_fixed_s = 3600;
    c->ckpt_cost_s = 60;
    c->restart_s = 300;
    c->estimate_error = 0;
    c->xsn_bytes_per_s = 5e9;
    sn_sim_comm_defaults(&c->comm);
    c->sample_s = 3600;
    c->snapshot_s = -1;
    c->tenants = 8;
    c->dedicated_min_gpus = 32;
    c->heartbeat_timeout_s = 30;
    c->partition_share_pct = 10;
    c->partition_window_s = 5;
    c->preflight_share = 1;
    c->preflight_detect_p = 1;
    c->tray_repair_s = 4 * 3600; /* our assumption: a tray swapped within a shift */
}

/* ---- heap -------------------------------------------------------------- */

static bool ev_before(const struct event *a, const struct event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static enum sn_err push(struct sim *x, double t, uint32_t kind, uint32_t a, uint32_t b, uint32_t c,
                        struct sn_error *err)
{
    if (x->n_heap == x->cap_heap) {
        if (x->cap_heap >= MAX_EVENTS)
            return sn_error_set(err, SN_ERR_LIMIT, "simulation: more than %u events pending",
                                MAX_EVENTS);
        uint32_t cap = x->cap_heap ? x->cap_heap * 2 : 1024;
        struct event *h = realloc(x->heap, cap * sizeof(*h));
        if (!h)
            return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for events");
        x->heap = h;
        x->cap_heap = cap;
    }
    uint32_t i = x->n_heap++;
    struct event e = {t, x->seq++, kind, a, b, c};
    while (i > 0 && ev_before(&e, &x->heap[(i - 1) / 2])) {
        x->heap[i] = x->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    x->heap[i] = e;
    return SN_OK;
}

static struct event pop(struct sim *x)
{
    struct event top = x->heap[0], last = x->heap[--x->n_heap];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= x->n_heap)
            break;
        if (c + 1 < x->n_heap && ev_before(&x->heap[c + 1], &x->heap[c]))
            c++;
        if (!ev_before(&x->heap[c], &last))
            break;
        x->heap[i] = x->heap[c];
        i = c;
    }
    if (x->n_heap > 0)
        x->heap[i] = last;
    return top;
}

/* ---- progress ---------------------------------------------------------- */

static double job_tau(const struct sim *x, uint32_t gpus)
{
    const struct sn_sim_config *c = x->cfg;
    if (c->ckpt == SN_CKPT_FIXED)
        return c->ckpt_fixed_s;
    /* Young/Daly first order: tau = sqrt(2 x delta x MTBF of the job). */
    double rate = c->fm.per_gpu_hour / 3600.0 * gpus;
    return rate > 0 ? sqrt(2 * c->ckpt_cost_s / rate) : c->ckpt_fixed_s;
}

/* Scale-up domain of a GPU: its supernode when one domain spans it,
 * else its server. */
static uint32_t scaleup_domain(const struct sim *x, uint32_t gpu)
{
    uint32_t sn = x->m->gpu_supernode[gpu];
    const struct sn_sim_comm_hw *hw = &x->hw[x->m->supernodes[sn].template_index];
    return hw->scaleup_gpus >= hw->supernode_gpus ? sn : x->m->n_supernodes + x->m->gpu_server[gpu];
}

/* min(1, capacity / load) over the leaf uplinks of gpus and the spine
 * uplinks of their pods. */
static double uplink_share(const struct sim *x, const uint32_t *gpus, uint32_t n)
{
    double share = 1.0, cap, load;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t leaf = x->m->gpu_leaf[gpus[i]];
        if (leaf != SN_NONE && (load = sn_sched_leaf_load(x->s, leaf, &cap)) > cap)
            share = fmin(share, cap / load);
        uint32_t pod = sn_sched_supernode_pod(x->s, x->m->gpu_supernode[gpus[i]]);
        if ((load = sn_sched_pod_load(x->s, pod, &cap)) > cap && cap > 0)
            share = fmin(share, cap / load);
    }
    return share;
}

/* The communication model's rate for the placement x slowest GPU. */
static double job_rate(struct sim *x, uint32_t sid, uint32_t wid)
{
    struct sn_job_info info;
    sn_sched_job_info(x->s, sid, &info);
    uint32_t n;
    const uint32_t *gpus = sn_sched_job_gpus(x->s, sid, &n);
    const struct sn_sim_job *wj = &x->w->jobs[wid];
    struct sn_sim_layout l = {.gpus = n,
                              .group_gpus = wj->group_gpus ? wj->group_gpus : 1,
                              .group_cross_sn = info.groups_cross_sn,
                              .job_cross_sn = info.n_supernodes > 1,
                              .uplink_share = 1.0};
    double slowest = 1.0;
    for (uint32_t i = 0; i < n; i++) {
        if (x->gpu_slow[gpus[i]])
            slowest = x->cfg->fm.slow_speed;
        uint32_t first = gpus[i - i % l.group_gpus];
        l.group_out_scaleup |= scaleup_domain(x, first) != scaleup_domain(x, gpus[i]);
    }
    if (l.job_cross_sn)
        l.uplink_share = uplink_share(x, gpus, n);
    uint32_t tmpl = x->m->supernodes[x->m->gpu_supernode[gpus[0]]].template_index;
    double rate = sn_sim_comm_rate(&x->cfg->comm, &x->hw[tmpl], &l);
    return fmax(rate, 1e-3) * slowest;
}

static double eff(const struct sim_job *j, double rate, double cost)
{
    return j->tau > 0 ? rate * j->tau / (j->tau + cost) : rate;
}

static double progress_at(const struct sim_job *j, double t)
{
    double p = j->progress + j->rate_eff * fmax(0, t - j->seg_start);
    return fmin(p, j->remaining);
}

static enum sn_err schedule_finish(struct sim *x, uint32_t id, struct sn_error *err)
{
    struct sim_job *j = &x->jobs[id];
    double left = j->remaining - j->progress;
    return push(x, fmax(j->seg_start, x->now) + left / j->rate_eff, EV_FINISH, id, ++j->gen, 0,
                err);
}

/* Jobs spanning supernodes load uplinks: track them (see the top). */
static void xs_add(struct sim *x, uint32_t id)
{
    x->xs_pos[id] = x->n_xs;
    x->xs[x->n_xs++] = id;
    x->uplinks_changed = true;
}

static void xs_remove(struct sim *x, uint32_t id)
{
    uint32_t pos = x->xs_pos[id];
    if (pos == SN_NONE)
        return;
    uint32_t last = x->xs[--x->n_xs];
    x->xs[pos] = last;
    x->xs_pos[last] = pos;
    x->xs_pos[id] = SN_NONE;
    x->uplinks_changed = true;
}

/* Records the distinct servers of job id's first run. */
static enum sn_err note_first_servers(struct sim *x, uint32_t sid, uint32_t id,
                                      struct sn_error *err)
{
    uint32_t n = 0;
    const uint32_t *gpus = sn_sched_job_gpus(x->s, sid, &n);
    for (uint32_t i = 0; gpus && i < n; i++) {
        uint32_t srv = x->m->gpu_server[gpus[i]];
        bool seen = false;
        for (uint32_t k = x->n_first_servers; k-- > 0 && x->first_servers[k][0] == id;)
            seen = seen || x->first_servers[k][1] == srv;
        if (seen)
            continue;
        if (x->n_first_servers == x->cap_first_servers) {
            uint32_t cap = x->cap_first_servers ? x->cap_first_servers * 2 : 1024;
            void *nb = realloc(x->first_servers, (size_t)cap * sizeof(*x->first_servers));
            if (!nb)
                return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory");
            x->first_servers = nb;
            x->cap_first_servers = cap;
        }
        x->first_servers[x->n_first_servers][0] = id;
        x->first_servers[x->n_first_servers++][1] = srv;
    }
    return SN_OK;
}

static enum sn_err on_start(struct sim *x, uint32_t id, struct sn_error *err)
{
    struct sim_job *j = &x->jobs[id];
    const struct sn_sim_job *wj = &x->w->jobs[id];
    if (isnan(x->queue_s[id])) {
        x->queue_s[id] = x->now - wj->submit_s;
        j->first_start = x->now;
        enum sn_err rc = note_first_servers(x, id, id, err);
        if (rc != SN_OK)
            return rc;
    }
    j->run_start = x->now;
    j->progress = 0;
    j->seg_start = x->now + (j->runs++ > 0 ? x->cfg->restart_s : 0);
    j->rate_eff = eff(j, job_rate(x, id, id), x->cfg->ckpt_cost_s);
    struct sn_job_info info;
    sn_sched_job_info(x->s, id, &info);
    x->r->groups_split += info.groups_split;
    x->r->groups_cross += info.groups_cross_sn;
    if (info.n_supernodes > 1)
        xs_add(x, id);
    return schedule_finish(x, id, err);
}

/* A run ends without finishing: keep the checkpointed work. */
static void on_stop(struct sim *x, uint32_t id, bool at_checkpoint)
{
    struct sim_job *j = &x->jobs[id];
    uint32_t gpus = x->w->jobs[id].gpus;
    double p = progress_at(j, x->now);
    double saved = at_checkpoint ? p : (j->tau > 0 ? floor(p / j->tau + 1e-9) * j->tau : 0);
    xs_remove(x, id);
    sn_goodput_add_run(&x->gp, gpus, x->now - j->run_start, saved, true);
    j->remaining -= saved;
    j->gen++;
    double est = j->remaining * (1 + x->cfg->estimate_error * sn_rng_uniform(&x->rng));
    sn_sched_set_walltime(x->s, id, est + x->cfg->restart_s);
}

static enum sn_err apply_decisions(struct sim *x, struct sn_error *err)
{
    size_t n;
    const struct sn_decision *d = sn_sched_decisions(x->s, &n);
    enum sn_err rc = SN_OK;
    for (size_t i = 0; i < n && rc == SN_OK; i++) {
        if (d[i].kind == SN_DECISION_START) {
            rc = on_start(x, d[i].job, err);
            x->r->decisions++;
        } else if (d[i].kind == SN_DECISION_REPLACE) {
            /* spares in the same supernode: restart in place from the checkpoint */
            on_stop(x, d[i].job, false);
            rc = on_start(x, d[i].job, err);
            x->r->interruptions++;
            x->r->replacements++;
        } else {
            on_stop(x, d[i].job, false);
            if (d[i].kind == SN_DECISION_PREEMPT)
                x->r->preemptions++;
            else
                x->r->interruptions++;
        }
    }
    sn_sched_clear_decisions(x->s);
    return rc;
}

static void on_finish(struct sim *x, uint32_t id)
{
    struct sim_job *j = &x->jobs[id];
    const struct sn_sim_job *wj = &x->w->jobs[id];
    xs_remove(x, id);
    sn_goodput_add_run(&x->gp, wj->gpus, x->now - j->run_start, j->remaining, false);
    j->remaining = 0;
    x->jct_s[id] = x->now - wj->submit_s;
    x->done++;
    x->r->makespan_s = x->now;
}

/* ---- failures and slow GPUs -------------------------------------------- */

static double fail_mean_gap(const struct sim *x)
{
    double per_s = x->cfg->fm.per_gpu_hour / 3600.0 * x->m->n_gpus;
    return per_s > 0 ? 1.0 / per_s : INFINITY;
}

enum sn_err sn__sim_fail_draw(struct sim *x, enum sn_fail_class *out, uint64_t *pick,
                              struct sn_error *err)
{
    const struct sn_sim_failure_model *fm = &x->cfg->fm;
    double u = sn_rng_uniform(&x->rng), acc = 0;
    int cls = 0;
    while (cls < SN_FAIL_CLASS_COUNT - 1 && u >= acc + fm->fraction[cls])
        acc += fm->fraction[cls++];
    *pick = sn_rng_next(&x->rng);
    enum sn_err rc = push(x, x->now + sn_rng_exp(&x->rng, fail_mean_gap(x)), EV_FAIL, 0, 0, 0, err);
    if (cls == SN_FAIL_NETWORK && x->n_leaves == 0)
        cls = SN_FAIL_HOST;
    x->r->failures[cls]++;
    *out = (enum sn_fail_class)cls;
    return rc;
}

static enum sn_err on_fail(struct sim *x, struct sn_error *err)
{
    const struct sn_sim_failure_model *fm = &x->cfg->fm;
    enum sn_fail_class cls;
    uint64_t pickv;
    enum sn_err rc = sn__sim_fail_draw(x, &cls, &pickv, err);
    if (rc != SN_OK)
        return rc;
    if (cls == SN_FAIL_SOFTWARE) {
        uint32_t n_run = 0;
        for (uint32_t id = 0; id < x->next_submit; id++)
            n_run += sn_sched_job_gpus(x->s, id, &(uint32_t){0}) != NULL;
        if (n_run == 0)
            return SN_OK;
        uint32_t k = (uint32_t)(pickv % n_run);
        for (uint32_t id = 0; id < x->next_submit; id++)
            if (sn_sched_job_gpus(x->s, id, &(uint32_t){0}) != NULL && k-- == 0)
                return sn_sched_interrupt(x->s, id, x->now, err);
        return SN_OK;
    }
    enum sn_domain_kind kind = cls == SN_FAIL_GPU       ? SN_DOMAIN_GPU
                               : cls == SN_FAIL_NETWORK ? SN_DOMAIN_LEAF
                                                        : SN_DOMAIN_SERVER;
    uint32_t id = (uint32_t)(pickv % sn_model_domain_count(x->m, kind));
    rc = sn_sched_fail(x->s, kind, id, x->now, err);
    if (rc == SN_ERR_LIMIT) { /* 255 nested failures: skip this one */
        sn_error_clear(err);
        return SN_OK;
    }
    if (rc == SN_OK)
        rc = push(x, x->now + fm->repair_s[cls], EV_REPAIR, (uint32_t)kind, id, 0, err);
    return rc;
}

/* Running job id may change speed now: re-plan its finish when it does. */
static enum sn_err rerate_job(struct sim *x, uint32_t id, struct sn_error *err)
{
    struct sim_job *j = &x->jobs[id];
    double rate = eff(j, job_rate(x, id, id), x->cfg->ckpt_cost_s);
    if (rate == j->rate_eff)
        return SN_OK;
    if (x->now > j->seg_start) {
        j->progress = progress_at(j, x->now);
        j->seg_start = x->now;
    }
    j->rate_eff = rate;
    return schedule_finish(x, id, err);
}

/* The running job on gpu (if any) changes speed now. */
static enum sn_err rerate(struct sim *x, uint32_t gpu, struct sn_error *err)
{
    uint32_t id = sn_sched_gpu_owner(x->s, gpu);
    return id == SN_NONE ? SN_OK : rerate_job(x, id, err);
}

/* Uplink loads changed: every job spanning supernodes is re-rated. */
static enum sn_err rerate_crossing(struct sim *x, struct sn_error *err)
{
    enum sn_err rc = SN_OK;
    if (!x->uplinks_changed)
        return rc;
    x->uplinks_changed = false;
    for (uint32_t i = 0; i < x->n_xs && rc == SN_OK; i++)
        rc = rerate_job(x, x->xs[i], err);
    return rc;
}

static enum sn_err on_slow_event(struct sim *x, const struct event *e, struct sn_error *err)
{
    const struct sn_sim_failure_model *fm = &x->cfg->fm;
    uint32_t gpu = e->a;
    if (e->kind == EV_SLOW) {
        gpu = (uint32_t)(sn_rng_next(&x->rng) % x->m->n_gpus);
        double gap = 3600.0 / (fm->slow_per_gpu_hour * x->m->n_gpus);
        enum sn_err rc = push(x, x->now + sn_rng_exp(&x->rng, gap), EV_SLOW, 0, 0, 0, err);
        if (rc != SN_OK || x->gpu_slow[gpu])
            return rc;
        x->gpu_slow[gpu] = 1;
        x->r->slow_gpus++;
        if ((rc = push(x, x->now + fm->slow_detect_s, EV_DETECT, gpu, 0, 0, err)) ||
            (rc = push(x, x->now + fm->slow_repair_s, EV_SLOW_FIX, gpu, 0, 0, err)))
            return rc;
        return rerate(x, gpu, err);
    }
    if (e->kind == EV_DETECT) {
        sn_sched_set_health(x->s, gpu, 0.3);
        uint32_t id = sn_sched_gpu_owner(x->s, gpu);
        if (id == SN_NONE || !x->cfg->sched.health_exclusion ||
            x->cfg->sched.policy != SN_SCHED_SUPERNODE_FIRST)
            return SN_OK;
        /* Move the job off the slow GPU at its next checkpoint. */
        struct sim_job *j = &x->jobs[id];
        double p = progress_at(j, x->now);
        double next = j->tau > 0 ? (floor(p / j->tau) + 1) * j->tau : j->remaining;
        if (next >= j->remaining)
            return SN_OK;
        double t = fmax(j->seg_start, x->now) + (next - p) / j->rate_eff;
        return push(x, t, EV_MIGRATE, id, j->gen, 0, err);
    }
    /* EV_SLOW_FIX: the GPU is replaced */
    x->gpu_slow[gpu] = 0;
    sn_sched_set_health(x->s, gpu, 1.0);
    return rerate(x, gpu, err);
}

static enum sn_err on_migrate(struct sim *x, const struct event *e, struct sn_error *err)
{
    if (x->jobs[e->a].gen != e->b)
        return SN_OK; /* stale: the job stopped or changed speed since */
    on_stop(x, e->a, true);
    x->r->preemptions++;
    enum sn_err rc = sn_sched_interrupt(x->s, e->a, x->now, err);
    sn_sched_clear_decisions(x->s); /* accounted for above */
    return rc;
}

/* ---- sampling ---------------------------------------------------------- */

static enum sn_err on_sample(struct sim *x, struct sn_error *err)
{
    struct sn_sched_stats st;
    sn_sched_stats(x->s, &st);
    struct sn_sim_result *r = x->r;
    if (r->n_samples == x->cap_samples && x->cap_samples < MAX_SAMPLES) {
        uint32_t cap = x->cap_samples ? x->cap_samples * 2 : 256;
        double *ns = realloc(r->samples, cap * sizeof(double));
        if (!ns)
            return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for samples");
        r->samples = ns;
        x->cap_samples = cap;
    }
    if (r->n_samples < x->cap_samples)
        r->samples[r->n_samples++] = st.gpus_total ? (double)st.gpus_busy / st.gpus_total : 0;
    uint32_t n;
    const uint32_t *pending = sn_sched_pending(x->s, &n);
    bool waiting_for_room = false;
    for (uint32_t i = 0; i < n; i++) {
        struct sn_job_info info;
        sn_sched_job_info(x->s, pending[i], &info);
        r->pending_reasons[info.reason]++;
        waiting_for_room |= info.reason == SN_PENDING_NO_FIT || info.reason == SN_PENDING_HEALTH ||
                            info.reason == SN_PENDING_BANDWIDTH;
    }
    x->frag_sum += waiting_for_room ? (double)st.gpus_free_usable / st.gpus_total : 0;
    x->frag_n++;
    return push(x, x->now + x->cfg->sample_s, EV_SAMPLE, 0, 0, 0, err);
}

static void on_snapshot(struct sim *x)
{
    struct sn_sim_result *r = x->r;
    r->snapshot_at_s = x->now;
    for (uint32_t sn = 0; sn < x->m->n_supernodes; sn++) {
        const struct sn_supernode *S = &x->m->supernodes[sn];
        r->snap_gpus[sn] = S->n_gpus;
        for (uint32_t g = S->first_gpu; g < S->first_gpu + S->n_gpus; g++) {
            r->snap_busy[sn] += sn_sched_gpu_owner(x->s, g) != SN_NONE;
            r->snap_down[sn] += sn_sched_gpu_down(x->s, g);
        }
    }
}

/* ---- the loop ---------------------------------------------------------- */

/* The pool of a job of gpus GPUs (see sn/sim.h). */
static uint32_t job_pool(const struct sim *x, uint32_t gpus)
{
    enum sn_pool_kind want = gpus >= x->cfg->dedicated_min_gpus ? SN_POOL_DEDICATED
                             : gpus == 1                        ? SN_POOL_ELASTIC
                                                                : SN_POOL_MIXED;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t p = 0; p < x->n_pools; p++)
            if (x->pool_kind[p] == (pass == 0 ? want : SN_POOL_MIXED))
                return p;
    return 0;
}

static enum sn_err submit_next(struct sim *x, struct sn_error *err)
{
    uint32_t i = x->next_submit++;
    const struct sn_sim_job *wj = &x->w->jobs[i];
    double est = wj->duration_s * (1 + x->cfg->estimate_error * sn_rng_uniform(&x->rng));
    struct sn_job_spec spec = {
        .tenant = wj->tenant % x->cfg->tenants,
        .pool = job_pool(x, wj->gpus),
        .cpu_cores_per_gpu = x->cfg->cpu_cores_per_gpu,
        .memory_bytes_per_gpu = x->cfg->memory_bytes_per_gpu,
        .priority = wj->priority,
        .gpus = wj->gpus,
        .group_gpus = wj->group_gpus,
        .preemptible = true,
        .walltime_s = est > 0 ? est : 1,
        .xsn_bytes_per_s = x->cfg->xsn_bytes_per_s,
        .restart_s = x->cfg->restart_s,
        .submit_s = wj->submit_s,
    };
    struct sim_job *j = &x->jobs[i];
    j->remaining = wj->duration_s;
    j->tau = job_tau(x, wj->gpus);
    spec.checkpoint_s = j->tau;
    uint32_t id;
    struct sn_error local = {0};
    if (sn_sched_submit(x->s, &spec, &id, &local) != SN_OK) {
        /* Never fits this cluster: counted, and cancelled at once so IDs
         * stay aligned with the workload. */
        spec.gpus = spec.group_gpus = 1;
        spec.one_supernode = false;
        enum sn_err rc = sn_sched_submit(x->s, &spec, &id, err);
        if (rc == SN_OK)
            rc = sn_sched_cancel(x->s, id, err);
        x->rejected++;
        return rc;
    }
    return SN_OK;
}

static enum sn_err handle(struct sim *x, const struct event *e, struct sn_error *err)
{
    switch ((enum ev_kind)e->kind) {
    case EV_FINISH:
        if (x->jobs[e->a].gen != e->b)
            return SN_OK;
        on_finish(x, e->a);
        return sn_sched_finish(x->s, e->a, x->now, err);
    case EV_FAIL:
        return on_fail(x, err);
    case EV_REPAIR:
        return sn_sched_repair(x->s, (enum sn_domain_kind)e->a, e->b, err);
    case EV_SLOW:
    case EV_DETECT:
    case EV_SLOW_FIX:
        return on_slow_event(x, e, err);
    case EV_MIGRATE:
        return on_migrate(x, e, err);
    case EV_SAMPLE:
        return on_sample(x, err);
    case EV_SNAPSHOT:
        on_snapshot(x);
        return SN_OK;
    }
    return SN_OK;
}

static enum sn_err run_pass(struct sim *x, struct sn_error *err)
{
    uint64_t t0 = x->cfg->clock_ns ? x->cfg->clock_ns(x->cfg->clock_ctx) : 0;
    enum sn_err rc = sn_sched_pass(x->s, x->now, err);
    if (x->cfg->clock_ns)
        x->sched_ns += x->cfg->clock_ns(x->cfg->clock_ctx) - t0;
    if (rc == SN_OK)
        rc = apply_decisions(x, err);
    return rc == SN_OK ? rerate_crossing(x, err) : rc;
}

static enum sn_err loop(struct sim *x, struct sn_error *err)
{
    const struct sn_sim_workload *w = x->w;
    double horizon = w->jobs[w->n_jobs - 1].submit_s + SN__SIM_HORIZON_S;
    enum sn_err rc = SN_OK;
    while (rc == SN_OK && x->done + x->rejected < w->n_jobs) {
        bool submit = x->next_submit < w->n_jobs &&
                      (x->n_heap == 0 || w->jobs[x->next_submit].submit_s <= x->heap[0].t);
        double t = submit ? w->jobs[x->next_submit].submit_s : x->heap[0].t;
        if (!submit && x->n_heap == 0)
            break;
        if (t > horizon)
            break;
        x->now = t;
        if (submit) {
            rc = submit_next(x, err);
        } else {
            struct event e = pop(x);
            rc = handle(x, &e, err);
        }
        if (rc == SN_OK)
            rc = apply_decisions(x, err); /* interruptions from failures */
        if (rc == SN_OK && x->cfg->check_invariants)
            rc = sn_sched_check_invariants(x->s, err);
        if (rc == SN_OK)
            rc = rerate_crossing(x, err);
        bool more_now = (x->next_submit < w->n_jobs && w->jobs[x->next_submit].submit_s <= t) ||
                        (x->n_heap > 0 && x->heap[0].t <= t);
        if (rc == SN_OK && !more_now)
            rc = run_pass(x, err);
    }
    return rc;
}

/* ---- results ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint32_t size_class(uint32_t gpus)
{
    return gpus == 1 ? 1 : gpus <= 8 ? 2 : gpus <= 64 ? 3 : 4;
}

/* Nearest-rank percentiles of values[0..n) (sorted here). */
static void dist(double *v, uint32_t n, struct sn_sim_dist *d)
{
    memset(d, 0, sizeof(*d));
    d->n = n;
    if (n == 0)
        return;
    qsort(v, n, sizeof(double), cmp_double);
    double sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += v[i];
    d->mean = sum / n;
    double q[3] = {0.50, 0.95, 0.99}, *out[3] = {&d->p50, &d->p95, &d->p99};
    for (int k = 0; k < 3; k++) {
        uint32_t rank = (uint32_t)ceil(q[k] * n);
        *out[k] = v[(rank ? rank : 1) - 1];
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Per-job first start, end and first-run servers (CSR, servers ascending). */
static enum sn_err per_job_results(struct sim *x, struct sn_error *err)
{
    struct sn_sim_result *r = x->r;
    uint32_t n = x->w->n_jobs;
    r->n_jobs = n;
    r->job_start_s = malloc(n * sizeof(double));
    r->job_end_s = malloc(n * sizeof(double));
    r->job_servers_off = calloc((size_t)n + 1, sizeof(uint32_t));
    r->job_servers = malloc(((size_t)x->n_first_servers + 1) * sizeof(uint32_t));
    if (!r->job_start_s || !r->job_end_s || !r->job_servers_off || !r->job_servers)
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for results");
    for (uint32_t i = 0; i < n; i++) {
        r->job_start_s[i] = isnan(x->queue_s[i]) ? NAN : x->jobs[i].first_start;
        r->job_end_s[i] = isnan(x->jct_s[i]) ? NAN : x->w->jobs[i].submit_s + x->jct_s[i];
    }
    for (uint32_t k = 0; k < x->n_first_servers; k++)
        r->job_servers_off[x->first_servers[k][0] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        r->job_servers_off[i + 1] += r->job_servers_off[i];
    uint32_t *fill = calloc((size_t)n + 1, sizeof(uint32_t));
    if (!fill)
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for results");
    for (uint32_t k = 0; k < x->n_first_servers; k++) {
        uint32_t j = x->first_servers[k][0];
        r->job_servers[r->job_servers_off[j] + fill[j]++] = x->first_servers[k][1];
    }
    free(fill);
    for (uint32_t i = 0; i < n; i++)
        qsort(r->job_servers + r->job_servers_off[i],
              r->job_servers_off[i + 1] - r->job_servers_off[i], sizeof(uint32_t), cmp_u32);
    return SN_OK;
}

enum sn_err sn__sim_finish_results(struct sim *x, struct sn_error *err)
{
    struct sn_sim_result *r = x->r;
    const struct sn_sim_workload *w = x->w;
    uint32_t n = w->n_jobs;
    double *tmp = malloc((n + 1) * sizeof(double));
    r->jct_sorted = malloc((n + 1) * sizeof(double));
    if (!tmp || !r->jct_sorted) {
        free(tmp);
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for results");
    }
    double ettr_num = 0, ettr_den = 0;
    for (uint32_t c = 0; c <= SN_SIM_SIZE_CLASSES; c++) {
        uint32_t k = 0, q = 0;
        for (uint32_t i = 0; i < n; i++)
            if (!isnan(x->jct_s[i]) && (c == 0 || size_class(w->jobs[i].gpus) == c))
                tmp[k++] = x->jct_s[i];
        if (c == 0) {
            memcpy(r->jct_sorted, tmp, k * sizeof(double));
            r->n_jct = k;
            qsort(r->jct_sorted, k, sizeof(double), cmp_double);
        }
        dist(tmp, k, &r->jct[c]);
        for (uint32_t i = 0; i < n; i++)
            if (!isnan(x->queue_s[i]) && (c == 0 || size_class(w->jobs[i].gpus) == c))
                tmp[q++] = x->queue_s[i];
        dist(tmp, q, &r->queue[c]);
    }
    for (uint32_t i = 0; i < n; i++)
        if (!isnan(x->jct_s[i])) {
            ettr_num += w->jobs[i].duration_s * w->jobs[i].gpus;
            ettr_den +=
                (w->jobs[i].submit_s + x->jct_s[i] - x->jobs[i].first_start) * w->jobs[i].gpus;
        }
    free(tmp);
    enum sn_err prc = per_job_results(x, err);
    if (prc != SN_OK)
        return prc;
    double span = r->makespan_s - w->jobs[0].submit_s;
    r->makespan_s = span > 0 ? span : 0;
    r->busy_gpu_h = x->gp.allocated_gpu_s / 3600;
    r->useful_gpu_h = x->gp.useful_gpu_s / 3600;
    r->lost_gpu_h = x->gp.lost_gpu_s / 3600;
    r->utilisation = span > 0 ? x->gp.allocated_gpu_s / (span * x->m->n_gpus) : 0;
    r->goodput = x->gp.allocated_gpu_s > 0 ? sn_goodput_ratio(&x->gp) : 0;
    r->ettr = ettr_den > 0 ? ettr_num / ettr_den : 0;
    r->fragmentation = x->frag_n ? x->frag_sum / x->frag_n : 0;
    r->jobs_done = x->done;
    r->jobs_unfinished = n - x->done;
    r->sched_ns_per_decision = r->decisions ? (double)x->sched_ns / r->decisions : 0;
    return SN_OK;
}

void sn_sim_result_free(struct sn_sim_result *r)
{
    if (!r)
        return;
    free(r->samples);
    free(r->jct_sorted);
    free(r->snap_busy);
    free(r->snap_down);
    free(r->snap_gpus);
    free(r->job_start_s);
    free(r->job_end_s);
    free(r->job_servers_off);
    free(r->job_servers);
    free(r);
}

/* The scheduler of the run: tenants with the configured quotas, and the
 * spec's pools with their priorities and borrowing (see sn/sim.h). */
static enum sn_err create_sched(struct sim *x, struct sn_error *err)
{
    const struct sn_sim_config *c = x->cfg;
    const struct sn_spec *spec = x->m->spec;
    struct sn_sched_config sc = c->sched;
    uint32_t nt = c->tenants ? c->tenants : 1;
    struct sn_sched_tenant *tenants = calloc(nt, sizeof(*tenants));
    if (!tenants)
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory");
    for (uint32_t t = 0; t < nt; t++) {
        tenants[t].quota_gpus = c->quota_gpus;
        tenants[t].quota_gpus_per_supernode = c->quota_gpus_per_supernode;
    }
    static const int32_t prio[SN_POOL_KIND_COUNT] = {2, 1, 0}; /* dedicated, mixed, elastic */
    struct sn_sched_pool pools[SN_SCHED_MAX_POOLS];
    x->n_pools = spec->n_pools <= SN_SCHED_MAX_POOLS ? spec->n_pools : 0;
    for (uint32_t p = 0; p < x->n_pools; p++) {
        enum sn_pool_kind k = spec->pools[p].kind;
        x->pool_kind[p] = (uint8_t)k;
        uint32_t all = x->n_pools >= 32 ? UINT32_MAX : (1u << x->n_pools) - 1;
        pools[p] = (struct sn_sched_pool){k, prio[k], c->borrow ? all & ~(1u << p) : 0};
    }
    sc.n_tenants = nt;
    sc.tenants = tenants;
    sc.n_pools = x->n_pools;
    sc.pools = x->n_pools ? pools : NULL;
    sc.max_jobs = x->w->n_jobs + 1;
    enum sn_err rc = sn_sched_create(x->m, &sc, &x->s, err);
    free(tenants);
    return rc;
}

enum sn_err sn__sim_setup(struct sim *x, struct sn_error *err)
{
    uint32_t n = x->w->n_jobs, nsn = x->m->n_supernodes;
    x->jobs = calloc(n, sizeof(*x->jobs));
    x->queue_s = malloc(n * sizeof(double));
    x->jct_s = malloc(n * sizeof(double));
    x->gpu_slow = calloc(x->m->n_gpus + 1, 1);
    x->xs = malloc(n * sizeof(uint32_t));
    x->xs_pos = malloc(n * sizeof(uint32_t));
    x->hw = calloc(x->m->spec->n_templates + 1, sizeof(*x->hw));
    x->r = calloc(1, sizeof(*x->r));
    if (x->r) {
        x->r->snap_busy = calloc(nsn, sizeof(uint32_t));
        x->r->snap_down = calloc(nsn, sizeof(uint32_t));
        x->r->snap_gpus = calloc(nsn, sizeof(uint32_t));
        x->r->n_supernodes = nsn;
    }
    if (!x->jobs || !x->queue_s || !x->jct_s || !x->gpu_slow || !x->r || !x->r->snap_busy ||
        !x->r->snap_down || !x->r->snap_gpus || !x->xs || !x->xs_pos || !x->hw)
        return sn_error_set(err, SN_ERR_NOMEM, "simulation: out of memory for %u jobs", n);
    for (uint32_t i = 0; i < n; i++) {
        x->queue_s[i] = x->jct_s[i] = NAN;
        x->xs_pos[i] = SN_NONE;
    }
    for (uint32_t t = 0; t < x->m->spec->n_templates; t++) {
        enum sn_err rc = sn_sim_comm_hw(x->m, t, &x->hw[t], err);
        if (rc != SN_OK)
            return rc;
    }
    x->n_leaves = sn_model_domain_count(x->m, SN_DOMAIN_LEAF);
    sn_rng_seed(&x->rng, x->cfg->seed);
    return SN_OK;
}

enum sn_err sn__sim_first_events(struct sim *x, bool slow, struct sn_error *err)
{
    const struct sn_sim_config *c = x->cfg;
    uint32_t n = x->w->n_jobs;
    enum sn_err rc;
    double first = x->w->jobs[0].submit_s, last = x->w->jobs[n - 1].submit_s;
    double snap = c->snapshot_s >= 0 ? c->snapshot_s : (first + last) / 2;
    if ((rc = push(x, first, EV_SAMPLE, 0, 0, 0, err)) ||
        (rc = push(x, snap, EV_SNAPSHOT, 0, 0, 0, err)))
        return rc;
    if (c->failures && c->fm.per_gpu_hour > 0)
        rc = push(x, first + sn_rng_exp(&x->rng, fail_mean_gap(x)), EV_FAIL, 0, 0, 0, err);
    if (rc == SN_OK && slow && c->failures && c->fm.slow_per_gpu_hour > 0)
        rc = push(x, first + sn_rng_exp(&x->rng, 3600.0 / (c->fm.slow_per_gpu_hour * x->m->n_gpus)),
                  EV_SLOW, 0, 0, 0, err);
    return rc;
}

void sn__sim_release(struct sim *x)
{
    free(x->heap);
    free(x->jobs);
    free(x->queue_s);
    free(x->jct_s);
    free(x->gpu_slow);
    free(x->xs);
    free(x->xs_pos);
    free(x->hw);
    free(x->first_servers);
}

/* ---- for the control engine (sim_int.h) ----------------------------------- */

enum sn_err sn__sim_push(struct sim *x, double t, uint32_t kind, uint32_t a, uint32_t b, uint32_t c,
                         struct sn_error *err)
{
    return push(x, t, kind, a, b, c, err);
}

struct event sn__sim_pop(struct sim *x)
{
    return pop(x);
}

double sn__sim_job_tau(const struct sim *x, uint32_t gpus)
{
    return job_tau(x, gpus);
}

uint32_t sn__sim_job_pool(const struct sim *x, uint32_t gpus)
{
    return job_pool(x, gpus);
}

double sn__sim_job_rate(struct sim *x, uint32_t sid, uint32_t wid)
{
    return job_rate(x, sid, wid);
}

double sn__sim_eff(const struct sim_job *j, double rate, double cost)
{
    return eff(j, rate, cost);
}

double sn__sim_progress_at(const struct sim_job *j, double t)
{
    return progress_at(j, t);
}

enum sn_err sn__sim_note_first_servers(struct sim *x, uint32_t sid, uint32_t wid,
                                       struct sn_error *err)
{
    return note_first_servers(x, sid, wid, err);
}

enum sn_err sn__sim_sample(struct sim *x, struct sn_error *err)
{
    return on_sample(x, err);
}

void sn__sim_snapshot(struct sim *x)
{
    on_snapshot(x);
}

enum sn_err sn_sim_run(const struct sn_model *m, const struct sn_sim_workload *w,
                       const struct sn_sim_config *c, struct sn_sim_result **out,
                       struct sn_error *err)
{
    *out = NULL;
    if (!w->n_jobs || m->n_gpus == 0)
        return sn_error_set(err, SN_ERR_INVALID, "simulation: no jobs or no GPUs");
    if (c->engine == SN_SIM_ENGINE_CONTROL)
        return sn__sim_run_control(m, w, c, out, err);
    struct sim x = {.m = m, .w = w, .cfg = c};
    enum sn_err rc = sn__sim_setup(&x, err);
    if (rc == SN_OK)
        rc = create_sched(&x, err);
    if (rc == SN_OK)
        rc = sn__sim_first_events(&x, true, err);
    if (rc == SN_OK)
        rc = loop(&x, err);
    if (rc == SN_OK)
        rc = sn__sim_finish_results(&x, err);
    sn_sched_destroy(x.s);
    sn__sim_release(&x);
    if (rc != SN_OK) {
        sn_sim_result_free(x.r);
        return rc;
    }
    *out = x.r;
    return SN_OK;
}
