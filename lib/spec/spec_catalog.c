/*
 * The catalog section of a spec: GPU, server, switch and cable models and
 * the length classes. See docs/spec.md for every key.
 *
 * Order matters: GPUs come before servers (a server names its GPU), and the
 * built-in length classes are installed before the user's, which override
 * them by name or add to them. Every quantity is stored in the canonical
 * unit of sn/spec.h; required quantities that size or power something must
 * be above zero.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "spec/spec_int.h"

#define CATALOG_MAX SN_SPEC_MAX_CATALOG

static const char *const switch_kinds[] = {
#define SN_X(name, text) text,
    SN_SWITCH_KIND_LIST(SN_X)
#undef SN_X
};
static const char *const cable_media[] = {
#define SN_X(name, text) text,
    SN_CABLE_MEDIUM_LIST(SN_X)
#undef SN_X
};

/* Rejects a zero value of a quantity that must be positive. */
static enum sn_err positive(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                            double v, enum sn_unit_kind kind)
{
    if (v > 0 || !m->present[k])
        return SN_OK;
    char expected[64];
    snprintf(expected, sizeof(expected), "a %s above zero", sn_unit_kind_name(kind));
    return sn__spec_fail_value(c, m, k, expected);
}

/* A required quantity that must be above zero. */
static enum sn_err need_positive(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                                 enum sn_unit_kind kind, double *out)
{
    enum sn_err rc = sn__spec_get_quantity(c, m, k, kind, true, 0, out);
    return rc != SN_OK ? rc : positive(c, m, k, *out, kind);
}

static enum sn_err oom(struct sn__spec_ctx *c)
{
    return sn_error_set(c->err, SN_ERR_NOMEM, "%s: out of memory for the spec", c->file);
}

/* ---- gpus ----------------------------------------------------------------- */

enum { GPU_DENSE, GPU_HBM, GPU_HBM_BW, GPU_TDP, GPU_LINKS, GPU_LINK_BW, GPU_KEYS };
static const char *const gpu_keys[GPU_KEYS] = {
    "dense_bf16", "hbm", "hbm_bandwidth", "tdp", "scaleup_links", "scaleup_link_bandwidth",
};

static enum sn_err parse_gpu(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                             struct sn_gpu_model *g)
{
    g->name = e->name;
    g->loc = e->loc;
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "gpu model '%s'", e->name);
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, gpu_keys, GPU_KEYS, &m);
    if (rc == SN_OK)
        rc = need_positive(c, &m, GPU_DENSE, SN_UNIT_FLOPS, &g->dense_bf16_flops);
    if (rc == SN_OK)
        rc = need_positive(c, &m, GPU_HBM, SN_UNIT_BYTES, &g->hbm_bytes);
    if (rc == SN_OK)
        rc = need_positive(c, &m, GPU_HBM_BW, SN_UNIT_BANDWIDTH, &g->hbm_bytes_per_s);
    if (rc == SN_OK)
        rc = need_positive(c, &m, GPU_TDP, SN_UNIT_POWER, &g->tdp_w);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, GPU_LINKS, false, 0, 0, UINT32_MAX, &g->scaleup_links);
    if (rc != SN_OK)
        return rc;
    if (g->scaleup_links > 0)
        return need_positive(c, &m, GPU_LINK_BW, SN_UNIT_BANDWIDTH_DIRECTED,
                             &g->scaleup_link_bytes_per_s);
    return sn__spec_get_quantity(c, &m, GPU_LINK_BW, SN_UNIT_BANDWIDTH_DIRECTED, false, 0,
                                 &g->scaleup_link_bytes_per_s);
}

/* ---- servers -------------------------------------------------------------- */

enum {
    SRV_GPU,
    SRV_GPUS,
    SRV_CPUS,
    SRV_CORES,
    SRV_MEMORY,
    SRV_NICS,
    SRV_NIC_SPEED,
    SRV_MGMT,
    SRV_NVME,
    SRV_NVME_READ,
    SRV_NVME_WRITE,
    SRV_BASE_POWER,
    SRV_FEEDS,
    SRV_RU,
    SRV_PSU,
    SRV_NIC_LANES,
    SRV_KEYS
};
static const char *const server_keys[SRV_KEYS] = {
    "gpu",        "gpus", "cpus",      "cpu_cores",  "memory",     "nics",  "nic_speed",
    "mgmt_ports", "nvme", "nvme_read", "nvme_write", "base_power", "feeds", "rack_units",
    "psu",        "nic_lanes",
};

