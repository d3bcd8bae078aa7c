/*
 * Power, failure-domain and cooling rules (R02..R06). Their draws come
 * from sn_model_power_compute(), the computation the bill of materials
 * reads too (docs/rules.md "Power model").
 *
 * All draws are computed once per review in O(servers + switches + links).
 * The checks then run per supernode, so identical supernodes merge.
 */
#include <stdlib.h>
#include <string.h>

#include "review/review_int.h"

void sn__power_compute(struct sn__review_ctx *c)
{
    if (sn_model_power_compute(c->m, c->cfg->peak_factor, &c->power, NULL) != SN_OK)
        c->nomem = true;
}

/* ---- R02: every supernode survives the loss of one power domain -------- */

/* GPUs lost when power domain pd fails: sn_model_domain_gpus() counts the
 * servers it feeds alone, the switch trays and the leaves it powers. */
static uint32_t lost_gpus(const struct sn_model *m, uint32_t pd, struct sn_bitset *scratch)
{
    uint32_t n = sn_model_domain_gpus(m, SN_DOMAIN_POWER_DOMAIN, pd, scratch);
    const struct sn_supernode *s = &m->supernodes[m->power_domain_supernode[pd]];
    for (uint32_t g = s->first_gpu; g < s->first_gpu + s->n_gpus; g++)
        sn_bitset_clear(scratch, g);
    return n;
}

struct survival {
    struct sn_bitset scratch;
};

static void survival_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    char name[SN_REVIEW_NAME_MAX], a[32], b[32];
    bool used[SN_SPEC_MAX_DOMAINS_PER_TEMPLATE] = {false};
    uint32_t n_used = 0, first_used = SN_NONE;
    for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++)
        for (int f = 0; f < 2; f++) {
            uint32_t pd = m->server_power[f][sv];
            if (pd == SN_NONE || pd - s->first_power_domain >= SN_SPEC_MAX_DOMAINS_PER_TEMPLATE)
                continue;
            if (!used[pd - s->first_power_domain]) {
                used[pd - s->first_power_domain] = true;
                n_used++;
            }
            first_used = first_used == SN_NONE || pd < first_used ? pd : first_used;
        }
    if (n_used < 2) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 0,
                                           "servers are fed by %u power domain%s; a supernode "
                                           "must span at least 2",
                                           n_used, n_used == 1 ? "" : "s");
        sn__finding_element(f, c->sn_name);
        if (first_used != SN_NONE)
            sn__finding_element(f, sn_model_power_domain_name(m, first_used, name, sizeof(name)));
    }
    struct survival *sv = (struct survival *)c->user;
    for (uint32_t pd = s->first_power_domain;
         s->n_gpus > 0 && pd < s->first_power_domain + s->n_power_domains; pd++) {
        uint32_t lost = lost_gpus(m, pd, &sv->scratch);
        uint32_t left = s->n_gpus - lost;
        double need = c->cfg->survivor_fraction * s->n_gpus;
        if (left + 1e-9 >= need)
            continue;
        struct sn_finding *f = sn__finding(
            c, SN_SEVERITY_ERROR, pd - s->first_power_domain + 1,
            "losing this domain stops %s of %u GPUs; %u left (%.1f%%) < survivor_fraction %g "
            "(%s GPUs)",
            sn__count(a, sizeof(a), lost), s->n_gpus, left, 100.0 * left / s->n_gpus,
            c->cfg->survivor_fraction, sn__count(b, sizeof(b), (uint64_t)(need + 0.999999)));
        sn__finding_element(f, sn_model_power_domain_name(m, pd, name, sizeof(name)));
    }
}

/* A fabric power domain cuts spines and cores, not GPUs: its cost is the
 * share of the fabric's bisection it takes (sn_model_fabric_loss). Losing
 * half the spines halves it, which is reported; a leaf cut off every spine
 * or a fabric left with less than survivor_fraction is an error. */
