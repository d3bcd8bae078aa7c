/*
 * Tests of lib/bom (sn_bom_compute and its writers) against published
 * reference designs and hand-checked figures:
 *  - NVIDIA DGX SuperPOD reference architecture (B200 RA, "Larger DGX
 *    SuperPOD component counts"; the H100 RA uses the same scalable unit):
 *    leaf, spine and core switch counts and node-leaf, leaf-spine and
 *    spine-core cable counts for 2 to 64 scalable units of 32 DGX systems;
 *  - one GB200 NVL72 rack (NVIDIA GB200 NVL72 product page): 72 GPUs,
 *    18 NVLink switch chips, 1.8 TB/s bidirectional per GPU, 130 TB/s
 *    (129.6) per rack; 1,296 GPU-switch links on 18 x 72 ports;
 *  - the standard 64-GPU unit of examples/std-unit-64.yaml, by hand;
 *  - Huawei CloudMatrix384 (examples/cloudmatrix-384.yaml; P. Zuo et al.,
 *    arXiv 2506.12708, section 3): 384 NPUs, 48 nodes, 16 racks, 7 L1 chips
 *    per node, 112 L2 switches, 392 GB/s UB and 400 Gb/s RDMA per NPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include <sn/bom.h>
#include <sn/review.h>

#include "sn_test.h"

/* A rail-optimised 1:1 fat tree of n scalable units: 32 DGX H100 (8 GPUs,
 * 8 x 400 Gb/s NICs) per unit, 8 rail leaves per unit, leaf, spine and core
 * all the same 64-port 400 Gb/s switch, tiers auto. One supernode = one SU. */
static char *superpod_spec(unsigned n)
{
    static const char fmt[] =
        "version: 1\n"
        "name: superpod-%u-su\n"
        "catalog:\n"
        "  gpus:\n"
        "    H100: {dense_bf16: 989 TFLOP/s, hbm: 80 GiB, hbm_bandwidth: 3.35 TB/s,\n"
        "           tdp: 700 W, scaleup_links: 18,\n"
        "           scaleup_link_bandwidth: 50 GB/s bidirectional}\n"
        "  servers:\n"
        "    DGX-H100: {gpu: H100, gpus: 8, cpus: 2, cpu_cores: 112, memory: 2 TiB,\n"
        "               nics: 8, nic_speed: 400 Gb/s, nvme: 30 TB, nvme_read: 25 GB/s,\n"
        "               nvme_write: 12 GB/s, base_power: 4.6 kW, feeds: 2, rack_units: 8}\n"
        "  switches:\n"
        "    NVSwitch: {kind: nvlink, ports: 64, port_speed: 25 GB/s per-direction,\n"
        "               power: 100 W}\n"
        "    QM9700: {kind: infiniband, ports: 64, port_speed: 400 Gb/s, power: 1.7 kW,\n"
        "             rack_units: 1}\n"
        "    Mgmt: {kind: ethernet, ports: 48, port_speed: 1 Gb/s, power: 150 W}\n"
        "  cables:\n"
        "    board: {medium: copper, reach: 1 m}\n"
        "    optic: {medium: optic, reach: 100 m, optic_power: 15 W}\n"
        "    cat6: {medium: copper, reach: 100 m}\n"
        "templates:\n"
        "  su:\n"
        "    server: DGX-H100\n"
        "    servers: 32\n"
        "    scaleup: {domain: server, switch: NVSwitch, chips: 4, cable: board}\n"
        "    leaves: {switch: QM9700, count: 8, attach: rail, cable: optic, length: row,\n"
        "             power: [A, B]}\n"
        "    management: {separation: physical, switch: Mgmt, count: 2, cable: cat6,\n"
        "                 power: [A, B]}\n"
        "    power_domains:\n"
        "      A: {capacity: 400 kW, kind: ac, redundant_with: B}\n"
        "      B: {capacity: 400 kW, kind: ac, redundant_with: A}\n"
        "    cooling_loops:\n"
        "      L1: {kind: air, capacity: 500 kW}\n"
        "    racks: {count: 8, power_limit: 50 kW, cooling: liquid, loops: [L1]}\n"
        "supernodes:\n"
        "  - template: su\n"
        "    count: %u\n"
        "fabric:\n"
        "  tiers: auto\n"
        "  spine: {switch: QM9700, cable: optic}\n"
        "  core: {switch: QM9700, cable: optic}\n";
    size_t len = sizeof(fmt) + 32;
    char *buf = malloc(len);
    assert_non_null(buf);
    snprintf(buf, len, fmt, n, n);
    return buf;
}

struct built {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_bom bom;
};

