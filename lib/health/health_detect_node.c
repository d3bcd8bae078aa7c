/*
 * lib/health/health_detect_node.c: node health checks (LBNL NHC and the
 * Azure HPC NHC built on it). A failed check is the site's own verdict that
 * the node must not run jobs (NHC marks it offline in Slurm/PBS), so each
 * failed check of a server is one node-check-failed finding on it, with
 * the check, its message and Azure's FaultCode as evidence. A host the
 * inventory does not resolve is reported as unresolved, never dropped.
 *
 * Node-level dcgmi diag results (a test naming no GPU: the Deployment
 * checks, "Fail - All" without the Metadata row that counts the GPUs, a
 * 4.x overall result whose GPU rows were cut) land on the server when the
 * store knows no GPU of its host; otherwise they were copied to each GPU
 * and the GPU detectors report them. Either way a non-Pass result is never
 * "0 findings".
 */
#include "health/health_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool host_has_gpu(const struct sn_telem_store *st, uint32_t h)
{
    uint32_t n = sn_telem_store_gpu_count(st);
    for (uint32_t i = 0; i < n; i++) {
        const struct sn_telem_gpu *g = sn_telem_store_gpu(st, i);
        if (g->host == h && !g->merged)
            return true;
    }
    return false;
}

static void node_diag(struct sn__health_ctx *c, uint32_t h)
{
    unsigned n;
    const struct sn_telem_diag_entry *e = sn_telem_store_node_diag(c->st, h, &n);
    if (!n || host_has_gpu(c->st, h))
        return;
    char text[320];
    bool any = false;
    for (unsigned k = 0; k < n; k++)
        any |= sn__health_diag_text(&e[k], text, sizeof(text)) != SN_DET_COUNT;
    if (!any)
        return;
    uint32_t sv = c->host_server[h];
    if (sv == SN_NONE) {
        snprintf(text, sizeof(text), "dcgmi diag line %u", e[0].line);
        (void)sn__health_server(c, sn_telem_store_host_name(c->st, h), text, 0);
        return;
    }
    for (unsigned k = 0; k < n; k++) {
        enum sn_detector d = sn__health_diag_text(&e[k], text, sizeof(text));
        if (d != SN_DET_COUNT)
            sn__health_add(c, d, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, NAN, NAN, "%s", text);
    }
}

/* The number after "key " in s, or -1. */
static long number_after(const char *s, const char *key)
{
    const char *at = strstr(s, key);
    if (!at)
        return -1;
    at += strlen(key);
    long v = 0;
    if (*at < '0' || *at > '9')
        return -1;
    while (*at >= '0' && *at <= '9' && v < 1000000)
        v = v * 10 + (*at++ - '0');
    return v;
}

/* A Fabric Manager SXid (ingest_fmlog.c) of server sv: on the chip its
 * physical id maps to, else on the server as the kernel's SXids are. The
 * mapping (docs/health.md "Fabric Manager events"): FM runs where the
 * NVSwitches are managed (an HGX host; an NVL72's switch trays), and names
 * a chip by its physical id, a number the vendor's board map gives and the
 * spec does not hold (DGX A100 prints 8-13). Physical id P is chip P mod n
 * of the n scale-up chips the model puts in server sv (in the model's
 * order): the same physical id is always the same chip, which is not
 * always the chip of that number on the board. A server with no chips of
 * its own (an NVL72 compute tray: its FM log, if any, is not the trays'),
 * or a record without a physical id, lands on the server. */
static void fm_sxid(struct sn__health_ctx *c, uint32_t sv, const struct sn_telem_check_entry *e,
                    const char *where)
{
    const struct sn_model *m = c->m;
    bool fatal = strcmp(e->fault_code, "fatal") == 0;
    long phys = number_after(e->check, "physical id ");
    uint32_t first = SN_NONE, n = 0;
    for (uint32_t sw = 0; sw < m->n_switches; sw++)
        if (m->switch_role[sw] == SN_ROLE_SCALEUP && m->switch_server[sw] == sv) {
            if (first == SN_NONE)
                first = sw;
            n++;
        }
    if (phys < 0 || !n) {
        sn__health_add(c, fatal ? SN_DET_SXID_FATAL : SN_DET_SXID_NONFATAL, SN_HEALTH_ENT_SERVER,
                       sv, SN_NONE, sv, NAN, NAN, "%s: fabricmanager %s: %s", where, e->check,
                       e->message);
        return;
    }
    uint32_t k = (uint32_t)phys % n, sw = first;
    for (uint32_t seen = 0; sw < m->n_switches; sw++)
        if (m->switch_role[sw] == SN_ROLE_SCALEUP && m->switch_server[sw] == sv && seen++ == k)
            break;
    char chip[64];
    sn_model_switch_name(m, sw, chip, sizeof(chip));
    sn__health_add(c, fatal ? SN_DET_FM_SXID_FATAL : SN_DET_FM_SXID, SN_HEALTH_ENT_SWITCH, sw,
                   SN_NONE, SN_NONE, NAN, NAN, "%s: %s %s -> %s (chip %u of %u): %s", where,
                   e->fault_code, e->check, chip, k, n, e->message);
}

void sn__health_detect_node(struct sn__health_ctx *c)
{
    uint32_t nh = sn_telem_store_host_count(c->st);
    for (uint32_t h = 0; h < nh; h++) {
        node_diag(c, h);
        unsigned n;
        const struct sn_telem_check_entry *e = sn_telem_store_node_checks(c->st, h, &n);
        if (!n)
            continue;
        char w[160];
        sn__health_where(c->st, e[0].source, e[0].line, w, sizeof(w));
        uint32_t sv = c->host_server[h];
        if (sv == SN_NONE) {
            (void)sn__health_server(c, sn_telem_store_host_name(c->st, h), w, 0);
            continue;
        }
        for (unsigned k = 0; k < n; k++) {
            sn__health_where(c->st, e[k].source, e[k].line, w, sizeof(w));
            if (strcmp(e[k].tool, "fmlog") == 0) {
                fm_sxid(c, sv, &e[k], w);
                continue;
            }
            if (strcmp(e[k].tool, "sxid") == 0) {
                /* An NVSwitch SXid (ingest_kmsg.c): the driver's own
                 * Fatal/Non-fatal word grades it. */
                sn__health_add(c,
                               strcmp(e[k].fault_code, "fatal") == 0 ? SN_DET_SXID_FATAL
                                                                      : SN_DET_SXID_NONFATAL,
                               SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, NAN, NAN, "%s: %s: %s", w,
                               e[k].check, e[k].message);
                continue;
            }
            sn__health_add(c, SN_DET_NODE_CHECK, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, NAN, NAN,
                           "%s: %s %s%s%s%s%s", w, e[k].tool, e[k].check[0] ? e[k].check : "check",
                           e[k].message[0] ? ": " : " failed", e[k].message,
                           e[k].fault_code[0] ? " FaultCode " : "", e[k].fault_code);
        }
    }
}
