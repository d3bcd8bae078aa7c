/*
 * Scheduler state: creation, the counters, committing and releasing
 * placements, and the events that are not a pass (submit, finish, cancel,
 * failure, repair, health, cordon). See sn/sched.h for the rules and
 * lib/sched/sched_int.h for the layout.
 *
 * Invariant kept by every function here: a GPU contributes to its server's
 * and supernode's free counters exactly when it has no owner and no failed
 * domain covers it (gpu_contrib() says how); callers change a GPU's flags
 * only between a "remove contribution" and an "add contribution".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_int.h"

static const char *const policy_names[] = {
#define SN_X(name, text) text,
    SN_SCHED_POLICY_LIST(SN_X)
#undef SN_X
};
static const char *const reason_names[] = {
#define SN_X(name, text) text,
    SN_PENDING_REASON_LIST(SN_X)
#undef SN_X
};

const char *sn_sched_policy_name(enum sn_sched_policy policy)
{
    return (unsigned)policy < SN_SCHED_POLICY_COUNT ? policy_names[policy] : "unknown";
}

enum sn_sched_policy sn_sched_policy_from_name(const char *name)
{
    for (int p = 0; p < SN_SCHED_POLICY_COUNT; p++)
        if (strcmp(name, policy_names[p]) == 0)
            return (enum sn_sched_policy)p;
    return SN_SCHED_POLICY_COUNT;
}

const char *sn_pending_reason_name(enum sn_pending_reason reason)
{
    return (unsigned)reason < SN_PENDING_REASON_COUNT ? reason_names[reason] : "unknown";
}

static const struct sn_sched_tenant default_tenant = {0};

void sn_sched_config_defaults(struct sn_sched_config *c)
{
    memset(c, 0, sizeof(*c));
    c->policy = SN_SCHED_SUPERNODE_FIRST;
    c->health_exclusion = true;
    c->bandwidth_admission = true;
    c->backfill = true;
    c->preemption = true;
    c->cordon_below = 0.5;
    c->min_runtime_s = 600;
    c->max_preemptions = 2;
    c->preemption_window_s = 3600;
    c->reclaim_holdoff_s = 3600;
    c->replace_in_place = true;
    c->cpu_oversell = 1;
    c->memory_oversell = 1;
    c->n_tenants = 1;
    c->tenants = &default_tenant;
}

static uint8_t score_u8(double score)
{
    if (!(score > 0))
        return 0;
    if (score >= 1)
        return HEALTH_FULL;
    return (uint8_t)(score * HEALTH_FULL + 0.5);
}

/* ---- counters -------------------------------------------------------- */

/* Adds (sign +1) or removes (-1) GPU g's share of the free counters. */
static void gpu_contrib(struct sn_sched *s, uint32_t g, int sign)
{
    if (s->gpu_owner[g] != SN_NONE || s->gpu_down[g])
        return;
    uint32_t srv = s->m->gpu_server[g], sn = s->m->gpu_supernode[g];
    s->srv_up[srv] = (uint16_t)(s->srv_up[srv] + sign);
    s->sn_up[sn] += (uint32_t)sign;
    if (s->gpu_cordon[g])
        return;
    s->srv_usable[srv] = (uint16_t)(s->srv_usable[srv] + sign);
    s->sn_usable[sn] += (uint32_t)sign;
    if (s->gpu_health[g] < HEALTH_FULL) {
        s->srv_weak[srv] = (uint16_t)(s->srv_weak[srv] + sign);
        s->sn_weak[sn] += (uint32_t)sign;
    }
}

uint32_t sn__sched_srv_room(const struct sn_sched *s, uint32_t srv, const struct sched_job *j)
{
    uint32_t room = UINT32_MAX;
    if (s->power_skipping && s->power_skip[s->m->server_rack[srv]])
        return 0; /* a rack this plan would take past its power limit */
    double need = j->spec.cpu_cores_per_gpu;
    if (need > 0 && s->srv_cpu_cap[srv] > 0) {
        double left = s->srv_cpu_cap[srv] - s->srv_cpu_used[srv];
        room = left > 0 ? (uint32_t)fmin(floor(left / need + 1e-9), UINT32_MAX) : 0;
    }
    need = j->spec.memory_bytes_per_gpu;
    if (need > 0 && s->srv_mem_cap[srv] > 0) {
        double left = s->srv_mem_cap[srv] - s->srv_mem_used[srv];
        uint32_t r = left > 0 ? (uint32_t)fmin(floor(left / need + 1e-9), UINT32_MAX) : 0;
        room = r < room ? r : room;
    }
    return room;
}

/* Adds (sign +1) or removes (-1) one GPU's host CPU and memory of job j
 * on server srv. */
static void host_add(struct sn_sched *s, uint32_t srv, const struct sched_job *j, double sign)
{
    s->srv_cpu_used[srv] += sign * j->spec.cpu_cores_per_gpu;
    s->srv_mem_used[srv] += sign * j->spec.memory_bytes_per_gpu;
    sn__sched_power_add(s, srv, sign);
}

bool sn__sched_gpu_usable(const struct sn_sched *s, uint32_t g, const struct sched_job *j,
                          const struct place_mode *mode)
{
    if (s->gpu_owner[g] != SN_NONE || s->gpu_down[g])
        return false;
    if (!mode->use_health)
        return true;
    return !s->gpu_cordon[g] && s->gpu_health[g] >= j->health_min;
}

/* Whether job j may use supernode sn at all: pool (or borrowing), the
 * dedicated owner, and, with use_sn_quota, the tenant cap. */
bool sn__sched_sn_allowed(const struct sn_sched *s, uint32_t sn, const struct sched_job *j,
                          bool use_sn_quota)
{
    uint32_t pool = s->sn_pool[sn];
    if (pool != j->spec.pool &&
        (!(s->pools[j->spec.pool].borrow_mask & (1u << pool)) ||
         ((j->holdoff_pools & (1u << pool)) && s->now_s < j->holdoff_until_s)))
        return false;
    if (s->pools[pool].kind == SN_POOL_DEDICATED)
        return s->sn_owner[sn] == SN_NONE || s->sn_owner[sn] == j->spec.tenant;
    if (!use_sn_quota || s->cfg.max_tenants_per_supernode == 0)
        return true;
    uint32_t mine = s->tenant_sn_gpus[(size_t)j->spec.tenant * s->m->n_supernodes + sn];
    return mine > 0 || s->sn_ntenants[sn] < s->cfg.max_tenants_per_supernode;
}

