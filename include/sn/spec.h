/*
 * sn/spec.h: the declarative cluster spec, as parsed from YAML.
 *
 * A spec describes a build with catalogues and templates plus counts, never
 * one line per GPU: catalogues of GPU, server, switch and cable models;
 * supernode templates (servers, scale-up fabric, leaves, racks, power
 * domains, cooling loops); instances of templates with counts; the scale-out
 * fabric above the leaves; the management network; storage tiers; pools;
 * declared totals to cross-check; and the thresholds of the design review.
 * docs/spec.md is the reference for every key, unit and default.
 *
 * Every quantity is stored in one canonical unit, named in the field:
 *   bandwidth: bytes per second per direction (_bytes_per_s)
 *   power: watts (_w); data: bytes (_bytes); length: metres (_m);
 *   compute: FLOP/s (_flops); flow: litres per minute (_lpm); time: s.
 * Bidirectional figures are halved on input, never guessed: a scale-up
 * bandwidth without "per-direction" or "bidirectional" is an error.
 *
 * References between entities are indices into the owning array (uint32_t),
 * resolved and checked by the parser; SN_NONE marks an absent reference.
 * Every entity keeps the line and column of its definition for messages.
 *
 * Ownership: sn_spec_parse_*() allocates everything the spec points to in
 * one arena owned by the spec; sn_spec_free() releases it all.
 */
#ifndef SN_SPEC_H
#define SN_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

#define SN_NONE UINT32_MAX

/* Hard caps so that a spec cannot exhaust memory. */
#define SN_SPEC_MAX_BYTES (4u << 20)     /* size of a spec file */
#define SN_SPEC_MAX_CATALOG 256          /* entries per catalogue */
#define SN_SPEC_MAX_TEMPLATES 64
#define SN_SPEC_MAX_DOMAINS_PER_TEMPLATE 16
#define SN_SPEC_MAX_GPUS (1u << 22)      /* 4,194,304 GPUs in one cluster */

struct sn_src_loc {
    unsigned line;   /* 1-based; 0 when built in code */
    unsigned column; /* 1-based */
};

#define SN_SWITCH_KIND_LIST(X)                                                \
    X(NVLINK, "nvlink")                                                       \
    X(INFINIBAND, "infiniband")                                               \
    X(ETHERNET, "ethernet")
enum sn_switch_kind {
#define SN_X(name, text) SN_SWITCH_##name,
    SN_SWITCH_KIND_LIST(SN_X)
#undef SN_X
    SN_SWITCH_KIND_COUNT
};
const char *sn_switch_kind_name(enum sn_switch_kind kind);

#define SN_CABLE_MEDIUM_LIST(X)                                               \
    X(COPPER, "copper") /* backplane or fixed copper (NVLink spine) */        \
    X(DAC, "dac")       /* direct-attach copper */                            \
    X(AOC, "aoc")       /* active optical cable, optics built in */           \
    X(OPTIC, "optic")   /* fibre with a pluggable transceiver at each end */
enum sn_cable_medium {
#define SN_X(name, text) SN_CABLE_##name,
    SN_CABLE_MEDIUM_LIST(SN_X)
#undef SN_X
    SN_CABLE_MEDIUM_COUNT
};
const char *sn_cable_medium_name(enum sn_cable_medium medium);

#define SN_POWER_KIND_LIST(X) X(AC, "ac") X(HVDC, "hvdc")
enum sn_power_kind {
#define SN_X(name, text) SN_POWER_##name,
    SN_POWER_KIND_LIST(SN_X)
#undef SN_X
    SN_POWER_KIND_COUNT
};
const char *sn_power_kind_name(enum sn_power_kind kind);

#define SN_COOLING_KIND_LIST(X) X(AIR, "air") X(LIQUID, "liquid")
enum sn_cooling_kind {
#define SN_X(name, text) SN_COOLING_##name,
    SN_COOLING_KIND_LIST(SN_X)
#undef SN_X
    SN_COOLING_KIND_COUNT
};
const char *sn_cooling_kind_name(enum sn_cooling_kind kind);

/* Where the scale-up switch chips sit. */
#define SN_SCALEUP_DOMAIN_LIST(X)                                             \
    X(SERVER, "server")       /* NVSwitch inside each server (HGX) */         \
    X(SUPERNODE, "supernode") /* switch trays shared by the supernode (NVL72) */ \
    X(TWO_LEVEL, "two-level") /* L1 chips in each server under L2 switches   \
                               * shared by the supernode (CloudMatrix 384) */
