/*
 * sn/plan.h: the training-job planner.
 *
 * Given a transformer model, a parallel layout (TP, PP with interleaving v,
 * DP, CP, EP, ZeRO stage, recompute mode, sequence parallelism, precision,
 * optimizer) and the hardware (GPU, scale-up domain, scale-out bandwidth,
 * storage tiers, failure rates), the planner computes memory per GPU,
 * FLOPs and compute time, communication bytes and time per dimension and
 * fabric, the spec's required-bandwidth figure, step time, MFU, placement
 * advice, and the checkpoint plan (size, write time per tier, job MTBF,
 * Young and Daly intervals, goodput). docs/planner.md gives every formula
 * with its source; the building blocks are public so that each one can be
 * tested against a published number.
 *
 * Units: bytes, seconds, FLOP/s, bytes per second PER DIRECTION (a NIC's
 * line rate; NVLink's "900 GB/s" is bidirectional, i.e. 450e9 here).
 *
 * The module is pure: no printing, no files, no clock, no global state.
 * Name strings in the structs are borrowed (presets, argv or a spec arena),
 * never owned or freed by the planner.
 */
#ifndef SN_PLAN_H
#define SN_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sn/error.h>

struct sn_spec;

/* Defaults of the predictor (docs/planner.md, "Step time", says where
 * each comes from). */
#define SN_PLAN_DEFAULT_GEMM_EFFICIENCY 0.66
#define SN_PLAN_DEFAULT_OVERLAP 0.80         /* of DP and CP communication hidden */
#define SN_PLAN_DEFAULT_KERNEL_OVERHEAD 4e-6 /* seconds per GEMM kernel */
#define SN_PLAN_DEFAULT_HBM_RESERVE (2.0 * 1073741824.0) /* CUDA context, NCCL, workspaces */

/* Hard caps. */
#define SN_PLAN_MAX_TIERS 8 /* storage tiers in one plan */
#define SN_PLAN_MAX_TOP 64  /* layouts kept by a sweep */
#define SN_PLAN_MAX_GPUS (1u << 22)

#define SN_RECOMPUTE_LIST(X)                                                                       \
    X(NONE, "none")           /* store every activation */                                         \
    X(SELECTIVE, "selective") /* recompute the attention core only */                              \
    X(FULL, "full")           /* store each layer's input, recompute layer */
enum sn_recompute {
#define SN_X(name, text) SN_RECOMPUTE_##name,
    SN_RECOMPUTE_LIST(SN_X)
#undef SN_X
        SN_RECOMPUTE_COUNT
};
const char *sn_recompute_name(enum sn_recompute mode);
/* Index of the mode with that name, or SN_RECOMPUTE_COUNT. */
enum sn_recompute sn_recompute_from_name(const char *name);

#define SN_PRECISION_LIST(X)                                                                       \
    X(BF16, "bf16") /* mixed precision: 16-bit weights, grads, activations */                      \
    X(FP32, "fp32") /* full precision */                                                           \
    X(FP8, "fp8")   /* FP8 GEMMs (Transformer Engine), bf16 weights and grads, fp32 master */
enum sn_precision {
#define SN_X(name, text) SN_PRECISION_##name,
    SN_PRECISION_LIST(SN_X)
#undef SN_X
        SN_PRECISION_COUNT
};
const char *sn_precision_name(enum sn_precision precision);
enum sn_precision sn_precision_from_name(const char *name);

#define SN_OPTIMIZER_LIST(X)                                                                       \
    X(ADAM, "adam") /* two moments per parameter */                                                \
    X(SGD, "sgd")   /* momentum only */
enum sn_optimizer {
#define SN_X(name, text) SN_OPTIMIZER_##name,
    SN_OPTIMIZER_LIST(SN_X)
#undef SN_X
        SN_OPTIMIZER_COUNT
};
const char *sn_optimizer_name(enum sn_optimizer optimizer);
enum sn_optimizer sn_optimizer_from_name(const char *name);

/* What a checkpoint holds (docs/planner.md, "Checkpoint"): published
 * sizes follow one of three conventions. FULL: the 16-bit weights, the
 * fp32 master copy and the optimizer moments (14 bytes per parameter for
 * bf16 Adam); MASTER: the fp32 master copy and the moments, without the
 * 16-bit weights (12); WEIGHTS: the 16-bit weights only (2), as released
 * models are. In fp32 training the weights are the master copy: FULL and
 * MASTER both count 4 + moments. */
#define SN_CKPT_FORMAT_LIST(X)                                                                     \
    X(FULL, "full")     /* 16-bit weights + fp32 master + moments */                               \
    X(MASTER, "master") /* fp32 master + moments */                                                \
    X(WEIGHTS, "weights") /* the training precision's weights only */