/* ---- decisions ------------------------------------------------------- */

void sn__sched_decide(struct sn_sched *s, enum sn_decision_kind kind, uint32_t job, uint32_t cause)
{
    if (s->n_dec == s->cap_dec) {
        size_t cap = s->cap_dec ? s->cap_dec * 2 : 256;
        struct sn_decision *d = realloc(s->dec, cap * sizeof(*d));
        if (!d)
            return; /* the decision log is advisory; state stays right */
        s->dec = d;
        s->cap_dec = cap;
    }
    s->dec[s->n_dec++] = (struct sn_decision){kind, job, cause};
}

const struct sn_decision *sn_sched_decisions(const struct sn_sched *s, size_t *count)
{
    *count = s->n_dec;
    return s->dec;
}

void sn_sched_clear_decisions(struct sn_sched *s)
{
    s->n_dec = 0;
}

/* ---- lists ----------------------------------------------------------- */

static void list_add(uint32_t *list, uint32_t *n, struct sched_job *jobs, uint32_t job)
{
    jobs[job].list_pos = *n;
    list[(*n)++] = job;
}

static void list_remove(uint32_t *list, uint32_t *n, struct sched_job *jobs, uint32_t job)
{
    uint32_t pos = jobs[job].list_pos;
    uint32_t last = list[--(*n)];
    list[pos] = last;
    jobs[last].list_pos = pos;
}

/* ---- commit and release ---------------------------------------------- */

static void tenant_add(struct sn_sched *s, uint32_t tenant, uint32_t sn, int sign)
{
    uint32_t *mine = &s->tenant_sn_gpus[(size_t)tenant * s->m->n_supernodes + sn];
    if (sign > 0 && (*mine)++ == 0)
        s->sn_ntenants[sn]++;
    if (sign < 0 && --(*mine) == 0)
        s->sn_ntenants[sn]--;
    s->tenant_gpus[tenant] += (uint32_t)sign;
    s->sn_busy[sn] += (uint32_t)sign;
    if (s->pools[s->sn_pool[sn]].kind == SN_POOL_DEDICATED)
        s->sn_owner[sn] = s->sn_busy[sn] ? tenant : SN_NONE;
}

/* Cross-supernode traffic: every GPU of a job spanning supernodes loads
 * its leaf's uplinks; of a job spanning spine pods, also its pod's spine
 * uplinks. */
static void leaf_add(struct sn_sched *s, const struct sched_job *j, double sign)
{
    if (j->n_sn < 2 || !(j->spec.xsn_bytes_per_s > 0))
        return;
    for (uint32_t i = 0; i < j->spec.gpus; i++) {
        uint32_t leaf = s->m->gpu_leaf[j->gpus[i]];
        if (leaf != SN_NONE)
            s->leaf_load[leaf] += sign * j->spec.xsn_bytes_per_s;
        if (j->n_pods > 1)
            s->pod_load[s->sn_pod[s->m->gpu_supernode[j->gpus[i]]]] +=
                sign * j->spec.xsn_bytes_per_s;
    }
}

/* Flags of a placement: supernodes spanned, split and crossing groups. */
static void placement_flags(struct sn_sched *s, struct sched_job *j)
{
    const struct sn_model *m = s->m;
    uint32_t g = j->spec.group_gpus, n_sn = 0, pod0 = SN_NONE;
    j->split = j->cross = j->borrowed = j->degraded = false;
    j->n_pods = 1;
    for (uint32_t i = 0; i < j->spec.gpus; i++) {
        uint32_t gpu = j->gpus[i], sn = m->gpu_supernode[gpu];
        if (s->sn_take[sn] == 0) {
            s->sn_take[sn] = 1;
            s->sn_order[n_sn++] = sn;
            j->borrowed |= s->sn_pool[sn] != j->spec.pool;
            if (pod0 == SN_NONE)
                pod0 = s->sn_pod[sn];
            j->n_pods += pod0 != s->sn_pod[sn] && j->n_pods == 1;
        }
        uint32_t first = j->gpus[i - i % g];
        if (m->gpu_supernode[first] != sn)
            j->cross = true;
        if (g <= s->srv_gpus[m->gpu_server[first]] && m->gpu_server[first] != m->gpu_server[gpu])
            j->split = true;
        j->degraded |= s->gpu_health[gpu] < s->cordon_u8;
    }
    for (uint32_t k = 0; k < n_sn; k++)
        s->sn_take[s->sn_order[k]] = 0;
    j->n_sn = n_sn;
}

void sn__sched_commit(struct sn_sched *s, uint32_t job, uint32_t *gpus, double now)
{
    struct sched_job *j = &s->jobs[job];
    j->gpus = gpus;
    for (uint32_t i = 0; i < j->spec.gpus; i++) {
        uint32_t g = gpus[i];
        gpu_contrib(s, g, -1);
        s->gpu_owner[g] = job;
        tenant_add(s, j->spec.tenant, s->m->gpu_supernode[g], +1);
        host_add(s, s->m->gpu_server[g], j, +1);
    }
    j->replaced = j->restored = false;
    placement_flags(s, j);
    leaf_add(s, j, +1);
    list_remove(s->pending, &s->n_pending, s->jobs, job);
    list_add(s->running, &s->n_running, s->jobs, job);
    j->state = SN_JOB_RUNNING;
    j->reason = SN_PENDING_NONE;
    j->start_s = now;
    s->job_gpu_bytes += (size_t)j->spec.gpus * sizeof(uint32_t);
    s->n_placements++;
    j->place_no = s->n_placements;
    sn__sched_decide(s, SN_DECISION_START, job, SN_NONE);
    /* A preemptor that started elsewhere before its signalled victims
     * left no longer needs them: they stay (an UNSIGNAL decision each). */
    for (uint32_t i = 0; j->awaiting > 0 && i < s->n_running; i++) {
        struct sched_job *v = &s->jobs[s->running[i]];
        if (v->leaving && v->leaving_for == job) {
            v->leaving = false;
            v->leaving_for = SN_NONE;
            j->awaiting--;
            sn__sched_decide(s, SN_DECISION_UNSIGNAL, s->running[i], job);
        }
    }
}

