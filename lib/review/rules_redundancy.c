/*
 * Switch redundancy (R16) and review thresholds against the specification
 * (R17).
 *
 * R16 looks at what one switch failure cuts off: a supernode behind a
 * single leaf (ToR) loses all its scale-out with it, and a fabric with a
 * single spine loses every path between leaves. Rail designs with several
 * leaves lose one rail per leaf, which the scheduler routes around, so
 * they pass. R17 compares the thresholds a review runs with (the spec's
 * `review` section or a caller's config) with the specification's own:
 * looser values are allowed but never silent.
 */
#include <stddef.h>
#include <stdio.h>

#include "review/review_int.h"

static void single_leaf_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    if (s->n_leaves != 1 || s->n_gpus == 0)
        return;
    char name[SN_REVIEW_NAME_MAX], n[32];
    struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 0,
                                       "single leaf: its failure cuts all %s GPUs of the "
                                       "supernode off the scale-out fabric (use two leaves, "
                                       "attach: pair or rails)",
                                       sn__count(n, sizeof(n), s->n_gpus));
    sn__finding_element(f, sn_model_switch_name(m, s->first_leaf, name, sizeof(name)));
}

void sn__check_switch_redundancy(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    sn__each_supernode(c, single_leaf_supernode);
    uint32_t leaves = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        leaves += m->supernodes[sn].n_leaves;
    char name[SN_REVIEW_NAME_MAX], n[32];
    if (m->n_spines == 1 && leaves > 1) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, SN__KEY_GLOBAL | 1,
            "single spine: its failure cuts every path between the %s leaves (set fabric.spines "
            "to 2 or more)",
            sn__count(n, sizeof(n), leaves));
        sn__finding_element(f, sn_model_switch_name(m, m->first_spine, name, sizeof(name)));
    }
    if (m->n_cores == 1 && m->n_spines > 1) {
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, SN__KEY_GLOBAL | 2,
            "single core switch: its failure cuts every path between pods");
        sn__finding_element(f, sn_model_switch_name(m, m->first_core, name, sizeof(name)));
    }
}

/* The specification's thresholds (docs/rules.md): feeds carry 1.5x their
 * steady draw, GPUs peak at 1.3x TDP, and the fabric keeps 30 % spare. */
static const struct {
    const char *key;
    size_t offset;
    double spec;
    const char *meaning;
} spec_thresholds[] = {
    {"power_margin", offsetof(struct sn_review_config, power_margin), 1.5,
     "capacity over steady draw"},
    {"peak_factor", offsetof(struct sn_review_config, peak_factor), 1.3, "GPU peak over TDP"},
    {"bandwidth_headroom", offsetof(struct sn_review_config, bandwidth_headroom), 0.3,
     "spare scale-out bandwidth"},
};

void sn__check_thresholds(struct sn__review_ctx *c)
{
    for (uint32_t i = 0; i < sizeof(spec_thresholds) / sizeof(spec_thresholds[0]); i++) {
        double v = *(const double *)((const char *)c->cfg + spec_thresholds[i].offset);
        if (v + 1e-12 >= spec_thresholds[i].spec)
            continue;
        char key[64];
        snprintf(key, sizeof(key), "review.%s", spec_thresholds[i].key);
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_WARNING, i, "%s %g is looser than the specification's %g (%s)",
            spec_thresholds[i].key, v, spec_thresholds[i].spec, spec_thresholds[i].meaning);
        sn__finding_element(f, key);
    }
}
