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
#include <sn/headroom.h>
#include <sn/plan.h>

#include <math.h>
#include <string.h>

#include "plan_int.h"

static double elem_bytes(const struct sn_plan_train *t)
{
    return t->precision == SN_PRECISION_FP32 ? 4 : 2; /* FP8 keeps bf16 weights and grads */
}

/* Optimizer state bytes per parameter (Rajbhandari et al. 2020, Section
 * 3.1: K = 12 for mixed-precision Adam, the fp32 master copy, momentum and
 * variance). Without mixed precision the weights are the master copy. */
static double optimizer_k(const struct sn_plan_train *t)
{
    double moments = t->optimizer == SN_OPTIMIZER_ADAM ? 8 : 4;
    return t->precision == SN_PRECISION_FP32 ? moments : moments + 4;
}

/* Layers on the fullest pipeline stage, ceil(l / p), however they are
 * cut into v chunks. */
static uint32_t stage_layers(const struct sn_plan_input *in)
{
    return (in->model.layers + in->train.pp - 1) / in->train.pp;
}

/* Layers on stage k. When the layers do not divide evenly, the first and
 * last stages (which also hold the embedding with the most micro-batches
 * in flight, and the output layer with the loss) take one layer fewer if
 * the inner stages can hold the rest: the balancing of the Llama 3 paper,
 * Section 3.3.2. */
static uint32_t layers_on_stage(const struct sn_plan_input *in, uint32_t k)
{
    uint32_t p = in->train.pp, c = stage_layers(in), l = in->model.layers;
    if (p <= 2 || (uint64_t)c * p == l || (k != 0 && k != p - 1))
        return c;
    return (uint64_t)(p - 2) * c + 2 * (c - 1) >= l ? c - 1 : c;
}

/* The recompute mode whose activations a layer stores: FlashAttention
 * never writes the s x s scores, so without recompute it stores what
 * selective recompute does (Korthikanti et al.'s "none" assumes scores
 * in HBM, as with --unfused-attention). */
static enum sn_recompute stored_mode(const struct sn_plan_train *t)
{
    if (t->recompute == SN_RECOMPUTE_NONE && !t->unfused_attention)
        return SN_RECOMPUTE_SELECTIVE;
    return t->recompute;
}

static uint64_t microbatches(const struct sn_plan_train *t)
{
    return t->global_batch / ((uint64_t)t->micro_batch * t->dp);
}

/* Dense (non-expert) layers on stage k: the model's first dense_layers
 * layers sit on the first stages. */
static uint32_t stage_dense_layers(const struct sn_plan_input *in, uint32_t k)
{
    const struct sn_plan_model *m = &in->model;
    uint32_t dense = m->layers - sn__plan_moe_layers(m), here = layers_on_stage(in, k);
    uint64_t before = k == 0 ? 0 : layers_on_stage(in, 0) + (uint64_t)(k - 1) * stage_layers(in);
    if (dense <= before)
        return 0;
    return dense - before < here ? (uint32_t)(dense - before) : here;
}

/* Parameters held by one GPU of stage k, split into those reduced over
 * the whole dp x cp group (dense) and the expert ones. The input
 * embedding sits on the first stage, the output layer on the last. */
