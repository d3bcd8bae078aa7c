/*
 * Evaluation of a checked plan input: memory per GPU on the first
 * pipeline stage, FLOPs and compute time, communication per dimension and
 * fabric, the spec's required bandwidth, step time and MFU, placement
 * advice and the checkpoint plan. docs/planner.md derives each step.
 *
 * Placement follows Megatron's rank order (TP innermost, then CP, DP with
 * EP carved out of it, PP outermost): a group of n ranks whose members are
 * `inner` ranks apart stays inside one scale-up domain of U GPUs exactly
 * when inner x n divides U; otherwise its collective runs at the
 * scale-out bus bandwidth (the slowest link of the ring).
 */
#include <sn/plan.h>

#include <math.h>
#include <string.h>

#include "plan_int.h"

static double elem_bytes(const struct sn_plan_train *t)
{
    return t->precision == SN_PRECISION_FP32 ? 4 : 2;
}

/* Optimizer state bytes per parameter (Rajbhandari et al. 2020, Section
 * 3.1: K = 12 for mixed-precision Adam, the fp32 master copy, momentum and
 * variance). Without mixed precision the weights are the master copy. */
static double optimizer_k(const struct sn_plan_train *t)
{
    double moments = t->optimizer == SN_OPTIMIZER_ADAM ? 8 : 4;
    return t->precision == SN_PRECISION_FP32 ? moments : moments + 4;
}

static uint32_t stage_layers(const struct sn_plan_input *in)
{
    return (in->model.layers + in->train.pp - 1) / in->train.pp;
}

static uint64_t microbatches(const struct sn_plan_train *t)
{
    return t->global_batch / ((uint64_t)t->micro_batch * t->dp);
}

/* Parameters held by one GPU of the first stage, split into those
 * reduced over the whole dp x cp group (dense) and the expert ones. */
static void stage_params(const struct sn_plan_input *in, double *dense, double *expert)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    double tp = t->tp, layers = stage_layers(in), vh = (double)m->vocab * m->hidden;
    double embed = vh / tp + (m->learned_pos ? (double)m->seq * m->hidden : 0);
    if (t->pp == 1)
        embed += (m->tied_embeddings ? 0 : vh / tp) + sn__plan_norm(m);
    *dense = layers * sn__plan_layer_attn(m) / tp + embed;
    if (m->experts > 1) {
        *expert = layers * sn__plan_mlp(m) * m->experts / ((double)t->ep * tp);
    } else {
        *dense += layers * sn__plan_mlp(m) / tp;
        *expert = 0;
    }
}

/* Weights, gradients and optimizer states of psi parameters sharded
 * over nd ranks by ZeRO stage (Rajbhandari et al. 2020, Section 5). */
static void model_states(const struct sn_plan_train *t, double psi, double nd,
                         struct sn_plan_memory *mem)
{
    double wb = elem_bytes(t), k = optimizer_k(t);
    mem->weights_bytes += t->zero >= 3 ? wb * psi / nd : wb * psi;
    mem->grads_bytes += t->zero >= 2 ? wb * psi / nd : wb * psi;
    mem->optimizer_bytes += t->zero >= 1 ? k * psi / nd : k * psi;
}

static void eval_memory(const struct sn_plan_input *in, struct sn_plan_memory *mem)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    double dense, expert;
    stage_params(in, &dense, &expert);
    mem->params_total = sn_plan_params(m);
    mem->params_active = sn_plan_params_active(m);
    mem->params_per_gpu = dense + expert;
    double nd = (double)t->dp * t->cp;
    model_states(t, dense, nd, mem);
    if (expert > 0)
        model_states(t, expert, nd / t->ep, mem);

    bool sp = t->seq_parallel && t->tp > 1;
    double scale = elem_bytes(t) / 2; /* the formulas assume 16-bit activations */
    mem->stage_layers = stage_layers(in);
    uint64_t mb = microbatches(t);
    mem->inflight = mb < t->pp ? (uint32_t)mb : t->pp;
    mem->act_per_layer_bytes =
        scale * sn_plan_act_per_layer(m, t->micro_batch, t->tp, t->cp, sp, t->recompute);
    double interleave = t->vpp > 1 ? 1 + (t->pp - 1.0) / ((double)t->pp * t->vpp) : 1;
    double act = mem->act_per_layer_bytes * mem->stage_layers * mem->inflight * interleave;
    if (m->dropout) /* the input embedding's dropout mask, s b h p / t */
        act +=
            (double)m->seq / t->cp * t->micro_batch * m->hidden / (sp ? t->tp : 1) * mem->inflight;
    if (t->recompute == SN_RECOMPUTE_FULL) /* the layer being recomputed */
        act +=
            scale * sn_plan_act_per_layer(m, t->micro_batch, t->tp, t->cp, sp, SN_RECOMPUTE_NONE);
    mem->activations_bytes = act;
    mem->total_bytes = mem->weights_bytes + mem->grads_bytes + mem->optimizer_bytes + act;
    mem->hbm_bytes = in->hw.hbm_bytes;
    mem->free_bytes = in->hw.hbm_bytes - in->hw.hbm_reserve_bytes - mem->total_bytes;
    mem->fits = mem->free_bytes >= 0;
}

