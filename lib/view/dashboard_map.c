/*
 * The dashboard's map (GET /v1/dashboard/map, docs/dashboard.md): per
 * supernode a tile (GPUs allocated, not up, reporting, warning, critical),
 * or with a supernode its servers and its GPUs as parallel arrays (name,
 * effective state, job, tenant, temperature, utilisation, health). A token
 * that is not admin sees job ids and tenants of its own jobs only (others
 * are -1, "another tenant").
 */
#include "view_int.h"

#include <math.h>
#include <string.h>


static int health_of(const struct sn_view_map *a, uint32_t g)
{
    return a->health ? a->health(a->ctx, g) : -1;
}

static json_t *supernode_tiles(const struct sn_view_map *a)
{
    const struct sn_control *c = a->control;
    const struct sn_model *m = c->model;
    json_t *items = json_array();
    for (uint32_t s = 0; s < m->n_supernodes; s++) {
        const struct sn_supernode *sn = &m->supernodes[s];
        uint32_t alloc = 0, not_up = 0, reporting = 0, warn = 0, crit = 0;
        for (uint32_t g = sn->first_gpu; g < sn->first_gpu + sn->n_gpus; g++) {
            alloc += a->owner[g] != 0;
            not_up += sn_control_gpu_effective(c, g) != SN_CONTROL_ADMIN_UP;
            reporting += isfinite(sn__view_reading(a->telemetry, g, SN_METRIC_TEMP_GPU)) ||
                         isfinite(sn__view_reading(a->telemetry, g, SN_METRIC_UTIL_GPU));
            int h = health_of(a, g);
            warn += h == 1;
            crit += h == 2;
        }
        char name[64];
        sn_model_supernode_name(m, s, name, sizeof(name));
        json_array_append_new(
            items, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "name", name, "servers",
                             (json_int_t)sn->n_servers, "gpus", (json_int_t)sn->n_gpus, "allocated",
                             (json_int_t)alloc, "not_up", (json_int_t)not_up, "reporting",
                             (json_int_t)reporting, "warning", (json_int_t)warn, "critical",
                             (json_int_t)crit, "first_gpu", (json_int_t)sn->first_gpu));
    }
    return items;
}

static json_t *supernode_detail(const struct sn_view_map *a, uint32_t s)
{
    const struct sn_control *c = a->control;
    const struct sn_model *m = c->model;
    const struct sn_supernode *sn = &m->supernodes[s];
    json_t *servers = json_array(), *names = json_array(), *state = json_array();
    json_t *job = json_array(), *tenant = json_array(), *temp = json_array();
    json_t *util = json_array(), *health = json_array(), *tenants = json_array();
    for (uint32_t v = sn->first_server; v < sn->first_server + sn->n_servers; v++) {
        char name[64];
        int64_t age = a->heartbeat_age_s ? a->heartbeat_age_s(a->ctx, v) : -1;
        json_array_append_new(
            servers,
            json_pack("{s:s,s:s,s:I,s:I,s:I}", "name",
                      sn_model_server_name(m, v, name, sizeof(name)), "state",
                      sn_control_admin_state_name((enum sn_control_admin_state)c->nodes[v].state),
                      "first_gpu", (json_int_t)m->server_first_gpu[v], "gpus",
                      (json_int_t)sn_model_server_spec(m, v)->gpus, "heartbeat_age_s",
                      (json_int_t)age));
    }
    for (uint32_t g = sn->first_gpu; g < sn->first_gpu + sn->n_gpus; g++) {
        char name[64];
        json_array_append_new(names, json_string(sn_model_gpu_name(m, g, name, sizeof(name))));
        /* The worse of its own state and its server's, as every view counts it. */
        json_array_append_new(state, json_integer(sn_control_gpu_effective(c, g)));
        const struct sn_control_job *j = a->owner[g] ? c->jobs[a->owner[g] - 1] : NULL;
        bool visible = j && (!a->tenant || strcmp(j->tenant, a->tenant) == 0);
        json_array_append_new(job, json_integer(j ? (visible ? j->id : -1) : 0));
        json_int_t ti = -1;
        for (size_t k = 0; visible && k < json_array_size(tenants) && ti < 0; k++)
            if (strcmp(json_string_value(json_array_get(tenants, k)), j->tenant) == 0)
                ti = (json_int_t)k;
        if (visible && ti < 0) {
            ti = (json_int_t)json_array_size(tenants);
            json_array_append_new(tenants, json_string(j->tenant));
        }
        json_array_append_new(tenant, json_integer(ti));
        bool down = sn_control_gpu_effective(c, g) == SN_CONTROL_ADMIN_DOWN;
        double tc = down ? NAN : sn__view_reading(a->telemetry, g, SN_METRIC_TEMP_GPU);
        double up = down ? NAN : sn__view_reading(a->telemetry, g, SN_METRIC_UTIL_GPU);
        json_array_append_new(temp, sn__view_num_or_null(tc));
        json_array_append_new(util, sn__view_num_or_null(up));
        json_array_append_new(health, json_integer(health_of(a, g)));
    }
    char name[64];
    return json_pack("{s:s,s:I,s:o,s:o,s:{s:o,s:o,s:o,s:o,s:o,s:o,s:o}}", "name",
                     sn_model_supernode_name(m, s, name, sizeof(name)), "first_gpu",
                     (json_int_t)sn->first_gpu, "servers", servers, "tenants", tenants, "gpus",
                     "name", names, "state", state, "job", job, "tenant", tenant, "temp_c", temp,
                     "util_pct", util, "health", health);
}

json_t *sn_view_dashboard_map(const struct sn_view_map *a)
{
    const struct sn_model *m = a->control->model;
    json_t *names = json_array();
    for (int k = 0; k < SN_CONTROL_ADMIN_STATE_COUNT; k++)
        json_array_append_new(names, json_string(sn_control_admin_state_name(
                                         (enum sn_control_admin_state)k)));
    json_t *body = json_pack("{s:s,s:I,s:I,s:I,s:o}", "cluster", a->cluster ? a->cluster : "",
                             "gpus", (json_int_t)m->n_gpus, "servers", (json_int_t)m->n_servers,
                             "supernode_count", (json_int_t)m->n_supernodes, "state_names", names);
    if (!body)
        return NULL;
    if (a->supernode == SN_NONE)
        json_object_set_new(body, "supernodes", supernode_tiles(a));
    else if (a->supernode < m->n_supernodes)
        json_object_set_new(body, "supernode", supernode_detail(a, a->supernode));
    return body;
}
