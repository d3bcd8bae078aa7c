/*
 * The API's views of nodes and GPUs (GET /v1/nodes, /v1/gpus and one of
 * each): admin state with its reason, setter and time, and what the
 * control knows of the part: its identity and quarantine (offenders.c).
 * Read-only.
 */
#include "control_int.h"

#include <sn/parts.h>

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
    if (!detail)
        return o;
    json_object_set_new(o, "part_history", sn_control_part_gpu_json(c, g));
    char node[64];
    sn_model_server_name(m, m->gpu_server[g], node, sizeof(node));
    json_object_set_new(o, "node", json_string(node));
    json_object_set_new(o, "allocated", json_boolean(sn_control_busy(c, g, 1)));
    json_object_set_new(o, "processes",
                        json_string(sn_control_gpu_draining(c, g) ? "draining" : "none"));
    return o;
}
