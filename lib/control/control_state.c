/*
 * The control plane's tables (see sn/control.h for their invariants): jobs
 * by id, the idempotency index, tenants/pools/classes/quotas, node and GPU
 * admin states, and the check of the invariants after a restore.
 */
#include "control_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const job_state_names[] = {
#define SN_X(name, text) text,
    SN_CONTROL_JOB_STATE_LIST(SN_X)
#undef SN_X
};
static const char *const admin_state_names[] = {
#define SN_X(name, text) text,
    SN_CONTROL_ADMIN_STATE_LIST(SN_X)
#undef SN_X
};

const char *sn_control_job_state_name(enum sn_control_job_state s)
{
    return (unsigned)s < SN_CONTROL_JOB_STATE_COUNT ? job_state_names[s] : "unknown";
}

int sn_control_job_state_parse(const char *text)
{
    for (int i = 0; i < SN_CONTROL_JOB_STATE_COUNT; i++)
        if (strcmp(text, job_state_names[i]) == 0)
            return i;
    return -1;
}

bool sn_control_job_state_ended(enum sn_control_job_state s)
{
    return s == SN_CONTROL_JOB_COMPLETED || s == SN_CONTROL_JOB_FAILED ||
           s == SN_CONTROL_JOB_CANCELLED || s == SN_CONTROL_JOB_TIMEOUT;
}

const char *sn_control_admin_state_name(enum sn_control_admin_state s)
{
    return (unsigned)s < SN_CONTROL_ADMIN_STATE_COUNT ? admin_state_names[s] : "unknown";
}

int sn_control_admin_state_parse(const char *text)
{
    for (int i = 0; i < SN_CONTROL_ADMIN_STATE_COUNT; i++)
        if (strcmp(text, admin_state_names[i]) == 0)
            return i;
    return -1;
}

/* ---- idempotency index: open addressing, FNV-1a of "tenant\0key" ---- */

struct idem_slot {
    uint64_t hash;
    int64_t job_id; /* 0: empty */
};

struct sn_control_idem {
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

struct sn_control_idem *sn_control_idem_new(void)
{
    return calloc(1, sizeof(struct sn_control_idem));
}

int64_t sn_control_idem_find(const struct sn_control *d, const char *tenant, const char *key)
{
    const struct sn_control_idem *ix = d->idem;
    if (!ix->cap)
        return 0;
    uint64_t h = idem_hash(tenant, key);
    for (uint64_t i = h & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        const struct idem_slot *s = &ix->slots[i];
        if (s->job_id == 0)
            return 0;
        if (s->hash != h)
            continue;
        const struct sn_control_job *j = sn_control_job_get(d, s->job_id);
        if (j && j->idem_key && strcmp(j->tenant, tenant) == 0 && strcmp(j->idem_key, key) == 0)
            return s->job_id;
    }
}

static void idem_place(struct sn_control_idem *ix, uint64_t h, int64_t id)
{
    uint64_t i = h & (ix->cap - 1);
    while (ix->slots[i].job_id != 0)
        i = (i + 1) & (ix->cap - 1);
    ix->slots[i] = (struct idem_slot){h, id};
    ix->used++;
}

static enum sn_err idem_add(struct sn_control_idem *ix, const char *tenant, const char *key,
                            int64_t id)
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
static void idem_remove(struct sn_control_idem *ix, const char *tenant, const char *key, int64_t id)
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

struct sn_control_job *sn_control_job_get(const struct sn_control *d, int64_t id)
{
    if (id < 1 || id > d->n_jobs_cap)
        return NULL;
    return d->jobs[id - 1];
}

void sn_control_job_free(struct sn_control_job *job)
{
    if (job)
        free(job->hold_detail);
    if (!job)
        return;
    free(job->idem_key);
    json_decref(job->spec);
    free(job->alloc);
    free(job->ranks_done);
    free(job->imex_ready);
    free(job->preflight_done);
    free(job->expedite_gpus);
    free(job->detail);
    free(job->isolation);
    free(job->last_alloc);
    free(job->last_ranks_ok);
    free(job->ckpt_path);
    free(job);
}

/* Adds delta (1 or -1) of job in state to its tenant's counters. */
static void tenant_count(struct sn_control *d, const struct sn_control_job *job,
                         enum sn_control_job_state state, int delta)
{
    struct sn_control_named *t = sn_control_named_find(d->tenants, d->n_tenants, job->tenant);
    if (!t)
        return;
    bool live = state == SN_CONTROL_JOB_PENDING || state == SN_CONTROL_JOB_RUNNING ||
                state == SN_CONTROL_JOB_REQUEUED;
    t->jobs_live += live ? (uint64_t)(int64_t)delta : 0;
    t->jobs_total += (uint64_t)(int64_t)delta;
}

enum sn_err sn_control_job_insert(struct sn_control *d, struct sn_control_job *job,
                                  struct sn_error *err)
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
        struct sn_control_job **jobs = realloc(d->jobs, (size_t)cap * sizeof(*jobs));
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
    if (json_object_get(job->spec, "after_ok") || sn_control_array_throttled(job))
        d->settle_jobs++;
    if (job->id >= d->next_job_id)
        d->next_job_id = job->id + 1;
    return SN_OK;
}

