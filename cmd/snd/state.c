/*
 * snd's own state beside the control plane's tables: revoked token ids,
 * token buckets, and the restore of the tables from the store's rows at
 * start (the rows become calls into lib/control).
 */
#include "snd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool snd_is_revoked(const struct snd *d, const char *id)
{
    for (uint32_t i = 0; i < d->n_revoked; i++)
        if (strcmp(d->revoked[i], id) == 0)
            return true;
    return false;
}

enum sn_err snd_revoke(struct snd *d, const char *id)
{
    if (snd_is_revoked(d, id))
        return SN_OK;
    if (d->n_revoked >= 65536)
        return SN_ERR_LIMIT;
    char **grown = realloc(d->revoked, (d->n_revoked + 1) * sizeof(*grown));
    if (!grown)
        return SN_ERR_NOMEM;
    d->revoked = grown;
    grown[d->n_revoked] = strdup(id);
    if (!grown[d->n_revoked])
        return SN_ERR_NOMEM;
    d->n_revoked++;
    return SN_OK;
}

/* ---- restore ------------------------------------------------------- */

struct load_ctx {
    struct snd *d;
    struct sn_error *err;
    enum sn_err rc;
};

/* The control's rows go to lib/control/restore.c; revocations are snd's. */
static bool load_row(void *ctx, const struct sn_store_write *row)
{
    struct load_ctx *c = ctx;
    if (row->kind == SN_STORE_ADD_REVOKE)
        c->rc = snd_revoke(c->d, row->text[0]) == SN_OK
                    ? SN_OK
                    : sn_error_set(c->err, SN_ERR_LIMIT, "cannot keep revocation '%s'",
                                   row->text[0]);
    else
        c->rc = sn_control_restore_row(c->d->ctl, row, c->err);
    return c->rc == SN_OK;
}

int snd_state_load(struct snd *d, struct sn_error *err)
{
    const struct snd_config *f = &d->cfg;
    struct sn_control_config *c2 = &d->ctl_cfg;
    *c2 = (struct sn_control_config){
        .max_jobs = f->max_jobs,
        .heartbeat_timeout_s = f->heartbeat_timeout_s,
        .default_walltime_s = f->default_walltime_s,
        .preempt_min_runtime_s = f->preempt_min_runtime_s,
        .partition_share_pct = f->partition_share_pct,
        .partition_window_s = f->partition_window_s,
        .max_tenants_per_supernode = f->max_tenants_per_supernode,
        .spare_gpus_per_supernode = f->spare_gpus_per_supernode,
        .replace_in_place = f->replace_in_place,
        .enforce_time_limits = true,
        .cpu_oversell_pct = f->cpu_oversell_pct,
        .memory_oversell_pct = f->memory_oversell_pct,
        .breaker_cluster = f->health_breaker_cluster,
        .breaker_supernode = f->health_breaker_supernode,
        .breaker_rack = f->health_breaker_rack,
        .breaker_window_s = f->health_breaker_window_s,
        .escalate_rack_pct = f->health_escalate_rack_pct,
        .power_util_pct = f->power_util_pct,
        .imex_channel_count = f->imex_channel_count,
        .imex_setup_timeout_s = f->imex_setup_timeout_s,
        .preempt_grace_s = f->preempt_grace_s,
        .expedite_hold_s = f->expedite_hold_s,
    };
    snprintf(c2->preempt_signal, sizeof(c2->preempt_signal), "%s", f->preempt_signal);
    snprintf(c2->sched_policy, sizeof(c2->sched_policy), "%s", f->sched_policy);
    snprintf(c2->pool_borrow, sizeof(c2->pool_borrow), "%s", f->pool_borrow);
    sn_control_free(d->ctl);
    d->ctl = sn_control_new(d->model, d->spec, c2, err);
    if (!d->ctl)
        return err->code;
    struct load_ctx c = {d, err, SN_OK};
    enum sn_err rc = sn_store_load(d->store, load_row, &c, err);
    if (d->ctl->restore_ignored)
        fprintf(stderr,
                "snd: warning: %u stored admin state(s) do not match the cluster spec (the last: "
                "%s); ignored\n",
                d->ctl->restore_ignored, d->ctl->restore_ignored_what);
    return rc != SN_OK ? rc : c.rc;
}

void snd_state_free(struct snd *d)
{
    for (uint32_t i = 0; i < d->n_revoked; i++)
        free(d->revoked[i]);
    free(d->revoked);
    snd_rate_free(d->rate);
}

/* ---- token buckets ------------------------------------------------- */

#define RATE_SLOTS 4096 /* hard cap: a full table is cleared, granting fresh buckets */

struct rate_slot {
    char id[SN_AUTH_ID_MAX];
    double tokens;
    int64_t last_ms;
};

struct snd_rate {
    struct rate_slot slots[RATE_SLOTS];
    uint32_t used;
};

struct snd_rate *snd_rate_new(void)
{
    return calloc(1, sizeof(struct snd_rate));
}

void snd_rate_free(struct snd_rate *r)
{
    free(r);
}

int64_t snd_rate_take(struct snd_rate *r, const char *id, int64_t now_ms, int64_t per_s,
                      int64_t burst)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = id; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    uint32_t i = (uint32_t)(h % RATE_SLOTS);
    while (r->slots[i].id[0] && strcmp(r->slots[i].id, id) != 0)
        i = (i + 1) % RATE_SLOTS;
    struct rate_slot *s = &r->slots[i];
    if (!s->id[0]) {
        if (r->used + 1 >= RATE_SLOTS * 3 / 4) {
            memset(r, 0, sizeof(*r));
            return snd_rate_take(r, id, now_ms, per_s, burst);
        }
        snprintf(s->id, sizeof(s->id), "%s", id);
        s->tokens = (double)burst;
        s->last_ms = now_ms;
        r->used++;
    }
    s->tokens += (double)(now_ms - s->last_ms) * (double)per_s / 1000.0;
    if (s->tokens > (double)burst)
        s->tokens = (double)burst;
    s->last_ms = now_ms;
    if (s->tokens >= 1.0) {
        s->tokens -= 1.0;
        return 0;
    }
    int64_t wait_ms = (int64_t)ceil((1.0 - s->tokens) * 1000.0 / (double)per_s);
    return wait_ms > 0 ? wait_ms : 1;
}
