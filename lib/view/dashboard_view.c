/*
 * The dashboard's whole-cluster reads as JSON text (docs/dashboard.md),
 * written straight into one buffer (no JSON tree of 500,000 nodes: at
 * 131,072 GPUs the GPU arrays are about 1.5 MB): the layout (pods,
 * supernodes, servers as parallel arrays, in model order) and every GPU's
 * effective admin state, job, health score and one telemetry metric.
 * Read-only over the model, the control, the telemetry store and the
 * health scores the caller passes in; memory only (open_memstream).
 */
#include <sn/view.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

char *sn_view_dashboard_layout(const struct sn_model *m, const char *cluster)
{
    uint32_t *pod = malloc((m->n_supernodes ? m->n_supernodes : 1) * sizeof(uint32_t));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = pod ? open_memstream(&buf, &len) : NULL;
    if (!f) {
        free(pod);
        return NULL;
    }
    uint32_t n_pods = pods_of(m, pod);
    char name[96];
    fputs("{\"cluster\":", f);
    put_string(f, cluster);
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
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

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

int sn_view_metric_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof(metrics) / sizeof(metrics[0]); i++)
        if (strcmp(name, metrics[i].name) == 0)
            return (int)i;
    return -1;
}

static double latest(const struct sn_telem_gpu *g, enum sn_metric m)
{
    return g && g->m[m].status == SN_TELEM_OK ? g->m[m].value : NAN;
}

static bool visible(const char *tenant, const struct sn_control_job *j)
{
    return j && (!tenant || strcmp(j->tenant, tenant) == 0);
}

char *sn_view_dashboard_gpus(const struct sn_view_gpus *a)
{
    const struct sn_control *c = a->control;
    const struct sn_model *m = c->model;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f, "{\"gpus\":%u,\"time_s\":%lld,\"state\":[", m->n_gpus, (long long)a->now_s);
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        /* The worse of its own and its server's, as every view counts it. */
        fprintf(f, g ? ",%u" : "%u", (unsigned)sn_control_gpu_effective(c, g));
    }
    fputs("],\"job\":[", f);
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        const struct sn_control_job *j = a->owner[g] ? c->jobs[a->owner[g] - 1] : NULL;
        long long id = j ? (visible(a->tenant, j) ? (long long)j->id : -1) : 0;
        fprintf(f, g ? ",%lld" : "%lld", id);
    }
    fputs("],\"health\":[", f);
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        double s = a->score ? a->score(a->ctx, g) : -1;
        fprintf(f, g ? ",%d" : "%d", s < 0 || !isfinite(s) ? -1 : (int)floor(s));
    }
    fputs("]", f);
    if (a->metric >= 0) {
        fprintf(f, ",\"metric\":\"%s\",\"unit\":\"%s\",\"values\":[", metrics[a->metric].name,
                metrics[a->metric].unit);
        for (uint32_t g = 0; g < m->n_gpus; g++) {
            /* A down GPU (a powered-off rack, a lost server) has no current
             * reading: its last one is not shown as if it were. */
            const struct sn_telem_gpu *tg =
                a->telemetry ? sn_telem_store_gpu(a->telemetry, g) : NULL;
            double v = sn_control_gpu_effective(c, g) == SN_CONTROL_ADMIN_DOWN
                           ? NAN
                           : latest(tg, metrics[a->metric].metric);
            if (isfinite(v))
                fprintf(f, g ? ",%.1f" : "%.1f", v * metrics[a->metric].scale);
            else
                fputs(g ? ",null" : "null", f);
        }
        fputs("]", f);
    }
    /* The jobs on the map that this token may see, by id. */
    fputs(",\"jobs\":{", f);
    bool first = true;
    for (int64_t i = 0; i < c->n_jobs_cap; i++) {
        const struct sn_control_job *j = c->jobs[i];
        if (!j || !j->durable || j->state != SN_CONTROL_JOB_RUNNING || !visible(a->tenant, j))
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
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