static void fabric_survival(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    char name[SN_REVIEW_NAME_MAX], leaf[SN_REVIEW_NAME_MAX];
    for (uint32_t pd = m->first_fabric_pd; pd < m->first_fabric_pd + m->n_fabric_pds; pd++) {
        struct sn_model_fabric_loss l;
        sn_model_fabric_loss(m, pd, &l);
        if (l.spines_lost == 0 && l.cores_lost == 0)
            continue;
        sn_model_power_domain_name(m, pd, name, sizeof(name));
        uint64_t key = SN__KEY_GLOBAL | (pd - m->first_fabric_pd);
        bool cut = l.worst_leaf != SN_NONE && l.worst_leaf_kept == 0;
        bool low = l.bisection_kept + 1e-9 < c->cfg->survivor_fraction;
        struct sn_finding *f = sn__finding_global(
            c, cut || low ? SN_SEVERITY_ERROR : SN_SEVERITY_INFO, key,
            "losing this domain stops %u of %u spines and %u of %u cores: the fabric keeps "
            "%.1f%% of its bisection%s%s",
            l.spines_lost, l.spines, l.cores_lost, l.cores, 100.0 * l.bisection_kept,
            cut ? "; a leaf loses every uplink and its supernode is cut off the others"
            : low ? ", below survivor_fraction"
                  : "",
            cut || low ? " (spread the spines over the fabric's power domains: fabric.spine.power)"
                       : "");
        sn__finding_element(f, name);
        if (cut || low)
            sn__finding_element(f, sn_model_switch_name(m, l.worst_leaf, leaf, sizeof(leaf)));
    }
}

void sn__check_power_domains(struct sn__review_ctx *c)
{
    struct survival sv = {0};
    if (sn_bitset_init(&sv.scratch, c->m->n_gpus ? c->m->n_gpus : 1, NULL) != SN_OK) {
        c->nomem = true;
        return;
    }
    c->user = &sv;
    sn__each_supernode(c, survival_supernode);
    c->user = NULL;
    sn_bitset_release(&sv.scratch);
    fabric_survival(c);
}

/* ---- R03: redundant pairs on different power domains ------------------- */

static void pair_check(struct sn__review_ctx *c, uint32_t w, const char *what)
{
    const struct sn_model *m = c->m;
    uint32_t peer = m->switch_peer[w];
    if (peer == SN_NONE || peer < w)
        return;
    uint32_t pa = m->switch_power[w], pb = m->switch_power[peer];
    char na[SN_REVIEW_NAME_MAX], nb[SN_REVIEW_NAME_MAX], np[SN_REVIEW_NAME_MAX];
    sn_model_switch_name(m, w, na, sizeof(na));
    sn_model_switch_name(m, peer, nb, sizeof(nb));
    uint32_t key = w - m->supernodes[c->sn].first_scaleup + 1;
    if (pa == SN_NONE || pb == SN_NONE) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, key,
                                           "redundant %s pair: a member is on no power "
                                           "domain",
                                           what);
        sn__finding_element(f, na);
        sn__finding_element(f, nb);
    } else if (pa == pb) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, key,
                                           "redundant %s pair: both on one power domain", what);
        sn__finding_element(f, na);
        sn__finding_element(f, nb);
        sn__finding_element(f, sn_model_power_domain_name(m, pa, np, sizeof(np)));
    }
}

