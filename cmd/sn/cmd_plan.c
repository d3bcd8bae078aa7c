/*
 * sn plan: the training-job planner on the command line. Flags (one
 * table, which also generates --help) fill a struct sn_plan_input; lib/plan
 * evaluates it; this file prints the plan as tables or as JSON (schema in
 * docs/cmd-plan.md), or runs the layout sweep.
 *
 * Presets (--model, --gpu) apply first whatever their position, then the
 * other flags override them in order. Every quantity with a unit goes
 * through sn/units.h. Exit statuses: 0 the plan holds; 1 it does not (no
 * fit in memory, a fabric short of the required bandwidth, no storage tier
 * meeting the checkpoint window, or a sweep with no valid layout); 2 bad
 * flags or inconsistent input.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <sn/plan.h>
#include <sn/spec.h>
#include <sn/units.h>

#include "commands.h"

#define SECONDS_PER_YEAR (365.0 * 86400)

/* SECTION, ID, flag, argument (NULL: a switch), help */
#define PLAN_FLAGS(X)                                                                              \
    X(MODEL, MODEL, "model", "NAME", "model preset (see --list)")                                  \
    X(MODEL, ARCH, "arch", "gpt|llama",                                                            \
      "custom model style: gpt (GeLU, biases, LayerNorm, "                                         \
      "tied, learned positions, dropout) or llama (SwiGLU, "                                       \
      "no biases, RMSNorm, untied, RoPE, no dropout)")                                             \
    X(MODEL, LAYERS, "layers", "N", "transformer layers")                                          \
    X(MODEL, HIDDEN, "hidden", "N", "hidden size h")                                               \
    X(MODEL, HEADS, "heads", "N", "attention heads")                                               \
    X(MODEL, KV_HEADS, "kv-heads", "N", "key/value heads (GQA; default: heads)")                   \
    X(MODEL, FFN, "ffn", "N", "MLP inner size (default 4h)")                                       \
    X(MODEL, VOCAB, "vocab", "N", "vocabulary size")                                               \
    X(MODEL, SEQ, "seq", "N", "sequence length")                                                   \
    X(MODEL, EXPERTS, "experts", "N", "MoE experts per layer (1: dense)")                          \
    X(MODEL, TOP_K, "top-k", "N", "experts per token")                                             \
    X(MODEL, SHARED_EXPERTS, "shared-experts", "N", "MoE experts every token visits (0)")          \
    X(MODEL, DENSE_LAYERS, "dense-layers", "N", "first layers with a dense MLP in a MoE model (0)") \
    X(MODEL, DENSE_FFN, "dense-ffn", "N", "MLP inner size of those dense layers (default ffn)")    \
    X(MODEL, Q_LORA, "q-lora-rank", "N", "MLA query compression rank (0: none)")                   \
    X(MODEL, KV_LORA, "kv-lora-rank", "N", "MLA key/value compression rank (0: no MLA)")           \
    X(MODEL, QK_NOPE, "qk-nope-dim", "N", "MLA per-head query/key dimension without RoPE")         \
    X(MODEL, QK_ROPE, "qk-rope-dim", "N", "MLA per-head RoPE dimension")                           \
    X(MODEL, V_DIM, "v-dim", "N", "MLA per-head value dimension")                                  \
    X(TRAIN, GPUS, "gpus", "N", "GPUs in the job (default tp x pp x dp x cp)")                     \
    X(TRAIN, GLOBAL_BATCH, "global-batch", "N", "sequences per step (required)")                   \
    X(TRAIN, GLOBAL_TOKENS, "global-batch-tokens", "N",                                            \
      "tokens per step, a multiple of --seq "                                                      \
      "(suffixes K M B T, Ki Mi Gi)")                                                              \
    X(TRAIN, MICRO_BATCH, "micro-batch", "N", "sequences per micro-batch (default 1)")             \
    X(TRAIN, TP, "tp", "N", "tensor parallelism (default 1)")                                      \
    X(TRAIN, PP, "pp", "N", "pipeline parallelism (default 1)")                                    \
    X(TRAIN, DP, "dp", "N", "data parallelism (default gpus / (tp x pp x cp))")                    \
    X(TRAIN, CP, "cp", "N", "context parallelism (default 1)")                                     \
    X(TRAIN, EP, "ep", "N", "expert parallelism, carved out of dp (default 1)")                    \
    X(TRAIN, INTERLEAVE, "interleave", "V", "model chunks per pipeline stage (default 1)")         \
    X(TRAIN, ZERO, "zero", "0-3", "ZeRO stage; 1 = distributed optimizer (default 0)")             \
    X(TRAIN, RECOMPUTE, "recompute", "MODE", "activation recompute: none, selective, full")        \
    X(TRAIN, SP, "sp", NULL, "sequence parallelism (default when tp > 1)")                         \
    X(TRAIN, NO_SP, "no-sp", NULL, "no sequence parallelism")                                      \
    X(TRAIN, PRECISION, "precision", "P",                                                          \
      "bf16 (mixed, default), fp32, or fp8 (FP8 GEMMs, bf16 weights)")                             \
    X(TRAIN, CAPACITY, "capacity-factor", "F",                                                     \
      "MoE expert capacity over the even share: padded compute and all-to-all (1)")               \
    X(TRAIN, UNFUSED_ATTN, "unfused-attention", NULL,                                              \
      "attention writes its s x s scores (no FlashAttention, as in 2021)")                         \
    X(TRAIN, OPTIMIZER, "optimizer", "O", "adam (default) or sgd")                                 \
    X(TRAIN, TRAIN_TOKENS, "train-tokens", "N", "tokens to train on, for the time to train")       \
    X(HW, GPU, "gpu", "NAME", "GPU preset: a100 h100 h200 h800 b200 gb200 mi300x (default h100)")   \
    X(HW, SPEC, "spec", "FILE", "take the hardware from a cluster spec (after --gpu, before the rest)") \
    X(HW, TEMPLATE, "template", "NAME", "supernode template of --spec (default: its only one)")     \
    X(HW, SPEC_STORAGE, "spec-storage", "NAME", "storage tier of --spec (default: all its tiers)") \
    X(HW, PEAK, "peak", "FLOP/S", "dense BF16 peak per GPU, e.g. 989TFLOP/s (no sparsity)")        \
    X(HW, HBM, "hbm", "SIZE", "HBM per GPU, e.g. 80GiB")                                           \
    X(HW, PEAK_FP8, "peak-fp8", "FLOP/S", "dense FP8 peak per GPU (default: the preset's, or 2x peak)") \
    X(HW, HBM_RESERVE, "hbm-reserve", "SIZE", "HBM kept free for context and buffers (2GiB)")      \
    X(HW, GPUS_PER_SERVER, "gpus-per-server", "N", "GPUs per server")                              \
    X(HW, SERVERS_PER_SN, "servers-per-supernode", "N", "servers per supernode")                   \
    X(HW, SCALEUP_GPUS, "scaleup-gpus", "N", "GPUs per scale-up (NVLink) domain")                  \
    X(HW, SUPERNODES, "supernodes", "N", "supernodes available (0: no limit)")                     \
    X(HW, LEAVES, "leaves-per-supernode", "N", "scale-out leaf switches per supernode (2)")        \
    X(HW, POWER_DOMAINS, "power-domains-per-supernode", "N", "power domains per supernode (2)")    \
    X(HW, SCALEUP_BW, "scaleup-bw", "BW",                                                          \
      "scale-up bandwidth per GPU, with its direction: "                                           \
      "'900GB/s bidirectional' or '450GB/s per-direction'")                                        \
    X(HW, SCALEOUT_BW, "scaleout-bw", "BW",                                                        \
      "scale-out bandwidth per GPU per direction "                                                 \
      "(400Gb/s)")                                                                                 \
    X(HW, SCALEUP_EFF, "scaleup-eff", "F", "scale-up bus-bandwidth efficiency (80%)")              \
    X(HW, SCALEOUT_EFF, "scaleout-eff", "F", "scale-out bus-bandwidth efficiency (75%)")           \
    X(HW, COMPUTE_EFF, "compute-eff", "F", "fraction of peak a large GEMM reaches (66%)")          \
    X(HW, OVERLAP, "overlap", "F", "fraction of DP and CP communication hidden (80%)")             \
    X(HW, EP_OVERLAP, "ep-overlap", "F", "fraction of EP all-to-all hidden (0%)")                  \
    X(HW, LAT_BASE, "latency-base", "TIME", "fixed cost of one collective (8.4us)")                \
    X(HW, LAT_UP, "latency-scaleup", "TIME", "latency per ring step in a scale-up domain (3.4us)") \
    X(HW, LAT_OUT, "latency-scaleout", "TIME", "latency per hop across scale-out (10us)")          \
    X(HW, KERNEL_OVERHEAD, "kernel-overhead", "TIME", "fixed cost of one GEMM kernel (4us)")       \
    X(HW, STORAGE, "storage", "NAME,W,R[,per-server]",                                             \
      "a checkpoint tier with write and read "                                                     \
      "bandwidth; repeat for more (the first "                                                     \
      "replaces the default parallel-fs,"                                                          \
      "100GB/s,200GB/s)")                                                                          \
    X(HW, GPU_MTBF, "gpu-mtbf", "TIME", "MTBF of one GPU (0: never fails; likewise below)")        \
    X(HW, GPU_AFR, "gpu-afr", "F", "annual failure rate of one GPU (instead of the MTBF)")         \
    X(HW, SERVER_MTBF, "server-mtbf", "TIME", "MTBF of one server (GPUs excluded)")                \
    X(HW, SERVER_AFR, "server-afr", "F", "annual failure rate of one server")                      \
    X(HW, LEAF_MTBF, "leaf-mtbf", "TIME", "MTBF of one leaf switch with its cables")               \
    X(HW, LEAF_AFR, "leaf-afr", "F", "annual failure rate of one leaf")                            \
    X(HW, PD_MTBF, "power-domain-mtbf", "TIME", "MTBF of one power domain")                        \
    X(HW, PD_AFR, "power-domain-afr", "F", "annual failure rate of one power domain")              \
    X(RULES, STRICT, "strict", NULL, "TP must stay inside one scale-up domain (default)")          \
    X(RULES, NO_STRICT, "no-strict", NULL, "allow TP across the scale-out fabric")                 \
    X(RULES, TARGET_STEP, "target-step", "TIME",                                                   \
      "step time for the required bandwidth "                                                      \
      "(default: the estimate)")                                                                   \
    X(RULES, COMM_FRACTION, "comm-fraction", "F",                                                  \
      "share of the step allowed for "                                                             \
      "communication (20%)")                                                                       \
    X(RULES, HEADROOM, "headroom", "F", "protocol and congestion headroom (30%)")                  \
    X(RULES, CKPT_INTERVAL, "ckpt-interval", "TIME", "planned checkpoint interval (30min)")        \
    X(RULES, CKPT_WINDOW, "ckpt-window", "TIME",                                                   \
      "a checkpoint write must finish within "                                                     \
      "(default interval / 6: 5min for 30min)")                                                    \
    X(RULES, RESTART, "restart", "TIME",                                                           \
      "time to restart after a failure, before reading the "                                       \
      "checkpoint (10min)")                                                                        \
    X(RULES, CKPT_TIER, "ckpt-tier", "NAME", "tier for the intervals (default: fastest write)")    \
    X(RULES, CKPT_BYTES, "ckpt-bytes-per-param", "N",                                              \
      "checkpoint bytes per parameter (default: from --checkpoint-format)")                        \
    X(RULES, CKPT_FORMAT, "checkpoint-format", "full|master|weights",                              \
      "what a checkpoint holds: 16-bit weights + fp32 master + moments (full, 14 B/param for "     \
      "bf16 Adam), master + moments (12), or weights only (2)")                                    \
    X(RULES, LOCAL_CKPT, "local-ckpt", NULL,                                                       \
      "allow per-server tiers to hold checkpoints (lost with their server)")                       \
    X(RULES, CALIBRATE, "calibrate", "step=TIME|FILE",                                             \
      "fit the compute efficiency to a measured step time and plan with it; or fit it to the "     \
      "measured runs of FILE.json (docs/cmd-plan.md) and report the fit")                          \
    X(RULES, CALIBRATION_OUT, "calibration-out", "FILE",                                           \
      "with --calibrate FILE.json: write the fitted calibration there")                            \
    X(RULES, CALIBRATION, "calibration", "FILE",                                                   \
      "take the efficiencies of a calibration file (--calibration-out) for the same GPU")          \
    X(RULES, MEASURED, "measured", "KIND=V",                                                       \
      "a measured run: step=8.2s, tokens-per-s=N or tflops-per-gpu=N (hardware count, with "       \
      "recompute): MFU, HFU, time to train and prediction vs measured")                            \
    X(RULES, MEASURED_MFU, "measured-mfu", "F", "fit the compute efficiency to a measured MFU")    \
    X(OUTPUT, SWEEP, "sweep", NULL, "enumerate layouts for --gpus and rank them")                  \
    X(OUTPUT, TOP, "top", "N", "layouts shown by --sweep (10, at most 64)")                        \
    X(OUTPUT, JSON, "json", NULL, "JSON output (schema in docs/cmd-plan.md)")                      \
    X(OUTPUT, LIST, "list", NULL, "list the model and GPU presets")                                \
    X(OUTPUT, VALIDATE, "validate", NULL,                                                          \
      "predict the published runs of the validation table (docs/planner.md) and compare")          \
    X(OUTPUT, HELP, "help", NULL, "this help")

