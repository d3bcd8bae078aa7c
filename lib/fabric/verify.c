/*
 * `sn design verify`: discovered fabric against the model's cables.
 *
 * The switch side is authoritative for cabling: a switch port the
 * discovery shows is looked up at (switch, port - 1) in the model's patch
 * panel (fabric_index.c) and the far end found is compared with the far
 * end designed there. Every finding names the cable label of `sn design
 * export --format cables` (sn_model_cable_label()) when a designed cable is
 * involved, else the entity; the report is sorted by (label, kind, detail)
 * so the same inputs always print the same bytes. The core is pure: it
 * reads records the readers made and never touches files.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fabric/verify_int.h"

#include <stdio.h>
#include <strings.h>

#include <sn/cliques.h>

static const char *const finding_names[] = {
#define SN_X(id, text, summary) text,
    SN_FABRIC_FINDING_LIST(SN_X)
#undef SN_X
};
static const char *const finding_summaries[] = {
#define SN_X(id, text, summary) summary,
    SN_FABRIC_FINDING_LIST(SN_X)
#undef SN_X
};

const char *sn_fabric_finding_name(enum sn_fabric_finding_kind k)
{
    return (unsigned)k < SN_FABRIC_FINDING_COUNT ? finding_names[k] : "unknown";
}

const char *sn_fabric_finding_summary(enum sn_fabric_finding_kind k)
{
    return (unsigned)k < SN_FABRIC_FINDING_COUNT ? finding_summaries[k] : "";
}

void sn_fabric_report_release(struct sn_fabric_report *r)
{
    if (!r)
        return;
    free(r->v);
    memset(r, 0, sizeof(*r));
}

struct ctx {
    const struct sn_model *m;
    struct sn__fabric_index ix;
    struct sn_fabric_report *r;
    uint8_t *seen;       /* [n_links]: 1 a discovery showed the cable, 2 its port
                          * holds another (reported as miscabled) */
    uint64_t *gpu_link;  /* [n_gpus]: first scale-up link of each GPU, built on
                          * first use; SN__NO_LINK for none */
    uint64_t *srv_base;  /* [n_servers + 1], built on first LLDP use: each server's */
    uint64_t *srv_links; /* node-leaf and management links (CSR) */
    bool nomem;
};

static void finding(struct ctx *c, enum sn_fabric_finding_kind kind, const char *label,
                    const char *source, unsigned line, const char *fmt, ...) SN_PRINTF(6, 7);

static void finding(struct ctx *c, enum sn_fabric_finding_kind kind, const char *label,
                    const char *source, unsigned line, const char *fmt, ...)
{
    struct sn_fabric_report *r = c->r;
    if (r->n >= SN_FABRIC_MAX_FINDINGS) {
        r->dropped++;
        return;
    }
    if (r->n >= r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 32;
        void *nv = realloc(r->v, ncap * sizeof(*r->v));
        if (!nv) {
            c->nomem = true;
            return;
        }
        r->v = nv;
        r->cap = ncap;
    }
    struct sn_fabric_finding *f = &r->v[r->n++];
    memset(f, 0, sizeof(*f));
    f->kind = kind;
    snprintf(f->label, sizeof(f->label), "%s", label);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
    va_end(ap);
    if (source && line)
        snprintf(f->where, sizeof(f->where), "%s:%u", source, line);
    else if (source)
        snprintf(f->where, sizeof(f->where), "%s", source);
}

static char *label_of(const struct ctx *c, uint64_t link, char *buf, size_t len)
{
    return sn_model_cable_label(c->m, &c->m->links[link], buf, len);
}

static char *end_name(const struct ctx *c, uint8_t kind, uint32_t id, uint16_t port, uint8_t tier,
                      char *buf, size_t len)
{
    return sn_model_endpoint_name(c->m, kind, id, port, tier, buf, len);
}

/* ---- names in discovery text --------------------------------------------- */

