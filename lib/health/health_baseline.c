/*
 * lib/health/health_baseline.c: expected values learned from acceptance runs
 * (GEMM and HBM per GPU model, nccl-tests busbw per collective, rank count
 * and size, flow per cooling-loop branch) and declared ones, with their
 * statistics (median, MAD, count), stored as versioned JSON.
 *
 * Invariants: at most one entry per (kind, key); at most
 * SN_HEALTH_BASELINE_MAX entries; learning replaces the learned statistics
 * of a key and keeps its declared minimum. Entries are kept sorted by (kind,
 * key), so the JSON is the same bytes for the same inputs.
 */
#include "health/health_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* ---- statistics (shared with the detectors) -------------------------------- */

static void swap(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* Hoare's selection: v[k] is the k-th smallest afterwards. O(n) expected;
 * the pivot is the middle element, which is fine on our inputs. */
static double select_k(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                swap(&v[i], &v[j]);
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

double sn__health_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    double hi = select_k(v, n, n / 2);
    if (n % 2)
        return hi;
    double lo = v[0];
    for (size_t i = 1; i < n / 2; i++) /* the largest of the lower half */
        if (v[i] > lo)
            lo = v[i];
    return (lo + hi) / 2;
}

double sn__health_mad(double *v, size_t n, double med)
{
    for (size_t i = 0; i < n; i++)
        v[i] = fabs(v[i] - med);
    return sn__health_median(v, n);
}

double sn__health_robust_z(double x, double med, double mad)
{
    if (mad > 0)
        return 0.6745 * (x - med) / mad;
    return x == med ? 0 : (x < med ? -INFINITY : INFINITY);
}

/* ---- entries ---------------------------------------------------------------- */

void sn_baseline_init(struct sn_baseline *b)
{
    memset(b, 0, sizeof(*b));
    b->version = 1;
}

void sn_baseline_release(struct sn_baseline *b)
{
    if (!b)
        return;
    free(b->e);
    memset(b, 0, sizeof(*b));
}

static int cmp_entry(const void *a, const void *b)
{
    const struct sn_baseline_entry *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->key, y->key);
}

const struct sn_baseline_entry *sn_baseline_find(const struct sn_baseline *b,
                                                 enum sn_baseline_kind kind, const char *key)
{
    if (!b || !b->n)
        return NULL;
    struct sn_baseline_entry k = {.kind = kind};
    snprintf(k.key, sizeof(k.key), "%s", key);
    return bsearch(&k, b->e, b->n, sizeof(k), cmp_entry);
}

/* The entry of (kind, key), added (empty, sorted in) when new. */
static struct sn_baseline_entry *entry(struct sn_baseline *b, enum sn_baseline_kind kind,
                                       const char *key, struct sn_error *err)
{
    struct sn_baseline_entry *e = (struct sn_baseline_entry *)sn_baseline_find(b, kind, key);
    if (e)
        return e;
    if (b->n >= SN_HEALTH_BASELINE_MAX) {
        sn_error_set(err, SN_ERR_LIMIT, "more than %u baseline entries", SN_HEALTH_BASELINE_MAX);
        return NULL;
    }
    if (b->n == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 32;
        struct sn_baseline_entry *ne = realloc(b->e, cap * sizeof(*ne));
        if (!ne) {
            sn_error_set(err, SN_ERR_NOMEM, "out of memory");
            return NULL;
        }
        b->e = ne;
        b->cap = cap;
    }
    struct sn_baseline_entry n = {.kind = kind, .median = NAN, .mad = NAN, .min_ok = NAN};
    snprintf(n.key, sizeof(n.key), "%s", key);
    uint32_t at = 0;
    while (at < b->n && cmp_entry(&b->e[at], &n) < 0)
        at++;
    memmove(&b->e[at + 1], &b->e[at], (b->n - at) * sizeof(n));
    b->e[at] = n;
    b->n++;
    return &b->e[at];
}

enum sn_err sn_baseline_add_declared(struct sn_baseline *b, struct sn_error *err)
{
    /* Azure HPC node health checks (github.com/Azure/azurehpc-health-checks),
     * conf/nd96isr_h200_v5.conf: `check_nccl_allreduce 431.0 1 16G` (8 x H200,
     * all_reduce_perf -b 16G -e 16G); nd96isr_h100_v5.conf uses 460.0 for
     * H100. The lower figure is declared for both. 16G in nccl-tests is GiB. */
    struct sn_baseline_entry *e = entry(b, SN_BASELINE_BUSBW, "all_reduce/8/17179869184", err);
    if (!e)
        return err ? err->code : SN_ERR_NOMEM;
    e->min_ok = 431e9;
    snprintf(e->note, sizeof(e->note),
             "Azure HPC node health checks, nd96isr_h200_v5: all_reduce 16G >= 431 GB/s busbw");
    return SN_OK;
}

/* ---- learning ---------------------------------------------------------------- */

struct sample {
    char key[96];
    double v;
};

static int cmp_sample(const void *a, const void *b)
{
    return strcmp(((const struct sample *)a)->key, ((const struct sample *)b)->key);
}

