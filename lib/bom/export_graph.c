/*
 * Exports of the wiring: Graphviz (dot), the cable ledger (CSV) and the
 * full model (JSON, schema "supernode.model/1"). See sn/export.h and
 * docs/export.md.
 *
 * The cable ledger and the JSON model stream one row per entity in ID
 * order, with O(1) memory. The dot graph draws edges between graph nodes
 * that each stand for one or more model entities; parallel links collapse
 * into one edge labelled with their count. In full detail (small clusters,
 * or one spine group on request) a graph node is a server or a switch; in
 * a summary (the default past DOT_DETAIL servers) it stands for all the
 * supernodes of a spine group, a spine group or a core group, so the graph
 * grows with the spine groups, not the supernodes; `--detail all` draws
 * one node per supernode. Edges are
 * counted by sorting (node, node) pairs, so memory is one pair per link
 * drawn, capped at DOT_MAX_PAIRS.
 */
#include <stdlib.h>
#include <string.h>

#include "bom/export_int.h"

#define DOT_DETAIL 128            /* servers drawn one by one up to this */
#define DOT_MAX_PAIRS (64u << 20) /* links counted for edges, hard cap */

/* ---- JSON strings ----------------------------------------------------- */

void sn__json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* ---- dot -------------------------------------------------------------- */

/* A graph node: kind in the top bits, ID below. G_PODSUM stands for all the
 * supernodes of one spine group. */
enum gkind { G_SERVER, G_SWITCH, G_NVLINK, G_SUPERNODE, G_POD, G_TOP, G_PODSUM };
#define GKEY(kind, id) (((uint64_t)(kind) << 32) | (id))

struct pair {
    uint64_t a, b;
};

