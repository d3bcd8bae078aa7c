/*
 * Expansion of a spec into the model (sn_model_build).
 *
 * Two passes: count everything first (in 64-bit, so an absurd spec is
 * rejected before anything is allocated), then allocate every array once
 * and fill it in spec order. IDs are therefore a pure function of the spec.
 *
 * Wiring rules (docs/internals/model.md):
 *  - scale-up: link l of a GPU goes to chip l mod chips of its domain (the
 *    server's chips, or the supernode's); chip ports are taken in order;
 *  - two-level scale-up: the L1 chips are the server's; L1 chip c belongs to
 *    plane c mod planes and has `links` uplinks to each L2 switch of its
 *    plane (after its GPU ports); L2 switch k of plane p is the supernode's
 *    L2 switch p * per_plane + k, in the L2 racks after the compute racks;
 *  - node-leaf: NIC n of a server goes to leaf n mod leaves of its
 *    supernode ("rail": NIC n is rail n; "pair": even NICs to the first
 *    leaf, odd to the second);
 *  - GPU i of a server uses NIC i * nics / gpus for scale-out;
 *  - leaf uplinks: ceil(downlinks / oversubscription) when a spine exists;
 *  - two tiers: S spines (fabric.spines, else the smallest count that
 *    divides every leaf's uplinks and has ports for them all, else
 *    ceil(uplinks / ports)); uplink k (counted over all leaves) goes to
 *    spine k mod S;
 *  - three tiers: leaves form pods of as many leaves as a spine has
 *    downlinks; uplink j of each leaf goes to the pod's spine j; spine j of
 *    every pod uplinks into core group j, spread round-robin.
 * Ports beyond a switch's radix are still wired (numbered past the end) so
 * that the design review can report the overrun instead of failing here.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_int.h"

#define MAX_LINKS (1ull << 32)

static uint32_t domain_pick(const struct sn_domain_list *list, uint32_t member, uint32_t n)
{
    if (n == 0)
        return SN_NONE;
    if (list->count == 0)
        return member % n;
    return list->index[member % list->count];
}

uint32_t sn__leaf_uplinks(const struct sn_spec *spec, const struct sn_template *t,
                          uint32_t down_links)
{
    if (!spec->fabric.present || spec->fabric.spine.switch_model == SN_NONE)
        return 0;
    double ratio = t->leaves.oversubscription > 0 ? t->leaves.oversubscription : 1.0;
    return (uint32_t)ceil((double)down_links / ratio - 1e-9);
}

/* Downlinks of leaf l of template t: NICs n with n mod leaves == l. */
static uint32_t leaf_downlinks(const struct sn_spec *spec, const struct sn_template *t, uint32_t l)
{
    const struct sn_server_model *sm = &spec->server_models[t->server_model];
    uint32_t per_server = sm->nics / t->leaves.count + (l < sm->nics % t->leaves.count);
    return per_server * t->servers;
}

static void count_group(const struct sn_spec *spec, const struct sn_supernode_group *g,
                        struct sn__model_counts *c)
{
    const struct sn_template *t = &spec->templates[g->template_index];
    const struct sn_server_model *sm = &spec->server_models[t->server_model];
    const struct sn_gpu_model *gm = &spec->gpu_models[sm->gpu_model];
    uint64_t n = g->count;
    uint64_t servers = n * t->servers;
    uint64_t gpus = servers * sm->gpus;
    c->supernodes += n;
    c->servers += servers;
    c->gpus += gpus;
    c->racks += n * (t->racks.count + t->scaleup.l2.racks);
    c->power_domains += n * t->n_power_domains;
    c->cooling_loops += n * t->n_cooling_loops;
    if (t->scaleup.switch_model != SN_NONE && t->scaleup.chips > 0) {
        c->scaleup_chips += t->scaleup.domain == SN_SCALEUP_SUPERNODE ? n * t->scaleup.chips
                                                                      : servers * t->scaleup.chips;
        c->links[SN_TIER_SCALEUP] += gpus * gm->scaleup_links;
        const struct sn_scaleup_l2_spec *l2 = &t->scaleup.l2;
        if (t->scaleup.domain == SN_SCALEUP_TWO_LEVEL && l2->switch_model != SN_NONE) {
            c->scaleup_chips += n * l2->planes * l2->per_plane;
            c->links[SN_TIER_SCALEUP_L2] +=
                servers * t->scaleup.chips * (uint64_t)l2->per_plane * l2->links;
        }
    }
    if (t->leaves.switch_model != SN_NONE && t->leaves.count > 0) {
        c->leaves += n * t->leaves.count;
        c->links[SN_TIER_NODE_LEAF] += servers * sm->nics;
        for (uint32_t l = 0; l < t->leaves.count; l++)
            c->leaf_uplinks += n * sn__leaf_uplinks(spec, t, leaf_downlinks(spec, t, l));
    }
    if (t->mgmt.separation == SN_MGMT_PHYSICAL)
        c->mgmt_switches += n * t->mgmt.count;
    bool mgmt_wired = t->mgmt.separation == SN_MGMT_PHYSICAL
                          ? t->mgmt.count > 0
                          : t->leaves.switch_model != SN_NONE && t->leaves.count > 0;
    if (mgmt_wired)
        c->links[SN_TIER_MGMT] += servers * sm->mgmt_ports;
}

static uint32_t ports_of(const struct sn_spec *spec, uint32_t model)
{
    return model == SN_NONE ? 0 : spec->switch_models[model].ports;
}

