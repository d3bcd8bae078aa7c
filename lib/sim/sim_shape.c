/*
 * Regular cluster shapes built in memory: a spec (and through
 * sn_model_build() a model) of N identical supernodes without a YAML file.
 * Tests, benchmarks and `sn sim --cluster shape:...` use it; the catalogue
 * entries are generic (an 8-GPU HGX-like server, 400 Gb/s NICs, 64-port
 * switches) and documented in docs/simulator.md.
 *
 * Everything lives in one allocation owned by spec->arena; free it with
 * sn_sim_shape_free().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/sim.h>

struct shape_arena {
    struct sn_spec spec;
    struct sn_gpu_model gpu;
    struct sn_server_model server;
    struct sn_switch_model switches[4]; /* scale-up, leaf, spine, core */
    struct sn_template tmpl;
    struct sn_power_domain_spec pds[SN_SPEC_MAX_DOMAINS_PER_TEMPLATE];
    struct sn_cooling_loop_spec loop;
    struct sn_supernode_group groups[SN_SIM_SHAPE_MAX_GROUPS];
    struct sn_pool_spec pools[SN_SIM_SHAPE_MAX_GROUPS];
    char pool_names[SN_SIM_SHAPE_MAX_GROUPS][24]; /* "dedicated0", "mixed1", ...: distinct */
};

static const char *const pd_names[SN_SPEC_MAX_DOMAINS_PER_TEMPLATE] = {
    "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P"};

void sn_sim_shape_defaults(struct sn_sim_shape *shape)
{
    memset(shape, 0, sizeof(*shape));
    shape->supernodes = 4;
    shape->servers = 8;
    shape->gpus_per_server = 8;
    shape->leaves = 2;
    shape->nics = 8;
    shape->nic_bytes_per_s = 50e9; /* 400 Gb/s */
    shape->oversubscription = 1.0;
    shape->spine = true;
    shape->power_domains = 2;
}

static void fill_catalog(struct shape_arena *a, const struct sn_sim_shape *sh)
{
    a->gpu = (struct sn_gpu_model){.name = "gpu",
                                   .dense_bf16_flops = 989e12,
                                   .hbm_bytes = 80e9,
                                   .hbm_bytes_per_s = 3.35e12,
                                   .tdp_w = 700,
                                   /* NVLink 4: 18 links x 25 GB/s per direction */
                                   .scaleup_links = 18,
                                   .scaleup_link_bytes_per_s = 25e9};
    a->server = (struct sn_server_model){.name = "server",
                                         .gpu_model = 0,
                                         .gpus = sh->gpus_per_server,
                                         .cpus = 2,
                                         .cpu_cores = 112,
                                         .memory_bytes = 2e12,
                                         .nics = sh->nics,
                                         .nic_bytes_per_s = sh->nic_bytes_per_s,
                                         .feeds = 1,
                                         .rack_units = 8,
                                         .base_power_w = 4600};
    a->switches[0] = (struct sn_switch_model){
        .name = "scaleup", .kind = SN_SWITCH_NVLINK, .ports = 64, .port_bytes_per_s = 25e9};
    a->switches[1] = (struct sn_switch_model){.name = "leaf",
                                              .kind = SN_SWITCH_INFINIBAND,
                                              .ports = 64,
                                              .port_bytes_per_s = sh->nic_bytes_per_s};
    /* Spines and cores take the smallest radix (64, 128, 256, ...) whose
     * 3-tier 1:1 fat tree, radix^3 / 4 endpoints, holds every NIC: a
     * 100,000-GPU shape gets 128-port switches (Tomahawk 5 / Quantum-X800
     * class) instead of a fabric the model would refuse. */
    uint64_t endpoints = (uint64_t)sh->supernodes * sh->servers * sh->nics;
    uint32_t radix = 64;
    while ((uint64_t)radix * radix * radix / 4 < endpoints && radix < 4096)
        radix *= 2;
    a->switches[2] = a->switches[1];
    a->switches[2].name = "spine";
    a->switches[2].ports = radix;
    a->switches[3] = a->switches[2];
    a->switches[3].name = "core";
    a->spec.n_gpu_models = 1;
    a->spec.gpu_models = &a->gpu;
    a->spec.n_server_models = 1;
    a->spec.server_models = &a->server;
    a->spec.n_switch_models = 4;
    a->spec.switch_models = a->switches;
}

