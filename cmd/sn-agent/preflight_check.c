/*
 * sn-agent preflight-check: one job's preflight on exactly its GPUs of
 * this node (docs/agent.md, "Preflight"), run by the agent in a child
 * (preflight.c) so that heartbeats go on, or by hand:
 *
 *   sn-agent preflight-check --gpus 2,5 [--mode quick|full] [--node NAME]
 *       [--expect-tflops X] [--expect-hbm-gb-per-s Y] [--expect-busbw-gb-per-s Z]
 *       [--probe-command CMD | --cuda-lib DIR] [--timeout S] [--out FILE]
 *
 * With CUDA_VISIBLE_DEVICES set to the GPUs it runs the GEMM/HBM probe
 * (the runner of `sn-agent bench`; the probe's GPU k is the k-th GPU of
 * --gpus) and, for full, all_reduce_perf -b 8 -e 1G -f 2 -g N (N the GPUs),
 * each killed after --timeout seconds, and judges them with
 * sn_preflight_judge(). It prints, and writes to FILE, two lines: the
 * verdict ("pass", "na", or "fail:G/G" with the failing GPU indices) and
 * the evidence. A tool absent (no CUDA, no probe, no all_reduce_perf)
 * gives "na" unless the probe failed a GPU already. Exit status 0 pass or
 * na, 1 fail, 2 bad usage.
 */
#include "agent.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sn/health.h>
#include <sn/preflight.h>

struct pc_args {
    const char *gpus_text, *mode, *out;
    int gpus[SN_PREFLIGHT_GPUS_MAX];
    size_t n;
    double expect[3]; /* tflops, hbm GB/s, busbw GB/s; NaN: none */
    struct runner_opts o;
};

static void pc_usage(FILE *f)
{
    fprintf(f,
            "usage: sn-agent preflight-check --gpus I[,I...] [--mode quick|full] [--node NAME]\n"
            "                [--expect-tflops X] [--expect-hbm-gb-per-s Y]\n"
            "                [--expect-busbw-gb-per-s Z] [--probe-command CMD | --cuda-lib DIR]\n"
            "                [--timeout S] [--out FILE]\n\n"
            "One job's preflight on exactly these GPUs of this node (CUDA_VISIBLE_DEVICES):\n"
            "the GEMM/HBM probe, and for full also all_reduce_perf -g N, judged against the\n"
            "expected figures (snd's heartbeat answer). Prints the verdict (pass, na, or\n"
            "fail:G/G with the failing GPU indices) and the evidence; exit 0 pass or na,\n"
            "1 fail, 2 bad usage.\n");
}

/* "2,5" into a->gpus; false when it is not a list of GPU indices. */
static bool parse_gpus(struct pc_args *a, const char *v)
{
    a->n = 0;
    for (const char *p = v; *p;) {
        char *end;
        errno = 0;
        long g = strtol(p, &end, 10);
        if (end == p || errno || g < 0 || g > 1023 || a->n == SN_PREFLIGHT_GPUS_MAX ||
            (*end && *end != ','))
            return false;
        a->gpus[a->n++] = (int)g;
        p = *end ? end + 1 : end;
    }
    return a->n > 0;
}

