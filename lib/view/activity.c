/*
 * The dashboard's recent activity (GET /v1/dashboard/summary "events" and
 * "history", docs/dashboard.md) and one GPU's telemetry history (GET
 * /v1/telemetry/gpus/{gpu}/history): bounded rings the daemon feeds, the
 * last EVENTS_KEEP job events as the store committed them and a
 * utilisation point at most every HISTORY_STEP_S seconds, and the JSON
 * the routes answer. A tenant's token sees only its own jobs' events.
 */
#include "view_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_MAX 720
#define HISTORY_STEP_S 5
#define EVENTS_KEEP 64

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

struct sn_view_activity {
    struct history_point hist[HISTORY_MAX];
    uint32_t n_hist, next_hist;
    struct event_entry events[EVENTS_KEEP];
    uint32_t n_events, next_event;
    int64_t events_seq; /* highest event seq taken */
};

struct sn_view_activity *sn_view_activity_new(void)
{
    return calloc(1, sizeof(struct sn_view_activity));
}

void sn_view_activity_free(struct sn_view_activity *a)
{
    free(a);
}

int64_t sn_view_activity_events_seq(const struct sn_view_activity *a)
{
    return a->events_seq;
}

bool sn_view_activity_event_row(void *ctx, const struct sn_store_write *row)
{
    struct sn_view_activity *a = ctx;
    struct event_entry *e = &a->events[a->next_event];
    a->next_event = (a->next_event + 1) % EVENTS_KEEP;
    if (a->n_events < EVENTS_KEEP)
        a->n_events++;
    *e = (struct event_entry){.seq = row->num[2], .job_id = row->num[0], .time_s = row->num[1]};
    snprintf(e->kind, sizeof(e->kind), "%s", row->text[0] ? row->text[0] : "");
    snprintf(e->message, sizeof(e->message), "%s", row->text[1] ? row->text[1] : "");
    a->events_seq = row->num[2];
    return true;
}

void sn_view_activity_sample(struct sn_view_activity *a, const struct sn_control *c,
                             const struct sn_telem_store *t, const uint32_t *owner, int64_t now_s)
{
    const struct history_point *last =
        a->n_hist ? &a->hist[(a->next_hist + HISTORY_MAX - 1) % HISTORY_MAX] : NULL;
    if (last && now_s - last->time_s < HISTORY_STEP_S)
        return;
    uint32_t alloc = 0, reporting = 0, n = c->model->n_gpus;
    double util = 0;
    for (uint32_t g = 0; g < n; g++) {
        alloc += owner[g] != 0;
        double u = sn__view_reading(t, g, SN_METRIC_UTIL_GPU);
        if (isfinite(u)) {
            util += u;
            reporting++;
        }
    }
    a->hist[a->next_hist] = (struct history_point){.time_s = now_s,
                                                   .allocated_fraction = n ? (double)alloc / n : 0,
                                                   .util_mean = reporting ? util / reporting : NAN,
                                                   .goodput = sn_control_goodput(c, now_s),
                                                   .reporting = reporting};
    a->next_hist = (a->next_hist + 1) % HISTORY_MAX;
    if (a->n_hist < HISTORY_MAX)
        a->n_hist++;
}

json_t *sn_view_activity_events_json(const struct sn_view_activity *a, const struct sn_control *c,
                                     const char *tenant)
{
    json_t *out = json_array();
    for (uint32_t k = 0; k < a->n_events; k++) {
        const struct event_entry *e =
            &a->events[(a->next_event + EVENTS_KEEP - 1 - k) % EVENTS_KEEP];
        const struct sn_control_job *j = sn_control_job_get(c, e->job_id);
        if (tenant && (!j || strcmp(j->tenant, tenant) != 0))
            continue;
        json_array_append_new(out, json_pack("{s:I,s:I,s:I,s:s,s:s}", "seq", (json_int_t)e->seq,
                                             "job_id", (json_int_t)e->job_id, "time_s",
                                             (json_int_t)e->time_s, "kind", e->kind, "message",
                                             e->message));
    }
    return out;
}

