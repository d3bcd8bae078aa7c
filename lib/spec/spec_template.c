/*
 * The templates and supernodes sections of a spec. See docs/spec.md.
 *
 * A template's power domains and cooling loops are read first, so that every
 * `power`, `server_power` and `loops` list and every `redundant_with` can be
 * resolved to local indices as it is read. Absent optional blocks (scaleup,
 * leaves, management) get the documented defaults; every cabling's length
 * class is always a valid index (built-in classes always exist), while its
 * cable is SN_NONE unless given. The supernode groups come last, with the
 * cluster's GPU total computed in 64 bits against SN_SPEC_MAX_GPUS.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "spec/spec_int.h"

#define TEXT_TABLE(list)                                                                           \
    {                                                                                              \
        list(SN_X)                                                                                 \
    }
#define SN_X(name, text) text,
static const char *const scaleup_domains[] = TEXT_TABLE(SN_SCALEUP_DOMAIN_LIST);
static const char *const leaf_attaches[] = TEXT_TABLE(SN_LEAF_ATTACH_LIST);
static const char *const mgmt_separations[] = TEXT_TABLE(SN_MGMT_SEPARATION_LIST);
static const char *const power_kinds[] = TEXT_TABLE(SN_POWER_KIND_LIST);
static const char *const cooling_kinds[] = TEXT_TABLE(SN_COOLING_KIND_LIST);
#undef SN_X

static enum sn_err oom(struct sn__spec_ctx *c)
{
    return sn_error_set(c->err, SN_ERR_NOMEM, "%s: out of memory for the spec", c->file);
}

/* A quantity that must be given and above zero. */
static enum sn_err need_positive(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                 enum sn_unit_kind kind, double *out)
{
    enum sn_err rc = sn__spec_get_quantity(c, m, k, kind, true, 0, out);
    if (rc != SN_OK || *out > 0)
        return rc;
    char expected[64];
    snprintf(expected, sizeof(expected), "a %s above zero", sn_unit_kind_name(kind));
    return sn__spec_fail_value(c, m, k, expected);
}

/* Cable k_cable (optional unless required) and length class k_length
 * (default def_length, a built-in class). */
static enum sn_err get_cabling(struct sn__spec_ctx *c, const struct sn__spec_map *m,
                               unsigned k_cable, bool required, unsigned k_length,
                               const char *def_length, struct sn_cabling *out)
{
    enum sn_err rc = sn__spec_get_ref(c, m, k_cable, SN__REF_CABLE, NULL, required, &out->cable);
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, m, k_length, SN__REF_LENGTH, NULL, false, &out->length_class);
    if (rc == SN_OK && out->length_class == SN_NONE)
        out->length_class = sn__spec_lookup(c->spec, SN__REF_LENGTH, NULL, def_length);
    return rc;
}

/* ---- power domains and cooling loops --------------------------------------- */

enum { PD_CAPACITY, PD_KIND, PD_REDUNDANT, PD_KEYS };
static const char *const domain_keys[PD_KEYS] = {"capacity", "kind", "redundant_with"};

static enum sn_err parse_domain(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                                struct sn_template *t, uint32_t i)
{
    struct sn_power_domain_spec *d = &t->power_domains[i];
    struct sn__spec_map m;
    char what[160];
    if (t->server_model == SN_NONE) /* the fabric's holder */
        snprintf(what, sizeof(what), "power domain '%s' of the fabric", e->name);
    else
        snprintf(what, sizeof(what), "power domain '%s' of template '%s'", e->name, t->name);
    int kind = 0;
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, domain_keys, PD_KEYS, &m);
    if (rc == SN_OK)
        rc = need_positive(c, &m, PD_CAPACITY, SN_UNIT_POWER, &d->capacity_w);
    if (rc == SN_OK)
        rc =
            sn__spec_get_enum(c, &m, PD_KIND, power_kinds, SN_POWER_KIND_COUNT, SN_POWER_AC, &kind);
    d->kind = (enum sn_power_kind)kind;
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, PD_REDUNDANT, SN__REF_DOMAIN, t, false, &d->redundant_with);
    if (rc == SN_OK && d->redundant_with == i)
        return sn__spec_fail(c, sn__spec_value_loc(&m, PD_REDUNDANT),
                             "power domain '%s' redundant with itself: expected another domain "
                             "of %s '%s'",
                             d->name, t->server_model == SN_NONE ? "the" : "template",
                             t->server_model == SN_NONE ? "fabric" : t->name);
    return rc;
}