enum sn_ckpt_format {
#define SN_X(name, text) SN_CKPT_FORMAT_##name,
    SN_CKPT_FORMAT_LIST(SN_X)
#undef SN_X
        SN_CKPT_FORMAT_COUNT
};
const char *sn_ckpt_format_name(enum sn_ckpt_format format);
enum sn_ckpt_format sn_ckpt_format_from_name(const char *name);

/* The parallel dimensions, in Megatron's rank order, innermost first: TP
 * ranks are adjacent, then CP, then DP (EP is carved out of DP), then PP. */
#define SN_PLAN_DIM_LIST(X) X(TP, "tp") X(CP, "cp") X(EP, "ep") X(DP, "dp") X(PP, "pp")
enum sn_plan_dim {
#define SN_X(name, text) SN_PLAN_DIM_##name,
    SN_PLAN_DIM_LIST(SN_X)
#undef SN_X
        SN_PLAN_DIM_COUNT
};
const char *sn_plan_dim_name(enum sn_plan_dim dim);

/* A transformer architecture. */
struct sn_plan_model {
    const char *name;
    uint32_t layers;
    uint32_t hidden;      /* h */
    uint32_t heads;       /* a, attention (query) heads */
    uint32_t kv_heads;    /* key/value heads (GQA); = heads for MHA */
    uint32_t ffn;         /* MLP inner size f (4h in GPT) */
    uint32_t vocab;       /* V */
    uint32_t seq;         /* s, training sequence length */
    uint32_t experts;     /* MoE experts per layer; 1 = dense */
    uint32_t top_k;       /* experts each token visits; 1 for dense */
    bool gated_mlp;       /* SwiGLU: three f x h matrices instead of two */
    bool biases;          /* linear layers carry biases (GPT) */
    bool layernorm;       /* LayerNorm (2h params); false: RMSNorm (h) */
    bool tied_embeddings; /* output layer shares the input embedding */
    bool learned_pos;     /* learned position embedding (s x h) */
    bool dropout;         /* dropout masks stored (1 byte per element) */
    /* MoE details (DeepSeek-V3, DeepSeek-AI 2024, Section 2 and 4.2). */
    uint32_t shared_experts; /* experts every token visits, besides top_k routed ones */
    uint32_t dense_layers;   /* the first layers are dense MLPs (of dense_ffn) */
    uint32_t dense_ffn;      /* MLP inner size of those layers; 0: ffn */
    /* Multi-head latent attention (MLA; DeepSeek-V2/V3); kv_lora_rank 0: ordinary attention. */
    uint32_t q_lora_rank;  /* query compression; 0: no query compression */
    uint32_t kv_lora_rank; /* key/value compression dimension */
    uint32_t qk_nope_dim;  /* per-head query/key dimension without RoPE */
    uint32_t qk_rope_dim;  /* per-head decoupled RoPE dimension (key shared by the heads) */
    uint32_t v_dim;        /* per-head value dimension */
};

/* The training configuration and parallel layout. */
struct sn_plan_train {
    uint32_t gpus;         /* must equal tp x cp x dp x pp */
    uint64_t global_batch; /* sequences per step */
    uint32_t micro_batch;  /* b, sequences per micro-batch per DP rank */
    uint32_t tp, pp, dp, cp, ep;
    uint32_t vpp;  /* interleaving: model chunks per stage, v >= 1 */
    uint32_t zero; /* ZeRO stage 0..3 (1 = distributed optimizer) */
    enum sn_recompute recompute;
    bool seq_parallel; /* Megatron sequence parallelism (needs tp > 1) */
    enum sn_precision precision;
    enum sn_optimizer optimizer;
    double train_tokens; /* T, for the time-to-train figure */
    bool unfused_attention; /* s x s scores written to HBM (before FlashAttention, 2022) */
    double capacity_factor; /* MoE expert capacity / even share (GShard); 0 or 1: dropless */
};

/* A storage tier for checkpoints. per_server: the figures are per server
 * and scale with the servers of the job (local NVMe); otherwise they are
 * the aggregate of a shared tier. */
struct sn_plan_storage {
    const char *name;
    double write_bytes_per_s;
    double read_bytes_per_s;
    bool per_server;
};

