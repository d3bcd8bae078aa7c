/*
 * sn/review.h: the design review of a cluster model (`sn design check`).
 *
 * The review is one table of rules (struct sn_rule): each row has a stable
 * ID ("R04"), a slug ("power-capacity"), the highest severity it reports, a
 * one-line rationale, a docs anchor in docs/rules.md and a check function.
 * Adding a rule is adding a row (lib/review/review.c) and a test.
 *
 * A run returns findings: each names its rule, the model elements involved
 * (generated names such as "sn03-pdA" or "sn00-leaf1") and a message with
 * the numbers behind it ("steady draw 96.4 kW x 1.5 = 144.6 kW > capacity
 * 120 kW"). Info findings are reports (free ports, oversubscription), not
 * faults: a good design has no warning and no error finding.
 *
 * Determinism: findings are sorted by (rule, element key, order of
 * emission); the same model always gives the same findings.
 *
 * Scale: a fault that repeats in consecutive supernodes with identical
 * findings is reported once for the run of supernodes ("all 2,048
 * supernodes of group 0 (sn0000..sn2047): ..."). Each rule keeps at most
 * SN_REVIEW_MAX_PER_RULE findings and the review at most
 * SN_REVIEW_MAX_FINDINGS; the rest are counted and reported by one final
 * "N more findings suppressed" finding per rule, carrying the highest
 * severity among them. Counts per severity include suppressed findings.
 *
 * Thresholds come from struct sn_review_config (the spec's `review`
 * section); no check hard-codes one.
 */
#ifndef SN_REVIEW_H
#define SN_REVIEW_H

#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>
#include <sn/model.h>
#include <sn/spec.h>

#define SN_SEVERITY_LIST(X) X(INFO, "info") X(WARNING, "warning") X(ERROR, "error")
enum sn_severity {
#define SN_X(name, text) SN_SEVERITY_##name,
    SN_SEVERITY_LIST(SN_X)
#undef SN_X
        SN_SEVERITY_COUNT
};
/* "info", "warning", "error"; "unknown" out of range. */
const char *sn_severity_name(enum sn_severity severity);

#define SN_REVIEW_MAX_FINDINGS 10000u /* regular findings in one review */
#define SN_REVIEW_MAX_PER_RULE 1000u  /* regular findings of one rule */
#define SN_REVIEW_MAX_ELEMENTS 3      /* element names kept per finding */
#define SN_REVIEW_NAME_MAX 96         /* bytes of one element name, with NUL */
#define SN_REVIEW_MESSAGE_MAX 384     /* bytes of a message, with NUL */

struct sn_rule {
    const char *id;            /* "R01".."R14": stable, never reused */
    const char *slug;          /* "planes-separated": stable */
    enum sn_severity severity; /* the highest severity the rule reports */
    const char *title;         /* a short sentence */
    const char *rationale;     /* one line: why the rule exists */
    const char *checks;        /* what exactly is checked, for docs/rules.md */
    const char *config;        /* review keys it reads ("" when none) */
    const char *anchor;        /* section of docs/rules.md: "r01-planes-separated" */
};

struct sn_finding {
    uint32_t rule; /* index in the rule table */
    enum sn_severity severity;
    uint64_t key; /* sort key within the rule (element IDs) */
    uint32_t seq; /* order of emission, the last sort key */
    uint32_t n_elements;
    char elements[SN_REVIEW_MAX_ELEMENTS][SN_REVIEW_NAME_MAX];
    char message[SN_REVIEW_MESSAGE_MAX];
};

struct sn_review {
    uint32_t n_findings;
    struct sn_finding *findings;             /* sorted; owned */
    uint64_t by_severity[SN_SEVERITY_COUNT]; /* all findings, suppressed included */
    uint64_t suppressed;                     /* findings dropped by the caps */
    uint64_t rules_run;                      /* bit i: rule i was run */
};

/* Number of rules and the rule at index i (i < count), in ID order. */
uint32_t sn_review_rule_count(void);
const struct sn_rule *sn_review_rule(uint32_t index);

/* Index of the rule whose ID ("R04", case-insensitive) or slug
 * ("power-capacity") is text, or SN_NONE. */
uint32_t sn_review_find_rule(const char *text);

/* Runs the rules selected by rule_mask (bit i selects rule i; 0 selects
 * all) on the model with the thresholds in config (NULL: the model's
 * spec->review). On success *out owns a new review; free it with
 * sn_review_free(). Fails only for out of memory (SN_ERR_NOMEM) or a
 * config value that is not finite or negative (SN_ERR_INVALID). */
SN_MUST_CHECK enum sn_err sn_review_run(const struct sn_model *model,
                                        const struct sn_review_config *config, uint64_t rule_mask,
                                        struct sn_review **out, struct sn_error *err);

/* Frees a review. NULL is allowed. */
void sn_review_free(struct sn_review *review);

/* The rule catalogue (docs/rules.md) as Markdown, generated from the rule
 * table and the review defaults. On success *out is a NUL-terminated
 * string the caller frees with free(). */
SN_MUST_CHECK enum sn_err sn_review_rules_markdown(char **out, struct sn_error *err);

#endif /* SN_REVIEW_H */