enum sn_scaleup_domain {
#define SN_X(name, text) SN_SCALEUP_##name,
    SN_SCALEUP_DOMAIN_LIST(SN_X)
#undef SN_X
    SN_SCALEUP_DOMAIN_COUNT
};
const char *sn_scaleup_domain_name(enum sn_scaleup_domain domain);

/* How a server's scale-out NICs reach the supernode's leaves. */
#define SN_LEAF_ATTACH_LIST(X)                                                \
    X(RAIL, "rail") /* NIC r of every server to leaf r mod leaves */          \
    X(PAIR, "pair") /* NICs split evenly over a redundant pair of leaves */
enum sn_leaf_attach {
#define SN_X(name, text) SN_LEAF_ATTACH_##name,
    SN_LEAF_ATTACH_LIST(SN_X)
#undef SN_X
    SN_LEAF_ATTACH_COUNT
};
const char *sn_leaf_attach_name(enum sn_leaf_attach attach);

/* How the management (control-plane) network is separated from the data
 * plane. */
#define SN_MGMT_SEPARATION_LIST(X)                                            \
    X(PHYSICAL, "physical") /* own switches: the rule's requirement */        \
    X(VLAN, "vlan")         /* a VLAN on the data-plane leaves: warning */    \
    X(NONE, "none")         /* same network, no separation: error */
enum sn_mgmt_separation {
#define SN_X(name, text) SN_MGMT_##name,
    SN_MGMT_SEPARATION_LIST(SN_X)
#undef SN_X
    SN_MGMT_SEPARATION_COUNT
};
const char *sn_mgmt_separation_name(enum sn_mgmt_separation sep);

#define SN_STORAGE_KIND_LIST(X)                                               \
    X(LOCAL, "local")             /* NVMe in each server */                   \
    X(PARALLEL_FS, "parallel-fs") /* Lustre, GPFS, WekaFS, 3FS */             \
    X(OBJECT, "object")           /* S3-compatible object store */
enum sn_storage_kind {
#define SN_X(name, text) SN_STORAGE_##name,
    SN_STORAGE_KIND_LIST(SN_X)
#undef SN_X
    SN_STORAGE_KIND_COUNT
};
const char *sn_storage_kind_name(enum sn_storage_kind kind);

/* Non-compute parts of a design (appliances:), docs/spec.md. */
#define SN_APPLIANCE_KIND_LIST(X)                                              \
    X(MANAGEMENT, "management")         /* head nodes, provisioning, monitoring */ \
    X(FABRIC_MANAGER, "fabric-manager") /* UFM appliances, NVLink fabric managers */ \
    X(STORAGE, "storage")               /* storage servers and arrays */           \
    X(NETWORK, "network")               /* switches outside the modelled fabrics */ \
    X(OTHER, "other")
enum sn_appliance_kind {
#define SN_X(name, text) SN_APPLIANCE_##name,
    SN_APPLIANCE_KIND_LIST(SN_X)
#undef SN_X
    SN_APPLIANCE_KIND_COUNT
};
const char *sn_appliance_kind_name(enum sn_appliance_kind kind);

struct sn_appliance_spec {
    const char *name;
    struct sn_src_loc loc;
    enum sn_appliance_kind kind;
    uint32_t count;      /* units */
    uint32_t rack_units; /* per unit, 0: not stated */
    double power_w;      /* per unit, steady */
    uint32_t racks;      /* dedicated racks the units fill in all (storage, network racks); 0: none */
};

#define SN_POOL_KIND_LIST(X)                                                  \
    X(DEDICATED, "dedicated") /* whole supernodes owned by one job/tenant */  \
    X(MIXED, "mixed")         /* shared supernodes under per-tenant quotas */ \
    X(ELASTIC, "elastic")     /* preemptible, lowest priority */
enum sn_pool_kind {
#define SN_X(name, text) SN_POOL_##name,
    SN_POOL_KIND_LIST(SN_X)
#undef SN_X
    SN_POOL_KIND_COUNT
};
const char *sn_pool_kind_name(enum sn_pool_kind kind);

/* How many power supplies may fail while the rest carry the load. */
#define SN_PSU_REDUNDANCY_LIST(X)                                             \
    X(NONE, "none")         /* every PSU is needed */                         \
    X(N_PLUS_1, "n+1")      /* one PSU may fail */                            \
    X(N_PLUS_N, "n+n")      /* one side (half the PSUs, one feed) may fail */
