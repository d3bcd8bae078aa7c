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
#include <sn/plan.h>

#include <ctype.h>
#include <string.h>

/* Architectures. GPT-3: Brown et al. 2020, Table 2.1 (vocabulary 50257,
 * the GPT-2 BPE). Llama 3: Llama Team 2024, "The Llama 3 Herd of Models",
 * Table 3. MT-NLG 530B: Smith et al. 2022, Section 3 (Table 1). 1T:
 * Narayanan et al. 2021, Table 1 (vocabulary 51200, padded). Mixtral 8x7B:
 * Jiang et al. 2024, Table 1. */
#define GPT(l, h, a, v)                                                                            \
    .layers = (l), .hidden = (h), .heads = (a), .kv_heads = (a), .ffn = 4 * (h), .vocab = (v),     \
    .seq = 2048, .experts = 1, .top_k = 1, .gated_mlp = false, .biases = true, .layernorm = true,  \
    .tied_embeddings = true, .learned_pos = true, .dropout = true
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

/* GPUs: NVIDIA datasheets (dense BF16 Tensor Core figures; the sparse
 * figure is twice these). HBM capacities as the device reports them:
 * an "80GB" H100 or A100 exposes 80 GiB. Scale-up per GPU per direction. */
struct gpu_row {
    const char *name;
    double peak_flops;
    double hbm_bytes;
    double hbm_bytes_per_s;
    double scaleup_bytes_per_s; /* per direction */
    uint32_t gpus_per_server;
    uint32_t servers_per_supernode;
    uint32_t scaleup_gpus;
};

#define GIB 1073741824.0
static const struct gpu_row gpu_presets[] = {
    /* NVLink 3: 600 GB/s bidirectional */
    {"a100", 312e12, 80 * GIB, 2.039e12, 300e9, 8, 8, 8},
    /* NVLink 4: 900 GB/s bidirectional */
    {"h100", 989e12, 80 * GIB, 3.35e12, 450e9, 8, 8, 8},
    {"h200", 989e12, 141e9, 4.8e12, 450e9, 8, 8, 8},
    /* NVLink 5: 1.8 TB/s bidirectional */
    {"b200", 2.25e15, 180e9, 8e12, 900e9, 8, 8, 8},
    /* GB200 NVL72: 180 PFLOP/s dense BF16 / 72, 13.4 TB HBM / 72 */
    {"gb200", 2.5e15, 186e9, 8e12, 900e9, 4, 18, 72},
};
#define N_GPUS (sizeof(gpu_presets) / sizeof(gpu_presets[0]))

bool sn_plan_gpu_preset(const char *name, struct sn_plan_hardware *hw)
{
    for (size_t i = 0; name && i < N_GPUS; i++) {
        const struct gpu_row *g = &gpu_presets[i];
        if (!name_eq(g->name, name))
            continue;
        hw->gpu_name = g->name;
        hw->peak_flops = g->peak_flops;
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
    hw->scaleout_bytes_per_s = 400e9 / 8; /* one 400 Gb/s NIC per GPU */
    hw->scaleup_efficiency = 0.80;
    hw->scaleout_efficiency = 0.75;
    hw->compute_efficiency = 0.50;
    hw->overlap = 0.0;
    hw->mtbf_gpu_s = 16384.0 * LLAMA3_HOURS / (LLAMA3_FAILS * 0.587) * HOUR;
    hw->mtbf_leaf_s = 1024.0 * LLAMA3_HOURS / (LLAMA3_FAILS * 0.084) * HOUR;
    hw->mtbf_server_s = 2048.0 * LLAMA3_HOURS / (LLAMA3_FAILS * (1 - 0.587 - 0.084)) * HOUR;
    hw->mtbf_power_domain_s = 500000.0 * HOUR;

    in->opt.strict = true;
    in->opt.comm_fraction = 0.20;
    in->opt.bw_headroom = 0.30;
    in->opt.ckpt_interval_s = 30 * 60.0;
    in->opt.restart_s = 10 * 60.0;
    in->opt.ckpt_tier = SN_PLAN_NO_TIER;

    /* One shared tier unless told otherwise: the parallel file system of
     * examples/std-unit-64.yaml (100 GB/s write, 200 GB/s read). */
    hw->n_storage = 1;
    hw->storage[0] = (struct sn_plan_storage){"parallel-fs", 100e9, 200e9, false};
}
