/*
 * snd's wiring of the scheduler core: configuration from the spec and the
 * tenants, the restore at start, passes on events and on a timer, the
 * translation of the core's decisions into job states, allocations, events
 * and store rows, admin states onto the core, heartbeat loss, and the
 * outbox that keeps state-driven store writes in order. See sched.h for the
 * rules; everything here runs on the state thread, except outbox_done().
 */
#include "snd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OUTBOX_MAX (1u << 22) /* entries waiting at most; beyond is fail-stop */
#define MAX_ALLOC_GPUS (1u << 22)

/* ---- ranges --------------------------------------------------------------- */

char *snd_ranges_format(const uint32_t *v, uint32_t n)
{
    size_t cap = 16 + (size_t)n * 22, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        int w = j > i ? snprintf(out + len, cap - len, "%s%u-%u", len ? "," : "", v[i], v[j])
                      : snprintf(out + len, cap - len, "%s%u", len ? "," : "", v[i]);
        len += (size_t)w;
        i = j + 1;
    }
    return out;
}

static int parse_u32(const char **p, uint32_t *out)
{
    char *end = NULL;
    if (**p < '0' || **p > '9')
        return -1;
    unsigned long long v = strtoull(*p, &end, 10);
    if (v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    *p = end;
    return 0;
}

int snd_ranges_parse(const char *text, uint32_t **out, uint32_t *n, uint32_t max)
{
    uint32_t cap = 0, count = 0, *v = NULL;
    const char *p = text;
    while (*p) {
        uint32_t a, b;
        if (parse_u32(&p, &a) != 0)
            goto bad;
        b = a;
        if (*p == '-') {
            p++;
            if (parse_u32(&p, &b) != 0 || b < a)
                goto bad;
        }
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
        if ((uint64_t)count + (b - a) + 1 > max)
            goto bad;
        while (count + (b - a) + 1 > cap) {
            cap = cap ? cap * 2 : 64;
            uint32_t *g = realloc(v, cap * sizeof(*v));
            if (!g)
                goto bad;
            v = g;
        }
        for (uint64_t x = a; x <= b; x++)
            v[count++] = (uint32_t)x;
    }
    *out = v;
    *n = count;
    return 0;
bad:
    free(v);
    return -1;
}

/* ---- outbox ---------------------------------------------------------------- */

struct ob_entry {
    size_t n;
    struct sn_store_write rows[];
};

struct snd_outbox {
    struct ob_entry **q;
    uint32_t head, count, cap;
};

void snd_outbox_add(struct snd *d, const struct sn_store_write *rows, size_t n)
{
    struct snd_outbox *o = d->outbox;
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        for (int t = 0; t < SN_STORE_TEXT_MAX; t++)
            bytes += rows[i].text[t] ? strlen(rows[i].text[t]) + 1 : 0;
    struct ob_entry *e = malloc(sizeof(*e) + n * sizeof(e->rows[0]) + bytes);
    if (!e || o->count >= OUTBOX_MAX) {
        free(e);
        fprintf(stderr, "snd: the outbox is full or out of memory; stopping\n");
        atomic_store(&d->fatal, true);
        return;
    }
    if (o->count == o->cap) {
        uint32_t cap = o->cap ? o->cap * 2 : 256;
        struct ob_entry **q = malloc(cap * sizeof(*q));
        if (!q) {
            free(e);
            atomic_store(&d->fatal, true);
            return;
        }
        for (uint32_t i = 0; i < o->count; i++)
            q[i] = o->q[(o->head + i) % o->cap];
        free(o->q);
        o->q = q;
        o->cap = cap;
        o->head = 0;
    }
    char *p = (char *)&e->rows[n];
    e->n = n;
    for (size_t i = 0; i < n; i++) {
        e->rows[i] = rows[i];
        for (int t = 0; t < SN_STORE_TEXT_MAX; t++) {
            if (!rows[i].text[t])
                continue;
            size_t len = strlen(rows[i].text[t]) + 1;
            memcpy(p, rows[i].text[t], len);
            e->rows[i].text[t] = p;
            p += len;
        }
    }
    o->q[(o->head + o->count) % o->cap] = e;
    o->count++;
    d->outbox_seq++;
}

bool snd_outbox_empty(const struct snd *d)
{
    return d->outbox->count == 0;
}

bool snd_outbox_durable(const struct snd *d, uint64_t seq)
{
    return atomic_load(&((struct snd *)d)->outbox_durable) >= seq;
}

/* Writer thread: commits arrive in submission order. */
static void outbox_done(void *ctx, enum sn_err rc)
{
    struct snd *d = ctx;
    if (rc != SN_OK) {
        fprintf(stderr, "snd: a state write failed (%s); stopping\n", sn_err_name(rc));
        atomic_store(&d->fatal, true);
    }
    atomic_fetch_add(&d->outbox_durable, 1);
}

bool snd_outbox_flush(struct snd *d)
{
    struct snd_outbox *o = d->outbox;
    while (o->count > 0) {
        struct ob_entry *e = o->q[o->head];
        struct sn_error err = {0};
        enum sn_err rc = sn_store_submit(d->store, e->rows, e->n, outbox_done, d, &err);
        if (rc == SN_ERR_LIMIT)
            return false;
        if (rc != SN_OK) {
            fprintf(stderr, "snd: %s; stopping\n", err.message);
            atomic_store(&d->fatal, true);
            return false;
        }
        free(e);
        o->head = (o->head + 1) % o->cap;
        o->count--;
    }
    return true;
}

/* ---- mapping to the core ------------------------------------------------------ */

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether the core uses the spec's pools (every supernode names one). */
static bool spec_pools_usable(const struct snd *d)
{
    if (d->spec->n_pools == 0 || d->spec->n_pools > SN_SCHED_MAX_POOLS)
        return false;
    for (uint32_t i = 0; i < d->model->n_supernodes; i++)
        if (d->model->supernodes[i].pool >= d->spec->n_pools)
            return false;
    return true;
}

uint32_t snd_sched_max_tenants(const struct snd *d)
{
    return SN_SCHED_MAX_TENANTS / (d->sched_pools ? d->sched_pools : 1);
}

/* Index of a spec pool by name, or SN_NONE. */
uint32_t snd_spec_pool(const struct snd *d, const char *name)
{
    for (uint32_t i = 0; name && i < d->spec->n_pools; i++)
        if (strcmp(d->spec->pools[i].name, name) == 0)
            return i;
    return SN_NONE;
}

static uint32_t tenant_index(const struct snd *d, const char *name)
{
    for (uint32_t i = 0; i < d->n_tenants; i++)
        if (strcmp(d->tenants[i].name, name) == 0)
            return i;
    return SN_NONE;
}

static uint32_t job_pool(const struct snd *d, const struct snd_job *j)
{
    if (!d->sched_spec_pools)
        return 0;
    uint32_t p = snd_spec_pool(d, json_string_value(json_object_get(j->spec, "pool")));
    return p == SN_NONE ? 0 : p;
}

static bool job_spec(const struct snd *d, const struct snd_job *j, struct sn_job_spec *js)
{
    uint32_t t = tenant_index(d, j->tenant);
    if (t == SN_NONE || t >= snd_sched_max_tenants(d))
        return false;
    memset(js, 0, sizeof(*js));
    js->pool = job_pool(d, j);
    js->tenant = t * d->sched_pools + js->pool;
    js->gpus = (uint32_t)json_integer_value(json_object_get(j->spec, "gpus"));
    js->group_gpus = 1;
    json_int_t limit = json_integer_value(json_object_get(j->spec, "time_limit_s"));
    js->walltime_s = (double)(limit > 0 ? limit : d->cfg.default_walltime_s);
    js->submit_s = (double)j->submit_s;
    const char *cls = json_string_value(json_object_get(j->spec, "priority_class"));
    struct snd_named *c = cls ? snd_named_find(d->classes, d->n_classes, cls) : NULL;
    if (c) {
        js->priority = (int32_t)json_integer_value(json_object_get(c->doc, "priority"));
        js->preemptible = json_is_true(json_object_get(c->doc, "preemptible"));
    }
    snd_shape_apply(d, j->spec, js);
    return true;
}

/* pool_borrow ("borrower:lender,...") into the pools' borrow masks. */
static enum sn_err borrow_masks(const struct snd *d, struct sn_sched_pool *pools, uint32_t n,
                                struct sn_error *err)
{
    const char *p = d->cfg.pool_borrow;
    while (*p) {
        size_t len = strcspn(p, ",");
        char pair[128], *colon;
        if (len >= sizeof(pair))
            return sn_error_set(err, SN_ERR_INVALID, "pool_borrow: '%.*s' is too long", (int)len,
                                p);
        memcpy(pair, p, len);
        pair[len] = '\0';
        colon = strchr(pair, ':');
        if (!colon)
            return sn_error_set(err, SN_ERR_INVALID,
                                "pool_borrow: '%s': expected borrower:lender", pair);
        *colon = '\0';
        uint32_t b = snd_spec_pool(d, pair), l = snd_spec_pool(d, colon + 1);
        if (n == 0 || b == SN_NONE || l == SN_NONE || b == l)
            return sn_error_set(err, SN_ERR_INVALID,
                                "pool_borrow: '%s:%s': expected two different pools of the "
                                "spec",
                                pair, colon + 1);
        pools[b].borrow_mask |= 1u << l;
        p += len;
        if (*p == ',')
            p++;
    }
    return SN_OK;
}

static enum sn_err make_core(struct snd *d, struct sn_error *err)
{
    struct sn_sched_config c;
    sn_sched_config_defaults(&c);
    c.policy = sn_sched_policy_from_name(d->cfg.sched_policy);
    if (c.policy == SN_SCHED_POLICY_COUNT)
        return sn_error_set(err, SN_ERR_INVALID,
                            "sched_policy '%s': expected supernode-first, "
                            "first-fit or tree-best-fit",
                            d->cfg.sched_policy);
    c.min_runtime_s = (double)d->cfg.preempt_min_runtime_s;
    c.spare_gpus_per_supernode = (uint32_t)d->cfg.spare_gpus_per_supernode;
    c.replace_in_place = d->cfg.replace_in_place;
    c.cpu_oversell = (double)d->cfg.cpu_oversell_pct / 100.0;
    c.memory_oversell = (double)d->cfg.memory_oversell_pct / 100.0;
    struct sn_sched_pool pools[SN_SCHED_MAX_POOLS];
    d->sched_spec_pools = spec_pools_usable(d);
    d->sched_pools = d->sched_spec_pools ? d->spec->n_pools : 1;
    c.n_pools = d->sched_spec_pools ? d->sched_pools : 0;
    for (uint32_t i = 0; i < c.n_pools; i++)
        pools[i] = (struct sn_sched_pool){d->spec->pools[i].kind, 0, 0};
    c.pools = pools;
    enum sn_err brc = borrow_masks(d, pools, c.n_pools, err);
    if (brc != SN_OK)
        return brc;
    struct sn_sched_tenant *tenants = calloc(SN_SCHED_MAX_TENANTS, sizeof(*tenants));
    if (!tenants)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    for (uint32_t q = 0; q < d->n_quotas; q++) {
        uint32_t t = tenant_index(d, d->quotas[q].tenant);
        uint32_t p = snd_spec_pool(d, d->quotas[q].pool);
        if (t == SN_NONE || p == SN_NONE || !d->sched_spec_pools || t >= snd_sched_max_tenants(d))
            continue;
        /* A quota of 0 means no GPUs: admission refuses every job then
         * (the core's 0 would mean unlimited, so it is left out). */
        if (d->quotas[q].gpus > 0)
            tenants[t * d->sched_pools + p].quota_gpus = (uint32_t)d->quotas[q].gpus;
    }
    snd_quota_apply(d, tenants, SN_SCHED_MAX_TENANTS);
    c.max_tenants_per_supernode = (uint32_t)d->cfg.max_tenants_per_supernode;
    c.n_tenants = SN_SCHED_MAX_TENANTS;
    c.tenants = tenants;
    enum sn_err rc = sn_sched_create(d->model, &c, &d->sched, err);
    free(tenants);
    return rc;
}

static bool map_job(struct snd *d, uint32_t sid, int64_t job_id)
{
    if (sid >= d->sched_jobs_cap) {
        uint32_t cap = d->sched_jobs_cap ? d->sched_jobs_cap : 1024;
        while (cap <= sid)
            cap *= 2;
        int64_t *m = realloc(d->sched_jobs, cap * sizeof(*m));
        if (!m)
            return false;
        d->sched_jobs = m;
        d->sched_jobs_cap = cap;
    }
    d->sched_jobs[sid] = job_id;
    return true;
}

static struct snd_job *sched_job(const struct snd *d, uint32_t sid)
{
    return sid < d->sched_jobs_cap ? snd_job_get(d, d->sched_jobs[sid]) : NULL;
}

/* ---- job rows ----------------------------------------------------------------- */

/* Writes the job's row, its allocation row (or its removal) and an event
 * to the outbox. */
static void job_rows(struct snd *d, struct snd_job *j, const char *event, const char *message)
{
    char *doc = json_dumps(j->spec, JSON_COMPACT | JSON_SORT_KEYS);
    char *run = snd_job_run_text(j);
    char *gpus = j->n_alloc ? snd_ranges_format(j->alloc, j->n_alloc) : NULL;
    struct sn_store_write w[3] = {
        {.kind = SN_STORE_PUT_JOB,
         .text = {j->tenant, j->idem_key, snd_job_state_name(j->state), doc, run},
         .num = {j->id, j->submit_s, j->updated_s}},
        {.kind = gpus ? SN_STORE_PUT_ALLOC : SN_STORE_DEL_ALLOC,
         .text = {gpus, ""},
         .num = {j->id, j->start_s}},
        {.kind = SN_STORE_ADD_EVENT, .text = {event, message}, .num = {j->id, j->updated_s}},
    };
    if (doc && run && (gpus || !j->n_alloc))
        snd_outbox_add(d, w, 3);
    else
        atomic_store(&d->fatal, true);
    free(doc);
    free(run);
    free(gpus);
}

static bool cordoning(uint8_t state)
{
    return state == SND_ADMIN_CORDONED || state == SND_ADMIN_DRAINING || state == SND_ADMIN_DRAINED;
}

static void admin_row(struct snd *d, bool is_node, uint32_t id)
{
    char name[64];
    struct snd_admin *a = is_node ? &d->nodes[id] : &d->gpus[id];
    if (is_node)
        sn_model_server_name(d->model, id, name, sizeof(name));
    else
        sn_model_gpu_name(d->model, id, name, sizeof(name));
    struct sn_store_write w = {.kind = SN_STORE_PUT_ADMIN,
                               .text = {is_node ? "node" : "gpu", name,
                                        snd_admin_state_name((enum snd_admin_state)a->state),
                                        a->reason ? a->reason : "", a->actor ? a->actor : ""},
                               .num = {a->time_s}};
    snd_outbox_add(d, &w, 1);
}

bool snd_sched_busy(const struct snd *d, uint32_t first, uint32_t count)
{
    for (uint32_t g = first; g < first + count; g++)
        if (sn_sched_gpu_owner(d->sched, g) != SN_NONE)
            return true;
    return false;
}

/* Draining servers and GPUs among gpus whose last job left become drained. */
static void settle_drains(struct snd *d, const uint32_t *gpus, uint32_t n)
{
    const struct sn_model *m = d->model;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t g = gpus[i], s = m->gpu_server[g];
        if (d->gpus[g].state == SND_ADMIN_DRAINING && !snd_sched_busy(d, g, 1)) {
            d->gpus[g].state = SND_ADMIN_DRAINED;
            d->gpus[g].time_s = snd_now_s();
            admin_row(d, false, g);
        }
        if (d->nodes[s].state == SND_ADMIN_DRAINING &&
            !snd_sched_busy(d, m->server_first_gpu[s], sn_model_server_spec(m, s)->gpus)) {
            d->nodes[s].state = SND_ADMIN_DRAINED;
            d->nodes[s].time_s = snd_now_s();
            admin_row(d, true, s);
        }
    }
}

