/*
 * lib/health/health_localise.c: step 3 of the slow-node method on the
 * switch side (docs/health.md "Switch side and path localisation"): switch
 * port counters mapped to the model's cable ledger, rising port errors,
 * ECMP imbalance across a leaf's uplinks, and localisation of a fault that
 * slows several servers to the one model element their paths share.
 *
 * Port mapping: a switch series ("switch/<name>/<ifName>/<metric>") names
 * a model switch by its generated name (sn00-leaf0, spine003); its ifName
 * is the model port when it reads "p<N>", else its trailing number N is
 * port N - if_port_base (1: swp1, Ethernet1, Eth1/1 are port 0). The port
 * is looked up in the ledger (m->links, scale-out tiers); a switch or port
 * not in the model is reported as a skip and not judged.
 *
 * Counters are judged by their delta between the oldest and newest kept
 * point (two walks at least; a counter that went down was reset: no delta).
 * A leaf's uplinks carry equal-cost traffic, so the spread of their octet
 * deltas, (max - min) / mean, needs no time base.
 *
 * Localisation: the slow servers are those with a slow-node or busbw-low
 * finding of this pass; the judged servers those with an sn-node busbw row.
 * A server's paths run through every leaf it is cabled to, that leaf's
 * uplink cables and their spines (a cable only with counter evidence of its
 * own: without it, one uplink of many is no better a guess than its leaf).
 * Each candidate element is ranked by
 * (slow servers on it, counter evidence on it, judged servers on it that
 * are not slow, specificity: cable > leaf > spine); the first is named with
 * the evidence for and against and the runner-up, when at least two slow
 * servers are on it and fewer judged servers on it are not slow.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "health/health_int.h"

struct port {
    uint32_t sw, port; /* model switch and port */
    uint64_t link;     /* index in m->links */
    double d[4];       /* deltas: in_octets, out_octets, in_errors, out_discards; NaN none */
    const struct sn_health_series *s; /* one of its series, for the evidence's place */
};
enum { D_IN, D_OUT, D_ERR, D_DISC };

struct loc {
    struct sn__health_ctx *c;
    const struct sn_model *m;
    struct sn__name_entry *sw; /* switch names, sorted */
    uint32_t n_sw;
    uint64_t *ends; /* pairs (switch << 32 | port, link index), sorted by the first */
    uint32_t n_ends;
    struct port *ports;
    uint32_t n_ports, cap_ports;
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct sn__name_entry *)a)->name,
                  ((const struct sn__name_entry *)b)->name);
}

static uint32_t find_switch(const struct loc *l, const char *name)
{
    struct sn__name_entry key;
    snprintf(key.name, sizeof(key.name), "%s", name);
    const struct sn__name_entry *e = bsearch(&key, l->sw, l->n_sw, sizeof(*l->sw), cmp_name);
    return e ? e->id : SN_NONE;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The ledger's scale-out switch ends: sorted pairs (switch << 32 | port,
 * link index). */
static bool index_ends(struct loc *l)
{
    const struct sn_model *m = l->m;
    uint64_t n = 0;
    for (uint64_t i = 0; i < m->n_links; i++)
        if (m->links[i].tier != SN_TIER_SCALEUP && m->links[i].tier != SN_TIER_MGMT)
            n += (m->links[i].a_kind == SN_END_SWITCH) + (m->links[i].b_kind == SN_END_SWITCH);
    l->ends = malloc((size_t)(2 * n + 1) * sizeof(uint64_t));
    if (!l->ends)
        return false;
    uint32_t k = 0;
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *x = &m->links[i];
        if (x->tier == SN_TIER_SCALEUP || x->tier == SN_TIER_MGMT)
            continue;
        if (x->a_kind == SN_END_SWITCH)
            l->ends[2 * k] = (uint64_t)x->a_id << 32 | x->a_port, l->ends[2 * k + 1] = i, k++;
        if (x->b_kind == SN_END_SWITCH)
            l->ends[2 * k] = (uint64_t)x->b_id << 32 | x->b_port, l->ends[2 * k + 1] = i, k++;
    }
    qsort(l->ends, k, 2 * sizeof(uint64_t), cmp_u64);
    l->n_ends = k;
    return true;
}

static uint64_t find_link(const struct loc *l, uint32_t sw, uint32_t port)
{
    uint64_t key[2] = {(uint64_t)sw << 32 | port, 0};
    const uint64_t *e = bsearch(key, l->ends, l->n_ends, 2 * sizeof(uint64_t), cmp_u64);
    return e ? e[1] : UINT64_MAX;
}