void sn_control_job_remove(struct sn_control *d, int64_t id)
{
    struct sn_control_job *job = sn_control_job_get(d, id);
    if (!job)
        return;
    if (job->idem_key)
        idem_remove(d->idem, job->tenant, job->idem_key, id);
    d->jobs_by_state[job->state]--;
    tenant_count(d, job, job->state, -1);
    d->jobs[id - 1] = NULL;
    sn_control_job_free(job);
}

void sn_control_job_set_state(struct sn_control *d, struct sn_control_job *job,
                              enum sn_control_job_state s)
{
    d->jobs_by_state[job->state]--;
    tenant_count(d, job, job->state, -1);
    job->state = s;
    d->jobs_by_state[s]++;
    tenant_count(d, job, s, 1);
}

json_t *sn_control_job_json(const struct sn_control *d, const struct sn_control_job *job)
{
    json_t *o = json_deep_copy(job->spec);
    json_object_set_new(o, "id", json_integer(job->id));
    json_object_set_new(o, "tenant", json_string(job->tenant));
    json_object_set_new(o, "state", json_string(sn_control_job_state_name(job->state)));
    json_object_set_new(o, "submit_time_s", json_integer(job->submit_s));
    json_object_set_new(o, "updated_time_s", json_integer(job->updated_s));
    if (job->idem_key)
        json_object_set_new(o, "idempotency_key", json_string(job->idem_key));
    bool waiting = job->state == SN_CONTROL_JOB_PENDING || job->state == SN_CONTROL_JOB_REQUEUED;
    json_object_set_new(o, "pending_reason",
                        waiting ? json_string(sn_control_reason(d, job)) : json_null());
    char detail[300] = "";
    if (waiting && job->held)
        snprintf(detail, sizeof(detail), "%s", job->hold_detail ? job->hold_detail : "held");
    else if (waiting)
        sn_control_pending_detail(d, job, sn_control_reason(d, job), detail, sizeof(detail));
    json_object_set_new(o, "pending_detail", detail[0] ? json_string(detail) : json_null());
    json_t *alloc = json_array(), *nodes = json_array();
    uint32_t last_server = SN_NONE;
    /* An ended job shows its last run's placement (its record). */
    bool ended = sn_control_job_state_ended(job->state);
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
                        job->state == SN_CONTROL_JOB_FAILED && job->exit_status
                            ? json_integer(job->exit_status)
                        : job->state == SN_CONTROL_JOB_COMPLETED ? json_integer(0)
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
    json_object_set_new(o, "isolation", job->isolation ? json_string(job->isolation) : json_null());
    char shape[300];
    sn_control_shape_describe(job->spec, shape, sizeof(shape));
    json_object_set_new(o, "shape", json_string(shape));
    sn_control_ckpt_json(job, o);
    sn_control_imex_json(job, o);
    sn_control_preflight_json(job, o);
    sn_control_preempt_json(d, job, o);
    sn_control_goodput_job_json(job, sn_control_now_s(d), o);
    return o;
}

char *sn_control_job_run_text(const struct sn_control_job *job)
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
        char *g = sn_control_ranges_format(job->last_alloc, job->n_last_alloc);
        char *t = ok ? sn_control_ranges_format(ok, k) : NULL;
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
        json_object_update_new(o, json_pack("{s:s,s:I,s:I,s:I}", "checkpoint_path", job->ckpt_path,
                                            "checkpoint_time_s", (json_int_t)job->ckpt_time_s,
                                            "checkpoint_step", (json_int_t)job->ckpt_step,
                                            "checkpoint_count", (json_int_t)job->ckpt_count));
    if (o && job->held)
        json_object_set_new(o, "hold_detail",
                            json_string(job->hold_detail ? job->hold_detail : ""));
    if (o)
        sn_control_goodput_run_text(job, o);
    if (o)
        sn__control_imex_run_text(job, o);
    if (o)
        sn__control_preempt_run_text(job, o);
    if (o)
        sn__control_preflight_run_text(job, o);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(o);
    return text;
}