/* GPUs out of placement: cordoned, draining or drained (their own admin
 * state or their server's), or waiting for their last job's processes. */
static bool held_back(const struct snd *d, uint32_t g)
{
    return cordoning(d->nodes[d->model->gpu_server[g]].state) || cordoning(d->gpus[g].state) ||
           (d->gpu_procs && d->gpu_procs[g]) ||
           (d->round_hold && d->round_hold[d->model->gpu_server[g]]);
}

void snd_sched_hold(struct snd *d, uint32_t s, bool on)
{
    const struct sn_model *m = d->model;
    if (!d->round_hold && !(d->round_hold = calloc(m->n_servers ? m->n_servers : 1, 1)))
        return;
    d->round_hold[s] = on;
    uint32_t first = m->server_first_gpu[s], count = sn_model_server_spec(m, s)->gpus;
    for (uint32_t g = first; g < first + count; g++)
        sn_sched_cordon(d->sched, g, held_back(d, g) || (d->silent && d->silent[s]));
    snd_sched_poke(d);
}

bool snd_sched_gpu_draining(const struct snd *d, uint32_t g)
{
    return d->gpu_procs && g < d->model->n_gpus && d->gpu_procs[g];
}

void snd_sched_procs_report(struct snd *d, uint32_t s, const char *busy)
{
    const struct sn_model *m = d->model;
    uint32_t first = m->server_first_gpu[s], count = sn_model_server_spec(m, s)->gpus;
    uint32_t *idx = NULL, n = 0;
    if (snd_ranges_parse(busy, &idx, &n, count) != 0)
        return; /* checked by the caller */
    d->agent_reports_procs[s] = true;
    for (uint32_t g = first; g < first + count; g++) {
        if (!d->gpu_procs[g])
            continue;
        bool listed = false;
        for (uint32_t i = 0; i < n && !listed; i++)
            listed = idx[i] == g - first;
        if (listed)
            continue;
        d->gpu_procs[g] = 0;
        sn_sched_cordon(d->sched, g, held_back(d, g));
        snd_sched_poke(d);
    }
    free(idx);
}