void sn__sched_release(struct sn_sched *s, uint32_t job)
{
    struct sched_job *j = &s->jobs[job];
    leaf_add(s, j, -1);
    for (uint32_t i = 0; i < j->spec.gpus; i++) {
        uint32_t g = j->gpus[i];
        s->gpu_owner[g] = SN_NONE;
        gpu_contrib(s, g, +1);
        tenant_add(s, j->spec.tenant, s->m->gpu_supernode[g], -1);
        host_add(s, s->m->gpu_server[g], j, -1);
    }
    sn__sched_power_settle(s, j->gpus, j->spec.gpus);
    free(j->gpus);
    j->gpus = NULL;
    s->job_gpu_bytes -= (size_t)j->spec.gpus * sizeof(uint32_t);
    list_remove(s->running, &s->n_running, s->jobs, job);
    j->n_sn = 0;
    j->n_pods = 0;
    j->split = j->cross = j->borrowed = j->degraded = false;
    /* A signalled victim that leaves, however (evicted, finished, failed),
     * no longer holds its preemptor back. */
    if (j->leaving_for != SN_NONE && s->jobs[j->leaving_for].awaiting > 0)
        s->jobs[j->leaving_for].awaiting--;
    j->leaving_for = SN_NONE;
    j->leaving = false;
    j->ckpt_s = 0;
}

void sn__sched_hold(struct sn_sched *s, uint32_t job, bool on)
{
    struct sched_job *j = &s->jobs[job];
    if (!on)
        leaf_add(s, j, -1);
    for (uint32_t i = 0; i < j->spec.gpus; i++) {
        uint32_t g = j->gpus[i];
        if (on)
            gpu_contrib(s, g, -1);
        s->gpu_owner[g] = on ? job : SN_NONE;
        if (!on)
            gpu_contrib(s, g, +1);
        tenant_add(s, j->spec.tenant, s->m->gpu_supernode[g], on ? +1 : -1);
        host_add(s, s->m->gpu_server[g], j, on ? +1 : -1);
    }
    if (on)
        leaf_add(s, j, +1);
}

void sn__sched_requeue(struct sn_sched *s, uint32_t job, enum sn_decision_kind why, uint32_t cause)
{
    struct sched_job *j = &s->jobs[job];
    sn__sched_release(s, job);
    j->state = SN_JOB_PENDING;
    j->reason = SN_PENDING_NONE;
    list_add(s->pending, &s->n_pending, s->jobs, job);
    if (why == SN_DECISION_PREEMPT) {
        j->preemptions++;
        s->n_preemptions++;
    } else {
        j->interruptions++;
        s->n_interruptions++;
    }
    sn__sched_decide(s, why, job, cause);
}

/* ---- creation -------------------------------------------------------- */

static void *sched_alloc(struct sn_sched *s, size_t count, size_t size, bool *failed)
{
    void *p = calloc(count ? count : 1, size);
    if (!p)
        *failed = true;
    else
        s->fixed_bytes += count * size;
    return p;
}

/* Capacity of each pod's spine uplinks: every spine takes the pod of the
 * first leaf linked to it (spine_pod is scratch, one per spine); each of
 * its links to a core adds the spine's port speed. */
static void pod_capacity(struct sn_sched *s, uint32_t *spine_pod)
{
    const struct sn_model *m = s->m;
    memset(spine_pod, 0xff, (m->n_spines + 1) * sizeof(uint32_t));
    for (uint64_t l = m->tier_first[SN_TIER_LEAF_SPINE]; l < m->tier_first[SN_TIER_LEAF_SPINE + 1];
         l++) {
        const struct sn_link *link = &m->links[l];
        uint32_t sn = m->switch_supernode[link->a_id], spine = link->b_id - m->first_spine;
        if (sn != SN_NONE && spine_pod[spine] == SN_NONE)
            spine_pod[spine] = s->sn_pod[sn];
    }
    for (uint64_t l = m->tier_first[SN_TIER_SPINE_CORE]; l < m->tier_first[SN_TIER_SPINE_CORE + 1];
         l++) {
        uint32_t spine = m->links[l].a_id, pod = spine_pod[spine - m->first_spine];
        if (pod != SN_NONE)
            s->pod_cap[pod] += sn_model_switch_spec(m, spine)->port_bytes_per_s;
    }
}

/* Pod of each supernode: the spine that its first leaf's first uplink
 * reaches, numbered densely. A 2-tier fabric is one pod. */
static void find_pods(struct sn_sched *s)
{
    const struct sn_model *m = s->m;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        s->sn_pod[sn] = SN_NONE;
    s->n_pods = 1;
    if (m->n_cores == 0) {
        memset(s->sn_pod, 0, m->n_supernodes * sizeof(uint32_t));
        return;
    }
    uint32_t *spine_pod = calloc(m->n_spines + 1, sizeof(uint32_t));
    if (!spine_pod)
        return;
    uint32_t pods = 0;
    for (uint64_t l = m->tier_first[SN_TIER_LEAF_SPINE]; l < m->tier_first[SN_TIER_LEAF_SPINE + 1];
         l++) {
        const struct sn_link *link = &m->links[l];
        uint32_t sn = m->switch_supernode[link->a_id];
        uint32_t spine = link->b_id - m->first_spine;
        if (sn == SN_NONE || s->sn_pod[sn] != SN_NONE)
            continue;
        if (spine_pod[spine] == 0)
            spine_pod[spine] = ++pods;
        s->sn_pod[sn] = spine_pod[spine] - 1;
    }
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        if (s->sn_pod[sn] == SN_NONE)
            s->sn_pod[sn] = pods;
    s->n_pods = pods + 1;
    pod_capacity(s, spine_pod);
    free(spine_pod);
}

