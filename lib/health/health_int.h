/*
 * lib/health/health_int.h: private parts of the health engine shared by the
 * detectors (health_detect*.c), the scorer (health_score.c), baselines and
 * acceptance.
 *
 * The analysis context maps store GPUs to model GPUs once per pass (host name
 * to model server with sn_model_find_server(), then the nvidia-smi index in
 * the server) and collects findings into one growable array capped at
 * SN_HEALTH_FINDINGS_MAX.
 */
#ifndef SN_HEALTH_INT_H
#define SN_HEALTH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/health.h>

/* fn(v): the name of enum value v from an X-macro list (pick selects the
 * name among the row's arguments), "unknown" out of range. */
#define NAME_FN(fn, type, count, list, pick)                                                       \
    static const char *const fn##_names[] = {list(pick)};                                          \
    const char *fn(type v)                                                                         \
    {                                                                                              \
        return (unsigned)v < (count) ? fn##_names[v] : "unknown";                                  \
    }
#define PICK2(id, name) name,
#define PICK3(id, name, x) name,

struct sn__health_ctx {
    const struct sn_health_input *in;
    const struct sn_health_config *cfg;
    const struct sn_model *m;
    const struct sn_telem_store *st;
    uint32_t *store_to_model; /* per store GPU: model GPU or SN_NONE */
    uint32_t *host_server;    /* per store host: model server or SN_NONE */
    uint32_t *model_to_store; /* per model GPU: store GPU or UINT32_MAX */
    struct sn_health_finding *f;
    uint32_t n, cap;
    bool full;       /* the findings cap was reached */
    double *scratch; /* n_gpus + store GPUs doubles for medians */
    size_t scratch_cap;
    struct sn_health_skip *skips; /* inputs not attached to the model */
    uint32_t n_skips, cap_skips;
    struct sn_health_unresolved *unres; /* host names not resolved (unsorted, may repeat) */
    uint32_t n_unres, cap_unres;
};

/* The model server of a host name an input used, through the one resolution
 * function (sn_inventory_server()); a name that resolves to none is
 * recorded as unresolved with where (may be "") and gpus. */
uint32_t sn__health_server(struct sn__health_ctx *c, const char *host, const char *where,
                           uint32_t gpus);

/* Records an input not attached to the model (at most one per facility
 * series group; capped like the findings). */
void sn__health_skip(struct sn__health_ctx *c, enum sn_health_entity e, const char *name,
                     const char *where, const char *fmt, ...) SN_PRINTF(5, 6);

/* Model names of one entity kind, sorted once per pass for lookups by name
 * (O(log n) per lookup instead of formatting every name per reading). */
struct sn__name_index {
    struct sn__name_entry {
        char name[96];
        uint32_t id;
    } * e;
    uint32_t n;
};
/* Indexes the cooling loops (feeds false) or power domains (feeds true);
 * false when out of memory. Release with sn__name_index_release(). */
bool sn__name_index_build(struct sn__name_index *x, const struct sn_model *m, bool feeds);
void sn__name_index_release(struct sn__name_index *x);
/* The ID of name, or SN_NONE. */
uint32_t sn__name_index_find(const struct sn__name_index *x, const char *name);

/* Adds a finding with the detector row's defaults; fmt is the evidence.
 * Returns the finding (NULL when out of memory or at the cap: the context
 * remembers it and the pass reports SN_ERR_LIMIT/NOMEM). */
struct sn_health_finding *sn__health_add(struct sn__health_ctx *c, enum sn_detector d,
                                         enum sn_health_entity e, uint32_t id, uint32_t gpu,
                                         uint32_t server, double value, double expected,
                                         const char *fmt, ...) SN_PRINTF(9, 10);
/* "file:line" of a store reading into buf ("" when the line is unknown). */
const char *sn__health_where(const struct sn_telem_store *st, uint16_t source, uint32_t line,
                             char *buf, size_t len);

/* The detector of a dcgmi diag result (diag-fail, diag-warn, diag-skipped)
 * and its evidence "dcgmi diag line N: Section 'test' failed: detail" in
 * buf; SN_DET_COUNT for Pass and Not Run (no finding). */
enum sn_detector sn__health_diag_text(const struct sn_telem_diag_entry *d, char *buf, size_t len);

/* Median of v[0..n) (reorders v); NaN for n == 0. */
double sn__health_median(double *v, size_t n);
/* Median absolute deviation around med (reorders v). */
double sn__health_mad(double *v, size_t n, double med);
/* Iglewicz & Hoaglin's modified z-score 0.6745 (x - med) / mad; 0 when mad
 * is 0 and x == med, +-inf when mad is 0 and x differs. */
double sn__health_robust_z(double x, double med, double mad);

/* The detector groups, each appends findings to c. */
void sn__health_detect_gpu(struct sn__health_ctx *c);      /* per-GPU readings, Xids */
void sn__health_detect_peers(struct sn__health_ctx *c);    /* slow GPU, throttling, links */
void sn__health_detect_fabric(struct sn__health_ctx *c);   /* busbw, topology, slow node */
void sn__health_detect_facility(struct sn__health_ctx *c); /* cooling, power */
void sn__health_detect_config(struct sn__health_ctx *c);   /* software drift */
void sn__health_detect_net(struct sn__health_ctx *c);      /* host and NIC (health_detect_net.c) */

/* The host and NIC table of a history (health_net.c). add creates the table
 * on first use; false only when out of memory. */
struct sn__net_table;
/* Adds a reading; SN_OK, SN_ERR_LIMIT when its key is new and the table
 * holds max keys (counted in dropped), SN_ERR_NOMEM. */
enum sn_err sn__net_table_add(struct sn__net_table **t, const struct sn_telem_net *r,
                              uint32_t max);
unsigned long long sn__net_table_dropped(const struct sn__net_table *t);
/* A NIC queue's interrupt name ("mlx5_comp3@pci:0000:3b:00.0", "i40e-eth0-TxRx-1"). */
bool sn__net_nic_irq(const char *name);
void sn__net_table_free(struct sn__net_table *t);
uint32_t sn__net_table_count(const struct sn__net_table *t);
const struct sn_health_net_entry *sn__net_table_entry(const struct sn__net_table *t, uint32_t i);
void sn__health_detect_site_safety(struct sn__health_ctx *c); /* leak, coolant, BMC */
void sn__health_detect_paths(struct sn__health_ctx *c); /* switch ports, ECMP, localisation */
void sn__health_detect_node(struct sn__health_ctx *c);     /* node health checks (NHC) */

/* The model GPU of a (host, index) name, or SN_NONE; inv may be NULL. */
uint32_t sn__health_model_gpu(const struct sn_model *m, const struct sn_inventory *inv,
                              const char *host, int index);
/* The model's GPU catalogue name of a model GPU ("unknown" if none). */
const char *sn__health_gpu_model_name(const struct sn_model *m, uint32_t gpu);

/* The name nccl-tests prints for a server's host (its rank lines): the
 * inventory's first host name up to its first dot (nccl-tests' getHostName
 * cuts there), else the model name. inv may be NULL. Returns buf. */
char *sn__accept_host_name(const struct sn_model *m, const struct sn_inventory *inv,
                           uint32_t server, char *buf, size_t len);

#endif
