/*
 * lib/health/health_history.c: the little history the detectors need on top
 * of the latest-value store.
 *
 * A history is a sink wrapper: every record goes to the store first, then
 * the history updates, per store GPU, the first value and time of each
 * rising counter (PCIe replays, NVLink CRC/replay/recovery, volatile SBE)
 * and the time since which the GPU has held memory at 0% utilisation; and,
 * per key, a ring of the last SN_HEALTH_SERIES_KEEP points of each facility
 * reading and each nccl-tests bandwidth (one point per run and size).
 *
 * Invariants: memory is bounded by the store's GPU count and by
 * SN_HEALTH_SERIES_MAX series of fixed size; records past the cap are
 * counted in dropped_series, never stored. Series are kept in first-seen
 * order, so output that walks them is deterministic.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sn_health_history {
    struct sn_telem_store *store;
    struct sn_telem_sink fwd;
    double phantom_bytes;
    struct sn_health_gpu_history *gpu;
    uint32_t n_gpu;
    struct sn_health_series *series;
    uint32_t n_series, cap_series;
    uint32_t *slot; /* open addressing: series index + 1, 0 empty */
    uint32_t n_slot;
    unsigned long long dropped_series;
    struct sn_health_nccl_run *runs; /* nccl-tests runs, first-seen order */
    uint32_t n_runs, cap_runs;
    unsigned long long dropped_runs;
    struct sn__net_table *net; /* host and NIC readings (health_net.c) */
    uint32_t net_max;          /* its cap in keys */
};

static const enum sn_metric counter_metric[] = {
#define SN_X(id, metric) SN_METRIC_##metric,
    SN_HEALTH_COUNTER_LIST(SN_X)
#undef SN_X
};

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool rehash(struct sn_health_history *h, uint32_t n_slot)
{
    uint32_t *slot = calloc(n_slot, sizeof(*slot));
    if (!slot)
        return false;
    for (uint32_t i = 0; i < h->n_series; i++) {
        uint32_t j = (uint32_t)fnv(h->series[i].key) & (n_slot - 1);
        while (slot[j])
            j = (j + 1) & (n_slot - 1);
        slot[j] = i + 1;
    }
    free(h->slot);
    h->slot = slot;
    h->n_slot = n_slot;
    return true;
}

/* The series of key, created when new; NULL at the cap or out of memory. */
static struct sn_health_series *series_get(struct sn_health_history *h, const char *key)
{
    uint64_t hv = fnv(key);
    if (h->n_slot) {
        for (uint32_t j = (uint32_t)hv & (h->n_slot - 1); h->slot[j]; j = (j + 1) & (h->n_slot - 1))
            if (strcmp(h->series[h->slot[j] - 1].key, key) == 0)
                return &h->series[h->slot[j] - 1];
    }
    if (h->n_series >= SN_HEALTH_SERIES_MAX)
        return NULL;
    if (h->n_series == h->cap_series) {
        uint32_t cap = h->cap_series ? h->cap_series * 2 : 64;
        struct sn_health_series *s = realloc(h->series, cap * sizeof(*s));
        if (!s)
            return NULL;
        h->series = s;
        h->cap_series = cap;
    }
    if ((h->n_series + 1) * 2 > h->n_slot && !rehash(h, h->n_slot ? h->n_slot * 2 : 128))
        return NULL;
    struct sn_health_series *s = &h->series[h->n_series];
    memset(s, 0, sizeof(*s));
    snprintf(s->key, sizeof(s->key), "%s", key);
    uint32_t j = (uint32_t)hv & (h->n_slot - 1);
    while (h->slot[j])
        j = (j + 1) & (h->n_slot - 1);
    h->slot[j] = ++h->n_series;
    return s;
}

static void series_add(struct sn_health_history *h, const char *key, double t, double v,
                       uint32_t line, const char *source)
{
    struct sn_health_series *s = series_get(h, key);
    if (!s) {
        h->dropped_series++;
        return;
    }
    uint32_t i = s->total % SN_HEALTH_SERIES_KEEP;
    s->t[i] = t;
    s->v[i] = v;
    s->total++;
    s->line = line;
    /* The store interned the source when it took the record: find its id. */
    for (uint16_t id = 0;; id++) {
        const char *name = sn_telem_store_source_name(h->store, id);
        if (!name || !*name)
            break;
        if (strcmp(name, source) == 0) {
            s->source = id;
            break;
        }
        if (id == UINT16_MAX)
            break;
    }
}