enum flag_id {
#define SN_X(section, id, name, arg, help) FLAG_##id,
    PLAN_FLAGS(SN_X)
#undef SN_X
        FLAG_COUNT
};

enum flag_section { SECTION_MODEL, SECTION_TRAIN, SECTION_HW, SECTION_RULES, SECTION_OUTPUT };

struct flag {
    enum flag_section section;
    const char *name;
    const char *arg;
    const char *help;
};

static const struct flag flags[] = {
#define SN_X(section, id, name, arg, help) {SECTION_##section, name, arg, help},
    PLAN_FLAGS(SN_X)
#undef SN_X
};

static const char *const section_titles[] = {"model", "training layout", "hardware",
                                             "rules and targets", "output"};

struct ctx {
    struct sn_plan_input in;
    bool have_model, custom_arch_llama, json, sweep, list, help, sp_set, sp;
    bool layout_flag; /* a tp/pp/dp/cp flag, which --sweep chooses itself */
    bool storage_set, validate;
    double calibrate_step_s, measured_mfu;
    const char *calibrate_file, *calibration_out, *calibration_file;
    const char *calibration_gpu; /* the GPU --calibration is for (owned by calibration_json) */
    json_t *calibration_json;
    enum sn_plan_measure measured_kind;
    double measured_value; /* 0: no --measured */
    uint32_t top;
    uint64_t global_tokens;
    const char *ckpt_tier;
    const char *spec_path, *template_name, *spec_storage;
    struct sn_spec *spec; /* owns the names the hardware points to */
    char storage_names[SN_PLAN_MAX_TIERS][32];
};

static void usage(FILE *out)
{
    fprintf(out, "usage: sn plan --model NAME --gpus N --global-batch N [--tp N --pp N ...] "
                 "[--json]\n"
                 "       sn plan --model NAME --gpus N --global-batch N --sweep [--top N]\n"
                 "       sn plan --list\n\n"
                 "Plans a training job: memory per GPU, FLOPs, communication per fabric, "
                 "required\nbandwidth, step time, placement and checkpoints "
                 "(docs/planner.md, docs/cmd-plan.md).\n");
    for (int s = SECTION_MODEL; s <= SECTION_OUTPUT; s++) {
        fprintf(out, "\n%s:\n", section_titles[s]);
        for (int i = 0; i < FLAG_COUNT; i++) {
            if ((int)flags[i].section != s)
                continue;
            char left[64];
            snprintf(left, sizeof(left), "--%s%s%s", flags[i].name, flags[i].arg ? " " : "",
                     flags[i].arg ? flags[i].arg : "");
            fprintf(out, "  %-30s %s\n", left, flags[i].help);
        }
    }
}

static void list_presets(void)
{
    printf("models:\n");
    for (size_t i = 0; sn_plan_model_preset_at(i); i++) {
        const struct sn_plan_model *m = sn_plan_model_preset_at(i);
        printf("  %-14s %3u layers, h %5u, %3u heads (%3u kv), ffn %5u, vocab %6u, seq %4u",
               m->name, m->layers, m->hidden, m->heads, m->kv_heads, m->ffn, m->vocab, m->seq);
        if (m->experts > 1)
            printf(", %u experts top-%u", m->experts, m->top_k);
        printf(", %.4g B params\n", sn_plan_params(m) / 1e9);
    }
    printf("gpus:\n");
    for (size_t i = 0; sn_plan_gpu_preset_name_at(i); i++) {
        struct sn_plan_hardware hw = {0};
        char a[32], b[32], c[32];
        (void)sn_plan_gpu_preset(sn_plan_gpu_preset_name_at(i), &hw);
        printf("  %-6s %s dense BF16, %s HBM, scale-up %s per direction, %u-GPU domain\n",
               hw.gpu_name, sn_units_format(hw.peak_flops, SN_UNIT_FLOPS, a, sizeof(a)),
               sn_units_format(hw.hbm_bytes, SN_UNIT_BYTES, b, sizeof(b)),
               sn_units_format(hw.scaleup_bytes_per_s, SN_UNIT_BANDWIDTH_DIRECTED, c, sizeof(c)),
               hw.scaleup_gpus);
    }
}

/* ---- value parsing ---------------------------------------------------- */

static int bad_flag(const char *flag, const char *msg)
{
    fprintf(stderr, "sn plan: --%s: %s\n", flag, msg);
    return -1;
}

/* A count: digits, optionally a decimal fraction and a suffix K M B(=G) T
 * (powers of 1000) or Ki Mi Gi (powers of 1024); the result must be a
 * whole number. */
static int parse_count(const char *flag, const char *text, uint64_t max, uint64_t *out)
{
    static const struct {
        const char *suffix;
        double scale;
    } suffixes[] = {{"", 1},     {"K", 1e3},     {"M", 1e6},        {"B", 1e9},          {"G", 1e9},
                    {"T", 1e12}, {"Ki", 1024.0}, {"Mi", 1048576.0}, {"Gi", 1073741824.0}};
    char *end;
    errno = 0;
    if (!text || !(*text >= '0' && *text <= '9'))
        goto bad;
    double v = strtod(text, &end);
    if (errno || !isfinite(v))
        goto bad;
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (strcmp(end, suffixes[i].suffix) != 0)
            continue;
        v *= suffixes[i].scale;
        if (v != floor(v) || v > (double)max) {
            char msg[160];
            snprintf(msg, sizeof(msg), "'%s' is not a whole number up to %llu", text,
                     (unsigned long long)max);
            return bad_flag(flag, msg);
        }
        *out = (uint64_t)v;
        return 0;
    }
bad : {
    char msg[160];
    snprintf(msg, sizeof(msg), "'%s' is not a count (such as 64, 16M or 15.6T)", text);
    return bad_flag(flag, msg);
}
}

static int parse_u32(const char *flag, const char *text, uint32_t *out)
{
    uint64_t v;
    if (parse_count(flag, text, UINT32_MAX, &v))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_unit(const char *flag, const char *text, enum sn_unit_kind kind, double *out)
{
    struct sn_error err = {0};
    if (sn_units_parse(text, kind, out, &err) != SN_OK)
        return bad_flag(flag, err.message);
    return 0;
}

/* A plain number in [lo, hi], such as bytes per parameter. */
static int parse_number(const char *flag, const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !isfinite(v) || v < lo || v > hi) {
        char msg[160];
        snprintf(msg, sizeof(msg), "'%s' is not a number from %g to %g", text, lo, hi);
        return bad_flag(flag, msg);
    }
    *out = v;
    return 0;
}

/* An annual failure rate p as an MTBF under exponential failures:
 * p = 1 - exp(-year / MTBF). */
static int parse_afr(const char *flag, const char *text, double *mtbf_s)
{
    double p;
    if (parse_unit(flag, text, SN_UNIT_FRACTION, &p))
        return -1;
    if (!(p >= 0 && p < 1))
        return bad_flag(flag, "an annual failure rate must be at least 0% and below 100%");
    *mtbf_s = p == 0 ? 0 : -SECONDS_PER_YEAR / log1p(-p); /* 0: never fails */
    return 0;
}

static int parse_enum(const char *flag, const char *text, unsigned count, unsigned value,
                      const char *expected, unsigned *out)
{
    if (value >= count) {
        char msg[160];
        snprintf(msg, sizeof(msg), "unknown value '%s': expected %s", text, expected);
        return bad_flag(flag, msg);
    }
    *out = value;
    return 0;
}

