/*
 * lib/health/health_detect_site.c: detectors above the single GPU: fabric
 * bandwidth against the baseline, the topology matrix against the design,
 * the three-step slow-node method, cooling loops (flow, sensor drift), power
 * feeds (drift, phase imbalance) and configuration drift against the locked
 * compatibility matrix and the majority.
 *
 * Facility readings are matched to the model by name: a loop series named
 * "sn00-loopL1" is that model cooling loop, a feed "sn00-pdA" that power
 * domain. The model's loop and domain names are indexed once per pass
 * (sorted, binary search), so a lookup costs O(log n), never a scan of the
 * model per reading. A loop or feed name that is not in the model is not
 * judged: it is reported once as a skip of the report with its name and the
 * file:line of its latest reading. Series are walked in a sorted order, so
 * findings and skips are deterministic.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- fabric bandwidth ------------------------------------------------------- */

/* Without a baseline entry for the run: the floor from the model, a
 * bandwidth-bound figure, so only at sizes of at least
 * busbw_plateau_min_bytes (64 MiB): below it busbw is latency-bound (an
 * 8-byte row's 0.00 GB/s says nothing of the fabric). key is
 * "coll/ranks/size". */
static void busbw_model(struct sn__health_ctx *c, const char *key, uint32_t server, unsigned nhosts,
                        double bw, const char *where)
{
    unsigned nranks = 0;
    const char *slash = strchr(key, '/');
    const char *size = slash ? strchr(slash + 1, '/') : NULL;
    if (size && strtod(size + 1, NULL) < c->cfg->busbw_plateau_min_bytes)
        return;
    if (slash)
        nranks = (unsigned)strtoul(slash + 1, NULL, 10);
    char why[96];
    double floor = sn_health_busbw_floor(c->m, c->cfg, server, nranks, nhosts, why, sizeof(why));
    if (isnan(floor) || !(bw < floor))
        return;
    sn__health_add(c, SN_DET_BUSBW_LOW, SN_HEALTH_ENT_SERVER, server, SN_NONE, server, bw, floor,
                   "%s: %s busbw %.1f GB/s < %.1f GB/s (%s)", where, key, bw / 1e9, floor / 1e9,
                   why);
}

static void busbw_check(struct sn__health_ctx *c, const char *key, const char *host,
                        unsigned nhosts, double bw, const char *where)
{
    uint32_t server = sn__health_server(c, host, where, 0);
    const struct sn_baseline_entry *e = sn_baseline_find(c->in->baseline, SN_BASELINE_BUSBW, key);
    if (server == SN_NONE)
        return;
    if (!e || (isnan(e->median) && isnan(e->min_ok))) {
        busbw_model(c, key, server, nhosts, bw, where);
        return;
    }
    double learned = c->cfg->busbw_floor * e->median;
    bool low_learned = !isnan(e->median) && bw < learned;
    bool low_declared = !isnan(e->min_ok) && bw < e->min_ok;
    if (!low_learned && !low_declared)
        return;
    double expected = low_declared ? e->min_ok : learned;
    sn__health_add(c, SN_DET_BUSBW_LOW, SN_HEALTH_ENT_SERVER, server, SN_NONE, server, bw, expected,
                   "%s: %s busbw %.1f GB/s < %.1f GB/s (%s)", where, key, bw / 1e9, expected / 1e9,
                   low_declared ? (*e->note ? e->note : "declared minimum")
                                : "busbw_floor x learned median");
}

