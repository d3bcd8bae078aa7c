/*
 * Unit tests of lib/spec (the cluster-spec parser) and lib/core/arena.
 *
 * Values asserted for examples/std-unit-64.yaml and tests/specs/good/
 * are read off those files by hand and converted by hand (400 Gb/s = 50e9
 * bytes/s per direction; 50 GB/s bidirectional = 25e9 per direction; 80 GiB
 * = 80 x 2^30 bytes). Every file in tests/specs/bad/ starts with
 * "# expect: <line>:<col>: <substring>" and must fail exactly there.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/spec.h>

#include "core/arena.h"
#include "sn_test.h"

static struct sn_spec *parse_ok(const char *rel)
{
    char path[1024];
    struct sn_spec *spec = NULL;
    struct sn_error err = {0};
    sn_test_path(path, sizeof(path), rel);
    if (sn_spec_parse_file(path, &spec, &err) != SN_OK)
        fail_msg("%s: %s", rel, err.message);
    assert_non_null(spec);
    return spec;
}

static uint32_t length_class(const struct sn_spec *spec, const char *name)
{
    for (uint32_t i = 0; i < spec->n_length_classes; i++)
        if (strcmp(spec->length_classes[i].name, name) == 0)
            return i;
    fail_msg("no length class '%s'", name);
    return SN_NONE;
}

static void std_unit_catalog(void **state)
{
    (void)state;
    struct sn_spec *spec = parse_ok("examples/std-unit-64.yaml");
    assert_string_equal(spec->name, "std-unit-64");
    assert_int_equal(spec->version, 1);
    assert_non_null(strstr(spec->file, "std-unit-64.yaml"));

    assert_int_equal(spec->n_gpu_models, 1);
    const struct sn_gpu_model *g = &spec->gpu_models[0];
    assert_string_equal(g->name, "H100-SXM5-80GB");
    assert_int_equal(g->loc.line, 10);
    assert_int_equal(g->loc.column, 5);
    assert_near(g->dense_bf16_flops, 989e12, 1);
    assert_near(g->hbm_bytes, 80.0 * 1073741824.0, 0.5);
    assert_near(g->hbm_bytes_per_s, 3.35e12, 1);
    assert_near(g->tdp_w, 700, 1e-9);
    assert_int_equal(g->scaleup_links, 18);
    assert_near(g->scaleup_link_bytes_per_s, 25e9, 1); /* 50 GB/s bidirectional */

    assert_int_equal(spec->n_server_models, 1);
    const struct sn_server_model *s = &spec->server_models[0];
    assert_int_equal(s->gpu_model, 0);
    assert_int_equal(s->gpus, 8);
    assert_int_equal(s->cpus, 2);
    assert_int_equal(s->cpu_cores, 112);
    assert_near(s->memory_bytes, 2.0 * 1099511627776.0, 0.5);
    assert_int_equal(s->nics, 8);
    assert_near(s->nic_bytes_per_s, 50e9, 1); /* 400 Gb/s */
    assert_int_equal(s->mgmt_ports, 1);
    assert_near(s->nvme_bytes, 30e12, 1);
    assert_near(s->nvme_read_bytes_per_s, 25e9, 1);
    assert_near(s->nvme_write_bytes_per_s, 12e9, 1);
    assert_near(s->base_power_w, 4600, 1e-9);
    assert_int_equal(s->feeds, 1);
    assert_int_equal(s->rack_units, 8);

    assert_int_equal(spec->n_switch_models, 3);
    assert_int_equal(spec->switch_models[0].kind, SN_SWITCH_NVLINK);
    assert_near(spec->switch_models[0].port_bytes_per_s, 25e9, 1);
    assert_int_equal(spec->switch_models[0].rack_units, 1); /* default */
    assert_int_equal(spec->switch_models[1].kind, SN_SWITCH_ETHERNET);
    assert_int_equal(spec->switch_models[1].ports, 64);
    assert_near(spec->switch_models[1].port_bytes_per_s, 50e9, 1);
    assert_near(spec->switch_models[1].power_w, 1500, 1e-9);
    assert_near(spec->switch_models[2].port_bytes_per_s, 125e6, 1e-3); /* 1 Gb/s */
    assert_int_equal(spec->switch_models[2].ports, 48);

    assert_int_equal(spec->n_cable_types, 4);
    assert_int_equal(spec->cable_types[0].medium, SN_CABLE_COPPER);
    assert_int_equal(spec->cable_types[2].medium, SN_CABLE_AOC);
    assert_near(spec->cable_types[2].reach_m, 30, 1e-12);
    assert_near(spec->cable_types[3].reach_m, 100, 1e-12);
    assert_near(spec->cable_types[1].optic_power_w, 0, 0);

    /* Three user classes override built-ins of the same name: six in all. */
    assert_int_equal(spec->n_length_classes, 6);
    uint32_t in_server = length_class(spec, "in-server");
    assert_near(spec->length_classes[in_server].length_m, 0.5, 1e-12);
    assert_int_equal(spec->length_classes[in_server].loc.line, 57);
    assert_near(spec->length_classes[length_class(spec, "campus")].length_m, 2000, 1e-9);
    assert_int_equal(spec->length_classes[length_class(spec, "campus")].loc.line, 0);
    sn_spec_free(spec);
}

