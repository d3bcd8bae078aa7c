/*
 * R15: the worst leaf-pair bandwidth of the leaf-spine tier, computed from
 * the wired links.
 *
 * A leaf's downlink:uplink ratio says nothing about whether two leaves can
 * use all their uplinks to reach each other: traffic from leaf a to leaf b
 * crosses spine s on at most min(links(a, s), links(b, s)) links. When the
 * spine count does not divide the leaves' uplinks, round-robin wiring gives
 * leaves unequal links per spine, and the pair bandwidth
 * sum_s min(links(a, s), links(b, s)) x link rate falls below the leaves'
 * uplink bandwidth: the fabric blocks although every leaf is 1:1 (B200 at
 * 5 SU on 20 spines: 24 of 32 uplinks shared by the worst pair).
 *
 * Leaves are compared within one leaf-spine block: all leaves of a 2-tier
 * fabric, or the leaves of one pod of a 3-tier fabric (those whose lowest
 * spine is the same; traffic between pods crosses the core, whose ratio
 * R09 reports). Each block is a dense leaves x spines matrix of link
 * counts; a block larger than BLOCK_CELLS_MAX cells is reported as not
 * computed rather than guessed. Cost O(pairs x spines) per block.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review/review_int.h"

#define EPS 1e-9
#define BLOCK_CELLS_MAX (1u << 24)

struct leaf_side {
    double *down;    /* per switch: downlink bandwidth (node-leaf), bytes/s */
    uint64_t *first; /* per switch: first leaf-spine link, or UINT64_MAX */
    uint32_t *n_up;  /* per switch: leaf-spine links */
};

struct pair_worst {
    double ratio;        /* min(down a, down b) / shared bandwidth; INFINITY: none */
    double nominal;      /* the worse of the two leaves' own down:up ratios */
    uint32_t a, b;       /* leaves */
    uint32_t shared, up; /* shared links, uplinks of the leaf with fewer */
    bool set;
};

static double port_bw(const struct sn_model *m, uint32_t sw)
{
    return sn_model_switch_spec(m, sw)->port_bytes_per_s;
}

static bool leaf_side_compute(struct sn__review_ctx *c, struct leaf_side *ls)
{
    const struct sn_model *m = c->m;
    ls->down = calloc(m->n_switches + 1, sizeof(double));
    ls->first = malloc((m->n_switches + 1) * sizeof(uint64_t));
    ls->n_up = calloc(m->n_switches + 1, sizeof(uint32_t));
    if (!ls->down || !ls->first || !ls->n_up) {
        c->nomem = true;
        return false;
    }
    for (uint32_t w = 0; w <= m->n_switches; w++)
        ls->first[w] = UINT64_MAX;
    for (uint64_t i = m->tier_first[SN_TIER_NODE_LEAF]; i < m->tier_first[SN_TIER_NODE_LEAF + 1];
         i++) {
        const struct sn_link *l = &m->links[i];
        double nic = sn_model_server_spec(m, l->a_id)->nic_bytes_per_s;
        ls->down[l->b_id] += fmin(nic, port_bw(m, l->b_id));
    }
    for (uint64_t i = m->tier_first[SN_TIER_LEAF_SPINE]; i < m->tier_first[SN_TIER_LEAF_SPINE + 1];
         i++) {
        const struct sn_link *l = &m->links[i];
        if (ls->first[l->a_id] == UINT64_MAX)
            ls->first[l->a_id] = i;
        ls->n_up[l->a_id]++;
    }
    return true;
}

static void leaf_side_release(struct leaf_side *ls)
{
    free(ls->down);
    free(ls->first);
    free(ls->n_up);
}

/* Lowest and highest spine a leaf links to. Links of one leaf are
 * consecutive (the model wires leaf by leaf). */
static void spine_range(const struct sn_model *m, const struct leaf_side *ls, uint32_t leaf,
                        uint32_t *lo, uint32_t *hi)
{
    *lo = UINT32_MAX;
    *hi = 0;
    for (uint64_t i = ls->first[leaf]; i < ls->first[leaf] + ls->n_up[leaf]; i++) {
        uint32_t s = m->links[i].b_id;
        *lo = s < *lo ? s : *lo;
        *hi = s > *hi ? s : *hi;
    }
}