static void eval_compute(const struct sn_plan_input *in, const struct sn_plan_memory *mem,
                         struct sn_plan_compute *c)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    c->microbatches = microbatches(t);
    c->tokens_per_step = (double)t->global_batch * m->seq;
    double lin = sn__plan_layer_linear_flops(m), core = sn__plan_layer_core_flops(m);
    double tok = c->tokens_per_step, layers = m->layers;
    c->model_flops_6n = 6 * mem->params_active * tok;
    c->model_flops = 3 * tok * (layers * (lin + core) + sn__plan_logit_flops(m));
    double extra = 0;
    if (t->recompute == SN_RECOMPUTE_FULL)
        extra = tok * layers * (lin + core);
    else if (t->recompute == SN_RECOMPUTE_SELECTIVE)
        extra = tok * layers * core;
    c->hardware_flops = c->model_flops + extra;
    /* the stage with ceil(L/p) layers sets the pace */
    double imbalance = (double)mem->stage_layers * t->pp / m->layers;
    c->compute_s = c->hardware_flops /
                   ((double)t->gpus * in->hw.peak_flops * in->hw.compute_efficiency) * imbalance;
    c->bubble_fraction = (t->pp - 1.0) / ((double)t->vpp * c->microbatches);
    c->bubble_s = c->compute_s * c->bubble_fraction;
}

static bool crosses(uint64_t inner, uint64_t n, uint32_t domain)
{
    return n > 1 && domain % (inner * n) != 0;
}

static void set_dim(const struct sn_plan_input *in, struct sn_plan_comm_dim *d, uint32_t group,
                    bool out, double bytes)
{
    const struct sn_plan_hardware *hw = &in->hw;
    d->group = group;
    d->scaleout = out;
    d->bytes = group > 1 ? bytes : 0;
    double busbw = out ? hw->scaleout_bytes_per_s * hw->scaleout_efficiency
                       : hw->scaleup_bytes_per_s * hw->scaleup_efficiency;
    d->time_s = d->bytes > 0 ? d->bytes / busbw : 0;
}

/* Per GPU per step. Bytes already include the ring factors 2(n-1)/n or
 * (n-1)/n, so time is bytes over the bus bandwidth. */