/* The switch an ibnetdiscover description names: "MF0;<name>:<model>/U1"
 * gives <name>; otherwise the description up to its first blank. */
static void ib_switch_name(const char *desc, char *out, size_t len)
{
    const char *semi = strchr(desc, ';');
    const char *start = semi ? semi + 1 : desc;
    size_t n = strcspn(start, semi ? ":" : " \t");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), start);
}

/* The host of a CA description "<host> <device>"; host up to the first
 * blank or '.'. */
static void host_name(const char *desc, char *out, size_t len)
{
    size_t n = strcspn(desc, " \t.");
    snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), desc);
}

/* The trailing number of a port name ("swp12", "Ethernet1/12", "12");
 * 0 when none. */
static unsigned long trailing_number(const char *s)
{
    size_t n = strlen(s), k = n;
    while (k > 0 && isdigit((unsigned char)s[k - 1]))
        k--;
    if (k == n || n - k > 9)
        return 0;
    return strtoul(s + k, NULL, 10);
}

/* ---- ibnetdiscover --------------------------------------------------------- */

static bool is_ib_switch(const struct sn_model *m, uint32_t sw)
{
    enum sn_switch_role role = (enum sn_switch_role)m->switch_role[sw];
    return sn_model_switch_spec(m, sw)->kind == SN_SWITCH_INFINIBAND &&
           (role == SN_ROLE_LEAF || role == SN_ROLE_SPINE || role == SN_ROLE_CORE ||
            role == SN_ROLE_MGMT);
}

/* The far end designed on link l, seen from switch sw. */
static void far_end(const struct sn_link *l, uint32_t sw, uint8_t *kind, uint32_t *id,
                    uint16_t *port)
{
    bool from_a = l->a_kind == SN_END_SWITCH && l->a_id == sw;
    *kind = from_a ? l->b_kind : l->a_kind;
    *id = from_a ? l->b_id : l->a_id;
    *port = from_a ? l->b_port : l->a_port;
}

static void check_rate(struct ctx *c, uint64_t link, const struct sn_ibnet_link *d,
                       const char *source)
{
    if (d->width == 0 || d->lane_bits_per_s <= 0)
        return;
    double want = sn__fabric_link_speed(c->m, &c->m->links[link]) * 8;
    double got = d->width * d->lane_bits_per_s;
    if (want <= 0 || fabs(got - want) <= 0.02 * want)
        return;
    char label[192];
    finding(c, SN_FABRIC_WRONG_RATE, label_of(c, link, label, sizeof(label)), source, d->line,
            "designed %.0f Gb/s (the slower end's port), up at %s = %.0f Gb/s", want / 1e9, d->rate,
            got / 1e9);
}

/* One port line of a switch the model names. */
static void ib_port(struct ctx *c, uint32_t sw, const struct sn_ibnet_link *d, const char *source)
{
    char label[192], want[192], self[192];
    uint64_t link = d->port > 0 ? sn__fabric_link_at(&c->ix, sw, d->port - 1) : SN__NO_LINK;
    if (link == SN__NO_LINK) {
        snprintf(self, sizeof(self), "%s:p%u", c->ix.sw_name[sw], d->port > 0 ? d->port - 1 : 0);
        finding(c, SN_FABRIC_UNEXPECTED_LINK, self, source, d->line,
                "port %u (model p%u) is unused in the design; it reaches \"%s\" port %u", d->port,
                d->port > 0 ? d->port - 1 : 0, d->peer_desc, d->peer_port);
        return;
    }
    const struct sn_link *l = &c->m->links[link];
    uint8_t kind;
    uint32_t id;
    uint16_t port;
    far_end(l, sw, &kind, &id, &port);
    char name[SN_FABRIC_DESC_LEN + 1];
    bool ok;
    if (d->peer_guid[0] == 'S') {
        ib_switch_name(d->peer_desc, name, sizeof(name));
        ok = kind == SN_END_SWITCH && sn__fabric_find_switch(&c->ix, name) == id &&
             d->peer_port == (uint32_t)port + 1;
    } else {
        host_name(d->peer_desc, name, sizeof(name));
        ok = kind == SN_END_SERVER && sn_model_find_server(c->m, name) == id;
    }
    if (!ok) {
        c->seen[link] = 2; /* its port is taken: reported here, not again as missing */
        finding(c, SN_FABRIC_MISCABLED, label_of(c, link, label, sizeof(label)), source, d->line,
                "%s port %u should reach %s, reaches \"%s\" port %u", c->ix.sw_name[sw], d->port,
                end_name(c, kind, id, port, l->tier, want, sizeof(want)), d->peer_desc,
                d->peer_port);
        return;
    }
    if (!c->seen[link])
        check_rate(c, link, d, source);
    c->seen[link] = 1;
    c->r->checked_links++;
}

