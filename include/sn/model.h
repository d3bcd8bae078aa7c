/*
 * sn/model.h: the one model of the cluster, expanded from a spec.
 *
 * Every part of Supernode (design review, planner, scheduler, simulator,
 * health engine, daemon) works on this model and uses its IDs. Each entity
 * kind lives in dense arrays indexed by a uint32_t ID (struct-of-arrays);
 * entities refer to each other by ID, never by pointer; each kind has one
 * owning table. IDs are assigned in spec order, so the same spec always
 * yields the same IDs and names.
 *
 * Invariants (checked by sn_model_verify()):
 *  - the GPUs, servers, scale-up chips, leaves, racks, power domains and
 *    cooling loops of one supernode have contiguous IDs; the ranges in
 *    struct sn_supernode give them;
 *  - a GPU's server, supernode, rack, power domains, cooling loop and leaf
 *    are O(1) lookups (at most two array reads);
 *  - switch ports are handed out consecutively and every port is used by
 *    exactly one link end. A switch may be wired past its model's radix:
 *    the model keeps the overrun so the design review can report it.
 *
 * Ownership: sn_model_build() returns a model that borrows the spec (the
 * spec must outlive it) and owns all arrays; sn_model_free() frees them.
 */
#ifndef SN_MODEL_H
#define SN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/bitset.h>
#include <sn/error.h>
#include <sn/spec.h>

#define SN_SWITCH_ROLE_LIST(X)                                                \
    X(SCALEUP, "scaleup") /* NVSwitch chip, in a server or a switch tray */   \
    X(LEAF, "leaf")       /* scale-out leaf (ToR, rail switch) */             \
    X(SPINE, "spine")                                                         \
    X(CORE, "core")                                                           \
    X(MGMT, "mgmt")       /* management (control-plane) switch */         \
    X(SCALEUP_L2, "scaleup-l2") /* L2 switch of a two-level scale-up domain */
enum sn_switch_role {
#define SN_X(name, text) SN_ROLE_##name,
    SN_SWITCH_ROLE_LIST(SN_X)
#undef SN_X
    SN_SWITCH_ROLE_COUNT
};
const char *sn_switch_role_name(enum sn_switch_role role);

/* What a link joins: the tier it belongs to. */
#define SN_LINK_TIER_LIST(X)                                                  \
    X(SCALEUP, "scaleup")       /* GPU to scale-up chip */                    \
    X(NODE_LEAF, "node-leaf")   /* server NIC to leaf */                      \
    X(LEAF_SPINE, "leaf-spine")                                               \
    X(SPINE_CORE, "spine-core")                                               \
    X(MGMT, "mgmt")             /* server management port to mgmt switch */   \
    X(SCALEUP_L2, "scaleup-l2") /* L1 scale-up chip to L2 switch (two-level) */
enum sn_link_tier {
#define SN_X(name, text) SN_TIER_##name,
    SN_LINK_TIER_LIST(SN_X)
#undef SN_X
    SN_LINK_TIER_COUNT
};
const char *sn_link_tier_name(enum sn_link_tier tier);

/* Kinds of entity a link end can be. */
#define SN_ENDPOINT_KIND_LIST(X) X(GPU, "gpu") X(SERVER, "server") X(SWITCH, "switch")
enum sn_endpoint_kind {
#define SN_X(name, text) SN_END_##name,
    SN_ENDPOINT_KIND_LIST(SN_X)
#undef SN_X
    SN_ENDPOINT_KIND_COUNT
};

/* Failure domains, for blast radius and fault injection. */
#define SN_DOMAIN_KIND_LIST(X)                                                \
    X(GPU, "gpu")                                                             \
    X(SERVER, "server")                                                       \
    X(RACK, "rack")                                                           \
    X(POWER_DOMAIN, "power-domain")                                           \
    X(COOLING_LOOP, "cooling-loop")                                           \
    X(LEAF, "leaf")                                                           \
    X(SUPERNODE, "supernode")
enum sn_domain_kind {
#define SN_X(name, text) SN_DOMAIN_##name,
    SN_DOMAIN_KIND_LIST(SN_X)
#undef SN_X
    SN_DOMAIN_KIND_COUNT
};
const char *sn_domain_kind_name(enum sn_domain_kind kind);