/* Sorts samples by key and stores median/MAD/count per key. */
static enum sn_err learn_groups(struct sn_baseline *b, enum sn_baseline_kind kind, struct sample *s,
                                size_t n, struct sn_error *err)
{
    if (n == 0)
        return SN_OK;
    qsort(s, n, sizeof(*s), cmp_sample);
    double *v = malloc(n * sizeof(*v));
    if (!v)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    enum sn_err rc = SN_OK;
    for (size_t i = 0; i < n && rc == SN_OK;) {
        size_t j = i;
        while (j < n && strcmp(s[j].key, s[i].key) == 0) {
            v[j - i] = s[j].v;
            j++;
        }
        struct sn_baseline_entry *e = entry(b, kind, s[i].key, err);
        if (!e) {
            rc = err ? err->code : SN_ERR_NOMEM;
            break;
        }
        e->median = sn__health_median(v, j - i);
        e->mad = sn__health_mad(v, j - i, e->median);
        e->count = (uint32_t)(j - i);
        i = j;
    }
    free(v);
    return rc;
}

static const char *bench_gpu_model(const struct sn_model *model, const struct sn_telem_store *st,
                                   const struct sn_bench_row *r)
{
    if (model) {
        uint32_t g = sn__health_model_gpu(model, NULL, r->host, r->gpu);
        if (g != SN_NONE)
            return sn__health_gpu_model_name(model, g);
    }
    uint32_t id;
    struct sn_telem_gpu_ref ref = {.host = r->host, .index = r->gpu, .bus = SN_TELEM_BUS_NONE};
    if (st && sn_telem_store_find_gpu(st, &ref, &id)) {
        const char *name = sn_telem_store_gpu(st, id)->attr[SN_TELEM_ATTR_NAME];
        if (*name)
            return name;
    }
    return "unknown";
}

static enum sn_err learn_bench(struct sn_baseline *b, const struct sn_model *model,
                               const struct sn_telem_store *st, const struct sn_health_facts *f,
                               enum sn_bench_test test, struct sn_error *err)
{
    struct sample *s = malloc((f->n_bench ? f->n_bench : 1) * sizeof(*s));
    if (!s)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (uint32_t i = 0; i < f->n_bench; i++) {
        if (f->bench[i].test != test)
            continue;
        snprintf(s[n].key, sizeof(s[n].key), "%s", bench_gpu_model(model, st, &f->bench[i]));
        s[n++].v = f->bench[i].value;
    }
    enum sn_err rc =
        learn_groups(b, test == SN_BENCH_GEMM ? SN_BASELINE_GEMM : SN_BASELINE_HBM, s, n, err);
    free(s);
    return rc;
}

/* Busbw from "nccl/<coll>/<n>/<size>/<host>" series, flow from
 * "loop/<name>/<part>/flow" series. */
static enum sn_err learn_series(struct sn_baseline *b, const struct sn_health_history *h, bool flow,
                                struct sn_error *err)
{
    uint32_t ns = sn_health_history_series_count(h);
    size_t cap = (size_t)ns * SN_HEALTH_SERIES_KEEP + 1;
    struct sample *s = malloc(cap * sizeof(*s));
    if (!s)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (uint32_t i = 0; i < ns; i++) {
        const struct sn_health_series *se = sn_health_history_series(h, i);
        char key[96];
        if (flow) {
            size_t kl = strlen(se->key);
            if (strncmp(se->key, "loop/", 5) != 0 || kl < 10 ||
                strcmp(se->key + kl - 5, "/flow") != 0)
                continue;
            snprintf(key, sizeof(key), "%.*s", (int)(kl - 10), se->key + 5);
        } else {
            const char *host = strrchr(se->key, '/');
            if (strncmp(se->key, "nccl/", 5) != 0 || !host)
                continue;
            snprintf(key, sizeof(key), "%.*s", (int)(host - se->key - 5), se->key + 5);
        }
        for (uint32_t p = 0; p < sn_health_series_kept(se); p++) {
            double t;
            memcpy(s[n].key, key, sizeof(key));
            sn_health_series_point(se, p, &t, &s[n].v);
            n++;
        }
    }
    enum sn_err rc = learn_groups(b, flow ? SN_BASELINE_FLOW : SN_BASELINE_BUSBW, s, n, err);
    free(s);
    return rc;
}

enum sn_err sn_baseline_learn(struct sn_baseline *b, const struct sn_model *model,
                              const struct sn_telem_store *store,
                              const struct sn_health_history *hist,
                              const struct sn_health_facts *facts, struct sn_error *err)
{
    enum sn_err rc = SN_OK;
    if (facts) {
        rc = learn_bench(b, model, store, facts, SN_BENCH_GEMM, err);
        if (rc == SN_OK)
            rc = learn_bench(b, model, store, facts, SN_BENCH_HBM, err);
    }
    if (hist && rc == SN_OK)
        rc = learn_series(b, hist, false, err);
    if (hist && rc == SN_OK)
        rc = learn_series(b, hist, true, err);
    return rc;
}