/* MASTER_PORT: the lowest port of the range no running job uses. */
static int32_t master_port_take(struct snd *d)
{
    for (uint32_t i = 0; i < SND_MASTER_PORTS; i++)
        if (!(d->master_ports[i / 64] >> (i % 64) & 1)) {
            d->master_ports[i / 64] |= 1ull << (i % 64);
            return (int32_t)(SND_MASTER_PORT_BASE + i);
        }
    return 0;
}

static void master_port_mark(struct snd *d, int32_t port, bool used)
{
    if (port < SND_MASTER_PORT_BASE || port >= SND_MASTER_PORT_BASE + SND_MASTER_PORTS)
        return;
    uint32_t i = (uint32_t)(port - SND_MASTER_PORT_BASE);
    if (used)
        d->master_ports[i / 64] |= 1ull << (i % 64);
    else
        d->master_ports[i / 64] &= ~(1ull << (i % 64));
}

/* Frees j's GPUs; its run ends now (interrupted: by a failure or a
 * preemption, the work after its last checkpoint lost). */
static void release_alloc(struct snd *d, struct snd_job *j, bool interrupted)
{
    uint32_t *gpus = j->alloc, n = j->n_alloc;
    /* Its processes may still run (cancel, requeue, a failed rank): the
     * GPUs wait for the agent to report them gone. */
    for (uint32_t i = 0; i < n; i++)
        if (d->agent_reports_procs[d->model->gpu_server[gpus[i]]]) {
            d->gpu_procs[gpus[i]] = 1;
            sn_sched_cordon(d->sched, gpus[i], true);
        }
    master_port_mark(d, j->master_port, false);
    j->master_port = 0;
    /* The run's record: its GPUs and which ranks exited 0. */
    free(j->last_alloc);
    free(j->last_ranks_ok);
    j->last_alloc = n ? malloc(n * sizeof(*gpus)) : NULL;
    j->last_ranks_ok = n ? calloc((n + 63) / 64, sizeof(uint64_t)) : NULL;
    j->n_last_alloc = j->last_alloc && j->last_ranks_ok ? n : 0;
    if (j->n_last_alloc) {
        memcpy(j->last_alloc, gpus, n * sizeof(*gpus));
        if (j->ranks_done)
            memcpy(j->last_ranks_ok, j->ranks_done, (n + 63) / 64 * sizeof(uint64_t));
    }
    snd_goodput_count_run(d, j, n, (double)snd_now_s(), interrupted);
    j->alloc = NULL;
    j->n_alloc = 0;
    free(j->ranks_done);
    j->ranks_done = NULL;
    j->n_ranks_done = 0;
    settle_drains(d, gpus, n);
    free(gpus);
}

