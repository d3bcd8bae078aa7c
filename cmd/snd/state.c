/*
 * snd's in-memory state (see snd.h for its invariants): jobs by id, the
 * idempotency index, tenants/pools/classes/quotas, node and GPU admin
 * states, revoked token ids, token buckets; restoring it from the store's
 * rows at start and verifying the invariants afterwards.
 */
#include "snd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const job_state_names[] = {
#define SN_X(name, text) text,
    SND_JOB_STATE_LIST(SN_X)
#undef SN_X
};
static const char *const admin_state_names[] = {
#define SN_X(name, text) text,
    SND_ADMIN_STATE_LIST(SN_X)
#undef SN_X
};

const char *snd_job_state_name(enum snd_job_state s)
{
    return (unsigned)s < SND_JOB_STATE_COUNT ? job_state_names[s] : "unknown";
}

int snd_job_state_parse(const char *text)
{
    for (int i = 0; i < SND_JOB_STATE_COUNT; i++)
        if (strcmp(text, job_state_names[i]) == 0)
            return i;
    return -1;
}

const char *snd_admin_state_name(enum snd_admin_state s)
{
    return (unsigned)s < SND_ADMIN_STATE_COUNT ? admin_state_names[s] : "unknown";
}

static int admin_state_parse(const char *text)
{
    for (int i = 0; i < SND_ADMIN_STATE_COUNT; i++)
        if (strcmp(text, admin_state_names[i]) == 0)
            return i;
    return -1;
}

/* ---- idempotency index: open addressing, FNV-1a of "tenant\0key" ---- */

struct idem_slot {
    uint64_t hash;
    int64_t job_id; /* 0: empty */
};

struct snd_idem {
    struct idem_slot *slots;
    uint64_t cap, used;
};

static uint64_t idem_hash(const char *tenant, const char *key)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = tenant; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *p = key; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h | 1;
}

int64_t snd_idem_find(const struct snd *d, const char *tenant, const char *key)
{
    const struct snd_idem *ix = d->idem;
    if (!ix->cap)
        return 0;
    uint64_t h = idem_hash(tenant, key);
    for (uint64_t i = h & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        const struct idem_slot *s = &ix->slots[i];
        if (s->job_id == 0)
            return 0;
        if (s->hash != h)
            continue;
        const struct snd_job *j = snd_job_get(d, s->job_id);
        if (j && j->idem_key && strcmp(j->tenant, tenant) == 0 && strcmp(j->idem_key, key) == 0)
            return s->job_id;
    }
}

static void idem_place(struct snd_idem *ix, uint64_t h, int64_t id)
{
    uint64_t i = h & (ix->cap - 1);
    while (ix->slots[i].job_id != 0)
        i = (i + 1) & (ix->cap - 1);
    ix->slots[i] = (struct idem_slot){h, id};
    ix->used++;
}

static enum sn_err idem_add(struct snd_idem *ix, const char *tenant, const char *key, int64_t id)
{
    if ((ix->used + 1) * 2 > ix->cap) {
        uint64_t cap = ix->cap ? ix->cap * 2 : 1024;
        struct idem_slot *old = ix->slots;
        uint64_t old_cap = ix->cap;
        ix->slots = calloc(cap, sizeof(*ix->slots));
        if (!ix->slots) {
            ix->slots = old;
            return SN_ERR_NOMEM;
        }
        ix->cap = cap;
        ix->used = 0;
        for (uint64_t i = 0; i < old_cap; i++)
            if (old[i].job_id)
                idem_place(ix, old[i].hash, old[i].job_id);
        free(old);
    }
    idem_place(ix, idem_hash(tenant, key), id);
    return SN_OK;
}