/* The hardware the job runs on. */
struct sn_plan_hardware {
    const char *gpu_name;
    double peak_flops; /* dense BF16 FLOP/s per GPU (no sparsity) */
    double hbm_bytes;
    double hbm_bytes_per_s;
    uint32_t gpus_per_server;
    uint32_t servers_per_supernode;
    uint32_t scaleup_gpus; /* GPUs in one scale-up (NVLink) domain */
    uint32_t supernodes;   /* available; 0 = not limited */
    uint32_t leaves_per_supernode;
    uint32_t power_domains_per_supernode;
    double scaleup_bytes_per_s;  /* per GPU, per direction */
    double scaleout_bytes_per_s; /* per GPU, per direction */
    double scaleup_efficiency;   /* bus bandwidth / nominal, default 0.80 */
    double scaleout_efficiency;  /* default 0.75 */
    double compute_efficiency;   /* achieved / peak while computing, 0.5 */
    double overlap;              /* fraction of DP and CP time hidden, 0 */
    double hbm_reserve_bytes;    /* kept free (CUDA context, buffers), 0 */
    uint32_t n_storage;
    struct sn_plan_storage storage[SN_PLAN_MAX_TIERS];
    /* Mean time between failures of one component, seconds; 0 (or
     * infinity): that component is taken never to fail. */
    double mtbf_gpu_s;
    double mtbf_server_s;
    double mtbf_leaf_s;
    double mtbf_power_domain_s;
    /* The predictor (docs/planner.md, "Step time"). compute_efficiency
     * above is the fraction of peak a large, compute-bound GEMM reaches;
     * smaller GEMMs lose more on the roofline. */
    double peak_fp8_flops;     /* dense FP8 per GPU; 0: twice peak_flops */
    double latency_base_s;     /* fixed cost of one collective, 8.4 us */
    double latency_scaleup_s;  /* per ring step inside a scale-up domain, 3.4 us */
    double latency_scaleout_s; /* per hop across the scale-out fabric, 10 us */
    double kernel_overhead_s;  /* fixed cost of one GEMM kernel, 4 us */
    double ep_overlap;         /* fraction of EP all-to-all hidden, 0 */
};

/* Planning options: the spec's rules and what-ifs. */
struct sn_plan_options {
    bool strict;            /* TP must fit inside one scale-up domain */
    double target_step_s;   /* for the required bandwidth; 0: the estimate */
    double comm_fraction;   /* of the step allowed for communication, 0.2 */
    double bw_headroom;     /* protocol/congestion headroom, 0.3 */
    double ckpt_interval_s; /* the planned interval I, 30 min */
    double ckpt_window_s;   /* write must finish within; 0: I / 6 */
    double restart_s;       /* time to restart a job after a failure, 10 min */
    uint32_t ckpt_tier;     /* storage tier for Young/Daly; UINT32_MAX: best */
    double ckpt_bytes_per_param; /* checkpoint size; 0: from ckpt_format */
    enum sn_ckpt_format ckpt_format; /* what a checkpoint holds (FULL by default) */
    bool local_ckpt;             /* per-server tiers may hold checkpoints (risky) */
};

struct sn_plan_input {
    struct sn_plan_model model;
    struct sn_plan_train train;
    struct sn_plan_hardware hw;
    struct sn_plan_options opt;
};

/* ---- results ---------------------------------------------------------- */

struct sn_plan_memory {
    double params_total;        /* whole model */
    double params_active;       /* per token (MoE: top-k experts) */
    double params_per_gpu;      /* on the first pipeline stage */
    uint32_t stage_layers;      /* layers on the first stage, ceil(L/p) */
    uint32_t inflight;          /* micro-batches in flight on stage 0 */
    double act_per_layer_bytes; /* one layer, one micro-batch */
    double weights_bytes;
    double grads_bytes;
    double optimizer_bytes;
    double activations_bytes;
    double total_bytes;
    double hbm_bytes;
    double free_bytes; /* hbm - reserve - total; < 0: short by */
    bool fits;
    uint32_t worst_stage; /* the pipeline stage these figures are for */
};

struct sn_plan_compute {
    uint64_t microbatches; /* m per step per pipeline */
    double tokens_per_step;
    double model_flops_6n;  /* 6 N tokens: the MFU basis */
    double model_flops;     /* matmul count, no recompute */
    double hardware_flops;  /* with recompute: the HFU basis */
    double compute_s;       /* per GPU at peak x efficiency */
    double bubble_fraction; /* (p - 1) / (v m) */
    double bubble_s;
    double efficiency;     /* achieved / peak while computing (the GEMM model's result) */
    double microbatch_s;   /* forward + backward of one micro-batch on the slowest stage */
};

struct sn_plan_comm_dim {
    uint32_t group;   /* ranks in one group */
    bool scaleout;    /* the group spans scale-up domains */
    double bytes;     /* sent per GPU per step */
    double time_s;    /* at bus bandwidth */
    double exposed_s; /* not hidden behind compute */
};

struct sn_plan_comm {
    struct sn_plan_comm_dim dim[SN_PLAN_DIM_COUNT];
    double scaleup_bytes; /* per GPU per step */
    double scaleout_bytes;
    double time_s;
    double exposed_s;
};

struct sn_plan_bandwidth {
    double target_step_s;
    double comm_fraction;
    double headroom;
    double scaleup_need_bytes_per_s; /* bytes / (T f), before headroom */
    double scaleout_need_bytes_per_s;
    double scaleup_provision_bytes_per_s; /* x (1 + headroom) */
    double scaleout_provision_bytes_per_s;
    bool scaleup_ok; /* provision <= available */
    bool scaleout_ok;
};

struct sn_plan_perf {
    double step_s;
    double tokens_per_s;
    double mfu;     /* 6N basis */
    double hfu;     /* hardware FLOPs basis */
    double train_s; /* for train.train_tokens; 0 when none */
};

