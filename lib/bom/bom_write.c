/*
 * Writers of the bill of materials: human tables and JSON (sn/bom.h).
 *
 * The text tables list every power domain, rack and cooling loop while
 * there are at most ROWS_IN_FULL of a kind; past that they print one row per
 * template-local entity (e.g. "hgx-unit/pdA x2048") with the worst instance
 * (largest draw, smallest margin), so the output stays readable at 100,000
 * GPUs. JSON always lists every instance. The JSON schema is in docs/bom.md;
 * keys are stable and only ever added.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include <sn/bom.h>
#include <sn/units.h>

#define ROWS_IN_FULL 16
#define NAME_LEN 160

static const char *cable_name(const struct sn_spec *spec, uint8_t cable)
{
    return cable < spec->n_cable_types ? spec->cable_types[cable].name : "none";
}

static const char *length_name(const struct sn_spec *spec, uint8_t lc)
{
    return lc < spec->n_length_classes ? spec->length_classes[lc].name : "none";
}

static double ratio(double num, double den)
{
    return den > 0 ? num / den : 0;
}

static const char *fmt(double v, enum sn_unit_kind kind, char *buf, size_t len)
{
    return sn_units_format(v, kind, buf, len);
}

/* ---- text ------------------------------------------------------------- */

static void text_counts(FILE *out, const struct sn_model *m, const struct sn_bom *bom)
{
    const struct sn_spec *spec = m->spec;
    fprintf(out, "Counts\n");
    fprintf(out, "  supernodes     %10u\n", bom->supernodes);
    fprintf(out, "  servers        %10u\n", bom->servers);
    for (uint32_t i = 0; i < spec->n_server_models; i++)
        if (bom->servers_by_model[i])
            fprintf(out, "    %-24s %10u\n", spec->server_models[i].name, bom->servers_by_model[i]);
    fprintf(out, "  GPUs           %10u\n", bom->gpus);
    for (uint32_t i = 0; i < spec->n_gpu_models; i++)
        if (bom->gpus_by_model[i])
            fprintf(out, "    %-24s %10u\n", spec->gpu_models[i].name, bom->gpus_by_model[i]);
    fprintf(out, "  racks          %10u\n", bom->racks);
    fprintf(out, "  power domains  %10u\n", bom->power_domains);
    fprintf(out, "  cooling loops  %10u\n", bom->cooling_loops);
    char buf[32];
    fprintf(out, "  dense BF16     %10s\n\n", fmt(bom->dense_bf16_flops, SN_UNIT_FLOPS, buf, 32));
}

static void text_switches(FILE *out, const struct sn_model *m, const struct sn_bom *bom)
{
    char buf[32];
    /* Role and model share 27 columns; a longer role name ("scaleup-l2")
     * takes its extra columns from the model's. */
    int role_w = 8, model_w = 18;
    for (uint32_t i = 0; i < bom->n_switch_lines; i++) {
        int n = (int)strlen(sn_switch_role_name((enum sn_switch_role)bom->switch_lines[i].role));
        role_w = n > role_w ? n : role_w;
    }
    model_w = 26 - role_w;
    fprintf(out, "Switches\n  %-*s %-*s %8s %9s %9s %9s %6s %10s\n", role_w, "role", model_w,
            "model", "count", "ports", "used", "free", "over", "power");
    for (uint32_t i = 0; i < bom->n_switch_lines; i++) {
        const struct sn_bom_switches *l = &bom->switch_lines[i];
        fprintf(out, "  %-*s %-*s %8u %9llu %9llu %9llu %6llu %10s\n", role_w,
                sn_switch_role_name((enum sn_switch_role)l->role), model_w,
                m->spec->switch_models[l->model].name, l->count, (unsigned long long)l->ports,
                (unsigned long long)l->ports_used, (unsigned long long)l->ports_free,
                (unsigned long long)l->ports_over, fmt(l->power_w, SN_UNIT_POWER, buf, 32));
    }
    fprintf(out, "\n");
}

