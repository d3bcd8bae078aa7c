/*
 * Exports for schedulers: Slurm topology.conf (tree and block plugins),
 * Volcano HyperNodes and Kubernetes node labels; the format table and the
 * dispatch of sn_export_write() (sn/export.h).
 *
 * The scheduler view of the fabric has three levels: a supernode (its
 * servers under its own leaves, whatever the rail layout), a spine group
 * (supernodes that share spines) and a core group (spine groups that share
 * cores). Rail-optimised fabrics connect every server of a supernode to
 * every leaf of it, so a per-leaf tree would list each server under eight
 * switches; the supernode is the right first level (docs/export.md).
 * Output is written in model ID order and is a pure function of the model.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <sn/fabric.h>

#include "bom/export_int.h"

static const char *const format_names[] = {
#define SN_X(name, text, summary) text,
    SN_EXPORT_FORMAT_LIST(SN_X)
#undef SN_X
};
static const char *const format_summaries[] = {
#define SN_X(name, text, summary) summary,
    SN_EXPORT_FORMAT_LIST(SN_X)
#undef SN_X
};

const char *sn_export_format_name(enum sn_export_format f)
{
    return (unsigned)f < SN_EXPORT_FORMAT_COUNT ? format_names[f] : "unknown";
}

const char *sn_export_format_summary(enum sn_export_format f)
{
    return (unsigned)f < SN_EXPORT_FORMAT_COUNT ? format_summaries[f] : "";
}

enum sn_err sn_export_format_parse(const char *name, enum sn_export_format *out,
                                   struct sn_error *err)
{
    for (int f = 0; f < SN_EXPORT_FORMAT_COUNT; f++)
        if (strcmp(name, format_names[f]) == 0) {
            *out = (enum sn_export_format)f;
            return SN_OK;
        }
    return sn_error_set(err, SN_ERR_INVALID,
                        "unknown export format '%s' (expected slurm-tree, slurm-block, volcano, "
                        "k8s-labels, dot, cables, json, slurm-conf, slurm-gres, slurm-job-submit, "
                        "slurm-topology-yaml or ibnetdiscover)",
                        name);
}

/* ---- fabric groups ----------------------------------------------------- */

static uint32_t uf_find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

static void uf_union(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a != b)
        parent[a > b ? a : b] = a < b ? a : b; /* smaller root wins: stable */
}

void sn__fabric_groups_release(struct sn__fabric_groups *g)
{
    free(g->sn_pod);
    free(g->spine_pod);
    free(g->pod_top);
    free(g->core_top);
    memset(g, 0, sizeof(*g));
}

#define MARK (SN_NONE - 1) /* a root with a switch above, before numbering */

/* Numbers the components that have a switch above them, in order of their
 * smallest member. Members have indices below n and switches above, and the
 * smaller root wins a union, so a component's root is its first member. */
static uint32_t number_groups(uint32_t *parent, uint32_t n, uint32_t n_above, uint32_t *group,
                              uint32_t *above_group)
{
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; i++)
        group[i] = SN_NONE;
    for (uint32_t s = 0; s < n_above; s++) {
        uint32_t root = uf_find(parent, n + s);
        if (root < n)
            group[root] = MARK;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t root = uf_find(parent, i);
        if (root != i)
            group[i] = group[root];
        else if (group[i] == MARK)
            group[i] = count++;
    }
    for (uint32_t s = 0; s < n_above; s++) {
        uint32_t root = uf_find(parent, n + s);
        above_group[s] = root < n ? group[root] : SN_NONE;
    }
    return count;
}

/* Spine groups: components of {supernodes, spines} joined by leaf-spine
 * links. Core groups: components of {spine groups, cores} joined by
 * spine-core links. */
