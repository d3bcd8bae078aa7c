/*
 * The cluster-spec parser: entry points, the top level, and the fabric,
 * pools, storage, layouts, expect and review sections. See sn/spec.h for
 * the contract and docs/spec.md for the format.
 *
 * libfyaml builds the document (with duplicate keys allowed, so that our own
 * check can name both places); its diagnostics are collected, never printed,
 * and the first error becomes "<file>:<line>:<col>: yaml syntax error: ...".
 * The spec, its strings and arrays all live in one capped arena, so a failed
 * parse frees everything at once and no input can exhaust memory. Sections
 * are read in dependency order (catalog, pools, templates, supernodes, ...)
 * whatever their order in the file.
 */
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/spec_int.h"

#define TEXT_TABLE(list)                                                                           \
    {                                                                                              \
        list(SN_X)                                                                                 \
    }
#define SN_X(name, text) text,
static const char *const pool_kinds[] = TEXT_TABLE(SN_POOL_KIND_LIST);
static const char *const storage_kinds[] = TEXT_TABLE(SN_STORAGE_KIND_LIST);
static const char *const appliance_kinds[] = TEXT_TABLE(SN_APPLIANCE_KIND_LIST);
#undef SN_X

static enum sn_err oom(struct sn__spec_ctx *c)
{
    return sn_error_set(c->err, SN_ERR_NOMEM, "%s: out of memory for the spec", c->file);
}

/* ---- fabric ------------------------------------------------------------------- */

enum { TIER_SWITCH, TIER_OVERSUB, TIER_CABLE, TIER_LENGTH, TIER_POWER, TIER_KEYS };
static const char *const tier_keys[TIER_KEYS] = {"switch", "oversubscription", "cable", "length",
                                                 "power"};

/* holder stands for the fabric's power domains (sn__spec_parse_fabric_power). */
static enum sn_err parse_tier(struct sn__spec_ctx *c, const struct sn__spec_map *fm, unsigned k,
                              const char *def_length, const struct sn_template *holder,
                              struct sn_fabric_tier_spec *tier)
{
    tier->switch_model = SN_NONE;
    tier->oversubscription = 1.0;
    tier->cabling.cable = SN_NONE;
    tier->cabling.length_class = sn__spec_lookup(c->spec, SN__REF_LENGTH, NULL, def_length);
    if (!fm->present[k])
        return SN_OK;
    struct sn__spec_map m;
    char what[32];
    snprintf(what, sizeof(what), "fabric.%s", fm->keys[k]);
    enum sn_err rc = sn__spec_bind(c, fm->value[k], fm->key_loc[k], what, tier_keys, TIER_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, TIER_SWITCH, SN__REF_SWITCH, NULL, true, &tier->switch_model);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, TIER_OVERSUB, SN_UNIT_RATIO, false, 1.0,
                                   &tier->oversubscription);
    if (rc == SN_OK && m.present[TIER_OVERSUB])
        tier->oversubscription_loc = sn__spec_value_loc(&m, TIER_OVERSUB);
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, TIER_CABLE, SN__REF_CABLE, NULL, true, &tier->cabling.cable);
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, TIER_LENGTH, SN__REF_LENGTH, NULL, false,
                              &tier->cabling.length_class);
    if (rc == SN_OK && tier->cabling.length_class == SN_NONE)
        tier->cabling.length_class = sn__spec_lookup(c->spec, SN__REF_LENGTH, NULL, def_length);
    if (rc == SN_OK)
        rc = sn__spec_get_list(c, &m, TIER_POWER, SN__REF_DOMAIN, holder, &tier->power);
    return rc;
}

enum {
    FAB_TIERS,
    FAB_RAIL,
    FAB_EFFICIENCY,
    FAB_NEED,
    FAB_SPINE,
    FAB_CORE,
    FAB_SPINES,
    FAB_POWER_DOMAINS,
    FAB_RACKS,
    FAB_KEYS
};
static const char *const fabric_keys[FAB_KEYS] = {
    "tiers", "rail_optimized", "efficiency", "per_gpu_need", "spine", "core", "spines",
    "power_domains", "racks"};

static enum sn_err parse_tiers(struct sn__spec_ctx *c, const struct sn__spec_map *m,
                               uint32_t *tiers)
{
    static const char *const names[] = {"auto", "2", "3"};
    static const uint32_t values[] = {0, 2, 3};
    int pick = 0;
    enum sn_err rc = sn__spec_get_enum(c, m, FAB_TIERS, names, 3, 0, &pick);
    *tiers = values[pick];
    return rc;
}

