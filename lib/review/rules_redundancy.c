/*
 * Switch redundancy (R16), review thresholds against the specification
 * (R17) and link speeds (R18).
 *
 * R16 looks at what one switch failure cuts off: a supernode behind a
 * single leaf (ToR) loses all its scale-out with it, and a fabric with a
 * single spine loses every path between leaves. Rail designs with several
 * leaves lose one rail per leaf, which the scheduler routes around, so
 * they pass. R17 compares the thresholds a review runs with (the spec's
 * `review` section or a caller's config) with the specification's own:
 * looser values are allowed but never silent.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "review/review_int.h"

static void single_leaf_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    if (s->n_leaves != 1 || s->n_gpus == 0)
        return;
    char name[SN_REVIEW_NAME_MAX], n[32];
    struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 0,
                                       "single leaf: its failure cuts all %s GPUs of the "
                                       "supernode off the scale-out fabric (use two leaves, "
                                       "attach: pair or rails)",
                                       sn__count(n, sizeof(n), s->n_gpus));
    sn__finding_element(f, sn_model_switch_name(m, s->first_leaf, name, sizeof(name)));
}

void sn__check_switch_redundancy(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    sn__each_supernode(c, single_leaf_supernode);
    uint32_t leaves = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        leaves += m->supernodes[sn].n_leaves;
    char name[SN_REVIEW_NAME_MAX], n[32];
    if (m->n_spines == 1 && leaves > 1) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, SN__KEY_GLOBAL | 1,
            "single spine: its failure cuts every path between the %s leaves (set fabric.spines "
            "to 2 or more)",
            sn__count(n, sizeof(n), leaves));
        sn__finding_element(f, sn_model_switch_name(m, m->first_spine, name, sizeof(name)));
    }
    if (m->n_cores == 1 && m->n_spines > 1) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, SN__KEY_GLOBAL | 2,
            "single core switch: its failure cuts every path between pods");
        sn__finding_element(f, sn_model_switch_name(m, m->first_core, name, sizeof(name)));
    }
}

/* The specification's thresholds (docs/rules.md): feeds carry 1.5x their
 * steady draw, GPUs peak at 1.3x TDP, and the fabric keeps 30 % spare. */
static const struct {
    const char *key;
    size_t offset;
    double spec;
    const char *meaning;
} spec_thresholds[] = {
    {"power_margin", offsetof(struct sn_review_config, power_margin), 1.5,
     "capacity over steady draw"},
    {"peak_factor", offsetof(struct sn_review_config, peak_factor), 1.3, "GPU peak over TDP"},
    {"bandwidth_headroom", offsetof(struct sn_review_config, bandwidth_headroom), 0.3,
     "spare scale-out bandwidth"},
};

void sn__check_thresholds(struct sn__review_ctx *c)
{
    for (uint32_t i = 0; i < sizeof(spec_thresholds) / sizeof(spec_thresholds[0]); i++) {
        double v = *(const double *)((const char *)c->cfg + spec_thresholds[i].offset);
        if (v + 1e-12 >= spec_thresholds[i].spec)
            continue;
        char key[64];
        snprintf(key, sizeof(key), "review.%s", spec_thresholds[i].key);
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_WARNING, i, "%s %g is looser than the specification's %g (%s)",
            spec_thresholds[i].key, v, spec_thresholds[i].spec, spec_thresholds[i].meaning);
        sn__finding_element(f, key);
    }
}

/* ---- R18: link ends run at the same speed ------------------------------- */

/* Per tier: the first link whose ends differ, and how many do; and the
 * links whose cable is slower than both ends' common speed. */
struct speed_tally {
    uint64_t slower_far, slower_near, first_far, first_near;
    double near_far, near_slow; /* speeds of the first mismatch of each kind */
    double far_fast, far_slow;
    uint64_t slow_cable, first_cable;
    double cable_speed, ends_speed; /* of the first slow cable */
};

static double end_speed(const struct sn_model *m, uint8_t kind, uint32_t id);

/* Lanes of a link end's port; 0 when not stated. */
static uint32_t end_lanes(const struct sn_model *m, uint8_t kind, uint32_t id)
{
    if (kind == SN_END_SERVER)
        return sn_model_server_spec(m, id)->nic_lanes;
    if (kind == SN_END_SWITCH)
        return sn_model_switch_spec(m, id)->port_lanes;
    return 0;
}

