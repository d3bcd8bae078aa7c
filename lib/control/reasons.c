/*
 * Pending details: the binding constraint behind a waiting job's pending
 * reason, with the counts that make it true at this moment (the job JSON's
 * pending_detail and the timeline's `pending` events):
 *  - quota reasons: the limit that holds the job (quota.c);
 *  - no-supernode-fits: the free GPUs of the job's pools, the most of them
 *    in one supernode (and in one server for a job in groups), and what
 *    the job needs ("7 GPUs free, at most 3 in one supernode, job needs
 *    8"), so "free GPUs exist but not where the job can use them" reads
 *    as such;
 *  - reservation: the job that holds the pass's backfill reservation and
 *    its expected start (starts.c), which this job would delay;
 *  - nvlink-domain: the degraded NVLink domains of the job's pools that
 *    take single-server jobs only, with the reason of the first ("2 GPUs
 *    per server at most on nvl03 (health: nvlink-domain-degraded nvl03:
 *    ...)");
 *  - power-budget: the rack (feeds) with the most power room left among
 *    the job's pools, its draw and continuous limit, the room over all
 *    those racks, and the job's expected draw ("the most power room on one
 *    rack is 1068 W (sn00-rack0: 27684 of 28752 W), 2136 W over 2 racks; the job
 *    draws 5600 W: 8 GPUs x 700 W").
 * "Free" is the core's: no job on it, not down, not cordoned (admin,
 * health round, a silent agent or its last job's processes). The counts
 * scan the pools' GPUs once per call: this runs for one job's JSON or one
 * recorded event, never for every job on every pass.
 */
#include "control_int.h"

#include <math.h>

static uint32_t job_pool_index(const struct sn_control *c, const struct sn_control_job *j)
{
    if (!c->sched_spec_pools)
        return SN_NONE;
    return sn_control_spec_pool(c, json_string_value(json_object_get(j->spec, "pool")));
}

static void no_fit_detail(const struct sn_control *c, const struct sn_control_job *j, char *out,
                          size_t len)
{
    const struct sn_model *m = c->model;
    uint32_t pool = job_pool_index(c, j);
    uint64_t free_total = 0;
    uint32_t best_sn = 0, best_srv = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        if (pool != SN_NONE && m->supernodes[sn].pool != pool)
            continue;
        uint32_t in_sn = 0, srv = SN_NONE, in_srv = 0;
        for (uint32_t g = m->supernodes[sn].first_gpu;
             g < m->supernodes[sn].first_gpu + m->supernodes[sn].n_gpus; g++) {
            if (m->gpu_server[g] != srv) {
                srv = m->gpu_server[g];
                in_srv = 0;
            }
            if (sn_sched_gpu_owner(c->sched, g) != SN_NONE || sn_sched_gpu_down(c->sched, g) ||
                sn_sched_gpu_cordoned(c->sched, g))
                continue;
            in_sn++;
            in_srv++;
            best_srv = in_srv > best_srv ? in_srv : best_srv;
        }
        free_total += in_sn;
        best_sn = in_sn > best_sn ? in_sn : best_sn;
    }
    json_int_t gpus = json_integer_value(json_object_get(j->spec, "gpus"));
    json_int_t group = json_integer_value(json_object_get(j->spec, "group_gpus"));
    char need[160];
    if (group > 1)
        snprintf(need, sizeof(need),
                 "job needs %lld in groups of %lld (at most %u free in one "
                 "server)",
                 (long long)gpus, (long long)group, best_srv);
    else
        snprintf(need, sizeof(need), "job needs %lld%s", (long long)gpus,
                 json_is_true(json_object_get(j->spec, "one_supernode")) ? " in one supernode"
                                                                         : "");
    /* Enough free GPUs by count in one supernode (and server, for groups):
     * the count is not what binds, and the detail says so. */
    bool one_sn = json_is_true(json_object_get(j->spec, "one_supernode"));
    bool by_count = (one_sn ? best_sn >= (uint64_t)gpus : free_total >= (uint64_t)gpus) &&
                    (group <= 1 || best_srv >= (uint64_t)group);
    snprintf(out, len, "%llu GPUs free%s, at most %u in one supernode, %s%s",
             (unsigned long long)free_total, pool != SN_NONE ? " in its pool" : "", best_sn, need,
             by_count ? "; enough by count: its other limits (host CPU or memory per GPU, "
                        "bandwidth, exclusive) rule them out"
                      : "");
}