static enum sn_err copy_config(struct sn_sched *s, const struct sn_sched_config *c,
                               struct sn_error *err)
{
    s->cfg = *c;
    if (c->n_tenants == 0 || c->n_tenants > SN_SCHED_MAX_TENANTS || !c->tenants)
        return sn_error_set(err, SN_ERR_INVALID, "scheduler: %u tenants, expected 1 to %u",
                            c->n_tenants, SN_SCHED_MAX_TENANTS);
    if (c->n_pools > SN_SCHED_MAX_POOLS || (c->n_pools && !c->pools))
        return sn_error_set(err, SN_ERR_INVALID, "scheduler: %u pools, expected at most %u",
                            c->n_pools, SN_SCHED_MAX_POOLS);
    uint32_t n_pools = c->n_pools ? c->n_pools : 1;
    s->tenants = calloc(c->n_tenants, sizeof(*s->tenants));
    s->pools = calloc(n_pools, sizeof(*s->pools));
    if (!s->tenants || !s->pools)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the scheduler");
    memcpy(s->tenants, c->tenants, c->n_tenants * sizeof(*s->tenants));
    if (c->n_pools)
        memcpy(s->pools, c->pools, n_pools * sizeof(*s->pools));
    else
        s->pools[0] = (struct sn_sched_pool){SN_POOL_MIXED, 0, 0};
    s->cfg.n_pools = n_pools;
    s->cfg.tenants = s->tenants;
    s->cfg.pools = s->pools;
    if (s->cfg.max_jobs == 0)
        s->cfg.max_jobs = SN_SCHED_DEFAULT_MAX_JOBS;
    s->cordon_u8 = score_u8(c->cordon_below);
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++) {
        uint32_t p = c->n_pools ? s->m->supernodes[sn].pool : 0;
        if (p == SN_NONE)
            p = 0;
        if (p >= n_pools)
            return sn_error_set(err, SN_ERR_INVALID,
                                "scheduler: supernode %u is in pool %u but the config has %u pools",
                                sn, p, n_pools);
        s->sn_pool[sn] = p;
    }
    return SN_OK;
}

static void init_counts(struct sn_sched *s)
{
    const struct sn_model *m = s->m;
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        s->gpu_owner[g] = SN_NONE;
        s->gpu_health[g] = HEALTH_FULL;
        gpu_contrib(s, g, +1);
    }
    double cpu = s->cfg.cpu_oversell > 0 ? s->cfg.cpu_oversell : 1;
    double mem = s->cfg.memory_oversell > 0 ? s->cfg.memory_oversell : 1;
    for (uint32_t srv = 0; srv < m->n_servers; srv++) {
        const struct sn_server_model *spec = sn_model_server_spec(m, srv);
        s->srv_gpus[srv] = (uint16_t)spec->gpus;
        s->srv_cpu_cap[srv] = spec->cpu_cores * cpu; /* 0: not stated, no limit */
        s->srv_mem_cap[srv] = spec->memory_bytes * mem;
    }
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        s->sn_owner[sn] = SN_NONE;
    for (uint32_t sw = 0; sw < m->n_switches; sw++)
        if (m->switch_role[sw] == SN_ROLE_LEAF)
            s->leaf_cap[sw] = m->leaf_uplinks[sw] * sn_model_switch_spec(m, sw)->port_bytes_per_s;
}

/* Allocates every array that scales with the cluster; *failed on any
 * allocation failure (the caller frees what was made). */
static void alloc_arrays(struct sn_sched *s, const struct sn_model *m, bool *fail)
{
    bool failed = false;
    uint32_t nsn = m->n_supernodes, nsw = m->n_switches;
    s->gpu_owner = sched_alloc(s, m->n_gpus, sizeof(uint32_t), &failed);
    s->gpu_health = sched_alloc(s, m->n_gpus, 1, &failed);
    s->gpu_down = sched_alloc(s, m->n_gpus, 1, &failed);
    s->gpu_cordon = sched_alloc(s, m->n_gpus, 1, &failed);
    s->srv_usable = sched_alloc(s, m->n_servers, sizeof(uint16_t), &failed);
    s->srv_up = sched_alloc(s, m->n_servers, sizeof(uint16_t), &failed);
    s->srv_weak = sched_alloc(s, m->n_servers, sizeof(uint16_t), &failed);
    s->srv_gpus = sched_alloc(s, m->n_servers, sizeof(uint16_t), &failed);
    s->srv_cpu_used = sched_alloc(s, m->n_servers, sizeof(double), &failed);
    s->srv_cpu_cap = sched_alloc(s, m->n_servers, sizeof(double), &failed);
    s->srv_mem_used = sched_alloc(s, m->n_servers, sizeof(double), &failed);
    s->srv_mem_cap = sched_alloc(s, m->n_servers, sizeof(double), &failed);
    s->srv_extra = sched_alloc(s, m->n_servers, sizeof(uint16_t), &failed);
    s->srv_order = sched_alloc(s, m->n_servers, sizeof(uint32_t), &failed);
    s->sn_usable = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_up = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_weak = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_pool = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_pod = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_owner = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_busy = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_ntenants = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_one_server = sched_alloc(s, nsn, 1, &failed);
    s->sn_one_since = sched_alloc(s, nsn, sizeof(uint64_t), &failed);
    s->sn_take = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->sn_order = sched_alloc(s, nsn, sizeof(uint32_t), &failed);
    s->leaf_load = sched_alloc(s, nsw, sizeof(double), &failed);
    s->leaf_cap = sched_alloc(s, nsw, sizeof(double), &failed);
    s->leaf_delta = sched_alloc(s, nsw, sizeof(double), &failed);
    s->pod_load = sched_alloc(s, nsn + 1, sizeof(double), &failed);
    s->pod_cap = sched_alloc(s, nsn + 1, sizeof(double), &failed);
    s->pod_delta = sched_alloc(s, nsn + 1, sizeof(double), &failed);
    s->touched = sched_alloc(s, nsw, sizeof(uint32_t), &failed);
    s->pick = sched_alloc(s, m->n_gpus, sizeof(uint32_t), &failed);
    *fail = failed;
}