static void busbw(struct sn__health_ctx *c)
{
    const struct sn_health_history *h = c->in->history;
    char w[160];
    for (uint32_t i = 0; i < sn_health_history_series_count(h); i++) {
        const struct sn_health_series *s = sn_health_history_series(h, i);
        const char *host = strrchr(s->key, '/');
        if (strncmp(s->key, "nccl/", 5) != 0 || !host || s->total == 0)
            continue;
        char key[96];
        snprintf(key, sizeof(key), "%.*s", (int)(host - s->key - 5), s->key + 5);
        double t, v;
        sn_health_series_point(s, sn_health_series_kept(s) - 1, &t, &v);
        busbw_check(c, key, host + 1, s->nhosts, v,
                    sn__health_where(c->st, s->source, s->line, w, sizeof(w)));
    }
    if (h)
        return;
    for (uint32_t i = 0; i < sn_telem_store_nccl_count(c->st); i++) { /* no history: the store */
        const struct sn_telem_nccl_entry *e = sn_telem_store_nccl(c->st, i);
        char key[96];
        snprintf(key, sizeof(key), "%s/%u/%.0f", sn_nccl_coll_name(e->coll), e->nranks,
                 e->size_bytes);
        double bw = isnan(e->oop.busbw_bytes_per_s) ? e->oop.calc_busbw_bytes_per_s
                                                    : e->oop.busbw_bytes_per_s;
        if (e->host != UINT32_MAX && !isnan(bw))
            busbw_check(c, key, sn_telem_store_host_name(c->st, e->host), e->nhosts, bw,
                        sn__health_where(c->st, e->source, e->line, w, sizeof(w)));
    }
}

static void topology(struct sn__health_ctx *c)
{
    for (uint32_t h = 0; h < sn_telem_store_host_count(c->st); h++) {
        const struct sn_telem_topo *t = sn_telem_store_topo(c->st, h);
        uint32_t server = c->host_server[h];
        if (!t || server == SN_NONE)
            continue;
        const struct sn_template *tp =
            sn_model_supernode_template(c->m, c->m->server_supernode[server]);
        unsigned bi, bj;
        if (tp->scaleup.switch_model == SN_NONE || sn_telem_topo_all_gpus_nvlink(t, 1, &bi, &bj))
            continue;
        const struct sn_telem_topo_cell *cell = &t->cell[bi][bj];
        sn__health_add(c, SN_DET_TOPO_NOT_NVLINK, SN_HEALTH_ENT_SERVER, server, SN_NONE, server,
                       NAN, NAN, "%s:%u: %s-%s is %s, the design joins every GPU pair by NVLink",
                       t->at.source, t->at.line, t->dev[bi].name, t->dev[bj].name,
                       cell->kind == SN_TOPO_NV ? "NV" : sn_topo_kind_name(cell->kind));
    }
}

/* ---- the three-step slow-node method ----------------------------------------- */

static double peer_median(struct sn__health_ctx *c, const double *v, uint32_t n)
{
    size_t k = 0;
    for (uint32_t i = 0; i < n && k < c->scratch_cap; i++)
        if (!isnan(v[i]))
            c->scratch[k++] = v[i];
    return sn__health_median(c->scratch, k);
}

static void slow_node_cause(struct sn__health_ctx *c, const double *m, const double *med, char *buf,
                            size_t len)
{
    const struct sn_health_config *cfg = c->cfg;
    size_t at = 0;
    if (!isnan(m[SN_NODE_SOFTIRQ]) && m[SN_NODE_SOFTIRQ] >= cfg->softirq_frac)
        at += (size_t)snprintf(buf + at, len - at, "; step 2: softirq %.0f%% >= %.0f%%",
                               100 * m[SN_NODE_SOFTIRQ], 100 * cfg->softirq_frac);
    else if (!isnan(m[SN_NODE_IRQ_RATE]) &&
             m[SN_NODE_IRQ_RATE] > cfg->link_quality_frac * med[SN_NODE_IRQ_RATE])
        at += (size_t)snprintf(buf + at, len - at, "; step 2: %.0f interrupts/s vs peers %.0f",
                               m[SN_NODE_IRQ_RATE], med[SN_NODE_IRQ_RATE]);
    for (int k = SN_NODE_DROPS; k <= SN_NODE_PFC_PAUSE && at < len; k++) {
        double ref = med[k] > 1 ? med[k] : 1;
        if (!isnan(m[k]) && m[k] > cfg->link_quality_frac * ref)
            at += (size_t)snprintf(buf + at, len - at, "; step 3: %s %.0f vs peers %.0f",
                                   sn_node_metric_name((enum sn_node_metric)k), m[k], med[k]);
    }
    if (at == 0)
        snprintf(buf, len, "; steps 2-3: no cause in interrupts or link quality");
}

