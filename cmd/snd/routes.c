/*
 * The routes of snd's API, one table (docs/api.md follows it), and their
 * handlers. Handlers run on the state thread. Reads answer at once; writes
 * change memory, then queue their rows with snd_commit() and answer in a
 * completion once the rows are durable.
 *
 * Tenant isolation: a token that is not admin sees and changes only jobs of
 * its own tenant (another tenant's job is 404, as if absent); its jobs'
 * data and checkpoint paths must lie under the tenant's prefix.
 */
#include "agent.h"
#include "http.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sn/api.h>
#include <sn/audit.h>

/* ---- helpers --------------------------------------------------------- */

/* Pagination: limit (1..page_max, default 100) and after (a cursor). */
static bool page_args(struct snd *d, struct snd_req *r, int64_t *limit, int64_t *after,
                      enum MHD_Result *ret)
{
    const char *l = snd_query(r, "limit"), *a = snd_query(r, "after");
    char *end = NULL;
    *limit = 100;
    *after = 0;
    if (l) {
        *limit = strtoll(l, &end, 10);
        if (!*l || *end || *limit < 1 || *limit > d->cfg.page_max) {
            *ret = snd_error(d, r, 400, "invalid_query", "limit",
                             "limit must be an integer from 1 to %lld", (long long)d->cfg.page_max);
            return false;
        }
    }
    if (a) {
        *after = strtoll(a, &end, 10);
        if (!*a || *end || *after < 0) {
            *ret = snd_error(d, r, 400, "invalid_query", "after",
                             "after must be a non-negative integer cursor");
            return false;
        }
    }
    return true;
}

static json_t *page(json_t *items, int64_t next)
{
    return json_pack("{s:o,s:o}", "items", items, "next", next ? json_integer(next) : json_null());
}

static enum MHD_Result store_failed(struct snd *d, struct snd_req *r)
{
    if (r->store_rc == SN_ERR_LIMIT)
        return snd_error(d, r, 503, "busy", NULL, "the write queue is full; retry");
    atomic_store(&d->fatal, true);
    return snd_error(d, r, 503, "store_failed", NULL,
                     "the state could not be written; snd is stopping");
}

/* ---- health, cluster ------------------------------------------------- */

static enum MHD_Result get_healthz(struct snd *d, struct snd_req *r)
{
    bool bad = atomic_load(&d->fatal);
    return snd_reply(d, r, bad ? 503 : 200, json_pack("{s:s}", "status", bad ? "failed" : "ok"));
}

static enum MHD_Result get_cluster(struct snd *d, struct snd_req *r)
{
    return snd_reply(d, r, 200, sn_control_cluster_json(d->ctl));
}

static enum MHD_Result get_topology(struct snd *d, struct snd_req *r)
{
    int64_t limit, after;
    enum MHD_Result ret;
    if (!page_args(d, r, &limit, &after, &ret))
        return ret;
    json_t *items = json_array();
    int64_t i = after, next = 0;
    for (; i < d->model->n_supernodes; i++) {
        if ((int64_t)json_array_size(items) == limit) {
            next = i;
            break;
        }
        json_array_append_new(items, sn_control_supernode_json(d->ctl, (uint32_t)i));
    }
    return snd_reply(d, r, 200, page(items, next));
}

/* ---- tenants, quotas, pools, classes --------------------------------- */

struct tenant_body {
    char name[64];
    char prefix[1025];
};
static const struct sn_api_field tenant_fields[] = {
    {"name", SN_API_NAME, true, 1, 63, offsetof(struct tenant_body, name)},
    {"prefix", SN_API_STRING, true, 2, 1024, offsetof(struct tenant_body, prefix)},
};

static enum MHD_Result done_reply(struct snd *d, struct snd_req *r)
{
    if (r->store_rc != SN_OK)
        return store_failed(d, r);
    json_t *body = r->reply;
    r->reply = NULL;
    return snd_reply(d, r, r->reply_status, body);
}

static enum MHD_Result refused(struct snd *d, struct snd_req *r,
                               const struct sn_control_refusal *why)
{
    return snd_error(d, r, why->status, why->code, why->field, "%s", why->message);
}

/* Commits the catalog's row, then answers reply with status. */
static enum MHD_Result catalog_commit(struct snd *d, struct snd_req *r, struct sn_store_write *w,
                                      const char *target, int status, json_t *reply)
{
    r->reply_status = status;
    r->reply = reply;
    enum MHD_Result ret = snd_commit(d, r, w, 1, target, done_reply);
    free((char *)w->text[1]);
    return ret;
}

static enum MHD_Result post_tenant(struct snd *d, struct snd_req *r)
{
    struct tenant_body b = {0};
    uint32_t present;
    enum MHD_Result ret;
    if (!snd_decode(d, r, tenant_fields, 2, &b, &present, &ret))
        return ret;
    struct sn_store_write w;
    struct sn_control_refusal why;
    bool created;
    if (!sn_control_tenant_put(d->ctl, b.name, b.prefix, &w, &created, &why))
        return refused(d, r, &why);
    return catalog_commit(d, r, &w, b.name, created ? 201 : 200,
                          json_pack("{s:s,s:s}", "name", b.name, "prefix", b.prefix));
}

static enum MHD_Result get_tenants(struct snd *d, struct snd_req *r)
{
    return snd_reply(d, r, 200,
                     page(sn_control_named_items(d->ctl->tenants, d->ctl->n_tenants), 0));
}

static enum MHD_Result get_tenant(struct snd *d, struct snd_req *r)
{
    json_t *o = sn_control_tenant_json(d->ctl, r->params[0]);
    if (!o)
        return snd_error(d, r, 404, "not_found", NULL, "no tenant '%s'", r->params[0]);
    return snd_reply(d, r, 200, o);
}

struct quota_body {
    int64_t gpus;
};
static const struct sn_api_field quota_fields[] = {
    {"gpus", SN_API_INT, true, 0, 1 << 22, offsetof(struct quota_body, gpus)},
};

