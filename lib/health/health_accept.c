/*
 * lib/health/health_accept.c: acceptance of nodes by figures, in the spec's
 * three phases, and the grey-release summary.
 *
 * Phase 1 (single node): every GPU's GEMM and HBM result within slow_floor
 * of the reference (the learned baseline of its GPU model, else the median
 * of its peers), the node's single-host all_reduce busbw at or above the
 * busbw baseline, no inactive NVLink and no critical finding. Phase 2 (inside
 * each supernode): at least accept_rounds runs of all_reduce or all_gather
 * that span the whole supernode, each (collective, ranks, size) series with
 * a coefficient of variation <= accept_cv over those rounds, and each
 * small-message (size <= accept_lat_max_bytes) latency series ("nccl-time/",
 * the mean of the out-of-place and in-place time per round) with a
 * coefficient of variation <= accept_lat_cv; a failure rejects every node
 * of the supernode. Host names match as the model's server names or as the
 * inventory's hosts (sn__accept_host_name()). A run spans supernode S when its rank
 * count is the number of GPUs of S's servers (per the model) and its hosts
 * are exactly S's servers: as many distinct hosts as S has servers, with the
 * same order-independent digest of names (sn_telem_host_digest()) as the
 * model's server names of S. A run with rank 0 in S that covers only part
 * of it (one node, some nodes) does not count. Phase 3 (mixed load): GEMM under concurrent
 * communication within accept_interference of GEMM alone, per GPU.
 *
 * Grey release: from the events of a period, MTBF in node-hours (period x
 * model servers / failures), interruptions and preemptions per job started.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(struct sn_accept_node *n, enum sn_accept_rule r, const char *fmt, ...)
    SN_PRINTF(3, 4);
static void fail(struct sn_accept_node *n, enum sn_accept_rule r, const char *fmt, ...)
{
    if (n->failed & (1u << r))
        return; /* the first reason stands */
    n->failed |= 1u << r;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->detail[r], sizeof(n->detail[r]), fmt, ap);
    va_end(ap);
}

static uint16_t gpu_model_of(const struct sn_model *m, uint32_t gpu)
{
    return (uint16_t)sn_model_server_spec(m, m->gpu_server[gpu])->gpu_model;
}

/* Reference of a test for a GPU model: the baseline median, else the peers'
 * median (scratch holds at least n_bench doubles). */
static double reference(const struct sn_health_input *in, enum sn_bench_test test, uint16_t model,
                        double *scratch)
{
    const char *name = in->model->spec->gpu_models[model].name;
    const struct sn_baseline_entry *b = sn_baseline_find(
        in->baseline, test == SN_BENCH_HBM ? SN_BASELINE_HBM : SN_BASELINE_GEMM, name);
    if (b && !isnan(b->median))
        return b->median;
    size_t n = 0;
    for (uint32_t i = 0; i < in->facts->n_bench; i++) {
        const struct sn_bench_row *r = &in->facts->bench[i];
        uint32_t g = sn__health_model_gpu(in->model, in->inventory, r->host, r->gpu);
        if (r->test == test && g != SN_NONE && gpu_model_of(in->model, g) == model)
            scratch[n++] = r->value;
    }
    return sn__health_median(scratch, n);
}

static void phase1_bench(const struct sn_health_input *in, struct sn_accept_report *a,
                         double *scratch)
{
    const struct sn_health_facts *f = in->facts;
    const struct sn_model *m = in->model;
    double floor = 1 - in->cfg->slow_floor;
    for (int test = SN_BENCH_GEMM; test <= SN_BENCH_HBM; test++)
        for (uint16_t model = 0; model < m->spec->n_gpu_models; model++) {
            double ref = NAN;
            for (uint32_t i = 0; i < f->n_bench; i++) {
                const struct sn_bench_row *r = &f->bench[i];
                uint32_t g = sn__health_model_gpu(m, in->inventory, r->host, r->gpu);
                if ((int)r->test != test || g == SN_NONE || gpu_model_of(m, g) != model)
                    continue;
                if (isnan(ref))
                    ref = reference(in, (enum sn_bench_test)test, model, scratch);
                struct sn_accept_node *n = &a->nodes[m->gpu_server[g]];
                n->tested = true;
                if (r->value < floor * ref)
                    fail(n, test == SN_BENCH_GEMM ? SN_ACCEPT_P1_GEMM : SN_ACCEPT_P1_HBM,
                         "gpu%d %s %.4g < %.0f%% of %.4g", r->gpu,
                         sn_bench_test_name((enum sn_bench_test)test), r->value, 100 * floor, ref);
            }
        }
}