static int cmp_pair(const void *pa, const void *pb)
{
    const struct pair *a = pa, *b = pb;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

/* What the graph draws, resolved from the options (AUTO: FULL up to
 * DOT_DETAIL servers, else SUMMARY). */
struct dot_view {
    enum sn_export_dot_detail detail; /* never AUTO */
    uint32_t pod;                     /* the spine group drawn in full (POD) */
    const struct sn__fabric_groups *g;
};

/* Supernode sn drawn server by server. */
static bool sn_full(const struct dot_view *v, uint32_t sn)
{
    return v->detail == SN_DOT_DETAIL_FULL ||
           (v->detail == SN_DOT_DETAIL_POD && v->g->sn_pod[sn] == v->pod);
}

/* Supernode sn folded into its spine group's summary node. */
static bool sn_folded(const struct dot_view *v, uint32_t sn)
{
    return (v->detail == SN_DOT_DETAIL_SUMMARY || v->detail == SN_DOT_DETAIL_POD) &&
           !sn_full(v, sn) && v->g->sn_pod[sn] != SN_NONE;
}

static uint64_t sn_node(const struct dot_view *v, uint32_t sn)
{
    return sn_folded(v, sn) ? GKEY(G_PODSUM, v->g->sn_pod[sn]) : GKEY(G_SUPERNODE, sn);
}

static uint64_t switch_node(const struct sn_model *m, const struct dot_view *v, uint32_t id)
{
    const struct sn__fabric_groups *g = v->g;
    switch ((enum sn_switch_role)m->switch_role[id]) {
    case SN_ROLE_SPINE: {
        uint32_t pod = g->spine_pod[id - m->first_spine];
        bool full = v->detail == SN_DOT_DETAIL_FULL ||
                    (v->detail == SN_DOT_DETAIL_POD && pod == v->pod);
        return full || pod == SN_NONE ? GKEY(G_SWITCH, id) : GKEY(G_POD, pod);
    }
    case SN_ROLE_CORE: {
        uint32_t top = g->core_top[id - m->first_core];
        return v->detail == SN_DOT_DETAIL_FULL || top == SN_NONE ? GKEY(G_SWITCH, id)
                                                                 : GKEY(G_TOP, top);
    }
    case SN_ROLE_SCALEUP: {
        uint32_t sn = m->switch_supernode[id];
        if (!sn_full(v, sn))
            return sn_node(v, sn);
        if (m->switch_server[id] != SN_NONE)
            return GKEY(G_SERVER, m->switch_server[id]);
        return GKEY(G_NVLINK, sn);
    }
    case SN_ROLE_SCALEUP_L2: {
        uint32_t sn = m->switch_supernode[id];
        return sn_full(v, sn) ? GKEY(G_NVLINK, sn) : sn_node(v, sn);
    }
    case SN_ROLE_LEAF:
    case SN_ROLE_MGMT:
    case SN_SWITCH_ROLE_COUNT:
        break;
    }
    uint32_t sn = m->switch_supernode[id];
    return sn_full(v, sn) ? GKEY(G_SWITCH, id) : sn_node(v, sn);
}

static uint64_t gnode(const struct sn_model *m, const struct dot_view *v, uint8_t kind,
                      uint32_t id)
{
    if (kind == SN_END_GPU || kind == SN_END_SERVER) {
        uint32_t server = kind == SN_END_GPU ? m->gpu_server[id] : id;
        uint32_t sn = m->server_supernode[server];
        return sn_full(v, sn) ? GKEY(G_SERVER, server) : sn_node(v, sn);
    }
    return switch_node(m, v, id);
}

static char *gname(const struct sn_model *m, const struct sn__fabric_groups *g, uint64_t key,
                   char *buf, size_t len)
{
    uint32_t id = (uint32_t)key;
    char sn[SN__EXPORT_NAME_LEN];
    switch ((enum gkind)(key >> 32)) {
    case G_SERVER:
        return sn_model_server_name(m, id, buf, len);
    case G_SWITCH:
        return sn_model_switch_name(m, id, buf, len);
    case G_NVLINK:
        snprintf(buf, len, "%s-nvlink", sn_model_supernode_name(m, id, sn, sizeof(sn)));
        return buf;
    case G_SUPERNODE:
        return sn_model_supernode_name(m, id, buf, len);
    case G_POD:
        return sn__pod_name(g, id, buf, len);
    case G_TOP:
        return sn__top_name(g, id, buf, len);
    case G_PODSUM: { /* a space: no generated name has one */
        char pod[64];
        sn__pod_name(g, id, pod, sizeof(pod));
        snprintf(buf, len, "%s supernodes", pod);
        return buf;
    }
    }
    return buf;
}

static void dot_supernode(FILE *out, const struct sn_model *m, uint32_t sn, bool detail)
{
    char name[SN__EXPORT_NAME_LEN], buf[SN__EXPORT_NAME_LEN];
    const struct sn_supernode *s = &m->supernodes[sn];
    sn_model_supernode_name(m, sn, name, sizeof(name));
    fprintf(out, "  subgraph \"cluster_%s\" {\n    label=\"%s: %u GPUs\";\n", name, name,
            s->n_gpus);
    if (!detail) {
        fprintf(out, "    \"%s\" [label=\"%s\\n%u servers, %u leaves\"];\n  }\n", name, name,
                s->n_servers, s->n_leaves);
        return;
    }
    for (uint32_t sv = s->first_server; sv < s->first_server + s->n_servers; sv++)
        fprintf(out, "    \"%s\";\n", sn_model_server_name(m, sv, buf, sizeof(buf)));
    if (s->n_scaleup > 0 && m->switch_server[s->first_scaleup] == SN_NONE)
        fprintf(out, "    \"%s-nvlink\" [shape=octagon, label=\"%s-nvlink\\n%u chips\"];\n", name,
                name, s->n_scaleup);
    if (s->n_scaleup_l2 > 0) /* the L2 switches of a two-level domain, as one node */
        fprintf(out, "    \"%s-nvlink\" [shape=octagon, label=\"%s-nvlink\\n%u L2 switches\"];\n",
                name, name, s->n_scaleup_l2);
    for (uint32_t l = s->first_leaf; l < s->first_leaf + s->n_leaves; l++)
        fprintf(out, "    \"%s\" [shape=ellipse];\n", sn_model_switch_name(m, l, buf, sizeof(buf)));
    for (uint32_t l = s->first_mgmt; l < s->first_mgmt + s->n_mgmt; l++)
        fprintf(out, "    \"%s\" [shape=ellipse, style=dashed];\n",
                sn_model_switch_name(m, l, buf, sizeof(buf)));
    fprintf(out, "  }\n");
}

/* One node for the supernodes of each spine group that is not drawn in
 * full: how many supernodes, GPUs, servers and leaves it holds. */
static void dot_pod_summaries(FILE *out, const struct sn_model *m, const struct dot_view *v)
{
    const struct sn__fabric_groups *g = v->g;
    char name[SN__EXPORT_NAME_LEN], first[SN__EXPORT_NAME_LEN], last[SN__EXPORT_NAME_LEN];
    for (uint32_t p = 0; p < g->n_pods; p++) {
        uint64_t gpus = 0, servers = 0, leaves = 0;
        uint32_t n = 0, lo = SN_NONE, hi = 0;
        for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
            if (g->sn_pod[sn] != p || !sn_folded(v, sn))
                continue;
            n++;
            lo = lo == SN_NONE ? sn : lo;
            hi = sn;
            gpus += m->supernodes[sn].n_gpus;
            servers += m->supernodes[sn].n_servers;
            leaves += m->supernodes[sn].n_leaves;
        }
        if (n == 0)
            continue;
        gname(m, g, GKEY(G_PODSUM, p), name, sizeof(name));
        fprintf(out,
                "  \"%s\" [shape=box3d, label=\"%s\\n%u supernodes (%s..%s)\\n%llu GPUs, %llu "
                "servers, %llu leaves\"];\n",
                name, name, n, sn_model_supernode_name(m, lo, first, sizeof(first)),
                sn_model_supernode_name(m, hi, last, sizeof(last)), (unsigned long long)gpus,
                (unsigned long long)servers, (unsigned long long)leaves);
    }
}