static void std_unit_template(void **state)
{
    (void)state;
    struct sn_spec *spec = parse_ok("examples/std-unit-64.yaml");
    assert_int_equal(spec->n_templates, 1);
    const struct sn_template *t = &spec->templates[0];
    assert_string_equal(t->name, "hgx-unit");
    assert_int_equal(t->server_model, 0);
    assert_int_equal(t->servers, 8);
    assert_int_equal(t->scaleup.domain, SN_SCALEUP_SERVER);
    assert_int_equal(t->scaleup.switch_model, 0);
    assert_int_equal(t->scaleup.chips, 4);
    assert_int_equal(t->scaleup.hop_limit, 1);
    assert_int_equal(t->scaleup.cabling.cable, 0);
    assert_int_equal(t->scaleup.cabling.length_class, length_class(spec, "in-server"));
    assert_int_equal(t->scaleup.power.count, 0);

    assert_int_equal(t->leaves.switch_model, 1);
    assert_int_equal(t->leaves.count, 2);
    assert_int_equal(t->leaves.attach, SN_LEAF_ATTACH_PAIR);
    assert_near(t->leaves.oversubscription, 1.0, 0);
    assert_int_equal(t->leaves.cabling.cable, 2);
    assert_int_equal(t->leaves.cabling.length_class, length_class(spec, "adjacent-rack"));
    assert_int_equal(t->leaves.power.count, 2);
    assert_int_equal(t->leaves.power.index[0], 0);
    assert_int_equal(t->leaves.power.index[1], 1);

    assert_int_equal(t->mgmt.separation, SN_MGMT_PHYSICAL);
    assert_int_equal(t->mgmt.switch_model, 2);
    assert_int_equal(t->mgmt.count, 2);
    assert_int_equal(t->mgmt.cabling.cable, 3);
    assert_int_equal(t->mgmt.power.count, 2);

    assert_int_equal(t->n_power_domains, 2);
    assert_string_equal(t->power_domains[0].name, "A");
    assert_near(t->power_domains[0].capacity_w, 80e3, 1e-9);
    assert_int_equal(t->power_domains[0].kind, SN_POWER_AC);
    assert_int_equal(t->power_domains[0].redundant_with, 1);
    assert_int_equal(t->power_domains[1].redundant_with, 0);
    assert_int_equal(t->server_power.count, 2);
    assert_int_equal(t->server_power.index[0], 0);
    assert_int_equal(t->server_power.index[1], 1);

    assert_int_equal(t->n_cooling_loops, 1);
    assert_int_equal(t->cooling_loops[0].kind, SN_COOLING_LIQUID);
    assert_near(t->cooling_loops[0].capacity_w, 120e3, 1e-9);
    assert_near(t->cooling_loops[0].flow_lpm, 180, 1e-12);
    assert_int_equal(t->racks.count, 2);
    assert_near(t->racks.power_limit_w, 50e3, 1e-9);
    assert_int_equal(t->racks.cooling, SN_COOLING_LIQUID);
    assert_int_equal(t->racks.loops.count, 1);
    assert_int_equal(t->racks.loops.index[0], 0);
    sn_spec_free(spec);
}

