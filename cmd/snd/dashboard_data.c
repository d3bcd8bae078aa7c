/*
 * The dashboard's whole-cluster reads, for a canvas heat map that draws every
 * GPU at 131,072 GPUs, and the per-GPU telemetry history behind its charts.
 *
 *   GET /v1/dashboard/layout        the hierarchy, once per page load: pods
 *                                   (supernodes under one spine group; the
 *                                   whole fabric when it has fewer than three
 *                                   tiers), supernodes, servers, in model
 *                                   order, as parallel arrays.
 *   GET /v1/dashboard/gpus?metric=M every GPU's admin state, job and health
 *                                   score, plus one telemetry metric M
 *                                   (temp|power|util|clock|mem) when asked,
 *                                   as parallel arrays in GPU order, and the
 *                                   visible jobs (name, tenant, GPUs).
 *   GET /v1/telemetry/gpus/{gpu}/history
 *                                   the GPU's time series (sn/gpu_history.h)
 *                                   with its job and tenant.
 *
 * The layout and the GPU arrays are written by lib/view (sn/view.h) as text
 * straight into one buffer; this file decodes the routes and keeps the
 * per-GPU history.
 *
 * Tenant isolation is the map's: a token that is not admin sees job ids and
 * tenants of its own jobs only (others are -1).
 */
#include "agent.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/gpu_history.h>
#include <sn/view.h>

static struct sn_gpu_history *history;

/* The history, created with the configured size on first use; NULL when it
 * cannot be. */
static struct sn_gpu_history *gpu_history(struct snd *d)
{
    if (!history &&
        sn_gpu_history_new(d->model->n_gpus, (uint32_t)d->cfg.gpu_history_samples,
                           (uint32_t)d->cfg.gpu_history_step_s, &history, NULL) != SN_OK)
        history = NULL;
    return history;
}

size_t snd_dashboard_history_bytes(void)
{
    return sn_gpu_history_bytes(history);
}

static double latest(const struct sn_telem_gpu *g, enum sn_metric m)
{
    return g->m[m].status == SN_TELEM_OK ? g->m[m].value : NAN;
}

void snd_dashboard_record_node(struct snd *d, uint32_t server)
{
    struct sn_gpu_history *h = gpu_history(d);
    const struct sn_telem_store *t = snd_agent_telemetry_store(d);
    if (!h || !t || server >= d->model->n_servers)
        return;
    int64_t now = snd_now_s();
    uint32_t first = d->model->server_first_gpu[server];
    uint32_t n = sn_model_server_spec(d->model, server)->gpus;
    for (uint32_t g = first; g < first + n; g++) {
        const struct sn_telem_gpu *tg = sn_telem_store_gpu(t, g);
        double v[SN_GPU_HIST_METRIC_COUNT] = {
            latest(tg, SN_METRIC_TEMP_GPU), latest(tg, SN_METRIC_POWER),
            latest(tg, SN_METRIC_CLOCK_SM), latest(tg, SN_METRIC_UTIL_GPU),
            latest(tg, SN_METRIC_MEM_USED)};
        bool any = false;
        for (int k = 0; k < SN_GPU_HIST_METRIC_COUNT; k++)
            any |= isfinite(v[k]);
        if (any)
            (void)sn_gpu_history_add(h, g, now, v);
    }
}

/* ---- the whole-cluster reads (lib/view/dashboard_view.c) ------------------- */

static enum MHD_Result text_reply(struct snd *d, struct snd_req *r, char *text)
{
    if (!text)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    return snd_reply_text(d, r, 200, "application/json", text); /* takes the buffer */
}

enum MHD_Result snd_dashboard_layout(struct snd *d, struct snd_req *r)
{
    return text_reply(d, r, sn_view_dashboard_layout(d->model, d->spec->name));
}

static double score_of(void *ctx, uint32_t gpu)
{
    (void)ctx;
    return snd_health_gpu_score(gpu);
}

static bool visible(const struct snd_req *r, bool admin, const struct sn_control_job *j)
{
    return j && (admin || strcmp(j->tenant, r->tok.subject) == 0);
}

enum MHD_Result snd_dashboard_gpus(struct snd *d, struct snd_req *r)
{
    const char *want = snd_query(r, "metric");
    int mi = sn_view_metric_find(want);
    if (want && mi < 0)
        return snd_error(d, r, 400, "invalid_query", "metric",
                         "metric must be temp, power, util, clock or mem, not '%s'", want);
    uint32_t *owner = snd_dashboard_gpu_owners(d);
    if (!owner)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    struct sn_view_gpus a = {.control = d->ctl,
                             .telemetry = snd_agent_telemetry_store(d),
                             .owner = owner,
                             .score = score_of,
                             .tenant = snd_is_admin(r) ? NULL : r->tok.subject,
                             .metric = mi,
                             .now_s = snd_now_s()};
    char *text = sn_view_dashboard_gpus(&a);
    free(owner);
    return text_reply(d, r, text);
}

/* ---- one GPU's history -------------------------------------------------------- */

enum MHD_Result snd_dashboard_gpu_history(struct snd *d, struct snd_req *r)
{
    const struct sn_model *m = d->model;
    uint32_t gpu = sn_model_find_gpu(m, r->params[0]);
    if (gpu == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no gpu '%s'", r->params[0]);
    struct sn_gpu_history *h = gpu_history(d);
    uint32_t cap = h ? sn_gpu_history_capacity(h) : 0;
    int64_t *times = malloc((cap ? cap : 1) * sizeof(int64_t));
    double(*vals)[SN_GPU_HIST_METRIC_COUNT] = malloc((cap ? cap : 1) * sizeof(*vals));
    uint32_t *owner = snd_dashboard_gpu_owners(d);
    if (!h || !times || !vals || !owner) {
        free(times);
        free(vals);
        free(owner);
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    }
    uint32_t n = sn_gpu_history_read(h, gpu, times, vals, cap);
    const struct sn_control_job *j = owner[gpu] ? d->ctl->jobs[owner[gpu] - 1] : NULL;
    bool see = visible(r, snd_is_admin(r), j);
    char node[64];
    json_t *series = json_object(), *t = json_array();
    for (uint32_t i = 0; i < n; i++)
        json_array_append_new(t, json_integer(times[i]));
    for (int k = 0; k < SN_GPU_HIST_METRIC_COUNT; k++) {
        json_t *a = json_array();
        for (uint32_t i = 0; i < n; i++)
            json_array_append_new(a, isfinite(vals[i][k]) ? json_real(round(vals[i][k] * 100) / 100)
                                                          : json_null());
        json_object_set_new(series, sn_gpu_history_metric_key((enum sn_gpu_history_metric)k), a);
    }
    json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:o,s:o}", "gpu", r->params[0], "node",
                          sn_model_server_name(m, m->gpu_server[gpu], node, sizeof(node)), "step_s",
                          (json_int_t)sn_gpu_history_step_s(h), "capacity", (json_int_t)cap,
                          "time_s", t, "series", series);
    json_object_set_new(o, "job", j ? json_integer(see ? j->id : -1) : json_null());
    json_object_set_new(o, "tenant", j && see ? json_string(j->tenant) : json_null());
    const char *jname = j && see ? json_string_value(json_object_get(j->spec, "name")) : NULL;
    json_object_set_new(o, "job_name", jname ? json_string(jname) : json_null());
    free(times);
    free(vals);
    free(owner);
    return snd_reply(d, r, 200, o);
}
