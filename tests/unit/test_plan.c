/*
 * Unit tests of lib/plan: every formula against a published or
 * hand-checked number (the source is cited at each assertion), the
 * consistency of the evaluation with those formulas, the input errors,
 * the hardware taken from a hand-built spec, and the sweep's invariants.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/plan.h>
#include <sn/spec.h>
#include <sn/units.h>

#include "sn_test.h"

#define DAY 86400.0
#define GIB 1073741824.0

static struct sn_plan_model preset(const char *name)
{
    const struct sn_plan_model *m = sn_plan_model_preset(name);
    if (!m)
        fail_msg("no preset '%s'", name);
    return *m;
}

/* Llama 3 405B as published (Llama Team 2024, Table 4): 8,192 H100s,
 * TP8 CP1 PP16 DP64, sequence 8,192, 16M tokens per batch (2,048
 * sequences), micro-batch 1. */
static void llama405_input(struct sn_plan_input *in)
{
    sn_plan_input_defaults(in);
    in->model = preset("llama3-405b");
    struct sn_plan_train *t = &in->train;
    t->gpus = 8192;
    t->tp = 8;
    t->pp = 16;
    t->dp = 64;
    t->cp = 1;
    t->global_batch = 2048;
    t->micro_batch = 1;
    t->zero = 1;
    t->recompute = SN_RECOMPUTE_SELECTIVE;
    t->seq_parallel = true;
}

static void evaluate_ok(const struct sn_plan_input *in, struct sn_plan_result *r)
{
    struct sn_error err = {0};
    if (sn_plan_evaluate(in, r, &err) != SN_OK)
        fail_msg("evaluate: %s", err.message);
}

/* Narayanan et al. 2021 (SC'21), Table 1, parameter counts from
 * P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)) with V = 51200, s = 2048. */
static void megatron_parameter_count(void **state)
{
    (void)state;
    assert_near(sn_plan_params_megatron(80, 12288, 51200, 2048) / 1e9, 145.6, 0.05);
    assert_near(sn_plan_params_megatron(96, 16384, 51200, 2048) / 1e9, 310.1, 0.05);
    assert_near(sn_plan_params_megatron(105, 20480, 51200, 2048) / 1e9, 529.6, 0.05);
    assert_near(sn_plan_params_megatron(128, 25600, 51200, 2048) / 1e9, 1008.0, 0.05);

    /* The general count equals the closed form plus the final LayerNorm
     * (2h), which the closed form leaves out. */
    struct sn_plan_model m = preset("megatron-1t");
    assert_near(sn_plan_params(&m), sn_plan_params_megatron(128, 25600, 51200, 2048) + 2 * 25600,
                1);
    /* GPT-3 175B with its own vocabulary (50257): Brown et al. 2020, 175.0B. */
    m = preset("gpt3-175b");
    assert_rel(sn_plan_params(&m), 175e9, 0.003);
    /* MT-NLG: Smith et al. 2022, 530B. */
    m = preset("megatron-530b");
    assert_rel(sn_plan_params(&m), 530e9, 0.002);
}

/* Llama 3 (Table 3) and Mixtral (Jiang et al. 2024: 46.7B total, 12.9B
 * active per token) through the general count: GQA, SwiGLU, untied
 * embeddings, RMSNorm, MoE. */
static void general_parameter_count(void **state)
{
    (void)state;
    struct sn_plan_model m = preset("llama3-8b");
    assert_rel(sn_plan_params(&m), 8.03e9, 0.002);
    m = preset("llama3-70b");
    assert_rel(sn_plan_params(&m), 70.6e9, 0.002);
    m = preset("llama3-405b");
    assert_rel(sn_plan_params(&m), 405.9e9, 0.001);
    assert_near(sn_plan_params_active(&m), sn_plan_params(&m), 0);
    m = preset("mixtral-8x7b");
    assert_rel(sn_plan_params(&m), 46.7e9, 0.002);
    assert_rel(sn_plan_params_active(&m), 12.9e9, 0.003);
}

/* Narayanan et al. 2021, Section 5.1: end-to-end training time 8TP/(nX).
 * GPT-3: T = 300B tokens, n = 1024 A100s, X = 140 TFLOP/s: 34 days.
 * 1T: T = 450B, n = 3072, X = 163 TFLOP/s: 84 days. */
static void megatron_training_time(void **state)
{
    (void)state;
    double gpt3 = sn_plan_train_time_megatron(300e9, 175e9, 1024, 140e12) / DAY;
    assert_near(gpt3, 33.908, 0.001);
    assert_int_equal((int)(gpt3 + 0.5), 34);
    struct sn_plan_model m = preset("megatron-1t");
    double one_t = sn_plan_train_time_megatron(450e9, sn_plan_params(&m), 3072, 163e12) / DAY;
    assert_near(one_t, 83.880, 0.001); /* P = 1008.04e9 */
    assert_int_equal((int)(one_t + 0.5), 84);
}

/* The evaluation's FLOP count is Narayanan et al. 2021 (Section 5.1, Appendix),
 * 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), under full recompute; without
 * recompute it is 3/4 of the layer part (72 B s l h^2 (1 + s/(6h)) +
 * 6 B s h V, Korthikanti et al. 2022, Section 6). */
static void megatron_flops(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("megatron-1t");
    in.train.gpus = 3072;
    in.train.tp = 8;
    in.train.pp = 64;
    in.train.dp = 6;
    in.train.global_batch = 3072;
    in.train.recompute = SN_RECOMPUTE_FULL;
    in.train.zero = 1;
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    double b = 3072, s = 2048, l = 128, h = 25600, v = 51200;
    assert_rel(r.compute.hardware_flops, sn_plan_flops_megatron(b, s, l, h, v), 1e-12);
    assert_rel(r.compute.model_flops,
               72 * b * s * l * h * h * (1 + s / (6 * h)) + 6 * b * s * h * v, 1e-12);
    /* 6N tokens is within 3% of the full count for this model. */
    assert_rel(r.compute.model_flops_6n, r.compute.model_flops, 0.03);
    /* Selective recompute adds only the attention core, 4 B s^2 h per
     * layer, where the scores are materialised (no FlashAttention, as in
     * the paper); with FlashAttention there is nothing to recompute. */
    in.train.recompute = SN_RECOMPUTE_SELECTIVE;
    evaluate_ok(&in, &r);
    assert_rel(r.compute.hardware_flops, r.compute.model_flops, 1e-12);
    in.train.unfused_attention = true;
    evaluate_ok(&in, &r);
    assert_rel(r.compute.hardware_flops - r.compute.model_flops, 4 * b * s * s * h * l, 1e-12);
}

/* Rajbhandari et al. 2020, Figure 1: Psi = 7.5B, K = 12, Nd = 64:
 * 120 GB, 31.4 GB, 16.6 GB, 1.9 GB for baseline, P_os, P_os+g, P_os+g+p. */
static void zero_example(void **state)
{
    (void)state;
    assert_near(sn_plan_zero_bytes(7.5e9, 12, 64, 0) / 1e9, 120, 1e-9);
    assert_near(sn_plan_zero_bytes(7.5e9, 12, 64, 1) / 1e9, 31.4, 0.05);
    assert_near(sn_plan_zero_bytes(7.5e9, 12, 64, 2) / 1e9, 16.6, 0.05);
    assert_near(sn_plan_zero_bytes(7.5e9, 12, 64, 3) / 1e9, 1.9, 0.05);

    /* The evaluation shards the same way, over dp x cp (ZeRO-3 adds the
     * layer it gathers, test zero3_deepspeed). */
    struct sn_plan_input in;
    llama405_input(&in);
    for (unsigned z = 0; z <= 3; z++) {
        in.train.zero = z;
        struct sn_plan_result r;
        evaluate_ok(&in, &r);
        double states = r.memory.weights_bytes + r.memory.grads_bytes + r.memory.optimizer_bytes;
        double gather = z == 3 ? 4 * 3.1875e9 / 8 : 0; /* ZeRO-3's gathered layer, 16-bit x 2 */
        assert_rel(states - gather, sn_plan_zero_bytes(r.memory.params_per_gpu, 12, 64, z),
                   z == 3 ? 1e-3 : 1e-12);
    }
}

/* The last stage holds the output layer and the loss: with a large
 * vocabulary it is the worst stage, and its logits (bf16 plus the fp32
 * copy of the cross-entropy, 6 b s V / t bytes) are counted. */
