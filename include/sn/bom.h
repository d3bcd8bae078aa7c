/*
 * sn/bom.h: the bill of materials and the design figures of a cluster.
 *
 * sn_bom_compute() walks a built model once and fills a struct sn_bom:
 * counts by model (GPUs, servers, switches by role), ports used and free
 * per switch role, links and cables by tier, cable type and length class,
 * optical modules, bandwidth figures per supernode template, bisection
 * bandwidth per link tier, power per power domain and per rack, heat per
 * cooling loop, storage, and the blast radius of each failure-domain kind.
 * docs/bom.md gives every figure and how it is computed.
 *
 * Units follow sn/spec.h: bandwidth in bytes per second per direction,
 * power in watts. Nothing here prints except the writers, which take a
 * FILE * (the CLI passes stdout); computing is pure.
 *
 * Ownership: struct sn_bom owns its arrays; sn_bom_release() frees them and
 * accepts a zeroed or released bom. The bom borrows nothing from the model
 * after sn_bom_compute() returns, but the writers need the model (for
 * names) and its spec.
 */
#ifndef SN_BOM_H
#define SN_BOM_H

#include <stdint.h>
#include <stdio.h>

#include <sn/error.h>
#include <sn/model.h>

/* Switches of one (role, model) pair. */
struct sn_bom_switches {
    uint8_t role;   /* enum sn_switch_role */
    uint32_t model; /* spec switch_models index */
    uint32_t count;
    uint64_t ports;      /* count x model ports */
    uint64_t ports_used; /* link ends on these switches */
    uint64_t ports_free; /* sum over switches of max(0, ports - used) */
    uint64_t ports_over; /* sum over switches of max(0, used - ports) */
    double power_w;      /* count x model power */
};

/* Links of one (tier, cable type, length class) triple. */
struct sn_bom_cables {
    uint8_t tier;         /* enum sn_link_tier */
    uint8_t cable;        /* spec cable_types index, 255 = none given */
    uint8_t length_class; /* spec length_classes index, 255 = none given */
    uint64_t links;
    uint64_t optics;       /* pluggable optical modules: 2 per "optic" link; a breakout
                            * cable of n legs has n + 1 */
    double optics_power_w; /* optic_power_w per module of an "optic" or "aoc" link */
    uint64_t cables;       /* physical cables: links, a breakout of n legs counted once */
};

/* Per link tier: how many links and the bandwidth across the tier. */
struct sn_bom_tier {
    uint64_t links;
    double link_bytes_per_s;      /* slowest link of the tier, per direction */
    double capacity_bytes_per_s;  /* sum over links of their speed */
    double bisection_bytes_per_s; /* capacity / 2: see docs/bom.md */
};

/* Figures of one supernode template that the cluster uses. */
struct sn_bom_template {
    uint32_t template_index;
    uint32_t supernodes;                  /* instances */
    uint32_t gpus;                        /* per supernode */
    uint32_t scaleup_chips;               /* per supernode */
    uint64_t scaleup_links;               /* GPU-to-chip links per supernode */
    uint64_t scaleup_ports;               /* chip ports per supernode */
    double scaleup_gpu_bytes_per_s;       /* per GPU, per direction */
    double scaleup_supernode_bytes_per_s; /* all GPUs of one supernode */
    double scaleout_gpu_bytes_per_s;      /* per GPU, per direction */
    double convergence;                   /* scale-up : scale-out per GPU; 0 = none */
};

/* Draw on one power domain. Dual-fed servers split their draw evenly over
 * both feeds in normal operation and put all of it on one feed when the
 * other fails (failover). */
struct sn_bom_power {
    double steady_w;        /* normal operation, GPUs at TDP */
    double peak_w;          /* GPUs at peak_factor x TDP */
    double failover_peak_w; /* peak, with every dual-fed load on this domain */
    double capacity_w;
};

struct sn_bom_rack {
    double steady_w;
    double peak_w;
    double limit_w;
};

struct sn_bom_loop {
    double heat_w; /* steady draw of the racks on the loop */
    double capacity_w;
};

/* What one failure of a domain of this kind takes down, worst case. */
struct sn_bom_blast {
    uint32_t domains;            /* domains of the kind */
    uint32_t max_gpus;           /* most GPUs one failure takes */
    uint32_t max_supernodes;     /* most whole supernodes one failure takes */
    uint32_t max_supernodes_hit; /* most supernodes one failure touches */
};

/* What one fabric power domain's loss costs the spine-core fabric, worst
 * case over the domains (sn_model_fabric_loss). */
struct sn_bom_fabric_blast {
    uint32_t domains;         /* fabric power domains */
    uint32_t spines, cores;
    uint32_t max_spines_lost, max_cores_lost;
    double min_bisection_kept; /* 1 when there is no fabric domain */
};

struct sn_bom_storage {
    uint32_t spec_index;
    double capacity_bytes; /* cluster total (local: servers x NVMe) */
    double read_bytes_per_s;
    double write_bytes_per_s;
};

