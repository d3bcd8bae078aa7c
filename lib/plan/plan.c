/*
 * The plan: validation of an input and the evaluation of every figure
 * (memory, compute, communication, required bandwidth, performance,
 * placement, checkpoint) from the formulas of formulas.c.
 *
 * Invariants: sn_plan_evaluate() computes nothing before sn_plan_check()
 * has accepted the input, so every division below has a non-zero divisor;
 * the memory and time figures are for the first pipeline stage, which
 * holds ceil(L/p) layers, the input embedding and the most in-flight
 * micro-batches under 1F1B. The sweep (sweep.c) calls the same functions:
 * there is one model of a step, not two.
 */
#include <sn/plan.h>

#include <math.h>
#include <string.h>

#define SN_X(name, text) text,
static const char *const recompute_names[] = {SN_RECOMPUTE_LIST(SN_X)};
static const char *const precision_names[] = {SN_PRECISION_LIST(SN_X)};
static const char *const optimizer_names[] = {SN_OPTIMIZER_LIST(SN_X)};
static const char *const dim_names[] = {SN_PLAN_DIM_LIST(SN_X)};
static const char *const ckpt_format_names[] = {SN_CKPT_FORMAT_LIST(SN_X)};
#undef SN_X

const char *sn_recompute_name(enum sn_recompute mode)
{
    return (unsigned)mode < SN_RECOMPUTE_COUNT ? recompute_names[mode] : "unknown";
}

const char *sn_precision_name(enum sn_precision precision)
{
    return (unsigned)precision < SN_PRECISION_COUNT ? precision_names[precision] : "unknown";
}

const char *sn_optimizer_name(enum sn_optimizer optimizer)
{
    return (unsigned)optimizer < SN_OPTIMIZER_COUNT ? optimizer_names[optimizer] : "unknown";
}

const char *sn_plan_dim_name(enum sn_plan_dim dim)
{
    return (unsigned)dim < SN_PLAN_DIM_COUNT ? dim_names[dim] : "unknown";
}

const char *sn_ckpt_format_name(enum sn_ckpt_format format)
{
    return (unsigned)format < SN_CKPT_FORMAT_COUNT ? ckpt_format_names[format] : "unknown";
}

