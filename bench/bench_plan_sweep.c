/*
 * bench_plan_sweep: the speed of `sn plan --sweep` (target: under 1 s for
 * 16,384 GPUs). Sweeps Llama 3 405B (global batch 2,048 sequences of
 * 8,192 tokens) on 16,384 H100s in 8-GPU NVLink domains, and GPT-3 175B
 * on 16,384 GPUs of GB200 NVL72-sized domains (72 is not a power of two,
 * so fewer TP sizes survive the strict rule but more CP/PP shapes do), five
 * times each, and prints the best and median wall time with the number of
 * layouts evaluated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sn/plan.h>

#define RUNS 5

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run(const char *label, const struct sn_plan_input *in, struct sn_plan_sweep *sweep)
{
    double t[RUNS];
    for (int i = 0; i < RUNS; i++) {
        struct sn_error err = {0};
        double start = now_s();
        if (sn_plan_sweep_run(in, 10, sweep, &err) != SN_OK) {
            fprintf(stderr, "bench_plan_sweep: %s\n", err.message);
            return 1;
        }
        t[i] = now_s() - start;
    }
    qsort(t, RUNS, sizeof(t[0]), cmp_double);
    printf("%-34s gpus %u  evaluated %llu  valid %llu  best %.1f ms  median %.1f ms  "
           "(%.2f us/layout)  %s\n",
           label, in->train.gpus, (unsigned long long)sweep->evaluated,
           (unsigned long long)sweep->valid, t[0] * 1e3, t[RUNS / 2] * 1e3,
           t[RUNS / 2] / (double)sweep->evaluated * 1e6, t[RUNS / 2] < 1.0 ? "ok (< 1 s)" : "SLOW");
    return 0;
}

int main(void)
{
    static struct sn_plan_sweep sweep;
    struct sn_plan_input in;
    sn_plan_input_defaults(&in);
    in.model = *sn_plan_model_preset("llama3-405b");
    in.train.gpus = 16384;
    in.train.global_batch = 2048;
    if (run("llama3-405b h100 (domain 8)", &in, &sweep))
        return 1;

    sn_plan_input_defaults(&in);
    in.model = *sn_plan_model_preset("gpt3-175b");
    (void)sn_plan_gpu_preset("gb200", &in.hw);
    in.train.gpus = 16384;
    in.train.global_batch = 4096;
    if (run("gpt3-175b gb200 (domain 72)", &in, &sweep))
        return 1;

    sn_plan_input_defaults(&in);
    in.model = *sn_plan_model_preset("gpt3-175b");
    in.train.gpus = 16384;
    in.train.global_batch = 4096;
    in.opt.strict = false; /* every TP size, also across scale-out */
    if (run("gpt3-175b h100 (not strict)", &in, &sweep))
        return 1;
    return 0;
}