static void phase3(const struct sn_health_input *in, struct sn_accept_report *a)
{
    const struct sn_health_facts *f = in->facts;
    for (uint32_t i = 0; i < f->n_bench; i++) {
        const struct sn_bench_row *x = &f->bench[i];
        if (x->test != SN_BENCH_GEMM_MIXED)
            continue;
        uint32_t g = sn__health_model_gpu(in->model, in->inventory, x->host, x->gpu);
        for (uint32_t j = 0; g != SN_NONE && j < f->n_bench; j++) {
            const struct sn_bench_row *y = &f->bench[j];
            if (y->test != SN_BENCH_GEMM || y->gpu != x->gpu || strcmp(y->host, x->host) != 0)
                continue;
            double slow = 1 - x->value / y->value;
            if (slow > in->cfg->accept_interference)
                fail(&a->nodes[in->model->gpu_server[g]], SN_ACCEPT_P3_INTERFERENCE,
                     "gpu%d GEMM %.1f%% slower under mixed load (limit %.0f%%)", x->gpu, 100 * slow,
                     100 * in->cfg->accept_interference);
            break;
        }
    }
}

/* Coefficient of variation of the newest n kept points of a series. */
static double series_cv(const struct sn_health_series *s, uint32_t n)
{
    uint32_t kept = sn_health_series_kept(s);
    double sum = 0, sq = 0, t, v;
    if (n > kept)
        n = kept;
    for (uint32_t i = kept - n; i < kept; i++) {
        sn_health_series_point(s, i, &t, &v);
        sum += v;
    }
    double mean = sum / n;
    for (uint32_t i = kept - n; i < kept; i++) {
        sn_health_series_point(s, i, &t, &v);
        sq += (v - mean) * (v - mean);
    }
    return n > 1 && mean > 0 ? sqrt(sq / (n - 1)) / mean : 0;
}

/* Series key "<prefix><coll>/<n>/<size>/<host>" (prefix "nccl/" or
 * "nccl-time/"): the collective, rank count, size and host; rest is
 * "<coll>/<n>/<size>". */
struct nkey {
    char coll[32], rest[96];
    unsigned nranks;
    double size_bytes;
    const char *host;
};

static bool nccl_key(const char *key, const char *prefix, struct nkey *k)
{
    size_t pl = strlen(prefix);
    const char *h = strrchr(key, '/');
    if (strncmp(key, prefix, pl) != 0 || !h || h < key + pl)
        return false;
    const char *c = key + pl;
    size_t n = strcspn(c, "/");
    snprintf(k->coll, sizeof(k->coll), "%.*s", (int)n, c);
    snprintf(k->rest, sizeof(k->rest), "%.*s", (int)(h - c), c);
    char *end;
    k->nranks = (unsigned)strtoul(c + n + (c[n] == '/'), &end, 10);
    k->size_bytes = *end == '/' ? strtod(end + 1, NULL) : NAN;
    k->host = h + 1;
    return true;
}

char *sn__accept_host_name(const struct sn_model *m, const struct sn_inventory *inv,
                           uint32_t server, char *buf, size_t len)
{
    const char *h = inv ? sn_inventory_host(inv, server) : NULL;
    if (h && *h)
        snprintf(buf, len, "%.*s", (int)strcspn(h, "."), h);
    else
        sn_model_server_name(m, server, buf, len);
    return buf;
}

/* What a supernode is, for checking that a run spans it. */
struct span {
    uint32_t servers, gpus;
    uint64_t digest;      /* of the model's server names */
    uint64_t host_digest; /* of the names nccl-tests prints for them (sn__accept_host_name) */
};

