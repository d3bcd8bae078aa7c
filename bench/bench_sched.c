/*
 * Scheduler benchmarks (targets in issue 4, figures in docs/PERFORMANCE.md):
 *  1. one 8-GPU job on 100,000 GPUs (1,389 NVL72-like supernodes of 18 x 4
 *     GPUs) 70 % full and fragmented: median placement time;
 *  2. a 1,152-GPU gang (16 NVL72 supernodes, groups of 72) on the same
 *     cluster with 16 empty supernodes left;
 *  3. one full pass with 10,000 pending jobs on 100,000 GPUs (8-GPU HGX
 *     supernodes of 64) at 70 %;
 *  4. the expected-start projection (sn_sched_project_starts, GET
 *     /v1/scheduler/starts) of a 1,000-job queue on the same 100,000 GPUs
 *     after a pass, and of the first 1,000 of the 10,000-job queue;
 *  plus the scheduler's memory per GPU and per job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sn/sched.h>
#include <sn/sim.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static struct sn_sched *make(struct sn_sim_shape *sh, struct sn_spec **spec,
                             struct sn_model **model)
{
    struct sn_error err = {0};
    struct sn_sched *s = NULL;
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    if (sn_sim_shape_build(sh, spec, model, &err) != SN_OK ||
        sn_sched_create(*model, &cfg, &s, &err) != SN_OK) {
        fprintf(stderr, "bench: %s\n", err.message);
        exit(1);
    }
    return s;
}

static void end_job(struct sn_sched *s, uint32_t id, double now)
{
    if (sn_sched_finish(s, id, now, NULL) != SN_OK)
        exit(1);
}

static uint32_t submit(struct sn_sched *s, uint32_t gpus, uint32_t group)
{
    struct sn_job_spec j = {.gpus = gpus, .group_gpus = group, .walltime_s = 3600};
    uint32_t id;
    if (sn_sched_submit(s, &j, &id, NULL) != SN_OK)
        exit(1);
    return id;
}

/* Fills to ~70 % with jobs of 1..8 GPUs, then ends every fifth job: a
 * fragmented cluster. */
static void fragment(struct sn_sched *s, uint32_t gpus, uint64_t *rng)
{
    uint32_t used = 0, n = 0;
    while (used < gpus * 0.85) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t g = 1 + (uint32_t)((*rng >> 33) % 8);
        uint32_t id = submit(s, g, 1);
        if (!sn_sched_try_place(s, id, 0))
            break;
        used += g;
        n++;
    }
    for (uint32_t id = 0; id < n; id += 5)
        end_job(s, id, 1);
}

/* Times the projection of the first k pending jobs (median of 11 runs);
 * prints how many got a known start. */
static void bench_project(struct sn_sched *s, uint32_t k, const char *what)
{
    struct sn_sched_start *rows = malloc(k * sizeof(*rows));
    enum { R = 11 };
    double t[R];
    uint32_t n = 0, known = 0;
    for (int r = 0; r < R; r++) {
        double t0 = now_s();
        if (!rows || sn_sched_project_starts(s, 3, k, NULL, NULL, rows, &n, NULL) != SN_OK)
            exit(1);
        t[r] = now_s() - t0;
    }
    for (uint32_t i = 0; i < n; i++)
        known += rows[i].known;
    qsort(t, R, sizeof(double), cmp_d);
    struct sn_sched_stats st;
    sn_sched_stats(s, &st);
    printf("start projection, %s: %u of %u pending projected (%u known) against %u running: "
           "median %.2f ms, max %.2f ms\n",
           what, n, st.n_pending, known, st.n_running, t[R / 2] * 1e3, t[R - 1] * 1e3);
    free(rows);
}