static void std_unit_rest(void **state)
{
    (void)state;
    struct sn_spec *spec = parse_ok("examples/std-unit-64.yaml");
    assert_int_equal(spec->n_groups, 1);
    assert_int_equal(spec->groups[0].template_index, 0);
    assert_int_equal(spec->groups[0].count, 1);
    assert_string_equal(spec->groups[0].prefix, "sn");
    assert_int_equal(spec->groups[0].pool, 0);
    assert_int_equal(spec->n_pools, 1);
    assert_int_equal(spec->pools[0].kind, SN_POOL_DEDICATED);
    assert_true(spec->pools[0].training);
    assert_int_equal(spec->n_storage, 2);
    assert_int_equal(spec->storage[0].kind, SN_STORAGE_LOCAL);
    assert_int_equal(spec->storage[1].kind, SN_STORAGE_PARALLEL_FS);
    assert_near(spec->storage[1].capacity_bytes, 2e15, 1);
    assert_near(spec->storage[1].read_bytes_per_s, 200e9, 1);
    assert_near(spec->storage[1].write_bytes_per_s, 100e9, 1);
    assert_int_equal(spec->n_layouts, 1);
    assert_int_equal(spec->layouts[0].gpus, 64);
    assert_int_equal(spec->layouts[0].tp, 8);
    assert_int_equal(spec->layouts[0].dp, 8);
    assert_int_equal(spec->layouts[0].ep, 1); /* default */
    assert_int_equal(spec->expect.gpus, 64);
    assert_int_equal(spec->expect.servers, 8);
    assert_int_equal(spec->expect.leaves, 0);
    assert_near(spec->review.air_cooling_limit_w, 40e3, 1e-9);
    assert_near(spec->review.power_margin, 1.5, 0);
    /* No fabric section: defaults, tiers absent. */
    assert_false(spec->fabric.present);
    assert_int_equal(spec->fabric.tiers, 0);
    assert_true(spec->fabric.rail_optimized);
    assert_near(spec->fabric.efficiency, 0.75, 0);
    assert_int_equal(spec->fabric.spine.switch_model, SN_NONE);
    assert_int_equal(spec->fabric.core.switch_model, SN_NONE);
    assert_int_equal(spec->fabric.spine.cabling.length_class, length_class(spec, "row"));
    assert_int_equal(spec->fabric.core.cabling.length_class, length_class(spec, "hall"));
    assert_int_equal(spec->fabric.n_power_domains, 0); /* no spine tier: no network racks */
    assert_int_equal(spec->fabric.racks.units, 42);

    assert_int_equal(sn_spec_find_gpu_model(spec, "H100-SXM5-80GB"), 0);
    assert_int_equal(sn_spec_find_server_model(spec, "HGX-H100-8"), 0);
    assert_int_equal(sn_spec_find_switch_model(spec, "Mgmt-48x1G"), 2);
    assert_int_equal(sn_spec_find_template(spec, "hgx-unit"), 0);
    assert_int_equal(sn_spec_find_storage(spec, "lustre"), 1);
    assert_int_equal(sn_spec_find_storage(spec, "nope"), SN_NONE);
    assert_int_equal(sn_spec_find_template(spec, NULL), SN_NONE);
    assert_int_equal(sn_spec_find_gpu_model(NULL, "x"), SN_NONE);
    sn_spec_free(spec);
}

static void minimal_defaults(void **state)
{
    (void)state;
    struct sn_spec *spec = parse_ok("tests/specs/good/minimal.yaml");
    assert_string_equal(spec->description, "");
    const struct sn_gpu_model *g = &spec->gpu_models[0];
    assert_int_equal(g->scaleup_links, 0);
    assert_near(g->scaleup_link_bytes_per_s, 0, 0);
    const struct sn_server_model *s = &spec->server_models[0];
    assert_int_equal(s->cpus, 2);
    assert_int_equal(s->cpu_cores, 0);
    assert_int_equal(s->nics, 0);
    assert_int_equal(s->mgmt_ports, 1);
    assert_int_equal(s->feeds, 1);
    assert_int_equal(s->rack_units, 0);
    const struct sn_template *t = &spec->templates[0];
    assert_int_equal(t->scaleup.domain, SN_SCALEUP_SERVER);
    assert_int_equal(t->scaleup.switch_model, SN_NONE);
    assert_int_equal(t->scaleup.hop_limit, 1);
    assert_int_equal(t->scaleup.cabling.cable, SN_NONE);
    assert_int_equal(t->scaleup.cabling.length_class, length_class(spec, "in-server"));
    assert_int_equal(t->leaves.switch_model, SN_NONE);
    assert_int_equal(t->leaves.count, 0);
    assert_int_equal(t->leaves.cabling.length_class, length_class(spec, "in-rack"));
    assert_int_equal(t->mgmt.separation, SN_MGMT_PHYSICAL);
    assert_int_equal(t->mgmt.count, 0);
    assert_int_equal(t->mgmt.switch_model, SN_NONE);
    assert_int_equal(t->power_domains[0].kind, SN_POWER_AC);
    assert_int_equal(t->power_domains[0].redundant_with, SN_NONE);
    assert_int_equal(t->server_power.count, 0); /* round-robin */
    assert_int_equal(t->n_cooling_loops, 0);
    assert_int_equal(t->racks.cooling, SN_COOLING_AIR);
    assert_int_equal(spec->groups[0].pool, SN_NONE);
    assert_int_equal(spec->n_pools + spec->n_storage + spec->n_layouts, 0);
    struct sn_review_config want;
    sn_review_config_defaults(&want);
    assert_memory_equal(&spec->review, &want, sizeof(want));
    assert_near(want.peak_factor, 1.3, 0);
    assert_near(want.survivor_fraction, 0.5, 0);
    assert_near(want.cooling_margin, 1.2, 0);
    assert_near(want.bandwidth_headroom, 0.3, 0);
    assert_near(want.memory_wall_bytes_per_flop, 0.003, 0);
    sn_spec_free(spec);
}