struct sn_plan_placement {
    uint32_t domain_for_tp; /* smallest scale-up domain keeping TP inside */
    uint32_t domain_for_tp_cp;
    uint32_t domain_for_stage; /* one pipeline stage: tp x cp x dp */
    bool tp_inside;
    double tp_scaleout_step_s;   /* step time if TP crossed scale-out */
    double tp_scaleout_slowdown; /* that / step time */
};

struct sn_plan_ckpt_tier {
    double write_s;
    double read_s;
    bool meets_window;
    bool usable; /* durable shared storage, or a local tier with opt.local_ckpt */
};

struct sn_plan_checkpoint {
    enum sn_ckpt_format format;       /* the input's; named in the output */
    double bytes_per_param_weights;   /* the weights counted (FULL, WEIGHTS; fp32 MASTER) */
    double bytes_per_param_optimizer; /* fp32 master (mixed precision) + moments */
    double weights_bytes;
    double optimizer_bytes;
    double total_bytes;
    double interval_s;
    double window_s;
    struct sn_plan_ckpt_tier tier[SN_PLAN_MAX_TIERS];
    uint32_t tier_used; /* for the intervals; SN_PLAN_NO_TIER: none */
    uint32_t servers, supernodes, leaves, power_domains; /* job footprint */
    double job_mtbf_s;
    double young_s; /* sqrt(2 C M) */
    double daly_s;
    double lost_per_failure_s; /* restart + half an interval + write */
    double goodput;            /* useful fraction of wall time at Daly */
    bool no_failures;          /* every MTBF infinite: no checkpoint need from failures */
};
#define SN_PLAN_NO_TIER UINT32_MAX

struct sn_plan_result {
    struct sn_plan_memory memory;
    struct sn_plan_compute compute;
    struct sn_plan_comm comm;
    struct sn_plan_bandwidth bandwidth;
    struct sn_plan_perf perf;
    struct sn_plan_placement placement;
    struct sn_plan_checkpoint ckpt;
};

/* ---- presets ---------------------------------------------------------- */

/* The model preset with that name (case-insensitive), or NULL. */
const struct sn_plan_model *sn_plan_model_preset(const char *name);
/* The i-th model preset, NULL past the end (for listings). */
const struct sn_plan_model *sn_plan_model_preset_at(size_t i);

/* Fills hw with the GPU preset's figures (peak, HBM, HBM bandwidth,
 * per-GPU scale-up bandwidth and domain, server size); leaves the rest.
 * Returns false when there is no such preset. */
bool sn_plan_gpu_preset(const char *name, struct sn_plan_hardware *hw);
/* Name of the i-th GPU preset, NULL past the end. */
const char *sn_plan_gpu_preset_name_at(size_t i);

/* Fills in with defaults: no model, a 1-GPU layout, b = 1, bf16, Adam,
 * ZeRO 0, no recompute, H100 SXM hardware in 8-GPU servers, default
 * efficiencies, failure rates and options (docs/planner.md lists them). */
void sn_plan_input_defaults(struct sn_plan_input *in);

/* Takes hardware figures from a cluster spec: the GPU, server and
 * scale-up domain of template_name, its leaf and power-domain counts, the
 * number of supernodes built from it, the fabric efficiency, and the
 * storage tier storage_name (NULL: every tier). Only reads the spec.
 * Fields the spec does not state keep their value in *out. Errors name
 * the missing template or tier or a broken reference (SN_ERR_NOTFOUND,
 * SN_ERR_INVALID). */
SN_MUST_CHECK enum sn_err sn_plan_hardware_from_spec(const struct sn_spec *spec,
                                                     const char *template_name,
                                                     const char *storage_name,
                                                     struct sn_plan_hardware *out,
                                                     struct sn_error *err);

/* ---- building blocks (each reproduces a published formula) ----------- */

/* Parameters of a model (general: GQA, gated MLP, MoE, biases, norms). */
double sn_plan_params(const struct sn_plan_model *m);
/* Parameters per token (MoE counts top_k experts). */
double sn_plan_params_active(const struct sn_plan_model *m);
/* Narayanan et al. 2021, Section 5.1 and Appendix: 12 l h^2 (1 + 13/(12h) +
 * (V + s)/(12 l h)). */
double sn_plan_params_megatron(double layers, double hidden, double vocab, double seq);
/* Narayanan et al. 2021, Section 5.1: end-to-end time ~ 8 T P / (n X). */
double sn_plan_train_time_megatron(double tokens, double params, double gpus, double flops_per_gpu);
/* Narayanan et al. 2021, Section 5.1 and Appendix: FLOPs per iteration with full
 * recompute, 96 B s l h^2 (1 + s/(6h) + V/(16 l h)). */
double sn_plan_flops_megatron(double batch, double seq, double layers, double hidden, double vocab);
/* Rajbhandari et al. 2020, Figure 1: model-state bytes per GPU for psi
 * parameters, optimizer multiplier k, nd data-parallel ranks, stage 0..3,
 * with 2-byte weights and gradients. */