/* "p17" is port 17; "swp18", "Ethernet18", "Eth1/18" are 18 - if_port_base. */
static bool port_of(const char *ifname, unsigned base, uint32_t *port)
{
    size_t n = strlen(ifname), d = n;
    while (d > 0 && ifname[d - 1] >= '0' && ifname[d - 1] <= '9')
        d--;
    if (d == n || n - d > 6)
        return false;
    unsigned long v = strtoul(ifname + d, NULL, 10);
    if (d == 1 && ifname[0] == 'p') {
        *port = (uint32_t)v;
        return true;
    }
    if (v < base)
        return false;
    *port = (uint32_t)(v - base);
    return true;
}

static double delta(const struct sn_health_series *s)
{
    uint32_t kept = sn_health_series_kept(s);
    if (kept < 2)
        return NAN;
    double t, a, b;
    sn_health_series_point(s, 0, &t, &a);
    sn_health_series_point(s, kept - 1, &t, &b);
    return b >= a ? b - a : NAN; /* went down: reset or wrapped */
}

static struct port *port_slot(struct loc *l, uint32_t sw, uint32_t p, uint64_t link)
{
    for (uint32_t i = 0; i < l->n_ports; i++)
        if (l->ports[i].sw == sw && l->ports[i].port == p)
            return &l->ports[i];
    if (l->n_ports == l->cap_ports) {
        uint32_t cap = l->cap_ports ? 2 * l->cap_ports : 64;
        struct port *np = realloc(l->ports, cap * sizeof(*np));
        if (!np)
            return NULL;
        l->ports = np, l->cap_ports = cap;
    }
    struct port *q = &l->ports[l->n_ports++];
    *q = (struct port){sw, p, link, {NAN, NAN, NAN, NAN}, NULL};
    return q;
}

/* One switch series into its port, or a skip. */
static void take_series(struct loc *l, const struct sn_health_series *s)
{
    char name[64], part[32], metric[24];
    if (sscanf(s->key, "switch/%63[^/]/%31[^/]/%23s", name, part, metric) != 3)
        return;
    static const char *const metrics[4] = {"in_octets", "out_octets", "in_errors",
                                           "out_discards"};
    int k = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(metric, metrics[i]) == 0)
            k = i;
    if (k < 0)
        return; /* speed */
    char w[160];
    sn__health_where(l->c->st, s->source, s->line, w, sizeof(w));
    uint32_t sw = find_switch(l, name), p;
    uint64_t link = UINT64_MAX;
    if (sw == SN_NONE) {
        sn__health_skip(l->c, SN_HEALTH_ENT_SWITCH, name, w,
                        "%s: switch '%s' is not in the model (expected a name such as "
                        "sn00-leaf0): its ports are not judged",
                        w, name);
        return;
    }
    if (!port_of(part, l->c->cfg->if_port_base, &p) || (link = find_link(l, sw, p)) == UINT64_MAX) {
        char lbl[96];
        snprintf(lbl, sizeof(lbl), "%s:%s", name, part);
        sn__health_skip(l->c, SN_HEALTH_ENT_SWITCH, lbl, w,
                        "%s: port '%s' of %s is no cable of the ledger (ifName p<N>, or a "
                        "trailing number N = port N-%u)",
                        w, part, name, l->c->cfg->if_port_base);
        return;
    }
    struct port *q = port_slot(l, sw, p, link);
    if (!q) {
        l->c->full = true;
        return;
    }
    q->d[k] = delta(s);
    q->s = s;
}

/* ---- rising errors and ECMP ------------------------------------------------------- */

static void port_errors(struct loc *l)
{
    char w[160], lbl[200];
    for (uint32_t i = 0; i < l->n_ports; i++) {
        const struct port *q = &l->ports[i];
        double e = (isnan(q->d[D_ERR]) ? 0 : q->d[D_ERR]) + (isnan(q->d[D_DISC]) ? 0 : q->d[D_DISC]);
        if (!(e > l->c->cfg->link_error_rise))
            continue;
        sn_model_cable_label(l->m, &l->m->links[q->link], lbl, sizeof(lbl));
        sn__health_add(l->c, SN_DET_SWITCH_PORT_ERRORS, SN_HEALTH_ENT_LINK, (uint32_t)q->link,
                       SN_NONE, SN_NONE, e, l->c->cfg->link_error_rise,
                       "%s: in_errors %+.0f, out_discards %+.0f between walks",
                       sn__health_where(l->c->st, q->s->source, q->s->line, w, sizeof(w)),
                       isnan(q->d[D_ERR]) ? 0 : q->d[D_ERR], isnan(q->d[D_DISC]) ? 0 : q->d[D_DISC]);
    }
}

