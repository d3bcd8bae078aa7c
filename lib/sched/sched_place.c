/*
 * Gang placement: the supernode-first policy and the two baselines.
 *
 * A placement is built in s->pick (GPU IDs, group by group) and committed
 * only when complete and admitted, so a failed attempt changes nothing.
 * Scratch arrays (sn_take, srv_extra outside preemption) are all zero
 * between calls; every path that uses them clears what it set.
 *
 * Supernode-first (docs/scheduler.md):
 *  1. one supernode when any fits: the one with the fewest usable free GPUs
 *     (best fit), ties to the lowest ID;
 *  2. otherwise the fewest supernodes: per spine pod, largest capacities
 *     first; the pod needing fewest wins (then least left over); when no
 *     pod suffices, the same over the whole cluster. The last supernode is
 *     the smallest that covers the remainder;
 *  3. inside a supernode, groups that fit a server go to the servers with
 *     the fewest usable GPUs that still hold a group (packing); with
 *     spread_power, each group goes to the power domain holding the fewest
 *     of the job's groups so far; larger groups take the fullest-free
 *     servers first;
 *  4. a degraded NVLink domain (sn_sched_set_one_server) holds a job only
 *     whole on one of its servers: its capacity for a job is the job's
 *     size when one server (best fit) holds it, else 0, and no job
 *     spanning supernodes takes any of its GPUs;
 *  5. a job spanning supernodes adds xsn_bytes_per_s per GPU to the leaf
 *     of each of its GPUs, and, spanning spine pods, to its pod's spine
 *     uplinks; the placement is refused when any leaf's load would exceed
 *     uplinks x port speed or any pod's its spine-to-core capacity.
 */
#include <stdlib.h>
#include <string.h>

#include "sched/sched_int.h"

/* Usable GPUs in a server for job j under mode, within the server's CPU
 * and memory room for j. */
static uint32_t srv_count(const struct sn_sched *s, uint32_t srv, const struct sched_job *j,
                          const struct place_mode *mode)
{
    uint32_t n;
    if (!mode->use_health) {
        n = s->srv_up[srv];
    } else if (s->srv_weak[srv] == 0 || j->health_min <= s->cordon_u8) {
        n = s->srv_usable[srv];
    } else {
        n = 0;
        uint32_t first = s->m->server_first_gpu[srv];
        for (uint32_t g = first; g < first + s->srv_gpus[srv]; g++)
            n += sn__sched_gpu_usable(s, g, j, mode);
    }
    n = mode->use_extra ? n + s->srv_extra[srv] : n;
    uint32_t room = sn__sched_srv_room(s, srv, j);
    return n < room ? n : room;
}

static uint32_t sn_fast_count(const struct sn_sched *s, uint32_t sn, const struct place_mode *mode)
{
    return mode->use_health ? s->sn_usable[sn] : s->sn_up[sn];
}

/* GPUs the tenant may still add to supernode sn (UINT32_MAX: no limit). */
static uint32_t sn_room(const struct sn_sched *s, uint32_t sn, const struct sched_job *j,
                        const struct place_mode *mode)
{
    const struct sn_sched_tenant *t = &s->tenants[j->spec.tenant];
    if (!mode->use_sn_quota || t->quota_gpus_per_supernode == 0 ||
        s->pools[s->sn_pool[sn]].kind == SN_POOL_DEDICATED)
        return UINT32_MAX;
    uint32_t mine = s->tenant_sn_gpus[(size_t)j->spec.tenant * s->m->n_supernodes + sn];
    return mine >= t->quota_gpus_per_supernode ? 0 : t->quota_gpus_per_supernode - mine;
}

/* Whether supernode sn holds job j only whole on one server under mode. */
static bool one_server(const struct sn_sched *s, uint32_t sn, const struct place_mode *mode)
{
    return s->sn_one_server[sn] && !mode->any_domain;
}