double sn_plan_zero_bytes(double psi, double k, double nd, unsigned stage);
/* Korthikanti et al. 2022, Section 4: activation bytes of one layer and
 * one micro-batch of b sequences (with the generalisation to GQA, gated
 * MLP and no dropout documented in docs/planner.md). */
double sn_plan_act_per_layer(const struct sn_plan_model *m, double b, double tp, double cp,
                             bool seq_parallel, enum sn_recompute mode);
/* The spec's method: bytes / (step_s x fraction), bytes per second. */
double sn_plan_required_bw(double bytes, double step_s, double fraction);
/* Young 1974: sqrt(2 C M). */
double sn_plan_young(double ckpt_s, double mtbf_s);
/* Daly 2006, Section 4 (higher-order estimate): sqrt(2CM)[1 + sqrt(C/2M)/3 + (C/2M)/9] - C for
 * C < 2M, else M. */
double sn_plan_daly(double ckpt_s, double mtbf_s);
/* MTBF of a job's footprint: 1 / (gpus / MTBF_gpu + servers / MTBF_server +
 * leaves / MTBF_leaf + power_domains / MTBF_pd), the components' failures
 * independent (hw's mtbf_* fields). Used by the planner and by snd. */
double sn_plan_job_mtbf(const struct sn_plan_hardware *hw, double gpus, double servers,
                        double leaves, double power_domains);
/* Daly 2006 (expected wall time, exponential failures): useful fraction of wall time with
 * interval tau, checkpoint C, restart R and MTBF M:
 * tau / (M e^(R/M) (e^((tau + C)/M) - 1)). */
double sn_plan_daly_efficiency(double tau_s, double ckpt_s, double restart_s, double mtbf_s);
/* Ring collective time for S bytes over n ranks at bus bandwidth busbw:
 * all-reduce 2(n-1)/n S / busbw; all-gather or reduce-scatter
 * (n-1)/n S / busbw (nccl-tests PERFORMANCE.md). */
double sn_plan_allreduce_s(double bytes, double n, double busbw);
double sn_plan_allgather_s(double bytes, double n, double busbw);

/* ---- the plan --------------------------------------------------------- */

/* Checks that the input is complete and consistent: every conflict is an
 * SN_ERR_INVALID error naming it (tp x cp x dp x pp != gpus, tp not
 * dividing heads, tp larger than the scale-up domain under the strict
 * rule, micro-batch x dp not dividing the global batch, ...). */
SN_MUST_CHECK enum sn_err sn_plan_check(const struct sn_plan_input *in, struct sn_error *err);

/* Checks the input, then computes every figure of the plan into *out. */
SN_MUST_CHECK enum sn_err sn_plan_evaluate(const struct sn_plan_input *in,
                                           struct sn_plan_result *out, struct sn_error *err);

/* ---- the sweep -------------------------------------------------------- */

#define SN_PLAN_DROP_LIST(X)                                                                       \
    X(MEMORY, "does not fit in memory")                                                            \
    X(TP_DOMAIN, "tp larger than the scale-up domain")                                             \
    X(BATCH, "micro-batch x dp does not divide the global batch")                                  \
    X(LAYERS, "pp larger than the layer count")
enum sn_plan_drop {
#define SN_X(name, text) SN_PLAN_DROP_##name,
    SN_PLAN_DROP_LIST(SN_X)
#undef SN_X
        SN_PLAN_DROP_COUNT
};
const char *sn_plan_drop_name(enum sn_plan_drop drop);

struct sn_plan_sweep_entry {
    struct sn_plan_train train; /* the layout */
    struct sn_plan_result result;
};

struct sn_plan_sweep {
    uint64_t evaluated; /* layouts evaluated */
    uint64_t valid;     /* fitting and within the rules */
    uint64_t dropped[SN_PLAN_DROP_COUNT];
    struct sn_plan_train dropped_example[SN_PLAN_DROP_COUNT];
    double dropped_example_free_bytes; /* of the memory example (< 0) */
    uint32_t n_top;
    struct sn_plan_sweep_entry top[SN_PLAN_MAX_TOP]; /* fastest first */
};

/* Enumerates valid (tp, pp, dp, cp, ep, interleaving, micro-batch, ZeRO,
 * recompute) layouts of in->train.gpus GPUs (precision and optimizer as
 * in the input; ep over the divisors of the experts that divide dp,
 * interleaving over 1, 2, 3, 4, 6 and 8), evaluates each with sn_plan_evaluate()'s own functions, drops
 * those that do not fit or break a rule, and keeps the top_n (at most
 * SN_PLAN_MAX_TOP) fastest by step time, ties broken by less memory, then
 * by enumeration order. */
SN_MUST_CHECK enum sn_err sn_plan_sweep_run(const struct sn_plan_input *in, uint32_t top_n,
                                            struct sn_plan_sweep *out, struct sn_error *err);