static void text_cables(FILE *out, const struct sn_model *m, const struct sn_bom *bom)
{
    const struct sn_spec *spec = m->spec;
    char buf[32];
    fprintf(out, "Links and cables\n  %-10s %-14s %-8s %-14s %10s %8s %10s\n", "tier", "cable",
            "medium", "length", "links", "optics", "optics W");
    for (uint32_t i = 0; i < bom->n_cable_lines; i++) {
        const struct sn_bom_cables *l = &bom->cable_lines[i];
        const char *medium = l->cable < spec->n_cable_types
                                 ? sn_cable_medium_name(spec->cable_types[l->cable].medium)
                                 : "-";
        fprintf(out, "  %-10s %-14s %-8s %-14s %10llu %8llu %10s\n",
                sn_link_tier_name((enum sn_link_tier)l->tier), cable_name(spec, l->cable), medium,
                length_name(spec, l->length_class), (unsigned long long)l->links,
                (unsigned long long)l->optics, fmt(l->optics_power_w, SN_UNIT_POWER, buf, 32));
    }
    fprintf(out, "  %-10s %-14s %-8s %-14s %10llu %8llu %10s\n", "total", "", "", "",
            (unsigned long long)bom->links, (unsigned long long)bom->optics,
            fmt(bom->optics_power_w, SN_UNIT_POWER, buf, 32));
    /* Cables to order by type and speed, for the types that state one
     * (rule R18 checks them against the ports). */
    for (uint32_t t = 0; t < spec->n_cable_types; t++) {
        if (spec->cable_types[t].speed_bytes_per_s <= 0)
            continue;
        const struct sn_cable_type *ct = &spec->cable_types[t];
        uint64_t cables = 0, links = 0;
        for (uint32_t i = 0; i < bom->n_cable_lines; i++) {
            cables += bom->cable_lines[i].cable == t ? bom->cable_lines[i].cables : 0;
            links += bom->cable_lines[i].cable == t ? bom->cable_lines[i].links : 0;
        }
        fprintf(out, "  by speed: %llu x %s at %s", (unsigned long long)cables, ct->name,
                fmt(ct->speed_bytes_per_s, SN_UNIT_BANDWIDTH, buf, 32));
        if (ct->lanes > 0)
            fprintf(out, ", %u lanes", ct->lanes);
        if (ct->breakout > 1)
            fprintf(out, ", breakout %u x %s (%llu legs)", ct->breakout,
                    fmt(ct->speed_bytes_per_s / ct->breakout, SN_UNIT_BANDWIDTH, buf, 32),
                    (unsigned long long)links);
        fputc('\n', out);
    }
    fprintf(out, "\n");
}

static void text_templates(FILE *out, const struct sn_model *m, const struct sn_bom *bom)
{
    char a[32], b[32];
    for (uint32_t i = 0; i < bom->n_templates; i++) {
        const struct sn_bom_template *t = &bom->templates[i];
        fprintf(out, "  template %s: %u supernode(s) of %u GPUs, %u scale-up chip(s) each\n",
                m->spec->templates[t->template_index].name, t->supernodes, t->gpus,
                t->scaleup_chips);
        fprintf(out, "    scale-up per GPU        %s per direction, %s bidirectional\n",
                fmt(t->scaleup_gpu_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, a, 32),
                fmt(2 * t->scaleup_gpu_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, b, 32));
        fprintf(out, "    scale-up per supernode  %s per direction, %s bidirectional\n",
                fmt(t->scaleup_supernode_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, a, 32),
                fmt(2 * t->scaleup_supernode_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, b, 32));
        fprintf(out, "    scale-up links          %llu on %llu chip ports\n",
                (unsigned long long)t->scaleup_links, (unsigned long long)t->scaleup_ports);
        fprintf(out, "    scale-out per GPU       %s per direction\n",
                fmt(t->scaleout_gpu_bytes_per_s, SN_UNIT_BANDWIDTH, a, 32));
        if (t->convergence > 0)
            fprintf(out, "    convergence             %s (scale-up : scale-out)\n",
                    fmt(t->convergence, SN_UNIT_RATIO, a, 32));
        else
            fprintf(out, "    convergence             - (no scale-out)\n");
    }
}