static enum sn_err parse_fabric(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc,
                                bool present)
{
    struct sn_fabric_spec *f = &c->spec->fabric;
    struct sn__spec_map m;
    memset(&m, 0, sizeof(m));
    m.keys = fabric_keys;
    m.n_keys = FAB_KEYS;
    f->present = present;
    enum sn_err rc = SN_OK;
    if (present)
        rc = sn__spec_bind(c, node, loc, "fabric", fabric_keys, FAB_KEYS, &m);
    if (rc == SN_OK)
        rc = parse_tiers(c, &m, &f->tiers);
    if (rc == SN_OK)
        rc = sn__spec_get_bool(c, &m, FAB_RAIL, true, &f->rail_optimized);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, FAB_EFFICIENCY, SN_UNIT_FRACTION, false, 0.75,
                                   &f->efficiency);
    if (rc == SN_OK && !(f->efficiency > 0 && f->efficiency <= 1))
        return sn__spec_fail_value(c, &m, FAB_EFFICIENCY, "a fraction above 0 and at most 1");
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, FAB_NEED, SN_UNIT_BANDWIDTH, false, 0,
                                   &f->per_gpu_need_bytes_per_s);
    /* The network racks' power domains come first: the tiers' `power`
     * lists name them. */
    struct sn_template holder = {.name = "fabric", .server_model = SN_NONE};
    if (rc == SN_OK)
        rc = sn__spec_parse_fabric_power(c, &m, FAB_POWER_DOMAINS, FAB_RACKS,
                                         m.present[FAB_SPINE] && m.value[FAB_SPINE], &holder,
                                         &f->racks);
    f->n_power_domains = holder.n_power_domains;
    f->power_domains = holder.power_domains;
    f->power_domains_stated = m.present[FAB_POWER_DOMAINS];
    if (rc == SN_OK)
        rc = parse_tier(c, &m, FAB_SPINE, "row", &holder, &f->spine);
    if (rc == SN_OK)
        rc = parse_tier(c, &m, FAB_CORE, "hall", &holder, &f->core);
    if (rc == SN_OK && f->tiers == 3 && f->core.switch_model == SN_NONE)
        return sn__spec_fail(c, sn__spec_value_loc(&m, FAB_TIERS),
                             "tiers 3 without a core tier: expected a fabric.core mapping "
                             "(or tiers 2 or auto)");
    /* The top tier has no uplinks: the core always, the spine when there
     * is no core or tiers is 2 (auto with a core is settled by the model
     * build, which refuses it the same way). */
    const struct sn_fabric_tier_spec *top = NULL;
    const char *top_name = "core";
    if (f->core.switch_model != SN_NONE) {
        top = &f->core;
    } else if (f->spine.switch_model != SN_NONE) {
        top = &f->spine;
        top_name = "spine";
    }
    if (rc == SN_OK && f->tiers == 2 && f->spine.switch_model != SN_NONE &&
        fabs(f->spine.oversubscription - 1.0) > 1e-9) {
        top = &f->spine;
        top_name = "spine";
    }
    if (rc == SN_OK && top && fabs(top->oversubscription - 1.0) > 1e-9)
        return sn__spec_fail(c, top->oversubscription_loc,
                             "fabric.%s.oversubscription %.3g:1: the %s is the top tier of this "
                             "fabric and has no uplinks to oversubscribe: expected 1:1 (or a "
                             "tier above it)",
                             top_name, top->oversubscription, top_name);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, FAB_SPINES, false, 0, 1, 1u << 20, &f->spines);
    if (rc == SN_OK && m.present[FAB_SPINES]) {
        f->spines_loc = sn__spec_value_loc(&m, FAB_SPINES);
        if (f->spine.switch_model == SN_NONE)
            return sn__spec_fail(c, f->spines_loc,
                                 "spines %u without a spine tier: expected a fabric.spine "
                                 "mapping",
                                 f->spines);
        if (f->tiers == 3)
            return sn__spec_fail(c, f->spines_loc,
                                 "spines applies to a 2-tier fabric (tiers 3 wires one spine "
                                 "per leaf uplink in each pod): expected tiers 2 or auto");
    }
    return rc;
}

/* ---- pools, storage, layouts ---------------------------------------------------- */

enum { POOL_KIND, POOL_TRAINING, POOL_KEYS };
static const char *const pool_keys[POOL_KEYS] = {"kind", "training"};