/* A two-level scale-up domain and cable lanes: the values and defaults. */
static void two_level_and_lanes(void **state)
{
    (void)state;
    static const char text[] =
        "version: 1\n"
        "name: tl\n"
        "catalog:\n"
        "  gpus: { N: {dense_bf16: 1 PFLOP/s, hbm: 64 GB, hbm_bandwidth: 1 TB/s, tdp: 500 W,\n"
        "              scaleup_links: 4, scaleup_link_bandwidth: 50 GB/s per-direction} }\n"
        "  servers: { S: {gpu: N, gpus: 4, nics: 4, nic_speed: 400 Gb/s, nic_lanes: 4,\n"
        "                 base_power: 1 kW} }\n"
        "  switches:\n"
        "    L1: {kind: nvlink, ports: 16, port_speed: 50 GB/s per-direction}\n"
        "    L2: {kind: nvlink, ports: 64, port_speed: 50 GB/s per-direction}\n"
        "    T: {kind: ethernet, ports: 32, port_speed: 800 Gb/s, port_lanes: 8}\n"
        "  cables:\n"
        "    bo: {medium: optic, reach: 30 m, lanes: 8, lane_speed: 100 Gb/s, breakout: 2}\n"
        "    up: {medium: optic, reach: 30 m}\n"
        "templates:\n"
        "  t:\n"
        "    server: S\n"
        "    servers: 8\n"
        "    scaleup:\n"
        "      domain: two-level\n"
        "      switch: L1\n"
        "      chips: 4\n"
        "      l2: {switch: L2, planes: 2, per_plane: 3, racks: 1, cable: up}\n"
        "    leaves: {switch: T, count: 2, cable: bo}\n"
        "    power_domains: {A: {capacity: 100 kW}}\n"
        "    racks: {count: 2, power_limit: 40 kW}\n"
        "supernodes: [{template: t, count: 1}]\n";
    struct sn_spec *spec = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_spec_parse_buffer("tl.yaml", text, strlen(text), &spec, &err), SN_OK);
    const struct sn_scaleup_spec *su = &spec->templates[0].scaleup;
    assert_int_equal(su->domain, SN_SCALEUP_TWO_LEVEL);
    assert_string_equal(sn_scaleup_domain_name(su->domain), "two-level");
    assert_int_equal(su->hop_limit, 3); /* L1, L2, L1 by default */
    assert_int_equal(su->cabling.length_class, length_class(spec, "in-server"));
    assert_int_equal(su->l2.switch_model, 1);
    assert_int_equal(su->l2.planes, 2);
    assert_int_equal(su->l2.per_plane, 3);
    assert_int_equal(su->l2.links, 1);
    assert_near(su->l2.oversubscription, 1.0, 0);
    assert_int_equal(su->l2.racks, 1);
    assert_int_equal(su->l2.cabling.cable, 1);
    assert_int_equal(su->l2.cabling.length_class, length_class(spec, "adjacent-rack"));
    assert_int_equal(su->l2.power.count, 0);
    const struct sn_cable_type *bo = &spec->cable_types[0];
    assert_int_equal(bo->lanes, 8);
    assert_int_equal(bo->breakout, 2);
    assert_near(bo->lane_bytes_per_s, 100e9 / 8, 1e-3);
    assert_near(bo->speed_bytes_per_s, 800e9 / 8, 1e-3); /* lanes x lane_speed */
    assert_int_equal(spec->cable_types[1].breakout, 1);
    assert_int_equal(spec->cable_types[1].lanes, 0);
    assert_int_equal(spec->switch_models[2].port_lanes, 8);
    assert_int_equal(spec->switch_models[0].port_lanes, 0);
    assert_int_equal(spec->server_models[0].nic_lanes, 4);
    sn_spec_free(spec);
    /* A server domain has no l2 (std-unit-64 states hop_limit 1). */
    spec = parse_ok("examples/std-unit-64.yaml");
    assert_int_equal(spec->templates[0].scaleup.l2.switch_model, SN_NONE);
    assert_int_equal(spec->templates[0].scaleup.hop_limit, 1);
    sn_spec_free(spec);
}