static void text_bandwidth(FILE *out, const struct sn_model *m, const struct sn_bom *bom)
{
    char a[32], b[32], c[32];
    fprintf(out, "Bandwidth\n");
    text_templates(out, m, bom);
    fprintf(out, "  fabric: %u tier(s)", bom->fabric_tiers);
    if (bom->leaf_oversubscription > 0)
        fprintf(out, ", leaf oversubscription %s",
                fmt(bom->leaf_oversubscription, SN_UNIT_RATIO, a, 32));
    if (bom->spine_oversubscription > 0)
        fprintf(out, ", spine oversubscription %s",
                fmt(bom->spine_oversubscription, SN_UNIT_RATIO, a, 32));
    fprintf(out, "\n  %-10s %10s %12s %14s %14s\n", "tier", "links", "link speed", "capacity",
            "bisection");
    for (int t = SN_TIER_NODE_LEAF; t <= SN_TIER_SPINE_CORE; t++) {
        const struct sn_bom_tier *bt = &bom->tiers[t];
        if (bt->links == 0)
            continue;
        fprintf(out, "  %-10s %10llu %12s %14s %14s\n", sn_link_tier_name((enum sn_link_tier)t),
                (unsigned long long)bt->links, fmt(bt->link_bytes_per_s, SN_UNIT_BANDWIDTH, a, 32),
                fmt(bt->capacity_bytes_per_s, SN_UNIT_BANDWIDTH, b, 32),
                fmt(bt->bisection_bytes_per_s, SN_UNIT_BANDWIDTH, c, 32));
    }
    fprintf(out, "  (per direction; bisection = capacity / 2)\n\n");
}

/* One row of the power, rack or loop tables: an instance or a group. */
struct row {
    char name[NAME_LEN];
    uint32_t instances;
    double v[4]; /* kind-specific draws; maxima over the group */
    double cap;  /* minimum over the group */
};

enum table { T_POWER, T_RACK, T_LOOP };

static uint32_t table_count(const struct sn_model *m, enum table t)
{
    return t == T_POWER ? m->n_power_domains : t == T_RACK ? m->n_racks : m->n_cooling_loops;
}

static void table_values(const struct sn_bom *bom, enum table t, uint32_t i, struct row *r)
{
    if (t == T_POWER) {
        r->v[0] = bom->power[i].steady_w;
        r->v[1] = bom->power[i].peak_w;
        r->v[2] = bom->power[i].failover_peak_w;
        r->cap = bom->power[i].capacity_w;
    } else if (t == T_RACK) {
        r->v[0] = bom->rack[i].steady_w;
        r->v[1] = bom->rack[i].peak_w;
        r->cap = bom->rack[i].limit_w;
    } else {
        r->v[0] = bom->loop[i].heat_w;
        r->cap = bom->loop[i].capacity_w;
    }
}

static void table_name(const struct sn_model *m, enum table t, uint32_t i, bool grouped, char *buf)
{
    uint32_t sn = t == T_POWER  ? m->power_domain_supernode[i]
                  : t == T_RACK ? m->rack_supernode[i]
                                : m->cooling_loop_supernode[i];
    if (sn == SN_NONE) /* the fabric's domains and network racks */
        grouped = false;
    const char *tmpl = grouped ? sn_model_supernode_template(m, sn)->name : "";
    if (!grouped) {
        if (t == T_POWER)
            sn_model_power_domain_name(m, i, buf, NAME_LEN);
        else if (t == T_RACK)
            sn_model_rack_name(m, i, buf, NAME_LEN);
        else
            sn_model_cooling_loop_name(m, i, buf, NAME_LEN);
    } else if (t == T_POWER) {
        snprintf(buf, NAME_LEN, "%s/pd%s", tmpl, sn_model_power_domain_spec(m, i)->name);
    } else if (t == T_RACK) {
        snprintf(buf, NAME_LEN, "%s/rack%u", tmpl, i - m->supernodes[sn].first_rack);
    } else {
        snprintf(buf, NAME_LEN, "%s/loop%s", tmpl, sn_model_cooling_loop_spec(m, i)->name);
    }
}

