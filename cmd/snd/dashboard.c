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

#define HISTORY_MAX 720
#define HISTORY_STEP_S 5
#define EVENTS_KEEP 64
#define QUEUE_MAX 50

struct history_point {
    int64_t time_s;
    double allocated_fraction; /* allocated GPUs / GPUs */
    double util_mean;          /* mean util_gpu (%) of GPUs reporting it, NaN if none */
    double goodput;            /* 1 - lost / allocated GPU-seconds since start, NaN before any */
    uint32_t reporting;
};

struct event_entry {
    int64_t seq, job_id, time_s;
    char kind[32];
    char message[160];
};

static struct {
    struct history_point hist[HISTORY_MAX];
    uint32_t n_hist, next_hist;
    struct event_entry events[EVENTS_KEEP];
    uint32_t n_events, next_event;
    int64_t events_seq; /* highest event seq read from the store */
} dash;

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

/* owner[g] = index into d->ctl->jobs + 1 of the running job holding GPU g. */
uint32_t *snd_dashboard_gpu_owners(const struct snd *d)
{
    uint32_t *owner = calloc(d->model->n_gpus ? d->model->n_gpus : 1, sizeof(*owner));
    for (int64_t i = 0; owner && i < d->ctl->n_jobs_cap; i++) {
        const struct sn_control_job *j = d->ctl->jobs[i];
        for (uint32_t k = 0;
             j && j->durable && j->state == SN_CONTROL_JOB_RUNNING && k < j->n_alloc; k++)
            if (j->alloc[k] < d->model->n_gpus)
                owner[j->alloc[k]] = (uint32_t)i + 1;
    }
    return owner;
}

static double reading(const struct sn_telem_store *t, uint32_t gpu, enum sn_metric m)
{
    const struct sn_telem_reading *rd = &sn_telem_store_gpu(t, gpu)->m[m];
    return rd->status == SN_TELEM_OK ? rd->value : NAN;
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(round(v * 10) / 10) : json_null();
}

static int gpu_health(void *ctx, uint32_t gpu)
{
    return snd_agent_gpu_health(ctx, gpu);
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
    uint32_t *owner = snd_dashboard_gpu_owners(d);
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

static bool event_row(void *ctx, const struct sn_store_write *row)
{
    (void)ctx;
    struct event_entry *e = &dash.events[dash.next_event];
    dash.next_event = (dash.next_event + 1) % EVENTS_KEEP;
    if (dash.n_events < EVENTS_KEEP)
        dash.n_events++;
    *e = (struct event_entry){.seq = row->num[2], .job_id = row->num[0], .time_s = row->num[1]};
    snprintf(e->kind, sizeof(e->kind), "%s", row->text[0] ? row->text[0] : "");
    snprintf(e->message, sizeof(e->message), "%s", row->text[1] ? row->text[1] : "");
    dash.events_seq = row->num[2];
    return true;
}

/* Reads the events committed since the last call (at most 16 pages). */
static void catch_up_events(struct snd *d)
{
    for (int page = 0; page < 16; page++) {
        int64_t before = dash.events_seq;
        struct sn_error err = {0};
        if (sn_store_query_log(d->store, SN_STORE_LOG_EVENTS, 0, dash.events_seq, 1000, event_row,
                               NULL, &err) != SN_OK ||
            dash.events_seq - before < 1000)
            return;
    }
}

static void sample_history(struct snd *d, const uint32_t *owner)
{
    int64_t now = snd_now_s();
    const struct history_point *last =
        dash.n_hist ? &dash.hist[(dash.next_hist + HISTORY_MAX - 1) % HISTORY_MAX] : NULL;
    if (last && now - last->time_s < HISTORY_STEP_S)
        return;
    const struct sn_telem_store *t = snd_agent_telemetry_store(d);
    uint32_t alloc = 0, reporting = 0;
    double util = 0;
    for (uint32_t g = 0; g < d->model->n_gpus; g++) {
        alloc += owner[g] != 0;
        double u = t ? reading(t, g, SN_METRIC_UTIL_GPU) : NAN;
        if (isfinite(u)) {
            util += u;
            reporting++;
        }
    }
    double goodput = sn_control_goodput(d->ctl, now);
    dash.hist[dash.next_hist] = (struct history_point){
        .time_s = now,
        .allocated_fraction = d->model->n_gpus ? (double)alloc / d->model->n_gpus : 0,
        .util_mean = reporting ? util / reporting : NAN,
        .goodput = goodput,
        .reporting = reporting};
    dash.next_hist = (dash.next_hist + 1) % HISTORY_MAX;
    if (dash.n_hist < HISTORY_MAX)
        dash.n_hist++;
}

static json_t *events_json(struct snd *d, struct snd_req *r)
{
    json_t *a = json_array();
    bool admin = snd_is_admin(r);
    for (uint32_t k = 0; k < dash.n_events; k++) {
        const struct event_entry *e =
            &dash.events[(dash.next_event + EVENTS_KEEP - 1 - k) % EVENTS_KEEP];
        const struct sn_control_job *j = sn_control_job_get(d->ctl, e->job_id);
        if (!admin && (!j || strcmp(j->tenant, r->tok.subject) != 0))
            continue;
        json_array_append_new(a, json_pack("{s:I,s:I,s:I,s:s,s:s}", "seq", (json_int_t)e->seq,
                                           "job_id", (json_int_t)e->job_id, "time_s",
                                           (json_int_t)e->time_s, "kind", e->kind, "message",
                                           e->message));
    }
    return a;
}

static json_t *history_json(void)
{
    json_t *a = json_array();
    for (uint32_t k = 0; k < dash.n_hist; k++) {
        const struct history_point *p =
            &dash.hist[(dash.next_hist + HISTORY_MAX - dash.n_hist + k) % HISTORY_MAX];
        json_array_append_new(a, json_pack("{s:I,s:f,s:o,s:o,s:I}", "time_s", (json_int_t)p->time_s,
                                           "allocated_fraction", p->allocated_fraction,
                                           "util_mean_pct", num_or_null(p->util_mean), "goodput",
                                           num_or_null(p->goodput), "reporting",
                                           (json_int_t)p->reporting));
    }
    return a;
}

enum MHD_Result snd_dashboard_summary(struct snd *d, struct snd_req *r)
{
    uint32_t *owner = snd_dashboard_gpu_owners(d);
    if (!owner)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    catch_up_events(d);
    sample_history(d, owner);
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
        sn_view_queue(d->ctl, tenant, QUEUE_MAX), "events", events_json(d, r), "history",
        history_json(), "scheduler_connected", d->ctl->sched != NULL, "gpu_history_bytes",
        (json_int_t)snd_dashboard_history_bytes(), "fence", sn_control_partition_json(d->ctl));
    json_object_update(body, counts);
    json_decref(counts);
    json_object_set_new(body, "breaker", sn_control_breaker_json(d->ctl));
    json_object_set_new(body, "time_s", json_integer(snd_now_s()));
    return snd_reply(d, r, 200, body);
}