/* HBM, CPUs and host memory of a set of servers (docs/bom.md, "Totals").
 * Raw HBM is the datasheet capacity; usable is raw less SN_BOM_HBM_RESERVE
 * per GPU (CUDA context, NCCL buffers, workspaces: the planner's reserve). */
#define SN_BOM_HBM_RESERVE (2.0 * 1073741824.0)
struct sn_bom_host_totals {
    uint32_t servers, gpus, cpu_cores;
    double hbm_bytes;
    double hbm_usable_bytes;
    double hbm_bytes_per_s;
    double host_memory_bytes; /* the server models' memory (LPDDR of a superchip included) */
};

/* Links, cables and optics of one link tier (the cable lines summed). */
struct sn_bom_tier_media {
    uint64_t links, cables, optics;
    double optics_power_w;
};

/* Per GPU model: the roofline ridge and the scale-up bytes per FLOP. */
struct sn_bom_gpu_figures {
    double ridge_flop_per_byte;    /* dense BF16 FLOP/s / HBM bytes/s */
    double scaleup_bytes_per_flop; /* links x link bandwidth (per direction) / dense BF16 FLOP/s */
};

struct sn_bom {
    /* counts */
    uint32_t supernodes, servers, gpus, racks, power_domains, cooling_loops;
    uint32_t *gpus_by_model;    /* [spec n_gpu_models] */
    uint32_t *servers_by_model; /* [spec n_server_models] */
    uint32_t switches_by_role[SN_SWITCH_ROLE_COUNT];
    uint32_t n_switch_lines;
    struct sn_bom_switches *switch_lines; /* sorted by role, then model */
    uint32_t n_cable_lines;
    struct sn_bom_cables *cable_lines; /* sorted by tier, cable, length */
    uint64_t links, optics;
    double optics_power_w;

    /* bandwidth */
    uint32_t fabric_tiers; /* 1 (leaves only or none), 2 or 3 */
    struct sn_bom_tier tiers[SN_LINK_TIER_COUNT];
    double leaf_oversubscription;  /* leaf downlinks : uplinks; 0 = no uplinks */
    double spine_oversubscription; /* leaf-spine : spine-core links (3 tiers) */
    uint32_t n_templates;
    struct sn_bom_template *templates; /* in spec template order */
    double dense_bf16_flops;           /* cluster total */

    /* power and cooling */
    struct sn_bom_power *power; /* [power_domains] */
    double unassigned_w;        /* switches in no power domain (spine, core) */
    double steady_w, peak_w;    /* cluster totals, optics included */
    struct sn_bom_rack *rack;   /* [racks] */
    struct sn_bom_loop *loop;   /* [cooling_loops] */

    struct sn_bom_blast blast[SN_DOMAIN_KIND_COUNT];
    uint32_t n_storage;
    struct sn_bom_storage *storage;
    struct sn_bom_fabric_blast fabric_blast;

    /* totals */
    struct sn_bom_host_totals total;
    struct sn_bom_host_totals *rack_totals;      /* [racks] */
    struct sn_bom_host_totals *supernode_totals; /* [supernodes] */
    struct sn_bom_tier_media media[SN_LINK_TIER_COUNT];
    struct sn_bom_gpu_figures *gpu_figures; /* [spec n_gpu_models] */
    /* non-compute parts (the spec's appliances:) */
    uint32_t appliances_by_kind[SN_APPLIANCE_KIND_COUNT];
    uint32_t appliance_racks;   /* dedicated racks they fill (storage, network racks) */
    uint64_t appliance_rack_units;
    double appliance_w;         /* steady; added to IT power for the facility figure */
    /* scalable units (the spec's su:); 0 units without one */
    uint32_t su_units, su_supernodes; /* units (the last may be partial), supernodes per unit */
    double su_rack_power_w;           /* budget per rack */
    double rack_peak_max_w;           /* the largest peak of any rack (compute or network) */
    double pue;                             /* facility.pue; 0: not stated */
    double facility_steady_w, facility_peak_w; /* (IT + appliance power) x PUE; 0 without one */
};

/* Computes the bill of materials of a model into *bom (which must be zeroed
 * or released). Costs O(GPUs + links). On failure bom is left released. */
SN_MUST_CHECK enum sn_err sn_bom_compute(const struct sn_model *model, struct sn_bom *bom,
                                         struct sn_error *err);

/* Frees the arrays of a bom and zeroes it. NULL is allowed. */
void sn_bom_release(struct sn_bom *bom);

/* The template figures of a template index, or NULL when no supernode uses
 * that template. */
const struct sn_bom_template *sn_bom_template(const struct sn_bom *bom, uint32_t template_index);

/* Writes the human-readable tables (docs/cmd-design.md shows them). */
SN_MUST_CHECK enum sn_err sn_bom_write_text(FILE *out, const struct sn_model *model,
                                            const struct sn_bom *bom, struct sn_error *err);

/* Writes the bom as one JSON document (schema "supernode.bom/1", documented
 * in docs/bom.md; keys are stable). */
SN_MUST_CHECK enum sn_err sn_bom_write_json(FILE *out, const struct sn_model *model,
                                            const struct sn_bom *bom, struct sn_error *err);

#endif /* SN_BOM_H */