enum sn_psu_redundancy {
#define SN_X(name, text) SN_PSU_##name,
    SN_PSU_REDUNDANCY_LIST(SN_X)
#undef SN_X
    SN_PSU_REDUNDANCY_COUNT
};
const char *sn_psu_redundancy_name(enum sn_psu_redundancy redundancy);

/* The power supplies of a server, or of a rack's power shelves taken
 * together (docs/spec.md "psu"). count 0: not stated, rule R19 skips. */
struct sn_psu_spec {
    struct sn_src_loc loc;
    uint32_t count;
    double rating_w;          /* continuous output of one PSU */
    enum sn_psu_redundancy redundancy;
    double pulse;             /* short-term rating as a multiple of rating_w
                               * (1.6 = 160 %); 0: none stated */
    double pulse_s;           /* how long the pulse rating holds */
};

/* The electrical feeds (circuits) of a rack (docs/spec.md "feed"): count
 * circuits of voltage (line-to-line for 3 phases), phases and breaker
 * current. count 0: not stated, rule R20 skips. */
struct sn_feed_spec {
    struct sn_src_loc loc;
    uint32_t count;
    double voltage_v;         /* line-to-line for 3 phases, line-to-neutral for 1 */
    uint32_t phases;          /* 1 or 3 */
    double current_a;         /* breaker rating per phase conductor */
    double power_factor;      /* real power per volt-ampere, default 1 */
    double continuous;        /* share of the rating a continuous load may use, 0.8 */
    enum sn_psu_redundancy redundancy; /* n+n: half the feeds (one side) may fail */
};

/* ---- catalogues ------------------------------------------------------- */

struct sn_gpu_model {
    const char *name;
    struct sn_src_loc loc;
    double dense_bf16_flops;  /* dense (no sparsity) BF16 FLOP/s */
    double hbm_bytes;
    double hbm_bytes_per_s;   /* HBM bandwidth */
    double tdp_w;
    uint32_t scaleup_links;   /* NVLink (or similar) links per GPU */
    double scaleup_link_bytes_per_s; /* per link, per direction */
};

struct sn_server_model {
    const char *name;
    struct sn_src_loc loc;
    uint32_t gpu_model;       /* index into catalog gpus */
    uint32_t gpus;
    uint32_t cpus;            /* sockets */
    uint32_t cpu_cores;       /* total cores */
    double memory_bytes;
    uint32_t nics;            /* scale-out (compute fabric) NICs */
    double nic_bytes_per_s;   /* per NIC, per direction */
    uint32_t mgmt_ports;      /* management network ports (default 1) */
    double nvme_bytes;
    double nvme_read_bytes_per_s;
    double nvme_write_bytes_per_s;
    double base_power_w;      /* steady draw of everything but the GPUs */
    uint32_t feeds;           /* power feeds: 1, or 2 for dual-corded */
    uint32_t rack_units;
    struct sn_psu_spec psu;   /* the server's own power supplies */
    uint32_t nic_lanes;       /* electrical lanes of a NIC port; 0: not stated */
};

struct sn_switch_model {
    const char *name;
    struct sn_src_loc loc;
    enum sn_switch_kind kind;
    uint32_t ports;
    double port_bytes_per_s;  /* per port, per direction */
    double power_w;
    uint32_t rack_units;
    uint32_t port_lanes;      /* electrical lanes of a port (8 for OSFP 800G); 0: not stated */
};

struct sn_cable_type {
    const char *name;
    struct sn_src_loc loc;
    enum sn_cable_medium medium;
    double reach_m;
    double optic_power_w;     /* per transceiver; two per optical link */
    double speed_bytes_per_s; /* per direction, the whole cable (all legs); 0: not stated
                               * (R18 skips the cable) */
    /* Lanes and breakout (docs/spec.md "catalog.cables"): the trunk end has
     * `lanes` lanes and plugs into the upper (b) end's port; it splits into
     * `breakout` legs of lanes / breakout lanes, one per link, at the lower
     * (a) ends. A breakout shares one switch port among its legs. */
    uint32_t lanes;           /* 0: not stated */
    double lane_bytes_per_s;  /* per lane, per direction; 0: not stated */
    uint32_t breakout;        /* legs, default 1 (a straight cable) */
};

