/*
 * NVLink domain identities as the agents report them (issue 26 item 1;
 * docs/agent.md "NVLink fabric identity"): each heartbeat may carry
 * "fabric_clique": "CLUSTER_UUID/CLIQUE_ID", the ClusterUUID and CliqueId
 * of the node's GPUs (nvidia-smi -q's Fabric section, read by lib/fabric;
 * the sim backend reports its supernode's). snd keeps the last one per
 * node and checks it when it changes against the rule of the model: the
 * servers of one supernode (one NVLink domain) share one clique, and no
 * two supernodes share one. Without a declared identity the supernode's
 * clique is what most of its servers report; a node that reports another,
 * or the clique of another supernode, is a mismatch (GET /v1/agents/{node}:
 * fabric_mismatch, worked out when asked, so the order of the reports does
 * not matter), logged once when its report changes.
 *
 * Tables by server and supernode, allocated at the first report. A changed
 * report costs O(servers of its supernode ^ 2); a check O(supernodes).
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLIQUE_MAX 96

struct node_clique {
    char clique[CLIQUE_MAX]; /* "" until reported */
};

static struct node_clique *cliques; /* by server; owned by the state thread */
static char (*majority)[CLIQUE_MAX]; /* by supernode: the clique most of its servers report */
static uint32_t n_cliques;

/* The clique most of supernode sn's reporting servers report (ties: the
 * smallest text, so the answer does not depend on the order of reports). */
static void update_majority(const struct sn_model *m, uint32_t sn)
{
    const struct sn_supernode *x = &m->supernodes[sn];
    uint32_t best = 0;
    majority[sn][0] = '\0';
    for (uint32_t i = x->first_server; i < x->first_server + x->n_servers; i++) {
        if (!cliques[i].clique[0])
            continue;
        uint32_t votes = 0;
        for (uint32_t k = x->first_server; k < x->first_server + x->n_servers; k++)
            votes += strcmp(cliques[k].clique, cliques[i].clique) == 0;
        if (votes > best || (votes == best && strcmp(cliques[i].clique, majority[sn]) < 0)) {
            best = votes;
            snprintf(majority[sn], CLIQUE_MAX, "%s", cliques[i].clique);
        }
    }
}

/* Why server s's report breaks the rule, into why ("" when it does not):
 * it differs from what most servers of its supernode report, or it is
 * what most servers of another supernode report. */
static void check(const struct snd *d, uint32_t s, char *why, size_t cap)
{
    const struct sn_model *m = d->model;
    uint32_t sn = m->server_supernode[s];
    char a[64], snn[64];
    why[0] = '\0';
    if (s >= n_cliques || !cliques[s].clique[0])
        return;
    sn_model_server_name(m, s, a, sizeof(a));
    if (strcmp(cliques[s].clique, majority[sn]) != 0) {
        sn_model_supernode_name(m, sn, snn, sizeof(snn));
        snprintf(why, cap, "%s reports NVLink clique %.60s, most servers of its supernode %s %.60s",
                 a, cliques[s].clique, snn, majority[sn]);
        return;
    }
    for (uint32_t o = 0; o < m->n_supernodes; o++)
        if (o != sn && strcmp(majority[o], cliques[s].clique) == 0) {
            sn_model_supernode_name(m, o, snn, sizeof(snn));
            snprintf(why, cap, "%s reports NVLink clique %.60s, the clique of supernode %s", a,
                     cliques[s].clique, snn);
            return;
        }
}

void snd_fabric_clique_report(struct snd *d, uint32_t s, const char *clique)
{
    const struct sn_model *m = d->model;
    if (!cliques) {
        cliques = calloc(m->n_servers ? m->n_servers : 1, sizeof(*cliques));
        majority = calloc(m->n_supernodes ? m->n_supernodes : 1, sizeof(*majority));
        n_cliques = cliques && majority ? m->n_servers : 0;
    }
    if (s >= n_cliques || strcmp(cliques[s].clique, clique) == 0)
        return;
    snprintf(cliques[s].clique, sizeof(cliques[s].clique), "%s", clique);
    update_majority(m, m->server_supernode[s]);
    char why[512];
    check(d, s, why, sizeof(why));
    if (why[0])
        fprintf(stderr, "snd: fabric mismatch: %s\n", why);
}

void snd_fabric_clique_json(const struct snd *d, uint32_t s, json_t *o)
{
    bool known = s < n_cliques && cliques[s].clique[0];
    char why[512] = "";
    if (known)
        check(d, s, why, sizeof(why));
    json_object_set_new(o, "fabric_clique", known ? json_string(cliques[s].clique) : json_null());
    json_object_set_new(o, "fabric_mismatch", why[0] ? json_string(why) : json_null());
}