/* Removal keeps probe chains intact by reinserting the rest of the run. */
static void idem_remove(struct snd_idem *ix, const char *tenant, const char *key, int64_t id)
{
    if (!ix->cap)
        return;
    uint64_t h = idem_hash(tenant, key);
    uint64_t i = h & (ix->cap - 1);
    while (ix->slots[i].job_id != 0 && ix->slots[i].job_id != id)
        i = (i + 1) & (ix->cap - 1);
    if (ix->slots[i].job_id == 0)
        return;
    ix->slots[i].job_id = 0;
    ix->used--;
    for (i = (i + 1) & (ix->cap - 1); ix->slots[i].job_id != 0; i = (i + 1) & (ix->cap - 1)) {
        struct idem_slot s = ix->slots[i];
        ix->slots[i].job_id = 0;
        ix->used--;
        idem_place(ix, s.hash, s.job_id);
    }
}

/* ---- jobs ---------------------------------------------------------- */

struct snd_job *snd_job_get(const struct snd *d, int64_t id)
{
    if (id < 1 || id > d->n_jobs_cap)
        return NULL;
    return d->jobs[id - 1];
}

void snd_job_free(struct snd_job *job)
{
    if (!job)
        return;
    free(job->idem_key);
    json_decref(job->spec);
    free(job->alloc);
    free(job->ranks_done);
    free(job->detail);
    free(job->isolation);
    free(job->last_alloc);
    free(job->last_ranks_ok);
    free(job->ckpt_path);
    free(job);
}

/* Adds delta (1 or -1) of job in state to its tenant's counters. */
static void tenant_count(struct snd *d, const struct snd_job *job, enum snd_job_state state,
                         int delta)
{
    struct snd_named *t = snd_named_find(d->tenants, d->n_tenants, job->tenant);
    if (!t)
        return;
    bool live = state == SND_JOB_PENDING || state == SND_JOB_RUNNING || state == SND_JOB_REQUEUED;
    t->jobs_live += live ? (uint64_t)(int64_t)delta : 0;
    t->jobs_total += (uint64_t)(int64_t)delta;
}

enum sn_err snd_job_insert(struct snd *d, struct snd_job *job, struct sn_error *err)
{
    if (job->id < 1 || job->id > d->cfg.max_jobs)
        return sn_error_set(err, SN_ERR_LIMIT, "job id %lld is over the limit of %lld jobs",
                            (long long)job->id, (long long)d->cfg.max_jobs);
    if (job->id > d->n_jobs_cap) {
        int64_t cap = d->n_jobs_cap ? d->n_jobs_cap : 1024;
        while (cap < job->id)
            cap *= 2;
        if (cap > d->cfg.max_jobs)
            cap = d->cfg.max_jobs;
        struct snd_job **jobs = realloc(d->jobs, (size_t)cap * sizeof(*jobs));
        if (!jobs)
            return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
        memset(jobs + d->n_jobs_cap, 0, (size_t)(cap - d->n_jobs_cap) * sizeof(*jobs));
        d->jobs = jobs;
        d->n_jobs_cap = cap;
    }
    if (d->jobs[job->id - 1])
        return sn_error_set(err, SN_ERR_CONFLICT, "job %lld exists twice", (long long)job->id);
    if (job->idem_key && idem_add(d->idem, job->tenant, job->idem_key, job->id) != SN_OK)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    d->jobs[job->id - 1] = job;
    d->jobs_by_state[job->state]++;
    tenant_count(d, job, job->state, 1);
    if (job->id >= d->next_job_id)
        d->next_job_id = job->id + 1;
    return SN_OK;
}

void snd_job_remove(struct snd *d, int64_t id)
{
    struct snd_job *job = snd_job_get(d, id);
    if (!job)
        return;
    if (job->idem_key)
        idem_remove(d->idem, job->tenant, job->idem_key, id);
    d->jobs_by_state[job->state]--;
    tenant_count(d, job, job->state, -1);
    d->jobs[id - 1] = NULL;
    snd_job_free(job);
}

void snd_job_set_state(struct snd *d, struct snd_job *job, enum snd_job_state s)
{
    d->jobs_by_state[job->state]--;
    tenant_count(d, job, job->state, -1);
    job->state = s;
    d->jobs_by_state[s]++;
    tenant_count(d, job, s, 1);
}