static void redundancy_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    for (uint32_t w = s->first_leaf; w < s->first_leaf + s->n_leaves; w++)
        pair_check(c, w, "leaf");
    for (uint32_t w = s->first_mgmt; w < s->first_mgmt + s->n_mgmt; w++)
        pair_check(c, w, "management switch");
    uint32_t dual = 0, same = 0, first = SN_NONE;
    for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++) {
        if (sn_model_server_spec(m, sv)->feeds < 2)
            continue;
        dual++;
        uint32_t a = m->server_power[0][sv], b = m->server_power[1][sv];
        if (a == SN_NONE || b == SN_NONE || a == b) {
            same++;
            first = first == SN_NONE ? sv : first;
        }
    }
    if (same == 0)
        return;
    char name[SN_REVIEW_NAME_MAX], pd[SN_REVIEW_NAME_MAX];
    struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, UINT32_MAX,
                                       "%u of %u dual-fed servers have both feeds on one power "
                                       "domain (or a feed on none)",
                                       same, dual);
    sn__finding_element(f, sn_model_server_name(m, first, name, sizeof(name)));
    if (m->server_power[0][first] != SN_NONE)
        sn__finding_element(
            f, sn_model_power_domain_name(m, m->server_power[0][first], pd, sizeof(pd)));
}

void sn__check_redundancy(struct sn__review_ctx *c)
{
    sn__each_supernode(c, redundancy_supernode);
}

/* ---- R04: power domain capacity ---------------------------------------- */

static void capacity_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    char name[SN_REVIEW_NAME_MAX], a[32], b[32], cap[32];
    for (uint32_t pd = s->first_power_domain; pd < s->first_power_domain + s->n_power_domains;
         pd++) {
        double capacity = sn_model_power_domain_spec(m, pd)->capacity_w;
        /* Normal operation carries the margin; the peak must hold even with
         * every dual-fed load on this domain (its partner lost). */
        double steady = c->power.pd_w[pd], peak = c->power.pd_failover_peak_w[pd];
        bool shared = c->power.pd_failover_peak_w[pd] > c->power.pd_peak_w[pd] + 1e-6;
        double need = c->cfg->power_margin * steady;
        uint32_t key = (pd - s->first_power_domain) * 2;
        sn_model_power_domain_name(m, pd, name, sizeof(name));
        sn__fmt(cap, sizeof(cap), capacity, SN_UNIT_POWER);
        if (capacity < need) {
            struct sn_finding *f =
                sn__finding(c, SN_SEVERITY_ERROR, key, "steady draw %s x %g = %s > capacity %s",
                            sn__fmt(a, sizeof(a), steady, SN_UNIT_POWER), c->cfg->power_margin,
                            sn__fmt(b, sizeof(b), need, SN_UNIT_POWER), cap);
            sn__finding_element(f, name);
        }
        if (capacity < peak) {
            struct sn_finding *f = sn__finding(
                c, SN_SEVERITY_ERROR, key + 1, "peak draw %s (GPUs at %g x TDP%s) > capacity %s",
                sn__fmt(a, sizeof(a), peak, SN_UNIT_POWER), c->cfg->peak_factor,
                shared ? ", dual-fed servers all on this feed" : "", cap);
            sn__finding_element(f, name);
        }
    }
}

/* The fabric's domains: same tests; a domain with no stated capacity (the
 * default A and B) is a warning, so a spine tier's draw is never silent. */
static void capacity_fabric(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    char name[SN_REVIEW_NAME_MAX], a[32], b[32], cap[32];
    for (uint32_t pd = m->first_fabric_pd; pd < m->first_fabric_pd + m->n_fabric_pds; pd++) {
        double capacity = sn_model_power_domain_spec(m, pd)->capacity_w;
        double steady = c->power.pd_w[pd], need = c->cfg->power_margin * steady;
        uint64_t key = SN__KEY_GLOBAL | (uint64_t)(pd - m->first_fabric_pd) * 2;
        sn_model_power_domain_name(m, pd, name, sizeof(name));
        sn__fmt(a, sizeof(a), steady, SN_UNIT_POWER);
        if (capacity <= 0) {
            if (steady <= 0)
                continue;
            struct sn_finding *f = sn__finding_global(
                c, SN_SEVERITY_WARNING, key,
                "spine and core switches draw %s on this domain, whose capacity is not stated "
                "(set fabric.power_domains)",
                a);
            sn__finding_element(f, name);
            continue;
        }
        sn__fmt(cap, sizeof(cap), capacity, SN_UNIT_POWER);
        if (capacity < need) {
            struct sn_finding *f = sn__finding_global(
                c, SN_SEVERITY_ERROR, key, "steady draw %s x %g = %s > capacity %s", a,
                c->cfg->power_margin, sn__fmt(b, sizeof(b), need, SN_UNIT_POWER), cap);
            sn__finding_element(f, name);
        }
        if (capacity < c->power.pd_failover_peak_w[pd]) {
            struct sn_finding *f = sn__finding_global(
                c, SN_SEVERITY_ERROR, key + 1, "peak draw %s > capacity %s",
                sn__fmt(b, sizeof(b), c->power.pd_failover_peak_w[pd], SN_UNIT_POWER), cap);
            sn__finding_element(f, name);
        }
    }
}