static enum sn_err verify_ibnet(struct ctx *c, const struct sn_ibnet *ib, const char *source)
{
    const struct sn_model *m = c->m;
    uint32_t *node_sw = malloc((ib->n_nodes + 1) * sizeof(uint32_t));
    uint8_t *shown = calloc(m->n_switches + 1, 1);
    if (!node_sw || !shown) {
        free(node_sw);
        free(shown);
        return SN_ERR_NOMEM;
    }
    char name[SN_FABRIC_DESC_LEN + 1];
    for (size_t i = 0; i < ib->n_nodes; i++) {
        const struct sn_ibnet_node *n = &ib->nodes[i];
        node_sw[i] = SN_NONE;
        if (n->type == 'S') {
            ib_switch_name(n->desc, name, sizeof(name));
            node_sw[i] = sn__fabric_find_switch(&c->ix, name);
            if (node_sw[i] != SN_NONE)
                shown[node_sw[i]] = 1;
        } else {
            host_name(n->desc, name, sizeof(name));
        }
        if (n->type != 'R' &&
            (n->type == 'S' ? node_sw[i] == SN_NONE : sn_model_find_server(m, name) == SN_NONE))
            finding(c, SN_FABRIC_UNKNOWN_NODE, n->desc[0] ? n->desc : n->guid, source, n->line,
                    "%s %s (\"%s\") is not in the design", n->type == 'S' ? "switch" : "host",
                    n->guid, name);
    }
    for (size_t i = 0; i < ib->n_links; i++) {
        uint32_t sw = node_sw[ib->links[i].node];
        if (sw != SN_NONE)
            ib_port(c, sw, &ib->links[i], source);
    }
    for (uint32_t sw = 0; sw < m->n_switches; sw++) {
        if (!is_ib_switch(m, sw))
            continue;
        if (!shown[sw]) {
            finding(c, SN_FABRIC_MISSING_SWITCH, c->ix.sw_name[sw], source, 0,
                    "designed %s switch not in the ibnetdiscover output",
                    sn_switch_role_name((enum sn_switch_role)m->switch_role[sw]));
            continue;
        }
        for (uint64_t p = 0; p < c->ix.port_base[sw + 1] - c->ix.port_base[sw]; p++) {
            uint64_t link = c->ix.port_link[c->ix.port_base[sw] + p];
            char label[192];
            if (link != SN__NO_LINK && !c->seen[link])
                finding(c, SN_FABRIC_MISSING_LINK, label_of(c, link, label, sizeof(label)), source,
                        0, "no link on %s port %llu (model p%llu)", c->ix.sw_name[sw],
                        (unsigned long long)p + 1, (unsigned long long)p);
        }
    }
    free(node_sw);
    free(shown);
    return SN_OK;
}

/* ---- lldpctl --------------------------------------------------------------- */

static bool is_eth_switch(const struct sn_model *m, uint32_t id)
{
    return sn_model_switch_spec(m, id)->kind == SN_SWITCH_ETHERNET;
}