static void all_keys_catalog_template(void **state)
{
    (void)state;
    struct sn_spec *spec = parse_ok("tests/specs/good/all-keys.yaml");
    assert_string_equal(spec->description, "every key, once");
    assert_near(spec->gpu_models[0].scaleup_link_bytes_per_s, 50e9, 1);
    const struct sn_server_model *s = &spec->server_models[0];
    assert_near(s->nic_bytes_per_s, 100e9, 1); /* 800 Gb/s */
    assert_int_equal(s->feeds, 2);
    assert_int_equal(s->mgmt_ports, 2);
    assert_near(s->memory_bytes, 960.0 * 1073741824.0, 0.5);
    assert_int_equal(spec->switch_models[1].kind, SN_SWITCH_INFINIBAND);
    assert_near(spec->cable_types[2].optic_power_w, 15, 0);
    assert_int_equal(spec->cable_types[2].medium, SN_CABLE_OPTIC);
    assert_int_equal(spec->n_length_classes, 7); /* six built-in, in-rack overridden, pod */
    assert_near(spec->length_classes[length_class(spec, "in-rack")].length_m, 3, 0);
    assert_near(spec->length_classes[length_class(spec, "pod")].length_m, 60, 0);

    const struct sn_template *t = &spec->templates[0];
    assert_int_equal(t->scaleup.domain, SN_SCALEUP_SUPERNODE);
    assert_int_equal(t->scaleup.chips, 18);
    assert_int_equal(t->scaleup.cabling.length_class, length_class(spec, "in-rack"));
    assert_int_equal(t->scaleup.power.count, 2);
    assert_int_equal(t->scaleup.power.index[0], 1);
    assert_near(t->leaves.oversubscription, 2.0, 0);
    assert_int_equal(t->leaves.attach, SN_LEAF_ATTACH_RAIL);
    assert_int_equal(t->leaves.cabling.length_class, length_class(spec, "pod"));
    assert_int_equal(t->mgmt.separation, SN_MGMT_VLAN);
    assert_int_equal(t->mgmt.switch_model, SN_NONE);
    assert_int_equal(t->mgmt.count, 0);
    assert_int_equal(t->mgmt.cabling.length_class, length_class(spec, "in-server"));
    assert_int_equal(t->n_power_domains, 3);
    assert_int_equal(t->power_domains[0].kind, SN_POWER_HVDC);
    assert_int_equal(t->power_domains[0].redundant_with, 1);
    assert_int_equal(t->power_domains[1].redundant_with, SN_NONE);
    assert_int_equal(t->server_power.count, 3);
    assert_int_equal(t->server_power.index[2], 0);
    assert_near(t->cooling_loops[0].flow_lpm, 72, 1e-9); /* 1.2 L/s */
    assert_int_equal(t->cooling_loops[1].kind, SN_COOLING_AIR);
    assert_int_equal(t->racks.loops.count, 2);
    assert_int_equal(t->racks.loops.index[1], 1);
    sn_spec_free(spec);
}