static int pc_parse(int argc, char **argv, struct pc_args *a)
{
    static const char *const fig[] = {"--expect-tflops", "--expect-hbm-gb-per-s",
                                      "--expect-busbw-gb-per-s"};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            pc_usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sn-agent preflight-check: option '%s' needs a value or is unknown\n",
                    o);
            return 2;
        }
        const char *v = argv[++i];
        char *end = NULL;
        double x = strtod(v, &end);
        bool num = *v && !*end && isfinite(x) && x > 0;
        int f = 0;
        while (f < 3 && strcmp(o, fig[f]) != 0)
            f++;
        if (f < 3 && num)
            a->expect[f] = x;
        else if (strcmp(o, "--gpus") == 0 && parse_gpus(a, v))
            a->gpus_text = v;
        else if (strcmp(o, "--mode") == 0 && (strcmp(v, "quick") == 0 || strcmp(v, "full") == 0))
            a->mode = v;
        else if (strcmp(o, "--node") == 0)
            a->o.node = v;
        else if (strcmp(o, "--out") == 0)
            a->out = v;
        else if (strcmp(o, "--probe-command") == 0)
            a->o.probe_command = v;
        else if (strcmp(o, "--cuda-lib") == 0)
            a->o.cuda_lib = v;
        else if (strcmp(o, "--timeout") == 0 && num && x >= 1 && x <= 86400)
            a->o.timeout_ms = (int64_t)(x * 1000);
        else {
            fprintf(stderr,
                    "sn-agent preflight-check: '%s %s': unknown option or bad value (--gpus "
                    "0-1023 list, --mode quick|full, --timeout 1-86400, figures > 0)\n",
                    o, v);
            return 2;
        }
    }
    if (!a->gpus_text) {
        fprintf(stderr, "sn-agent preflight-check: --gpus I[,I...] is required\n");
        return 2;
    }
    return -1;
}

/* The probe's rows and "# gpu K: failed: ..." lines into gpus (K the
 * ordinal among the visible GPUs). */
static void read_probe(const struct pc_args *a, const struct runner_result *r,
                       struct sn_preflight_gpu *gpus)
{
    for (size_t i = 0; i < a->n; i++)
        gpus[i] =
            (struct sn_preflight_gpu){.index = a->gpus[i], .flops = NAN, .hbm_bytes_per_s = NAN};
    struct sn_health_facts f;
    sn_health_facts_init(&f);
    struct sn_error err = {0};
    if (sn_health_facts_read(&f, SN_FACTS_BENCH, r->output ? r->output : "", r->len, "probe",
                             &err) != SN_OK)
        fprintf(stderr, "sn-agent preflight-check: probe output: %s\n", err.message);
    for (uint32_t i = 0; i < f.n_bench; i++) {
        const struct sn_bench_row *b = &f.bench[i];
        if (b->gpu < 0 || (size_t)b->gpu >= a->n)
            continue;
        if (b->test == SN_BENCH_GEMM)
            gpus[b->gpu].flops = b->value;
        else if (b->test == SN_BENCH_HBM)
            gpus[b->gpu].hbm_bytes_per_s = b->value;
    }
    sn_health_facts_release(&f);
    bool named = false;
    for (const char *s = r->output; s && (s = strstr(s, "# gpu ")); s++) {
        char *end;
        long k = strtol(s + 6, &end, 10);
        if (end != s + 6 && strncmp(end, ": failed: ", 10) == 0 && k >= 0 && (size_t)k < a->n)
            gpus[k].probe_failed = named = true;
    }
    /* A probe that failed without naming a GPU: every GPU it gave rows for
     * failed too (those without rows fail anyway). */
    for (size_t i = 0; r->status == RUNNER_FAILED && !named && i < a->n; i++)
        gpus[i].probe_failed = true;
}

/* Appends a "; "-separated item to buf. */
static void add(char *buf, size_t cap, const char *mode, const char *text)
{
    size_t n = strlen(buf);
    if (n < cap)
        snprintf(buf + n, cap - n, "%s%s: %.300s", n ? "; " : "", mode, text);
}

/* The figures measured, for the evidence of a pass. */
static void figures(const struct sn_preflight_gpu *g, size_t n, char *out, size_t cap)
{
    double gemm = INFINITY, hbm = INFINITY;
    for (size_t i = 0; i < n; i++) {
        gemm = isfinite(g[i].flops) && g[i].flops < gemm ? g[i].flops : gemm;
        hbm = isfinite(g[i].hbm_bytes_per_s) && g[i].hbm_bytes_per_s < hbm ? g[i].hbm_bytes_per_s
                                                                           : hbm;
    }
    snprintf(out, cap, "probe %zu GPUs, lowest gemm %.1f TFLOP/s, lowest hbm %.1f GB/s", n,
             gemm / 1e12, hbm / 1e9);
}

