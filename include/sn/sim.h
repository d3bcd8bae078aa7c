/*
 * sn/sim.h: the discrete-event simulator behind `sn sim`, and regular
 * cluster shapes built in memory.
 */
#ifndef SN_SIM_H
#define SN_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/model.h>
#include <sn/sched.h>
#include <sn/spec.h>

/* ---- cluster shapes ---------------------------------------------------- */

#define SN_SIM_SHAPE_MAX_GROUPS 4

/* N identical supernodes of servers x gpus_per_server GPUs. */
struct sn_sim_shape {
    uint32_t supernodes, servers, gpus_per_server;
    uint32_t leaves;         /* per supernode; 0: no scale-out */
    uint32_t nics;           /* per server */
    double nic_bytes_per_s;  /* per NIC, per direction (also the switch port speed) */
    double oversubscription; /* leaf downlinks : uplinks */
    bool spine;              /* a spine tier joins the leaves */
    bool core;               /* a core tier above the spines (3 tiers) */
    bool scaleup_supernode;  /* NVL72-like scale-up domain */
    uint32_t power_domains;  /* per supernode, servers alternate */
    /* Pools: the first groups[0].count supernodes are pool 0, and so on;
     * n_groups == 0: no pools. */
    uint32_t n_groups;
    struct {
        uint32_t count;
        enum sn_pool_kind kind;
    } groups[SN_SIM_SHAPE_MAX_GROUPS];
};

/* 4 supernodes of 8 servers of 8 GPUs, 2 leaves, 8 x 400 Gb/s NICs per
 * server, 1:1, a spine tier, 2 power domains, no pools. */
void sn_sim_shape_defaults(struct sn_sim_shape *shape);

/* Builds the spec and model of a shape. The caller frees both with
 * sn_sim_shape_free(). */
SN_MUST_CHECK enum sn_err sn_sim_shape_build(const struct sn_sim_shape *shape,
                                             struct sn_spec **spec, struct sn_model **model,
                                             struct sn_error *err);
/* Frees what sn_sim_shape_build() made. NULLs are allowed. */
void sn_sim_shape_free(struct sn_spec *spec, struct sn_model *model);

#endif /* SN_SIM_H */
