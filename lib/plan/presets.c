/*
 * Presets of the planner: published model architectures, GPU figures and
 * the documented defaults of every other input (docs/planner.md, section
 * "Defaults", gives each source).
 *
 * Invariants: every model row is a complete architecture (heads divide the
 * hidden size, kv_heads divide heads); every GPU row states dense BF16
 * FLOP/s (without 2:4 sparsity) and its scale-up bandwidth per GPU PER
 * DIRECTION (NVIDIA quotes NVLink bidirectionally: 900 GB/s for NVLink 4
 * is 450 GB/s each way). Tables are read-only; lookups are linear (a dozen
 * rows).
 */
#include <sn/headroom.h>
#include <sn/plan.h>

#include <ctype.h>
#include <string.h>

/* Architectures. GPT-3: Brown et al. 2020, Table 2.1 (vocabulary 50257,
 * the GPT-2 BPE). Llama 3: Llama Team 2024, "The Llama 3 Herd of Models",
 * Table 3. MT-NLG 530B: Smith et al. 2022, Section 3 (Table 1). 1T:
 * Narayanan et al. 2021, Table 1 (vocabulary 51200, padded). Mixtral 8x7B:
 * Jiang et al. 2024, Table 1. */
#define GPT_POS(l, h, a, v, pos)                                                                   \
    .layers = (l), .hidden = (h), .heads = (a), .kv_heads = (a), .ffn = 4 * (h), .vocab = (v),     \
    .seq = 2048, .experts = 1, .top_k = 1, .gated_mlp = false, .biases = true, .layernorm = true,  \
    .tied_embeddings = true, .learned_pos = (pos), .dropout = true
#define GPT(l, h, a, v) GPT_POS(l, h, a, v, true)
#define LLAMA(l, h, f, a, kv, v, s, e, k)                                                          \
    .layers = (l), .hidden = (h), .heads = (a), .kv_heads = (kv), .ffn = (f), .vocab = (v),        \
    .seq = (s), .experts = (e), .top_k = (k), .gated_mlp = true, .biases = false,                  \
    .layernorm = false, .tied_embeddings = false, .learned_pos = false, .dropout = false

static const struct sn_plan_model model_presets[] = {
    {.name = "gpt3-175b", GPT(96, 12288, 96, 50257)},
    {.name = "llama3-8b", LLAMA(32, 4096, 14336, 32, 8, 128256, 8192, 1, 1)},
    {.name = "llama3-70b", LLAMA(80, 8192, 28672, 64, 8, 128256, 8192, 1, 1)},
    {.name = "llama3-405b", LLAMA(126, 16384, 53248, 128, 8, 128256, 8192, 1, 1)},
    {.name = "megatron-530b", GPT(105, 20480, 128, 50257)},
    {.name = "megatron-1t", GPT(128, 25600, 160, 51200)},
    {.name = "mixtral-8x7b", LLAMA(32, 4096, 14336, 32, 8, 32000, 4096, 8, 2)},
    /* DeepSeek-V3: DeepSeek-AI 2024, "DeepSeek-V3 Technical Report",
     * Section 4.2 (61 layers, h 7168, 128 heads, MLA with r_q 1536, r_kv
     * 512, d_nope 128, d_rope 64, d_v 128; the first 3 layers dense with
     * an 18432-wide MLP, then 1 shared and 256 routed experts of 2048,
     * 8 routed per token; vocabulary 128K = 129280 in its released
     * config; sequence 4K in pre-training, Section 4.3). 671B total, 37B
     * activated (Section 1); the multi-token-prediction module is left out,
     * as it is from the 671B. */
    {.name = "deepseek-v3", LLAMA(61, 7168, 2048, 128, 128, 129280, 4096, 256, 8),
     .shared_experts = 1, .dense_layers = 3, .dense_ffn = 18432, .q_lora_rank = 1536,
     .kv_lora_rank = 512, .qk_nope_dim = 128, .qk_rope_dim = 64, .v_dim = 128},
    /* BLOOM-176B: BigScience 2022, "BLOOM: A 176B-Parameter Open-Access
     * Multilingual Language Model", Table 3 (70 layers, h 14336, 112
     * heads, vocabulary 250,680, sequence 2048, ALiBi: no position
     * embedding; an embedding LayerNorm, counted here as one norm). */
    {.name = "bloom-176b", GPT_POS(70, 14336, 112, 250680, false)},
};
#define N_MODELS (sizeof(model_presets) / sizeof(model_presets[0]))

static int name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

const struct sn_plan_model *sn_plan_model_preset(const char *name)
{
    for (size_t i = 0; name && i < N_MODELS; i++)
        if (name_eq(model_presets[i].name, name))
            return &model_presets[i];
    return NULL;
}

const struct sn_plan_model *sn_plan_model_preset_at(size_t i)
{
    return i < N_MODELS ? &model_presets[i] : NULL;
}

