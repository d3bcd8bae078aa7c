/*
 * Routes of snd that act on the control plane's jobs and tenants beyond
 * submit and cancel (routes.c): a job's progress reports (the second
 * signal of partition safety), the fence's lifting, tenant limits and
 * checkpoint reports. Each decodes its request, asks lib/control, and
 * commits the rows before it answers.
 */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>

/* ---- progress and the fence ------------------------------------------- */

struct progress_body {
    int64_t step;
};
static const struct sn_api_field progress_fields[] = {
    {"step", SN_API_INT, false, 0, INT64_MAX, offsetof(struct progress_body, step)},
};

/* POST /v1/jobs/{id}/progress: the job itself says it is making progress
 * (optional body {"step": N}). A tenant token sees only its own jobs. */
enum MHD_Result snd_post_job_progress(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    struct sn_control_job *j = *end ? NULL : sn_control_job_get(d->ctl, id);
    if (!j || !j->durable || (!snd_is_admin(r) && strcmp(j->tenant, r->tok.subject) != 0))
        return snd_error(d, r, 404, "not_found", NULL, "no job '%s'", r->params[0]);
    struct progress_body b = {0};
    struct sn_error err = {0};
    enum MHD_Result ret;
    if (!snd_decode(d, r, progress_fields, 1, &b, NULL, &ret))
        return ret;
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_PROGRESS, .job = j->id};
    struct sn_effects fx;
    sn_effects_init(&fx);
    enum sn_err rc = snd_apply(d, &ev, 0, &fx, &err);
    sn_effects_free(&fx);
    if (rc != SN_OK)
        return snd_error(d, r, 409, "invalid_transition", "state", "%s", err.message);
    return snd_reply(d, r, 200,
                     json_pack("{s:I,s:I,s:I}", "id", (json_int_t)j->id, "reports",
                               (json_int_t)j->progress_reports, "time_s", (json_int_t)snd_now_s()));
}

/* POST /v1/cluster/unfence: an operator lifts the fence. */
enum MHD_Result snd_post_unfence(struct snd *d, struct snd_req *r)
{
    bool was = d->ctl->fenced;
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_UNFENCE, .actor = r->actor};
    snd_apply_queued(d, &ev);
    uint32_t n = d->ctl->last_unfenced;
    snd_audit(d, r, 200, "cluster", was ? "fence lifted" : "not fenced");
    json_t *o = sn_control_partition_json(d->ctl);
    json_object_set_new(o, "was_fenced", json_boolean(was));
    json_object_set_new(o, "declared_down", json_integer(n));
    return snd_reply(d, r, 200, o);
}

/* ---- tenant limits ---------------------------------------------------- */

struct limits_body {
    int64_t gpus_per_supernode;
    int64_t max_job_gpus;
    int64_t max_walltime_s;
    int64_t max_xsn_bytes_per_s;
};
#define L(f) offsetof(struct limits_body, f)
static const struct sn_api_field limit_fields[] = {
    {"gpus_per_supernode", SN_API_INT, false, 0, 1 << 22, L(gpus_per_supernode)},
    {"max_job_gpus", SN_API_INT, false, 0, 1 << 22, L(max_job_gpus)},
    {"max_walltime_s", SN_API_INT, false, 0, 366LL * 86400, L(max_walltime_s)},
    {"max_xsn_bytes_per_s", SN_API_INT, false, 0, 1000000000000LL, L(max_xsn_bytes_per_s)},
};
#define N_LIMITS (sizeof(limit_fields) / sizeof(limit_fields[0]))

static enum MHD_Result limits_done(struct snd *d, struct snd_req *r)
{
    if (r->store_rc != SN_OK) {
        atomic_store(&d->fatal, true);
        return snd_error(d, r, 503, "store_failed", NULL, "the state could not be written");
    }
    json_t *body = r->reply;
    r->reply = NULL;
    return snd_reply(d, r, 200, body);
}

/* PUT /v1/tenants/{t}/limits: replaces the tenant's limits (absent or 0 =
 * unlimited) and rebuilds the core; 409 when running or waiting jobs would
 * break them (nothing changes then). */