static void lldp_neighbor(struct ctx *c, uint32_t server, const struct sn_lldp_neighbor *nb,
                          const char *source)
{
    char sysname[SN_FABRIC_NAME_LEN], label[192], want[192], self[192];
    host_name(nb->sysname, sysname, sizeof(sysname));
    uint32_t sw = sn__fabric_find_switch(&c->ix, sysname);
    if (sw == SN_NONE) {
        finding(c, SN_FABRIC_UNKNOWN_NODE, nb->sysname[0] ? nb->sysname : nb->port_id, source, 0,
                "neighbour of %s on %s is not a switch of the design", nb->local_if,
                sn_model_server_name(c->m, server, self, sizeof(self)));
        return;
    }
    unsigned long port = trailing_number(nb->port_id);
    if (port == 0)
        port = trailing_number(nb->port_descr);
    uint64_t link = port > 0 ? sn__fabric_link_at(&c->ix, sw, port - 1) : SN__NO_LINK;
    sn_model_server_name(c->m, server, self, sizeof(self));
    if (link == SN__NO_LINK) {
        snprintf(label, sizeof(label), "%s:p%lu", c->ix.sw_name[sw], port > 0 ? port - 1 : 0);
        finding(c, SN_FABRIC_UNEXPECTED_LINK, label, source, 0,
                "%s %s reaches %s port '%s', a port the design leaves unused", self, nb->local_if,
                sysname, nb->port_id);
        return;
    }
    const struct sn_link *l = &c->m->links[link];
    uint8_t kind;
    uint32_t id;
    uint16_t p;
    far_end(l, sw, &kind, &id, &p);
    if (kind != SN_END_SERVER || id != server) {
        c->seen[link] = 2;
        finding(c, SN_FABRIC_MISCABLED, label_of(c, link, label, sizeof(label)), source, 0,
                "%s port '%s' should reach %s, reaches %s %s", sysname, nb->port_id,
                end_name(c, kind, id, p, l->tier, want, sizeof(want)), self, nb->local_if);
        return;
    }
    c->seen[link] = 1;
    c->r->checked_links++;
}

/* Each server's node-leaf and management links (the server is their a
 * end), as CSR arrays; false when out of memory. */
static bool server_links_build(struct ctx *c)
{
    const struct sn_model *m = c->m;
    static const enum sn_link_tier tiers[] = {SN_TIER_NODE_LEAF, SN_TIER_MGMT};
    c->srv_base = calloc((size_t)m->n_servers + 2, sizeof(uint64_t));
    uint64_t total = 0;
    for (size_t t = 0; c->srv_base && t < 2; t++)
        total += m->tier_first[tiers[t] + 1] - m->tier_first[tiers[t]];
    c->srv_links = c->srv_base ? malloc((total + 1) * sizeof(uint64_t)) : NULL;
    if (!c->srv_links) {
        free(c->srv_base);
        c->srv_base = NULL;
        c->nomem = true;
        return false;
    }
    for (size_t t = 0; t < 2; t++) /* counts, shifted by one for the prefix sum */
        for (uint64_t i = m->tier_first[tiers[t]]; i < m->tier_first[tiers[t] + 1]; i++)
            if (m->links[i].a_kind == SN_END_SERVER)
                c->srv_base[m->links[i].a_id + 2]++;
    for (uint32_t s = 0; s <= m->n_servers; s++)
        c->srv_base[s + 1] += c->srv_base[s];
    for (size_t t = 0; t < 2; t++) /* srv_base[s + 1] is the fill cursor of s */
        for (uint64_t i = m->tier_first[tiers[t]]; i < m->tier_first[tiers[t] + 1]; i++)
            if (m->links[i].a_kind == SN_END_SERVER)
                c->srv_links[c->srv_base[m->links[i].a_id + 1]++] = i;
    return true;
}

