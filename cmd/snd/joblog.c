/*
 * Job output (docs/api.md, "Job output"): the agents push what each rank
 * prints, in order, as chunks with their byte offset in the rank's output
 * (POST /v1/jobs/{id}/log?rank=R&run=N&offset=O, raw body); readers page
 * through it (GET /v1/jobs/{id}/log?rank=R&offset=O). The agents do not
 * listen on any port, so snd never fetches: pushing keeps one direction.
 *
 * Invariants: per (job, rank) snd keeps the latest run's output, at most
 * SND_LOG_RANK_MAX bytes (the newest: older bytes are dropped from the
 * head, and start_off says where the kept bytes begin); all logs together
 * hold at most SND_LOG_TOTAL_MAX bytes (the lowest job id's logs go first).
 * A chunk at or below the kept end is a retransmission: only its new part
 * is applied. A chunk past the end (bytes lost: an snd restart, a full
 * agent outbox) restarts the kept window at its offset. Bytes that are not
 * UTF-8 are stored as '?', so that the JSON answer carries the text as is
 * otherwise, offsets unchanged. This lives in memory, on the state thread:
 * a restarted snd starts empty, the node keeps WORK_DIR/job-ID-RANK.log.
 */
#include "agent.h"
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SND_LOG_RANK_MAX (1u << 20)
#define SND_LOG_TOTAL_MAX (256u << 20)
#define SND_LOG_PAGE_MAX (1u << 20)

struct rank_log {
    int64_t job; /* 0: empty slot */
    uint32_t rank;
    int64_t run;
    int64_t start_off; /* offset in the rank's output of buf[0] */
    char *buf;
    size_t len, cap;
};

static struct logs {
    struct rank_log *slots;
    size_t cap, used;
    size_t bytes;
} lg;

static size_t slot_of(int64_t job, uint32_t rank, size_t cap)
{
    uint64_t h = (uint64_t)job * 0x9e3779b97f4a7c15ull ^ (uint64_t)rank * 0xc2b2ae3d27d4eb4full;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static struct rank_log *find(int64_t job, uint32_t rank, bool make)
{
    if (make && (lg.used + 1) * 2 > lg.cap) {
        size_t cap = lg.cap ? lg.cap * 2 : 1024;
        struct rank_log *s = calloc(cap, sizeof(*s));
        if (!s)
            return NULL;
        for (size_t i = 0; i < lg.cap; i++) {
            if (!lg.slots[i].job)
                continue;
            size_t k = slot_of(lg.slots[i].job, lg.slots[i].rank, cap);
            while (s[k].job)
                k = (k + 1) & (cap - 1);
            s[k] = lg.slots[i];
        }
        free(lg.slots);
        lg.slots = s;
        lg.cap = cap;
    }
    if (!lg.cap)
        return NULL;
    for (size_t k = slot_of(job, rank, lg.cap);; k = (k + 1) & (lg.cap - 1)) {
        struct rank_log *l = &lg.slots[k];
        if (l->job == job && l->rank == rank)
            return l;
        if (!l->job) {
            if (!make)
                return NULL;
            *l = (struct rank_log){.job = job, .rank = rank};
            lg.used++;
            return l;
        }
    }
}

/* Frees the logs of the lowest job id (keeps the table's probe chains by
 * emptying the buffers, not the slots). */
static void evict_oldest(void)
{
    int64_t low = 0;
    for (size_t i = 0; i < lg.cap; i++)
        if (lg.slots[i].job && lg.slots[i].len && (!low || lg.slots[i].job < low))
            low = lg.slots[i].job;
    for (size_t i = 0; low && i < lg.cap; i++) {
        struct rank_log *l = &lg.slots[i];
        if (l->job != low)
            continue;
        lg.bytes -= l->cap;
        l->start_off += (int64_t)l->len;
        free(l->buf);
        l->buf = NULL;
        l->len = l->cap = 0;
    }
}

/* Length of the valid UTF-8 sequence at p (1 to 4), 0 if it is not one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t want = (p[0] & 0xe0) == 0xc0   ? 2
                  : (p[0] & 0xf0) == 0xe0 ? 3
                  : (p[0] & 0xf8) == 0xf0 ? 4
                                          : 0;
    if (!want || want > n || p[0] == 0xc0 || p[0] == 0xc1 || p[0] > 0xf4)
        return 0;
    for (size_t i = 1; i < want; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return want;
}

static void append(struct rank_log *l, const char *data, size_t n)
{
    if (n > SND_LOG_RANK_MAX) { /* only the newest bytes can stay */
        l->start_off += (int64_t)(l->len + n - SND_LOG_RANK_MAX);
        data += n - SND_LOG_RANK_MAX;
        n = SND_LOG_RANK_MAX;
        l->len = 0;
    }
    if (l->len + n > SND_LOG_RANK_MAX) {
        size_t drop = l->len + n - SND_LOG_RANK_MAX;
        memmove(l->buf, l->buf + drop, l->len - drop);
        l->len -= drop;
        l->start_off += (int64_t)drop;
    }
    if (l->len + n > l->cap) {
        size_t cap = l->cap ? l->cap : 4096;
        while (cap < l->len + n)
            cap *= 2;
        if (cap > SND_LOG_RANK_MAX)
            cap = SND_LOG_RANK_MAX;
        while (lg.bytes + cap - l->cap > SND_LOG_TOTAL_MAX && lg.bytes)
            evict_oldest();
        char *b = realloc(l->buf, cap);
        if (!b)
            return;
        lg.bytes += cap - l->cap;
        l->buf = b;
        l->cap = cap;
    }
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(p + i, n - i);
        if (k == 0) {
            l->buf[l->len++] = '?';
            i++;
        } else {
            memcpy(l->buf + l->len, p + i, k);
            l->len += k;
            i += k;
        }
    }
}