static void slow_nodes(struct sn__health_ctx *c)
{
    const struct sn_health_facts *f = c->in->facts;
    if (!f || !f->n_node)
        return;
    uint32_t ns = c->m->n_servers;
    double *v = malloc((size_t)ns * SN_NODE_COUNT * sizeof(double));
    uint32_t *line = calloc(ns, sizeof(uint32_t));
    if (!v || !line) {
        c->full = true;
        goto out;
    }
    for (size_t i = 0; i < (size_t)ns * SN_NODE_COUNT; i++)
        v[i] = NAN;
    for (uint32_t i = 0; i < f->n_node; i++) {
        uint32_t s = sn__health_server(c, f->node[i].host, "", 0);
        if (s != SN_NONE) {
            v[(size_t)f->node[i].metric * ns + s] = f->node[i].value;
            if (f->node[i].metric == SN_NODE_BUSBW)
                line[s] = f->node[i].line;
        }
    }
    double med[SN_NODE_COUNT];
    for (int k = 0; k < SN_NODE_COUNT; k++)
        med[k] = peer_median(c, v + (size_t)k * ns, ns);
    size_t nb = 0;
    for (uint32_t s = 0; s < ns; s++)
        if (!isnan(v[s]))
            c->scratch[nb++] = v[s];
    double mad = sn__health_mad(c->scratch, nb, med[SN_NODE_BUSBW]);
    for (uint32_t s = 0; nb >= 3 && s < ns; s++) {
        double bw = v[s];
        double z = sn__health_robust_z(bw, med[SN_NODE_BUSBW], mad);
        if (isnan(bw) || !(z < -c->cfg->slow_z) ||
            bw >= (1 - c->cfg->slow_floor) * med[SN_NODE_BUSBW])
            continue;
        double m[SN_NODE_COUNT];
        for (int k = 0; k < SN_NODE_COUNT; k++)
            m[k] = v[(size_t)k * ns + s];
        char cause[120];
        slow_node_cause(c, m, med, cause, sizeof(cause));
        sn__health_add(c, SN_DET_SLOW_NODE, SN_HEALTH_ENT_SERVER, s, SN_NONE, s, bw,
                       med[SN_NODE_BUSBW], "line %u: step 1: busbw %.1f GB/s vs peers %.1f%s",
                       line[s], bw / 1e9, med[SN_NODE_BUSBW] / 1e9, cause);
    }
out:
    free(v);
    free(line);
}

/* ---- nccl-tests verdicts --------------------------------------------------------- */

/* The server of a run: its rank-0 host, else the host of its lines. */
static uint32_t run_server(const struct sn__health_ctx *c, const struct sn_health_nccl_run *r)
{
    uint32_t s = *r->host ? sn_model_find_server(c->m, r->host) : SN_NONE;
    if (s == SN_NONE && *r->line_host)
        s = sn_model_find_server(c->m, r->line_host);
    return s;
}

/* The curve stopped growing well below what the layout should reach: a
 * bottleneck (a PCIe or socket path instead of NVLink/RDMA, a slow link),
 * not noise: flat over several doublings of the size. */