static bool spans_new(const struct sn_model *m, const struct sn_inventory *inv, struct span **out)
{
    struct span *sp = calloc(m->n_supernodes + 1, sizeof(*sp));
    if (!sp)
        return false;
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        char name[96];
        struct span *x = &sp[m->server_supernode[sv]];
        sn_model_server_name(m, sv, name, sizeof(name));
        x->servers++;
        x->gpus += sn_model_server_spec(m, sv)->gpus;
        x->digest += sn_telem_host_digest(name, strlen(name));
        sn__accept_host_name(m, inv, sv, name, sizeof(name));
        x->host_digest += sn_telem_host_digest(name, strlen(name));
    }
    *out = sp;
    return true;
}

static bool spans(const struct span *x, const struct sn_health_series *s, unsigned nranks)
{
    return s->hosts_digest != 0 && s->nhosts == x->servers && nranks == x->gpus &&
           (s->hosts_digest == x->digest || s->hosts_digest == x->host_digest);
}

/* Phase 1's single-node all_reduce check on one series. */
static void p1_nvlink(const struct sn_health_input *in, struct sn_accept_report *a, uint32_t sv,
                      const struct sn_health_series *s, const char *key)
{
    const struct sn_baseline_entry *b = sn_baseline_find(in->baseline, SN_BASELINE_BUSBW, key);
    double t, last;
    sn_health_series_point(s, sn_health_series_kept(s) - 1, &t, &last);
    a->nodes[sv].tested = true;
    double need = b ? (!isnan(b->min_ok) ? b->min_ok : in->cfg->busbw_floor * b->median) : NAN;
    if (last < need)
        fail(&a->nodes[sv], SN_ACCEPT_P1_NVLINK, "%s busbw %.1f GB/s < %.1f GB/s", key, last / 1e9,
             need / 1e9);
}

struct p2 {
    uint32_t rounds, partial, unstable;
    double cv;
    /* p2-latency-stable: the worst small-message series over its limit */
    double lat_cv, lat_size, lat_min, lat_med, lat_max;
    uint32_t lat_rounds;
    char lat_coll[32];
};

/* Latency stability of one spanning small-message series: its cv over the
 * newest n rounds, kept in p when over the limit and worse than before. */
static void p2_latency(const struct sn_health_input *in, struct p2 *p,
                       const struct sn_health_series *s, const struct nkey *k, uint32_t n)
{
    if (!(k->size_bytes <= in->cfg->accept_lat_max_bytes) || n < 2)
        return;
    double c = series_cv(s, n);
    if (!(c > in->cfg->accept_lat_cv) || c <= p->lat_cv)
        return;
    double v[SN_HEALTH_SERIES_KEEP], t;
    uint32_t kept = sn_health_series_kept(s);
    n = n > kept ? kept : n;
    for (uint32_t i = 0; i < n; i++)
        sn_health_series_point(s, kept - n + i, &t, &v[i]);
    double lo = v[0], hi = v[0];
    for (uint32_t i = 1; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    p->lat_cv = c;
    p->lat_size = k->size_bytes;
    p->lat_min = lo;
    p->lat_max = hi;
    p->lat_med = sn__health_median(v, n);
    p->lat_rounds = n;
    snprintf(p->lat_coll, sizeof(p->lat_coll), "%s", k->coll);
}

static void p2_verdict(const struct sn_health_input *in, struct sn_accept_report *a,
                       const struct p2 *p, const struct span *sp)
{
    const struct sn_model *m = in->model;
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        uint32_t sn = m->server_supernode[sv];
        if (p[sn].rounds < in->cfg->accept_rounds)
            fail(&a->nodes[sv], SN_ACCEPT_P2_ROUNDS,
                 "%u rounds span all %u servers/%u GPUs, %u needed (%u partial)", p[sn].rounds,
                 sp[sn].servers, sp[sn].gpus, in->cfg->accept_rounds, p[sn].partial);
        if (p[sn].unstable)
            fail(&a->nodes[sv], SN_ACCEPT_P2_STABLE,
                 "busbw varies %.1f%% over the rounds (limit %.1f%%)", 100 * p[sn].cv,
                 100 * in->cfg->accept_cv);
        if (p[sn].lat_cv > 0)
            fail(&a->nodes[sv], SN_ACCEPT_P2_LATENCY,
                 "%s %.0f B: latency cv %.1f%% over %u rounds (limit %.0f%%), %.2f-%.2f us, "
                 "median %.2f us",
                 p[sn].lat_coll, p[sn].lat_size, 100 * p[sn].lat_cv, p[sn].lat_rounds,
                 100 * in->cfg->accept_lat_cv, 1e6 * p[sn].lat_min, 1e6 * p[sn].lat_max,
                 1e6 * p[sn].lat_med);
    }
}