static enum sn_err count_all(const struct sn_spec *spec, struct sn__model_counts *c,
                             struct sn_error *err)
{
    memset(c, 0, sizeof(*c));
    for (uint32_t g = 0; g < spec->n_groups; g++)
        count_group(spec, &spec->groups[g], c);
    if (c->gpus > SN_SPEC_MAX_GPUS)
        return sn_error_set(err, SN_ERR_LIMIT, "%s: cluster of %llu GPUs exceeds the limit of %u",
                            spec->file, (unsigned long long)c->gpus, SN_SPEC_MAX_GPUS);
    uint64_t links = 0;
    for (int t = 0; t < SN_LINK_TIER_COUNT; t++)
        links += c->links[t];
    if (c->scaleup_chips + c->leaves + c->mgmt_switches >= SN_NONE / 2 || c->servers >= SN_NONE ||
        links + 2 * c->leaf_uplinks >= MAX_LINKS)
        return sn_error_set(err, SN_ERR_LIMIT,
                            "%s: %llu servers and %llu links exceed the model's limits", spec->file,
                            (unsigned long long)c->servers, (unsigned long long)links);
    return SN_OK;
}

/* ---- fabric plan ----------------------------------------------------- */

struct fabric_plan {
    uint32_t tiers; /* 1 (no fabric), 2 or 3 */
    uint32_t n_leaves, n_spines, n_cores, n_groups, n_pods, pod_size;
    uint32_t *leaf_up;                        /* per leaf: uplinks */
    uint32_t *pod_first_spine;                /* per pod (3 tiers) */
    uint32_t *spine_up;                       /* per spine: uplinks to the core (3 tiers) */
    uint32_t *group_first_core, *group_cores; /* per core group (3 tiers) */
    uint64_t leaf_spine_links, spine_core_links;
};

static void fabric_plan_release(struct fabric_plan *p)
{
    free(p->leaf_up);
    free(p->pod_first_spine);
    free(p->spine_up);
    free(p->group_first_core);
    free(p->group_cores);
    memset(p, 0, sizeof(*p));
}

static void fill_leaf_uplinks(const struct sn_spec *spec, struct fabric_plan *p)
{
    uint32_t leaf = 0;
    for (uint32_t g = 0; g < spec->n_groups; g++) {
        const struct sn_template *t = &spec->templates[spec->groups[g].template_index];
        if (t->leaves.switch_model == SN_NONE)
            continue;
        for (uint32_t i = 0; i < spec->groups[g].count; i++)
            for (uint32_t l = 0; l < t->leaves.count; l++)
                p->leaf_up[leaf++] = sn__leaf_uplinks(spec, t, leaf_downlinks(spec, t, l));
    }
}

/* Spine j of every pod spreads its uplinks round-robin over the cores of
 * group j, so each spine covers a run of consecutive cores. Two runs of a
 * and b cores in a ring of c must overlap when a + b > c; otherwise two
 * pods may reach disjoint cores and the fabric splits into islands (a 1:1
 * 3-tier tree of radix R holds at most R^3/4 ports). Every pair of spines of
 * a group must share a core: the two narrowest decide. */
static enum sn_err check_core_groups(const struct sn_spec *spec, const struct fabric_plan *p,
                                     uint32_t ps, uint32_t pc, struct sn_error *err)
{
    for (uint32_t j = 0; j < p->n_groups; j++) {
        uint32_t narrow = UINT32_MAX, next = UINT32_MAX, spines = 0;
        for (uint32_t pod = 0; pod < p->n_pods; pod++) {
            if (p->pod_first_spine[pod] + j >= p->pod_first_spine[pod + 1])
                continue;
            uint32_t up = p->spine_up[p->pod_first_spine[pod] + j];
            spines++;
            if (up < narrow) {
                next = narrow;
                narrow = up;
            } else if (up < next) {
                next = up;
            }
        }
        if (spines < 2 || (uint64_t)narrow + next > p->group_cores[j])
            continue;
        return sn_error_set(err, SN_ERR_LIMIT,
                            "%s: fabric: %u leaves in %u pods need %u core switches per "
                            "group, but two spines of a group with %u and %u uplinks may reach "
                            "disjoint cores: a 3-tier fat tree of %u-port spines and %u-port "
                            "cores cannot connect this many leaves (use larger switches or "
                            "oversubscription)",
                            spec->file, p->n_leaves, p->n_pods, p->group_cores[j], narrow,
                            next, ps, pc);
    }
    return SN_OK;
}