static void power_detail(const struct sn_control *c, const struct sn_control_job *j, char *out,
                         size_t len)
{
    const struct sn_model *m = c->model;
    uint32_t pool = job_pool_index(c, j), best = SN_NONE, n = 0;
    double best_room = 0, best_draw = 0, best_limit = 0, sum = 0, gpu_w = 0;
    for (uint32_t r = 0; r < m->n_racks; r++) {
        uint32_t sn = m->rack_supernode[r];
        double draw, limit;
        if (sn == SN_NONE || (pool != SN_NONE && m->supernodes[sn].pool != pool) ||
            !sn_sched_power_rack(c->sched, r, &draw, &limit) || !isfinite(limit))
            continue;
        double room = limit > draw ? limit - draw : 0;
        if (best == SN_NONE || room > best_room) {
            best = r;
            best_room = room;
            best_draw = draw;
            best_limit = limit;
            const struct sn_server_model *ss = sn_model_server_spec(m, m->supernodes[sn].first_server);
            gpu_w = (double)c->cfg.power_util_pct / 100.0 * m->spec->gpu_models[ss->gpu_model].tdp_w;
        }
        sum += room;
        n++;
    }
    if (best == SN_NONE) {
        snprintf(out, len, "no rack of its pools has a feed limit");
        return;
    }
    char rack[64];
    sn_model_rack_name(m, best, rack, sizeof(rack));
    json_int_t gpus = json_integer_value(json_object_get(j->spec, "gpus"));
    snprintf(out, len,
             "the most power room on one rack is %.0f W (%s: %.0f of %.0f W), %.0f W over %u "
             "racks; the job draws %.0f W: %lld GPUs x %.0f W",
             best_room, rack, best_draw, best_limit, sum, n, (double)gpus * gpu_w,
             (long long)gpus, gpu_w);
}

static void domain_detail(const struct sn_control *c, const struct sn_control_job *j, char *out,
                          size_t len)
{
    const struct sn_model *m = c->model;
    uint32_t pool = job_pool_index(c, j), n = 0;
    const char *first = NULL;
    char names[160] = "";
    size_t at = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const char *why = sn_control_domain_limit(c, sn);
        if (!why || (pool != SN_NONE && m->supernodes[sn].pool != pool))
            continue;
        char name[64];
        sn_model_supernode_name(m, sn, name, sizeof(name));
        if (at < sizeof(names) - 1)
            at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", n ? " " : "", name);
        first = first ? first : why;
        n++;
    }
    if (!first) {
        snprintf(out, len, "it fits only across servers of a degraded NVLink domain");
        return;
    }
    snprintf(out, len,
             "it fits only across servers of %s, whose degraded NVLink domain%s take%s "
             "single-server jobs only (%.200s)",
             names, n > 1 ? "s" : "", n > 1 ? "" : "s", first);
}

static void reservation_detail(const struct sn_control *c, char *out, size_t len)
{
    struct sn_sched_reservation r;
    sn_sched_reservation(c->sched, &r);
    const struct sn_control_job *head = r.job != SN_NONE && r.job < c->sched_jobs_cap
                                            ? sn_control_job_get(c, c->sched_jobs[r.job])
                                            : NULL;
    if (!head) {
        snprintf(out, len, "it would delay the backfill reservation");
        return;
    }
    int64_t start = 0;
    char basis[200];
    if (!sn_control_expected_start(c, head, &start, basis, sizeof(basis))) {
        snprintf(out, len, "job %lld holds the backfill reservation (no expected start)",
                 (long long)head->id);
        return;
    }
    snprintf(out, len, "job %lld holds the backfill reservation, expected to start at %lld s (%s)",
             (long long)head->id, (long long)start, basis);
}

void sn_control_pending_detail(const struct sn_control *c, const struct sn_control_job *j,
                               const char *reason, char *out, size_t len)
{
    out[0] = '\0';
    if (!c->sched || j->sched_id == SN_NONE)
        return;
    if (strcmp(reason, sn_pending_reason_name(SN_PENDING_NO_FIT)) == 0)
        no_fit_detail(c, j, out, len);
    else if (strcmp(reason, sn_pending_reason_name(SN_PENDING_RESERVATION)) == 0)
        reservation_detail(c, out, len);
    else if (strcmp(reason, sn_pending_reason_name(SN_PENDING_POWER)) == 0)
        power_detail(c, j, out, len);
    else if (strcmp(reason, sn_pending_reason_name(SN_PENDING_DOMAIN)) == 0)
        domain_detail(c, j, out, len);
    else
        sn_control_quota_pending_detail(c, j, reason, out, len);
}