static void eval_comm(const struct sn_plan_input *in, const struct sn_plan_memory *mem, bool tp_out,
                      struct sn_plan_comm *c)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    uint32_t u = in->hw.scaleup_gpus;
    double e = elem_bytes(t), tp = t->tp, cp = t->cp;
    double count = (double)microbatches(t) * mem->stage_layers;
    bool full = t->recompute == SN_RECOMPUTE_FULL;
    double act = t->micro_batch * (m->seq / cp) * m->hidden * e; /* b s h, one micro-batch */
    memset(c, 0, sizeof(*c));

    /* TP: 4 all-reduces per layer per micro-batch (6 with full recompute);
     * with SP the same volume as all-gathers and reduce-scatters. */
    double tp_bytes = count * (full ? 6 : 4) * 2 * (tp - 1) / tp * act;
    set_dim(in, &c->dim[SN_PLAN_DIM_TP], t->tp, tp_out || crosses(1, t->tp, u), tp_bytes);
    /* CP: all-gather K and V forward, reduce-scatter dK dV backward. */
    double kv =
        2 * t->micro_batch * (m->seq / cp) * (double)m->kv_heads * (m->hidden / m->heads) / tp * e;
    set_dim(in, &c->dim[SN_PLAN_DIM_CP], t->cp, crosses(t->tp, t->cp, u),
            count * (full ? 3 : 2) * (cp - 1) * kv);
    /* EP: dispatch and combine all-to-alls, forward and backward. */
    bool moe = m->experts > 1 && t->ep > 1;
    double tokens = t->micro_batch * (m->seq / cp) / (t->seq_parallel ? tp : 1);
    double a2a = tokens * m->top_k * m->hidden * e * (t->ep - 1.0) / t->ep;
    set_dim(in, &c->dim[SN_PLAN_DIM_EP], moe ? t->ep : 1,
            crosses((uint64_t)t->tp * t->cp, t->ep, u), count * (full ? 6 : 4) * a2a);
    /* DP: gradient all-reduce, or reduce-scatter + all-gather (ZeRO 1-2):
     * the same 2(n-1)/n volume; ZeRO-3 adds a parameter all-gather (1.5x). */
    double dense, expert, nd = (double)t->dp * t->cp, ne = nd / t->ep;
    stage_params(in, &dense, &expert);
    double factor = t->zero == 3 ? 3 : 2;
    double dp_bytes =
        factor * (nd - 1) / nd * dense * e + (ne > 1 ? factor * (ne - 1) / ne * expert * e : 0);
    set_dim(in, &c->dim[SN_PLAN_DIM_DP], (uint32_t)nd, crosses(t->tp, (uint64_t)nd, u), dp_bytes);
    /* PP: activations forward and gradients backward per micro-batch and
     * chunk boundary, scattered over TP (Narayanan et al. 2021, 4.1). */
    set_dim(in, &c->dim[SN_PLAN_DIM_PP], t->pp, crosses((uint64_t)t->tp * t->cp * t->dp, t->pp, u),
            2.0 * microbatches(t) * t->vpp * act / tp);

    for (int i = 0; i < SN_PLAN_DIM_COUNT; i++) {
        struct sn_plan_comm_dim *d = &c->dim[i];
        bool hidden = i == SN_PLAN_DIM_DP || i == SN_PLAN_DIM_CP;
        d->exposed_s = d->time_s * (hidden ? 1 - in->hw.overlap : 1);
        if (d->scaleout)
            c->scaleout_bytes += d->bytes;
        else
            c->scaleup_bytes += d->bytes;
        c->time_s += d->time_s;
        c->exposed_s += d->exposed_s;
    }
}

static void eval_bandwidth(const struct sn_plan_input *in, const struct sn_plan_result *r,
                           struct sn_plan_bandwidth *b)
{
    const struct sn_plan_options *o = &in->opt;
    b->target_step_s = o->target_step_s > 0 ? o->target_step_s : r->perf.step_s;
    b->comm_fraction = o->comm_fraction;
    b->headroom = o->bw_headroom;
    b->scaleup_need_bytes_per_s =
        sn_plan_required_bw(r->comm.scaleup_bytes, b->target_step_s, b->comm_fraction);
    b->scaleout_need_bytes_per_s =
        sn_plan_required_bw(r->comm.scaleout_bytes, b->target_step_s, b->comm_fraction);
    b->scaleup_provision_bytes_per_s = b->scaleup_need_bytes_per_s * (1 + b->headroom);
    b->scaleout_provision_bytes_per_s = b->scaleout_need_bytes_per_s * (1 + b->headroom);
    b->scaleup_ok = b->scaleup_provision_bytes_per_s <= in->hw.scaleup_bytes_per_s;
    b->scaleout_ok = b->scaleout_provision_bytes_per_s <= in->hw.scaleout_bytes_per_s;
}

static void eval_perf(const struct sn_plan_input *in, struct sn_plan_result *r)
{
    struct sn_plan_perf *p = &r->perf;
    double peak = (double)in->train.gpus * in->hw.peak_flops;
    p->step_s = r->compute.compute_s + r->compute.bubble_s + r->comm.exposed_s;
    p->tokens_per_s = r->compute.tokens_per_step / p->step_s;
    p->mfu = r->compute.model_flops_6n / (p->step_s * peak);
    p->hfu = r->compute.hardware_flops / (p->step_s * peak);
    p->train_s = in->train.train_tokens > 0 ? in->train.train_tokens / p->tokens_per_s : 0;
}

