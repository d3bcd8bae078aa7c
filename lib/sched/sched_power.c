/*
 * Power budgets at placement (docs/scheduler.md "Power budgets"): with
 * power_util > 0, a placement that would take a rack past the continuous
 * limit of its feeds is not used: the search runs again power-aware
 * (power_skipping: a supernode's capacity is at most the GPUs its racks'
 * power room holds, sn__sched_power_sn_gpus), so the job lands on the next
 * supernode that fits, or spreads over several; a rack that such a plan
 * still takes past its limit (several racks in one supernode) is ruled out
 * (power_skip: its servers have no room) and the search runs again. The job
 * is refused with SN_PENDING_POWER only when GPUs fit but no placement
 * fits the feeds. A replacement spare (find_spare) on another rack must fit
 * that rack too.
 *
 * The figures are the design review's (R20, lib/review/rules_feeds.c, and
 * the shared power model, sn_model_power_compute()):
 *  - a rack's limit is what its feeds may carry continuously after the
 *    failure their redundancy allows: continuous (0.8 by default: NFPA 70,
 *    NEC 210.20(A)) x the real power of one feed at its breaker rating x
 *    the surviving feeds (n+n: half; n+1: all but one). Phases are not
 *    tracked here: the limit is the feeds' total (R20 checks the worst phase
 *    of the design's full draw);
 *  - a rack's base draw is the model's steady draw of the rack less its
 *    GPUs at TDP: server bases, switches, optics, always on;
 *  - an allocated GPU draws power_util x its TDP (its job's expected draw is
 *    its GPUs x TDP x power_util); an idle GPU is counted as 0 beyond the
 *    server's base.
 * A rack without feeds in the spec has no limit (INFINITY).
 *
 * Invariants (sn__sched_power_check, in sn_sched_check_invariants):
 * rack_jobs_w[r] = power_util x the TDP of every GPU of rack r held by a
 * job (kept by sn__sched_power_add() at every take and release, including
 * holds and replacements), up to rounding; and no rack draws past its
 * limit, except one a restore left there (power_over: running jobs placed
 * back after the budget was lowered), until releases bring it under.
 */
#include "sched_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double gpu_draw_w(const struct sn_sched *s, uint32_t srv)
{
    const struct sn_model *m = s->m;
    return s->cfg.power_util * m->spec->gpu_models[sn_model_server_spec(m, srv)->gpu_model].tdp_w;
}

static uint32_t survivors(const struct sn_feed_spec *f)
{
    if (f->redundancy == SN_PSU_N_PLUS_N)
        return f->count / 2;
    if (f->redundancy == SN_PSU_N_PLUS_1)
        return f->count - 1;
    return f->count;
}

enum sn_err sn__sched_power_init(struct sn_sched *s, struct sn_error *err)
{
    const struct sn_model *m = s->m;
    if (!(s->cfg.power_util > 0))
        return SN_OK;
    size_t n = m->n_racks ? m->n_racks : 1;
    s->rack_limit_w = calloc(n, sizeof(double));
    s->rack_base_w = calloc(n, sizeof(double));
    s->rack_jobs_w = calloc(n, sizeof(double));
    s->power_skip = calloc(n, 1);
    s->power_over = calloc(n, 1);
    if (!s->rack_limit_w || !s->rack_base_w || !s->rack_jobs_w || !s->power_skip || !s->power_over)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the power budgets");
    s->fixed_bytes += 3 * n * sizeof(double) + 2 * n;
    struct sn_model_power p;
    if (sn_model_power_compute(m, 1.0, &p, err) != SN_OK)
        return err ? err->code : SN_ERR_NOMEM;
    for (uint32_t r = 0; r < m->n_racks; r++) {
        s->rack_base_w[r] = p.rack_w[r];
        uint32_t sn = m->rack_supernode[r];
        const struct sn_feed_spec *f =
            sn == SN_NONE ? NULL : &sn_model_supernode_template(m, sn)->racks.feed;
        uint32_t left = f && f->count ? survivors(f) : 0;
        s->rack_limit_w[r] =
            left ? f->continuous * sn_model_feed_capacity_w(f) * left : (double)INFINITY;
    }
    for (uint32_t srv = 0; srv < m->n_servers; srv++) {
        uint32_t r = m->server_rack[srv];
        if (r < m->n_racks)
            s->rack_base_w[r] -= sn_model_server_spec(m, srv)->gpus *
                                 m->spec->gpu_models[sn_model_server_spec(m, srv)->gpu_model].tdp_w;
    }
    sn_model_power_release(&p);
    return SN_OK;
}

static bool rack_within(const struct sn_sched *s, uint32_t r, double more_w)
{
    /* 1e-6 W of slack: the sums are built by additions and subtractions. */
    return r >= s->m->n_racks ||
           s->rack_base_w[r] + s->rack_jobs_w[r] + more_w <= s->rack_limit_w[r] + 1e-6;
}

void sn__sched_power_add(struct sn_sched *s, uint32_t srv, double sign)
{
    uint32_t r = s->m->server_rack[srv];
    if (!s->rack_jobs_w || r >= s->m->n_racks)
        return;
    s->rack_jobs_w[r] += sign * gpu_draw_w(s, srv);
}