static void busbw_plateau(struct sn__health_ctx *c, const struct sn_health_nccl_run *r, uint32_t sv)
{
    if (r->plateau_rows < c->cfg->busbw_plateau_rows ||
        !(r->last_size_bytes >= c->cfg->busbw_plateau_min_bytes) ||
        !(r->last_busbw_bytes_per_s > 0))
        return;
    char why[96];
    double floor = sn_health_busbw_floor(c->m, c->cfg, sv, r->nranks, r->nhosts, why, sizeof(why));
    double limit = c->cfg->busbw_plateau_frac * floor;
    if (isnan(floor) || !(r->last_busbw_bytes_per_s < limit))
        return;
    sn__health_add(c, SN_DET_BUSBW_PLATEAU, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv,
                   r->last_busbw_bytes_per_s, limit,
                   "%s: %s busbw flat at %.2f GB/s from %.0f B to %.0f B (%u sizes) < %.2f x "
                   "floor %.1f GB/s (%s)",
                   r->where, sn_nccl_coll_name(r->coll), r->last_busbw_bytes_per_s / 1e9,
                   r->plateau_size_bytes, r->last_size_bytes, r->plateau_rows,
                   c->cfg->busbw_plateau_frac, floor / 1e9, why);
}

static void nccl_run(struct sn__health_ctx *c, const struct sn_health_nccl_run *r, uint32_t sv)
{
    const char *coll = sn_nccl_coll_name(r->coll);
    if (r->wrong_rows)
        sn__health_add(c, SN_DET_NCCL_WRONG, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv,
                       (double)r->wrong_max, 0,
                       "%s: %s run of %u ranks: %u rows with #wrong > 0 (max %lld)", r->wrong_where,
                       coll, r->nranks, r->wrong_rows, r->wrong_max);
    else if (r->out_of_bounds > 0)
        sn__health_add(
            c, SN_DET_NCCL_WRONG, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv, (double)r->out_of_bounds,
            0, "%s: %s run: Out of bounds values : %lld FAILED", r->where, coll, r->out_of_bounds);
    if (r->aborted || r->truncated || r->rows == 0)
        sn__health_add(c, SN_DET_NCCL_ABORTED, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv,
                       (double)r->rows, NAN, "%s: %s run %s after %u data rows", r->where, coll,
                       r->aborted     ? "aborted"
                       : r->truncated ? "ended without its footer"
                                      : "had no data",
                       r->rows);
    if (r->dup_ranks)
        sn__health_add(c, SN_DET_NCCL_RANKS, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv,
                       (double)r->dup_ranks, 0,
                       "%s: %u rank lines repeat a rank (rank %u first): the processes did not "
                       "form one communicator",
                       r->where, r->dup_ranks, r->dup_rank);
    double frac = c->cfg->busbw_collapse_frac;
    if (!isnan(r->peak_busbw_bytes_per_s) && r->peak_busbw_bytes_per_s > 0 &&
        r->last_size_bytes > r->peak_size_bytes &&
        r->last_size_bytes >= c->cfg->busbw_collapse_min_bytes &&
        r->last_busbw_bytes_per_s < frac * r->peak_busbw_bytes_per_s)
        sn__health_add(c, SN_DET_BUSBW_COLLAPSE, SN_HEALTH_ENT_SERVER, sv, SN_NONE, sv,
                       r->last_busbw_bytes_per_s, frac * r->peak_busbw_bytes_per_s,
                       "%s: %s busbw %.2f GB/s at %.0f B < %.2f x its peak %.2f GB/s at %.0f B",
                       r->where, coll, r->last_busbw_bytes_per_s / 1e9, r->last_size_bytes, frac,
                       r->peak_busbw_bytes_per_s / 1e9, r->peak_size_bytes);
    busbw_plateau(c, r, sv);
}

static void nccl_runs(struct sn__health_ctx *c)
{
    const struct sn_health_history *h = c->in->history;
    for (uint32_t i = 0; i < sn_health_history_nccl_run_count(h); i++) {
        const struct sn_health_nccl_run *r = sn_health_history_nccl_run(h, i);
        uint32_t sv = run_server(c, r);
        if (sv != SN_NONE)
            nccl_run(c, r, sv);
    }
}

void sn__health_detect_fabric(struct sn__health_ctx *c)
{
    busbw(c);
    nccl_runs(c);
    topology(c);
    slow_nodes(c);
}

