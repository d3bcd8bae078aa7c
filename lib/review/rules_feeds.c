/*
 * Rack feeds (R20): each rack's circuits carry its steady draw within the
 * continuous rating and its peak within the breaker rating, after the
 * failure their redundancy allows, phase by phase where the phase loads
 * can be computed.
 *
 * Electrical rules, cited in docs/rules.md: a continuous load may use 80 %
 * of a breaker's rating (NFPA 70, NEC 210.20(A): the breaker is rated for
 * 125 % of the continuous load; the spec's `continuous`); a 3-phase feed
 * delivers sqrt(3) x V(line to line) x I x power factor, one phase a third
 * of it. Phase loads: a server whose PSU count is a multiple of the phases
 * spreads evenly over them; every other server and switch of the rack is
 * one load on phase k mod 3, in ID order. Normal operation shares the rack
 * over all feeds; after one side (n+n) or one feed (n+1) fails, the
 * survivors carry it all, which is what is checked. Phase sums are built
 * once per review in O(servers + switches).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review/review_int.h"

struct phase_sums {
    double *steady, *peak; /* [rack * 3 + phase] */
    uint32_t *next;        /* per rack: phase of its next whole load */
};

static void add_load(struct phase_sums *ps, uint32_t rack, uint32_t phases, bool split,
                     double w, double peak)
{
    if (phases != 3) {
        ps->steady[rack * 3] += w;
        ps->peak[rack * 3] += peak;
        return;
    }
    if (split) {
        for (int k = 0; k < 3; k++) {
            ps->steady[rack * 3 + k] += w / 3;
            ps->peak[rack * 3 + k] += peak / 3;
        }
        return;
    }
    uint32_t k = ps->next[rack]++ % 3;
    ps->steady[rack * 3 + k] += w;
    ps->peak[rack * 3 + k] += peak;
}

static const struct sn_feed_spec *rack_feed(const struct sn_model *m, uint32_t rack)
{
    uint32_t sn = m->rack_supernode[rack];
    return sn == SN_NONE ? NULL : &sn_model_supernode_template(m, sn)->racks.feed;
}

static bool phase_sums_build(struct sn__review_ctx *c, struct phase_sums *ps)
{
    const struct sn_model *m = c->m;
    size_t n = m->n_racks ? m->n_racks : 1;
    ps->steady = calloc(n * 3, sizeof(double));
    ps->peak = calloc(n * 3, sizeof(double));
    ps->next = calloc(n, sizeof(uint32_t));
    if (!ps->steady || !ps->peak || !ps->next)
        return false;
    for (uint32_t s = 0; s < m->n_servers; s++) {
        uint32_t r = m->server_rack[s];
        const struct sn_feed_spec *f = r == SN_NONE ? NULL : rack_feed(m, r);
        if (!f || f->count == 0)
            continue;
        uint32_t psus = sn_model_server_spec(m, s)->psu.count;
        add_load(ps, r, f->phases, psus > 0 && psus % 3 == 0, c->power.server_w[s],
                 c->power.server_peak_w[s]);
    }
    for (uint32_t w = 0; w < m->n_switches; w++) {
        uint32_t r = m->switch_rack[w];
        const struct sn_feed_spec *f = r == SN_NONE ? NULL : rack_feed(m, r);
        if (!f || f->count == 0 || c->power.switch_w[w] <= 0)
            continue;
        add_load(ps, r, f->phases, false, c->power.switch_w[w], c->power.switch_w[w]);
    }
    return true;
}

static uint32_t feed_survivors(const struct sn_feed_spec *f)
{
    if (f->redundancy == SN_PSU_N_PLUS_N)
        return f->count / 2;
    if (f->redundancy == SN_PSU_N_PLUS_1)
        return f->count - 1;
    return f->count;
}

/* "415 V 3-phase 63 A" */
static const char *feed_text(const struct sn_feed_spec *f, char *buf, size_t len)
{
    char v[32], a[32];
    snprintf(buf, len, "%s %u-phase %s", sn__fmt(v, sizeof(v), f->voltage_v, SN_UNIT_VOLTAGE),
             f->phases, sn__fmt(a, sizeof(a), f->current_a, SN_UNIT_CURRENT));
    return buf;
}