/* Compares every pair of the block's leaves; leaves[] are switch IDs. */
static void block_pairs(struct sn__review_ctx *c, const struct leaf_side *ls,
                        const uint32_t *leaves, uint32_t n, uint32_t lo, uint32_t hi,
                        struct pair_worst *worst, uint64_t *skipped)
{
    const struct sn_model *m = c->m;
    uint64_t width = (uint64_t)hi - lo + 1;
    if (n < 2)
        return;
    if (width * n > BLOCK_CELLS_MAX) {
        *skipped += n;
        return;
    }
    uint32_t *cnt = calloc(width * n, sizeof(uint32_t));
    if (!cnt) {
        c->nomem = true;
        return;
    }
    for (uint32_t k = 0; k < n; k++)
        for (uint64_t i = ls->first[leaves[k]]; i < ls->first[leaves[k]] + ls->n_up[leaves[k]]; i++)
            cnt[k * width + (m->links[i].b_id - lo)]++;
    double spine_rate = port_bw(m, lo);
    for (uint32_t a = 0; a < n; a++) {
        uint32_t la = leaves[a];
        for (uint32_t b = a + 1; b < n; b++) {
            uint32_t lb = leaves[b];
            uint32_t shared = 0;
            for (uint64_t s = 0; s < width; s++) {
                uint32_t x = cnt[a * width + s], y = cnt[b * width + s];
                shared += x < y ? x : y;
            }
            double rate = fmin(fmin(port_bw(m, la), port_bw(m, lb)), spine_rate);
            double down = fmin(ls->down[la], ls->down[lb]);
            double ratio = shared > 0 ? down / (shared * rate) : INFINITY;
            double nom_a = ls->down[la] / (ls->n_up[la] * fmin(port_bw(m, la), spine_rate));
            double nom_b = ls->down[lb] / (ls->n_up[lb] * fmin(port_bw(m, lb), spine_rate));
            if (!worst->set || ratio > worst->ratio + EPS) {
                *worst = (struct pair_worst){ratio, fmax(nom_a, nom_b), la, lb, shared,
                                             ls->n_up[la] < ls->n_up[lb] ? ls->n_up[la]
                                                                         : ls->n_up[lb],
                                             true};
            }
        }
    }
    free(cnt);
}

static void ratio_text(char *buf, size_t len, double r)
{
    if (isinf(r))
        snprintf(buf, len, "no shared spine");
    else
        snprintf(buf, len, "%.3g:1", r);
}

static void report(struct sn__review_ctx *c, const struct pair_worst *w, uint64_t skipped)
{
    const struct sn_model *m = c->m;
    char a[SN_REVIEW_NAME_MAX], b[SN_REVIEW_NAME_MAX], r[32], nom[32], n[32];
    if (skipped > 0)
        sn__finding_global(c, SN_SEVERITY_INFO, 2,
                           "%s leaves in leaf-spine blocks over %u cells: pair bandwidth not "
                           "computed",
                           sn__count(n, sizeof(n), skipped), BLOCK_CELLS_MAX);
    if (!w->set)
        return;
    sn_model_switch_name(m, w->a, a, sizeof(a));
    sn_model_switch_name(m, w->b, b, sizeof(b));
    ratio_text(r, sizeof(r), w->ratio);
    ratio_text(nom, sizeof(nom), w->nominal);
    struct sn_finding *f;
    if (isinf(w->ratio)) {
        f = sn__finding_global(c, SN_SEVERITY_ERROR, 0,
                               "leaves share no spine: traffic between them cannot cross the "
                               "leaf-spine tier (uplinks dealt to disjoint spines; set "
                               "fabric.spines so that it divides each leaf's uplinks)");
    } else if (w->ratio > w->nominal * (1 + 1e-6)) {
        f = sn__finding_global(c, SN_SEVERITY_ERROR, 0,
                               "blocking: the worst leaf pair shares %u of %u uplinks through "
                               "the spines, a true ratio of %s where the leaves are built %s "
                               "(links per spine are unequal: the spine count should divide "
                               "every leaf's uplinks)",
                               w->shared, w->up, r, nom);
    } else {
        f = sn__finding_global(c, SN_SEVERITY_INFO, 1,
                               "worst leaf pair shares %u of %u uplinks: true leaf-pair ratio "
                               "%s, as built",
                               w->shared, w->up, r);
    }
    sn__finding_element(f, a);
    sn__finding_element(f, b);
}

void sn__check_leaf_pairs(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    if (m->n_spines == 0)
        return;
    struct leaf_side ls = {0};
    uint32_t *block = NULL;
    if (!leaf_side_compute(c, &ls))
        goto out;
    block = malloc((m->n_switches + 1) * sizeof(uint32_t));
    if (!block) {
        c->nomem = true;
        goto out;
    }
    struct pair_worst worst = {0};
    uint64_t skipped = 0;
    uint32_t n = 0, lo = UINT32_MAX, hi = 0, block_lo = UINT32_MAX;
    /* Leaves in ID order; a 2-tier fabric is one block, a 3-tier fabric
     * one block per pod (a run of leaves with the same lowest spine). */
    for (uint32_t w = 0; w < m->n_switches && !c->nomem; w++) {
        if (m->switch_role[w] != SN_ROLE_LEAF || ls.n_up[w] == 0)
            continue;
        uint32_t l_lo, l_hi;
        spine_range(m, &ls, w, &l_lo, &l_hi);
        uint32_t key = m->n_cores > 0 ? l_lo : 0;
        if (n > 0 && key != block_lo) {
            block_pairs(c, &ls, block, n, lo, hi, &worst, &skipped);
            n = 0;
            lo = UINT32_MAX;
            hi = 0;
        }
        block_lo = key;
        block[n++] = w;
        lo = l_lo < lo ? l_lo : lo;
        hi = l_hi > hi ? l_hi : hi;
    }
    if (!c->nomem)
        block_pairs(c, &ls, block, n, lo, hi, &worst, &skipped);
    if (!c->nomem)
        report(c, &worst, skipped);
out:
    free(block);
    leaf_side_release(&ls);
}