uint32_t sn__sched_sn_capacity(const struct sn_sched *s, uint32_t sn, const struct sched_job *j,
                               const struct place_mode *mode)
{
    const struct sn_supernode *S = &s->m->supernodes[sn];
    uint32_t g = j->spec.group_gpus, total = 0, grouped = 0, best = 0;
    bool fits_server = g <= s->srv_gpus[S->first_server];
    bool one = one_server(s, sn, mode);
    if (one && j->spec.gpus > s->srv_gpus[S->first_server])
        return 0;
    for (uint32_t srv = S->first_server; srv < S->first_server + S->n_servers; srv++) {
        uint32_t c = srv_count(s, srv, j, mode);
        total += c;
        grouped += fits_server ? c / g * g : 0;
        best = c > best ? c : best;
    }
    if (!fits_server)
        grouped = total / g * g;
    if (one) /* the whole job on one server, or nothing */
        grouped = best >= j->spec.gpus ? j->spec.gpus : 0;
    uint32_t spare = s->cfg.spare_gpus_per_supernode;
    uint32_t limit = total > spare ? total - spare : 0;
    uint32_t room = sn_room(s, sn, j, mode);
    limit = room < limit ? room : limit;
    if (s->power_skipping) { /* a plan searching past a feed limit */
        room = sn__sched_power_sn_gpus(s, sn);
        limit = room < limit ? room : limit;
    }
    limit = limit / g * g;
    return grouped < limit ? grouped : limit;
}

/* ---- filling one supernode ------------------------------------------- */

/* Appends up to want usable GPUs of server srv to pick, after skipping the
 * first skip usable ones; returns the number appended. */
static uint32_t take_server(struct sn_sched *s, uint32_t srv, uint32_t skip, uint32_t want,
                            const struct sched_job *j, const struct place_mode *mode, uint32_t *np)
{
    uint32_t first = s->m->server_first_gpu[srv], got = 0;
    for (uint32_t g = first; g < first + s->srv_gpus[srv] && got < want; g++) {
        if (!sn__sched_gpu_usable(s, g, j, mode))
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        s->pick[(*np)++] = g;
        got++;
    }
    return got;
}

/* Servers of sn with at least min_count usable GPUs into srv_order, their
 * counts into srv_extra, sorted by count (ascending, or descending with
 * desc), then ID. Returns how many. */
static uint32_t sorted_servers(struct sn_sched *s, uint32_t sn, const struct sched_job *j,
                               const struct place_mode *mode, uint32_t min_count, bool desc)
{
    const struct sn_supernode *S = &s->m->supernodes[sn];
    uint32_t n = 0;
    for (uint32_t srv = S->first_server; srv < S->first_server + S->n_servers; srv++) {
        uint32_t c = srv_count(s, srv, j, mode);
        if (c < min_count || c == 0)
            continue;
        s->srv_extra[srv] = (uint16_t)c;
        uint32_t k = n++;
        while (k > 0) {
            uint32_t prev = s->srv_order[k - 1];
            bool after = desc ? s->srv_extra[prev] < c : s->srv_extra[prev] > c;
            if (!after)
                break;
            s->srv_order[k] = prev;
            k--;
        }
        s->srv_order[k] = srv;
    }
    return n;
}

static void clear_extra(struct sn_sched *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        s->srv_extra[s->srv_order[i]] = 0;
}

/* Spread: the server for the next group, by (groups of the job in its
 * power domain, usable count, ID). */
static uint32_t spread_pick(struct sn_sched *s, uint32_t n, const struct sn_supernode *S,
                            const uint32_t *pd_groups, uint32_t g)
{
    uint32_t best = SN_NONE, best_pd = UINT32_MAX, best_c = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t srv = s->srv_order[i], c = s->srv_extra[srv];
        if (c < g)
            continue;
        uint32_t pd = s->m->server_power[0][srv];
        uint32_t used = pd == SN_NONE ? 0 : pd_groups[(pd - S->first_power_domain) % 16];
        if (used < best_pd || (used == best_pd && c < best_c)) {
            best = srv;
            best_pd = used;
            best_c = c;
        }
    }
    return best;
}

