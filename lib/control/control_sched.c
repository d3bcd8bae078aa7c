/*
 * snd's wiring of the scheduler core: configuration from the spec and the
 * tenants, the restore at start, passes on events and on a timer, the
 * translation of the core's decisions into job states, allocations, events
 * and store rows, admin states onto the core, heartbeat loss, and the
 * effects (store rows) of every change. See control_int.h for the rules.
 */
#include "control_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUTBOX_MAX (1u << 22) /* entries waiting at most; beyond is fail-stop */
#define MAX_ALLOC_GPUS (1u << 22)

/* ---- ranges --------------------------------------------------------------- */

char *sn_control_ranges_format(const uint32_t *v, uint32_t n)
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

int sn_control_ranges_parse(const char *text, uint32_t **out, uint32_t *n, uint32_t max)
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

/* ---- mapping to the core ------------------------------------------------------ */

/* Whether the core uses the spec's pools (every supernode names one). */
static bool spec_pools_usable(const struct sn_control *d)
{
    if (d->spec->n_pools == 0 || d->spec->n_pools > SN_SCHED_MAX_POOLS)
        return false;
    for (uint32_t i = 0; i < d->model->n_supernodes; i++)
        if (d->model->supernodes[i].pool >= d->spec->n_pools)
            return false;
    return true;
}

uint32_t sn_control_max_tenants(const struct sn_control *d)
{
    return SN_SCHED_MAX_TENANTS / (d->sched_pools ? d->sched_pools : 1);
}

/* Index of a spec pool by name, or SN_NONE. */
uint32_t sn_control_spec_pool(const struct sn_control *d, const char *name)
{
    for (uint32_t i = 0; name && i < d->spec->n_pools; i++)
        if (strcmp(d->spec->pools[i].name, name) == 0)
            return i;
    return SN_NONE;
}

static uint32_t tenant_index(const struct sn_control *d, const char *name)
{
    for (uint32_t i = 0; i < d->n_tenants; i++)
        if (strcmp(d->tenants[i].name, name) == 0)
            return i;
    return SN_NONE;
}

static uint32_t job_pool(const struct sn_control *d, const struct sn_control_job *j)
{
    if (!d->sched_spec_pools)
        return 0;
    uint32_t p = sn_control_spec_pool(d, json_string_value(json_object_get(j->spec, "pool")));
    return p == SN_NONE ? 0 : p;
}

static bool job_spec(const struct sn_control *d, const struct sn_control_job *j,
                     struct sn_job_spec *js)
{
    uint32_t t = tenant_index(d, j->tenant);
    if (t == SN_NONE || t >= sn_control_max_tenants(d))
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
    struct sn_control_named *c = cls ? sn_control_named_find(d->classes, d->n_classes, cls) : NULL;
    if (c) {
        js->priority = (int32_t)json_integer_value(json_object_get(c->doc, "priority"));
        js->preemptible = json_is_true(json_object_get(c->doc, "preemptible"));
    }
    sn_control_shape_apply(d, j->spec, js);
    return true;
}

/* pool_borrow ("borrower:lender,...") into the pools' borrow masks. */
static enum sn_err borrow_masks(const struct sn_control *d, struct sn_sched_pool *pools, uint32_t n,
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
            return sn_error_set(err, SN_ERR_INVALID, "pool_borrow: '%s': expected borrower:lender",
                                pair);
        *colon = '\0';
        uint32_t b = sn_control_spec_pool(d, pair), l = sn_control_spec_pool(d, colon + 1);
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

static enum sn_err make_core(struct sn_control *d, struct sn_error *err)
{
    struct sn_sched_config c;
    sn_sched_config_defaults(&c);
    c.policy = sn_sched_policy_from_name(d->cfg.sched_policy);
    if (c.policy == SN_SCHED_POLICY_COUNT)
        return sn_error_set(err, SN_ERR_INVALID,
                            "sched_policy '%s': expected supernode-first, "
                            "first-fit or tree-best-fit",
                            d->cfg.sched_policy);
    if (d->cfg.power_cap_policy[0] && strcmp(d->cfg.power_cap_policy, "off") != 0 &&
        strcmp(d->cfg.power_cap_policy, "fit") != 0)
        return sn_error_set(err, SN_ERR_INVALID, "power_cap_policy '%s': expected off or fit",
                            d->cfg.power_cap_policy);
    c.min_runtime_s = (double)d->cfg.preempt_min_runtime_s;
    c.spare_gpus_per_supernode = (uint32_t)d->cfg.spare_gpus_per_supernode;
    c.replace_in_place = d->cfg.replace_in_place;
    c.cpu_oversell = (double)d->cfg.cpu_oversell_pct / 100.0;
    c.memory_oversell = (double)d->cfg.memory_oversell_pct / 100.0;
    c.power_util = (double)d->cfg.power_util_pct / 100.0;
    c.preempt_signal = d->cfg.preempt_grace_s > 0; /* cooperative preemption (preempt.c) */
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
        uint32_t p = sn_control_spec_pool(d, d->quotas[q].pool);
        if (t == SN_NONE || p == SN_NONE || !d->sched_spec_pools || t >= sn_control_max_tenants(d))
            continue;
        /* A quota of 0 means no GPUs: admission refuses every job then
         * (the core's 0 would mean unlimited, so it is left out). */
        if (d->quotas[q].gpus > 0)
            tenants[t * d->sched_pools + p].quota_gpus = (uint32_t)d->quotas[q].gpus;
    }
    sn_control_quota_apply(d, tenants, SN_SCHED_MAX_TENANTS);
    c.max_tenants_per_supernode = (uint32_t)d->cfg.max_tenants_per_supernode;
    c.n_tenants = SN_SCHED_MAX_TENANTS;
    c.tenants = tenants;
    enum sn_err rc = sn_sched_create(d->model, &c, &d->sched, err);
    free(tenants);
    return rc;
}

