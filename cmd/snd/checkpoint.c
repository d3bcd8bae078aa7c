/*
 * Checkpoint-aware operation in snd:
 *
 *  - at a job's start snd computes its checkpoint interval by Daly's
 *    formula (sn_plan_daly) from the cost of one checkpoint write and the
 *    MTBF of the job's actual footprint: the GPUs, servers, leaves (of the
 *    supernodes it spans) and power domains it holds, with the same
 *    sn_plan_job_mtbf() as `sn plan` and the component MTBFs of the
 *    planner's defaults (docs/planner.md). The write cost is the job's
 *    checkpoint_write_s, or the planner's write time for its model preset
 *    on the spec's storage. The interval goes to the agents in the
 *    heartbeat's answer (checkpoint_interval_s; the agent sets
 *    SN_CHECKPOINT_INTERVAL_S);
 *  - a running job reports each checkpoint (POST /v1/jobs/{id}/checkpoints
 *    with its tenant's token; `sn checkpoint` inside the job); snd keeps
 *    the last one (path, time, step) with the job's runtime facts;
 *  - a requeued job's next run gets resume_from (the agent sets
 *    SN_RESUME_FROM) and the work lost to the interruption is counted from
 *    the last checkpoint of the run, not from its start (goodput.c, with
 *    the definition the simulator shares: sn/goodput.h).
 */
#include "http.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>
#include <sn/plan.h>

/* The cost (s) of writing one checkpoint, or 0 when unknown. */
static double write_cost(const struct snd *d, const struct snd_job *j, struct sn_plan_input *in)
{
    const json_t *c = json_object_get(j->spec, "checkpoint_write_s");
    if (json_is_integer(c) && json_integer_value(c) > 0)
        return (double)json_integer_value(c);
    const char *model = json_string_value(json_object_get(j->spec, "model"));
    const struct sn_plan_model *pm = model ? sn_plan_model_preset(model) : NULL;
    if (!pm)
        return 0;
    in->model = *pm;
    in->train.gpus = j->n_alloc;
    json_int_t g = json_integer_value(json_object_get(j->spec, "group_gpus"));
    in->train.tp = g > 0 && j->n_alloc % (uint32_t)g == 0 ? (uint32_t)g : 1;
    in->train.dp = j->n_alloc / in->train.tp;
    in->train.global_batch = in->train.dp;
    in->opt.strict = false;
    struct sn_plan_result r;
    if (sn_plan_evaluate(in, &r, NULL) != SN_OK || r.ckpt.tier_used == SN_PLAN_NO_TIER)
        return 0;
    (void)d;
    return r.ckpt.tier[r.ckpt.tier_used].write_s;
}

void snd_ckpt_on_start(const struct snd *d, struct snd_job *j)
{
    const struct sn_model *m = d->model;
    j->ckpt_interval_s = 0;
    const json_t *cw = json_object_get(j->spec, "checkpoint_write_s");
    if (!j->n_alloc || (!json_is_integer(cw) && !json_object_get(j->spec, "model")))
        return; /* no checkpoint cost: no interval */
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    uint32_t sn0 = m->gpu_supernode[j->alloc[0]];
    const struct sn_template *t = sn_model_supernode_template(m, sn0);
    if (t && sn_plan_hardware_from_spec(d->spec, t->name, NULL, &in.hw, NULL) != SN_OK)
        sn_plan_input_defaults(&in);
    double c = write_cost(d, j, &in);
    if (!(c > 0))
        return;
    /* The footprint: distinct servers, supernodes (their leaves) and power
     * domains; allocations are in rank order, so count by marking. */
    uint8_t *seen = calloc((size_t)m->n_servers + m->n_supernodes + m->n_power_domains + 1, 1);
    if (!seen)
        return;
    uint8_t *sn_seen = seen + m->n_servers, *pd_seen = sn_seen + m->n_supernodes;
    double servers = 0, leaves = 0, pds = 0;
    for (uint32_t i = 0; i < j->n_alloc; i++) {
        uint32_t s = m->gpu_server[j->alloc[i]], sn = m->server_supernode[s];
        if (!seen[s]) {
            seen[s] = 1;
            servers++;
            for (int f = 0; f < 2; f++) {
                uint32_t pd = m->server_power[f][s];
                if (pd != SN_NONE && pd < m->n_power_domains && !pd_seen[pd]) {
                    pd_seen[pd] = 1;
                    pds++;
                }
            }
        }
        if (!sn_seen[sn]) {
            sn_seen[sn] = 1;
            leaves += m->supernodes[sn].n_leaves;
        }
    }
    free(seen);
    double mtbf = sn_plan_job_mtbf(&in.hw, j->n_alloc, servers, leaves, pds);
    double tau = sn_plan_daly(c, mtbf);
    j->ckpt_interval_s = isfinite(tau) && tau > 0 ? tau : 0;
}