static void stage_params_k(const struct sn_plan_input *in, uint32_t k, double *dense,
                           double *expert)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    double tp = t->tp, layers = layers_on_stage(in, k), vh = (double)m->vocab * m->hidden;
    double embed = 0;
    if (k == 0)
        embed += vh / tp + (m->learned_pos ? (double)m->seq * m->hidden : 0);
    if (k == t->pp - 1)
        embed += (m->tied_embeddings && t->pp == 1 ? 0 : vh / tp) + sn__plan_norm(m);
    if (m->experts > 1) {
        double dl = stage_dense_layers(in, k), ml = layers - dl;
        *dense = (ml * sn__plan_layer_attn(m) + dl * sn__plan_attn_only(m) +
                  dl * sn__plan_dense_mlp(m) + ml * m->shared_experts * sn__plan_mlp(m)) /
                     tp +
                 embed;
        *expert = ml * sn__plan_mlp(m) * m->experts / ((double)t->ep * tp);
    } else {
        *dense = layers * (sn__plan_layer_attn(m) + sn__plan_mlp(m)) / tp + embed;
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

/* Memory of stage k under 1F1B: p - k micro-batches in flight (at most
 * m); the last stage also keeps the logits of one micro-batch, in bf16
 * and as the fp32 copy the cross-entropy works on (6 bytes per element,
 * b s V / (c t)). */
static void stage_memory(const struct sn_plan_input *in, uint32_t k, struct sn_plan_memory *mem)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    double dense, expert;
    memset(mem, 0, sizeof(*mem));
    stage_params_k(in, k, &dense, &expert);
    mem->params_total = sn_plan_params(m);
    mem->params_active = sn_plan_params_active(m);
    mem->params_per_gpu = dense + expert;
    mem->worst_stage = k;
    double nd = (double)t->dp * t->cp;
    model_states(t, dense, nd, mem);
    if (expert > 0)
        model_states(t, expert, nd / t->ep, mem);
    if (t->zero >= 3) {
        /* ZeRO-3 gathers a whole layer's weights before using it and its
         * gradients before reducing them: the largest one (a layer, or the
         * embedding) in 16 bits twice, DeepSpeed's largest_layer_memory =
         * 4 x largest_layer_params (estimate_zero3_model_states_mem_needs) */
        double layer = (sn__plan_layer_attn(m) + sn__plan_mlp(m) *
                                                     (m->experts > 1 ? (double)m->experts / t->ep
                                                                     : 1)) /
                       t->tp;
        double vh = (double)m->vocab * m->hidden / t->tp;
        mem->weights_bytes += 2 * elem_bytes(t) * (layer > vh ? layer : vh);
    }

    bool sp = t->seq_parallel && t->tp > 1;
    double scale = elem_bytes(t) / 2; /* the formulas assume 16-bit activations */
    mem->stage_layers = layers_on_stage(in, k);
    uint64_t mb = microbatches(t);
    uint32_t depth = t->pp - k;
    mem->inflight = mb < depth ? (uint32_t)mb : depth;
    mem->act_per_layer_bytes =
        scale * sn_plan_act_per_layer(m, t->micro_batch, t->tp, t->cp, sp, stored_mode(t));
    double interleave = t->vpp > 1 ? 1 + (t->pp - 1.0) / ((double)t->pp * t->vpp) : 1;
    double act = mem->act_per_layer_bytes * mem->stage_layers * mem->inflight * interleave;
    if (m->dropout && k == 0) /* the input embedding's dropout mask, s b h p / t */
        act +=
            (double)m->seq / t->cp * t->micro_batch * m->hidden / (sp ? t->tp : 1) * mem->inflight;
    if (t->recompute == SN_RECOMPUTE_FULL) /* the layer being recomputed */
        act += scale * sn_plan_act_per_layer(m, t->micro_batch, t->tp, t->cp, sp,
                                             t->unfused_attention ? SN_RECOMPUTE_NONE
                                                                  : SN_RECOMPUTE_SELECTIVE);
    if (k == t->pp - 1)
        act += 6.0 * t->micro_batch * ((double)m->seq / t->cp) * m->vocab / t->tp;
    mem->activations_bytes = act;
    mem->total_bytes = mem->weights_bytes + mem->grads_bytes + mem->optimizer_bytes + act;
    mem->hbm_bytes = in->hw.hbm_bytes;
    mem->free_bytes = in->hw.hbm_bytes - in->hw.hbm_reserve_bytes - mem->total_bytes;
    mem->fits = mem->free_bytes >= 0;
}

/* The worst stage: the first (most micro-batches in flight, the input
 * embedding), the second (all expert layers when the first holds the
 * dense ones) or the last (output layer and loss). */
static void eval_memory(const struct sn_plan_input *in, struct sn_plan_memory *mem)
{
    uint32_t p = in->train.pp;
    uint32_t cand[3] = {0, p > 2 ? 1 : 0, p - 1};
    stage_memory(in, 0, mem);
    for (int i = 1; i < 3; i++) {
        if (cand[i] == 0)
            continue;
        struct sn_plan_memory other;
        stage_memory(in, cand[i], &other);
        if (other.total_bytes > mem->total_bytes)
            *mem = other;
    }
}

/* ---- the predictor: per-GEMM roofline --------------------------------- */

/* One operation on one GPU: flops at the large-GEMM efficiency times
 * its roofline fraction, plus the fixed cost of a kernel. */