static unsigned find_name(const char *const *names, unsigned n, const char *name)
{
    for (unsigned i = 0; name && i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return n;
}

enum sn_recompute sn_recompute_from_name(const char *name)
{
    return (enum sn_recompute)find_name(recompute_names, SN_RECOMPUTE_COUNT, name);
}

enum sn_precision sn_precision_from_name(const char *name)
{
    return (enum sn_precision)find_name(precision_names, SN_PRECISION_COUNT, name);
}

enum sn_optimizer sn_optimizer_from_name(const char *name)
{
    return (enum sn_optimizer)find_name(optimizer_names, SN_OPTIMIZER_COUNT, name);
}

enum sn_ckpt_format sn_ckpt_format_from_name(const char *name)
{
    return (enum sn_ckpt_format)find_name(ckpt_format_names, SN_CKPT_FORMAT_COUNT, name);
}

/* ---- validation ------------------------------------------------------- */

static enum sn_err check_model(const struct sn_plan_model *m, struct sn_error *err)
{
    if (!m->layers || !m->hidden || !m->heads || !m->kv_heads || !m->ffn || !m->vocab || !m->seq)
        return sn_error_set(err, SN_ERR_INVALID,
                            "model '%s' is incomplete: layers, hidden, heads, kv-heads, ffn, "
                            "vocab and seq must all be positive",
                            m->name ? m->name : "custom");
    if (m->hidden % m->heads)
        return sn_error_set(err, SN_ERR_INVALID, "heads %u do not divide hidden size %u", m->heads,
                            m->hidden);
    if (m->heads % m->kv_heads)
        return sn_error_set(err, SN_ERR_INVALID, "kv-heads %u do not divide heads %u", m->kv_heads,
                            m->heads);
    if (m->experts < 1 || m->top_k < 1 || m->top_k > m->experts)
        return sn_error_set(err, SN_ERR_INVALID, "top-k %u must be between 1 and the %u experts",
                            m->top_k, m->experts);
    if (m->experts == 1 && (m->shared_experts || m->dense_layers))
        return sn_error_set(err, SN_ERR_INVALID,
                            "shared experts and dense first layers need a MoE model (experts > 1)");
    if (m->dense_layers >= m->layers && m->experts > 1)
        return sn_error_set(err, SN_ERR_INVALID,
                            "dense layers %u: a MoE model needs fewer than its %u layers",
                            m->dense_layers, m->layers);
    if (m->kv_lora_rank && (!m->qk_nope_dim || !m->qk_rope_dim || !m->v_dim))
        return sn_error_set(err, SN_ERR_INVALID,
                            "multi-head latent attention (kv-lora-rank %u) needs the qk-nope, "
                            "qk-rope and v head dimensions",
                            m->kv_lora_rank);
    return SN_OK;
}

static enum sn_err check_counts(const struct sn_plan_train *t, struct sn_error *err)
{
    if (!t->tp || !t->pp || !t->dp || !t->cp || !t->ep || !t->vpp || !t->micro_batch ||
        !t->global_batch)
        return sn_error_set(err, SN_ERR_INVALID,
                            "tp, pp, dp, cp, ep, interleave, micro-batch and global batch "
                            "must all be at least 1");
    if (t->gpus < 1 || t->gpus > SN_PLAN_MAX_GPUS)
        return sn_error_set(err, SN_ERR_INVALID, "gpus %u out of range 1..%u", t->gpus,
                            SN_PLAN_MAX_GPUS);
    uint64_t product = (uint64_t)t->tp * t->pp * t->dp * t->cp;
    if (product != t->gpus)
        return sn_error_set(err, SN_ERR_INVALID,
                            "tp x pp x dp x cp = %u x %u x %u x %u = %llu, but gpus is %u", t->tp,
                            t->pp, t->dp, t->cp, (unsigned long long)product, t->gpus);
    if (t->zero > 3)
        return sn_error_set(err, SN_ERR_INVALID, "zero stage %u: expected 0, 1, 2 or 3", t->zero);
    if ((unsigned)t->recompute >= SN_RECOMPUTE_COUNT ||
        (unsigned)t->precision >= SN_PRECISION_COUNT ||
        (unsigned)t->optimizer >= SN_OPTIMIZER_COUNT)
        return sn_error_set(err, SN_ERR_INVALID, "unknown recompute, precision or optimizer");
    uint64_t per_step = (uint64_t)t->micro_batch * t->dp;
    if (t->global_batch % per_step)
        return sn_error_set(err, SN_ERR_INVALID,
                            "micro-batch %u x dp %u = %llu does not divide the global batch "
                            "%llu",
                            t->micro_batch, t->dp, (unsigned long long)per_step,
                            (unsigned long long)t->global_batch);
    return SN_OK;
}

static enum sn_err check_layout(const struct sn_plan_model *m, const struct sn_plan_train *t,
                                struct sn_error *err)
{
    if (m->heads % t->tp)
        return sn_error_set(err, SN_ERR_INVALID, "tp %u does not divide the %u attention heads",
                            t->tp, m->heads);
    if (m->kv_heads % t->tp)
        return sn_error_set(err, SN_ERR_INVALID, "tp %u does not divide the %u kv heads", t->tp,
                            m->kv_heads);
    if (t->pp > m->layers)
        return sn_error_set(err, SN_ERR_INVALID, "pp %u is larger than the %u layers", t->pp,
                            m->layers);
    if (t->vpp > 1 && (t->pp < 2 || (uint64_t)t->pp * t->vpp > m->layers))
        return sn_error_set(err, SN_ERR_INVALID,
                            "interleave %u needs pp > 1 and pp x interleave at most the %u "
                            "layers",
                            t->vpp, m->layers);
    if (t->vpp > 1 && (t->global_batch / ((uint64_t)t->micro_batch * t->dp)) % t->pp)
        return sn_error_set(err, SN_ERR_INVALID,
                            "interleave needs the micro-batches per step to be a multiple of pp "
                            "%u",
                            t->pp);
    if (m->seq % t->cp)
        return sn_error_set(err, SN_ERR_INVALID, "cp %u does not divide the sequence length %u",
                            t->cp, m->seq);
    if (!(t->capacity_factor >= 0) || t->capacity_factor > 16 ||
        (t->capacity_factor > 0 && t->capacity_factor < 1))
        return sn_error_set(err, SN_ERR_INVALID,
                            "capacity factor %g: expected 1 to 16 (0: dropless, as 1)",
                            t->capacity_factor);
    if (t->ep > 1 && (m->experts % t->ep || t->dp % t->ep))
        return sn_error_set(err, SN_ERR_INVALID, "ep %u must divide both the %u experts and dp %u",
                            t->ep, m->experts, t->dp);
    return SN_OK;
}

static enum sn_err check_fraction(const char *what, double v, bool zero_ok, struct sn_error *err)
{
    if (!(v <= 1) || v < 0 || (!zero_ok && v == 0))
        return sn_error_set(err, SN_ERR_INVALID, "%s %g: expected a fraction in %s1]", what, v,
                            zero_ok ? "[0, " : "(0, ");
    return SN_OK;
}

static enum sn_err check_hardware(const struct sn_plan_hardware *hw, const struct sn_plan_train *t,
                                  struct sn_error *err)
{
    if (!(hw->peak_flops > 0) || !(hw->hbm_bytes > 0) || !(hw->scaleout_bytes_per_s > 0) ||
        !hw->gpus_per_server || !hw->servers_per_supernode || !hw->scaleup_gpus)
        return sn_error_set(err, SN_ERR_INVALID,
                            "hardware incomplete: peak FLOP/s, HBM, scale-out bandwidth, GPUs "
                            "per server, servers per supernode and scale-up domain are needed");
    if (hw->scaleup_gpus > 1 && !(hw->scaleup_bytes_per_s > 0))
        return sn_error_set(err, SN_ERR_INVALID, "scale-up domain of %u GPUs has no bandwidth",
                            hw->scaleup_gpus);
    if (hw->supernodes &&
        (uint64_t)hw->supernodes * hw->servers_per_supernode * hw->gpus_per_server < t->gpus)
        return sn_error_set(err, SN_ERR_INVALID, "%u gpus do not fit in %u supernodes of %u GPUs",
                            t->gpus, hw->supernodes,
                            hw->servers_per_supernode * hw->gpus_per_server);
    if (!(hw->mtbf_gpu_s >= 0) || !(hw->mtbf_server_s >= 0) || !(hw->mtbf_leaf_s >= 0) ||
        !(hw->mtbf_power_domain_s >= 0))
        return sn_error_set(err, SN_ERR_INVALID,
                            "an MTBF must not be negative (0 or infinite: never fails)");
    if (!(hw->latency_base_s >= 0) || !(hw->latency_scaleup_s >= 0) ||
        !(hw->latency_scaleout_s >= 0) || !(hw->kernel_overhead_s >= 0) ||
        !(hw->hbm_bytes_per_s >= 0) || !(hw->peak_fp8_flops >= 0) ||
        !(hw->hbm_reserve_bytes >= 0) || !(hw->hbm_reserve_bytes < hw->hbm_bytes))
        return sn_error_set(err, SN_ERR_INVALID,
                            "latencies, kernel overhead, HBM bandwidth and FP8 peak must not be "
                            "negative, and the HBM reserve must be below the HBM");
    if (hw->n_storage > SN_PLAN_MAX_TIERS)
        return sn_error_set(err, SN_ERR_LIMIT, "%u storage tiers: at most %u", hw->n_storage,
                            SN_PLAN_MAX_TIERS);
    for (uint32_t i = 0; i < hw->n_storage; i++)
        if (!(hw->storage[i].write_bytes_per_s > 0) || !(hw->storage[i].read_bytes_per_s > 0))
            return sn_error_set(err, SN_ERR_INVALID,
                                "storage tier '%s' needs write and read "
                                "bandwidth",
                                hw->storage[i].name ? hw->storage[i].name : "?");
    enum sn_err rc;
    if ((rc = check_fraction("scale-up efficiency", hw->scaleup_efficiency, false, err)) ||
        (rc = check_fraction("scale-out efficiency", hw->scaleout_efficiency, false, err)) ||
        (rc = check_fraction("compute efficiency", hw->compute_efficiency, false, err)) ||
        (rc = check_fraction("overlap", hw->overlap, true, err)) ||
        (rc = check_fraction("ep overlap", hw->ep_overlap, true, err)))
        return rc;
    return SN_OK;
}

static enum sn_err check_options(const struct sn_plan_input *in, struct sn_error *err)
{
    const struct sn_plan_options *o = &in->opt;
    const struct sn_plan_train *t = &in->train;
    uint32_t u = in->hw.scaleup_gpus;
    if (o->strict && t->tp > u)
        return sn_error_set(err, SN_ERR_INVALID,
                            "tp %u is larger than the scale-up domain of %u GPUs (strict rule: "
                            "TP stays inside one NVLink domain)",
                            t->tp, u);
    if (o->strict && u % t->tp)
        return sn_error_set(err, SN_ERR_INVALID,
                            "tp %u does not divide the scale-up domain of %u GPUs, so TP groups "
                            "would straddle domains (strict rule)",
                            t->tp, u);
    enum sn_err rc = check_fraction("communication fraction", o->comm_fraction, false, err);
    if (rc)
        return rc;
    if (!(o->bw_headroom >= 0) || !(o->ckpt_interval_s > 0) || !(o->restart_s >= 0) ||
        !(o->target_step_s >= 0) || !(o->ckpt_window_s >= 0))
        return sn_error_set(err, SN_ERR_INVALID,
                            "headroom, restart, target step and checkpoint window must not be "
                            "negative and the checkpoint interval must be positive");
    if (o->ckpt_window_s > o->ckpt_interval_s)
        return sn_error_set(err, SN_ERR_INVALID,
                            "checkpoint window %g s is longer than the interval %g s",
                            o->ckpt_window_s, o->ckpt_interval_s);
    if (o->ckpt_tier != SN_PLAN_NO_TIER && o->ckpt_tier >= in->hw.n_storage)
        return sn_error_set(err, SN_ERR_INVALID, "checkpoint tier %u: only %u tiers", o->ckpt_tier,
                            in->hw.n_storage);
    if (o->ckpt_tier != SN_PLAN_NO_TIER && in->hw.storage[o->ckpt_tier].per_server &&
        !o->local_ckpt)
        return sn_error_set(err, SN_ERR_INVALID,
                            "checkpoint tier '%s' is per-server storage, which dies with its "
                            "server: checkpoints go to durable shared storage unless local tiers "
                            "are allowed (--local-ckpt)",
                            in->hw.storage[o->ckpt_tier].name ? in->hw.storage[o->ckpt_tier].name
                                                              : "?");
    if ((unsigned)o->ckpt_format >= SN_CKPT_FORMAT_COUNT)
        return sn_error_set(err, SN_ERR_INVALID,
                            "checkpoint format %d: expected full, master or weights",
                            (int)o->ckpt_format);
    if (!(o->ckpt_bytes_per_param >= 0) || o->ckpt_bytes_per_param > 64)
        return sn_error_set(err, SN_ERR_INVALID,
                            "checkpoint bytes per parameter %g: expected 0 (derived) to 64",
                            o->ckpt_bytes_per_param);
    return SN_OK;
}

enum sn_err sn_plan_check(const struct sn_plan_input *in, struct sn_error *err)
{
    enum sn_err rc;
    if ((rc = check_model(&in->model, err)) || (rc = check_counts(&in->train, err)) ||
        (rc = check_layout(&in->model, &in->train, err)) ||
        (rc = check_hardware(&in->hw, &in->train, err)) || (rc = check_options(in, err)))
        return rc;
    return SN_OK;
}
