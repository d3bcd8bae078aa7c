/*
 * Private interface of lib/review: the context a check runs in, how checks
 * emit findings, and the power figures several rules share.
 *
 * Emitting: a check calls sn__finding() (which returns NULL once the rule's
 * cap is reached, so callers never test it before adding elements) and then
 * sn__finding_element() for each element, by its full model name.
 *
 * Per-supernode checks run through sn__each_supernode(): inside, findings
 * are buffered per supernode with element names stripped of the supernode
 * prefix; consecutive supernodes of one group with identical findings are
 * merged into one finding per run. Messages of per-supernode checks must
 * therefore not name the supernode (elements carry the names).
 */
#ifndef SN_REVIEW_INT_H
#define SN_REVIEW_INT_H

#include <stdbool.h>

#include <sn/review.h>
#include <sn/units.h>

#define SN__REVIEW_LOCAL_MAX 64u /* findings buffered for one supernode */

/* Keys of per-supernode findings are supernode << 32 | local key; cluster-
 * wide findings that should follow them use keys from SN__KEY_GLOBAL. */
#define SN__KEY_GLOBAL ((uint64_t)1 << 62)


struct sn__review_ctx {
    const struct sn_model *m;
    const struct sn_review_config *cfg;
    struct sn_review *out;
    uint32_t cap;             /* allocated findings */
    uint32_t rule;            /* rule being run */
    uint32_t rule_kept;       /* regular findings kept for it */
    uint64_t rule_suppressed; /* dropped for it */
    enum sn_severity suppressed_severity;
    uint32_t seq;
    bool nomem;
    struct sn_model_power power; /* computed once per review (sn_model_power_compute) */
    void *user; /* a check's own state while it runs */

    /* Per-supernode mode. */
    bool in_supernode;
    uint32_t sn; /* supernode being checked */
    char sn_name[SN_REVIEW_NAME_MAX];
    size_t sn_name_len;
    struct sn_finding *cur, *run; /* local findings: keys and names local */
    uint32_t n_cur, n_run;
    uint64_t cur_dropped, run_dropped;
    enum sn_severity cur_dropped_sev, run_dropped_sev;
    uint32_t run_first, run_len;

    struct sn_finding scratch; /* target of a finding that is not kept */
};

/* A check: looks at the model and emits findings. */
typedef void (*sn__check_fn)(struct sn__review_ctx *c);

/* Starts a finding of the current rule. key orders the findings of a
 * rule (element ID); in per-supernode mode it is local to the supernode.
 * Returns the finding to add elements to; never NULL. */
struct sn_finding *sn__finding(struct sn__review_ctx *c, enum sn_severity severity, uint32_t key,
                               const char *fmt, ...) SN_PRINTF(4, 5);
/* As sn__finding() with a 64-bit key, outside per-supernode mode. */
struct sn_finding *sn__finding_global(struct sn__review_ctx *c, enum sn_severity severity,
                                      uint64_t key, const char *fmt, ...) SN_PRINTF(4, 5);
/* Adds an element by its full model name (at most SN_REVIEW_MAX_ELEMENTS;
 * more are ignored). */
void sn__finding_element(struct sn_finding *f, const char *name);

/* Calls fn for every supernode, in ID order, in per-supernode mode. */
void sn__each_supernode(struct sn__review_ctx *c,
                        void (*fn)(struct sn__review_ctx *c, uint32_t sn));

/* Formats a quantity for a message (sn_units_format) into buf; returns buf. */
const char *sn__fmt(char *buf, size_t len, double value, enum sn_unit_kind kind);

/* Formats an integer with thousands separators ("2,048"). */
const char *sn__count(char *buf, size_t len, uint64_t value);

/* Computes c->power; sets c->nomem on failure. */
void sn__power_compute(struct sn__review_ctx *c);

/* The checks, one per rule, in rule-table order. */
void sn__check_planes(struct sn__review_ctx *c);
void sn__check_power_domains(struct sn__review_ctx *c);
void sn__check_redundancy(struct sn__review_ctx *c);
void sn__check_power_capacity(struct sn__review_ctx *c);
void sn__check_racks(struct sn__review_ctx *c);
void sn__check_cooling(struct sn__review_ctx *c);
void sn__check_scaleup(struct sn__review_ctx *c);
void sn__check_ports(struct sn__review_ctx *c);
void sn__check_oversubscription(struct sn__review_ctx *c);
void sn__check_headroom(struct sn__review_ctx *c);
void sn__check_reach(struct sn__review_ctx *c);
void sn__check_memory_wall(struct sn__review_ctx *c);
void sn__check_counts(struct sn__review_ctx *c);
void sn__check_cables(struct sn__review_ctx *c);
void sn__check_leaf_pairs(struct sn__review_ctx *c);
void sn__check_switch_redundancy(struct sn__review_ctx *c);
void sn__check_thresholds(struct sn__review_ctx *c);
void sn__check_speeds(struct sn__review_ctx *c);
void sn__check_psus(struct sn__review_ctx *c);
void sn__check_feeds(struct sn__review_ctx *c);
void sn__check_su(struct sn__review_ctx *c);

#endif
