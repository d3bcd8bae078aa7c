/*
 * The bill of materials (sn_bom_compute): one pass over a built model.
 *
 * Every figure is derived from the model's arrays and the spec entries they
 * point to; nothing is re-derived from the spec's counts, so the bom counts
 * exactly what the model wired (docs/bom.md gives each formula). Lines of
 * the switch and cable tables are keyed by (role, model) and (tier, cable,
 * length class); the number of distinct keys is bounded by the spec's
 * catalogue caps, and each table has a hard cap (MAX_LINES). Output arrays
 * are sorted by key, so the same model always gives the same bom.
 *
 * Invariants: sum of cable_lines[].links == links == model->n_links; sum of
 * switch_lines[].count == model->n_switches; every domain kind's blast entry
 * counts the domains the model reports for that kind.
 */
#include <stdlib.h>
#include <string.h>

#include <sn/bom.h>

#define MAX_LINES 4096 /* distinct (role, model) or (tier, cable, length) keys */
#define DEFAULT_PEAK_FACTOR 1.3

void sn_bom_release(struct sn_bom *bom)
{
    if (!bom)
        return;
    free(bom->gpus_by_model);
    free(bom->servers_by_model);
    free(bom->switch_lines);
    free(bom->cable_lines);
    free(bom->templates);
    free(bom->power);
    free(bom->rack);
    free(bom->loop);
    free(bom->storage);
    free(bom->rack_totals);
    free(bom->supernode_totals);
    free(bom->gpu_figures);
    memset(bom, 0, sizeof(*bom));
}

const struct sn_bom_template *sn_bom_template(const struct sn_bom *bom, uint32_t template_index)
{
    for (uint32_t i = 0; i < bom->n_templates; i++)
        if (bom->templates[i].template_index == template_index)
            return &bom->templates[i];
    return NULL;
}

/* ---- switches and cables -------------------------------------------- */

static double port_speed(const struct sn_model *m, uint32_t sw)
{
    return sn_model_switch_spec(m, sw)->port_bytes_per_s;
}

static double min_known(double a, double b)
{
    if (a <= 0)
        return b;
    if (b <= 0)
        return a;
    return a < b ? a : b;
}

/* Speed of one end of a link, per direction; 0 when the end does not say. */
static double end_speed(const struct sn_model *m, uint8_t kind, uint32_t id, uint8_t tier)
{
    switch ((enum sn_endpoint_kind)kind) {
    case SN_END_GPU:
        return sn_model_gpu_spec(m, id)->scaleup_link_bytes_per_s;
    case SN_END_SERVER:
        return tier == SN_TIER_NODE_LEAF ? sn_model_server_spec(m, id)->nic_bytes_per_s : 0;
    case SN_END_SWITCH:
        return port_speed(m, id);
    case SN_ENDPOINT_KIND_COUNT:
        break;
    }
    return 0;
}

/* A breakout's legs share the b end's port: each gets port speed / legs. */
static double link_speed(const struct sn_model *m, const struct sn_link *l)
{
    double legs = l->cable < m->spec->n_cable_types ? m->spec->cable_types[l->cable].breakout : 1;
    return min_known(end_speed(m, l->a_kind, l->a_id, l->tier),
                     end_speed(m, l->b_kind, l->b_id, l->tier) / (legs > 1 ? legs : 1));
}

static int cmp_switch_line(const void *pa, const void *pb)
{
    const struct sn_bom_switches *a = pa, *b = pb;
    if (a->role != b->role)
        return a->role < b->role ? -1 : 1;
    return a->model < b->model ? -1 : a->model > b->model;
}

static int cmp_cable_line(const void *pa, const void *pb)
{
    const struct sn_bom_cables *a = pa, *b = pb;
    if (a->tier != b->tier)
        return a->tier < b->tier ? -1 : 1;
    if (a->cable != b->cable)
        return a->cable < b->cable ? -1 : 1;
    return a->length_class < b->length_class ? -1 : a->length_class > b->length_class;
}