/* A named length class ("in-rack", "row"), the distance a link of that
 * class spans. Defaults are listed in docs/spec.md. */
struct sn_length_class {
    const char *name;
    struct sn_src_loc loc;
    double length_m;
};

/* A set of links: which cable type and which length class they use. */
struct sn_cabling {
    uint32_t cable;           /* index into catalog cables */
    uint32_t length_class;    /* index into length_classes */
};

/* ---- supernode templates ---------------------------------------------- */

struct sn_power_domain_spec {
    const char *name;         /* local name, e.g. "A" */
    struct sn_src_loc loc;
    double capacity_w;
    enum sn_power_kind kind;
    uint32_t redundant_with;  /* index in the same template, or SN_NONE */
};

struct sn_cooling_loop_spec {
    const char *name;
    struct sn_src_loc loc;
    enum sn_cooling_kind kind;
    double capacity_w;        /* heat it can remove */
    double flow_lpm;          /* design flow, litres per minute (liquid) */
};

/* Placement of members on local domains: a list of local domain indices
 * cycled over the members in order. Empty means round-robin over all. */
struct sn_domain_list {
    uint32_t count;
    uint32_t *index;
};

/* The second level of a two-level scale-up domain (scaleup.l2, docs/spec.md):
 * planes x per_plane L2 switches per supernode. L1 chip c of every server
 * belongs to plane c mod planes and has `links` links to each L2 switch of
 * its plane, so every pair of servers meets on every L2 switch of a plane. */
struct sn_scaleup_l2_spec {
    struct sn_src_loc loc;    /* of the l2 key; line 0 when absent */
    uint32_t switch_model;    /* SN_NONE without an l2 block */
    uint32_t planes;          /* sub-planes; divides the L1 chips per server */
    uint32_t per_plane;       /* L2 switches in each plane */
    uint32_t links;           /* links from one L1 chip to one L2 switch, default 1 */
    double oversubscription;  /* allowed L1 down : up bandwidth, default 1:1 */
    struct sn_src_loc oversubscription_loc; /* of the key; line 0 when absent */
    uint32_t racks;           /* racks of the supernode holding only L2 switches
                               * (after the compute racks); 0: L2 switches cycle
                               * over the compute racks */
    struct sn_cabling cabling; /* L1 chip to L2 switch */
    struct sn_domain_list power; /* template power domains cycled over the L2 switches */
};

struct sn_scaleup_spec {
    enum sn_scaleup_domain domain;
    uint32_t switch_model;    /* SN_NONE: GPUs joined only through leaves */
    uint32_t chips;           /* per server (domains server and two-level) or per supernode */
    uint32_t hop_limit;       /* switch hops allowed between any GPU pair */
    struct sn_cabling cabling;
    struct sn_domain_list power; /* for supernode-domain chips */
    struct sn_scaleup_l2_spec l2; /* domain two-level only */
    /* Chips per NVLink switch tray (1: each chip its own tray), a divisor
     * of chips: chips [k*n, (k+1)*n) of a supernode (or server) form tray k.
     * The health engine names a lost tray once (docs/health.md "Rack
     * fabric"). */
    uint32_t chips_per_tray;
};

struct sn_leaves_spec {
    uint32_t switch_model;    /* SN_NONE: no scale-out leaves */
    uint32_t count;
    enum sn_leaf_attach attach;
    double oversubscription;  /* downlinks : uplinks, 1.0 = 1:1 */
    struct sn_cabling cabling; /* server to leaf */
    struct sn_domain_list power;
};

struct sn_racks_spec {
    uint32_t count;
    double power_limit_w;
    enum sn_cooling_kind cooling;
    struct sn_domain_list loops; /* cooling loop of each rack, cycled */
    struct sn_psu_spec psu;   /* the rack's power shelves, all PSUs together */
    struct sn_feed_spec feed; /* the rack's circuits */
};

struct sn_mgmt_spec {
    enum sn_mgmt_separation separation;
    uint32_t switch_model;    /* for physical separation */
    uint32_t count;           /* per supernode; 2 makes a redundant pair */
    struct sn_cabling cabling;
    struct sn_domain_list power;
};