json_t *snd_job_json(const struct snd *d, const struct snd_job *job)
{
    json_t *o = json_deep_copy(job->spec);
    json_object_set_new(o, "id", json_integer(job->id));
    json_object_set_new(o, "tenant", json_string(job->tenant));
    json_object_set_new(o, "state", json_string(snd_job_state_name(job->state)));
    json_object_set_new(o, "submit_time_s", json_integer(job->submit_s));
    json_object_set_new(o, "updated_time_s", json_integer(job->updated_s));
    if (job->idem_key)
        json_object_set_new(o, "idempotency_key", json_string(job->idem_key));
    bool waiting = job->state == SND_JOB_PENDING || job->state == SND_JOB_REQUEUED;
    json_object_set_new(o, "pending_reason",
                        waiting ? json_string(snd_sched_reason(d, job)) : json_null());
    char detail[300] = "";
    if (waiting)
        snd_quota_pending_detail(d, job, snd_sched_reason(d, job), detail, sizeof(detail));
    json_object_set_new(o, "pending_detail", detail[0] ? json_string(detail) : json_null());
    json_t *alloc = json_array(), *nodes = json_array();
    uint32_t last_server = SN_NONE;
    /* An ended job shows its last run's placement (its record). */
    bool ended = job->state == SND_JOB_COMPLETED || job->state == SND_JOB_FAILED ||
                 job->state == SND_JOB_CANCELLED;
    const uint32_t *gpus = ended ? job->last_alloc : job->alloc;
    uint32_t n_gpus = ended ? job->n_last_alloc : job->n_alloc;
    for (uint32_t i = 0; i < n_gpus; i++) {
        json_array_append_new(alloc, json_integer(gpus[i]));
        uint32_t s = d->model->gpu_server[gpus[i]];
        if (s != last_server) {
            char name[64];
            json_array_append_new(
                nodes, json_string(sn_model_server_name(d->model, s, name, sizeof(name))));
            last_server = s;
        }
    }
    json_object_set_new(o, "allocation", alloc);
    json_object_set_new(o, "nodes", nodes);
    uint32_t exited = job->n_ranks_done;
    for (uint32_t r = 0; ended && job->last_ranks_ok && r < job->n_last_alloc; r++)
        exited += (uint32_t)(job->last_ranks_ok[r / 64] >> (r % 64) & 1);
    json_object_set_new(o, "ranks_exited", json_integer(exited));
    json_object_set_new(o, "requeues", json_integer(job->requeues));
    json_object_set_new(o, "start_time_s", job->start_s ? json_integer(job->start_s) : json_null());
    json_object_set_new(o, "end_time_s", job->end_s ? json_integer(job->end_s) : json_null());
    json_object_set_new(o, "exit_status",
                        job->state == SND_JOB_FAILED && job->exit_status
                            ? json_integer(job->exit_status)
                        : job->state == SND_JOB_COMPLETED ? json_integer(0)
                                                          : json_null());
    /* Per rank of the last run: 0 for a rank that exited 0, the failing
     * rank's status, null for a rank stopped by the agent (not reported). */
    json_t *ranks = json_array();
    for (uint32_t r = 0; ended && r < job->n_last_alloc; r++) {
        bool ok = job->last_ranks_ok && (job->last_ranks_ok[r / 64] >> (r % 64) & 1);
        json_array_append_new(ranks, ok ? json_integer(0)
                                     : (int32_t)r == job->failed_rank
                                         ? json_integer(job->exit_status)
                                         : json_null());
    }
    json_object_set_new(o, "rank_exit_statuses", ranks);
    json_object_set_new(o, "detail", job->detail ? json_string(job->detail) : json_null());
    json_object_set_new(o, "master_port",
                        job->master_port ? json_integer(job->master_port) : json_null());
    json_object_set_new(o, "isolation",
                        job->isolation ? json_string(job->isolation) : json_null());
    char shape[300];
    snd_shape_describe(job->spec, shape, sizeof(shape));
    json_object_set_new(o, "shape", json_string(shape));
    snd_ckpt_json(job, o);
    snd_goodput_job_json(job, snd_now_s(), o);
    return o;
}