/* NAME,WRITE,READ[,per-server] */
static int parse_storage(struct ctx *c, const char *text)
{
    struct sn_plan_hardware *hw = &c->in.hw;
    if (!c->storage_set)
        hw->n_storage = 0;
    c->storage_set = true;
    if (hw->n_storage >= SN_PLAN_MAX_TIERS)
        return bad_flag("storage", "too many tiers (at most 8)");
    char buf[160], *field[5];
    int n = 0;
    snprintf(buf, sizeof(buf), "%s", text);
    for (char *p = buf; n < 5;) {
        field[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    if (n < 3 || n > 4 || !*field[0] || strlen(field[0]) >= sizeof(c->storage_names[0]) ||
        (n == 4 && strcmp(field[3], "per-server") != 0))
        return bad_flag("storage", "expected NAME,WRITE,READ or NAME,WRITE,READ,per-server "
                                   "(e.g. lustre,100GB/s,200GB/s)");
    struct sn_plan_storage *s = &hw->storage[hw->n_storage];
    if (parse_unit("storage", field[1], SN_UNIT_BANDWIDTH, &s->write_bytes_per_s) ||
        parse_unit("storage", field[2], SN_UNIT_BANDWIDTH, &s->read_bytes_per_s))
        return -1;
    snprintf(c->storage_names[hw->n_storage], sizeof(c->storage_names[0]), "%s", field[0]);
    s->name = c->storage_names[hw->n_storage];
    s->per_server = n == 4;
    hw->n_storage++;
    return 0;
}

/* ---- applying flags --------------------------------------------------- */

static int apply_model(struct ctx *c, enum flag_id id, const char *v)
{
    struct sn_plan_model *m = &c->in.model;
    const char *f = flags[id].name;
    if (id == FLAG_ARCH) {
        if (strcmp(v, "gpt") && strcmp(v, "llama"))
            return bad_flag(f, "expected 'gpt' or 'llama'");
        c->custom_arch_llama = strcmp(v, "llama") == 0;
        return 0;
    }
    uint32_t *field[] = {
        [FLAG_LAYERS] = &m->layers,     [FLAG_HIDDEN] = &m->hidden,   [FLAG_HEADS] = &m->heads,
        [FLAG_KV_HEADS] = &m->kv_heads, [FLAG_FFN] = &m->ffn,         [FLAG_VOCAB] = &m->vocab,
        [FLAG_SEQ] = &m->seq,           [FLAG_EXPERTS] = &m->experts, [FLAG_TOP_K] = &m->top_k,
        [FLAG_SHARED_EXPERTS] = &m->shared_experts, [FLAG_DENSE_LAYERS] = &m->dense_layers,
        [FLAG_DENSE_FFN] = &m->dense_ffn,           [FLAG_Q_LORA] = &m->q_lora_rank,
        [FLAG_KV_LORA] = &m->kv_lora_rank,          [FLAG_QK_NOPE] = &m->qk_nope_dim,
        [FLAG_QK_ROPE] = &m->qk_rope_dim,           [FLAG_V_DIM] = &m->v_dim,
    };
    if ((size_t)id < sizeof(field) / sizeof(field[0]) && field[id])
        return parse_u32(f, v, field[id]);
    return 0; /* --model: taken in the first pass */
}

static int apply_train(struct ctx *c, enum flag_id id, const char *v)
{
    struct sn_plan_train *t = &c->in.train;
    const char *f = flags[id].name;
    unsigned e = 0;
    switch (id) {
    case FLAG_GPUS:
        return parse_u32(f, v, &t->gpus);
    case FLAG_GLOBAL_BATCH:
        return parse_count(f, v, UINT64_MAX >> 12, &t->global_batch);
    case FLAG_GLOBAL_TOKENS:
        return parse_count(f, v, UINT64_MAX >> 12, &c->global_tokens);
    case FLAG_MICRO_BATCH:
        return parse_u32(f, v, &t->micro_batch);
    case FLAG_TP:
    case FLAG_PP:
    case FLAG_DP:
    case FLAG_CP:
        c->layout_flag = true;
        return parse_u32(f, v,
                         id == FLAG_TP   ? &t->tp
                         : id == FLAG_PP ? &t->pp
                         : id == FLAG_DP ? &t->dp
                                         : &t->cp);
    case FLAG_EP:
        return parse_u32(f, v, &t->ep);
    case FLAG_INTERLEAVE:
        return parse_u32(f, v, &t->vpp);
    case FLAG_ZERO:
        return parse_u32(f, v, &t->zero);
    case FLAG_RECOMPUTE:
        if (parse_enum(f, v, SN_RECOMPUTE_COUNT, sn_recompute_from_name(v),
                       "none, selective or full", &e))
            return -1;
        t->recompute = (enum sn_recompute)e;
        return 0;
    case FLAG_SP:
    case FLAG_NO_SP:
        c->sp_set = true;
        c->sp = id == FLAG_SP;
        return 0;
    case FLAG_PRECISION:
        if (parse_enum(f, v, SN_PRECISION_COUNT, sn_precision_from_name(v), "bf16, fp32 or fp8",
                       &e))
            return -1;
        t->precision = (enum sn_precision)e;
        return 0;
    case FLAG_UNFUSED_ATTN:
        t->unfused_attention = true;
        return 0;
    case FLAG_CAPACITY:
        return parse_number(f, v, 1, 16, &t->capacity_factor);
    case FLAG_OPTIMIZER:
        if (parse_enum(f, v, SN_OPTIMIZER_COUNT, sn_optimizer_from_name(v), "adam or sgd", &e))
            return -1;
        t->optimizer = (enum sn_optimizer)e;
        return 0;
    default: {
        uint64_t tokens;
        if (parse_count(f, v, UINT64_MAX >> 1, &tokens))
            return -1;
        t->train_tokens = (double)tokens;
        return 0;
    }
    }
}

static int apply_hw_counts(struct ctx *c, enum flag_id id, const char *v)
{
    struct sn_plan_hardware *hw = &c->in.hw;
    uint32_t *field[] = {
        [FLAG_GPUS_PER_SERVER] = &hw->gpus_per_server,
        [FLAG_SERVERS_PER_SN] = &hw->servers_per_supernode,
        [FLAG_SCALEUP_GPUS] = &hw->scaleup_gpus,
        [FLAG_SUPERNODES] = &hw->supernodes,
        [FLAG_LEAVES] = &hw->leaves_per_supernode,
        [FLAG_POWER_DOMAINS] = &hw->power_domains_per_supernode,
    };
    return parse_u32(flags[id].name, v, field[id]);
}

static int apply_hw(struct ctx *c, enum flag_id id, const char *v)
{
    struct sn_plan_hardware *hw = &c->in.hw;
    const char *f = flags[id].name;
    switch (id) {
    case FLAG_GPU:
    case FLAG_SPEC:
    case FLAG_TEMPLATE:
    case FLAG_SPEC_STORAGE:
        return 0; /* taken in the first pass */
    case FLAG_PEAK:
        return parse_unit(f, v, SN_UNIT_FLOPS, &hw->peak_flops);
    case FLAG_PEAK_FP8:
        return parse_unit(f, v, SN_UNIT_FLOPS, &hw->peak_fp8_flops);
    case FLAG_EP_OVERLAP:
        return parse_unit(f, v, SN_UNIT_FRACTION, &hw->ep_overlap);
    case FLAG_LAT_BASE:
        return parse_unit(f, v, SN_UNIT_TIME, &hw->latency_base_s);
    case FLAG_LAT_UP:
        return parse_unit(f, v, SN_UNIT_TIME, &hw->latency_scaleup_s);
    case FLAG_LAT_OUT:
        return parse_unit(f, v, SN_UNIT_TIME, &hw->latency_scaleout_s);
    case FLAG_KERNEL_OVERHEAD:
        return parse_unit(f, v, SN_UNIT_TIME, &hw->kernel_overhead_s);
    case FLAG_HBM:
        return parse_unit(f, v, SN_UNIT_BYTES, &hw->hbm_bytes);
    case FLAG_HBM_RESERVE:
        return parse_unit(f, v, SN_UNIT_BYTES, &hw->hbm_reserve_bytes);
    case FLAG_GPUS_PER_SERVER:
    case FLAG_SERVERS_PER_SN:
    case FLAG_SCALEUP_GPUS:
    case FLAG_SUPERNODES:
    case FLAG_LEAVES:
    case FLAG_POWER_DOMAINS:
        return apply_hw_counts(c, id, v);
    case FLAG_SCALEUP_BW:
        return parse_unit(f, v, SN_UNIT_BANDWIDTH_DIRECTED, &hw->scaleup_bytes_per_s);
    case FLAG_SCALEOUT_BW:
        return parse_unit(f, v, SN_UNIT_BANDWIDTH, &hw->scaleout_bytes_per_s);
    case FLAG_SCALEUP_EFF:
        return parse_unit(f, v, SN_UNIT_FRACTION, &hw->scaleup_efficiency);
    case FLAG_SCALEOUT_EFF:
        return parse_unit(f, v, SN_UNIT_FRACTION, &hw->scaleout_efficiency);
    case FLAG_COMPUTE_EFF:
        return parse_unit(f, v, SN_UNIT_FRACTION, &hw->compute_efficiency);
    case FLAG_OVERLAP:
        return parse_unit(f, v, SN_UNIT_FRACTION, &hw->overlap);
    case FLAG_STORAGE:
        return parse_storage(c, v);
    case FLAG_GPU_MTBF:
        return parse_unit(f, v, SN_UNIT_TIME, &hw->mtbf_gpu_s);
    case FLAG_GPU_AFR:
        return parse_afr(f, v, &hw->mtbf_gpu_s);
    case FLAG_SERVER_MTBF:
        return parse_unit(f, v, SN_UNIT_TIME, &hw->mtbf_server_s);
    case FLAG_SERVER_AFR:
        return parse_afr(f, v, &hw->mtbf_server_s);
    case FLAG_LEAF_MTBF:
        return parse_unit(f, v, SN_UNIT_TIME, &hw->mtbf_leaf_s);
    case FLAG_LEAF_AFR:
        return parse_afr(f, v, &hw->mtbf_leaf_s);
    case FLAG_PD_MTBF:
        return parse_unit(f, v, SN_UNIT_TIME, &hw->mtbf_power_domain_s);
    default:
        return parse_afr(f, v, &hw->mtbf_power_domain_s);
    }
}

/* --measured step=TIME | tokens-per-s=N | tflops-per-gpu=N */
static int parse_measured(struct ctx *c, const char *v)
{
    const char *f = "measured", *eq = strchr(v, '=');
    char kind[32];
    if (!eq || (size_t)(eq - v) >= sizeof(kind))
        return bad_flag(f, "expected step=TIME, tokens-per-s=N or tflops-per-gpu=N");
    memcpy(kind, v, (size_t)(eq - v));
    kind[eq - v] = 0;
    c->measured_kind = sn_plan_measure_from_name(kind);
    switch (c->measured_kind) {
    case SN_PLAN_MEASURE_STEP:
        if (parse_unit(f, eq + 1, SN_UNIT_TIME, &c->measured_value))
            return -1;
        break;
    case SN_PLAN_MEASURE_TOKENS_PER_S:
        if (parse_number(f, eq + 1, 1e-9, 1e15, &c->measured_value))
            return -1;
        break;
    case SN_PLAN_MEASURE_TFLOPS_PER_GPU:
        if (parse_number(f, eq + 1, 1e-9, 1e6, &c->measured_value))
            return -1;
        c->measured_value *= 1e12;
        break;
    default:
        return bad_flag(f, "expected step=TIME, tokens-per-s=N or tflops-per-gpu=N");
    }
    if (!(c->measured_value > 0))
        return bad_flag(f, "the measured value must be positive");
    return 0;
}

/* A fraction in (0, 1] under key of a calibration file, into *out. */
static int calibration_fraction(const char *path, json_t *root, const char *key, double *out)
{
    json_t *v = json_object_get(root, key);
    if (!v)
        return 0; /* not calibrated: the flag's or preset's value stays */
    double x = json_number_value(v);
    if (!json_is_number(v) || !(x > 0 && x <= 1)) {
        fprintf(stderr, "sn plan: %s: field '%s': expected a fraction in (0, 1]\n", path, key);
        return -1;
    }
    *out = x;
    return 0;
}

/* --calibration FILE: the efficiencies a --calibrate FILE.json fit wrote. */
static int read_calibration(struct ctx *c, const char *path)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        if (jerr.line > 0)
            fprintf(stderr, "sn plan: %s:%d:%d: %s\n", path, jerr.line, jerr.column, jerr.text);
        else
            fprintf(stderr, "sn plan: --calibration %s: %s\n", path, jerr.text);
        return -1;
    }
    json_decref(c->calibration_json);
    c->calibration_json = root;
    const char *schema = json_string_value(json_object_get(root, "schema"));
    if (!json_is_object(root) || !schema || strcmp(schema, "sn-plan-calibration/1") != 0) {
        fprintf(stderr, "sn plan: %s: field 'schema': expected \"sn-plan-calibration/1\"\n",
                path);
        return -1;
    }
    c->calibration_gpu = json_string_value(json_object_get(root, "gpu"));
    if (!c->calibration_gpu) {
        fprintf(stderr, "sn plan: %s: field 'gpu': expected the GPU name the fit is for\n", path);
        return -1;
    }
    if (!json_object_get(root, "compute_efficiency")) {
        fprintf(stderr, "sn plan: %s: field 'compute_efficiency': missing\n", path);
        return -1;
    }
    c->calibration_file = path;
    struct sn_plan_hardware *hw = &c->in.hw;
    return calibration_fraction(path, root, "compute_efficiency", &hw->compute_efficiency) ||
                   calibration_fraction(path, root, "scaleout_efficiency",
                                        &hw->scaleout_efficiency)
               ? -1
               : 0;
}