static enum MHD_Result put_quota(struct snd *d, struct snd_req *r)
{
    struct quota_body b = {0};
    uint32_t present;
    enum MHD_Result ret;
    if (!snd_decode(d, r, quota_fields, 1, &b, &present, &ret))
        return ret;
    int64_t prev_gpus;
    struct sn_control_refusal why;
    if (!sn_control_quota_set(d->ctl, r->params[0], r->params[1], b.gpus, &prev_gpus, &why))
        return refused(d, r, &why);
    /* The scheduler core copies quotas when it is built: rebuild it. */
    struct sn_error err = {0};
    if (snd_rebuild(d, &err) != SN_OK) {
        sn_control_quota_restore(d->ctl, r->params[0], r->params[1], prev_gpus);
        struct sn_error err2 = {0};
        if (snd_rebuild(d, &err2) != SN_OK)
            atomic_store(&d->fatal, true);
        return snd_error(d, r, 409, "quota_below_usage", "gpus", "%s", err.message);
    }
    struct sn_store_write w = {
        .kind = SN_STORE_PUT_QUOTA, .text = {r->params[0], r->params[1]}, .num = {b.gpus}};
    r->reply_status = 200;
    r->reply = json_pack("{s:s,s:s,s:I}", "tenant", r->params[0], "pool", r->params[1], "gpus",
                         (json_int_t)b.gpus);
    return snd_commit(d, r, &w, 1, r->params[0], done_reply);
}

static enum MHD_Result get_quotas(struct snd *d, struct snd_req *r)
{
    return snd_reply(d, r, 200, page(sn_control_quotas_items(d->ctl), 0));
}

struct pool_body {
    char name[64];
    char kind[64];
    int64_t priority;
    bool preemptible;
    char preflight[8]; /* pools: quick, full or off for its jobs (lib/control/preflight.c) */
};
static const struct sn_api_field pool_fields[] = {
    {"name", SN_API_NAME, true, 1, 63, offsetof(struct pool_body, name)},
    {"kind", SN_API_NAME, true, 1, 63, offsetof(struct pool_body, kind)},
    {"preflight", SN_API_NAME, false, 1, 7, offsetof(struct pool_body, preflight)},
};
static const struct sn_api_field class_fields[] = {
    {"name", SN_API_NAME, true, 1, 63, offsetof(struct pool_body, name)},
    {"priority", SN_API_INT, true, -1000000, 1000000, offsetof(struct pool_body, priority)},
    {"preemptible", SN_API_BOOL, false, 0, 0, offsetof(struct pool_body, preemptible)},
};

static enum MHD_Result post_named(struct snd *d, struct snd_req *r, bool is_class)
{
    struct pool_body b = {0};
    uint32_t present;
    enum MHD_Result ret;
    if (!snd_decode(d, r, is_class ? class_fields : pool_fields, 3, &b, &present, &ret))
        return ret;
    struct sn_control_named_def def = {
        is_class, b.name, b.kind, b.priority, b.preemptible, b.preflight[0] ? b.preflight : NULL};
    struct sn_store_write w;
    struct sn_control_refusal why;
    json_t *reply;
    if (!sn_control_named_define(d->ctl, &def, &w, &reply, &why))
        return refused(d, r, &why);
    return catalog_commit(d, r, &w, b.name, 201, reply);
}

static enum MHD_Result post_pool(struct snd *d, struct snd_req *r)
{
    return post_named(d, r, false);
}

static enum MHD_Result post_class(struct snd *d, struct snd_req *r)
{
    return post_named(d, r, true);
}

static enum MHD_Result get_pools(struct snd *d, struct snd_req *r)
{
    return snd_reply(d, r, 200, page(sn_control_pools_items(d->ctl), 0));
}

static enum MHD_Result get_classes(struct snd *d, struct snd_req *r)
{
    return snd_reply(d, r, 200,
                     page(sn_control_named_items(d->ctl->classes, d->ctl->n_classes), 0));
}

/* ---- jobs --------------------------------------------------------------- */

/* The job if the caller may see it: admins see all, others their tenant's. */
static struct sn_control_job *visible_job(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    if (*end || id < 1)
        return NULL;
    struct sn_control_job *j = sn_control_job_get(d->ctl, id);
    if (!j || !j->durable)
        return NULL;
    if (!snd_is_admin(r) && strcmp(j->tenant, r->tok.subject) != 0)
        return NULL;
    return j;
}

/* The 404 for a job the caller may not see. When the job exists but is
 * another tenant's, the answer is the same as for an absent one, and the
 * refusal is audited (durably, before the answer) and counted in
 * sn_auth_failures_total. */
static enum MHD_Result job_not_found(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    const struct sn_control_job *j = !*end && id >= 1 ? sn_control_job_get(d->ctl, id) : NULL;
    char msg[200];
    snprintf(msg, sizeof(msg), "no job '%.128s'", r->params[0]);
    if (!j || !j->durable || snd_is_admin(r))
        return snd_error(d, r, 404, "not_found", NULL, "%s", msg);
    d->auth_failures++;
    char target[32];
    snprintf(target, sizeof(target), "job/%lld", id);
    snprintf(r->audit_detail, sizeof(r->audit_detail), "job of another tenant");
    r->reply_status = 404;
    r->reply = json_pack("{s:{s:s,s:s}}", "error", "code", "not_found", "message", msg);
    return snd_commit(d, r, NULL, 0, target, snd_refusal_done);
}

/* Checks the references and limits of a decoded job; answers on failure. */
static enum MHD_Result submit_done(struct snd *d, struct snd_req *r)
{
    struct sn_control_job *job = sn_control_job_get(d->ctl, r->arg);
    if (r->store_rc == SN_ERR_CONFLICT) {
        sn_control_job_remove(d->ctl, r->arg);
        return snd_error(d, r, 409, "conflict", "idempotency_key", "the idempotency key is taken");
    }
    if (r->store_rc != SN_OK) {
        sn_control_job_remove(d->ctl, r->arg);
        return store_failed(d, r);
    }
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_SUBMIT, .job = job->id};
    snd_apply_queued(d, &ev);
    return snd_reply(d, r, 201, sn_control_job_json(d->ctl, job));
}

static bool idem_key_ok(const char *key)
{
    size_t n = strlen(key);
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++)
        if (key[i] < 0x21 || key[i] > 0x7e)
            return false;
    return true;
}

