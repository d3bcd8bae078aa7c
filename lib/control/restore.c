/*
 * The restore (docs/internals/control.md): the store's rows, read back at
 * start in the order they were written, become the control's tables
 * (tenants, pools, classes, quotas, jobs with their runtime facts,
 * allocations, admin states) before sn_control_start() rebuilds the
 * scheduler core from them and checks the invariants. A row naming a
 * server or GPU the spec no longer has is counted and skipped (the spec
 * changed under the state); a malformed row stops the restore.
 */
#include "control_int.h"

static enum sn_err load_job(struct sn_control *ctl, const struct sn_store_write *row,
                            struct sn_error *err)
{
    struct sn_control_job *job = calloc(1, sizeof(*job));
    int state = sn_control_job_state_parse(row->text[2]);
    json_t *spec = json_loads(row->text[3], 0, NULL);
    if (!job || state < 0 || !json_is_object(spec)) {
        free(job);
        json_decref(spec);
        return sn_error_set(err, SN_ERR_INVALID, "stored job %lld is malformed",
                            (long long)row->num[0]);
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
    sn__control_imex_load(job, run);
    sn__control_preflight_load(job, run);
    sn__control_preempt_load(job, run);
    const char *iso = json_string_value(json_object_get(run, "isolation"));
    job->isolation = iso ? strdup(iso) : NULL;
    job->failed_rank = -1;
    const char *la = json_string_value(json_object_get(run, "last_alloc"));
    const char *lk = json_string_value(json_object_get(run, "last_ranks_ok"));
    uint32_t *ok = NULL, n_ok = 0;
    if (la && lk &&
        sn_control_ranges_parse(la, &job->last_alloc, &job->n_last_alloc, ctl->model->n_gpus) ==
            0 &&
        sn_control_ranges_parse(lk, &ok, &n_ok, job->n_last_alloc) == 0) {
        job->last_ranks_ok = calloc((job->n_last_alloc + 63) / 64 + 1, sizeof(uint64_t));
        for (uint32_t i = 0; job->last_ranks_ok && i < n_ok; i++)
            if (ok[i] < job->n_last_alloc)
                job->last_ranks_ok[ok[i] / 64] |= 1ull << (ok[i] % 64);
        for (uint32_t i = 0; i < job->n_last_alloc; i++)
            if (job->last_alloc[i] >= ctl->model->n_gpus)
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
    enum sn_err rc = sn_control_job_insert(ctl, job, err);
    if (rc != SN_OK)
        sn_control_job_free(job);
    return rc;
}

static enum sn_err load_admin(struct sn_control *ctl, const struct sn_store_write *row,
                              struct sn_error *err)
{
    if (strcmp(row->text[0], "part") == 0) /* a part's history (offenders.c) */
        return sn__control_parts_restore(ctl, row, err);
    int s = sn_control_admin_state_parse(row->text[2]);
    const struct sn_model *m = ctl->model;
    bool node = strcmp(row->text[0], "node") == 0;
    uint32_t id = node ? sn_model_find_server(m, row->text[1]) : sn_model_find_gpu(m, row->text[1]);
    if (s < 0 || id == SN_NONE) {
        /* The spec changed under the state: keep going, say so. */
        ctl->restore_ignored++;
        snprintf(ctl->restore_ignored_what, sizeof(ctl->restore_ignored_what), "%s '%s'",
                 row->text[0], row->text[1]);
        return SN_OK;
    }
    sn_control_admin_set(node ? &ctl->nodes[id] : &ctl->gpus[id],
                         (enum sn_control_admin_state)s, row->text[3], row->text[4], row->num[0]);
    return SN_OK;
}

/* An allocation: GPUs in rank order and the ranks that have exited. */
static enum sn_err load_alloc(struct sn_control *ctl, const struct sn_store_write *row,
                              struct sn_error *err)
{
    struct sn_control_job *job = sn_control_job_get(ctl, row->num[0]);
    uint32_t *ranks = NULL, n_ranks = 0;
    const struct sn_model *m = ctl->model;
    if (!job || job->alloc ||
        sn_control_ranges_parse(row->text[0], &job->alloc, &job->n_alloc, m->n_gpus) != 0 ||
        sn_control_ranges_parse(row->text[1], &ranks, &n_ranks, job->n_alloc) != 0) {
        free(ranks);
        return sn_error_set(err, SN_ERR_INVALID, "stored allocation of job %lld is malformed",
                            (long long)row->num[0]);
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
            return sn_error_set(err, SN_ERR_INVALID, "job %lld holds GPU %u, the cluster has %u",
                                (long long)job->id, job->alloc[i], m->n_gpus);
        }
    job->start_s = row->num[1];
    if (!job->ranks_done)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    return SN_OK;
}

enum sn_err sn_control_restore_row(struct sn_control *ctl, const struct sn_store_write *row,
                                   struct sn_error *err)
{
    switch (row->kind) {
    case SN_STORE_PUT_TENANT:
    case SN_STORE_PUT_POOL:
    case SN_STORE_PUT_CLASS: {
        json_t *doc = json_loads(row->text[1], 0, NULL);
        struct sn_control_named **list = row->kind == SN_STORE_PUT_TENANT ? &ctl->tenants
                                         : row->kind == SN_STORE_PUT_POOL ? &ctl->pools
                                                                          : &ctl->classes;
        uint32_t *n = row->kind == SN_STORE_PUT_TENANT ? &ctl->n_tenants
                      : row->kind == SN_STORE_PUT_POOL ? &ctl->n_pools
                                                       : &ctl->n_classes;
        return doc ? sn_control_named_put(list, n, row->text[0], doc, err)
                   : sn_error_set(err, SN_ERR_INVALID, "stored '%s' is malformed", row->text[0]);
    }
    case SN_STORE_PUT_QUOTA:
        return sn_control_quota_put(ctl, row->text[0], row->text[1], row->num[0]) == SN_OK
                   ? SN_OK
                   : sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    case SN_STORE_PUT_JOB:
        return load_job(ctl, row, err);
    case SN_STORE_PUT_ADMIN:
        return load_admin(ctl, row, err);
    case SN_STORE_PUT_ALLOC:
        return load_alloc(ctl, row, err);
    default:
        return SN_OK;
    }
}