static int apply_rules(struct ctx *c, enum flag_id id, const char *v)
{
    struct sn_plan_options *o = &c->in.opt;
    const char *f = flags[id].name;
    switch (id) {
    case FLAG_STRICT:
    case FLAG_NO_STRICT:
        o->strict = id == FLAG_STRICT;
        return 0;
    case FLAG_TARGET_STEP:
        return parse_unit(f, v, SN_UNIT_TIME, &o->target_step_s);
    case FLAG_COMM_FRACTION:
        return parse_unit(f, v, SN_UNIT_FRACTION, &o->comm_fraction);
    case FLAG_HEADROOM:
        return parse_unit(f, v, SN_UNIT_FRACTION, &o->bw_headroom);
    case FLAG_CKPT_INTERVAL:
        return parse_unit(f, v, SN_UNIT_TIME, &o->ckpt_interval_s);
    case FLAG_CKPT_WINDOW:
        return parse_unit(f, v, SN_UNIT_TIME, &o->ckpt_window_s);
    case FLAG_RESTART:
        return parse_unit(f, v, SN_UNIT_TIME, &o->restart_s);
    case FLAG_CKPT_BYTES:
        return parse_number(f, v, 1, 64, &o->ckpt_bytes_per_param);
    case FLAG_CKPT_FORMAT:
        o->ckpt_format = sn_ckpt_format_from_name(v);
        if (o->ckpt_format == SN_CKPT_FORMAT_COUNT)
            return bad_flag(f, "expected full, master or weights");
        return 0;
    case FLAG_LOCAL_CKPT:
        o->local_ckpt = true;
        return 0;
    case FLAG_CALIBRATE:
        if (strncmp(v, "step=", 5) != 0) {
            c->calibrate_file = v;
            return 0;
        }
        if (parse_unit(f, v + 5, SN_UNIT_TIME, &c->calibrate_step_s))
            return -1;
        if (!(c->calibrate_step_s > 0))
            return bad_flag(f, "the measured step time must be positive");
        return 0;
    case FLAG_CALIBRATION_OUT:
        c->calibration_out = v;
        return 0;
    case FLAG_CALIBRATION:
        return read_calibration(c, v);
    case FLAG_MEASURED:
        return parse_measured(c, v);
    case FLAG_MEASURED_MFU:
        if (parse_unit(f, v, SN_UNIT_FRACTION, &c->measured_mfu))
            return -1;
        if (!(c->measured_mfu > 0 && c->measured_mfu <= 1))
            return bad_flag(f, "an MFU must be in (0%, 100%]");
        return 0;
    default:
        c->ckpt_tier = v;
        return 0;
    }
}

static int apply_output(struct ctx *c, enum flag_id id, const char *v)
{
    switch (id) {
    case FLAG_SWEEP:
        c->sweep = true;
        return 0;
    case FLAG_TOP:
        return parse_u32(flags[id].name, v, &c->top);
    case FLAG_JSON:
        c->json = true;
        return 0;
    case FLAG_LIST:
        c->list = true;
        return 0;
    case FLAG_VALIDATE:
        c->validate = true;
        return 0;
    default:
        c->help = true;
        return 0;
    }
}

static int apply(struct ctx *c, enum flag_id id, const char *v)
{
    switch (flags[id].section) {
    case SECTION_MODEL:
        return apply_model(c, id, v);
    case SECTION_TRAIN:
        return apply_train(c, id, v);
    case SECTION_HW:
        return apply_hw(c, id, v);
    case SECTION_RULES:
        return apply_rules(c, id, v);
    default:
        return apply_output(c, id, v);
    }
}

/* Splits argv[i] into a flag and its value (--flag=value or --flag value);
 * returns the flag's index or -1 with a message. */
static int next_flag(int argc, char **argv, int *i, const char **value)
{
    const char *arg = argv[*i];
    if (strncmp(arg, "--", 2) != 0) {
        fprintf(stderr, "sn plan: unexpected argument '%s' (flags start with --)\n", arg);
        return -1;
    }
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    for (int k = 0; k < FLAG_COUNT; k++) {
        if (strlen(flags[k].name) != len || strncmp(flags[k].name, arg + 2, len) != 0)
            continue;
        *value = NULL;
        if (flags[k].arg && eq)
            *value = eq + 1;
        else if (flags[k].arg && *i + 1 < argc)
            *value = argv[++*i];
        if (flags[k].arg && !*value) {
            fprintf(stderr, "sn plan: --%s needs a value (%s)\n", flags[k].name, flags[k].arg);
            return -1;
        }
        if (!flags[k].arg && eq) {
            fprintf(stderr, "sn plan: --%s takes no value\n", flags[k].name);
            return -1;
        }
        return k;
    }
    fprintf(stderr, "sn plan: unknown flag '%s' (see sn plan --help)\n", arg);
    return -1;
}

/* --spec: the hardware of one supernode template of a cluster spec. */
static int apply_spec(struct ctx *c)
{
    if (!c->spec_path) {
        if (c->template_name || c->spec_storage)
            return bad_flag(c->template_name ? "template" : "spec-storage", "needs --spec");
        return 0;
    }
    struct sn_error err = {0};
    if (sn_spec_parse_file(c->spec_path, &c->spec, &err) != SN_OK) {
        fprintf(stderr, "sn plan: %s\n", err.message);
        return -1;
    }
    const char *name = c->template_name;
    if (!name) {
        if (c->spec->n_templates != 1)
            return bad_flag("spec", "the spec has several templates: choose one with --template");
        name = c->spec->templates[0].name;
    }
    if (sn_plan_hardware_from_spec(c->spec, name, c->spec_storage, &c->in.hw, &err) != SN_OK) {
        fprintf(stderr, "sn plan: --spec %s: %s\n", c->spec_path, err.message);
        return -1;
    }
    if (c->in.hw.n_storage > 0)
        c->storage_set = true; /* --storage adds to the spec's tiers */
    return 0;
}

static int apply_presets(struct ctx *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v;
        int k = next_flag(argc, argv, &i, &v);
        if (k < 0)
            return -1;
        if (k == FLAG_MODEL) {
            const struct sn_plan_model *m = sn_plan_model_preset(v);
            if (!m)
                return bad_flag("model", "unknown preset (see sn plan --list)");
            c->in.model = *m;
            c->have_model = true;
        } else if (k == FLAG_GPU && !sn_plan_gpu_preset(v, &c->in.hw)) {
            return bad_flag("gpu", "unknown preset: expected a100, h100, h200, h800, b200, gb200 "
                                   "or mi300x");
        } else if (k == FLAG_SPEC) {
            c->spec_path = v;
        } else if (k == FLAG_TEMPLATE) {
            c->template_name = v;
        } else if (k == FLAG_SPEC_STORAGE) {
            c->spec_storage = v;
        }
    }
    return apply_spec(c);
}

static void custom_model_style(struct ctx *c)
{
    struct sn_plan_model *m = &c->in.model;
    bool llama = c->custom_arch_llama;
    m->name = "custom";
    m->gated_mlp = llama;
    m->biases = m->layernorm = m->tied_embeddings = m->learned_pos = m->dropout = !llama;
    if (!m->experts)
        m->experts = 1;
    if (!m->top_k)
        m->top_k = 1;
}

/* Fills what the flags left open: the custom model's defaults, dp or the
 * GPU count, the global batch in sequences, sequence parallelism and the
 * checkpoint tier by name. */
static int finish_input(struct ctx *c)
{
    struct sn_plan_model *m = &c->in.model;
    struct sn_plan_train *t = &c->in.train;
    if (!c->have_model)
        custom_model_style(c);
    if (!m->ffn)
        m->ffn = 4 * m->hidden;
    if (!m->kv_heads)
        m->kv_heads = m->heads;
    if (c->sweep && c->layout_flag)
        return bad_flag("sweep", "the sweep chooses tp, pp, dp and cp itself: drop those flags");
    if (c->sweep && !t->gpus)
        return bad_flag("sweep", "needs --gpus");
    uint64_t inner = (uint64_t)t->tp * t->pp * t->cp;
    if (!c->sweep && !t->dp) {
        if (!t->gpus)
            t->dp = 1;
        else if (inner == 0 || t->gpus % inner) {
            fprintf(stderr,
                    "sn plan: gpus %u is not a multiple of tp x pp x cp = %llu, so no dp fits\n",
                    t->gpus, (unsigned long long)inner);
            return -1;
        } else
            t->dp = (uint32_t)(t->gpus / inner);
    }
    if (!t->gpus) {
        uint64_t n = inner * t->dp;
        if (n > SN_PLAN_MAX_GPUS)
            return bad_flag("gpus", "tp x pp x dp x cp is too large");
        t->gpus = (uint32_t)n;
    }
    if (c->global_tokens) {
        if (t->global_batch)
            return bad_flag("global-batch-tokens", "give --global-batch or --global-batch-tokens, "
                                                   "not both");
        if (!m->seq || c->global_tokens % m->seq)
            return bad_flag("global-batch-tokens", "not a multiple of the sequence length");
        t->global_batch = c->global_tokens / m->seq;
    }
    if (!t->global_batch)
        return bad_flag("global-batch", "required (sequences per step)");
    t->seq_parallel = c->sp_set ? c->sp : t->tp > 1;
    if (c->calibration_gpu &&
        (!c->in.hw.gpu_name || strcmp(c->calibration_gpu, c->in.hw.gpu_name) != 0)) {
        fprintf(stderr, "sn plan: --calibration %s: the fit is for %s, the plan is on %s\n",
                c->calibration_file, c->calibration_gpu,
                c->in.hw.gpu_name ? c->in.hw.gpu_name : "an unnamed GPU");
        return -1;
    }
    if (c->calibration_out && !c->calibrate_file)
        return bad_flag("calibration-out", "needs --calibrate FILE.json");
    if (c->ckpt_tier) {
        for (uint32_t i = 0; i < c->in.hw.n_storage; i++)
            if (strcmp(c->in.hw.storage[i].name, c->ckpt_tier) == 0)
                c->in.opt.ckpt_tier = i;
        if (c->in.opt.ckpt_tier == SN_PLAN_NO_TIER)
            return bad_flag("ckpt-tier", "no storage tier of that name");
    }
    return 0;
}

static int parse_args(struct ctx *c, int argc, char **argv)
{
    memset(c, 0, sizeof(*c));
    sn_plan_input_defaults(&c->in);
    c->in.train.gpus = 0;
    c->in.train.dp = 0;
    c->in.train.global_batch = 0;
    c->top = 10;
    if (apply_presets(c, argc, argv))
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int k = next_flag(argc, argv, &i, &v);
        if (k < 0 || apply(c, (enum flag_id)k, v))
            return -1;
    }
    if (c->help || c->list || c->validate || c->calibrate_file)
        return 0;
    return finish_input(c);
}

/* ---- text output ------------------------------------------------------ */

static const char *fmt(double v, enum sn_unit_kind kind, char *buf)
{
    return sn_units_format(v, kind, buf, 32);
}

#define B(v) fmt((v), SN_UNIT_BYTES, (char[32]){0})
#define S(v) fmt((v), SN_UNIT_TIME, (char[32]){0})
#define BW(v) fmt((v), SN_UNIT_BANDWIDTH_DIRECTED, (char[32]){0})
#define BITS(v) fmt((v), SN_UNIT_BANDWIDTH, (char[32]){0})

static void print_header(const struct sn_plan_input *in)
{
    const struct sn_plan_train *t = &in->train;
    const struct sn_plan_model *m = &in->model;
    printf("plan: %s on %u x %s\n", m->name, t->gpus, in->hw.gpu_name ? in->hw.gpu_name : "gpu");
    printf("  layout      tp %u, pp %u (interleave %u), dp %u, cp %u, ep %u; zero %u; "
           "recompute %s; sp %s; %s, %s\n",
           t->tp, t->pp, t->vpp, t->dp, t->cp, t->ep, t->zero, sn_recompute_name(t->recompute),
           t->seq_parallel ? "on" : "off", sn_precision_name(t->precision),
           sn_optimizer_name(t->optimizer));
    printf("  batch       %llu sequences x %u tokens, micro-batch %u\n",
           (unsigned long long)t->global_batch, m->seq, t->micro_batch);
    if (m->experts > 1)
        printf("  experts     %u routed (top-%u) + %u shared, %u dense first layers; capacity factor "
               "%g\n",
               m->experts, m->top_k, m->shared_experts, m->dense_layers,
               t->capacity_factor > 1 ? t->capacity_factor : 1);
}