/* Why entry i of a sweep lost to the winner: the step-time component that
 * grew most (compute, bubble, or a dimension's exposed communication).
 * Writes a short phrase into buf and returns buf. */
char *sn_plan_sweep_reason(const struct sn_plan_sweep *sweep, uint32_t i, char *buf, size_t len);

/* Why the winner beats the runner-up: both layouts, the step-time gap,
 * and the (up to three) components that differ most, as the runner-up's
 * excess (compute, bubble, a dimension's exposed communication). Writes
 * into buf (truncated to len) and returns buf. */
char *sn_plan_sweep_explain(const struct sn_plan_sweep *sweep, char *buf, size_t len);

/* ---- the supernode size sweep ------------------------------------------ */

/* The size question (docs/cmd-design.md, "sn design sweep"): one training
 * job of in->train.gpus GPUs on scale-up domains of each size, the rest of
 * the hardware as given. Per size the planner's sweep picks the fastest
 * layout with TP (and EP) inside one domain; a fault takes down the whole
 * job (Daly goodput over the job's footprint), the failed domain is
 * repaired while a spare domain takes its place, and the cluster is built
 * of whole domains: ceil(gpus / size) for the job plus the spares. */
#define SN_PLAN_MAX_SIZES 16
struct sn_plan_size_options {
    double repair_s;         /* time to repair a failed domain (MTTR), 48 h */
    double gpu_hour_cost;    /* cost of one installed GPU-hour (any unit), 1 */
    double it_w_per_gpu;     /* IT power per installed GPU (the BOM's), W */
    double pue;              /* facility / IT power; 0: 1 */
    uint32_t min_spares;     /* spare domains at least, 1 */
};
struct sn_plan_size_row {
    uint32_t size;
    bool feasible;
    char why_not[96];
    uint32_t domains;         /* job domains + spares */
    uint32_t spares;
    uint32_t installed_gpus;  /* domains x size */
    uint32_t idle_gpus;       /* in the job's domains, not used by the job */
    struct sn_plan_train layout;
    double step_s, tokens_per_s, mfu;
    double exposed_comm_s;    /* of the winner's step */
    double job_mtbf_s, goodput;
    double domain_mtbf_s;
    double useful_fraction;   /* job gpus x goodput / installed */
    uint32_t blast_gpus;      /* GPUs one domain fault takes out (the domain) */
    double facility_w;        /* installed x IT per GPU x PUE */
    double w_per_useful_gpu;
    double cost_per_useful_gpu_hour;
    double cost_per_mtoken;   /* per million useful tokens */
};
struct sn_plan_size_sweep {
    uint32_t n;
    struct sn_plan_size_row rows[SN_PLAN_MAX_SIZES];
    uint32_t best; /* UINT32_MAX: none feasible */
    char reason[320];
};
/* Runs the sweep over sizes[0..n) (n <= SN_PLAN_MAX_SIZES). Errors: no
 * sizes, a zero size, the planner's own on the base input. */
SN_MUST_CHECK enum sn_err sn_plan_size_sweep_run(const struct sn_plan_input *base,
                                                 const uint32_t *sizes, uint32_t n,
                                                 const struct sn_plan_size_options *opt,
                                                 struct sn_plan_size_sweep *out,
                                                 struct sn_error *err);

/* A job mix on each size (sn design sweep --job-mix): every job runs in
 * its own whole domains (its row is the one-job sweep's at that size), and
 * the jobs share one pool of spare domains sized for all their domains'
 * failures: ceil(sum of job domains x domain failure rate x repair), at
 * least min_spares. A size is feasible when every job has a layout there.
 * Jobs of different models have no common token, so the best size has the
 * lowest cost per useful GPU-hour at the fastest step: each job's useful
 * GPUs are weighted by its fastest step over the sizes / its step at this
 * size (for one job this ranks the sizes as cost per token does). */
#define SN_PLAN_MAX_MIX 8
struct sn_plan_size_mix_row {
    uint32_t size;
    bool feasible;
    char why_not[128];
    struct sn_plan_size_row job[SN_PLAN_MAX_MIX]; /* each job alone at this size */
    uint32_t job_domains;     /* sum over the jobs */
    uint32_t spares;          /* shared */
    uint32_t installed_gpus;  /* (job domains + spares) x size */
    double useful_gpus;       /* sum of job gpus x goodput */
    double goodput;           /* useful GPUs / job GPUs */
    double useful_fraction;   /* useful GPUs / installed */
    uint32_t blast_gpus;
    double facility_w;
    double w_per_useful_gpu;
    double cost_per_useful_gpu_hour;
    double speed_weighted_gpus;    /* sum of job gpus x goodput x fastest step / step */
    double cost_per_fast_gpu_hour; /* installed x cost / speed-weighted GPUs: the criterion */
};
struct sn_plan_size_mix {
    uint32_t n, n_jobs;
    struct sn_plan_size_mix_row rows[SN_PLAN_MAX_SIZES];
    uint32_t best; /* UINT32_MAX: none feasible */
    char reason[320];
};
/* Runs the mix jobs[0..n_jobs) (1 <= n_jobs <= SN_PLAN_MAX_MIX, each a
 * full planner input on the same hardware) over sizes[0..n). Errors as
 * sn_plan_size_sweep_run(). */