static void verify_lldp(struct ctx *c, const struct sn_fabric_host_lldp *h)
{
    const struct sn_model *m = c->m;
    for (size_t i = 0; i < h->lldp->n; i++)
        lldp_neighbor(c, h->server, &h->lldp->v[i], h->source);
    /* The host's designed cables to Ethernet switches that LLDP did not show. */
    if (!c->srv_base && !server_links_build(c))
        return;
    for (uint64_t k = c->srv_base[h->server]; k < c->srv_base[h->server + 1]; k++) {
        uint64_t i = c->srv_links[k];
        const struct sn_link *l = &m->links[i];
        if (c->seen[i] || l->b_kind != SN_END_SWITCH || !is_eth_switch(m, l->b_id))
            continue;
        char label[192];
        finding(c, SN_FABRIC_MISSING_LINK, label_of(c, i, label, sizeof(label)), h->source, 0,
                "no LLDP neighbour on %s port %u", c->ix.sw_name[l->b_id], l->b_port + 1u);
    }
}

/* ---- GPUs and cliques ------------------------------------------------------ */

static uint64_t first_scaleup_link(struct ctx *c, uint32_t gpu)
{
    const struct sn_model *m = c->m;
    if (!c->gpu_link) {
        c->gpu_link = malloc(((size_t)m->n_gpus + 1) * sizeof(uint64_t));
        if (!c->gpu_link) {
            c->nomem = true;
            return SN__NO_LINK;
        }
        for (uint32_t g = 0; g < m->n_gpus; g++)
            c->gpu_link[g] = SN__NO_LINK;
        for (uint64_t i = m->tier_first[SN_TIER_SCALEUP + 1]; i-- > m->tier_first[SN_TIER_SCALEUP];)
            if (m->links[i].a_kind == SN_END_GPU)
                c->gpu_link[m->links[i].a_id] = i; /* backwards: the first one wins */
    }
    return c->gpu_link[gpu];
}

/* The cable label of a GPU's first scale-up link, else the GPU's name. */
static char *gpu_label(struct ctx *c, uint32_t gpu, char *buf, size_t len)
{
    uint64_t l = first_scaleup_link(c, gpu);
    return l == SN__NO_LINK ? sn_model_gpu_name(c->m, gpu, buf, len) : label_of(c, l, buf, len);
}

static void gpu_count(struct ctx *c, uint32_t server, size_t shown, const char *tool,
                      const char *source)
{
    uint32_t want = sn_model_server_spec(c->m, server)->gpus;
    if (shown >= want)
        return;
    char label[192], name[96];
    sn_model_server_name(c->m, server, name, sizeof(name));
    for (uint32_t g = (uint32_t)shown; g < want; g++) {
        uint32_t gpu = c->m->server_first_gpu[server] + g;
        finding(c, SN_FABRIC_MISSING_GPU, gpu_label(c, gpu, label, sizeof(label)), source, 0,
                "%s on %s shows %zu of its %u GPUs (GPU %u absent)", tool, name, shown, want, g);
    }
}

struct clique {
    char uuid[SN_FABRIC_NAME_LEN];
    uint32_t id;
    bool known;
};

static bool same_clique(const struct clique *a, const struct clique *b)
{
    return a->known && b->known && a->id == b->id && strcmp(a->uuid, b->uuid) == 0;
}

/* The clique one host's GPUs report; unknown when none or they disagree
 * (a disagreement is itself a finding). */
static struct clique host_clique(struct ctx *c, const struct sn_fabric_host_smi *h)
{
    struct clique q = {0};
    char name[96];
    for (size_t i = 0; i < h->smi->n; i++) {
        const struct sn_smi_fabric_gpu *g = &h->smi->gpus[i];
        if (!g->has_clique)
            continue;
        struct clique one = {.id = g->clique_id, .known = true};
        snprintf(one.uuid, sizeof(one.uuid), "%s", g->cluster_uuid);
        if (!q.known) {
            q = one;
        } else if (!same_clique(&q, &one)) {
            finding(c, SN_FABRIC_WRONG_CLIQUE,
                    sn_model_server_name(c->m, h->server, name, sizeof(name)), h->source, g->line,
                    "GPUs of one server in two cliques: %s/%u and %s/%u", q.uuid, q.id, one.uuid,
                    one.id);
            q.known = false;
            return q;
        }
    }
    return q;
}