static struct sn_health_gpu_history *gpu_hist(struct sn_health_history *h, uint32_t id)
{
    if (id >= h->n_gpu) {
        uint32_t n = sn_telem_store_gpu_count(h->store);
        if (n <= id)
            n = id + 1;
        struct sn_health_gpu_history *g = realloc(h->gpu, (size_t)n * sizeof(*g));
        if (!g)
            return NULL;
        for (uint32_t i = h->n_gpu; i < n; i++) {
            for (unsigned c = 0; c < SN_HCOUNTER_COUNT; c++)
                g[i].first_value[c] = g[i].first_time_s[c] = NAN;
            g[i].idle_held_since_s = NAN;
        }
        h->gpu = g;
        h->n_gpu = n;
    }
    return &h->gpu[id];
}

static bool ok(const struct sn_telem_reading *r)
{
    return r->status == SN_TELEM_OK;
}

static void on_samples(void *ctx, const struct sn_telem_samples *r)
{
    struct sn_health_history *h = ctx;
    if (h->fwd.samples)
        h->fwd.samples(h->fwd.ctx, r);
    uint32_t id;
    /* The record just went to the store (h->fwd): take its GPU from there
     * rather than resolving it a second time (a hash and compares per row). */
    if (!sn_telem_store_last_samples_gpu(h->store, &id))
        return;
    struct sn_health_gpu_history *g = gpu_hist(h, id);
    const struct sn_telem_gpu *sg = sn_telem_store_gpu(h->store, id);
    if (!g || !sg)
        return;
    for (unsigned c = 0; c < SN_HCOUNTER_COUNT; c++) {
        const struct sn_telem_reading *rd = &sg->m[counter_metric[c]];
        if (isnan(g->first_value[c]) && ok(rd)) {
            g->first_value[c] = rd->value;
            g->first_time_s[c] = rd->time_s;
        }
    }
    const struct sn_telem_reading *mem = &sg->m[SN_METRIC_MEM_USED];
    const struct sn_telem_reading *util = &sg->m[SN_METRIC_UTIL_GPU];
    bool held = ok(mem) && ok(util) && mem->value >= h->phantom_bytes && util->value == 0;
    if (!held)
        g->idle_held_since_s = NAN;
    else if (isnan(g->idle_held_since_s))
        g->idle_held_since_s = r->at.time_s;
}

static void on_facility(void *ctx, const struct sn_telem_facility *r)
{
    struct sn_health_history *h = ctx;
    if (h->fwd.facility)
        h->fwd.facility(h->fwd.ctx, r);
    char key[160];
    snprintf(key, sizeof(key), "%s/%s/%s/%s",
             sn_facility_kind_name(r->is_feed ? SN_FACILITY_KIND_FEED : r->kind), r->name,
             r->part, sn_facility_metric_name(r->metric));
    series_add(h, key, r->at.time_s, r->value, r->at.line, r->at.source);
}

/* Adds v to the nccl series key and tracks the run's hosts (same_hosts:
 * points in a row over the same set of hosts). */
static void nccl_point(struct sn_health_history *h, const char *key,
                       const struct sn_telem_nccl_row *r, double v)
{
    series_add(h, key, r->at.time_s, v, r->at.line, r->at.source);
    struct sn_health_series *s = series_get(h, key);
    if (s) {
        bool same = s->total > 1 && s->hosts_digest == r->hosts_digest && s->nhosts == r->nhosts;
        s->same_hosts = same ? s->same_hosts + 1 : 1;
        s->nhosts = r->nhosts;
        s->hosts_digest = r->hosts_digest;
    }
}

/* A row's latency: the mean of its out-of-place and in-place `time` (each
 * already an average over the run's iterations), either alone when the
 * other is N/A; NaN when neither was printed. */
static double round_latency_s(const struct sn_telem_nccl_row *r)
{
    double a = r->oop.present ? r->oop.time_s : NAN, b = r->ip.present ? r->ip.time_s : NAN;
    if (isnan(a) || !(a > 0))
        return b > 0 ? b : NAN;
    return b > 0 ? (a + b) / 2 : a;
}

static void on_nccl_row(void *ctx, const struct sn_telem_nccl_row *r)
{
    struct sn_health_history *h = ctx;
    if (h->fwd.nccl_row)
        h->fwd.nccl_row(h->fwd.ctx, r);
    double bw = r->oop.busbw_bytes_per_s;
    if (isnan(bw))
        bw = r->oop.calc_busbw_bytes_per_s;
    if (!r->oop.present || isnan(bw) || r->nranks == 0)
        return;
    char key[160];
    snprintf(key, sizeof(key), "nccl/%s/%u/%.0f/%s", sn_nccl_coll_name(r->coll), r->nranks,
             r->size_bytes, r->host);
    nccl_point(h, key, r, bw);
    /* Small messages: the per-round latency for acceptance's p2-latency-stable. */
    double lat = round_latency_s(r);
    if (r->size_bytes <= SN_HEALTH_LAT_MAX_BYTES && !isnan(lat)) {
        snprintf(key, sizeof(key), "nccl-time/%s/%u/%.0f/%s", sn_nccl_coll_name(r->coll), r->nranks,
                 r->size_bytes, r->host);
        nccl_point(h, key, r, lat);
    }
}