void sn__sched_power_settle(struct sn_sched *s, const uint32_t *gpus, uint32_t n)
{
    if (!s->rack_jobs_w)
        return;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = s->m->server_rack[s->m->gpu_server[gpus[i]]];
        if (r < s->m->n_racks && s->power_over[r] && rack_within(s, r, 0))
            s->power_over[r] = 0;
    }
}

bool sn__sched_power_fits(const struct sn_sched *s, uint32_t srv, uint32_t from)
{
    if (!s->rack_jobs_w)
        return true;
    uint32_t r = s->m->server_rack[srv];
    if (from != SN_NONE && s->m->server_rack[from] == r)
        return true; /* the GPU stays in its rack: the same draw */
    return rack_within(s, r, gpu_draw_w(s, srv));
}

uint32_t sn__sched_power_skip(struct sn_sched *s, const uint32_t *gpus, uint32_t n)
{
    if (!s->rack_jobs_w)
        return 0;
    const struct sn_model *m = s->m;
    for (uint32_t i = 0; i < n; i++)
        sn__sched_power_add(s, m->gpu_server[gpus[i]], +1);
    uint32_t marked = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t r = m->server_rack[m->gpu_server[gpus[i]]];
        if (r < m->n_racks && !s->power_skip[r] && !rack_within(s, r, 0)) {
            s->power_skip[r] = 1;
            marked++;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        sn__sched_power_add(s, m->gpu_server[gpus[i]], -1);
    return marked;
}

void sn__sched_power_unskip(struct sn_sched *s)
{
    if (s->power_skip)
        memset(s->power_skip, 0, s->m->n_racks ? s->m->n_racks : 1);
    s->power_skipping = false;
}

uint32_t sn__sched_power_sn_gpus(const struct sn_sched *s, uint32_t sn)
{
    const struct sn_supernode *S = &s->m->supernodes[sn];
    if (!s->rack_jobs_w || S->n_servers == 0)
        return UINT32_MAX;
    double draw = gpu_draw_w(s, S->first_server);
    uint64_t sum = 0;
    for (uint32_t r = S->first_rack; r < S->first_rack + S->n_racks && r < s->m->n_racks; r++) {
        double room = s->rack_limit_w[r] - s->rack_base_w[r] - s->rack_jobs_w[r];
        if (isinf(room) || !(draw > 0))
            return UINT32_MAX;
        if (!s->power_skip[r] && room > -1e-6)
            sum += (uint64_t)floor((room + 1e-6) / draw);
    }
    return sum < UINT32_MAX ? (uint32_t)sum : UINT32_MAX;
}

void sn__sched_power_mark_over(struct sn_sched *s)
{
    for (uint32_t r = 0; s->rack_jobs_w && r < s->m->n_racks; r++)
        if (!rack_within(s, r, 0))
            s->power_over[r] = 1;
}

bool sn__sched_power_ok(struct sn_sched *s, const uint32_t *gpus, uint32_t n)
{
    if (!s->rack_jobs_w)
        return true;
    const struct sn_model *m = s->m;
    for (uint32_t i = 0; i < n; i++)
        sn__sched_power_add(s, m->gpu_server[gpus[i]], +1);
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++)
        ok = rack_within(s, m->server_rack[m->gpu_server[gpus[i]]], 0);
    for (uint32_t i = 0; i < n; i++)
        sn__sched_power_add(s, m->gpu_server[gpus[i]], -1);
    return ok;
}

enum sn_err sn__sched_power_check(const struct sn_sched *s, struct sn_error *err)
{
    const struct sn_model *m = s->m;
    if (!s->rack_jobs_w)
        return SN_OK;
    double *want = calloc(m->n_racks ? m->n_racks : 1, sizeof(double));
    if (!want)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory checking invariants");
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        uint32_t srv = m->gpu_server[g], r = m->server_rack[srv];
        if (s->gpu_owner[g] != SN_NONE && r < m->n_racks)
            want[r] += gpu_draw_w(s, srv);
    }
    enum sn_err rc = SN_OK;
    for (uint32_t r = 0; r < m->n_racks && rc == SN_OK; r++) {
        if (fabs(want[r] - s->rack_jobs_w[r]) > 1e-3)
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: rack %u: jobs draw %.3f W, its GPUs held %.3f W", r,
                              s->rack_jobs_w[r], want[r]);
        else if (!s->power_over[r] && !rack_within(s, r, 0))
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "invariant: rack %u draws %.3f W, past its continuous limit of "
                              "%.3f W",
                              r, s->rack_base_w[r] + s->rack_jobs_w[r], s->rack_limit_w[r]);
    }
    free(want);
    return rc;
}

bool sn_sched_power_rack(const struct sn_sched *s, uint32_t rack, double *draw_w, double *limit_w)
{
    if (!s->rack_jobs_w || rack >= s->m->n_racks)
        return false;
    *draw_w = s->rack_base_w[rack] + s->rack_jobs_w[rack];
    *limit_w = s->rack_limit_w[rack];
    return true;
}

double sn_sched_power_rack_base_w(const struct sn_sched *s, uint32_t rack)
{
    return s->rack_base_w && rack < s->m->n_racks ? s->rack_base_w[rack] : 0;
}