static double op_s(const struct sn_plan_hardware *hw, double peak, double flops, double bytes)
{
    if (!(flops > 0))
        return 0;
    double e = hw->compute_efficiency * sn_plan_roofline(flops, bytes, peak, hw->hbm_bytes_per_s);
    return flops / (peak * e) + hw->kernel_overhead_s;
}

static double gemm_s(const struct sn_plan_hardware *hw, double peak, double eb, double m, double n,
                     double k)
{
    if (!(m > 0 && n > 0 && k > 0))
        return 0;
    return op_s(hw, peak, 2 * m * n * k, eb * (m * k + k * n + m * n));
}

static double gemm_peak(const struct sn_plan_input *in)
{
    const struct sn_plan_hardware *hw = &in->hw;
    if (in->train.precision == SN_PRECISION_FP8)
        return hw->peak_fp8_flops > 0 ? hw->peak_fp8_flops : 2 * hw->peak_flops;
    if (in->train.precision == SN_PRECISION_FP32)
        return hw->peak_flops; /* TF32 tensor cores at the BF16 rate is optimistic; documented */
    return hw->peak_flops;
}

/* Forward time of one layer and one micro-batch on one GPU: the linear
 * layers as GEMMs of M = b s / c tokens (gathered over TP with SP), the
 * attention core as a FlashAttention kernel, and the element-wise work at
 * HBM bandwidth. Times for the MLP and the core come back separately so
 * that recompute can repeat them. */
struct layer_time {
    double linear_s, core_s, elementwise_s;
};

static void layer_forward(const struct sn_plan_input *in, bool moe_layer, struct layer_time *lt)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    const struct sn_plan_hardware *hw = &in->hw;
    double peak = gemm_peak(in);
    double eb = t->precision == SN_PRECISION_FP8 ? 1 : elem_bytes(t);
    double tp = t->tp, h = m->hidden, M = (double)t->micro_batch * m->seq / t->cp;
    double attn = sn__plan_attn_only(m) - 2 * sn__plan_norm(m);
    double up = m->gated_mlp ? 2 : 1;
    lt->linear_s = gemm_s(hw, peak, eb, M, attn / (h * tp), h);
    if (moe_layer) {
        double e = m->experts, ep = t->ep, f = m->ffn;
        /* every expert computes its full capacity: cf x its even share */
        double cf = t->capacity_factor > 1 ? t->capacity_factor : 1;
        double me = cf * M * ep * m->top_k / e, local = e / ep;
        lt->linear_s += local * (gemm_s(hw, peak, eb, me, up * f / tp, h) +
                                 gemm_s(hw, peak, eb, me, h, f / tp));
        if (m->shared_experts) {
            double fs = (double)m->shared_experts * f;
            lt->linear_s +=
                gemm_s(hw, peak, eb, M, up * fs / tp, h) + gemm_s(hw, peak, eb, M, h, fs / tp);
        }
        lt->linear_s += gemm_s(hw, peak, eb, M, e, h); /* the router */
    } else {
        double f = m->experts > 1 && m->dense_ffn ? m->dense_ffn : m->ffn;
        lt->linear_s +=
            gemm_s(hw, peak, eb, M, up * f / tp, h) + gemm_s(hw, peak, eb, M, h, f / tp);
    }
    /* FlashAttention reads Q, K, V and writes O; causal masking halves
     * the work it does (the FLOP count keeps Megatron's 4 s h). */
    double kvdim = (double)m->kv_heads * (h / m->heads);
    if (t->unfused_attention) {
        /* two batched GEMMs per head (QK^T, scores x V) over the whole
         * s x s matrix, and softmax (with dropout) passes over it at HBM
         * bandwidth: written, read and written, read (Megatron 2021) */
        double a = m->heads / tp, d = h / m->heads, sk = m->seq;
        lt->core_s = 2 * a * gemm_s(hw, peak, eb, M, sk, d);
        double scores = a * M * sk * 2.0;
        lt->core_s += hw->hbm_bytes_per_s > 0 ? 4 * scores / hw->hbm_bytes_per_s : 0;
    } else {
        double core = M * sn__plan_layer_core_flops(m) / tp / 2;
        lt->core_s = op_s(hw, peak, core, 2.0 * (2 * M * h + 2.0 * m->seq * kvdim) / tp);
    }
    /* element-wise kernels (norms, residuals, activation, RoPE, dropout)
     * write what the layer stores and read it back: 3 passes over the
     * selective-recompute activations, at HBM bandwidth */
    bool sp = t->seq_parallel && t->tp > 1;
    double bytes = 3 * (elem_bytes(t) / 2) *
                   sn_plan_act_per_layer(m, t->micro_batch, tp, t->cp, sp, SN_RECOMPUTE_SELECTIVE);
    lt->elementwise_s = hw->hbm_bytes_per_s > 0 ? bytes / hw->hbm_bytes_per_s : 0;
}