static enum sn_err count_switches(const struct sn_model *m, struct sn_bom *bom,
                                  struct sn_error *err)
{
    uint32_t last = 0;
    bom->switch_lines = calloc(MAX_LINES, sizeof(*bom->switch_lines));
    if (!bom->switch_lines)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the bill of materials");
    for (uint32_t sw = 0; sw < m->n_switches; sw++) {
        uint8_t role = m->switch_role[sw];
        uint32_t model = m->switch_model[sw];
        struct sn_bom_switches *line = NULL;
        if (bom->n_switch_lines > 0 && bom->switch_lines[last].role == role &&
            bom->switch_lines[last].model == model)
            line = &bom->switch_lines[last];
        for (uint32_t i = 0; !line && i < bom->n_switch_lines; i++)
            if (bom->switch_lines[i].role == role && bom->switch_lines[i].model == model)
                line = &bom->switch_lines[last = i];
        if (!line) {
            if (bom->n_switch_lines == MAX_LINES)
                return sn_error_set(err, SN_ERR_LIMIT, "more than %d kinds of switch", MAX_LINES);
            last = bom->n_switch_lines++;
            line = &bom->switch_lines[last];
            line->role = role;
            line->model = model;
        }
        const struct sn_switch_model *sm = sn_model_switch_spec(m, sw);
        uint32_t used = m->switch_ports_physical[sw]; /* a breakout's legs share a port */
        line->count++;
        line->ports += sm->ports;
        line->ports_used += used;
        line->ports_free += used < sm->ports ? sm->ports - used : 0;
        line->ports_over += used > sm->ports ? used - sm->ports : 0;
        line->power_w += sm->power_w;
        bom->switches_by_role[role < SN_SWITCH_ROLE_COUNT ? role : 0]++;
    }
    qsort(bom->switch_lines, bom->n_switch_lines, sizeof(*bom->switch_lines), cmp_switch_line);
    return SN_OK;
}

static struct sn_bom_cables *cable_line(struct sn_bom *bom, const struct sn_link *l, uint32_t *last)
{
    struct sn_bom_cables *lines = bom->cable_lines;
    if (bom->n_cable_lines > 0 && lines[*last].tier == l->tier && lines[*last].cable == l->cable &&
        lines[*last].length_class == l->length_class)
        return &lines[*last];
    for (uint32_t i = 0; i < bom->n_cable_lines; i++)
        if (lines[i].tier == l->tier && lines[i].cable == l->cable &&
            lines[i].length_class == l->length_class)
            return &lines[*last = i];
    if (bom->n_cable_lines == MAX_LINES)
        return NULL;
    *last = bom->n_cable_lines++;
    lines[*last].tier = l->tier;
    lines[*last].cable = l->cable;
    lines[*last].length_class = l->length_class;
    return &lines[*last];
}

static enum sn_err count_links(const struct sn_model *m, struct sn_bom *bom, struct sn_error *err)
{
    const struct sn_spec *spec = m->spec;
    uint32_t last = 0;
    bom->cable_lines = calloc(MAX_LINES, sizeof(*bom->cable_lines));
    if (!bom->cable_lines)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the bill of materials");
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        struct sn_bom_cables *line = cable_line(bom, l, &last);
        if (!line)
            return sn_error_set(err, SN_ERR_LIMIT, "more than %d kinds of cable", MAX_LINES);
        line->links++;
        /* A breakout cable is counted once, with its first leg; it has a
         * transceiver per leg and one at the trunk (model_power.c agrees). */
        unsigned ends = l->b_leg == 0 ? 2 : 1;
        line->cables += l->b_leg == 0;
        if (l->cable < spec->n_cable_types) {
            const struct sn_cable_type *ct = &spec->cable_types[l->cable];
            if (ct->medium == SN_CABLE_OPTIC)
                line->optics += ends;
            if (ct->medium == SN_CABLE_OPTIC || ct->medium == SN_CABLE_AOC)
                line->optics_power_w += ends * ct->optic_power_w;
        }
        struct sn_bom_tier *t = &bom->tiers[l->tier < SN_LINK_TIER_COUNT ? l->tier : 0];
        double speed = link_speed(m, l);
        t->links++;
        t->capacity_bytes_per_s += speed;
        t->link_bytes_per_s = t->links == 1 ? speed : min_known(t->link_bytes_per_s, speed);
    }
    for (uint32_t i = 0; i < bom->n_cable_lines; i++) {
        bom->links += bom->cable_lines[i].links;
        bom->optics += bom->cable_lines[i].optics;
        bom->optics_power_w += bom->cable_lines[i].optics_power_w;
    }
    for (int t = 0; t < SN_LINK_TIER_COUNT; t++)
        bom->tiers[t].bisection_bytes_per_s = bom->tiers[t].capacity_bytes_per_s / 2;
    qsort(bom->cable_lines, bom->n_cable_lines, sizeof(*bom->cable_lines), cmp_cable_line);
    return SN_OK;
}

