/*
 * Pre-authentication limits: a token bucket per source address charged by
 * each failed authentication (401). While a source's bucket is full enough
 * its refusals are answered 401 and audited one by one; once it is empty
 * they are answered 429 with Retry-After, and counted instead of audited:
 * one audit row per source per audit_flood_interval_s carries the count.
 * So an anonymous flood costs a bounded number of audit rows (the burst,
 * the refill, one summary row per interval), not one durable write each,
 * and a source that presents a valid token is not slowed by it.
 *
 * The table has a hard cap (REFUSAL_SLOTS); when three quarters full it is
 * flushed (counts written) and cleared, granting fresh buckets. State
 * thread only.
 */
#include "agent.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REFUSAL_SLOTS 4096

struct refusal_slot {
    char source[64]; /* "" when free */
    double tokens;
    int64_t last_ms;
    uint64_t suppressed; /* refusals answered 429 since window_ms, not yet audited */
    int64_t window_ms;   /* when the first of them came */
    int64_t window_s;    /* the same, wall clock, for the audit row */
};

struct snd_refusals {
    struct refusal_slot slots[REFUSAL_SLOTS];
    uint32_t used;
    int64_t last_flush_ms;
};

struct snd_refusals *snd_refusals_new(void)
{
    return calloc(1, sizeof(struct snd_refusals));
}

void snd_refusals_free(struct snd_refusals *t)
{
    free(t);
}

static uint32_t slot_of(const struct snd_refusals *t, const char *source)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)source; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    uint32_t i = (uint32_t)(h % REFUSAL_SLOTS);
    while (t->slots[i].source[0] && strcmp(t->slots[i].source, source) != 0)
        i = (i + 1) % REFUSAL_SLOTS;
    return i;
}

static void audit_done(void *ctx, enum sn_err rc)
{
    struct snd *d = ctx;
    if (rc == SN_ERR_IO)
        atomic_store(&d->fatal, true);
}

/* Writes the summary row of a slot's suppressed refusals and resets it. */
static void write_summary(struct snd *d, struct refusal_slot *s)
{
    char detail[200];
    snprintf(detail, sizeof(detail),
             "%llu failed authentications from %s answered 429 (rate limited, not audited one by "
             "one) since %lld",
             (unsigned long long)s->suppressed, s->source, (long long)s->window_s);
    struct sn_store_write w = {
        .kind = SN_STORE_ADD_AUDIT,
        .text = {"anonymous", "refusals", s->source, detail, s->source, ""},
        .num = {snd_now_s(), 429},
    };
    struct sn_error err = {0};
    if (sn_store_submit(d->store, &w, 1, audit_done, d, &err) != SN_OK)
        fprintf(stderr, "snd: audit summary dropped: %s\n", err.message);
    s->suppressed = 0;
}

void snd_refusals_flush(struct snd *d, int64_t now_ms, bool all)
{
    struct snd_refusals *t = d->refusals;
    int64_t interval_ms = d->cfg.audit_flood_interval_s * 1000;
    if (!t || (!all && now_ms - t->last_flush_ms < 250))
        return;
    t->last_flush_ms = now_ms;
    for (uint32_t i = 0; i < REFUSAL_SLOTS; i++) {
        struct refusal_slot *s = &t->slots[i];
        if (s->suppressed && (all || now_ms - s->window_ms >= interval_ms))
            write_summary(d, s);
    }
}

int64_t snd_refusals_charge(struct snd *d, const char *source, int64_t now_ms)
{
    struct snd_refusals *t = d->refusals;
    if (!t)
        return 0;
    uint32_t i = slot_of(t, source);
    struct refusal_slot *s = &t->slots[i];
    if (!s->source[0]) {
        if (t->used + 1 >= REFUSAL_SLOTS * 3 / 4) {
            snd_refusals_flush(d, now_ms, true);
            memset(t->slots, 0, sizeof(t->slots));
            t->used = 0;
            i = slot_of(t, source);
            s = &t->slots[i];
        }
        snprintf(s->source, sizeof(s->source), "%s", source);
        s->tokens = (double)d->cfg.auth_fail_burst;
        s->last_ms = now_ms;
        t->used++;
    }
    double per_s = (double)d->cfg.auth_fail_per_s;
    s->tokens += (double)(now_ms - s->last_ms) * per_s / 1000.0;
    if (s->tokens > (double)d->cfg.auth_fail_burst)
        s->tokens = (double)d->cfg.auth_fail_burst;
    s->last_ms = now_ms;
    if (s->tokens >= 1.0) {
        s->tokens -= 1.0;
        return 0;
    }
    if (s->suppressed == 0) {
        s->window_ms = now_ms;
        s->window_s = snd_now_s();
    }
    s->suppressed++;
    int64_t wait_ms = (int64_t)ceil((1.0 - s->tokens) * 1000.0 / per_s);
    return wait_ms > 0 ? wait_ms : 1;
}