void sn__check_power_capacity(struct sn__review_ctx *c)
{
    sn__each_supernode(c, capacity_supernode);
    capacity_fabric(c);
}

/* ---- R05: rack power limit and air-cooling limit ----------------------- */

static void rack_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct sn_racks_spec *rs = &sn_model_supernode_template(m, sn)->racks;
    char name[SN_REVIEW_NAME_MAX], a[32], b[32];
    for (uint32_t r = s->first_rack; r < s->first_rack + s->n_racks; r++) {
        double draw = c->power.rack_w[r];
        uint32_t key = (r - s->first_rack) * 2;
        sn_model_rack_name(m, r, name, sizeof(name));
        sn__fmt(a, sizeof(a), draw, SN_UNIT_POWER);
        if (rs->power_limit_w > 0 && draw > rs->power_limit_w) {
            struct sn_finding *f =
                sn__finding(c, SN_SEVERITY_ERROR, key, "steady draw %s > rack power limit %s", a,
                            sn__fmt(b, sizeof(b), rs->power_limit_w, SN_UNIT_POWER));
            sn__finding_element(f, name);
        }
        /* Synchronised GPU peaks (peak_factor x TDP) reach the rack's PDUs
         * too; a rack limit below its peak trips them. */
        double peak = c->power.rack_peak_w[r];
        if (rs->power_limit_w > 0 && draw <= rs->power_limit_w && peak > rs->power_limit_w) {
            struct sn_finding *f = sn__finding(
                c, SN_SEVERITY_ERROR, key, "peak draw %s (GPUs at %g x TDP) > rack power limit %s",
                sn__fmt(b, sizeof(b), peak, SN_UNIT_POWER), c->cfg->peak_factor,
                sn__fmt(a, sizeof(a), rs->power_limit_w, SN_UNIT_POWER));
            sn__finding_element(f, name);
            sn__fmt(a, sizeof(a), draw, SN_UNIT_POWER);
        }
        if (draw <= c->cfg->air_cooling_limit_w)
            continue;
        uint32_t loop = m->rack_cooling_loop[r];
        bool liquid_loop =
            loop != SN_NONE && sn_model_cooling_loop_spec(m, loop)->kind == SN_COOLING_LIQUID;
        if (rs->cooling == SN_COOLING_LIQUID && liquid_loop)
            continue;
        const char *why = rs->cooling != SN_COOLING_LIQUID ? "the rack is air-cooled"
                          : loop == SN_NONE                ? "the rack is on no cooling loop"
                                                           : "its cooling loop is an air loop";
        struct sn_finding *f =
            sn__finding(c, SN_SEVERITY_ERROR, key + 1,
                        "steady draw %s > air-cooling limit %s, "
                        "but %s",
                        a, sn__fmt(b, sizeof(b), c->cfg->air_cooling_limit_w, SN_UNIT_POWER), why);
        sn__finding_element(f, name);
        if (loop != SN_NONE)
            sn__finding_element(f, sn_model_cooling_loop_name(m, loop, name, sizeof(name)));
    }
}

