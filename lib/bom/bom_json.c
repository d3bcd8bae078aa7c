/*
 * The bill of materials as JSON (schema "supernode.bom/1", docs/bom.md).
 *
 * Built with jansson: a bom holds one row per power domain, rack and loop,
 * a few thousand at 100,000 GPUs, so the document stays small. Keys are
 * stable and only ever added; quantities carry their unit in the key
 * (_w, _bytes, _bytes_per_s per direction, _flops).
 */
#include <jansson.h>
#include <stdio.h>

#include <sn/bom.h>

#define NAME_LEN 160
#define REAL_DIGITS 12

/* Adds a key, taking the reference. jansson returns NULL values only when
 * memory runs out; such a key is then left out of the document. */
static void put(json_t *obj, const char *key, json_t *value)
{
    json_object_set_new(obj, key, value);
}

static json_t *jint(uint64_t v)
{
    return json_integer((json_int_t)v);
}

static json_t *counts_json(const struct sn_model *m, const struct sn_bom *bom)
{
    json_t *c = json_object(), *sw = json_object();
    put(c, "supernodes", jint(bom->supernodes));
    put(c, "servers", jint(bom->servers));
    put(c, "gpus", jint(bom->gpus));
    put(c, "racks", jint(bom->racks));
    put(c, "power_domains", jint(bom->power_domains));
    put(c, "cooling_loops", jint(bom->cooling_loops));
    for (int r = 0; r < SN_SWITCH_ROLE_COUNT; r++)
        put(sw, sn_switch_role_name((enum sn_switch_role)r), jint(bom->switches_by_role[r]));
    put(c, "switches", sw);
    put(c, "links", jint(bom->links));
    put(c, "optical_modules", jint(bom->optics));
    json_t *g = json_array(), *s = json_array();
    for (uint32_t i = 0; i < m->spec->n_gpu_models; i++)
        if (bom->gpus_by_model[i])
            json_array_append_new(g, json_pack("{s:s, s:I}", "model", m->spec->gpu_models[i].name,
                                               "count", (json_int_t)bom->gpus_by_model[i]));
    for (uint32_t i = 0; i < m->spec->n_server_models; i++)
        if (bom->servers_by_model[i])
            json_array_append_new(s,
                                  json_pack("{s:s, s:I}", "model", m->spec->server_models[i].name,
                                            "count", (json_int_t)bom->servers_by_model[i]));
    put(c, "gpus_by_model", g);
    put(c, "servers_by_model", s);
    put(c, "dense_bf16_flops", json_real(bom->dense_bf16_flops));
    return c;
}

