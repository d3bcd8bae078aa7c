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
 * The arrays are written as text straight into one buffer (no JSON tree of
 * 500,000 nodes): at 131,072 GPUs the gpus answer is about 1.5 MB.
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

/* ---- text output ---------------------------------------------------------- */

struct text {
    char *buf;
    size_t len;
    FILE *f;
};

static bool text_open(struct text *t)
{
    t->buf = NULL;
    t->len = 0;
    t->f = open_memstream(&t->buf, &t->len);
    return t->f != NULL;
}

static enum MHD_Result text_reply(struct snd *d, struct snd_req *r, struct text *t)
{
    if (fclose(t->f) != 0 || !t->buf) {
        free(t->buf);
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    }
    return snd_reply_text(d, r, 200, "application/json", t->buf); /* takes the buffer */
}

/* A JSON string (names here are generated or validated: no control
 * characters, but quotes and backslashes are escaped all the same). */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

/* ---- layout --------------------------------------------------------------- */

/* The pod of each supernode: supernodes whose first leaf's lowest spine is
 * the same, in contiguous runs. With fewer than three tiers every leaf
 * reaches every spine, so there is one pod. Returns the number of pods. */
static uint32_t pods_of(const struct sn_model *m, uint32_t *pod)
{
    uint32_t *min_spine = malloc((m->n_supernodes ? m->n_supernodes : 1) * sizeof(uint32_t));
    uint32_t *sn_of_switch = malloc((m->n_switches ? m->n_switches : 1) * sizeof(uint32_t));
    if (!min_spine || !sn_of_switch) {
        free(min_spine);
        free(sn_of_switch);
        memset(pod, 0, m->n_supernodes * sizeof(uint32_t));
        return 1;
    }
    for (uint32_t i = 0; i < m->n_switches; i++)
        sn_of_switch[i] = SN_NONE;
    for (uint32_t s = 0; s < m->n_supernodes; s++) {
        min_spine[s] = SN_NONE;
        const struct sn_supernode *S = &m->supernodes[s];
        for (uint32_t l = S->first_leaf; l < S->first_leaf + S->n_leaves && l < m->n_switches; l++)
            sn_of_switch[l] = s;
    }
    for (uint64_t i = 0; i < m->n_links; i++) {
        const struct sn_link *k = &m->links[i];
        if (k->tier != SN_TIER_LEAF_SPINE || k->a_kind != SN_END_SWITCH ||
            k->b_kind != SN_END_SWITCH)
            continue;
        uint32_t leaf = k->a_id, spine = k->b_id;
        if (leaf >= m->n_switches || sn_of_switch[leaf] == SN_NONE) {
            leaf = k->b_id;
            spine = k->a_id;
        }
        if (leaf >= m->n_switches || sn_of_switch[leaf] == SN_NONE)
            continue;
        uint32_t s = sn_of_switch[leaf];
        if (spine < min_spine[s])
            min_spine[s] = spine;
    }
    uint32_t n = 0;
    for (uint32_t s = 0; s < m->n_supernodes; s++) {
        if (s == 0 || min_spine[s] != min_spine[s - 1])
            n++;
        pod[s] = n - 1;
    }
    free(min_spine);
    free(sn_of_switch);
    return n ? n : 1;
}

enum MHD_Result snd_dashboard_layout(struct snd *d, struct snd_req *r)
{
    const struct sn_model *m = d->model;
    uint32_t *pod = malloc((m->n_supernodes ? m->n_supernodes : 1) * sizeof(uint32_t));
    struct text t;
    if (!pod || !text_open(&t)) {
        free(pod);
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    }
    uint32_t n_pods = pods_of(m, pod);
    char name[96];
    FILE *f = t.f;
    fputs("{\"cluster\":", f);
    put_string(f, d->spec->name);
    fprintf(f, ",\"gpus\":%u,\"servers\":%u,\"supernode_count\":%u,\"state_names\":[", m->n_gpus,
            m->n_servers, m->n_supernodes);
    for (int s = 0; s < SN_CONTROL_ADMIN_STATE_COUNT; s++)
        fprintf(f, "%s\"%s\"", s ? "," : "",
                sn_control_admin_state_name((enum sn_control_admin_state)s));
    fprintf(f, "],\"gpu_name\":\"<server>-gpu<index>\",\"pods\":{\"count\":%u,\"of_supernode\":[",
            n_pods);
    for (uint32_t s = 0; s < m->n_supernodes; s++)
        fprintf(f, "%s%u", s ? "," : "", pod[s]);
    fputs("]},\"supernodes\":{\"name\":[", f);
    for (uint32_t s = 0; s < m->n_supernodes; s++) {
        fputs(s ? "," : "", f);
        put_string(f, sn_model_supernode_name(m, s, name, sizeof(name)));
    }
    fputs("],\"first_server\":[", f);
    for (uint32_t s = 0; s < m->n_supernodes; s++)
        fprintf(f, "%s%u", s ? "," : "", m->supernodes[s].first_server);
    fputs("],\"servers\":[", f);
    for (uint32_t s = 0; s < m->n_supernodes; s++)
        fprintf(f, "%s%u", s ? "," : "", m->supernodes[s].n_servers);
    fputs("]},\"servers\":{\"name\":[", f);
    for (uint32_t v = 0; v < m->n_servers; v++) {
        fputs(v ? "," : "", f);
        put_string(f, sn_model_server_name(m, v, name, sizeof(name)));
    }
    fputs("],\"first_gpu\":[", f);
    for (uint32_t v = 0; v < m->n_servers; v++)
        fprintf(f, "%s%u", v ? "," : "", m->server_first_gpu[v]);
    fputs("],\"gpus\":[", f);
    for (uint32_t v = 0; v < m->n_servers; v++)
        fprintf(f, "%s%u", v ? "," : "", sn_model_server_spec(m, v)->gpus);
    fputs("]}}", f);
    free(pod);
    return text_reply(d, r, &t);
}