static enum sn_err plan_three_tiers(const struct sn_spec *spec, struct fabric_plan *p,
                                    struct sn_error *err)
{
    const struct sn_fabric_spec *f = &spec->fabric;
    uint32_t ps = ports_of(spec, f->spine.switch_model);
    uint32_t pc = ports_of(spec, f->core.switch_model);
    double r = f->spine.oversubscription > 0 ? f->spine.oversubscription : 1.0;
    p->pod_size = (uint32_t)floor(ps * r / (r + 1) + 1e-9);
    if (p->pod_size == 0)
        p->pod_size = 1;
    p->n_pods = (p->n_leaves + p->pod_size - 1) / p->pod_size;
    p->pod_first_spine = calloc(p->n_pods + 1, sizeof(uint32_t));
    if (!p->pod_first_spine)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory planning the fabric");
    uint64_t spines = 0;
    for (uint32_t pod = 0; pod < p->n_pods; pod++) {
        uint32_t first = pod * p->pod_size, widest = 0;
        for (uint32_t l = first; l < p->n_leaves && l < first + p->pod_size; l++)
            widest = p->leaf_up[l] > widest ? p->leaf_up[l] : widest;
        p->pod_first_spine[pod] = (uint32_t)spines;
        spines += widest;
        p->n_groups = widest > p->n_groups ? widest : p->n_groups;
    }
    p->pod_first_spine[p->n_pods] = (uint32_t)spines;
    if (spines >= SN_NONE / 4)
        return sn_error_set(err, SN_ERR_LIMIT, "%s: fabric needs %llu spines", spec->file,
                            (unsigned long long)spines);
    p->n_spines = (uint32_t)spines;
    p->spine_up = calloc(spines + 1, sizeof(uint32_t));
    p->group_first_core = calloc(p->n_groups + 1, sizeof(uint32_t));
    p->group_cores = calloc(p->n_groups + 1, sizeof(uint32_t));
    uint64_t *group_links = calloc(p->n_groups + 1, sizeof(uint64_t));
    if (!p->spine_up || !p->group_first_core || !p->group_cores || !group_links) {
        free(group_links);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory planning the fabric");
    }
    for (uint32_t pod = 0; pod < p->n_pods; pod++) {
        uint32_t first = pod * p->pod_size;
        uint32_t width = p->pod_first_spine[pod + 1] - p->pod_first_spine[pod];
        for (uint32_t j = 0; j < width; j++) {
            uint32_t down = 0;
            for (uint32_t l = first; l < p->n_leaves && l < first + p->pod_size; l++)
                down += p->leaf_up[l] > j;
            uint32_t up = (uint32_t)ceil(down / r - 1e-9);
            p->spine_up[p->pod_first_spine[pod] + j] = up;
            group_links[j] += up;
            p->spine_core_links += up;
        }
    }
    uint64_t cores = 0;
    for (uint32_t j = 0; j < p->n_groups; j++) {
        p->group_first_core[j] = (uint32_t)cores;
        p->group_cores[j] = (uint32_t)((group_links[j] + pc - 1) / pc);
        cores += p->group_cores[j];
    }
    free(group_links);
    if (cores >= SN_NONE / 4)
        return sn_error_set(err, SN_ERR_LIMIT, "%s: fabric needs %llu core switches", spec->file,
                            (unsigned long long)cores);
    p->n_cores = (uint32_t)cores;
    return check_core_groups(spec, p, ps, pc, err);
}