static void print_memory(const struct sn_plan_input *in, const struct sn_plan_result *r)
{
    const struct sn_plan_memory *mem = &r->memory;
    const struct sn_plan_train *t = &in->train;
    printf("\nmemory per GPU (worst pipeline stage, %u of %u: %u layers; micro-batches in flight: "
           "%u)\n",
           mem->worst_stage + 1, t->pp, mem->stage_layers, mem->inflight);
    printf("  parameters      %.4g B total, %.4g B active per token, %.4g B on this GPU\n",
           mem->params_total / 1e9, mem->params_active / 1e9, mem->params_per_gpu / 1e9);
    printf("  weights         %s%s\n", B(mem->weights_bytes),
           t->zero >= 3 ? " (sharded over dp x cp)" : "");
    printf("  gradients       %s%s\n", B(mem->grads_bytes),
           t->zero >= 2 ? " (sharded over dp x cp)" : "");
    printf("  optimizer       %-10s (%g B/param%s)\n", B(mem->optimizer_bytes),
           r->ckpt.bytes_per_param_optimizer, t->zero >= 1 ? ", sharded over dp x cp" : "");
    printf("  activations     %-10s (%s per layer per micro-batch)\n", B(mem->activations_bytes),
           B(mem->act_per_layer_bytes));
    printf("  total           %-10s of %s HBM", B(mem->total_bytes), B(mem->hbm_bytes));
    if (in->hw.hbm_reserve_bytes > 0)
        printf(" less %s reserved", B(in->hw.hbm_reserve_bytes));
    if (mem->fits)
        printf(": fits, %s free (%.1f%%)\n", B(mem->free_bytes),
               100 * mem->free_bytes / mem->hbm_bytes);
    else
        printf(": DOES NOT FIT, short by %s\n", B(-mem->free_bytes));
}

static void print_compute(const struct sn_plan_input *in, const struct sn_plan_result *r)
{
    const struct sn_plan_compute *c = &r->compute;
    char peak[32];
    printf("\ncompute per step (%llu micro-batches per pipeline)\n",
           (unsigned long long)c->microbatches);
    printf("  6N x tokens     %.4g FLOP (MFU basis)\n", c->model_flops_6n);
    printf("  model FLOPs     %.4g FLOP (Megatron count, no recompute)\n", c->model_flops);
    printf("  hardware FLOPs  %.4g FLOP (with %s recompute: HFU basis)\n", c->hardware_flops,
           sn_recompute_name(in->train.recompute));
    printf("  compute time    %s at %.1f%% of %s%s (GEMM roofline; a large GEMM reaches %.0f%%)\n",
           S(c->compute_s), 100 * c->efficiency,
           sn_units_format(in->train.precision == SN_PRECISION_FP8 && in->hw.peak_fp8_flops > 0
                               ? in->hw.peak_fp8_flops
                           : in->train.precision == SN_PRECISION_FP8 ? 2 * in->hw.peak_flops
                                                                      : in->hw.peak_flops,
                           SN_UNIT_FLOPS, peak, sizeof(peak)),
           in->train.precision == SN_PRECISION_FP8 ? " FP8" : "", 100 * in->hw.compute_efficiency);
    printf("  pipeline bubble %s ((p - 1) / (v m) = %u / (%u x %llu) = %.1f%%)\n", S(c->bubble_s),
           in->train.pp - 1, in->train.vpp, (unsigned long long)c->microbatches,
           100 * c->bubble_fraction);
}

static void print_comm(const struct sn_plan_input *in, const struct sn_plan_result *r)
{
    static const char *const what[SN_PLAN_DIM_COUNT] = {
        "all-reduce (AG+RS with sp)", "all-gather KV + reduce-scatter dKV",
        "all-to-all dispatch + combine", "gradient all-reduce (RS+AG with zero)",
        "point-to-point activations"};
    printf("\ncommunication per GPU per step (scale-up bus %s, scale-out bus %s per direction)\n",
           BW(in->hw.scaleup_bytes_per_s * in->hw.scaleup_efficiency),
           BW(in->hw.scaleout_bytes_per_s * in->hw.scaleout_efficiency));
    printf("  dim  group  fabric     bytes       time        exposed     collective\n");
    for (int i = 0; i < SN_PLAN_DIM_COUNT; i++) {
        const struct sn_plan_comm_dim *d = &r->comm.dim[i];
        if (d->group <= 1)
            continue;
        printf("  %-4s %-6u %-10s %-11s %-11s %-11s %s\n", sn_plan_dim_name((enum sn_plan_dim)i),
               d->group, d->scaleout ? "scale-out" : "scale-up", B(d->bytes), S(d->time_s),
               S(d->exposed_s), what[i]);
    }
    printf("  total: %s on scale-up, %s on scale-out; %s exposed of %s (overlap %.0f%% of dp "
           "and cp)\n",
           B(r->comm.scaleup_bytes), B(r->comm.scaleout_bytes), S(r->comm.exposed_s),
           S(r->comm.time_s), 100 * in->hw.overlap);
}

/* Scale-up figures read best in bytes, scale-out (NIC line rates) in bits. */
static void print_need(const char *fabric, double bytes, const struct sn_plan_bandwidth *b,
                       double need, double provision, double have, bool ok)
{
    bool bits = strcmp(fabric, "scale-out") == 0;
    printf("  %-9s %s / (%s x %.0f%%) = %s = %s; +%.0f%% = %s; have %s: %s\n", fabric, B(bytes),
           S(b->target_step_s), 100 * b->comm_fraction, BW(need), BITS(need), 100 * b->headroom,
           bits ? BITS(provision) : BW(provision), bits ? BITS(have) : BW(have),
           ok ? "ok" : "SHORT");
}

static void print_bandwidth(const struct sn_plan_input *in, const struct sn_plan_result *r)
{
    const struct sn_plan_bandwidth *b = &r->bandwidth;
    printf("\nrequired bandwidth per GPU per direction: bytes per step / (target step x "
           "communication share)\n");
    print_need("scale-up", r->comm.scaleup_bytes, b, b->scaleup_need_bytes_per_s,
               b->scaleup_provision_bytes_per_s, in->hw.scaleup_bytes_per_s, b->scaleup_ok);
    print_need("scale-out", r->comm.scaleout_bytes, b, b->scaleout_need_bytes_per_s,
               b->scaleout_provision_bytes_per_s, in->hw.scaleout_bytes_per_s, b->scaleout_ok);
}

static void print_perf(const struct sn_plan_input *in, const struct sn_plan_result *r)
{
    const struct sn_plan_perf *p = &r->perf;
    const struct sn_plan_placement *pl = &r->placement;
    printf("\nperformance\n");
    printf("  step time       %s = compute %s + bubble %s + exposed communication %s\n",
           S(p->step_s), S(r->compute.compute_s), S(r->compute.bubble_s), S(r->comm.exposed_s));
    printf("  throughput      %.4g tokens/s; MFU %.1f%%, HFU %.1f%%\n", p->tokens_per_s,
           100 * p->mfu, 100 * p->hfu);
    if (p->train_s > 0) {
        double x = r->compute.hardware_flops / (p->step_s * in->train.gpus);
        printf("  time to train   %s for %.4g tokens (Narayanan et al.'s 8TP/(nX) at the predicted "
               "X = %.4g TFLOP/s: %s)\n",
               S(p->train_s), in->train.train_tokens, x / 1e12,
               S(sn_plan_train_time_megatron(in->train.train_tokens, r->memory.params_total,
                                             in->train.gpus, x)));
    }
    printf("\nplacement (scale-up domain: %u GPUs)\n", in->hw.scaleup_gpus);
    printf("  smallest domain keeping inside: tp %u GPUs, tp x cp %u, one pipeline stage "
           "(tp x cp x dp) %u\n",
           pl->domain_for_tp, pl->domain_for_tp_cp, pl->domain_for_stage);
    printf("  tp inside one domain: %s; with tp across scale-out the step would take %s "
           "(%.2fx)\n",
           pl->tp_inside ? "yes" : "NO", S(pl->tp_scaleout_step_s), pl->tp_scaleout_slowdown);
}

static void print_ckpt(const struct sn_plan_input *in, const struct sn_plan_result *r)
{
    const struct sn_plan_checkpoint *k = &r->ckpt;
    static const char *const what[SN_CKPT_FORMAT_COUNT] = {
        "16-bit weights + fp32 master + moments", "fp32 master + moments, no 16-bit weights",
        "weights only"};
    printf("\ncheckpoint (format %s: %s%s)\n", sn_ckpt_format_name(k->format), what[k->format],
           in->opt.ckpt_bytes_per_param > 0 ? "; overridden by --ckpt-bytes-per-param" : "");
    printf("  size            weights %s (%g B/param) + optimizer %s (%g B/param) = %s\n",
           B(k->weights_bytes), k->bytes_per_param_weights, B(k->optimizer_bytes),
           k->bytes_per_param_optimizer, B(k->total_bytes));
    printf("  window          %s for an interval of %s\n", S(k->window_s), S(k->interval_s));
    printf("  tier            write       read        window\n");
    for (uint32_t i = 0; i < in->hw.n_storage; i++)
        printf("  %-15s %-11s %-11s %s%s\n", in->hw.storage[i].name, S(k->tier[i].write_s),
               S(k->tier[i].read_s),
               !k->tier[i].usable         ? "not used: per-server storage dies with its server "
                                            "(--local-ckpt to allow)"
               : k->tier[i].meets_window ? "ok"
                                         : "TOO SLOW",
               i == k->tier_used ? " (used below)" : "");
    printf("  footprint       %u GPUs, %u servers, %u supernodes, %u leaves, %u power domains\n",
           in->train.gpus, k->servers, k->supernodes, k->leaves, k->power_domains);
    if (k->no_failures) {
        printf("  job MTBF        infinite: every failure rate is 0, so failures need no "
               "checkpoints;\n"
               "                  the planned interval only bounds the work a restart loses\n");
        if (k->tier_used != SN_PLAN_NO_TIER)
            printf("  goodput         %.1f%% of wall time (writes every %s)\n", 100 * k->goodput,
                   S(k->interval_s));
        return;
    }
    printf("  job MTBF        %s\n", S(k->job_mtbf_s));
    if (k->tier_used == SN_PLAN_NO_TIER) {
        printf("  no durable shared tier: no checkpoint interval\n");
        return;
    }
    printf("  interval        Young sqrt(2CM) %s; Daly %s (C = %s, M = %s)\n", S(k->young_s),
           S(k->daly_s), S(k->tier[k->tier_used].write_s), S(k->job_mtbf_s));
    printf("  per failure     %s lost (restart %s + read + half an interval and a write)\n",
           S(k->lost_per_failure_s), S(in->opt.restart_s));
    printf("  goodput         %.1f%% of wall time at the Daly interval\n", 100 * k->goodput);
}

static bool plan_holds(const struct sn_plan_input *in, const struct sn_plan_result *r)
{
    bool any_tier = in->hw.n_storage == 0;
    for (uint32_t i = 0; i < in->hw.n_storage; i++)
        any_tier = any_tier || (r->ckpt.tier[i].meets_window && r->ckpt.tier[i].usable);
    return r->memory.fits && r->bandwidth.scaleup_ok && r->bandwidth.scaleout_ok && any_tier;
}