enum sn_err sn_sched_create(const struct sn_model *m, const struct sn_sched_config *c,
                            struct sn_sched **out, struct sn_error *err)
{
    *out = NULL;
    struct sn_sched *s = calloc(1, sizeof(*s));
    if (!s)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the scheduler");
    s->m = m;
    s->resv_job = s->resv_after = SN_NONE;
    bool failed = false;
    uint32_t nsn = m->n_supernodes;
    alloc_arrays(s, m, &failed);
    enum sn_err rc = SN_ERR_NOMEM;
    if (failed || sn_bitset_init(&s->domain, m->n_gpus ? m->n_gpus : 1, err) != SN_OK)
        goto fail;
    s->fixed_bytes += ((size_t)m->n_gpus + 63) / 64 * 8;
    rc = copy_config(s, c, err);
    if (rc != SN_OK)
        goto fail;
    s->tenant_gpus = sched_alloc(s, s->cfg.n_tenants, sizeof(uint32_t), &failed);
    s->tenant_sn_gpus = sched_alloc(s, (size_t)s->cfg.n_tenants * nsn, sizeof(uint32_t), &failed);
    if (failed) {
        rc = SN_ERR_NOMEM;
        goto fail;
    }
    init_counts(s);
    find_pods(s);
    rc = sn__sched_power_init(s, err);
    if (rc != SN_OK)
        goto fail;
    *out = s;
    return SN_OK;
fail:
    if (rc == SN_ERR_NOMEM)
        sn_error_set(err, rc, "out of memory for a scheduler on %u GPUs", m->n_gpus);
    sn_sched_destroy(s);
    return rc;
}

void sn_sched_destroy(struct sn_sched *s)
{
    if (!s)
        return;
    for (uint32_t j = 0; j < s->n_jobs; j++)
        free(s->jobs[j].gpus);
    void *arrays[] = {
        s->gpu_owner,    s->gpu_health,  s->gpu_down,      s->gpu_cordon,   s->srv_usable,
        s->srv_up,       s->srv_weak,    s->srv_gpus,      s->srv_extra,    s->srv_order,
        s->sn_usable,    s->sn_up,       s->sn_weak,       s->sn_pool,      s->sn_pod,
        s->sn_owner,     s->sn_busy,     s->sn_ntenants,   s->sn_take,      s->sn_order,
        s->leaf_load,    s->leaf_cap,    s->leaf_delta,    s->touched,      s->pick,
        s->pod_load,     s->pod_cap,     s->pod_delta,     s->tenant_gpus,  s->tenant_sn_gpus,
        s->tenants,      s->pools,       s->jobs,          s->pending,      s->running,
        s->job_mark,     s->queue,       s->dec,           s->srv_cpu_used, s->srv_cpu_cap,
        s->srv_mem_used, s->srv_mem_cap, s->rack_limit_w,  s->rack_base_w,  s->rack_jobs_w,
        s->power_skip,   s->power_over,  s->sn_one_server, s->sn_one_since};
    for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
        free(arrays[i]);
    sn_bitset_release(&s->domain);
    free(s);
}

/* ---- events ---------------------------------------------------------- */

static enum sn_err grow_jobs(struct sn_sched *s, struct sn_error *err)
{
    if (s->n_jobs < s->cap_jobs)
        return SN_OK;
    if (s->n_jobs >= s->cfg.max_jobs)
        return sn_error_set(err, SN_ERR_LIMIT, "scheduler: more than %u jobs", s->cfg.max_jobs);
    uint32_t cap = s->cap_jobs ? s->cap_jobs * 2 : 1024;
    if (cap > s->cfg.max_jobs)
        cap = s->cfg.max_jobs;
    struct sched_job *jobs = realloc(s->jobs, cap * sizeof(*jobs));
    if (jobs)
        s->jobs = jobs;
    uint32_t *lists[4] = {s->pending, s->running, s->job_mark, s->queue};
    for (int i = 0; i < 4 && jobs; i++) {
        uint32_t *l = realloc(lists[i], cap * sizeof(uint32_t));
        if (!l)
            jobs = NULL;
        else
            lists[i] = l;
    }
    s->pending = lists[0];
    s->running = lists[1];
    s->job_mark = lists[2];
    s->queue = lists[3];
    if (!jobs)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for %u jobs", cap);
    memset(s->job_mark + s->cap_jobs, 0, (cap - s->cap_jobs) * sizeof(uint32_t));
    s->cap_jobs = cap;
    return SN_OK;
}

static enum sn_err check_job(const struct sn_sched *s, const struct sn_job_spec *j,
                             struct sn_error *err)
{
    if (j->tenant >= s->cfg.n_tenants)
        return sn_error_set(err, SN_ERR_INVALID, "job: tenant %u, expected below %u", j->tenant,
                            s->cfg.n_tenants);
    if (j->pool >= s->cfg.n_pools)
        return sn_error_set(err, SN_ERR_INVALID, "job: pool %u, expected below %u", j->pool,
                            s->cfg.n_pools);
    uint32_t group = j->group_gpus ? j->group_gpus : 1;
    if (j->gpus == 0 || j->gpus > SN_SCHED_MAX_JOB_GPUS || j->gpus % group != 0)
        return sn_error_set(err, SN_ERR_INVALID,
                            "job: 'gpus' is %u, expected 1 to %u and a multiple of "
                            "'group_gpus' (%u)",
                            j->gpus, SN_SCHED_MAX_JOB_GPUS, group);
    if (!(j->cpu_cores_per_gpu >= 0) || !(j->memory_bytes_per_gpu >= 0))
        return sn_error_set(err, SN_ERR_INVALID,
                            "job: 'cpu_cores_per_gpu' and 'memory_bytes_per_gpu' must be >= 0");
    if (!(j->walltime_s > 0) || !(j->health_min >= 0 && j->health_min <= 1) ||
        !(j->xsn_bytes_per_s >= 0) || !(j->checkpoint_s >= 0) || !(j->restart_s >= 0))
        return sn_error_set(err, SN_ERR_INVALID,
                            "job: 'walltime_s' must be > 0, 'health_min' in 0..1, and "
                            "bandwidth, checkpoint and restart >= 0");
    const struct sn_sched_tenant *t = &s->tenants[j->tenant];
    if (t->max_job_gpus && j->gpus > t->max_job_gpus)
        return sn_error_set(err, SN_ERR_INVALID, "job: 'gpus' %u exceeds tenant %u's cap of %u",
                            j->gpus, j->tenant, t->max_job_gpus);
    if (t->max_walltime_s > 0 && j->walltime_s > t->max_walltime_s)
        return sn_error_set(err, SN_ERR_INVALID, "job: 'walltime_s' %g exceeds tenant %u's cap %g",
                            j->walltime_s, j->tenant, t->max_walltime_s);
    if (t->max_xsn_bytes_per_s > 0 && j->xsn_bytes_per_s > t->max_xsn_bytes_per_s)
        return sn_error_set(err, SN_ERR_INVALID,
                            "job: 'xsn_bytes_per_s' %g exceeds tenant %u's cap %g",
                            j->xsn_bytes_per_s, j->tenant, t->max_xsn_bytes_per_s);
    /* Can it ever run? */
    uint64_t total = 0, largest = 0;
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++) {
        uint32_t p = s->sn_pool[sn];
        if (p != j->pool && !(s->pools[j->pool].borrow_mask & (1u << p)))
            continue;
        total += s->m->supernodes[sn].n_gpus;
        largest = s->m->supernodes[sn].n_gpus > largest ? s->m->supernodes[sn].n_gpus : largest;
    }
    uint64_t need_one = j->one_supernode ? j->gpus : group;
    if (total < j->gpus || largest < need_one)
        return sn_error_set(err, SN_ERR_INVALID,
                            "job: %u GPUs in groups of %u%s can never fit pool %u (%llu GPUs, "
                            "largest supernode %llu)",
                            j->gpus, group, j->one_supernode ? " in one supernode" : "", j->pool,
                            (unsigned long long)total, (unsigned long long)largest);
    return SN_OK;
}