static uint32_t gcd32(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The smallest spine count >= need that divides every leaf's uplinks, or 0
 * when there is none. With it the global round-robin gives every leaf the
 * same number of links to every spine (each leaf's first uplink lands on
 * spine 0, since all earlier leaves used a multiple of the count), so any
 * two leaves share all their uplinks: the fabric is as non-blocking as the
 * leaves. ceil(uplinks / ports) alone leaves unequal links per spine and a
 * blocking worst leaf pair (B200 at 5 SU: 20 spines, 24 of 32 uplinks
 * shared). NVIDIA's reference designs add spines the same way: the DGX
 * B300 SuperPOD has 18 spines at 4 SU and 36 at 8 SU, not 16 and 32. */
static uint32_t even_spines(const struct fabric_plan *p, uint32_t need)
{
    uint32_t g = 0;
    for (uint32_t l = 0; l < p->n_leaves; l++)
        g = gcd32(g, p->leaf_up[l]);
    for (uint32_t s = need ? need : 1; s <= g; s++)
        if (g % s == 0)
            return s;
    return 0;
}

/* The top tier has no uplinks, so an oversubscription stated on it cannot
 * be built; refused rather than ignored. */
static bool top_tier_oversubscribed(const struct sn_fabric_tier_spec *tier)
{
    return tier->switch_model != SN_NONE && fabs(tier->oversubscription - 1.0) > 1e-9;
}

static enum sn_err top_tier_error(const struct sn_spec *spec, const char *tier_name,
                                  const struct sn_fabric_tier_spec *tier, struct sn_error *err)
{
    return sn_error_set(err, SN_ERR_INVALID,
                        "%s:%u:%u: fabric.%s.oversubscription %.3g:1: the %s is the top tier "
                        "of this fabric and has no uplinks to oversubscribe: expected 1:1 (or "
                        "a tier above it)",
                        spec->file, tier->oversubscription_loc.line,
                        tier->oversubscription_loc.column, tier_name, tier->oversubscription,
                        tier_name);
}

static enum sn_err plan_fabric(const struct sn_spec *spec, const struct sn__model_counts *c,
                               struct fabric_plan *p, struct sn_error *err)
{
    const struct sn_fabric_spec *f = &spec->fabric;
    memset(p, 0, sizeof(*p));
    p->tiers = 1;
    p->n_leaves = (uint32_t)c->leaves;
    p->leaf_up = calloc(c->leaves + 1, sizeof(uint32_t));
    if (!p->leaf_up)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory planning the fabric");
    fill_leaf_uplinks(spec, p);
    if (!f->present || f->spine.switch_model == SN_NONE || c->leaf_uplinks == 0)
        return SN_OK;
    uint32_t ps = ports_of(spec, f->spine.switch_model);
    bool has_core = f->core.switch_model != SN_NONE;
    p->tiers = f->tiers ? f->tiers : (c->leaves <= ps || !has_core ? 2 : 3);
    if (p->tiers == 3 && !has_core)
        p->tiers = 2;
    p->leaf_spine_links = c->leaf_uplinks;
    if (p->tiers == 2) {
        /* Every leaf must reach every spine, so that any two leaves share
         * one: at most as many leaves as a spine has ports. */
        if (c->leaves > ps)
            return sn_error_set(err, SN_ERR_LIMIT,
                                "%s: fabric: %llu leaves exceed the %u ports of a spine, so a "
                                "2-tier fabric cannot connect them all: add a core tier "
                                "(fabric.core) or use larger spine switches",
                                spec->file, (unsigned long long)c->leaves, ps);
        if (top_tier_oversubscribed(&f->spine))
            return top_tier_error(spec, "spine", &f->spine, err);
        uint32_t need = (uint32_t)((c->leaf_uplinks + ps - 1) / ps);
        uint32_t even = even_spines(p, need);
        p->n_spines = f->spines ? f->spines : even ? even : need;
        return SN_OK;
    }
    if (f->spines)
        return sn_error_set(err, SN_ERR_INVALID,
                            "%s:%u:%u: fabric.spines %u: the fabric has 3 tiers (%llu leaves "
                            "exceed the %u ports of a spine), which wire one spine per leaf "
                            "uplink in each pod: expected a 2-tier fabric or no spines key",
                            spec->file, f->spines_loc.line, f->spines_loc.column, f->spines,
                            (unsigned long long)c->leaves, ps);
    if (top_tier_oversubscribed(&f->core))
        return top_tier_error(spec, "core", &f->core, err);
    return plan_three_tiers(spec, p, err);
}

/* ---- allocation ------------------------------------------------------ */

struct builder {
    struct sn_model *m;
    const struct sn_spec *spec;
    const struct fabric_plan *plan;
    uint64_t cursor[SN_LINK_TIER_COUNT]; /* next link of each tier */
    uint32_t next_server, next_gpu, next_switch, next_rack, next_pd, next_loop, next_leaf;
    uint32_t role_count[SN_SWITCH_ROLE_COUNT];
    uint8_t *open_legs;  /* per switch: legs left on its last breakout port */
    uint8_t *open_cable; /* per switch: the cable type of that port */
    bool failed;
};

static void *model_alloc(struct builder *b, uint64_t count, size_t size)
{
    if (b->failed)
        return NULL;
    void *p = calloc(count ? count : 1, size);
    if (!p)
        b->failed = true;
    else
        b->m->memory_bytes += (size_t)(count * size);
    return p;
}

/* Network racks: fabric.racks.count, else enough racks of `units` rack
 * units for every spine and core switch (at least one). */
static void net_rack_count(const struct sn_spec *spec, const struct fabric_plan *p,
                           uint32_t *racks, uint32_t *pds)
{
    const struct sn_fabric_spec *f = &spec->fabric;
    uint32_t n_spines = p->tiers >= 2 ? p->n_spines : 0, n_cores = p->tiers == 3 ? p->n_cores : 0;
    *racks = *pds = 0;
    if (n_spines + n_cores == 0)
        return;
    *pds = f->n_power_domains;
    if (f->racks.count) {
        *racks = f->racks.count;
        return;
    }
    uint64_t units = (uint64_t)n_spines * spec->switch_models[f->spine.switch_model].rack_units;
    if (n_cores)
        units += (uint64_t)n_cores * spec->switch_models[f->core.switch_model].rack_units;
    uint32_t per = f->racks.units ? f->racks.units : 42;
    uint64_t n = (units + per - 1) / per;
    *racks = n ? (uint32_t)n : 1;
}

static void alloc_arrays(struct builder *b, const struct sn__model_counts *c)
{
    struct sn_model *m = b->m;
    const struct fabric_plan *p = b->plan;
    m->n_supernodes = (uint32_t)c->supernodes;
    m->n_servers = (uint32_t)c->servers;
    m->n_gpus = (uint32_t)c->gpus;
    m->n_switches =
        (uint32_t)(c->scaleup_chips + c->leaves + c->mgmt_switches) + p->n_spines + p->n_cores;
    m->first_net_rack = (uint32_t)c->racks;
    m->first_fabric_pd = (uint32_t)c->power_domains;
    net_rack_count(b->spec, p, &m->n_net_racks, &m->n_fabric_pds);
    m->n_racks = (uint32_t)c->racks + m->n_net_racks;
    m->n_power_domains = (uint32_t)c->power_domains + m->n_fabric_pds;
    m->n_cooling_loops = (uint32_t)c->cooling_loops;
    uint64_t per_tier[SN_LINK_TIER_COUNT];
    memcpy(per_tier, c->links, sizeof(per_tier));
    per_tier[SN_TIER_LEAF_SPINE] = p->tiers >= 2 ? p->leaf_spine_links : 0;
    per_tier[SN_TIER_SPINE_CORE] = p->tiers == 3 ? p->spine_core_links : 0;
    m->tier_first[0] = 0;
    for (int t = 0; t < SN_LINK_TIER_COUNT; t++) {
        m->tier_first[t + 1] = m->tier_first[t] + per_tier[t];
        b->cursor[t] = m->tier_first[t];
    }
    m->n_links = m->tier_first[SN_LINK_TIER_COUNT];

    m->supernodes = model_alloc(b, m->n_supernodes, sizeof(*m->supernodes));
    m->server_supernode = model_alloc(b, m->n_servers, sizeof(uint32_t));
    m->server_first_gpu = model_alloc(b, m->n_servers, sizeof(uint32_t));
    m->server_model = model_alloc(b, m->n_servers, sizeof(uint16_t));
    m->server_rack = model_alloc(b, m->n_servers, sizeof(uint32_t));
    m->server_power[0] = model_alloc(b, m->n_servers, sizeof(uint32_t));
    m->server_power[1] = model_alloc(b, m->n_servers, sizeof(uint32_t));
    m->gpu_server = model_alloc(b, m->n_gpus, sizeof(uint32_t));
    m->gpu_supernode = model_alloc(b, m->n_gpus, sizeof(uint32_t));
    m->gpu_leaf = model_alloc(b, m->n_gpus, sizeof(uint32_t));
    m->switch_model = model_alloc(b, m->n_switches, sizeof(uint16_t));
    m->switch_role = model_alloc(b, m->n_switches, sizeof(uint8_t));
    m->switch_supernode = model_alloc(b, m->n_switches, sizeof(uint32_t));
    m->switch_server = model_alloc(b, m->n_switches, sizeof(uint32_t));
    m->switch_rack = model_alloc(b, m->n_switches, sizeof(uint32_t));
    m->switch_power = model_alloc(b, m->n_switches, sizeof(uint32_t));
    m->switch_peer = model_alloc(b, m->n_switches, sizeof(uint32_t));
    m->switch_ports_used = model_alloc(b, m->n_switches, sizeof(uint32_t));
    m->switch_index_in_role = model_alloc(b, m->n_switches, sizeof(uint32_t));
    m->switch_ports_physical = model_alloc(b, m->n_switches, sizeof(uint32_t));
    if (!b->failed) {
        b->open_legs = calloc(m->n_switches + 1, 1);
        b->open_cable = calloc(m->n_switches + 1, 1);
        b->failed = !b->open_legs || !b->open_cable;
    }
    m->leaf_uplinks = model_alloc(b, m->n_switches, sizeof(uint32_t));
    m->rack_supernode = model_alloc(b, m->n_racks, sizeof(uint32_t));
    m->rack_cooling_loop = model_alloc(b, m->n_racks, sizeof(uint32_t));
    m->power_domain_supernode = model_alloc(b, m->n_power_domains, sizeof(uint32_t));
    m->power_domain_spec_index = model_alloc(b, m->n_power_domains, sizeof(uint32_t));
    m->cooling_loop_supernode = model_alloc(b, m->n_cooling_loops, sizeof(uint32_t));
    m->cooling_loop_spec_index = model_alloc(b, m->n_cooling_loops, sizeof(uint32_t));
    m->links = model_alloc(b, m->n_links, sizeof(struct sn_link));
}

/* ---- wiring ---------------------------------------------------------- */

static uint8_t cable_of(const struct sn_cabling *cabling)
{
    return cabling->cable == SN_NONE ? 255 : (uint8_t)cabling->cable;
}

static uint8_t length_of(const struct sn_cabling *cabling)
{
    return cabling->length_class == SN_NONE ? 255 : (uint8_t)cabling->length_class;
}

/* The next port of switch sw as the a (lower) end of a link: always a port
 * of its own. */
static uint16_t a_port_of(struct builder *b, uint32_t sw)
{
    b->m->switch_ports_physical[sw]++;
    b->open_legs[sw] = 0;
    return (uint16_t)b->m->switch_ports_used[sw]++;
}

/* The leg of the b end's port a link takes: a breakout cable's legs fill
 * one physical port before the next is opened. */
static uint8_t b_leg_of(struct builder *b, uint32_t sw, const struct sn_cabling *cabling)
{
    uint32_t legs = cabling->cable < b->spec->n_cable_types
                        ? b->spec->cable_types[cabling->cable].breakout
                        : 1;
    if (legs > 1 && b->open_legs[sw] > 0 && b->open_cable[sw] == cable_of(cabling))
        return (uint8_t)(legs - b->open_legs[sw]--);
    b->m->switch_ports_physical[sw]++;
    b->open_legs[sw] = (uint8_t)(legs > 1 ? legs - 1 : 0);
    b->open_cable[sw] = cable_of(cabling);
    return 0;
}

static void add_link(struct builder *b, enum sn_link_tier tier, uint8_t a_kind, uint32_t a,
                     uint16_t a_port, uint32_t sw, const struct sn_cabling *cabling)
{
    struct sn_link *link = &b->m->links[b->cursor[tier]++];
    link->a_kind = a_kind;
    link->a_id = a;
    link->a_port = a_port;
    link->b_kind = SN_END_SWITCH;
    link->b_id = sw;
    link->b_leg = b_leg_of(b, sw, cabling);
    link->b_port = (uint16_t)b->m->switch_ports_used[sw]++;
    link->tier = (uint8_t)tier;
    link->cable = cable_of(cabling);
    link->length_class = length_of(cabling);
}

static uint32_t new_switch(struct builder *b, enum sn_switch_role role, uint32_t model, uint32_t sn,
                           uint32_t rack, uint32_t pd)
{
    struct sn_model *m = b->m;
    uint32_t id = b->next_switch++;
    m->switch_model[id] = (uint16_t)model;
    m->switch_role[id] = (uint8_t)role;
    m->switch_supernode[id] = sn;
    m->switch_server[id] = SN_NONE;
    m->switch_rack[id] = rack;
    m->switch_power[id] = pd;
    m->switch_peer[id] = SN_NONE;
    m->switch_index_in_role[id] = b->role_count[role]++;
    return id;
}

static void build_domains(struct builder *b, struct sn_supernode *s, const struct sn_template *t,
                          uint32_t sn)
{
    struct sn_model *m = b->m;
    s->first_power_domain = b->next_pd;
    s->n_power_domains = t->n_power_domains;
    for (uint32_t i = 0; i < t->n_power_domains; i++) {
        m->power_domain_supernode[b->next_pd] = sn;
        m->power_domain_spec_index[b->next_pd++] = i;
    }
    s->first_cooling_loop = b->next_loop;
    s->n_cooling_loops = t->n_cooling_loops;
    for (uint32_t i = 0; i < t->n_cooling_loops; i++) {
        m->cooling_loop_supernode[b->next_loop] = sn;
        m->cooling_loop_spec_index[b->next_loop++] = i;
    }
    s->first_rack = b->next_rack;
    s->n_racks = t->racks.count + t->scaleup.l2.racks;
    for (uint32_t r = 0; r < s->n_racks; r++) {
        uint32_t loop = domain_pick(&t->racks.loops, r, t->n_cooling_loops);
        m->rack_supernode[b->next_rack] = sn;
        m->rack_cooling_loop[b->next_rack++] =
            loop == SN_NONE ? SN_NONE : s->first_cooling_loop + loop;
    }
}

static uint32_t local_pd(const struct sn_supernode *s, uint32_t local)
{
    return local == SN_NONE ? SN_NONE : s->first_power_domain + local;
}

static void build_servers(struct builder *b, struct sn_supernode *s, const struct sn_template *t,
                          uint32_t sn)
{
    struct sn_model *m = b->m;
    const struct sn_server_model *sm = &b->spec->server_models[t->server_model];
    uint32_t per_rack = (t->servers + t->racks.count - 1) / t->racks.count;
    s->first_server = b->next_server;
    s->n_servers = t->servers;
    s->first_gpu = b->next_gpu;
    s->n_gpus = t->servers * sm->gpus;
    for (uint32_t i = 0; i < t->servers; i++) {
        uint32_t id = b->next_server++;
        m->server_supernode[id] = sn;
        m->server_model[id] = (uint16_t)t->server_model;
        m->server_first_gpu[id] = b->next_gpu;
        m->server_rack[id] = s->first_rack + i / per_rack;
        uint32_t primary = domain_pick(&t->server_power, i, t->n_power_domains);
        uint32_t secondary = SN_NONE;
        if (sm->feeds >= 2 && primary != SN_NONE) {
            uint32_t partner = t->power_domains[primary].redundant_with;
            secondary = partner != SN_NONE ? partner : (primary + 1) % t->n_power_domains;
        }
        m->server_power[0][id] = local_pd(s, primary);
        m->server_power[1][id] = local_pd(s, secondary);
        for (uint32_t g = 0; g < sm->gpus; g++) {
            m->gpu_server[b->next_gpu] = id;
            m->gpu_supernode[b->next_gpu] = sn;
            m->gpu_leaf[b->next_gpu++] = SN_NONE;
        }
    }
}

/* The L2 switches of a two-level domain and the L1 chips' uplinks to them.
 * Called after the GPU links, so an L1 chip's GPU ports come first. */
static void build_scaleup_l2(struct builder *b, struct sn_supernode *s,
                             const struct sn_template *t, uint32_t sn)
{
    const struct sn_scaleup_l2_spec *l2 = &t->scaleup.l2;
    if (l2->switch_model == SN_NONE || l2->planes == 0)
        return;
    uint32_t n = l2->planes * l2->per_plane;
    s->first_scaleup_l2 = b->next_switch;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t pd = local_pd(s, domain_pick(&l2->power, i, t->n_power_domains));
        uint32_t rack = l2->racks ? s->first_rack + t->racks.count + i * l2->racks / n
                                  : s->first_rack + i % s->n_racks;
        new_switch(b, SN_ROLE_SCALEUP_L2, l2->switch_model, sn, rack, pd);
    }
    s->n_scaleup_l2 = n;
    for (uint32_t w = s->first_scaleup; w < s->first_scaleup + s->n_scaleup; w++) {
        uint32_t plane = (w - s->first_scaleup) % t->scaleup.chips % l2->planes;
        for (uint32_t k = 0; k < l2->per_plane; k++)
            for (uint32_t j = 0; j < l2->links; j++)
                add_link(b, SN_TIER_SCALEUP_L2, SN_END_SWITCH, w, a_port_of(b, w),
                         s->first_scaleup_l2 + plane * l2->per_plane + k, &l2->cabling);
    }
}

