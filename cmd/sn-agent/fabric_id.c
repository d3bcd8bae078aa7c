/*
 * The node's NVLink fabric identity (docs/agent.md, "NVLink fabric
 * identity"): the ClusterUUID and CliqueId its GPUs report, sent to snd in
 * every heartbeat as "fabric_clique": "CLUSTER_UUID/CLIQUE_ID" so that snd
 * can check the live domains against the model (servers of one supernode
 * share one clique, two supernodes never do).
 *  - real backends (nvml, nvidia-smi): `SMI -q`, read by lib/fabric's
 *    Fabric-section reader (sn_smi_fabric_parse); the first GPU with both
 *    ids gives the node's; GPUs of the node that disagree are logged. Run
 *    at start and then every FABRIC_ID_EVERY_S (the ids change only when
 *    the fabric is re-partitioned).
 *  - sim: on a supernode that is an NVLink domain across servers, a
 *    ClusterUUID per supernode, 00000000-0000-4000-8000-<index + 1 in 12
 *    hex digits>, and CliqueId 1; the fault clique-of=N reports supernode
 *    N's instead (a server cabled into the wrong rack).
 * Nothing is reported ("") when the GPUs report no ids (not an NVLink
 * domain, fabric not registered, or the tool is missing).
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/fabric.h>

#define SMI_Q_MAX (16u << 20) /* bytes of nvidia-smi -q output read */

/* Reads `cmd` into a malloc'd buffer (*len bytes), NULL when it fails. */
static char *run_text(const char *cmd, size_t *len)
{
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *bigger = cap < SMI_Q_MAX ? realloc(buf, cap * 2) : NULL;
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, p);
        if (got == 0)
            break;
        n += got;
    }
    int status = pclose(p);
    if (!buf || status != 0 || n == 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

void fabric_id_probe(const struct backend *b, char *out, size_t cap)
{
    out[0] = '\0';
    if (b->kind == BACKEND_SIM) {
        if (!b->model || b->server == SN_NONE)
            return;
        uint32_t sn = b->model->server_supernode[b->server];
        const struct sn_template *t = sn_model_supernode_template(b->model, sn);
        if (!t || b->model->supernodes[sn].n_servers < 2 ||
            (t->scaleup.domain != SN_SCALEUP_SUPERNODE && t->scaleup.domain != SN_SCALEUP_TWO_LEVEL))
            return; /* no NVLink domain across servers: the GPUs report no clique */
        if (b->faults.clique_of >= 0)
            sn = (uint32_t)b->faults.clique_of;
        snprintf(out, cap, "00000000-0000-4000-8000-%012x/1", sn + 1);
        return;
    }
    char cmd[1100];
    snprintf(cmd, sizeof(cmd), "%s -q 2>/dev/null", b->smi_command ? b->smi_command : "nvidia-smi");
    size_t len = 0;
    char *text = run_text(cmd, &len);
    struct sn_smi_fabric f = {0};
    struct sn_error err = {0};
    if (!text || sn_smi_fabric_parse(text, len, "nvidia-smi -q", &f, &err) != SN_OK) {
        free(text);
        return;
    }
    free(text);
    for (size_t i = 0; i < f.n; i++) {
        const struct sn_smi_fabric_gpu *g = &f.gpus[i];
        if (!g->has_clique || !g->cluster_uuid[0])
            continue;
        char one[128];
        snprintf(one, sizeof(one), "%s/%u", g->cluster_uuid, g->clique_id);
        if (!out[0])
            snprintf(out, cap, "%s", one);
        else if (strcmp(out, one) != 0)
            fprintf(stderr, "sn-agent: GPU %s reports NVLink clique %s, an earlier GPU %s\n",
                    g->bus_id, one, out);
    }
    sn_smi_fabric_release(&f);
}
