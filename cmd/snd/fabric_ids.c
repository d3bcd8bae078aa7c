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
 * The table and the rule are lib/fabric/cliques.c (sn/cliques.h); this
 * file logs a mismatch and adds the fields to the agent's JSON.
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/cliques.h>

static struct sn_cliques *cliques; /* made at the first report; owned by the state thread */

void snd_fabric_clique_report(struct snd *d, uint32_t s, const char *clique)
{
    if (!cliques && !(cliques = sn_cliques_new(d->model)))
        return;
    if (!sn_cliques_report(cliques, s, clique))
        return;
    char why[512];
    sn_cliques_check(cliques, s, why, sizeof(why));
    if (why[0])
        fprintf(stderr, "snd: fabric mismatch: %s\n", why);
}

void snd_fabric_clique_json(const struct snd *d, uint32_t s, json_t *o)
{
    (void)d;
    const char *known = cliques ? sn_cliques_of(cliques, s) : NULL;
    char why[512] = "";
    if (known)
        sn_cliques_check(cliques, s, why, sizeof(why));
    json_object_set_new(o, "fabric_clique", known ? json_string(known) : json_null());
    json_object_set_new(o, "fabric_mismatch", why[0] ? json_string(why) : json_null());
}