/* ---- facility ------------------------------------------------------------------ */

struct fseries {
    const struct sn_health_series *s;
    char name[64], part[32], metric[16];
    bool feed;
};

static int cmp_fseries(const void *a, const void *b)
{
    const struct fseries *x = a, *y = b;
    int r;
    if (x->feed != y->feed)
        return x->feed ? 1 : -1;
    if ((r = strcmp(x->name, y->name)) || (r = strcmp(x->metric, y->metric)))
        return r;
    return strcmp(x->part, y->part);
}

static double latest(const struct sn_health_series *s)
{
    double t, v;
    sn_health_series_point(s, sn_health_series_kept(s) - 1, &t, &v);
    return v;
}

/* The k-th newest point (0 newest), NaN past the kept ones. */
static double back(const struct sn_health_series *s, uint32_t k)
{
    uint32_t kept = sn_health_series_kept(s);
    if (k >= kept)
        return NAN;
    double t, v;
    sn_health_series_point(s, kept - 1 - k, &t, &v);
    return v;
}

/* The series of (feed, name, part, metric) among fs[lo, hi), or NULL. */
static const struct sn_health_series *find_fs(const struct fseries *fs, uint32_t lo, uint32_t hi,
                                              const char *part, const char *metric)
{
    for (uint32_t i = lo; i < hi; i++)
        if (strcmp(fs[i].part, part) == 0 && strcmp(fs[i].metric, metric) == 0)
            return fs[i].s;
    return NULL;
}

/* fs[lo, hi) are the series of one loop, sorted by metric then part. */
static void loop_flow(struct sn__health_ctx *c, const struct fseries *fs, uint32_t lo, uint32_t hi,
                      uint32_t loop)
{
    size_t n = 0;
    for (uint32_t i = lo; i < hi; i++)
        if (strcmp(fs[i].metric, "flow") == 0)
            c->scratch[n++] = latest(fs[i].s);
    double med = sn__health_median(c->scratch, n);
    for (uint32_t i = lo; i < hi; i++) {
        if (strcmp(fs[i].metric, "flow") != 0)
            continue;
        char key[96], w[160];
        snprintf(key, sizeof(key), "%s/%s", fs[i].name, fs[i].part);
        const struct sn_baseline_entry *b =
            sn_baseline_find(c->in->baseline, SN_BASELINE_FLOW, key);
        double ref = b && !isnan(b->median) ? b->median : n >= 3 ? med : NAN;
        double v = latest(fs[i].s);
        if (isnan(ref) || v >= (1 - c->cfg->flow_dev) * ref)
            continue;
        sn__health_add(c, SN_DET_FLOW_LOW, SN_HEALTH_ENT_LOOP, loop, SN_NONE, SN_NONE, v, ref,
                       "%s: %s flow %.1f L/min, %.1f%% below the %s %.1f L/min",
                       sn__health_where(c->st, fs[i].s->source, fs[i].s->line, w, sizeof(w)),
                       fs[i].part, v, 100 * (1 - v / ref), b ? "baseline" : "branch median", ref);
    }
}

/* Heat carried by a branch at its k-th newest point, in flow x delta-T units
 * (L/min x C); NaN when a series is missing. */
static double heat(const struct fseries *fs, uint32_t lo, uint32_t hi, const char *part, uint32_t k)
{
    const struct sn_health_series *f = find_fs(fs, lo, hi, part, "flow"),
                                  *s = find_fs(fs, lo, hi, part, "supply_temp"),
                                  *r = find_fs(fs, lo, hi, part, "return_temp");
    return f && s && r ? back(f, k) * (back(r, k) - back(s, k)) : NAN;
}