char *snd_job_run_text(const struct snd_job *job)
{
    json_t *o = json_pack("{s:I,s:I,s:I,s:i,s:s?}", "requeues", (json_int_t)job->requeues,
                          "start_s", (json_int_t)job->start_s, "end_s", (json_int_t)job->end_s,
                          "exit_status", (int)job->exit_status, "detail", job->detail);
    if (o && job->master_port)
        json_object_set_new(o, "master_port", json_integer(job->master_port));
    if (o && job->isolation)
        json_object_set_new(o, "isolation", json_string(job->isolation));
    if (o && job->n_last_alloc) {
        uint32_t *ok = malloc(job->n_last_alloc * sizeof(*ok)), k = 0;
        for (uint32_t r = 0; ok && r < job->n_last_alloc; r++)
            if (job->last_ranks_ok[r / 64] >> (r % 64) & 1)
                ok[k++] = r;
        char *g = snd_ranges_format(job->last_alloc, job->n_last_alloc);
        char *t = ok ? snd_ranges_format(ok, k) : NULL;
        free(ok);
        if (g && t) {
            json_object_set_new(o, "last_alloc", json_string(g));
            json_object_set_new(o, "last_ranks_ok", json_string(t));
            json_object_set_new(o, "failed_rank", json_integer(job->failed_rank));
        } else {
            json_decref(o);
            o = NULL;
        }
        free(g);
        free(t);
    }
    if (o && job->ckpt_path)
        json_object_update_new(o, json_pack("{s:s,s:I,s:I,s:I}", "checkpoint_path",
                                            job->ckpt_path, "checkpoint_time_s",
                                            (json_int_t)job->ckpt_time_s, "checkpoint_step",
                                            (json_int_t)job->ckpt_step, "checkpoint_count",
                                            (json_int_t)job->ckpt_count));
    if (o)
        snd_goodput_run_text(job, o);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return text;
}

void snd_job_set_detail(struct snd_job *job, const char *detail)
{
    free(job->detail);
    job->detail = detail ? strdup(detail) : NULL;
}

/* ---- tenants, pools, classes, quotas, admin, revocations ----------- */

struct snd_named *snd_named_find(struct snd_named *list, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0)
            return &list[i];
    return NULL;
}

enum sn_err snd_named_put(struct snd_named **list, uint32_t *n, const char *name, json_t *doc,
                          struct sn_error *err)
{
    struct snd_named *e = snd_named_find(*list, *n, name);
    if (e) {
        json_decref(e->doc);
        e->doc = doc;
        return SN_OK;
    }
    if (*n >= 4096)
        return sn_error_set(err, SN_ERR_LIMIT, "at most 4096 entries");
    struct snd_named *grown = realloc(*list, (*n + 1) * sizeof(**list));
    if (!grown)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    *list = grown;
    grown[*n] = (struct snd_named){.doc = doc};
    snprintf(grown[*n].name, sizeof(grown[*n].name), "%s", name);
    (*n)++;
    return SN_OK;
}

const struct snd_quota *snd_quota_find(const struct snd *d, const char *tenant, const char *pool)
{
    for (uint32_t i = 0; i < d->n_quotas; i++)
        if (strcmp(d->quotas[i].tenant, tenant) == 0 && strcmp(d->quotas[i].pool, pool) == 0)
            return &d->quotas[i];
    return NULL;
}