/* ---- decisions ---------------------------------------------------------------- */

static void on_start(struct snd *d, uint32_t sid, double now)
{
    struct snd_job *j = sched_job(d, sid);
    uint32_t n = 0;
    const uint32_t *g = sn_sched_job_gpus(d->sched, sid, &n);
    if (!j || !g)
        return;
    if (j->state != SND_JOB_PENDING && j->state != SND_JOB_REQUEUED) {
        enum sn_err rc = sn_sched_finish(d->sched, sid, now, NULL);
        (void)rc;
        return;
    }
    j->alloc = malloc(n * sizeof(*g));
    j->ranks_done = calloc((n + 63) / 64, sizeof(uint64_t));
    if (!j->alloc || !j->ranks_done) {
        atomic_store(&d->fatal, true);
        return;
    }
    memcpy(j->alloc, g, n * sizeof(*g));
    j->n_alloc = n;
    j->master_port = master_port_take(d);
    j->failed_rank = -1;
    snd_job_set_state(d, j, SND_JOB_RUNNING);
    j->start_s = j->updated_s = (int64_t)now;
    snd_job_set_detail(j, NULL);
    snd_ckpt_on_start(d, j);
    struct sn_job_info info;
    sn_sched_job_info(d->sched, sid, &info);
    char first[64], msg[160];
    sn_model_gpu_name(d->model, g[0], first, sizeof(first));
    snprintf(msg, sizeof(msg), "placed on %u GPUs in %u supernode(s), rank 0 on %s", n,
             info.n_supernodes, first);
    job_rows(d, j, "started", msg);
    j->alloc_seq = d->outbox_seq;
}