static enum sn_err parse_domains(struct sn__spec_ctx *c, const struct sn__spec_map *tm, unsigned k,
                                 struct sn_template *t)
{
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = sn__spec_require(c, tm, k);
    if (rc == SN_OK)
        rc = sn__spec_entries(c, tm->value[k], tm->key_loc[k], "power domain",
                              SN_SPEC_MAX_DOMAINS_PER_TEMPLATE, &e, &n);
    if (rc != SN_OK)
        return rc;
    if (n == 0)
        return sn__spec_fail(c, tm->key_loc[k],
                             "no power domains in %s '%s': expected 1 "
                             "to %d",
                             t->server_model == SN_NONE ? "the" : "template",
                             t->server_model == SN_NONE ? "fabric" : t->name,
                             SN_SPEC_MAX_DOMAINS_PER_TEMPLATE);
    t->power_domains = sn__arena_array(c->arena, n, sizeof(*t->power_domains));
    if (!t->power_domains)
        return oom(c);
    /* All names first, so redundant_with may name a later domain. */
    for (uint32_t i = 0; i < n; i++) {
        t->power_domains[i].name = e[i].name;
        t->power_domains[i].loc = e[i].loc;
        t->power_domains[i].redundant_with = SN_NONE;
    }
    t->n_power_domains = n;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = parse_domain(c, &e[i], t, i)) != SN_OK)
            return rc;
    return SN_OK;
}

enum { LOOP_KIND, LOOP_CAPACITY, LOOP_FLOW, LOOP_KEYS };
static const char *const loop_keys[LOOP_KEYS] = {"kind", "capacity", "flow"};

static enum sn_err parse_loop(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                              const struct sn_template *t, struct sn_cooling_loop_spec *l)
{
    struct sn__spec_map m;
    char what[160];
    snprintf(what, sizeof(what), "cooling loop '%s' of template '%s'", e->name, t->name);
    l->name = e->name;
    l->loc = e->loc;
    int kind = 0;
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, loop_keys, LOOP_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, LOOP_KIND, cooling_kinds, SN_COOLING_KIND_COUNT,
                               SN_COOLING_LIQUID, &kind);
    l->kind = (enum sn_cooling_kind)kind;
    if (rc == SN_OK)
        rc = need_positive(c, &m, LOOP_CAPACITY, SN_UNIT_POWER, &l->capacity_w);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, LOOP_FLOW, SN_UNIT_FLOW, false, 0, &l->flow_lpm);
    return rc;
}

static enum sn_err parse_loops(struct sn__spec_ctx *c, const struct sn__spec_map *tm, unsigned k,
                               struct sn_template *t)
{
    if (!tm->present[k])
        return SN_OK;
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = sn__spec_entries(c, tm->value[k], tm->key_loc[k], "cooling loop",
                                      SN_SPEC_MAX_CATALOG, &e, &n);
    if (rc != SN_OK)
        return rc;
    t->cooling_loops = sn__arena_array(c->arena, n, sizeof(*t->cooling_loops));
    if (!t->cooling_loops)
        return oom(c);
    for (uint32_t i = 0; i < n; i++) {
        if ((rc = parse_loop(c, &e[i], t, &t->cooling_loops[i])) != SN_OK)
            return rc;
        t->n_cooling_loops = i + 1;
    }
    return SN_OK;
}

/* ---- scaleup, leaves, management, racks ------------------------------------ */

enum {
    L2_SWITCH,
    L2_PLANES,
    L2_PER_PLANE,
    L2_LINKS,
    L2_OVERSUB,
    L2_RACKS,
    L2_CABLE,
    L2_LENGTH,
    L2_POWER,
    L2_KEYS
};
static const char *const l2_keys[L2_KEYS] = {"switch", "planes", "per_plane",
                                             "links",  "oversubscription", "racks",
                                             "cable",  "length", "power"};

