/*
 * The judgement of a preflight on real GPUs (docs/scheduler.md,
 * "Preflight on the exact allocation"; issue 27 item 1). An agent on the
 * nvml or nvidia-smi backend runs the GEMM/HBM probe on exactly a job's
 * GPUs of its server and, for a full check, an nccl-tests all_reduce_perf
 * across them; it has no cluster model, so snd puts the expected figures
 * in the heartbeat answer's job entry (expect_tflops, expect_hbm_gb_per_s
 * and, when the model gives one, expect_busbw_gb_per_s) and this pure
 * function judges the measured figures against them:
 *  - a GPU whose probe failed or printed no rows fails;
 *  - a GPU whose GEMM or HBM figure is below SN_PREFLIGHT_SPEC_SHARE of
 *    its GPU model's figure fails (the probe's GEMM is a dense one, the
 *    spec's dense BF16 FLOP/s, no sparsity);
 *  - with three or more GPUs measured, a GPU below (1 - slow_floor) of the
 *    median of the job's GPUs here fails (the slow-gpu detector's
 *    percentage floor, lib/health sn_health_config slow_floor);
 *  - full: an all-reduce whose tool failed, or whose peak busbw is below
 *    the expected busbw (sn_health_busbw_floor: busbw_eff_scaleup x the
 *    GPU's scale-up bandwidth, the nccl detector's floor) fails every GPU.
 * Nothing here reads a clock, a file or a process.
 */
#ifndef SN_PREFLIGHT_H
#define SN_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>

/* Our default, not a published figure: a probe reaching half its GPU
 * model's datasheet figure is judged working (the built-in probe's dense
 * GEMM reaches about 0.6-0.75 of an H100's dense BF16 peak); below it the
 * GPU is clearly degraded (a clock stuck low, HBM failing). */
#define SN_PREFLIGHT_SPEC_SHARE 0.5
#define SN_PREFLIGHT_GPUS_MAX 64

/* One GPU's probe figures; NaN when the probe printed no such row. */
struct sn_preflight_gpu {
    int index;              /* the GPU's index in its server */
    double flops;           /* measured dense GEMM, FLOP/s */
    double hbm_bytes_per_s; /* measured HBM copy bandwidth */
    bool probe_failed;      /* the probe reported this GPU failed */
};

struct sn_preflight_input {
    const struct sn_preflight_gpu *gpus;
    size_t n_gpus;
    /* Expected figures from the heartbeat answer; NaN or <= 0: none. */
    double expect_flops, expect_hbm_bytes_per_s, expect_busbw_bytes_per_s;
    double slow_floor;                  /* the peer floor (lib/health slow_floor, 0.05) */
    bool full;                          /* the all-reduce ran */
    bool nccl_failed;                   /* it exited non-zero, timed out or printed no row */
    double nccl_peak_busbw_bytes_per_s; /* its out-of-place peak */
    const char *nccl_detail;            /* the runner's detail for a failed run (may be NULL) */
};

struct sn_preflight_verdict {
    bool failed[SN_PREFLIGHT_GPUS_MAX]; /* parallel to the input's gpus */
    size_t n_failed;
    char evidence[512]; /* "; "-separated items, every failure named; "" on a pass */
};

/* Judges in (at most SN_PREFLIGHT_GPUS_MAX GPUs are looked at) into out. */
void sn_preflight_judge(const struct sn_preflight_input *in, struct sn_preflight_verdict *out);

#endif