static void on_requeue(struct snd *d, const struct sn_decision *dec, double now)
{
    struct snd_job *j = sched_job(d, dec->job);
    if (!j || j->state != SND_JOB_RUNNING)
        return;
    char msg[160];
    if (dec->kind == SN_DECISION_PREEMPT)
        snprintf(msg, sizeof(msg), "preempted by job %lld",
                 (long long)(dec->cause < d->sched_jobs_cap ? d->sched_jobs[dec->cause] : 0));
    else
        snprintf(msg, sizeof(msg), "interrupted: a GPU or server it used went down");
    snd_job_set_state(d, j, SND_JOB_REQUEUED);
    j->requeues++;
    j->updated_s = (int64_t)now;
    snd_job_set_detail(j, msg);
    release_alloc(d, j, true); /* work since the run's last checkpoint is lost */
    job_rows(d, j, dec->kind == SN_DECISION_PREEMPT ? "preempted" : "interrupted", msg);
}

/* A failure hit the job and the core swapped its failed GPUs for spares
 * of the same supernode: it keeps running on the new set as a new run (its
 * agents restart every rank from the checkpoint). */
static void on_replace(struct snd *d, uint32_t sid, double now)
{
    struct snd_job *j = sched_job(d, sid);
    uint32_t n = 0;
    const uint32_t *g = sn_sched_job_gpus(d->sched, sid, &n);
    if (!j || !g || j->state != SND_JOB_RUNNING || n != j->n_alloc)
        return;
    snd_goodput_count_run(d, j, n, now, true);
    uint32_t swapped = 0;
    for (uint32_t i = 0; i < n; i++)
        swapped += j->alloc[i] != g[i];
    uint32_t *old = j->alloc;
    j->alloc = malloc(n * sizeof(*g));
    if (!j->alloc) {
        j->alloc = old;
        atomic_store(&d->fatal, true);
        return;
    }
    memcpy(j->alloc, g, n * sizeof(*g));
    memset(j->ranks_done, 0, (n + 63) / 64 * sizeof(uint64_t));
    j->n_ranks_done = 0;
    j->requeues++;
    j->start_s = j->updated_s = (int64_t)now;
    char msg[160];
    snprintf(msg, sizeof(msg), "replaced in place: %u failed GPU(s) swapped for spares, run %u",
             swapped, j->requeues);
    snd_job_set_detail(j, msg);
    job_rows(d, j, "replaced", msg);
    j->alloc_seq = d->outbox_seq;
    settle_drains(d, old, n);
    free(old);
}

static void apply_decisions(struct snd *d, double now)
{
    size_t n = 0;
    const struct sn_decision *dec = sn_sched_decisions(d->sched, &n);
    for (size_t i = 0; i < n; i++) {
        if (dec[i].kind == SN_DECISION_START)
            on_start(d, dec[i].job, now);
        else if (dec[i].kind == SN_DECISION_REPLACE)
            on_replace(d, dec[i].job, now);
        else
            on_requeue(d, &dec[i], now);
    }
    sn_sched_clear_decisions(d->sched);
}

/* ---- events from the daemon ------------------------------------------------------ */

void snd_sched_poke(struct snd *d)
{
    d->sched_dirty = true;
}

void snd_sched_submit(struct snd *d, struct snd_job *job)
{
    struct sn_job_spec js;
    struct sn_error err = {0};
    uint32_t sid = SN_NONE;
    enum sn_err rc = job_spec(d, job, &js) ? sn_sched_submit(d->sched, &js, &sid, &err)
                                           : sn_error_set(&err, SN_ERR_INVALID,
                                                          "tenant '%s' is beyond the "
                                                          "scheduler's %u tenants",
                                                          job->tenant, snd_sched_max_tenants(d));
    if (rc == SN_OK && !map_job(d, sid, job->id))
        rc = sn_error_set(&err, SN_ERR_NOMEM, "out of memory");
    if (rc != SN_OK) {
        if (sid != SN_NONE) {
            enum sn_err c = sn_sched_cancel(d->sched, sid, NULL);
            (void)c;
        }
        snd_job_set_state(d, job, SND_JOB_FAILED);
        job->updated_s = job->end_s = snd_now_s();
        char msg[600];
        snprintf(msg, sizeof(msg), "refused by the scheduler: %.500s", err.message);
        snd_job_set_detail(job, msg);
        job_rows(d, job, "failed", msg);
        d->deps_dirty = true;
        return;
    }
    job->sched_id = sid;
    snd_sched_poke(d);
}

