/*
 * Quotas in snd beyond the per-pool GPU quota: a tenant's limits (GPUs per
 * mixed supernode, and per-job caps on GPUs, walltime and cross-supernode
 * bandwidth per GPU), the admin route that sets them without a restart,
 * their check at submission, and the pending detail that names the limit
 * holding a job ("quota: tenant acme per-supernode 16 of 16 GPUs on sn00").
 *
 * The limits live in the tenant's document ({"prefix", "limits": {...}}, the
 * tenants row of the store), so no new table is needed; the core's tenants
 * are (tenant, pool) pairs (sched.h) and each pair of a tenant gets its
 * limits. The third level of the core, tenants per mixed supernode, is the
 * config key max_tenants_per_supernode.
 */
#include "control_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>

static int64_t limit_of(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(json_object_get(doc, "limits"), key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static uint32_t tenant_of(const struct sn_control *d, const char *name)
{
    for (uint32_t i = 0; i < d->n_tenants; i++)
        if (strcmp(d->tenants[i].name, name) == 0)
            return i;
    return SN_NONE;
}

void sn_control_quota_apply(const struct sn_control *d, struct sn_sched_tenant *tenants, uint32_t n)
{
    uint32_t pools = d->sched_pools ? d->sched_pools : 1;
    for (uint32_t t = 0; t < d->n_tenants && (uint64_t)(t + 1) * pools <= n; t++) {
        const json_t *doc = d->tenants[t].doc;
        for (uint32_t p = 0; p < pools; p++) {
            struct sn_sched_tenant *x = &tenants[t * pools + p];
            x->quota_gpus_per_supernode = (uint32_t)limit_of(doc, "gpus_per_supernode");
            x->max_job_gpus = (uint32_t)limit_of(doc, "max_job_gpus");
            x->max_walltime_s = (double)limit_of(doc, "max_walltime_s");
            x->max_xsn_bytes_per_s = (double)limit_of(doc, "max_xsn_bytes_per_s");
        }
    }
}

bool sn_control_quota_check_job(const struct sn_control *d, const char *tenant,
                                const struct sn_api_job *b, const char **field, char *msg,
                                size_t len)
{
    uint32_t t = tenant_of(d, tenant);
    if (t == SN_NONE)
        return true;
    const json_t *doc = d->tenants[t].doc;
    int64_t cap = limit_of(doc, "max_job_gpus");
    if (cap > 0 && b->gpus > cap) {
        snprintf(msg, len, "quota: %lld GPUs asked, tenant '%s' has a per-job cap of %lld",
                 (long long)b->gpus, tenant, (long long)cap);
        *field = "gpus";
        return false;
    }
    cap = limit_of(doc, "max_walltime_s");
    int64_t wall = b->time_limit_s > 0 ? b->time_limit_s : d->cfg.default_walltime_s;
    if (cap > 0 && wall > cap) {
        snprintf(msg, len,
                 "quota: walltime %lld s%s, tenant '%s' has a per-job cap of %lld s (give a "
                 "shorter time_limit_s)",
                 (long long)wall, b->time_limit_s > 0 ? "" : " (default_walltime_s)", tenant,
                 (long long)cap);
        *field = "time_limit_s";
        return false;
    }
    cap = limit_of(doc, "max_xsn_bytes_per_s");
    if (cap > 0 && b->xsn_bytes_per_s > cap) {
        snprintf(msg, len,
                 "quota: %lld bytes/s per GPU across supernodes asked, tenant '%s' has a per-job "
                 "cap of %lld",
                 (long long)b->xsn_bytes_per_s, tenant, (long long)cap);
        *field = "xsn_bytes_per_s";
        return false;
    }
    return true;
}

void sn_control_quota_pending_detail(const struct sn_control *d, const struct sn_control_job *j,
                                     const char *reason, char *out, size_t len)
{
    out[0] = '\0';
    if (j->sched_id == SN_NONE || !d->sched)
        return;
    uint32_t t = tenant_of(d, j->tenant);
    uint32_t pools = d->sched_pools ? d->sched_pools : 1;
    const char *pool = json_string_value(json_object_get(j->spec, "pool"));
    uint32_t p = d->sched_spec_pools ? sn_control_spec_pool(d, pool) : 0;
    if (t == SN_NONE || p == SN_NONE)
        return;
    uint32_t pair = t * pools + p;
    if (strcmp(reason, "quota") == 0) {
        const struct sn_control_quota *q = pool ? sn_control_quota_find(d, j->tenant, pool) : NULL;
        snprintf(out, len, "quota: tenant %s in pool %s holds %u of %lld GPUs", j->tenant,
                 pool ? pool : "-", sn_sched_tenant_gpus(d->sched, pair, SN_NONE),
                 q ? (long long)q->gpus : 0LL);
        return;
    }
    if (strcmp(reason, "quota-supernode") != 0)
        return;
    int64_t per_sn = limit_of(d->tenants[t].doc, "gpus_per_supernode");
    for (uint32_t sn = 0; per_sn > 0 && sn < d->model->n_supernodes; sn++) {
        if (d->sched_spec_pools && d->model->supernodes[sn].pool != p)
            continue;
        uint32_t used = sn_sched_tenant_gpus(d->sched, pair, sn);
        if (used < per_sn)
            continue;
        char name[64];
        snprintf(out, len, "quota: tenant %s per-supernode %u of %lld GPUs on %s", j->tenant, used,
                 (long long)per_sn, sn_model_supernode_name(d->model, sn, name, sizeof(name)));
        return;
    }
    snprintf(out, len,
             "quota: no supernode of pool %s has room within tenant %s's per-supernode quota "
             "(%lld GPUs) and the cap of %lld tenants per mixed supernode",
             pool ? pool : "-", j->tenant, (long long)per_sn,
             (long long)d->cfg.max_tenants_per_supernode);
}