static void eval_placement(const struct sn_plan_input *in, struct sn_plan_result *r)
{
    const struct sn_plan_train *t = &in->train;
    struct sn_plan_placement *pl = &r->placement;
    pl->domain_for_tp = t->tp;
    pl->domain_for_tp_cp = t->tp * t->cp;
    pl->domain_for_stage = t->tp * t->cp * t->dp;
    pl->tp_inside = !crosses(1, t->tp, in->hw.scaleup_gpus);
    struct sn_plan_comm out;
    eval_comm(in, &r->memory, true, &out);
    pl->tp_scaleout_step_s = r->compute.compute_s + r->compute.bubble_s + out.exposed_s;
    pl->tp_scaleout_slowdown = pl->tp_scaleout_step_s / r->perf.step_s;
}

void sn__plan_eval_step(const struct sn_plan_input *in, struct sn_plan_result *out)
{
    memset(out, 0, sizeof(*out));
    eval_memory(in, &out->memory);
    eval_compute(in, &out->memory, &out->compute);
    eval_comm(in, &out->memory, false, &out->comm);
    eval_perf(in, out);
    eval_bandwidth(in, out, &out->bandwidth);
    eval_placement(in, out);
}

/* ---- checkpoint ------------------------------------------------------- */

static void eval_footprint(const struct sn_plan_input *in, struct sn_plan_checkpoint *k)
{
    const struct sn_plan_hardware *hw = &in->hw;
    uint32_t g = in->train.gpus;
    uint32_t per_sn = hw->gpus_per_server * hw->servers_per_supernode;
    k->servers = (g + hw->gpus_per_server - 1) / hw->gpus_per_server;
    k->supernodes = (g + per_sn - 1) / per_sn;
    k->leaves = k->supernodes * hw->leaves_per_supernode;
    k->power_domains = k->supernodes * hw->power_domains_per_supernode;
    k->job_mtbf_s = sn_plan_job_mtbf(hw, g, k->servers, k->leaves, k->power_domains);
}

static void eval_checkpoint(const struct sn_plan_input *in, struct sn_plan_checkpoint *k)
{
    const struct sn_plan_hardware *hw = &in->hw;
    const struct sn_plan_options *o = &in->opt;
    double psi = sn_plan_params(&in->model);
    k->bytes_per_param_weights = elem_bytes(&in->train);
    k->bytes_per_param_optimizer = optimizer_k(&in->train);
    k->weights_bytes = k->bytes_per_param_weights * psi;
    k->optimizer_bytes = k->bytes_per_param_optimizer * psi;
    k->total_bytes = k->weights_bytes + k->optimizer_bytes;
    k->interval_s = o->ckpt_interval_s;
    k->window_s = o->ckpt_window_s > 0 ? o->ckpt_window_s : o->ckpt_interval_s / 6;
    eval_footprint(in, k);
    k->tier_used = o->ckpt_tier;
    for (uint32_t i = 0; i < hw->n_storage; i++) {
        const struct sn_plan_storage *s = &hw->storage[i];
        double scale = s->per_server ? k->servers : 1;
        k->tier[i].write_s = k->total_bytes / (s->write_bytes_per_s * scale);
        k->tier[i].read_s = k->total_bytes / (s->read_bytes_per_s * scale);
        k->tier[i].meets_window = k->tier[i].write_s <= k->window_s;
        if (o->ckpt_tier == SN_PLAN_NO_TIER &&
            (k->tier_used == SN_PLAN_NO_TIER || k->tier[i].write_s < k->tier[k->tier_used].write_s))
            k->tier_used = i;
    }
    if (k->tier_used == SN_PLAN_NO_TIER)
        return;
    double c = k->tier[k->tier_used].write_s, mtbf = k->job_mtbf_s;
    double restart = o->restart_s + k->tier[k->tier_used].read_s;
    k->young_s = sn_plan_young(c, mtbf);
    k->daly_s = sn_plan_daly(c, mtbf);
    k->lost_per_failure_s = restart + (k->daly_s + c) / 2;
    k->goodput = sn_plan_daly_efficiency(k->daly_s, c, restart, mtbf);
}

enum sn_err sn_plan_evaluate(const struct sn_plan_input *in, struct sn_plan_result *out,
                             struct sn_error *err)
{
    enum sn_err rc = sn_plan_check(in, err);
    if (rc)
        return rc;
    sn__plan_eval_step(in, out);
    eval_checkpoint(in, &out->ckpt);
    return SN_OK;
}