static void last_stage_worst(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("llama3-8b");
    in.model.name = "wide-vocab";
    in.model.layers = 4;
    in.model.vocab = 256000;
    struct sn_plan_train *t = &in.train;
    t->gpus = t->pp = 2;
    t->global_batch = 2;
    t->recompute = SN_RECOMPUTE_FULL;
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    assert_int_equal(r.memory.worst_stage, 1);
    assert_int_equal(r.memory.inflight, 1);
    double sbh = 8192.0 * 4096, logits = 6.0 * 8192 * 256000;
    /* 2 layers x 1 in flight x 2 s b h (full recompute) + the layer being
     * recomputed (selective-mode bytes) + the logits */
    double layer = sn_plan_act_per_layer(&in.model, 1, 1, 1, false, SN_RECOMPUTE_SELECTIVE);
    assert_rel(r.memory.activations_bytes, 2 * 2 * sbh + layer + logits, 1e-12);
}

/* ZeRO-3's model states against DeepSpeed's own estimator
 * (estimate_zero3_model_states_mem_needs: largest_layer_memory + 18 x
 * params / GPUs; for Llama 3 8B on 8 GPUs 2.10 GB + 18.07 GB = 20.2 GB):
 * 16 bytes per parameter sharded (16.06 GB) plus the gathered largest
 * layer, the 525M-parameter embedding, at 4 bytes (2.10 GB): 18.16 GB. The
 * remaining 10% is DeepSpeed's 18 rather than 16 bytes per parameter. */
static void zero3_deepspeed(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("llama3-8b");
    in.train.gpus = in.train.dp = 8;
    in.train.global_batch = 8;
    in.train.zero = 3;
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    double states = r.memory.weights_bytes + r.memory.grads_bytes + r.memory.optimizer_bytes;
    double psi = sn_plan_params(&in.model), emb = 128256.0 * 4096;
    assert_rel(states, 16 * psi / 8 + 4 * emb, 1e-9);
    assert_near(states / 1e9, 18.16, 0.01);
    assert_rel(states, 20.2e9, 0.11);
}

/* Korthikanti et al. 2022, Table 2, for GPT-3 175B (a = 96, s = 2048,
 * h = 12288) at t = 8, in units of s b h: no parallelism 34 + 5as/h = 114;
 * TP 10 + 24/t + 5as/(ht) = 23; TP + SP + selective 34/t = 4.25; full
 * recompute 2. The paper's "5x" reduction is 23 / 4.25 = 5.4. */
static void korthikanti_activations(void **state)
{
    (void)state;
    struct sn_plan_model m = preset("gpt3-175b");
    double sbh = 2048.0 * 12288;
    assert_near(sn_plan_act_per_layer(&m, 1, 1, 1, false, SN_RECOMPUTE_NONE) / sbh, 114, 1e-9);
    assert_near(sn_plan_act_per_layer(&m, 1, 8, 1, false, SN_RECOMPUTE_NONE) / sbh, 23, 1e-9);
    assert_near(sn_plan_act_per_layer(&m, 1, 8, 1, true, SN_RECOMPUTE_NONE) / sbh, 34.0 / 8 + 10,
                1e-9);
    assert_near(sn_plan_act_per_layer(&m, 1, 8, 1, false, SN_RECOMPUTE_SELECTIVE) / sbh, 13, 1e-9);
    assert_near(sn_plan_act_per_layer(&m, 1, 8, 1, true, SN_RECOMPUTE_SELECTIVE) / sbh, 4.25, 1e-9);
    assert_near(sn_plan_act_per_layer(&m, 1, 8, 1, false, SN_RECOMPUTE_FULL) / sbh, 2, 1e-9);
    /* micro-batch and context parallelism scale s b linearly */
    assert_near(sn_plan_act_per_layer(&m, 4, 8, 2, true, SN_RECOMPUTE_SELECTIVE) / sbh, 8.5, 1e-9);
    /* Llama 3 405B (GQA 8/128, SwiGLU f = 3.25h, no dropout) with SP and
     * selective: (4 + 2 + 2 + 2 + 4/16 + 2 + 6 x 3.25) / 8 = 31.75 / 8. */
    m = preset("llama3-405b");
    assert_near(sn_plan_act_per_layer(&m, 1, 8, 1, true, SN_RECOMPUTE_SELECTIVE) / (8192.0 * 16384),
                31.75 / 8, 1e-9);
}

/* Daly 2006, Section 4: with MTBF M = 24 h and checkpoint time C = 5 min,
 * the higher-order optimum sqrt(2CM)[1 + sqrt(C/2M)/3 + (C/2M)/9] - C is
 * 120 x 1.014082 - 5 = 116.69 min ("about 117 min"). Young's first-order
 * sqrt(2CM) is 120 min. The restart time R = 10 min does not enter the
 * optimum interval in either formula; it enters the expected wall time,
 * hence the efficiency: tau / (M e^(R/M) (e^((tau + C)/M) - 1)) = 0.91261
 * (computed by hand from the same expression). */
static void daly_young(void **state)
{
    (void)state;
    double m = 24 * 3600.0, c = 5 * 60.0, r = 10 * 60.0;
    assert_near(sn_plan_young(c, m) / 60, 120, 1e-9);
    double daly = sn_plan_daly(c, m);
    assert_near(daly / 60, 116.6898, 1e-4);
    assert_int_equal((int)(daly / 60 + 0.5), 117);
    assert_near(sn_plan_daly_efficiency(daly, c, r, m), 0.912606, 1e-6);
    /* C >= 2M: checkpoint every M */
    assert_near(sn_plan_daly(3 * 3600.0, 3600.0), 3600.0, 0);
}

/* The spec's example: 2 GB / (10 s x 20%) = 1 GB/s = 8 Gb/s. */
static void required_bandwidth_example(void **state)
{
    (void)state;
    double need = sn_plan_required_bw(2e9, 10, 0.20);
    assert_near(need, 1e9, 1e-3);
    char buf[32];
    assert_string_equal(sn_units_format(need, SN_UNIT_BANDWIDTH, buf, sizeof(buf)), "8 Gb/s");
    assert_string_equal(sn_units_format(need, SN_UNIT_BANDWIDTH_DIRECTED, buf, sizeof(buf)),
                        "1 GB/s");
}

/* Ring costs (nccl-tests PERFORMANCE.md): all-reduce 2(n-1)/n S/B,
 * all-gather (n-1)/n S/B. 1 GB over 8 ranks at 100 GB/s: 17.5 ms, 8.75 ms. */
static void ring_costs(void **state)
{
    (void)state;
    assert_near(sn_plan_allreduce_s(1e9, 8, 100e9), 0.0175, 1e-12);
    assert_near(sn_plan_allgather_s(1e9, 8, 100e9), 0.00875, 1e-12);
    assert_near(sn_plan_allreduce_s(1e9, 1, 100e9), 0, 0);
}

/* Llama 3 405B's published layout fits in an 80 GiB H100 under these
 * assumptions: ZeRO-1 (distributed optimizer) over DP 64, sequence
 * parallelism, FlashAttention (no s x s scores stored; selective
 * recompute stores the same), sequence 8,192, micro-batch 1, 1F1B, and the
 * Llama 3 paper's balancing (Section 3.3.2): 126 = 14 x 8 + 2 x 7, the
 * first and last stages one layer fewer. The worst stage is then the
 * second: 8 layers and 15 micro-batches in flight. Hand check: a layer is
 * 3.1875e9 parameters, 398.4M per GPU at TP 8 -> 3.187e9 per GPU ->
 * (2 + 2 + 12/64) x 3.187e9 = 13.35 GB of model states; activations
 * 8 x 15 x 31.75/8 x 8192 x 16384 bytes = 63.9 GB; 77.3 GB in 85.9 GB
 * (80 GiB) less the 2 GiB reserve: 6.5 GB to spare. The first stage (7
 * layers, 16 in flight, the embedding) needs 72.4 GB. */
static void llama3_405b_fits(void **state)
{
    (void)state;
    struct sn_plan_input in;
    llama405_input(&in);
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    assert_int_equal(r.memory.worst_stage, 1);
    assert_rel(r.memory.params_per_gpu, 8 * 3.1875e9 / 8, 1e-3);
    assert_int_equal(r.memory.stage_layers, 8);
    assert_int_equal(r.memory.inflight, 15);
    assert_rel(r.memory.activations_bytes, 8 * 15 * 31.75 / 8 * 8192.0 * 16384, 1e-12);
    assert_rel(r.memory.total_bytes, 77.3e9, 2e-3);
    assert_true(r.memory.fits);
    assert_near(r.memory.free_bytes / 1e9, 85.899 - 2.147 - 77.3, 0.15);

    /* Take away any one assumption and it no longer fits. */
    in.train.zero = 0; /* optimizer states unsharded: +37 GB */
    evaluate_ok(&in, &r);
    assert_false(r.memory.fits);
    llama405_input(&in);
    in.train.recompute = SN_RECOMPUTE_NONE; /* without FlashAttention the scores are stored */
    in.train.unfused_attention = true;
    evaluate_ok(&in, &r);
    assert_false(r.memory.fits);
    llama405_input(&in);
    in.train.seq_parallel = false;
    evaluate_ok(&in, &r);
    assert_false(r.memory.fits);
    llama405_input(&in);
    in.train.micro_batch = 2;
    evaluate_ok(&in, &r);
    assert_false(r.memory.fits);
    /* Without the balancing (127 layers: 8 on every stage but the last),
     * the first stage holds 8 layers with 16 in flight and is the worst. */
    llama405_input(&in);
    in.model.layers = 128;
    evaluate_ok(&in, &r);
    assert_int_equal(r.memory.worst_stage, 0);
    assert_int_equal(r.memory.inflight, 16);
}