/* ---- power supplies (servers here, rack shelves in spec_template.c) ------ */

enum { PSU_COUNT, PSU_RATING, PSU_REDUNDANCY, PSU_PULSE, PSU_PULSE_TIME, PSU_KEYS };
static const char *const psu_keys[PSU_KEYS] = {"count", "rating", "redundancy", "pulse",
                                               "pulse_time"};
#define SN_X(name, text) text,
static const char *const psu_redundancies[] = {SN_PSU_REDUNDANCY_LIST(SN_X)};
#undef SN_X

enum sn_err sn__spec_parse_psu(struct sn__spec_ctx *c, const struct sn__spec_map *pm, unsigned k,
                               const char *owner, struct sn_psu_spec *p)
{
    memset(p, 0, sizeof(*p));
    if (!pm->present[k])
        return SN_OK;
    struct sn__spec_map m;
    char what[160];
    snprintf(what, sizeof(what), "psu of %s", owner);
    p->loc = pm->key_loc[k];
    int redundancy = 0;
    enum sn_err rc = sn__spec_bind(c, pm->value[k], pm->key_loc[k], what, psu_keys, PSU_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, PSU_COUNT, true, 0, 1, 1024, &p->count);
    if (rc == SN_OK)
        rc = need_positive(c, &m, PSU_RATING, SN_UNIT_POWER, &p->rating_w);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, PSU_REDUNDANCY, psu_redundancies, SN_PSU_REDUNDANCY_COUNT,
                               SN_PSU_N_PLUS_1, &redundancy);
    p->redundancy = (enum sn_psu_redundancy)redundancy;
    if (rc == SN_OK && p->redundancy == SN_PSU_N_PLUS_1 && p->count < 2)
        return sn__spec_fail(c, sn__spec_value_loc(&m, PSU_COUNT),
                             "psu count %u with redundancy n+1: expected at least 2 PSUs (or "
                             "redundancy: none)",
                             p->count);
    if (rc == SN_OK && p->redundancy == SN_PSU_N_PLUS_N && p->count % 2 != 0)
        return sn__spec_fail(c, sn__spec_value_loc(&m, PSU_COUNT),
                             "psu count %u with redundancy n+n: expected an even count (two "
                             "sides of count / 2)",
                             p->count);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, PSU_PULSE, SN_UNIT_FRACTION, false, 0, &p->pulse);
    if (rc == SN_OK && m.present[PSU_PULSE] && !(p->pulse >= 1 && p->pulse <= 10))
        return sn__spec_fail_value(c, &m, PSU_PULSE,
                                   "a multiple of the rating from 100% to 1000% (160% for a "
                                   "shelf rated 1.6 x for a few ms)");
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, PSU_PULSE_TIME, SN_UNIT_TIME, m.present[PSU_PULSE], 0,
                                   &p->pulse_s);
    if (rc == SN_OK && m.present[PSU_PULSE] && !(p->pulse_s > 0))
        return sn__spec_fail_value(c, &m, PSU_PULSE_TIME, "a duration above zero");
    if (rc == SN_OK && m.present[PSU_PULSE_TIME] && !m.present[PSU_PULSE])
        return sn__spec_fail(c, m.key_loc[PSU_PULSE_TIME],
                             "pulse_time without pulse: expected both (pulse: 160%%, pulse_time: "
                             "10 ms) or neither");
    return rc;
}

/* ---- rack feeds ------------------------------------------------------------ */

enum { FD_COUNT, FD_VOLTAGE, FD_PHASES, FD_CURRENT, FD_PF, FD_CONTINUOUS, FD_REDUNDANCY, FD_KEYS };
static const char *const feed_keys[FD_KEYS] = {"count",        "voltage",    "phases",    "current",
                                               "power_factor", "continuous", "redundancy"};

