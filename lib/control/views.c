/*
 * The API's views of nodes and GPUs (GET /v1/nodes, /v1/gpus and one of
 * each): admin state with its reason, setter and time, and what the
 * control knows of the part: its identity and quarantine (offenders.c).
 * Read-only.
 */
#include "control_int.h"

#include <sn/parts.h>

#include <math.h>
#include <stdio.h>

static json_t *admin_json(const struct sn_control_admin *a, const char *name)
{
    return json_pack("{s:s,s:s,s:s?,s:s?,s:I}", "name", name, "state",
                     sn_control_admin_state_name((enum sn_control_admin_state)a->state), "reason",
                     a->reason, "by", a->actor, "since_s", (json_int_t)a->time_s);
}

json_t *sn_control_node_json(const struct sn_control *c, uint32_t server, int64_t mono_ms)
{
    const struct sn_model *m = c->model;
    char name[64], sn[64];
    json_t *o =
        admin_json(&c->nodes[server], sn_model_server_name(m, server, name, sizeof(name)));
    if (!o)
        return NULL;
    sn_model_supernode_name(m, m->server_supernode[server], sn, sizeof(sn));
    json_object_set_new(o, "supernode", json_string(sn));
    json_object_set_new(o, "id", json_integer(server));
    json_object_set_new(o, "first_gpu", json_integer(m->server_first_gpu[server]));
    uint32_t n = sn_model_server_spec(m, server)->gpus, busy = 0;
    for (uint32_t g = m->server_first_gpu[server]; g < m->server_first_gpu[server] + n; g++)
        busy += sn_sched_gpu_owner(c->sched, g) != SN_NONE;
    json_object_set_new(o, "gpus", json_integer(n));
    json_object_set_new(o, "gpus_allocated", json_integer(busy));
    int64_t seen = c->last_seen_ms[server];
    json_object_set_new(o, "heartbeat_age_s",
                        seen ? json_integer((mono_ms - seen) / 1000) : json_null());
    json_t *q = json_array(); /* its GPUs whose parts are quarantined (offenders.c) */
    for (uint32_t g = m->server_first_gpu[server]; g < m->server_first_gpu[server] + n; g++)
        if (sn_control_gpu_quarantined(c, g, NULL))
            json_array_append_new(q, json_string(sn_model_gpu_name(m, g, name, sizeof(name))));
    json_object_set_new(o, "quarantined_gpus", q);
    sn_control_node_effective_json(c, server, mono_ms, o);
    return o;
}

json_t *sn_control_gpu_json(const struct sn_control *c, uint32_t g, bool detail)
{
    const struct sn_model *m = c->model;
    char name[64];
    json_t *o = admin_json(&c->gpus[g], sn_model_gpu_name(m, g, name, sizeof(name)));
    if (!o)
        return NULL;
    json_object_set_new(o, "id", json_integer(g));
    const char *part = sn_control_gpu_part(c, g), *why = NULL;
    bool q = sn_control_gpu_quarantined(c, g, &why);
    json_object_set_new(o, "part", part ? json_string(part) : json_null());
    json_object_set_new(o, "quarantined", json_boolean(q));
    json_object_set_new(o, "quarantine_reason", why ? json_string(why) : json_null());
    sn_control_gpu_effective_json(c, g, c->clock.mono_ms, o);
    if (!detail)
        return o;
    json_object_set_new(o, "part_history", sn_control_part_gpu_json(c, g));
    char node[64];
    sn_model_server_name(m, m->gpu_server[g], node, sizeof(node));
    json_object_set_new(o, "node", json_string(node));
    json_object_set_new(o, "allocated", json_boolean(sn_control_busy(c, g, 1)));
    json_object_set_new(o, "processes",
                        json_string(sn_control_gpu_draining(c, g) ? "draining" : "none"));
    /* Per-GPU power caps (power_caps.c): the one planned now, the one its
     * agent reports it set; null: none. */
    double cap = sn_control_power_cap_w(c, g), set = sn_control_power_cap_applied_w(c, g);
    json_object_set_new(o, "power_cap_w", cap > 0 ? json_integer((json_int_t)cap) : json_null());
    json_object_set_new(o, "power_cap_applied_w",
                        set > 0 ? json_integer((json_int_t)set) : json_null());
    return o;
}

/* ---- a GPU's telemetry (GET /v1/telemetry/gpus/{gpu}) ------------------------- */