struct sn_template {
    const char *name;
    struct sn_src_loc loc;
    uint32_t server_model;
    uint32_t servers;
    struct sn_scaleup_spec scaleup;
    struct sn_leaves_spec leaves;
    struct sn_racks_spec racks;
    struct sn_mgmt_spec mgmt;
    uint32_t n_power_domains;
    struct sn_power_domain_spec *power_domains;
    struct sn_domain_list server_power; /* primary feed of each server */
    uint32_t n_cooling_loops;
    struct sn_cooling_loop_spec *cooling_loops;
};

/* count instances of a template. Supernodes are named prefix + number,
 * numbered from 0 across all groups that share a prefix (default "sn"),
 * zero-padded to at least two digits: sn00, sn01, ... */
struct sn_supernode_group {
    struct sn_src_loc loc;
    const char *prefix;
    uint32_t template_index;
    uint32_t count;
    uint32_t pool;            /* index into pools, or SN_NONE */
    struct sn_src_loc prefix_loc; /* of the prefix value (the entry when absent) */
};

/* ---- fabric, storage, pools, expectations, review --------------------- */

struct sn_fabric_tier_spec {
    uint32_t switch_model;    /* SN_NONE when the tier is absent */
    double oversubscription;  /* downlinks : uplinks of this tier's switches */
    struct sn_cabling cabling; /* links from the tier below */
    struct sn_src_loc oversubscription_loc; /* of the key; line 0 when absent */
    struct sn_domain_list power; /* fabric power domains cycled over the tier's
                                  * switches; empty: round-robin over all */
};

/* The dedicated network racks that hold the spine and core switches. */
struct sn_fabric_racks_spec {
    uint32_t count;           /* 0: enough racks for the switches' rack units */
    uint32_t units;           /* rack units per rack, default 42 */
    double power_limit_w;     /* 0: not stated (rule R05 skips the limit) */
    enum sn_cooling_kind cooling;
};

struct sn_fabric_spec {
    bool present;
    uint32_t tiers;           /* 0 = auto (2 while leaves fit one spine's ports) */
    bool rail_optimized;
    double efficiency;        /* achievable fraction of nominal, default 0.75 */
    double per_gpu_need_bytes_per_s; /* planned per-GPU scale-out need */
    struct sn_fabric_tier_spec spine;
    struct sn_fabric_tier_spec core;
    uint32_t spines;          /* 2-tier spine count; 0 = auto (smallest even spread) */
    struct sn_src_loc spines_loc; /* of the key; line 0 when absent */
    /* Power domains of the network racks (fabric.power_domains). Absent
     * with a spine tier: two domains A and B, redundant with each other,
     * capacity 0 (not stated: rule R04 warns). */
    uint32_t n_power_domains;
    struct sn_power_domain_spec *power_domains;
    bool power_domains_stated;
    struct sn_fabric_racks_spec racks;
};

struct sn_storage_spec {
    const char *name;
    struct sn_src_loc loc;
    enum sn_storage_kind kind;
    double capacity_bytes;    /* local: per server, from the server model */
    double read_bytes_per_s;  /* aggregate (local: per server) */
    double write_bytes_per_s;
};

struct sn_pool_spec {
    const char *name;
    struct sn_src_loc loc;
    enum sn_pool_kind kind;
    bool training;            /* training pools need a 1:1 fabric */
};

/* A planned parallel layout, cross-checked by the count rule. */
struct sn_layout_spec {
    const char *name;
    struct sn_src_loc loc;
    uint32_t gpus, tp, pp, dp, cp, ep;
};

/* Totals a design document states, cross-checked against the expansion.
 * 0 means not stated. */
struct sn_expect_spec {
    struct sn_src_loc loc;
    uint64_t gpus, servers, supernodes, leaves, spines, cores, racks;
    uint64_t node_leaf_cables, leaf_spine_cables, spine_core_cables;
};

/* The facility around the IT load (docs/spec.md, "facility"). */
struct sn_facility_spec {
    struct sn_src_loc loc; /* of the key; line 0 when absent */
    double pue;            /* power usage effectiveness, facility / IT power; 0: not stated */
};

/* Scalable units (su:): the supernodes in ID order, grouped `supernodes`
 * at a time (the last unit may be partial), each rack of a unit held to a
 * power budget the facility gives it (rule R21, docs/spec.md). */
struct sn_su_spec {
    struct sn_src_loc loc;  /* of the key; line 0 when absent */
    uint32_t supernodes;    /* per unit; 0: no su: section */
    double rack_power_w;    /* budget per rack: compute, network and appliance racks */
    struct sn_src_loc rack_power_loc;
};

