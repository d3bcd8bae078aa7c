/*
 * Admission: the checks a submission passes before it becomes a job (its
 * tenant, pool, priority class, size against the pool and the quota, its
 * dependencies, array, shape, per-job limits and paths). A refusal says
 * what the API answers: the HTTP status, the error code and the field.
 */
#include "control_int.h"

bool sn_control_refuse(struct sn_control_refusal *why, int status, const char *code,
                       const char *field, const char *fmt, ...)
{
    why->status = status;
    why->code = code;
    why->field = field;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->message, sizeof(why->message), fmt, ap);
    va_end(ap);
    return false;
}

static const char *prefix_of(const struct sn_control *d, const char *tenant)
{
    struct sn_control_named *t = sn_control_named_find(d->tenants, d->n_tenants, tenant);
    return t ? json_string_value(json_object_get(t->doc, "prefix")) : NULL;
}

bool sn_control_pool_exists(const struct sn_control *d, const char *name)
{
    for (uint32_t i = 0; i < d->spec->n_pools; i++)
        if (strcmp(d->spec->pools[i].name, name) == 0)
            return true;
    return sn_control_named_find(d->pools, d->n_pools, name) != NULL;
}

bool sn_control_admit(const struct sn_control *d, const char *tenant, struct sn_api_job *b,
                      struct sn_control_refusal *why)
{
    const char *prefix = prefix_of(d, tenant);
    if (!prefix) {
        sn_control_refuse(why, 422, "unknown_reference", "tenant", "no tenant '%s'", tenant);
        return false;
    }
    if (b->pool[0] && !sn_control_pool_exists(d, b->pool)) {
        sn_control_refuse(why, 422, "unknown_reference", "pool", "no pool '%s'", b->pool);
        return false;
    }
    uint32_t pool_gpus = d->model->n_gpus;
    if (d->sched_spec_pools) {
        uint32_t p = sn_control_spec_pool(d, b->pool);
        if (p == SN_NONE) {
            sn_control_refuse(why, 422, "unsatisfiable", "pool",
                   "pool '%s' holds no supernodes (jobs run in the spec's pools)", b->pool);
            return false;
        }
        pool_gpus = 0;
        for (uint32_t i = 0; i < d->model->n_supernodes; i++)
            if (d->model->supernodes[i].pool == p)
                pool_gpus += d->model->supernodes[i].n_gpus;
    }
    if (b->priority_class[0] &&
        !sn_control_named_find(d->classes, d->n_classes, b->priority_class)) {
        sn_control_refuse(why, 422, "unknown_reference", "priority_class", "no priority class '%s'",
               b->priority_class);
        return false;
    }
    if (b->gpus > (int64_t)pool_gpus) {
        sn_control_refuse(why, 422, "unsatisfiable", "gpus", "%lld GPUs asked, %s has %u", (long long)b->gpus,
               b->pool[0] ? "the pool" : "the cluster", pool_gpus);
        return false;
    }
    const struct sn_control_quota *q =
        b->pool[0] ? sn_control_quota_find(d, tenant, b->pool) : NULL;
    if (q && b->gpus > q->gpus) {
        sn_control_refuse(why, 422, "over_quota", "gpus",
               "%lld GPUs asked, tenant '%s' has a quota of %lld in pool '%s'", (long long)b->gpus,
               tenant, (long long)q->gpus, b->pool);
        return false;
    }
    if (b->after_ok[0]) {
        uint32_t *ids = NULL, n = 0;
        bool ok = sn_control_ranges_parse(b->after_ok, &ids, &n, SN_CONTROL_DEPS_MAX) == 0 && n > 0;
        int64_t badid = 0;
        for (uint32_t i = 0; ok && i < n; i++) {
            const struct sn_control_job *dep = sn_control_job_get(d, ids[i]);
            ok = dep && dep->durable && strcmp(dep->tenant, tenant) == 0;
            badid = ids[i];
        }
        free(ids);
        if (!ok) {
            (void)(badid ? sn_control_refuse(why, 422, "unknown_reference", "after_ok",
                                  "after_ok: no job %lld of tenant '%s'", (long long)badid, tenant)
                         : sn_control_refuse(why, 400, "invalid_field", "after_ok",
                                  "after_ok '%.64s': expected job ids (\"3,5-7\"), at most %d",
                                  b->after_ok, SN_CONTROL_DEPS_MAX));
            return false;
        }
    }
    const char *shape_field = NULL;
    char shape_msg[300];
    if (!sn_control_array_check(d, tenant, b, &shape_field, shape_msg, sizeof(shape_msg))) {
        sn_control_refuse(why, 422, "invalid_array", shape_field, "%s", shape_msg);
        return false;
    }
    if (!sn_control_shape_check(d, b, &shape_field, shape_msg, sizeof(shape_msg))) {
        sn_control_refuse(why, 422, "invalid_shape", shape_field, "%s", shape_msg);
        return false;
    }
    if (!sn_control_quota_check_job(d, tenant, b, &shape_field, shape_msg, sizeof(shape_msg))) {
        sn_control_refuse(why, 422, "over_quota", shape_field, "%s", shape_msg);
        return false;
    }
    if (b->preflight[0] && strcmp(b->preflight, "quick") != 0 &&
        strcmp(b->preflight, "full") != 0 && strcmp(b->preflight, "off") != 0) {
        sn_control_refuse(why, 400, "invalid_field", "preflight",
                          "field 'preflight': '%s' is not quick, full or off", b->preflight);
        return false;
    }
    const char *paths[2] = {b->data_path, b->checkpoint_path};
    const char *names[2] = {"data_path", "checkpoint_path"};
    for (int i = 0; i < 2; i++)
        if (paths[i][0] && !sn_api_path_within(paths[i], prefix)) {
            sn_control_refuse(why, 403, "path_outside_prefix", names[i],
                   "%s '%s' is not under the tenant's prefix '%s'", names[i], paths[i], prefix);
            return false;
        }
    return true;
}

json_t *sn_control_job_spec_json(const struct sn_api_job *b, uint32_t present)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < sn_api_job_field_count; i++) {
        const struct sn_api_field *f = &sn_api_job_fields[i];
        if (!(present & (1u << i)) || strcmp(f->name, "tenant") == 0)
            continue;
        const char *p = (const char *)b + f->offset;
        if (f->type == SN_API_INT) {
            int64_t v;
            memcpy(&v, p, sizeof(v));
            json_object_set_new(o, f->name, json_integer(v));
        } else if (f->type == SN_API_BOOL) {
            bool v;
            memcpy(&v, p, sizeof(v));
            json_object_set_new(o, f->name, json_boolean(v));
        } else {
            json_object_set_new(o, f->name, json_string(p));
        }
    }
    return o;
}
