/*
 * The agents' NVLink clique reports and the rule they must keep
 * (sn/cliques.h). A changed report costs O(servers of its supernode ^ 2);
 * a check O(supernodes). Declarations (the spec's inventory `cliques`) are
 * borrowed from the spec: per server the index of the entry that applies
 * (its own, else its supernode's), per supernode that of its own entry.
 */
#include <sn/cliques.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sn_cliques {
    const struct sn_model *m;
    char (*clique)[SN_CLIQUE_MAX];   /* by server: "" until reported */
    char (*majority)[SN_CLIQUE_MAX]; /* by supernode: the clique most of its servers report */
    const struct sn_inventory_spec *inv; /* borrowed; NULL until declared */
    const char *file;                    /* the spec, for messages */
    uint32_t *server_decl;               /* by server: index in inv->cliques or SN_NONE */
    uint32_t *sn_decl;                   /* by supernode: likewise */
};

struct sn_cliques *sn_cliques_new(const struct sn_model *m)
{
    struct sn_cliques *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->m = m;
    c->clique = calloc(m->n_servers ? m->n_servers : 1, sizeof(*c->clique));
    c->majority = calloc(m->n_supernodes ? m->n_supernodes : 1, sizeof(*c->majority));
    if (!c->clique || !c->majority) {
        sn_cliques_free(c);
        return NULL;
    }
    return c;
}

void sn_cliques_free(struct sn_cliques *c)
{
    if (!c)
        return;
    free(c->clique);
    free(c->majority);
    free(c->server_decl);
    free(c->sn_decl);
    free(c);
}

/* The supernode named name, or SN_NONE. */
static uint32_t find_supernode(const struct sn_model *m, const char *name)
{
    char buf[64];
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        if (strcmp(sn_model_supernode_name(m, sn, buf, sizeof(buf)), name) == 0)
            return sn;
    return SN_NONE;
}

enum sn_err sn_cliques_declare(struct sn_cliques *c, const struct sn_inventory_spec *inv,
                               const char *file, struct sn_error *err)
{
    const struct sn_model *m = c->m;
    uint32_t *srv = malloc((m->n_servers ? m->n_servers : 1) * sizeof(*srv));
    uint32_t *sup = malloc((m->n_supernodes ? m->n_supernodes : 1) * sizeof(*sup));
    bool *own = calloc(m->n_servers ? m->n_servers : 1, sizeof(*own));
    enum sn_err rc = SN_OK;
    if (!srv || !sup || !own) {
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory declaring NVLink cliques");
        goto free_tables;
    }
    for (uint32_t s = 0; s < m->n_servers; s++)
        srv[s] = SN_NONE;
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++)
        sup[sn] = SN_NONE;
    for (uint32_t i = 0; i < inv->n_cliques; i++) {
        const struct sn_clique_decl *d = &inv->cliques[i];
        uint32_t sn = find_supernode(m, d->name), s;
        if (sn != SN_NONE) {
            sup[sn] = i;
            const struct sn_supernode *x = &m->supernodes[sn];
            for (s = x->first_server; s < x->first_server + x->n_servers; s++)
                if (!own[s])
                    srv[s] = i;
        } else if ((s = sn_model_find_server(m, d->name)) != SN_NONE) {
            srv[s] = i;
            own[s] = true;
        } else {
            char first[64] = "sn00";
            if (m->n_supernodes)
                sn_model_supernode_name(m, 0, first, sizeof(first));
            rc = sn_error_set_at(err, SN_ERR_INVALID, d->name_loc.line, d->name_loc.column,
                                 "%s:%u:%u: inventory clique for '%s' names no supernode or "
                                 "server of the model (expected a name such as '%s')",
                                 file, d->name_loc.line, d->name_loc.column, d->name, first);
            goto free_tables;
        }
    }
    free(c->server_decl);
    free(c->sn_decl);
    c->server_decl = srv;
    c->sn_decl = sup;
    c->inv = inv;
    c->file = file;
    free(own);
    return SN_OK;
free_tables:
    free(srv);
    free(sup);
    free(own);
    return rc;
}