struct host_ref {
    uint32_t supernode;
    size_t host; /* index into ev->smi */
};

static int cmp_host_ref(const void *a, const void *b)
{
    const struct host_ref *x = a, *y = b;
    if (x->supernode != y->supernode)
        return x->supernode < y->supernode ? -1 : 1;
    return (x->host > y->host) - (x->host < y->host);
}

/* The reports of one supernode's hosts [first, end) of refs: the clique
 * most of them share (ties to the first host), and every host in another.
 * Returns the host whose clique is the reference, SIZE_MAX if none. */
static size_t supernode_cliques(struct ctx *c, const struct sn_fabric_evidence *ev,
                                const struct clique *per, const struct host_ref *refs, size_t first,
                                size_t end)
{
    size_t best = SIZE_MAX, best_votes = 0;
    for (size_t j = first; j < end; j++) {
        size_t votes = 0;
        for (size_t k = first; k < end; k++)
            votes += same_clique(&per[refs[j].host], &per[refs[k].host]);
        if (votes > best_votes) {
            best = j;
            best_votes = votes;
        }
    }
    if (best == SIZE_MAX)
        return SIZE_MAX;
    const struct clique *ref = &per[refs[best].host];
    char name[96], sname[96];
    sn_model_supernode_name(c->m, refs[first].supernode, sname, sizeof(sname));
    for (size_t j = first; j < end; j++) {
        const struct clique *q = &per[refs[j].host];
        if (!q->known || same_clique(q, ref))
            continue;
        const struct sn_fabric_host_smi *h = &ev->smi[refs[j].host];
        finding(c, SN_FABRIC_WRONG_CLIQUE,
                sn_model_server_name(c->m, h->server, name, sizeof(name)), h->source, 0,
                "clique %s/%u, while %zu of %s's reporting servers share %s/%u", q->uuid, q->id,
                best_votes, sname, ref->uuid, ref->id);
    }
    return refs[best].host;
}

struct domain_clique {
    uint32_t supernode;
    const struct clique *q;
};

static int cmp_domain_clique(const void *a, const void *b)
{
    const struct domain_clique *x = a, *y = b;
    int c = strcmp(x->q->uuid, y->q->uuid);
    if (c)
        return c;
    if (x->q->id != y->q->id)
        return x->q->id < y->q->id ? -1 : 1;
    return (x->supernode > y->supernode) - (x->supernode < y->supernode);
}

/* Two supernodes the design keeps apart whose servers report one clique:
 * the NVLink fabric joins what the design calls two domains. */
static void merged_domains(struct ctx *c, struct domain_clique *d, size_t n, const char *source)
{
    if (n < 2)
        return;
    qsort(d, n, sizeof(*d), cmp_domain_clique);
    char a[96], b[96];
    for (size_t i = 1; i < n; i++)
        if (same_clique(d[i - 1].q, d[i].q))
            finding(c, SN_FABRIC_WRONG_CLIQUE,
                    sn_model_supernode_name(c->m, d[i].supernode, b, sizeof(b)), source, 0,
                    "reports clique %s/%u, as %s does: the design has them as two NVLink "
                    "domains",
                    d[i].q->uuid, d[i].q->id,
                    sn_model_supernode_name(c->m, d[i - 1].supernode, a, sizeof(a)));
}

/* Host i's clique against the spec inventory's declaration for its server
 * (sn/cliques.h), when there is one: a mismatch is a finding naming both
 * and the declaration's place. Returns whether the host joins the
 * majority vote: not when it mismatched or has its own server entry. */