static json_t *readings_json(const struct sn_telem_gpu *g)
{
    json_t *o = json_object();
    for (int k = 0; k < SN_METRIC_COUNT; k++) {
        const struct sn_telem_reading *rd = &g->m[k];
        if (rd->status == SN_TELEM_ABSENT)
            continue;
        json_object_set_new(o, sn_metric_name((enum sn_metric)k),
                            json_pack("{s:o,s:s,s:s,s:o}", "value",
                                      isfinite(rd->value) ? json_real(rd->value) : json_null(),
                                      "unit", sn_metric_unit((enum sn_metric)k), "status",
                                      sn_telem_status_name((enum sn_telem_status)rd->status),
                                      "time_s",
                                      isfinite(rd->time_s) ? json_real(rd->time_s) : json_null()));
    }
    return o;
}

static void finding(json_t *a, const char *kind, const char *severity, const char *message)
{
    json_array_append_new(
        a, json_pack("{s:s,s:s,s:s}", "kind", kind, "severity", severity, "message", message));
}

/* Findings read from the telemetry itself: the admin state's reason, an
 * unreachable GPU, Xid events, failed diag tests. */
static json_t *telemetry_findings(const struct sn_control *c, uint32_t gpu,
                                  const struct sn_telem_gpu *g)
{
    json_t *a = json_array();
    const struct sn_control_admin *adm = &c->gpus[gpu];
    if (adm->state != SN_CONTROL_ADMIN_UP)
        finding(a, "admin", "warning",
                adm->reason ? adm->reason
                            : sn_control_admin_state_name((enum sn_control_admin_state)adm->state));
    if (g->m[SN_METRIC_REACHABLE].status == SN_TELEM_OK && g->m[SN_METRIC_REACHABLE].value == 0)
        finding(a, "unreachable", "critical", "the GPU is lost");
    unsigned long kept = g->xid_total < SN_TELEM_XID_KEEP ? g->xid_total : SN_TELEM_XID_KEEP;
    for (unsigned long i = 0; g->xids && i < kept; i++) {
        const struct sn_telem_xid_event *x =
            &g->xids[(g->xid_total - kept + i) % SN_TELEM_XID_KEEP];
        char msg[96];
        snprintf(msg, sizeof(msg), "Xid %u (%s)", x->code,
                 sn_xid_bucket_name((enum sn_xid_bucket)x->bucket));
        finding(a, "xid", x->fatal > 0 ? "critical" : "warning", msg);
    }
    for (unsigned i = 0; g->diag && i < g->n_diag; i++)
        if (g->diag[i].result == SN_DIAG_FAIL)
            finding(a, "diag", "critical", g->diag[i].test);
    return a;
}

json_t *sn_control_gpu_telemetry_json(const struct sn_control *c, uint32_t gpu,
                                      const struct sn_telem_gpu *g, const char *agent_state,
                                      json_t *health)
{
    const struct sn_model *m = c->model;
    char name[64], node[64];
    sn_model_gpu_name(m, gpu, name, sizeof(name));
    sn_model_server_name(m, m->gpu_server[gpu], node, sizeof(node));
    json_t *o = json_pack(
        "{s:s,s:I,s:s,s:s,s:s}", "name", name, "id", (json_int_t)gpu, "node", node, "state",
        sn_control_admin_state_name((enum sn_control_admin_state)c->gpus[gpu].state), "agent",
        agent_state);
    json_object_set_new(o, "metrics", readings_json(g));
    json_t *findings = telemetry_findings(c, gpu, g);
    /* The engine's findings join the list the dashboard shows. */
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(health, "findings"), i, f)
    {
        json_array_append_new(findings,
                              json_pack("{s:O,s:O,s:O}", "kind", json_object_get(f, "detector"),
                                        "severity", json_object_get(f, "severity"), "message",
                                        json_object_get(f, "evidence")));
    }
    json_object_set_new(o, "findings", findings);
    json_object_set_new(o, "health", health);
    return o;
}

int sn_control_gpu_health_level(const struct sn_telem_gpu *g, double score, int64_t cordon_below)
{
    bool seen = false;
    for (int k = 0; k < SN_METRIC_COUNT && !seen; k++)
        seen = g->m[k].status != SN_TELEM_ABSENT;
    if (score < 0 || (!seen && score >= 100))
        return -1;
    /* Critical below the cordon threshold, warning below 90 (the engine's
     * first exclusion threshold, docs/health.md). */
    double crit = cordon_below > 0 ? (double)cordon_below : 60;
    return score < crit ? 2 : score < 90 ? 1 : 0;
}