static void print_row(FILE *out, enum table t, const struct row *r)
{
    char a[32], b[32], c[32], d[32], name[NAME_LEN + 16];
    if (r->instances > 1)
        snprintf(name, sizeof(name), "%s x%u", r->name, r->instances);
    else
        snprintf(name, sizeof(name), "%s", r->name);
    fmt(r->v[0], SN_UNIT_POWER, a, 32);
    fmt(r->cap, SN_UNIT_POWER, d, 32);
    if (t == T_POWER)
        fprintf(out, "  %-28s %10s %10s %10s %10s %7.2f %7.2f\n", name, a,
                fmt(r->v[1], SN_UNIT_POWER, b, 32), fmt(r->v[2], SN_UNIT_POWER, c, 32), d,
                ratio(r->cap, r->v[0]), ratio(r->cap, r->v[2]));
    else if (t == T_RACK)
        fprintf(out, "  %-28s %10s %10s %10s %7.2f\n", name, a, fmt(r->v[1], SN_UNIT_POWER, b, 32),
                d, ratio(r->cap, r->v[1]));
    else
        fprintf(out, "  %-28s %10s %10s %7.2f\n", name, a, d, ratio(r->cap, r->v[0]));
}

/* The fabric's power domains one row each, the network racks as one row
 * (maxima of draws, minimum of limits). */
static void print_fabric_rows(FILE *out, const struct sn_model *m, const struct sn_bom *bom,
                              enum table t)
{
    uint32_t first = t == T_POWER ? m->first_fabric_pd : m->first_net_rack;
    uint32_t n = t == T_POWER ? m->n_fabric_pds : t == T_RACK ? m->n_net_racks : 0;
    struct row r = {.instances = 0};
    for (uint32_t id = first; id < first + n; id++) {
        struct row one = {.instances = 1};
        table_values(bom, t, id, &one);
        table_name(m, t, id, false, one.name);
        if (t == T_POWER) {
            print_row(out, t, &one);
            continue;
        }
        if (r.instances++ == 0) {
            r = one;
            snprintf(r.name, sizeof(r.name), "net-rack");
            continue;
        }
        for (int k = 0; k < 4; k++)
            r.v[k] = one.v[k] > r.v[k] ? one.v[k] : r.v[k];
        r.cap = one.cap < r.cap ? one.cap : r.cap;
    }
    if (r.instances > 0)
        print_row(out, t, &r);
}

/* Rows grouped by template-local entity: entities of one supernode are
 * contiguous, so local index = id - first id of its supernode. */
static void print_supernode_groups(FILE *out, const struct sn_model *m, const struct sn_bom *bom,
                                   enum table t)
{
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        uint32_t ti = m->supernodes[sn].template_index;
        bool first_of_template = true;
        for (uint32_t p = 0; p < sn; p++)
            if (m->supernodes[p].template_index == ti)
                first_of_template = false;
        if (!first_of_template)
            continue;
        const struct sn_supernode *s = &m->supernodes[sn];
        uint32_t n = t == T_POWER  ? s->n_power_domains
                     : t == T_RACK ? s->n_racks
                                   : s->n_cooling_loops;
        for (uint32_t local = 0; local < n; local++) {
            struct row r = {.instances = 0};
            for (uint32_t q = sn; q < m->n_supernodes; q++) {
                const struct sn_supernode *sq = &m->supernodes[q];
                if (sq->template_index != ti)
                    continue;
                uint32_t id = local + (t == T_POWER  ? sq->first_power_domain
                                       : t == T_RACK ? sq->first_rack
                                                     : sq->first_cooling_loop);
                struct row one = {.instances = 1};
                table_values(bom, t, id, &one);
                if (r.instances++ == 0) {
                    r = one;
                    table_name(m, t, id, true, r.name);
                    continue;
                }
                for (int k = 0; k < 4; k++)
                    r.v[k] = one.v[k] > r.v[k] ? one.v[k] : r.v[k];
                r.cap = one.cap < r.cap ? one.cap : r.cap;
            }
            print_row(out, t, &r);
        }
    }
}

static void print_grouped(FILE *out, const struct sn_model *m, const struct sn_bom *bom,
                          enum table t)
{
    print_supernode_groups(out, m, bom, t);
    print_fabric_rows(out, m, bom, t);
}

