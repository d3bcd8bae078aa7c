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
#include "control_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/api.h>
#include <sn/plan.h>

/* The cost (s) of writing one checkpoint, or 0 when unknown. */
static double write_cost(const struct sn_control *d, const struct sn_control_job *j,
                         struct sn_plan_input *in)
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

void sn_control_ckpt_on_start(const struct sn_control *d, struct sn_control_job *j)
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

void sn_control_ckpt_assignment(const struct sn_control_job *j, json_t *o)
{
    if (j->ckpt_interval_s > 0)
        json_object_set_new(o, "checkpoint_interval_s",
                            json_integer((json_int_t)ceil(j->ckpt_interval_s)));
    if (j->ckpt_path && j->requeues > 0)
        json_object_set_new(o, "resume_from", json_string(j->ckpt_path));
}

void sn_control_ckpt_json(const struct sn_control_job *j, json_t *o)
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