/* ---- bandwidth per template ------------------------------------------- */

static void template_figures(const struct sn_model *m, uint32_t sn, struct sn_bom_template *bt)
{
    const struct sn_spec *spec = m->spec;
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct sn_template *t = sn_model_supernode_template(m, sn);
    const struct sn_server_model *sm = &spec->server_models[t->server_model];
    const struct sn_gpu_model *gm = &spec->gpu_models[sm->gpu_model];
    bt->template_index = s->template_index;
    bt->gpus = s->n_gpus;
    bt->scaleup_chips = s->n_scaleup;
    if (s->n_scaleup > 0) {
        const struct sn_switch_model *chip = &spec->switch_models[t->scaleup.switch_model];
        double link = min_known(gm->scaleup_link_bytes_per_s, chip->port_bytes_per_s);
        bt->scaleup_links = (uint64_t)s->n_gpus * gm->scaleup_links;
        bt->scaleup_ports = (uint64_t)s->n_scaleup * chip->ports;
        bt->scaleup_gpu_bytes_per_s = gm->scaleup_links * link;
        bt->scaleup_supernode_bytes_per_s = bt->scaleup_gpu_bytes_per_s * s->n_gpus;
    }
    if (s->n_leaves > 0 && sm->gpus > 0) {
        double nic = min_known(sm->nic_bytes_per_s, port_speed(m, s->first_leaf));
        bt->scaleout_gpu_bytes_per_s = nic * sm->nics / sm->gpus;
    }
    if (bt->scaleout_gpu_bytes_per_s > 0)
        bt->convergence = bt->scaleup_gpu_bytes_per_s / bt->scaleout_gpu_bytes_per_s;
}

static enum sn_err count_templates(const struct sn_model *m, struct sn_bom *bom,
                                   struct sn_error *err)
{
    const struct sn_spec *spec = m->spec;
    bom->templates = calloc(spec->n_templates + 1, sizeof(*bom->templates));
    if (!bom->templates)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the bill of materials");
    /* Instances of a template are identical; the first one gives the
     * figures. Templates appear in spec order. */
    for (uint32_t ti = 0; ti < spec->n_templates; ti++) {
        struct sn_bom_template *bt = &bom->templates[bom->n_templates];
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
            if (m->supernodes[sn].template_index != ti)
                continue;
            if (bt->supernodes++ == 0)
                template_figures(m, sn, bt);
        }
        if (bt->supernodes > 0)
            bom->n_templates++;
    }
    return SN_OK;
}

static void fabric_figures(const struct sn_model *m, struct sn_bom *bom)
{
    const struct sn_bom_tier *t = bom->tiers;
    bom->fabric_tiers = m->n_cores > 0 ? 3 : m->n_spines > 0 ? 2 : 1;
    if (t[SN_TIER_LEAF_SPINE].capacity_bytes_per_s > 0)
        bom->leaf_oversubscription =
            t[SN_TIER_NODE_LEAF].capacity_bytes_per_s / t[SN_TIER_LEAF_SPINE].capacity_bytes_per_s;
    if (t[SN_TIER_SPINE_CORE].capacity_bytes_per_s > 0)
        bom->spine_oversubscription =
            t[SN_TIER_LEAF_SPINE].capacity_bytes_per_s / t[SN_TIER_SPINE_CORE].capacity_bytes_per_s;
}

/* ---- power and cooling ------------------------------------------------ */

/* Every figure comes from sn_model_power_compute(), the computation the
 * design review reads, so that a margin printed here and rule R04 agree. */