static void build_scaleup(struct builder *b, struct sn_supernode *s, const struct sn_template *t,
                          uint32_t sn)
{
    struct sn_model *m = b->m;
    const struct sn_scaleup_spec *su = &t->scaleup;
    const struct sn_server_model *sm = &b->spec->server_models[t->server_model];
    const struct sn_gpu_model *gm = &b->spec->gpu_models[sm->gpu_model];
    s->first_scaleup = b->next_switch;
    s->n_scaleup = 0;
    s->first_scaleup_l2 = b->next_switch;
    s->n_scaleup_l2 = 0;
    if (su->switch_model == SN_NONE || su->chips == 0)
        return;
    if (su->domain == SN_SCALEUP_SUPERNODE) {
        for (uint32_t c = 0; c < su->chips; c++) {
            uint32_t pd = local_pd(s, domain_pick(&su->power, c, t->n_power_domains));
            new_switch(b, SN_ROLE_SCALEUP, su->switch_model, sn, s->first_rack + c % s->n_racks,
                       pd);
        }
    } else {
        for (uint32_t i = 0; i < s->n_servers; i++) {
            uint32_t server = s->first_server + i;
            for (uint32_t c = 0; c < su->chips; c++) {
                uint32_t id = new_switch(b, SN_ROLE_SCALEUP, su->switch_model, sn,
                                         m->server_rack[server], m->server_power[0][server]);
                m->switch_server[id] = server;
            }
        }
    }
    s->n_scaleup = b->next_switch - s->first_scaleup;
    for (uint32_t g = s->first_gpu; g < s->first_gpu + s->n_gpus; g++) {
        uint32_t first_chip = s->first_scaleup;
        if (su->domain != SN_SCALEUP_SUPERNODE)
            first_chip += (m->gpu_server[g] - s->first_server) * su->chips;
        for (uint32_t l = 0; l < gm->scaleup_links; l++)
            add_link(b, SN_TIER_SCALEUP, SN_END_GPU, g, (uint16_t)l, first_chip + l % su->chips,
                     &su->cabling);
    }
    if (su->domain == SN_SCALEUP_TWO_LEVEL)
        build_scaleup_l2(b, s, t, sn);
}