static bool map_job(struct sn_control *d, uint32_t sid, int64_t job_id)
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

static struct sn_control_job *sched_job(const struct sn_control *d, uint32_t sid)
{
    return sid < d->sched_jobs_cap ? sn_control_job_get(d, d->sched_jobs[sid]) : NULL;
}

/* ---- job rows ----------------------------------------------------------------- */

/* Writes the job's row, its allocation row (or its removal) and an event
 * as one batch of effects. */
static void job_rows(struct sn_control *d, struct sn_control_job *j, const char *event,
                     const char *message)
{
    char *doc = json_dumps(j->spec, JSON_COMPACT | JSON_SORT_KEYS);
    char *run = sn_control_job_run_text(j);
    char *gpus = j->n_alloc ? sn_control_ranges_format(j->alloc, j->n_alloc) : NULL;
    struct sn_store_write w[3] = {
        {.kind = SN_STORE_PUT_JOB,
         .text = {j->tenant, j->idem_key, sn_control_job_state_name(j->state), doc, run},
         .num = {j->id, j->submit_s, j->updated_s}},
        {.kind = gpus ? SN_STORE_PUT_ALLOC : SN_STORE_DEL_ALLOC,
         .text = {gpus, ""},
         .num = {j->id, j->start_s}},
        {.kind = SN_STORE_ADD_EVENT, .text = {event, message}, .num = {j->id, j->updated_s}},
    };
    if (doc && run && (gpus || !j->n_alloc))
        sn_control_emit(d, w, 3);
    else
        d->fx.fatal = true;
    free(doc);
    free(run);
    free(gpus);
}

static bool cordoning(uint8_t state)
{
    return state == SN_CONTROL_ADMIN_CORDONED || state == SN_CONTROL_ADMIN_DRAINING ||
           state == SN_CONTROL_ADMIN_DRAINED;
}

static void admin_row(struct sn_control *d, bool is_node, uint32_t id)
{
    char name[64];
    struct sn_control_admin *a = is_node ? &d->nodes[id] : &d->gpus[id];
    if (is_node)
        sn_model_server_name(d->model, id, name, sizeof(name));
    else
        sn_model_gpu_name(d->model, id, name, sizeof(name));
    struct sn_store_write w = {
        .kind = SN_STORE_PUT_ADMIN,
        .text = {is_node ? "node" : "gpu", name,
                 sn_control_admin_state_name((enum sn_control_admin_state)a->state),
                 a->reason ? a->reason : "", a->actor ? a->actor : ""},
        .num = {a->time_s}};
    sn_control_emit(d, &w, 1);
}

bool sn_control_busy(const struct sn_control *d, uint32_t first, uint32_t count)
{
    for (uint32_t g = first; g < first + count; g++)
        if (sn_sched_gpu_owner(d->sched, g) != SN_NONE)
            return true;
    return false;
}

/* Draining servers and GPUs among gpus whose last job left become drained. */
static void settle_drains(struct sn_control *d, const uint32_t *gpus, uint32_t n)
{
    const struct sn_model *m = d->model;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t g = gpus[i], s = m->gpu_server[g];
        if (d->gpus[g].state == SN_CONTROL_ADMIN_DRAINING && !sn_control_busy(d, g, 1)) {
            d->gpus[g].state = SN_CONTROL_ADMIN_DRAINED;
            d->gpus[g].time_s = sn_control_now_s(d);
            admin_row(d, false, g);
        }
        if (d->nodes[s].state == SN_CONTROL_ADMIN_DRAINING &&
            !sn_control_busy(d, m->server_first_gpu[s], sn_model_server_spec(m, s)->gpus)) {
            d->nodes[s].state = SN_CONTROL_ADMIN_DRAINED;
            d->nodes[s].time_s = sn_control_now_s(d);
            admin_row(d, true, s);
        }
    }
}

/* GPUs out of placement: cordoned, draining or drained (their own admin
 * state or their server's), or waiting for their last job's processes. */