void snd_ckpt_assignment(const struct snd_job *j, json_t *o)
{
    if (j->ckpt_interval_s > 0)
        json_object_set_new(o, "checkpoint_interval_s",
                            json_integer((json_int_t)ceil(j->ckpt_interval_s)));
    if (j->ckpt_path && j->requeues > 0)
        json_object_set_new(o, "resume_from", json_string(j->ckpt_path));
}

void snd_ckpt_json(const struct snd_job *j, json_t *o)
{
    json_object_set_new(o, "checkpoint_interval_s",
                        j->ckpt_interval_s > 0 ? json_integer((json_int_t)ceil(j->ckpt_interval_s))
                                               : json_null());
    json_object_set_new(o, "last_checkpoint",
                        j->ckpt_path ? json_pack("{s:s,s:I,s:I,s:I}", "path", j->ckpt_path,
                                                 "time_s", (json_int_t)j->ckpt_time_s, "step",
                                                 (json_int_t)j->ckpt_step, "count",
                                                 (json_int_t)j->ckpt_count)
                                     : json_null());
}

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
    return snd_reply(d, r, 200, snd_job_json(d, snd_job_get(d, r->arg)));
}

enum MHD_Result snd_post_checkpoint(struct snd *d, struct snd_req *r)
{
    char *end = NULL;
    long long id = strtoll(r->params[0], &end, 10);
    struct snd_job *j = *end ? NULL : snd_job_get(d, id);
    if (!j || !j->durable || (!snd_is_admin(r) && strcmp(j->tenant, r->tok.subject) != 0))
        return snd_error(d, r, 404, "not_found", NULL, "no job '%s'", r->params[0]);
    struct ckpt_body b;
    memset(&b, 0, sizeof(b));
    char field[SN_API_FIELD_MAX];
    struct sn_error err = {0};
    uint32_t present = 0;
    enum sn_err rc = sn_api_decode(ckpt_fields, 2, r->len ? r->body : "{}", r->len ? r->len : 2,
                                   (size_t)d->cfg.body_max_bytes, &b, &present, field, &err);
    if (rc != SN_OK)
        return snd_error(d, r, 400, rc == SN_ERR_SYNTAX ? "malformed_json" : "invalid_field", field,
                         "%s", err.message);
    struct snd_named *t = snd_named_find(d->tenants, d->n_tenants, j->tenant);
    const char *prefix = t ? json_string_value(json_object_get(t->doc, "prefix")) : NULL;
    if (!prefix || !sn_api_path_within(b.path, prefix))
        return snd_error(d, r, 403, "path_outside_prefix", "path",
                         "path '%s' is not under the tenant's prefix '%s'", b.path,
                         prefix ? prefix : "");
    if (j->state != SND_JOB_RUNNING)
        return snd_error(d, r, 409, "invalid_transition", "state",
                         "job %lld is %s; only a running job checkpoints", (long long)j->id,
                         snd_job_state_name(j->state));
    free(j->ckpt_path);
    j->ckpt_path = strdup(b.path);
    if (!j->ckpt_path)
        return snd_error(d, r, 500, "internal", NULL, "out of memory");
    j->ckpt_time_s = snd_now_s();
    j->ckpt_step = b.step;
    j->ckpt_count++;
    char *doc = json_dumps(j->spec, JSON_COMPACT | JSON_SORT_KEYS);
    char *run = snd_job_run_text(j);
    char msg[1100], target[32];
    snprintf(msg, sizeof(msg), "checkpoint %s (step %lld)", b.path, (long long)b.step);
    snprintf(target, sizeof(target), "job/%lld", (long long)j->id);
    struct sn_store_write w[2] = {
        {.kind = SN_STORE_PUT_JOB,
         .text = {j->tenant, j->idem_key, snd_job_state_name(j->state), doc, run},
         .num = {j->id, j->submit_s, j->updated_s}},
        {.kind = SN_STORE_ADD_EVENT, .text = {"checkpoint", msg}, .num = {j->id, j->ckpt_time_s}},
    };
    r->arg = j->id;
    enum MHD_Result ret = doc && run ? snd_commit(d, r, w, 2, target, ckpt_done)
                                     : snd_error(d, r, 500, "internal", NULL, "out of memory");
    free(doc);
    free(run);
    return ret;
}
