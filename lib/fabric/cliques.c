/*
 * The agents' NVLink clique reports and the rule they must keep
 * (sn/cliques.h). A changed report costs O(servers of its supernode ^ 2);
 * a check O(supernodes).
 */
#include <sn/cliques.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sn_cliques {
    const struct sn_model *m;
    char (*clique)[SN_CLIQUE_MAX];   /* by server: "" until reported */
    char (*majority)[SN_CLIQUE_MAX]; /* by supernode: the clique most of its servers report */
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
    free(c);
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
            votes += strcmp(c->clique[k], c->clique[i]) == 0;
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
    if (strcmp(c->clique[s], c->majority[sn]) != 0) {
        sn_model_supernode_name(m, sn, snn, sizeof(snn));
        snprintf(why, cap, "%s reports NVLink clique %.60s, most servers of its supernode %s %.60s",
                 a, c->clique[s], snn, c->majority[sn]);
        return;
    }
    for (uint32_t o = 0; o < m->n_supernodes; o++)
        if (o != sn && strcmp(c->majority[o], c->clique[s]) == 0) {
            sn_model_supernode_name(m, o, snn, sizeof(snn));
            snprintf(why, cap, "%s reports NVLink clique %.60s, the clique of supernode %s", a,
                     c->clique[s], snn);
            return;
        }
}