static bool held_back(const struct sn_control *d, uint32_t g)
{
    return cordoning(d->nodes[d->model->gpu_server[g]].state) || cordoning(d->gpus[g].state) ||
           (d->gpu_procs && d->gpu_procs[g]) ||
           (d->round_hold && d->round_hold[d->model->gpu_server[g]]) ||
           sn__control_expedite_held(d, g);
}

void sn__control_gpu_recheck(struct sn_control *d, uint32_t g)
{
    uint32_t s = d->model->gpu_server[g];
    sn_sched_cordon(d->sched, g, held_back(d, g) || (d->silent && d->silent[s]));
}

void sn_control_hold(struct sn_control *d, uint32_t s, bool on)
{
    const struct sn_model *m = d->model;
    if (!d->round_hold && !(d->round_hold = calloc(m->n_servers ? m->n_servers : 1, 1)))
        return;
    d->round_hold[s] = on;
    uint32_t first = m->server_first_gpu[s], count = sn_model_server_spec(m, s)->gpus;
    for (uint32_t g = first; g < first + count; g++)
        sn_sched_cordon(d->sched, g, held_back(d, g) || (d->silent && d->silent[s]));
    sn_control_poke(d);
}

bool sn_control_gpu_draining(const struct sn_control *d, uint32_t g)
{
    return d->gpu_procs && g < d->model->n_gpus && d->gpu_procs[g];
}

void sn_control_procs_report(struct sn_control *d, uint32_t s, const char *busy)
{
    const struct sn_model *m = d->model;
    uint32_t first = m->server_first_gpu[s], count = sn_model_server_spec(m, s)->gpus;
    uint32_t *idx = NULL, n = 0;
    if (sn_control_ranges_parse(busy, &idx, &n, count) != 0)
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
        sn_control_poke(d);
    }
    free(idx);
}

/* MASTER_PORT: the lowest port of the range no running job uses. */
static int32_t master_port_take(struct sn_control *d)
{
    for (uint32_t i = 0; i < SN_CONTROL_MASTER_PORTS; i++)
        if (!(d->master_ports[i / 64] >> (i % 64) & 1)) {
            d->master_ports[i / 64] |= 1ull << (i % 64);
            return (int32_t)(SN_CONTROL_MASTER_PORT_BASE + i);
        }
    return 0;
}

static void master_port_mark(struct sn_control *d, int32_t port, bool used)
{
    if (port < SN_CONTROL_MASTER_PORT_BASE ||
        port >= SN_CONTROL_MASTER_PORT_BASE + SN_CONTROL_MASTER_PORTS)
        return;
    uint32_t i = (uint32_t)(port - SN_CONTROL_MASTER_PORT_BASE);
    if (used)
        d->master_ports[i / 64] |= 1ull << (i % 64);
    else
        d->master_ports[i / 64] &= ~(1ull << (i % 64));
}

/* Frees j's GPUs; its run ends now (interrupted: by a failure or a
 * preemption, the work after its last checkpoint lost). */
static void release_alloc(struct sn_control *d, struct sn_control_job *j, bool interrupted)
{
    uint32_t *gpus = j->alloc, n = j->n_alloc;
    sn__control_preempt_end(d, j);
    /* Its processes may still run (cancel, requeue, a failed rank): the
     * GPUs wait for the agent to report them gone. */
    for (uint32_t i = 0; i < n; i++)
        if (d->agent_reports_procs[d->model->gpu_server[gpus[i]]]) {
            d->gpu_procs[gpus[i]] = 1;
            sn_sched_cordon(d->sched, gpus[i], true);
        }
    master_port_mark(d, j->master_port, false);
    j->master_port = 0;
    sn__control_imex_end(d, j);
    sn__control_preflight_end(d, j);
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
    sn_control_goodput_count_run(d, j, n, (double)sn_control_now_s(d), interrupted);
    j->alloc = NULL;
    j->n_alloc = 0;
    free(j->ranks_done);
    j->ranks_done = NULL;
    j->n_ranks_done = 0;
    settle_drains(d, gpus, n);
    free(gpus);
}

/* ---- decisions ---------------------------------------------------------------- */