void sn_control_job_set_detail(struct sn_control_job *job, const char *detail)
{
    free(job->detail);
    job->detail = detail ? strdup(detail) : NULL;
}

/* ---- tenants, pools, classes, quotas, admin, revocations ----------- */

struct sn_control_named *sn_control_named_find(struct sn_control_named *list, uint32_t n,
                                               const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0)
            return &list[i];
    return NULL;
}

enum sn_err sn_control_named_put(struct sn_control_named **list, uint32_t *n, const char *name,
                                 json_t *doc, struct sn_error *err)
{
    struct sn_control_named *e = sn_control_named_find(*list, *n, name);
    if (e) {
        json_decref(e->doc);
        e->doc = doc;
        return SN_OK;
    }
    if (*n >= 4096)
        return sn_error_set(err, SN_ERR_LIMIT, "at most 4096 entries");
    struct sn_control_named *grown = realloc(*list, (*n + 1) * sizeof(**list));
    if (!grown)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    *list = grown;
    grown[*n] = (struct sn_control_named){.doc = doc};
    snprintf(grown[*n].name, sizeof(grown[*n].name), "%s", name);
    (*n)++;
    return SN_OK;
}

const struct sn_control_quota *sn_control_quota_find(const struct sn_control *d, const char *tenant,
                                                     const char *pool)
{
    for (uint32_t i = 0; i < d->n_quotas; i++)
        if (strcmp(d->quotas[i].tenant, tenant) == 0 && strcmp(d->quotas[i].pool, pool) == 0)
            return &d->quotas[i];
    return NULL;
}