/* scaleup.l2 of a two-level domain: the L2 switches and their planes. */
static enum sn_err parse_l2(struct sn__spec_ctx *c, const struct sn__spec_map *sm, unsigned k,
                            struct sn_template *t)
{
    struct sn_scaleup_l2_spec *l2 = &t->scaleup.l2;
    struct sn__spec_map m;
    char what[128];
    snprintf(what, sizeof(what), "scaleup.l2 of template '%s'", t->name);
    l2->loc = sm->key_loc[k];
    enum sn_err rc = sn__spec_bind(c, sm->value[k], sm->key_loc[k], what, l2_keys, L2_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, L2_SWITCH, SN__REF_SWITCH, NULL, true, &l2->switch_model);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, L2_PLANES, true, 0, 1, SN__SPEC_MAX_CHIPS, &l2->planes);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, L2_PER_PLANE, true, 0, 1, SN__SPEC_MAX_CHIPS,
                                &l2->per_plane);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, L2_LINKS, false, 1, 1, SN__SPEC_MAX_CHIPS, &l2->links);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, L2_OVERSUB, SN_UNIT_RATIO, false, 1.0,
                                   &l2->oversubscription);
    if (rc == SN_OK && m.present[L2_OVERSUB])
        l2->oversubscription_loc = sn__spec_value_loc(&m, L2_OVERSUB);
    if (rc == SN_OK && !(l2->oversubscription >= 1.0 - 1e-9))
        return sn__spec_fail_value(c, &m, L2_OVERSUB, "a ratio of at least 1:1");
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, L2_RACKS, false, 0, 0, SN__SPEC_MAX_CHIPS, &l2->racks);
    if (rc == SN_OK)
        rc = get_cabling(c, &m, L2_CABLE, false, L2_LENGTH, "adjacent-rack", &l2->cabling);
    if (rc == SN_OK)
        rc = sn__spec_get_list(c, &m, L2_POWER, SN__REF_DOMAIN, t, &l2->power);
    if (rc == SN_OK && (uint64_t)l2->planes * l2->per_plane > SN__SPEC_MAX_CHIPS)
        return sn__spec_fail(c, sn__spec_value_loc(&m, L2_PER_PLANE),
                             "%" PRIu32 " planes x %" PRIu32 " L2 switches: expected at most %u "
                             "L2 switches per supernode",
                             l2->planes, l2->per_plane, (unsigned)SN__SPEC_MAX_CHIPS);
    if (rc == SN_OK && t->scaleup.chips % l2->planes != 0)
        return sn__spec_fail(c, sn__spec_value_loc(&m, L2_PLANES),
                             "planes %" PRIu32 " does not divide the %" PRIu32 " L1 chips per "
                             "server (L1 chip c joins plane c mod planes): expected a divisor "
                             "of scaleup.chips",
                             l2->planes, t->scaleup.chips);
    return rc;
}

enum {
    SU_DOMAIN,
    SU_SWITCH,
    SU_CHIPS,
    SU_HOPS,
    SU_CABLE,
    SU_LENGTH,
    SU_POWER,
    SU_L2,
    SU_TRAY,
    SU_KEYS
};
static const char *const scaleup_keys[SU_KEYS] = {
    "domain", "switch", "chips", "hop_limit", "cable", "length", "power", "l2", "chips_per_tray"};

static enum sn_err parse_scaleup(struct sn__spec_ctx *c, const struct sn__spec_map *tm, unsigned k,
                                 struct sn_template *t)
{
    struct sn_scaleup_spec *s = &t->scaleup;
    s->domain = SN_SCALEUP_SERVER;
    s->switch_model = SN_NONE;
    s->hop_limit = 1;
    s->cabling.cable = SN_NONE;
    s->cabling.length_class = sn__spec_lookup(c->spec, SN__REF_LENGTH, NULL, "in-server");
    s->l2.switch_model = SN_NONE;
    s->chips_per_tray = 1;
    if (!tm->present[k])
        return SN_OK;
    struct sn__spec_map m;
    char what[128];
    snprintf(what, sizeof(what), "scaleup of template '%s'", t->name);
    int domain = 0;
    enum sn_err rc =
        sn__spec_bind(c, tm->value[k], tm->key_loc[k], what, scaleup_keys, SU_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, SU_DOMAIN, scaleup_domains, SN_SCALEUP_DOMAIN_COUNT, -1,
                               &domain);
    s->domain = (enum sn_scaleup_domain)domain;
    bool two_level = s->domain == SN_SCALEUP_TWO_LEVEL;
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, SU_SWITCH, SN__REF_SWITCH, NULL, two_level, &s->switch_model);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SU_CHIPS, s->switch_model != SN_NONE, 0,
                                s->switch_model != SN_NONE ? 1 : 0, SN__SPEC_MAX_CHIPS, &s->chips);
    if (rc == SN_OK)
        rc =
            sn__spec_get_count(c, &m, SU_TRAY, false, 1, 1, SN__SPEC_MAX_CHIPS, &s->chips_per_tray);
    if (rc == SN_OK && s->chips && s->chips % s->chips_per_tray)
        return sn__spec_fail(c, sn__spec_value_loc(&m, SU_TRAY),
                             "chips_per_tray %u does not divide chips %u: expected the chips "
                             "of whole switch trays (GB200 NVL72: 18 chips, 2 per tray)",
                             s->chips_per_tray, s->chips);
    /* GPU, L1, L2, L1, GPU: three switch hops between servers. */
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SU_HOPS, false, two_level ? 3 : 1, 1, UINT32_MAX,
                                &s->hop_limit);
    if (rc == SN_OK)
        rc = get_cabling(c, &m, SU_CABLE, false, SU_LENGTH,
                         s->domain == SN_SCALEUP_SUPERNODE ? "in-rack" : "in-server", &s->cabling);
    if (rc == SN_OK)
        rc = sn__spec_get_list(c, &m, SU_POWER, SN__REF_DOMAIN, t, &s->power);
    if (rc == SN_OK && two_level && !m.present[SU_L2])
        return sn__spec_fail(c, sn__spec_value_loc(&m, SU_DOMAIN),
                             "domain 'two-level' without an l2 block: expected scaleup.l2 with "
                             "the L2 switch, planes and per_plane");
    if (rc == SN_OK && !two_level && m.present[SU_L2])
        return sn__spec_fail(c, m.key_loc[SU_L2],
                             "l2 in a '%s' scale-up domain: expected domain 'two-level' (or no "
                             "l2 block)",
                             sn_scaleup_domain_name(s->domain));
    if (rc == SN_OK && two_level)
        rc = parse_l2(c, &m, SU_L2, t);
    return rc;
}

