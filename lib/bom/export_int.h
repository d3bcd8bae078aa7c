/*
 * Private helpers shared by the export writers of lib/bom.
 */
#ifndef SN_BOM_EXPORT_INT_H
#define SN_BOM_EXPORT_INT_H

#include <stdbool.h>
#include <stdio.h>

#include <sn/export.h>

#define SN__EXPORT_NAME_LEN 192

/* The scale-out fabric seen from above the leaves: supernodes joined
 * through shared spines form a spine group ("pod"); spine groups joined
 * through shared cores form a core group. Groups are numbered in order of
 * their first supernode, so the numbering is a pure function of the model. */
struct sn__fabric_groups {
    uint32_t n_pods;
    uint32_t *sn_pod;    /* [n_supernodes]; SN_NONE: no spine above */
    uint32_t *spine_pod; /* [n_spines], by spine index from first_spine */
    uint32_t n_tops;
    uint32_t *pod_top;  /* [n_pods]; SN_NONE: no core above */
    uint32_t *core_top; /* [n_cores] */
};

SN_MUST_CHECK enum sn_err sn__fabric_groups_build(const struct sn_model *m,
                                                  struct sn__fabric_groups *g,
                                                  struct sn_error *err);
void sn__fabric_groups_release(struct sn__fabric_groups *g);

/* Names of the groups: "spine-group00", "core-group00". */
char *sn__pod_name(const struct sn__fabric_groups *g, uint32_t pod, char *buf, size_t len);
char *sn__top_name(const struct sn__fabric_groups *g, uint32_t top, char *buf, size_t len);

/* A Slurm hostlist expression written as names arrive: runs of names with
 * the same prefix and consecutive, equally padded numbers become ranges
 * ("sn00-t[00-31]"); see docs/export.md. */
struct sn__hostlist {
    FILE *out;
    char prefix[SN__EXPORT_NAME_LEN];
    int width;
    unsigned long lo, hi;
    bool open;
    unsigned long items;
};
void sn__hostlist_begin(struct sn__hostlist *h, FILE *out);
void sn__hostlist_add(struct sn__hostlist *h, const char *name);
void sn__hostlist_end(struct sn__hostlist *h);

/* The supernode's servers as one hostlist expression ("sn00-t[00-31]"). */
void sn__supernode_nodes(FILE *out, const struct sn_model *m, uint32_t sn);

/* The planning base block size and its power-of-two multiples for one
 * block per supernode (topology.conf(5), topology.yaml(5)): the base is the
 * smallest non-empty supernode's server count, doubled while that many
 * blocks exist. Writes at most max sizes to sizes; returns how many (0: no
 * servers). */
unsigned sn__block_sizes(const struct sn_model *m, uint64_t *sizes, unsigned max);

/* True when some supernode with more than one server is one NVLink domain
 * (scale-up domain supernode or two-level): jobs across its servers need
 * IMEX channels. */
bool sn__multi_server_nvlink(const struct sn_model *m);

/* Writes s as a JSON string, quoted and escaped. */
void sn__json_string(FILE *out, const char *s);

enum sn_err sn__export_dot(FILE *out, const struct sn_model *m, struct sn_error *err);
enum sn_err sn__export_cables(FILE *out, const struct sn_model *m, struct sn_error *err);
enum sn_err sn__export_json(FILE *out, const struct sn_model *m, struct sn_error *err);
enum sn_err sn__export_slurm_conf(FILE *out, const struct sn_model *m, struct sn_error *err);
enum sn_err sn__export_slurm_gres(FILE *out, const struct sn_model *m, struct sn_error *err);
enum sn_err sn__export_slurm_job_submit(FILE *out, const struct sn_model *m,
                                        struct sn_error *err);
enum sn_err sn__export_slurm_topology_yaml(FILE *out, const struct sn_model *m,
                                           struct sn_error *err);

#endif