/* Bubble (p-1)/m, and (p-1)/(v m) interleaved (Narayanan et al. 2021,
 * Sections 2.2.1 and 2.2.2): p = 16, m = 32: 15/32; v = 2: 15/64. */
static void pipeline_bubble(void **state)
{
    (void)state;
    struct sn_plan_input in;
    llama405_input(&in);
    in.model.layers = 128; /* interleaving needs pp x v to divide the layers */
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    assert_int_equal(r.compute.microbatches, 32);
    assert_near(r.compute.bubble_fraction, 15.0 / 32, 1e-12);
    assert_near(r.compute.bubble_s, r.compute.compute_s * 15 / 32, 1e-9);
    in.train.vpp = 2;
    evaluate_ok(&in, &r);
    assert_near(r.compute.bubble_fraction, 15.0 / 64, 1e-12);
    /* interleaving raises first-stage activations by 1 + (p-1)/(p v)
     * (Korthikanti et al. 2022, Section 4.2.3) */
    assert_rel(r.memory.activations_bytes, r.memory.act_per_layer_bytes * 8 * 16 * (1 + 15.0 / 32),
               1e-12);
}

/* Communication bytes per GPU per step, checked by hand for Llama 3 405B
 * (bf16, b = 1, s = 8192, h = 16384, m = 32 micro-batches, 8 layers):
 * TP: 32 x 8 x 4 all-reduces x 2(7/8) x 268,435,456 B = 481.0 GB on NVLink.
 * PP: 2 x 32 x 268,435,456 / 8 = 2.147 GB, neighbours 512 GPUs apart:
 *     scale-out.
 * DP: 2 x 63/64 x 3.4504e9 x 2 B = 13.59 GB over 64 ranks 8 GPUs apart:
 *     scale-out. */
static void communication_bytes(void **state)
{
    (void)state;
    struct sn_plan_input in;
    llama405_input(&in);
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    double act = 8192.0 * 16384 * 2;
    const struct sn_plan_comm_dim *d = r.comm.dim;
    assert_rel(d[SN_PLAN_DIM_TP].bytes, 32 * 8 * 4 * 2 * 7.0 / 8 * act, 1e-12);
    assert_false(d[SN_PLAN_DIM_TP].scaleout);
    assert_rel(d[SN_PLAN_DIM_PP].bytes, 2 * 32 * act / 8, 1e-12);
    assert_true(d[SN_PLAN_DIM_PP].scaleout);
    assert_rel(d[SN_PLAN_DIM_DP].bytes, 2 * 63.0 / 64 * r.memory.params_per_gpu * 2, 1e-12);
    assert_true(d[SN_PLAN_DIM_DP].scaleout);
    assert_near(d[SN_PLAN_DIM_CP].bytes + d[SN_PLAN_DIM_EP].bytes, 0, 0);
    assert_rel(r.comm.scaleup_bytes, d[SN_PLAN_DIM_TP].bytes, 1e-12);
    /* alpha-beta: bytes at bus bandwidth (450 GB/s x 0.80 on NVLink, 50
     * GB/s x 0.75 out) plus latency: TP 32 x 8 x 4 = 1,024 all-reduces of
     * 2 x 7 NVLink ring steps (8.4 us + 14 x 3.4 us each); DP 80 buckets of
     * 40M parameters, each a tree of 2 log2 64 = 12 hops (8.4 us + 12 x 10 us) */
    assert_rel(d[SN_PLAN_DIM_TP].time_s,
               d[SN_PLAN_DIM_TP].bytes / 360e9 + 1024 * (8.4e-6 + 14 * 3.4e-6), 1e-9);
    assert_rel(d[SN_PLAN_DIM_DP].time_s,
               d[SN_PLAN_DIM_DP].bytes / 37.5e9 + ceil(r.memory.params_per_gpu / 40e6) *
                                                      (8.4e-6 + 12 * 10e-6),
               1e-9);
    /* PP: 2 x 32 sends of one hop each */
    assert_rel(d[SN_PLAN_DIM_PP].time_s, d[SN_PLAN_DIM_PP].bytes / 37.5e9 + 64 * (8.4e-6 + 10e-6),
               1e-9);
    /* required bandwidth: scale-out bytes / (step x 20%), + 30% headroom */
    assert_rel(r.bandwidth.scaleout_need_bytes_per_s, r.comm.scaleout_bytes / (r.perf.step_s * 0.2),
               1e-12);
    assert_rel(r.bandwidth.scaleout_provision_bytes_per_s,
               r.bandwidth.scaleout_need_bytes_per_s * 1.3, 1e-12);
    /* step = compute + bubble + exposed communication; MFU on 6N */
    assert_rel(r.perf.step_s, r.compute.compute_s + r.compute.bubble_s + r.comm.exposed_s, 1e-12);
    assert_rel(r.perf.mfu, r.compute.model_flops_6n / (r.perf.step_s * 8192 * 989e12), 1e-12);
    /* TP across the scale-out fabric moves 481 GB at 37.5 GB/s instead of 360 GB/s */
    assert_true(r.placement.tp_inside);
    assert_rel(r.placement.tp_scaleout_step_s - r.perf.step_s,
               d[SN_PLAN_DIM_TP].bytes / 37.5e9 + 1024 * (8.4e-6 + 6 * 10e-6) -
                   d[SN_PLAN_DIM_TP].time_s,
               1e-9);
    assert_int_equal(r.placement.domain_for_stage, 512);
}

/* Job MTBF from the footprint: with the defaults' Llama 3 rates and the
 * Llama 3 cluster's footprint (16,384 GPUs, 2,048 servers, 1,024 ToRs;
 * power domains taken out), one interruption every 54 x 24 / 419 =
 * 3.09 h, as the paper reports ("one failure every three hours"). */
static void job_mtbf(void **state)
{
    (void)state;
    struct sn_plan_input in;
    llama405_input(&in);
    in.train.gpus = 16384;
    in.train.dp = 128;
    in.hw.servers_per_supernode = 2;
    in.hw.leaves_per_supernode = 1;
    in.hw.mtbf_power_domain_s = 1e300;
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    assert_int_equal(r.ckpt.servers, 2048);
    assert_int_equal(r.ckpt.leaves, 1024);
    assert_near(r.ckpt.job_mtbf_s / 3600, 54 * 24 / 419.0, 1e-9);
}

static void expect_error(const struct sn_plan_input *in, const char *needle);

/* Checkpoint size 14 bytes per parameter (bf16 weights + fp32 master, m,
 * v), write time per tier, the spec's window rule (5 min for 30 min), and
 * Young/Daly on the fastest tier. */
static void checkpoint_plan(void **state)
{
    (void)state;
    struct sn_plan_input in;
    llama405_input(&in);
    in.hw.n_storage = 2;
    in.hw.storage[0] = (struct sn_plan_storage){"slow-object", 10e9, 20e9, false};
    in.hw.storage[1] = (struct sn_plan_storage){"nvme", 12e9, 25e9, true};
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    double psi = sn_plan_params(&in.model);
    assert_rel(r.ckpt.total_bytes, 14 * psi, 1e-12);
    assert_rel(r.ckpt.optimizer_bytes, 12 * psi, 1e-12);
    assert_near(r.ckpt.window_s, 300, 0);
    /* 5.68 TB at 10 GB/s: 568 s > 300 s window; NVMe: 1024 servers x 12 GB/s */
    assert_rel(r.ckpt.tier[0].write_s, 14 * psi / 10e9, 1e-12);
    assert_false(r.ckpt.tier[0].meets_window);
    assert_rel(r.ckpt.tier[1].write_s, 14 * psi / (1024 * 12e9), 1e-12);
    assert_true(r.ckpt.tier[1].meets_window);
    /* per-server NVMe dies with its server: not used unless allowed */
    assert_false(r.ckpt.tier[1].usable);
    assert_true(r.ckpt.tier[0].usable);
    assert_int_equal(r.ckpt.tier_used, 0);
    in.opt.ckpt_tier = 1;
    expect_error(&in, "durable shared storage");
    in.opt.ckpt_tier = SN_PLAN_NO_TIER;
    in.opt.local_ckpt = true;
    evaluate_ok(&in, &r);
    assert_true(r.ckpt.tier[1].usable);
    assert_int_equal(r.ckpt.tier_used, 1);
    double c = r.ckpt.tier[1].write_s, m = r.ckpt.job_mtbf_s;
    assert_rel(r.ckpt.young_s, sqrt(2 * c * m), 1e-12);
    assert_rel(r.ckpt.daly_s, sn_plan_daly(c, m), 1e-12);
    double restart = 600 + r.ckpt.tier[1].read_s;
    assert_rel(r.ckpt.lost_per_failure_s, restart + (r.ckpt.daly_s + c) / 2, 1e-12);
    assert_true(r.ckpt.goodput > 0.9 && r.ckpt.goodput < 1);
}