static enum sn_err parse_pool(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                              struct sn_pool_spec *p)
{
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "pool '%s'", e->name);
    p->name = e->name;
    p->loc = e->loc;
    int kind = 0;
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, pool_keys, POOL_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, POOL_KIND, pool_kinds, SN_POOL_KIND_COUNT, -1, &kind);
    p->kind = (enum sn_pool_kind)kind;
    if (rc == SN_OK)
        rc = sn__spec_get_bool(c, &m, POOL_TRAINING, false, &p->training);
    return rc;
}

enum { ST_KIND, ST_CAPACITY, ST_READ, ST_WRITE, ST_KEYS };
static const char *const storage_keys[ST_KEYS] = {"kind", "capacity", "read", "write"};

static enum sn_err parse_storage(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                                 struct sn_storage_spec *s)
{
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "storage '%s'", e->name);
    s->name = e->name;
    s->loc = e->loc;
    int kind = 0;
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, storage_keys, ST_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, ST_KIND, storage_kinds, SN_STORAGE_KIND_COUNT, -1, &kind);
    s->kind = (enum sn_storage_kind)kind;
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, ST_CAPACITY, SN_UNIT_BYTES, false, 0, &s->capacity_bytes);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, ST_READ, SN_UNIT_BANDWIDTH, false, 0,
                                   &s->read_bytes_per_s);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, ST_WRITE, SN_UNIT_BANDWIDTH, false, 0,
                                   &s->write_bytes_per_s);
    return rc;
}

enum { AP_KIND, AP_COUNT, AP_RU, AP_POWER, AP_RACKS, AP_KEYS };
static const char *const appliance_keys[AP_KEYS] = {"kind", "count", "rack_units", "power",
                                                    "racks"};

static enum sn_err parse_appliance(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                                   struct sn_appliance_spec *a)
{
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "appliance '%s'", e->name);
    a->name = e->name;
    a->loc = e->loc;
    int kind = 0;
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, appliance_keys, AP_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, AP_KIND, appliance_kinds, SN_APPLIANCE_KIND_COUNT, -1,
                               &kind);
    a->kind = (enum sn_appliance_kind)kind;
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, AP_COUNT, true, 0, 1, 1000000, &a->count);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, AP_RU, false, 0, 0, 100, &a->rack_units);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, AP_POWER, SN_UNIT_POWER, false, 0, &a->power_w);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, AP_RACKS, false, 0, 0, 100000, &a->racks);
    return rc;
}

static enum sn_err parse_appliances(struct sn__spec_ctx *c, struct fy_node *node,
                                    struct sn_src_loc loc)
{
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = sn__spec_entries(c, node, loc, "appliance", SN_SPEC_MAX_CATALOG, &e, &n);
    if (rc == SN_OK &&
        !(c->spec->appliances = sn__arena_array(c->arena, n, sizeof(*c->spec->appliances))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++)
        if ((rc = parse_appliance(c, &e[i], &c->spec->appliances[i])) == SN_OK)
            c->spec->n_appliances = i + 1;
    return rc;
}

enum { LY_GPUS, LY_TP, LY_PP, LY_DP, LY_CP, LY_EP, LY_KEYS };
static const char *const layout_keys[LY_KEYS] = {"gpus", "tp", "pp", "dp", "cp", "ep"};

static enum sn_err parse_layout(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                                struct sn_layout_spec *l)
{
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "layout '%s'", e->name);
    l->name = e->name;
    l->loc = e->loc;
    uint32_t *field[LY_KEYS] = {&l->gpus, &l->tp, &l->pp, &l->dp, &l->cp, &l->ep};
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, layout_keys, LY_KEYS, &m);
    for (unsigned k = 0; rc == SN_OK && k < LY_KEYS; k++)
        rc = sn__spec_get_count(c, &m, k, k == LY_GPUS, 1, 1, UINT32_MAX, field[k]);
    return rc;
}

/* NAME: {...} sections of the top level, each with at most
 * SN_SPEC_MAX_CATALOG entries. */