/* Appends `amount` GPUs of supernode sn (a multiple of the group that
 * sn__sched_sn_capacity() allows) to pick, group by group. */
static void fill_supernode(struct sn_sched *s, uint32_t sn, uint32_t amount,
                           const struct sched_job *j, const struct place_mode *mode, uint32_t *np)
{
    const struct sn_supernode *S = &s->m->supernodes[sn];
    uint32_t g = j->spec.group_gpus;
    if (one_server(s, sn, mode)) { /* best fit: the fewest usable that hold it */
        uint32_t n = sorted_servers(s, sn, j, mode, amount, false);
        if (n > 0)
            take_server(s, s->srv_order[0], 0, amount, j, mode, np);
        clear_extra(s, n);
        return;
    }
    if (g > s->srv_gpus[S->first_server]) {
        uint32_t n = sorted_servers(s, sn, j, mode, 1, true);
        for (uint32_t i = 0; i < n && amount > 0; i++) {
            uint32_t srv = s->srv_order[i], c = s->srv_extra[srv];
            amount -= take_server(s, srv, 0, amount < c ? amount : c, j, mode, np);
        }
        clear_extra(s, n);
        return;
    }
    uint32_t n = sorted_servers(s, sn, j, mode, g, false);
    uint32_t groups = amount / g;
    if (!j->spec.spread_power) {
        for (uint32_t i = 0; i < n && groups > 0; i++) {
            uint32_t srv = s->srv_order[i];
            uint32_t k = s->srv_extra[srv] / g;
            k = k < groups ? k : groups;
            take_server(s, srv, 0, k * g, j, mode, np);
            groups -= k;
        }
    } else {
        uint32_t pd_groups[16] = {0};
        for (; groups > 0; groups--) {
            uint32_t srv = spread_pick(s, n, S, pd_groups, g);
            if (srv == SN_NONE)
                break;
            /* GPUs are taken in ID order, so the ones picked before are the
             * first (count - remaining) usable GPUs of the server. */
            uint32_t skip = srv_count(s, srv, j, mode) - s->srv_extra[srv];
            take_server(s, srv, skip, g, j, mode, np);
            s->srv_extra[srv] = (uint16_t)(s->srv_extra[srv] - g);
            uint32_t pd = s->m->server_power[0][srv];
            if (pd != SN_NONE)
                pd_groups[(pd - S->first_power_domain) % 16]++;
        }
    }
    clear_extra(s, n);
}

/* ---- choosing supernodes --------------------------------------------- */

/* Whether job j fits at all under mode (used to explain a refusal). */
static bool fits_anywhere(const struct sn_sched *s, const struct sched_job *j,
                          const struct place_mode *mode)
{
    uint64_t sum = 0;
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++) {
        if (!sn__sched_sn_allowed(s, sn, j, mode->use_sn_quota))
            continue;
        uint32_t cap = sn__sched_sn_capacity(s, sn, j, mode);
        if (cap >= j->spec.gpus)
            return true;
        sum += cap;
    }
    return !j->spec.one_supernode && sum >= j->spec.gpus;
}

static enum sn_pending_reason diagnose(const struct sn_sched *s, const struct sched_job *j,
                                       const struct place_mode *mode)
{
    struct place_mode relaxed = *mode;
    relaxed.any_domain = true;
    if (s->n_one_server > 0 && fits_anywhere(s, j, &relaxed))
        return SN_PENDING_DOMAIN;
    relaxed.use_sn_quota = false;
    if (mode->use_sn_quota && fits_anywhere(s, j, &relaxed))
        return SN_PENDING_QUOTA_SUPERNODE;
    relaxed.use_health = false;
    if (mode->use_health && fits_anywhere(s, j, &relaxed))
        return SN_PENDING_HEALTH;
    return SN_PENDING_NO_FIT;
}