enum { LF_SWITCH, LF_COUNT, LF_ATTACH, LF_OVERSUB, LF_CABLE, LF_LENGTH, LF_POWER, LF_KEYS };
static const char *const leaf_keys[LF_KEYS] = {"switch", "count",  "attach", "oversubscription",
                                               "cable",  "length", "power"};

static enum sn_err parse_leaves(struct sn__spec_ctx *c, const struct sn__spec_map *tm, unsigned k,
                                struct sn_template *t)
{
    struct sn_leaves_spec *l = &t->leaves;
    l->switch_model = SN_NONE;
    l->attach = SN_LEAF_ATTACH_RAIL;
    l->oversubscription = 1.0;
    l->cabling.cable = SN_NONE;
    l->cabling.length_class = sn__spec_lookup(c->spec, SN__REF_LENGTH, NULL, "in-rack");
    if (!tm->present[k])
        return SN_OK;
    struct sn__spec_map m;
    char what[128];
    snprintf(what, sizeof(what), "leaves of template '%s'", t->name);
    int attach = 0;
    enum sn_err rc = sn__spec_bind(c, tm->value[k], tm->key_loc[k], what, leaf_keys, LF_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, LF_SWITCH, SN__REF_SWITCH, NULL, true, &l->switch_model);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, LF_COUNT, true, 0, 1, UINT32_MAX, &l->count);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, LF_ATTACH, leaf_attaches, SN_LEAF_ATTACH_COUNT,
                               SN_LEAF_ATTACH_RAIL, &attach);
    l->attach = (enum sn_leaf_attach)attach;
    if (rc == SN_OK && l->attach == SN_LEAF_ATTACH_PAIR && l->count != 2)
        return sn__spec_fail(c, sn__spec_value_loc(&m, LF_ATTACH),
                             "attach 'pair' with %" PRIu32 " leaves: expected a count of 2 for "
                             "a pair, or attach 'rail'",
                             l->count);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, LF_OVERSUB, SN_UNIT_RATIO, false, 1.0,
                                   &l->oversubscription);
    if (rc == SN_OK)
        rc = get_cabling(c, &m, LF_CABLE, true, LF_LENGTH, "in-rack", &l->cabling);
    if (rc == SN_OK)
        rc = sn__spec_get_list(c, &m, LF_POWER, SN__REF_DOMAIN, t, &l->power);
    return rc;
}

enum { MG_SEPARATION, MG_SWITCH, MG_COUNT, MG_CABLE, MG_LENGTH, MG_POWER, MG_KEYS };
static const char *const mgmt_keys[MG_KEYS] = {"separation", "switch", "count",
                                               "cable",      "length", "power"};

static enum sn_err parse_mgmt(struct sn__spec_ctx *c, const struct sn__spec_map *tm, unsigned k,
                              struct sn_template *t)
{
    struct sn_mgmt_spec *g = &t->mgmt;
    g->separation = SN_MGMT_PHYSICAL;
    g->switch_model = SN_NONE;
    g->cabling.cable = SN_NONE;
    g->cabling.length_class = sn__spec_lookup(c->spec, SN__REF_LENGTH, NULL, "in-rack");
    if (!tm->present[k])
        return SN_OK;
    struct sn__spec_map m;
    char what[128];
    snprintf(what, sizeof(what), "management of template '%s'", t->name);
    int sep = 0;
    enum sn_err rc = sn__spec_bind(c, tm->value[k], tm->key_loc[k], what, mgmt_keys, MG_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, MG_SEPARATION, mgmt_separations, SN_MGMT_SEPARATION_COUNT,
                               SN_MGMT_PHYSICAL, &sep);
    g->separation = (enum sn_mgmt_separation)sep;
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, MG_SWITCH, SN__REF_SWITCH, NULL,
                              g->separation == SN_MGMT_PHYSICAL, &g->switch_model);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, MG_COUNT, false, 1, 0, UINT32_MAX, &g->count);
    if (rc == SN_OK)
        rc = get_cabling(c, &m, MG_CABLE, false, MG_LENGTH, "in-rack", &g->cabling);
    if (rc == SN_OK)
        rc = sn__spec_get_list(c, &m, MG_POWER, SN__REF_DOMAIN, t, &g->power);
    return rc;
}

