/*
 * Rules on figures and bookkeeping: the memory wall (R12), consistency of
 * counts (R13) and the cable ledger (R14).
 *
 * R14 proves that cable labels are unique without building them. A label
 * is "<a-end>--<b-end>", an end is "<entity name>:<port tag>" with tags
 * nvlN (GPU), nicN / mgmtN (server) and pN (switch). Names carry no ':'
 * (group prefixes may not), so a label splits uniquely at its ends, and an
 * end at its ':'. Entity names are a supernode name followed by a fixed
 * suffix grammar ("-tNN-gpuN", "-leafN", ...) or "spineNNN" / "coreNNN";
 * read from the right they decode to one entity, given that supernode
 * names are unique. So labels are unique exactly when supernode names are
 * unique, no name has a ':', and no port end (entity, port, tag) is used by
 * two links. The last is checked with one bit per port.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "review/review_int.h"

/* ---- R12: memory wall ------------------------------------------------- */

void sn__check_memory_wall(struct sn__review_ctx *c)
{
    const struct sn_spec *spec = c->m->spec;
    bool used[SN_SPEC_MAX_CATALOG] = {false};
    for (uint32_t g = 0; g < spec->n_groups; g++) {
        const struct sn_template *t = &spec->templates[spec->groups[g].template_index];
        uint32_t gm = spec->server_models[t->server_model].gpu_model;
        if (spec->groups[g].count > 0 && gm < SN_SPEC_MAX_CATALOG)
            used[gm] = true;
    }
    char a[32], b[32];
    for (uint32_t i = 0; i < spec->n_gpu_models && i < SN_SPEC_MAX_CATALOG; i++) {
        const struct sn_gpu_model *gm = &spec->gpu_models[i];
        if (!used[i] || gm->dense_bf16_flops <= 0)
            continue;
        double ratio = gm->hbm_bytes_per_s / gm->dense_bf16_flops;
        if (ratio >= c->cfg->memory_wall_bytes_per_flop)
            continue;
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_WARNING, i,
            "HBM %s / dense BF16 %s = %.3g bytes/FLOP < memory_wall %g: memory-bound work "
            "will not reach peak compute",
            sn__fmt(a, sizeof(a), gm->hbm_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED),
            sn__fmt(b, sizeof(b), gm->dense_bf16_flops, SN_UNIT_FLOPS), ratio,
            c->cfg->memory_wall_bytes_per_flop);
        sn__finding_element(f, gm->name);
    }
}

/* ---- R13: counts are consistent --------------------------------------- */

static void expect_checks(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    const struct sn_expect_spec *e = &m->spec->expect;
    const uint64_t *t = m->tier_first;
    const struct {
        const char *key;
        uint64_t stated, actual;
    } rows[] = {
        {"gpus", e->gpus, m->n_gpus},
        {"servers", e->servers, m->n_servers},
        {"supernodes", e->supernodes, m->n_supernodes},
        {"leaves", e->leaves, sn_model_domain_count(m, SN_DOMAIN_LEAF)},
        {"spines", e->spines, m->n_spines},
        {"cores", e->cores, m->n_cores},
        {"racks", e->racks, m->n_racks},
        {"node_leaf_cables", e->node_leaf_cables, t[SN_TIER_NODE_LEAF + 1] - t[SN_TIER_NODE_LEAF]},
        {"leaf_spine_cables", e->leaf_spine_cables,
         t[SN_TIER_LEAF_SPINE + 1] - t[SN_TIER_LEAF_SPINE]},
        {"spine_core_cables", e->spine_core_cables,
         t[SN_TIER_SPINE_CORE + 1] - t[SN_TIER_SPINE_CORE]},
    };
    char a[32], b[32], name[64];
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (rows[i].stated == 0 || rows[i].stated == rows[i].actual)
            continue;
        snprintf(name, sizeof(name), "expect.%s", rows[i].key);
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, SN__KEY_GLOBAL | i, "the spec states %s %s, the design has %s",
            rows[i].key, sn__count(a, sizeof(a), rows[i].stated),
            sn__count(b, sizeof(b), rows[i].actual));
        sn__finding_element(f, name);
    }
}