static json_t *switches_json(const struct sn_model *m, const struct sn_bom *bom)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < bom->n_switch_lines; i++) {
        const struct sn_bom_switches *l = &bom->switch_lines[i];
        json_t *o = json_object();
        put(o, "role", json_string(sn_switch_role_name((enum sn_switch_role)l->role)));
        put(o, "model", json_string(m->spec->switch_models[l->model].name));
        put(o, "count", jint(l->count));
        put(o, "ports", jint(l->ports));
        put(o, "ports_used", jint(l->ports_used));
        put(o, "ports_free", jint(l->ports_free));
        put(o, "ports_over", jint(l->ports_over));
        put(o, "power_w", json_real(l->power_w));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *cables_json(const struct sn_model *m, const struct sn_bom *bom)
{
    const struct sn_spec *spec = m->spec;
    json_t *a = json_array();
    for (uint32_t i = 0; i < bom->n_cable_lines; i++) {
        const struct sn_bom_cables *l = &bom->cable_lines[i];
        bool known = l->cable < spec->n_cable_types;
        json_t *o = json_object();
        put(o, "tier", json_string(sn_link_tier_name((enum sn_link_tier)l->tier)));
        put(o, "cable", known ? json_string(spec->cable_types[l->cable].name) : json_null());
        put(o, "medium",
            known ? json_string(sn_cable_medium_name(spec->cable_types[l->cable].medium))
                  : json_null());
        put(o, "length_class",
            l->length_class < spec->n_length_classes
                ? json_string(spec->length_classes[l->length_class].name)
                : json_null());
        put(o, "links", jint(l->links));
        put(o, "cables", jint(l->cables));
        put(o, "breakout", jint(known ? spec->cable_types[l->cable].breakout : 1));
        put(o, "lanes", jint(known ? spec->cable_types[l->cable].lanes : 0));
        put(o, "optical_modules", jint(l->optics));
        put(o, "optics_power_w", json_real(l->optics_power_w));
        put(o, "speed_bytes_per_s",
            known && spec->cable_types[l->cable].speed_bytes_per_s > 0
                ? json_real(spec->cable_types[l->cable].speed_bytes_per_s)
                : json_null());
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *template_json(const struct sn_model *m, const struct sn_bom_template *t)
{
    json_t *o = json_object();
    put(o, "template", json_string(m->spec->templates[t->template_index].name));
    put(o, "supernodes", jint(t->supernodes));
    put(o, "gpus_per_supernode", jint(t->gpus));
    put(o, "scaleup_chips_per_supernode", jint(t->scaleup_chips));
    put(o, "scaleup_links_per_supernode", jint(t->scaleup_links));
    put(o, "scaleup_ports_per_supernode", jint(t->scaleup_ports));
    put(o, "scaleup_gpu_bytes_per_s", json_real(t->scaleup_gpu_bytes_per_s));
    put(o, "scaleup_gpu_bidirectional_bytes_per_s", json_real(2 * t->scaleup_gpu_bytes_per_s));
    put(o, "scaleup_supernode_bytes_per_s", json_real(t->scaleup_supernode_bytes_per_s));
    put(o, "scaleout_gpu_bytes_per_s", json_real(t->scaleout_gpu_bytes_per_s));
    put(o, "convergence", json_real(t->convergence));
    return o;
}

static json_t *bandwidth_json(const struct sn_model *m, const struct sn_bom *bom)
{
    json_t *o = json_object(), *tiers = json_array(), *tmpl = json_array();
    put(o, "fabric_tiers", jint(bom->fabric_tiers));
    put(o, "leaf_oversubscription", json_real(bom->leaf_oversubscription));
    put(o, "spine_oversubscription", json_real(bom->spine_oversubscription));
    for (int t = 0; t < SN_LINK_TIER_COUNT; t++) {
        const struct sn_bom_tier *bt = &bom->tiers[t];
        json_t *e = json_object();
        put(e, "tier", json_string(sn_link_tier_name((enum sn_link_tier)t)));
        put(e, "links", jint(bt->links));
        put(e, "link_bytes_per_s", json_real(bt->link_bytes_per_s));
        put(e, "capacity_bytes_per_s", json_real(bt->capacity_bytes_per_s));
        put(e, "bisection_bytes_per_s", json_real(bt->bisection_bytes_per_s));
        json_array_append_new(tiers, e);
    }
    for (uint32_t i = 0; i < bom->n_templates; i++)
        json_array_append_new(tmpl, template_json(m, &bom->templates[i]));
    put(o, "tiers", tiers);
    put(o, "templates", tmpl);
    return o;
}

static json_t *power_json(const struct sn_model *m, const struct sn_bom *bom)
{
    char name[NAME_LEN];
    json_t *o = json_object(), *pd = json_array();
    double pf = m->spec->review.peak_factor > 0 ? m->spec->review.peak_factor : 1.3;
    put(o, "peak_factor", json_real(pf));
    put(o, "steady_w", json_real(bom->steady_w));
    put(o, "peak_w", json_real(bom->peak_w));
    put(o, "optics_w", json_real(bom->optics_power_w));
    put(o, "unassigned_w", json_real(bom->unassigned_w));
    for (uint32_t i = 0; i < m->n_power_domains; i++) {
        const struct sn_bom_power *p = &bom->power[i];
        json_t *e = json_object();
        put(e, "name", json_string(sn_model_power_domain_name(m, i, name, sizeof(name))));
        put(e, "steady_w", json_real(p->steady_w));
        put(e, "peak_w", json_real(p->peak_w));
        put(e, "failover_peak_w", json_real(p->failover_peak_w));
        put(e, "capacity_w", json_real(p->capacity_w));
        json_array_append_new(pd, e);
    }
    put(o, "domains", pd);
    return o;
}

static json_t *feeds_json(const struct sn_model *m)
{
    const struct sn_spec *spec = m->spec;
    json_t *a = json_array();
    for (uint32_t t = 0; t < spec->n_templates; t++) {
        const struct sn_feed_spec *f = &spec->templates[t].racks.feed;
        uint32_t racks = 0;
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
            if (m->supernodes[sn].template_index == t)
                racks += m->supernodes[sn].n_racks;
        if (f->count == 0 || racks == 0)
            continue;
        double w = sn_model_feed_capacity_w(f);
        json_array_append_new(
            a, json_pack("{s:s, s:I, s:I, s:I, s:f, s:I, s:f, s:f, s:f, s:f, s:s}", "template",
                         spec->templates[t].name, "racks", (json_int_t)racks, "feeds_per_rack",
                         (json_int_t)f->count, "feeds", (json_int_t)racks * f->count,
                         "voltage_v", f->voltage_v, "phases", (json_int_t)f->phases, "current_a",
                         f->current_a, "power_factor", f->power_factor, "capacity_w", w,
                         "continuous_w", w * f->continuous, "redundancy",
                         sn_psu_redundancy_name(f->redundancy)));
    }
    return a;
}

static json_t *racks_loops_json(const struct sn_model *m, const struct sn_bom *bom, bool racks)
{
    char name[NAME_LEN];
    json_t *a = json_array();
    uint32_t n = racks ? m->n_racks : m->n_cooling_loops;
    for (uint32_t i = 0; i < n; i++) {
        json_t *e = json_object();
        if (racks) {
            put(e, "name", json_string(sn_model_rack_name(m, i, name, sizeof(name))));
            put(e, "steady_w", json_real(bom->rack[i].steady_w));
            put(e, "peak_w", json_real(bom->rack[i].peak_w));
            put(e, "limit_w", json_real(bom->rack[i].limit_w));
        } else {
            put(e, "name", json_string(sn_model_cooling_loop_name(m, i, name, sizeof(name))));
            put(e, "heat_w", json_real(bom->loop[i].heat_w));
            put(e, "capacity_w", json_real(bom->loop[i].capacity_w));
        }
        json_array_append_new(a, e);
    }
    return a;
}

static json_t *blast_storage_json(const struct sn_model *m, const struct sn_bom *bom, bool blast)
{
    json_t *a = json_array();
    if (blast) {
        for (int k = 0; k < SN_DOMAIN_KIND_COUNT; k++) {
            const struct sn_bom_blast *b = &bom->blast[k];
            json_array_append_new(a, json_pack("{s:s, s:I, s:I, s:I, s:I}", "kind",
                                               sn_domain_kind_name((enum sn_domain_kind)k),
                                               "domains", (json_int_t)b->domains, "max_gpus",
                                               (json_int_t)b->max_gpus, "max_supernodes",
                                               (json_int_t)b->max_supernodes, "max_supernodes_hit",
                                               (json_int_t)b->max_supernodes_hit));
        }
        return a;
    }
    for (uint32_t i = 0; i < bom->n_storage; i++) {
        const struct sn_bom_storage *s = &bom->storage[i];
        const struct sn_storage_spec *st = &m->spec->storage[s->spec_index];
        json_array_append_new(a,
                              json_pack("{s:s, s:s, s:f, s:f, s:f}", "name", st->name, "kind",
                                        sn_storage_kind_name(st->kind), "capacity_bytes",
                                        s->capacity_bytes, "read_bytes_per_s", s->read_bytes_per_s,
                                        "write_bytes_per_s", s->write_bytes_per_s));
    }
    return a;
}

static json_t *host_json(const struct sn_bom_host_totals *t)
{
    return json_pack("{s:I, s:I, s:I, s:f, s:f, s:f, s:f}", "servers", (json_int_t)t->servers,
                     "gpus", (json_int_t)t->gpus, "cpu_cores", (json_int_t)t->cpu_cores,
                     "hbm_bytes", t->hbm_bytes, "hbm_usable_bytes", t->hbm_usable_bytes,
                     "hbm_bytes_per_s", t->hbm_bytes_per_s, "host_memory_bytes",
                     t->host_memory_bytes);
}

static json_t *totals_json(const struct sn_model *m, const struct sn_bom *bom)
{
    const struct sn_spec *spec = m->spec;
    json_t *o = json_object(), *racks = json_array(), *sns = json_array(), *gpus = json_array(),
           *tiers = json_object();
    put(o, "cluster", host_json(&bom->total));
    for (uint32_t i = 0; i < bom->supernodes; i++)
        json_array_append_new(sns, host_json(&bom->supernode_totals[i]));
    for (uint32_t i = 0; i < bom->racks; i++)
        json_array_append_new(racks, host_json(&bom->rack_totals[i]));
    put(o, "supernodes", sns);
    put(o, "racks", racks);
    for (uint32_t i = 0; i < spec->n_gpu_models; i++) {
        const struct sn_gpu_model *gm = &spec->gpu_models[i];
        json_array_append_new(
            gpus, json_pack("{s:s, s:I, s:f, s:f}", "model", gm->name,
                            "count", (json_int_t)bom->gpus_by_model[i], "ridge_flop_per_byte",
                            bom->gpu_figures[i].ridge_flop_per_byte, "scaleup_bytes_per_flop",
                            bom->gpu_figures[i].scaleup_bytes_per_flop));
    }
    put(o, "gpu_models", gpus);
    for (int t = 0; t < SN_LINK_TIER_COUNT; t++) {
        const struct sn_bom_tier_media *md = &bom->media[t];
        put(tiers, sn_link_tier_name((enum sn_link_tier)t),
            json_pack("{s:I, s:I, s:I, s:f}", "links", (json_int_t)md->links, "cables",
                      (json_int_t)md->cables, "optics", (json_int_t)md->optics, "optics_power_w",
                      md->optics_power_w));
    }
    put(o, "link_tiers", tiers);
    json_t *apps = json_array();
    for (uint32_t i = 0; i < spec->n_appliances; i++) {
        const struct sn_appliance_spec *ap = &spec->appliances[i];
        json_array_append_new(apps, json_pack("{s:s, s:s, s:I, s:I, s:f, s:I}", "name", ap->name,
                                              "kind", sn_appliance_kind_name(ap->kind), "count",
                                              (json_int_t)ap->count, "rack_units",
                                              (json_int_t)ap->count * ap->rack_units, "power_w",
                                              ap->count * ap->power_w, "racks",
                                              (json_int_t)ap->racks));
    }
    put(o, "appliances", apps);
    put(o, "appliance_racks", jint(bom->appliance_racks));
    put(o, "appliance_w", json_real(bom->appliance_w));
    put(o, "su", bom->su_units ? json_pack("{s:I, s:I, s:f}", "units", (json_int_t)bom->su_units,
                                           "supernodes_per_unit",
                                           (json_int_t)bom->su_supernodes, "rack_power_w",
                                           bom->su_rack_power_w)
                               : json_null());
    put(o, "rack_peak_max_w", json_real(bom->rack_peak_max_w));
    put(o, "pue", bom->pue > 0 ? json_real(bom->pue) : json_null());
    put(o, "facility_steady_w", bom->pue > 0 ? json_real(bom->facility_steady_w) : json_null());
    put(o, "facility_peak_w", bom->pue > 0 ? json_real(bom->facility_peak_w) : json_null());
    return o;
}

enum sn_err sn_bom_write_json(FILE *out, const struct sn_model *m, const struct sn_bom *bom,
                              struct sn_error *err)
{
    json_t *doc = json_object();
    if (!doc)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory writing the bill of materials");
    put(doc, "schema", json_string("supernode.bom/1"));
    put(doc, "spec", m->spec->name ? json_string(m->spec->name) : json_null());
    put(doc, "counts", counts_json(m, bom));
    put(doc, "totals", totals_json(m, bom));
    put(doc, "switches", switches_json(m, bom));
    put(doc, "cables", cables_json(m, bom));
    put(doc, "bandwidth", bandwidth_json(m, bom));
    put(doc, "power", power_json(m, bom));
    put(doc, "racks", racks_loops_json(m, bom, true));
    put(doc, "feeds", feeds_json(m));
    put(doc, "cooling_loops", racks_loops_json(m, bom, false));
    put(doc, "blast_radius", blast_storage_json(m, bom, true));
    put(doc, "storage", blast_storage_json(m, bom, false));
    const struct sn_bom_fabric_blast *fb = &bom->fabric_blast;
    put(doc, "fabric_blast",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:f}", "domains", (json_int_t)fb->domains, "spines",
                  (json_int_t)fb->spines, "cores", (json_int_t)fb->cores, "max_spines_lost",
                  (json_int_t)fb->max_spines_lost, "max_cores_lost",
                  (json_int_t)fb->max_cores_lost, "min_bisection_kept", fb->min_bisection_kept));
    int rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(REAL_DIGITS));
    json_decref(doc);
    if (rc != 0 || fputc('\n', out) == EOF || ferror(out))
        return sn_error_set(err, SN_ERR_IO, "cannot write the bill of materials as JSON");
    return SN_OK;
}