/* ---- every GPU -------------------------------------------------------------- */

static const struct {
    const char *name;
    enum sn_metric metric;
    double scale; /* to the unit shown */
    const char *unit;
} metrics[] = {
    {"temp", SN_METRIC_TEMP_GPU, 1, "C"},
    {"power", SN_METRIC_POWER, 1, "W"},
    {"util", SN_METRIC_UTIL_GPU, 1, "%"},
    {"clock", SN_METRIC_CLOCK_SM, 1, "MHz"},
    {"mem", SN_METRIC_MEM_USED, 1.0 / 1073741824.0, "GiB"},
};

static bool visible(const struct snd_req *r, bool admin, const struct sn_control_job *j)
{
    return j && (admin || strcmp(j->tenant, r->tok.subject) == 0);
}

enum MHD_Result snd_dashboard_gpus(struct snd *d, struct snd_req *r)
{
    const struct sn_model *m = d->model;
    const char *want = snd_query(r, "metric");
    int mi = -1;
    for (size_t i = 0; want && i < sizeof(metrics) / sizeof(metrics[0]); i++)
        if (strcmp(want, metrics[i].name) == 0)
            mi = (int)i;
    if (want && mi < 0)
        return snd_error(d, r, 400, "invalid_query", "metric",
                         "metric must be temp, power, util, clock or mem, not '%s'", want);
    const struct sn_telem_store *tel = snd_agent_telemetry_store(d);
    uint32_t *owner = snd_dashboard_gpu_owners(d);
    struct text t;
    if (!tel || !owner || !text_open(&t)) {
        free(owner);
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    }
    bool admin = snd_is_admin(r);
    FILE *f = t.f;
    fprintf(f, "{\"gpus\":%u,\"time_s\":%lld,\"state\":[", m->n_gpus, (long long)snd_now_s());
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        /* The worse of its own and its server's, as every view counts it. */
        fprintf(f, g ? ",%u" : "%u", (unsigned)sn_control_gpu_effective(d->ctl, g));
    }
    fputs("],\"job\":[", f);
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        const struct sn_control_job *j = owner[g] ? d->ctl->jobs[owner[g] - 1] : NULL;
        long long id = j ? (visible(r, admin, j) ? (long long)j->id : -1) : 0;
        fprintf(f, g ? ",%lld" : "%lld", id);
    }
    fputs("],\"health\":[", f);
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        double s = snd_health_gpu_score(g);
        fprintf(f, g ? ",%d" : "%d", s < 0 || !isfinite(s) ? -1 : (int)floor(s));
    }
    fputs("]", f);
    if (mi >= 0) {
        fprintf(f, ",\"metric\":\"%s\",\"unit\":\"%s\",\"values\":[", metrics[mi].name,
                metrics[mi].unit);
        for (uint32_t g = 0; g < m->n_gpus; g++) {
            /* A down GPU (a powered-off rack, a lost server) has no current
             * reading: its last one is not shown as if it were. */
            double v = sn_control_gpu_effective(d->ctl, g) == SN_CONTROL_ADMIN_DOWN
                           ? NAN
                           : latest(sn_telem_store_gpu(tel, g), metrics[mi].metric);
            if (isfinite(v))
                fprintf(f, g ? ",%.1f" : "%.1f", v * metrics[mi].scale);
            else
                fputs(g ? ",null" : "null", f);
        }
        fputs("]", f);
    }
    /* The jobs on the map that this token may see, by id. */
    fputs(",\"jobs\":{", f);
    bool first = true;
    for (int64_t i = 0; i < d->ctl->n_jobs_cap; i++) {
        const struct sn_control_job *j = d->ctl->jobs[i];
        if (!j || !j->durable || j->state != SN_CONTROL_JOB_RUNNING || !visible(r, admin, j))
            continue;
        const char *name = json_string_value(json_object_get(j->spec, "name"));
        fprintf(f, "%s\"%lld\":{\"name\":", first ? "" : ",", (long long)j->id);
        put_string(f, name ? name : "");
        fputs(",\"tenant\":", f);
        put_string(f, j->tenant);
        fprintf(f, ",\"gpus\":%u}", j->n_alloc);
        first = false;
    }
    fputs("}}", f);
    free(owner);
    return text_reply(d, r, &t);
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