enum { RK_COUNT, RK_LIMIT, RK_COOLING, RK_LOOPS, RK_PSU, RK_FEED, RK_KEYS };
static const char *const rack_keys[RK_KEYS] = {"count", "power_limit", "cooling",
                                               "loops", "psu",         "feed"};

static enum sn_err parse_racks(struct sn__spec_ctx *c, const struct sn__spec_map *tm, unsigned k,
                               struct sn_template *t)
{
    struct sn_racks_spec *r = &t->racks;
    enum sn_err rc = sn__spec_require(c, tm, k);
    if (rc != SN_OK)
        return rc;
    struct sn__spec_map m;
    char what[128];
    snprintf(what, sizeof(what), "racks of template '%s'", t->name);
    int cooling = 0;
    rc = sn__spec_bind(c, tm->value[k], tm->key_loc[k], what, rack_keys, RK_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, RK_COUNT, true, 0, 1, UINT32_MAX, &r->count);
    if (rc == SN_OK)
        rc = need_positive(c, &m, RK_LIMIT, SN_UNIT_POWER, &r->power_limit_w);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, RK_COOLING, cooling_kinds, SN_COOLING_KIND_COUNT,
                               SN_COOLING_AIR, &cooling);
    r->cooling = (enum sn_cooling_kind)cooling;
    if (rc == SN_OK)
        rc = sn__spec_get_list(c, &m, RK_LOOPS, SN__REF_LOOP, t, &r->loops);
    if (rc == SN_OK)
        rc = sn__spec_parse_psu(c, &m, RK_PSU, what, &r->psu);
    if (rc == SN_OK)
        rc = sn__spec_parse_feed(c, &m, RK_FEED, what, &r->feed);
    return rc;
}

/* ---- the fabric's power domains and network racks ------------------------- */

enum { NR_COUNT, NR_UNITS, NR_LIMIT, NR_COOLING, NR_KEYS };
static const char *const net_rack_keys[NR_KEYS] = {"count", "units", "power_limit", "cooling"};

static enum sn_err default_fabric_domains(struct sn__spec_ctx *c, struct sn_src_loc loc,
                                          struct sn_template *holder)
{
    static const char *const names[] = {"A", "B"};
    holder->power_domains = sn__arena_array(c->arena, 2, sizeof(*holder->power_domains));
    if (!holder->power_domains)
        return oom(c);
    for (uint32_t i = 0; i < 2; i++) {
        struct sn_power_domain_spec *d = &holder->power_domains[i];
        d->name = names[i];
        d->loc = loc;
        d->capacity_w = 0; /* not stated */
        d->kind = SN_POWER_AC;
        d->redundant_with = 1 - i;
    }
    holder->n_power_domains = 2;
    return SN_OK;
}

enum sn_err sn__spec_parse_fabric_power(struct sn__spec_ctx *c, const struct sn__spec_map *fm,
                                        unsigned k_domains, unsigned k_racks, bool spine_tier,
                                        struct sn_template *holder,
                                        struct sn_fabric_racks_spec *racks)
{
    enum sn_err rc = SN_OK;
    racks->count = 0;
    racks->units = 42;
    racks->power_limit_w = 0;
    racks->cooling = SN_COOLING_AIR;
    if (!spine_tier) {
        unsigned k = fm->present[k_domains] ? k_domains : k_racks;
        if (fm->present[k])
            return sn__spec_fail(c, fm->key_loc[k],
                                 "fabric.%s without a spine tier: no spine or core switch to "
                                 "place: expected a fabric.spine mapping",
                                 fm->keys[k]);
        return SN_OK;
    }
    if (fm->present[k_domains])
        rc = parse_domains(c, fm, k_domains, holder);
    else
        rc = default_fabric_domains(c, fm->loc, holder);
    if (rc != SN_OK || !fm->present[k_racks])
        return rc;
    struct sn__spec_map m;
    int cooling = 0;
    rc = sn__spec_bind(c, fm->value[k_racks], fm->key_loc[k_racks], "fabric.racks", net_rack_keys,
                       NR_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, NR_COUNT, false, 0, 1, SN__SPEC_MAX_LIST, &racks->count);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, NR_UNITS, false, 42, 1, 1000, &racks->units);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, NR_LIMIT, SN_UNIT_POWER, false, 0,
                                   &racks->power_limit_w);
    if (rc == SN_OK && m.present[NR_LIMIT] && !(racks->power_limit_w > 0))
        return sn__spec_fail_value(c, &m, NR_LIMIT, "a power above zero");
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, NR_COOLING, cooling_kinds, SN_COOLING_KIND_COUNT,
                               SN_COOLING_AIR, &cooling);
    racks->cooling = (enum sn_cooling_kind)cooling;
    return rc;
}