static void phase2_and_nvlink(const struct sn_health_input *in, struct sn_accept_report *a)
{
    const struct sn_model *m = in->model;
    struct p2 *p = calloc(m->n_supernodes + 1, sizeof(*p));
    struct span *sp = NULL;
    if (!p || !spans_new(m, in->inventory, &sp))
        goto out;
    for (uint32_t i = 0; i < sn_health_history_series_count(in->history); i++) {
        const struct sn_health_series *s = sn_health_history_series(in->history, i);
        struct nkey k;
        bool lat = nccl_key(s->key, "nccl-time/", &k);
        if (!lat && !nccl_key(s->key, "nccl/", &k))
            continue;
        uint32_t sv = sn_inventory_server(in->inventory, m, k.host);
        if (sv == SN_NONE)
            continue;
        uint32_t sn = m->server_supernode[sv];
        if (!lat && s->nhosts == 1 && strcmp(k.coll, "all_reduce") == 0)
            p1_nvlink(in, a, sv, s, k.rest);
        if (strcmp(k.coll, "all_reduce") != 0 && strcmp(k.coll, "all_gather") != 0)
            continue;
        bool whole = spans(&sp[sn], s, k.nranks);
        if (lat) {
            if (whole)
                p2_latency(in, &p[sn], s, &k, s->same_hosts);
            continue;
        }
        if (!whole) {
            p[sn].partial += s->total;
            continue;
        }
        if (s->same_hosts > p[sn].rounds)
            p[sn].rounds = s->same_hosts;
        double c = series_cv(s, s->same_hosts);
        if (c > in->cfg->accept_cv && c > p[sn].cv) {
            p[sn].cv = c;
            p[sn].unstable++;
        }
    }
    p2_verdict(in, a, p, sp);
out:
    free(p);
    free(sp);
}

/* ---- measured against theory (busbw-theory) ---------------------------------------- */

/* A server by the digest of one of its names (model, or as nccl-tests
 * prints its inventory host), for finding the other host of a pair. */
struct named {
    uint64_t digest;
    uint32_t server;
};

static int named_cmp(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    return x->digest < y->digest ? -1 : x->digest > y->digest;
}

static struct named *names_new(const struct sn_model *m, const struct sn_inventory *inv)
{
    struct named *t = calloc(2 * (size_t)m->n_servers + 1, sizeof(*t));
    if (!t)
        return NULL;
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        char name[96];
        sn_model_server_name(m, sv, name, sizeof(name));
        t[2 * sv] = (struct named){sn_telem_host_digest(name, strlen(name)), sv};
        sn__accept_host_name(m, inv, sv, name, sizeof(name));
        t[2 * sv + 1] = (struct named){sn_telem_host_digest(name, strlen(name)), sv};
    }
    qsort(t, 2 * (size_t)m->n_servers, sizeof(*t), named_cmp);
    return t;
}

static uint32_t named_find(const struct sn_model *m, const struct named *t, uint64_t d)
{
    struct named key = {d, 0};
    const struct named *x = bsearch(&key, t, 2 * (size_t)m->n_servers, sizeof(*t), named_cmp);
    return x ? x->server : SN_NONE;
}

/* The layout of run u with rank 0 on sv: from its hosts where they are
 * known (one host; exactly the servers of sv's supernode; a pair whose
 * other host is found by digest), else from its counts. */