/* An existing job with the key: same body replays it, another is 409. */
static enum MHD_Result replay(struct snd *d, struct snd_req *r, struct sn_control_job *old,
                              json_t *spec)
{
    bool same = json_equal(old->spec, spec);
    json_decref(spec);
    if (!old->durable)
        return snd_error(d, r, 409, "in_progress", "idempotency_key",
                         "a submit with this idempotency key is still being written");
    if (!same)
        return snd_error(d, r, 409, "conflict", "idempotency_key",
                         "idempotency key reused with a different body (job %lld)",
                         (long long)old->id);
    return snd_reply(d, r, 200, sn_control_job_json(d->ctl, old));
}

static enum MHD_Result post_job(struct snd *d, struct snd_req *r)
{
    struct sn_api_job b;
    memset(&b, 0, sizeof(b));
    uint32_t present;
    enum MHD_Result ret;
    if (!snd_decode(d, r, sn_api_job_fields, sn_api_job_field_count, &b, &present, &ret))
        return ret;
    const char *tenant = r->tok.subject;
    if (snd_is_admin(r)) {
        if (!b.tenant[0])
            return snd_error(d, r, 400, "invalid_field", "tenant",
                             "missing field 'tenant' (required with an admin token)");
        tenant = b.tenant;
    } else if (b.tenant[0] && strcmp(b.tenant, tenant) != 0) {
        char msg[200];
        snprintf(msg, sizeof(msg), "a token of tenant '%s' cannot submit for '%s'", tenant,
                 b.tenant);
        return snd_refuse(d, r, 403, "forbidden", "tenant", "submit for another tenant", msg);
    }
    struct sn_control_refusal why;
    if (!sn_control_submit_check(d->ctl, tenant, &b, &present, &why))
        return refused(d, r, &why);
    const char *key = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Idempotency-Key");
    if (key && !idem_key_ok(key))
        return snd_error(d, r, 400, "invalid_header", "idempotency_key",
                         "Idempotency-Key must be 1 to 128 printable ASCII characters");
    json_t *spec = sn_control_job_spec_json(&b, present);
    int64_t old = key ? sn_control_idem_find(d->ctl, tenant, key) : 0;
    if (old)
        return replay(d, r, sn_control_job_get(d->ctl, old), spec);
    struct sn_store_write w[2];
    struct sn_control_job *job =
        sn_control_submit_record(d->ctl, tenant, key, r->actor, spec, snd_now_s(), w, &why);
    if (!job)
        return refused(d, r, &why);
    char target[32];
    snprintf(target, sizeof(target), "job/%lld", (long long)job->id);
    r->arg = job->id;
    r->reply_status = 201;
    ret = snd_commit(d, r, w, 2, target, submit_done);
    free((char *)w[0].text[3]);
    return ret;
}

/* The listing's filter from the query: state (default states when
 * absent), tenant (a tenant token sees only its own: refused names
 * another) and pool; false: answered. */
static bool job_filter(struct snd *d, struct snd_req *r, int states, const char *own_only,
                       struct sn_control_job_filter *f, enum MHD_Result *ret)
{
    const char *st = snd_query(r, "state");
    *f = (struct sn_control_job_filter){.states = st ? sn_control_job_state_mask(st) : states,
                                        .tenant = snd_query(r, "tenant"),
                                        .pool = snd_query(r, "pool"),
                                        .until_s = INT64_MAX,
                                        .now_s = snd_now_s()};
    if (st && f->states < 0) {
        *ret = snd_error(d, r, 400, "invalid_query", "state",
                         "state '%s': expected %s, or a comma-separated list of them", st,
                         sn_control_job_states_expected());
        return false;
    }
    if (!snd_is_admin(r)) {
        if (f->tenant && strcmp(f->tenant, r->tok.subject) != 0) {
            *ret = snd_error(d, r, 403, "forbidden", "tenant", "%s", own_only);
            return false;
        }
        f->tenant = r->tok.subject;
    }
    return true;
}

static enum MHD_Result get_jobs(struct snd *d, struct snd_req *r)
{
    int64_t limit, after, next;
    enum MHD_Result ret;
    struct sn_control_job_filter f;
    if (!page_args(d, r, &limit, &after, &ret) ||
        !job_filter(d, r, -1, "a tenant token lists only its own jobs", &f, &ret))
        return ret;
    json_t *items = sn_control_jobs_items(d->ctl, &f, after, limit, &next);
    return snd_reply(d, r, 200, page(items, next));
}

static enum MHD_Result get_job(struct snd *d, struct snd_req *r)
{
    struct sn_control_job *j = visible_job(d, r);
    if (!j)
        return job_not_found(d, r);
    return snd_reply(d, r, 200, sn_control_job_json(d->ctl, j));
}

/* GET /v1/accounting: the job history, like sacct. A job matches the time
 * window when it was in the system during it (submitted before `until`,
 * not ended before `since`); by default only ended jobs are listed. */
static bool query_time(struct snd *d, struct snd_req *r, const char *name, int64_t *out,
                       enum MHD_Result *ret)
{
    const char *v = snd_query(r, name);
    if (!v)
        return true;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < 0) {
        *ret = snd_error(d, r, 400, "invalid_query", name, "%s must be Unix seconds", name);
        return false;
    }
    *out = x;
    return true;
}

static enum MHD_Result get_accounting(struct snd *d, struct snd_req *r)
{
    int64_t limit, after, next;
    enum MHD_Result ret;
    struct sn_control_job_filter f;
    int ended = 0;
    for (int s = 0; s < SN_CONTROL_JOB_STATE_COUNT; s++)
        ended |= sn_control_job_state_ended((enum sn_control_job_state)s) << s;
    if (!page_args(d, r, &limit, &after, &ret) ||
        !job_filter(d, r, ended, "a tenant token sees only its own jobs' history", &f, &ret) ||
        !query_time(d, r, "since", &f.since_s, &ret) ||
        !query_time(d, r, "until", &f.until_s, &ret))
        return ret;
    f.pool = NULL;
    f.name = snd_query(r, "name");
    f.accounting = true;
    json_t *items = sn_control_jobs_items(d->ctl, &f, after, limit, &next);
    return snd_reply(d, r, 200, page(items, next));
}