static void on_nccl_summary(void *ctx, const struct sn_telem_nccl_summary *r)
{
    struct sn_health_history *h = ctx;
    if (h->fwd.nccl_summary)
        h->fwd.nccl_summary(h->fwd.ctx, r);
    if (h->n_runs == h->cap_runs) {
        uint32_t cap = h->cap_runs ? h->cap_runs * 2 : 16;
        struct sn_health_nccl_run *n =
            cap <= SN_HEALTH_NCCL_RUNS_MAX ? realloc(h->runs, cap * sizeof(*n)) : NULL;
        if (!n) {
            h->dropped_runs++;
            return;
        }
        h->runs = n;
        h->cap_runs = cap;
    }
    struct sn_health_nccl_run *u = &h->runs[h->n_runs++];
    memset(u, 0, sizeof(*u));
    snprintf(u->host, sizeof(u->host), "%s", r->host ? r->host : "");
    snprintf(u->line_host, sizeof(u->line_host), "%s", r->line_host ? r->line_host : "");
    const char *src = r->at.source ? r->at.source : "<input>";
    snprintf(u->where, sizeof(u->where), "%s:%u", src, r->first_line);
    if (r->wrong_rows)
        snprintf(u->wrong_where, sizeof(u->wrong_where), "%s:%u", src, r->wrong_line);
    u->coll = r->coll;
    u->nranks = r->nranks;
    u->rows = r->rows;
    u->wrong_rows = r->wrong_rows;
    u->dup_ranks = r->dup_ranks;
    u->dup_rank = r->dup_rank;
    u->wrong_max = r->wrong_max;
    u->out_of_bounds = r->out_of_bounds;
    u->truncated = r->truncated;
    u->aborted = r->aborted;
    u->peak_busbw_bytes_per_s = r->peak_busbw_bytes_per_s;
    u->peak_size_bytes = r->peak_size_bytes;
    u->last_busbw_bytes_per_s = r->last_busbw_bytes_per_s;
    u->last_size_bytes = r->last_size_bytes;
    u->nhosts = r->nhosts;
    u->plateau_size_bytes = r->plateau_size_bytes;
    u->plateau_rows = r->plateau_rows;
    u->hosts_digest = r->hosts_digest;
}

uint32_t sn_health_history_nccl_run_count(const struct sn_health_history *h)
{
    return h ? h->n_runs : 0;
}

const struct sn_health_nccl_run *sn_health_history_nccl_run(const struct sn_health_history *h,
                                                            uint32_t i)
{
    return h && i < h->n_runs ? &h->runs[i] : NULL;
}

/* Plain forwarding for the other record kinds. */
#define FWD(member, type)                                                                          \
    static void fwd_##member(void *ctx, const type *r)                                             \
    {                                                                                              \
        struct sn_health_history *h = ctx;                                                         \
        if (h->fwd.member)                                                                         \
            h->fwd.member(h->fwd.ctx, r);                                                          \
    }
FWD(attr, struct sn_telem_attr)
FWD(nvlink, struct sn_telem_nvlink)
FWD(process, struct sn_telem_process)
FWD(xid, struct sn_telem_xid)
FWD(topo, struct sn_telem_topo)
FWD(nccl_rank, struct sn_telem_nccl_rank)
FWD(diag, struct sn_telem_diag)
FWD(skipped, struct sn_telem_skip)
FWD(node_check, struct sn_telem_node_check)

static void fwd_excerpt(void *ctx, const char *source, bool on)
{
    struct sn_health_history *h = ctx;
    if (h->fwd.excerpt)
        h->fwd.excerpt(h->fwd.ctx, source, on);
}

/* Host and NIC readings: kept in the net table, then forwarded. A new key
 * past the table's cap, and out of memory, are limit skips (like the
 * store's), never dropped in silence. */