static void run_layout(const struct sn_model *m, const struct span *sp, const struct named *t,
                       const struct sn_health_nccl_run *u, struct sn_accept_run *r)
{
    uint32_t sn = m->server_supernode[r->server];
    bool wide = sn_model_supernode_template(m, sn)->scaleup.domain != SN_SCALEUP_SERVER;
    enum sn_busbw_layout inside = wide ? SN_BUSBW_SUPERNODE_SCALEUP : SN_BUSBW_SCALEOUT;
    r->peer = SN_NONE;
    r->hosts_known = true;
    if (u->nhosts <= 1) {
        r->layout = SN_BUSBW_SERVER;
        return;
    }
    if (u->hosts_digest && u->nhosts == sp[sn].servers &&
        (u->hosts_digest == sp[sn].digest || u->hosts_digest == sp[sn].host_digest)) {
        r->layout = inside;
        return;
    }
    if (u->hosts_digest && u->nhosts == 2) {
        uint32_t o =
            named_find(m, t, u->hosts_digest - sn_telem_host_digest(u->host, strlen(u->host)));
        if (o != SN_NONE && o != r->server) {
            r->peer = o;
            r->layout = m->server_supernode[o] == sn ? inside : SN_BUSBW_CROSS_SUPERNODE;
            return;
        }
    }
    r->hosts_known = false;
    r->layout = sn_health_busbw_layout(m, r->server, u->nranks, u->nhosts);
}

static void theory_fail(const struct sn_health_input *in, struct sn_accept_report *a,
                        const struct sn_accept_run *r, const struct span *sp)
{
    const struct sn_model *m = in->model;
    uint32_t sn = m->server_supernode[r->server];
    bool whole = r->hosts_known && r->nhosts > 2 && r->nhosts == sp[sn].servers;
    for (uint32_t sv = 0; sv < m->n_servers; sv++) {
        if (sv != r->server && sv != r->peer && !(whole && m->server_supernode[sv] == sn))
            continue;
        fail(&a->nodes[sv], SN_ACCEPT_BUSBW_THEORY,
             "%s x%u: busbw %.1f GB/s is %.2f of %.1f GB/s (%s), floor %.2f; %s",
             sn_nccl_coll_name(r->coll), r->nranks, r->busbw_bytes_per_s / 1e9, r->ratio,
             r->theory_bytes_per_s / 1e9, sn_busbw_layout_name(r->layout), r->eff, r->where);
    }
}

static enum sn_err theory(const struct sn_health_input *in, struct sn_accept_report *a)
{
    const struct sn_model *m = in->model;
    uint32_t n = sn_health_history_nccl_run_count(in->history);
    struct span *sp = NULL;
    struct named *t = names_new(m, in->inventory);
    a->runs = calloc((size_t)n + 1, sizeof(*a->runs));
    if (!t || !a->runs || !spans_new(m, in->inventory, &sp)) {
        free(t);
        free(sp);
        return SN_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct sn_health_nccl_run *u = sn_health_history_nccl_run(in->history, i);
        uint32_t sv = sn_inventory_server(in->inventory, m, u->host);
        if (sv == SN_NONE || u->nranks < 2 || !(u->peak_busbw_bytes_per_s > 0))
            continue;
        struct sn_accept_run *r = &a->runs[a->n_runs++];
        snprintf(r->where, sizeof(r->where), "%s", u->where);
        r->coll = u->coll;
        r->nranks = u->nranks;
        r->nhosts = u->nhosts ? u->nhosts : 1;
        r->server = sv;
        run_layout(m, sp, t, u, r);
        r->size_bytes = u->peak_size_bytes;
        r->busbw_bytes_per_s = u->peak_busbw_bytes_per_s;
        r->theory_bytes_per_s = sn_health_busbw_theory(m, sv, r->layout, NULL, 0);
        r->eff = sn_health_busbw_eff(in->cfg, r->layout);
        r->ratio = r->busbw_bytes_per_s / r->theory_bytes_per_s;
        r->compared = !isnan(r->ratio) && u->last_size_bytes >= in->cfg->busbw_plateau_min_bytes;
        r->below = r->compared && r->ratio < r->eff;
        if (r->below)
            theory_fail(in, a, r, sp);
    }
    free(t);
    free(sp);
    return SN_OK;
}