static void on_start(struct sn_control *d, uint32_t sid, double now)
{
    struct sn_control_job *j = sched_job(d, sid);
    uint32_t n = 0;
    const uint32_t *g = sn_sched_job_gpus(d->sched, sid, &n);
    if (!j || !g)
        return;
    if (j->state != SN_CONTROL_JOB_PENDING && j->state != SN_CONTROL_JOB_REQUEUED) {
        enum sn_err rc = sn_sched_finish(d->sched, sid, now, NULL);
        (void)rc;
        return;
    }
    j->alloc = malloc(n * sizeof(*g));
    j->ranks_done = calloc((n + 63) / 64, sizeof(uint64_t));
    if (!j->alloc || !j->ranks_done) {
        d->fx.fatal = true;
        return;
    }
    memcpy(j->alloc, g, n * sizeof(*g));
    j->n_alloc = n;
    j->master_port = master_port_take(d);
    j->failed_rank = -1;
    sn_control_job_set_state(d, j, SN_CONTROL_JOB_RUNNING);
    j->start_s = j->updated_s = (int64_t)now;
    sn__control_imex_start(d, j);
    sn__control_preflight_start(d, j);
    sn_control_job_set_detail(j, NULL);
    sn_control_ckpt_on_start(d, j);
    struct sn_job_info info;
    sn_sched_job_info(d->sched, sid, &info);
    char first[64], msg[160];
    sn_model_gpu_name(d->model, g[0], first, sizeof(first));
    snprintf(msg, sizeof(msg), "placed on %u GPUs in %u supernode(s), rank 0 on %s", n,
             info.n_supernodes, first);
    job_rows(d, j, "started", msg);
    j->alloc_seq = d->batch_seq;
}

static void on_requeue(struct sn_control *d, const struct sn_decision *dec, double now)
{
    struct sn_control_job *j = sched_job(d, dec->job);
    if (!j || j->state != SN_CONTROL_JOB_RUNNING)
        return;
    char msg[300];
    if (dec->kind == SN_DECISION_PREEMPT && d->interrupt_why)
        snprintf(msg, sizeof(msg), "%.290s", d->interrupt_why); /* a cooperative eviction */
    else if (dec->kind == SN_DECISION_PREEMPT)
        snprintf(msg, sizeof(msg), "preempted by job %lld",
                 (long long)(dec->cause < d->sched_jobs_cap ? d->sched_jobs[dec->cause] : 0));
    else if (d->interrupt_why && d->interrupt_event)
        snprintf(msg, sizeof(msg), "%.150s", d->interrupt_why);
    else if (d->interrupt_why)
        snprintf(msg, sizeof(msg), "interrupted: %.140s", d->interrupt_why);
    else
        snprintf(msg, sizeof(msg), "interrupted: a GPU or server it used went down");
    sn_control_job_set_state(d, j, SN_CONTROL_JOB_REQUEUED);
    j->requeues++;
    j->updated_s = (int64_t)now;
    sn_control_job_set_detail(j, msg);
    sn__control_evict_record(d, j, dec->kind == SN_DECISION_PREEMPT,
                             d->interrupt_event && strcmp(d->interrupt_event, "requeued") == 0);
    if (dec->kind == SN_DECISION_INTERRUPT && (!d->interrupt_event || d->evict_expedite))
        sn__control_expedite(d, j); /* an infrastructure failure: its healthy GPUs held */
    release_alloc(d, j, true); /* work since the run's last checkpoint is lost */
    job_rows(d, j,
             dec->kind == SN_DECISION_PREEMPT ? "preempted"
             : d->interrupt_event             ? d->interrupt_event
                                              : "interrupted",
             msg);
}

/* A failure hit the job and the core swapped its failed GPUs for spares
 * of the same supernode: it keeps running on the new set as a new run (its
 * agents restart every rank from the checkpoint). */
static void on_replace(struct sn_control *d, uint32_t sid, double now)
{
    struct sn_control_job *j = sched_job(d, sid);
    uint32_t n = 0;
    const uint32_t *g = sn_sched_job_gpus(d->sched, sid, &n);
    if (!j || !g || j->state != SN_CONTROL_JOB_RUNNING || n != j->n_alloc)
        return;
    sn_control_goodput_count_run(d, j, n, now, true);
    uint32_t swapped = 0;
    for (uint32_t i = 0; i < n; i++)
        swapped += j->alloc[i] != g[i];
    uint32_t *old = j->alloc;
    j->alloc = malloc(n * sizeof(*g));
    if (!j->alloc) {
        j->alloc = old;
        d->fx.fatal = true;
        return;
    }
    memcpy(j->alloc, g, n * sizeof(*g));
    memset(j->ranks_done, 0, (n + 63) / 64 * sizeof(uint64_t));
    j->n_ranks_done = 0;
    j->requeues++;
    j->start_s = j->updated_s = (int64_t)now;
    sn__control_imex_replace(d, j, old, n);
    sn__control_preflight_replace(d, j);
    char msg[160];
    snprintf(msg, sizeof(msg), "replaced in place: %u failed GPU(s) swapped for spares, run %u",
             swapped, j->requeues);
    sn_control_job_set_detail(j, msg);
    job_rows(d, j, "replaced", msg);
    j->alloc_seq = d->batch_seq;
    settle_drains(d, old, n);
    free(old);
}

/* The job id of a decision's cause (the preemptor), 0 when none. */
static int64_t cause_id(const struct sn_control *d, const struct sn_decision *dec)
{
    return dec->cause < d->sched_jobs_cap ? d->sched_jobs[dec->cause] : 0;
}