static void build_leaves(struct builder *b, struct sn_supernode *s, const struct sn_template *t,
                         uint32_t sn)
{
    struct sn_model *m = b->m;
    const struct sn_leaves_spec *lv = &t->leaves;
    const struct sn_server_model *sm = &b->spec->server_models[t->server_model];
    s->first_leaf = b->next_switch;
    s->n_leaves = 0;
    if (lv->switch_model == SN_NONE || lv->count == 0)
        return;
    for (uint32_t l = 0; l < lv->count; l++) {
        uint32_t pd = local_pd(s, domain_pick(&lv->power, l, t->n_power_domains));
        uint32_t id =
            new_switch(b, SN_ROLE_LEAF, lv->switch_model, sn, s->first_rack + l % s->n_racks, pd);
        m->leaf_uplinks[id] = b->plan->leaf_up[b->next_leaf++];
    }
    s->n_leaves = lv->count;
    if (lv->attach == SN_LEAF_ATTACH_PAIR && lv->count == 2) {
        m->switch_peer[s->first_leaf] = s->first_leaf + 1;
        m->switch_peer[s->first_leaf + 1] = s->first_leaf;
    }
    for (uint32_t i = 0; i < s->n_servers; i++) {
        uint32_t server = s->first_server + i;
        for (uint32_t n = 0; n < sm->nics; n++)
            add_link(b, SN_TIER_NODE_LEAF, SN_END_SERVER, server, (uint16_t)n,
                     s->first_leaf + n % lv->count, &lv->cabling);
        if (sm->nics == 0)
            continue;
        for (uint32_t g = 0; g < sm->gpus; g++) {
            uint32_t nic = (uint32_t)((uint64_t)g * sm->nics / sm->gpus);
            m->gpu_leaf[m->server_first_gpu[server] + g] = s->first_leaf + nic % lv->count;
        }
    }
}