/* --checkpoint-format: the three conventions, hand-computed for bf16 and
 * fp32 Adam and SGD, and BLOOM-176B's published sizes (bigscience/bloom
 * model card, "Checkpoint size": bf16 weights 329GB, full checkpoint with
 * optimizer states 2.3TB; the card's GB and TB are binary, 176.2e9 x 2 B =
 * 328 GiB and x 14 B = 2.24 TiB). */
static void checkpoint_formats(void **state)
{
    (void)state;
    static const struct {
        enum sn_precision precision;
        enum sn_optimizer optimizer;
        enum sn_ckpt_format format;
        double weights, optimizer_bytes;
    } cases[] = {
        {SN_PRECISION_BF16, SN_OPTIMIZER_ADAM, SN_CKPT_FORMAT_FULL, 2, 12},
        {SN_PRECISION_BF16, SN_OPTIMIZER_ADAM, SN_CKPT_FORMAT_MASTER, 0, 12},
        {SN_PRECISION_BF16, SN_OPTIMIZER_ADAM, SN_CKPT_FORMAT_WEIGHTS, 2, 0},
        {SN_PRECISION_FP8, SN_OPTIMIZER_ADAM, SN_CKPT_FORMAT_MASTER, 0, 12},
        {SN_PRECISION_BF16, SN_OPTIMIZER_SGD, SN_CKPT_FORMAT_FULL, 2, 8},
        {SN_PRECISION_FP32, SN_OPTIMIZER_ADAM, SN_CKPT_FORMAT_FULL, 4, 8},
        {SN_PRECISION_FP32, SN_OPTIMIZER_ADAM, SN_CKPT_FORMAT_MASTER, 4, 8},
        {SN_PRECISION_FP32, SN_OPTIMIZER_ADAM, SN_CKPT_FORMAT_WEIGHTS, 4, 0},
    };
    struct sn_plan_input in;
    struct sn_plan_result r;
    sn_plan_input_defaults(&in);
    in.model = preset("bloom-176b");
    in.train.gpus = in.train.tp = 8;
    in.train.dp = in.train.pp = in.train.cp = in.train.ep = in.train.vpp = 1;
    in.train.global_batch = 8;
    in.train.zero = 1;
    in.train.seq_parallel = true;
    in.train.recompute = SN_RECOMPUTE_FULL;
    double psi = sn_plan_params(&in.model);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        in.train.precision = cases[i].precision;
        in.train.optimizer = cases[i].optimizer;
        in.opt.ckpt_format = cases[i].format;
        evaluate_ok(&in, &r);
        assert_int_equal(r.ckpt.format, cases[i].format);
        assert_near(r.ckpt.bytes_per_param_weights, cases[i].weights, 0);
        assert_near(r.ckpt.bytes_per_param_optimizer, cases[i].optimizer_bytes, 0);
        assert_rel(r.ckpt.total_bytes, (cases[i].weights + cases[i].optimizer_bytes) * psi,
                   1e-12);
    }
    in.train.precision = SN_PRECISION_BF16;
    in.train.optimizer = SN_OPTIMIZER_ADAM;
    in.opt.ckpt_format = SN_CKPT_FORMAT_WEIGHTS;
    evaluate_ok(&in, &r);
    assert_rel(r.ckpt.total_bytes, 329 * GIB, 0.01);
    in.opt.ckpt_format = SN_CKPT_FORMAT_FULL;
    evaluate_ok(&in, &r);
    assert_rel(r.ckpt.total_bytes, 2.3 * 1024 * GIB, 0.03);
    /* the explicit size still wins over the format */
    in.opt.ckpt_format = SN_CKPT_FORMAT_WEIGHTS;
    in.opt.ckpt_bytes_per_param = 6;
    evaluate_ok(&in, &r);
    assert_rel(r.ckpt.total_bytes, 6 * psi, 1e-12);
    assert_int_equal(sn_ckpt_format_from_name("master"), SN_CKPT_FORMAT_MASTER);
    assert_int_equal(sn_ckpt_format_from_name("half"), SN_CKPT_FORMAT_COUNT);
    assert_string_equal(sn_ckpt_format_name(SN_CKPT_FORMAT_WEIGHTS), "weights");
}

static void expect_error(const struct sn_plan_input *in, const char *needle)
{
    struct sn_error err = {0};
    struct sn_plan_result r;
    assert_int_equal(sn_plan_evaluate(in, &r, &err), SN_ERR_INVALID);
    if (!strstr(err.message, needle))
        fail_msg("message '%s' lacks '%s'", err.message, needle);
}

static void input_conflicts(void **state)
{
    (void)state;
    struct sn_plan_input in;
    llama405_input(&in);
    in.train.gpus = 16384;
    expect_error(&in, "tp x pp x dp x cp = 8 x 16 x 64 x 1 = 8192, but gpus is 16384");
    llama405_input(&in);
    in.train.tp = 16;
    in.train.dp = 32;
    in.opt.strict = false;
    expect_error(&in, "tp 16 does not divide the 8 kv heads");
    in.model = preset("gpt3-175b");
    in.train.tp = 16;
    in.train.global_batch = 1536;
    in.opt.strict = true;
    expect_error(&in, "tp 16 is larger than the scale-up domain of 8 GPUs");
    in.opt.strict = false;
    struct sn_plan_result r;
    evaluate_ok(&in, &r); /* allowed without the strict rule, TP on scale-out */
    assert_true(r.comm.dim[SN_PLAN_DIM_TP].scaleout);
    assert_false(r.placement.tp_inside);
    llama405_input(&in);
    in.train.micro_batch = 3;
    expect_error(&in, "micro-batch 3 x dp 64 = 192 does not divide the global batch 2048");
    llama405_input(&in);
    in.model.heads = 100;
    expect_error(&in, "heads 100 do not divide hidden size 16384");
    llama405_input(&in);
    in.train.pp = 256;
    in.train.dp = 4;
    expect_error(&in, "pp 256 is larger than the 126 layers");
    llama405_input(&in);
    in.train.cp = 3;
    in.train.dp = 64;
    in.train.gpus = 8 * 16 * 64 * 3;
    expect_error(&in, "cp 3 does not divide the sequence length 8192");
    llama405_input(&in);
    in.hw.scaleup_gpus = 12;
    expect_error(&in, "tp 8 does not divide the scale-up domain of 12 GPUs");
    llama405_input(&in);
    in.opt.ckpt_window_s = 3600;
    expect_error(&in, "checkpoint window 3600 s is longer than the interval 1800 s");
}

