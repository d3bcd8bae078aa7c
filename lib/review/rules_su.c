/*
 * R21: scalable units and their per-rack power budget (spec su:).
 *
 * A scalable unit (SU) is `su.supernodes` consecutive supernodes in ID
 * order; the last one may be partial. The facility gives every rack of a
 * unit the same budget (`su.rack_power`), whatever the rack holds: the
 * unit's compute racks, the network racks of the fabric and the racks the
 * appliances fill (appliances: with `racks`, their power spread evenly over
 * those racks) are each held to it at steady draw and at peak (GPUs at
 * peak_factor x TDP, the power model of R04 and R05). One info finding per
 * unit reports its racks, its draw and its worst rack against the budget.
 * Without a su: section the rule emits nothing.
 */
#include <stdio.h>

#include "review/review_int.h"

/* Key space: racks by ID x 2 (+1 for peak), then appliances, then units. */
#define KEY_APPLIANCE (SN__KEY_GLOBAL | ((uint64_t)1 << 40))
#define KEY_UNIT (SN__KEY_GLOBAL | ((uint64_t)1 << 41))

static void over_budget(struct sn__review_ctx *c, uint64_t key, const char *what, const char *name,
                        double steady, double peak)
{
    char a[32], b[32];
    double budget = c->m->spec->su.rack_power_w;
    if (steady > budget) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, key, "%s steady draw %s > scalable-unit rack budget %s", what,
            sn__fmt(a, sizeof(a), steady, SN_UNIT_POWER),
            sn__fmt(b, sizeof(b), budget, SN_UNIT_POWER));
        sn__finding_element(f, name);
    } else if (peak > budget) {
        struct sn_finding *f =
            sn__finding_global(c, SN_SEVERITY_ERROR, key + 1,
                               "%s peak draw %s (GPUs at %g x TDP) > scalable-unit rack budget %s",
                               what, sn__fmt(a, sizeof(a), peak, SN_UNIT_POWER),
                               c->cfg->peak_factor, sn__fmt(b, sizeof(b), budget, SN_UNIT_POWER));
        sn__finding_element(f, name);
    }
}

static void one_unit(struct sn__review_ctx *c, uint32_t unit, uint32_t first, uint32_t n)
{
    const struct sn_model *m = c->m;
    char name[SN_REVIEW_NAME_MAX], a[32], b[32], w[32], bud[32];
    uint32_t racks = 0, worst = SN_NONE;
    double steady = 0, peak = 0;
    for (uint32_t sn = first; sn < first + n; sn++) {
        const struct sn_supernode *s = &m->supernodes[sn];
        for (uint32_t r = s->first_rack; r < s->first_rack + s->n_racks; r++) {
            racks++;
            steady += c->power.rack_w[r];
            peak += c->power.rack_peak_w[r];
            if (worst == SN_NONE || c->power.rack_peak_w[r] > c->power.rack_peak_w[worst])
                worst = r;
            sn_model_rack_name(m, r, name, sizeof(name));
            over_budget(c, SN__KEY_GLOBAL | (uint64_t)r * 2, "rack", name, c->power.rack_w[r],
                        c->power.rack_peak_w[r]);
        }
    }
    char first_name[SN_REVIEW_NAME_MAX], last_name[SN_REVIEW_NAME_MAX];
    sn_model_supernode_name(m, first, first_name, sizeof(first_name));
    sn_model_supernode_name(m, first + n - 1, last_name, sizeof(last_name));
    double budget = m->spec->su.rack_power_w;
    struct sn_finding *f = sn__finding_global(
        c, SN_SEVERITY_INFO, KEY_UNIT + unit,
        "su%u: %u supernode(s) %s..%s, %u racks, %s steady, %s peak; worst rack %s of the %s "
        "budget",
        unit, n, first_name, last_name, racks, sn__fmt(a, sizeof(a), steady, SN_UNIT_POWER),
        sn__fmt(b, sizeof(b), peak, SN_UNIT_POWER),
        sn__fmt(w, sizeof(w), worst == SN_NONE ? 0 : c->power.rack_peak_w[worst], SN_UNIT_POWER),
        sn__fmt(bud, sizeof(bud), budget, SN_UNIT_POWER));
    if (worst != SN_NONE)
        sn__finding_element(f, sn_model_rack_name(m, worst, name, sizeof(name)));
}

void sn__check_su(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    const struct sn_spec *spec = m->spec;
    const struct sn_su_spec *su = &spec->su;
    if (su->supernodes == 0)
        return;
    char name[SN_REVIEW_NAME_MAX];
    uint32_t units = (m->n_supernodes + su->supernodes - 1) / su->supernodes;
    for (uint32_t u = 0; u < units; u++) {
        uint32_t first = u * su->supernodes;
        uint32_t n =
            m->n_supernodes - first < su->supernodes ? m->n_supernodes - first : su->supernodes;
        one_unit(c, u, first, n);
    }
    if (m->n_supernodes % su->supernodes)
        sn__finding_global(c, SN_SEVERITY_WARNING, KEY_UNIT + units,
                           "%u supernodes do not fill whole scalable units of %u: su%u has %u "
                           "(its leaves and spine ports are bought for a whole unit)",
                           m->n_supernodes, su->supernodes, units - 1,
                           m->n_supernodes % su->supernodes);
    /* Network racks draw the same steady and at peak (switches only). */
    for (uint32_t r = m->first_net_rack; r < m->first_net_rack + m->n_net_racks; r++) {
        sn_model_rack_name(m, r, name, sizeof(name));
        over_budget(c, SN__KEY_GLOBAL | (uint64_t)r * 2, "network rack", name,
                    c->power.rack_peak_w[r], c->power.rack_peak_w[r]);
    }
    for (uint32_t i = 0; i < spec->n_appliances; i++) {
        const struct sn_appliance_spec *ap = &spec->appliances[i];
        if (ap->racks == 0)
            continue;
        double per_rack = ap->count * ap->power_w / ap->racks;
        char what[96];
        snprintf(what, sizeof(what),
                 "each rack of appliance '%s' (%u units over %u racks):", ap->name, ap->count,
                 ap->racks);
        over_budget(c, KEY_APPLIANCE + (uint64_t)i * 2, what, ap->name, per_rack, per_rack);
    }
}