enum MHD_Result snd_put_tenant_limits(struct snd *d, struct snd_req *r)
{
    struct sn_control_named *t =
        sn_control_named_find(d->ctl->tenants, d->ctl->n_tenants, r->params[0]);
    if (!t)
        return snd_error(d, r, 404, "not_found", NULL, "no tenant '%s'", r->params[0]);
    struct limits_body b = {0};
    struct sn_error err = {0};
    enum MHD_Result ret;
    if (!snd_decode(d, r, limit_fields, N_LIMITS, &b, NULL, &ret))
        return ret;
    json_t *limits = json_pack(
        "{s:I,s:I,s:I,s:I}", "gpus_per_supernode", (json_int_t)b.gpus_per_supernode, "max_job_gpus",
        (json_int_t)b.max_job_gpus, "max_walltime_s", (json_int_t)b.max_walltime_s,
        "max_xsn_bytes_per_s", (json_int_t)b.max_xsn_bytes_per_s);
    json_t *old = json_incref(json_object_get(t->doc, "limits"));
    json_object_set_new(t->doc, "limits", limits);
    if (snd_rebuild(d, &err) != SN_OK) {
        if (old)
            json_object_set(t->doc, "limits", old);
        else
            json_object_del(t->doc, "limits");
        json_decref(old);
        struct sn_error err2 = {0};
        if (snd_rebuild(d, &err2) != SN_OK)
            atomic_store(&d->fatal, true);
        return snd_error(d, r, 409, "quota_below_usage", NULL,
                         "the limits would break running or waiting jobs: %s", err.message);
    }
    json_decref(old);
    char *text = json_dumps(t->doc, JSON_COMPACT | JSON_SORT_KEYS);
    if (!text)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    struct sn_store_write w = {.kind = SN_STORE_PUT_TENANT, .text = {t->name, text}};
    r->reply = json_deep_copy(limits);
    json_object_set_new(r->reply, "tenant", json_string(t->name));
    ret = snd_commit(d, r, &w, 1, t->name, limits_done);
    free(text);
    return ret;
}

/* ---- checkpoint reports ----------------------------------------------- */

struct ckpt_body {
    char path[1025];
    int64_t step;
};
static const struct sn_api_field ckpt_fields[] = {
    {"path", SN_API_STRING, true, 1, 1024, offsetof(struct ckpt_body, path)},
    {"step", SN_API_INT, false, 0, INT64_MAX, offsetof(struct ckpt_body, step)},
};

static enum MHD_Result ckpt_done(struct snd *d, struct snd_req *r)
{
    if (r->store_rc != SN_OK) {
        atomic_store(&d->fatal, true);
        return snd_error(d, r, 503, "store_failed", NULL, "the state could not be written");
    }
    return snd_reply(d, r, 200, sn_control_job_json(d->ctl, sn_control_job_get(d->ctl, r->arg)));
}

enum MHD_Result snd_post_checkpoint(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    struct sn_control_job *j = *end ? NULL : sn_control_job_get(d->ctl, id);
    if (!j || !j->durable || (!snd_is_admin(r) && strcmp(j->tenant, r->tok.subject) != 0))
        return snd_error(d, r, 404, "not_found", NULL, "no job '%s'", r->params[0]);
    struct ckpt_body b;
    memset(&b, 0, sizeof(b));
    enum MHD_Result ret;
    if (!snd_decode(d, r, ckpt_fields, 2, &b, NULL, &ret))
        return ret;
    struct sn_control_named *t =
        sn_control_named_find(d->ctl->tenants, d->ctl->n_tenants, j->tenant);
    const char *prefix = t ? json_string_value(json_object_get(t->doc, "prefix")) : NULL;
    if (!prefix || !sn_api_path_within(b.path, prefix))
        return snd_error(d, r, 403, "path_outside_prefix", "path",
                         "path '%s' is not under the tenant's prefix '%s'", b.path,
                         prefix ? prefix : "");
    struct sn_control_event ev = {
        .kind = SN_CONTROL_EVENT_CHECKPOINT, .job = j->id, .text = b.path, .step = b.step};
    char target[32];
    snprintf(target, sizeof(target), "job/%lld", (long long)j->id);
    r->arg = j->id;
    return snd_commit_event(d, r, &ev, target, ckpt_done);
}