/* Best-fit single supernode, or SN_NONE. */
static uint32_t best_single(const struct sn_sched *s, const struct sched_job *j,
                            const struct place_mode *mode)
{
    uint32_t best = SN_NONE, best_free = UINT32_MAX, n = j->spec.gpus;
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++) {
        uint32_t fast = sn_fast_count(s, sn, mode);
        if (fast < n || fast >= best_free || !sn__sched_sn_allowed(s, sn, j, mode->use_sn_quota) ||
            (mode->own_pool_only && s->sn_pool[sn] != j->spec.pool))
            continue;
        if (sn__sched_sn_capacity(s, sn, j, mode) >= n) {
            best = sn;
            best_free = fast;
        }
    }
    return best;
}

static int cmp_pod_cap(const void *ctx, uint32_t x, uint32_t y)
{
    const struct sn_sched *s = ctx;
    if (s->sn_pod[x] != s->sn_pod[y])
        return s->sn_pod[x] < s->sn_pod[y] ? -1 : 1;
    if (s->sn_take[x] != s->sn_take[y])
        return s->sn_take[x] > s->sn_take[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int cmp_cap(const void *ctx, uint32_t x, uint32_t y)
{
    const struct sn_sched *s = ctx;
    if (s->sn_take[x] != s->sn_take[y])
        return s->sn_take[x] > s->sn_take[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Takes the fewest supernodes of order[first, last) (sorted by capacity,
 * held in sn_take) to cover n; the last one is the smallest that covers
 * the remainder. Fills pick; returns the number of supernodes or 0. */
static uint32_t take_fewest(struct sn_sched *s, uint32_t first, uint32_t last,
                            const struct sched_job *j, const struct place_mode *mode, uint32_t *np)
{
    uint32_t n = j->spec.gpus, sum = 0, k = first;
    while (k < last && sum + s->sn_take[s->sn_order[k]] < n)
        sum += s->sn_take[s->sn_order[k++]];
    if (k == last)
        return 0;
    uint32_t rem = n - sum, tail = k;
    for (uint32_t i = k + 1; i < last && s->sn_take[s->sn_order[i]] >= rem; i++)
        tail = i; /* capacities descend: the last one still covering rem */
    for (uint32_t i = first; i < k; i++)
        fill_supernode(s, s->sn_order[i], s->sn_take[s->sn_order[i]], j, mode, np);
    fill_supernode(s, s->sn_order[tail], rem, j, mode, np);
    return k - first + 1;
}

/* Multi-supernode placement into pick; false when it does not fit. */
static bool place_multi(struct sn_sched *s, const struct sched_job *j,
                        const struct place_mode *mode, bool by_pod, uint32_t *np)
{
    uint32_t nc = 0;
    uint64_t total = 0;
    for (uint32_t sn = 0; sn < s->m->n_supernodes; sn++) {
        if (sn_fast_count(s, sn, mode) < j->spec.group_gpus || one_server(s, sn, mode) ||
            !sn__sched_sn_allowed(s, sn, j, mode->use_sn_quota) ||
            (mode->own_pool_only && s->sn_pool[sn] != j->spec.pool))
            continue;
        uint32_t cap = sn__sched_sn_capacity(s, sn, j, mode);
        if (cap == 0)
            continue;
        s->sn_take[sn] = cap;
        s->sn_order[nc++] = sn;
        total += cap;
    }
    bool ok = false;
    if (total >= j->spec.gpus) {
        uint32_t best_first = 0, best_last = 0, best_k = UINT32_MAX;
        if (by_pod && s->n_pods > 1) {
            sn__sched_sort(s->sn_order, nc, cmp_pod_cap, s);
            for (uint32_t a = 0; a < nc;) {
                uint32_t b = a, sum = 0, k = 0;
                while (b < nc && s->sn_pod[s->sn_order[b]] == s->sn_pod[s->sn_order[a]])
                    b++;
                for (uint32_t i = a; i < b && sum < j->spec.gpus; i++, k++)
                    sum += s->sn_take[s->sn_order[i]];
                if (sum >= j->spec.gpus && k < best_k) {
                    best_k = k;
                    best_first = a;
                    best_last = b;
                }
                a = b;
            }
        }
        if (best_k == UINT32_MAX) {
            sn__sched_sort(s->sn_order, nc, cmp_cap, s);
            best_first = 0;
            best_last = nc;
        }
        ok = take_fewest(s, best_first, best_last, j, mode, np) > 0;
    }
    for (uint32_t i = 0; i < nc; i++)
        s->sn_take[s->sn_order[i]] = 0;
    return ok;
}

/* Pod uplinks: a placement in pick spanning spine pods adds bw per GPU
 * to its pod's spine uplinks; false when one would exceed its capacity. */
static bool pod_bandwidth_ok(struct sn_sched *s, double bw, uint32_t np)
{
    const struct sn_model *m = s->m;
    uint32_t pod0 = s->sn_pod[m->gpu_supernode[s->pick[0]]];
    bool spans = false;
    for (uint32_t i = 1; i < np && !spans; i++)
        spans = s->sn_pod[m->gpu_supernode[s->pick[i]]] != pod0;
    if (!spans)
        return true;
    for (uint32_t i = 0; i < np; i++)
        s->pod_delta[s->sn_pod[m->gpu_supernode[s->pick[i]]]] += bw;
    bool ok = true;
    for (uint32_t p = 0; p < s->n_pods; p++) {
        if (s->pod_delta[p] > 0 && s->pod_load[p] + s->pod_delta[p] > s->pod_cap[p] * (1 + 1e-9))
            ok = false;
        s->pod_delta[p] = 0;
    }
    return ok;
}

/* Bandwidth admission of the placement in pick (spanning supernodes) on
 * every tier its cross-supernode traffic crosses: leaf uplinks, and the
 * spine uplinks of its pods when it spans pods. */
static bool bandwidth_ok(struct sn_sched *s, const struct sched_job *j, uint32_t np)
{
    double bw = j->spec.xsn_bytes_per_s;
    if (!(bw > 0) || np == 0)
        return true;
    uint32_t nt = 0;
    bool ok = true;
    for (uint32_t i = 0; i < np; i++) {
        uint32_t leaf = s->m->gpu_leaf[s->pick[i]];
        if (leaf == SN_NONE) {
            ok = false;
            continue;
        }
        if (s->leaf_delta[leaf] == 0)
            s->touched[nt++] = leaf;
        s->leaf_delta[leaf] += bw;
    }
    for (uint32_t i = 0; i < nt; i++) {
        uint32_t leaf = s->touched[i];
        if (s->leaf_load[leaf] + s->leaf_delta[leaf] > s->leaf_cap[leaf] * (1 + 1e-9))
            ok = false;
        s->leaf_delta[leaf] = 0;
    }
    return ok && pod_bandwidth_ok(s, bw, np);
}

/* ---- baselines ------------------------------------------------------- */

/* Topology-oblivious first fit: servers in ID order, any up GPU. */
static bool place_first_fit(struct sn_sched *s, const struct sched_job *j,
                            const struct place_mode *mode, uint32_t *np)
{
    uint32_t need = j->spec.gpus;
    for (uint32_t sn = 0; sn < s->m->n_supernodes && need > 0; sn++) {
        if (s->sn_up[sn] == 0 || !sn__sched_sn_allowed(s, sn, j, mode->use_sn_quota))
            continue;
        uint32_t spare = s->cfg.spare_gpus_per_supernode, room = sn_room(s, sn, j, mode);
        uint32_t avail = s->sn_up[sn] > spare ? s->sn_up[sn] - spare : 0;
        avail = avail < room ? avail : room;
        const struct sn_supernode *S = &s->m->supernodes[sn];
        if (one_server(s, sn, mode)) { /* the whole job on its first server that holds it */
            for (uint32_t srv = S->first_server;
                 need == j->spec.gpus && avail >= need && srv < S->first_server + S->n_servers;
                 srv++)
                if (srv_count(s, srv, j, mode) >= need)
                    need -= take_server(s, srv, 0, need, j, mode, np);
            continue;
        }
        for (uint32_t srv = S->first_server; srv < S->first_server + S->n_servers; srv++) {
            if (need == 0 || avail == 0)
                break;
            uint32_t want = need < avail ? need : avail, hr = sn__sched_srv_room(s, srv, j);
            uint32_t got = take_server(s, srv, 0, want < hr ? want : hr, j, mode, np);
            need -= got;
            avail -= got;
        }
    }
    return need == 0;
}

/* Slurm topology/tree: the lowest level (server, supernode, pod, cluster)
 * that holds the job, best fit at that level, largest-free first below. */
static bool place_tree(struct sn_sched *s, const struct sched_job *j, const struct place_mode *mode,
                       uint32_t *np)
{
    uint32_t n = j->spec.gpus, best = SN_NONE, best_free = UINT32_MAX;
    struct sched_job one = *j;
    one.spec.group_gpus = 1; /* the tree plugin knows no groups */
    for (uint32_t srv = 0; srv < s->m->n_servers; srv++) {
        uint32_t c = srv_count(s, srv, j, mode);
        if (n > s->srv_gpus[srv])
            continue;
        uint32_t sn = s->m->server_supernode[srv];
        if (c >= n && c < best_free && sn__sched_sn_allowed(s, sn, j, mode->use_sn_quota) &&
            sn__sched_sn_capacity(s, sn, &one, mode) >= n) {
            best = srv;
            best_free = c;
        }
    }
    if (best != SN_NONE) {
        take_server(s, best, 0, n, j, mode, np);
        return true;
    }
    uint32_t sn = best_single(s, &one, mode);
    if (sn != SN_NONE) {
        fill_supernode(s, sn, n, &one, mode, np);
        return true;
    }
    return !j->spec.one_supernode && place_multi(s, &one, mode, true, np);
}

/* ---- entry ----------------------------------------------------------- */

/* Own pool first; borrowed supernodes only when the own pool cannot hold
 * the job. */
static enum sn_pending_reason place_snf(struct sn_sched *s, const struct sched_job *j,
                                        struct place_mode *mode, uint32_t *np)
{
    bool borrows = s->pools[j->spec.pool].borrow_mask != 0;
    for (int pass = borrows ? 0 : 1; pass < 2; pass++) {
        mode->own_pool_only = pass == 0;
        uint32_t sn = best_single(s, j, mode);
        if (sn != SN_NONE) {
            fill_supernode(s, sn, j->spec.gpus, j, mode, np);
            return SN_PENDING_NONE;
        }
        if (j->spec.one_supernode || !place_multi(s, j, mode, true, np)) {
            *np = 0;
            continue;
        }
        if (s->cfg.bandwidth_admission && !bandwidth_ok(s, j, *np))
            return SN_PENDING_BANDWIDTH;
        return SN_PENDING_NONE;
    }
    return diagnose(s, j, mode);
}

/* Searches a placement for job j with its policy into pick[0..*np). */
static enum sn_pending_reason plan_gpus(struct sn_sched *s, const struct sched_job *j,
                                        uint32_t *np)
{
    const struct sn_sched_tenant *t = &s->tenants[j->spec.tenant];
    s->n_attempts++;
    *np = 0;
    if (t->quota_gpus && s->tenant_gpus[j->spec.tenant] + j->spec.gpus > t->quota_gpus)
        return SN_PENDING_QUOTA;
    if (s->cfg.policy == SN_SCHED_SUPERNODE_FIRST) {
        struct place_mode mode = {s->cfg.health_exclusion, true, false, false, false};
        return place_snf(s, j, &mode, np);
    }
    struct place_mode mode = {false, true, false, false, false};
    bool ok = s->cfg.policy == SN_SCHED_FIRST_FIT ? place_first_fit(s, j, &mode, np)
                                                  : place_tree(s, j, &mode, np);
    return ok ? SN_PENDING_NONE : diagnose(s, j, &mode);
}

/* plan_gpus(), then the power budgets of the racks it would load: when
 * the policy's pick takes a rack past its limit, the search runs again
 * power-aware (supernode capacities capped by their racks' power room),
 * and again without each rack such a pick still overloads, until one fits
 * every budget or none is found (SN_PENDING_POWER: GPUs fit, the feeds do
 * not). Each further retry rules out at least one more rack, so there are
 * at most n_racks + 1. A pick that fits its racks at once costs nothing. */
static enum sn_pending_reason plan(struct sn_sched *s, const struct sched_job *j, uint32_t *np)
{
    enum sn_pending_reason why = plan_gpus(s, j, np);
    if (why != SN_PENDING_NONE || sn__sched_power_ok(s, s->pick, *np))
        return why;
    s->power_skipping = true;
    do {
        s->n_power_retries++;
        why = plan_gpus(s, j, np);
        if (why != SN_PENDING_NONE || sn__sched_power_ok(s, s->pick, *np))
            break;
    } while (sn__sched_power_skip(s, s->pick, *np) > 0);
    sn__sched_power_unskip(s);
    if (why == SN_PENDING_NONE && sn__sched_power_ok(s, s->pick, *np))
        return why;
    s->n_power_refusals++;
    *np = 0;
    return SN_PENDING_POWER;
}

enum sn_pending_reason sn__sched_plan(struct sn_sched *s, uint32_t job)
{
    uint32_t np;
    enum sn_pending_reason why = plan(s, &s->jobs[job], &np);
    return why == SN_PENDING_NONE && np != s->jobs[job].spec.gpus ? SN_PENDING_NO_FIT : why;
}

enum sn_pending_reason sn__sched_place(struct sn_sched *s, uint32_t job, double now)
{
    struct sched_job *j = &s->jobs[job];
    uint32_t np;
    enum sn_pending_reason why = plan(s, j, &np);
    if (why != SN_PENDING_NONE)
        return why;
    uint32_t *gpus = malloc((size_t)np * sizeof(uint32_t));
    if (!gpus || np != j->spec.gpus) {
        free(gpus);
        return SN_PENDING_NO_FIT; /* out of memory: try again next pass */
    }
    memcpy(gpus, s->pick, (size_t)np * sizeof(uint32_t));
    sn__sched_commit(s, job, gpus, now);
    return SN_PENDING_NONE;
}

enum sn_err sn_sched_restore(struct sn_sched *s, uint32_t job, const uint32_t *gpus, uint32_t n,
                             double now, struct sn_error *err)
{
    if (job >= s->n_jobs || s->jobs[job].state != SN_JOB_PENDING || n != s->jobs[job].spec.gpus)
        return sn_error_set(err, SN_ERR_INVALID,
                            "restore: job %u is not pending or does not ask for %u GPUs", job, n);
    for (uint32_t i = 0; i < n; i++)
        if (gpus[i] >= s->m->n_gpus || s->gpu_owner[gpus[i]] != SN_NONE)
            return sn_error_set(err, SN_ERR_INVALID,
                                "restore: GPU %u of job %u is out of range or allocated", gpus[i],
                                job);
    uint32_t *copy = malloc((size_t)n * sizeof(uint32_t));
    if (!copy)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    memcpy(copy, gpus, (size_t)n * sizeof(uint32_t));
    s->now_s = now;
    sn__sched_commit(s, job, copy, now);
    sn__sched_power_mark_over(s); /* a budget lowered since it started */
    /* A set that splits groups can only come from a replacement. */
    s->jobs[job].replaced = s->jobs[job].split;
    s->jobs[job].restored = true;
    return SN_OK;
}

bool sn_sched_try_place(struct sn_sched *s, uint32_t job, double now)
{
    if (job >= s->n_jobs || s->jobs[job].state != SN_JOB_PENDING)
        return false;
    s->now_s = now;
    enum sn_pending_reason why = sn__sched_place(s, job, now);
    if (why != SN_PENDING_NONE)
        s->jobs[job].reason = (uint8_t)why;
    return why == SN_PENDING_NONE;
}