/* GPUs: vendor datasheets, dense Tensor Core figures (the sparse figure
 * is twice these, and sn_plan_sparse_peak() recognises it). HBM capacities
 * as the device reports them: an "80GB" H100 or A100 exposes 80 GiB.
 * Scale-up per GPU per direction; scale-out per GPU as the reference
 * system wires it. */
struct gpu_row {
    const char *name;
    double peak_flops;    /* dense BF16 */
    double peak_fp8_flops; /* dense FP8; 0: none (A100) */
    double hbm_bytes;
    double hbm_bytes_per_s;
    double scaleup_bytes_per_s; /* per direction */
    double scaleout_bytes_per_s; /* per GPU, per direction */
    uint32_t gpus_per_server;
    uint32_t servers_per_supernode;
    uint32_t scaleup_gpus;
};

#define GIB 1073741824.0
static const struct gpu_row gpu_presets[] = {
    /* A100 SXM 80GB datasheet: 312 TFLOP/s dense BF16 (624 sparse), 2,039
     * GB/s; NVLink 3 600 GB/s bidirectional. DGX A100 user guide: 8 HDR
     * 200 Gb/s compute NICs for 8 GPUs, so 200 Gb/s per GPU. */
    {"a100", 312e12, 0, 80 * GIB, 2.039e12, 300e9, 200e9 / 8, 8, 8, 8},
    /* H100 SXM datasheet: 989 dense BF16 (1,979 sparse), FP8 1,979 dense,
     * 3.35 TB/s; NVLink 4 900 GB/s bidirectional; DGX H100: 8 ConnectX-7
     * at 400 Gb/s. */
    {"h100", 989e12, 1979e12, 80 * GIB, 3.35e12, 450e9, 400e9 / 8, 8, 8, 8},
    /* H200 SXM datasheet: the H100's compute, 141 GB at 4.8 TB/s. */
    {"h200", 989e12, 1979e12, 141e9, 4.8e12, 450e9, 400e9 / 8, 8, 8, 8},
    /* H800 SXM: the H100's compute and HBM with NVLink cut to 400 GB/s
     * bidirectional (DeepSeek-V3 report, Section 3.1: 8 H800 per node
     * over NVLink/NVSwitch, InfiniBand across, 400 Gb/s per GPU, as in its
     * Section 3.4 figures: "NVLink 160 GB/s" achieved vs "IB 50 GB/s"). */
    {"h800", 989e12, 1979e12, 80 * GIB, 3.35e12, 200e9, 400e9 / 8, 8, 8, 8},
    /* HGX/DGX B200 datasheet: 72 PFLOP/s FP8 training for 8 GPUs (4.5 dense
     * FP8 per GPU, 9 sparse), 2.25 dense BF16, 1,440 GB HBM3e in all (180
     * GB each) at 8 TB/s; NVLink 5 1.8 TB/s bidirectional; 8 x 400 Gb/s. */
    {"b200", 2.25e15, 4.5e15, 180e9, 8e12, 900e9, 400e9 / 8, 8, 8, 8},
    /* GB200 NVL72 datasheet: 180 PFLOP/s dense BF16 and 360 dense FP8 for
     * 72 GPUs (2.5 and 5 per GPU), 13.4 TB HBM3e (186 GB each) at 8 TB/s;
     * 4 GPUs per compute tray, 18 trays, one 72-GPU NVLink domain; one
     * ConnectX-7 400 Gb/s (800 with ConnectX-8) per GPU. */
    {"gb200", 2.5e15, 5e15, 186e9, 8e12, 900e9, 400e9 / 8, 4, 18, 72},
    /* AMD Instinct MI300X datasheet: 1,307.4 TFLOP/s dense BF16 (2,614.9
     * sparse), 2,614.9 dense FP8, 192 GB HBM3 at 5.3 TB/s; 8 GPUs on
     * Infinity Fabric, 896 GB/s aggregate peer bandwidth bidirectional
     * (448 GB/s per direction per GPU); one 400 Gb/s NIC per GPU. */
    {"mi300x", 1307.4e12, 2614.9e12, 192e9, 5.3e12, 448e9, 400e9 / 8, 8, 8, 8},
};
#define N_GPUS (sizeof(gpu_presets) / sizeof(gpu_presets[0]))

/* Sparse (2:4) BF16 datasheet figures, which are not dense peaks. */
static const struct {
    const char *gpu;
    double sparse_flops;
} sparse_peaks[] = {
    {"a100 (sparse BF16)", 624e12},    {"h100 (sparse BF16)", 1979e12},
    {"b200 (sparse BF16)", 4.5e15},    {"gb200 (sparse BF16)", 5e15},
    {"mi300x (sparse BF16)", 2614.9e12},
};