/* Lane mismatches of a tier's cables, each kind with its first link. */
struct lane_tally {
    uint64_t trunk, first_trunk;  /* cable lanes != the b port's lanes */
    uint32_t trunk_cable, trunk_port;
    uint64_t leg, first_leg;      /* a leg's lanes != the a end's lanes */
    uint32_t leg_lanes, leg_end;
    uint64_t speed, first_speed;  /* cable lane speed != an end's lane speed */
    double lane_cable, lane_end;
};

static void lane_check(const struct sn_model *m, uint64_t i, struct lane_tally *t)
{
    const struct sn_link *l = &m->links[i];
    const struct sn_cable_type *ct = &m->spec->cable_types[l->cable];
    uint32_t pa = end_lanes(m, l->a_kind, l->a_id), pb = end_lanes(m, l->b_kind, l->b_id);
    uint32_t leg = ct->lanes / ct->breakout;
    if (pb > 0 && ct->lanes != pb && t->trunk++ == 0) {
        t->first_trunk = i;
        t->trunk_cable = ct->lanes;
        t->trunk_port = pb;
    }
    if (pa > 0 && leg != pa && t->leg++ == 0) {
        t->first_leg = i;
        t->leg_lanes = leg;
        t->leg_end = pa;
    }
    if (ct->lane_bytes_per_s <= 0)
        return;
    const uint32_t lanes[2] = {pa, pb};
    const double speeds[2] = {end_speed(m, l->a_kind, l->a_id), end_speed(m, l->b_kind, l->b_id)};
    for (int e = 0; e < 2; e++) {
        double per_lane = lanes[e] ? speeds[e] / lanes[e] : 0;
        if (per_lane > 0 && fabs(per_lane - ct->lane_bytes_per_s) > 1e-9 * per_lane) {
            if (t->speed++ == 0) {
                t->first_speed = i;
                t->lane_cable = ct->lane_bytes_per_s;
                t->lane_end = per_lane;
            }
            return;
        }
    }
}

static void lane_report(struct sn__review_ctx *c, enum sn_link_tier tier,
                        const struct lane_tally *t)
{
    const struct sn_model *m = c->m;
    char label[2 * SN_REVIEW_NAME_MAX], n[32], a[32], b[32];
    const struct {
        uint64_t count, first;
    } kinds[3] = {{t->trunk, t->first_trunk}, {t->leg, t->first_leg}, {t->speed, t->first_speed}};
    for (unsigned k = 0; k < 3; k++) {
        if (kinds[k].count == 0)
            continue;
        const struct sn_link *l = &m->links[kinds[k].first];
        const struct sn_cable_type *ct = &m->spec->cable_types[l->cable];
        char what[160];
        if (k == 0)
            snprintf(what, sizeof(what), "a %u-lane cable in %u-lane ports", t->trunk_cable,
                     t->trunk_port);
        else if (k == 1)
            snprintf(what, sizeof(what), "%u-lane %s on %u-lane ports",
                     t->leg_lanes, ct->breakout > 1 ? "breakout legs" : "cable ends", t->leg_end);
        else
            snprintf(what, sizeof(what), "lanes at %s where the ports' lanes run at %s",
                     sn__fmt(a, sizeof(a), t->lane_cable, SN_UNIT_BANDWIDTH),
                     sn__fmt(b, sizeof(b), t->lane_end, SN_UNIT_BANDWIDTH));
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, (uint64_t)SN_LINK_TIER_COUNT * 3 + (uint64_t)tier * 3 + k,
            "%s %s links: cable type '%s' (%s:%u:%u): %s: the cable does not fit both ends",
            sn__count(n, sizeof(n), kinds[k].count), sn_link_tier_name(tier), ct->name,
            m->spec->file, ct->loc.line, ct->loc.column, what);
        sn__finding_element(f, sn_model_cable_label(m, l, label, sizeof(label)));
    }
}

static double end_speed(const struct sn_model *m, uint8_t kind, uint32_t id)
{
    if (kind == SN_END_SERVER)
        return sn_model_server_spec(m, id)->nic_bytes_per_s;
    if (kind == SN_END_SWITCH)
        return sn_model_switch_spec(m, id)->port_bytes_per_s;
    return 0;
}