static void dot_fabric_nodes(FILE *out, const struct sn_model *m, const struct dot_view *v)
{
    const struct sn__fabric_groups *g = v->g;
    char buf[SN__EXPORT_NAME_LEN];
    for (uint32_t s = 0; s < m->n_spines; s++)
        if ((switch_node(m, v, m->first_spine + s) >> 32) == G_SWITCH)
            fprintf(out, "  \"%s\" [shape=ellipse];\n",
                    sn_model_switch_name(m, m->first_spine + s, buf, sizeof(buf)));
    for (uint32_t c = 0; c < m->n_cores; c++)
        if ((switch_node(m, v, m->first_core + c) >> 32) == G_SWITCH)
            fprintf(out, "  \"%s\" [shape=ellipse];\n",
                    sn_model_switch_name(m, m->first_core + c, buf, sizeof(buf)));
    if (v->detail == SN_DOT_DETAIL_FULL)
        return;
    for (uint32_t p = 0; p < g->n_pods; p++) {
        if (v->detail == SN_DOT_DETAIL_POD && p == v->pod)
            continue;
        uint32_t n = 0;
        for (uint32_t s = 0; s < m->n_spines; s++)
            n += g->spine_pod[s] == p;
        if (n > 0)
            fprintf(out, "  \"%s\" [shape=ellipse, label=\"%s\\n%u spines\"];\n",
                    sn__pod_name(g, p, buf, sizeof(buf)), buf, n);
    }
    for (uint32_t t = 0; t < g->n_tops; t++) {
        uint32_t n = 0;
        for (uint32_t c = 0; c < m->n_cores; c++)
            n += g->core_top[c] == t;
        fprintf(out, "  \"%s\" [shape=ellipse, label=\"%s\\n%u cores\"];\n",
                sn__top_name(g, t, buf, sizeof(buf)), buf, n);
    }
}