static void text_table(FILE *out, const struct sn_model *m, const struct sn_bom *bom, enum table t)
{
    uint32_t n = table_count(m, t);
    if (n == 0)
        return;
    if (n <= ROWS_IN_FULL) {
        for (uint32_t i = 0; i < n; i++) {
            struct row r = {.instances = 1};
            table_values(bom, t, i, &r);
            table_name(m, t, i, false, r.name);
            print_row(out, t, &r);
        }
        return;
    }
    print_grouped(out, m, bom, t);
}

static void text_power(FILE *out, const struct sn_model *m, const struct sn_bom *bom)
{
    char a[32], b[32], c[32], d[32];
    double pf = m->spec->review.peak_factor > 0 ? m->spec->review.peak_factor : 1.3;
    fprintf(out, "Power (steady: GPUs at TDP; peak: GPUs at %.2f x TDP)\n", pf);
    if (m->n_power_domains > 0) {
        fprintf(out, "  %-28s %10s %10s %10s %10s %7s %7s\n", "power domain", "steady", "peak",
                "failover", "capacity", "cap/st", "cap/fo");
        text_table(out, m, bom, T_POWER);
    }
    fprintf(out, "  cluster: steady %s, peak %s (optics %s, outside power domains %s)\n",
            fmt(bom->steady_w, SN_UNIT_POWER, a, 32), fmt(bom->peak_w, SN_UNIT_POWER, b, 32),
            fmt(bom->optics_power_w, SN_UNIT_POWER, c, 32),
            fmt(bom->unassigned_w, SN_UNIT_POWER, d, 32));
    if (m->n_racks > 0) {
        fprintf(out, "\n  %-28s %10s %10s %10s %7s\n", "rack", "steady", "peak", "limit", "lim/pk");
        text_table(out, m, bom, T_RACK);
    }
    fprintf(out, "\nCooling\n");
    if (m->n_cooling_loops > 0) {
        fprintf(out, "  %-28s %10s %10s %7s\n", "cooling loop", "heat", "capacity", "cap/ht");
        text_table(out, m, bom, T_LOOP);
    } else {
        fprintf(out, "  no cooling loops\n");
    }
    fprintf(out, "\n");
}

/* Racks of template t in the model. */
static uint32_t template_racks(const struct sn_model *m, uint32_t t)
{
    uint32_t n = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        if (m->supernodes[sn].template_index == t)
            n += m->supernodes[sn].n_racks;
    return n;
}

/* The rack feeds each template states (racks.feed): what to order and
 * what each circuit carries (sn_model_feed_capacity_w; continuous share
 * as R20 checks it). */
static void text_feeds(FILE *out, const struct sn_model *m)
{
    const struct sn_spec *spec = m->spec;
    bool header = false;
    char v[32], a[32], cap[32], cont[32];
    for (uint32_t t = 0; t < spec->n_templates; t++) {
        const struct sn_feed_spec *f = &spec->templates[t].racks.feed;
        uint32_t racks = template_racks(m, t);
        if (f->count == 0 || racks == 0)
            continue;
        if (!header)
            fprintf(out, "Feeds (per rack; capacity at the breaker rating)\n");
        header = true;
        double w = sn_model_feed_capacity_w(f);
        fprintf(out, "  %-16s %6u racks x %u feeds of %s %u-phase %s, %s, %s each (%.0f%% "
                     "continuous: %s)\n",
                spec->templates[t].name, racks, f->count, fmt(f->voltage_v, SN_UNIT_VOLTAGE, v, 32),
                f->phases, fmt(f->current_a, SN_UNIT_CURRENT, a, 32),
                sn_psu_redundancy_name(f->redundancy), fmt(w, SN_UNIT_POWER, cap, 32),
                100 * f->continuous, fmt(w * f->continuous, SN_UNIT_POWER, cont, 32));
        fprintf(out, "  %-16s %6u feeds in all\n", "", racks * f->count);
    }
    if (header)
        fprintf(out, "\n");
}