static bool is_uplink(const struct loc *l, const struct port *q)
{
    return l->m->links[q->link].tier == SN_TIER_LEAF_SPINE &&
           l->m->switch_role[q->sw] == SN_ROLE_LEAF;
}

/* The median octet delta (direction k) of the uplinks of leaf sw; n gets their count. */
static double uplink_median(const struct loc *l, uint32_t sw, int k, uint32_t *n, double *v,
                            uint32_t cap)
{
    *n = 0;
    for (uint32_t i = 0; i < l->n_ports && *n < cap; i++)
        if (l->ports[i].sw == sw && is_uplink(l, &l->ports[i]) && !isnan(l->ports[i].d[k]))
            v[(*n)++] = l->ports[i].d[k];
    return sn__health_median(v, *n);
}

static void ecmp(struct loc *l)
{
    const struct sn_model *m = l->m;
    double *v = l->c->scratch;
    uint32_t cap = (uint32_t)(l->c->scratch_cap < UINT32_MAX ? l->c->scratch_cap : UINT32_MAX);
    for (uint32_t sw = 0; sw < m->n_switches; sw++) {
        if (m->switch_role[sw] != SN_ROLE_LEAF)
            continue;
        for (int k = D_IN; k <= D_OUT; k++) {
            const struct port *lo = NULL, *hi = NULL;
            double sum = 0;
            uint32_t n = 0;
            for (uint32_t i = 0; i < l->n_ports; i++) {
                const struct port *q = &l->ports[i];
                if (q->sw != sw || !is_uplink(l, q) || isnan(q->d[k]))
                    continue;
                sum += q->d[k], n++;
                if (!lo || q->d[k] < lo->d[k])
                    lo = q;
                if (!hi || q->d[k] > hi->d[k])
                    hi = q;
            }
            double mean = n ? sum / n : 0;
            if (n < 2 || !(mean > 0))
                continue;
            double spread = (hi->d[k] - lo->d[k]) / mean;
            if (spread <= l->c->cfg->ecmp_spread)
                continue;
            char w[160], a[64], b[64], name[64];
            (void)v, (void)cap;
            sn_model_endpoint_name(m, SN_END_SWITCH, sw, (uint16_t)lo->port, 0, a, sizeof(a));
            sn_model_endpoint_name(m, SN_END_SWITCH, sw, (uint16_t)hi->port, 0, b, sizeof(b));
            sn__health_add(l->c, SN_DET_ECMP_IMBALANCE, SN_HEALTH_ENT_SWITCH, sw, SN_NONE, SN_NONE,
                           spread, l->c->cfg->ecmp_spread,
                           "%s: %s %s spread %.0f%% over %u uplinks (%s %.3g B, %s %.3g B)",
                           sn__health_where(l->c->st, lo->s->source, lo->s->line, w, sizeof(w)),
                           sn_model_switch_name(m, sw, name, sizeof(name)),
                           k == D_IN ? "in" : "out", 100 * spread, n, a, lo->d[k], b, hi->d[k]);
        }
    }
}

/* ---- localisation ----------------------------------------------------------------- */

enum cand_kind { CAND_SPINE, CAND_LEAF, CAND_CABLE }; /* specificity order */

struct cand {
    enum cand_kind kind;
    uint32_t sw;   /* the leaf (leaf, cable) or the spine */
    uint64_t link; /* cable: its link */
    uint32_t for_n, against_n;
    double anomaly; /* counter evidence: errors + discards, or octet shortfall */
    char note[80];
};

static int better(const struct cand *x, const struct cand *y)
{
    if (x->for_n != y->for_n)
        return x->for_n > y->for_n;
    if ((x->anomaly > 0) != (y->anomaly > 0))
        return x->anomaly > 0;
    if (x->against_n != y->against_n)
        return x->against_n < y->against_n;
    if (x->kind != y->kind)
        return x->kind > y->kind;
    return x->anomaly > y->anomaly;
}

/* Servers cabled to leaf sw (bit per server into set). */
static void leaf_servers(const struct sn_model *m, uint32_t sw, struct sn_bitset *set)
{
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *x = &m->links[i];
        if (x->tier != SN_TIER_NODE_LEAF)
            continue;
        if (x->a_kind == SN_END_SERVER && x->b_kind == SN_END_SWITCH && x->b_id == sw)
            sn_bitset_set(set, x->a_id);
        else if (x->b_kind == SN_END_SERVER && x->a_kind == SN_END_SWITCH && x->a_id == sw)
            sn_bitset_set(set, x->b_id);
    }
}