SN_MUST_CHECK enum sn_err sn_plan_size_mix_run(const struct sn_plan_input *jobs, uint32_t n_jobs,
                                               const uint32_t *sizes, uint32_t n,
                                               const struct sn_plan_size_options *opt,
                                               struct sn_plan_size_mix *out,
                                               struct sn_error *err);

/* ---- the predictor ---------------------------------------------------- */

/* Fraction of the compute peak that an operation of `flops` FLOPs moving
 * `bytes` bytes through HBM reaches on the roofline (Williams, Waterman
 * and Patterson 2009), smoothed: 1 / sqrt(1 + (ridge / intensity)^2), with
 * ridge = peak / HBM bandwidth and intensity = flops / bytes. 1 for a
 * compute-bound operation far above the ridge, intensity / ridge far
 * below it. */
double sn_plan_roofline(double flops, double bytes, double peak_flops, double hbm_bytes_per_s);
/* The same for a GEMM of an m x k by a k x n matrix with elements of
 * elem_bytes: flops 2 m n k, bytes elem (m k + k n + m n). */
double sn_plan_gemm_efficiency(double m, double n, double k, double elem_bytes, double peak_flops,
                               double hbm_bytes_per_s);

/* A fit of the compute efficiency to a measured run. */
struct sn_plan_calibration {
    double measured_step_s;
    double predicted_step_s;      /* with the input's efficiency */
    double error_before;          /* predicted / measured - 1 */
    double compute_efficiency;    /* the fitted large-GEMM efficiency */
    double fitted_step_s;         /* predicted with the fitted efficiency */
    double residual;              /* fitted / measured - 1; 0 unless the fit hit a bound */
};

/* Fits hw.compute_efficiency of *in (in (0, 1]) so that the predicted
 * step time equals measured_step_s (bisection on the monotone step time),
 * writes the fit into *out and the fitted efficiency into
 * in->hw.compute_efficiency. A measured MFU converts to a step time with
 * sn_plan_step_from_mfu(). Errors: the input's own (SN_ERR_INVALID), a
 * non-positive measurement. */
SN_MUST_CHECK enum sn_err sn_plan_calibrate(struct sn_plan_input *in, double measured_step_s,
                                            struct sn_plan_calibration *out, struct sn_error *err);
/* Step time that gives MFU `mfu` on the 6N basis for the input's model,
 * batch and GPUs (0 when the input is incomplete). */
double sn_plan_step_from_mfu(const struct sn_plan_input *in, double mfu);

/* ---- measured runs ---------------------------------------------------- */

/* What a practitioner measured (--measured KIND=VALUE): the step time,
 * the throughput in tokens per second, or the achieved FLOP/s per GPU in
 * the hardware count (Megatron-LM's "TFLOP/s/GPU": matmuls with
 * recompute, the HFU basis). */
#define SN_PLAN_MEASURE_LIST(X)                                                                    \
    X(STEP, "step")                                                                                \
    X(TOKENS_PER_S, "tokens-per-s")                                                                \
    X(TFLOPS_PER_GPU, "tflops-per-gpu")
enum sn_plan_measure {
#define SN_X(name, text) SN_PLAN_MEASURE_##name,
    SN_PLAN_MEASURE_LIST(SN_X)
#undef SN_X
        SN_PLAN_MEASURE_COUNT
};
const char *sn_plan_measure_name(enum sn_plan_measure kind);
enum sn_plan_measure sn_plan_measure_from_name(const char *name);

/* A measured run read through the plan of its configuration: every
 * figure twice, measured and predicted (docs/planner.md, "Measured
 * runs"). MFU has two conventions: 6N (6 x active parameters per token,
 * PaLM's and Llama 3's) and with attention (the Megatron matmul count
 * without recompute: the linear layers, the s x s attention core and the
 * logits). HFU counts what the GPUs computed (with recompute). */
struct sn_plan_measured_figures {
    double step_s;
    double tokens_per_s;
    double hw_flops_per_gpu;    /* hardware count (with recompute) per second */
    double model_flops_per_gpu; /* Megatron count without recompute per second */
    double mfu_6n;
    double mfu_attention;
    double hfu;
    double train_s;            /* train.train_tokens / tokens_per_s; 0 without */
    double train_megatron_s;   /* Narayanan et al.'s 8 T P / (n X) at this X */
};
struct sn_plan_measured {
    enum sn_plan_measure kind;
    double value;
    struct sn_plan_measured_figures measured, predicted;
    double error;              /* predicted step / measured step - 1 */
    double gap_s;              /* measured - predicted step */
    double fitted_efficiency;  /* the large-GEMM efficiency that explains the step */
    double fitted_compute_s;   /* the compute term at that efficiency */
    double fit_residual;       /* 0 unless compute alone cannot explain it */
};