/* Forward + backward (twice the forward; 2.5 times for FlashAttention)
 * + recompute of one layer. */
static double layer_step_s(const struct sn_plan_input *in, bool moe_layer)
{
    struct layer_time lt;
    layer_forward(in, moe_layer, &lt);
    double fwd = lt.linear_s + lt.core_s + lt.elementwise_s;
    /* FlashAttention's backward does five matmuls to the forward's two,
     * recomputing the scores (Dao 2023, FlashAttention-2, Section 3.1) */
    double s = 3 * fwd + (in->train.unfused_attention ? 0 : 0.5 * lt.core_s);
    if (in->train.recompute == SN_RECOMPUTE_FULL)
        s += fwd;
    else if (in->train.recompute == SN_RECOMPUTE_SELECTIVE && in->train.unfused_attention)
        s += lt.core_s; /* with FlashAttention there are no scores to recompute */
    return s;
}

/* The output layer and the cross-entropy of one micro-batch. */
static double logit_step_s(const struct sn_plan_input *in)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    double eb = t->precision == SN_PRECISION_FP8 ? 1 : elem_bytes(t);
    double M = (double)t->micro_batch * m->seq / t->cp, n = (double)m->vocab / t->tp;
    double s = 3 * gemm_s(&in->hw, gemm_peak(in), eb, M, n, m->hidden);
    if (in->hw.hbm_bytes_per_s > 0)
        s += 3 * 4 * M * n / in->hw.hbm_bytes_per_s;
    return s;
}

/* One micro-batch through the slowest stage: the first (dense layers of
 * a MoE model, if any) or the last (expert layers and the output layer). */
static double microbatch_s(const struct sn_plan_input *in)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    double dense_s = layer_step_s(in, false);
    double moe_s = m->experts > 1 ? layer_step_s(in, true) : dense_s;
    double logit = logit_step_s(in);
    if (t->pp == 1) {
        double moe = sn__plan_moe_layers(m);
        return moe * moe_s + (m->layers - moe) * dense_s + logit;
    }
    double worst = 0;
    uint32_t cand[3] = {0, t->pp > 2 ? 1 : 0, t->pp - 1};
    for (int i = 0; i < 3; i++) {
        uint32_t k = cand[i];
        double n = layers_on_stage(in, k), d = stage_dense_layers(in, k);
        double stage = d * dense_s + (n - d) * moe_s + (k == t->pp - 1 ? logit : 0);
        if (stage > worst)
            worst = stage;
    }
    return worst;
}

static void eval_compute(const struct sn_plan_input *in, const struct sn_plan_memory *mem,
                         struct sn_plan_compute *c)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    (void)mem;
    c->microbatches = microbatches(t);
    c->tokens_per_step = (double)t->global_batch * m->seq;
    double lin = sn__plan_layer_linear_flops(m), core = sn__plan_layer_core_flops(m);
    double tok = c->tokens_per_step, layers = m->layers;
    c->model_flops_6n = 6 * sn_plan_params_active(m) * tok;
    c->model_flops = 3 * tok * (layers * (lin + core) + sn__plan_logit_flops(m));
    double extra = 0;
    if (t->recompute == SN_RECOMPUTE_FULL)
        extra = tok * layers * (lin + core);
    else if (t->recompute == SN_RECOMPUTE_SELECTIVE && t->unfused_attention)
        extra = tok * layers * core;
    c->hardware_flops = c->model_flops + extra;
    c->microbatch_s = microbatch_s(in);
    c->compute_s = (double)c->microbatches * c->microbatch_s;
    c->efficiency = c->hardware_flops / ((double)t->gpus * gemm_peak(in) * c->compute_s);
    c->bubble_fraction = (t->pp - 1.0) / ((double)t->vpp * c->microbatches);
    c->bubble_s = c->compute_s * c->bubble_fraction;
}