const char *sn_plan_sparse_peak(double peak_flops)
{
    for (size_t i = 0; i < sizeof(sparse_peaks) / sizeof(sparse_peaks[0]); i++) {
        double v = sparse_peaks[i].sparse_flops;
        if (peak_flops > 0.99 * v && peak_flops < 1.01 * v)
            return sparse_peaks[i].gpu;
    }
    return NULL;
}

bool sn_plan_gpu_preset(const char *name, struct sn_plan_hardware *hw)
{
    for (size_t i = 0; name && i < N_GPUS; i++) {
        const struct gpu_row *g = &gpu_presets[i];
        if (!name_eq(g->name, name))
            continue;
        hw->gpu_name = g->name;
        hw->peak_flops = g->peak_flops;
        hw->peak_fp8_flops = g->peak_fp8_flops;
        hw->scaleout_bytes_per_s = g->scaleout_bytes_per_s;
        hw->hbm_bytes = g->hbm_bytes;
        hw->hbm_bytes_per_s = g->hbm_bytes_per_s;
        hw->scaleup_bytes_per_s = g->scaleup_bytes_per_s;
        hw->gpus_per_server = g->gpus_per_server;
        hw->servers_per_supernode = g->servers_per_supernode;
        hw->scaleup_gpus = g->scaleup_gpus;
        return true;
    }
    return false;
}

const char *sn_plan_gpu_preset_name_at(size_t i)
{
    return i < N_GPUS ? gpu_presets[i].name : NULL;
}

/* Failure-rate defaults derived from the Llama 3 paper, Section 3.3.4:
 * 419 unexpected interruptions in a 54-day snapshot on 16,384 H100s in
 * 2,048 servers and 1,024 ToR switches (16 GPUs per rack); 58.7% were GPU
 * issues, 8.4% network switches and cables. The server rate takes the
 * rest (host hardware and software). Power domains have no published
 * figure here: 500,000 h is an assumption. */
#define LLAMA3_HOURS (54.0 * 24.0)
#define LLAMA3_FAILS 419.0
#define HOUR 3600.0

void sn_plan_input_defaults(struct sn_plan_input *in)
{
    memset(in, 0, sizeof(*in));
    struct sn_plan_train *t = &in->train;
    t->gpus = 1;
    t->global_batch = 1;
    t->micro_batch = 1;
    t->tp = t->pp = t->dp = t->cp = t->ep = t->vpp = 1;
    t->recompute = SN_RECOMPUTE_NONE;
    t->precision = SN_PRECISION_BF16;
    t->optimizer = SN_OPTIMIZER_ADAM;

    struct sn_plan_hardware *hw = &in->hw;
    (void)sn_plan_gpu_preset("h100", hw);
    hw->leaves_per_supernode = 2;
    hw->power_domains_per_supernode = 2;
    hw->scaleup_efficiency = 0.80;
    hw->scaleout_efficiency = 0.75;
    hw->compute_efficiency = SN_PLAN_DEFAULT_GEMM_EFFICIENCY;
    hw->overlap = SN_PLAN_DEFAULT_OVERLAP;
    hw->ep_overlap = 0.0;
    hw->hbm_reserve_bytes = SN_PLAN_DEFAULT_HBM_RESERVE;
    /* NCCL src/graph/tuning.cc: base latency of a Ring/Simple collective
     * 8.4 us, NVLink ring step 3.4 us. Across the scale-out fabric, 10 us
     * per hop (NIC, switch and PCIe: an assumption of the order of an
     * InfiniBand small-message latency). */
    hw->latency_base_s = 8.4e-6;
    hw->latency_scaleup_s = 3.4e-6;
    hw->latency_scaleout_s = 10e-6;
    hw->kernel_overhead_s = SN_PLAN_DEFAULT_KERNEL_OVERHEAD;
    hw->mtbf_gpu_s = 16384.0 * LLAMA3_HOURS / (LLAMA3_FAILS * 0.587) * HOUR;
    hw->mtbf_leaf_s = 1024.0 * LLAMA3_HOURS / (LLAMA3_FAILS * 0.084) * HOUR;
    hw->mtbf_server_s = 2048.0 * LLAMA3_HOURS / (LLAMA3_FAILS * (1 - 0.587 - 0.084)) * HOUR;
    hw->mtbf_power_domain_s = 500000.0 * HOUR;

    in->opt.strict = true;
    in->opt.comm_fraction = 0.20;
    in->opt.bw_headroom = SN_BANDWIDTH_HEADROOM;
    in->opt.ckpt_interval_s = 30 * 60.0;
    in->opt.restart_s = 10 * 60.0;
    in->opt.ckpt_tier = SN_PLAN_NO_TIER;

    /* One shared tier unless told otherwise: the parallel file system of
     * examples/std-unit-64.yaml (100 GB/s write, 200 GB/s read). */
    hw->n_storage = 1;
    hw->storage[0] = (struct sn_plan_storage){"parallel-fs", 100e9, 200e9, false};
}