int main(void)
{
    uint64_t rng = 42;
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1389;
    sh.servers = 18;
    sh.gpus_per_server = 4;
    sh.nics = 4;
    sh.leaves = 2;
    sh.scaleup_supernode = true;
    struct sn_sched *s = make(&sh, &spec, &model);
    fragment(s, model->n_gpus, &rng);
    struct sn_sched_stats st;
    sn_sched_stats(s, &st);
    printf("cluster: %u GPUs in %u supernodes, %.1f %% busy\n", model->n_gpus, model->n_supernodes,
           100.0 * st.gpus_busy / st.gpus_total);
    enum { N = 1001 };
    static double t[N];
    for (int i = 0; i < N; i++) {
        uint32_t id = submit(s, 8, 4);
        double t0 = now_s();
        bool ok = sn_sched_try_place(s, id, 0);
        t[i] = now_s() - t0;
        if (ok)
            end_job(s, id, 0);
    }
    qsort(t, N, sizeof(double), cmp_d);
    printf("8-GPU job placement on %u GPUs (70 %%, fragmented): median %.1f us, p99 %.1f us "
           "(target < 50 us)\n",
           model->n_gpus, t[N / 2] * 1e6, t[N * 99 / 100] * 1e6);
    /* 1,152-GPU gang: empty 16 supernodes first (end every job on them). */
    for (uint32_t sn = 0; sn < 16; sn++) {
        const struct sn_supernode *S = &model->supernodes[sn];
        for (uint32_t g = S->first_gpu; g < S->first_gpu + S->n_gpus; g++) {
            uint32_t o = sn_sched_gpu_owner(s, g);
            if (o != SN_NONE)
                end_job(s, o, 2);
        }
    }
    uint32_t gang = submit(s, 1152, 72);
    double t0 = now_s();
    bool ok = sn_sched_try_place(s, gang, 2);
    double dt = now_s() - t0;
    struct sn_job_info info;
    sn_sched_job_info(s, gang, &info);
    printf("1,152-GPU gang (groups of 72): %s on %u supernodes in %.3f ms (target < 5 ms)\n",
           ok ? "placed" : "NOT placed", info.n_supernodes, dt * 1e3);
    sn_sched_stats(s, &st);
    printf("memory: %zu bytes per GPU (target < 256), %zu bytes per job (target < 1024)\n",
           st.memory_per_gpu_bytes, st.memory_jobs_bytes / (st.n_jobs ? st.n_jobs : 1));
    sn_sched_destroy(s);
    sn_sim_shape_free(spec, model);

    /* Full pass: 10,000 pending jobs on 100,000 GPUs at 70 %. */
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1563; /* x 64 = 100,032 GPUs */
    s = make(&sh, &spec, &model);
    fragment(s, model->n_gpus, &rng);
    for (int i = 0; i < 10000; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        static const uint32_t sizes[] = {1, 2, 4, 8, 8, 16, 32, 64, 128, 256};
        uint32_t g = sizes[(rng >> 33) % 10];
        (void)submit(s, g, g < 8 ? g : 8);
    }
    sn_sched_stats(s, &st);
    uint32_t before = st.n_running;
    t0 = now_s();
    if (sn_sched_pass(s, 3, NULL) != SN_OK)
        return 1;
    dt = now_s() - t0;
    sn_sched_stats(s, &st);
    printf("full pass: %u pending on %u GPUs: %.1f ms, %u started (target < 100 ms)\n", 10000,
           model->n_gpus, dt * 1e3, st.n_running - before);
    bench_project(s, 1000, "first 1,000 of the 10,000-job queue");
    sn_sched_destroy(s);
    sn_sim_shape_free(spec, model);

    /* The projection of a 1,000-job queue (the cap of GET
     * /v1/scheduler/starts, SN_CONTROL_STARTS_MAX) on 100,032 GPUs: jobs
     * submitted and passes run until at least 1,000 wait. */
    s = make(&sh, &spec, &model);
    fragment(s, model->n_gpus, &rng);
    do {
        for (int i = 0; i < 100; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            static const uint32_t sizes[] = {1, 2, 4, 8, 8, 16, 32, 64, 128, 256};
            uint32_t g = sizes[(rng >> 33) % 10];
            (void)submit(s, g, g < 8 ? g : 8);
        }
        if (sn_sched_pass(s, 3, NULL) != SN_OK)
            return 1;
        sn_sched_stats(s, &st);
    } while (st.n_pending < 1000);
    bench_project(s, 1000, "1,000-job queue");
    sn_sched_destroy(s);
    sn_sim_shape_free(spec, model);
    return 0;
}