/* A spec built by hand after examples/std-unit-64.yaml. */
static void hardware_from_spec(void **state)
{
    (void)state;
    struct sn_gpu_model gpu = {.name = "H100-SXM5-80GB",
                               .dense_bf16_flops = 989e12,
                               .hbm_bytes = 80 * GIB,
                               .hbm_bytes_per_s = 3.35e12,
                               .scaleup_links = 18,
                               .scaleup_link_bytes_per_s = 25e9};
    struct sn_server_model srv = {.name = "HGX-H100-8",
                                  .gpu_model = 0,
                                  .gpus = 8,
                                  .nics = 8,
                                  .nic_bytes_per_s = 50e9,
                                  .nvme_read_bytes_per_s = 25e9,
                                  .nvme_write_bytes_per_s = 12e9};
    struct sn_power_domain_spec pd[2] = {{.name = "A"}, {.name = "B"}};
    struct sn_template tpl = {.name = "hgx-unit", .server_model = 0, .servers = 8};
    tpl.scaleup.domain = SN_SCALEUP_SERVER;
    tpl.scaleup.switch_model = 0;
    tpl.leaves.switch_model = 1;
    tpl.leaves.count = 2;
    tpl.n_power_domains = 2;
    tpl.power_domains = pd;
    struct sn_supernode_group group = {.template_index = 0, .count = 3};
    struct sn_storage_spec storage[2] = {{.name = "local-nvme", .kind = SN_STORAGE_LOCAL},
                                         {.name = "lustre",
                                          .kind = SN_STORAGE_PARALLEL_FS,
                                          .read_bytes_per_s = 200e9,
                                          .write_bytes_per_s = 100e9}};
    struct sn_spec spec = {.n_gpu_models = 1,
                           .gpu_models = &gpu,
                           .n_server_models = 1,
                           .server_models = &srv,
                           .n_templates = 1,
                           .templates = &tpl,
                           .n_groups = 1,
                           .groups = &group,
                           .n_storage = 2,
                           .storage = storage};
    spec.fabric.present = true;
    spec.fabric.efficiency = 0.7;

    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    struct sn_error err = {0};
    assert_int_equal(sn_plan_hardware_from_spec(&spec, "hgx-unit", NULL, &in.hw, &err), SN_OK);
    assert_string_equal(in.hw.gpu_name, "H100-SXM5-80GB");
    assert_near(in.hw.peak_flops, 989e12, 0);
    assert_int_equal(in.hw.scaleup_gpus, 8);
    assert_near(in.hw.scaleup_bytes_per_s, 450e9, 0); /* 18 x 25 GB/s per direction */
    assert_near(in.hw.scaleout_bytes_per_s, 50e9, 0); /* 8 x 400 Gb/s / 8 GPUs */
    assert_int_equal(in.hw.supernodes, 3);
    assert_int_equal(in.hw.leaves_per_supernode, 2);
    assert_int_equal(in.hw.power_domains_per_supernode, 2);
    assert_near(in.hw.scaleout_efficiency, 0.7, 0);
    assert_int_equal(in.hw.n_storage, 2);
    assert_true(in.hw.storage[0].per_server);
    assert_near(in.hw.storage[0].write_bytes_per_s, 12e9, 0); /* from the NVMe */
    assert_near(in.hw.storage[1].read_bytes_per_s, 200e9, 0);

    assert_int_equal(sn_plan_hardware_from_spec(&spec, "hgx-unit", "lustre", &in.hw, &err), SN_OK);
    assert_int_equal(in.hw.n_storage, 1);
    assert_string_equal(in.hw.storage[0].name, "lustre");

    /* 3 supernodes of 64 GPUs: a 256-GPU job does not fit */
    in.model = preset("llama3-8b");
    in.train.gpus = 256;
    in.train.dp = 256;
    in.train.global_batch = 256;
    expect_error(&in, "256 gpus do not fit in 3 supernodes of 64 GPUs");

    assert_int_equal(sn_plan_hardware_from_spec(&spec, "nvl72", NULL, &in.hw, &err),
                     SN_ERR_NOTFOUND);
    assert_string_equal(err.message, "no supernode template 'nvl72' in the spec");
    sn_error_clear(&err);
    assert_int_equal(sn_plan_hardware_from_spec(&spec, "hgx-unit", "s3", &in.hw, &err),
                     SN_ERR_NOTFOUND);
    assert_string_equal(err.message, "no storage tier 's3' in the spec");
    sn_error_clear(&err);
    srv.gpu_model = 5;
    assert_int_equal(sn_plan_hardware_from_spec(&spec, "hgx-unit", NULL, &in.hw, &err),
                     SN_ERR_INVALID);
}

/* The sweep ranks valid layouts by step time with the single plan's own
 * functions: every kept layout is consistent, fits, obeys the strict
 * rule, and evaluates to the same figures through sn_plan_evaluate(). */
static void sweep_invariants(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("llama3-70b");
    in.train.gpus = 1024;
    in.train.global_batch = 512;
    in.hw.scaleup_gpus = 4; /* so that tp 8 breaks the strict rule */
    static struct sn_plan_sweep sweep;
    struct sn_error err = {0};
    assert_int_equal(sn_plan_sweep_run(&in, 10, &sweep, &err), SN_OK);
    assert_int_equal(sweep.n_top, 10);
    assert_true(sweep.evaluated > sweep.valid);
    assert_true(sweep.dropped[SN_PLAN_DROP_MEMORY] > 0);
    assert_true(sweep.dropped[SN_PLAN_DROP_TP_DOMAIN] > 0);
    assert_int_equal(sweep.evaluated, sweep.valid + sweep.dropped[SN_PLAN_DROP_MEMORY]);
    for (uint32_t i = 0; i < sweep.n_top; i++) {
        const struct sn_plan_sweep_entry *e = &sweep.top[i];
        const struct sn_plan_train *t = &e->train;
        assert_int_equal(t->tp * t->pp * t->dp * t->cp, 1024);
        assert_true(t->tp <= 4);
        assert_true(e->result.memory.fits);
        if (i > 0) /* ranked by step time, up to the 0.5% resolution */
            assert_true(e->result.perf.step_s >= sweep.top[i - 1].result.perf.step_s * 0.995);
        struct sn_plan_input again = in;
        again.train = *t;
        struct sn_plan_result r;
        evaluate_ok(&again, &r);
        assert_near(r.perf.step_s, e->result.perf.step_s, 0);
        assert_near(r.memory.total_bytes, e->result.memory.total_bytes, 0);
    }
    char buf[96];
    assert_string_equal(sn_plan_sweep_reason(&sweep, 0, buf, sizeof(buf)), "fastest");
    sn_plan_sweep_reason(&sweep, 9, buf, sizeof(buf));
    assert_true(strncmp(buf, "+", 1) == 0 || strncmp(buf, "same", 4) == 0);

    assert_int_equal(sn_plan_sweep_run(&in, 0, &sweep, &err), SN_ERR_INVALID);
}

/* ---- the predictor ---------------------------------------------------- */

/* The smoothed roofline: 1/sqrt(2) at the ridge, -> 1 far above it,
 * -> intensity/ridge far below it; a GEMM's efficiency grows with M. */
static void roofline_curve(void **state)
{
    (void)state;
    /* H100: ridge 989e12 / 3.35e12 = 295 FLOP/byte */
    assert_near(sn_plan_roofline(295.2e12, 1e12, 989e12, 3.35e12), 1 / sqrt(2), 1e-3);
    assert_true(sn_plan_roofline(1e15, 1e9, 989e12, 3.35e12) > 0.9999);
    assert_near(sn_plan_roofline(1e12, 1e12, 989e12, 3.35e12), 1 / 295.2, 1e-4);
    double prev = 0;
    for (double m = 128; m <= 16384; m *= 2) {
        double e = sn_plan_gemm_efficiency(m, 2048, 16384, 2, 989e12, 3.35e12);
        assert_true(e > prev);
        prev = e;
    }
    /* M = 512: AI 400, 0.80; M = 8192: AI 1494, 0.98 */
    assert_near(sn_plan_gemm_efficiency(512, 2048, 16384, 2, 989e12, 3.35e12), 0.80, 0.01);
    assert_near(sn_plan_gemm_efficiency(8192, 2048, 16384, 2, 989e12, 3.35e12), 0.98, 0.01);
}

/* The validation table: at least 10 published runs from at least 6
 * papers, each recomputed here and held to its bound: 15% unless the row
 * explains a larger error. */
static void validation_table(void **state)
{
    (void)state;
    size_t n = sn_plan_validation_count();
    size_t n_calibrated_ok = 0, n_uncalibrated_ok = 0, n_h100 = 0;
    assert_true(n >= 12);
    const char *sources[32];
    size_t n_sources = 0;
    for (size_t i = 0; i < n; i++) {
        struct sn_plan_validation v;
        struct sn_error err = {0};
        if (sn_plan_validation_run(i, &v, &err) != SN_OK)
            fail_msg("run %zu: %s", i, err.message);
        if (!(fabs(v.error) <= v.bound))
            fail_msg("%s: predicted %g, published %g: error %+.1f%% beyond %.0f%%", v.name,
                     v.predicted, v.published, 100 * v.error, 100 * v.bound);
        if (v.bound > 0.15)
            assert_non_null(strstr(v.note, "Error explained"));
        /* after calibration on a different run of the same GPU: within 7%,
         * or the row says why not; no calibration only without another run */
        if (v.calibrated_on == SIZE_MAX) {
            assert_non_null(strstr(v.note, "No calibration"));
        } else {
            assert_true(v.calibrated_on != i);
            assert_string_equal(sn_plan_validation_gpu(v.calibrated_on), sn_plan_validation_gpu(i));
            if (!(fabs(v.calibrated_error) <= v.calibrated_bound))
                fail_msg("%s: calibrated on run %zu: %g, published %g: error %+.1f%% beyond "
                         "%.0f%%",
                         v.name, v.calibrated_on + 1, v.calibrated, v.published,
                         100 * v.calibrated_error, 100 * v.calibrated_bound);
            if (v.calibrated_bound > 0.07)
                assert_non_null(strstr(v.note, "Calibration explained"));
            else
                n_calibrated_ok++;
        }
        if (fabs(v.error) <= 0.15)
            n_uncalibrated_ok++;
        if (strcmp(sn_plan_validation_gpu(i), "h100") == 0)
            n_h100++;
        assert_true(v.published > 0 && v.predicted > 0);
        bool seen = false;
        for (size_t k = 0; k < n_sources; k++)
            seen = seen || strncmp(sources[k], v.source, 12) == 0;
        if (!seen && n_sources < 32)
            sources[n_sources++] = v.source;
    }
    assert_true(n_sources >= 6);
    /* the counts docs/planner.md states */
    assert_int_equal(n_uncalibrated_ok, 15);
    assert_int_equal(n_calibrated_ok, 11);
    assert_true(n_h100 >= 2);
    struct sn_plan_validation v;
    assert_int_equal(sn_plan_validation_run(n, &v, NULL), SN_ERR_NOTFOUND);
}