static bool crosses(uint64_t inner, uint64_t n, uint32_t domain)
{
    return n > 1 && domain % (inner * n) != 0;
}

/* Alpha-beta cost of one dimension's collectives: bytes over the bus
 * bandwidth, plus for each of `ops` collectives the fixed launch cost and
 * `steps` latencies of the fabric it runs on (latency per ring step in a
 * scale-up domain, per hop across the scale-out fabric). */
static void set_dim(const struct sn_plan_input *in, struct sn_plan_comm_dim *d, uint32_t group,
                    bool out, double bytes, double ops, double steps)
{
    const struct sn_plan_hardware *hw = &in->hw;
    d->group = group;
    d->scaleout = out;
    d->bytes = group > 1 ? bytes : 0;
    double busbw = out ? hw->scaleout_bytes_per_s * hw->scaleout_efficiency
                       : hw->scaleup_bytes_per_s * hw->scaleup_efficiency;
    double alpha = out ? hw->latency_scaleout_s : hw->latency_scaleup_s;
    d->time_s = d->bytes > 0 ? d->bytes / busbw + ops * (hw->latency_base_s + steps * alpha) : 0;
}

/* Latency steps of an all-reduce over n ranks: a ring's 2 (n - 1) inside a
 * scale-up domain; across the scale-out fabric NCCL's trees, 2 log2 n. */
static double allreduce_steps(double n, bool out)
{
    if (n <= 1)
        return 0;
    return out ? 2 * ceil(log2(n)) : 2 * (n - 1);
}

/* Per GPU per step. Bytes already include the ring factors 2(n-1)/n or
 * (n-1)/n, so time is bytes over the bus bandwidth plus the latencies. */
static void eval_comm(const struct sn_plan_input *in, const struct sn_plan_memory *mem, bool tp_out,
                      struct sn_plan_comm *c)
{
    const struct sn_plan_model *m = &in->model;
    const struct sn_plan_train *t = &in->train;
    uint32_t u = in->hw.scaleup_gpus;
    double e = elem_bytes(t), tp = t->tp, cp = t->cp;
    double mbs = (double)microbatches(t);
    double count = mbs * mem->stage_layers;
    bool full = t->recompute == SN_RECOMPUTE_FULL;
    double act = t->micro_batch * (m->seq / cp) * m->hidden * e; /* b s h, one micro-batch */
    memset(c, 0, sizeof(*c));