static void phase1_health(const struct sn_health_input *in, const struct sn_health_report *r,
                          struct sn_accept_report *a)
{
    for (uint32_t i = 0; r && i < r->n_findings; i++) {
        const struct sn_health_finding *f = &r->findings[i];
        uint32_t sv = f->server;
        if (sv == SN_NONE || sv >= a->n_nodes)
            continue;
        if (f->detector == SN_DET_NVLINK_INACTIVE || f->detector == SN_DET_NVLINK_UNCONFIRMED)
            fail(&a->nodes[sv], SN_ACCEPT_P1_NVLINK, "%s", f->evidence);
        if (f->severity == SN_HEALTH_SEV_CRIT)
            fail(&a->nodes[sv], SN_ACCEPT_P1_HEALTH, "%s: %s", sn_detector_info(f->detector)->name,
                 f->evidence);
    }
    (void)in;
}

static void grey(const struct sn_health_input *in, struct sn_accept_report *a)
{
    const struct sn_health_facts *f = in->facts;
    if (!f->n_events)
        return;
    struct sn_grey_release *g = &a->grey;
    double lo = INFINITY, hi = -INFINITY;
    for (uint32_t i = 0; i < f->n_events; i++) {
        const struct sn_event_row *e = &f->events[i];
        lo = e->time_s < lo ? e->time_s : lo;
        hi = e->time_s > hi ? e->time_s : hi;
        g->failures += e->kind == SN_EVENT_FAILURE;
        g->interruptions += e->kind == SN_EVENT_INTERRUPTION;
        g->preemptions += e->kind == SN_EVENT_PREEMPTION;
        g->jobs += e->kind == SN_EVENT_JOB_START;
    }
    g->period_s = hi - lo;
    double node_hours = g->period_s / 3600.0 * in->model->n_servers;
    g->mtbf_node_hours = g->failures ? node_hours / g->failures : INFINITY;
    g->interruption_rate = g->jobs ? (double)g->interruptions / g->jobs : NAN;
    g->preemption_rate = g->jobs ? (double)g->preemptions / g->jobs : NAN;
    a->has_grey = true;
}

void sn_accept_report_free(struct sn_accept_report *r)
{
    if (!r)
        return;
    free(r->nodes);
    free(r->runs);
    free(r);
}

enum sn_err sn_health_accept(const struct sn_health_input *in,
                             const struct sn_health_report *analysis, struct sn_accept_report **out,
                             struct sn_error *err)
{
    *out = NULL;
    if (!in || !in->model)
        return sn_error_set(err, SN_ERR_USAGE, "acceptance needs a model");
    struct sn_health_config def;
    sn_health_config_default(&def);
    struct sn_health_input inp = *in;
    struct sn_health_facts empty = {0};
    if (!inp.cfg)
        inp.cfg = &def;
    if (!inp.facts)
        inp.facts = &empty;
    struct sn_accept_report *a = calloc(1, sizeof(*a));
    double *scratch = malloc(((size_t)inp.facts->n_bench + 1) * sizeof(double));
    if (a)
        a->nodes = calloc(in->model->n_servers + 1, sizeof(*a->nodes));
    if (!a || !a->nodes || !scratch) {
        free(scratch);
        sn_accept_report_free(a);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    }
    a->n_nodes = in->model->n_servers;
    for (uint32_t s = 0; s < a->n_nodes; s++)
        a->nodes[s].server = s;
    phase1_bench(&inp, a, scratch);
    phase2_and_nvlink(&inp, a);
    phase1_health(&inp, analysis, a);
    phase3(&inp, a);
    grey(&inp, a);
    if (theory(&inp, a) != SN_OK) {
        free(scratch);
        sn_accept_report_free(a);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    }
    for (uint32_t s = 0; s < a->n_nodes; s++) {
        struct sn_accept_node *n = &a->nodes[s];
        n->accepted = n->tested && n->failed == 0;
        if (!n->tested)
            a->untested++;
        else if (n->accepted)
            a->accepted++;
        else
            a->rejected++;
    }
    free(scratch);
    *out = a;
    return SN_OK;
}
