/*
 * One scheduling pass: queue order, EASY backfill, bounded gang preemption
 * and pending reasons.
 *
 * Order (docs/scheduler.md): effective priority (pool priority + job
 * priority) high first; then fair share, lowest first, where
 *     fs(t) = running_gpus(t) / (share(t) / sum of shares x total GPUs)
 * is taken at the start of the pass; then submit time; then job ID.
 *
 * A job that fails for want of room (not for its quota) may preempt: the
 * first MAX_PREEMPT_TRIES such jobs in order are tried, and at most one
 * preemption happens per pass. A job that fits one supernode takes the
 * supernode where its victims cost least; otherwise (a gang spanning
 * supernodes) the set of supernodes comes first: each supernode's
 * potential is what it could hold with every eligible victim gone, and the
 * fewest supernodes whose potentials cover the job (within one spine pod
 * when one suffices; ties to the cheaper) are chosen; then the cheapest
 * victims in that set, one whole gang at a time, until the job fits there.
 * Either way the preemptor's placement is first searched with the victims
 * lifted (bandwidth admission included): a preemptor that would be refused
 * evicts nobody.
 *
 * Victims sit on supernodes of the preemptor's own pool only (Kueue's
 * borrowWithinCohort: Never): there a job of lower priority, or of another
 * pool (a borrower: reclaim), may go; a reclaimed victim may not borrow the
 * reclaiming pool for reclaim_holdoff_s. Priority preemption on borrowed
 * capacity made owner and borrower evict each other in turn
 * (docs/scheduler.md).
 *
 * The first job still waiting is the head and gets an EASY reservation:
 * the shadow time is the earliest walltime-estimated end of running jobs
 * at which the free GPUs of its pools (counted, not placed) reach its
 * size; extra is what is left over then. A later job may start only when
 * it ends before the shadow time or uses at most extra GPUs (extra then
 * shrinks). Failures of one (tenant, pool, group, constraints) signature
 * hold for larger jobs of the same signature for the rest of the pass
 * (placements only take GPUs), which keeps a 10,000-job pass cheap.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_int.h"

/* Bounds on preemption work per pass: one successful preemption, and at
 * most this many blocked jobs looked at for one. */
#define MAX_PREEMPT_TRIES 8
/* Bound on the gangs one preemption may stop. */
#define MAX_VICTIMS 64

struct fail_sig {
    uint32_t tenant, pool, group, gpus;
    uint8_t health_min;
    bool one_sn, spread;
    uint8_t reason;
};

struct pass {
    struct sn_sched *s;
    double now;
    double *fs; /* per tenant */
    struct fail_sig sigs[MAX_FAIL_SIGS];
    uint32_t n_sigs;
};