/* One link (and its cable). Ports are 0-based indices on that end: the
 * NVLink port of a GPU, the NIC (or management port) of a server, the port
 * of a switch. The cable label is derived from the two ends' names and
 * ports, so it is unique whenever ports are. */
struct sn_link {
    uint32_t a_id;
    uint32_t b_id;
    uint16_t a_port;
    uint16_t b_port;
    uint8_t a_kind;       /* enum sn_endpoint_kind */
    uint8_t b_kind;
    uint8_t tier;         /* enum sn_link_tier */
    uint8_t cable;        /* index into spec cable_types; 255 = none */
    uint8_t length_class; /* index into spec length_classes */
    uint8_t b_leg;        /* leg of a breakout cable on the b end's port (0: the
                           * first leg, or a straight cable) */
    uint8_t reserved[2];
};

/* Ranges of one supernode's entities: [first, first + count). */
struct sn_supernode {
    uint32_t template_index;
    uint32_t group;            /* index into spec groups */
    uint32_t index_in_group;
    uint32_t number;           /* within its name prefix: sn<number> */
    uint32_t name_width;       /* digits the number is padded to */
    uint32_t pool;             /* spec pool index or SN_NONE */
    uint32_t first_server, n_servers;
    uint32_t first_gpu, n_gpus;
    uint32_t first_scaleup, n_scaleup; /* scale-up chips (switch IDs) */
    uint32_t first_leaf, n_leaves;     /* leaves (switch IDs) */
    uint32_t first_mgmt, n_mgmt;       /* management switches (switch IDs) */
    uint32_t first_rack, n_racks;
    uint32_t first_power_domain, n_power_domains;
    uint32_t first_cooling_loop, n_cooling_loops;
    /* L2 switches of a two-level scale-up domain (switch IDs), right after
     * the L1 chips [first_scaleup, first_scaleup + n_scaleup); 0 otherwise. */
    uint32_t first_scaleup_l2, n_scaleup_l2;
};

struct sn_model {
    const struct sn_spec *spec; /* borrowed */

    uint32_t n_supernodes;
    struct sn_supernode *supernodes;

    uint32_t n_servers;
    uint32_t *server_supernode;
    uint32_t *server_first_gpu;
    uint16_t *server_model;     /* spec server_models index */
    uint32_t *server_rack;
    uint32_t *server_power[2];  /* primary and secondary feed (SN_NONE) */

    uint32_t n_gpus;
    uint32_t *gpu_server;
    uint32_t *gpu_supernode;

    uint32_t n_switches;
    uint16_t *switch_model;     /* spec switch_models index */
    uint8_t *switch_role;       /* enum sn_switch_role */
    uint32_t *switch_supernode; /* SN_NONE for spine and core */
    uint32_t *switch_server;    /* in-server scale-up chips, else SN_NONE */
    uint32_t *switch_rack;      /* spine, core: a network rack; SN_NONE when in none */
    uint32_t *switch_power;     /* power domain or SN_NONE */
    uint32_t *switch_peer;      /* redundant partner or SN_NONE */
    uint32_t *switch_ports_used;
    uint32_t *switch_index_in_role; /* 0-based within role (cluster-wide) */
    uint32_t first_spine, n_spines; /* spine switch IDs are contiguous */
    uint32_t first_core, n_cores;

    uint32_t n_racks;
    uint32_t *rack_supernode;
    uint32_t *rack_cooling_loop;

    /* Power domains and cooling loops are instances of template domains:
     * spec_index is the index in the template's list. */
    uint32_t n_power_domains;
    uint32_t *power_domain_supernode;
    uint32_t *power_domain_spec_index;
    uint32_t n_cooling_loops;
    uint32_t *cooling_loop_supernode;
    uint32_t *cooling_loop_spec_index;

    uint64_t n_links;
    struct sn_link *links;
    /* Links of each tier are contiguous: [tier_first[t], tier_first[t+1]). */
    uint64_t tier_first[SN_LINK_TIER_COUNT + 1];

    /* Leaf of the rail (NIC) that each GPU uses, or SN_NONE. */
    uint32_t *gpu_leaf;

    /* Uplinks from each leaf to spines, for bandwidth admission. */
    uint32_t *leaf_uplinks;     /* indexed by switch ID, 0 for non-leaves */

    size_t memory_bytes;        /* bytes held by all the arrays above */