enum sn_err sn__spec_parse_feed(struct sn__spec_ctx *c, const struct sn__spec_map *pm, unsigned k,
                                const char *owner, struct sn_feed_spec *f)
{
    memset(f, 0, sizeof(*f));
    if (!pm->present[k])
        return SN_OK;
    struct sn__spec_map m;
    char what[160];
    snprintf(what, sizeof(what), "feed of %s", owner);
    f->loc = pm->key_loc[k];
    int redundancy = 0;
    enum sn_err rc = sn__spec_bind(c, pm->value[k], pm->key_loc[k], what, feed_keys, FD_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, FD_COUNT, false, 2, 1, 64, &f->count);
    if (rc == SN_OK)
        rc = need_positive(c, &m, FD_VOLTAGE, SN_UNIT_VOLTAGE, &f->voltage_v);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, FD_PHASES, false, 1, 1, 3, &f->phases);
    if (rc == SN_OK && f->phases == 2)
        return sn__spec_fail_value(c, &m, FD_PHASES, "1 or 3");
    if (rc == SN_OK)
        rc = need_positive(c, &m, FD_CURRENT, SN_UNIT_CURRENT, &f->current_a);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, FD_PF, SN_UNIT_FRACTION, false, 1.0, &f->power_factor);
    if (rc == SN_OK && !(f->power_factor > 0 && f->power_factor <= 1))
        return sn__spec_fail_value(c, &m, FD_PF, "a fraction above 0 and at most 1");
    /* NFPA 70 (NEC) 210.20(A): a breaker is rated for 125 % of the
     * continuous load, so a continuous load may use 80 % of it. */
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, FD_CONTINUOUS, SN_UNIT_FRACTION, false, 0.8,
                                   &f->continuous);
    if (rc == SN_OK && !(f->continuous > 0 && f->continuous <= 1))
        return sn__spec_fail_value(c, &m, FD_CONTINUOUS, "a fraction above 0 and at most 1");
    int def = f->count >= 2 && f->count % 2 == 0 ? SN_PSU_N_PLUS_N : SN_PSU_NONE;
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, FD_REDUNDANCY, psu_redundancies, SN_PSU_REDUNDANCY_COUNT,
                               def, &redundancy);
    f->redundancy = (enum sn_psu_redundancy)redundancy;
    if (rc == SN_OK && f->redundancy == SN_PSU_N_PLUS_N && f->count % 2 != 0)
        return sn__spec_fail(c, sn__spec_value_loc(&m, FD_REDUNDANCY),
                             "feed redundancy n+n with %u feeds: expected an even count (an A "
                             "and a B side)",
                             f->count);
    if (rc == SN_OK && f->redundancy == SN_PSU_N_PLUS_1 && f->count < 2)
        return sn__spec_fail(c, sn__spec_value_loc(&m, FD_REDUNDANCY),
                             "feed redundancy n+1 with 1 feed: expected at least 2 feeds");
    return rc;
}

static enum sn_err parse_server_io(struct sn__spec_ctx *c, const struct sn__spec_map *m,
                                   struct sn_server_model *s)
{
    enum sn_err rc = sn__spec_get_count(c, m, SRV_NICS, false, 0, 0, UINT32_MAX, &s->nics);
    if (rc == SN_OK && s->nics > 0)
        rc = need_positive(c, m, SRV_NIC_SPEED, SN_UNIT_BANDWIDTH, &s->nic_bytes_per_s);
    else if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, m, SRV_NIC_SPEED, SN_UNIT_BANDWIDTH, false, 0,
                                   &s->nic_bytes_per_s);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, m, SRV_NIC_LANES, false, 0, 1, 64, &s->nic_lanes);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, m, SRV_MGMT, false, 1, 0, UINT32_MAX, &s->mgmt_ports);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, m, SRV_NVME, SN_UNIT_BYTES, false, 0, &s->nvme_bytes);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, m, SRV_NVME_READ, SN_UNIT_BANDWIDTH, false, 0,
                                   &s->nvme_read_bytes_per_s);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, m, SRV_NVME_WRITE, SN_UNIT_BANDWIDTH, false, 0,
                                   &s->nvme_write_bytes_per_s);
    return rc;
}

static enum sn_err parse_server(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                                struct sn_server_model *s)
{
    s->name = e->name;
    s->loc = e->loc;
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "server model '%s'", e->name);
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, server_keys, SRV_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_ref(c, &m, SRV_GPU, SN__REF_GPU, NULL, true, &s->gpu_model);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SRV_GPUS, true, 0, 1, UINT32_MAX, &s->gpus);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SRV_CPUS, false, 2, 0, UINT32_MAX, &s->cpus);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SRV_CORES, false, 0, 0, UINT32_MAX, &s->cpu_cores);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, SRV_MEMORY, SN_UNIT_BYTES, false, 0, &s->memory_bytes);
    if (rc == SN_OK)
        rc = parse_server_io(c, &m, s);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, SRV_BASE_POWER, SN_UNIT_POWER, true, 0, &s->base_power_w);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SRV_FEEDS, false, 1, 1, 2, &s->feeds);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SRV_RU, false, 0, 0, UINT32_MAX, &s->rack_units);
    if (rc == SN_OK)
        rc = sn__spec_parse_psu(c, &m, SRV_PSU, what, &s->psu);
    return rc;
}