static enum sn_err parse_pools(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc)
{
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = sn__spec_entries(c, node, loc, "pool", SN_SPEC_MAX_CATALOG, &e, &n);
    if (rc == SN_OK && !(c->spec->pools = sn__arena_array(c->arena, n, sizeof(*c->spec->pools))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++)
        if ((rc = parse_pool(c, &e[i], &c->spec->pools[i])) == SN_OK)
            c->spec->n_pools = i + 1;
    return rc;
}

static enum sn_err parse_storages(struct sn__spec_ctx *c, struct fy_node *node,
                                  struct sn_src_loc loc)
{
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = sn__spec_entries(c, node, loc, "storage", SN_SPEC_MAX_CATALOG, &e, &n);
    if (rc == SN_OK &&
        !(c->spec->storage = sn__arena_array(c->arena, n, sizeof(*c->spec->storage))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++)
        if ((rc = parse_storage(c, &e[i], &c->spec->storage[i])) == SN_OK)
            c->spec->n_storage = i + 1;
    return rc;
}

static enum sn_err parse_layouts(struct sn__spec_ctx *c, struct fy_node *node,
                                 struct sn_src_loc loc)
{
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = sn__spec_entries(c, node, loc, "layout", SN_SPEC_MAX_CATALOG, &e, &n);
    if (rc == SN_OK &&
        !(c->spec->layouts = sn__arena_array(c->arena, n, sizeof(*c->spec->layouts))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++)
        if ((rc = parse_layout(c, &e[i], &c->spec->layouts[i])) == SN_OK)
            c->spec->n_layouts = i + 1;
    return rc;
}

/* ---- expect and review ---------------------------------------------------------- */

enum {
    EX_GPUS,
    EX_SERVERS,
    EX_SUPERNODES,
    EX_LEAVES,
    EX_SPINES,
    EX_CORES,
    EX_RACKS,
    EX_NODE_LEAF,
    EX_LEAF_SPINE,
    EX_SPINE_CORE,
    EX_KEYS
};
static const char *const expect_keys[EX_KEYS] = {
    "gpus",
    "servers",
    "supernodes",
    "leaves",
    "spines",
    "cores",
    "racks",
    "node_leaf_cables",
    "leaf_spine_cables",
    "spine_core_cables",
};

static enum sn_err parse_expect(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc)
{
    struct sn_expect_spec *x = &c->spec->expect;
    uint64_t *field[EX_KEYS] = {&x->gpus,
                                &x->servers,
                                &x->supernodes,
                                &x->leaves,
                                &x->spines,
                                &x->cores,
                                &x->racks,
                                &x->node_leaf_cables,
                                &x->leaf_spine_cables,
                                &x->spine_core_cables};
    struct sn__spec_map m;
    x->loc = loc;
    enum sn_err rc = sn__spec_bind(c, node, loc, "expect", expect_keys, EX_KEYS, &m);
    for (unsigned k = 0; rc == SN_OK && k < EX_KEYS; k++) {
        uint32_t v = 0;
        rc = sn__spec_get_count(c, &m, k, false, 0, 0, UINT32_MAX, &v);
        *field[k] = v;
    }
    return rc;
}

enum {
    RV_POWER_MARGIN,
    RV_PEAK,
    RV_SURVIVOR,
    RV_AIR_LIMIT,
    RV_COOLING_MARGIN,
    RV_HEADROOM,
    RV_MEMORY_WALL,
    RV_PEAK_DURATION,
    RV_KEYS
};
static const char *const review_keys[RV_KEYS] = {
    "power_margin",   "peak_factor",        "survivor_fraction", "air_cooling_limit",
    "cooling_margin", "bandwidth_headroom", "memory_wall",       "peak_duration",
};

/* A plain number of key k, kept only when strictly above (or, with
 * inclusive, at least) low. */
static enum sn_err review_number(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                 double low, bool inclusive, double *inout)
{
    enum sn_err rc = sn__spec_get_number(c, m, k, *inout, inout);
    if (rc != SN_OK || (inclusive ? *inout >= low : *inout > low))
        return rc;
    char expected[64];
    snprintf(expected, sizeof(expected), "a number %s %g", inclusive ? "of at least" : "above",
             low);
    return sn__spec_fail_value(c, m, k, expected);
}

static enum sn_err parse_review(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc)
{
    struct sn_review_config *r = &c->spec->review;
    struct sn__spec_map m;
    enum sn_err rc = sn__spec_bind(c, node, loc, "review", review_keys, RV_KEYS, &m);
    if (rc == SN_OK)
        rc = review_number(c, &m, RV_POWER_MARGIN, 0, false, &r->power_margin);
    if (rc == SN_OK)
        rc = review_number(c, &m, RV_PEAK, 1, true, &r->peak_factor);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, RV_SURVIVOR, SN_UNIT_FRACTION, false,
                                   r->survivor_fraction, &r->survivor_fraction);
    if (rc == SN_OK && r->survivor_fraction > 1)
        return sn__spec_fail_value(c, &m, RV_SURVIVOR, "a fraction from 0 to 1");
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, RV_AIR_LIMIT, SN_UNIT_POWER, false,
                                   r->air_cooling_limit_w, &r->air_cooling_limit_w);
    if (rc == SN_OK)
        rc = review_number(c, &m, RV_COOLING_MARGIN, 1, true, &r->cooling_margin);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, RV_HEADROOM, SN_UNIT_FRACTION, false,
                                   r->bandwidth_headroom, &r->bandwidth_headroom);
    if (rc == SN_OK && r->bandwidth_headroom > 1)
        return sn__spec_fail_value(c, &m, RV_HEADROOM, "a fraction from 0 to 1");
    if (rc == SN_OK)
        rc = review_number(c, &m, RV_MEMORY_WALL, 0, false, &r->memory_wall_bytes_per_flop);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, RV_PEAK_DURATION, SN_UNIT_TIME, false, 0,
                                   &r->peak_duration_s);
    if (rc == SN_OK && r->peak_duration_s < 0)
        return sn__spec_fail_value(c, &m, RV_PEAK_DURATION, "a duration of zero or more");
    return rc;
}