static void group_fabric(const struct sn_model *m, uint32_t *parent, struct sn__fabric_groups *g)
{
    uint32_t n = m->n_supernodes;
    for (uint32_t i = 0; i < n + m->n_spines; i++)
        parent[i] = i;
    for (uint64_t i = m->tier_first[SN_TIER_LEAF_SPINE]; i < m->tier_first[SN_TIER_LEAF_SPINE + 1];
         i++) {
        const struct sn_link *l = &m->links[i];
        uf_union(parent, m->switch_supernode[l->a_id], n + (l->b_id - m->first_spine));
    }
    g->n_pods = number_groups(parent, n, m->n_spines, g->sn_pod, g->spine_pod);
    uint32_t np = g->n_pods;
    for (uint32_t i = 0; i < np + m->n_cores; i++)
        parent[i] = i;
    for (uint64_t i = m->tier_first[SN_TIER_SPINE_CORE]; i < m->tier_first[SN_TIER_SPINE_CORE + 1];
         i++) {
        const struct sn_link *l = &m->links[i];
        uint32_t pod = g->spine_pod[l->a_id - m->first_spine];
        if (pod != SN_NONE)
            uf_union(parent, pod, np + (l->b_id - m->first_core));
    }
    g->n_tops = number_groups(parent, np, m->n_cores, g->pod_top, g->core_top);
}

enum sn_err sn__fabric_groups_build(const struct sn_model *m, struct sn__fabric_groups *g,
                                    struct sn_error *err)
{
    memset(g, 0, sizeof(*g));
    uint64_t n = (uint64_t)m->n_supernodes + m->n_spines + m->n_cores + 1;
    uint32_t *parent = calloc(n, sizeof(uint32_t));
    g->sn_pod = calloc(m->n_supernodes + 1, sizeof(uint32_t));
    g->spine_pod = calloc(m->n_spines + 1, sizeof(uint32_t));
    g->pod_top = calloc(m->n_supernodes + 1, sizeof(uint32_t)); /* pods <= supernodes */
    g->core_top = calloc(m->n_cores + 1, sizeof(uint32_t));
    if (!parent || !g->sn_pod || !g->spine_pod || !g->pod_top || !g->core_top) {
        free(parent);
        sn__fabric_groups_release(g);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory grouping the fabric");
    }
    group_fabric(m, parent, g);
    free(parent);
    return SN_OK;
}

/* Digits to pad numbers below n to: at least 2, as supernode names. */
static unsigned digits(uint32_t n)
{
    unsigned d = 2;
    for (uint32_t v = n > 0 ? n - 1 : 0; v >= 100 && d < 10; v /= 10)
        d++;
    return d;
}

char *sn__pod_name(const struct sn__fabric_groups *g, uint32_t pod, char *buf, size_t len)
{
    snprintf(buf, len, "spine-group%0*u", (int)(digits(g->n_pods) & 15), pod);
    return buf;
}

char *sn__top_name(const struct sn__fabric_groups *g, uint32_t top, char *buf, size_t len)
{
    snprintf(buf, len, "core-group%0*u", (int)(digits(g->n_tops) & 15), top);
    return buf;
}

/* ---- hostlists --------------------------------------------------------- */

void sn__hostlist_begin(struct sn__hostlist *h, FILE *out)
{
    memset(h, 0, sizeof(*h));
    h->out = out;
}

static void hostlist_range(struct sn__hostlist *h)
{
    if (h->lo == h->hi)
        fprintf(h->out, "%0*lu", h->width, h->lo);
    else
        fprintf(h->out, "%0*lu-%0*lu", h->width, h->lo, h->width, h->hi);
}

void sn__hostlist_add(struct sn__hostlist *h, const char *name)
{
    size_t len = strlen(name), cut = len;
    while (cut > 0 && isdigit((unsigned char)name[cut - 1]))
        cut--;
    int width = (int)(len - cut);
    bool numbered = width > 0 && width <= 9 && cut < sizeof(h->prefix);
    unsigned long num = numbered ? strtoul(name + cut, NULL, 10) : 0;
    if (h->open && numbered && strlen(h->prefix) == cut && strncmp(h->prefix, name, cut) == 0) {
        if (width == h->width && num == h->hi + 1) {
            h->hi = num;
            return;
        }
        hostlist_range(h);
        fputc(',', h->out);
        h->lo = h->hi = num;
        h->width = width;
        return;
    }
    sn__hostlist_end(h);
    if (h->items++ > 0)
        fputc(',', h->out);
    if (!numbered) {
        fputs(name, h->out);
        return;
    }
    memcpy(h->prefix, name, cut);
    h->prefix[cut] = '\0';
    fprintf(h->out, "%s[", h->prefix);
    h->lo = h->hi = num;
    h->width = width;
    h->open = true;
}

