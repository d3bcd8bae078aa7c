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

void snd_dashboard_record_node(struct snd *d, uint32_t server)
{
    sn_view_gpu_history_record(gpu_history(d), snd_agent_telemetry_store(d), d->model, server,
                               snd_now_s());
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
    uint32_t *owner = sn_view_gpu_owners(d->ctl);
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
    uint32_t *owner = sn_view_gpu_owners(d->ctl);
    const struct sn_control_job *j = owner && owner[gpu] ? d->ctl->jobs[owner[gpu] - 1] : NULL;
    json_t *o = h && owner
                    ? sn_view_gpu_history_json(h, d->ctl, gpu, j, visible(r, snd_is_admin(r), j))
                    : NULL;
    free(owner);
    if (!o)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    return snd_reply(d, r, 200, o);
}