static enum sn_err dot_edges(FILE *out, const struct sn_model *m, const struct dot_view *v,
                             struct sn_error *err)
{
    /* Links inside supernodes are drawn only where a supernode is drawn
     * in full, and only between different graph nodes (never a GPU to
     * its own server's NVSwitch). */
    bool any_full = false;
    for (uint32_t sn = 0; sn < m->n_supernodes && !any_full; sn++)
        any_full = sn_full(v, sn);
    uint64_t first = any_full ? 0 : m->tier_first[SN_TIER_LEAF_SPINE];
    uint64_t last = any_full ? m->n_links : m->tier_first[SN_TIER_SPINE_CORE + 1];
    if (last - first > DOT_MAX_PAIRS)
        return sn_error_set(err, SN_ERR_LIMIT, "%llu links are too many to draw",
                            (unsigned long long)(last - first));
    struct pair *pairs = malloc((last - first + 1) * sizeof(*pairs));
    if (!pairs)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory drawing the graph");
    size_t n = 0;
    for (uint64_t i = first; i < last; i++) {
        const struct sn_link *l = &m->links[i];
        uint64_t a = gnode(m, v, l->a_kind, l->a_id);
        uint64_t b = gnode(m, v, l->b_kind, l->b_id);
        if (a != b)
            pairs[n++] = (struct pair){a, b};
    }
    qsort(pairs, n, sizeof(*pairs), cmp_pair);
    char an[SN__EXPORT_NAME_LEN], bn[SN__EXPORT_NAME_LEN];
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && pairs[j].a == pairs[i].a && pairs[j].b == pairs[i].b)
            j++;
        fprintf(out, "  \"%s\" -- \"%s\" [label=\"%zu\"];\n",
                gname(m, v->g, pairs[i].a, an, sizeof(an)),
                gname(m, v->g, pairs[i].b, bn, sizeof(bn)), j - i);
        i = j;
    }
    free(pairs);
    return SN_OK;
}

static const char *view_comment(const struct dot_view *v)
{
    switch (v->detail) {
    case SN_DOT_DETAIL_FULL:
        return "every server and switch";
    case SN_DOT_DETAIL_SUPERNODES:
        return "aggregated: supernodes, spine and core groups";
    case SN_DOT_DETAIL_POD:
        return "one spine group in full, the others summarised";
    case SN_DOT_DETAIL_SUMMARY:
    case SN_DOT_DETAIL_AUTO:
        break;
    }
    return "summary: one node per spine group's supernodes, spine and core groups";
}

enum sn_err sn_export_dot(FILE *out, const struct sn_model *m,
                          const struct sn_export_dot_options *opt, struct sn_error *err)
{
    struct sn__fabric_groups g;
    enum sn_err rc = sn__fabric_groups_build(m, &g, err);
    if (rc != SN_OK)
        return rc;
    struct dot_view v = {.detail = opt ? opt->detail : SN_DOT_DETAIL_AUTO,
                         .pod = opt ? opt->pod : 0,
                         .g = &g};
    if (v.detail == SN_DOT_DETAIL_AUTO)
        v.detail = m->n_servers <= DOT_DETAIL ? SN_DOT_DETAIL_FULL : SN_DOT_DETAIL_SUMMARY;
    if (v.detail == SN_DOT_DETAIL_POD && v.pod >= g.n_pods) {
        if (g.n_pods == 0)
            rc = sn_error_set(err, SN_ERR_INVALID,
                              "--detail pod=%u: the fabric has no spine group (no spine tier): "
                              "use --detail full or all",
                              v.pod);
        else
            rc = sn_error_set(err, SN_ERR_INVALID,
                              "--detail pod=%u: the fabric has %u spine group%s: expected pod=0"
                              "%s%.0u",
                              v.pod, g.n_pods, g.n_pods == 1 ? "" : "s", g.n_pods > 1 ? ".." : "",
                              g.n_pods > 1 ? g.n_pods - 1 : 0);
        sn__fabric_groups_release(&g);
        return rc;
    }
    fputs("graph ", out);
    sn__json_string(out, m->spec->name ? m->spec->name : "cluster");
    fprintf(out, " {\n  // %s; edge labels count parallel links\n", view_comment(&v));
    fprintf(out, "  graph [rankdir=BT, fontname=\"Helvetica\"];\n"
                 "  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n");
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        if (!sn_folded(&v, sn))
            dot_supernode(out, m, sn, sn_full(&v, sn));
    dot_pod_summaries(out, m, &v);
    dot_fabric_nodes(out, m, &v);
    rc = dot_edges(out, m, &v, err);
    fputs("}\n", out);
    sn__fabric_groups_release(&g);
    return rc;
}