/* ---- the top level ---------------------------------------------------------------- */

enum {
    TOP_VERSION,
    TOP_NAME,
    TOP_DESCRIPTION,
    TOP_CATALOG,
    TOP_TEMPLATES,
    TOP_SUPERNODES,
    TOP_FABRIC,
    TOP_POOLS,
    TOP_STORAGE,
    TOP_LAYOUTS,
    TOP_EXPECT,
    TOP_REVIEW,
    TOP_INVENTORY,
    TOP_FACILITY,
    TOP_APPLIANCES,
    TOP_SU,
    TOP_KEYS
};
static const char *const top_keys[TOP_KEYS] = {
    "version", "name",  "description", "catalog", "templates", "supernodes",
    "fabric",  "pools", "storage",     "layouts", "expect",    "review",
    "inventory", "facility", "appliances", "su",
};

enum { FAC_PUE, FAC_KEYS };
static const char *const facility_keys[FAC_KEYS] = {"pue"};

/* facility: pue, a number of at least 1 (1.0: no overhead at all). */
static enum sn_err parse_facility(struct sn__spec_ctx *c, struct fy_node *node,
                                  struct sn_src_loc loc)
{
    struct sn_facility_spec *x = &c->spec->facility;
    struct sn__spec_map m;
    x->loc = loc;
    enum sn_err rc = sn__spec_bind(c, node, loc, "facility", facility_keys, FAC_KEYS, &m);
    if (rc == SN_OK && m.present[FAC_PUE]) {
        rc = sn__spec_get_number(c, &m, FAC_PUE, 0, &x->pue);
        if (rc == SN_OK && !(x->pue >= 1 && x->pue <= 5))
            return sn__spec_fail_value(c, &m, FAC_PUE,
                                       "a power usage effectiveness from 1 to 5 (e.g. 1.2)");
    }
    return rc;
}

enum { SU_SUPERNODES, SU_RACK_POWER, SU_KEYS };
static const char *const su_keys[SU_KEYS] = {"supernodes", "rack_power"};

/* su: supernodes per scalable unit and the power budget of each rack;
 * both required. */
static enum sn_err parse_su(struct sn__spec_ctx *c, struct fy_node *node, struct sn_src_loc loc)
{
    struct sn_su_spec *x = &c->spec->su;
    struct sn__spec_map m;
    x->loc = loc;
    enum sn_err rc = sn__spec_bind(c, node, loc, "su", su_keys, SU_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SU_SUPERNODES, true, 0, 1, 100000, &x->supernodes);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, SU_RACK_POWER, SN_UNIT_POWER, true, 0,
                                   &x->rack_power_w);
    if (rc == SN_OK && !(x->rack_power_w > 0))
        return sn__spec_fail_value(c, &m, SU_RACK_POWER, "a power above 0 (e.g. 132 kW)");
    x->rack_power_loc = sn__spec_value_loc(&m, SU_RACK_POWER);
    return rc;
}

enum { INV_HOSTS, INV_IPS, INV_FILE, INV_CLIQUES, INV_KEYS };
static const char *const inventory_keys[INV_KEYS] = {"hosts", "ips", "file", "cliques"};

/* "CLUSTER_UUID/CLIQUE_ID" (nvidia-smi -q: ClusterUUID 8-4-4-4-12 hex
 * digits, CliqueId a decimal 32-bit number) into out, normalised (UUID in
 * lower case, the id without leading zeros); false when text is not one. */