static bool declared_clique(struct ctx *c, const struct sn_cliques *decl,
                            const struct sn_fabric_host_smi *h, const struct clique *q)
{
    bool own = false;
    const struct sn_clique_decl *d = decl ? sn_cliques_declaration(decl, h->server, &own) : NULL;
    if (!d)
        return true;
    char got[SN_FABRIC_NAME_LEN + 16], name[96];
    snprintf(got, sizeof(got), "%s/%u", q->uuid, q->id);
    if (strcasecmp(got, d->clique) == 0)
        return !own;
    finding(c, SN_FABRIC_WRONG_CLIQUE, sn_model_server_name(c->m, h->server, name, sizeof(name)),
            h->source, 0, "clique %s, the inventory declares %s for %s (%s:%u:%u)", got,
            d->clique, d->name, c->m->spec->file, d->loc.line, d->loc.column);
    return false;
}

/* Per supernode that is one NVLink domain, its hosts' cliques against the
 * one the spec's inventory declares, else the one most of them share.
 * O(hosts log hosts + sum of hosts per domain^2). */
static enum sn_err verify_cliques(struct ctx *c, const struct sn_fabric_evidence *ev,
                                  struct sn_error *err)
{
    const struct sn_model *m = c->m;
    struct sn_cliques *decl = NULL;
    if (m->spec->inventory.n_cliques) {
        if (!(decl = sn_cliques_new(m)))
            return sn_error_set(err, SN_ERR_NOMEM, "out of memory verifying the fabric");
        enum sn_err rc = sn_cliques_declare(decl, &m->spec->inventory, m->spec->file, err);
        if (rc != SN_OK) {
            sn_cliques_free(decl);
            return rc;
        }
    }
    struct clique *per = calloc(ev->n_smi + 1, sizeof(*per));
    struct host_ref *refs = calloc(ev->n_smi + 1, sizeof(*refs));
    if (!per || !refs) {
        free(per);
        free(refs);
        sn_cliques_free(decl);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory verifying the fabric");
    }
    size_t n = 0;
    for (size_t i = 0; i < ev->n_smi; i++) {
        per[i] = host_clique(c, &ev->smi[i]);
        uint32_t sn = m->server_supernode[ev->smi[i].server];
        if (per[i].known && sn_model_supernode_template(m, sn)->scaleup.domain != SN_SCALEUP_SERVER &&
            declared_clique(c, decl, &ev->smi[i], &per[i]))
            refs[n++] = (struct host_ref){sn, i};
    }
    sn_cliques_free(decl);
    qsort(refs, n, sizeof(*refs), cmp_host_ref);
    struct domain_clique *dom = calloc(n + 1, sizeof(*dom));
    if (!dom) {
        free(per);
        free(refs);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory verifying the fabric");
    }
    size_t n_dom = 0;
    for (size_t first = 0, end; first < n; first = end) {
        for (end = first + 1; end < n && refs[end].supernode == refs[first].supernode; end++)
            ;
        size_t ref = supernode_cliques(c, ev, per, refs, first, end);
        if (ref != SIZE_MAX)
            dom[n_dom++] = (struct domain_clique){refs[first].supernode, &per[ref]};
    }
    merged_domains(c, dom, n_dom, n ? ev->smi[refs[0].host].source : NULL);
    free(dom);
    free(per);
    free(refs);
    return SN_OK;
}

