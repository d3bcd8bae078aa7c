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

static bool load_job(struct load_ctx *c, const struct sn_store_write *row)
{
    struct sn_control_job *job = calloc(1, sizeof(*job));
    int state = sn_control_job_state_parse(row->text[2]);
    json_t *spec = json_loads(row->text[3], 0, NULL);
    if (!job || state < 0 || !json_is_object(spec)) {
        free(job);
        json_decref(spec);
        c->rc = sn_error_set(c->err, SN_ERR_INVALID, "stored job %lld is malformed",
                             (long long)row->num[0]);
        return false;
    }
    job->id = row->num[0];
    snprintf(job->tenant, sizeof(job->tenant), "%s", row->text[0]);
    job->idem_key = row->text[1] ? strdup(row->text[1]) : NULL;
    job->state = (enum sn_control_job_state)state;
    job->spec = spec;
    job->submit_s = row->num[1];
    job->updated_s = row->num[2];
    job->durable = true;
    job->sched_id = SN_NONE;
    json_t *run = row->text[4] ? json_loads(row->text[4], 0, NULL) : NULL;
    job->requeues = (uint32_t)json_integer_value(json_object_get(run, "requeues"));
    job->start_s = json_integer_value(json_object_get(run, "start_s"));
    job->end_s = json_integer_value(json_object_get(run, "end_s"));
    job->exit_status = (int32_t)json_integer_value(json_object_get(run, "exit_status"));
    sn_control_job_set_detail(job, json_string_value(json_object_get(run, "detail")));
    job->master_port = (int32_t)json_integer_value(json_object_get(run, "master_port"));
    sn_control_goodput_load(job, run);
    const char *iso = json_string_value(json_object_get(run, "isolation"));
    job->isolation = iso ? strdup(iso) : NULL;
    job->failed_rank = -1;
    const char *la = json_string_value(json_object_get(run, "last_alloc"));
    const char *lk = json_string_value(json_object_get(run, "last_ranks_ok"));
    uint32_t *ok = NULL, n_ok = 0;
    if (la && lk &&
        sn_control_ranges_parse(la, &job->last_alloc, &job->n_last_alloc, c->d->model->n_gpus) ==
            0 &&
        sn_control_ranges_parse(lk, &ok, &n_ok, job->n_last_alloc) == 0) {
        job->last_ranks_ok = calloc((job->n_last_alloc + 63) / 64 + 1, sizeof(uint64_t));
        for (uint32_t i = 0; job->last_ranks_ok && i < n_ok; i++)
            if (ok[i] < job->n_last_alloc)
                job->last_ranks_ok[ok[i] / 64] |= 1ull << (ok[i] % 64);
        for (uint32_t i = 0; i < job->n_last_alloc; i++)
            if (job->last_alloc[i] >= c->d->model->n_gpus)
                job->n_last_alloc = 0; /* the spec shrank: drop the record */
        if (!job->last_ranks_ok)
            job->n_last_alloc = 0;
        job->failed_rank = (int32_t)json_integer_value(json_object_get(run, "failed_rank"));
        if (!json_is_integer(json_object_get(run, "failed_rank")))
            job->failed_rank = -1;
    }
    free(ok);
    const char *ckpt = json_string_value(json_object_get(run, "checkpoint_path"));
    job->ckpt_path = ckpt ? strdup(ckpt) : NULL;
    job->ckpt_time_s = json_integer_value(json_object_get(run, "checkpoint_time_s"));
    job->ckpt_step = json_integer_value(json_object_get(run, "checkpoint_step"));
    job->ckpt_count = (uint32_t)json_integer_value(json_object_get(run, "checkpoint_count"));
    const char *hold = json_string_value(json_object_get(run, "hold_detail"));
    job->held = hold != NULL;
    job->hold_detail = hold ? strdup(hold) : NULL;
    json_decref(run);
    c->rc = sn_control_job_insert(c->d->ctl, job, c->err);
    if (c->rc != SN_OK)
        sn_control_job_free(job);
    return c->rc == SN_OK;
}

static bool load_admin(struct load_ctx *c, const struct sn_store_write *row)
{
    int s = sn_control_admin_state_parse(row->text[2]);
    const struct sn_model *m = c->d->model;
    bool node = strcmp(row->text[0], "node") == 0;
    uint32_t id = node ? sn_model_find_server(m, row->text[1]) : sn_model_find_gpu(m, row->text[1]);
    if (s < 0 || id == SN_NONE) {
        /* The spec changed under the state: keep going, say so. */
        fprintf(stderr,
                "snd: warning: stored admin state of %s '%s' does not match the "
                "cluster spec; ignored\n",
                row->text[0], row->text[1]);
        return true;
    }
    sn_control_admin_set(node ? &c->d->ctl->nodes[id] : &c->d->ctl->gpus[id],
                         (enum sn_control_admin_state)s, row->text[3], row->text[4], row->num[0]);
    return true;
}