/* ---- templates -------------------------------------------------------------- */

enum {
    TPL_SERVER,
    TPL_SERVERS,
    TPL_SCALEUP,
    TPL_LEAVES,
    TPL_MGMT,
    TPL_DOMAINS,
    TPL_SERVER_POWER,
    TPL_LOOPS,
    TPL_RACKS,
    TPL_KEYS
};
static const char *const template_keys[TPL_KEYS] = {
    "server",        "servers",      "scaleup",       "leaves", "management",
    "power_domains", "server_power", "cooling_loops", "racks",
};

static enum sn_err parse_template(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                                  struct sn_template *t)
{
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "template '%s'", e->name);
    t->name = e->name;
    t->loc = e->loc;
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, template_keys, TPL_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, TPL_SERVER, SN__REF_SERVER, NULL, true, &t->server_model);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, TPL_SERVERS, true, 0, 1, SN__SPEC_MAX_SERVERS, &t->servers);
    if (rc == SN_OK)
        rc = parse_domains(c, &m, TPL_DOMAINS, t);
    if (rc == SN_OK)
        rc = parse_loops(c, &m, TPL_LOOPS, t);
    if (rc == SN_OK)
        rc = parse_scaleup(c, &m, TPL_SCALEUP, t);
    if (rc == SN_OK)
        rc = parse_leaves(c, &m, TPL_LEAVES, t);
    if (rc == SN_OK)
        rc = parse_mgmt(c, &m, TPL_MGMT, t);
    if (rc == SN_OK)
        rc = sn__spec_get_list(c, &m, TPL_SERVER_POWER, SN__REF_DOMAIN, t, &t->server_power);
    if (rc == SN_OK)
        rc = parse_racks(c, &m, TPL_RACKS, t);
    return rc;
}

enum sn_err sn__spec_parse_templates(struct sn__spec_ctx *c, struct fy_node *node,
                                     struct sn_src_loc loc)
{
    struct sn_spec *spec = c->spec;
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = sn__spec_entries(c, node, loc, "template", SN_SPEC_MAX_TEMPLATES, &e, &n);
    if (rc != SN_OK)
        return rc;
    spec->templates = sn__arena_array(c->arena, n, sizeof(*spec->templates));
    if (!spec->templates)
        return oom(c);
    for (uint32_t i = 0; i < n; i++) {
        if ((rc = parse_template(c, &e[i], &spec->templates[i])) != SN_OK)
            return rc;
        spec->n_templates = i + 1;
    }
    return SN_OK;
}

/* ---- supernode groups ---------------------------------------------------------- */

enum { GRP_TEMPLATE, GRP_COUNT, GRP_PREFIX, GRP_POOL, GRP_KEYS };
static const char *const group_keys[GRP_KEYS] = {"template", "count", "prefix", "pool"};

/* [a-z][a-z0-9-]*, at most SN__SPEC_NAME_MAX characters. */
static bool valid_prefix(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SN__SPEC_NAME_MAX || s[0] < 'a' || s[0] > 'z')
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* Generated spine and core switch names (spine017, core004), the
 * exports' fabric groups (spine-group03, core-group1) and the network
 * racks and fabric power domains (net-rack0, net-pdA) own these. */
static bool reserved_prefix(const char *s)
{
    return strncmp(s, "spine", 5) == 0 || strncmp(s, "core", 4) == 0 ||
           strncmp(s, "net-", 4) == 0;
}

static enum sn_err parse_group(struct sn__spec_ctx *c, struct fy_node *node,
                               struct sn_src_loc seq_loc, uint32_t i, struct sn_supernode_group *g)
{
    struct sn__spec_map m;
    char what[64];
    snprintf(what, sizeof(what), "supernodes entry %" PRIu32, i + 1);
    g->loc = sn__spec_loc(node, seq_loc);
    enum sn_err rc = sn__spec_bind(c, node, g->loc, what, group_keys, GRP_KEYS, &m);
    if (rc == SN_OK)
        rc =
            sn__spec_get_ref(c, &m, GRP_TEMPLATE, SN__REF_TEMPLATE, NULL, true, &g->template_index);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, GRP_COUNT, true, 0, 1, UINT32_MAX, &g->count);
    if (rc == SN_OK)
        rc = sn__spec_get_string(c, &m, GRP_PREFIX, "sn", &g->prefix);
    g->prefix_loc = m.present[GRP_PREFIX] ? sn__spec_value_loc(&m, GRP_PREFIX) : g->loc;
    if (rc == SN_OK && reserved_prefix(g->prefix))
        return sn__spec_fail(c, g->prefix_loc,
                             "prefix '%s' is reserved: generated names 'spine017', 'core004', "
                             "'spine-group03', 'core-group1' and 'net-rack0' begin with "
                             "'spine', 'core' and 'net-' and would collide: expected another "
                             "prefix",
                             g->prefix);
    if (rc == SN_OK && !valid_prefix(g->prefix))
        return sn__spec_fail_value(c, &m, GRP_PREFIX,
                                   "a prefix of lowercase letters, digits and '-', starting "
                                   "with a letter");
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, GRP_POOL, SN__REF_POOL, NULL, false, &g->pool);
    return rc;
}