static enum sn_err count_power(const struct sn_model *m, struct sn_bom *bom, struct sn_error *err)
{
    double pf = m->spec->review.peak_factor > 0 ? m->spec->review.peak_factor : DEFAULT_PEAK_FACTOR;
    struct sn_model_power p;
    enum sn_err rc = sn_model_power_compute(m, pf, &p, err);
    if (rc != SN_OK)
        return rc;
    bom->power = calloc(m->n_power_domains + 1, sizeof(*bom->power));
    bom->rack = calloc(m->n_racks + 1, sizeof(*bom->rack));
    bom->loop = calloc(m->n_cooling_loops + 1, sizeof(*bom->loop));
    if (!bom->power || !bom->rack || !bom->loop) {
        sn_model_power_release(&p);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the bill of materials");
    }
    for (uint32_t pd = 0; pd < m->n_power_domains; pd++) {
        bom->power[pd].capacity_w = sn_model_power_domain_spec(m, pd)->capacity_w;
        bom->power[pd].steady_w = p.pd_w[pd];
        bom->power[pd].peak_w = p.pd_peak_w[pd];
        bom->power[pd].failover_peak_w = p.pd_failover_peak_w[pd];
    }
    for (uint32_t r = 0; r < m->n_racks; r++) {
        bom->rack[r].limit_w =
            m->rack_supernode[r] == SN_NONE
                ? m->spec->fabric.racks.power_limit_w
                : sn_model_supernode_template(m, m->rack_supernode[r])->racks.power_limit_w;
        bom->rack[r].steady_w = p.rack_w[r];
        bom->rack[r].peak_w = p.rack_peak_w[r];
    }
    for (uint32_t l = 0; l < m->n_cooling_loops; l++) {
        bom->loop[l].capacity_w = sn_model_cooling_loop_spec(m, l)->capacity_w;
        bom->loop[l].heat_w = p.loop_w[l];
    }
    bom->unassigned_w = p.unplaced_w;
    bom->steady_w = p.steady_w;
    bom->peak_w = p.peak_w;
    sn_model_power_release(&p);
    return SN_OK;
}

/* ---- blast radius ------------------------------------------------------ */

/* Every domain kind of the model lies inside one supernode, so one failure
 * is measured by marking its GPUs and counting that supernode's range. */
static void blast_one(const struct sn_model *m, enum sn_domain_kind kind, uint32_t id, uint32_t sn,
                      struct sn_bitset *gpus, struct sn_bom_blast *b)
{
    const struct sn_supernode *s = &m->supernodes[sn];
    uint32_t lost = sn_model_domain_gpus(m, kind, id, gpus);
    uint32_t counted = sn_bitset_count_range(gpus, s->first_gpu, s->n_gpus);
    if (counted > lost)
        lost = counted;
    for (uint32_t g = s->first_gpu; g < s->first_gpu + s->n_gpus; g++)
        sn_bitset_clear(gpus, g);
    b->domains++;
    if (lost > b->max_gpus)
        b->max_gpus = lost;
    if (lost > 0 && b->max_supernodes_hit < 1)
        b->max_supernodes_hit = 1;
    if (s->n_gpus > 0 && counted == s->n_gpus && b->max_supernodes < 1)
        b->max_supernodes = 1;
}

static enum sn_err count_blast(const struct sn_model *m, struct sn_bom *bom, struct sn_error *err)
{
    struct sn_bitset gpus = {0};
    enum sn_err rc = sn_bitset_init(&gpus, m->n_gpus ? m->n_gpus : 1, err);
    if (rc != SN_OK)
        return rc;
    uint32_t leaf_id = 0;
    struct sn_bom_blast *b = bom->blast;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *s = &m->supernodes[sn];
        for (uint32_t g = s->first_gpu; g < s->first_gpu + s->n_gpus; g++)
            blast_one(m, SN_DOMAIN_GPU, g, sn, &gpus, &b[SN_DOMAIN_GPU]);
        for (uint32_t i = s->first_server; i < s->first_server + s->n_servers; i++)
            blast_one(m, SN_DOMAIN_SERVER, i, sn, &gpus, &b[SN_DOMAIN_SERVER]);
        for (uint32_t i = s->first_rack; i < s->first_rack + s->n_racks; i++)
            blast_one(m, SN_DOMAIN_RACK, i, sn, &gpus, &b[SN_DOMAIN_RACK]);
        for (uint32_t i = 0; i < s->n_power_domains; i++)
            blast_one(m, SN_DOMAIN_POWER_DOMAIN, s->first_power_domain + i, sn, &gpus,
                      &b[SN_DOMAIN_POWER_DOMAIN]);
        for (uint32_t i = 0; i < s->n_cooling_loops; i++)
            blast_one(m, SN_DOMAIN_COOLING_LOOP, s->first_cooling_loop + i, sn, &gpus,
                      &b[SN_DOMAIN_COOLING_LOOP]);
        for (uint32_t i = 0; i < s->n_leaves; i++)
            blast_one(m, SN_DOMAIN_LEAF, leaf_id++, sn, &gpus, &b[SN_DOMAIN_LEAF]);
        blast_one(m, SN_DOMAIN_SUPERNODE, sn, sn, &gpus, &b[SN_DOMAIN_SUPERNODE]);
    }
    sn_bitset_release(&gpus);
    struct sn_bom_fabric_blast *fb = &bom->fabric_blast;
    fb->domains = m->n_fabric_pds;
    fb->spines = m->n_spines;
    fb->cores = m->n_cores;
    fb->min_bisection_kept = 1.0;
    for (uint32_t pd = m->first_fabric_pd; pd < m->first_fabric_pd + m->n_fabric_pds; pd++) {
        struct sn_model_fabric_loss loss;
        sn_model_fabric_loss(m, pd, &loss);
        fb->max_spines_lost = loss.spines_lost > fb->max_spines_lost ? loss.spines_lost
                                                                     : fb->max_spines_lost;
        fb->max_cores_lost = loss.cores_lost > fb->max_cores_lost ? loss.cores_lost
                                                                  : fb->max_cores_lost;
        if (loss.bisection_kept < fb->min_bisection_kept)
            fb->min_bisection_kept = loss.bisection_kept;
    }
    return SN_OK;
}