static void speed_report(struct sn__review_ctx *c, enum sn_link_tier tier,
                         const struct speed_tally *t, const char *near, const char *far)
{
    const struct sn_model *m = c->m;
    char label[2 * SN_REVIEW_NAME_MAX], a[32], b[32], n[32];
    if (t->slower_far > 0) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, (uint64_t)tier * 2,
            "%s %s links: %s at %s on %s ports at %s: the link runs at the port's speed and the "
            "rest of the %s' bandwidth is lost",
            sn__count(n, sizeof(n), t->slower_far), sn_link_tier_name(tier), near,
            sn__fmt(a, sizeof(a), t->near_far, SN_UNIT_BANDWIDTH), far,
            sn__fmt(b, sizeof(b), t->far_slow, SN_UNIT_BANDWIDTH), near);
        sn__finding_element(f, sn_model_cable_label(m, &m->links[t->first_far], label,
                                                    sizeof(label)));
    }
    if (t->slower_near > 0) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_WARNING, (uint64_t)tier * 2 + 1,
            "%s %s links: %s at %s on %s ports at %s: the port runs at the slower speed",
            sn__count(n, sizeof(n), t->slower_near), sn_link_tier_name(tier), near,
            sn__fmt(a, sizeof(a), t->near_slow, SN_UNIT_BANDWIDTH), far,
            sn__fmt(b, sizeof(b), t->far_fast, SN_UNIT_BANDWIDTH));
        sn__finding_element(f, sn_model_cable_label(m, &m->links[t->first_near], label,
                                                    sizeof(label)));
    }
    if (t->slow_cable > 0) {
        const struct sn_link *l = &m->links[t->first_cable];
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, (uint64_t)SN_LINK_TIER_COUNT * 2 + tier,
            "%s %s links: cable %s at %s between ends at %s: the link runs at the cable's speed",
            sn__count(n, sizeof(n), t->slow_cable), sn_link_tier_name(tier),
            m->spec->cable_types[l->cable].name,
            sn__fmt(a, sizeof(a), t->cable_speed, SN_UNIT_BANDWIDTH),
            sn__fmt(b, sizeof(b), t->ends_speed, SN_UNIT_BANDWIDTH));
        sn__finding_element(f, sn_model_cable_label(m, l, label, sizeof(label)));
    }
}

void sn__check_speeds(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    static const struct {
        enum sn_link_tier tier;
        const char *near, *far;
    } tiers[] = {
        {SN_TIER_NODE_LEAF, "NICs", "leaf"},
        {SN_TIER_LEAF_SPINE, "leaf ports", "spine"},
        {SN_TIER_SPINE_CORE, "spine ports", "core"},
    };
    for (uint32_t k = 0; k < sizeof(tiers) / sizeof(tiers[0]); k++) {
        struct speed_tally t = {0};
        struct lane_tally lt = {0};
        for (uint64_t i = m->tier_first[tiers[k].tier]; i < m->tier_first[tiers[k].tier + 1];
             i++) {
            const struct sn_link *l = &m->links[i];
            const struct sn_cable_type *ct =
                l->cable < m->spec->n_cable_types ? &m->spec->cable_types[l->cable] : NULL;
            /* A breakout's legs share the b end's port and the cable. */
            double legs = ct && ct->breakout > 1 ? ct->breakout : 1;
            double a = end_speed(m, l->a_kind, l->a_id);
            double b = end_speed(m, l->b_kind, l->b_id) / legs;
            double ends = a < b ? a : b;
            double cable = ct ? ct->speed_bytes_per_s / legs : 0;
            if (ct && ct->lanes > 0)
                lane_check(m, i, &lt);
            if (cable > 0 && cable < ends * (1 - 1e-9) && t.slow_cable++ == 0) {
                t.first_cable = i;
                t.cable_speed = cable;
                t.ends_speed = ends;
            }
            if (a > b * (1 + 1e-9)) {
                if (t.slower_far++ == 0) {
                    t.first_far = i;
                    t.near_far = a;
                    t.far_slow = b;
                }
            } else if (b > a * (1 + 1e-9)) {
                if (t.slower_near++ == 0) {
                    t.first_near = i;
                    t.near_slow = a;
                    t.far_fast = b;
                }
            }
        }
        speed_report(c, tiers[k].tier, &t, tiers[k].near, tiers[k].far);
        lane_report(c, tiers[k].tier, &lt);
    }
}