static void build_text(struct built *b, const char *name, const char *text)
{
    struct sn_error err = {0};
    memset(b, 0, sizeof(*b));
    if (sn_spec_parse_buffer(name, text, strlen(text), &b->spec, &err) != SN_OK)
        fail_msg("%s", err.message);
    if (sn_model_build(b->spec, &b->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    if (sn_model_verify(b->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    if (sn_bom_compute(b->model, &b->bom, &err) != SN_OK)
        fail_msg("%s", err.message);
}

static void build_file(struct built *b, const char *rel)
{
    char path[1024];
    struct sn_error err = {0};
    memset(b, 0, sizeof(*b));
    if (sn_spec_parse_file(sn_test_path(path, sizeof(path), rel), &b->spec, &err) != SN_OK)
        fail_msg("%s", err.message);
    if (sn_model_build(b->spec, &b->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    if (sn_bom_compute(b->model, &b->bom, &err) != SN_OK)
        fail_msg("%s", err.message);
}

static void release(struct built *b)
{
    sn_bom_release(&b->bom);
    sn_model_free(b->model);
    sn_spec_free(b->spec);
}

/* ---- SuperPOD -------------------------------------------------------- */

struct superpod_row {
    unsigned su, nodes, gpus, leaf, spine, core;
    unsigned long node_leaf, leaf_spine, spine_core;
};

/* DGX SuperPOD RA, "Larger DGX SuperPOD component counts" (compute fabric).
 * A core of 0 is "-" in the table: a two-tier fabric. */
static const struct superpod_row superpod_table[] = {
    {2, 64, 512, 16, 8, 0, 512, 512, 0},
    {4, 128, 1024, 32, 16, 0, 1024, 1024, 0},
    {8, 256, 2048, 64, 32, 0, 2048, 2048, 0},
    {16, 512, 4096, 128, 128, 64, 4096, 4096, 4096},
    {32, 1024, 8192, 256, 256, 128, 8192, 8192, 8192},
    {64, 2048, 16384, 512, 512, 256, 16384, 16384, 16384},
};

static void test_superpod_reference_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(superpod_table) / sizeof(superpod_table[0]); i++) {
        const struct superpod_row *row = &superpod_table[i];
        char *text = superpod_spec(row->su);
        struct built b;
        build_text(&b, "superpod.yaml", text);
        const struct sn_bom *bom = &b.bom;
        print_message("SU %u\n", row->su);
        assert_int_equal(bom->servers, row->nodes);
        assert_int_equal(bom->gpus, row->gpus);
        assert_int_equal(bom->switches_by_role[SN_ROLE_LEAF], row->leaf);
        assert_int_equal(bom->switches_by_role[SN_ROLE_SPINE], row->spine);
        assert_int_equal(bom->switches_by_role[SN_ROLE_CORE], row->core);
        assert_int_equal(bom->tiers[SN_TIER_NODE_LEAF].links, row->node_leaf);
        assert_int_equal(bom->tiers[SN_TIER_LEAF_SPINE].links, row->leaf_spine);
        assert_int_equal(bom->tiers[SN_TIER_SPINE_CORE].links, row->spine_core);
        assert_int_equal(bom->fabric_tiers, row->core ? 3 : 2);
        /* 1:1 at every tier: nothing oversold, no port past a radix. */
        assert_near(bom->leaf_oversubscription, 1.0, 1e-12);
        if (row->core)
            assert_near(bom->spine_oversubscription, 1.0, 1e-12);
        for (uint32_t l = 0; l < bom->n_switch_lines; l++)
            assert_int_equal(bom->switch_lines[l].ports_over, 0);
        release(&b);
        free(text);
    }
}

/* Every other N from 2 to 64: the leaves and the first two cable tiers
 * scale exactly with the unit count, and the model is consistent. */
static void test_superpod_every_n(void **state)
{
    (void)state;
    for (unsigned n = 2; n <= 64; n++) {
        char *text = superpod_spec(n);
        struct built b;
        build_text(&b, "superpod.yaml", text);
        const struct sn_bom *bom = &b.bom;
        assert_int_equal(bom->servers, 32 * n);
        assert_int_equal(bom->gpus, 256 * n);
        assert_int_equal(bom->switches_by_role[SN_ROLE_LEAF], 8 * n);
        assert_int_equal(bom->tiers[SN_TIER_NODE_LEAF].links, 256 * n);
        assert_int_equal(bom->tiers[SN_TIER_LEAF_SPINE].links, 256 * n);
        /* Every spine and core port in use is one cable end. */
        uint64_t spine_used = 0, core_used = 0;
        for (uint32_t l = 0; l < bom->n_switch_lines; l++) {
            if (bom->switch_lines[l].role == SN_ROLE_SPINE)
                spine_used = bom->switch_lines[l].ports_used;
            if (bom->switch_lines[l].role == SN_ROLE_CORE)
                core_used = bom->switch_lines[l].ports_used;
        }
        uint64_t spine_core = bom->tiers[SN_TIER_SPINE_CORE].links;
        assert_int_equal(spine_used, 256 * n + spine_core);
        assert_int_equal(core_used, spine_core);
        release(&b);
        free(text);
    }
}

/* Figures of one SU by hand: 32 DGX H100 of 8 x 700 W GPUs + 4.6 kW. */
static void test_superpod_figures(void **state)
{
    (void)state;
    char *text = superpod_spec(4);
    struct built b;
    build_text(&b, "superpod.yaml", text);
    const struct sn_bom *bom = &b.bom;
    const struct sn_bom_template *t = sn_bom_template(bom, 0);
    assert_non_null(t);
    assert_int_equal(t->supernodes, 4);
    /* 18 NVLink 4 links x 25 GB/s per direction = 450 GB/s (900 GB/s bidi). */
    assert_near(t->scaleup_gpu_bytes_per_s, 450e9, 1);
    /* 8 x 400 Gb/s NICs for 8 GPUs = 50 GB/s per GPU; 450 / 50 = 9. */
    assert_near(t->scaleout_gpu_bytes_per_s, 50e9, 1);
    assert_near(t->convergence, 9.0, 1e-12);
    /* Node-leaf: 1,024 x 400 Gb/s = 51.2 TB/s; bisection half of it. */
    assert_near(bom->tiers[SN_TIER_NODE_LEAF].bisection_bytes_per_s, 1024 * 50e9 / 2, 1);
    /* Optics: every node-leaf and leaf-spine link is an optic, 2 modules. */
    assert_int_equal(bom->optics, 2 * (1024 + 1024));
    assert_near(bom->optics_power_w, 2 * 2048 * 15.0, 1e-6);
    /* Dual-fed servers split evenly over A and B: per SU 32 x (4.6 kW +
     * 8 x 700 W) = 326.4 kW, half on each, plus 4 leaves and 1 mgmt switch
     * on each domain; on failover one domain carries all servers at peak
     * (4.6 kW + 8 x 700 W x 1.3 = 11.88 kW each). Transceivers draw at the
     * device they plug into (sn_model_power_compute): 8 x 15 W per server,
     * 64 x 15 W per leaf and per spine. */
    assert_near(bom->power[0].steady_w, (326400.0 + 32 * 120) / 2 + 4 * (1700 + 960) + 150, 1e-6);
    assert_near(bom->power[0].failover_peak_w, 32 * (11880.0 + 120) + 4 * (1700 + 960) + 150,
                1e-6);
    /* The 16 spines sit on the fabric's default domains A and B (capacity
     * not stated), alternating: 8 on each; none is left outside a domain. */
    assert_near(bom->unassigned_w, 0, 1e-6);
    assert_int_equal(b.model->n_fabric_pds, 2);
    assert_string_equal(b.model->spec->fabric.power_domains[1].name, "B");
    assert_near(bom->power[b.model->first_fabric_pd].steady_w, 8 * (1700.0 + 960), 1e-6);
    assert_near(bom->power[b.model->first_fabric_pd + 1].steady_w, 8 * (1700.0 + 960), 1e-6);
    assert_near(bom->power[b.model->first_fabric_pd].capacity_w, 0, 1e-9);
    /* One 42 U network rack holds the 16 one-unit spines. */
    assert_int_equal(b.model->n_net_racks, 1);
    assert_near(bom->rack[b.model->first_net_rack].steady_w, 16 * (1700.0 + 960), 1e-6);
    /* Losing a fabric domain stops 8 of 16 spines: every leaf keeps half
     * its uplinks, the fabric half its bisection. */
    assert_int_equal(bom->fabric_blast.domains, 2);
    assert_int_equal(bom->fabric_blast.max_spines_lost, 8);
    assert_near(bom->fabric_blast.min_bisection_kept, 0.5, 1e-12);
    assert_near(bom->dense_bf16_flops, 1024 * 989e12, 1e3);
    /* Blast radius: a server is 8 GPUs, a rack 4 servers, a supernode 256;
     * a single power domain takes nothing (all servers dual-fed); a rail
     * leaf carries one GPU of each of 32 servers. */
    assert_int_equal(bom->blast[SN_DOMAIN_SERVER].max_gpus, 8);
    assert_int_equal(bom->blast[SN_DOMAIN_RACK].max_gpus, 32);
    assert_int_equal(bom->blast[SN_DOMAIN_POWER_DOMAIN].max_gpus, 0);
    assert_int_equal(bom->blast[SN_DOMAIN_LEAF].max_gpus, 32);
    assert_int_equal(bom->blast[SN_DOMAIN_LEAF].domains, 32);
    assert_int_equal(bom->blast[SN_DOMAIN_SUPERNODE].max_gpus, 256);
    assert_int_equal(bom->blast[SN_DOMAIN_SUPERNODE].max_supernodes, 1);
    assert_int_equal(bom->blast[SN_DOMAIN_COOLING_LOOP].max_supernodes, 1);
    assert_int_equal(bom->blast[SN_DOMAIN_RACK].max_supernodes, 0);
    release(&b);
    free(text);
}

/* The bill's margins and rule R04 read one power computation, so they
 * agree for dual-fed servers: per domain of one SU, normal steady draw is
 * 175.91 kW (x 1.5 = 263.9 kW) and the failover peak 394.79 kW. At 250 kW
 * both fail, at 300 kW only the failover peak, at 400 kW neither. */
static void test_bom_review_agree(void **state)
{
    (void)state;
    static const char *caps[] = {"250 kW", "300 kW", "400 kW"};
    for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
        char *base = superpod_spec(1);
        size_t len = strlen(base) + 64;
        char *text = malloc(len);
        assert_non_null(text);
        /* Replace both "capacity: 400 kW" of the power domains. */
        char *a = strstr(base, "capacity: 400 kW");
        char *b2 = a ? strstr(a + 1, "capacity: 400 kW") : NULL;
        assert_non_null(b2);
        snprintf(text, len, "%.*scapacity: %s%.*scapacity: %s%s", (int)(a - base), base, caps[k],
                 (int)(b2 - a - 16), a + 16, caps[k], b2 + 16);
        struct built b;
        build_text(&b, "agree.yaml", text);
        struct sn_review *r = NULL;
        struct sn_error err = {0};
        assert_int_equal(sn_review_run(b.model, NULL, (uint64_t)1 << sn_review_find_rule("R04"),
                                       &r, &err),
                         SN_OK);
        uint32_t bom_steady = 0, bom_peak = 0, rev_steady = 0, rev_peak = 0;
        /* The supernodes' domains (the fabric's have no stated capacity). */
        for (uint32_t pd = 0; pd < b.model->first_fabric_pd; pd++) {
            const struct sn_bom_power *p = &b.bom.power[pd];
            bom_steady += p->capacity_w < b.spec->review.power_margin * p->steady_w;
            bom_peak += p->capacity_w < p->failover_peak_w;
        }
        for (uint32_t i = 0; i < r->n_findings; i++) {
            rev_steady += strstr(r->findings[i].message, "steady draw") != NULL;
            rev_peak += strstr(r->findings[i].message, "peak draw") != NULL;
        }
        assert_int_equal(bom_steady, rev_steady);
        assert_int_equal(bom_peak, rev_peak);
        assert_int_equal(bom_steady, k == 0 ? 2 : 0);
        assert_int_equal(bom_peak, k < 2 ? 2 : 0);
        sn_review_free(r);
        release(&b);
        free(text);
        free(base);
    }
}

/* ---- GB200 NVL72 ----------------------------------------------------- */

static void test_nvl72_rack(void **state)
{
    (void)state;
    struct built b;
    build_file(&b, "tests/specs/bom/nvl72-rack.yaml");
    const struct sn_bom *bom = &b.bom;
    assert_int_equal(bom->gpus, 72);
    assert_int_equal(bom->switches_by_role[SN_ROLE_SCALEUP], 18);
    assert_int_equal(bom->tiers[SN_TIER_SCALEUP].links, 1296);
    const struct sn_bom_switches *chips = &bom->switch_lines[0];
    assert_int_equal(chips->role, SN_ROLE_SCALEUP);
    assert_int_equal(chips->ports, 18 * 72);
    assert_int_equal(chips->ports_used, 1296);
    assert_int_equal(chips->ports_free, 0); /* no spare switch port */
    assert_int_equal(chips->ports_over, 0);
    const struct sn_bom_template *t = sn_bom_template(bom, 0);
    assert_non_null(t);
    assert_int_equal(t->scaleup_links, 1296);
    assert_int_equal(t->scaleup_ports, 1296);
    assert_near(t->scaleup_gpu_bytes_per_s, 900e9, 1);              /* per direction */
    assert_near(2 * t->scaleup_gpu_bytes_per_s, 1.8e12, 1);         /* bidirectional */
    assert_near(2 * t->scaleup_supernode_bytes_per_s, 129.6e12, 1); /* ~130 TB/s */
    assert_near(bom->dense_bf16_flops, 180e15, 1e6);
    /* 18 trays x (1 kW + 4 x 1.2 kW) + 18 x 250 W + 2 x 1.7 kW + 2 x 150 W,
     * plus the 144 node-leaf transceivers of 15 W, all in the rack. */
    assert_near(bom->rack[0].steady_w, 18 * 5800.0 + 4500 + 3400 + 300 + 144 * 15.0, 1e-6);
    assert_near(bom->loop[0].heat_w, bom->rack[0].steady_w, 1e-6);
    /* 72 node-leaf optical links: 144 modules of 15 W. */
    assert_int_equal(bom->optics, 144);
    assert_near(bom->optics_power_w, 144 * 15.0, 1e-9);
    release(&b);
}

/* Totals of examples/gb200-nvl72.yaml against NVIDIA's GB200 NVL72 spec
 * table (nvidia.com/en-us/data-center/gb200-nvl72, "Specifications"):
 * HBM3e up to 13.4 TB at 576 TB/s, 2,592 Arm Neoverse V2 cores, LPDDR5X
 * up to 17 TB; ridge and scale-up bytes per FLOP hand-computed from the
 * example's GPU model; the scale-up tier's links counted with the others;
 * facility power = IT power x facility.pue. */
static void test_totals(void **state)
{
    (void)state;
    struct built b;
    build_file(&b, "examples/gb200-nvl72.yaml");
    const struct sn_bom *bom = &b.bom;
    const struct sn_gpu_model *gm = &b.spec->gpu_models[0];
    assert_int_equal(bom->total.gpus, 72);
    assert_rel(bom->total.hbm_bytes, 13.4e12, 0.005);
    assert_rel(bom->total.hbm_bytes_per_s, 576e12, 1e-9);
    assert_int_equal(bom->total.cpu_cores, 2592);
    assert_rel(bom->total.host_memory_bytes, 17e12, 0.02);
    assert_rel(bom->total.hbm_usable_bytes, 72 * (gm->hbm_bytes - 2 * 1073741824.0), 1e-12);
    assert_int_equal(bom->supernode_totals[0].gpus, 72);
    assert_int_equal(bom->rack_totals[0].cpu_cores, 2592);
    assert_rel(bom->gpu_figures[0].ridge_flop_per_byte, gm->dense_bf16_flops / gm->hbm_bytes_per_s,
               1e-12);
    assert_rel(bom->gpu_figures[0].scaleup_bytes_per_flop,
               gm->scaleup_links * gm->scaleup_link_bytes_per_s / gm->dense_bf16_flops, 1e-12);
    /* 2.5 PFLOP/s over 8 TB/s: 312.5 FLOP per byte; 900 GB/s over 2.5 PFLOP/s */
    assert_rel(bom->gpu_figures[0].ridge_flop_per_byte, 312.5, 0.01);
    assert_rel(bom->gpu_figures[0].scaleup_bytes_per_flop, 900e9 / 2.5e15, 0.01);
    assert_int_equal(bom->media[SN_TIER_SCALEUP].links, 1296);
    assert_int_equal(bom->media[SN_TIER_NODE_LEAF].optics, 144);
    assert_near(bom->pue, 0, 0); /* not stated: no facility power */
    assert_near(bom->facility_steady_w, 0, 0);
    release(&b);
    /* the same with facility.pue 1.25 */
    FILE *f = fopen(sn_test_path((char[1024]){0}, 1024, "examples/gb200-nvl72.yaml"), "r");
    assert_non_null(f);
    static char text[256 * 1024];
    size_t n = fread(text, 1, sizeof(text) - 64, f);
    fclose(f);
    text[n] = 0;
    strcat(text, "\nfacility:\n  pue: 1.25\n");
    build_text(&b, "pue.yaml", text);
    assert_near(b.bom.pue, 1.25, 0);
    assert_rel(b.bom.facility_steady_w, 1.25 * b.bom.steady_w, 1e-12);
    assert_rel(b.bom.facility_peak_w, 1.25 * b.bom.peak_w, 1e-12);
    release(&b);
}

/* ---- reference architectures reproduced whole --------------------------- */

/* examples/h100-superpod-4su.yaml against NVIDIA's DGX SuperPOD reference
 * architecture for DGX H100 (RA-11333-001 V11; docs.nvidia.com/dgx-superpod/
 * reference-architecture-scalable-infrastructure-h100/latest/), Table 7
 * "Major components of the 4 SU, 127-node DGX SuperPOD": 38 racks, 127
 * DGX H100 nodes, 4 UFM 3.1 appliances, 5 management servers; SUs of 32
 * DGX H100 ("Key Components"), rail-optimized with one leaf per rail per
 * SU. Leaf and spine switches and cables: the DGX B200 RA's table of
 * larger SuperPODs for 4 SUs (the same SU fabric; reference-architecture-
 * scalable-infrastructure-b200/latest/dgx-superpod-architecture.html):
 * 32 leaves, 16 spines, 1,024 leaf-spine cables; 1,016 node-leaf cables
 * are 127 nodes x 8 NICs. Not published in the text we read, so not
 * asserted: the in-band, storage and OOB Ethernet switches of Table 7, the
 * appliances' power and the per-rack power budget. */
static void test_superpod_h100(void **state)
{
    (void)state;
    struct built b;
    build_file(&b, "examples/h100-superpod-4su.yaml");
    const struct sn_bom *bom = &b.bom;
    assert_int_equal(bom->servers, 127);
    assert_int_equal(bom->gpus, 1016);
    assert_int_equal(bom->racks + bom->appliance_racks, 38);
    assert_int_equal(bom->appliances_by_kind[SN_APPLIANCE_FABRIC_MANAGER], 4);
    assert_int_equal(bom->appliances_by_kind[SN_APPLIANCE_MANAGEMENT], 5);
    assert_int_equal(bom->su_units, 4);
    assert_int_equal(bom->switches_by_role[SN_ROLE_LEAF], 32);
    assert_int_equal(bom->switches_by_role[SN_ROLE_SPINE], 16);
    assert_int_equal(bom->media[SN_TIER_NODE_LEAF].cables, 1016);
    assert_int_equal(bom->media[SN_TIER_LEAF_SPINE].cables, 1024);
    /* NVIDIA's DGX SuperPOD data center design guide for DGX H100, as
     * summarised at unanswered.io/guide/nvidia-h100-gpu-density-per-node-rack:
     * four DGX H100 per compute rack at 10.2 kW each (40.8 kW), 8 compute
     * racks per SU. The rack's own draw adds its leaves and optics. */
    assert_near(b.spec->server_models[0].base_power_w + 8 * b.spec->gpu_models[0].tdp_w, 10.2e3,
                1e-9);
    assert_int_equal(bom->racks - b.model->n_net_racks, 4 * 8);
    for (uint32_t r = 0; r < 8; r++) {
        assert_int_equal(bom->rack_totals[r].servers, 4);
        assert_true(bom->rack[r].steady_w >= 40.8e3);
    }
    /* every rack within the unit's budget (R21) */
    assert_true(bom->rack_peak_max_w <= bom->su_rack_power_w);
    release(&b);
}

/* examples/gb200-superpod-1su.yaml against NVIDIA's DGX SuperPOD reference
 * architecture for DGX GB200 (docs.nvidia.com/dgx-superpod/reference-
 * architecture-scalable-infrastructure-gb200/latest/): abstract.html "each
 * SU contains 8 DGX GB200 systems"; network-fabrics.html "Multi-node
 * NVLink Fabric": 18 compute trays and 9 NVLink switch trays of 2 chips
 * per rack, 18 NVL5 links per GPU (one per chip); dgx-superpod-
 * architecture.html: "Each SU requires a Thermal Design Power (TDP) of 1.2
 * Megawatts". Not published in the text we read, so not asserted: the
 * compute fabric's switch and cable counts, UFM and management servers. */
static void test_superpod_gb200(void **state)
{
    (void)state;
    struct built b;
    build_file(&b, "examples/gb200-superpod-1su.yaml");
    const struct sn_bom *bom = &b.bom;
    assert_int_equal(bom->supernodes, 8);
    assert_int_equal(bom->su_units, 1);
    assert_int_equal(bom->servers, 8 * 18);
    assert_int_equal(bom->gpus, 576);
    assert_int_equal(bom->switches_by_role[SN_ROLE_SCALEUP], 8 * 9 * 2);
    assert_int_equal(bom->media[SN_TIER_SCALEUP].links, 576 * 18);
    /* the SU's IT power at TDP within its published 1.2 MW */
    assert_true(bom->steady_w <= 1.2e6);
    assert_true(bom->rack_peak_max_w <= bom->su_rack_power_w);
    release(&b);
}

/* ---- CloudMatrix384: a two-level scale-up domain --------------------- */

/* The review's R07 findings of a model, joined, for message checks. */
static void r07_messages(const struct sn_model *m, char *out, size_t len, uint64_t *errors)
{
    struct sn_review *r = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_review_run(m, NULL, (uint64_t)1 << sn_review_find_rule("R07"), &r, &err),
                     SN_OK);
    out[0] = '\0';
    for (uint32_t i = 0; i < r->n_findings; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s\n", r->findings[i].message);
    }
    *errors = r->by_severity[SN_SEVERITY_ERROR];
    sn_review_free(r);
}

static void test_cloudmatrix_384(void **state)
{
    (void)state;
    struct built b;
    build_file(&b, "examples/cloudmatrix-384.yaml");
    struct sn_error err = {0};
    assert_int_equal(sn_model_verify(b.model, &err), SN_OK);
    const struct sn_bom *bom = &b.bom;
    /* Published figures, arXiv 2506.12708 section 3 (see the example). */
    assert_int_equal(bom->gpus, 384);    /* 384 Ascend 910C NPUs */
    assert_int_equal(bom->servers, 48);  /* 48 compute nodes of 8 NPUs */
    assert_int_equal(bom->racks, 16);    /* 12 compute racks + 4 communication racks */
    assert_int_equal(bom->switches_by_role[SN_ROLE_SCALEUP], 48 * 7); /* 7 L1 chips a node */
    assert_int_equal(bom->switches_by_role[SN_ROLE_SCALEUP_L2], 112); /* 7 planes x 16 */
    const struct sn_bom_template *t = sn_bom_template(bom, 0);
    assert_non_null(t);
    assert_near(t->scaleup_gpu_bytes_per_s, 392e9, 1);    /* 392 GB/s UB, unidirectional */
    assert_near(t->scaleout_gpu_bytes_per_s, 400e9 / 8, 1); /* 400 Gb/s RDMA per NPU */
    /* Wiring: each L1 chip has 2 links from each of its node's 8 NPUs and one
     * link to each of the 16 L2 switches of its plane; each L2 switch one
     * link from every node. */
    assert_int_equal(bom->tiers[SN_TIER_SCALEUP].links, 384 * 14);
    assert_int_equal(bom->tiers[SN_TIER_SCALEUP_L2].links, 48 * 7 * 16);
    const struct sn_model *m = b.model;
    const struct sn_supernode *s = &m->supernodes[0];
    assert_int_equal(s->first_scaleup_l2, s->first_scaleup + s->n_scaleup);
    assert_int_equal(s->first_leaf, s->first_scaleup_l2 + s->n_scaleup_l2);
    for (uint32_t w = s->first_scaleup_l2; w < s->first_scaleup_l2 + s->n_scaleup_l2; w++) {
        assert_int_equal(m->switch_ports_used[w], 48);
        /* the L2 switches stand in the communication racks 12..15 */
        assert_true(m->switch_rack[w] >= s->first_rack + 12);
        assert_true(m->switch_rack[w] < s->first_rack + 16);
    }
    for (uint32_t w = s->first_scaleup; w < s->first_scaleup + s->n_scaleup; w++)
        assert_int_equal(m->switch_ports_used[w], 16 + 16);
    /* L1 chip c of every node goes to plane c: chip 3 of node 5 to the
     * L2 switches 48..63. */
    uint32_t chip = s->first_scaleup + 5 * 7 + 3;
    for (uint64_t i = m->tier_first[SN_TIER_SCALEUP_L2]; i < m->tier_first[SN_TIER_SCALEUP_L2 + 1];
         i++)
        if (m->links[i].a_id == chip) {
            assert_true(m->links[i].b_id >= s->first_scaleup_l2 + 3 * 16);
            assert_true(m->links[i].b_id < s->first_scaleup_l2 + 4 * 16);
        }
    char name[96];
    assert_string_equal(sn_model_switch_name(m, s->first_scaleup_l2 + 17, name, sizeof(name)),
                        "cm00-l2sw017");
    /* The review: non-blocking, 392 GB/s per NPU across nodes, 3 hops. */
    char msgs[4096];
    uint64_t errors = 0;
    r07_messages(m, msgs, sizeof(msgs), &errors);
    assert_int_equal(errors, 0);
    assert_non_null(strstr(msgs, "392 GB/s per GPU across servers"));
    assert_non_null(strstr(msgs, "under 112 L2 switches (7 planes of 16)"));
    assert_non_null(strstr(msgs, "= 1:1, 3 switch hops"));
    release(&b);
}

/* The example with fewer L2 switches: blocking unless the ratio is stated. */
static void test_two_level_ratio(void **state)
{
    (void)state;
    char path[1024];
    FILE *f = fopen(sn_test_path(path, sizeof(path), "examples/cloudmatrix-384.yaml"), "rb");
    assert_non_null(f);
    static char text[64 * 1024];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    char *pp = strstr(text, "per_plane: 16");
    char *ov = strstr(text, "oversubscription: \"1:1\"");
    assert_non_null(pp);
    assert_non_null(ov);
    memcpy(pp, "per_plane:  8", 13);
    struct built b;
    build_text(&b, "cm384-half.yaml", text);
    char msgs[4096];
    uint64_t errors = 0;
    r07_messages(b.model, msgs, sizeof(msgs), &errors);
    assert_int_equal(errors, 1);
    assert_non_null(strstr(msgs, "L1 to L2 is 2:1 (448 GB/s down : 224 GB/s up per L1 chip)"));
    assert_non_null(strstr(msgs, "a GPU gets 196 GB/s of its 392 GB/s across servers"));
    assert_int_equal(b.bom.switches_by_role[SN_ROLE_SCALEUP_L2], 56);
    release(&b);
    /* Stated 2:1, the same wiring passes and reports the true figures. */
    memcpy(ov, "oversubscription: \"2:1\"", 23);
    build_text(&b, "cm384-half-stated.yaml", text);
    r07_messages(b.model, msgs, sizeof(msgs), &errors);
    assert_int_equal(errors, 0);
    assert_non_null(strstr(msgs, "196 GB/s per GPU across servers"));
    assert_non_null(strstr(msgs, "= 2:1, 3 switch hops"));
    release(&b);
}

/* ---- cable lanes and breakouts --------------------------------------- */

/* tests/specs/rules/r18-breakout.yaml: 64 NIC links over 32 OSFP cables split
 * 2 x 400G, each leaf's 16 legs on 8 physical 800G ports. */
static void test_breakout_counts(void **state)
{
    (void)state;
    struct built b;
    build_file(&b, "tests/specs/rules/r18-breakout.yaml");
    struct sn_error err = {0};
    assert_int_equal(sn_model_verify(b.model, &err), SN_OK);
    const struct sn_model *m = b.model;
    const struct sn_bom *bom = &b.bom;
    const struct sn_bom_cables *legs = NULL;
    for (uint32_t i = 0; i < bom->n_cable_lines; i++)
        if (bom->cable_lines[i].tier == SN_TIER_NODE_LEAF)
            legs = &bom->cable_lines[i];
    assert_non_null(legs);
    assert_int_equal(legs->links, 64);
    assert_int_equal(legs->cables, 32);
    assert_int_equal(legs->optics, 32 * 3); /* a trunk and two legs per cable */
    assert_near(legs->optics_power_w, 96 * 12.0, 1e-9);
    /* The power model counts the same transceivers. */
    struct sn_model_power pw = {0};
    assert_int_equal(sn_model_power_compute(m, 1.3, &pw, &err), SN_OK);
    assert_near(pw.optics_w, bom->optics_power_w, 1e-9);
    sn_model_power_release(&pw);
    /* Each leaf: 16 legs on 8 ports plus 16 straight uplinks. */
    const struct sn_supernode *s = &m->supernodes[0];
    for (uint32_t w = s->first_leaf; w < s->first_leaf + s->n_leaves; w++) {
        assert_int_equal(m->switch_ports_used[w], 32);
        assert_int_equal(m->switch_ports_physical[w], 24);
    }
    uint64_t first = m->tier_first[SN_TIER_NODE_LEAF];
    assert_int_equal(m->links[first].b_leg, 0);
    assert_int_equal(m->links[first + 1].b_leg, 0); /* NIC 1 goes to the other leaf */
    uint32_t second_leg = 0;
    for (uint64_t i = first; i < m->tier_first[SN_TIER_NODE_LEAF + 1]; i++)
        second_leg += m->links[i].b_leg == 1;
    assert_int_equal(second_leg, 32);
    /* The leaf-to-NIC speed is the leg's 400G, not the 800G port's. */
    assert_near(bom->tiers[SN_TIER_NODE_LEAF].link_bytes_per_s, 400e9 / 8, 1);
    const struct sn_bom_switches *leaf = NULL;
    for (uint32_t i = 0; i < bom->n_switch_lines; i++)
        if (bom->switch_lines[i].role == SN_ROLE_LEAF)
            leaf = &bom->switch_lines[i];
    assert_non_null(leaf);
    assert_int_equal(leaf->ports_used, 4 * 24);
    release(&b);
}

/* ---- the standard unit ------------------------------------------------ */

static void test_std_unit(void **state)
{
    (void)state;
    struct built b;
    build_file(&b, "examples/std-unit-64.yaml");
    const struct sn_bom *bom = &b.bom;
    assert_int_equal(bom->gpus, 64);
    assert_int_equal(bom->servers, 8);
    assert_int_equal(bom->switches_by_role[SN_ROLE_SCALEUP], 32); /* 4 per server */
    assert_int_equal(bom->switches_by_role[SN_ROLE_LEAF], 2);
    assert_int_equal(bom->switches_by_role[SN_ROLE_MGMT], 2);
    assert_int_equal(bom->tiers[SN_TIER_SCALEUP].links, 64 * 18);
    assert_int_equal(bom->tiers[SN_TIER_NODE_LEAF].links, 64);
    assert_int_equal(bom->tiers[SN_TIER_MGMT].links, 8);
    assert_int_equal(bom->links, 64 * 18 + 64 + 8);
    assert_int_equal(bom->fabric_tiers, 1);
    /* Leaves: 32 of 64 ports used each (4 NICs x 8 servers). */
    for (uint32_t l = 0; l < bom->n_switch_lines; l++)
        if (bom->switch_lines[l].role == SN_ROLE_LEAF) {
            assert_int_equal(bom->switch_lines[l].ports_used, 64);
            assert_int_equal(bom->switch_lines[l].ports_free, 64);
        }
    /* Single-fed servers alternate over A and B: 4 each of 4.6 + 5.6 kW,
     * plus a leaf (1.5 kW) and a management switch (150 W) per domain. */
    assert_near(bom->power[0].steady_w, 4 * 10200.0 + 1500 + 150, 1e-6);
    assert_near(bom->power[1].steady_w, 4 * 10200.0 + 1500 + 150, 1e-6);
    assert_near(bom->power[0].peak_w, 4 * (4600 + 8 * 700 * 1.3) + 1650, 1e-6);
    assert_int_equal(bom->blast[SN_DOMAIN_POWER_DOMAIN].max_gpus, 32);
    assert_int_equal(bom->blast[SN_DOMAIN_POWER_DOMAIN].max_supernodes, 0);
    assert_int_equal(bom->blast[SN_DOMAIN_POWER_DOMAIN].max_supernodes_hit, 1);
    /* Local NVMe: 8 x 30 TB. */
    assert_int_equal(bom->n_storage, 2);
    assert_near(bom->storage[0].capacity_bytes, 8 * 30e12, 1);
    assert_near(bom->storage[1].capacity_bytes, 2e15, 1);
    release(&b);
}

/* The JSON document parses back and carries the same figures. */
static void test_json_round_trip(void **state)
{
    (void)state;
    struct built b;
    build_file(&b, "tests/specs/bom/nvl72-rack.yaml");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct sn_error err = {0};
    assert_int_equal(sn_bom_write_json(f, b.model, &b.bom, &err), SN_OK);
    fclose(f);
    json_error_t jerr;
    json_t *doc = json_loads(buf, 0, &jerr);
    if (!doc)
        fail_msg("bad JSON: %s at line %d", jerr.text, jerr.line);
    assert_string_equal(json_string_value(json_object_get(doc, "schema")), "supernode.bom/1");
    json_t *counts = json_object_get(doc, "counts");
    assert_int_equal(json_integer_value(json_object_get(counts, "gpus")), 72);
    assert_int_equal(json_integer_value(json_object_get(counts, "links")), b.bom.links);
    json_t *sw = json_object_get(counts, "switches");
    assert_int_equal(json_integer_value(json_object_get(sw, "scaleup")), 18);
    json_t *t = json_array_get(json_object_get(json_object_get(doc, "bandwidth"), "templates"), 0);
    assert_near(json_real_value(json_object_get(t, "scaleup_gpu_bidirectional_bytes_per_s")),
                1.8e12, 1);
    json_t *pd = json_object_get(json_object_get(doc, "power"), "domains");
    assert_int_equal(json_array_size(pd), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(pd, 0), "name")),
                        "sn00-pdA");
    assert_int_equal(json_array_size(json_object_get(doc, "blast_radius")), SN_DOMAIN_KIND_COUNT);
    json_decref(doc);
    free(buf);
    release(&b);
}