    /* TP: 4 all-reduces per layer per micro-batch (6 with full recompute);
     * with SP the same volume as all-gathers and reduce-scatters. */
    double tp_ops = count * (full ? 6 : 4);
    double tp_bytes = tp_ops * 2 * (tp - 1) / tp * act;
    bool tp_scaleout = tp_out || crosses(1, t->tp, u);
    set_dim(in, &c->dim[SN_PLAN_DIM_TP], t->tp, tp_scaleout, tp_bytes, tp_ops,
            allreduce_steps(tp, tp_scaleout));
    /* CP: all-gather K and V forward, reduce-scatter dK dV backward, as a
     * ring of c - 1 point-to-point steps. */
    double kv =
        2 * t->micro_batch * (m->seq / cp) * (double)m->kv_heads * (m->hidden / m->heads) / tp * e;
    double cp_ops = count * (full ? 3 : 2);
    set_dim(in, &c->dim[SN_PLAN_DIM_CP], t->cp, crosses(t->tp, t->cp, u), cp_ops * (cp - 1) * kv,
            cp_ops, cp - 1);
    /* EP: dispatch and combine all-to-alls, forward and backward, on the
     * expert layers of the stage. */
    bool moe = m->experts > 1 && t->ep > 1;
    double moe_layers = mem->stage_layers;
    if (m->experts > 1 && sn__plan_moe_layers(m) < moe_layers)
        moe_layers = sn__plan_moe_layers(m);
    double tokens = t->micro_batch * (m->seq / cp) / (t->seq_parallel ? tp : 1);
    double cf = t->capacity_factor > 1 ? t->capacity_factor : 1; /* padded to capacity */
    double a2a = cf * tokens * m->top_k * m->hidden * e * (t->ep - 1.0) / t->ep;
    double ep_ops = mbs * moe_layers * (full ? 6 : 4);
    set_dim(in, &c->dim[SN_PLAN_DIM_EP], moe ? t->ep : 1,
            crosses((uint64_t)t->tp * t->cp, t->ep, u), ep_ops * a2a, ep_ops, 1);
    /* DP: gradient all-reduce, or reduce-scatter + all-gather (ZeRO 1-2):
     * the same 2(n-1)/n volume; ZeRO-3 adds a parameter all-gather (1.5x).
     * In buckets of 40M parameters (Megatron-Core's default bucket). */
    double dense, expert, nd = (double)t->dp * t->cp, ne = nd / t->ep;
    stage_params_k(in, mem->worst_stage, &dense, &expert);
    double factor = t->zero == 3 ? 3 : 2;
    double dp_bytes =
        factor * (nd - 1) / nd * dense * e + (ne > 1 ? factor * (ne - 1) / ne * expert * e : 0);
    bool dp_out = crosses(t->tp, (uint64_t)nd, u);
    double buckets = ceil((dense + expert) / 40e6);
    set_dim(in, &c->dim[SN_PLAN_DIM_DP], (uint32_t)nd, dp_out, dp_bytes,
            buckets * (t->zero == 3 ? 1.5 : 1), allreduce_steps(nd, dp_out));
    /* PP: activations forward and gradients backward per micro-batch and
     * chunk boundary, scattered over TP (Narayanan et al. 2021, 4.1); one
     * hop each. */
    double pp_ops = 2.0 * mbs * t->vpp;
    set_dim(in, &c->dim[SN_PLAN_DIM_PP], t->pp, crosses((uint64_t)t->tp * t->cp * t->dp, t->pp, u),
            pp_ops * act / tp, pp_ops, 1);

    for (int i = 0; i < SN_PLAN_DIM_COUNT; i++) {
        struct sn_plan_comm_dim *d = &c->dim[i];
        double hide = i == SN_PLAN_DIM_DP || i == SN_PLAN_DIM_CP ? in->hw.overlap
                      : i == SN_PLAN_DIM_EP                      ? in->hw.ep_overlap
                                                                 : 0;
        d->exposed_s = d->time_s * (1 - hide);
        if (d->scaleout)
            c->scaleout_bytes += d->bytes;
        else
            c->scaleup_bytes += d->bytes;
        c->time_s += d->time_s;
    }
}

/* Overlapped communication hides behind compute, never more than the
 * compute it can overlap with. Gradients accumulate over the micro-batches,
 * so their reduction can only overlap the last micro-batch's backward and
 * the parameter gather the first one's forward (Megatron-Core's
 * overlap-grad-reduce and overlap-param-gather): DP hides behind at most
 * one micro-batch. CP's ring overlaps its own attention, EP's all-to-all
 * the other micro-batch's compute (DualPipe): at most the whole compute. */