static bool sensor_off(struct sn__health_ctx *c, const struct fseries *fs, uint32_t lo, uint32_t hi,
                       uint32_t i, double *dev)
{
    const char *metric = fs[i].metric;
    for (uint32_t k = 0; k < c->cfg->sensor_points; k++) {
        size_t n = 0;
        for (uint32_t j = lo; j < hi; j++)
            if (j != i && strcmp(fs[j].metric, metric) == 0 && !isnan(back(fs[j].s, k)))
                c->scratch[n++] = back(fs[j].s, k);
        double med = sn__health_median(c->scratch, n), v = back(fs[i].s, k);
        if (n < 2 || isnan(v) || !(fabs(v - med) > c->cfg->sensor_dev_c))
            return false;
        if (k == 0)
            *dev = v - med;
    }
    /* The heat balance: a real temperature change would come with its heat;
     * a drifting sensor makes this branch's flow x delta-T an outlier. */
    size_t n = 0;
    for (uint32_t j = lo; j < hi; j++)
        if (j != i && strcmp(fs[j].metric, "flow") == 0 && !isnan(heat(fs, lo, hi, fs[j].part, 0)))
            c->scratch[n++] = heat(fs, lo, hi, fs[j].part, 0);
    double q = heat(fs, lo, hi, fs[i].part, 0), qmed = sn__health_median(c->scratch, n);
    if (isnan(q) || n < 2)
        return true; /* no heat balance to consult: neighbours alone */
    return fabs(q / qmed - 1) > c->cfg->flow_dev;
}

static void loop_sensors(struct sn__health_ctx *c, const struct fseries *fs, uint32_t lo,
                         uint32_t hi, uint32_t loop)
{
    for (uint32_t i = lo; i < hi; i++) {
        double dev = 0;
        if (strcmp(fs[i].metric, "flow") == 0 || !sensor_off(c, fs, lo, hi, i, &dev))
            continue;
        char w[160];
        sn__health_add(c, SN_DET_SENSOR_DRIFT, SN_HEALTH_ENT_LOOP, loop, SN_NONE, SN_NONE,
                       latest(fs[i].s), latest(fs[i].s) - dev,
                       "%s: %s %s reads %+.1f C off its neighbours in the last %u readings, "
                       "and off the heat balance",
                       sn__health_where(c->st, fs[i].s->source, fs[i].s->line, w, sizeof(w)),
                       fs[i].part, fs[i].metric, dev, c->cfg->sensor_points);
    }
}

/* Least-squares slope of a series times its time span, over its mean. */
static double drift(const struct sn_health_series *s, double *mean_out)
{
    uint32_t n = sn_health_series_kept(s);
    double st = 0, sv = 0, stt = 0, stv = 0, t0, tn, t, v;
    sn_health_series_point(s, 0, &t0, &v);
    sn_health_series_point(s, n - 1, &tn, &v);
    for (uint32_t i = 0; i < n; i++) {
        sn_health_series_point(s, i, &t, &v);
        t -= t0;
        st += t, sv += v, stt += t * t, stv += t * v;
    }
    double den = n * stt - st * st, mean = sv / n;
    *mean_out = mean;
    if (n < 4 || !(den > 0) || !(mean != 0))
        return NAN;
    return (n * stv - st * sv) / den * (tn - t0) / mean;
}

