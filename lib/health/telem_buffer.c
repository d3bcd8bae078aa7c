/*
 * A record buffer for one telemetry batch, so that a batch is parsed once
 * (docs/PERFORMANCE.md "Telemetry validation in one pass"): the parser's
 * records go to a tap (the range check) and are deep-copied here, in
 * order; only when the whole batch passed are they replayed into the
 * ingest sink. Nothing of a refused batch reaches the store.
 *
 * Memory: one arena of chunks (records, their strings and sample arrays,
 * 8-byte aligned) and one array of (kind, record) entries; both under a
 * hard cap (bytes), past which the buffer fails and the batch is refused.
 * Only the kinds the ingest uses are kept: samples, attributes, NVLink
 * states, Xids, facility readings, host/NIC readings, the benchmark
 * runners' nccl-tests and dcgmi diag records, excerpt marks (a source
 * that does not list every GPU of its host) and skipped lines.
 */
#include <sn/telem_buffer.h>

#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES (64u << 10)

enum rec_kind {
    REC_SAMPLES,
    REC_ATTR,
    REC_NVLINK,
    REC_XID,
    REC_FACILITY,
    REC_SKIP,
    REC_NET,
    REC_NCCL_RANK,
    REC_NCCL_ROW,
    REC_NCCL_SUMMARY,
    REC_DIAG,
    REC_EXCERPT
};

struct entry {
    enum rec_kind kind;
    void *rec;
};

struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(8) unsigned char data[];
};

struct sn_telem_buffer {
    struct sn_telem_sink tap;
    struct chunk *chunks; /* newest first */
    struct entry *entries;
    size_t n, cap_entries;
    size_t bytes, cap_bytes;
    bool failed;
};

struct sn_telem_buffer *sn_telem_buffer_new(const struct sn_telem_sink *tap, size_t cap_bytes)
{
    struct sn_telem_buffer *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    if (tap)
        b->tap = *tap;
    b->cap_bytes = cap_bytes;
    return b;
}