/* ---- counts and storage ----------------------------------------------- */

static enum sn_err count_entities(const struct sn_model *m, struct sn_bom *bom,
                                  struct sn_error *err)
{
    const struct sn_spec *spec = m->spec;
    bom->supernodes = m->n_supernodes;
    bom->servers = m->n_servers;
    bom->gpus = m->n_gpus;
    bom->racks = m->n_racks;
    bom->power_domains = m->n_power_domains;
    bom->cooling_loops = m->n_cooling_loops;
    bom->gpus_by_model = calloc(spec->n_gpu_models + 1, sizeof(uint32_t));
    bom->servers_by_model = calloc(spec->n_server_models + 1, sizeof(uint32_t));
    bom->storage = calloc(spec->n_storage + 1, sizeof(*bom->storage));
    if (!bom->gpus_by_model || !bom->servers_by_model || !bom->storage)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the bill of materials");
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        const struct sn_server_model *sm = sn_model_server_spec(m, sv);
        const struct sn_gpu_model *gm = &spec->gpu_models[sm->gpu_model];
        bom->servers_by_model[m->server_model[sv]]++;
        bom->gpus_by_model[sm->gpu_model] += sm->gpus;
        bom->dense_bf16_flops += sm->gpus * gm->dense_bf16_flops;
    }
    bom->n_storage = spec->n_storage;
    for (uint32_t i = 0; i < spec->n_storage; i++) {
        const struct sn_storage_spec *st = &spec->storage[i];
        struct sn_bom_storage *bs = &bom->storage[i];
        bs->spec_index = i;
        if (st->kind != SN_STORAGE_LOCAL) {
            bs->capacity_bytes = st->capacity_bytes;
            bs->read_bytes_per_s = st->read_bytes_per_s;
            bs->write_bytes_per_s = st->write_bytes_per_s;
            continue;
        }
        for (uint32_t sv = 0; sv < m->n_servers; sv++) {
            const struct sn_server_model *sm = sn_model_server_spec(m, sv);
            bs->capacity_bytes += sm->nvme_bytes;
            bs->read_bytes_per_s += sm->nvme_read_bytes_per_s;
            bs->write_bytes_per_s += sm->nvme_write_bytes_per_s;
        }
    }
    return SN_OK;
}

/* ---- totals -------------------------------------------------------------- */

static void add_server(struct sn_bom_host_totals *t, const struct sn_server_model *sm,
                       const struct sn_gpu_model *gm)
{
    t->servers++;
    t->gpus += sm->gpus;
    t->cpu_cores += sm->cpu_cores;
    t->hbm_bytes += sm->gpus * gm->hbm_bytes;
    double usable = gm->hbm_bytes - SN_BOM_HBM_RESERVE;
    t->hbm_usable_bytes += sm->gpus * (usable > 0 ? usable : 0);
    t->hbm_bytes_per_s += sm->gpus * gm->hbm_bytes_per_s;
    t->host_memory_bytes += sm->memory_bytes;
}