/* ---- JSON output ------------------------------------------------------ */

/* A real, or null where it is not finite (an infinite MTBF). */
static void jr(json_t *o, const char *key, double v)
{
    json_object_set_new(o, key, isfinite(v) ? json_real(v) : json_null());
}

static void ji(json_t *o, const char *key, uint64_t v)
{
    json_object_set_new(o, key, json_integer((json_int_t)v));
}

static void jb(json_t *o, const char *key, bool v)
{
    json_object_set_new(o, key, json_boolean(v));
}

static void js(json_t *o, const char *key, const char *v)
{
    json_object_set_new(o, key, v ? json_string(v) : json_null());
}

static json_t *json_layout(const struct sn_plan_train *t)
{
    json_t *o = json_object();
    ji(o, "gpus", t->gpus);
    ji(o, "tp", t->tp);
    ji(o, "pp", t->pp);
    ji(o, "dp", t->dp);
    ji(o, "cp", t->cp);
    ji(o, "ep", t->ep);
    ji(o, "interleave", t->vpp);
    ji(o, "zero", t->zero);
    js(o, "recompute", sn_recompute_name(t->recompute));
    jb(o, "sequence_parallel", t->seq_parallel);
    js(o, "precision", sn_precision_name(t->precision));
    js(o, "optimizer", sn_optimizer_name(t->optimizer));
    ji(o, "micro_batch", t->micro_batch);
    ji(o, "global_batch", t->global_batch);
    jr(o, "capacity_factor", t->capacity_factor > 1 ? t->capacity_factor : 1);
    return o;
}

static json_t *json_model(const struct sn_plan_model *m)
{
    json_t *o = json_object();
    js(o, "name", m->name);
    ji(o, "layers", m->layers);
    ji(o, "hidden", m->hidden);
    ji(o, "heads", m->heads);
    ji(o, "kv_heads", m->kv_heads);
    ji(o, "ffn", m->ffn);
    ji(o, "vocab", m->vocab);
    ji(o, "seq", m->seq);
    ji(o, "experts", m->experts);
    ji(o, "top_k", m->top_k);
    jr(o, "params", sn_plan_params(m));
    jr(o, "params_active", sn_plan_params_active(m));
    return o;
}

static json_t *json_hardware(const struct sn_plan_hardware *hw)
{
    json_t *o = json_object();
    js(o, "gpu", hw->gpu_name);
    jr(o, "peak_flops", hw->peak_flops);
    jr(o, "hbm_bytes", hw->hbm_bytes);
    ji(o, "scaleup_gpus", hw->scaleup_gpus);
    jr(o, "scaleup_bytes_per_s", hw->scaleup_bytes_per_s);
    jr(o, "scaleout_bytes_per_s", hw->scaleout_bytes_per_s);
    jr(o, "scaleup_efficiency", hw->scaleup_efficiency);
    jr(o, "scaleout_efficiency", hw->scaleout_efficiency);
    jr(o, "compute_efficiency", hw->compute_efficiency);
    jr(o, "overlap", hw->overlap);
    return o;
}

static json_t *json_memory(const struct sn_plan_memory *m)
{
    json_t *o = json_object();
    jr(o, "params_per_gpu", m->params_per_gpu);
    ji(o, "worst_stage", m->worst_stage);
    ji(o, "stage_layers", m->stage_layers);
    ji(o, "inflight_microbatches", m->inflight);
    jr(o, "act_per_layer_bytes", m->act_per_layer_bytes);
    jr(o, "weights_bytes", m->weights_bytes);
    jr(o, "grads_bytes", m->grads_bytes);
    jr(o, "optimizer_bytes", m->optimizer_bytes);
    jr(o, "activations_bytes", m->activations_bytes);
    jr(o, "total_bytes", m->total_bytes);
    jr(o, "hbm_bytes", m->hbm_bytes);
    jr(o, "free_bytes", m->free_bytes);
    jb(o, "fits", m->fits);
    return o;
}

static json_t *json_compute(const struct sn_plan_compute *c, const struct sn_plan_perf *p)
{
    json_t *o = json_object();
    ji(o, "microbatches", c->microbatches);
    jr(o, "tokens_per_step", c->tokens_per_step);
    jr(o, "model_flops_6n", c->model_flops_6n);
    jr(o, "model_flops", c->model_flops);
    jr(o, "hardware_flops", c->hardware_flops);
    jr(o, "compute_s", c->compute_s);
    jr(o, "bubble_fraction", c->bubble_fraction);
    jr(o, "bubble_s", c->bubble_s);
    jr(o, "efficiency", c->efficiency);
    jr(o, "microbatch_s", c->microbatch_s);
    jr(o, "step_s", p->step_s);
    jr(o, "tokens_per_s", p->tokens_per_s);
    jr(o, "mfu", p->mfu);
    jr(o, "hfu", p->hfu);
    jr(o, "train_s", p->train_s);
    return o;
}

static json_t *json_comm(const struct sn_plan_comm *c)
{
    json_t *o = json_object();
    for (int i = 0; i < SN_PLAN_DIM_COUNT; i++) {
        const struct sn_plan_comm_dim *d = &c->dim[i];
        json_t *dim = json_object();
        ji(dim, "group", d->group);
        js(dim, "fabric", d->scaleout ? "scale-out" : "scale-up");
        jr(dim, "bytes", d->bytes);
        jr(dim, "time_s", d->time_s);
        jr(dim, "exposed_s", d->exposed_s);
        json_object_set_new(o, sn_plan_dim_name((enum sn_plan_dim)i), dim);
    }
    jr(o, "scaleup_bytes", c->scaleup_bytes);
    jr(o, "scaleout_bytes", c->scaleout_bytes);
    jr(o, "time_s", c->time_s);
    jr(o, "exposed_s", c->exposed_s);
    return o;
}

static json_t *json_bandwidth(const struct sn_plan_bandwidth *b)
{
    json_t *o = json_object();
    jr(o, "target_step_s", b->target_step_s);
    jr(o, "comm_fraction", b->comm_fraction);
    jr(o, "headroom", b->headroom);
    jr(o, "scaleup_need_bytes_per_s", b->scaleup_need_bytes_per_s);
    jr(o, "scaleup_provision_bytes_per_s", b->scaleup_provision_bytes_per_s);
    jb(o, "scaleup_ok", b->scaleup_ok);
    jr(o, "scaleout_need_bytes_per_s", b->scaleout_need_bytes_per_s);
    jr(o, "scaleout_provision_bytes_per_s", b->scaleout_provision_bytes_per_s);
    jb(o, "scaleout_ok", b->scaleout_ok);
    return o;
}

static json_t *json_placement(const struct sn_plan_placement *p)
{
    json_t *o = json_object();
    ji(o, "domain_for_tp", p->domain_for_tp);
    ji(o, "domain_for_tp_cp", p->domain_for_tp_cp);
    ji(o, "domain_for_stage", p->domain_for_stage);
    jb(o, "tp_inside", p->tp_inside);
    jr(o, "tp_scaleout_step_s", p->tp_scaleout_step_s);
    jr(o, "tp_scaleout_slowdown", p->tp_scaleout_slowdown);
    return o;
}

static json_t *json_ckpt(const struct sn_plan_input *in, const struct sn_plan_checkpoint *k)
{
    json_t *o = json_object(), *tiers = json_array();
    js(o, "format", sn_ckpt_format_name(k->format));
    jr(o, "bytes_per_param_weights", k->bytes_per_param_weights);
    jr(o, "bytes_per_param_optimizer", k->bytes_per_param_optimizer);
    jr(o, "weights_bytes", k->weights_bytes);
    jr(o, "optimizer_bytes", k->optimizer_bytes);
    jr(o, "total_bytes", k->total_bytes);
    jr(o, "interval_s", k->interval_s);
    jr(o, "window_s", k->window_s);
    for (uint32_t i = 0; i < in->hw.n_storage; i++) {
        json_t *t = json_object();
        js(t, "name", in->hw.storage[i].name);
        jr(t, "write_s", k->tier[i].write_s);
        jr(t, "read_s", k->tier[i].read_s);
        jb(t, "meets_window", k->tier[i].meets_window);
        jb(t, "usable", k->tier[i].usable);
        jb(t, "used", i == k->tier_used);
        json_array_append_new(tiers, t);
    }
    json_object_set_new(o, "tiers", tiers);
    ji(o, "servers", k->servers);
    ji(o, "supernodes", k->supernodes);
    ji(o, "leaves", k->leaves);
    ji(o, "power_domains", k->power_domains);
    jr(o, "job_mtbf_s", k->job_mtbf_s);
    jr(o, "young_s", k->young_s);
    jr(o, "daly_s", k->daly_s);
    jr(o, "lost_per_failure_s", k->lost_per_failure_s);
    jr(o, "goodput", k->goodput);
    jb(o, "no_failures", k->no_failures);
    return o;
}