/* The static part of the queue order: priority, submission, ID. */
static int cmp_static(const void *ctx, uint32_t a, uint32_t b)
{
    const struct sched_job *x = &((const struct sn_sched *)ctx)->jobs[a];
    const struct sched_job *y = &((const struct sn_sched *)ctx)->jobs[b];
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    if (x->spec.submit_s != y->spec.submit_s)
        return x->spec.submit_s < y->spec.submit_s ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int cmp_queue(const void *ctx, uint32_t a, uint32_t b)
{
    const struct pass *p = ctx;
    const struct sched_job *x = &p->s->jobs[a], *y = &p->s->jobs[b];
    if (x->prio != y->prio)
        return x->prio > y->prio ? -1 : 1;
    double fx = p->fs[x->spec.tenant], fy = p->fs[y->spec.tenant];
    if (fx != fy)
        return fx < fy ? -1 : 1;
    if (x->spec.submit_s != y->spec.submit_s)
        return x->spec.submit_s < y->spec.submit_s ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int cmp_tenant_fs(const void *ctx, uint32_t a, uint32_t b)
{
    const struct pass *p = ctx;
    if (p->fs[a] != p->fs[b])
        return p->fs[a] < p->fs[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static void fair_share(struct pass *p)
{
    const struct sn_sched *s = p->s;
    double total_share = 0;
    for (uint32_t t = 0; t < s->cfg.n_tenants; t++)
        total_share += s->tenants[t].share > 0 ? s->tenants[t].share : 1;
    for (uint32_t t = 0; t < s->cfg.n_tenants; t++) {
        double share = s->tenants[t].share > 0 ? s->tenants[t].share : 1;
        double entitled = share / total_share * (s->m->n_gpus ? s->m->n_gpus : 1);
        p->fs[t] = s->tenant_gpus[t] / entitled;
    }
}

/* ---- failure signatures ---------------------------------------------- */

static const struct fail_sig *sig_find(const struct pass *p, const struct sched_job *j)
{
    for (uint32_t i = 0; i < p->n_sigs; i++) {
        const struct fail_sig *f = &p->sigs[i];
        if (f->tenant == j->spec.tenant && f->pool == j->spec.pool &&
            f->group == j->spec.group_gpus && f->health_min == j->health_min &&
            f->one_sn == j->spec.one_supernode && f->spread == j->spec.spread_power &&
            j->spec.gpus >= f->gpus)
            return f;
    }
    return NULL;
}

static void sig_add(struct pass *p, const struct sched_job *j, enum sn_pending_reason why)
{
    if (p->n_sigs == MAX_FAIL_SIGS || (why != SN_PENDING_NO_FIT && why != SN_PENDING_HEALTH))
        return;
    if (j->holdoff_pools && p->now < j->holdoff_until_s)
        return; /* it sees fewer supernodes than others of its signature */
    p->sigs[p->n_sigs++] = (struct fail_sig){
        j->spec.tenant, j->spec.pool,          j->spec.group_gpus,   j->spec.gpus,
        j->health_min,  j->spec.one_supernode, j->spec.spread_power, (uint8_t)why};
}

/* ---- preemption ------------------------------------------------------ */

static bool victim_ok(const struct sn_sched *s, const struct sched_job *pre, uint32_t sn,
                      const struct sched_job *v, double now)
{
    if (!v->spec.preemptible || v->leaving || now - v->start_s < s->cfg.min_runtime_s)
        return false; /* a signalled victim's GPUs are promised already */
    bool window_open = now - v->window_start_s >= s->cfg.preemption_window_s;
    if (!window_open && v->window_count >= s->cfg.max_preemptions)
        return false;
    if (s->sn_pool[sn] != pre->spec.pool)
        return false; /* no preemption on borrowed capacity (Kueue borrowWithinCohort: Never) */
    bool reclaim = v->spec.pool != pre->spec.pool; /* v borrows sn from pre's pool */
    return v->prio < pre->prio || reclaim;
}

/* GPU-seconds a preemption of v loses: the work since its last reported
 * checkpoint (sn_sched_set_checkpoint), else since the last one its
 * interval implies, else since its start; plus the restart. */
static double victim_cost(const struct sched_job *v, double now)
{
    double run = now - v->start_s;
    double lost = v->ckpt_s >= v->start_s && v->ckpt_s > 0 ? now - v->ckpt_s
                  : v->spec.checkpoint_s > 0               ? fmod(run, v->spec.checkpoint_s)
                                                           : run;
    if (lost < 0)
        lost = 0;
    return v->spec.gpus * (lost + v->spec.restart_s);
}

struct victim_ctx {
    const struct sn_sched *s;
    double now;
};

/* Elastic pools first, then lower priority, then cost, then ID. */
static int cmp_victim(const void *ctx, uint32_t a, uint32_t b)
{
    const struct victim_ctx *c = ctx;
    const struct sn_sched *s = c->s;
    const struct sched_job *x = &s->jobs[a], *y = &s->jobs[b];
    bool ex = s->pools[x->spec.pool].kind == SN_POOL_ELASTIC;
    bool ey = s->pools[y->spec.pool].kind == SN_POOL_ELASTIC;
    if (ex != ey)
        return ex ? -1 : 1;
    if (x->prio != y->prio)
        return x->prio < y->prio ? -1 : 1;
    double cx = victim_cost(x, c->now), cy = victim_cost(y, c->now);
    if (cx != cy)
        return cx < cy ? -1 : 1;
    return a < b ? -1 : a > b;
}

static struct place_mode victim_mode(const struct sn_sched *s)
{
    return (struct place_mode){s->cfg.policy == SN_SCHED_SUPERNODE_FIRST && s->cfg.health_exclusion,
                               true, true, false, false};
}

/* Adds to srv_extra the GPUs of victim v that pre could use: those in sn,
 * or with sn == SN_NONE those in supernodes marked in sn_take. */
static void add_victim(struct sn_sched *s, const struct sched_job *v, const struct sched_job *pre,
                       const struct place_mode *mode, uint32_t sn)
{
    for (uint32_t i = 0; i < v->spec.gpus; i++) {
        uint32_t g = v->gpus[i], gsn = s->m->gpu_supernode[g];
        if ((sn != SN_NONE ? gsn != sn : !s->sn_take[gsn]) || s->gpu_down[g])
            continue;
        if (mode->use_health && (s->gpu_cordon[g] || s->gpu_health[g] < pre->health_min))
            continue;
        s->srv_extra[s->m->gpu_server[g]]++;
    }
}

/* Appends to pick[*nv] the eligible victims with GPUs in sn (each once per
 * stamp). */
static void collect_victims(struct sn_sched *s, uint32_t sn, const struct sched_job *pre,
                            double now, uint32_t *nv)
{
    const struct sn_supernode *S = &s->m->supernodes[sn];
    for (uint32_t g = S->first_gpu; g < S->first_gpu + S->n_gpus; g++) {
        uint32_t o = s->gpu_owner[g];
        if (o == SN_NONE || s->job_mark[o] == s->stamp)
            continue;
        s->job_mark[o] = s->stamp;
        if (victim_ok(s, pre, sn, &s->jobs[o], now))
            s->pick[(*nv)++] = o;
    }
}

static void clear_extra_sn(struct sn_sched *s, uint32_t sn)
{
    const struct sn_supernode *S = &s->m->supernodes[sn];
    for (uint32_t srv = S->first_server; srv < S->first_server + S->n_servers; srv++)
        s->srv_extra[srv] = 0;
}

/* Victims on sn for preemptor pre: into s->pick (as job IDs), sorted;
 * then the shortest prefix that makes pre fit. Returns the prefix length
 * (0: none) and its cost in *cost. Leaves srv_extra cleared. */
static uint32_t plan_victims(struct sn_sched *s, uint32_t sn, const struct sched_job *pre,
                             double now, double *cost)
{
    struct place_mode mode = victim_mode(s);
    uint32_t nv = 0;
    ++s->stamp;
    collect_victims(s, sn, pre, now, &nv);
    struct victim_ctx ctx = {s, now};
    sn__sched_sort(s->pick, nv, cmp_victim, &ctx);
    uint32_t k = 0;
    *cost = 0;
    bool fits = false;
    while (k < nv && !fits) {
        const struct sched_job *v = &s->jobs[s->pick[k++]];
        add_victim(s, v, pre, &mode, sn);
        *cost += victim_cost(v, now);
        fits = sn__sched_sn_capacity(s, sn, pre, &mode) >= pre->spec.gpus;
    }
    clear_extra_sn(s, sn);
    return fits ? k : 0;
}

/* Whether job would be placed, and admitted (bandwidth included), with
 * victims[0..nv) gone: they are lifted for the search and put back, so a
 * refused preemptor evicts nobody (its reason is then the refusal's). */
static bool would_place(struct sn_sched *s, uint32_t job, const uint32_t *victims, uint32_t nv)
{
    for (uint32_t i = 0; i < nv; i++)
        sn__sched_hold(s, victims[i], false);
    enum sn_pending_reason why = sn__sched_plan(s, job);
    for (uint32_t i = nv; i-- > 0;)
        sn__sched_hold(s, victims[i], true);
    if (why != SN_PENDING_NONE)
        s->jobs[job].reason = (uint8_t)why;
    return why == SN_PENDING_NONE;
}

/* Requeues victims[0..nv) for job (window accounting), then places job;
 * nothing happens unless the placement is known to succeed. */
static bool evict_and_place(struct sn_sched *s, uint32_t job, const uint32_t *victims, uint32_t nv,
                            double now)
{
    if (!would_place(s, job, victims, nv))
        return false;
    bool signal = s->cfg.preempt_signal;
    for (uint32_t i = 0; i < nv; i++) {
        struct sched_job *v = &s->jobs[victims[i]];
        if (now - v->window_start_s >= s->cfg.preemption_window_s) {
            v->window_start_s = now;
            v->window_count = 0;
        }
        v->window_count++;
        if (v->spec.pool != s->jobs[job].spec.pool) { /* reclaimed: hold off re-borrowing */
            if (now >= v->holdoff_until_s)
                v->holdoff_pools = 0;
            v->holdoff_pools |= 1u << s->jobs[job].spec.pool;
            v->holdoff_until_s = now + s->cfg.reclaim_holdoff_s;
        }
        if (signal) { /* cooperative: the victim leaves when the caller evicts it */
            v->leaving = true;
            v->leaving_for = job;
            s->jobs[job].awaiting++;
            sn__sched_decide(s, SN_DECISION_SIGNAL, victims[i], job);
        } else {
            sn__sched_requeue(s, victims[i], SN_DECISION_PREEMPT, job);
        }
    }
    return signal ? true : sn__sched_place(s, job, now) == SN_PENDING_NONE;
}

/* Preempts the cheapest victims in the supernode where pre fits at the
 * lowest cost, then places pre. True when pre started. */
static bool preempt_single(struct sn_sched *s, uint32_t job, double now)
{
    const struct sched_job *pre = &s->jobs[job];
    uint32_t best = SN_NONE;
    double best_cost = INFINITY;
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++) {
        if (s->m->supernodes[sn].n_gpus < pre->spec.gpus || s->sn_busy[sn] == 0 ||
            !sn__sched_sn_allowed(s, sn, pre, true))
            continue;
        double cost;
        if (plan_victims(s, sn, pre, now, &cost) > 0 && cost < best_cost) {
            best = sn;
            best_cost = cost;
        }
    }
    if (best == SN_NONE)
        return false;
    double cost;
    uint32_t k = plan_victims(s, best, pre, now, &cost);
    /* pick is reused by placement: copy the victims first. */
    uint32_t victims[MAX_VICTIMS];
    if (k > MAX_VICTIMS)
        return false; /* bounded: at most MAX_VICTIMS gangs per preemption */
    memcpy(victims, s->pick, k * sizeof(uint32_t));
    return evict_and_place(s, job, victims, k, now);
}

/* ---- preemption across supernodes ------------------------------------ */

/* What supernode sn could hold for pre with every eligible victim there
 * gone (into sn_take[sn]) and what freeing all of them costs (*cost). */
static uint32_t sn_potential(struct sn_sched *s, uint32_t sn, const struct sched_job *pre,
                             double now, double *cost)
{
    struct place_mode mode = victim_mode(s);
    uint32_t nv = 0;
    ++s->stamp;
    collect_victims(s, sn, pre, now, &nv);
    *cost = 0;
    for (uint32_t i = 0; i < nv; i++) {
        add_victim(s, &s->jobs[s->pick[i]], pre, &mode, sn);
        *cost += victim_cost(&s->jobs[s->pick[i]], now);
    }
    uint32_t cap = sn__sched_sn_capacity(s, sn, pre, &mode);
    clear_extra_sn(s, sn);
    return cap;
}

struct set_ctx {
    const struct sn_sched *s;
    const double *cost;
    bool by_pod;
};

/* Pod (when by_pod), then potential capacity (descending), then the cost
 * of freeing it all, then ID. */
static int cmp_potential(const void *ctx, uint32_t x, uint32_t y)
{
    const struct set_ctx *c = ctx;
    const struct sn_sched *s = c->s;
    if (c->by_pod && s->sn_pod[x] != s->sn_pod[y])
        return s->sn_pod[x] < s->sn_pod[y] ? -1 : 1;
    if (s->sn_take[x] != s->sn_take[y])
        return s->sn_take[x] > s->sn_take[y] ? -1 : 1;
    if (c->cost[x] != c->cost[y])
        return c->cost[x] < c->cost[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Topology first: the fewest of the nc candidates in sn_order (potentials
 * in sn_take) that cover pre, within one pod when a pod suffices, else
 * cluster-wide; moved to sn_order[0..k). Returns k (0: none). */
static uint32_t choose_set(struct sn_sched *s, const struct sched_job *pre, uint32_t nc,
                           const double *cost)
{
    struct set_ctx ctx = {s, cost, true};
    sn__sched_sort(s->sn_order, nc, cmp_potential, &ctx);
    uint32_t best_first = 0, best_k = 0;
    for (uint32_t a = 0; a < nc;) {
        uint32_t b = a, sum = 0, k = 0;
        while (b < nc && s->sn_pod[s->sn_order[b]] == s->sn_pod[s->sn_order[a]])
            b++;
        for (uint32_t i = a; i < b && sum < pre->spec.gpus; i++, k++)
            sum += s->sn_take[s->sn_order[i]];
        if (sum >= pre->spec.gpus && (best_k == 0 || k < best_k)) {
            best_k = k;
            best_first = a;
        }
        a = b;
    }
    if (best_k == 0) { /* no pod suffices: across pods, largest first */
        ctx.by_pod = false;
        sn__sched_sort(s->sn_order, nc, cmp_potential, &ctx);
        uint32_t sum = 0;
        while (best_k < nc && sum < pre->spec.gpus)
            sum += s->sn_take[s->sn_order[best_k++]];
        if (sum < pre->spec.gpus)
            return 0;
    }
    memmove(s->sn_order, s->sn_order + best_first, best_k * sizeof(uint32_t));
    return best_k;
}

/* Candidates for a multi-supernode preemption: allowed supernodes whose
 * potential holds at least one group, into sn_order (potential in
 * sn_take, cost of freeing all in cost[]). Returns how many. */
static uint32_t potential_candidates(struct sn_sched *s, const struct sched_job *pre, double now,
                                     double *cost)
{
    uint32_t nc = 0;
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++) {
        if (!sn__sched_sn_allowed(s, sn, pre, true))
            continue;
        uint32_t cap = sn_potential(s, sn, pre, now, &cost[sn]);
        if (cap < pre->spec.group_gpus)
            continue;
        s->sn_take[sn] = cap;
        s->sn_order[nc++] = sn;
    }
    return nc;
}

/* The cheapest victims in the k supernodes of sn_order that make pre fit
 * there (sn_take marks the set): their count in pick[0..), 0 when none. */
static uint32_t plan_set_victims(struct sn_sched *s, const struct sched_job *pre, uint32_t k,
                                 double now)
{
    struct place_mode mode = victim_mode(s);
    uint32_t nv = 0, used = 0;
    ++s->stamp;
    for (uint32_t i = 0; i < k; i++)
        collect_victims(s, s->sn_order[i], pre, now, &nv);
    struct victim_ctx vctx = {s, now};
    sn__sched_sort(s->pick, nv, cmp_victim, &vctx);
    bool fits = false;
    while (used < nv && !fits) {
        add_victim(s, &s->jobs[s->pick[used++]], pre, &mode, SN_NONE);
        uint64_t sum = 0;
        for (uint32_t i = 0; i < k; i++)
            sum += sn__sched_sn_capacity(s, s->sn_order[i], pre, &mode);
        fits = sum >= pre->spec.gpus;
    }
    for (uint32_t i = 0; i < k; i++)
        clear_extra_sn(s, s->sn_order[i]);
    return fits ? used : 0;
}

/* A gang that needs several supernodes: choose the set first (topology),
 * then the cheapest victims there, whole gangs, at most MAX_VICTIMS. */
static bool preempt_multi(struct sn_sched *s, uint32_t job, double now)
{
    const struct sched_job *pre = &s->jobs[job];
    double *cost = malloc((s->m->n_supernodes + 1) * sizeof(double));
    if (!cost)
        return false;
    uint32_t nc = potential_candidates(s, pre, now, cost);
    uint32_t k = choose_set(s, pre, nc, cost);
    free(cost);
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++)
        s->sn_take[sn] = 0;
    for (uint32_t i = 0; i < k; i++)
        s->sn_take[s->sn_order[i]] = 1;
    uint32_t nv = k ? plan_set_victims(s, pre, k, now) : 0;
    for (uint32_t i = 0; i < k; i++)
        s->sn_take[s->sn_order[i]] = 0;
    if (nv == 0 || nv > MAX_VICTIMS)
        return false;
    uint32_t victims[MAX_VICTIMS];
    memcpy(victims, s->pick, nv * sizeof(uint32_t));
    return evict_and_place(s, job, victims, nv, now);
}

static bool preempt_for(struct sn_sched *s, uint32_t job, double now)
{
    if (s->jobs[job].awaiting > 0)
        return false; /* its signalled victims have not left yet */
    if (preempt_single(s, job, now))
        return true;
    return !s->jobs[job].spec.one_supernode && preempt_multi(s, job, now);
}

/* ---- reservation ----------------------------------------------------- */

static double job_end(const struct sched_job *j, double now)
{
    double end = j->start_s + j->spec.walltime_s;
    return end > now ? end : now;
}

static int cmp_end(const void *ctx, uint32_t a, uint32_t b)
{
    const struct pass *p = ctx;
    double x = job_end(&p->s->jobs[a], p->now), y = job_end(&p->s->jobs[b], p->now);
    if (x != y)
        return x < y ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* EASY reservation for head: *shadow and *extra (see the top); *after
 * the running job whose end the shadow is (SN_NONE: none). */
static void reserve(struct pass *p, const struct sched_job *head, double *shadow, uint32_t *extra,
                    uint32_t *after)
{
    *after = SN_NONE;
    struct sn_sched *s = p->s;
    bool health = s->cfg.policy == SN_SCHED_SUPERNODE_FIRST && s->cfg.health_exclusion;
    uint64_t free_now = 0;
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++)
        if (sn__sched_sn_allowed(s, sn, head, false))
            free_now += health ? s->sn_usable[sn] : s->sn_up[sn];
    *shadow = INFINITY;
    *extra = free_now > head->spec.gpus ? (uint32_t)(free_now - head->spec.gpus) : 0;
    uint32_t *order = malloc((s->n_running + 1) * sizeof(uint32_t));
    if (!order)
        return;
    if (s->n_running > 0)
        memcpy(order, s->running, s->n_running * sizeof(uint32_t));
    sn__sched_sort(order, s->n_running, cmp_end, p);
    uint64_t avail = free_now;
    for (uint32_t i = 0; i < s->n_running; i++) {
        const struct sched_job *r = &s->jobs[order[i]];
        for (uint32_t k = 0; k < r->spec.gpus; k++)
            avail += sn__sched_sn_allowed(s, s->m->gpu_supernode[r->gpus[k]], head, false);
        if (avail >= head->spec.gpus) {
            *shadow = job_end(r, p->now);
            *extra = (uint32_t)(avail - head->spec.gpus);
            *after = order[i];
            break;
        }
    }
    free(order);
}

/* ---- the pass -------------------------------------------------------- */

static void run_queue(struct pass *p, uint32_t *order, uint32_t n)
{
    struct sn_sched *s = p->s;
    uint32_t head = SN_NONE, extra = 0;
    double shadow = INFINITY;
    bool preempted = false;
    uint32_t tries = 0;
    s->resv_job = s->resv_after = SN_NONE;
    s->resv_start_s = INFINITY;
    s->resv_pass_s = p->now;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t id = order[i];
        struct sched_job *j = &s->jobs[id];
        bool in_window = true;
        if (head != SN_NONE) {
            if (!s->cfg.backfill) {
                j->reason = SN_PENDING_PRIORITY;
                continue;
            }
            in_window = p->now + j->spec.walltime_s <= shadow;
            if (!in_window && j->spec.gpus > extra) {
                j->reason = SN_PENDING_RESERVATION;
                continue;
            }
        }
        const struct fail_sig *f = sig_find(p, j);
        if (f && f->reason == SN_PENDING_NO_FIT) {
            j->reason = SN_PENDING_NO_FIT;
            continue;
        }
        enum sn_pending_reason why = sn__sched_place(s, id, p->now);
        if (why == SN_PENDING_NONE) {
            if (!in_window)
                extra -= j->spec.gpus;
            continue;
        }
        j->reason = (uint8_t)why;
        sig_add(p, j, why);
        if (why == SN_PENDING_QUOTA || why == SN_PENDING_QUOTA_SUPERNODE)
            continue;
        if (s->cfg.preemption && !preempted && tries < MAX_PREEMPT_TRIES) {
            tries++;
            if (preempt_for(s, id, p->now)) {
                preempted = true;
                p->n_sigs = 0; /* GPUs were freed: earlier failures may no longer hold */
                if (!s->cfg.preempt_signal)
                    continue;
                /* Signalled: the job waits for its victims as the head. */
            }
        }
        if (head != SN_NONE)
            continue;
        head = id;
        reserve(p, j, &shadow, &extra, &s->resv_after);
        s->resv_job = id;
        s->resv_start_s = shadow;
    }
}

void sn_sched_reservation(const struct sn_sched *s, struct sn_sched_reservation *out)
{
    *out = (struct sn_sched_reservation){s->resv_job, s->resv_start_s, s->resv_after,
                                         s->resv_pass_s};
    if (out->job != SN_NONE && (out->job >= s->n_jobs || s->jobs[out->job].state != SN_JOB_PENDING))
        *out = (struct sn_sched_reservation){SN_NONE, INFINITY, SN_NONE, s->resv_pass_s};
}

/* ---- the queue's order ------------------------------------------------ */

/* The order by definition: every pending job compared by cmp_queue. */
static void reference_order(struct pass *p, uint32_t *order)
{
    memcpy(order, p->s->pending, p->s->n_pending * sizeof(uint32_t));
    sn__sched_sort(order, p->s->n_pending, cmp_queue, p);
}

/* Brings s->queue up to date: the jobs that left pending are dropped, the
 * new ones sorted and merged in (scratch: n_pending + 1 entries). */
static void queue_update(struct sn_sched *s, uint32_t *scratch)
{
    uint32_t kept = 0, fresh = 0;
    for (uint32_t i = 0; i < s->n_queue; i++) {
        struct sched_job *j = &s->jobs[s->queue[i]];
        if (j->queued && j->state == SN_JOB_PENDING)
            s->queue[kept++] = s->queue[i];
        else
            j->queued = false;
    }
    for (uint32_t i = 0; i < s->n_pending; i++)
        if (!s->jobs[s->pending[i]].queued)
            scratch[fresh++] = s->pending[i];
    sn__sched_sort(scratch, fresh, cmp_static, s);
    for (uint32_t i = 0; i < fresh; i++)
        s->jobs[scratch[i]].queued = true;
    /* merge from the back: queue[0, kept) and scratch[0, fresh) into queue */
    uint32_t a = kept, b = fresh, out = kept + fresh;
    while (b > 0) {
        if (a > 0 && cmp_static(s, s->queue[a - 1], scratch[b - 1]) > 0)
            s->queue[--out] = s->queue[--a];
        else
            s->queue[--out] = scratch[--b];
    }
    s->n_queue = kept + fresh;
}

/*
 * The pass's order (cmp_queue): s->queue brought up to date, then each run
 * of one priority ordered by its tenants' fair share. That order is
 * cmp_queue's: a stable sort by fair share of a run already in submission
 * order. Long runs take a counting sort by the tenants' fair-share rank
 * (tenants of equal share one rank), short ones the comparison sort.
 * O(pending) per pass instead of O(pending log pending) comparisons.
 */
static enum sn_err queue_order(struct pass *p, uint32_t *order)
{
    struct sn_sched *s = p->s;
    uint32_t n = s->n_pending, nt = s->cfg.n_tenants;
    queue_update(s, order);
    if (s->n_queue != n) { /* cannot happen: every pending job is queued once */
        reference_order(p, order);
        return SN_OK;
    }
    uint32_t *rank = NULL, *count = NULL, *by_fs = NULL;
    for (uint32_t lo = 0; lo < n;) {
        int32_t prio = s->jobs[s->queue[lo]].prio;
        uint32_t hi = lo + 1;
        while (hi < n && s->jobs[s->queue[hi]].prio == prio)
            hi++;
        uint32_t len = hi - lo;
        if (len < 64 || len < nt) {
            memcpy(order + lo, s->queue + lo, len * sizeof(uint32_t));
            sn__sched_sort(order + lo, len, cmp_queue, p);
            lo = hi;
            continue;
        }
        if (!rank) { /* tenants by fair share, once per pass */
            rank = malloc(nt * sizeof(uint32_t));
            count = malloc((nt + 1) * sizeof(uint32_t));
            by_fs = malloc(nt * sizeof(uint32_t));
            if (!rank || !count || !by_fs) {
                free(rank);
                free(count);
                free(by_fs);
                return SN_ERR_NOMEM;
            }
            for (uint32_t t = 0; t < nt; t++)
                by_fs[t] = t;
            sn__sched_sort(by_fs, nt, cmp_tenant_fs, p);
            for (uint32_t i = 0, r = 0; i < nt; i++) {
                if (i > 0 && p->fs[by_fs[i]] != p->fs[by_fs[i - 1]])
                    r++;
                rank[by_fs[i]] = r;
            }
        }
        memset(count, 0, (nt + 1) * sizeof(uint32_t));
        for (uint32_t i = lo; i < hi; i++)
            count[rank[s->jobs[s->queue[i]].spec.tenant] + 1]++;
        for (uint32_t r = 0; r < nt; r++)
            count[r + 1] += count[r];
        for (uint32_t i = lo; i < hi; i++)
            order[lo + count[rank[s->jobs[s->queue[i]].spec.tenant]]++] = s->queue[i];
        lo = hi;
    }
    free(rank);
    free(count);
    free(by_fs);
    return SN_OK;
}

enum sn_err sn__sched_order(struct sn_sched *s, uint32_t *order, bool reference)
{
    struct pass p = {.s = s, .now = s->now_s};
    p.fs = malloc((s->cfg.n_tenants + 1) * sizeof(double));
    if (!p.fs)
        return SN_ERR_NOMEM;
    fair_share(&p);
    enum sn_err rc = SN_OK;
    if (reference)
        reference_order(&p, order);
    else
        rc = queue_order(&p, order);
    free(p.fs);
    return rc;
}

enum sn_err sn__sched_pass(struct sn_sched *s, double now, struct sn_error *err)
{
    struct pass p = {.s = s, .now = now};
    s->now_s = now;
    uint32_t n = s->n_pending;
    p.fs = malloc(s->cfg.n_tenants * sizeof(double));
    uint32_t *order = malloc((n + 1) * sizeof(uint32_t));
    if (!p.fs || !order) {
        free(p.fs);
        free(order);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for a pass over %u jobs", n);
    }
    fair_share(&p);
    if (queue_order(&p, order) != SN_OK) {
        free(order);
        free(p.fs);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for a pass over %u jobs", n);
    }
    run_queue(&p, order, n);
    free(order);
    free(p.fs);
    return SN_OK;
}

enum sn_err sn_sched_pass(struct sn_sched *s, double now, struct sn_error *err)
{
    return sn__sched_pass(s, now, err);
}