enum sn_err sn_sched_submit(struct sn_sched *s, const struct sn_job_spec *spec, uint32_t *id,
                            struct sn_error *err)
{
    enum sn_err rc = check_job(s, spec, err);
    if (rc == SN_OK)
        rc = grow_jobs(s, err);
    if (rc != SN_OK)
        return rc;
    uint32_t job = s->n_jobs++;
    struct sched_job *j = &s->jobs[job];
    memset(j, 0, sizeof(*j));
    j->spec = *spec;
    if (j->spec.group_gpus == 0)
        j->spec.group_gpus = 1;
    j->prio = s->pools[spec->pool].priority + spec->priority;
    j->health_min = score_u8(spec->health_min);
    j->state = SN_JOB_PENDING;
    j->leaving_for = SN_NONE;
    j->window_start_s = spec->submit_s;
    list_add(s->pending, &s->n_pending, s->jobs, job);
    *id = job;
    return SN_OK;
}

enum sn_err sn_sched_finish(struct sn_sched *s, uint32_t job, double now, struct sn_error *err)
{
    (void)now;
    if (job >= s->n_jobs || s->jobs[job].state != SN_JOB_RUNNING)
        return sn_error_set(err, SN_ERR_INVALID, "finish: job %u is not running", job);
    sn__sched_release(s, job);
    s->jobs[job].state = SN_JOB_DONE;
    s->n_done++;
    return SN_OK;
}

enum sn_err sn_sched_cancel(struct sn_sched *s, uint32_t job, struct sn_error *err)
{
    if (job >= s->n_jobs || s->jobs[job].state != SN_JOB_PENDING)
        return sn_error_set(err, SN_ERR_INVALID, "cancel: job %u is not pending", job);
    list_remove(s->pending, &s->n_pending, s->jobs, job);
    s->jobs[job].state = SN_JOB_DONE;
    s->n_done++;
    return SN_OK;
}

enum sn_err sn_sched_interrupt(struct sn_sched *s, uint32_t job, double now, struct sn_error *err)
{
    (void)now;
    if (job >= s->n_jobs || s->jobs[job].state != SN_JOB_RUNNING)
        return sn_error_set(err, SN_ERR_INVALID, "interrupt: job %u is not running", job);
    sn__sched_requeue(s, job, SN_DECISION_INTERRUPT, SN_NONE);
    return SN_OK;
}

enum sn_err sn_sched_evict(struct sn_sched *s, uint32_t job, double now, struct sn_error *err)
{
    (void)now;
    if (job >= s->n_jobs || s->jobs[job].state != SN_JOB_RUNNING)
        return sn_error_set(err, SN_ERR_INVALID, "evict: job %u is not running", job);
    sn__sched_requeue(s, job, SN_DECISION_PREEMPT, s->jobs[job].leaving_for);
    return SN_OK;
}

bool sn_sched_leaving(const struct sn_sched *s, uint32_t job, uint32_t *preemptor)
{
    bool on = job < s->n_jobs && s->jobs[job].state == SN_JOB_RUNNING && s->jobs[job].leaving;
    if (preemptor)
        *preemptor = on ? s->jobs[job].leaving_for : SN_NONE;
    return on;
}

void sn_sched_set_leaving(struct sn_sched *s, uint32_t job, uint32_t preemptor)
{
    if (job >= s->n_jobs || s->jobs[job].state != SN_JOB_RUNNING || s->jobs[job].leaving)
        return;
    s->jobs[job].leaving = true;
    if (preemptor < s->n_jobs && s->jobs[preemptor].state == SN_JOB_PENDING) {
        s->jobs[job].leaving_for = preemptor;
        s->jobs[preemptor].awaiting++;
    }
}

void sn_sched_clear_leaving(struct sn_sched *s, uint32_t job)
{
    if (job < s->n_jobs && s->jobs[job].state == SN_JOB_RUNNING && s->jobs[job].leaving &&
        s->jobs[job].leaving_for == SN_NONE)
        s->jobs[job].leaving = false;
}

void sn_sched_set_checkpoint(struct sn_sched *s, uint32_t job, double time_s)
{
    if (job < s->n_jobs && s->jobs[job].state == SN_JOB_RUNNING)
        s->jobs[job].ckpt_s = time_s;
}

void sn_sched_set_walltime(struct sn_sched *s, uint32_t job, double walltime_s)
{
    if (job < s->n_jobs && walltime_s > 0)
        s->jobs[job].spec.walltime_s = walltime_s;
}

static enum sn_err domain_check(const struct sn_sched *s, enum sn_domain_kind kind, uint32_t id,
                                struct sn_error *err)
{
    if ((unsigned)kind >= SN_DOMAIN_KIND_COUNT || id >= sn_model_domain_count(s->m, kind))
        return sn_error_set(err, SN_ERR_INVALID, "failure: no %s %u", sn_domain_kind_name(kind),
                            id);
    return SN_OK;
}

/* A free usable GPU of old's supernode for job j: old's server first, then
 * the supernode's servers in order; on old's leaf when the job loads
 * uplinks; within the server's CPU and memory room and its rack's power
 * budget (a GPU moved to another rack adds its draw there). SN_NONE when
 * none. */