enum sn_err sn__export_dot(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    return sn_export_dot(out, m, NULL, err);
}

/* ---- cable ledger ------------------------------------------------------ */

/* A CSV field (RFC 4180): quoted when it holds a comma, quote or newline. */
static void csv_field(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

enum sn_err sn__export_cables(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    const struct sn_spec *spec = m->spec;
    char a[SN__EXPORT_NAME_LEN], b[SN__EXPORT_NAME_LEN], lbl[2 * SN__EXPORT_NAME_LEN + 4];
    (void)err;
    fputs("label,from,to,type,length_class,tier,medium,length_m\n", out);
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        bool cable = l->cable < spec->n_cable_types;
        bool length = l->length_class < spec->n_length_classes;
        sn_model_endpoint_name(m, l->a_kind, l->a_id, l->a_port, l->tier, a, sizeof(a));
        sn_model_endpoint_name(m, l->b_kind, l->b_id, l->b_port, l->tier, b, sizeof(b));
        snprintf(lbl, sizeof(lbl), "%s--%s", a, b);
        csv_field(out, lbl);
        fputc(',', out);
        csv_field(out, a);
        fputc(',', out);
        csv_field(out, b);
        fputc(',', out);
        csv_field(out, cable ? spec->cable_types[l->cable].name : "");
        fputc(',', out);
        csv_field(out, length ? spec->length_classes[l->length_class].name : "");
        fprintf(out, ",%s,%s,", sn_link_tier_name((enum sn_link_tier)l->tier),
                cable ? sn_cable_medium_name(spec->cable_types[l->cable].medium) : "");
        if (length)
            fprintf(out, "%g", spec->length_classes[l->length_class].length_m);
        fputc('\n', out);
    }
    return SN_OK;
}

/* ---- JSON model -------------------------------------------------------- */

static void json_id(FILE *out, uint32_t id)
{
    if (id == SN_NONE)
        fputs("null", out);
    else
        fprintf(out, "%u", id);
}

static void json_supernodes(FILE *out, const struct sn_model *m)
{
    char name[SN__EXPORT_NAME_LEN];
    fputs("  \"supernodes\": [", out);
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) {
        const struct sn_supernode *s = &m->supernodes[sn];
        fprintf(out, "%s\n    {\"id\": %u, \"name\": ", sn ? "," : "", sn);
        sn__json_string(out, sn_model_supernode_name(m, sn, name, sizeof(name)));
        fputs(", \"template\": ", out);
        sn__json_string(out, sn_model_supernode_template(m, sn)->name);
        fputs(", \"pool\": ", out);
        if (s->pool != SN_NONE)
            sn__json_string(out, m->spec->pools[s->pool].name);
        else
            fputs("null", out);
        fprintf(out,
                ", \"servers\": [%u, %u], \"gpus\": [%u, %u], \"scaleup\": [%u, %u], "
                "\"leaves\": [%u, %u], \"mgmt\": [%u, %u], \"racks\": [%u, %u], "
                "\"power_domains\": [%u, %u], \"cooling_loops\": [%u, %u]",
                s->first_server, s->n_servers, s->first_gpu, s->n_gpus, s->first_scaleup,
                s->n_scaleup, s->first_leaf, s->n_leaves, s->first_mgmt, s->n_mgmt, s->first_rack,
                s->n_racks, s->first_power_domain, s->n_power_domains, s->first_cooling_loop,
                s->n_cooling_loops);
        if (s->n_scaleup_l2 > 0) /* two-level scale-up domains only */
            fprintf(out, ", \"scaleup_l2\": [%u, %u]", s->first_scaleup_l2, s->n_scaleup_l2);
        fputs("}", out);
    }
    fputs("\n  ],\n", out);
}

