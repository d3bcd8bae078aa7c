/*
 * A submission's record: after the admission (admit.c) passed, the
 * tenant's caps on held jobs, the job record and the two rows that make it
 * durable (the job, its "submitted" event). The job is in the tables, not
 * yet durable: the shell commits the rows, then applies SUBMIT (which
 * hands it to the scheduler core), or removes it when the commit failed.
 * The default pool is settled before the admission so that quotas,
 * listings and replays all see the same pool.
 */
#include "control_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void mark_present(uint32_t *present, const char *field)
{
    for (size_t i = 0; i < sn_api_job_field_count; i++)
        if (strcmp(sn_api_job_fields[i].name, field) == 0)
            *present |= 1u << i;
}

bool sn_control_submit_check(const struct sn_control *c, const char *tenant, struct sn_api_job *b,
                             uint32_t *present, struct sn_control_refusal *why)
{
    /* Jobs without a pool go to the spec's first pool, recorded in the job. */
    if (!b->pool[0] && c->sched_spec_pools) {
        snprintf(b->pool, sizeof(b->pool), "%s", c->spec->pools[0].name);
        mark_present(present, "pool");
    }
    if (!sn_control_admit(c, tenant, b, why))
        return false;
    if (b->xsn_bytes_per_s > 0) /* a bandwidth the planner filled in is recorded too */
        mark_present(present, "xsn_bytes_per_s");
    return true;
}

struct sn_control_job *sn_control_submit_record(struct sn_control *c, const char *tenant,
                                                const char *idem_key, const char *actor,
                                                json_t *spec, int64_t now_s,
                                                struct sn_store_write rows[2],
                                                struct sn_control_refusal *why)
{
    const struct sn_control_named *t = sn_control_named_find(c->tenants, c->n_tenants, tenant);
    *why = (struct sn_control_refusal){.code = "tenant_cap"};
    if (t && c->cfg.tenant_max_live_jobs > 0 &&
        t->jobs_live >= (uint64_t)c->cfg.tenant_max_live_jobs) {
        why->status = 429;
        why->field = "tenant_max_live_jobs";
        snprintf(why->message, sizeof(why->message),
                 "tenant '%s' has %llu live jobs, the cap tenant_max_live_jobs is %lld", tenant,
                 (unsigned long long)t->jobs_live, (long long)c->cfg.tenant_max_live_jobs);
        json_decref(spec);
        return NULL;
    }
    if (t && c->cfg.tenant_max_jobs > 0 && t->jobs_total >= (uint64_t)c->cfg.tenant_max_jobs) {
        why->status = 409;
        why->field = "tenant_max_jobs";
        snprintf(why->message, sizeof(why->message),
                 "tenant '%s' holds %llu jobs, the cap tenant_max_jobs is %lld", tenant,
                 (unsigned long long)t->jobs_total, (long long)c->cfg.tenant_max_jobs);
        json_decref(spec);
        return NULL;
    }
    struct sn_control_job *job = calloc(1, sizeof(*job));
    char *doc = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    *why = (struct sn_control_refusal){.status = 500, .code = "internal"};
    if (!job || !doc || (idem_key && !(job->idem_key = strdup(idem_key)))) {
        snprintf(why->message, sizeof(why->message), "out of memory");
        free(doc);
        sn_control_job_free(job);
        json_decref(spec);
        return NULL;
    }
    job->id = c->next_job_id;
    snprintf(job->tenant, sizeof(job->tenant), "%s", tenant);
    job->spec = spec;
    job->state = SN_CONTROL_JOB_PENDING;
    job->sched_id = SN_NONE;
    job->submit_s = job->updated_s = now_s;
    struct sn_error err = {0};
    if (sn_control_job_insert(c, job, &err) != SN_OK) {
        *why = (struct sn_control_refusal){.status = 507, .code = "limit"};
        snprintf(why->message, sizeof(why->message), "%.380s", err.message);
        free(doc);
        sn_control_job_free(job);
        return NULL;
    }
    rows[0] = (struct sn_store_write){.kind = SN_STORE_PUT_JOB,
                                      .text = {job->tenant, job->idem_key, "pending", doc},
                                      .num = {job->id, job->submit_s, job->updated_s}};
    rows[1] = (struct sn_store_write){
        .kind = SN_STORE_ADD_EVENT, .text = {"submitted", actor}, .num = {job->id, job->submit_s}};
    return job;
}