static uint32_t find_spare(const struct sn_sched *s, const struct sched_job *j, uint32_t old)
{
    const struct sn_model *m = s->m;
    const struct sn_supernode *S = &m->supernodes[m->gpu_supernode[old]];
    struct place_mode mode = {s->cfg.policy == SN_SCHED_SUPERNODE_FIRST && s->cfg.health_exclusion,
                              false, false, false, false};
    bool same_leaf = j->n_sn > 1 && j->spec.xsn_bytes_per_s > 0;
    uint32_t home = m->gpu_server[old];
    /* A degraded domain: no job gains a server there. */
    uint32_t last = s->sn_one_server[m->gpu_supernode[old]] ? 0 : S->n_servers;
    for (uint32_t k = 0; k <= last; k++) {
        uint32_t srv = k == 0 ? home : S->first_server + k - 1;
        if ((k > 0 && srv == home) || sn__sched_srv_room(s, srv, j) == 0 ||
            !sn__sched_power_fits(s, srv, home))
            continue;
        for (uint32_t g = m->server_first_gpu[srv]; g < m->server_first_gpu[srv] + s->srv_gpus[srv];
             g++)
            if (sn__sched_gpu_usable(s, g, j, &mode) &&
                (!same_leaf || m->gpu_leaf[g] == m->gpu_leaf[old]))
                return g;
    }
    return SN_NONE;
}

/* Moves slot i of job j from its (failed) GPU to gpu, or back (undo). */
static void swap_slot(struct sn_sched *s, uint32_t job, uint32_t i, uint32_t gpu)
{
    struct sched_job *j = &s->jobs[job];
    uint32_t old = j->gpus[i];
    host_add(s, s->m->gpu_server[old], j, -1);
    s->gpu_owner[old] = SN_NONE;
    gpu_contrib(s, old, +1);
    gpu_contrib(s, gpu, -1);
    s->gpu_owner[gpu] = job;
    host_add(s, s->m->gpu_server[gpu], j, +1);
    j->gpus[i] = gpu;
}

/* Swaps every failed GPU of a running job for a spare in the same
 * supernode; false (nothing changed) when one has none. */
static bool replace_in_place(struct sn_sched *s, uint32_t job)
{
    struct sched_job *j = &s->jobs[job];
    uint32_t n = j->spec.gpus, done = 0;
    uint32_t *old = malloc((size_t)n * sizeof(uint32_t));
    if (!old)
        return false;
    memcpy(old, j->gpus, (size_t)n * sizeof(uint32_t));
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) {
        if (!s->gpu_down[old[i]])
            continue;
        uint32_t g = find_spare(s, j, old[i]);
        ok = g != SN_NONE;
        if (ok) {
            swap_slot(s, job, i, g);
            done++;
        }
    }
    for (uint32_t i = 0; !ok && i < n; i++)
        if (j->gpus[i] != old[i])
            swap_slot(s, job, i, old[i]);
    free(old);
    if (!ok)
        return false;
    placement_flags(s, j);
    j->replaced = true;
    j->interruptions++;
    s->n_interruptions++;
    s->n_replacements++;
    sn__sched_decide(s, SN_DECISION_REPLACE, job, SN_NONE);
    return true;
}

enum sn_err sn_sched_fail(struct sn_sched *s, enum sn_domain_kind kind, uint32_t id, double now,
                          struct sn_error *err)
{
    (void)now;
    enum sn_err rc = domain_check(s, kind, id, err);
    if (rc != SN_OK)
        return rc;
    sn_bitset_clear_all(&s->domain);
    sn_model_domain_gpus(s->m, kind, id, &s->domain);
    for (uint32_t g = sn_bitset_next(&s->domain, 0); g != UINT32_MAX;
         g = sn_bitset_next(&s->domain, g + 1))
        if (s->gpu_down[g] == UINT8_MAX)
            return sn_error_set(err, SN_ERR_LIMIT, "failure: GPU %u is under 255 failures", g);
    /* Every GPU goes down first, so no replacement lands in the domain. */
    uint32_t stamp = ++s->stamp, n_hit = 0;
    for (uint32_t g = sn_bitset_next(&s->domain, 0); g != UINT32_MAX;
         g = sn_bitset_next(&s->domain, g + 1)) {
        gpu_contrib(s, g, -1);
        s->gpu_down[g]++;
        gpu_contrib(s, g, +1);
        uint32_t owner = s->gpu_owner[g];
        if (owner != SN_NONE && s->job_mark[owner] != stamp) {
            s->job_mark[owner] = stamp;
            s->pick[n_hit++] = owner;
        }
    }
    bool spares = s->cfg.replace_in_place && s->cfg.spare_gpus_per_supernode > 0;
    for (uint32_t i = 0; i < n_hit; i++)
        if (!spares || !replace_in_place(s, s->pick[i]))
            sn__sched_requeue(s, s->pick[i], SN_DECISION_INTERRUPT, SN_NONE);
    return SN_OK;
}

enum sn_err sn_sched_repair(struct sn_sched *s, enum sn_domain_kind kind, uint32_t id,
                            struct sn_error *err)
{
    enum sn_err rc = domain_check(s, kind, id, err);
    if (rc != SN_OK)
        return rc;
    sn_bitset_clear_all(&s->domain);
    sn_model_domain_gpus(s->m, kind, id, &s->domain);
    for (uint32_t g = sn_bitset_next(&s->domain, 0); g != UINT32_MAX;
         g = sn_bitset_next(&s->domain, g + 1)) {
        if (s->gpu_down[g] == 0)
            return sn_error_set(err, SN_ERR_INVALID, "repair: %s %u is not failed",
                                sn_domain_kind_name(kind), id);
        gpu_contrib(s, g, -1);
        s->gpu_down[g]--;
        gpu_contrib(s, g, +1);
    }
    return SN_OK;
}

void sn_sched_set_health(struct sn_sched *s, uint32_t gpu, double score)
{
    if (gpu >= s->m->n_gpus)
        return;
    gpu_contrib(s, gpu, -1);
    s->gpu_health[gpu] = score_u8(score);
    s->gpu_cordon[gpu] = (uint8_t)((s->gpu_cordon[gpu] & 2) | (s->gpu_health[gpu] < s->cordon_u8));
    gpu_contrib(s, gpu, +1);
    uint32_t owner = s->gpu_owner[gpu];
    if (owner != SN_NONE && s->gpu_health[gpu] < s->cordon_u8)
        s->jobs[owner].degraded = true;
}

