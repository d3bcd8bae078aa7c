/*
 * Private helpers shared by the files of lib/model.
 */
#ifndef SN_MODEL_INT_H
#define SN_MODEL_INT_H

#include <sn/model.h>

/* Counts per supernode group, computed before anything is allocated. */
struct sn__model_counts {
    uint64_t supernodes, servers, gpus, switches, racks, power_domains, cooling_loops;
    uint64_t scaleup_chips, leaves, mgmt_switches;
    uint64_t links[SN_LINK_TIER_COUNT];
    uint64_t leaf_uplinks;
};

/* Uplinks of one leaf of template t, which has down_links used downlinks. */
uint32_t sn__leaf_uplinks(const struct sn_spec *spec, const struct sn_template *t,
                          uint32_t down_links);

#endif