    /* The network racks and the fabric's power domains (spec fabric.racks
     * and fabric.power_domains) follow every supernode's in the rack and
     * power-domain ID spaces: racks [first_net_rack, first_net_rack +
     * n_net_racks), domains [first_fabric_pd, first_fabric_pd +
     * n_fabric_pds), with supernode SN_NONE and no cooling loop. They hold
     * the spine and core switches; both counts are 0 without a spine
     * tier. */
    uint32_t first_net_rack, n_net_racks;
    uint32_t first_fabric_pd, n_fabric_pds;

    /* Physical ports used per switch: switch_ports_used counts link ends
     * (one port number each), while the legs of one breakout cable share a
     * port (docs/spec.md, cable `breakout`); equal without breakouts. The
     * port budget (R08) and the BOM count these. */
    uint32_t *switch_ports_physical;
};

/* Expands a parsed spec into a model. On failure *out is NULL and err says
 * which count is impossible (ports exhausted, too many GPUs, ...). */
SN_MUST_CHECK enum sn_err sn_model_build(const struct sn_spec *spec, struct sn_model **out,
                                         struct sn_error *err);

/* Frees a model. NULL is allowed. */
void sn_model_free(struct sn_model *model);

/* Checks the invariants listed above; returns SN_ERR_INTERNAL with the
 * first violation. Used by tests and by the daemon after loading. */
SN_MUST_CHECK enum sn_err sn_model_verify(const struct sn_model *model, struct sn_error *err);

/* O(1) lookups. */
static inline uint32_t sn_model_gpu_server(const struct sn_model *m, uint32_t gpu)
{
    return m->gpu_server[gpu];
}
static inline uint32_t sn_model_gpu_supernode(const struct sn_model *m, uint32_t gpu)
{
    return m->gpu_supernode[gpu];
}
static inline uint32_t sn_model_gpu_rack(const struct sn_model *m, uint32_t gpu)
{
    return m->server_rack[m->gpu_server[gpu]];
}
static inline uint32_t sn_model_gpu_power_domain(const struct sn_model *m, uint32_t gpu,
                                                 unsigned feed)
{
    return m->server_power[feed & 1][m->gpu_server[gpu]];
}
static inline uint32_t sn_model_gpu_cooling_loop(const struct sn_model *m, uint32_t gpu)
{
    uint32_t rack = m->server_rack[m->gpu_server[gpu]];
    return rack == SN_NONE ? SN_NONE : m->rack_cooling_loop[rack];
}
static inline uint32_t sn_model_gpu_index_in_server(const struct sn_model *m, uint32_t gpu)
{
    return gpu - m->server_first_gpu[m->gpu_server[gpu]];
}

/* Spec entries behind an entity. */
const struct sn_template *sn_model_supernode_template(const struct sn_model *m, uint32_t sn);
const struct sn_server_model *sn_model_server_spec(const struct sn_model *m, uint32_t server);
const struct sn_gpu_model *sn_model_gpu_spec(const struct sn_model *m, uint32_t gpu);
const struct sn_switch_model *sn_model_switch_spec(const struct sn_model *m, uint32_t sw);
const struct sn_power_domain_spec *sn_model_power_domain_spec(const struct sn_model *m,
                                                              uint32_t pd);
const struct sn_cooling_loop_spec *sn_model_cooling_loop_spec(const struct sn_model *m,
                                                              uint32_t loop);

/* Marks in *gpus (sized n_gpus, cleared by the caller) every GPU that is
 * lost when that domain fails (none for a network rack or a fabric power
 * domain: see sn_model_fabric_loss): a power domain takes a server only when it
 * feeds all of the server's feeds, the whole supernode when it feeds all
 * its scale-up switch trays, and the servers whose NICs all land on leaves
 * it feeds (a server keeps scale-out while any of its leaves is up); a
 * leaf takes the GPUs whose rail it carries. Returns the number of GPUs marked. */
uint32_t sn_model_domain_gpus(const struct sn_model *m, enum sn_domain_kind kind, uint32_t id,
                              struct sn_bitset *gpus);

/* What losing power domain pd costs the spine-core fabric: a link is lost
 * when a switch at either end is on pd. The worst leaf is the one left with
 * the smallest share of its spine uplinks; the fabric keeps the smaller of
 * that share and the share of spine-core links (the bisection a job across
 * supernodes sees). O(leaf-spine + spine-core links). */