static void on_net(void *ctx, const struct sn_telem_net *r)
{
    struct sn_health_history *h = ctx;
    enum sn_err rc = sn__net_table_add(&h->net, r, h->net_max);
    if (rc != SN_OK && h->fwd.skipped) {
        char detail[SN_TELEM_TEXT_MAX];
        const char *dev = r->device && r->device[0] ? r->device : NULL;
        if (rc == SN_ERR_LIMIT)
            snprintf(detail, sizeof(detail),
                     "host/NIC table full (%u keys): reading '%s'%s%s%s of host '%s' not kept",
                     h->net_max, r->text ? r->text : "", dev ? " of '" : "", dev ? dev : "",
                     dev ? "'" : "", r->host ? r->host : "");
        else
            snprintf(detail, sizeof(detail), "out of memory for a host/NIC reading");
        struct sn_telem_skip sk = {r->at.source, r->at.line, 0, SN_TELEM_SKIP_LIMIT, detail};
        h->fwd.skipped(h->fwd.ctx, &sk);
    }
    if (h->fwd.net)
        h->fwd.net(h->fwd.ctx, r);
}

static void fwd_snapshot(void *ctx, const char *host, const struct sn_telem_origin *at)
{
    struct sn_health_history *h = ctx;
    if (h->fwd.snapshot)
        h->fwd.snapshot(h->fwd.ctx, host, at);
}

enum sn_err sn_health_history_new(struct sn_telem_store *store, const struct sn_health_config *cfg,
                                  struct sn_health_history **out, struct sn_error *err)
{
    *out = NULL;
    if (!store)
        return sn_error_set(err, SN_ERR_USAGE, "a history needs a store");
    struct sn_health_history *h = calloc(1, sizeof(*h));
    if (!h)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    struct sn_health_config def;
    sn_health_config_default(&def);
    h->store = store;
    h->fwd = sn_telem_store_sink(store);
    h->phantom_bytes = cfg ? cfg->phantom_bytes : def.phantom_bytes;
    h->net_max = cfg && cfg->net_max ? cfg->net_max : SN_HEALTH_NET_MAX;
    *out = h;
    return SN_OK;
}

void sn_health_history_free(struct sn_health_history *h)
{
    if (!h)
        return;
    free(h->gpu);
    free(h->series);
    free(h->slot);
    free(h->runs);
    sn__net_table_free(h->net);
    free(h);
}

struct sn_telem_sink sn_health_history_sink(struct sn_health_history *h)
{
    return (struct sn_telem_sink){
        .ctx = h,
        .samples = on_samples,
        .attr = fwd_attr,
        .nvlink = fwd_nvlink,
        .snapshot = fwd_snapshot,
        .process = fwd_process,
        .xid = fwd_xid,
        .topo = fwd_topo,
        .nccl_rank = fwd_nccl_rank,
        .nccl_row = on_nccl_row,
        .nccl_summary = on_nccl_summary,
        .diag = fwd_diag,
        .facility = on_facility,
        .skipped = fwd_skipped,
        .net = on_net,
        .node_check = fwd_node_check,
        .excerpt = fwd_excerpt,
    };
}

uint32_t sn_health_history_net_max(const struct sn_health_history *h)
{
    return h ? h->net_max : 0;
}

unsigned long long sn_health_history_net_dropped(const struct sn_health_history *h)
{
    return h ? sn__net_table_dropped(h->net) : 0;
}

uint32_t sn_health_history_net_count(const struct sn_health_history *h)
{
    return h ? sn__net_table_count(h->net) : 0;
}

const struct sn_health_net_entry *sn_health_history_net(const struct sn_health_history *h,
                                                        uint32_t i)
{
    return h ? sn__net_table_entry(h->net, i) : NULL;
}

const struct sn_health_gpu_history *sn_health_history_gpu(const struct sn_health_history *h,
                                                          uint32_t store_gpu)
{
    return h && store_gpu < h->n_gpu ? &h->gpu[store_gpu] : NULL;
}

uint32_t sn_health_history_series_count(const struct sn_health_history *h)
{
    return h ? h->n_series : 0;
}

const struct sn_health_series *sn_health_history_series(const struct sn_health_history *h,
                                                        uint32_t i)
{
    return h && i < h->n_series ? &h->series[i] : NULL;
}

uint32_t sn_health_series_kept(const struct sn_health_series *s)
{
    return s->total < SN_HEALTH_SERIES_KEEP ? s->total : SN_HEALTH_SERIES_KEEP;
}

void sn_health_series_point(const struct sn_health_series *s, uint32_t i, double *t, double *v)
{
    uint32_t kept = sn_health_series_kept(s);
    uint32_t j = (s->total - kept + i) % SN_HEALTH_SERIES_KEEP;
    *t = s->t[j];
    *v = s->v[j];
}
