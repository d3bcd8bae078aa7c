/*
 * Simulator benchmarks (targets in issue 4): replay Microsoft ITP
 * cluster04 (15,802 jobs) on 640 GPUs and all of Helios Venus (125,303
 * jobs) on 1,080 GPUs, supernode-first, failures on. Traces are read from
 * SN_TRACES_DIR (default ../shared/traces, run from the repository root).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <sn/sim.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int replay(const char *name, enum sn_trace_kind kind, const char *rel, uint32_t sns,
                  uint32_t servers, double target_s)
{
    const char *dir = getenv("SN_TRACES_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "../shared/traces", rel);
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = sns;
    sh.servers = servers;
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_sim_workload w;
    struct sn_sim_result *r;
    struct sn_error err = {0};
    if (sn_sim_shape_build(&sh, &spec, &model, &err) != SN_OK) {
        fprintf(stderr, "bench_sim: %s\n", err.message);
        return 1;
    }
    double t0 = now_s();
    if (sn_sim_trace_load(kind, path, 0, 8, &w, &err) != SN_OK) {
        fprintf(stderr, "bench_sim: skipped %s: %s\n", name, err.message);
        sn_sim_shape_free(spec, model);
        return 0;
    }
    double t1 = now_s();
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    if (sn_sim_run(model, &w, &cfg, &r, &err) != SN_OK) {
        fprintf(stderr, "bench_sim: %s\n", err.message);
        return 1;
    }
    double t2 = now_s();
    printf("%s: %u jobs on %u GPUs, failures on: load %.3f s + replay %.3f s = %.3f s "
           "(target < %.0f s); %u finished, %llu interruptions\n",
           name, w.n_jobs, model->n_gpus, t1 - t0, t2 - t1, t2 - t0, target_s, r->jobs_done,
           (unsigned long long)r->interruptions);
    sn_sim_result_free(r);
    sn_sim_workload_release(&w);
    sn_sim_shape_free(spec, model);
    return 0;
}

int main(void)
{
    int rc = replay("ITP cluster04", SN_TRACE_ITP, "microsoft-itp/cluster04.csv", 10, 8, 1);
    rc |=
        replay("Helios Venus", SN_TRACE_HELIOS, "helios-venus/helios_venus_gpu_jobs.csv", 15, 9, 5);
    return rc;
}