/* GPUs of the largest scale-up domain in use (1 without switches). */
static uint32_t largest_scaleup_domain(const struct sn_spec *spec)
{
    uint32_t best = 1;
    for (uint32_t g = 0; g < spec->n_groups; g++) {
        const struct sn_template *t = &spec->templates[spec->groups[g].template_index];
        uint32_t gpus = spec->server_models[t->server_model].gpus, size = 1;
        if (spec->groups[g].count == 0 || t->scaleup.switch_model == SN_NONE ||
            t->scaleup.chips == 0)
            continue;
        size = t->scaleup.domain == SN_SCALEUP_SERVER ? gpus : gpus * t->servers;
        best = size > best ? size : best;
    }
    return best;
}

static uint64_t one_if_zero(uint32_t v)
{
    return v ? v : 1;
}

static void layout_checks(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    uint32_t domain = largest_scaleup_domain(m->spec);
    for (uint32_t i = 0; i < m->spec->n_layouts; i++) {
        const struct sn_layout_spec *l = &m->spec->layouts[i];
        uint64_t tp = one_if_zero(l->tp), pp = one_if_zero(l->pp), dp = one_if_zero(l->dp);
        uint64_t cp = one_if_zero(l->cp), ep = one_if_zero(l->ep);
        uint64_t product = tp * pp * cp * dp;
        uint64_t key = SN__KEY_GLOBAL | (uint64_t)(i + 1) << 8;
        struct sn_finding *f;
        if (product != l->gpus) {
            f = sn__finding_global(c, SN_SEVERITY_ERROR, key,
                                   "tp %llu x pp %llu x cp %llu x dp %llu = %llu, but the layout "
                                   "states %u GPUs",
                                   (unsigned long long)tp, (unsigned long long)pp,
                                   (unsigned long long)cp, (unsigned long long)dp,
                                   (unsigned long long)product, l->gpus);
            sn__finding_element(f, l->name);
        }
        if (l->gpus > m->n_gpus) {
            f = sn__finding_global(c, SN_SEVERITY_ERROR, key + 1,
                                   "the layout needs %u GPUs, the cluster has %u", l->gpus,
                                   m->n_gpus);
            sn__finding_element(f, l->name);
        }
        if ((dp * cp) % ep != 0) {
            f = sn__finding_global(
                c, SN_SEVERITY_ERROR, key + 2, "ep %llu does not divide dp %llu x cp %llu",
                (unsigned long long)ep, (unsigned long long)dp, (unsigned long long)cp);
            sn__finding_element(f, l->name);
        }
        if (tp > domain) {
            f = sn__finding_global(c, SN_SEVERITY_WARNING, key + 3,
                                   "tp %llu exceeds the largest scale-up domain (%u GPUs): "
                                   "tensor-parallel traffic crosses the scale-out fabric",
                                   (unsigned long long)tp, domain);
            sn__finding_element(f, l->name);
        }
    }
}

static void counts_supernode(struct sn__review_ctx *c, uint32_t sn)
{
    const struct sn_model *m = c->m;
    const struct sn_supernode *s = &m->supernodes[sn];
    const struct sn_template *t = sn_model_supernode_template(m, sn);
    const struct sn_server_model *sm = &m->spec->server_models[t->server_model];
    uint64_t sum = 0;
    for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++)
        sum += sn_model_server_spec(m, sv)->gpus;
    uint64_t declared = (uint64_t)t->servers * sm->gpus;
    if (sum != s->n_gpus || declared != s->n_gpus) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_ERROR, 0,
                                           "%u GPUs, but its servers hold %llu and the template "
                                           "declares %u servers x %u GPUs = %llu",
                                           s->n_gpus, (unsigned long long)sum, t->servers, sm->gpus,
                                           (unsigned long long)declared);
        sn__finding_element(f, c->sn_name);
    }
    uint32_t empty = 0, first_empty = SN_NONE;
    /* The L2 racks of a two-level scale-up domain hold switches only. */
    uint32_t server_racks = s->n_racks - t->scaleup.l2.racks;
    for (uint32_t r = s->first_rack; r < s->first_rack + server_racks; r++) {
        bool any = false;
        for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers && !any; sv++)
            any = m->server_rack[sv] == r;
        if (!any && empty++ == 0)
            first_empty = r;
    }
    char name[SN_REVIEW_NAME_MAX];
    if (empty > 0) {
        struct sn_finding *f =
            sn__finding(c, SN_SEVERITY_WARNING, 1, "%u of %u racks hold no server (%u servers)",
                        empty, s->n_racks, s->n_servers);
        sn__finding_element(f, sn_model_rack_name(m, first_empty, name, sizeof(name)));
    }
    if (sm->nics > 0 && sm->gpus > 0 && sm->nics % sm->gpus != 0 && sm->gpus % sm->nics != 0) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_WARNING, 2,
                                           "server model '%s': %u GPUs share %u NICs unevenly",
                                           sm->name, sm->gpus, sm->nics);
        sn__finding_element(f, c->sn_name);
    }
    if (s->n_leaves > 0 && sm->nics % s->n_leaves != 0) {
        struct sn_finding *f =
            sn__finding(c, SN_SEVERITY_WARNING, 3,
                        "%u NICs per server spread unevenly over %u leaves", sm->nics, s->n_leaves);
        sn__finding_element(f, c->sn_name);
    }
    if (t->leaves.attach == SN_LEAF_ATTACH_PAIR && s->n_leaves != 2 && s->n_leaves > 0) {
        struct sn_finding *f = sn__finding(c, SN_SEVERITY_WARNING, 4,
                                           "attach: pair with %u leaves: no redundant pair is "
                                           "formed",
                                           s->n_leaves);
        sn__finding_element(f, c->sn_name);
    }
}