void snd_sched_drop(struct snd *d, struct snd_job *job)
{
    if (job->sched_id != SN_NONE) {
        struct sn_job_info info;
        sn_sched_job_info(d->sched, job->sched_id, &info);
        enum sn_err rc = SN_OK;
        if (info.state == SN_JOB_RUNNING)
            rc = sn_sched_finish(d->sched, job->sched_id, wall_s(), NULL);
        else if (info.state == SN_JOB_PENDING)
            rc = sn_sched_cancel(d->sched, job->sched_id, NULL);
        (void)rc;
        job->sched_id = SN_NONE;
    }
    if (job->n_alloc)
        release_alloc(d, job, false);
    d->deps_dirty = true;
    snd_sched_poke(d);
}

int snd_job_deps(const struct snd *d, const struct snd_job *job, int64_t *bad)
{
    const char *text = json_string_value(json_object_get(job->spec, "after_ok"));
    uint32_t *ids = NULL, n = 0;
    if (!text || snd_ranges_parse(text, &ids, &n, SND_DEPS_MAX) != 0)
        return 0; /* checked at submit */
    int rc = 0;
    for (uint32_t i = 0; i < n && rc >= 0; i++) {
        const struct snd_job *dep = snd_job_get(d, ids[i]);
        if (dep && dep->state == SND_JOB_COMPLETED)
            continue;
        if (!dep || dep->state == SND_JOB_FAILED || dep->state == SND_JOB_CANCELLED) {
            *bad = ids[i];
            rc = -1;
        } else {
            rc = 1;
        }
    }
    free(ids);
    return rc;
}

/* Pending jobs held for their dependencies: handed to the core once they
 * all completed, cancelled (with the reason) once one did not. */
static void settle_deps(struct snd *d)
{
    d->deps_dirty = false;
    for (int64_t id = 1; id < d->next_job_id; id++) {
        struct snd_job *j = snd_job_get(d, id);
        if (!j || !j->durable || j->state != SND_JOB_PENDING || j->sched_id != SN_NONE ||
            !json_object_get(j->spec, "after_ok"))
            continue;
        int64_t bad = 0;
        int rc = snd_job_deps(d, j, &bad);
        if (rc == 0) {
            if (!snd_array_throttled(j)) /* else snd_array_settle, below */
                snd_sched_submit(d, j);
        } else if (rc < 0) {
            const struct snd_job *dep = snd_job_get(d, bad);
            char msg[160];
            snprintf(msg, sizeof(msg), "dependency job %lld %s", (long long)bad,
                     dep ? snd_job_state_name(dep->state) : "does not exist");
            snd_job_set_state(d, j, SND_JOB_CANCELLED);
            j->updated_s = j->end_s = snd_now_s();
            snd_job_set_detail(j, msg);
            job_rows(d, j, "cancelled", msg);
            d->deps_dirty = true; /* its own dependents follow */
        }
    }
    snd_array_settle(d);
}

const char *snd_sched_reason(const struct snd *d, const struct snd_job *job)
{
    if (job->sched_id == SN_NONE && snd_array_waiting(d, job))
        return "array-throttle";
    if (job->sched_id == SN_NONE && job->state == SND_JOB_PENDING &&
        json_object_get(job->spec, "after_ok"))
        return "dependency";
    if (job->sched_id == SN_NONE || !d->sched)
        return "none";
    struct sn_job_info info;
    sn_sched_job_info(d->sched, job->sched_id, &info);
    return info.state == SN_JOB_PENDING ? sn_pending_reason_name(info.reason) : "none";
}

void snd_sched_admin_changed(struct snd *d, bool is_node, uint32_t id, uint8_t old_state)
{
    const struct sn_model *m = d->model;
    uint8_t now_state = is_node ? d->nodes[id].state : d->gpus[id].state;
    enum sn_domain_kind kind = is_node ? SN_DOMAIN_SERVER : SN_DOMAIN_GPU;
    enum sn_err rc = SN_OK;
    if (old_state == SND_ADMIN_DOWN && now_state != SND_ADMIN_DOWN)
        rc = sn_sched_repair(d->sched, kind, id, NULL);
    uint32_t first = is_node ? m->server_first_gpu[id] : id;
    uint32_t count = is_node ? sn_model_server_spec(m, id)->gpus : 1;
    for (uint32_t g = first; g < first + count; g++)
        sn_sched_cordon(d->sched, g,
                        held_back(d, g) || (d->silent && d->silent[m->gpu_server[g]]));
    if (now_state == SND_ADMIN_DOWN && old_state != SND_ADMIN_DOWN) {
        double now = wall_s();
        rc = sn_sched_fail(d->sched, kind, id, now, NULL);
        apply_decisions(d, now);
    }
    (void)rc;
    snd_sched_poke(d);
}

void snd_sched_heartbeat(struct snd *d, uint32_t server)
{
    d->last_seen_ms[server] = snd_now_ms();
    snd_partition_beat(d, server);
    struct snd_admin *a = &d->nodes[server];
    /* A node marked down for a lost heartbeat comes back with the next one;
     * one marked down by an admin stays down until resumed. */
    if (a->state == SND_ADMIN_DOWN && a->actor && strcmp(a->actor, "snd:heartbeat") == 0) {
        snd_admin_set(a, SND_ADMIN_UP, NULL, "snd:heartbeat", snd_now_s());
        admin_row(d, true, server);
        snd_sched_admin_changed(d, true, server, SND_ADMIN_DOWN);
    }
}

