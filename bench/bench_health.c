/*
 * bench_health: the cost of one full analysis pass over 100,000 GPUs' latest
 * samples (target: under 100 ms).
 *
 * Builds the model of examples/large-100k.yaml (2,048 supernodes of 8 HGX
 * H100 servers, 131,072 GPUs), feeds one batch of 16 readings per GPU for the
 * first N GPUs (default 100,000) through the health history into the store,
 * as a dcgm-exporter scrape would (a few GPUs are made hot, throttled,
 * PCIe-degraded or with ECC errors so the detectors have work), and times
 * sn_health_analyze() with and without a state. Prints the best and median
 * of the passes, wall-clock and thread CPU time.
 *
 * Usage: bench_health [gpus (default 100000)] [passes (default 7)]
 */
#include <sn/health.h>
#include <sn/spec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void feed_gpu(struct sn_telem_sink *sink, const struct sn_model *m, uint32_t g)
{
    char host[64];
    sn_model_server_name(m, m->gpu_server[g], host, sizeof(host));
    uint32_t idx = g - m->server_first_gpu[m->gpu_server[g]];
    bool hot = g % 9973 == 17, pcie = g % 7919 == 5, dbe = g % 10007 == 3;
    struct sn_telem_sample v[] = {
        {SN_METRIC_TEMP_GPU, SN_TELEM_OK, hot ? 89 : 60 + g % 7},
        {SN_METRIC_POWER, SN_TELEM_OK, 680 + g % 19},
        {SN_METRIC_CLOCK_SM, SN_TELEM_OK, hot ? 1395 : 1980},
        {SN_METRIC_CLOCK_SM_MAX, SN_TELEM_OK, 1980},
        {SN_METRIC_UTIL_GPU, SN_TELEM_OK, 100},
        {SN_METRIC_MEM_USED, SN_TELEM_OK, 70e9},
        {SN_METRIC_MEM_TOTAL, SN_TELEM_OK, 85520809984.0},
        {SN_METRIC_PCIE_GEN, SN_TELEM_OK, 5},
        {SN_METRIC_PCIE_GEN_MAX, SN_TELEM_OK, 5},
        {SN_METRIC_PCIE_WIDTH, SN_TELEM_OK, pcie ? 8 : 16},
        {SN_METRIC_PCIE_WIDTH_MAX, SN_TELEM_OK, 16},
        {SN_METRIC_CLOCK_EVENT_REASONS, SN_TELEM_OK, hot ? 0x48 : 0},
        {SN_METRIC_ECC_DBE_VOL, SN_TELEM_OK, dbe ? 1 : 0},
        {SN_METRIC_ECC_SBE_VOL, SN_TELEM_OK, g % 3},
        {SN_METRIC_REMAP_PENDING, SN_TELEM_OK, 0},
        {SN_METRIC_PCIE_REPLAY, SN_TELEM_OK, 0},
    };
    struct sn_telem_samples s = {
        .gpu = {.host = host, .index = (int)idx, .uuid = NULL, .bus = SN_TELEM_BUS_NONE},
        .at = {.source = "dcgm.prom", .line = g + 1, .time_s = 1714564800.0},
        .v = v,
        .n = sizeof(v) / sizeof(v[0]),
    };
    sink->samples(sink->ctx, &s);
}

static double median_ms(double *t, unsigned n)
{
    qsort(t, n, sizeof(*t), cmp_d);
    return t[n / 2] * 1e3;
}

int main(int argc, char **argv)
{
    uint32_t want = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
    unsigned passes = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 7;
    if (passes == 0 || passes > 64)
        passes = 7;
    const char *root = getenv("SN_SOURCE_DIR");
    char path[512];
    snprintf(path, sizeof(path), "%s/examples/large-100k.yaml", root ? root : ".");
    struct sn_error err = {0};
    struct sn_spec *spec = NULL;
    struct sn_model *m = NULL;
    struct sn_telem_store *st = NULL;
    struct sn_health_history *h = NULL;
    struct sn_health_state *state = NULL;
    if (sn_spec_parse_file(path, &spec, &err) != SN_OK || sn_model_build(spec, &m, &err) != SN_OK ||
        sn_telem_store_new(NULL, &st, &err) != SN_OK ||
        sn_health_history_new(st, NULL, &h, &err) != SN_OK ||
        sn_health_state_new(m, &state, &err) != SN_OK) {
        fprintf(stderr, "bench_health: %s (run from the repository root or set SN_SOURCE_DIR)\n",
                err.message);
        return 1;
    }
    if (want > m->n_gpus)
        want = m->n_gpus;
    struct sn_telem_sink sink = sn_health_history_sink(h);
    double t0 = now_s(CLOCK_MONOTONIC);
    for (uint32_t g = 0; g < want; g++)
        feed_gpu(&sink, m, g);
    double feed_s = now_s(CLOCK_MONOTONIC) - t0;
    struct sn_health_input in = {m, st, h, NULL, NULL, NULL, 1714564800.0, NULL};
    double wall[64], cpu[64], wall_state[64];
    uint32_t findings = 0, excluded = 0;
    for (unsigned p = 0; p < passes; p++) {
        struct sn_health_report *r = NULL;
        double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
        if (sn_health_analyze(&in, NULL, &r, &err) != SN_OK) {
            fprintf(stderr, "bench_health: %s\n", err.message);
            return 1;
        }
        wall[p] = now_s(CLOCK_MONOTONIC) - w0;
        cpu[p] = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
        findings = r->n_findings;
        excluded = sn_bitset_count(&r->excluded);
        sn_health_report_free(r);
        w0 = now_s(CLOCK_MONOTONIC);
        in.now_s += 60;
        if (sn_health_analyze(&in, state, &r, &err) != SN_OK) {
            fprintf(stderr, "bench_health: %s\n", err.message);
            return 1;
        }
        wall_state[p] = now_s(CLOCK_MONOTONIC) - w0;
        sn_health_report_free(r);
    }
    double best = wall[0];
    for (unsigned p = 1; p < passes; p++)
        best = wall[p] < best ? wall[p] : best;
    printf("bench_health: %u GPUs with samples (model: %u GPUs, %u servers), fed in %.0f ms\n",
           want, m->n_gpus, m->n_servers, feed_s * 1e3);
    printf("analysis pass: best %.1f ms, median %.1f ms wall; median %.1f ms thread CPU "
           "(%u passes; target < 100 ms)\n",
           best * 1e3, median_ms(wall, passes), median_ms(cpu, passes), passes);
    printf("analysis pass with state (decay, hysteresis): median %.1f ms wall\n",
           median_ms(wall_state, passes));
    printf("findings per pass: %u, excluded GPUs: %u; store %.1f MiB\n", findings, excluded,
           sn_telem_store_memory_bytes(st) / 1048576.0);
    sn_health_state_free(state);
    sn_health_history_free(h);
    sn_telem_store_free(st);
    sn_model_free(m);
    sn_spec_free(spec);
    return 0;
}
