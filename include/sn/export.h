/*
 * sn/export.h: exports of the cluster model for other tools.
 *
 * Each format is one row of SN_EXPORT_FORMAT_LIST (name, one-line summary);
 * `sn design export --help` and docs/export.md are written from it:
 *   slurm-tree   topology.conf for Slurm's topology/tree plugin
 *   slurm-block  topology.conf for Slurm's topology/block plugin
 *   volcano      Volcano HyperNode manifests (tier 1 = supernode)
 *   k8s-labels   kubectl label commands for every server
 *   dot          Graphviz graph, a summary per spine group at scale
 *   cables       the cable ledger, CSV, one row per link
 *   json         the full model, streamed
 *   slurm-topology-yaml  Slurm 25.05+ topology.yaml: a block topology
 *                (one block per supernode) and a tree topology
 *   ibnetdiscover  what ibnetdiscover prints for the design, cabled right
 *                (sn/fabric.h; `sn design verify` reads the real one)
 * Every writer streams to a FILE * in model ID order, so the same model
 * always gives the same bytes, and memory stays bounded by the largest
 * supernode (dot: by the links it draws), not by the cluster.
 */
#ifndef SN_EXPORT_H
#define SN_EXPORT_H

#include <stdio.h>

#include <sn/error.h>
#include <sn/model.h>

#define SN_EXPORT_FORMAT_LIST(X)                                                                   \
    X(SLURM_TREE, "slurm-tree", "topology.conf for Slurm's topology/tree plugin")                  \
    X(SLURM_BLOCK, "slurm-block", "topology.conf for Slurm's topology/block plugin")               \
    X(VOLCANO, "volcano", "Volcano HyperNode manifests, tier 1 = supernode")                       \
    X(K8S_LABELS, "k8s-labels", "kubectl label commands for every server")                         \
    X(DOT, "dot", "Graphviz graph; a summary per spine group at scale (--detail)")                \
    X(CABLES, "cables", "cable ledger CSV: label,from,to,type,length class, tier")                 \
    X(JSON, "json", "the full model as JSON (schema supernode.model/1), streamed")                 \
    X(SLURM_CONF, "slurm-conf", "slurm.conf NodeName and PartitionName lines (Slurm >= 20.11)")   \
    X(SLURM_GRES, "slurm-gres", "gres.conf: GPU device files, CPU affinity and NVLink peers")      \
    X(SLURM_JOB_SUBMIT, "slurm-job-submit", "job_submit.lua: one supernode per job, TP rounding") \
    X(SLURM_TOPOLOGY_YAML, "slurm-topology-yaml",                                                 \
      "topology.yaml (Slurm >= 25.05): block per NVLink domain + scale-out tree")              \
    X(IBNETDISCOVER, "ibnetdiscover", "the ibnetdiscover output of the design's InfiniBand fabric")
enum sn_export_format {
#define SN_X(name, text, summary) SN_EXPORT_##name,
    SN_EXPORT_FORMAT_LIST(SN_X)
#undef SN_X
        SN_EXPORT_FORMAT_COUNT
};

/* The format's name ("slurm-tree"), "unknown" when out of range. */
const char *sn_export_format_name(enum sn_export_format format);

/* One line on what the format is. */
const char *sn_export_format_summary(enum sn_export_format format);

/* Parses a format name. On an unknown name returns SN_ERR_INVALID with a
 * message listing the known formats. */
SN_MUST_CHECK enum sn_err sn_export_format_parse(const char *name, enum sn_export_format *out,
                                                 struct sn_error *err);

/* Writes the model in the format to out. Returns SN_ERR_IO when the stream
 * fails, SN_ERR_NOMEM when a working table cannot be allocated. */
SN_MUST_CHECK enum sn_err sn_export_write(FILE *out, const struct sn_model *model,
                                          enum sn_export_format format, struct sn_error *err);

/* How much of the cluster the dot graph draws (`--detail`). */
enum sn_export_dot_detail {
    SN_DOT_DETAIL_AUTO,       /* FULL up to 128 servers, else SUMMARY */
    SN_DOT_DETAIL_SUMMARY,    /* per spine group: its supernodes, its spines; core groups */
    SN_DOT_DETAIL_SUPERNODES, /* one node per supernode ("all") */
    SN_DOT_DETAIL_POD,        /* spine group `pod` in full, the others summarised */
    SN_DOT_DETAIL_FULL,       /* every server and switch */
};

struct sn_export_dot_options {
    enum sn_export_dot_detail detail;
    uint32_t pod; /* for SN_DOT_DETAIL_POD: a spine group index (spine-group<pod>) */
};

/* The dot export with options (NULL: AUTO). SN_ERR_INVALID names the
 * spine groups when pod is out of range. */
SN_MUST_CHECK enum sn_err sn_export_dot(FILE *out, const struct sn_model *model,
                                        const struct sn_export_dot_options *options,
                                        struct sn_error *err);

#endif /* SN_EXPORT_H */