void sn_sched_cordon(struct sn_sched *s, uint32_t gpu, bool on)
{
    if (gpu >= s->m->n_gpus)
        return;
    gpu_contrib(s, gpu, -1);
    s->gpu_cordon[gpu] = (uint8_t)((s->gpu_cordon[gpu] & 1) | (on ? 2 : 0));
    gpu_contrib(s, gpu, +1);
}

void sn_sched_set_one_server(struct sn_sched *s, uint32_t sn, bool on)
{
    if (sn >= s->m->n_supernodes || s->sn_one_server[sn] == on)
        return;
    s->sn_one_server[sn] = on;
    s->sn_one_since[sn] = s->n_placements;
    s->n_one_server = on ? s->n_one_server + 1 : s->n_one_server - 1;
}

bool sn_sched_one_server(const struct sn_sched *s, uint32_t sn)
{
    return sn < s->m->n_supernodes && s->sn_one_server[sn];
}

/* ---- queries --------------------------------------------------------- */

void sn_sched_job_info(const struct sn_sched *s, uint32_t job, struct sn_job_info *info)
{
    memset(info, 0, sizeof(*info));
    if (job >= s->n_jobs)
        return;
    const struct sched_job *j = &s->jobs[job];
    info->state = (enum sn_job_state)j->state;
    info->reason = (enum sn_pending_reason)j->reason;
    info->gpus = j->spec.gpus;
    info->n_supernodes = j->n_sn;
    info->preemptions = j->preemptions;
    info->interruptions = j->interruptions;
    info->degraded = j->degraded;
    info->groups_split = j->split;
    info->groups_cross_sn = j->cross;
    info->borrowed = j->borrowed;
    info->start_s = j->start_s;
}

const uint32_t *sn_sched_job_gpus(const struct sn_sched *s, uint32_t job, uint32_t *count)
{
    if (job >= s->n_jobs || s->jobs[job].state != SN_JOB_RUNNING) {
        *count = 0;
        return NULL;
    }
    *count = s->jobs[job].spec.gpus;
    return s->jobs[job].gpus;
}

uint32_t sn_sched_gpu_owner(const struct sn_sched *s, uint32_t gpu)
{
    return gpu < s->m->n_gpus ? s->gpu_owner[gpu] : SN_NONE;
}

bool sn_sched_gpu_down(const struct sn_sched *s, uint32_t gpu)
{
    return gpu < s->m->n_gpus && s->gpu_down[gpu] > 0;
}

bool sn_sched_gpu_cordoned(const struct sn_sched *s, uint32_t gpu)
{
    return gpu < s->m->n_gpus && s->gpu_cordon[gpu] != 0;
}

void sn_sched_stats(const struct sn_sched *s, struct sn_sched_stats *st)
{
    const struct sn_model *m = s->m;
    memset(st, 0, sizeof(*st));
    st->n_jobs = s->n_jobs;
    st->n_pending = s->n_pending;
    st->n_running = s->n_running;
    st->n_done = s->n_done;
    st->gpus_total = m->n_gpus;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        st->gpus_busy += s->sn_busy[sn];
        st->gpus_free_usable += s->sn_usable[sn];
    }
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        st->gpus_down += s->gpu_down[g] > 0;
        st->gpus_cordoned += s->gpu_cordon[g] != 0;
    }
    st->placements = s->n_placements;
    st->preemptions = s->n_preemptions;
    st->interruptions = s->n_interruptions;
    st->replacements = s->n_replacements;
    st->placement_attempts = s->n_attempts;
    st->memory_jobs_bytes =
        (size_t)s->cap_jobs * (sizeof(struct sched_job) + 4 * sizeof(uint32_t)) + s->job_gpu_bytes;
    st->memory_bytes = sizeof(*s) + s->fixed_bytes + st->memory_jobs_bytes +
                       s->cap_dec * sizeof(struct sn_decision);
    st->memory_per_gpu_bytes = m->n_gpus ? (sizeof(*s) + s->fixed_bytes) / m->n_gpus : 0;
}

double sn_sched_leaf_load(const struct sn_sched *s, uint32_t leaf, double *capacity)
{
    if (leaf >= s->m->n_switches) {
        *capacity = 0;
        return 0;
    }
    *capacity = s->leaf_cap[leaf];
    return s->leaf_load[leaf];
}

double sn_sched_pod_load(const struct sn_sched *s, uint32_t pod, double *capacity)
{
    if (pod >= s->n_pods) {
        *capacity = 0;
        return 0;
    }
    *capacity = s->pod_cap[pod];
    return s->pod_load[pod];
}

uint32_t sn_sched_supernode_pod(const struct sn_sched *s, uint32_t sn)
{
    return sn < s->m->n_supernodes ? s->sn_pod[sn] : SN_NONE;
}

uint32_t sn_sched_tenant_gpus(const struct sn_sched *s, uint32_t tenant, uint32_t sn)
{
    if (tenant >= s->cfg.n_tenants)
        return 0;
    if (sn == SN_NONE)
        return s->tenant_gpus[tenant];
    return sn < s->m->n_supernodes ? s->tenant_sn_gpus[(size_t)tenant * s->m->n_supernodes + sn]
                                   : 0;
}

/* ---- sorting --------------------------------------------------------- */

static void sift_down(uint32_t *a, size_t root, size_t n,
                      int (*cmp)(const void *ctx, uint32_t x, uint32_t y), const void *ctx)
{
    for (;;) {
        size_t child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && cmp(ctx, a[child], a[child + 1]) < 0)
            child++;
        if (cmp(ctx, a[root], a[child]) >= 0)
            return;
        uint32_t t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

void sn__sched_sort(uint32_t *a, size_t n, int (*cmp)(const void *ctx, uint32_t x, uint32_t y),
                    const void *ctx)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n, cmp, ctx);
    for (size_t end = n; end-- > 1;) {
        uint32_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end, cmp, ctx);
    }
}

const uint32_t *sn_sched_pending(const struct sn_sched *s, uint32_t *count)
{
    *count = s->n_pending;
    return s->pending;
}