/* Network racks: the fabric's power limit (when stated) and the
 * air-cooling limit; switches draw the same steady and peak. */
static void racks_fabric(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    const struct sn_fabric_racks_spec *rs = &m->spec->fabric.racks;
    char name[SN_REVIEW_NAME_MAX], a[32], b[32];
    for (uint32_t r = m->first_net_rack; r < m->first_net_rack + m->n_net_racks; r++) {
        double draw = c->power.rack_peak_w[r];
        uint64_t key = SN__KEY_GLOBAL | (uint64_t)(r - m->first_net_rack) * 2;
        sn_model_rack_name(m, r, name, sizeof(name));
        sn__fmt(a, sizeof(a), draw, SN_UNIT_POWER);
        if (rs->power_limit_w > 0 && draw > rs->power_limit_w) {
            struct sn_finding *f =
                sn__finding_global(c, SN_SEVERITY_ERROR, key, "draw %s > rack power limit %s",
                                   a, sn__fmt(b, sizeof(b), rs->power_limit_w, SN_UNIT_POWER));
            sn__finding_element(f, name);
        }
        if (draw > c->cfg->air_cooling_limit_w && rs->cooling != SN_COOLING_LIQUID) {
            struct sn_finding *f = sn__finding_global(
                c, SN_SEVERITY_ERROR, key + 1,
                "draw %s > air-cooling limit %s, but the network rack is air-cooled (more "
                "fabric.racks, or cooling: liquid)",
                a, sn__fmt(b, sizeof(b), c->cfg->air_cooling_limit_w, SN_UNIT_POWER));
            sn__finding_element(f, name);
        }
    }
}

void sn__check_racks(struct sn__review_ctx *c)
{
    sn__each_supernode(c, rack_supernode);
    racks_fabric(c);
}

/* ---- R06: cooling loop capacity ---------------------------------------- */

static void cooling_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    char name[SN_REVIEW_NAME_MAX], a[32], b[32], cap[32];
    for (uint32_t l = s->first_cooling_loop; l < s->first_cooling_loop + s->n_cooling_loops; l++) {
        double capacity = sn_model_cooling_loop_spec(m, l)->capacity_w;
        double heat = c->power.loop_w[l], need = c->cfg->cooling_margin * heat;
        if (capacity >= need)
            continue;
        struct sn_finding *f = sn__finding(
            c, SN_SEVERITY_ERROR, l - s->first_cooling_loop, "heat load %s x %g = %s > capacity %s",
            sn__fmt(a, sizeof(a), heat, SN_UNIT_POWER), c->cfg->cooling_margin,
            sn__fmt(b, sizeof(b), need, SN_UNIT_POWER),
            sn__fmt(cap, sizeof(cap), capacity, SN_UNIT_POWER));
        sn__finding_element(f, sn_model_cooling_loop_name(m, l, name, sizeof(name)));
    }
    double unlooped = 0;
    uint32_t n_unlooped = 0, first = SN_NONE;
    for (uint32_t r = s->first_rack; r < s->first_rack + s->n_racks; r++)
        if (m->rack_cooling_loop[r] == SN_NONE) {
            unlooped += c->power.rack_w[r];
            n_unlooped++;
            first = first == SN_NONE ? r : first;
        }
    if (n_unlooped == 0)
        return;
    enum sn_severity sev = s->n_cooling_loops > 0 ? SN_SEVERITY_WARNING : SN_SEVERITY_INFO;
    struct sn_finding *f = sn__finding(
        c, sev, UINT32_MAX, "%u rack%s on no cooling loop: heat load %s unchecked", n_unlooped,
        n_unlooped == 1 ? "" : "s", sn__fmt(a, sizeof(a), unlooped, SN_UNIT_POWER));
    sn__finding_element(f, sn_model_rack_name(m, first, name, sizeof(name)));
}

void sn__check_cooling(struct sn__review_ctx *c)
{
    sn__each_supernode(c, cooling_supernode);
}