void sn__hostlist_end(struct sn__hostlist *h)
{
    if (!h->open)
        return;
    hostlist_range(h);
    fputc(']', h->out);
    h->open = false;
}

void sn__supernode_nodes(FILE *out, const struct sn_model *m, uint32_t sn)
{
    char name[SN__EXPORT_NAME_LEN];
    struct sn__hostlist h;
    const struct sn_supernode *s = &m->supernodes[sn];
    sn__hostlist_begin(&h, out);
    for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++)
        sn__hostlist_add(&h, sn_model_server_name(m, sv, name, sizeof(name)));
    sn__hostlist_end(&h);
}

/* ---- Slurm ------------------------------------------------------------- */

static void slurm_header(FILE *out, const struct sn_model *m, const char *plugin)
{
    fprintf(out, "# Slurm topology.conf for TopologyPlugin=topology/%s\n", plugin);
    fprintf(out, "# cluster '%s': %u supernodes, %u nodes, %u GPUs; written by sn design export\n",
            m->spec->name ? m->spec->name : "", m->n_supernodes, m->n_servers, m->n_gpus);
}

static enum sn_err export_slurm_tree(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    char name[SN__EXPORT_NAME_LEN];
    struct sn__fabric_groups g;
    enum sn_err rc = sn__fabric_groups_build(m, &g, err);
    if (rc != SN_OK)
        return rc;
    slurm_header(out, m, "tree");
    fprintf(out, "# level 1: one switch per supernode (its leaves); level 2: spine groups; "
                 "level 3: core groups\n");
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        fprintf(out, "SwitchName=%s Nodes=", sn_model_supernode_name(m, sn, name, sizeof(name)));
        sn__supernode_nodes(out, m, sn);
        fputc('\n', out);
    }
    for (uint32_t p = 0; p < g.n_pods; p++) {
        struct sn__hostlist h;
        fprintf(out, "SwitchName=%s Switches=", sn__pod_name(&g, p, name, sizeof(name)));
        sn__hostlist_begin(&h, out);
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
            if (g.sn_pod[sn] == p)
                sn__hostlist_add(&h, sn_model_supernode_name(m, sn, name, sizeof(name)));
        sn__hostlist_end(&h);
        fputc('\n', out);
    }
    for (uint32_t t = 0; t < g.n_tops; t++) {
        struct sn__hostlist h;
        fprintf(out, "SwitchName=%s Switches=", sn__top_name(&g, t, name, sizeof(name)));
        sn__hostlist_begin(&h, out);
        for (uint32_t p = 0; p < g.n_pods; p++)
            if (g.pod_top[p] == t)
                sn__hostlist_add(&h, sn__pod_name(&g, p, name, sizeof(name)));
        sn__hostlist_end(&h);
        fputc('\n', out);
    }
    sn__fabric_groups_release(&g);
    return SN_OK;
}

/* topology.conf(5), topology/block: "Each block must have at least the
 * planning base block size count of nodes. Successive BlockSizes must be a
 * power of two larger than the prior values." The base is the smallest
 * supernode; higher sizes double while that many blocks exist. */
unsigned sn__block_sizes(const struct sn_model *m, uint64_t *sizes, unsigned max)
{
    uint32_t base = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        uint32_t n = m->supernodes[sn].n_servers;
        if (n > 0 && (base == 0 || n < base))
            base = n;
    }
    if (base == 0 || max == 0)
        return 0;
    unsigned count = 0;
    sizes[count++] = base;
    for (uint64_t blocks = 2; blocks <= m->n_supernodes && count < max; blocks *= 2)
        sizes[count++] = blocks * base;
    return count;
}