/* The text tables name every section and group rows past 16 instances. */
static void test_text_output(void **state)
{
    (void)state;
    char *text = superpod_spec(16);
    struct built b;
    build_text(&b, "superpod.yaml", text);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct sn_error err = {0};
    assert_int_equal(sn_bom_write_text(f, b.model, &b.bom, &err), SN_OK);
    fclose(f);
    assert_non_null(strstr(buf, "Bill of materials: superpod-16-su"));
    assert_non_null(strstr(buf, "su/pdA x16")); /* 32 domains: grouped */
    assert_non_null(strstr(buf, "su/rack7 x16"));
    assert_null(strstr(buf, "sn00-pdA"));
    assert_non_null(strstr(buf, "fabric: 3 tier(s)"));
    free(buf);
    release(&b);
    free(text);
}

static void test_release_null(void **state)
{
    (void)state;
    sn_bom_release(NULL);
    struct sn_bom bom;
    memset(&bom, 0, sizeof(bom));
    sn_bom_release(&bom);
    sn_bom_release(&bom);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_superpod_reference_table),
        cmocka_unit_test(test_superpod_every_n),
        cmocka_unit_test(test_superpod_figures),
        cmocka_unit_test(test_bom_review_agree),
        cmocka_unit_test(test_nvl72_rack),
        cmocka_unit_test(test_totals),
        cmocka_unit_test(test_superpod_h100),
        cmocka_unit_test(test_superpod_gb200),
        cmocka_unit_test(test_std_unit),
        cmocka_unit_test(test_cloudmatrix_384),
        cmocka_unit_test(test_two_level_ratio),
        cmocka_unit_test(test_breakout_counts),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_text_output),
        cmocka_unit_test(test_release_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