static void limit_overlap(const struct sn_plan_compute *k, struct sn_plan_comm *c)
{
    c->exposed_s = 0;
    for (int i = 0; i < SN_PLAN_DIM_COUNT; i++) {
        struct sn_plan_comm_dim *d = &c->dim[i];
        double cap = i == SN_PLAN_DIM_DP ? k->microbatch_s : k->compute_s;
        if (d->time_s - d->exposed_s > cap)
            d->exposed_s = d->time_s - cap;
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
    /* the one meaning of headroom, shared with review rule R10 */
    b->scaleup_provision_bytes_per_s = sn_headroom_provision(b->scaleup_need_bytes_per_s, b->headroom);
    b->scaleout_provision_bytes_per_s =
        sn_headroom_provision(b->scaleout_need_bytes_per_s, b->headroom);
    b->scaleup_ok =
        sn_headroom_ok(in->hw.scaleup_bytes_per_s, b->scaleup_need_bytes_per_s, b->headroom);
    b->scaleout_ok =
        sn_headroom_ok(in->hw.scaleout_bytes_per_s, b->scaleout_need_bytes_per_s, b->headroom);
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
    limit_overlap(&r->compute, &out);
    pl->tp_scaleout_step_s = r->compute.compute_s + r->compute.bubble_s + out.exposed_s;
    pl->tp_scaleout_slowdown = pl->tp_scaleout_step_s / r->perf.step_s;
}

void sn__plan_eval_step(const struct sn_plan_input *in, struct sn_plan_result *out)
{
    memset(out, 0, sizeof(*out));
    eval_memory(in, &out->memory);
    eval_compute(in, &out->memory, &out->compute);
    eval_comm(in, &out->memory, false, &out->comm);
    limit_overlap(&out->compute, &out->comm);
    eval_perf(in, out);
    eval_bandwidth(in, out, &out->bandwidth);
    eval_placement(in, out);
}

/* ---- checkpoint ------------------------------------------------------- */

/* A failure rate of n components of MTBF M; M = 0 or infinite: none. */
static double rate(double n, double mtbf_s)
{
    return mtbf_s > 0 && isfinite(mtbf_s) ? n / mtbf_s : 0;
}

static void eval_footprint(const struct sn_plan_input *in, struct sn_plan_checkpoint *k)
{
    const struct sn_plan_hardware *hw = &in->hw;
    uint32_t g = in->train.gpus;
    uint32_t per_sn = hw->gpus_per_server * hw->servers_per_supernode;
    k->servers = (g + hw->gpus_per_server - 1) / hw->gpus_per_server;
    k->supernodes = (g + per_sn - 1) / per_sn;
    k->leaves = k->supernodes * hw->leaves_per_supernode;
    k->power_domains = k->supernodes * hw->power_domains_per_supernode;
    double r = rate(g, hw->mtbf_gpu_s) + rate(k->servers, hw->mtbf_server_s) +
               rate(k->leaves, hw->mtbf_leaf_s) + rate(k->power_domains, hw->mtbf_power_domain_s);
    k->no_failures = r == 0;
    k->job_mtbf_s = r > 0 ? 1 / r : INFINITY;
}

/* Checkpoints go to durable shared storage: a per-server tier (local
 * NVMe) dies with its server, so it holds checkpoints only when the user
 * accepts that risk (opt.local_ckpt). */
static bool tier_usable(const struct sn_plan_input *in, uint32_t i)
{
    return !in->hw.storage[i].per_server || in->opt.local_ckpt;
}

static void eval_checkpoint(const struct sn_plan_input *in, struct sn_plan_checkpoint *k)
{
    const struct sn_plan_hardware *hw = &in->hw;
    const struct sn_plan_options *o = &in->opt;
    double psi = sn_plan_params(&in->model);
    k->format = o->ckpt_format;
    k->bytes_per_param_weights = elem_bytes(&in->train);
    k->bytes_per_param_optimizer = optimizer_k(&in->train);
    if (o->ckpt_format == SN_CKPT_FORMAT_WEIGHTS)
        k->bytes_per_param_optimizer = 0;
    else if (o->ckpt_format == SN_CKPT_FORMAT_MASTER && in->train.precision != SN_PRECISION_FP32)
        k->bytes_per_param_weights = 0; /* fp32: the weights are the master copy */
    if (o->ckpt_bytes_per_param > 0) {
        if (k->bytes_per_param_weights > o->ckpt_bytes_per_param)
            k->bytes_per_param_weights = o->ckpt_bytes_per_param;
        k->bytes_per_param_optimizer = o->ckpt_bytes_per_param - k->bytes_per_param_weights;
    }
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
        k->tier[i].usable = tier_usable(in, i);
        k->tier[i].meets_window = k->tier[i].write_s <= k->window_s;
        if (o->ckpt_tier == SN_PLAN_NO_TIER && k->tier[i].usable &&
            (k->tier_used == SN_PLAN_NO_TIER || k->tier[i].write_s < k->tier[k->tier_used].write_s))
            k->tier_used = i;
    }
    if (k->tier_used == SN_PLAN_NO_TIER)
        return;
    double c = k->tier[k->tier_used].write_s, mtbf = k->job_mtbf_s;
    double restart = o->restart_s + k->tier[k->tier_used].read_s;
    if (k->no_failures) { /* nothing to recover: only the planned interval's writes cost */
        k->young_s = k->daly_s = 0;
        k->lost_per_failure_s = 0;
        k->goodput = k->interval_s / (k->interval_s + c);
        return;
    }
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