/* ---- JSON ------------------------------------------------------------------ */

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

enum sn_err sn_baseline_to_json(const struct sn_baseline *b, char **out, struct sn_error *err)
{
    *out = NULL;
    json_t *root = json_pack("{s:s, s:i}", "format", "sn-health-baseline", "version", 1);
    json_t *arr = json_array();
    if (!root || !arr || json_object_set_new(root, "entries", arr) != 0) {
        json_decref(root);
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < b->n; i++) {
        const struct sn_baseline_entry *e = &b->e[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o) != 0)
            goto nomem;
        json_object_set_new(o, "kind", json_string(sn_baseline_kind_name(e->kind)));
        json_object_set_new(o, "key", json_string(e->key));
        json_object_set_new(o, "median", num_or_null(e->median));
        json_object_set_new(o, "mad", num_or_null(e->mad));
        json_object_set_new(o, "count", json_integer(e->count));
        json_object_set_new(o, "min", num_or_null(e->min_ok));
        if (*e->note)
            json_object_set_new(o, "note", json_string(e->note));
    }
    *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!*out)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    return SN_OK;
nomem:
    json_decref(root);
    return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
}

static enum sn_err bad_entry(const char *src, size_t i, const char *field, const char *want,
                             struct sn_error *err)
{
    return sn_error_set(err, SN_ERR_INVALID, "%s: entries[%zu].%s: expected %s", src, i, field,
                        want);
}

/* A number field or null (NaN); false when something else. */
static bool opt_number(json_t *o, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    if (!v || json_is_null(v)) {
        *out = NAN;
        return true;
    }
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return isfinite(*out) && *out >= 0;
}

static enum sn_err read_entry(struct sn_baseline *b, json_t *o, size_t i, const char *src,
                              struct sn_error *err)
{
    if (!json_is_object(o))
        return bad_entry(src, i, "", "an object", err);
    const char *kind = json_string_value(json_object_get(o, "kind"));
    const char *key = json_string_value(json_object_get(o, "key"));
    int k = -1;
    for (int j = 0; kind && j < SN_BASELINE_COUNT; j++)
        if (strcmp(kind, sn_baseline_kind_name((enum sn_baseline_kind)j)) == 0)
            k = j;
    if (k < 0)
        return bad_entry(src, i, "kind", "\"gemm\", \"hbm\", \"busbw\" or \"flow\"", err);
    if (!key || !*key || strlen(key) >= sizeof(b->e[0].key))
        return bad_entry(src, i, "key", "a non-empty string under 96 bytes", err);
    double med, mad, min;
    if (!opt_number(o, "median", &med))
        return bad_entry(src, i, "median", "a non-negative number or null", err);
    if (!opt_number(o, "mad", &mad))
        return bad_entry(src, i, "mad", "a non-negative number or null", err);
    if (!opt_number(o, "min", &min))
        return bad_entry(src, i, "min", "a non-negative number or null", err);
    json_t *cnt = json_object_get(o, "count");
    if (cnt && (!json_is_integer(cnt) || json_integer_value(cnt) < 0 ||
                json_integer_value(cnt) > UINT32_MAX))
        return bad_entry(src, i, "count", "a non-negative integer", err);
    if (isnan(med) && isnan(min))
        return bad_entry(src, i, "median", "a median or a min", err);
    struct sn_baseline_entry *e = entry(b, (enum sn_baseline_kind)k, key, err);
    if (!e)
        return err ? err->code : SN_ERR_NOMEM;
    e->median = med;
    e->mad = mad;
    e->min_ok = min;
    e->count = cnt ? (uint32_t)json_integer_value(cnt) : 0;
    const char *note = json_string_value(json_object_get(o, "note"));
    snprintf(e->note, sizeof(e->note), "%s", note ? note : "");
    return SN_OK;
}

enum sn_err sn_baseline_from_json(struct sn_baseline *b, const char *data, size_t len,
                                  const char *source, struct sn_error *err)
{
    const char *src = source ? source : "<baseline>";
    json_error_t je;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return sn_error_set_at(err, SN_ERR_SYNTAX, (unsigned)je.line, (unsigned)je.column,
                               "%s:%d:%d: %s", src, je.line, je.column, je.text);
    enum sn_err rc = SN_OK;
    const char *fmt = json_string_value(json_object_get(root, "format"));
    json_t *ver = json_object_get(root, "version");
    json_t *arr = json_object_get(root, "entries");
    if (!fmt || strcmp(fmt, "sn-health-baseline") != 0)
        rc = sn_error_set(err, SN_ERR_INVALID, "%s: format: expected \"sn-health-baseline\"", src);
    else if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        rc = sn_error_set(err, SN_ERR_INVALID, "%s: version: expected 1", src);
    else if (!json_is_array(arr))
        rc = sn_error_set(err, SN_ERR_INVALID, "%s: entries: expected an array", src);
    for (size_t i = 0; rc == SN_OK && i < json_array_size(arr); i++)
        rc = read_entry(b, json_array_get(arr, i), i, src, err);
    json_decref(root);
    return rc;
}