static int verdict(const struct pc_args *a, const char *line, const char *ev)
{
    printf("%s\n%s\n", line, ev);
    if (a->out) {
        FILE *f = fopen(a->out, "w");
        if (!f || fprintf(f, "%s\n%s\n", line, ev) < 0 || fclose(f) != 0) {
            fprintf(stderr, "sn-agent preflight-check: cannot write '%s': %s\n", a->out,
                    strerror(errno));
            return 2;
        }
    }
    return strncmp(line, "fail:", 5) == 0 ? 1 : 0;
}

int agent_preflight_check(int argc, char **argv)
{
    static char host[64];
    if (gethostname(host, sizeof(host) - 1) != 0)
        snprintf(host, sizeof(host), "localhost");
    struct pc_args a = {.mode = "quick",
                        .expect = {NAN, NAN, NAN},
                        .o = {.node = host, .timeout_ms = PREFLIGHT_TOOL_S * 1000}};
    int rc = pc_parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    bool full = strcmp(a.mode, "full") == 0;
    if (setenv("CUDA_VISIBLE_DEVICES", a.gpus_text, 1) != 0)
        return 2;
    char ev[512] = "", t[300];
    struct sn_preflight_gpu gpus[SN_PREFLIGHT_GPUS_MAX];
    struct runner_result probe, nccl = {.status = RUNNER_NOT_AVAILABLE};
    runner_run(RUNNER_PROBE, &a.o, &probe);
    if (probe.status == RUNNER_NOT_AVAILABLE) {
        snprintf(t, sizeof(t), "GPU probe %.200s", probe.detail);
        add(ev, sizeof(ev), a.mode, t);
        runner_result_release(&probe);
        return verdict(&a, "na", ev);
    }
    read_probe(&a, &probe, gpus);
    if (full) {
        a.o.gpus = (unsigned)a.n;
        runner_run(RUNNER_NCCL_ALL_REDUCE, &a.o, &nccl);
    }
    struct sn_health_config cfg;
    sn_health_config_default(&cfg);
    struct sn_preflight_input in = {
        .gpus = gpus,
        .n_gpus = a.n,
        .expect_flops = a.expect[0] * 1e12,
        .expect_hbm_bytes_per_s = a.expect[1] * 1e9,
        .expect_busbw_bytes_per_s = a.expect[2] * 1e9,
        .slow_floor = cfg.slow_floor,
        .full = full && nccl.status != RUNNER_NOT_AVAILABLE,
        .nccl_failed = nccl.status == RUNNER_FAILED,
        .nccl_peak_busbw_bytes_per_s = nccl.peak_busbw_bytes_per_s,
        .nccl_detail = nccl.detail,
    };
    struct sn_preflight_verdict v;
    sn_preflight_judge(&in, &v);
    char line[400] = "";
    if (v.n_failed) {
        size_t n = 0;
        for (size_t i = 0; i < a.n && n < sizeof(line); i++)
            if (v.failed[i])
                n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%d",
                                      n ? "/" : "fail:", gpus[i].index);
        add(ev, sizeof(ev), a.mode, v.evidence);
    } else {
        figures(gpus, a.n, t, sizeof(t));
        add(ev, sizeof(ev), a.mode, t);
        if (full && nccl.status == RUNNER_NOT_AVAILABLE) {
            snprintf(line, sizeof(line), "na");
            snprintf(t, sizeof(t), "all-reduce %.200s", nccl.detail);
        } else {
            snprintf(line, sizeof(line), "pass");
            if (full && a.expect[2] > 0)
                snprintf(t, sizeof(t),
                         "all-reduce -g %zu peak busbw %.1f GB/s >= %.1f GB/s "
                         "expected",
                         a.n, nccl.peak_busbw_bytes_per_s / 1e9, a.expect[2]);
            else if (full)
                snprintf(t, sizeof(t),
                         "all-reduce -g %zu peak busbw %.1f GB/s (no expected "
                         "figure)",
                         a.n, nccl.peak_busbw_bytes_per_s / 1e9);
        }
        if (full)
            add(ev, sizeof(ev), a.mode, t);
    }
    runner_result_release(&probe);
    runner_result_release(&nccl);
    return verdict(&a, line, ev);
}