static bool clique_text(const char *text, char *out, size_t cap)
{
    static const unsigned group[5] = {8, 4, 4, 4, 12};
    const char *p = text;
    char uuid[37];
    size_t at = 0;
    for (unsigned g = 0; g < 5; g++) {
        for (unsigned k = 0; k < group[g]; k++, p++) {
            char ch = *p;
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F')))
                return false;
            uuid[at++] = (char)(ch >= 'A' && ch <= 'F' ? ch - 'A' + 'a' : ch);
        }
        if (*p != (g < 4 ? '-' : '/'))
            return false;
        if (g < 4)
            uuid[at++] = '-';
        p++;
    }
    uuid[at] = '\0';
    unsigned long long id = 0;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((id = id * 10 + (unsigned)(*p - '0')) > UINT32_MAX)
            return false;
    if (*p)
        return false;
    return (size_t)snprintf(out, cap, "%s/%llu", uuid, id) < cap;
}

/* inventory.cliques: NAME: "CLUSTER_UUID/CLIQUE_ID" entries. */
static enum sn_err parse_cliques(struct sn__spec_ctx *c, struct fy_node *node,
                                 struct sn_src_loc loc)
{
    struct sn_inventory_spec *x = &c->spec->inventory;
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = sn__spec_entries(c, node, loc, "inventory clique", SN__SPEC_MAX_LIST, &e, &n);
    if (rc == SN_OK && n && !(x->cliques = sn__arena_array(c->arena, n, sizeof(*x->cliques))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++) {
        struct sn_clique_decl *d = &x->cliques[i];
        char text[SN__SPEC_VALUE_MAX + 1], norm[64];
        d->name = e[i].name;
        d->name_loc = e[i].loc;
        d->loc = sn__spec_loc(e[i].value, e[i].loc);
        rc = sn__spec_scalar_text(c, e[i].value, d->loc, "an inventory clique", text, sizeof(text));
        if (rc == SN_OK && !clique_text(text, norm, sizeof(norm)))
            rc = sn__spec_fail(c, d->loc,
                               "inventory clique of '%s' is '%s' (expected CLUSTER_UUID/CLIQUE_ID "
                               "as nvidia-smi -q's Fabric section prints them, e.g. "
                               "'a1b2c3d4-0000-4000-8000-000000000001/1')",
                               d->name, text);
        if (rc == SN_OK && !(d->clique = sn__arena_strndup(c->arena, norm, strlen(norm))))
            rc = oom(c);
        if (rc == SN_OK)
            x->n_cliques = i + 1;
    }
    return rc;
}

/* The inventory section: strings only here; the patterns are expanded
 * against the model and the file is read by the program (sn/inventory.h). */
static enum sn_err parse_inventory(struct sn__spec_ctx *c, struct fy_node *node,
                                   struct sn_src_loc loc)
{
    struct sn_inventory_spec *x = &c->spec->inventory;
    const char **field[INV_CLIQUES] = {&x->hosts, &x->ips, &x->file};
    struct sn_src_loc *at[INV_CLIQUES] = {&x->hosts_loc, &x->ips_loc, &x->file_loc};
    struct sn__spec_map m;
    x->loc = loc;
    enum sn_err rc = sn__spec_bind(c, node, loc, "inventory", inventory_keys, INV_KEYS, &m);
    for (unsigned k = 0; rc == SN_OK && k < INV_CLIQUES; k++) {
        *at[k] = sn__spec_value_loc(&m, k);
        if (m.present[k])
            rc = sn__spec_get_string(c, &m, k, NULL, field[k]);
    }
    if (rc == SN_OK && m.present[INV_CLIQUES])
        rc = parse_cliques(c, m.value[INV_CLIQUES], m.key_loc[INV_CLIQUES]);
    return rc;
}

static enum sn_err parse_header(struct sn__spec_ctx *c, const struct sn__spec_map *m)
{
    struct sn_spec *spec = c->spec;
    enum sn_err rc = sn__spec_get_count(c, m, TOP_VERSION, true, 0, 0, UINT32_MAX, &spec->version);
    if (rc == SN_OK && spec->version != 1)
        return sn__spec_fail_value(c, m, TOP_VERSION, "version 1, the only version so far");
    if (rc == SN_OK)
        rc = sn__spec_get_string(c, m, TOP_NAME, NULL, &spec->name);
    if (rc == SN_OK)
        rc = sn__spec_get_string(c, m, TOP_DESCRIPTION, "", &spec->description);
    for (unsigned k = TOP_CATALOG; rc == SN_OK && k <= TOP_SUPERNODES; k++)
        rc = sn__spec_require(c, m, k);
    return rc;
}

static enum sn_err parse_root(struct sn__spec_ctx *c, struct fy_node *root)
{
    struct sn__spec_map m;
    struct sn_src_loc start = sn__spec_loc(root, (struct sn_src_loc){1, 1});
    enum sn_err rc = sn__spec_bind(c, root, start, "the spec", top_keys, TOP_KEYS, &m);
    if (rc == SN_OK)
        rc = parse_header(c, &m);
    if (rc == SN_OK)
        rc = sn__spec_parse_catalog(c, m.value[TOP_CATALOG], m.key_loc[TOP_CATALOG]);
    if (rc == SN_OK && m.present[TOP_POOLS])
        rc = parse_pools(c, m.value[TOP_POOLS], m.key_loc[TOP_POOLS]);
    if (rc == SN_OK)
        rc = sn__spec_parse_templates(c, m.value[TOP_TEMPLATES], m.key_loc[TOP_TEMPLATES]);
    if (rc == SN_OK)
        rc = sn__spec_parse_groups(c, m.value[TOP_SUPERNODES], m.key_loc[TOP_SUPERNODES]);
    if (rc == SN_OK)
        rc = parse_fabric(c, m.value[TOP_FABRIC], m.key_loc[TOP_FABRIC], m.present[TOP_FABRIC]);
    if (rc == SN_OK && m.present[TOP_STORAGE])
        rc = parse_storages(c, m.value[TOP_STORAGE], m.key_loc[TOP_STORAGE]);
    if (rc == SN_OK && m.present[TOP_LAYOUTS])
        rc = parse_layouts(c, m.value[TOP_LAYOUTS], m.key_loc[TOP_LAYOUTS]);
    if (rc == SN_OK && m.present[TOP_EXPECT])
        rc = parse_expect(c, m.value[TOP_EXPECT], m.key_loc[TOP_EXPECT]);
    if (rc == SN_OK && m.present[TOP_REVIEW])
        rc = parse_review(c, m.value[TOP_REVIEW], m.key_loc[TOP_REVIEW]);
    if (rc == SN_OK && m.present[TOP_INVENTORY])
        rc = parse_inventory(c, m.value[TOP_INVENTORY], m.key_loc[TOP_INVENTORY]);
    if (rc == SN_OK && m.present[TOP_FACILITY])
        rc = parse_facility(c, m.value[TOP_FACILITY], m.key_loc[TOP_FACILITY]);
    if (rc == SN_OK && m.present[TOP_APPLIANCES])
        rc = parse_appliances(c, m.value[TOP_APPLIANCES], m.key_loc[TOP_APPLIANCES]);
    if (rc == SN_OK && m.present[TOP_SU])
        rc = parse_su(c, m.value[TOP_SU], m.key_loc[TOP_SU]);
    return rc;
}

/* ---- YAML and entry points -------------------------------------------------------- */

static void discard_diag(struct fy_diag *diag, void *user, const char *buf, size_t len)
{
    (void)diag;
    (void)user;
    (void)buf;
    (void)len;
}

/* The first error libfyaml collected, as ours; a generic one if none. */
static enum sn_err yaml_error(struct sn__spec_ctx *c, struct fy_diag *diag)
{
    void *iter = NULL;
    struct fy_diag_error *e;
    while (diag && (e = fy_diag_errors_iterate(diag, &iter)) != NULL) {
        if (e->type < FYET_ERROR)
            continue;
        unsigned line = e->line > 0 ? (unsigned)e->line : 1;
        unsigned col = e->column > 0 ? (unsigned)e->column : 1;
        return sn_error_set_at(c->err, SN_ERR_SYNTAX, line, col, "%s:%u:%u: yaml syntax error: %s",
                               c->file, line, col, e->msg ? e->msg : "malformed document");
    }
    return SN_ERR_OK;
}

/* Decodes one UTF-8 sequence at p (n bytes left) into *cp; returns its
 * length, or 0 when malformed, overlong, a surrogate or past U+10FFFF. */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
    static const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t len = p[0] < 0x80             ? 1
                 : (p[0] & 0xe0) == 0xc0 ? 2
                 : (p[0] & 0xf0) == 0xe0 ? 3
                 : (p[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    if (len == 0 || len > n)
        return 0;
    uint32_t v = len == 1 ? p[0] : p[0] & (0x7fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3fu);
    }
    if (v < min_cp[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}

/* YAML 1.2 c-printable (section 5.1), minus nothing. */
static bool printable(uint32_t cp)
{
    return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0x7e) || cp == 0x85 ||
           (cp >= 0xa0 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) ||
           (cp >= 0x10000 && cp <= 0x10ffff);
}

/* A YAML stream is printable UTF-8 text (YAML 1.2, 5.1 and 5.2); anything
 * else is refused before libfyaml sees it: libfyaml 0.7.12 loops forever
 * on some such input, e.g. a NUL or a stray UTF-8 continuation byte in a
 * '%' directive line (both found by fuzz_spec). */
static enum sn_err check_text(struct sn__spec_ctx *c, const char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    unsigned line = 1, col = 1;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (n == 0 || !printable(cp))
            return sn_error_set_at(c->err, SN_ERR_SYNTAX, line, col,
                                   "%s:%u:%u: yaml syntax error: %s 0x%02x: expected printable "
                                   "UTF-8 text",
                                   c->file, line, col,
                                   n == 0 ? "malformed UTF-8 at byte" : "control character",
                                   n == 0 ? p[i] : (unsigned)cp);
        if (cp == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
        i += n;
    }
    return SN_OK;
}

/* Builds the document; on failure sets the error. */
static enum sn_err build_document(struct sn__spec_ctx *c, const char *buf, size_t len,
                                  struct fy_document **out)
{
    struct fy_diag_cfg dcfg;
    fy_diag_cfg_default(&dcfg);
    dcfg.fp = NULL;
    dcfg.output_fn = discard_diag;
    dcfg.colorize = false;
    struct fy_diag *diag = fy_diag_create(&dcfg);
    if (!diag)
        return oom(c);
    fy_diag_set_collect_errors(diag, true);
    struct fy_parse_cfg cfg = {
        .flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_ALLOW_DUPLICATE_KEYS, .diag = diag};
    struct fy_document *doc = len ? fy_document_build_from_string(&cfg, buf, len) : NULL;
    enum sn_err rc = SN_OK;
    if (!doc || fy_diag_got_error(diag)) {
        rc = yaml_error(c, diag);
        fy_document_destroy(doc);
        doc = NULL;
    }
    fy_diag_destroy(diag);
    if (rc == SN_OK && (!doc || !fy_document_root(doc))) {
        fy_document_destroy(doc);
        return sn__spec_fail(c, (struct sn_src_loc){1, 1},
                             "empty spec: expected a mapping with version, name, catalog, "
                             "templates and supernodes");
    }
    *out = doc;
    return rc;
}

enum sn_err sn_spec_parse_buffer(const char *name, const char *buf, size_t len,
                                 struct sn_spec **out, struct sn_error *err)
{
    *out = NULL;
    if (!name)
        name = "<spec>";
    if (len > SN_SPEC_MAX_BYTES)
        return sn_error_set(err, SN_ERR_INVALID, "%s: %zu bytes: expected a spec of at most %u",
                            name, len, (unsigned)SN_SPEC_MAX_BYTES);
    struct sn__arena *arena = sn__arena_create(SN__SPEC_ARENA_CAP);
    struct sn_spec *spec = arena ? sn__arena_alloc(arena, sizeof(*spec)) : NULL;
    const char *file = spec ? sn__arena_strndup(arena, name, strlen(name)) : NULL;
    if (!file) {
        sn__arena_destroy(arena);
        return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory for the spec", name);
    }
    spec->arena = arena;
    spec->file = file;
    sn_review_config_defaults(&spec->review);
    struct sn__spec_ctx c = {
        .file = file, .buf = buf, .len = len, .arena = arena, .spec = spec, .err = err};
    struct fy_document *doc = NULL;
    enum sn_err rc = check_text(&c, buf, len);
    if (rc == SN_OK)
        rc = build_document(&c, buf, len, &doc);
    if (rc == SN_OK)
        rc = parse_root(&c, fy_document_root(doc));
    fy_document_destroy(doc);
    if (rc != SN_OK) {
        sn_spec_free(spec);
        return rc;
    }
    *out = spec;
    return SN_OK;
}

enum sn_err sn_spec_parse_file(const char *path, struct sn_spec **out, struct sn_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_error_set(err, SN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = (size_t)SN_SPEC_MAX_BYTES + 1;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory to read the spec", path);
    }
    size_t len = fread(buf, 1, cap, f);
    bool failed = ferror(f) != 0;
    fclose(f);
    enum sn_err rc;
    if (failed)
        rc = sn_error_set(err, SN_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    else if (len > SN_SPEC_MAX_BYTES)
        rc = sn_error_set(err, SN_ERR_INVALID, "%s: more than %u bytes: expected a smaller spec",
                          path, (unsigned)SN_SPEC_MAX_BYTES);
    else
        rc = sn_spec_parse_buffer(path, buf, len, out, err);
    free(buf);
    return rc;
}

void sn_spec_free(struct sn_spec *spec)
{
    if (spec)
        sn__arena_destroy(spec->arena);
}