static void json_servers_gpus(FILE *out, const struct sn_model *m)
{
    char name[SN__EXPORT_NAME_LEN];
    fputs("  \"servers\": [", out);
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        fprintf(out, "%s\n    {\"id\": %u, \"name\": ", sv ? "," : "", sv);
        sn__json_string(out, sn_model_server_name(m, sv, name, sizeof(name)));
        fputs(", \"model\": ", out);
        sn__json_string(out, sn_model_server_spec(m, sv)->name);
        fprintf(out, ", \"supernode\": %u, \"first_gpu\": %u, \"gpus\": %u, \"rack\": ",
                m->server_supernode[sv], m->server_first_gpu[sv],
                sn_model_server_spec(m, sv)->gpus);
        json_id(out, m->server_rack[sv]);
        fputs(", \"power\": [", out);
        json_id(out, m->server_power[0][sv]);
        fputs(", ", out);
        json_id(out, m->server_power[1][sv]);
        fputs("]}", out);
    }
    fputs("\n  ],\n  \"gpus\": [", out);
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        fprintf(out, "%s\n    {\"id\": %u, \"name\": ", g ? "," : "", g);
        sn__json_string(out, sn_model_gpu_name(m, g, name, sizeof(name)));
        fprintf(out, ", \"server\": %u, \"supernode\": %u, \"leaf\": ", m->gpu_server[g],
                m->gpu_supernode[g]);
        json_id(out, m->gpu_leaf[g]);
        fputs("}", out);
    }
    fputs("\n  ],\n", out);
}

static void json_switches(FILE *out, const struct sn_model *m)
{
    char name[SN__EXPORT_NAME_LEN];
    fputs("  \"switches\": [", out);
    for (uint32_t sw = 0; sw < m->n_switches; sw++) {
        fprintf(out, "%s\n    {\"id\": %u, \"name\": ", sw ? "," : "", sw);
        sn__json_string(out, sn_model_switch_name(m, sw, name, sizeof(name)));
        fprintf(out, ", \"role\": \"%s\", \"model\": ",
                sn_switch_role_name((enum sn_switch_role)m->switch_role[sw]));
        sn__json_string(out, sn_model_switch_spec(m, sw)->name);
        fputs(", \"supernode\": ", out);
        json_id(out, m->switch_supernode[sw]);
        fputs(", \"server\": ", out);
        json_id(out, m->switch_server[sw]);
        fputs(", \"rack\": ", out);
        json_id(out, m->switch_rack[sw]);
        fputs(", \"power\": ", out);
        json_id(out, m->switch_power[sw]);
        fputs(", \"peer\": ", out);
        json_id(out, m->switch_peer[sw]);
        fprintf(out, ", \"ports\": %u, \"ports_used\": %u}", sn_model_switch_spec(m, sw)->ports,
                m->switch_ports_used[sw]);
    }
    fputs("\n  ],\n", out);
}