static void count_cover(const struct sn_bitset *cover, const struct sn_bitset *slow,
                        const struct sn_bitset *judged, uint32_t n, struct cand *x)
{
    x->for_n = x->against_n = 0;
    for (uint32_t s = 0; s < n; s++) {
        if (!sn_bitset_test(cover, s))
            continue;
        if (sn_bitset_test(slow, s))
            x->for_n++;
        else if (sn_bitset_test(judged, s))
            x->against_n++;
    }
}

static const char *cand_label(const struct loc *l, const struct cand *x, char *buf, size_t len)
{
    if (x->kind == CAND_CABLE)
        return sn_model_cable_label(l->m, &l->m->links[x->link], buf, len);
    return sn_model_switch_name(l->m, x->sw, buf, len);
}

/* The cable's counter evidence: errors and discards at either end, or its
 * octets short of its leaf's uplink median by more than ecmp_spread. */
static double cable_anomaly(const struct loc *l, uint64_t link, uint32_t leaf, char *note,
                            size_t len)
{
    double errs = 0, worst_short = 0, vals[256];
    note[0] = '\0';
    for (uint32_t i = 0; i < l->n_ports; i++) {
        const struct port *q = &l->ports[i];
        if (q->link != link)
            continue;
        errs += (isnan(q->d[D_ERR]) ? 0 : q->d[D_ERR]) + (isnan(q->d[D_DISC]) ? 0 : q->d[D_DISC]);
        for (int k = D_IN; k <= D_OUT && q->sw == leaf; k++) {
            uint32_t n;
            double med = uplink_median(l, leaf, k, &n, vals, 256);
            if (n >= 2 && med > 0 && !isnan(q->d[k]) && 1 - q->d[k] / med > worst_short)
                worst_short = 1 - q->d[k] / med;
        }
    }
    if (errs > 0)
        snprintf(note, len, "errors+discards %+.0f", errs);
    if (worst_short > l->c->cfg->ecmp_spread) {
        size_t at = strlen(note);
        snprintf(note + at, len - at, "%soctets %.0f%% below uplink median", at ? ", " : "",
                 100 * worst_short);
    }
    return errs + (worst_short > l->c->cfg->ecmp_spread ? worst_short : 0);
}

static void localise(struct loc *l, struct sn_bitset *slow, struct sn_bitset *judged,
                     struct sn_bitset *cover, uint32_t n_slow)
{
    const struct sn_model *m = l->m;
    struct cand best = {.for_n = 0}, second = {.for_n = 0};
    bool have = false, have2 = false;
    for (uint32_t sw = 0; sw < m->n_switches; sw++) {
        if (m->switch_role[sw] != SN_ROLE_LEAF && m->switch_role[sw] != SN_ROLE_SPINE)
            continue;
        sn_bitset_clear_all(cover);
        if (m->switch_role[sw] == SN_ROLE_LEAF) {
            leaf_servers(m, sw, cover);
        } else { /* a spine: the servers of every leaf cabled to it */
            for (uint64_t i = 0; i < m->n_links; i++) {
                const struct sn_link *x = &m->links[i];
                if (x->tier == SN_TIER_LEAF_SPINE && x->b_kind == SN_END_SWITCH && x->b_id == sw)
                    leaf_servers(m, x->a_id, cover);
            }
        }
        struct cand x = {.kind = m->switch_role[sw] == SN_ROLE_LEAF ? CAND_LEAF : CAND_SPINE,
                         .sw = sw};
        count_cover(cover, slow, judged, m->n_servers, &x);
        if (x.for_n == 0)
            continue;
        struct cand cands[65];
        uint32_t nc = 0;
        cands[nc++] = x;
        for (uint64_t i = 0; x.kind == CAND_LEAF && i < m->n_links && nc < 65; i++) {
            const struct sn_link *k = &m->links[i];
            if (k->tier != SN_TIER_LEAF_SPINE || k->a_kind != SN_END_SWITCH || k->a_id != sw)
                continue;
            struct cand c = x;
            c.kind = CAND_CABLE, c.link = i;
            c.anomaly = cable_anomaly(l, i, sw, c.note, sizeof(c.note));
            if (c.anomaly > 0) /* one cable of many is named only on its own evidence */
                cands[nc++] = c;
        }
        for (uint32_t i = 0; i < nc; i++) {
            if (!have || better(&cands[i], &best)) {
                if (have)
                    second = best, have2 = true;
                best = cands[i], have = true;
            } else if (!have2 || better(&cands[i], &second)) {
                second = cands[i], have2 = true;
            }
        }
    }
    /* Several slow servers, and more of them on it than healthy judged ones:
     * otherwise no element explains the slowdown better than chance. */
    if (!have || best.for_n < 2 || best.against_n >= best.for_n)
        return;
    char lbl[160], lbl2[160];
    cand_label(l, &best, lbl, sizeof(lbl));
    if (have2)
        cand_label(l, &second, lbl2, sizeof(lbl2));
    sn__health_add(l->c, SN_DET_PATH_FAULT,
                   best.kind == CAND_CABLE ? SN_HEALTH_ENT_LINK : SN_HEALTH_ENT_SWITCH,
                   best.kind == CAND_CABLE ? (uint32_t)best.link : best.sw, SN_NONE, SN_NONE,
                   best.for_n, n_slow, "for: %u/%u slow servers route via it%s%s; against: %u "
                   "not slow on it; next: %.40s",
                   best.for_n, n_slow, best.note[0] ? ", " : "", best.note, best.against_n,
                   have2 ? lbl2 : "none");
}