/* The cluster's GPUs, summed in 64 bits with saturation: each group adds at
 * most 2^32 x 2^16 x 2^32 = 2^80, so products are checked step by step. */
static enum sn_err check_gpu_total(struct sn__spec_ctx *c)
{
    const struct sn_spec *spec = c->spec;
    uint64_t total = 0;
    uint32_t first_over = SN_NONE;
    for (uint32_t i = 0; i < spec->n_groups; i++) {
        const struct sn_supernode_group *g = &spec->groups[i];
        const struct sn_template *t = &spec->templates[g->template_index];
        uint64_t per_server = spec->server_models[t->server_model].gpus;
        uint64_t per_sn = per_server * t->servers; /* < 2^48 */
        uint64_t add = per_sn > UINT64_MAX / g->count ? UINT64_MAX : per_sn * g->count;
        total = add > UINT64_MAX - total ? UINT64_MAX : total + add;
        if (total > SN_SPEC_MAX_GPUS && first_over == SN_NONE)
            first_over = i;
    }
    if (first_over == SN_NONE)
        return SN_OK;
    return sn__spec_fail(c, spec->groups[first_over].loc,
                         "cluster of %" PRIu64 " GPUs exceeds the limit of %u GPUs", total,
                         (unsigned)SN_SPEC_MAX_GPUS);
}

/* ---- names the exports must accept ---------------------------------------- */

/* Every generated name an export writes must fit its consumer: Kubernetes
 * node names (DNS-1123 labels) and label values take at most 63
 * characters (k8s-labels, volcano), Slurm node and switch names 64
 * (slurm-tree, slurm-block); so all are held to 63. Label values must also
 * end with a letter or digit. Checked here, at spec time, so that no
 * export is ever written with a name its consumer truncates or refuses
 * (docs/export.md). */
#define EXPORT_NAME_MAX 63u