/* Calibration: MegaScale's 175B step of 6.3 s (55.2% MFU on 12,288
 * A100s; 6N tokens / (MFU x peak) = 6.24 s) is fitted exactly; a step
 * faster than full efficiency allows leaves a residual. */
static void calibration(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("gpt3-175b");
    (void)sn_plan_gpu_preset("a100", &in.hw);
    struct sn_plan_train *t = &in.train;
    t->gpus = 12288;
    t->tp = 8;
    t->pp = 8;
    t->dp = 192;
    t->vpp = 6;
    t->global_batch = 6144;
    t->zero = 1;
    t->seq_parallel = true;
    assert_rel(sn_plan_step_from_mfu(&in, 0.552), 6.24, 0.005);
    struct sn_plan_calibration cal;
    struct sn_error err = {0};
    assert_int_equal(sn_plan_calibrate(&in, 6.3, &cal, &err), SN_OK);
    assert_true(cal.predicted_step_s > 6.3); /* the defaults are pessimistic here */
    assert_rel(cal.fitted_step_s, 6.3, 1e-6);
    assert_near(cal.residual, 0, 1e-6);
    assert_near(in.hw.compute_efficiency, cal.compute_efficiency, 0);
    assert_true(cal.compute_efficiency > 0.66 && cal.compute_efficiency < 1);
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    assert_rel(r.perf.step_s, 6.3, 1e-6);
    /* 1 s is beyond reach: efficiency 1, positive residual */
    assert_int_equal(sn_plan_calibrate(&in, 1.0, &cal, &err), SN_OK);
    assert_near(cal.compute_efficiency, 1, 1e-12);
    assert_true(cal.residual > 1);
    assert_int_equal(sn_plan_calibrate(&in, 0, &cal, &err), SN_ERR_INVALID);
}

/* --measured: MegaScale's 175B run (Jiang et al. 2024, Table 2: 12,288
 * A100s, batch 6144 x 2048, 55.2% MFU) given as a step of 6.3 s, as its
 * tokens per second and as its hardware TFLOP/s per GPU: the same figures
 * each way, MFU on the 6N basis hand-computed (6 N tokens / (step x gpus x
 * 312 TFLOP/s)), with attention above it, HFU not below that (selective
 * recompute under FlashAttention adds nothing), time to train = tokens /
 * throughput. */
static void measured_run(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("gpt3-175b");
    (void)sn_plan_gpu_preset("a100", &in.hw);
    struct sn_plan_train *t = &in.train;
    t->gpus = 12288;
    t->tp = t->pp = 8;
    t->dp = 192;
    t->vpp = 6;
    t->global_batch = 6144;
    t->zero = 1;
    t->seq_parallel = true;
    t->recompute = SN_RECOMPUTE_SELECTIVE;
    t->train_tokens = 300e9;
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    struct sn_plan_measured m;
    struct sn_error err = {0};
    assert_int_equal(sn_plan_measure(&in, &r, SN_PLAN_MEASURE_STEP, 6.3, &m, &err), SN_OK);
    double tokens = 6144.0 * 2048;
    double mfu = 6 * sn_plan_params_active(&in.model) * tokens / (6.3 * 12288 * 312e12);
    assert_rel(m.measured.mfu_6n, mfu, 1e-9);
    assert_rel(m.measured.mfu_6n, 0.552 * 6.24 / 6.3, 0.01); /* the published MFU, 6.24 s */
    assert_true(m.measured.mfu_attention > m.measured.mfu_6n);
    assert_true(m.measured.hfu >= m.measured.mfu_attention);
    assert_rel(m.measured.tokens_per_s, tokens / 6.3, 1e-12);
    assert_rel(m.measured.train_s, 300e9 / (tokens / 6.3), 1e-12);
    assert_rel(m.error, r.perf.step_s / 6.3 - 1, 1e-12);
    assert_rel(m.predicted.step_s, r.perf.step_s, 1e-12);
    /* the fitted efficiency explains the step; the compute term carries the
     * gap, less what a shorter compute no longer hides of the communication */
    assert_near(m.fit_residual, 0, 1e-6);
    assert_rel(m.fitted_compute_s - r.compute.compute_s, m.gap_s, 0.01);
    struct sn_plan_measured m2;
    assert_int_equal(sn_plan_measure(&in, &r, SN_PLAN_MEASURE_TOKENS_PER_S, tokens / 6.3, &m2,
                                     &err),
                     SN_OK);
    assert_rel(m2.measured.step_s, 6.3, 1e-12);
    assert_int_equal(sn_plan_measure(&in, &r, SN_PLAN_MEASURE_TFLOPS_PER_GPU,
                                     m.measured.hw_flops_per_gpu, &m2, &err),
                     SN_OK);
    assert_rel(m2.measured.step_s, 6.3, 1e-12);
    assert_rel(m2.measured.hfu, m.measured.hfu, 1e-12);
    assert_int_equal(sn_plan_measure(&in, &r, SN_PLAN_MEASURE_STEP, -1, &m2, &err),
                     SN_ERR_INVALID);
    assert_int_equal(sn_plan_measure_from_name("tokens-per-s"), SN_PLAN_MEASURE_TOKENS_PER_S);
    assert_int_equal(sn_plan_measure_from_name("mfu"), SN_PLAN_MEASURE_COUNT);
}

/* The fit over several runs: two Megatron-LM rows on A100 (Narayanan et
 * al. 2021, Table 1: 145.6B at 148 TFLOP/s, 310.1B at 155, the validation
 * table's inputs) are fitted with one compute efficiency: the log-error
 * RMS falls; a single run is fitted exactly; comm needs two runs; mixed
 * GPUs are refused. */
static void fit_runs(void **state)
{
    (void)state;
    struct sn_plan_input runs[2];
    double step[2];
    size_t rows[2] = {5, 6};
    struct sn_error err = {0};
    for (int i = 0; i < 2; i++) {
        struct sn_plan_validation v;
        assert_int_equal(sn_plan_validation_run(rows[i], &v, &err), SN_OK);
        runs[i] = v.input;
        struct sn_plan_result r;
        evaluate_ok(&runs[i], &r);
        step[i] = r.compute.hardware_flops / (runs[i].train.gpus * v.published);
    }
    struct sn_plan_fit fit;
    assert_int_equal(sn_plan_fit_runs(runs, step, 2, false, &fit, &err), SN_OK);
    assert_true(fit.rms_after <= fit.rms_before + 1e-12);
    assert_true(fabs(fit.after[0]) < 0.07 && fabs(fit.after[1]) < 0.07);
    assert_int_equal(sn_plan_fit_runs(runs, step, 1, false, &fit, &err), SN_OK);
    assert_near(fit.after[0], 0, 1e-6);
    assert_int_equal(sn_plan_fit_runs(runs, step, 1, true, &fit, &err), SN_ERR_INVALID);
    assert_int_equal(sn_plan_fit_runs(runs, step, 2, true, &fit, &err), SN_OK);
    assert_true(fit.scaleout_efficiency >= 0.3 && fit.scaleout_efficiency <= 1);
    (void)sn_plan_gpu_preset("h100", &runs[1].hw);
    struct sn_error e2 = {0};
    assert_int_equal(sn_plan_fit_runs(runs, step, 2, false, &fit, &e2), SN_ERR_INVALID);
    assert_non_null(strstr(e2.message, "one kind of hardware"));
}

/* The supernode size sweep, hand-computed: Llama 3 8B on 96 H100s in
 * 8-GPU servers. Per size S: ceil(96 / S) job domains, spares = max(1,
 * ceil(domains x repair / domain MTBF)), installed = (job domains +
 * spares) x S; useful = 96 x goodput / installed; cost per useful GPU-hour
 * = cost / useful; the step is the layout sweep's winner on S-GPU domains;
 * a size that is not whole servers is not feasible. */