/* ---- switches and cables -------------------------------------------------- */

enum { SW_KIND, SW_PORTS, SW_SPEED, SW_POWER, SW_RU, SW_LANES, SW_KEYS };
static const char *const switch_keys[SW_KEYS] = {"kind",       "ports",     "port_speed", "power",
                                                 "rack_units", "port_lanes"};

static enum sn_err parse_switch(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                                struct sn_switch_model *s)
{
    s->name = e->name;
    s->loc = e->loc;
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "switch model '%s'", e->name);
    int kind = 0;
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, switch_keys, SW_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, SW_KIND, switch_kinds, SN_SWITCH_KIND_COUNT, -1, &kind);
    s->kind = (enum sn_switch_kind)kind;
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SW_PORTS, true, 0, 1, 65535, &s->ports);
    if (rc == SN_OK)
        rc = need_positive(c, &m, SW_SPEED,
                           s->kind == SN_SWITCH_NVLINK ? SN_UNIT_BANDWIDTH_DIRECTED
                                                       : SN_UNIT_BANDWIDTH,
                           &s->port_bytes_per_s);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, SW_POWER, SN_UNIT_POWER, false, 0, &s->power_w);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SW_RU, false, 1, 0, UINT32_MAX, &s->rack_units);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, &m, SW_LANES, false, 0, 1, 64, &s->port_lanes);
    return rc;
}

enum {
    CBL_MEDIUM,
    CBL_REACH,
    CBL_OPTIC_POWER,
    CBL_SPEED,
    CBL_LANES,
    CBL_LANE_SPEED,
    CBL_BREAKOUT,
    CBL_KEYS
};
static const char *const cable_keys[CBL_KEYS] = {"medium", "reach",      "optic_power", "speed",
                                                 "lanes",  "lane_speed", "breakout"};

/* lanes, lane_speed and breakout of a cable: a breakout needs lanes it
 * can split evenly; speed, when stated with both, must be their product. */
static enum sn_err parse_cable_lanes(struct sn__spec_ctx *c, const struct sn__spec_map *m,
                                     struct sn_cable_type *t)
{
    enum sn_err rc = sn__spec_get_count(c, m, CBL_LANES, false, 0, 1, 64, &t->lanes);
    if (rc == SN_OK && m->present[CBL_LANE_SPEED])
        rc = need_positive(c, m, CBL_LANE_SPEED, SN_UNIT_BANDWIDTH, &t->lane_bytes_per_s);
    if (rc == SN_OK)
        rc = sn__spec_get_count(c, m, CBL_BREAKOUT, false, 1, 1, 16, &t->breakout);
    if (rc != SN_OK)
        return rc;
    if (t->lane_bytes_per_s > 0 && t->lanes == 0)
        return sn__spec_fail(c, sn__spec_value_loc(m, CBL_LANE_SPEED),
                             "lane_speed without lanes: expected the cable's lane count too");
    if (t->breakout > 1 && t->lanes == 0)
        return sn__spec_fail(c, sn__spec_value_loc(m, CBL_BREAKOUT),
                             "breakout %u without lanes: expected the cable's lane count, which "
                             "the legs share",
                             t->breakout);
    if (t->breakout > 1 && t->lanes % t->breakout != 0)
        return sn__spec_fail(c, sn__spec_value_loc(m, CBL_BREAKOUT),
                             "breakout %u of a %u-lane cable: expected a count that divides the "
                             "lanes (each leg takes lanes / breakout)",
                             t->breakout, t->lanes);
    double product = t->lanes * t->lane_bytes_per_s;
    if (product > 0 && t->speed_bytes_per_s > 0 &&
        fabs(product - t->speed_bytes_per_s) > 1e-9 * product)
        return sn__spec_fail(c, sn__spec_value_loc(m, CBL_SPEED),
                             "speed %g Gb/s is not lanes %u x lane_speed %g Gb/s = %g Gb/s: "
                             "expected one or the other, or both agreeing",
                             t->speed_bytes_per_s * 8 / 1e9, t->lanes,
                             t->lane_bytes_per_s * 8 / 1e9, product * 8 / 1e9);
    if (product > 0 && t->speed_bytes_per_s == 0)
        t->speed_bytes_per_s = product;
    return SN_OK;
}