/* The step time a measurement states for the plan's batch and GPUs, or 0
 * when the value is not positive. */
double sn_plan_measured_step(const struct sn_plan_input *in, const struct sn_plan_result *r,
                             enum sn_plan_measure kind, double value);
/* Reads a measurement through the plan *r of *in (from sn_plan_evaluate)
 * and fits the compute efficiency that explains it (on a copy; *in is not
 * changed). Errors: a non-positive value, an unknown kind (SN_ERR_INVALID). */
SN_MUST_CHECK enum sn_err sn_plan_measure(const struct sn_plan_input *in,
                                          const struct sn_plan_result *r,
                                          enum sn_plan_measure kind, double value,
                                          struct sn_plan_measured *out, struct sn_error *err);

/* A fit of the predictor to several measured runs on the same hardware
 * (--calibrate FILE.json): the compute efficiency, and with fit_comm the
 * scale-out bus efficiency too, minimising the sum of squared log errors
 * of the step times. */
#define SN_PLAN_FIT_MAX_RUNS 64
struct sn_plan_fit {
    size_t n;
    bool fit_comm;
    double compute_efficiency;
    double scaleout_efficiency; /* fitted with fit_comm, else the runs' own */
    double before[SN_PLAN_FIT_MAX_RUNS]; /* predicted step / measured - 1, as given */
    double after[SN_PLAN_FIT_MAX_RUNS];  /* with the fitted efficiencies */
    double rms_before, rms_after;        /* root mean square of the log errors */
};
/* runs[i] with measured step times step_s[i] (n in 1..SN_PLAN_FIT_MAX_RUNS;
 * fit_comm needs n >= 2). Errors: an input the planner refuses, runs on
 * different GPUs (by hw.gpu_name and peak), non-positive times. */
SN_MUST_CHECK enum sn_err sn_plan_fit_runs(const struct sn_plan_input *runs, const double *step_s,
                                           size_t n, bool fit_comm, struct sn_plan_fit *out,
                                           struct sn_error *err);

/* A dense peak stated for a known GPU that is in fact its sparse (2:4)
 * datasheet figure: the name of that GPU, or NULL when peak_flops is not
 * a known sparse figure (within 1%). */
const char *sn_plan_sparse_peak(double peak_flops);

/* ---- validation against published runs -------------------------------- */

#define SN_PLAN_METRIC_LIST(X)                                                                     \
    X(HFU_FLOPS, "TFLOP/s per GPU (Megatron count, with recompute)")                               \
    X(MFU, "MFU (6N tokens)")                                                                      \
    X(MFU_FLOPS, "TFLOP/s per GPU (model FLOPs, causal attention, no recompute)")                                                  \
    X(STEP_S, "step time")                                                                         \
    X(GPU_HOURS_PER_T, "GPU hours per trillion tokens")
enum sn_plan_metric {
#define SN_X(name, text) SN_PLAN_METRIC_##name,
    SN_PLAN_METRIC_LIST(SN_X)
#undef SN_X
        SN_PLAN_METRIC_COUNT
};
const char *sn_plan_metric_name(enum sn_plan_metric metric);

struct sn_plan_validation {
    const char *name;    /* the run */
    const char *source;  /* paper, table or section of the published figure */
    const char *note;    /* assumptions, and the reason when the error is large */
    enum sn_plan_metric metric;
    double published;    /* in the metric's unit (TFLOP/s, fraction, s, h) */
    double predicted;
    double error;        /* predicted / published - 1 */
    double bound;        /* |error| must stay within this (0.15 unless explained) */
    struct sn_plan_input input;
    /* After calibration on a different run of the same GPU (the GPU's
     * reference run; for the reference itself, the second one): the
     * compute efficiency fitted to that run's published figure. */
    size_t calibrated_on;       /* 0-based row; SIZE_MAX: no other run on this GPU */
    double calibrated_efficiency;
    double calibrated;          /* the prediction after calibration */
    double calibrated_error;    /* calibrated / published - 1 */
    double calibrated_bound;    /* 0.07 unless explained */
};

/* The GPU preset of run i ("a100", "h100", ...), NULL past the end. */
const char *sn_plan_validation_gpu(size_t i);
/* Number of published runs in the validation table. */
size_t sn_plan_validation_count(void);
/* Builds run i's input from its published configuration, evaluates it and
 * fills *out. SN_ERR_NOTFOUND past the end; the planner's own errors
 * otherwise (which would be a bug in the table). */
SN_MUST_CHECK enum sn_err sn_plan_validation_run(size_t i, struct sn_plan_validation *out,
                                                 struct sn_error *err);

#endif /* SN_PLAN_H */