struct sn_model_fabric_loss {
    uint32_t spines, spines_lost, cores, cores_lost;
    uint32_t worst_leaf;               /* switch ID, SN_NONE without uplinks */
    uint32_t worst_leaf_up, worst_leaf_kept;
    double leaf_spine_kept;            /* share of leaf-spine links left, 1 when none */
    double spine_core_kept;            /* share of spine-core links left, 1 when none */
    double bisection_kept;             /* min(worst leaf's share, spine_core_kept) */
};
void sn_model_fabric_loss(const struct sn_model *m, uint32_t pd,
                          struct sn_model_fabric_loss *out);

/* Number of entities of a domain kind. */
uint32_t sn_model_domain_count(const struct sn_model *m, enum sn_domain_kind kind);

/* Stable, generated names ("sn03", "sn03-t05", "sn03-t05-gpu2",
 * "sn03-leaf1", "spine017", "sn03-pdA", "sn03-rack2", "sn03-loopL1", and
 * "net-pdA", "net-rack0" for the fabric's domains and network racks).
 * Writes at most len bytes including the NUL and returns buf. */
char *sn_model_supernode_name(const struct sn_model *m, uint32_t sn, char *buf, size_t len);
char *sn_model_server_name(const struct sn_model *m, uint32_t server, char *buf, size_t len);
char *sn_model_gpu_name(const struct sn_model *m, uint32_t gpu, char *buf, size_t len);
char *sn_model_switch_name(const struct sn_model *m, uint32_t sw, char *buf, size_t len);
char *sn_model_rack_name(const struct sn_model *m, uint32_t rack, char *buf, size_t len);
char *sn_model_power_domain_name(const struct sn_model *m, uint32_t pd, char *buf, size_t len);
char *sn_model_cooling_loop_name(const struct sn_model *m, uint32_t loop, char *buf,
                                 size_t len);
/* Name of one end of a link ("sn03-t05-gpu2:nvl7", "sn03-leaf1:p12"). */
char *sn_model_endpoint_name(const struct sn_model *m, uint8_t kind, uint32_t id, uint16_t port,
                             uint8_t tier, char *buf, size_t len);
/* The cable label of a link: "<a-end>--<b-end>". */
char *sn_model_cable_label(const struct sn_model *m, const struct sn_link *link, char *buf,
                           size_t len);

/* Looks up a GPU or server by its generated name; SN_NONE when there is
 * none. Cost: O(supernode groups + name length), independent of size. */
uint32_t sn_model_find_gpu(const struct sn_model *m, const char *name);
uint32_t sn_model_find_server(const struct sn_model *m, const char *name);

/* Electrical draw of every device, power domain, rack and cooling loop:
 * the one power computation shared by the design review and the bill of
 * materials (lib/model/model_power.c; docs/rules.md "Power model"). Watts.
 * Peaks put the GPUs at peak_factor x TDP. A dual-fed server on two
 * domains puts half its draw on each in normal operation and all of it on
 * the survivor when the other fails (the failover figures). */
struct sn_model_power {
    double *server_w, *server_peak_w;  /* per server: whole draw, its optics included */
    double *switch_w;                  /* per switch, optics included; 0: in-server chip */
    double *pd_w, *pd_peak_w;          /* per power domain, normal operation */
    double *pd_failover_w, *pd_failover_peak_w; /* with every dual-fed load on it */
    double *rack_w, *rack_peak_w;      /* per rack */
    double *loop_w;                    /* heat per cooling loop (steady draw of its racks) */
    double unplaced_w;                 /* steady draw on no power domain (spine, core) */
    double optics_w;                   /* every transceiver, 2 per optic or aoc link */
    double steady_w, peak_w;           /* cluster totals, optics included */
};

/* Computes *out (overwritten; release with sn_model_power_release()).
 * Fails only for out of memory, leaving *out released. */
SN_MUST_CHECK enum sn_err sn_model_power_compute(const struct sn_model *m, double peak_factor,
                                                 struct sn_model_power *out,
                                                 struct sn_error *err);

/* Real power one rack feed delivers at its breaker rating: sqrt(3) x V(line
 * to line) x I x power factor for 3 phases, V x I x power factor for one
 * (docs/rules.md, R20). Per phase: the total / phases. */
double sn_model_feed_capacity_w(const struct sn_feed_spec *feed);

/* Frees the arrays of a power model and zeroes it. NULL is allowed. */
void sn_model_power_release(struct sn_model_power *p);

#endif /* SN_MODEL_H */