static void json_domains(FILE *out, const struct sn_model *m)
{
    char name[SN__EXPORT_NAME_LEN];
    fputs("  \"racks\": [", out);
    for (uint32_t r = 0; r < m->n_racks; r++) {
        fprintf(out, "%s\n    {\"id\": %u, \"name\": ", r ? "," : "", r);
        sn__json_string(out, sn_model_rack_name(m, r, name, sizeof(name)));
        fputs(", \"supernode\": ", out);
        json_id(out, m->rack_supernode[r]);
        fputs(", \"cooling_loop\": ", out);
        json_id(out, m->rack_cooling_loop[r]);
        fputs("}", out);
    }
    fputs("\n  ],\n  \"power_domains\": [", out);
    for (uint32_t p = 0; p < m->n_power_domains; p++) {
        const struct sn_power_domain_spec *ps = sn_model_power_domain_spec(m, p);
        fprintf(out, "%s\n    {\"id\": %u, \"name\": ", p ? "," : "", p);
        sn__json_string(out, sn_model_power_domain_name(m, p, name, sizeof(name)));
        fputs(", \"supernode\": ", out);
        json_id(out, m->power_domain_supernode[p]);
        fprintf(out, ", \"kind\": \"%s\", \"capacity_w\": %.17g}", sn_power_kind_name(ps->kind),
                ps->capacity_w);
    }
    fputs("\n  ],\n  \"cooling_loops\": [", out);
    for (uint32_t l = 0; l < m->n_cooling_loops; l++) {
        const struct sn_cooling_loop_spec *ls = sn_model_cooling_loop_spec(m, l);
        fprintf(out, "%s\n    {\"id\": %u, \"name\": ", l ? "," : "", l);
        sn__json_string(out, sn_model_cooling_loop_name(m, l, name, sizeof(name)));
        fprintf(out, ", \"supernode\": %u, \"kind\": \"%s\", \"capacity_w\": %.17g}",
                m->cooling_loop_supernode[l], sn_cooling_kind_name(ls->kind), ls->capacity_w);
    }
    fputs("\n  ],\n", out);
}

static const char *const end_kinds[] = {
#define SN_X(name, text) text,
    SN_ENDPOINT_KIND_LIST(SN_X)
#undef SN_X
};

static void json_links(FILE *out, const struct sn_model *m)
{
    const struct sn_spec *spec = m->spec;
    char lbl[2 * SN__EXPORT_NAME_LEN + 4];
    fputs("  \"links\": [", out);
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *l = &m->links[i];
        fprintf(out,
                "%s\n    {\"id\": %llu, \"tier\": \"%s\", \"a\": \"%s\", \"a_id\": %u, "
                "\"a_port\": %u, \"b\": \"%s\", \"b_id\": %u, \"b_port\": %u, \"cable\": ",
                i ? "," : "", (unsigned long long)i, sn_link_tier_name((enum sn_link_tier)l->tier),
                l->a_kind < SN_ENDPOINT_KIND_COUNT ? end_kinds[l->a_kind] : "unknown", l->a_id,
                l->a_port, l->b_kind < SN_ENDPOINT_KIND_COUNT ? end_kinds[l->b_kind] : "unknown",
                l->b_id, l->b_port);
        if (l->cable < spec->n_cable_types)
            sn__json_string(out, spec->cable_types[l->cable].name);
        else
            fputs("null", out);
        fputs(", \"length_class\": ", out);
        if (l->length_class < spec->n_length_classes)
            sn__json_string(out, spec->length_classes[l->length_class].name);
        else
            fputs("null", out);
        fputs(", \"label\": ", out);
        sn__json_string(out, sn_model_cable_label(m, l, lbl, sizeof(lbl)));
        fputs("}", out);
    }
    fputs("\n  ]\n", out);
}

enum sn_err sn__export_json(FILE *out, const struct sn_model *m, struct sn_error *err)
{
    (void)err;
    fputs("{\n  \"schema\": \"supernode.model/1\",\n  \"name\": ", out);
    sn__json_string(out, m->spec->name ? m->spec->name : "");
    fprintf(out,
            ",\n  \"counts\": {\"supernodes\": %u, \"servers\": %u, \"gpus\": %u, "
            "\"switches\": %u, \"racks\": %u, \"power_domains\": %u, \"cooling_loops\": %u, "
            "\"links\": %llu},\n",
            m->n_supernodes, m->n_servers, m->n_gpus, m->n_switches, m->n_racks, m->n_power_domains,
            m->n_cooling_loops, (unsigned long long)m->n_links);
    json_supernodes(out, m);
    json_servers_gpus(out, m);
    json_switches(out, m);
    json_domains(out, m);
    json_links(out, m);
    fputs("}\n", out);
    return SN_OK;
}