static enum sn_err count_totals(const struct sn_model *m, struct sn_bom *bom, struct sn_error *err)
{
    const struct sn_spec *spec = m->spec;
    bom->rack_totals = calloc(m->n_racks + 1, sizeof(*bom->rack_totals));
    bom->supernode_totals = calloc(m->n_supernodes + 1, sizeof(*bom->supernode_totals));
    bom->gpu_figures = calloc(spec->n_gpu_models + 1, sizeof(*bom->gpu_figures));
    if (!bom->rack_totals || !bom->supernode_totals || !bom->gpu_figures)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the bill of materials");
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        const struct sn_server_model *sm = sn_model_server_spec(m, sv);
        const struct sn_gpu_model *gm = &spec->gpu_models[sm->gpu_model];
        add_server(&bom->total, sm, gm);
        if (m->server_rack[sv] < m->n_racks)
            add_server(&bom->rack_totals[m->server_rack[sv]], sm, gm);
        if (m->server_supernode[sv] < m->n_supernodes)
            add_server(&bom->supernode_totals[m->server_supernode[sv]], sm, gm);
    }
    for (uint32_t i = 0; i < spec->n_gpu_models; i++) {
        const struct sn_gpu_model *gm = &spec->gpu_models[i];
        struct sn_bom_gpu_figures *f = &bom->gpu_figures[i];
        f->ridge_flop_per_byte = gm->hbm_bytes_per_s > 0 ? gm->dense_bf16_flops / gm->hbm_bytes_per_s : 0;
        f->scaleup_bytes_per_flop = gm->dense_bf16_flops > 0 ? gm->scaleup_links *
                                                                   gm->scaleup_link_bytes_per_s /
                                                                   gm->dense_bf16_flops
                                                             : 0;
    }
    for (uint32_t i = 0; i < bom->n_cable_lines; i++) {
        const struct sn_bom_cables *c = &bom->cable_lines[i];
        if (c->tier >= SN_LINK_TIER_COUNT)
            continue;
        struct sn_bom_tier_media *t = &bom->media[c->tier];
        t->links += c->links;
        t->cables += c->cables;
        t->optics += c->optics;
        t->optics_power_w += c->optics_power_w;
    }
    for (uint32_t i = 0; i < spec->n_appliances; i++) {
        const struct sn_appliance_spec *a = &spec->appliances[i];
        bom->appliances_by_kind[a->kind] += a->count;
        bom->appliance_racks += a->racks;
        bom->appliance_rack_units += (uint64_t)a->count * a->rack_units;
        bom->appliance_w += a->count * a->power_w;
    }
    if (spec->su.supernodes) {
        bom->su_supernodes = spec->su.supernodes;
        bom->su_units = (bom->supernodes + spec->su.supernodes - 1) / spec->su.supernodes;
        bom->su_rack_power_w = spec->su.rack_power_w;
    }
    for (uint32_t r = 0; r < bom->racks; r++)
        if (bom->rack[r].peak_w > bom->rack_peak_max_w)
            bom->rack_peak_max_w = bom->rack[r].peak_w;
    bom->pue = spec->facility.pue;
    if (bom->pue > 0) {
        bom->facility_steady_w = (bom->steady_w + bom->appliance_w) * bom->pue;
        bom->facility_peak_w = (bom->peak_w + bom->appliance_w) * bom->pue;
    }
    return SN_OK;
}

enum sn_err sn_bom_compute(const struct sn_model *m, struct sn_bom *bom, struct sn_error *err)
{
    memset(bom, 0, sizeof(*bom));
    enum sn_err rc = count_entities(m, bom, err);
    if (rc == SN_OK)
        rc = count_switches(m, bom, err);
    if (rc == SN_OK)
        rc = count_links(m, bom, err);
    if (rc == SN_OK)
        rc = count_templates(m, bom, err);
    if (rc == SN_OK)
        rc = count_power(m, bom, err);
    if (rc == SN_OK)
        rc = count_blast(m, bom, err);
    if (rc == SN_OK)
        rc = count_totals(m, bom, err);
    if (rc != SN_OK) {
        sn_bom_release(bom);
        return rc;
    }
    fabric_figures(m, bom);
    return SN_OK;
}