static enum sn_err parse_cable(struct sn__spec_ctx *c, const struct sn__spec_entry *e,
                               struct sn_cable_type *t)
{
    t->name = e->name;
    t->loc = e->loc;
    struct sn__spec_map m;
    char what[96];
    snprintf(what, sizeof(what), "cable type '%s'", e->name);
    int medium = 0;
    enum sn_err rc = sn__spec_bind(c, e->value, e->loc, what, cable_keys, CBL_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_get_enum(c, &m, CBL_MEDIUM, cable_media, SN_CABLE_MEDIUM_COUNT, -1, &medium);
    t->medium = (enum sn_cable_medium)medium;
    if (rc == SN_OK)
        rc = need_positive(c, &m, CBL_REACH, SN_UNIT_LENGTH, &t->reach_m);
    if (rc == SN_OK)
        rc = sn__spec_get_quantity(c, &m, CBL_OPTIC_POWER, SN_UNIT_POWER, false, 0,
                                   &t->optic_power_w);
    if (rc == SN_OK && m.present[CBL_SPEED])
        rc = need_positive(c, &m, CBL_SPEED, SN_UNIT_BANDWIDTH, &t->speed_bytes_per_s);
    if (rc == SN_OK)
        rc = parse_cable_lanes(c, &m, t);
    return rc;
}

/* ---- length classes -------------------------------------------------------- */

/* Always present; docs/spec.md lists them. */
static const struct sn_length_class builtin_lengths[] = {
    {"in-server", {0, 0}, 0.5}, {"in-rack", {0, 0}, 2}, {"adjacent-rack", {0, 0}, 10},
    {"row", {0, 0}, 30},        {"hall", {0, 0}, 100},  {"campus", {0, 0}, 2000},
};
#define N_BUILTIN_LENGTHS (sizeof(builtin_lengths) / sizeof(builtin_lengths[0]))

/* One user class: overrides a class of the same name or is appended. */
static enum sn_err add_length(struct sn__spec_ctx *c, const struct sn__spec_entry *e)
{
    struct sn_spec *spec = c->spec;
    char what[96];
    snprintf(what, sizeof(what), "length class '%s'", e->name);
    char text[SN__SPEC_VALUE_MAX + 1];
    enum sn_err rc =
        sn__spec_scalar_text(c, e->value, sn__spec_loc(e->value, e->loc), what, text, sizeof(text));
    if (rc != SN_OK)
        return rc;
    struct sn_error local = {0};
    double m = 0;
    if (sn_units_parse(text, SN_UNIT_LENGTH, &m, &local) != SN_OK)
        return sn__spec_fail(c, sn__spec_loc(e->value, e->loc), "%s: %s", what, local.message);
    uint32_t i = sn__spec_lookup(spec, SN__REF_LENGTH, NULL, e->name);
    if (i == SN_NONE) {
        if (spec->n_length_classes >= SN__SPEC_MAX_LENGTH_CLASSES)
            return sn__spec_fail(c, e->loc,
                                 "length class '%s' is one too many: expected at "
                                 "most %d length classes, built-ins included",
                                 e->name, SN__SPEC_MAX_LENGTH_CLASSES);
        i = spec->n_length_classes++;
        spec->length_classes[i].name = e->name;
    }
    spec->length_classes[i].loc = e->loc;
    spec->length_classes[i].length_m = m;
    return SN_OK;
}

static enum sn_err parse_lengths(struct sn__spec_ctx *c, struct fy_node *node,
                                 struct sn_src_loc loc, bool present)
{
    struct sn_spec *spec = c->spec;
    struct sn__spec_entry *entries = NULL;
    uint32_t n = 0;
    if (present) {
        enum sn_err rc = sn__spec_entries(c, node, loc, "length class", SN__SPEC_MAX_LENGTH_CLASSES,
                                          &entries, &n);
        if (rc != SN_OK)
            return rc;
    }
    spec->length_classes =
        sn__arena_array(c->arena, N_BUILTIN_LENGTHS + n, sizeof(*spec->length_classes));
    if (!spec->length_classes)
        return oom(c);
    for (size_t i = 0; i < N_BUILTIN_LENGTHS; i++)
        spec->length_classes[i] = builtin_lengths[i];
    spec->n_length_classes = (uint32_t)N_BUILTIN_LENGTHS;
    for (uint32_t i = 0; i < n; i++) {
        enum sn_err rc = add_length(c, &entries[i]);
        if (rc != SN_OK)
            return rc;
    }
    return SN_OK;
}

/* ---- the catalog ------------------------------------------------------------ */

enum { CAT_GPUS, CAT_SERVERS, CAT_SWITCHES, CAT_CABLES, CAT_LENGTHS, CAT_KEYS };
static const char *const catalog_keys[CAT_KEYS] = {"gpus", "servers", "switches", "cables",
                                                   "length_classes"};

/* The entries of catalogue k of m (none when absent). */
static enum sn_err catalogue(struct sn__spec_ctx *c, const struct sn__spec_map *m, unsigned k,
                             const char *what, uint32_t max, struct sn__spec_entry **entries,
                             uint32_t *n)
{
    *entries = NULL;
    *n = 0;
    if (!m->present[k])
        return SN_OK;
    return sn__spec_entries(c, m->value[k], m->key_loc[k], what, max, entries, n);
}

/* Each catalogue's array is published before its entries are parsed and
 * its count grows with them, so lookups see only parsed entries. */
static enum sn_err parse_models(struct sn__spec_ctx *c, const struct sn__spec_map *m)
{
    struct sn_spec *spec = c->spec;
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = catalogue(c, m, CAT_GPUS, "gpu model", CATALOG_MAX, &e, &n);
    if (rc == SN_OK &&
        !(spec->gpu_models = sn__arena_array(c->arena, n, sizeof(*spec->gpu_models))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++)
        if ((rc = parse_gpu(c, &e[i], &spec->gpu_models[i])) == SN_OK)
            spec->n_gpu_models = i + 1;
    if (rc == SN_OK)
        rc = catalogue(c, m, CAT_SERVERS, "server model", CATALOG_MAX, &e, &n);
    if (rc == SN_OK &&
        !(spec->server_models = sn__arena_array(c->arena, n, sizeof(*spec->server_models))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++)
        if ((rc = parse_server(c, &e[i], &spec->server_models[i])) == SN_OK)
            spec->n_server_models = i + 1;
    return rc;
}

static enum sn_err parse_parts(struct sn__spec_ctx *c, const struct sn__spec_map *m)
{
    struct sn_spec *spec = c->spec;
    struct sn__spec_entry *e;
    uint32_t n;
    enum sn_err rc = catalogue(c, m, CAT_SWITCHES, "switch model", CATALOG_MAX, &e, &n);
    if (rc == SN_OK &&
        !(spec->switch_models = sn__arena_array(c->arena, n, sizeof(*spec->switch_models))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++)
        if ((rc = parse_switch(c, &e[i], &spec->switch_models[i])) == SN_OK)
            spec->n_switch_models = i + 1;
    if (rc == SN_OK)
        rc = catalogue(c, m, CAT_CABLES, "cable type", SN__SPEC_MAX_CABLES, &e, &n);
    if (rc == SN_OK &&
        !(spec->cable_types = sn__arena_array(c->arena, n, sizeof(*spec->cable_types))))
        rc = oom(c);
    for (uint32_t i = 0; rc == SN_OK && i < n; i++)
        if ((rc = parse_cable(c, &e[i], &spec->cable_types[i])) == SN_OK)
            spec->n_cable_types = i + 1;
    return rc;
}

enum sn_err sn__spec_parse_catalog(struct sn__spec_ctx *c, struct fy_node *node,
                                   struct sn_src_loc loc)
{
    struct sn__spec_map m;
    enum sn_err rc = sn__spec_bind(c, node, loc, "catalog", catalog_keys, CAT_KEYS, &m);
    if (rc == SN_OK)
        rc = sn__spec_require(c, &m, CAT_GPUS);
    if (rc == SN_OK)
        rc = sn__spec_require(c, &m, CAT_SERVERS);
    if (rc == SN_OK)
        rc = parse_models(c, &m);
    if (rc == SN_OK)
        rc = parse_parts(c, &m);
    if (rc != SN_OK)
        return rc;
    return parse_lengths(c, m.value[CAT_LENGTHS], m.key_loc[CAT_LENGTHS], m.present[CAT_LENGTHS]);
}