static void feed(struct sn__health_ctx *c, const struct fseries *fs, uint32_t lo, uint32_t hi,
                 uint32_t pd)
{
    char w[160];
    for (uint32_t i = lo; i < hi; i++) {
        double mean, d = drift(fs[i].s, &mean);
        if (!isnan(d) && fabs(d) > c->cfg->feed_drift)
            sn__health_add(c, SN_DET_FEED_DRIFT, SN_HEALTH_ENT_FEED, pd, SN_NONE, SN_NONE, d,
                           c->cfg->feed_drift, "%s: %s %s drifts %+.1f%% over the last %u readings",
                           sn__health_where(c->st, fs[i].s->source, fs[i].s->line, w, sizeof(w)),
                           fs[i].part, fs[i].metric, 100 * d, sn_health_series_kept(fs[i].s));
    }
    for (uint32_t i = lo; i < hi;) { /* phases of one metric */
        uint32_t j = i;
        double sum = 0;
        while (j < hi && strcmp(fs[j].metric, fs[i].metric) == 0)
            sum += latest(fs[j++].s);
        double mean = sum / (j - i), worst = 0;
        uint32_t at = i;
        for (uint32_t k = i; k < j; k++)
            if (fabs(latest(fs[k].s) - mean) > worst)
                worst = fabs(latest(fs[k].s) - mean), at = k;
        bool volt = strcmp(fs[i].metric, "voltage") == 0;
        double lim = volt ? c->cfg->voltage_unbalance : c->cfg->current_unbalance;
        if (j - i >= 2 && (volt || strcmp(fs[i].metric, "current") == 0) && mean > 0 &&
            worst / mean > lim)
            sn__health_add(
                c, SN_DET_PHASE_IMBALANCE, SN_HEALTH_ENT_FEED, pd, SN_NONE, SN_NONE, worst / mean,
                lim, "%s: %s unbalance %.1f%% (phase %s at %.1f, mean of %u phases %.1f)",
                sn__health_where(c->st, fs[at].s->source, fs[at].s->line, w, sizeof(w)),
                fs[i].metric, 100 * worst / mean, fs[at].part, latest(fs[at].s), j - i, mean);
        i = j;
    }
}

static bool parse_fseries(const struct sn_health_series *s, struct fseries *out)
{
    char kind[8];
    const char *p = s->key, *q;
    size_t n;
    char *dst[4] = {kind, out->name, out->part, out->metric};
    size_t cap[4] = {sizeof(kind), sizeof(out->name), sizeof(out->part), sizeof(out->metric)};
    for (int k = 0; k < 4; k++) {
        q = k < 3 ? strchr(p, '/') : p + strlen(p);
        if (!q || (n = (size_t)(q - p)) >= cap[k])
            return false;
        memcpy(dst[k], p, n);
        dst[k][n] = '\0';
        p = q + (k < 3);
    }
    out->s = s;
    out->feed = strcmp(kind, "feed") == 0;
    return out->feed || strcmp(kind, "loop") == 0;
}

/* A group of series whose loop or feed name is not in the model. */
static void not_in_model(struct sn__health_ctx *c, const struct fseries *f)
{
    char w[160];
    sn__health_where(c->st, f->s->source, f->s->line, w, sizeof(w));
    sn__health_skip(c, f->feed ? SN_HEALTH_ENT_FEED : SN_HEALTH_ENT_LOOP, f->name, w,
                    "%s: %s '%s' is not in the model (expected a name such as %s): its readings "
                    "are not judged",
                    w, f->feed ? "power feed" : "cooling loop", f->name,
                    f->feed ? "sn00-pdA" : "sn00-loopL1");
}

static void facility_groups(struct sn__health_ctx *c, struct fseries *fs, uint32_t n,
                            const struct sn__name_index *loops, const struct sn__name_index *feeds)
{
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j < n && fs[j].feed == fs[i].feed && strcmp(fs[j].name, fs[i].name) == 0)
            j++;
        uint32_t id = sn__name_index_find(fs[i].feed ? feeds : loops, fs[i].name);
        if (id == SN_NONE) {
            not_in_model(c, &fs[i]);
        } else if (fs[i].feed) {
            feed(c, fs, i, j, id);
        } else {
            loop_flow(c, fs, i, j, id);
            loop_sensors(c, fs, i, j, id);
        }
        i = j;
    }
}

