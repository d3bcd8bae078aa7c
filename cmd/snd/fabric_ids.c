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
 * not matter), logged once when its report changes. The spec's inventory
 * may declare the identities (`inventory: cliques:`, per supernode or
 * server); a declared clique is the reference instead of the majority, and
 * GET /v1/agents/{node} shows it as fabric_clique_declared. A declaration
 * naming no supernode or server stops snd at start (exit 2).
 *
 * The table and the rule are lib/fabric/cliques.c (sn/cliques.h); this
 * file logs a mismatch and adds the fields to the agent's JSON.
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/cliques.h>

static struct sn_cliques *cliques; /* made at start; owned by the state thread */

enum sn_err snd_fabric_ids_init(struct snd *d, struct sn_error *err)
{
    if (!(cliques = sn_cliques_new(d->model)))
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory for the NVLink clique table");
    if (!d->spec->inventory.n_cliques)
        return SN_OK;
    enum sn_err rc = sn_cliques_declare(cliques, &d->spec->inventory, d->spec->file, err);
    if (rc != SN_OK) {
        sn_cliques_free(cliques);
        cliques = NULL;
    }
    return rc;
}

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
    const char *declared = cliques ? sn_cliques_declared(cliques, s) : NULL;
    json_object_set_new(o, "fabric_clique", known ? json_string(known) : json_null());
    json_object_set_new(o, "fabric_clique_declared",
                        declared ? json_string(declared) : json_null());
    json_object_set_new(o, "fabric_mismatch", why[0] ? json_string(why) : json_null());
}