static void feeds_rack(struct sn__review_ctx *c, const struct phase_sums *ps, uint32_t r,
                       uint32_t key)
{
    const struct sn_model *m = c->m;
    const struct sn_feed_spec *f = rack_feed(m, r);
    uint32_t left = feed_survivors(f), phases = f->phases == 3 ? 3 : 1;
    double phase_cap = sn_model_feed_capacity_w(f) / phases;
    double hi = 0, lo = INFINITY, hi_peak = 0;
    uint32_t worst = 0;
    for (uint32_t k = 0; k < phases; k++) {
        double s = ps->steady[r * 3 + k], p = ps->peak[r * 3 + k];
        if (s > hi) {
            hi = s;
            worst = k;
        }
        lo = s < lo ? s : lo;
        hi_peak = p > hi_peak ? p : hi_peak;
    }
    char name[SN_REVIEW_NAME_MAX], ft[64], a[32], b[32], d[32];
    sn_model_rack_name(m, r, name, sizeof(name));
    feed_text(f, ft, sizeof(ft));
    char who[48] = "carry", of[32] = "";
    if (phases == 3) {
        snprintf(who, sizeof(who), "phase L%u carries", worst + 1);
        snprintf(of, sizeof(of), "the phase's ");
    }
    const char *after = f->redundancy == SN_PSU_N_PLUS_N  ? "after one side fails, "
                        : f->redundancy == SN_PSU_N_PLUS_1 ? "after one feed fails, "
                                                            : "";
    if (hi / left > f->continuous * phase_cap) {
        struct sn_finding *fd = sn__finding(
            c, SN_SEVERITY_ERROR, key * 4,
            "%s%u %s feed%s: %s steady %s > %.0f%% of %s%s = %s (continuous rating)", after, left,
            ft, left == 1 ? "" : "s", who, sn__fmt(a, sizeof(a), hi, SN_UNIT_POWER),
            100 * f->continuous, of,
            sn__fmt(b, sizeof(b), phase_cap * left, SN_UNIT_POWER),
            sn__fmt(d, sizeof(d), f->continuous * phase_cap * left, SN_UNIT_POWER));
        sn__finding_element(fd, name);
    } else if (hi_peak / left > phase_cap) {
        struct sn_finding *fd = sn__finding(
            c, SN_SEVERITY_ERROR, key * 4 + 1,
            "%s%u %s feed%s: %s peak %s (GPUs at %g x TDP) > %sbreaker rating %s", after, left, ft,
            left == 1 ? "" : "s", who, sn__fmt(a, sizeof(a), hi_peak, SN_UNIT_POWER),
            c->cfg->peak_factor, of, sn__fmt(b, sizeof(b), phase_cap * left, SN_UNIT_POWER));
        sn__finding_element(fd, name);
    }
    if (phases == 3 && hi > 0 && (hi - lo) / hi > 0.05) {
        char x[32], y[32], z[32];
        struct sn_finding *fd = sn__finding(
            c, SN_SEVERITY_INFO, key * 4 + 2,
            "phases unbalanced: L1 %s, L2 %s, L3 %s steady (%.0f%% between the highest and "
            "lowest)",
            sn__fmt(x, sizeof(x), ps->steady[r * 3], SN_UNIT_POWER),
            sn__fmt(y, sizeof(y), ps->steady[r * 3 + 1], SN_UNIT_POWER),
            sn__fmt(z, sizeof(z), ps->steady[r * 3 + 2], SN_UNIT_POWER), 100 * (hi - lo) / hi);
        sn__finding_element(fd, name);
    }
}

static void feeds_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_supernode *s = &c->m->supernodes[sn];
    const struct sn_feed_spec *f = &sn_model_supernode_template(c->m, sn)->racks.feed;
    if (f->count == 0)
        return;
    for (uint32_t r = s->first_rack; r < s->first_rack + s->n_racks; r++)
        feeds_rack(c, (const struct phase_sums *)c->user, r, r - s->first_rack);
}

void sn__check_feeds(struct sn__review_ctx *c)
{
    const struct sn_spec *spec = c->m->spec;
    bool any = false;
    for (uint32_t t = 0; t < spec->n_templates; t++)
        any = any || spec->templates[t].racks.feed.count > 0;
    if (!any)
        return;
    struct phase_sums ps = {0};
    if (!phase_sums_build(c, &ps)) {
        c->nomem = true;
    } else {
        c->user = &ps;
        sn__each_supernode(c, feeds_supernode);
        c->user = NULL;
    }
    free(ps.steady);
    free(ps.peak);
    free(ps.next);
}