static enum sn_err export_slurm_block(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    char name[SN__EXPORT_NAME_LEN];
    (void)err;
    slurm_header(out, m, "block");
    fprintf(out, "# one block per supernode\n");
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        if (m->supernodes[sn].n_servers == 0)
            continue;
        fprintf(out, "BlockName=%s Nodes=", sn_model_supernode_name(m, sn, name, sizeof(name)));
        sn__supernode_nodes(out, m, sn);
        fputc('\n', out);
    }
    uint64_t sizes[34];
    unsigned n = sn__block_sizes(m, sizes, 34);
    if (n == 0)
        return SN_OK;
    for (unsigned i = 0; i < n; i++)
        fprintf(out, "%s%llu", i ? "," : "BlockSizes=", (unsigned long long)sizes[i]);
    fputc('\n', out);
    return SN_OK;
}

/* ---- Volcano ----------------------------------------------------------- */

static json_t *member(const char *type, const char *name)
{
    return json_pack("{s:s, s:{s:{s:s}}}", "type", type, "selector", "exactMatch", "name", name);
}

static int write_hypernode(FILE *out, const char *name, int tier, json_t *members)
{
    json_t *doc = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:i, s:o}}", "apiVersion",
                            "topology.volcano.sh/v1alpha1", "kind", "HyperNode", "metadata", "name",
                            name, "labels", "app.kubernetes.io/managed-by", "supernode", "spec",
                            "tier", tier, "members", members);
    if (!doc)
        return -1;
    fputs("---\n", out);
    int rc = json_dumpf(doc, out, JSON_INDENT(2));
    fputc('\n', out);
    json_decref(doc);
    return rc;
}

static enum sn_err export_volcano(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    char name[SN__EXPORT_NAME_LEN], sname[SN__EXPORT_NAME_LEN];
    struct sn__fabric_groups g;
    enum sn_err rc = sn__fabric_groups_build(m, &g, err);
    if (rc != SN_OK)
        return rc;
    fprintf(out, "# Volcano HyperNodes: tier 1 = supernode, tier 2 = spine group, "
                 "tier 3 = core group\n");
    int bad = 0;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *s = &m->supernodes[sn];
        json_t *members = json_array();
        for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++)
            bad |= json_array_append_new(
                members, member("Node", sn_model_server_name(m, sv, name, sizeof(name))));
        bad |=
            write_hypernode(out, sn_model_supernode_name(m, sn, sname, sizeof(sname)), 1, members);
    }
    for (uint32_t p = 0; p < g.n_pods; p++) {
        json_t *members = json_array();
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
            if (g.sn_pod[sn] == p)
                bad |= json_array_append_new(
                    members,
                    member("HyperNode", sn_model_supernode_name(m, sn, name, sizeof(name))));
        bad |= write_hypernode(out, sn__pod_name(&g, p, sname, sizeof(sname)), 2, members);
    }
    for (uint32_t t = 0; t < g.n_tops; t++) {
        json_t *members = json_array();
        for (uint32_t p = 0; p < g.n_pods; p++)
            if (g.pod_top[p] == t)
                bad |= json_array_append_new(
                    members, member("HyperNode", sn__pod_name(&g, p, name, sizeof(name))));
        bad |= write_hypernode(out, sn__top_name(&g, t, sname, sizeof(sname)), 3, members);
    }
    sn__fabric_groups_release(&g);
    if (bad)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory writing HyperNodes");
    return SN_OK;
}

/* ---- Kubernetes labels ------------------------------------------------- */

/* A label value: at most 63 of [A-Za-z0-9._-], beginning and ending with
 * an alphanumeric (Kubernetes "Labels and Selectors"). Other characters
 * become '-'. Returns false when nothing is left. */
static bool label_value(const char *src, char *dst)
{
    size_t n = 0;
    for (const char *p = src; *p && n < 63; p++) {
        unsigned char c = (unsigned char)*p;
        if (n == 0 && !isalnum(c))
            continue;
        dst[n++] = (char)(isalnum(c) || c == '.' || c == '_' || c == '-' ? c : '-');
    }
    while (n > 0 && !isalnum((unsigned char)dst[n - 1]))
        n--;
    dst[n] = '\0';
    return n > 0;
}

static void label(FILE *out, const char *key, const char *value)
{
    char v[64];
    if (label_value(value, v))
        fprintf(out, " supernode.io/%s=%s", key, v);
}