void sn__health_detect_facility(struct sn__health_ctx *c)
{
    const struct sn_health_history *h = c->in->history;
    uint32_t ns = sn_health_history_series_count(h), n = 0;
    struct sn__name_index loops = {0}, feeds = {0};
    struct fseries *fs = malloc(((size_t)ns + 1) * sizeof(*fs));
    if (!fs) {
        c->full = true;
        return;
    }
    for (uint32_t i = 0; i < ns; i++)
        if (sn_health_history_series(h, i)->total &&
            parse_fseries(sn_health_history_series(h, i), &fs[n]))
            n++;
    if (n == 0)
        goto out; /* no facility input: nothing to index */
    if (!sn__name_index_build(&loops, c->m, false) || !sn__name_index_build(&feeds, c->m, true)) {
        c->full = true;
        goto out;
    }
    qsort(fs, n, sizeof(*fs), cmp_fseries);
    facility_groups(c, fs, n, &loops, &feeds);
out:
    sn__name_index_release(&loops);
    sn__name_index_release(&feeds);
    free(fs);
}

/* ---- configuration ---------------------------------------------------------------- */

static int cmp_sw(const void *a, const void *b)
{
    const struct sn_sw_row *x = *(const struct sn_sw_row *const *)a,
                           *y = *(const struct sn_sw_row *const *)b;
    if (x->component != y->component)
        return x->component < y->component ? -1 : 1;
    return strcmp(x->version, y->version);
}

/* The most common version of each component (ties: the smallest string). */
static void majorities(const struct sn_health_facts *f, const struct sn_sw_row **sorted,
                       const char *major[SN_SW_COUNT], uint32_t count[SN_SW_COUNT],
                       uint32_t total[SN_SW_COUNT])
{
    for (uint32_t i = 0; i < f->n_software;) {
        uint32_t j = i;
        while (j < f->n_software && cmp_sw(&sorted[i], &sorted[j]) == 0)
            j++;
        enum sn_sw_component k = sorted[i]->component;
        total[k] += j - i;
        if (j - i > count[k])
            count[k] = j - i, major[k] = sorted[i]->version;
        i = j;
    }
}

void sn__health_detect_config(struct sn__health_ctx *c)
{
    const struct sn_health_facts *f = c->in->facts;
    if (!f || !f->n_software)
        return;
    const struct sn_sw_row **sorted = malloc(f->n_software * sizeof(*sorted));
    if (!sorted) {
        c->full = true;
        return;
    }
    for (uint32_t i = 0; i < f->n_software; i++)
        sorted[i] = &f->software[i];
    qsort(sorted, f->n_software, sizeof(*sorted), cmp_sw);
    const char *major[SN_SW_COUNT] = {0};
    uint32_t count[SN_SW_COUNT] = {0}, total[SN_SW_COUNT] = {0};
    majorities(f, sorted, major, count, total);
    for (uint32_t i = 0; i < f->n_software; i++) {
        const struct sn_sw_row *r = &f->software[i];
        uint32_t server = sn__health_server(c, r->host, "", 0);
        if (server == SN_NONE)
            continue;
        bool locked = false, allowed = false;
        char list[160] = "";
        size_t at = 0;
        for (uint32_t j = 0; j < f->n_matrix; j++) {
            if (f->matrix[j].component != r->component)
                continue;
            locked = true;
            allowed |= strcmp(f->matrix[j].version, r->version) == 0;
            if (at < sizeof(list))
                at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s", at ? " " : "",
                                       f->matrix[j].version);
        }
        const char *comp = sn_sw_component_name(r->component);
        if (locked && !allowed)
            sn__health_add(c, SN_DET_CONFIG_MATRIX, SN_HEALTH_ENT_SERVER, server, SN_NONE, server,
                           NAN, NAN, "line %u: %s %s is not in the locked matrix (%s)", r->line,
                           comp, r->version, list);
        else if (!locked && strcmp(r->version, major[r->component]) != 0)
            sn__health_add(c, SN_DET_CONFIG_MAJORITY, SN_HEALTH_ENT_SERVER, server, SN_NONE, server,
                           NAN, NAN, "line %u: %s %s differs from the majority %s (%u of %u)",
                           r->line, comp, r->version, major[r->component], count[r->component],
                           total[r->component]);
    }
    free(sorted);
}