static bool query_int(struct snd_req *r, const char *name, int64_t min, int64_t max, bool need,
                      int64_t *out)
{
    const char *v = snd_query(r, name);
    if (!v)
        return !need;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < min || x > max)
        return false;
    *out = x;
    return true;
}

/* The job's ranks in its current or last run. */
static uint32_t job_ranks(const struct sn_control_job *j)
{
    return j->n_alloc ? j->n_alloc : j->n_last_alloc;
}

static const uint32_t *job_gpus(const struct sn_control_job *j)
{
    return j->n_alloc ? j->alloc : j->last_alloc;
}

enum MHD_Result snd_post_job_log(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    struct sn_control_job *j = *end ? NULL : sn_control_job_get(d->ctl, id);
    if (!j || !j->durable)
        return snd_error(d, r, 404, "not_found", NULL, "no job '%s'", r->params[0]);
    int64_t rank = 0, run = 0, off = 0;
    uint32_t n = job_ranks(j);
    if (!query_int(r, "rank", 0, n ? n - 1 : 0, true, &rank) || !n)
        return snd_error(d, r, 400, "invalid_query", "rank", "rank must be 0 to %u of job %lld",
                         n ? n - 1 : 0, (long long)j->id);
    if (!query_int(r, "run", 0, INT32_MAX, true, &run))
        return snd_error(d, r, 400, "invalid_query", "run",
                         "run must be the job's run (0, 1, ...)");
    if (!query_int(r, "offset", 0, INT64_MAX / 2, true, &off))
        return snd_error(d, r, 400, "invalid_query", "offset",
                         "offset must be the chunk's byte offset in the rank's output");
    char node[64];
    sn_model_server_name(d->model, d->model->gpu_server[job_gpus(j)[rank]], node, sizeof(node));
    if (!snd_is_admin(r) && (r->tok.kind != SN_AUTH_AGENT || strcmp(r->tok.subject, node) != 0))
        return snd_refuse(d, r, 403, "forbidden", "rank", "output of a rank on another node",
                          "an agent token ships only the output of ranks on its own node");
    struct rank_log *l = find(j->id, (uint32_t)rank, true);
    if (!l)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    if (run < l->run) /* an earlier run's output: kept no more */
        return snd_reply(d, r, 200, json_pack("{s:b}", "stale", 1));
    if (run > l->run || off > l->start_off + (int64_t)l->len) {
        /* A new run, or bytes lost before this chunk: start again here. */
        l->run = run;
        l->start_off = off;
        l->len = 0;
    }
    int64_t kept_end = l->start_off + (int64_t)l->len;
    size_t skip = off < kept_end ? (size_t)(kept_end - off) : 0;
    if (skip < r->len)
        append(l, r->body + skip, r->len - skip);
    return snd_reply(d, r, 200,
                     json_pack("{s:I}", "next", (json_int_t)(l->start_off + (int64_t)l->len)));
}

enum MHD_Result snd_get_job_log(struct snd *d, struct snd_req *r, struct sn_control_job *j)
{
    int64_t rank = 0, off = 0, limit = 65536;
    uint32_t n = job_ranks(j);
    if (!query_int(r, "rank", 0, n ? n - 1 : 0, false, &rank))
        return snd_error(d, r, 400, "invalid_query", "rank", "rank must be 0 to %u of job %lld",
                         n ? n - 1 : 0, (long long)j->id);
    if (!query_int(r, "offset", 0, INT64_MAX / 2, false, &off))
        return snd_error(d, r, 400, "invalid_query", "offset", "offset must be a byte offset");
    if (!query_int(r, "limit", 1, SND_LOG_PAGE_MAX, false, &limit))
        return snd_error(d, r, 400, "invalid_query", "limit", "limit must be 1 to %u bytes",
                         SND_LOG_PAGE_MAX);
    struct rank_log *l = find(j->id, (uint32_t)rank, false);
    int64_t start = l ? l->start_off : 0, end = l ? l->start_off + (int64_t)l->len : 0;
    int64_t from = off < start ? start : off > end ? end : off;
    int64_t to = from + limit < end ? from + limit : end;
    /* Whole UTF-8 sequences only (the kept head may start inside one). */
    while (l && from < to && ((unsigned char)l->buf[from - start] & 0xc0) == 0x80)
        from++;
    while (l && to < end && to > from && ((unsigned char)l->buf[to - start] & 0xc0) == 0x80)
        to--;
    const char *data = l && l->buf ? l->buf + (from - start) : "";
    return snd_reply(d, r, 200,
                     json_pack("{s:I,s:I,s:I,s:I,s:I,s:s%}", "job", (json_int_t)j->id, "rank",
                               (json_int_t)rank, "run", (json_int_t)(l ? l->run : 0), "offset",
                               (json_int_t)from, "next", (json_int_t)to, "data", data,
                               (size_t)(to - from)));
}

void snd_job_logs_free(void)
{
    for (size_t i = 0; i < lg.cap; i++)
        free(lg.slots[i].buf);
    free(lg.slots);
    memset(&lg, 0, sizeof(lg));
}