static void server_labels(FILE *out, const struct sn_model *m, uint32_t sv)
{
    char name[SN__EXPORT_NAME_LEN];
    uint32_t sn = m->server_supernode[sv];
    const struct sn_supernode *s = &m->supernodes[sn];
    fprintf(out, "kubectl label node %s --overwrite",
            sn_model_server_name(m, sv, name, sizeof(name)));
    label(out, "supernode", sn_model_supernode_name(m, sn, name, sizeof(name)));
    label(out, "template", sn_model_supernode_template(m, sn)->name);
    if (m->server_rack[sv] != SN_NONE)
        label(out, "rack", sn_model_rack_name(m, m->server_rack[sv], name, sizeof(name)));
    if (m->server_power[0][sv] != SN_NONE)
        label(out, "power-domain",
              sn_model_power_domain_name(m, m->server_power[0][sv], name, sizeof(name)));
    if (m->server_power[1][sv] != SN_NONE)
        label(out, "power-domain-b",
              sn_model_power_domain_name(m, m->server_power[1][sv], name, sizeof(name)));
    uint32_t rack = m->server_rack[sv];
    if (rack != SN_NONE && m->rack_cooling_loop[rack] != SN_NONE)
        label(out, "cooling-loop",
              sn_model_cooling_loop_name(m, m->rack_cooling_loop[rack], name, sizeof(name)));
    uint32_t leaf = m->gpu_leaf[m->server_first_gpu[sv]];
    if (leaf != SN_NONE)
        label(out, "leaf", sn_model_switch_name(m, leaf, name, sizeof(name)));
    if (s->pool != SN_NONE)
        label(out, "pool", m->spec->pools[s->pool].name);
    fputc('\n', out);
}

static enum sn_err export_k8s_labels(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    (void)err;
    fprintf(out,
            "#!/bin/sh\n# Kubernetes node labels for cluster '%s', written by sn design "
            "export\n# leaf: the leaf of the server's first NIC (GPU 0's rail)\nset -e\n",
            m->spec->name ? m->spec->name : "");
    for (uint32_t sv = 0; sv < m->n_servers; sv++)
        server_labels(out, m, sv);
    return SN_OK;
}

/* ---- dispatch ---------------------------------------------------------- */

enum sn_err sn_export_write(FILE *out, const struct sn_model *m, enum sn_export_format format,
                            struct sn_error *err)
{
    enum sn_err rc = SN_ERR_INVALID;
    switch (format) {
    case SN_EXPORT_SLURM_TREE:
        rc = export_slurm_tree(out, m, err);
        break;
    case SN_EXPORT_SLURM_BLOCK:
        rc = export_slurm_block(out, m, err);
        break;
    case SN_EXPORT_VOLCANO:
        rc = export_volcano(out, m, err);
        break;
    case SN_EXPORT_K8S_LABELS:
        rc = export_k8s_labels(out, m, err);
        break;
    case SN_EXPORT_DOT:
        rc = sn__export_dot(out, m, err);
        break;
    case SN_EXPORT_CABLES:
        rc = sn__export_cables(out, m, err);
        break;
    case SN_EXPORT_JSON:
        rc = sn__export_json(out, m, err);
        break;
    case SN_EXPORT_SLURM_CONF:
        rc = sn__export_slurm_conf(out, m, err);
        break;
    case SN_EXPORT_SLURM_GRES:
        rc = sn__export_slurm_gres(out, m, err);
        break;
    case SN_EXPORT_SLURM_JOB_SUBMIT:
        rc = sn__export_slurm_job_submit(out, m, err);
        break;
    case SN_EXPORT_SLURM_TOPOLOGY_YAML:
        rc = sn__export_slurm_topology_yaml(out, m, err);
        break;
    case SN_EXPORT_IBNETDISCOVER:
        rc = sn_fabric_write_ibnet(out, m, err);
        break;
    case SN_EXPORT_FORMAT_COUNT:
        return sn_error_set(err, SN_ERR_INVALID, "unknown export format %d", (int)format);
    }
    if (rc == SN_OK && (fflush(out) != 0 || ferror(out)))
        rc = sn_error_set(err, SN_ERR_IO, "cannot write the %s export",
                          sn_export_format_name(format));
    return rc;
}