static void text_blast(FILE *out, const struct sn_bom *bom)
{
    fprintf(out, "Blast radius (worst single failure)\n  %-14s %10s %10s %12s\n", "domain",
            "domains", "GPUs lost", "supernodes");
    for (int k = 0; k < SN_DOMAIN_KIND_COUNT; k++) {
        const struct sn_bom_blast *b = &bom->blast[k];
        fprintf(out, "  %-14s %10u %10u %12u\n", sn_domain_kind_name((enum sn_domain_kind)k),
                b->domains, b->max_gpus, b->max_supernodes);
    }
    const struct sn_bom_fabric_blast *fb = &bom->fabric_blast;
    if (fb->domains > 0)
        fprintf(out,
                "  fabric power domain (%u): at worst %u of %u spines and %u of %u cores lost; "
                "the fabric keeps %.0f%% of its bisection\n",
                fb->domains, fb->max_spines_lost, fb->spines, fb->max_cores_lost, fb->cores,
                100.0 * fb->min_bisection_kept);
    fprintf(out, "\n");
}

static void text_storage(FILE *out, const struct sn_model *m, const struct sn_bom *bom)
{
    char a[32], b[32], c[32];
    if (bom->n_storage == 0)
        return;
    fprintf(out, "Storage\n  %-16s %-12s %12s %12s %12s\n", "tier", "kind", "capacity", "read",
            "write");
    for (uint32_t i = 0; i < bom->n_storage; i++) {
        const struct sn_bom_storage *s = &bom->storage[i];
        const struct sn_storage_spec *st = &m->spec->storage[s->spec_index];
        fprintf(out, "  %-16s %-12s %12s %12s %12s\n", st->name, sn_storage_kind_name(st->kind),
                fmt(s->capacity_bytes, SN_UNIT_BYTES, a, 32),
                fmt(s->read_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, b, 32),
                fmt(s->write_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, c, 32));
    }
    fprintf(out, "\n");
}

static void totals_row(FILE *out, const char *scope, const struct sn_bom_host_totals *t)
{
    char a[32], b[32], c[32], d[32];
    fprintf(out, "  %-22s %8u %8u %11s %11s %12s %9u %11s\n", scope, t->servers, t->gpus,
            fmt(t->hbm_bytes, SN_UNIT_BYTES, a, 32), fmt(t->hbm_usable_bytes, SN_UNIT_BYTES, b, 32),
            fmt(t->hbm_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, c, 32), t->cpu_cores,
            fmt(t->host_memory_bytes, SN_UNIT_BYTES, d, 32));
}

/* The entry with the most GPUs (the first of equals), or UINT32_MAX. */
static uint32_t largest(const struct sn_bom_host_totals *t, uint32_t n)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++)
        if (best == UINT32_MAX || t[i].gpus > t[best].gpus)
            best = i;
    return best;
}