enum sn_err snd_quota_put(struct snd *d, const char *tenant, const char *pool, int64_t gpus)
{
    struct snd_quota *q = (struct snd_quota *)snd_quota_find(d, tenant, pool);
    if (!q) {
        if (d->n_quotas >= 65536)
            return SN_ERR_LIMIT;
        struct snd_quota *grown = realloc(d->quotas, (d->n_quotas + 1) * sizeof(*grown));
        if (!grown)
            return SN_ERR_NOMEM;
        d->quotas = grown;
        q = &grown[d->n_quotas++];
        snprintf(q->tenant, sizeof(q->tenant), "%s", tenant);
        snprintf(q->pool, sizeof(q->pool), "%s", pool);
    }
    q->gpus = gpus;
    return SN_OK;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

void snd_admin_set(struct snd_admin *a, enum snd_admin_state s, const char *reason,
                   const char *actor, int64_t time_s)
{
    free(a->reason);
    free(a->actor);
    a->state = (uint8_t)s;
    a->reason = dup_or_null(reason);
    a->actor = dup_or_null(actor);
    a->time_s = time_s;
}

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
    struct snd_job *job = calloc(1, sizeof(*job));
    int state = snd_job_state_parse(row->text[2]);
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
    job->idem_key = dup_or_null(row->text[1]);
    job->state = (enum snd_job_state)state;
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
    snd_job_set_detail(job, json_string_value(json_object_get(run, "detail")));
    job->master_port = (int32_t)json_integer_value(json_object_get(run, "master_port"));
    snd_goodput_load(job, run);
    const char *iso = json_string_value(json_object_get(run, "isolation"));
    job->isolation = iso ? strdup(iso) : NULL;
    job->failed_rank = -1;
    const char *la = json_string_value(json_object_get(run, "last_alloc"));
    const char *lk = json_string_value(json_object_get(run, "last_ranks_ok"));
    uint32_t *ok = NULL, n_ok = 0;
    if (la && lk &&
        snd_ranges_parse(la, &job->last_alloc, &job->n_last_alloc, c->d->model->n_gpus) == 0 &&
        snd_ranges_parse(lk, &ok, &n_ok, job->n_last_alloc) == 0) {
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
    json_decref(run);
    c->rc = snd_job_insert(c->d, job, c->err);
    if (c->rc != SN_OK)
        snd_job_free(job);
    return c->rc == SN_OK;
}

static bool load_admin(struct load_ctx *c, const struct sn_store_write *row)
{
    int s = admin_state_parse(row->text[2]);
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
    snd_admin_set(node ? &c->d->nodes[id] : &c->d->gpus[id], (enum snd_admin_state)s, row->text[3],
                  row->text[4], row->num[0]);
    return true;
}

/* An allocation: GPUs in rank order and the ranks that have exited. */
static bool load_alloc(struct load_ctx *c, const struct sn_store_write *row)
{
    struct snd_job *job = snd_job_get(c->d, row->num[0]);
    uint32_t *ranks = NULL, n_ranks = 0;
    const struct sn_model *m = c->d->model;
    if (!job || job->alloc ||
        snd_ranges_parse(row->text[0], &job->alloc, &job->n_alloc, m->n_gpus) != 0 ||
        snd_ranges_parse(row->text[1], &ranks, &n_ranks, job->n_alloc) != 0) {
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
        struct snd_named **list = row->kind == SN_STORE_PUT_TENANT ? &d->tenants
                                  : row->kind == SN_STORE_PUT_POOL ? &d->pools
                                                                   : &d->classes;
        uint32_t *n = row->kind == SN_STORE_PUT_TENANT ? &d->n_tenants
                      : row->kind == SN_STORE_PUT_POOL ? &d->n_pools
                                                       : &d->n_classes;
        c->rc =
            doc ? snd_named_put(list, n, row->text[0], doc, c->err)
                : sn_error_set(c->err, SN_ERR_INVALID, "stored '%s' is malformed", row->text[0]);
        return c->rc == SN_OK;
    }
    case SN_STORE_PUT_QUOTA:
        c->rc = snd_quota_put(d, row->text[0], row->text[1], row->num[0]);
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
    d->idem = calloc(1, sizeof(*d->idem));
    d->nodes = calloc(d->model->n_servers ? d->model->n_servers : 1, sizeof(*d->nodes));
    d->gpus = calloc(d->model->n_gpus ? d->model->n_gpus : 1, sizeof(*d->gpus));
    d->next_job_id = 1;
    if (!d->idem || !d->nodes || !d->gpus)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    struct load_ctx c = {d, err, SN_OK};
    enum sn_err rc = sn_store_load(d->store, load_row, &c, err);
    return rc != SN_OK ? rc : c.rc;
}

int snd_state_verify(const struct snd *d, struct sn_error *err)
{
    const struct sn_model *m = d->model;
    uint8_t *owner_seen = calloc(m->n_gpus ? m->n_gpus : 1, 1);
    if (!owner_seen)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    enum sn_err rc = SN_OK;
    uint64_t by_state[SND_JOB_STATE_COUNT] = {0};
    for (int64_t i = 0; i < d->n_jobs_cap && rc == SN_OK; i++) {
        const struct snd_job *j = d->jobs[i];
        if (!j)
            continue;
        by_state[j->state]++;
        if (j->id != i + 1 || j->id >= d->next_job_id)
            rc = sn_error_set(err, SN_ERR_INTERNAL, "job %lld is misfiled", (long long)j->id);
        else if (!snd_named_find(d->tenants, d->n_tenants, j->tenant))
            rc = sn_error_set(err, SN_ERR_INTERNAL, "job %lld belongs to unknown tenant '%s'",
                              (long long)j->id, j->tenant);
        else if (j->idem_key && snd_idem_find(d, j->tenant, j->idem_key) != j->id)
            rc = sn_error_set(err, SN_ERR_INTERNAL, "job %lld: idempotency key not unique",
                              (long long)j->id);
        for (uint32_t g = 0; rc == SN_OK && g < j->n_alloc; g++) {
            if (j->alloc[g] >= m->n_gpus || owner_seen[j->alloc[g]]++)
                rc = sn_error_set(err, SN_ERR_INTERNAL, "GPU %u allocated twice (job %lld)",
                                  j->alloc[g], (long long)j->id);
        }
    }
    for (int s = 0; rc == SN_OK && s < SND_JOB_STATE_COUNT; s++)
        if (by_state[s] != d->jobs_by_state[s])
            rc = sn_error_set(err, SN_ERR_INTERNAL, "job count of state '%s' is off",
                              snd_job_state_name((enum snd_job_state)s));
    /* Quotas: GPUs held by running jobs of a tenant in a pool. */
    for (uint32_t q = 0; rc == SN_OK && q < d->n_quotas; q++) {
        int64_t held = 0;
        for (int64_t i = 0; i < d->n_jobs_cap; i++) {
            const struct snd_job *j = d->jobs[i];
            const char *pool = j ? json_string_value(json_object_get(j->spec, "pool")) : NULL;
            if (j && j->state == SND_JOB_RUNNING && pool &&
                strcmp(j->tenant, d->quotas[q].tenant) == 0 && strcmp(pool, d->quotas[q].pool) == 0)
                held += j->n_alloc;
        }
        if (held > d->quotas[q].gpus)
            rc = sn_error_set(err, SN_ERR_INTERNAL,
                              "tenant '%s' holds %lld GPUs in pool '%s', "
                              "over its quota of %lld",
                              d->quotas[q].tenant, (long long)held, d->quotas[q].pool,
                              (long long)d->quotas[q].gpus);
    }
    free(owner_seen);
    return rc;
}

static void named_free(struct snd_named *list, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        json_decref(list[i].doc);
    free(list);
}

void snd_state_free(struct snd *d)
{
    for (int64_t i = 0; i < d->n_jobs_cap; i++)
        snd_job_free(d->jobs[i]);
    free(d->jobs);
    if (d->idem)
        free(d->idem->slots);
    free(d->idem);
    named_free(d->tenants, d->n_tenants);
    named_free(d->pools, d->n_pools);
    named_free(d->classes, d->n_classes);
    free(d->quotas);
    for (uint32_t i = 0; d->nodes && i < d->model->n_servers; i++)
        snd_admin_set(&d->nodes[i], SND_ADMIN_UP, NULL, NULL, 0);
    for (uint32_t i = 0; d->gpus && i < d->model->n_gpus; i++)
        snd_admin_set(&d->gpus[i], SND_ADMIN_UP, NULL, NULL, 0);
    free(d->nodes);
    free(d->gpus);
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
    uint64_t h = idem_hash(id, "");
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