/* Thresholds of the design review; each has a default (docs/rules.md). */
struct sn_review_config {
    double power_margin;          /* capacity >= margin x steady, 1.5 */
    double peak_factor;           /* GPU peak = factor x TDP, 1.3 */
    double survivor_fraction;     /* of each supernode after losing a domain, 0.5 */
    double air_cooling_limit_w;   /* 40 kW */
    double cooling_margin;        /* loop capacity >= margin x heat, 1.2 */
    double bandwidth_headroom;    /* 0.3 */
    double memory_wall_bytes_per_flop; /* 0.003 */
    double peak_duration_s;       /* how long the GPU peak lasts; 0: sustained (R19) */
};
void sn_review_config_defaults(struct sn_review_config *config);

/* Real identities of the servers (docs/spec.md, "inventory"): name patterns
 * expanded in model order (sn/inventory.h) and an inventory CSV, relative to
 * the spec's directory. Each string is NULL when absent. */
struct sn_inventory_spec {
    struct sn_src_loc loc;
    const char *hosts, *ips, *file;
    struct sn_src_loc hosts_loc, ips_loc, file_loc; /* of each value */
    /* Declared NVLink domain identities (key `cliques`, issue 26 item 1):
     * per supernode or server name, the "CLUSTER_UUID/CLIQUE_ID" its GPUs
     * must report (nvidia-smi -q Fabric section), normalised: the UUID in
     * lower case, the id in decimal without leading zeros. Names are checked
     * against the model by sn_cliques_declare() (sn/cliques.h). */
    uint32_t n_cliques;
    struct sn_clique_decl {
        const char *name;                /* a supernode ("nvl00") or server ("nvl00-t03") name */
        const char *clique;              /* "CLUSTER_UUID/CLIQUE_ID" */
        struct sn_src_loc name_loc, loc; /* of the key and of the value */
    } * cliques;
};


struct sn_spec {
    const char *file;         /* as given to the parser, for messages */
    const char *name;
    const char *description;
    uint32_t version;

    uint32_t n_gpu_models;
    struct sn_gpu_model *gpu_models;
    uint32_t n_server_models;
    struct sn_server_model *server_models;
    uint32_t n_switch_models;
    struct sn_switch_model *switch_models;
    uint32_t n_cable_types;
    struct sn_cable_type *cable_types;
    uint32_t n_length_classes;
    struct sn_length_class *length_classes;

    uint32_t n_templates;
    struct sn_template *templates;
    uint32_t n_groups;
    struct sn_supernode_group *groups;

    struct sn_fabric_spec fabric;
    uint32_t n_storage;
    struct sn_storage_spec *storage;
    uint32_t n_pools;
    struct sn_pool_spec *pools;
    uint32_t n_layouts;
    struct sn_layout_spec *layouts;
    struct sn_expect_spec expect;
    struct sn_review_config review;
    struct sn_inventory_spec inventory;
    struct sn_facility_spec facility;
    struct sn_su_spec su;
    uint32_t n_appliances;
    struct sn_appliance_spec *appliances;

    void *arena; /* private: owns every allocation above */
};

/* Parses a spec from a file. On success *out owns a new spec; free it with
 * sn_spec_free(). On failure *out is NULL and err says file:line:col, what
 * was found and what was expected. */
SN_MUST_CHECK enum sn_err sn_spec_parse_file(const char *path, struct sn_spec **out,
                                             struct sn_error *err);

/* As sn_spec_parse_file(), from memory. name is used in messages. */
SN_MUST_CHECK enum sn_err sn_spec_parse_buffer(const char *name, const char *buf, size_t len,
                                               struct sn_spec **out, struct sn_error *err);

/* Frees a spec and all it owns. NULL is allowed. */
void sn_spec_free(struct sn_spec *spec);

/* Index of the catalogue entry or template with that name, or SN_NONE. */
uint32_t sn_spec_find_gpu_model(const struct sn_spec *spec, const char *name);
uint32_t sn_spec_find_server_model(const struct sn_spec *spec, const char *name);
uint32_t sn_spec_find_switch_model(const struct sn_spec *spec, const char *name);
uint32_t sn_spec_find_template(const struct sn_spec *spec, const char *name);
uint32_t sn_spec_find_storage(const struct sn_spec *spec, const char *name);

#endif /* SN_SPEC_H */