void sn_telem_buffer_free(struct sn_telem_buffer *b)
{
    if (!b)
        return;
    for (struct chunk *c = b->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(b->entries);
    free(b);
}

bool sn_telem_buffer_failed(const struct sn_telem_buffer *b)
{
    return b->failed;
}

static void *take(struct sn_telem_buffer *b, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    struct chunk *c = b->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        if (b->bytes + cap > b->cap_bytes || !(c = malloc(sizeof(*c) + cap))) {
            b->failed = true;
            return NULL;
        }
        b->bytes += cap;
        c->used = 0;
        c->cap = cap;
        c->next = b->chunks;
        b->chunks = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static const char *copy_str(struct sn_telem_buffer *b, const char *s)
{
    if (!s || b->failed)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = take(b, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static void *copy_rec(struct sn_telem_buffer *b, enum rec_kind kind, const void *rec, size_t n)
{
    if (b->failed)
        return NULL;
    if (b->n == b->cap_entries) {
        size_t cap = b->cap_entries ? b->cap_entries * 2 : 256;
        struct entry *grown = (cap * sizeof(*grown) <= b->cap_bytes)
                                  ? realloc(b->entries, cap * sizeof(*grown))
                                  : NULL;
        if (!grown) {
            b->failed = true;
            return NULL;
        }
        b->entries = grown;
        b->cap_entries = cap;
    }
    void *p = take(b, n);
    if (!p)
        return NULL;
    memcpy(p, rec, n);
    b->entries[b->n++] = (struct entry){kind, p};
    return p;
}

static void copy_gpu(struct sn_telem_buffer *b, struct sn_telem_gpu_ref *g,
                     struct sn_telem_origin *at)
{
    g->host = copy_str(b, g->host);
    g->uuid = copy_str(b, g->uuid);
    if (at)
        at->source = copy_str(b, at->source);
}

static void on_samples(void *ctx, const struct sn_telem_samples *r)
{
    struct sn_telem_buffer *b = ctx;
    if (b->tap.samples)
        b->tap.samples(b->tap.ctx, r);
    struct sn_telem_samples *c = copy_rec(b, REC_SAMPLES, r, sizeof(*r));
    if (!c)
        return;
    copy_gpu(b, &c->gpu, &c->at);
    struct sn_telem_sample *v = r->n ? take(b, r->n * sizeof(*v)) : NULL;
    if (v)
        memcpy(v, r->v, r->n * sizeof(*v));
    c->v = v;
}

static void on_attr(void *ctx, const struct sn_telem_attr *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_attr *c = copy_rec(b, REC_ATTR, r, sizeof(*r));
    if (!c)
        return;
    copy_gpu(b, &c->gpu, &c->at);
    c->text = copy_str(b, r->text);
}

static void on_nvlink(void *ctx, const struct sn_telem_nvlink *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_nvlink *c = copy_rec(b, REC_NVLINK, r, sizeof(*r));
    if (c)
        copy_gpu(b, &c->gpu, &c->at);
}

static void on_xid(void *ctx, const struct sn_telem_xid *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_xid *c = copy_rec(b, REC_XID, r, sizeof(*r));
    if (!c)
        return;
    copy_gpu(b, &c->gpu, &c->at);
    c->name = copy_str(b, r->name);
    c->message = copy_str(b, r->message);
}

static void on_facility(void *ctx, const struct sn_telem_facility *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_facility *c = copy_rec(b, REC_FACILITY, r, sizeof(*r));
    if (!c)
        return;
    c->at.source = copy_str(b, r->at.source);
    c->name = copy_str(b, r->name);
    c->part = copy_str(b, r->part);
}

static void on_skipped(void *ctx, const struct sn_telem_skip *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_skip *c = copy_rec(b, REC_SKIP, r, sizeof(*r));
    if (!c)
        return;
    c->source = copy_str(b, r->source);
    c->detail = copy_str(b, r->detail);
}

static void on_net(void *ctx, const struct sn_telem_net *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_net *c = copy_rec(b, REC_NET, r, sizeof(*r));
    if (!c)
        return;
    c->host = copy_str(b, r->host);
    c->at.source = copy_str(b, r->at.source);
    c->device = copy_str(b, r->device);
    c->text = copy_str(b, r->text);
    double *v = r->n_cpu && r->per_cpu ? take(b, r->n_cpu * sizeof(*v)) : NULL;
    if (v)
        memcpy(v, r->per_cpu, r->n_cpu * sizeof(*v));
    c->per_cpu = v;
}

static void on_nccl_rank(void *ctx, const struct sn_telem_nccl_rank *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_nccl_rank *c = copy_rec(b, REC_NCCL_RANK, r, sizeof(*r));
    if (!c)
        return;
    copy_gpu(b, &c->gpu, &c->at);
    c->model = copy_str(b, r->model);
}

static void on_nccl_row(void *ctx, const struct sn_telem_nccl_row *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_nccl_row *c = copy_rec(b, REC_NCCL_ROW, r, sizeof(*r));
    if (!c)
        return;
    c->at.source = copy_str(b, r->at.source);
    c->host = copy_str(b, r->host);
    c->type = copy_str(b, r->type);
    c->redop = copy_str(b, r->redop);
}

static void on_nccl_summary(void *ctx, const struct sn_telem_nccl_summary *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_nccl_summary *c = copy_rec(b, REC_NCCL_SUMMARY, r, sizeof(*r));
    if (!c)
        return;
    c->at.source = copy_str(b, r->at.source);
    c->host = copy_str(b, r->host);
    c->line_host = copy_str(b, r->line_host);
}

static void on_diag(void *ctx, const struct sn_telem_diag *r)
{
    struct sn_telem_buffer *b = ctx;
    struct sn_telem_diag *c = copy_rec(b, REC_DIAG, r, sizeof(*r));
    if (!c)
        return;
    copy_gpu(b, &c->gpu, &c->at);
    c->category = copy_str(b, r->category);
    c->test = copy_str(b, r->test);
    c->detail = copy_str(b, r->detail);
}

struct excerpt {
    const char *source;
    bool on;
};

static void on_excerpt(void *ctx, const char *source, bool on)
{
    struct sn_telem_buffer *b = ctx;
    struct excerpt e = {NULL, on};
    struct excerpt *c = copy_rec(b, REC_EXCERPT, &e, sizeof(e));
    if (c)
        c->source = copy_str(b, source);
}

struct sn_telem_sink sn_telem_buffer_sink(struct sn_telem_buffer *b)
{
    return (struct sn_telem_sink){.ctx = b,
                                  .samples = on_samples,
                                  .attr = on_attr,
                                  .nvlink = on_nvlink,
                                  .xid = on_xid,
                                  .facility = on_facility,
                                  .skipped = on_skipped,
                                  .net = on_net,
                                  .nccl_rank = on_nccl_rank,
                                  .nccl_row = on_nccl_row,
                                  .nccl_summary = on_nccl_summary,
                                  .diag = on_diag,
                                  .excerpt = on_excerpt};
}

void sn_telem_buffer_replay(const struct sn_telem_buffer *b, const struct sn_telem_sink *to)
{
    for (size_t i = 0; i < b->n && !b->failed; i++) {
        const void *r = b->entries[i].rec;
        switch (b->entries[i].kind) {
        case REC_SAMPLES:
            if (to->samples)
                to->samples(to->ctx, r);
            break;
        case REC_ATTR:
            if (to->attr)
                to->attr(to->ctx, r);
            break;
        case REC_NVLINK:
            if (to->nvlink)
                to->nvlink(to->ctx, r);
            break;
        case REC_XID:
            if (to->xid)
                to->xid(to->ctx, r);
            break;
        case REC_FACILITY:
            if (to->facility)
                to->facility(to->ctx, r);
            break;
        case REC_SKIP:
            if (to->skipped)
                to->skipped(to->ctx, r);
            break;
        case REC_NET:
            if (to->net)
                to->net(to->ctx, r);
            break;
        case REC_NCCL_RANK:
            if (to->nccl_rank)
                to->nccl_rank(to->ctx, r);
            break;
        case REC_NCCL_ROW:
            if (to->nccl_row)
                to->nccl_row(to->ctx, r);
            break;
        case REC_NCCL_SUMMARY:
            if (to->nccl_summary)
                to->nccl_summary(to->ctx, r);
            break;
        case REC_DIAG:
            if (to->diag)
                to->diag(to->ctx, r);
            break;
        case REC_EXCERPT:
            if (to->excerpt) {
                const struct excerpt *e = r;
                to->excerpt(to->ctx, e->source, e->on);
            }
            break;
        }
    }
}
