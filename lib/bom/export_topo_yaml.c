/*
 * Slurm topology.yaml (format slurm-topology-yaml): several topologies in
 * one file, for Slurm 25.05 and later (topology.yaml(5)). Slurm reads it in
 * place of topology.conf when it exists, and a partition picks one of its
 * topologies with Topology=<name> in slurm.conf.
 *
 * Two topologies, both built from the model's IDs in order:
 *  - "nvlink", topology/block: one block per supernode (its servers), with
 *    block_sizes from sn__block_sizes() (the smallest supernode, then
 *    power-of-two multiples while that many blocks exist), so every block
 *    has at least the base size of nodes as topology.yaml(5) requires;
 *  - "fabric", topology/tree: the three levels of the slurm-tree export
 *    (supernode, spine group, core group) as switches with nodes or
 *    children.
 * The cluster default is "nvlink" when a supernode is one NVLink domain
 * (scale-up domain supernode or two-level: GB200 NVL72, CloudMatrix 384),
 * since a job that stays inside one can use multi-node NVLink; otherwise
 * (NVSwitch inside each server) the scale-out tree is the default and the
 * block topology only groups supernodes. Names and hostlists are written
 * as double-quoted YAML scalars; the hostlist and name characters need no
 * escapes (docs/export.md, "Consumer versions and name limits").
 */
#include <stdio.h>

#include "export_int.h"

bool sn__multi_server_nvlink(const struct sn_model *m)
{
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        enum sn_scaleup_domain d = sn_model_supernode_template(m, sn)->scaleup.domain;
        if (d != SN_SCALEUP_SERVER && m->supernodes[sn].n_servers > 1)
            return true;
    }
    return false;
}

static void write_block(FILE *out, const struct sn_model *m, bool dflt)
{
    char name[SN__EXPORT_NAME_LEN];
    uint64_t sizes[34];
    unsigned n = sn__block_sizes(m, sizes, 34);
    fprintf(out, "- topology: nvlink\n  cluster_default: %s\n  block:\n    block_sizes:\n",
            dflt ? "true" : "false");
    for (unsigned i = 0; i < n; i++)
        fprintf(out, "      - %llu\n", (unsigned long long)sizes[i]);
    fputs("    blocks:\n", out);
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        if (m->supernodes[sn].n_servers == 0)
            continue;
        fprintf(out, "      - block: \"%s\"\n        nodes: \"",
                sn_model_supernode_name(m, sn, name, sizeof(name)));
        sn__supernode_nodes(out, m, sn);
        fputs("\"\n", out);
    }
}

static void write_tree(FILE *out, const struct sn_model *m, const struct sn__fabric_groups *g,
                       bool dflt)
{
    char name[SN__EXPORT_NAME_LEN];
    struct sn__hostlist h;
    fprintf(out, "- topology: fabric\n  cluster_default: %s\n  tree:\n    switches:\n",
            dflt ? "true" : "false");
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        if (m->supernodes[sn].n_servers == 0)
            continue;
        fprintf(out, "      - switch: \"%s\"\n        nodes: \"",
                sn_model_supernode_name(m, sn, name, sizeof(name)));
        sn__supernode_nodes(out, m, sn);
        fputs("\"\n", out);
    }
    for (uint32_t p = 0; p < g->n_pods; p++) {
        fprintf(out, "      - switch: \"%s\"\n        children: \"",
                sn__pod_name(g, p, name, sizeof(name)));
        sn__hostlist_begin(&h, out);
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
            if (g->sn_pod[sn] == p && m->supernodes[sn].n_servers > 0)
                sn__hostlist_add(&h, sn_model_supernode_name(m, sn, name, sizeof(name)));
        sn__hostlist_end(&h);
        fputs("\"\n", out);
    }
    for (uint32_t t = 0; t < g->n_tops; t++) {
        fprintf(out, "      - switch: \"%s\"\n        children: \"",
                sn__top_name(g, t, name, sizeof(name)));
        sn__hostlist_begin(&h, out);
        for (uint32_t p = 0; p < g->n_pods; p++)
            if (g->pod_top[p] == t)
                sn__hostlist_add(&h, sn__pod_name(g, p, name, sizeof(name)));
        sn__hostlist_end(&h);
        fputs("\"\n", out);
    }
}

enum sn_err sn__export_slurm_topology_yaml(FILE *out, const struct sn_model *m,
                                           struct sn_error *err)
{
    struct sn__fabric_groups g;
    enum sn_err rc = sn__fabric_groups_build(m, &g, err);
    if (rc != SN_OK)
        return rc;
    bool nvlink = sn__multi_server_nvlink(m);
    fprintf(out,
            "# Slurm topology.yaml (Slurm >= 25.05) for cluster '%s': %u supernodes, %u nodes, "
            "%u GPUs;\n# written by sn design export --format slurm-topology-yaml. Slurm reads "
            "it instead of\n# topology.conf; a partition picks a topology with Topology=nvlink "
            "or Topology=fabric.\n# nvlink: topology/block, one block per supernode%s\n"
            "# fabric: topology/tree, level 1 supernodes, level 2 spine groups, level 3 core "
            "groups\n",
            m->spec->name ? m->spec->name : "", m->n_supernodes, m->n_servers, m->n_gpus,
            nvlink ? " (one NVLink domain each)"
                   : " (NVLink stays inside each server, so fabric is the default)");
    if (m->n_servers == 0) {
        /* topology.yaml(5): an empty block or switch list is refused; flat
         * is the one topology that needs none. */
        fputs("- topology: flat\n  cluster_default: true\n  flat: true\n", out);
        sn__fabric_groups_release(&g);
        return SN_OK;
    }
    write_block(out, m, nvlink);
    write_tree(out, m, &g, !nvlink);
    sn__fabric_groups_release(&g);
    return SN_OK;
}