static uint32_t digits(uint64_t v)
{
    uint32_t d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

static bool ends_alnum(const char *s)
{
    size_t n = strlen(s);
    char e = n ? s[n - 1] : '\0';
    return (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9');
}

static enum sn_err name_too_long(struct sn__spec_ctx *c, const struct sn_supernode_group *g,
                                 const char *what, const char *example_suffix, uint32_t len)
{
    uint32_t rest = len - (uint32_t)strlen(g->prefix);
    return sn__spec_fail(c, g->prefix_loc,
                         "prefix '%s' makes the %s names %u characters ('%s%s'), but "
                         "Kubernetes node names and label values (k8s-labels, volcano) allow "
                         "%u and Slurm names (slurm-tree, slurm-block) 64: expected a prefix "
                         "of at most %u characters",
                         g->prefix, what, len, g->prefix, example_suffix, EXPORT_NAME_MAX,
                         rest < EXPORT_NAME_MAX ? EXPORT_NAME_MAX - rest : 0);
}

struct gen_name {
    const char *what;   /* kind of name, for the message */
    uint32_t len;       /* characters of the longest such name */
    const char *suffix; /* what follows the supernode name in it */
};

static enum sn_err check_group_names(struct sn__spec_ctx *c, const struct sn_supernode_group *g,
                                     uint64_t prefix_total)
{
    const struct sn_template *t = &c->spec->templates[g->template_index];
    uint32_t plen = (uint32_t)strlen(g->prefix);
    uint32_t width = digits(prefix_total > 0 ? prefix_total - 1 : 0);
    width = width < 2 ? 2 : width;
    uint32_t sn = plen + width;
    uint32_t sd = digits(t->servers > 0 ? t->servers - 1 : 0);
    char ex[96];
    struct gen_name names[5];
    uint32_t n = 0;
    names[n++] = (struct gen_name){"supernode", sn, ""};
    names[n++] = (struct gen_name){"server", sn + 2 + (sd < 2 ? 2 : sd), "-t00"};
    names[n++] = (struct gen_name){"rack", sn + 5 + digits(t->racks.count ? t->racks.count - 1 : 0),
                                    "-rack0"};
    if (t->leaves.switch_model != SN_NONE && t->leaves.count > 0)
        names[n++] = (struct gen_name){"leaf", sn + 5 + digits(t->leaves.count - 1), "-leaf0"};
    uint32_t longest = 0;
    for (uint32_t d = 0; d < t->n_power_domains; d++)
        longest = strlen(t->power_domains[d].name) > longest
                      ? (uint32_t)strlen(t->power_domains[d].name)
                      : longest;
    for (uint32_t d = 0; d < t->n_cooling_loops; d++)
        longest = strlen(t->cooling_loops[d].name) + 2 > longest
                      ? (uint32_t)strlen(t->cooling_loops[d].name) + 2
                      : longest;
    names[n++] = (struct gen_name){"power-domain or cooling-loop", sn + 3 + longest, "-pd..."};
    for (uint32_t i = 0; i < n; i++) {
        if (names[i].len <= EXPORT_NAME_MAX)
            continue;
        snprintf(ex, sizeof(ex), "%0*u%s", (int)width, 0u, names[i].suffix);
        return name_too_long(c, g, names[i].what, ex, names[i].len);
    }
    return SN_OK;
}

static enum sn_err check_export_names(struct sn__spec_ctx *c)
{
    const struct sn_spec *spec = c->spec;
    for (uint32_t i = 0; i < spec->n_groups; i++) {
        uint64_t total = 0;
        for (uint32_t h = 0; h < spec->n_groups; h++)
            if (strcmp(spec->groups[h].prefix, spec->groups[i].prefix) == 0)
                total += spec->groups[h].count;
        enum sn_err rc = check_group_names(c, &spec->groups[i], total);
        if (rc != SN_OK)
            return rc;
    }
    /* Names that become label values as they are. */
    for (uint32_t t = 0; t < spec->n_templates; t++) {
        const struct sn_template *tp = &spec->templates[t];
        if (!ends_alnum(tp->name))
            return sn__spec_fail(c, tp->loc,
                                 "template name '%s' ends with '%c', but it becomes a Kubernetes "
                                 "label value (k8s-labels), which must end with a letter or digit",
                                 tp->name, tp->name[strlen(tp->name) - 1]);
        for (uint32_t d = 0; d < tp->n_power_domains; d++)
            if (!ends_alnum(tp->power_domains[d].name))
                return sn__spec_fail(c, tp->power_domains[d].loc,
                                     "power domain name '%s' must end with a letter or digit: "
                                     "it ends the 'power-domain' label value (k8s-labels)",
                                     tp->power_domains[d].name);
        for (uint32_t d = 0; d < tp->n_cooling_loops; d++)
            if (!ends_alnum(tp->cooling_loops[d].name))
                return sn__spec_fail(c, tp->cooling_loops[d].loc,
                                     "cooling loop name '%s' must end with a letter or digit: "
                                     "it ends the 'cooling-loop' label value (k8s-labels)",
                                     tp->cooling_loops[d].name);
    }
    for (uint32_t p = 0; p < spec->n_pools; p++)
        if (!ends_alnum(spec->pools[p].name))
            return sn__spec_fail(c, spec->pools[p].loc,
                                 "pool name '%s' must end with a letter or digit: it becomes the "
                                 "'pool' label value (k8s-labels)",
                                 spec->pools[p].name);
    return SN_OK;
}

enum sn_err sn__spec_parse_groups(struct sn__spec_ctx *c, struct fy_node *node,
                                  struct sn_src_loc loc)
{
    struct sn_spec *spec = c->spec;
    if (!node || fy_node_is_alias(node) || fy_node_get_type(node) != FYNT_SEQUENCE)
        return sn__spec_fail(c, sn__spec_loc(node, loc),
                             "supernodes is %s: expected a sequence of groups "
                             "({template, count})",
                             sn__spec_node_kind(node));
    int n = fy_node_sequence_item_count(node);
    if (n <= 0 || n > SN__SPEC_MAX_GROUPS)
        return sn__spec_fail(c, loc, "%d supernode groups: expected 1 to %d", n < 0 ? 0 : n,
                             SN__SPEC_MAX_GROUPS);
    spec->groups = sn__arena_array(c->arena, (size_t)n, sizeof(*spec->groups));
    if (!spec->groups)
        return oom(c);
    void *iter = NULL;
    struct fy_node *item;
    while ((item = fy_node_sequence_iterate(node, &iter)) != NULL && spec->n_groups < (uint32_t)n) {
        enum sn_err rc = parse_group(c, item, loc, spec->n_groups, &spec->groups[spec->n_groups]);
        if (rc != SN_OK)
            return rc;
        spec->n_groups++;
    }
    enum sn_err rc = check_gpu_total(c);
    if (rc == SN_OK)
        rc = check_export_names(c);
    return rc;
}