void sn__check_counts(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    uint64_t gpus = 0;
    for (uint32_t sv = 0; sv < m->n_servers; sv++)
        gpus += sn_model_server_spec(m, sv)->gpus;
    if (gpus != m->n_gpus) {
        char a[32], b[32];
        sn__finding_global(c, SN_SEVERITY_ERROR, 0,
                           "the cluster has %s GPUs, but its servers hold %s",
                           sn__count(a, sizeof(a), m->n_gpus), sn__count(b, sizeof(b), gpus));
    }
    expect_checks(c);
    layout_checks(c);
    sn__each_supernode(c, counts_supernode);
}

/* ---- R14: the cable ledger -------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Supernode names are unique and hold no ':'. */
static void supernode_names(struct sn__review_ctx *c)
{
    const struct sn_model *m = c->m;
    uint32_t n = m->n_supernodes;
    char *names = calloc((size_t)n + 1, SN_REVIEW_NAME_MAX);
    char **sorted = calloc((size_t)n + 1, sizeof(char *));
    if (!names || !sorted) {
        c->nomem = true;
        goto out;
    }
    for (uint32_t sn = 0; sn < n; sn++) {
        sorted[sn] = names + (size_t)sn * SN_REVIEW_NAME_MAX;
        sn_model_supernode_name(m, sn, sorted[sn], SN_REVIEW_NAME_MAX);
        if (strchr(sorted[sn], ':')) {
            struct sn_finding *f =
                sn__finding_global(c, SN_SEVERITY_ERROR, sn,
                                   "the name holds ':', which separates a cable end's "
                                   "name from its port");
            sn__finding_element(f, sorted[sn]);
        }
    }
    qsort(sorted, n, sizeof(char *), name_cmp);
    for (uint32_t i = 1; i < n; i++) {
        if (strcmp(sorted[i - 1], sorted[i]) != 0)
            continue;
        uint32_t a = (uint32_t)((sorted[i - 1] - names) / SN_REVIEW_NAME_MAX);
        uint32_t b = (uint32_t)((sorted[i] - names) / SN_REVIEW_NAME_MAX);
        struct sn_finding *f = sn__finding_global(
            c, SN_SEVERITY_ERROR, a < b ? a : b,
            "supernodes %u and %u (groups %u and %u) share this name, so their cables share "
            "labels; give the groups distinct prefixes",
            a < b ? a : b, a < b ? b : a, m->supernodes[a].group, m->supernodes[b].group);
        sn__finding_element(f, sorted[i]);
    }
out:
    free(names);
    free(sorted);
}

struct ports {
    uint64_t *gpu, *server, *sw; /* first bit of each entity */
    struct sn_bitset used;
};

static void ports_release(struct ports *p)
{
    free(p->gpu);
    free(p->server);
    free(p->sw);
    sn_bitset_release(&p->used);
}