/* An allocation: GPUs in rank order and the ranks that have exited. */
static bool load_alloc(struct load_ctx *c, const struct sn_store_write *row)
{
    struct sn_control_job *job = sn_control_job_get(c->d->ctl, row->num[0]);
    uint32_t *ranks = NULL, n_ranks = 0;
    const struct sn_model *m = c->d->model;
    if (!job || job->alloc ||
        sn_control_ranges_parse(row->text[0], &job->alloc, &job->n_alloc, m->n_gpus) != 0 ||
        sn_control_ranges_parse(row->text[1], &ranks, &n_ranks, job->n_alloc) != 0) {
        c->rc = sn_error_set(c->err, SN_ERR_INVALID, "stored allocation of job %lld is malformed",
                             (long long)row->num[0]);
        return false;
    }
    job->ranks_done = calloc((job->n_alloc + 63) / 64 + 1, sizeof(uint64_t));
    for (uint32_t i = 0; job->ranks_done && i < n_ranks; i++)
        if (ranks[i] < job->n_alloc &&
            !(job->ranks_done[ranks[i] / 64] & (1ull << (ranks[i] % 64)))) {
            job->ranks_done[ranks[i] / 64] |= 1ull << (ranks[i] % 64);
            job->n_ranks_done++;
        }
    free(ranks);
    for (uint32_t i = 0; i < job->n_alloc; i++)
        if (job->alloc[i] >= m->n_gpus) {
            c->rc =
                sn_error_set(c->err, SN_ERR_INVALID, "job %lld holds GPU %u, the cluster has %u",
                             (long long)job->id, job->alloc[i], m->n_gpus);
            return false;
        }
    job->start_s = row->num[1];
    if (!job->ranks_done) {
        c->rc = sn_error_set(c->err, SN_ERR_NOMEM, "out of memory");
        return false;
    }
    return true;
}

static bool load_row(void *ctx, const struct sn_store_write *row)
{
    struct load_ctx *c = ctx;
    struct snd *d = c->d;
    switch (row->kind) {
    case SN_STORE_PUT_TENANT:
    case SN_STORE_PUT_POOL:
    case SN_STORE_PUT_CLASS: {
        json_t *doc = json_loads(row->text[1], 0, NULL);
        struct sn_control_named **list = row->kind == SN_STORE_PUT_TENANT ? &d->ctl->tenants
                                         : row->kind == SN_STORE_PUT_POOL ? &d->ctl->pools
                                                                          : &d->ctl->classes;
        uint32_t *n = row->kind == SN_STORE_PUT_TENANT ? &d->ctl->n_tenants
                      : row->kind == SN_STORE_PUT_POOL ? &d->ctl->n_pools
                                                       : &d->ctl->n_classes;
        c->rc =
            doc ? sn_control_named_put(list, n, row->text[0], doc, c->err)
                : sn_error_set(c->err, SN_ERR_INVALID, "stored '%s' is malformed", row->text[0]);
        return c->rc == SN_OK;
    }
    case SN_STORE_PUT_QUOTA:
        c->rc = sn_control_quota_put(d->ctl, row->text[0], row->text[1], row->num[0]);
        return c->rc == SN_OK;
    case SN_STORE_PUT_JOB:
        return load_job(c, row);
    case SN_STORE_PUT_ADMIN:
        return load_admin(c, row);
    case SN_STORE_ADD_REVOKE:
        c->rc = snd_revoke(d, row->text[0]);
        return c->rc == SN_OK;
    case SN_STORE_PUT_ALLOC:
        return load_alloc(c, row);
    default:
        return true;
    }
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
        .cpu_oversell_pct = f->cpu_oversell_pct,
        .memory_oversell_pct = f->memory_oversell_pct,
    };
    snprintf(c2->sched_policy, sizeof(c2->sched_policy), "%s", f->sched_policy);
    snprintf(c2->pool_borrow, sizeof(c2->pool_borrow), "%s", f->pool_borrow);
    sn_control_free(d->ctl);
    d->ctl = sn_control_new(d->model, d->spec, c2, err);
    if (!d->ctl)
        return err->code;
    struct load_ctx c = {d, err, SN_OK};
    enum sn_err rc = sn_store_load(d->store, load_row, &c, err);
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
