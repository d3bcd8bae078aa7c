/*
 * The dashboard: a static page (cmd/snd/dashboard/, embedded in the binary
 * through the generated dashboard_assets.c) and the two reads it polls.
 *
 * /v1/dashboard/map answers per-supernode aggregates, or with ?supernode=
 * the servers and GPUs of one supernode as compact parallel arrays, so the
 * page stays usable at 100,000 GPUs: it draws supernode tiles and fetches
 * GPU detail only for the supernode it zooms into (docs/dashboard.md).
 * /v1/dashboard/summary answers counts, the pending queue with reasons, the
 * recent job events and a utilisation history sampled at most every
 * HISTORY_STEP_S seconds when asked (bounded ring).
 *
 * Tenant isolation: a token that is not admin sees job ids and tenants only
 * of its own jobs on the map (others are -1, "another tenant"), and only its
 * own pending jobs and events.
 */
#include "agent.h"

#include <sn/view.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUEUE_MAX 50

static struct sn_view_activity *activity; /* the state thread's; NULL until the first summary */

/* ---- static files ------------------------------------------------------ */

static enum MHD_Result send_asset(struct snd *d, struct snd_req *r, const char *name)
{
    for (size_t i = 0; i < snd_dashboard_n_assets; i++) {
        const struct snd_asset *a = &snd_dashboard_assets[i];
        if (strcmp(a->name, name) != 0)
            continue;
        char *copy = malloc(a->len + 1);
        if (!copy)
            return MHD_NO;
        memcpy(copy, a->data, a->len);
        copy[a->len] = '\0';
        return snd_reply_text(d, r, 200, a->type, copy);
    }
    return snd_error(d, r, 404, "not_found", NULL, "no dashboard file '%s'", name);
}

enum MHD_Result snd_dashboard_index(struct snd *d, struct snd_req *r)
{
    return send_asset(d, r, "index.html");
}

enum MHD_Result snd_dashboard_asset(struct snd *d, struct snd_req *r)
{
    if (strcmp(r->params[0], "index.html") == 0)
        return snd_error(d, r, 404, "not_found", NULL, "the page is served at /");
    return send_asset(d, r, r->params[0]);
}

/* ---- the map ------------------------------------------------------------ */

static int gpu_health(void *ctx, uint32_t gpu)
{
    return snd_health_gpu_level(ctx, gpu);
}

static int64_t heartbeat_age(void *ctx, uint32_t server)
{
    return snd_agent_heartbeat_age_s(ctx, server);
}

/* The map (lib/view/dashboard_map.c): per-supernode tiles, or one
 * supernode's servers and GPUs with ?supernode=. */
enum MHD_Result snd_dashboard_map(struct snd *d, struct snd_req *r)
{
    const struct sn_model *m = d->model;
    const char *want = snd_query(r, "supernode");
    uint32_t s = SN_NONE;
    for (uint32_t i = 0; want && i < m->n_supernodes && s == SN_NONE; i++) {
        char name[64];
        if (strcmp(sn_model_supernode_name(m, i, name, sizeof(name)), want) == 0)
            s = i;
    }
    if (want && s == SN_NONE)
        return snd_error(d, r, 404, "not_found", "supernode", "no supernode '%s'", want);
    uint32_t *owner = sn_view_gpu_owners(d->ctl);
    if (!owner)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    struct sn_view_map a = {.control = d->ctl,
                            .telemetry = snd_agent_telemetry_store(d),
                            .owner = owner,
                            .health = gpu_health,
                            .heartbeat_age_s = heartbeat_age,
                            .ctx = d,
                            .tenant = snd_is_admin(r) ? NULL : r->tok.subject,
                            .cluster = d->spec->name,
                            .supernode = s};
    json_t *body = sn_view_dashboard_map(&a);
    free(owner);
    if (!body)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    return snd_reply(d, r, 200, body);
}

/* ---- the summary ---------------------------------------------------------- */

/* Reads the events committed since the last call (at most 16 pages). */
static void catch_up_events(struct snd *d)
{
    for (int page = 0; page < 16; page++) {
        int64_t before = sn_view_activity_events_seq(activity);
        struct sn_error err = {0};
        if (sn_store_query_log(d->store, SN_STORE_LOG_EVENTS, 0, before, 1000,
                               sn_view_activity_event_row, activity, &err) != SN_OK ||
            sn_view_activity_events_seq(activity) - before < 1000)
            return;
    }
}

void snd_dashboard_free(void)
{
    sn_view_activity_free(activity);
    activity = NULL;
}

enum MHD_Result snd_dashboard_summary(struct snd *d, struct snd_req *r)
{
    if (!activity)
        activity = sn_view_activity_new();
    uint32_t *owner = activity ? sn_view_gpu_owners(d->ctl) : NULL;
    if (!owner)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    catch_up_events(d);
    sn_view_activity_sample(activity, d->ctl, snd_agent_telemetry_store(d), owner, snd_now_s());
    free(owner);
    uint32_t up, down;
    snd_agent_counts(d, &up, &down);
    const char *tenant = snd_is_admin(r) ? NULL : r->tok.subject;
    /* The counts every view shows, goodput and the queue: lib/view. */
    json_t *counts = sn_view_summary_counts(d->ctl, snd_now_s());
    if (!counts)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    json_t *body = json_pack(
        "{s:s,s:I,s:{s:I,s:I,s:I},s:o,s:o,s:o,s:b,s:I,s:o}", "cluster", d->spec->name, "gpus",
        (json_int_t)d->model->n_gpus, "agents", "up", (json_int_t)up, "down", (json_int_t)down,
        "never", (json_int_t)(d->model->n_servers - up - down), "queue",
        sn_view_queue(d->ctl, tenant, QUEUE_MAX), "events",
        sn_view_activity_events_json(activity, d->ctl, tenant), "history",
        sn_view_activity_history_json(activity), "scheduler_connected", d->ctl->sched != NULL,
        "gpu_history_bytes", (json_int_t)snd_dashboard_history_bytes(), "fence",
        sn_control_partition_json(d->ctl));
    json_object_update(body, counts);
    json_decref(counts);
    json_object_set_new(body, "breaker", sn_control_breaker_json(d->ctl));
    json_object_set_new(body, "time_s", json_integer(snd_now_s()));
    return snd_reply(d, r, 200, body);
}