void snd_sched_node_lost(struct snd *d, uint32_t s, const char *reason, const char *actor)
{
    uint8_t old = d->nodes[s].state;
    if (old == SND_ADMIN_DOWN)
        return;
    if (d->silent && d->silent[s]) {
        d->silent[s] = 0;
        d->n_silent--;
    }
    snd_admin_set(&d->nodes[s], SND_ADMIN_DOWN, reason, actor, snd_now_s());
    admin_row(d, true, s);
    char name[64];
    fprintf(stderr, "snd: node %s marked down: %s\n",
            sn_model_server_name(d->model, s, name, sizeof(name)), reason);
    snd_sched_admin_changed(d, true, s, old);
}

/* Heartbeat loss, with partition safety: partition.c decides which silent
 * servers are declared down. */
static void check_heartbeats(struct snd *d, int64_t now_ms)
{
    snd_partition_check(d, now_ms);
}

/* Upper bounds (s) of the cycle-time histogram; the last bucket is +Inf. */
const double snd_cycle_bounds_s[SND_CYCLE_BUCKETS - 1] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5};

static void run_pass(struct snd *d)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double now = wall_s();
    struct sn_error err = {0};
    if (sn_sched_pass(d->sched, now, &err) != SN_OK)
        fprintf(stderr, "snd: scheduling pass failed: %s\n", err.message);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    int b = 0;
    while (b < SND_CYCLE_BUCKETS - 1 && dt > snd_cycle_bounds_s[b])
        b++;
    d->cycle_buckets[b]++;
    d->cycle_sum_s += dt;
    d->passes++;
    apply_decisions(d, now);
    snd_timeline_reasons(d, (int64_t)now);
    /* The pacing of passes (snd_sched_tick) counts all of this thread's
     * work for the pass, not only the core's: with many waiting jobs the
     * look at their reasons costs about as much as the pass. */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    d->last_cycle_ms = (int64_t)(dt * 1000);
}

int64_t snd_sched_tick(struct snd *d)
{
    int64_t now = snd_now_ms();
    if (now >= d->next_timer_ms) {
        check_heartbeats(d, now);
        d->sched_dirty = true;
        d->next_timer_ms = now + d->cfg.sched_interval_ms;
    }
    if (d->deps_dirty)
        settle_deps(d);
    int64_t wait = d->next_timer_ms - now;
    if (d->sched_dirty) {
        /* Passes after events take at most about a tenth of this thread:
         * the gap is at least ten times the last pass's duration. */
        int64_t gap = d->cfg.sched_event_delay_ms;
        if (gap < 10 * d->last_cycle_ms)
            gap = 10 * d->last_cycle_ms;
        int64_t due = d->last_pass_ms + gap;
        /* While the disk is full no placement is made (its rows could not
         * be written); the pass runs once space returns. */
        if (d->disk_full) {
            due = now + 100;
            if (due - now < wait)
                wait = due - now;
        } else if (now >= due) {
            run_pass(d);
            d->sched_dirty = false;
            d->last_pass_ms = now;
        } else if (due - now < wait) {
            wait = due - now;
        }
    }
    if (!snd_outbox_flush(d) && wait > 5)
        wait = 5;
    return wait > 0 ? wait : 0;
}

/* ---- restore ------------------------------------------------------------------------ */

static bool live(const struct snd_job *j)
{
    return j->state == SND_JOB_PENDING || j->state == SND_JOB_REQUEUED ||
           j->state == SND_JOB_RUNNING;
}

/* Places a restored running job back on exactly its GPUs: they are the only
 * uncordoned ones while it is placed. */
static enum sn_err restore_running(struct snd *d, struct snd_job *j, struct sn_error *err)
{
    if (!j->n_alloc ||
        (json_int_t)j->n_alloc != json_integer_value(json_object_get(j->spec, "gpus")))
        return sn_error_set(err, SN_ERR_INTERNAL,
                            "job %lld is running with %u GPUs allocated, "
                            "it asked for %lld",
                            (long long)j->id, j->n_alloc,
                            (long long)json_integer_value(json_object_get(j->spec, "gpus")));
    for (uint32_t i = 0; i < j->n_alloc; i++)
        sn_sched_cordon(d->sched, j->alloc[i], false);
    bool placed = sn_sched_try_place(d->sched, j->sched_id, (double)j->start_s);
    /* A set from an in-place replacement may split groups: placed as is. */
    if (!placed && j->detail && strncmp(j->detail, "replaced in place", 17) == 0)
        placed = sn_sched_restore(d->sched, j->sched_id, j->alloc, j->n_alloc,
                                  (double)j->start_s, NULL) == SN_OK;
    for (uint32_t i = 0; i < j->n_alloc; i++)
        sn_sched_cordon(d->sched, j->alloc[i], true);
    if (!placed)
        return sn_error_set(err, SN_ERR_INTERNAL,
                            "job %lld cannot be placed back on its stored GPUs (a GPU allocated "
                            "twice, a quota or a supernode rule broken)",
                            (long long)j->id);
    sn_sched_clear_decisions(d->sched);
    return SN_OK;
}

