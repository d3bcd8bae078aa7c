/*
 * Job output kept in memory (sn/joblog.h): an open-addressing table of
 * (job, rank) slots, each a byte window of the rank's latest run.
 */
#include <sn/joblog.h>

#include <stdlib.h>
#include <string.h>

struct rank_log {
    int64_t job; /* 0: empty slot */
    uint32_t rank;
    int64_t run;
    int64_t start_off; /* offset in the rank's output of buf[0] */
    char *buf;
    size_t len, cap;
};

struct sn_joblog {
    struct rank_log *slots;
    size_t cap, used;
    size_t bytes;
    size_t rank_max, total_max;
};

struct sn_joblog *sn_joblog_new(size_t rank_max, size_t total_max)
{
    struct sn_joblog *lg = calloc(1, sizeof(*lg));
    if (!lg)
        return NULL;
    lg->rank_max = rank_max ? rank_max : 1;
    lg->total_max = total_max < lg->rank_max ? lg->rank_max : total_max;
    return lg;
}

void sn_joblog_free(struct sn_joblog *lg)
{
    if (!lg)
        return;
    for (size_t i = 0; i < lg->cap; i++)
        free(lg->slots[i].buf);
    free(lg->slots);
    free(lg);
}

size_t sn_joblog_bytes(const struct sn_joblog *lg)
{
    return lg->bytes;
}

static size_t slot_of(int64_t job, uint32_t rank, size_t cap)
{
    uint64_t h = (uint64_t)job * 0x9e3779b97f4a7c15ull ^ (uint64_t)rank * 0xc2b2ae3d27d4eb4full;
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static bool grow(struct sn_joblog *lg)
{
    size_t cap = lg->cap ? lg->cap * 2 : 1024;
    struct rank_log *s = calloc(cap, sizeof(*s));
    if (!s)
        return false;
    for (size_t i = 0; i < lg->cap; i++) {
        if (!lg->slots[i].job)
            continue;
        size_t k = slot_of(lg->slots[i].job, lg->slots[i].rank, cap);
        while (s[k].job)
            k = (k + 1) & (cap - 1);
        s[k] = lg->slots[i];
    }
    free(lg->slots);
    lg->slots = s;
    lg->cap = cap;
    return true;
}

static struct rank_log *find(const struct sn_joblog *lg, int64_t job, uint32_t rank)
{
    for (size_t k = lg->cap ? slot_of(job, rank, lg->cap) : 0; lg->cap; k = (k + 1) & (lg->cap - 1)) {
        struct rank_log *l = &lg->slots[k];
        if (!l->job || (l->job == job && l->rank == rank))
            return l;
    }
    return NULL;
}

static struct rank_log *find_or_make(struct sn_joblog *lg, int64_t job, uint32_t rank)
{
    if ((lg->used + 1) * 2 > lg->cap && !grow(lg))
        return NULL;
    struct rank_log *l = find(lg, job, rank);
    if (!l->job) {
        *l = (struct rank_log){.job = job, .rank = rank};
        lg->used++;
    }
    return l;
}

/* Frees the buffers of the lowest job id (the slots stay, keeping the
 * table's probe chains). */
static void evict_oldest(struct sn_joblog *lg)
{
    int64_t low = 0;
    for (size_t i = 0; i < lg->cap; i++)
        if (lg->slots[i].job && lg->slots[i].cap && (!low || lg->slots[i].job < low))
            low = lg->slots[i].job;
    for (size_t i = 0; low && i < lg->cap; i++) {
        struct rank_log *l = &lg->slots[i];
        if (l->job != low)
            continue;
        lg->bytes -= l->cap;
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

static enum sn_err append(struct sn_joblog *lg, struct rank_log *l, const char *data, size_t n)
{
    size_t max = lg->rank_max;
    if (n > max) { /* only the newest bytes can stay */
        l->start_off += (int64_t)(l->len + n - max);
        data += n - max;
        n = max;
        l->len = 0;
    }
    if (l->len + n > max) {
        size_t drop = l->len + n - max;
        memmove(l->buf, l->buf + drop, l->len - drop);
        l->len -= drop;
        l->start_off += (int64_t)drop;
    }
    if (l->len + n > l->cap) {
        size_t cap = l->cap ? l->cap : 4096;
        while (cap < l->len + n)
            cap *= 2;
        if (cap > max)
            cap = max;
        while (lg->bytes + cap - l->cap > lg->total_max && lg->bytes)
            evict_oldest(lg); /* may be this rank's own job: its window restarts empty */
        char *b = realloc(l->buf, cap);
        if (!b)
            return SN_ERR_NOMEM;
        lg->bytes += cap - l->cap;
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
    return SN_OK;
}

enum sn_err sn_joblog_put(struct sn_joblog *lg, int64_t job, uint32_t rank, int64_t run,
                          int64_t offset, const char *data, size_t n, int64_t *next, bool *stale)
{
    *stale = false;
    struct rank_log *l = find_or_make(lg, job, rank);
    if (!l)
        return SN_ERR_NOMEM;
    if (run < l->run) { /* an earlier run's output: kept no more */
        *stale = true;
        *next = l->start_off + (int64_t)l->len;
        return SN_OK;
    }
    if (run > l->run || offset > l->start_off + (int64_t)l->len) {
        /* A new run, or bytes lost before this chunk: start again here. */
        l->run = run;
        l->start_off = offset;
        l->len = 0;
    }
    int64_t kept_end = l->start_off + (int64_t)l->len;
    size_t skip = offset < kept_end ? (size_t)(kept_end - offset) : 0;
    enum sn_err rc = skip < n ? append(lg, l, data + skip, n - skip) : SN_OK;
    *next = l->start_off + (int64_t)l->len;
    return rc;
}

void sn_joblog_get(const struct sn_joblog *lg, int64_t job, uint32_t rank, int64_t offset,
                   int64_t limit, struct sn_joblog_page *out)
{
    const struct rank_log *l = find(lg, job, rank);
    if (l && !l->job)
        l = NULL;
    int64_t start = l ? l->start_off : 0, end = l ? l->start_off + (int64_t)l->len : 0;
    int64_t from = offset < start ? start : offset > end ? end : offset;
    int64_t to = limit < end - from ? from + limit : end;
    /* Whole UTF-8 sequences only (the kept head may start inside one). */
    while (l && from < to && ((unsigned char)l->buf[from - start] & 0xc0) == 0x80)
        from++;
    while (l && to < end && to > from && ((unsigned char)l->buf[to - start] & 0xc0) == 0x80)
        to--;
    *out = (struct sn_joblog_page){.run = l ? l->run : 0,
                                   .from = from,
                                   .to = to,
                                   .data = l && l->buf ? l->buf + (from - start) : ""};
}