static bool ports_init(struct sn__review_ctx *c, struct ports *p)
{
    const struct sn_model *m = c->m;
    p->gpu = calloc((size_t)m->n_gpus + 1, sizeof(uint64_t));
    p->server = calloc((size_t)m->n_servers + 1, sizeof(uint64_t));
    p->sw = calloc((size_t)m->n_switches + 1, sizeof(uint64_t));
    if (!p->gpu || !p->server || !p->sw)
        return false;
    uint64_t bit = 0;
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        p->gpu[g] = bit;
        bit += sn_model_gpu_spec(m, g)->scaleup_links;
    }
    p->gpu[m->n_gpus] = bit;
    for (uint32_t s = 0; s < m->n_servers; s++) {
        const struct sn_server_model *sm = sn_model_server_spec(m, s);
        p->server[s] = bit;
        bit += sm->nics + sm->mgmt_ports;
    }
    p->server[m->n_servers] = bit;
    for (uint32_t w = 0; w < m->n_switches; w++) {
        p->sw[w] = bit;
        bit += m->switch_ports_used[w];
    }
    p->sw[m->n_switches] = bit;
    if (bit >= UINT32_MAX)
        return false;
    return sn_bitset_init(&p->used, (uint32_t)bit + 1, NULL) == SN_OK;
}

/* Bit of a link end, or UINT64_MAX when its port is out of range. */
static uint64_t end_bit(const struct sn_model *m, const struct ports *p, uint8_t kind, uint32_t id,
                        uint16_t port, uint8_t tier)
{
    uint64_t first, count;
    switch ((enum sn_endpoint_kind)kind) {
    case SN_END_GPU:
        first = p->gpu[id];
        count = p->gpu[id + 1] - first;
        break;
    case SN_END_SERVER: {
        const struct sn_server_model *sm = sn_model_server_spec(m, id);
        first = p->server[id] + (tier == SN_TIER_MGMT ? sm->nics : 0);
        count = tier == SN_TIER_MGMT ? sm->mgmt_ports : sm->nics;
        break;
    }
    case SN_END_SWITCH:
        first = p->sw[id];
        count = p->sw[id + 1] - first;
        break;
    default:
        return UINT64_MAX;
    }
    return port < count ? first + port : UINT64_MAX;
}

static void ledger_finding(struct sn__review_ctx *c, uint64_t link, int end, const char *what)
{
    const struct sn_model *m = c->m;
    const struct sn_link *l = &m->links[link];
    char label[2 * SN_REVIEW_NAME_MAX], e[SN_REVIEW_NAME_MAX];
    if (end == 0)
        sn_model_endpoint_name(m, l->a_kind, l->a_id, l->a_port, l->tier, e, sizeof(e));
    else
        sn_model_endpoint_name(m, l->b_kind, l->b_id, l->b_port, l->tier, e, sizeof(e));
    struct sn_finding *f =
        sn__finding_global(c, SN_SEVERITY_ERROR, SN__KEY_GLOBAL | link, "cable %llu (%s): %s",
                           (unsigned long long)link, sn_link_tier_name(l->tier), what);
    sn__finding_element(f, sn_model_cable_label(m, l, label, sizeof(label)));
    sn__finding_element(f, e);
}

static void port_ends(struct sn__review_ctx *c, bool names_ok)
{
    const struct sn_model *m = c->m;
    struct ports p = {0};
    if (!ports_init(c, &p)) {
        c->nomem = true;
        goto out;
    }
    uint64_t bad = 0;
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        for (int end = 0; end < 2; end++) {
            uint64_t bit = end == 0 ? end_bit(m, &p, l->a_kind, l->a_id, l->a_port, l->tier)
                                    : end_bit(m, &p, l->b_kind, l->b_id, l->b_port, l->tier);
            if (bit == UINT64_MAX) {
                bad++;
                ledger_finding(c, i, end, "port beyond its device's ports");
            } else if (sn_bitset_test(&p.used, (uint32_t)bit)) {
                bad++;
                ledger_finding(c, i, end,
                               "this port end is already used by another cable: "
                               "duplicate label");
            } else {
                sn_bitset_set(&p.used, (uint32_t)bit);
            }
        }
    }
    if (bad == 0 && names_ok && !c->nomem) {
        char a[32], b[32];
        sn__finding_global(
            c, SN_SEVERITY_INFO, 0, "%s cables, %s port ends: every cable label is unique",
            sn__count(a, sizeof(a), m->n_links), sn__count(b, sizeof(b), 2 * m->n_links));
    }
out:
    ports_release(&p);
}

void sn__check_cables(struct sn__review_ctx *c)
{
    uint64_t before = c->out->by_severity[SN_SEVERITY_ERROR];
    supernode_names(c);
    if (!c->nomem)
        port_ends(c, c->out->by_severity[SN_SEVERITY_ERROR] == before);
}
