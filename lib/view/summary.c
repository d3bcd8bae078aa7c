/*
 * The dashboard summary's figures (GET /v1/dashboard/summary,
 * docs/dashboard.md): jobs by state, the shared GPU and node counts
 * (sn/control.h "counts": each GPU in exactly one state, as /metrics, sn top
 * and sn pools count them), the GPUs allocated, goodput since start, and
 * the pending queue with reasons.
 */
#include <sn/view.h>

#include <math.h>
#include <string.h>

json_t *sn_view_summary_counts(const struct sn_control *c, int64_t now_s)
{
    const struct sn_model *m = c->model;
    json_t *jobs = json_object();
    for (int s = 0; s < SN_CONTROL_JOB_STATE_COUNT; s++)
        json_object_set_new(jobs, sn_control_job_state_name((enum sn_control_job_state)s),
                            json_integer((json_int_t)c->jobs_by_state[s]));
    struct sn_control_counts cc;
    sn_control_counts(c, 0, m->n_gpus, &cc);
    json_t *states = json_object(), *nodes = json_object();
    for (int k = 0; k < SN_CONTROL_GPU_CLASS_COUNT; k++)
        json_object_set_new(states, sn_control_gpu_class_name((enum sn_control_gpu_class)k),
                            json_integer(cc.by_class[k]));
    uint32_t views[SN_CONTROL_NODE_VIEW_COUNT] = {0};
    for (uint32_t i = 0; i < m->n_servers; i++)
        views[sn_control_node_view(c, i)]++;
    for (int k = 0; k < SN_CONTROL_NODE_VIEW_COUNT; k++)
        json_object_set_new(nodes, sn_control_node_view_name((enum sn_control_node_view)k),
                            json_integer(views[k]));
    struct sn_goodput gp;
    sn_control_goodput_sums(c, now_s, &gp);
    double ratio = sn_goodput_ratio(&gp);
    json_t *goodput = json_pack("{s:o,s:f,s:f,s:f,s:I,s:I}", "ratio",
                                isnan(ratio) ? json_null() : json_real(ratio), "allocated_gpu_s",
                                gp.allocated_gpu_s, "useful_gpu_s", gp.useful_gpu_s, "lost_gpu_s",
                                gp.lost_gpu_s, "runs", (json_int_t)gp.runs, "interrupted_runs",
                                (json_int_t)gp.interrupted_runs);
    return json_pack("{s:I,s:o,s:o,s:o,s:o}", "allocated", (json_int_t)cc.allocated, "jobs", jobs,
                     "gpu_states", states, "node_states", nodes, "goodput", goodput);
}

json_t *sn_view_queue(const struct sn_control *c, const char *tenant, size_t max)
{
    json_t *q = json_array();
    for (int64_t i = 0; q && i < c->n_jobs_cap && json_array_size(q) < max; i++) {
        const struct sn_control_job *j = c->jobs[i];
        if (!j || !j->durable || j->state != SN_CONTROL_JOB_PENDING)
            continue;
        if (tenant && strcmp(j->tenant, tenant) != 0)
            continue;
        json_t *full = sn_control_job_json(c, j);
        json_array_append_new(
            q, json_pack("{s:I,s:O,s:s,s:O,s:O,s:I,s:O?,s:O?}", "id", (json_int_t)j->id, "name",
                         json_object_get(full, "name"), "tenant", j->tenant, "gpus",
                         json_object_get(full, "gpus"), "pending_reason",
                         json_object_get(full, "pending_reason"), "submit_time_s",
                         (json_int_t)j->submit_s, "shape", json_object_get(full, "shape"),
                         "pending_detail", json_object_get(full, "pending_detail")));
        json_decref(full);
    }
    return q;
}
