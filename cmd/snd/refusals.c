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
 * The buckets are sn/buckets.h's, 4096 slots: when three quarters full the
 * table is flushed (counts written) and cleared, granting fresh buckets.
 * State thread only.
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void audit_done(void *ctx, enum sn_err rc)
{
    struct snd *d = ctx;
    if (rc == SN_ERR_IO)
        atomic_store(&d->fatal, true);
}

/* Writes the summary row of a source's suppressed refusals. */
static void write_summary(void *ctx, const char *source, uint64_t suppressed, int64_t since_s)
{
    struct snd *d = ctx;
    char detail[200];
    snprintf(detail, sizeof(detail),
             "%llu failed authentications from %s answered 429 (rate limited, not audited one by "
             "one) since %lld",
             (unsigned long long)suppressed, source, (long long)since_s);
    struct sn_store_write w = {
        .kind = SN_STORE_ADD_AUDIT,
        .text = {"anonymous", "refusals", source, detail, source, ""},
        .num = {snd_now_s(), 429},
    };
    struct sn_error err = {0};
    if (sn_store_submit(d->store, &w, 1, audit_done, d, &err) != SN_OK)
        fprintf(stderr, "snd: audit summary dropped: %s\n", err.message);
}

void snd_refusals_flush(struct snd *d, int64_t now_ms, bool all)
{
    if (!d->refusals || (!all && now_ms - d->refusals_flushed_ms < 250))
        return;
    d->refusals_flushed_ms = now_ms;
    sn_buckets_flush(d->refusals, now_ms, d->cfg.audit_flood_interval_s * 1000, all, write_summary,
                     d);
}

int64_t snd_refusals_charge(struct snd *d, const char *source, int64_t now_ms)
{
    if (!d->refusals)
        return 0;
    return sn_buckets_take(d->refusals, source, now_ms, snd_now_s(), d->cfg.auth_fail_per_s,
                           d->cfg.auth_fail_burst, write_summary, d);
}