json_t *sn_view_activity_history_json(const struct sn_view_activity *a)
{
    json_t *out = json_array();
    for (uint32_t k = 0; k < a->n_hist; k++) {
        const struct history_point *p =
            &a->hist[(a->next_hist + HISTORY_MAX - a->n_hist + k) % HISTORY_MAX];
        json_array_append_new(out,
                              json_pack("{s:I,s:f,s:o,s:o,s:I}", "time_s", (json_int_t)p->time_s,
                                        "allocated_fraction", p->allocated_fraction,
                                        "util_mean_pct", sn__view_num_or_null(p->util_mean),
                                        "goodput", sn__view_num_or_null(p->goodput), "reporting",
                                        (json_int_t)p->reporting));
    }
    return out;
}

uint32_t *sn_view_gpu_owners(const struct sn_control *c)
{
    uint32_t n = c->model->n_gpus;
    uint32_t *owner = calloc(n ? n : 1, sizeof(*owner));
    for (int64_t i = 0; owner && i < c->n_jobs_cap; i++) {
        const struct sn_control_job *j = c->jobs[i];
        for (uint32_t k = 0;
             j && j->durable && j->state == SN_CONTROL_JOB_RUNNING && k < j->n_alloc; k++)
            if (j->alloc[k] < n)
                owner[j->alloc[k]] = (uint32_t)i + 1;
    }
    return owner;
}

/* ---- one GPU's history ------------------------------------------------------------ */

void sn_view_gpu_history_record(struct sn_gpu_history *h, const struct sn_telem_store *t,
                                const struct sn_model *m, uint32_t server, int64_t now_s)
{
    if (!h || !t || server >= m->n_servers)
        return;
    uint32_t first = m->server_first_gpu[server];
    uint32_t n = sn_model_server_spec(m, server)->gpus;
    static const enum sn_metric kept[SN_GPU_HIST_METRIC_COUNT] = {
        SN_METRIC_TEMP_GPU, SN_METRIC_POWER, SN_METRIC_CLOCK_SM, SN_METRIC_UTIL_GPU,
        SN_METRIC_MEM_USED};
    for (uint32_t g = first; g < first + n; g++) {
        double v[SN_GPU_HIST_METRIC_COUNT];
        bool any = false;
        for (int k = 0; k < SN_GPU_HIST_METRIC_COUNT; k++) {
            v[k] = sn__view_reading(t, g, kept[k]);
            any |= isfinite(v[k]);
        }
        if (any)
            (void)sn_gpu_history_add(h, g, now_s, v);
    }
}

json_t *sn_view_gpu_history_json(const struct sn_gpu_history *h, const struct sn_control *c,
                                 uint32_t gpu, const struct sn_control_job *job, bool visible)
{
    const struct sn_model *m = c->model;
    uint32_t cap = sn_gpu_history_capacity(h);
    int64_t *times = malloc((cap ? cap : 1) * sizeof(int64_t));
    double(*vals)[SN_GPU_HIST_METRIC_COUNT] = malloc((cap ? cap : 1) * sizeof(*vals));
    if (!times || !vals) {
        free(times);
        free(vals);
        return NULL;
    }
    uint32_t n = sn_gpu_history_read(h, gpu, times, vals, cap);
    char name[64], node[64];
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
    free(times);
    free(vals);
    json_t *o =
        json_pack("{s:s,s:s,s:I,s:I,s:o,s:o}", "gpu", sn_model_gpu_name(m, gpu, name, sizeof(name)),
                  "node", sn_model_server_name(m, m->gpu_server[gpu], node, sizeof(node)), "step_s",
                  (json_int_t)sn_gpu_history_step_s(h), "capacity", (json_int_t)cap, "time_s", t,
                  "series", series);
    json_object_set_new(o, "job", job ? json_integer(visible ? job->id : -1) : json_null());
    json_object_set_new(o, "tenant", job && visible ? json_string(job->tenant) : json_null());
    const char *jname =
        job && visible ? json_string_value(json_object_get(job->spec, "name")) : NULL;
    json_object_set_new(o, "job_name", jname ? json_string(jname) : json_null());
    return o;
}