static void text_totals(FILE *out, const struct sn_model *m, const struct sn_bom *bom)
{
    const struct sn_spec *spec = m->spec;
    char a[32], b[32], c[32], d[32], e[32];
    fprintf(out, "Totals (HBM usable = raw less 2 GiB per GPU; bandwidth per direction)\n");
    fprintf(out, "  %-22s %8s %8s %11s %11s %12s %9s %11s\n", "scope", "servers", "GPUs",
            "HBM raw", "HBM usable", "HBM bw", "CPU cores", "host memory");
    totals_row(out, "cluster", &bom->total);
    uint32_t sn = largest(bom->supernode_totals, bom->supernodes);
    if (sn != UINT32_MAX)
        totals_row(out, "largest supernode", &bom->supernode_totals[sn]);
    uint32_t r = largest(bom->rack_totals, bom->racks);
    if (r != UINT32_MAX && bom->rack_totals[r].gpus > 0)
        totals_row(out, "largest rack", &bom->rack_totals[r]);
    fprintf(out, "\n  %-24s %11s %11s %12s %11s %14s %16s\n", "GPU model", "dense BF16", "HBM",
            "HBM bw", "ridge", "scale-up/GPU", "scale-up B/FLOP");
    for (uint32_t i = 0; i < spec->n_gpu_models; i++) {
        const struct sn_gpu_model *gm = &spec->gpu_models[i];
        if (!bom->gpus_by_model[i])
            continue;
        fprintf(out, "  %-24s %11s %11s %12s %7.0f F/B %14s %16.3g\n", gm->name,
                fmt(gm->dense_bf16_flops, SN_UNIT_FLOPS, a, 32),
                fmt(gm->hbm_bytes, SN_UNIT_BYTES, b, 32),
                fmt(gm->hbm_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, c, 32),
                bom->gpu_figures[i].ridge_flop_per_byte,
                fmt(gm->scaleup_links * gm->scaleup_link_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, d,
                    32),
                bom->gpu_figures[i].scaleup_bytes_per_flop);
    }
    fprintf(out, "\n  %-12s %10s %10s %10s %12s\n", "link tier", "links", "cables", "optics",
            "optics power");
    for (int t = 0; t < SN_LINK_TIER_COUNT; t++) {
        const struct sn_bom_tier_media *md = &bom->media[t];
        if (!md->links)
            continue;
        fprintf(out, "  %-12s %10llu %10llu %10llu %12s\n", sn_link_tier_name((enum sn_link_tier)t),
                (unsigned long long)md->links, (unsigned long long)md->cables,
                (unsigned long long)md->optics, fmt(md->optics_power_w, SN_UNIT_POWER, a, 32));
    }
    if (spec->n_appliances) {
        fprintf(out, "\n  %-24s %-15s %8s %8s %12s %6s\n", "non-compute", "kind", "count", "RU",
                "power", "racks");
        for (uint32_t i = 0; i < spec->n_appliances; i++) {
            const struct sn_appliance_spec *ap = &spec->appliances[i];
            fprintf(out, "  %-24s %-15s %8u %8llu %12s %6u\n", ap->name,
                    sn_appliance_kind_name(ap->kind), ap->count,
                    (unsigned long long)ap->count * ap->rack_units,
                    fmt(ap->count * ap->power_w, SN_UNIT_POWER, a, 32), ap->racks);
        }
        fprintf(out, "  %-24s %-15s %8s %8llu %12s %6u\n", "total", "", "",
                (unsigned long long)bom->appliance_rack_units,
                fmt(bom->appliance_w, SN_UNIT_POWER, a, 32), bom->appliance_racks);
        fprintf(out, "  racks: %u compute and fabric + %u non-compute = %u\n", bom->racks,
                bom->appliance_racks, bom->racks + bom->appliance_racks);
    }
    if (bom->su_units)
        fprintf(out, "\n  scalable units: %u units of %u supernode(s)%s, rack budget %s, largest rack "
                     "peak %s (R21)\n",
                bom->su_units, bom->su_supernodes,
                bom->supernodes % bom->su_supernodes ? " (the last partial)" : "",
                fmt(bom->su_rack_power_w, SN_UNIT_POWER, a, 32),
                fmt(bom->rack_peak_max_w, SN_UNIT_POWER, b, 32));
    if (bom->pue > 0)
        fprintf(out, "\n  facility power: (IT %s steady, %s peak + appliances %s) x PUE %.2f = %s "
                     "steady, %s peak\n\n",
                fmt(bom->steady_w, SN_UNIT_POWER, a, 32), fmt(bom->peak_w, SN_UNIT_POWER, b, 32),
                fmt(bom->appliance_w, SN_UNIT_POWER, c, 32), bom->pue,
                fmt(bom->facility_steady_w, SN_UNIT_POWER, e, 32),
                fmt(bom->facility_peak_w, SN_UNIT_POWER, d, 32));
    else
        fprintf(out, "\n  facility power: no facility.pue in the spec (IT power only)\n\n");
}

enum sn_err sn_bom_write_text(FILE *out, const struct sn_model *m, const struct sn_bom *bom,
                              struct sn_error *err)
{
    fprintf(out, "Bill of materials: %s\n\n", m->spec->name ? m->spec->name : "(unnamed)");
    text_counts(out, m, bom);
    text_totals(out, m, bom);
    text_switches(out, m, bom);
    text_cables(out, m, bom);
    text_bandwidth(out, m, bom);
    text_power(out, m, bom);
    text_feeds(out, m);
    text_blast(out, bom);
    text_storage(out, m, bom);
    if (ferror(out))
        return sn_error_set(err, SN_ERR_IO, "cannot write the bill of materials");
    return SN_OK;
}