static void fill_template(struct shape_arena *a, const struct sn_sim_shape *sh)
{
    struct sn_template *t = &a->tmpl;
    t->name = "shape";
    t->server_model = 0;
    t->servers = sh->servers;
    t->scaleup.domain = sh->scaleup_supernode ? SN_SCALEUP_SUPERNODE : SN_SCALEUP_SERVER;
    /* The scale-up switch is named (so the planner sees the domain) but
     * not built: no chips, no links in the model. */
    t->scaleup.switch_model = 0;
    t->scaleup.chips = 0;
    t->scaleup.cabling = (struct sn_cabling){SN_NONE, SN_NONE};
    t->leaves.switch_model = sh->leaves ? 1 : SN_NONE;
    t->leaves.count = sh->leaves;
    t->leaves.attach = sh->leaves == 2 ? SN_LEAF_ATTACH_PAIR : SN_LEAF_ATTACH_RAIL;
    t->leaves.oversubscription = sh->oversubscription > 0 ? sh->oversubscription : 1.0;
    t->leaves.cabling = (struct sn_cabling){SN_NONE, SN_NONE};
    t->racks.count = 1;
    t->mgmt.separation = SN_MGMT_NONE;
    t->mgmt.switch_model = SN_NONE;
    t->mgmt.cabling = (struct sn_cabling){SN_NONE, SN_NONE};
    uint32_t pds = sh->power_domains ? sh->power_domains : 1;
    t->n_power_domains = pds;
    t->power_domains = a->pds;
    for (uint32_t i = 0; i < pds; i++)
        a->pds[i] = (struct sn_power_domain_spec){
            .name = pd_names[i], .capacity_w = 1e6, .redundant_with = SN_NONE};
    a->loop =
        (struct sn_cooling_loop_spec){.name = "L1", .kind = SN_COOLING_LIQUID, .capacity_w = 1e7};
    t->n_cooling_loops = 1;
    t->cooling_loops = &a->loop;
}

enum sn_err sn_sim_shape_build(const struct sn_sim_shape *sh, struct sn_spec **spec_out,
                               struct sn_model **model_out, struct sn_error *err)
{
    *spec_out = NULL;
    *model_out = NULL;
    uint64_t gpus = (uint64_t)sh->supernodes * sh->servers * sh->gpus_per_server;
    if (sh->supernodes == 0 || sh->servers == 0 || sh->gpus_per_server == 0 ||
        sh->gpus_per_server > 1024 || gpus > SN_SPEC_MAX_GPUS ||
        sh->power_domains > SN_SPEC_MAX_DOMAINS_PER_TEMPLATE ||
        sh->n_groups > SN_SIM_SHAPE_MAX_GROUPS || (sh->leaves && sh->nics == 0))
        return sn_error_set(err, SN_ERR_INVALID,
                            "shape: %u supernodes x %u servers x %u GPUs (%u leaves, %u NICs, "
                            "%u power domains) is not a valid cluster shape",
                            sh->supernodes, sh->servers, sh->gpus_per_server, sh->leaves, sh->nics,
                            sh->power_domains);
    struct shape_arena *a = calloc(1, sizeof(*a));
    if (!a)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for a cluster shape");
    a->spec.arena = a;
    a->spec.file = "<shape>";
    a->spec.name = "shape";
    a->spec.version = 1;
    fill_catalog(a, sh);
    fill_template(a, sh);
    a->spec.n_templates = 1;
    a->spec.templates = &a->tmpl;
    uint32_t left = sh->supernodes, ng = 0;
    for (uint32_t g = 0; g < sh->n_groups && left > 0; g++) {
        uint32_t c = sh->groups[g].count < left ? sh->groups[g].count : left;
        /* Distinct names: lib/control finds a job's pool by name. */
        snprintf(a->pool_names[g], sizeof(a->pool_names[g]), "%s%u",
                 sn_pool_kind_name(sh->groups[g].kind), g);
        a->pools[g] = (struct sn_pool_spec){.name = a->pool_names[g], .kind = sh->groups[g].kind};
        a->groups[ng++] =
            (struct sn_supernode_group){.prefix = "sn", .template_index = 0, .count = c, .pool = g};
        left -= c;
    }
    if (left > 0 && ng < SN_SIM_SHAPE_MAX_GROUPS)
        a->groups[ng++] = (struct sn_supernode_group){
            .prefix = "sn", .template_index = 0, .count = left, .pool = sh->n_groups ? 0 : SN_NONE};
    a->spec.n_groups = ng;
    a->spec.groups = a->groups;
    a->spec.n_pools = sh->n_groups;
    a->spec.pools = a->pools;
    a->spec.fabric.present = sh->spine && sh->leaves > 0;
    a->spec.fabric.spine.switch_model = a->spec.fabric.present ? 2 : SN_NONE;
    a->spec.fabric.spine.oversubscription =
        sh->spine_oversubscription > 0 ? sh->spine_oversubscription : 1.0;
    /* Past a spine's radix two tiers cannot connect every leaf: add the
     * core tier the model then requires. */
    uint64_t leaves = (uint64_t)sh->supernodes * sh->leaves;
    a->spec.fabric.core.switch_model = sh->core || leaves > a->switches[2].ports ? 3 : SN_NONE;
    a->spec.fabric.core.oversubscription = 1.0;
    a->spec.fabric.tiers = sh->core && a->spec.fabric.present ? 3 : 0;
    a->spec.fabric.efficiency = 0.75;
    enum sn_err rc = sn_model_build(&a->spec, model_out, err);
    if (rc != SN_OK) {
        free(a);
        return rc;
    }
    *spec_out = &a->spec;
    return SN_OK;
}

void sn_sim_shape_free(struct sn_spec *spec, struct sn_model *model)
{
    sn_model_free(model);
    if (spec)
        free(spec->arena);
}