static void all_keys_rest(void **state)
{
    (void)state;
    struct sn_spec *spec = parse_ok("tests/specs/good/all-keys.yaml");
    assert_int_equal(spec->n_groups, 2);
    assert_string_equal(spec->groups[0].prefix, "nvl");
    assert_string_equal(spec->groups[1].prefix, "sn");
    assert_int_equal(spec->groups[1].pool, 1);
    assert_true(spec->fabric.present);
    assert_int_equal(spec->fabric.tiers, 3);
    assert_false(spec->fabric.rail_optimized);
    assert_near(spec->fabric.efficiency, 0.8, 1e-12);
    assert_near(spec->fabric.per_gpu_need_bytes_per_s, 50e9, 1);
    assert_int_equal(spec->fabric.spine.switch_model, 2);
    assert_int_equal(spec->fabric.spine.cabling.cable, 2);
    assert_int_equal(spec->fabric.spine.cabling.length_class, length_class(spec, "row"));
    assert_near(spec->fabric.spine.oversubscription, 3.0, 0);
    assert_near(spec->fabric.core.oversubscription, 1.0, 0);
    /* The network racks and their feeds. */
    assert_int_equal(spec->fabric.n_power_domains, 2);
    assert_true(spec->fabric.power_domains_stated);
    assert_string_equal(spec->fabric.power_domains[0].name, "A");
    assert_near(spec->fabric.power_domains[0].capacity_w, 80e3, 1e-9);
    assert_int_equal(spec->fabric.power_domains[0].kind, SN_POWER_HVDC);
    assert_int_equal(spec->fabric.power_domains[0].redundant_with, 1);
    assert_int_equal(spec->fabric.power_domains[1].redundant_with, SN_NONE);
    assert_int_equal(spec->fabric.spine.power.count, 2);
    assert_int_equal(spec->fabric.spine.power.index[0], 1);
    assert_int_equal(spec->fabric.core.power.count, 1);
    assert_int_equal(spec->fabric.racks.count, 3);
    assert_int_equal(spec->fabric.racks.units, 48);
    assert_near(spec->fabric.racks.power_limit_w, 30e3, 1e-9);
    assert_int_equal(spec->fabric.racks.cooling, SN_COOLING_LIQUID);
    assert_int_equal(spec->fabric.spine.oversubscription_loc.line, 95);
    assert_int_equal(spec->fabric.spines, 0);
    assert_int_equal(spec->fabric.core.cabling.length_class, length_class(spec, "campus"));
    assert_int_equal(spec->pools[1].kind, SN_POOL_ELASTIC);
    assert_false(spec->pools[1].training);
    assert_int_equal(spec->storage[2].kind, SN_STORAGE_OBJECT);
    assert_near(spec->storage[1].read_bytes_per_s, 1e12, 1);
    assert_int_equal(spec->layouts[0].ep, 8);
    assert_int_equal(spec->layouts[0].cp, 2);
    assert_int_equal(spec->layouts[1].tp, 1);
    assert_int_equal(spec->expect.spine_core_cables, 64);
    assert_int_equal(spec->expect.leaf_spine_cables, 512);
    assert_int_equal(spec->expect.racks, 4);
    assert_near(spec->review.power_margin, 1.25, 0);
    assert_near(spec->review.peak_factor, 1.1, 0);
    assert_near(spec->review.survivor_fraction, 0.6, 1e-12);
    assert_near(spec->review.air_cooling_limit_w, 35e3, 0);
    assert_near(spec->review.cooling_margin, 1.5, 0);
    assert_near(spec->review.bandwidth_headroom, 0.2, 0);
    assert_near(spec->review.memory_wall_bytes_per_flop, 0.002, 0);
    sn_spec_free(spec);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Every .yaml of a directory, sorted, into names[]; returns the count. */
static size_t list_yaml(const char *rel, char names[][128], size_t max)
{
    char dir_path[1024];
    DIR *dir = opendir(sn_test_path(dir_path, sizeof(dir_path), rel));
    if (!dir)
        fail_msg("cannot open %s", dir_path);
    size_t n = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL && n < max) {
        size_t len = strlen(entry->d_name);
        if (len > 5 && len < 128 && strcmp(entry->d_name + len - 5, ".yaml") == 0)
            memcpy(names[n++], entry->d_name, len + 1); /* len < 128 */
    }
    closedir(dir);
    qsort(names, n, sizeof(names[0]), compare_names);
    return n;
}

static void every_good_spec_parses(void **state)
{
    (void)state;
    static char names[256][128];
    const char *dirs[] = {"examples", "tests/specs/good"};
    size_t total = 0;
    for (size_t d = 0; d < 2; d++) {
        size_t n = list_yaml(dirs[d], names, 256);
        for (size_t i = 0; i < n; i++) {
            char rel[512];
            snprintf(rel, sizeof(rel), "%s/%s", dirs[d], names[i]);
            struct sn_spec *spec = parse_ok(rel);
            assert_true(spec->n_groups >= 1);
            sn_spec_free(spec);
            total++;
        }
    }
    assert_true(total >= 4);
}