static void slow_and_judged(struct sn__health_ctx *c, struct sn_bitset *slow,
                            struct sn_bitset *judged, uint32_t *n_slow)
{
    *n_slow = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        const struct sn_health_finding *f = &c->f[i];
        if (f->entity == SN_HEALTH_ENT_SERVER && f->id < c->m->n_servers &&
            (f->detector == SN_DET_SLOW_NODE || f->detector == SN_DET_BUSBW_LOW) &&
            !sn_bitset_test(slow, f->id)) {
            sn_bitset_set(slow, f->id);
            sn_bitset_set(judged, f->id);
            (*n_slow)++;
        }
    }
    const struct sn_health_facts *facts = c->in->facts;
    for (uint32_t i = 0; facts && i < facts->n_node; i++) {
        if (facts->node[i].metric != SN_NODE_BUSBW)
            continue;
        uint32_t s = sn_inventory_server(c->in->inventory, c->m, facts->node[i].host);
        if (s < c->m->n_servers)
            sn_bitset_set(judged, s);
    }
}

void sn__health_detect_paths(struct sn__health_ctx *c)
{
    const struct sn_health_history *h = c->in->history;
    const struct sn_model *m = c->m;
    struct loc l = {.c = c, .m = m};
    struct sn_bitset slow = {0}, judged = {0}, cover = {0};
    uint32_t ns = sn_health_history_series_count(h), n_switch_series = 0;
    for (uint32_t i = 0; i < ns; i++)
        n_switch_series += strncmp(sn_health_history_series(h, i)->key, "switch/", 7) == 0;
    if (n_switch_series) {
        l.sw = malloc(((size_t)m->n_switches + 1) * sizeof(*l.sw));
        if (!l.sw || !index_ends(&l)) {
            c->full = true;
            goto out;
        }
        for (uint32_t s = 0; s < m->n_switches; s++) {
            sn_model_switch_name(m, s, l.sw[s].name, sizeof(l.sw[s].name));
            l.sw[s].id = s;
        }
        l.n_sw = m->n_switches;
        qsort(l.sw, l.n_sw, sizeof(*l.sw), cmp_name);
        for (uint32_t i = 0; i < ns; i++) {
            const struct sn_health_series *s = sn_health_history_series(h, i);
            if (s->total && strncmp(s->key, "switch/", 7) == 0)
                take_series(&l, s);
        }
        port_errors(&l);
        ecmp(&l);
    }
    if (sn_bitset_init(&slow, m->n_servers, NULL) != SN_OK ||
        sn_bitset_init(&judged, m->n_servers, NULL) != SN_OK ||
        sn_bitset_init(&cover, m->n_servers, NULL) != SN_OK) {
        c->full = true;
        goto out;
    }
    uint32_t n_slow;
    slow_and_judged(c, &slow, &judged, &n_slow);
    if (n_slow >= 2)
        localise(&l, &slow, &judged, &cover, n_slow);
out:
    sn_bitset_release(&slow);
    sn_bitset_release(&judged);
    sn_bitset_release(&cover);
    free(l.sw);
    free(l.ends);
    free(l.ports);
}