static void apply_decisions(struct sn_control *d, double now)
{
    size_t n = 0;
    const struct sn_decision *dec = sn_sched_decisions(d->sched, &n);
    for (size_t i = 0; i < n; i++) {
        if (dec[i].kind == SN_DECISION_START)
            on_start(d, dec[i].job, now);
        else if (dec[i].kind == SN_DECISION_REPLACE)
            on_replace(d, dec[i].job, now);
        else if (dec[i].kind == SN_DECISION_SIGNAL && sched_job(d, dec[i].job))
            sn__control_preempt_signal(d, sched_job(d, dec[i].job), cause_id(d, &dec[i]), NULL);
        else if (dec[i].kind == SN_DECISION_UNSIGNAL && sched_job(d, dec[i].job))
            sn__control_preempt_cancel(d, sched_job(d, dec[i].job), cause_id(d, &dec[i]));
        else
            on_requeue(d, &dec[i], now);
    }
    sn_sched_clear_decisions(d->sched);
}

void sn__control_apply_decisions(struct sn_control *d, double now)
{
    apply_decisions(d, now);
}

bool sn__control_evict(struct sn_control *d, struct sn_control_job *j, const char *why)
{
    if (j->sched_id == SN_NONE || j->state != SN_CONTROL_JOB_RUNNING)
        return false;
    double now = (double)d->clock.wall_ms / 1000.0;
    if (sn_sched_evict(d->sched, j->sched_id, now, NULL) != SN_OK)
        return false;
    d->interrupt_why = why;
    apply_decisions(d, now);
    d->interrupt_why = NULL;
    sn_control_poke(d);
    return j->state == SN_CONTROL_JOB_REQUEUED;
}

/* ---- events from the daemon ------------------------------------------------------ */

void sn_control_poke(struct sn_control *d)
{
    d->sched_dirty = true;
}

void sn_control_submit(struct sn_control *d, struct sn_control_job *job)
{
    struct sn_job_spec js;
    struct sn_error err = {0};
    uint32_t sid = SN_NONE;
    enum sn_err rc = job_spec(d, job, &js) ? sn_sched_submit(d->sched, &js, &sid, &err)
                                           : sn_error_set(&err, SN_ERR_INVALID,
                                                          "tenant '%s' is beyond the "
                                                          "scheduler's %u tenants",
                                                          job->tenant, sn_control_max_tenants(d));
    if (rc == SN_OK && !map_job(d, sid, job->id))
        rc = sn_error_set(&err, SN_ERR_NOMEM, "out of memory");
    if (rc != SN_OK) {
        if (sid != SN_NONE) {
            enum sn_err c = sn_sched_cancel(d->sched, sid, NULL);
            (void)c;
        }
        sn_control_job_set_state(d, job, SN_CONTROL_JOB_FAILED);
        job->updated_s = job->end_s = sn_control_now_s(d);
        char msg[600];
        snprintf(msg, sizeof(msg), "refused by the scheduler: %.500s", err.message);
        sn_control_job_set_detail(job, msg);
        job_rows(d, job, "failed", msg);
        d->deps_dirty = true;
        return;
    }
    job->sched_id = sid;
    sn_control_poke(d);
}

void sn_control_job_rows(struct sn_control *d, struct sn_control_job *j, const char *event,
                         const char *message)
{
    job_rows(d, j, event, message);
}

bool sn_control_requeue_lost(struct sn_control *d, struct sn_control_job *j, const char *why)
{
    if (j->sched_id == SN_NONE || j->state != SN_CONTROL_JOB_RUNNING)
        return false;
    double now = (double)d->clock.wall_ms / 1000.0;
    if (sn_sched_interrupt(d->sched, j->sched_id, now, NULL) != SN_OK)
        return false;
    d->interrupt_why = why;
    apply_decisions(d, now);
    d->interrupt_why = NULL;
    sn_control_poke(d);
    return j->state == SN_CONTROL_JOB_REQUEUED;
}

void sn_control_drop(struct sn_control *d, struct sn_control_job *job)
{
    sn__control_expedite_end(d, job);
    if (job->sched_id != SN_NONE) {
        struct sn_job_info info;
        sn_sched_job_info(d->sched, job->sched_id, &info);
        enum sn_err rc = SN_OK;
        if (info.state == SN_JOB_RUNNING)
            rc =
                sn_sched_finish(d->sched, job->sched_id, ((double)d->clock.wall_ms / 1000.0), NULL);
        else if (info.state == SN_JOB_PENDING)
            rc = sn_sched_cancel(d->sched, job->sched_id, NULL);
        (void)rc;
        job->sched_id = SN_NONE;
    }
    if (job->n_alloc)
        release_alloc(d, job, false);
    d->deps_dirty = true;
    sn_control_poke(d);
}