/* Parses "# expect: L:C: text" from the first line of a bad spec. */
static void read_expectation(const char *path, unsigned *line, unsigned *col, char *text,
                             size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    char first[512] = "";
    if (!fgets(first, sizeof(first), f))
        first[0] = '\0';
    fclose(f);
    int used = 0;
    if (sscanf(first, "# expect: %u:%u: %n", line, col, &used) != 2 || used == 0)
        fail_msg("%s: first line is not '# expect: L:C: text'", path);
    snprintf(text, len, "%s", first + used);
    text[strcspn(text, "\n")] = '\0';
}

static void every_bad_spec_fails_where_expected(void **state)
{
    (void)state;
    static char names[256][128];
    size_t n = list_yaml("tests/specs/bad", names, 256);
    assert_true(n >= 35);
    for (size_t i = 0; i < n; i++) {
        char rel[512], path[1024], text[512], prefix[1200];
        unsigned line = 0, col = 0;
        snprintf(rel, sizeof(rel), "tests/specs/bad/%s", names[i]);
        sn_test_path(path, sizeof(path), rel);
        read_expectation(path, &line, &col, text, sizeof(text));
        static struct sn_spec sentinel;
        struct sn_spec *spec = &sentinel; /* must become NULL */
        struct sn_error err = {0};
        enum sn_err rc = sn_spec_parse_file(path, &spec, &err);
        if (rc == SN_OK)
            fail_msg("%s parsed but should fail at %u:%u", rel, line, col);
        assert_null(spec);
        if (err.line != line || err.column != col || !strstr(err.message, text))
            fail_msg("%s: want %u:%u '%s', got %u:%u '%s'", rel, line, col, text, err.line,
                     err.column, err.message);
        snprintf(prefix, sizeof(prefix), "%s:%u:%u: ", path, line, col);
        if (strncmp(err.message, prefix, strlen(prefix)) != 0)
            fail_msg("%s: message does not start with '%s': %s", rel, prefix, err.message);
        enum sn_err want = strstr(text, "yaml syntax error") ? SN_ERR_SYNTAX : SN_ERR_INVALID;
        assert_int_equal(rc, want);
        assert_int_equal(err.code, want);
    }
}

/* A spec of groups x 64 GPUs (8 servers of 8), for the cluster-size cap. */
static enum sn_err parse_cluster(uint32_t groups, struct sn_spec **out, struct sn_error *err)
{
    char buf[1024];
    int len = snprintf(buf, sizeof(buf),
                       "version: 1\nname: big\ncatalog:\n  gpus:\n    g: {dense_bf16: 1 "
                       "PFLOP/s, hbm: 1 GB, hbm_bandwidth: 1 TB/s, tdp: 1 kW}\n  servers:\n"
                       "    s: {gpu: g, gpus: 8, base_power: 1 kW}\ntemplates:\n  t:\n"
                       "    server: s\n    servers: 8\n    power_domains: {A: {capacity: 1 MW}}\n"
                       "    racks: {count: 1, power_limit: 1 MW}\nsupernodes:\n"
                       "  - {template: t, count: %u}\n",
                       (unsigned)groups);
    return sn_spec_parse_buffer("big.yaml", buf, (size_t)len, out, err);
}

static void gpu_cap_is_exact(void **state)
{
    (void)state;
    struct sn_spec *spec = NULL;
    struct sn_error err = {0};
    /* 65,536 x 64 = 4,194,304 = SN_SPEC_MAX_GPUS: allowed. */
    assert_int_equal(parse_cluster(65536, &spec, &err), SN_OK);
    sn_spec_free(spec);
    assert_int_equal(parse_cluster(65537, &spec, &err), SN_ERR_INVALID);
    assert_null(spec);
    assert_non_null(strstr(err.message, "cluster of 4194368 GPUs exceeds the limit of 4194304"));
    /* 2^32-1 groups of 64 GPUs: the total needs 64 bits. */
    sn_error_clear(&err);
    assert_int_equal(parse_cluster(UINT32_MAX, &spec, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "cluster of 274877906880 GPUs"));
}