static int print_json(json_t *root)
{
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!text) {
        fprintf(stderr, "sn plan: out of memory\n");
        return -1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

static json_t *json_measured(const struct sn_plan_measured *m);

static int plan_json(const struct sn_plan_input *in, const struct sn_plan_result *r,
                     const struct sn_plan_calibration *cal, const struct sn_plan_measured *m)
{
    json_t *root = json_object();
    js(root, "schema", "sn-plan/1");
    json_object_set_new(root, "model", json_model(&in->model));
    json_object_set_new(root, "layout", json_layout(&in->train));
    json_object_set_new(root, "hardware", json_hardware(&in->hw));
    json_object_set_new(root, "memory", json_memory(&r->memory));
    json_object_set_new(root, "compute", json_compute(&r->compute, &r->perf));
    json_object_set_new(root, "communication", json_comm(&r->comm));
    json_object_set_new(root, "bandwidth", json_bandwidth(&r->bandwidth));
    json_object_set_new(root, "placement", json_placement(&r->placement));
    json_object_set_new(root, "checkpoint", json_ckpt(in, &r->ckpt));
    if (cal) {
        json_t *o = json_object();
        jr(o, "measured_step_s", cal->measured_step_s);
        jr(o, "predicted_step_s", cal->predicted_step_s);
        jr(o, "error_before", cal->error_before);
        jr(o, "compute_efficiency", cal->compute_efficiency);
        jr(o, "fitted_step_s", cal->fitted_step_s);
        jr(o, "residual", cal->residual);
        json_object_set_new(root, "calibration", o);
    }
    if (m)
        json_object_set_new(root, "measured", json_measured(m));
    jb(root, "holds", plan_holds(in, r));
    return print_json(root);
}

/* ---- the sweep -------------------------------------------------------- */

static void print_drop_example(enum sn_plan_drop d, const struct sn_plan_sweep *s)
{
    const struct sn_plan_train *t = &s->dropped_example[d];
    printf("  %-8llu %s (e.g. tp %u pp %u dp %u cp %u", (unsigned long long)s->dropped[d],
           sn_plan_drop_name(d), t->tp, t->pp, t->dp, t->cp);
    if (d == SN_PLAN_DROP_MEMORY)
        printf(" micro-batch %u zero %u recompute %s, the closest: short by %s", t->micro_batch,
               t->zero, sn_recompute_name(t->recompute), B(-s->dropped_example_free_bytes));
    printf(")\n");
}

/* ---- calibration and validation --------------------------------------- */

static void print_calibration(const struct sn_plan_calibration *cal)
{
    printf("calibration: measured step %s; predicted %s at the given efficiency (%+.1f%%)\n",
           S(cal->measured_step_s), S(cal->predicted_step_s), 100 * cal->error_before);
    printf("  fitted large-GEMM efficiency %.1f%%: predicted step %s, residual %+.2f%%%s\n\n",
           100 * cal->compute_efficiency, S(cal->fitted_step_s), 100 * cal->residual,
           fabs(cal->residual) > 0.01 ? " (the fit hit a bound: communication or the bubble, "
                                        "not compute, sets this step)"
                                      : "");
}

static void print_metric(enum sn_plan_metric metric, double v)
{
    switch (metric) {
    case SN_PLAN_METRIC_MFU:
        printf("%.1f%%", 100 * v);
        break;
    case SN_PLAN_METRIC_STEP_S:
        printf("%.2f s", v);
        break;
    case SN_PLAN_METRIC_GPU_HOURS_PER_T:
        printf("%.0fK GPU h", v / 1e3);
        break;
    default:
        printf("%.0f TFLOP/s", v / 1e12);
        break;
    }
}

/* The validation table as Markdown (docs/planner.md includes it as
 * printed); exit 1 when a run leaves its bound. */
static int run_validate(void)
{
    int rc = SN_EXIT_OK;
    printf("| # | run | metric | published | predicted | error | bound | calibrated on | "
           "after calibration | error | bound | source |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    size_t n = sn_plan_validation_count();
    for (size_t i = 0; i < n; i++) {
        struct sn_plan_validation v;
        struct sn_error err = {0};
        if (sn_plan_validation_run(i, &v, &err) != SN_OK) {
            fprintf(stderr, "sn plan: validation run %zu: %s\n", i + 1, err.message);
            return SN_EXIT_INTERNAL;
        }
        bool ok = fabs(v.error) <= v.bound;
        bool has_cal = v.calibrated_on != SIZE_MAX;
        bool cal_ok = !has_cal || fabs(v.calibrated_error) <= v.calibrated_bound;
        if (!ok || !cal_ok)
            rc = SN_EXIT_FINDINGS;
        printf("| %zu | %s | %s | ", i + 1, v.name, sn_plan_metric_name(v.metric));
        print_metric(v.metric, v.published);
        printf(" | ");
        print_metric(v.metric, v.predicted);
        printf(" | %+.1f%% | %s%.0f%%%s | ", 100 * v.error, ok ? "" : "**", 100 * v.bound,
               ok ? "" : " EXCEEDED**");
        if (has_cal) {
            printf("#%zu (%.1f%%) | ", v.calibrated_on + 1, 100 * v.calibrated_efficiency);
            print_metric(v.metric, v.calibrated);
            printf(" | %+.1f%% | %s%.0f%%%s | ", 100 * v.calibrated_error, cal_ok ? "" : "**",
                   100 * v.calibrated_bound, cal_ok ? "" : " EXCEEDED**");
        } else {
            printf("none | - | - | - | ");
        }
        printf("%s |\n", v.source);
    }
    printf("\nAssumptions per run:\n\n");
    for (size_t i = 0; i < n; i++) {
        struct sn_plan_validation v;
        if (sn_plan_validation_run(i, &v, NULL) == SN_OK)
            printf("%zu. %s: %s.\n", i + 1, v.name, v.note);
    }
    return rc;
}

static void sweep_text(const struct sn_plan_input *in, const struct sn_plan_sweep *s)
{
    printf("sweep: %s on %u x %s, %llu sequences x %u tokens; strict TP rule %s\n", in->model.name,
           in->train.gpus, in->hw.gpu_name ? in->hw.gpu_name : "gpu",
           (unsigned long long)in->train.global_batch, in->model.seq,
           in->opt.strict ? "on" : "off");
    printf("  %llu layouts evaluated, %llu valid\n", (unsigned long long)s->evaluated,
           (unsigned long long)s->valid);
    printf("\nrejected:\n");
    for (int d = 0; d < SN_PLAN_DROP_COUNT; d++)
        if (s->dropped[d])
            print_drop_example((enum sn_plan_drop)d, s);
    printf("  (tp, pp and batch rules prune a whole (tp, pp, cp) prefix, counted once)\n");
    printf("\n  #   tp  pp  v  dp     cp  ep  mb  zero  recompute  memory     step       "
           "tokens/s    MFU    why not first\n");
    for (uint32_t i = 0; i < s->n_top; i++) {
        const struct sn_plan_train *t = &s->top[i].train;
        const struct sn_plan_result *r = &s->top[i].result;
        char why[96];
        printf("  %-3u %-3u %-3u %-2u %-6u %-3u %-3u %-3u %-5u %-10s %-10s %-10s %-11.4g %-6.1f %s\n",
               i + 1, t->tp, t->pp, t->vpp, t->dp, t->cp, t->ep, t->micro_batch, t->zero,
               sn_recompute_name(t->recompute), B(r->memory.total_bytes), S(r->perf.step_s),
               r->perf.tokens_per_s, 100 * r->perf.mfu,
               sn_plan_sweep_reason(s, i, why, sizeof(why)));
    }
    char explain[320];
    printf("\nwinner vs runner-up: %s\n", sn_plan_sweep_explain(s, explain, sizeof(explain)));
}

static int sweep_json(const struct sn_plan_input *in, const struct sn_plan_sweep *s)
{
    json_t *root = json_object(), *dropped = json_object(), *top = json_array();
    js(root, "schema", "sn-plan-sweep/1");
    json_object_set_new(root, "model", json_model(&in->model));
    ji(root, "gpus", in->train.gpus);
    ji(root, "evaluated", s->evaluated);
    ji(root, "valid", s->valid);
    static const char *const keys[SN_PLAN_DROP_COUNT] = {"memory", "tp_domain", "batch", "layers"};
    for (int d = 0; d < SN_PLAN_DROP_COUNT; d++)
        ji(dropped, keys[d], s->dropped[d]);
    json_object_set_new(root, "dropped", dropped);
    for (uint32_t i = 0; i < s->n_top; i++) {
        char why[96];
        json_t *e = json_object();
        json_object_set_new(e, "layout", json_layout(&s->top[i].train));
        jr(e, "total_bytes", s->top[i].result.memory.total_bytes);
        jr(e, "step_s", s->top[i].result.perf.step_s);
        jr(e, "tokens_per_s", s->top[i].result.perf.tokens_per_s);
        jr(e, "mfu", s->top[i].result.perf.mfu);
        js(e, "reason", sn_plan_sweep_reason(s, i, why, sizeof(why)));
        json_array_append_new(top, e);
    }
    json_object_set_new(root, "top", top);
    char explain[320];
    js(root, "winner_vs_runner_up", sn_plan_sweep_explain(s, explain, sizeof(explain)));
    return print_json(root);
}

static int run_sweep(const struct ctx *c)
{
    struct sn_plan_sweep *s = malloc(sizeof(*s));
    if (!s) {
        fprintf(stderr, "sn plan: out of memory\n");
        return SN_EXIT_INTERNAL;
    }
    struct sn_error err = {0};
    int rc = SN_EXIT_OK;
    if (sn_plan_sweep_run(&c->in, c->top, s, &err) != SN_OK) {
        fprintf(stderr, "sn plan: %s\n", err.message);
        rc = SN_EXIT_USAGE;
        goto free_sweep;
    }
    if (c->json ? sweep_json(&c->in, s) : (sweep_text(&c->in, s), 0))
        rc = SN_EXIT_INTERNAL;
    else if (s->n_top == 0)
        rc = SN_EXIT_FINDINGS;
free_sweep:
    free(s);
    return rc;
}

/* ---- measured runs ---------------------------------------------------- */

static void measured_row(const char *what, const char *pred, const char *meas, double p, double m)
{
    printf("  %-44s %-12s %-12s %+.1f%%\n", what, pred, meas, 100 * (p / m - 1));
}

static void print_measured(const struct sn_plan_input *in, const struct sn_plan_result *r,
                           const struct sn_plan_measured *m)
{
    const struct sn_plan_measured_figures *p = &m->predicted, *x = &m->measured;
    char a[32], b[32];
    printf("\nmeasured run (%s=", sn_plan_measure_name(m->kind));
    if (m->kind == SN_PLAN_MEASURE_STEP)
        printf("%s", S(m->value));
    else if (m->kind == SN_PLAN_MEASURE_TOKENS_PER_S)
        printf("%.6g tokens/s", m->value);
    else
        printf("%.6g TFLOP/s per GPU, hardware count", m->value / 1e12);
    printf("): the plan's FLOPs per step over the measured step\n");
    printf("  %-44s %-12s %-12s %s\n", "figure", "predicted", "measured", "predicted/measured");
    measured_row("step time", S(p->step_s), S(x->step_s), p->step_s, x->step_s);
    snprintf(a, sizeof(a), "%.4g", p->tokens_per_s);
    snprintf(b, sizeof(b), "%.4g", x->tokens_per_s);
    measured_row("tokens/s", a, b, p->tokens_per_s, x->tokens_per_s);
    snprintf(a, sizeof(a), "%.1f", p->hw_flops_per_gpu / 1e12);
    snprintf(b, sizeof(b), "%.1f", x->hw_flops_per_gpu / 1e12);
    measured_row("TFLOP/s per GPU (hardware count, recompute)", a, b, p->hw_flops_per_gpu,
                 x->hw_flops_per_gpu);
    snprintf(a, sizeof(a), "%.1f", p->model_flops_per_gpu / 1e12);
    snprintf(b, sizeof(b), "%.1f", x->model_flops_per_gpu / 1e12);
    measured_row("TFLOP/s per GPU (model count, no recompute)", a, b, p->model_flops_per_gpu,
                 x->model_flops_per_gpu);
    snprintf(a, sizeof(a), "%.1f%%", 100 * p->mfu_6n);
    snprintf(b, sizeof(b), "%.1f%%", 100 * x->mfu_6n);
    measured_row("MFU, 6N convention (6 x active params)", a, b, p->mfu_6n, x->mfu_6n);
    snprintf(a, sizeof(a), "%.1f%%", 100 * p->mfu_attention);
    snprintf(b, sizeof(b), "%.1f%%", 100 * x->mfu_attention);
    measured_row("MFU, with attention (Megatron count)", a, b, p->mfu_attention,
                 x->mfu_attention);
    snprintf(a, sizeof(a), "%.1f%%", 100 * p->hfu);
    snprintf(b, sizeof(b), "%.1f%%", 100 * x->hfu);
    measured_row("HFU (with recompute)", a, b, p->hfu, x->hfu);
    if (in->train.train_tokens > 0) {
        char what[64];
        snprintf(what, sizeof(what), "time to train %.4g tokens", in->train.train_tokens);
        measured_row(what, S(p->train_s), S(x->train_s), p->train_s, x->train_s);
        measured_row("  the same as 8TP/(nX), X hardware count", S(p->train_megatron_s),
                     S(x->train_megatron_s), p->train_megatron_s, x->train_megatron_s);
    }
    printf("  per term: predicted compute %s + bubble %s + exposed communication %s = %s; "
           "measured %s (%+.3g s)\n",
           S(r->compute.compute_s), S(r->compute.bubble_s), S(r->comm.exposed_s),
           S(r->perf.step_s), S(x->step_s), m->gap_s);
    printf("  the gap laid on compute: a large-GEMM efficiency of %.1f%% (given %.1f%%) makes "
           "compute %s%s\n",
           100 * m->fitted_efficiency, 100 * in->hw.compute_efficiency, S(m->fitted_compute_s),
           fabs(m->fit_residual) > 0.01
               ? "; compute alone cannot explain the step (the bubble or communication do)"
               : "");
}

static json_t *json_figures(const struct sn_plan_measured_figures *f)
{
    json_t *o = json_object();
    jr(o, "step_s", f->step_s);
    jr(o, "tokens_per_s", f->tokens_per_s);
    jr(o, "hw_flops_per_gpu", f->hw_flops_per_gpu);
    jr(o, "model_flops_per_gpu", f->model_flops_per_gpu);
    jr(o, "mfu_6n", f->mfu_6n);
    jr(o, "mfu_attention", f->mfu_attention);
    jr(o, "hfu", f->hfu);
    jr(o, "train_s", f->train_s);
    jr(o, "train_megatron_s", f->train_megatron_s);
    return o;
}

static json_t *json_measured(const struct sn_plan_measured *m)
{
    json_t *o = json_object();
    js(o, "kind", sn_plan_measure_name(m->kind));
    jr(o, "value", m->value);
    json_object_set_new(o, "measured", json_figures(&m->measured));
    json_object_set_new(o, "predicted", json_figures(&m->predicted));
    jr(o, "error", m->error);
    jr(o, "gap_s", m->gap_s);
    jr(o, "fitted_compute_efficiency", m->fitted_efficiency);
    jr(o, "fitted_compute_s", m->fitted_compute_s);
    jr(o, "fit_residual", m->fit_residual);
    return o;
}

/* ---- --calibrate FILE.json ------------------------------------------- */

/* One run's "flags" object as argv: "--key value", a number in its
 * shortest form, true as a switch. */
static int run_argv(const char *path, size_t i, json_t *jflags, char **argv, char *buf,
                    size_t len, int *argc)
{
    const char *key;
    json_t *v;
    size_t used = 0;
    int n = 1;
    argv[0] = "plan";
    json_object_foreach(jflags, key, v)
    {
        char value[64] = "";
        if (json_is_string(v))
            snprintf(value, sizeof(value), "%s", json_string_value(v));
        else if (json_is_integer(v))
            snprintf(value, sizeof(value), "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v))
            snprintf(value, sizeof(value), "%.17g", json_real_value(v));
        else if (!json_is_true(v)) {
            fprintf(stderr,
                    "sn plan: %s: runs[%zu].flags.%s: expected a string, a number or true\n",
                    path, i, key);
            return -1;
        }
        size_t need = strlen(key) + 3 + strlen(value) + 1;
        if (n + 2 >= 64 || used + need > len) {
            fprintf(stderr, "sn plan: %s: runs[%zu].flags: too many flags\n", path, i);
            return -1;
        }
        argv[n++] = buf + used;
        used += (size_t)snprintf(buf + used, len - used, "--%s", key) + 1;
        if (!json_is_true(v)) {
            argv[n++] = buf + used;
            used += (size_t)snprintf(buf + used, len - used, "%s", value) + 1;
        }
    }
    *argc = n;
    return 0;
}

static int write_calibration(const char *out, const char *gpu, const struct sn_plan_fit *fit,
                             json_t *names, const double *measured)
{
    json_t *root = json_object(), *runs = json_array();
    js(root, "schema", "sn-plan-calibration/1");
    js(root, "gpu", gpu);
    jr(root, "compute_efficiency", fit->compute_efficiency);
    if (fit->fit_comm)
        jr(root, "scaleout_efficiency", fit->scaleout_efficiency);
    jr(root, "rms_log_error_before", fit->rms_before);
    jr(root, "rms_log_error_after", fit->rms_after);
    for (size_t i = 0; i < fit->n; i++) {
        json_t *r = json_object();
        json_object_set(r, "name", json_array_get(names, i));
        jr(r, "measured_step_s", measured[i]);
        jr(r, "error_before", fit->before[i]);
        jr(r, "error_after", fit->after[i]);
        json_array_append_new(runs, r);
    }
    json_object_set_new(root, "runs", runs);
    int rc = json_dump_file(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
                                           JSON_REAL_PRECISION(10));
    json_decref(root);
    if (rc) {
        fprintf(stderr, "sn plan: --calibration-out %s: cannot write: %s\n", out,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* The runs of a calibration file, each planned from its flags, its
 * measurement turned into a step time; the fit; its report. */
static int run_calibrate_file(const struct ctx *top)
{
    const char *path = top->calibrate_file;
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        if (jerr.line > 0)
            fprintf(stderr, "sn plan: %s:%d:%d: %s\n", path, jerr.line, jerr.column, jerr.text);
        else
            fprintf(stderr,
                    "sn plan: --calibrate %s: %s (expected step=TIME or a JSON file of measured "
                    "runs)\n",
                    path, jerr.text);
        return SN_EXIT_USAGE;
    }
    int rc = SN_EXIT_USAGE;
    json_t *runs = json_object_get(root, "runs"), *names = json_array();
    size_t n = json_array_size(runs);
    struct ctx *cs = calloc(n ? n : 1, sizeof(*cs));
    struct sn_plan_input *ins = calloc(n ? n : 1, sizeof(*ins));
    double *steps = calloc(n ? n : 1, sizeof(*steps));
    struct sn_plan_fit *fit = malloc(sizeof(*fit));
    json_t *fc = json_object_get(root, "fit_comm");
    if (!cs || !ins || !steps || !fit) {
        fprintf(stderr, "sn plan: out of memory\n");
        rc = SN_EXIT_INTERNAL;
        goto out;
    }
    if (!json_is_array(runs) || n == 0 || n > SN_PLAN_FIT_MAX_RUNS) {
        fprintf(stderr, "sn plan: %s: field 'runs': expected an array of 1 to %d runs\n", path,
                SN_PLAN_FIT_MAX_RUNS);
        goto out;
    }
    if (fc && !json_is_boolean(fc)) {
        fprintf(stderr, "sn plan: %s: field 'fit_comm': expected true or false\n", path);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *run = json_array_get(runs, i), *jflags = json_object_get(run, "flags");
        const char *measured = json_string_value(json_object_get(run, "measured"));
        const char *name = json_string_value(json_object_get(run, "name"));
        if (!json_is_object(jflags) || !measured) {
            fprintf(stderr,
                    "sn plan: %s: runs[%zu]: expected an object with \"flags\" (an object of "
                    "sn plan flags) and \"measured\" (e.g. \"step=6.3s\")\n",
                    path, i);
            goto out;
        }
        json_array_append_new(names, json_string(name ? name : ""));
        char *argv[64], buf[4096];
        int argc;
        if (run_argv(path, i, jflags, argv, buf, sizeof(buf), &argc))
            goto out;
        if (parse_args(&cs[i], argc, argv) || parse_measured(&cs[i], measured)) {
            fprintf(stderr, "sn plan: %s: in runs[%zu] (%s)\n", path, i, name ? name : "");
            goto out;
        }
        struct sn_plan_result r;
        struct sn_error err = {0};
        if (sn_plan_evaluate(&cs[i].in, &r, &err) != SN_OK) {
            fprintf(stderr, "sn plan: %s: runs[%zu] (%s): %s\n", path, i, name ? name : "",
                    err.message);
            goto out;
        }
        ins[i] = cs[i].in;
        steps[i] = sn_plan_measured_step(&ins[i], &r, cs[i].measured_kind, cs[i].measured_value);
    }
    struct sn_error err = {0};
    if (sn_plan_fit_runs(ins, steps, n, json_is_true(fc), fit, &err) != SN_OK) {
        fprintf(stderr, "sn plan: %s: %s\n", path, err.message);
        goto out;
    }
    printf("calibration of %s from %zu measured run%s (%s)\n", ins[0].hw.gpu_name, n,
           n == 1 ? "" : "s", path);
    printf("  large-GEMM compute efficiency %.1f%% (given %.1f%%)", 100 * fit->compute_efficiency,
           100 * ins[0].hw.compute_efficiency);
    if (fit->fit_comm)
        printf("; scale-out bus efficiency %.0f%% (given %.0f%%)", 100 * fit->scaleout_efficiency,
               100 * ins[0].hw.scaleout_efficiency);
    printf("\n  %-3s %-11s %-8s %-8s %s\n", "#", "measured", "before", "after", "run");
    for (size_t i = 0; i < n; i++)
        printf("  %-3zu %-11s %+6.1f%%  %+6.1f%%  %s\n", i + 1, S(steps[i]), 100 * fit->before[i],
               100 * fit->after[i], json_string_value(json_array_get(names, i)));
    printf("  predicted step / measured - 1; rms log error %.1f%% before, %.1f%% after\n",
           100 * fit->rms_before, 100 * fit->rms_after);
    rc = SN_EXIT_OK;
    if (top->calibration_out) {
        if (write_calibration(top->calibration_out, ins[0].hw.gpu_name, fit, names, steps))
            rc = SN_EXIT_INTERNAL;
        else
            printf("  written to %s (sn plan --calibration %s)\n", top->calibration_out,
                   top->calibration_out);
    }
out:
    for (size_t i = 0; cs && i < n; i++) {
        sn_spec_free(cs[i].spec);
        json_decref(cs[i].calibration_json);
    }
    free(cs);
    free(ins);
    free(steps);
    free(fit);
    json_decref(names);
    json_decref(root);
    return rc;
}

static int plan_main(struct ctx *c, int argc, char **argv);

int cmd_plan(int argc, char **argv)
{
    struct ctx c;
    memset(&c, 0, sizeof(c));
    int status = plan_main(&c, argc, argv);
    sn_spec_free(c.spec);
    json_decref(c.calibration_json);
    return status;
}

static int plan_main(struct ctx *cp, int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return SN_EXIT_USAGE;
    }
    if (parse_args(cp, argc, argv))
        return SN_EXIT_USAGE;
    if (cp->help) {
        usage(stdout);
        return SN_EXIT_OK;
    }
    if (cp->list) {
        list_presets();
        return SN_EXIT_OK;
    }
    if (cp->validate)
        return run_validate();
    if (cp->calibrate_file)
        return run_calibrate_file(cp);
    const char *sparse = sn_plan_sparse_peak(cp->in.hw.peak_flops);
    if (sparse)
        fprintf(stderr,
                "sn plan: warning: a peak of %.4g TFLOP/s is the %s datasheet figure, twice the "
                "dense one; the planner needs the dense peak (--peak)\n",
                cp->in.hw.peak_flops / 1e12, sparse);
    if (cp->sweep)
        return run_sweep(cp);
    struct sn_plan_result r;
    struct sn_error err = {0};
    struct sn_plan_calibration cal;
    bool calibrated = cp->calibrate_step_s > 0 || cp->measured_mfu > 0;
    if (calibrated) {
        double measured = cp->calibrate_step_s > 0 ? cp->calibrate_step_s
                                                   : sn_plan_step_from_mfu(&cp->in, cp->measured_mfu);
        if (sn_plan_calibrate(&cp->in, measured, &cal, &err) != SN_OK) {
            fprintf(stderr, "sn plan: %s\n", err.message);
            return SN_EXIT_USAGE;
        }
    }
    if (sn_plan_evaluate(&cp->in, &r, &err) != SN_OK) {
        fprintf(stderr, "sn plan: %s\n", err.message);
        return SN_EXIT_USAGE;
    }
    struct sn_plan_measured measured;
    bool have_measured = cp->measured_value > 0;
    if (have_measured &&
        sn_plan_measure(&cp->in, &r, cp->measured_kind, cp->measured_value, &measured, &err)) {
        fprintf(stderr, "sn plan: --measured: %s\n", err.message);
        return SN_EXIT_USAGE;
    }
    if (cp->json) {
        if (plan_json(&cp->in, &r, calibrated ? &cal : NULL, have_measured ? &measured : NULL))
            return SN_EXIT_INTERNAL;
    } else {
        if (calibrated)
            print_calibration(&cal);
        print_header(&cp->in);
        print_memory(&cp->in, &r);
        print_compute(&cp->in, &r);
        print_comm(&cp->in, &r);
        print_bandwidth(&cp->in, &r);
        print_perf(&cp->in, &r);
        if (have_measured)
            print_measured(&cp->in, &r, &measured);
        print_ckpt(&cp->in, &r);
    }
    return plan_holds(&cp->in, &r) ? SN_EXIT_OK : SN_EXIT_FINDINGS;
}
