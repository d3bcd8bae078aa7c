/*
 * The planner's building blocks: each function is one published formula
 * (docs/planner.md cites the paper and section), kept free of the layout
 * bookkeeping so that a unit test can hold it against the published
 * number. Everything is in bytes, seconds and FLOPs; no function fails:
 * callers validate their inputs first (sn_plan_check()).
 */
#include <sn/plan.h>

#include <math.h>

#include "plan_int.h"

/* Linear-layer weights of attention: Q and the output projection are
 * h x h; K and V are h x (kv_heads x head_dim). Multi-head latent
 * attention (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", Section
 * 2.1.1; the dimensions of its Section 4.2) compresses queries to
 * q_lora_rank and keys and values to kv_lora_rank: W_DQ h x r_q, W_UQ
 * r_q x a (d_nope + d_rope), W_DKV with the shared RoPE key h x (r_kv +
 * d_rope), W_UKV r_kv x a (d_nope + d_v), W_O a d_v x h. */
static double attn_weights(const struct sn_plan_model *m)
{
    double h = m->hidden, a = m->heads;
    if (m->kv_lora_rank) {
        double qk = (double)m->qk_nope_dim + m->qk_rope_dim;
        double q = m->q_lora_rank ? h * m->q_lora_rank + (double)m->q_lora_rank * a * qk : h * a * qk;
        double kv = h * ((double)m->kv_lora_rank + m->qk_rope_dim) +
                    (double)m->kv_lora_rank * a * ((double)m->qk_nope_dim + m->v_dim);
        return q + kv + a * m->v_dim * h;
    }
    double kvdim = (double)m->kv_heads * (h / m->heads);
    return h * (h + 2 * kvdim) + h * h;
}

static double attn_biases(const struct sn_plan_model *m)
{
    double h = m->hidden, kvdim = (double)m->kv_heads * (h / m->heads);
    double mla_norms = m->kv_lora_rank ? (double)m->q_lora_rank + m->kv_lora_rank : 0;
    return (m->biases ? (h + 2 * kvdim) + h : 0) + mla_norms;
}

static double mlp_weights_f(const struct sn_plan_model *m, double f)
{
    return (m->gated_mlp ? 3 : 2) * (double)m->hidden * f;
}

static double mlp_weights(const struct sn_plan_model *m)
{
    return mlp_weights_f(m, m->ffn);
}

/* One MLP of inner size f, weights and biases. */
static double mlp_params_f(const struct sn_plan_model *m, double f)
{
    double h = m->hidden;
    double b = m->biases ? (m->gated_mlp ? 2 * f : f) + h : 0;
    return mlp_weights_f(m, f) + b;
}

/* One expert's (or the dense) MLP. */
static double mlp_params(const struct sn_plan_model *m)
{
    return mlp_params_f(m, m->ffn);
}

static double dense_ffn(const struct sn_plan_model *m)
{
    return m->dense_ffn ? m->dense_ffn : m->ffn;
}

static double norm_params(const struct sn_plan_model *m)
{
    return m->layernorm ? 2.0 * m->hidden : (double)m->hidden;
}

static double router_params(const struct sn_plan_model *m)
{
    return m->experts > 1 ? (double)m->hidden * m->experts : 0;
}

uint32_t sn__plan_moe_layers(const struct sn_plan_model *m)
{
    if (m->experts <= 1)
        return 0;
    return m->dense_layers < m->layers ? m->layers - m->dense_layers : 0;
}

double sn__plan_layer_attn(const struct sn_plan_model *m)
{
    return attn_weights(m) + attn_biases(m) + 2 * norm_params(m) + router_params(m);
}

double sn__plan_attn_only(const struct sn_plan_model *m)
{
    return attn_weights(m) + attn_biases(m) + 2 * norm_params(m);
}

double sn__plan_mlp(const struct sn_plan_model *m)
{
    return mlp_params(m);
}

double sn__plan_dense_mlp(const struct sn_plan_model *m)
{
    return mlp_params_f(m, dense_ffn(m));
}

double sn__plan_norm(const struct sn_plan_model *m)
{
    return norm_params(m);
}

double sn__plan_layer_linear_flops(const struct sn_plan_model *m)
{
    double moe = sn__plan_moe_layers(m), dense = m->layers - moe;
    double per_moe = attn_weights(m) + (m->top_k + m->shared_experts) * mlp_weights(m) +
                     router_params(m);
    double per_dense = attn_weights(m) + mlp_weights_f(m, m->experts > 1 ? dense_ffn(m) : m->ffn);
    return 2 * (moe * per_moe + dense * per_dense) / m->layers;
}

double sn__plan_layer_core_flops(const struct sn_plan_model *m)
{
    if (m->kv_lora_rank) /* QK^T over d_nope + d_rope, attention over V of d_v */
        return 2.0 * m->seq * m->heads * ((double)m->qk_nope_dim + m->qk_rope_dim + m->v_dim);
    return 4.0 * m->seq * m->hidden;
}

double sn__plan_logit_flops(const struct sn_plan_model *m)
{
    return 2.0 * m->hidden * m->vocab;
}

static double embedding_params(const struct sn_plan_model *m)
{
    double vh = (double)m->vocab * m->hidden;
    double pos = m->learned_pos ? (double)m->seq * m->hidden : 0;
    return (m->tied_embeddings ? vh : 2 * vh) + pos + norm_params(m); /* + final norm */
}