static enum sn_err restore_jobs(struct snd *d, struct sn_error *err)
{
    for (int64_t id = 1; id < d->next_job_id; id++) {
        struct snd_job *j = snd_job_get(d, id);
        if (!j)
            continue;
        if ((!live(j) || j->state != SND_JOB_RUNNING) && j->n_alloc)
            return sn_error_set(err, SN_ERR_INTERNAL, "job %lld is %s but holds GPUs",
                                (long long)id, snd_job_state_name(j->state));
        if (!live(j))
            continue;
        int64_t bad;
        if (j->state == SND_JOB_PENDING && json_object_get(j->spec, "after_ok") &&
            snd_job_deps(d, j, &bad) != 0) {
            d->deps_dirty = true; /* held: settle_deps hands it over or cancels it */
            continue;
        }
        if (j->state == SND_JOB_PENDING && snd_array_throttled(j)) {
            d->deps_dirty = true; /* snd_array_settle lets in up to its array's throttle */
            continue;
        }
        struct sn_job_spec js;
        uint32_t sid;
        if (!job_spec(d, j, &js) || sn_sched_submit(d->sched, &js, &sid, err) != SN_OK ||
            !map_job(d, sid, id))
            return sn_error_set(err, SN_ERR_INTERNAL, "job %lld cannot be restored", (long long)id);
        j->sched_id = sid;
        if (j->state == SND_JOB_RUNNING) {
            enum sn_err rc = restore_running(d, j, err);
            if (rc != SN_OK)
                return rc;
            master_port_mark(d, j->master_port, true);
            snd_ckpt_on_start(d, j);
            /* Their agents are expected back within the heartbeat timeout. */
            for (uint32_t i = 0; i < j->n_alloc; i++)
                if (!d->last_seen_ms[d->model->gpu_server[j->alloc[i]]])
                    d->last_seen_ms[d->model->gpu_server[j->alloc[i]]] = snd_now_ms();
        }
    }
    return SN_OK;
}

/* (Re)builds the core from the state in memory. */
static enum sn_err build(struct snd *d, struct sn_error *err)
{
    sn_sched_destroy(d->sched);
    d->sched = NULL;
    enum sn_err rc = make_core(d, err);
    if (rc != SN_OK)
        return rc;
    for (int64_t id = 1; id < d->next_job_id; id++)
        if (snd_job_get(d, id))
            snd_job_get(d, id)->sched_id = SN_NONE;
    const struct sn_model *m = d->model;
    for (uint32_t g = 0; g < m->n_gpus; g++)
        sn_sched_cordon(d->sched, g, true);
    rc = restore_jobs(d, err);
    for (uint32_t g = 0; g < m->n_gpus; g++)
        sn_sched_cordon(d->sched, g,
                        d->gpu_procs[g] != 0 ||
                            (d->round_hold && d->round_hold[m->gpu_server[g]]));
    if (rc != SN_OK)
        return rc;
    for (uint32_t s = 0; s < m->n_servers; s++)
        if (d->nodes[s].state != SND_ADMIN_UP)
            snd_sched_admin_changed(d, true, s, SND_ADMIN_UP);
    for (uint32_t g = 0; g < m->n_gpus; g++)
        if (d->gpus[g].state != SND_ADMIN_UP)
            snd_sched_admin_changed(d, false, g, SND_ADMIN_UP);
    rc = sn_sched_check_invariants(d->sched, err);
    snd_sched_poke(d);
    return rc;
}

enum sn_err snd_sched_start(struct snd *d, struct sn_error *err)
{
    d->outbox = calloc(1, sizeof(*d->outbox));
    d->last_seen_ms = calloc(d->model->n_servers ? d->model->n_servers : 1, sizeof(int64_t));
    d->gpu_procs = calloc(d->model->n_gpus ? d->model->n_gpus : 1, 1);
    d->agent_reports_procs = calloc(d->model->n_servers ? d->model->n_servers : 1, sizeof(bool));
    d->master_ports = calloc(SND_MASTER_PORTS / 64, sizeof(uint64_t));
    d->silent = calloc(d->model->n_servers ? d->model->n_servers : 1, 1);
    if (!d->outbox || !d->last_seen_ms || !d->gpu_procs || !d->agent_reports_procs ||
        !d->master_ports || !d->silent)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    d->next_timer_ms = snd_now_ms() + d->cfg.sched_interval_ms;
    return build(d, err);
}

enum sn_err snd_sched_rebuild(struct snd *d, struct sn_error *err)
{
    return build(d, err);
}

void snd_sched_stop(struct snd *d)
{
    sn_sched_destroy(d->sched);
    d->sched = NULL;
    free(d->sched_jobs);
    d->sched_jobs = NULL;
    if (d->outbox) {
        while (d->outbox->count > 0) {
            free(d->outbox->q[d->outbox->head]);
            d->outbox->head = (d->outbox->head + 1) % d->outbox->cap;
            d->outbox->count--;
        }
        free(d->outbox->q);
    }
    free(d->outbox);
    d->outbox = NULL;
    free(d->last_seen_ms);
    d->last_seen_ms = NULL;
    free(d->gpu_procs);
    d->gpu_procs = NULL;
    free(d->agent_reports_procs);
    d->agent_reports_procs = NULL;
    free(d->master_ports);
    d->master_ports = NULL;
    free(d->silent);
    d->silent = NULL;
    free(d->round_hold);
    d->round_hold = NULL;
}