int sn_control_job_deps(const struct sn_control *d, const struct sn_control_job *job, int64_t *bad)
{
    const char *text = json_string_value(json_object_get(job->spec, "after_ok"));
    uint32_t *ids = NULL, n = 0;
    if (!text || sn_control_ranges_parse(text, &ids, &n, SN_CONTROL_DEPS_MAX) != 0)
        return 0; /* checked at submit */
    int rc = 0;
    for (uint32_t i = 0; i < n && rc >= 0; i++) {
        const struct sn_control_job *dep = sn_control_job_get(d, ids[i]);
        if (dep && dep->state == SN_CONTROL_JOB_COMPLETED)
            continue;
        if (!dep || sn_control_job_state_ended(dep->state)) {
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
void sn_control_settle(struct sn_control *d)
{
    d->deps_dirty = false;
    if (!d->settle_jobs)
        return; /* no job ever waited for a dependency or a throttle: nothing to scan */
    for (int64_t id = 1; id < d->next_job_id; id++) {
        struct sn_control_job *j = sn_control_job_get(d, id);
        if (!j || !j->durable || j->state != SN_CONTROL_JOB_PENDING || j->sched_id != SN_NONE ||
            j->held || !json_object_get(j->spec, "after_ok"))
            continue;
        int64_t bad = 0;
        int rc = sn_control_job_deps(d, j, &bad);
        if (rc == 0) {
            if (!sn_control_array_throttled(j)) /* else sn_control_array_settle, below */
                sn_control_submit(d, j);
        } else if (rc < 0) {
            const struct sn_control_job *dep = sn_control_job_get(d, bad);
            char msg[160];
            snprintf(msg, sizeof(msg), "dependency job %lld %s", (long long)bad,
                     dep ? sn_control_job_state_name(dep->state) : "does not exist");
            sn_control_job_set_state(d, j, SN_CONTROL_JOB_CANCELLED);
            j->updated_s = j->end_s = sn_control_now_s(d);
            sn_control_job_set_detail(j, msg);
            job_rows(d, j, "cancelled", msg);
            d->deps_dirty = true; /* its own dependents follow */
        }
    }
    sn_control_array_settle(d);
}

const char *sn_control_reason(const struct sn_control *d, const struct sn_control_job *job)
{
    if (job->held &&
        (job->state == SN_CONTROL_JOB_PENDING || job->state == SN_CONTROL_JOB_REQUEUED))
        return "held";
    if (sn_control_imex_waiting(job))
        return "domain-setup"; /* placed; its ranks wait for the IMEX channel */
    if (sn_control_preflight_waiting(job))
        return "preflight"; /* placed; its ranks wait for its preflight */
    if (job->sched_id == SN_NONE && sn_control_array_waiting(d, job))
        return "array-throttle";
    if (job->sched_id == SN_NONE && job->state == SN_CONTROL_JOB_PENDING &&
        json_object_get(job->spec, "after_ok"))
        return "dependency";
    if (job->sched_id == SN_NONE || !d->sched)
        return "none";
    struct sn_job_info info;
    sn_sched_job_info(d->sched, job->sched_id, &info);
    return info.state == SN_JOB_PENDING ? sn_pending_reason_name(info.reason) : "none";
}

void sn_control_admin_changed(struct sn_control *d, bool is_node, uint32_t id, uint8_t old_state)
{
    const struct sn_model *m = d->model;
    uint8_t now_state = is_node ? d->nodes[id].state : d->gpus[id].state;
    enum sn_domain_kind kind = is_node ? SN_DOMAIN_SERVER : SN_DOMAIN_GPU;
    enum sn_err rc = SN_OK;
    if (old_state == SN_CONTROL_ADMIN_DOWN && now_state != SN_CONTROL_ADMIN_DOWN)
        rc = sn_sched_repair(d->sched, kind, id, NULL);
    uint32_t first = is_node ? m->server_first_gpu[id] : id;
    uint32_t count = is_node ? sn_model_server_spec(m, id)->gpus : 1;
    for (uint32_t g = first; g < first + count; g++)
        sn_sched_cordon(d->sched, g, held_back(d, g) || (d->silent && d->silent[m->gpu_server[g]]));
    if (now_state == SN_CONTROL_ADMIN_DOWN && old_state != SN_CONTROL_ADMIN_DOWN) {
        double now = ((double)d->clock.wall_ms / 1000.0);
        rc = sn_sched_fail(d->sched, kind, id, now, NULL);
        apply_decisions(d, now);
    }
    if (now_state == SN_CONTROL_ADMIN_DRAINING && old_state != SN_CONTROL_ADMIN_DRAINING)
        sn__control_drain_signal(d, is_node, id, is_node ? d->nodes[id].actor : d->gpus[id].actor);
    else if (old_state == SN_CONTROL_ADMIN_DRAINING && (now_state == SN_CONTROL_ADMIN_UP ||
                                                        now_state == SN_CONTROL_ADMIN_CORDONED))
        sn__control_drain_cancel(d, is_node, id);
    (void)rc;
    sn_control_poke(d);
}

void sn_control_heartbeat(struct sn_control *d, uint32_t server)
{
    d->last_seen_ms[server] = d->clock.mono_ms;
    sn_control_partition_beat(d, server);
    struct sn_control_admin *a = &d->nodes[server];
    /* A node marked down for a lost heartbeat comes back with the next one;
     * one marked down by an admin stays down until resumed. */
    if (a->state == SN_CONTROL_ADMIN_DOWN && a->actor && strcmp(a->actor, "snd:heartbeat") == 0) {
        sn_control_admin_set(a, SN_CONTROL_ADMIN_UP, NULL, "snd:heartbeat", sn_control_now_s(d));
        admin_row(d, true, server);
        sn_control_admin_changed(d, true, server, SN_CONTROL_ADMIN_DOWN);
    }
}

void sn_control_node_lost(struct sn_control *d, uint32_t s, const char *reason, const char *actor)
{
    uint8_t old = d->nodes[s].state;
    if (old == SN_CONTROL_ADMIN_DOWN)
        return;
    if (d->silent && d->silent[s]) {
        d->silent[s] = 0;
        d->n_silent--;
    }
    sn_control_admin_set(&d->nodes[s], SN_CONTROL_ADMIN_DOWN, reason, actor, sn_control_now_s(d));
    admin_row(d, true, s);
    char name[64];
    sn_control_log(d, "node %s marked down: %s",
                   sn_model_server_name(d->model, s, name, sizeof(name)), reason);
    sn_control_admin_changed(d, true, s, old);
}

/* A pass of the core at now and what follows from it: decisions into
 * job states and rows, then the pending reasons' events. */
void sn_control_pass(struct sn_control *d)
{
    if (d->deps_dirty)
        sn_control_settle(d);
    if (d->n_expedited)
        sn__control_expedite_pass(d); /* expedited requeues first, on their held GPUs */
    double now = (double)d->clock.wall_ms / 1000.0;
    struct sn_error err = {0};
    if (sn_sched_pass(d->sched, now, &err) != SN_OK)
        sn_control_log(d, "scheduling pass failed: %s", err.message);
    d->passes++;
    d->sched_dirty = false;
    apply_decisions(d, now);
    sn_control_timeline_reasons(d, (int64_t)now);
}

/* ---- restore ------------------------------------------------------------------------ */

static bool live(const struct sn_control_job *j)
{
    return j->state == SN_CONTROL_JOB_PENDING || j->state == SN_CONTROL_JOB_REQUEUED ||
           j->state == SN_CONTROL_JOB_RUNNING;
}

/* Places a restored running job back on exactly its GPUs: they are the only
 * uncordoned ones while it is placed. */
static enum sn_err restore_running(struct sn_control *d, struct sn_control_job *j,
                                   struct sn_error *err)
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
    /* Placed as stored when the rules for new placements refuse the set: a
     * set from an in-place replacement may split groups, and the spare
     * reserve (spare_gpus_per_supernode) counts the supernode's usable GPUs,
     * which are only the job's own here, so any job the reserve would leave
     * no room for could not come back. The set was placed by the rules
     * once; what must hold now (no GPU twice, quotas) is checked by the
     * core here and by sn_control_verify() after the start. */
    if (!placed)
        placed = sn_sched_restore(d->sched, j->sched_id, j->alloc, j->n_alloc, (double)j->start_s,
                                  NULL) == SN_OK;
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

static enum sn_err restore_jobs(struct sn_control *d, struct sn_error *err)
{
    for (int64_t id = 1; id < d->next_job_id; id++) {
        struct sn_control_job *j = sn_control_job_get(d, id);
        if (!j)
            continue;
        if ((!live(j) || j->state != SN_CONTROL_JOB_RUNNING) && j->n_alloc)
            return sn_error_set(err, SN_ERR_INTERNAL, "job %lld is %s but holds GPUs",
                                (long long)id, sn_control_job_state_name(j->state));
        if (!live(j) || j->held)
            continue; /* a held job enters the core when released */
        int64_t bad;
        if (j->state == SN_CONTROL_JOB_PENDING && json_object_get(j->spec, "after_ok") &&
            sn_control_job_deps(d, j, &bad) != 0) {
            d->deps_dirty = true; /* held: sn_control_settle hands it over or cancels it */
            continue;
        }
        if (j->state == SN_CONTROL_JOB_PENDING && sn_control_array_throttled(j)) {
            d->deps_dirty = true; /* sn_control_array_settle lets in up to its array's throttle */
            continue;
        }
        struct sn_job_spec js;
        uint32_t sid;
        if (!job_spec(d, j, &js) || sn_sched_submit(d->sched, &js, &sid, err) != SN_OK ||
            !map_job(d, sid, id))
            return sn_error_set(err, SN_ERR_INTERNAL, "job %lld cannot be restored", (long long)id);
        j->sched_id = sid;
        if (j->state == SN_CONTROL_JOB_RUNNING) {
            enum sn_err rc = restore_running(d, j, err);
            if (rc != SN_OK)
                return rc;
            master_port_mark(d, j->master_port, true);
            if (j->ckpt_path && j->ckpt_time_s >= j->start_s)
                sn_sched_set_checkpoint(d->sched, j->sched_id, (double)j->ckpt_time_s);
            sn__control_imex_restore(d, j);
            sn__control_preflight_restore(d, j);
            sn_control_ckpt_on_start(d, j);
            /* Their agents are expected back within the heartbeat timeout. */
            for (uint32_t i = 0; i < j->n_alloc; i++)
                if (!d->last_seen_ms[d->model->gpu_server[j->alloc[i]]])
                    d->last_seen_ms[d->model->gpu_server[j->alloc[i]]] = d->clock.mono_ms;
        }
    }
    sn__control_preempt_restore(d);
    return SN_OK;
}

/* (Re)builds the core from the state in memory. */
static enum sn_err build(struct sn_control *d, struct sn_error *err)
{
    sn_sched_destroy(d->sched);
    d->sched = NULL;
    enum sn_err rc = make_core(d, err);
    if (rc != SN_OK)
        return rc;
    for (int64_t id = 1; id < d->next_job_id; id++)
        if (sn_control_job_get(d, id))
            sn_control_job_get(d, id)->sched_id = SN_NONE;
    const struct sn_model *m = d->model;
    for (uint32_t g = 0; g < m->n_gpus; g++)
        sn_sched_cordon(d->sched, g, true);
    rc = restore_jobs(d, err);
    for (uint32_t sn = 0; sn < m->n_supernodes; sn++) /* health.c's degraded domains */
        sn_sched_set_one_server(d->sched, sn, sn_control_domain_limit(d, sn) != NULL);
    for (uint32_t g = 0; g < m->n_gpus; g++)
        sn_sched_cordon(d->sched, g,
                        d->gpu_procs[g] != 0 || (d->round_hold && d->round_hold[m->gpu_server[g]]));
    if (rc != SN_OK)
        return rc;
    for (uint32_t s = 0; s < m->n_servers; s++)
        if (d->nodes[s].state != SN_CONTROL_ADMIN_UP)
            sn_control_admin_changed(d, true, s, SN_CONTROL_ADMIN_UP);
    for (uint32_t g = 0; g < m->n_gpus; g++)
        if (d->gpus[g].state != SN_CONTROL_ADMIN_UP)
            sn_control_admin_changed(d, false, g, SN_CONTROL_ADMIN_UP);
    rc = sn_sched_check_invariants(d->sched, err);
    sn_control_poke(d);
    return rc;
}

enum sn_err sn_control_start(struct sn_control *d, const struct sn_control_clock *now,
                             struct sn_error *err)
{
    d->clock = *now;
    return build(d, err);
}

enum sn_err sn_control_rebuild(struct sn_control *d, struct sn_error *err)
{
    return build(d, err);
}

struct sn_control *sn_control_new(const struct sn_model *model, const struct sn_spec *spec,
                                  const struct sn_control_config *cfg, struct sn_error *err)
{
    struct sn_control *d = calloc(1, sizeof(*d));
    if (!d) {
        sn_error_set(err, SN_ERR_NOMEM, "out of memory");
        return NULL;
    }
    d->cfg = *cfg;
    d->model = model;
    d->spec = spec;
    d->next_job_id = 1;
    uint32_t servers = model->n_servers ? model->n_servers : 1;
    uint32_t gpus = model->n_gpus ? model->n_gpus : 1;
    d->idem = sn_control_idem_new();
    d->nodes = calloc(servers, sizeof(*d->nodes));
    d->gpus = calloc(gpus, sizeof(*d->gpus));
    d->last_seen_ms = calloc(servers, sizeof(int64_t));
    d->gpu_procs = calloc(gpus, 1);
    d->agent_reports_procs = calloc(servers, sizeof(bool));
    d->master_ports = calloc(SN_CONTROL_MASTER_PORTS / 64, sizeof(uint64_t));
    d->silent = calloc(servers, 1);
    sn_effects_init(&d->fx);
    if (!d->idem || !d->nodes || !d->gpus || !d->last_seen_ms || !d->gpu_procs ||
        !d->agent_reports_procs || !d->master_ports || !d->silent) {
        sn_control_free(d);
        sn_error_set(err, SN_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return d;
}

void sn_control_free(struct sn_control *d)
{
    if (!d)
        return;
    sn_sched_destroy(d->sched);
    free(d->sched_jobs);
    sn_control_state_free(d);
    free(d->last_seen_ms);
    free(d->gpu_procs);
    free(d->agent_reports_procs);
    free(d->master_ports);
    free(d->silent);
    free(d->round_hold);
    free(d->domain_limit);
    sn_control_breaker_free(d);
    sn__control_parts_free(d);
    free(d->imex_used);
    free(d->power_cap_applied_w);
    free(d->expedite_hold);
    sn_effects_free(&d->fx);
    free(d);
}