static void size_sweep(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("llama3-8b");
    in.train.gpus = 96;
    in.train.global_batch = 96;
    const uint32_t sizes[] = {8, 12, 32, 64};
    struct sn_plan_size_options o = {.repair_s = 48 * 3600.0, .gpu_hour_cost = 2,
                                     .it_w_per_gpu = 1000, .pue = 1.25, .min_spares = 1};
    struct sn_plan_size_sweep *s = test_malloc(sizeof(*s));
    struct sn_error err = {0};
    assert_int_equal(sn_plan_size_sweep_run(&in, sizes, 4, &o, s, &err), SN_OK);
    assert_false(s->rows[1].feasible);
    assert_non_null(strstr(s->rows[1].why_not, "8-GPU servers"));
    for (int i = 0; i < 4; i++) {
        const struct sn_plan_size_row *r = &s->rows[i];
        if (i == 1)
            continue;
        assert_true(r->feasible);
        uint32_t size = sizes[i], job = (96 + size - 1) / size;
        /* the domain's parts: S GPUs, S / 8 servers, 2 leaves and 2 power domains per 8 GPUs */
        double domain_rate = size / in.hw.mtbf_gpu_s + (size / 8.0) / in.hw.mtbf_server_s +
                             (2.0 * size / 8) / in.hw.mtbf_leaf_s +
                             (2.0 * size / 8) / in.hw.mtbf_power_domain_s;
        assert_rel(r->domain_mtbf_s, 1 / domain_rate, 1e-12);
        uint32_t spares = (uint32_t)ceil(job * o.repair_s / r->domain_mtbf_s);
        assert_int_equal(r->spares, spares < 1 ? 1 : spares);
        assert_int_equal(r->installed_gpus, (job + r->spares) * size);
        assert_int_equal(r->idle_gpus, job * size - 96);
        assert_int_equal(r->blast_gpus, size);
        assert_rel(r->useful_fraction, 96 * r->goodput / r->installed_gpus, 1e-12);
        assert_rel(r->cost_per_useful_gpu_hour, 2 / r->useful_fraction, 1e-12);
        assert_rel(r->w_per_useful_gpu, r->installed_gpus * 1000 * 1.25 / (96 * r->goodput),
                   1e-12);
        assert_rel(r->cost_per_mtoken,
                   2.0 * r->installed_gpus / (r->tokens_per_s * r->goodput * 3600) * 1e6, 1e-12);
        assert_true(r->layout.tp <= size);
        /* the step is the layout sweep's on S-GPU domains */
        struct sn_plan_input one = in;
        one.hw.scaleup_gpus = size;
        one.hw.servers_per_supernode = size / 8;
        one.hw.leaves_per_supernode = (uint32_t)round(2.0 * size / 8);
        one.hw.power_domains_per_supernode = one.hw.leaves_per_supernode;
        struct sn_plan_sweep *sw = test_malloc(sizeof(*sw));
        assert_int_equal(sn_plan_sweep_run(&one, 1, sw, &err), SN_OK);
        assert_rel(r->step_s, sw->top[0].result.perf.step_s, 1e-12);
        test_free(sw);
    }
    assert_true(s->best != UINT32_MAX && s->rows[s->best].feasible);
    for (int i = 0; i < 4; i++)
        if (s->rows[i].feasible)
            assert_true(s->rows[s->best].cost_per_mtoken <= s->rows[i].cost_per_mtoken);
    assert_non_null(strstr(s->reason, "lowest cost per useful token"));
    const uint32_t zero[] = {0};
    assert_int_equal(sn_plan_size_sweep_run(&in, zero, 1, &o, s, &err), SN_ERR_INVALID);
    test_free(s);
}

/* A job mix: each job's row is its one-job sweep's at that size; the
 * domains add up, the spares are one pool for all of them (hand-computed
 * from each job's domain failure rate), and a mix of one job is the
 * one-job sweep. A job without a layout at a size makes the size
 * infeasible for the mix. */
static void size_mix(void **state)
{
    (void)state;
    struct sn_plan_input jobs[2];
    sn_plan_input_defaults(&jobs[0]);
    jobs[0].model = preset("llama3-8b");
    jobs[0].train.gpus = 96;
    jobs[0].train.global_batch = 96;
    jobs[1] = jobs[0];
    jobs[1].model = preset("llama3-70b");
    jobs[1].train.gpus = 256;
    jobs[1].train.global_batch = 128;
    const uint32_t sizes[] = {8, 12, 32, 64};
    struct sn_plan_size_options o = {.repair_s = 48 * 3600.0, .gpu_hour_cost = 2,
                                     .it_w_per_gpu = 1000, .pue = 1.25, .min_spares = 1};
    struct sn_plan_size_mix *mix = test_malloc(sizeof(*mix));
    struct sn_plan_size_sweep *one = test_malloc(sizeof(*one));
    struct sn_error err = {0};
    assert_int_equal(sn_plan_size_mix_run(jobs, 2, sizes, 4, &o, mix, &err), SN_OK);
    assert_int_equal(mix->n_jobs, 2);
    assert_false(mix->rows[1].feasible);
    assert_non_null(strstr(mix->rows[1].why_not, "job 1 (llama3-8b)"));
    for (uint32_t j = 0; j < 2; j++) {
        assert_int_equal(sn_plan_size_sweep_run(&jobs[j], sizes, 4, &o, one, &err), SN_OK);
        for (int i = 0; i < 4; i++)
            if (i != 1)
                assert_rel(mix->rows[i].job[j].step_s, one->rows[i].step_s, 1e-12);
    }
    for (int i = 0; i < 4; i++) {
        const struct sn_plan_size_mix_row *r = &mix->rows[i];
        if (i == 1)
            continue;
        assert_true(r->feasible);
        uint32_t size = sizes[i];
        uint32_t d0 = (96 + size - 1) / size, d1 = (256 + size - 1) / size;
        assert_int_equal(r->job_domains, d0 + d1);
        /* one domain MTBF per size: both jobs' domains are alike */
        double rate = 1 / r->job[0].domain_mtbf_s;
        uint32_t spares = (uint32_t)ceil((d0 + d1) * rate * o.repair_s);
        assert_int_equal(r->spares, spares < 1 ? 1 : spares);
        assert_true(r->spares <= r->job[0].spares + r->job[1].spares);
        assert_int_equal(r->installed_gpus, (d0 + d1 + r->spares) * size);
        double useful = 96 * r->job[0].goodput + 256 * r->job[1].goodput;
        assert_rel(r->useful_gpus, useful, 1e-12);
        assert_rel(r->goodput, useful / (96 + 256), 1e-12);
        assert_rel(r->useful_fraction, useful / r->installed_gpus, 1e-12);
        assert_rel(r->cost_per_useful_gpu_hour, 2 / r->useful_fraction, 1e-12);
        assert_rel(r->w_per_useful_gpu, r->installed_gpus * 1000 * 1.25 / useful, 1e-12);
        assert_int_equal(r->blast_gpus, size);
    }
    /* speed weights: each job's fastest step over the feasible sizes */
    double fastest[2] = {INFINITY, INFINITY};
    for (int i = 0; i < 4; i++)
        for (int j = 0; i != 1 && j < 2; j++)
            fastest[j] = fmin(fastest[j], mix->rows[i].job[j].step_s);
    for (int i = 0; i < 4; i++) {
        const struct sn_plan_size_mix_row *r = &mix->rows[i];
        if (i == 1)
            continue;
        double w = 96 * r->job[0].goodput * fastest[0] / r->job[0].step_s +
                   256 * r->job[1].goodput * fastest[1] / r->job[1].step_s;
        assert_rel(r->speed_weighted_gpus, w, 1e-12);
        assert_rel(r->cost_per_fast_gpu_hour, 2.0 * r->installed_gpus / w, 1e-12);
    }
    assert_true(mix->best != UINT32_MAX);
    for (int i = 0; i < 4; i++)
        if (mix->rows[i].feasible)
            assert_true(mix->rows[mix->best].cost_per_fast_gpu_hour <=
                        mix->rows[i].cost_per_fast_gpu_hour);
    assert_non_null(strstr(mix->reason, "lowest cost per useful GPU-hour at the fastest step"));
    /* a mix of one job is the one-job sweep */
    assert_int_equal(sn_plan_size_mix_run(jobs, 1, sizes, 4, &o, mix, &err), SN_OK);
    assert_int_equal(sn_plan_size_sweep_run(&jobs[0], sizes, 4, &o, one, &err), SN_OK);
    for (int i = 0; i < 4; i++) {
        if (i == 1)
            continue;
        assert_int_equal(mix->rows[i].installed_gpus, one->rows[i].installed_gpus);
        assert_rel(mix->rows[i].cost_per_useful_gpu_hour, one->rows[i].cost_per_useful_gpu_hour,
                   1e-12);
    }
    /* and ranks the sizes as the cost per token does */
    assert_int_equal(mix->best, one->best);
    assert_int_equal(sn_plan_size_mix_run(jobs, 0, sizes, 4, &o, mix, &err), SN_ERR_INVALID);
    test_free(one);
    test_free(mix);
}

/* ---- the sweep's acceptance ------------------------------------------- */

/* Llama 3 405B on 16,384 H100s at 8K, 16M tokens per batch: Meta ran TP 8,
 * PP 16, no CP (Llama 3 paper, Table 4). The sweep's first layout uses
 * TP 8, PP <= 16 and no CP; the top three all use TP 8 and PP <= 16, and
 * any with CP is within 1% of the first (below the model's resolution). */