/* GET /v1/jobs/{id}/log: tenant isolation as for the job itself. */
static enum MHD_Result get_job_log(struct snd *d, struct snd_req *r)
{
    struct sn_control_job *j = visible_job(d, r);
    if (!j)
        return snd_error(d, r, 404, "not_found", NULL, "no job '%s'", r->params[0]);
    return snd_get_job_log(d, r, j);
}

static enum MHD_Result cancel_done(struct snd *d, struct snd_req *r)
{
    if (r->store_rc != SN_OK)
        return store_failed(d, r);
    return snd_reply(d, r, 200, sn_control_job_json(d->ctl, sn_control_job_get(d->ctl, r->arg)));
}

/* Ends a job now (cancel, or the exit of its ranks): out of the scheduler,
 * GPUs released, and its rows (job, allocation removed, event) committed
 * with the answer to r. */
enum MHD_Result snd_job_end(struct snd *d, struct snd_req *r, struct sn_control_job *j,
                            enum sn_control_job_state to, const char *event, const char *detail,
                            snd_complete_fn complete)
{
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_END,
                                  .job = j->id,
                                  .to = to,
                                  .text = event,
                                  .detail = detail,
                                  .actor = r->actor};
    char target[32];
    snprintf(target, sizeof(target), "job/%lld", (long long)j->id);
    r->arg = j->id;
    r->reply_status = 200;
    return snd_commit_event(d, r, &ev, target, complete);
}

static bool job_live(const struct sn_control_job *j)
{
    return j->state == SN_CONTROL_JOB_PENDING || j->state == SN_CONTROL_JOB_RUNNING ||
           j->state == SN_CONTROL_JOB_REQUEUED;
}

static enum MHD_Result cancel_job(struct snd *d, struct snd_req *r)
{
    struct sn_control_job *j = visible_job(d, r);
    if (!j)
        return job_not_found(d, r);
    if (!job_live(j))
        return snd_error(d, r, 409, "invalid_transition", "state",
                         "job %lld is %s; only pending, requeued or running jobs can be "
                         "cancelled",
                         (long long)j->id, sn_control_job_state_name(j->state));
    char detail[120];
    snprintf(detail, sizeof(detail), "cancelled by %s", r->actor);
    return snd_job_end(d, r, j, SN_CONTROL_JOB_CANCELLED, "cancelled", detail, cancel_done);
}

static bool event_row(void *ctx, const struct sn_store_write *row)
{
    json_t *items = ctx;
    json_array_append_new(items, json_pack("{s:I,s:I,s:s,s:s}", "seq", (json_int_t)row->num[2],
                                           "time_s", (json_int_t)row->num[1], "kind", row->text[0],
                                           "message", row->text[1]));
    return true;
}

static enum MHD_Result get_job_events(struct snd *d, struct snd_req *r)
{
    int64_t limit, after;
    enum MHD_Result ret;
    if (!page_args(d, r, &limit, &after, &ret))
        return ret;
    struct sn_control_job *j = visible_job(d, r);
    if (!j)
        return job_not_found(d, r);
    json_t *items = json_array();
    struct sn_error err = {0};
    if (sn_store_query_log(d->store, SN_STORE_LOG_EVENTS, j->id, after, (uint32_t)limit, event_row,
                           items, &err) != SN_OK) {
        json_decref(items);
        return snd_error(d, r, 500, "internal", NULL, "%s", err.message);
    }
    size_t n = json_array_size(items);
    int64_t next = (int64_t)n == limit
                       ? json_integer_value(json_object_get(json_array_get(items, n - 1), "seq"))
                       : 0;
    return snd_reply(d, r, 200, page(items, next));
}

/* ---- nodes and GPUs ------------------------------------------------------ */

static json_t *node_json(struct snd *d, uint32_t server)
{
    return sn_control_node_json(d->ctl, server, snd_now_ms());
}

static enum MHD_Result get_nodes(struct snd *d, struct snd_req *r)
{
    int64_t limit, after;
    enum MHD_Result ret;
    if (!page_args(d, r, &limit, &after, &ret))
        return ret;
    const char *st = snd_query(r, "state");
    json_t *items = json_array();
    int64_t next = 0;
    for (int64_t i = after; i < d->model->n_servers; i++) {
        if (st && strcmp(st, sn_control_admin_state_name(
                                 (enum sn_control_admin_state)d->ctl->nodes[i].state)))
            continue;
        if ((int64_t)json_array_size(items) == limit) {
            next = i;
            break;
        }
        json_array_append_new(items, node_json(d, (uint32_t)i));
    }
    return snd_reply(d, r, 200, page(items, next));
}