static void build_mgmt(struct builder *b, struct sn_supernode *s, const struct sn_template *t,
                       uint32_t sn)
{
    struct sn_model *m = b->m;
    const struct sn_mgmt_spec *mg = &t->mgmt;
    const struct sn_server_model *sm = &b->spec->server_models[t->server_model];
    s->first_mgmt = b->next_switch;
    s->n_mgmt = 0;
    uint32_t first = s->first_mgmt, count = 0;
    if (mg->separation == SN_MGMT_PHYSICAL) {
        for (uint32_t i = 0; i < mg->count; i++) {
            uint32_t pd = local_pd(s, domain_pick(&mg->power, i, t->n_power_domains));
            new_switch(b, SN_ROLE_MGMT, mg->switch_model, sn, s->first_rack + i % s->n_racks, pd);
        }
        s->n_mgmt = count = mg->count;
        if (count == 2) {
            m->switch_peer[first] = first + 1;
            m->switch_peer[first + 1] = first;
        }
    } else {
        /* VLAN or no separation: management ports land on the data leaves. */
        first = s->first_leaf;
        count = s->n_leaves;
    }
    if (count == 0)
        return;
    for (uint32_t i = 0; i < s->n_servers; i++)
        for (uint32_t p = 0; p < sm->mgmt_ports; p++)
            add_link(b, SN_TIER_MGMT, SN_END_SERVER, s->first_server + i, (uint16_t)p,
                     first + (i * sm->mgmt_ports + p) % count, &mg->cabling);
}

static void build_supernodes(struct builder *b)
{
    const struct sn_spec *spec = b->spec;
    struct sn_model *m = b->m;
    uint32_t sn = 0;
    for (uint32_t g = 0; g < spec->n_groups; g++) {
        const struct sn_supernode_group *grp = &spec->groups[g];
        const struct sn_template *t = &spec->templates[grp->template_index];
        /* Numbering continues across groups that share a prefix. */
        uint32_t number = 0, prefix_total = 0;
        for (uint32_t h = 0; h < spec->n_groups; h++) {
            if (strcmp(spec->groups[h].prefix, grp->prefix) != 0)
                continue;
            if (h < g)
                number += spec->groups[h].count;
            prefix_total += spec->groups[h].count;
        }
        uint32_t width = 2;
        for (uint32_t v = prefix_total > 0 ? prefix_total - 1 : 0; v >= 100; v /= 10)
            width++;
        for (uint32_t i = 0; i < grp->count; i++, sn++) {
            struct sn_supernode *s = &m->supernodes[sn];
            s->template_index = grp->template_index;
            s->group = g;
            s->index_in_group = i;
            s->number = number + i;
            s->name_width = width;
            s->pool = grp->pool;
            build_domains(b, s, t, sn);
            build_servers(b, s, t, sn);
            build_scaleup(b, s, t, sn);
            build_leaves(b, s, t, sn);
            build_mgmt(b, s, t, sn);
        }
    }
}

/* Spine and core switches go to the fabric's power domains (the tier's
 * `power` list cycled, else round-robin: half the spines on A, half on B)
 * and fill the network racks in order, spines first. */
static void build_net_racks(struct builder *b)
{
    struct sn_model *m = b->m;
    for (uint32_t r = 0; r < m->n_net_racks; r++) {
        m->rack_supernode[m->first_net_rack + r] = SN_NONE;
        m->rack_cooling_loop[m->first_net_rack + r] = SN_NONE;
    }
    for (uint32_t i = 0; i < m->n_fabric_pds; i++) {
        m->power_domain_supernode[m->first_fabric_pd + i] = SN_NONE;
        m->power_domain_spec_index[m->first_fabric_pd + i] = i;
    }
}

static void fabric_place(const struct builder *b, const struct sn_fabric_tier_spec *tier,
                         uint32_t member, uint64_t k, uint64_t n, uint32_t *rack, uint32_t *pd)
{
    const struct sn_model *m = b->m;
    uint32_t local = domain_pick(&tier->power, member, m->n_fabric_pds);
    *pd = local == SN_NONE ? SN_NONE : m->first_fabric_pd + local;
    *rack = m->n_net_racks ? m->first_net_rack + (uint32_t)(k * m->n_net_racks / n) : SN_NONE;
}