static void sweep_llama405(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("llama3-405b");
    in.train.gpus = 16384;
    in.train.global_batch = 2048;
    static struct sn_plan_sweep sweep;
    struct sn_error err = {0};
    assert_int_equal(sn_plan_sweep_run(&in, 5, &sweep, &err), SN_OK);
    assert_true(sweep.n_top >= 3);
    const struct sn_plan_train *w = &sweep.top[0].train;
    assert_int_equal(w->tp, 8);
    assert_true(w->pp <= 16);
    assert_int_equal(w->cp, 1);
    for (uint32_t i = 0; i < 3; i++) {
        const struct sn_plan_sweep_entry *e = &sweep.top[i];
        assert_int_equal(e->train.tp, 8);
        assert_true(e->train.pp <= 16);
        if (e->train.cp > 1)
            assert_true(e->result.perf.step_s <= 1.01 * sweep.top[0].result.perf.step_s);
        assert_true(e->result.memory.fits);
    }
    char buf[320];
    sn_plan_sweep_explain(&sweep, buf, sizeof(buf));
    assert_non_null(strstr(buf, "#1 (tp 8"));
    assert_non_null(strstr(buf, "beats #2"));
}

/* An 8B model on 64 GPUs: the first layout is data-parallel dominant
 * (the old answer was tp 1 pp 8 cp 8 dp 1). */
static void sweep_8b(void **state)
{
    (void)state;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = preset("llama3-8b");
    in.train.gpus = 64;
    in.train.global_batch = 256;
    static struct sn_plan_sweep sweep;
    struct sn_error err = {0};
    assert_int_equal(sn_plan_sweep_run(&in, 3, &sweep, &err), SN_OK);
    const struct sn_plan_train *w = &sweep.top[0].train;
    assert_true(w->dp >= 32);
    assert_true(w->dp > w->tp * w->pp * w->cp);
    assert_int_equal(w->cp, 1);
}

/* ---- inputs that catch mistakes --------------------------------------- */

/* DeepSeek-V3 (Section 1): 671B total, 37B activated, with MLA, 1 shared
 * and 256 routed experts (8 per token) and 3 dense first layers; the
 * multi-token-prediction module is not part of the 671B. */
static void deepseek_v3(void **state)
{
    (void)state;
    struct sn_plan_model m = preset("deepseek-v3");
    assert_rel(sn_plan_params(&m), 671e9, 0.002);
    assert_rel(sn_plan_params_active(&m), 37e9, 0.02);
    /* without the shared expert or the dense layers the count moves */
    struct sn_plan_model x = m;
    x.shared_experts = 0;
    assert_true(sn_plan_params(&m) - sn_plan_params(&x) > 2.5e9);
    x = m;
    x.kv_lora_rank = 0; /* plain MHA of h = 7168: a different model */
    assert_true(fabs(sn_plan_params(&x) - 671e9) > 1e9);
    /* on 2,048 H800s in FP8: the worst stage is an all-expert one */
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = m;
    (void)sn_plan_gpu_preset("h800", &in.hw);
    struct sn_plan_train *t = &in.train;
    t->gpus = 2048;
    t->pp = 16;
    t->dp = 128;
    t->ep = 64;
    t->zero = 1;
    t->global_batch = 15360;
    t->precision = SN_PRECISION_FP8;
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    assert_true(r.memory.worst_stage >= 1);
    assert_true(r.comm.dim[SN_PLAN_DIM_EP].bytes > 0);
    /* FP8 GEMMs are faster than bf16 ones, memory is the same */
    struct sn_plan_result bf;
    t->precision = SN_PRECISION_BF16;
    evaluate_ok(&in, &bf);
    assert_true(r.compute.compute_s < bf.compute.compute_s);
    assert_true(r.compute.compute_s > 0.5 * bf.compute.compute_s);
    assert_near(r.memory.total_bytes, bf.memory.total_bytes, 0);
    /* a capacity factor of 1.25 pads every expert: 1.25x the all-to-all */
    t->precision = SN_PRECISION_FP8;
    t->capacity_factor = 1.25;
    struct sn_plan_result cf;
    evaluate_ok(&in, &cf);
    assert_rel(cf.comm.dim[SN_PLAN_DIM_EP].bytes, 1.25 * r.comm.dim[SN_PLAN_DIM_EP].bytes, 1e-12);
    assert_true(cf.compute.compute_s > r.compute.compute_s);
    t->capacity_factor = 0.5;
    expect_error(&in, "capacity factor");
    t->capacity_factor = 0;
    t->ep = 3; /* does not divide 256 experts */
    expect_error(&in, "ep 3");
}

/* Presets: A100 at 200 Gb/s per GPU (DGX A100), the new GPUs, and the
 * sparse figures recognised. */
static void presets_and_peaks(void **state)
{
    (void)state;
    struct sn_plan_hardware hw = {0};
    assert_true(sn_plan_gpu_preset("a100", &hw));
    assert_near(hw.scaleout_bytes_per_s, 25e9, 0);
    assert_true(sn_plan_gpu_preset("h800", &hw));
    assert_near(hw.scaleup_bytes_per_s, 200e9, 0);
    assert_near(hw.peak_fp8_flops, 1979e12, 0);
    assert_true(sn_plan_gpu_preset("mi300x", &hw));
    assert_near(hw.peak_flops, 1307.4e12, 0);
    assert_true(sn_plan_gpu_preset("b200", &hw));
    assert_near(hw.peak_fp8_flops, 4.5e15, 0);
    assert_true(sn_plan_gpu_preset("gb200", &hw));
    assert_int_equal(hw.scaleup_gpus, 72);
    assert_non_null(sn_plan_sparse_peak(1979e12));
    assert_non_null(strstr(sn_plan_sparse_peak(1979e12), "h100"));
    assert_non_null(sn_plan_sparse_peak(624e12));
    assert_null(sn_plan_sparse_peak(989e12));
    assert_null(sn_plan_sparse_peak(312e12));
}

/* A zero failure rate is allowed: no checkpoint need from failures;
 * checkpoint bytes per parameter can be stated. */
static void failures_and_ckpt_bytes(void **state)
{
    (void)state;
    struct sn_plan_input in;
    llama405_input(&in);
    in.hw.mtbf_gpu_s = in.hw.mtbf_server_s = in.hw.mtbf_leaf_s = in.hw.mtbf_power_domain_s = 0;
    struct sn_plan_result r;
    evaluate_ok(&in, &r);
    assert_true(r.ckpt.no_failures);
    assert_true(isinf(r.ckpt.job_mtbf_s));
    double c = r.ckpt.tier[r.ckpt.tier_used].write_s;
    assert_rel(r.ckpt.goodput, 1800 / (1800 + c), 1e-12);
    assert_near(r.ckpt.daly_s, 0, 0);
    in.hw.mtbf_gpu_s = -1;
    expect_error(&in, "must not be negative");
    llama405_input(&in);
    in.opt.ckpt_bytes_per_param = 16.8;
    evaluate_ok(&in, &r);
    assert_rel(r.ckpt.total_bytes, 16.8 * sn_plan_params(&in.model), 1e-12);
    assert_near(r.ckpt.bytes_per_param_weights, 2, 0);
    assert_near(r.ckpt.bytes_per_param_optimizer, 14.8, 1e-12);
    in.opt.ckpt_bytes_per_param = 100;
    expect_error(&in, "bytes per parameter");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(megatron_parameter_count),
        cmocka_unit_test(general_parameter_count),
        cmocka_unit_test(megatron_training_time),
        cmocka_unit_test(megatron_flops),
        cmocka_unit_test(zero_example),
        cmocka_unit_test(korthikanti_activations),
        cmocka_unit_test(daly_young),
        cmocka_unit_test(required_bandwidth_example),
        cmocka_unit_test(ring_costs),
        cmocka_unit_test(llama3_405b_fits),
        cmocka_unit_test(pipeline_bubble),
        cmocka_unit_test(communication_bytes),
        cmocka_unit_test(job_mtbf),
        cmocka_unit_test(checkpoint_plan),
        cmocka_unit_test(checkpoint_formats),
        cmocka_unit_test(input_conflicts),
        cmocka_unit_test(hardware_from_spec),
        cmocka_unit_test(sweep_invariants),
        cmocka_unit_test(roofline_curve),
        cmocka_unit_test(zero3_deepspeed),
        cmocka_unit_test(last_stage_worst),
        cmocka_unit_test(validation_table),
        cmocka_unit_test(calibration),
        cmocka_unit_test(measured_run),
        cmocka_unit_test(fit_runs),
        cmocka_unit_test(size_sweep),
        cmocka_unit_test(size_mix),
        cmocka_unit_test(sweep_llama405),
        cmocka_unit_test(sweep_8b),
        cmocka_unit_test(deepseek_v3),
        cmocka_unit_test(presets_and_peaks),
        cmocka_unit_test(failures_and_ckpt_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
