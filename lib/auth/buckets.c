/*
 * Token buckets by key in one open-addressed table (sn/buckets.h).
 */
#include <sn/buckets.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    char key[SN_BUCKET_KEY_MAX]; /* "" when free */
    double tokens;
    int64_t last_ms;
    uint64_t suppressed; /* refusals since window_ms, not yet summarised */
    int64_t window_ms;   /* when the first of them came */
    int64_t window_s;    /* the same, wall clock */
};

struct sn_buckets {
    uint32_t cap, used;
    struct slot slots[];
};

struct sn_buckets *sn_buckets_new(uint32_t slots)
{
    if (slots < 4)
        slots = 4;
    struct sn_buckets *b = calloc(1, sizeof(*b) + (size_t)slots * sizeof(struct slot));
    if (b)
        b->cap = slots;
    return b;
}

void sn_buckets_free(struct sn_buckets *b)
{
    free(b);
}

static uint32_t slot_of(const struct sn_buckets *b, const char *key)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    uint32_t i = (uint32_t)(h % b->cap);
    while (b->slots[i].key[0] && strncmp(b->slots[i].key, key, SN_BUCKET_KEY_MAX - 1) != 0)
        i = (i + 1) % b->cap;
    return i;
}

void sn_buckets_flush(struct sn_buckets *b, int64_t now_ms, int64_t interval_ms, bool all,
                      sn_bucket_summary_fn *fn, void *ctx)
{
    for (uint32_t i = 0; i < b->cap; i++) {
        struct slot *s = &b->slots[i];
        if (!s->suppressed || (!all && now_ms - s->window_ms < interval_ms))
            continue;
        if (fn)
            fn(ctx, s->key, s->suppressed, s->window_s);
        s->suppressed = 0;
    }
}

int64_t sn_buckets_take(struct sn_buckets *b, const char *key, int64_t now_ms, int64_t now_s,
                        int64_t per_s, int64_t burst, sn_bucket_summary_fn *on_clear, void *ctx)
{
    uint32_t i = slot_of(b, key);
    struct slot *s = &b->slots[i];
    if (!s->key[0]) {
        if (b->used + 1 >= b->cap * 3 / 4) {
            sn_buckets_flush(b, now_ms, 0, true, on_clear, ctx);
            memset(b->slots, 0, (size_t)b->cap * sizeof(struct slot));
            b->used = 0;
            s = &b->slots[slot_of(b, key)];
        }
        snprintf(s->key, sizeof(s->key), "%s", key);
        s->tokens = (double)burst;
        s->last_ms = now_ms;
        b->used++;
    }
    s->tokens += (double)(now_ms - s->last_ms) * (double)per_s / 1000.0;
    if (s->tokens > (double)burst)
        s->tokens = (double)burst;
    s->last_ms = now_ms;
    if (s->tokens >= 1.0) {
        s->tokens -= 1.0;
        return 0;
    }
    if (s->suppressed++ == 0) {
        s->window_ms = now_ms;
        s->window_s = now_s;
    }
    int64_t wait_ms = (int64_t)ceil((1.0 - s->tokens) * 1000.0 / (double)per_s);
    return wait_ms > 0 ? wait_ms : 1;
}