enum sn_err sn_control_quota_put(struct sn_control *d, const char *tenant, const char *pool,
                                 int64_t gpus)
{
    struct sn_control_quota *q = (struct sn_control_quota *)sn_control_quota_find(d, tenant, pool);
    if (!q) {
        if (d->n_quotas >= 65536)
            return SN_ERR_LIMIT;
        struct sn_control_quota *grown = realloc(d->quotas, (d->n_quotas + 1) * sizeof(*grown));
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

void sn_control_admin_set(struct sn_control_admin *a, enum sn_control_admin_state s,
                          const char *reason, const char *actor, int64_t time_s)
{
    free(a->reason);
    free(a->actor);
    a->state = (uint8_t)s;
    a->reason = dup_or_null(reason);
    a->actor = dup_or_null(actor);
    a->time_s = time_s;
}

enum sn_err sn_control_verify(const struct sn_control *d, struct sn_error *err)
{
    const struct sn_model *m = d->model;
    uint8_t *owner_seen = calloc(m->n_gpus ? m->n_gpus : 1, 1);
    if (!owner_seen)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    enum sn_err rc = SN_OK;
    uint64_t by_state[SN_CONTROL_JOB_STATE_COUNT] = {0};
    for (int64_t i = 0; i < d->n_jobs_cap && rc == SN_OK; i++) {
        const struct sn_control_job *j = d->jobs[i];
        if (!j)
            continue;
        by_state[j->state]++;
        if (j->id != i + 1 || j->id >= d->next_job_id)
            rc = sn_error_set(err, SN_ERR_INTERNAL, "job %lld is misfiled", (long long)j->id);
        else if (!sn_control_named_find(d->tenants, d->n_tenants, j->tenant))
            rc = sn_error_set(err, SN_ERR_INTERNAL, "job %lld belongs to unknown tenant '%s'",
                              (long long)j->id, j->tenant);
        else if (j->idem_key && sn_control_idem_find(d, j->tenant, j->idem_key) != j->id)
            rc = sn_error_set(err, SN_ERR_INTERNAL, "job %lld: idempotency key not unique",
                              (long long)j->id);
        for (uint32_t g = 0; rc == SN_OK && g < j->n_alloc; g++) {
            if (j->alloc[g] >= m->n_gpus || owner_seen[j->alloc[g]]++)
                rc = sn_error_set(err, SN_ERR_INTERNAL, "GPU %u allocated twice (job %lld)",
                                  j->alloc[g], (long long)j->id);
        }
    }
    for (int s = 0; rc == SN_OK && s < SN_CONTROL_JOB_STATE_COUNT; s++)
        if (by_state[s] != d->jobs_by_state[s])
            rc = sn_error_set(err, SN_ERR_INTERNAL, "job count of state '%s' is off",
                              sn_control_job_state_name((enum sn_control_job_state)s));
    /* Quotas: GPUs held by running jobs of a tenant in a pool. */
    for (uint32_t q = 0; rc == SN_OK && q < d->n_quotas; q++) {
        int64_t held = 0;
        for (int64_t i = 0; i < d->n_jobs_cap; i++) {
            const struct sn_control_job *j = d->jobs[i];
            const char *pool = j ? json_string_value(json_object_get(j->spec, "pool")) : NULL;
            if (j && j->state == SN_CONTROL_JOB_RUNNING && pool &&
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

static void named_free(struct sn_control_named *list, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        json_decref(list[i].doc);
    free(list);
}

void sn_control_state_free(struct sn_control *d)
{
    for (int64_t i = 0; i < d->n_jobs_cap; i++)
        sn_control_job_free(d->jobs[i]);
    free(d->jobs);
    if (d->idem)
        free(d->idem->slots);
    free(d->idem);
    named_free(d->tenants, d->n_tenants);
    named_free(d->pools, d->n_pools);
    named_free(d->classes, d->n_classes);
    free(d->quotas);
    for (uint32_t i = 0; d->nodes && i < d->model->n_servers; i++)
        sn_control_admin_set(&d->nodes[i], SN_CONTROL_ADMIN_UP, NULL, NULL, 0);
    for (uint32_t i = 0; d->gpus && i < d->model->n_gpus; i++)
        sn_control_admin_set(&d->gpus[i], SN_CONTROL_ADMIN_UP, NULL, NULL, 0);
    free(d->nodes);
    free(d->gpus);
}

int sn_control_admin_transition(enum sn_control_admin_state from, const char *action, bool busy)
{
    if (strcmp(action, "cordon") == 0)
        return from == SN_CONTROL_ADMIN_UP ? SN_CONTROL_ADMIN_CORDONED : -1;
    if (strcmp(action, "drain") == 0)
        return from == SN_CONTROL_ADMIN_UP || from == SN_CONTROL_ADMIN_CORDONED
                   ? (busy ? SN_CONTROL_ADMIN_DRAINING : SN_CONTROL_ADMIN_DRAINED)
                   : -1;
    if (strcmp(action, "fail") == 0)
        return from == SN_CONTROL_ADMIN_DOWN ? -1 : SN_CONTROL_ADMIN_DOWN;
    if (strcmp(action, "resume") == 0)
        return from == SN_CONTROL_ADMIN_UP ? -1 : SN_CONTROL_ADMIN_UP;
    return -2;
}

bool sn_control_admin_check(const struct sn_control *c, bool is_node, uint32_t id,
                            const char *action, const char *reason, int *to,
                            struct sn_control_refusal *why)
{
    const struct sn_model *m = c->model;
    const struct sn_control_admin *a = is_node ? &c->nodes[id] : &c->gpus[id];
    uint32_t first = is_node ? m->server_first_gpu[id] : id;
    uint32_t count = is_node ? sn_model_server_spec(m, id)->gpus : 1;
    *to = sn_control_admin_transition((enum sn_control_admin_state)a->state, action,
                                      sn_control_busy(c, first, count));
    *why = (struct sn_control_refusal){0};
    if (*to == -2) {
        *why = (struct sn_control_refusal){.status = 404, .code = "not_found"};
        snprintf(why->message, sizeof(why->message),
                 "no action '%.64s' (expected cordon, drain, fail or resume)", action);
    } else if (*to == -1) {
        *why = (struct sn_control_refusal){
            .status = 409, .code = "invalid_transition", .field = "state"};
        snprintf(why->message, sizeof(why->message), "cannot %.64s a %s %s", action,
                 sn_control_admin_state_name((enum sn_control_admin_state)a->state),
                 is_node ? "node" : "gpu");
    } else if (*to != SN_CONTROL_ADMIN_UP && (!reason || !reason[0])) {
        *why =
            (struct sn_control_refusal){.status = 400, .code = "invalid_field", .field = "reason"};
        snprintf(why->message, sizeof(why->message), "missing field 'reason'");
    }
    return why->status == 0;
}