/* All layers with `experts` MLPs in each MoE layer (the router only
 * there), plus the dense layers. */
static double layers_params(const struct sn_plan_model *m, double experts)
{
    double moe = sn__plan_moe_layers(m), dense = m->layers - moe;
    if (m->experts <= 1)
        return m->layers * (sn__plan_attn_only(m) + mlp_params(m));
    return moe * (sn__plan_layer_attn(m) + (experts + m->shared_experts) * mlp_params(m)) +
           dense * (sn__plan_attn_only(m) + sn__plan_dense_mlp(m));
}

double sn_plan_params(const struct sn_plan_model *m)
{
    return layers_params(m, m->experts) + embedding_params(m);
}

double sn_plan_params_active(const struct sn_plan_model *m)
{
    return layers_params(m, m->top_k) + embedding_params(m);
}

double sn_plan_params_megatron(double layers, double hidden, double vocab, double seq)
{
    return 12 * layers * hidden * hidden *
           (1 + 13 / (12 * hidden) + (vocab + seq) / (12 * layers * hidden));
}

double sn_plan_train_time_megatron(double tokens, double params, double gpus, double flops_per_gpu)
{
    return 8 * tokens * params / (gpus * flops_per_gpu);
}

double sn_plan_flops_megatron(double batch, double seq, double layers, double hidden, double vocab)
{
    return 96 * batch * seq * layers * hidden * hidden *
           (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden));
}

double sn_plan_zero_bytes(double psi, double k, double nd, unsigned stage)
{
    switch (stage) {
    case 0:
        return (2 + 2 + k) * psi;
    case 1:
        return (2 + 2) * psi + k * psi / nd;
    case 2:
        return 2 * psi + (2 + k) * psi / nd;
    default:
        return (2 + 2 + k) * psi / nd;
    }
}

/* Korthikanti et al. 2022, Section 4.1, in units of s b h bytes, split in
 * the parts tensor parallelism shards and the parts it replicates. For a
 * GPT layer (MHA, f = 4h, dropout): replicated 10 (two LayerNorm inputs 4,
 * QKV and MLP inputs 2 + 2, two dropout masks 1 + 1), sharded 24 (Q, K, V
 * 2 + 2 + 2, projection input 2, GeLU input 8, second linear input 8) and
 * the attention scores 5 a s / h (softmax output 2, its dropout mask 1,
 * dropout output 2). GQA shrinks K and V by kv/a; a gated MLP stores its
 * two f-wide outputs and their product (6 f / h); without dropout the
 * masks and the dropout output vanish. */
double sn_plan_act_per_layer(const struct sn_plan_model *m, double b, double tp, double cp,
                             bool seq_parallel, enum sn_recompute mode)
{
    double s = m->seq, h = m->hidden, a = m->heads;
    double sbh = (s / cp) * b * h;
    double sp_div = seq_parallel ? tp : 1;
    if (mode == SN_RECOMPUTE_FULL)
        return 2 * sbh / sp_div; /* the layer input only */

    double g = (double)m->kv_heads / a, ffr = (double)m->ffn / h;
    double drop = m->dropout ? 1 : 0;
    double replicated = 4 + 2 + 2 + 2 * drop;
    double mlp = m->gated_mlp ? 6 * ffr : 4 * ffr;
    if (m->experts > 1)
        mlp *= m->top_k; /* each token's activations in top_k experts */
    double sharded = 2 + 4 * g + 2 + mlp;
    double scores = mode == SN_RECOMPUTE_NONE ? (2 + 3 * drop) * a * s / h : 0;
    return sbh * (replicated / sp_div + sharded / tp + scores / tp);
}

double sn_plan_required_bw(double bytes, double step_s, double fraction)
{
    return bytes / (step_s * fraction);
}

double sn_plan_young(double ckpt_s, double mtbf_s)
{
    return sqrt(2 * ckpt_s * mtbf_s);
}

double sn_plan_job_mtbf(const struct sn_plan_hardware *hw, double gpus, double servers,
                        double leaves, double power_domains)
{
    double rate = gpus / hw->mtbf_gpu_s + servers / hw->mtbf_server_s + leaves / hw->mtbf_leaf_s +
                  power_domains / hw->mtbf_power_domain_s;
    return 1 / rate;
}

double sn_plan_daly(double ckpt_s, double mtbf_s)
{
    if (ckpt_s >= 2 * mtbf_s)
        return mtbf_s;
    double x = ckpt_s / (2 * mtbf_s);
    return sqrt(2 * ckpt_s * mtbf_s) * (1 + sqrt(x) / 3 + x / 9) - ckpt_s;
}

double sn_plan_daly_efficiency(double tau_s, double ckpt_s, double restart_s, double mtbf_s)
{
    double m = mtbf_s;
    return tau_s / (m * exp(restart_s / m) * expm1((tau_s + ckpt_s) / m));
}

double sn_plan_allreduce_s(double bytes, double n, double busbw)
{
    return n <= 1 ? 0 : 2 * (n - 1) / n * bytes / busbw;
}

double sn_plan_allgather_s(double bytes, double n, double busbw)
{
    return n <= 1 ? 0 : (n - 1) / n * bytes / busbw;
}