static enum MHD_Result get_node(struct snd *d, struct snd_req *r)
{
    uint32_t id = sn_model_find_server(d->model, r->params[0]);
    if (id == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no node '%s'", r->params[0]);
    return snd_reply(d, r, 200, node_json(d, id));
}

static enum MHD_Result get_gpus(struct snd *d, struct snd_req *r)
{
    int64_t limit, after;
    enum MHD_Result ret;
    if (!page_args(d, r, &limit, &after, &ret))
        return ret;
    const char *node = snd_query(r, "node");
    uint32_t first = 0, end = d->model->n_gpus;
    if (node) {
        uint32_t s = sn_model_find_server(d->model, node);
        if (s == SN_NONE)
            return snd_error(d, r, 404, "not_found", "node", "no node '%s'", node);
        first = d->model->server_first_gpu[s];
        end = first + sn_model_server_spec(d->model, s)->gpus;
    }
    json_t *items = json_array();
    int64_t next = 0;
    for (int64_t g = first + after; g < end; g++) {
        if ((int64_t)json_array_size(items) == limit) {
            next = g - first;
            break;
        }
        json_t *o = sn_control_gpu_json(d->ctl, (uint32_t)g, false);
        double score = snd_health_gpu_score((uint32_t)g);
        json_object_set_new(o, "health_score", score >= 0 ? json_real(score) : json_null());
        json_array_append_new(items, o);
    }
    return snd_reply(d, r, 200, page(items, next));
}

/* One GPU: admin state, node, and the health engine's score and findings. */
static enum MHD_Result get_gpu(struct snd *d, struct snd_req *r)
{
    uint32_t g = sn_model_find_gpu(d->model, r->params[0]);
    if (g == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no gpu '%s'", r->params[0]);
    json_t *o = sn_control_gpu_json(d->ctl, g, true);
    json_t *h = snd_health_gpu_json(d, g);
    json_object_set(o, "health_score", json_object_get(h, "score"));
    json_object_set(o, "health_action", json_object_get(h, "action"));
    json_object_set(o, "findings", json_object_get(h, "findings"));
    json_object_set(o, "fabric", json_object_get(h, "fabric"));
    json_decref(h);
    return snd_reply(d, r, 200, o);
}

struct action_body {
    char reason[257];
};
static const struct sn_api_field action_fields[] = {
    {"reason", SN_API_STRING, false, 1, 256, offsetof(struct action_body, reason)},
};

/* The transitions of admin states (like scontrol): -1 is refused, -2 is
 * an unknown action. Drain lands in drained while nothing runs there, else
 * in draining (drained when the last job leaves). Fail marks the part down:
 * its jobs are interrupted and requeued; resume brings it back. */
static enum MHD_Result admin_action(struct snd *d, struct snd_req *r, bool is_node)
{
    const struct sn_model *m = d->model;
    uint32_t id =
        is_node ? sn_model_find_server(m, r->params[0]) : sn_model_find_gpu(m, r->params[0]);
    if (id == SN_NONE)
        return snd_error(d, r, 404, "not_found", NULL, "no %s '%s'", is_node ? "node" : "gpu",
                         r->params[0]);
    struct action_body b = {0};
    uint32_t present;
    enum MHD_Result ret;
    if (!snd_decode(d, r, action_fields, 1, &b, &present, &ret))
        return ret;
    int to;
    struct sn_control_refusal why;
    if (!sn_control_admin_check(d->ctl, is_node, id, r->params[1], b.reason, &to, &why))
        return refused(d, r, &why);
    /* The admin row commits with the answer; the requeues a fail causes
     * follow it through the outbox. */
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_ADMIN,
                                  .is_node = is_node,
                                  .id = id,
                                  .admin = (enum sn_control_admin_state)to,
                                  .detail = b.reason,
                                  .actor = r->actor};
    r->reply_status = 200;
    ret = snd_commit_event(d, r, &ev, r->params[0], done_reply);
    if (!r->reply && r->committed)
        r->reply = is_node ? node_json(d, id) : sn_control_gpu_json(d->ctl, id, false);
    return ret;
}

/* POST /v1/jobs/{id}/hold, release, requeue (docs/api.md): scontrol's
 * hold, release and requeue; the job's rows commit with the answer. */
static enum MHD_Result job_control(struct snd *d, struct snd_req *r,
                                   enum sn_control_event_kind kind, const char *target_verb)
{
    struct sn_control_job *j = visible_job(d, r);
    if (!j)
        return job_not_found(d, r);
    struct action_body b = {0};
    uint32_t present;
    enum MHD_Result ret;
    if (!snd_decode(d, r, action_fields, 1, &b, &present, &ret))
        return ret;
    struct sn_control_event ev = {
        .kind = kind, .job = j->id, .detail = b.reason, .actor = r->actor};
    char target[48];
    snprintf(target, sizeof(target), "job/%lld %s", (long long)j->id, target_verb);
    r->arg = j->id;
    r->reply_status = 200;
    return snd_commit_event(d, r, &ev, target, cancel_done);
}

static enum MHD_Result hold_job(struct snd *d, struct snd_req *r)
{
    return job_control(d, r, SN_CONTROL_EVENT_HOLD_JOB, "hold");
}

static enum MHD_Result release_job(struct snd *d, struct snd_req *r)
{
    return job_control(d, r, SN_CONTROL_EVENT_RELEASE_JOB, "release");
}

static enum MHD_Result requeue_job(struct snd *d, struct snd_req *r)
{
    return job_control(d, r, SN_CONTROL_EVENT_REQUEUE_JOB, "requeue");
}

/* POST /v1/jobs/{id}/update (docs/api.md): the rule is lib/control's
 * (sn_control_update_check, UPDATE_JOB); the job's rows commit with the
 * answer and the request is audited with the fields it names. */
static enum MHD_Result update_job(struct snd *d, struct snd_req *r)
{
    struct sn_control_job *j = visible_job(d, r);
    if (!j)
        return job_not_found(d, r);
    struct sn_control_update u;
    memset(&u, 0, sizeof(u));
    enum MHD_Result ret;
    if (!snd_decode(d, r, sn_control_update_fields, sn_control_update_field_count, &u, &u.present,
                    &ret))
        return ret;
    struct sn_control_refusal why;
    if (!sn_control_update_check(d->ctl, j, &u, &why))
        return snd_error(d, r, why.status, why.code, why.field, "%s", why.message);
    struct sn_control_event ev = {
        .kind = SN_CONTROL_EVENT_UPDATE_JOB, .job = j->id, .actor = r->actor, .update = &u};
    char target[48];
    snprintf(target, sizeof(target), "job/%lld update", (long long)j->id);
    r->arg = j->id;
    r->reply_status = 200;
    return snd_commit_event(d, r, &ev, target, cancel_done);
}

/* GET /v1/scheduler/starts (docs/api.md): the reservation and the projection
 * (lib/control/starts.c); a tenant sees only its own jobs. */
static enum MHD_Result get_starts(struct snd *d, struct snd_req *r)
{
    int64_t limit, after, next = 0;
    enum MHD_Result ret;
    if (!page_args(d, r, &limit, &after, &ret))
        return ret;
    json_t *items = sn_control_starts_json(d->ctl, snd_is_admin(r) ? NULL : r->tok.subject, after,
                                           limit, &next);
    if (!items)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    return snd_reply(d, r, 200, page(items, next));
}

static enum MHD_Result post_node_action(struct snd *d, struct snd_req *r)
{
    return admin_action(d, r, true);
}

static enum MHD_Result post_gpu_action(struct snd *d, struct snd_req *r)
{
    return admin_action(d, r, false);
}

/* ---- audit and tokens ---------------------------------------------------- */

/* An integer query parameter in [min, max]; absent leaves *out. */
static bool query_int(struct snd *d, struct snd_req *r, const char *name, int64_t min, int64_t max,
                      int64_t *out, enum MHD_Result *ret)
{
    const char *v = snd_query(r, name);
    if (!v)
        return true;
    char *end = NULL;
    long long n = strtoll(v, &end, 10);
    if (*v && !*end && n >= min && n <= max) {
        *out = n;
        return true;
    }
    *ret = snd_error(d, r, 400, "invalid_query", name, "%s must be an integer from %lld to %lld",
                     name, (long long)min, (long long)max);
    return false;
}

#define AUDIT_SCAN_MAX 100000 /* rows one request reads at most */

/* GET /v1/audit: rows after the cursor matching the filters. A request
 * reads at most AUDIT_SCAN_MAX rows; next is the last row read whenever the
 * page is full or the scan stopped there, so a client continues from it. */
static enum MHD_Result get_audit(struct snd *d, struct snd_req *r)
{
    int64_t limit, after;
    enum MHD_Result ret;
    if (!page_args(d, r, &limit, &after, &ret))
        return ret;
    struct sn_audit_filter f = {.token = snd_query(r, "token"),
                                .route = snd_query(r, "route"),
                                .tenant = snd_query(r, "tenant")};
    if (!query_int(d, r, "since", 0, INT64_MAX, &f.since_s, &ret) ||
        !query_int(d, r, "until", 0, INT64_MAX, &f.until_s, &ret) ||
        !query_int(d, r, "status", 100, 599, &f.status, &ret))
        return ret;
    json_t *items;
    int64_t next;
    struct sn_error err = {0};
    if (sn_store_audit_query(d->store, &f, after, (size_t)limit, AUDIT_SCAN_MAX, &items, &next,
                             &err) != SN_OK)
        return snd_error(d, r, 500, "internal", NULL, "%s", err.message);
    return snd_reply(d, r, 200, page(items, next));
}

struct token_body {
    char kind[64];
    char subject[64];
    char scopes[200];
    int64_t ttl_s;
};
static const struct sn_api_field token_fields[] = {
    {"kind", SN_API_NAME, true, 1, 63, offsetof(struct token_body, kind)},
    {"subject", SN_API_NAME, true, 1, 63, offsetof(struct token_body, subject)},
    {"scopes", SN_API_STRING, true, 1, 199, offsetof(struct token_body, scopes)},
    {"ttl_s", SN_API_INT, true, 1, 366LL * 86400, offsetof(struct token_body, ttl_s)},
};

static enum MHD_Result post_token(struct snd *d, struct snd_req *r)
{
    struct token_body b = {0};
    uint32_t present;
    enum MHD_Result ret;
    if (!snd_decode(d, r, token_fields, 4, &b, &present, &ret))
        return ret;
    struct sn_token t;
    struct sn_control_refusal why;
    if (!sn_control_token_check(d->ctl, b.kind, b.subject, b.scopes, &t, &why))
        return refused(d, r, &why);
    struct sn_error err = {0};
    if (snd_random_hex(t.id, 16) != 0)
        return snd_error(d, r, 500, "internal", NULL, "no randomness");
    t.issued_s = snd_now_s();
    t.expires_s = t.issued_s + b.ttl_s;
    char text[SN_AUTH_TOKEN_MAX];
    if (snd_token_sign(d, &t, text, sizeof(text), &err) != SN_OK)
        return snd_error(d, r, 500, "internal", NULL, "%s", err.message);
    /* Issuing writes only the audit entry: tokens are not stored. */
    r->reply_status = 201;
    r->reply = json_pack("{s:s,s:s,s:s,s:s,s:I}", "token", text, "id", t.id, "subject", t.subject,
                         "scopes", b.scopes, "expires_s", (json_int_t)t.expires_s);
    return snd_commit(d, r, NULL, 0, t.id, done_reply);
}

static enum MHD_Result revoke_token(struct snd *d, struct snd_req *r)
{
    const char *id = r->params[0];
    size_t n = strlen(id);
    if (n == 0 || n >= SN_AUTH_ID_MAX || strspn(id, "0123456789abcdef") != n)
        return snd_error(d, r, 400, "invalid_path", "id", "token id '%s' is not hex", id);
    struct sn_error err = {0};
    enum sn_err rc = snd_revocation_record(d, id, &err);
    if (rc != SN_OK) /* nothing changed: the list beside the key was not written */
        return snd_error(d, r, rc == SN_ERR_LIMIT ? 507 : 500,
                         strncmp(err.message, "disk full", 9) == 0 ? "disk_full"
                         : rc == SN_ERR_LIMIT                      ? "limit"
                                                                   : "internal",
                         NULL, "%s", err.message);
    struct sn_store_write w = {.kind = SN_STORE_ADD_REVOKE, .text = {id}, .num = {0, snd_now_s()}};
    r->reply_status = 200;
    r->reply = json_pack("{s:s,s:b}", "id", id, "revoked", 1);
    return snd_commit(d, r, &w, 1, id, done_reply);
}

/* ---- backup ------------------------------------------------------------ */

struct backup_body {
    char path[1025];
};
static const struct sn_api_field backup_fields[] = {
    {"path", SN_API_STRING, true, 2, 1024, offsetof(struct backup_body, path)},
};

/* POST /v1/admin/backup: an online, consistent copy of state.db to a new
 * file on the snd host (SQLite's backup API, one commit's state), mode
 * 0600, answered once its audit row is durable. The copy runs on the state
 * thread: requests wait for it (about a second per GB on a local disk). */
static enum MHD_Result post_backup(struct snd *d, struct snd_req *r)
{
    struct backup_body b = {0};
    uint32_t present;
    enum MHD_Result ret;
    if (!snd_decode(d, r, backup_fields, 1, &b, &present, &ret))
        return ret;
    if (!sn_api_path_within(b.path, b.path)) /* absolute and normalised */
        return snd_error(d, r, 400, "invalid_field", "path",
                         "path '%s': expected an absolute, normalised file path", b.path);
    int fd = open(b.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return snd_error(d, r, errno == EEXIST ? 409 : 422,
                         errno == EEXIST ? "conflict" : "invalid_field", "path",
                         "cannot create '%s': %s", b.path, strerror(errno));
    close(fd);
    uint64_t pages = 0;
    struct sn_error err = {0};
    enum sn_err rc = sn_store_backup(d->store, b.path, &pages, &err);
    if (rc != SN_OK) {
        unlink(b.path);
        return snd_error(d, r, rc == SN_ERR_LIMIT ? 507 : 500,
                         rc == SN_ERR_LIMIT ? "disk_full" : "internal", NULL, "%s", err.message);
    }
    struct stat st;
    int64_t bytes = stat(b.path, &st) == 0 ? (int64_t)st.st_size : -1;
    r->reply_status = 200;
    r->reply = json_pack("{s:s,s:I,s:I}", "path", b.path, "bytes", (json_int_t)bytes, "pages",
                         (json_int_t)pages);
    return snd_commit(d, r, NULL, 0, b.path, done_reply);
}

/* ---- the table -------------------------------------------------------- */

#define NO_AUTH (-1)
const struct snd_route snd_routes[] = {
    {"GET", "/healthz", NO_AUTH, get_healthz, "liveness: 200 ok, 503 after a store failure"},
    {"GET", "/metrics", NO_AUTH, snd_metrics, "Prometheus text exposition"},
    {"GET", "/v1/cluster", SN_SCOPE_CLUSTER_READ, get_cluster, "cluster summary"},
    {"GET", "/v1/cluster/topology", SN_SCOPE_CLUSTER_READ, get_topology, "supernodes, paged"},
    {"GET", "/v1/tenants", SN_SCOPE_ADMIN, get_tenants, "list tenants"},
    {"POST", "/v1/tenants", SN_SCOPE_ADMIN, post_tenant, "create or update a tenant"},
    {"GET", "/v1/tenants/{}", SN_SCOPE_ADMIN, get_tenant, "one tenant with its quotas"},
    {"PUT", "/v1/tenants/{}/quotas/{}", SN_SCOPE_ADMIN, put_quota, "set a tenant's pool quota"},
    {"GET", "/v1/quotas", SN_SCOPE_ADMIN, get_quotas, "list quotas"},
    {"PUT", "/v1/tenants/{}/limits", SN_SCOPE_ADMIN, snd_put_tenant_limits,
     "set a tenant's per-supernode quota and per-job caps"},
    {"GET", "/v1/pools", SN_SCOPE_ADMIN, get_pools, "list pools (spec and API)"},
    {"POST", "/v1/pools", SN_SCOPE_ADMIN, post_pool, "create or update a pool"},
    {"GET", "/v1/priority-classes", SN_SCOPE_ADMIN, get_classes, "list priority classes"},
    {"POST", "/v1/priority-classes", SN_SCOPE_ADMIN, post_class, "create a priority class"},
    {"POST", "/v1/jobs", SN_SCOPE_JOBS_WRITE, post_job, "submit a job (Idempotency-Key)"},
    {"GET", "/v1/jobs", SN_SCOPE_JOBS_READ, get_jobs, "list jobs, filtered and paged"},
    {"GET", "/v1/jobs/{}", SN_SCOPE_JOBS_READ, get_job, "one job with its pending reason"},
    {"POST", "/v1/jobs/{}/cancel", SN_SCOPE_JOBS_WRITE, cancel_job, "cancel a job"},
    {"POST", "/v1/jobs/{}/hold", SN_SCOPE_JOBS_WRITE, hold_job, "hold a pending job"},
    {"POST", "/v1/jobs/{}/release", SN_SCOPE_JOBS_WRITE, release_job, "release a held job"},
    {"POST", "/v1/jobs/{}/requeue", SN_SCOPE_JOBS_WRITE, requeue_job, "requeue a running job"},
    {"POST", "/v1/jobs/{}/update", SN_SCOPE_JOBS_WRITE, update_job,
     "replace a job's gpus, priority_class, time_limit_s or name"},
    {"GET", "/v1/scheduler/starts", SN_SCOPE_JOBS_READ, get_starts,
     "expected starts of waiting jobs: the reservation and the projection (squeue --start)"},
    {"POST", "/v1/jobs/{}/exit", SN_SCOPE_TELEMETRY_WRITE, snd_post_job_exit,
     "agents: a rank of a running job exited (rank, status)"},
    {"GET", "/v1/jobs/{}/events", SN_SCOPE_JOBS_READ, get_job_events, "a job's events, paged"},
    {"GET", "/v1/nodes", SN_SCOPE_CLUSTER_READ, get_nodes, "servers with admin state, paged"},
    {"GET", "/v1/nodes/{}", SN_SCOPE_CLUSTER_READ, get_node, "one server"},
    {"POST", "/v1/nodes/{}/heartbeat", SN_SCOPE_TELEMETRY_WRITE, snd_post_heartbeat,
     "agents: heartbeat (marks the node alive); answers the ranks to run there"},
    {"POST", "/v1/nodes/{}/benchmarks", SN_SCOPE_TELEMETRY_WRITE, snd_post_benchmarks,
     "agents: the node's health benchmark results (sn-bench CSV)"},
    {"POST", "/v1/nodes/{}/{}", SN_SCOPE_NODES_WRITE, post_node_action,
     "cordon, drain, fail or resume a server"},
    {"GET", "/v1/gpus", SN_SCOPE_CLUSTER_READ, get_gpus,
     "GPUs with admin state and health score, paged"},
    {"GET", "/v1/gpus/{}", SN_SCOPE_CLUSTER_READ, get_gpu,
     "one GPU: admin state, health score and findings"},
    {"POST", "/v1/gpus/{}/{}", SN_SCOPE_NODES_WRITE, post_gpu_action,
     "cordon, drain, fail or resume a GPU"},
    {"GET", "/v1/audit", SN_SCOPE_ADMIN, get_audit, "the audit log, paged by sequence"},
    {"POST", "/v1/tokens", SN_SCOPE_ADMIN, post_token, "issue a tenant or agent token"},
    {"POST", "/v1/tokens/{}/revoke", SN_SCOPE_ADMIN, revoke_token, "revoke a token by id"},
    /* Node agents (agent_routes.c, docs/agent.md); their heartbeat and exit routes are above. */
    {"GET", "/v1/agents", SN_SCOPE_CLUSTER_READ, snd_agent_list, "agents seen, paged"},
    {"GET", "/v1/agents/{}", SN_SCOPE_CLUSTER_READ, snd_agent_get,
     "one agent: heartbeat and telemetry sequence state"},
    {"POST", "/v1/telemetry", SN_SCOPE_TELEMETRY_WRITE, snd_agent_telemetry,
     "a telemetry batch (dcgm-exporter, nvidia-smi-csv, facility-csv, proc-interrupts, sysfs or "
     "kernel-log text)"},
    {"GET", "/v1/telemetry/gpus/{}", SN_SCOPE_CLUSTER_READ, snd_agent_gpu_telemetry,
     "a GPU's latest telemetry and findings"},
    {"GET", "/v1/telemetry/gpus/{}/history", SN_SCOPE_CLUSTER_READ, snd_dashboard_gpu_history,
     "a GPU's telemetry time series (the last gpu_history_samples samples) with its job"},
    /* The dashboard (dashboard.c, docs/dashboard.md). */
    {"GET", "/", NO_AUTH, snd_dashboard_index, "the dashboard page"},
    {"GET", "/dashboard/{}", NO_AUTH, snd_dashboard_asset, "the dashboard's script and style"},
    {"GET", "/v1/dashboard/map", SN_SCOPE_CLUSTER_READ, snd_dashboard_map,
     "the supernode map: aggregates, or one supernode's GPUs"},
    {"GET", "/v1/dashboard/summary", SN_SCOPE_CLUSTER_READ, snd_dashboard_summary,
     "counts, queue, recent events and utilisation history"},
    {"GET", "/v1/dashboard/layout", SN_SCOPE_CLUSTER_READ, snd_dashboard_layout,
     "the cluster's pods, supernodes and servers in model order (parallel arrays)"},
    {"GET", "/v1/dashboard/gpus", SN_SCOPE_CLUSTER_READ, snd_dashboard_gpus,
     "every GPU's state, job, health score and one telemetry metric (parallel arrays)"},
    /* Operations (docs/operations.md). */
    {"POST", "/v1/admin/backup", SN_SCOPE_ADMIN, post_backup,
     "an online, consistent copy of state.db to a new file on the snd host"},
    /* Job runtime (joblog.c, docs/api.md "Job output"). */
    {"POST", "/v1/jobs/{}/log", SN_SCOPE_TELEMETRY_WRITE, snd_post_job_log,
     "agents: a chunk of a rank's output (rank, run, offset; raw body)"},
    {"GET", "/v1/jobs/{}/log", SN_SCOPE_JOBS_READ, get_job_log,
     "a rank's output, paged by byte offset"},
    {"GET", "/v1/accounting", SN_SCOPE_JOBS_READ, get_accounting,
     "job history like sacct: ended jobs, filtered by tenant, state, time, name; paged"},
    /* Partition safety (partition.c, docs/scheduler.md). */
    {"POST", "/v1/jobs/{}/checkpoints", SN_SCOPE_JOBS_WRITE, snd_post_checkpoint,
     "a running job reports a checkpoint (path, step): its resume point"},
    {"POST", "/v1/jobs/{}/progress", SN_SCOPE_JOBS_WRITE, snd_post_job_progress,
     "a running job reports progress (the second signal of partition safety)"},
    {"POST", "/v1/cluster/unfence", SN_SCOPE_ADMIN, snd_post_unfence,
     "lift the fence: silent servers are declared down"},
    /* Token keys (keys.c, docs/operations.md "Token keys"). */
    {"POST", "/v1/admin/rotate-key", SN_SCOPE_ADMIN, snd_post_rotate_key,
     "a new current token key; the previous one verifies for key_overlap_s"},
    /* Health rounds (bench_rounds.c, docs/api.md "Health rounds"). */
    {"POST", "/v1/health/rounds", SN_SCOPE_ADMIN, snd_post_health_round,
     "submit an inter-node benchmark round (runner, pairs of servers)"},
    {"GET", "/v1/health/rounds", SN_SCOPE_CLUSTER_READ, snd_get_health_rounds,
     "benchmark rounds with each pair's progress"},
    {"POST", "/v1/health/rounds/{}/result", SN_SCOPE_TELEMETRY_WRITE, snd_post_health_round_result,
     "agents: the result of a round's pair (item, status, detail)"},
    /* Health circuit breaker (breaker.c, docs/health.md "Circuit breaker"). */
    {"GET", "/v1/health/breaker", SN_SCOPE_CLUSTER_READ, snd_get_breaker,
     "the health circuit breaker: limits, open scopes, trips, rack escalations"},
    {"POST", "/v1/health/breaker/reset", SN_SCOPE_ADMIN, snd_post_breaker_reset,
     "close every open health breaker scope: automation resumes there"},
    /* Part histories and repairs (parts.c, docs/health.md "Repeat offenders"). */
    {"GET", "/v1/parts", SN_SCOPE_CLUSTER_READ, snd_get_parts,
     "part histories by GPU UUID: findings, quarantines, repairs (?state, ?gpu)"},
    {"POST", "/v1/parts/requalify", SN_SCOPE_ADMIN, snd_post_requalify,
     "a passed acceptance run (or an override) lifts a part's quarantine"},
    {"GET", "/v1/repairs", SN_SCOPE_CLUSTER_READ, snd_get_repairs,
     "the parts repairs replaced (closed records)"},
    {"POST", "/v1/repairs", SN_SCOPE_ADMIN, snd_post_repair,
     "record an RMA or replacement of a GPU: the old part's record closed, a new part"},
    {"POST", "/v1/agents/{}/actions", SN_SCOPE_TELEMETRY_WRITE, snd_post_agent_action,
     "agents: the result of a recommended action snd asked for (id, status, detail)"},
};
const size_t snd_n_routes = sizeof(snd_routes) / sizeof(snd_routes[0]);