static void verify_topo(struct ctx *c, const struct sn_fabric_host_topo *h)
{
    const struct sn_model *m = c->m;
    const struct sn_telem_topo *t = h->topo;
    size_t gpus = 0;
    for (unsigned i = 0; i < t->n; i++)
        gpus += t->dev[i].gpu_index >= 0;
    gpu_count(c, h->server, gpus, "nvidia-smi topo -m", h->source);
    uint32_t sn = m->server_supernode[h->server];
    if (sn_model_supernode_template(m, sn)->scaleup.switch_model == SN_NONE)
        return; /* no NVSwitch: direct GPU meshes are not checked pair by pair */
    const struct sn_server_model *sm = sn_model_server_spec(m, h->server);
    unsigned want = m->spec->gpu_models[sm->gpu_model].scaleup_links;
    char label[192];
    for (unsigned i = 0; i < t->n; i++)
        for (unsigned j = i + 1; j < t->n; j++) {
            const struct sn_telem_topo_cell *cell = &t->cell[i][j];
            int gi = t->dev[i].gpu_index, gj = t->dev[j].gpu_index;
            if (gi < 0 || gj < 0 || (uint32_t)gi >= sm->gpus || cell->kind == SN_TOPO_UNKNOWN ||
                (cell->kind == SN_TOPO_NV && cell->nvlinks >= want))
                continue;
            uint32_t gpu = m->server_first_gpu[h->server] + (uint32_t)gi;
            char got[16];
            if (cell->kind == SN_TOPO_NV)
                snprintf(got, sizeof(got), "NV%u", cell->nvlinks);
            else
                snprintf(got, sizeof(got), "%s", sn_topo_kind_name((enum sn_topo_kind)cell->kind));
            finding(c, SN_FABRIC_NVLINK_DEGRADED, gpu_label(c, gpu, label, sizeof(label)),
                    h->source, 0, "GPU%d-GPU%d joined by %s, the design NV%u", gi, gj, got, want);
        }
}

/* ---- the report ------------------------------------------------------------- */

static int cmp_finding(const void *a, const void *b)
{
    const struct sn_fabric_finding *x = a, *y = b;
    int c = strcmp(x->label, y->label);
    if (c)
        return c;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    c = strcmp(x->detail, y->detail);
    return c ? c : strcmp(x->where, y->where);
}

enum sn_err sn_fabric_verify(const struct sn_model *m, const struct sn_fabric_evidence *ev,
                             struct sn_fabric_report *out, struct sn_error *err)
{
    memset(out, 0, sizeof(*out));
    struct ctx c = {.m = m, .r = out};
    enum sn_err rc = sn__fabric_index_build(m, &c.ix, err);
    if (rc != SN_OK)
        return rc;
    c.seen = calloc(m->n_links + 1, 1);
    if (!c.seen)
        goto nomem;
    if (ev->ibnet && verify_ibnet(&c, ev->ibnet, ev->ibnet_source) != SN_OK)
        goto nomem;
    for (size_t i = 0; i < ev->n_lldp; i++)
        verify_lldp(&c, &ev->lldp[i]);
    for (size_t i = 0; i < ev->n_smi; i++) {
        /* "Attached GPUs" is what the driver sees; GPU headings, when the
         * text lacks that line (an excerpt cut after the first GPU still
         * says how many are attached). */
        const struct sn_smi_fabric *f = ev->smi[i].smi;
        gpu_count(&c, ev->smi[i].server, f->attached ? f->attached : f->n, "nvidia-smi -q",
                  ev->smi[i].source);
    }
    if (ev->n_smi && (rc = verify_cliques(&c, ev, err)) != SN_OK)
        goto fail;
    for (size_t i = 0; i < ev->n_topo; i++)
        verify_topo(&c, &ev->topo[i]);
    out->checked_servers = ev->n_smi + ev->n_topo;
    if (c.nomem)
        goto nomem;
    if (out->n > 1)
        qsort(out->v, out->n, sizeof(*out->v), cmp_finding);
    free(c.seen);
    free(c.gpu_link);
    free(c.srv_base);
    free(c.srv_links);
    sn__fabric_index_release(&c.ix);
    return SN_OK;
nomem:
    rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory verifying the fabric");
fail:
    free(c.seen);
    free(c.gpu_link);
    free(c.srv_base);
    free(c.srv_links);
    sn__fabric_index_release(&c.ix);
    sn_fabric_report_release(out);
    return rc;
}