static void buffer_edge_cases(void **state)
{
    (void)state;
    struct sn_spec *spec = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_spec_parse_buffer("e.yaml", "", 0, &spec, &err), SN_ERR_INVALID);
    assert_null(spec);
    assert_string_equal(err.message, "e.yaml:1:1: empty spec: expected a mapping with version, "
                                     "name, catalog, templates and supernodes");
    sn_error_clear(&err);
    assert_int_equal(sn_spec_parse_buffer(NULL, "- 1\n", 4, &spec, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "<spec>:1:3: the spec is a sequence: expected a mapping"));
    sn_error_clear(&err);
    /* Over the size cap: refused before parsing. */
    assert_int_equal(sn_spec_parse_buffer("x", "", (size_t)SN_SPEC_MAX_BYTES + 1, &spec, &err),
                     SN_ERR_INVALID);
    sn_error_clear(&err);
    const char nul[] = "version: \"1\\0\"\n";
    assert_int_equal(sn_spec_parse_buffer("n", nul, sizeof(nul) - 1, &spec, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "NUL byte"));
    /* NULL err is allowed. */
    assert_int_equal(sn_spec_parse_buffer("x", "a: [", 4, &spec, NULL), SN_ERR_SYNTAX);
    sn_error_clear(&err);
    assert_int_equal(sn_spec_parse_file("/nonexistent/spec.yaml", &spec, &err), SN_ERR_IO);
    assert_null(spec);
    sn_spec_free(NULL);
}

static void enum_names(void **state)
{
    (void)state;
    assert_string_equal(sn_switch_kind_name(SN_SWITCH_INFINIBAND), "infiniband");
    assert_string_equal(sn_cable_medium_name(SN_CABLE_OPTIC), "optic");
    assert_string_equal(sn_power_kind_name(SN_POWER_HVDC), "hvdc");
    assert_string_equal(sn_cooling_kind_name(SN_COOLING_LIQUID), "liquid");
    assert_string_equal(sn_scaleup_domain_name(SN_SCALEUP_SUPERNODE), "supernode");
    assert_string_equal(sn_leaf_attach_name(SN_LEAF_ATTACH_PAIR), "pair");
    assert_string_equal(sn_mgmt_separation_name(SN_MGMT_VLAN), "vlan");
    assert_string_equal(sn_storage_kind_name(SN_STORAGE_PARALLEL_FS), "parallel-fs");
    assert_string_equal(sn_pool_kind_name(SN_POOL_ELASTIC), "elastic");
    assert_string_equal(sn_pool_kind_name(SN_POOL_KIND_COUNT), "unknown");
    assert_string_equal(sn_switch_kind_name((enum sn_switch_kind)99), "unknown");
}

static void arena_caps_and_alignment(void **state)
{
    (void)state;
    struct sn__arena *arena = sn__arena_create(256u << 10);
    assert_non_null(arena);
    char *a = sn__arena_alloc(arena, 3);
    double *b = sn__arena_alloc(arena, sizeof(double));
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal((uintptr_t)b % _Alignof(max_align_t), 0);
    assert_int_equal(a[0] + a[1] + a[2], 0);
    assert_non_null(sn__arena_alloc(arena, 0));
    char *s = sn__arena_strndup(arena, "abcdef", 3);
    assert_string_equal(s, "abc");
    assert_null(sn__arena_array(arena, SIZE_MAX / 2, 4)); /* overflow */
    assert_null(sn__arena_alloc(arena, 1u << 20));        /* past the cap */
    void *big = sn__arena_alloc(arena, 100u << 10);       /* own chunk, fits */
    assert_non_null(big);
    assert_true(sn__arena_used(arena) <= (256u << 10));
    assert_non_null(sn__arena_alloc(arena, 16)); /* still served after a big chunk */
    sn__arena_destroy(arena);
    sn__arena_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(std_unit_catalog),
        cmocka_unit_test(std_unit_template),
        cmocka_unit_test(std_unit_rest),
        cmocka_unit_test(minimal_defaults),
        cmocka_unit_test(all_keys_catalog_template),
        cmocka_unit_test(two_level_and_lanes),
        cmocka_unit_test(all_keys_rest),
        cmocka_unit_test(every_good_spec_parses),
        cmocka_unit_test(every_bad_spec_fails_where_expected),
        cmocka_unit_test(gpu_cap_is_exact),
        cmocka_unit_test(buffer_edge_cases),
        cmocka_unit_test(enum_names),
        cmocka_unit_test(arena_caps_and_alignment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