enum sn_err sn_cliques_validate(const struct sn_model *m, struct sn_error *err)
{
    if (!m->spec->inventory.n_cliques)
        return SN_OK;
    struct sn_cliques *c = sn_cliques_new(m);
    if (!c)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory checking NVLink cliques");
    enum sn_err rc = sn_cliques_declare(c, &m->spec->inventory, m->spec->file, err);
    sn_cliques_free(c);
    return rc;
}

const struct sn_clique_decl *sn_cliques_declaration(const struct sn_cliques *c, uint32_t s,
                                                    bool *own)
{
    if (!c->inv || s >= c->m->n_servers || c->server_decl[s] == SN_NONE)
        return NULL;
    uint32_t i = c->server_decl[s], sn = c->m->server_supernode[s];
    if (own)
        *own = c->sn_decl[sn] != i;
    return &c->inv->cliques[i];
}

const char *sn_cliques_declared(const struct sn_cliques *c, uint32_t s)
{
    if (!c->inv || s >= c->m->n_servers || c->server_decl[s] == SN_NONE)
        return NULL;
    return c->inv->cliques[c->server_decl[s]].clique;
}

/* The reference clique of supernode sn: its declaration, else its
 * majority ("" when neither). */
static const char *reference(const struct sn_cliques *c, uint32_t sn)
{
    if (c->inv && c->sn_decl[sn] != SN_NONE)
        return c->inv->cliques[c->sn_decl[sn]].clique;
    return c->majority[sn];
}

/* Cliques are equal when their text is, the UUID's hex digits case-blind. */
static bool same(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

static void update_majority(struct sn_cliques *c, uint32_t sn)
{
    const struct sn_supernode *x = &c->m->supernodes[sn];
    uint32_t best = 0;
    c->majority[sn][0] = '\0';
    for (uint32_t i = x->first_server; i < x->first_server + x->n_servers; i++) {
        if (!c->clique[i][0])
            continue;
        uint32_t votes = 0;
        for (uint32_t k = x->first_server; k < x->first_server + x->n_servers; k++)
            votes += same(c->clique[k], c->clique[i]);
        if (votes > best || (votes == best && strcmp(c->clique[i], c->majority[sn]) < 0)) {
            best = votes;
            snprintf(c->majority[sn], SN_CLIQUE_MAX, "%s", c->clique[i]);
        }
    }
}

bool sn_cliques_report(struct sn_cliques *c, uint32_t s, const char *clique)
{
    if (s >= c->m->n_servers || strcmp(c->clique[s], clique) == 0)
        return false;
    snprintf(c->clique[s], SN_CLIQUE_MAX, "%s", clique);
    update_majority(c, c->m->server_supernode[s]);
    return true;
}

const char *sn_cliques_of(const struct sn_cliques *c, uint32_t s)
{
    return s < c->m->n_servers && c->clique[s][0] ? c->clique[s] : NULL;
}

void sn_cliques_check(const struct sn_cliques *c, uint32_t s, char *why, size_t cap)
{
    const struct sn_model *m = c->m;
    why[0] = '\0';
    if (s >= m->n_servers || !c->clique[s][0])
        return;
    uint32_t sn = m->server_supernode[s];
    char a[64], snn[64];
    sn_model_server_name(m, s, a, sizeof(a));
    const char *declared = sn_cliques_declared(c, s);
    if (declared) {
        if (same(c->clique[s], declared))
            return;
        const struct sn_clique_decl *d = &c->inv->cliques[c->server_decl[s]];
        snprintf(why, cap,
                 "%s reports NVLink clique %.60s, the inventory declares %.60s for %s (%s:%u:%u)",
                 a, c->clique[s], declared, d->name, c->file, d->loc.line, d->loc.column);
        return;
    }
    if (!same(c->clique[s], c->majority[sn])) {
        sn_model_supernode_name(m, sn, snn, sizeof(snn));
        snprintf(why, cap, "%s reports NVLink clique %.60s, most servers of its supernode %s %.60s",
                 a, c->clique[s], snn, c->majority[sn]);
        return;
    }
    for (uint32_t o = 0; o < m->n_supernodes; o++)
        if (o != sn && reference(c, o)[0] && same(reference(c, o), c->clique[s])) {
            sn_model_supernode_name(m, o, snn, sizeof(snn));
            snprintf(why, cap, "%s reports NVLink clique %.60s, the clique of supernode %s", a,
                     c->clique[s], snn);
            return;
        }
}