static void build_fabric(struct builder *b)
{
    struct sn_model *m = b->m;
    const struct fabric_plan *p = b->plan;
    const struct sn_fabric_spec *f = &b->spec->fabric;
    build_net_racks(b);
    m->first_spine = b->next_switch;
    m->n_spines = p->tiers >= 2 ? p->n_spines : 0;
    m->n_cores = p->tiers == 3 ? p->n_cores : 0;
    uint64_t n_fabric = (uint64_t)m->n_spines + m->n_cores;
    uint32_t rack, pd, in_pod = 0, group = 0;
    for (uint32_t s = 0; s < m->n_spines; s++) {
        /* Three tiers: spine j of every pod on one domain, so that a
         * domain's loss takes whole core groups, not a share of each. */
        uint32_t member = s;
        if (p->tiers == 3) {
            while (in_pod + 1 < p->n_pods && s >= p->pod_first_spine[in_pod + 1])
                in_pod++;
            member = s - p->pod_first_spine[in_pod];
        }
        fabric_place(b, &f->spine, member, s, n_fabric, &rack, &pd);
        new_switch(b, SN_ROLE_SPINE, f->spine.switch_model, SN_NONE, rack, pd);
    }
    m->first_core = b->next_switch;
    for (uint32_t c = 0; c < m->n_cores; c++) {
        /* A core follows the spines of its group unless core.power says. */
        while (group + 1 < p->n_groups && c >= p->group_first_core[group + 1])
            group++;
        bool own = f->core.power.count > 0;
        fabric_place(b, own ? &f->core : &f->spine, own ? c : group, (uint64_t)m->n_spines + c,
                     n_fabric, &rack, &pd);
        new_switch(b, SN_ROLE_CORE, f->core.switch_model, SN_NONE, rack, pd);
    }
    if (p->tiers < 2)
        return;

    /* Leaves in global order: supernode by supernode. */
    uint64_t k = 0;
    uint32_t leaf_index = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *s = &m->supernodes[sn];
        for (uint32_t l = 0; l < s->n_leaves; l++, leaf_index++) {
            uint32_t leaf = s->first_leaf + l;
            uint32_t up = p->leaf_up[leaf_index];
            for (uint32_t j = 0; j < up; j++) {
                uint32_t spine;
                if (p->tiers == 2) {
                    spine = m->first_spine + (uint32_t)(k++ % p->n_spines);
                } else {
                    uint32_t pod = leaf_index / p->pod_size;
                    spine = m->first_spine + p->pod_first_spine[pod] + j;
                }
                add_link(b, SN_TIER_LEAF_SPINE, SN_END_SWITCH, leaf, a_port_of(b, leaf), spine,
                         &f->spine.cabling);
            }
        }
    }
    if (p->tiers != 3)
        return;
    uint64_t *group_cursor = calloc(p->n_groups + 1, sizeof(uint64_t));
    if (!group_cursor) {
        b->failed = true;
        return;
    }
    for (uint32_t pod = 0; pod < p->n_pods; pod++) {
        for (uint32_t s = p->pod_first_spine[pod]; s < p->pod_first_spine[pod + 1]; s++) {
            uint32_t j = s - p->pod_first_spine[pod];
            uint32_t spine = m->first_spine + s;
            for (uint32_t t = 0; t < p->spine_up[s]; t++) {
                uint64_t kk = group_cursor[j]++;
                uint32_t core =
                    m->first_core + p->group_first_core[j] + (uint32_t)(kk % p->group_cores[j]);
                add_link(b, SN_TIER_SPINE_CORE, SN_END_SWITCH, spine, a_port_of(b, spine), core,
                         &f->core.cabling);
            }
        }
    }
    free(group_cursor);
}

void sn_model_free(struct sn_model *m)
{
    if (!m)
        return;
    free(m->supernodes);
    free(m->server_supernode);
    free(m->server_first_gpu);
    free(m->server_model);
    free(m->server_rack);
    free(m->server_power[0]);
    free(m->server_power[1]);
    free(m->gpu_server);
    free(m->gpu_supernode);
    free(m->gpu_leaf);
    free(m->switch_model);
    free(m->switch_role);
    free(m->switch_supernode);
    free(m->switch_server);
    free(m->switch_rack);
    free(m->switch_power);
    free(m->switch_peer);
    free(m->switch_ports_used);
    free(m->switch_index_in_role);
    free(m->switch_ports_physical);
    free(m->leaf_uplinks);
    free(m->rack_supernode);
    free(m->rack_cooling_loop);
    free(m->power_domain_supernode);
    free(m->power_domain_spec_index);
    free(m->cooling_loop_supernode);
    free(m->cooling_loop_spec_index);
    free(m->links);
    free(m);
}

enum sn_err sn_model_build(const struct sn_spec *spec, struct sn_model **out, struct sn_error *err)
{
    struct sn__model_counts counts;
    struct fabric_plan plan;
    *out = NULL;
    enum sn_err rc = count_all(spec, &counts, err);
    if (rc != SN_OK)
        return rc;
    rc = plan_fabric(spec, &counts, &plan, err);
    if (rc != SN_OK)
        goto out_plan;
    struct sn_model *m = calloc(1, sizeof(*m));
    if (!m) {
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory for the model");
        goto out_plan;
    }
    m->spec = spec;
    struct builder b = {.m = m, .spec = spec, .plan = &plan};
    alloc_arrays(&b, &counts);
    if (b.failed) {
        free(b.open_legs);
        free(b.open_cable);
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory for a model of %u GPUs and %llu links",
                          m->n_gpus, (unsigned long long)m->n_links);
        goto out_model;
    }
    build_supernodes(&b);
    build_fabric(&b);
    free(b.open_legs);
    free(b.open_cable);
    b.open_legs = b.open_cable = NULL;
    if (b.failed) {
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory wiring the fabric");
        goto out_model;
    }
    fabric_plan_release(&plan);
    *out = m;
    return SN_OK;

out_model:
    sn_model_free(m);
out_plan:
    fabric_plan_release(&plan);
    return rc;
}
