/*
 * Unit tests of lib/sim: the failure defaults, determinism, conservation of
 * work, the checkpoint policies (hand-computed completion times), the
 * trace loaders on the real traces (skipped when SN_TRACES_DIR is absent)
 * and bad trace input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <sn/sim.h>

#include "sn_test.h"

struct cluster {
    struct sn_spec *spec;
    struct sn_model *model;
};

static void cluster_open(struct cluster *c, uint32_t supernodes)
{
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = supernodes;
    struct sn_error err = {0};
    if (sn_sim_shape_build(&sh, &c->spec, &c->model, &err) != SN_OK)
        fail_msg("%s", err.message);
}

static struct sn_sim_result *run(struct cluster *c, const struct sn_sim_workload *w,
                                 const struct sn_sim_config *cfg)
{
    struct sn_sim_result *r;
    struct sn_error err = {0};
    if (sn_sim_run(c->model, w, cfg, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    return r;
}

/* Llama 3 405B: 419 interruptions / (54 d x 24 h x 16,384 GPUs). */
static void failure_defaults(void **state)
{
    (void)state;
    struct sn_sim_failure_model fm;
    sn_sim_failure_defaults(&fm);
    assert_rel(fm.per_gpu_hour, 1.9734e-5, 1e-3);
    double sum = 0;
    for (int c = 0; c < SN_FAIL_CLASS_COUNT; c++)
        sum += fm.fraction[c];
    assert_near(sum, 1.0, 1e-12);
    assert_near(fm.fraction[SN_FAIL_GPU], 0.587, 1e-12);
    assert_near(fm.fraction[SN_FAIL_NETWORK], 0.084, 1e-12);
    /* hardware share: 78 % */
    assert_near(1 - fm.fraction[SN_FAIL_SOFTWARE], 0.78, 1e-12);
}

/* Same seed, same results; all useful work is conserved. */
static void deterministic_and_conserving(void **state)
{
    (void)state;
    struct cluster c;
    cluster_open(&c, 4);
    struct sn_sim_workload w;
    assert_int_equal(sn_sim_synth(400, 4, 7, &w, NULL), SN_OK);
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.fm.per_gpu_hour *= 200; /* enough failures to matter on 256 GPUs */
    cfg.fm.slow_per_gpu_hour *= 200;
    struct sn_sim_result *a = run(&c, &w, &cfg), *b = run(&c, &w, &cfg);
    assert_int_equal(a->jobs_done, 400);
    assert_true(a->interruptions > 0);
    assert_true(a->lost_gpu_h > 0);
    assert_int_equal(a->interruptions, b->interruptions);
    assert_memory_equal(a->jct, b->jct, sizeof(a->jct));
    assert_int_equal(a->n_samples, b->n_samples);
    assert_memory_equal(a->samples, b->samples, a->n_samples * sizeof(double));
    assert_memory_equal(a->pending_reasons, b->pending_reasons, sizeof(a->pending_reasons));
    double work = 0;
    for (uint32_t i = 0; i < w.n_jobs; i++)
        work += w.jobs[i].duration_s * w.jobs[i].gpus;
    assert_rel(a->useful_gpu_h, work / 3600, 1e-9);
    assert_true(a->busy_gpu_h > a->useful_gpu_h + a->lost_gpu_h - 1e-6);
    cfg.seed = 8;
    struct sn_sim_result *d = run(&c, &w, &cfg);
    assert_true(d->interruptions != a->interruptions || d->jct[0].mean != a->jct[0].mean);
    sn_sim_result_free(a);
    sn_sim_result_free(b);
    sn_sim_result_free(d);
    sn_sim_workload_release(&w);
    sn_sim_shape_free(c.spec, c.model);
}

/* One 8-GPU job of 36,000 s, no failures. Fixed checkpoints every 3,600 s
 * of work costing 60 s: JCT = 36,000 x 3,660 / 3,600 = 36,600 s and
 * goodput 3,600 / 3,660. Young/Daly: tau = sqrt(2 x 60 / lambda) with
 * lambda = 8 x 419 / (54 x 24 x 16,384 x 3,600) per second. */
static void checkpoint_policies(void **state)
{
    (void)state;
    struct cluster c;
    cluster_open(&c, 1);
    struct sn_sim_job job = {.submit_s = 0, .duration_s = 36000, .gpus = 8, .group_gpus = 8};
    struct sn_sim_workload w = {.n_jobs = 1, .jobs = &job, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.failures = false;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_near(r->jct[0].mean, 36600, 1e-6);
    assert_near(r->goodput, 3600.0 / 3660.0, 1e-12);
    assert_near(r->utilisation, 8.0 / 64.0, 1e-12);
    sn_sim_result_free(r);
    cfg.ckpt = SN_CKPT_YOUNG_DALY;
    r = run(&c, &w, &cfg);
    double lambda = 8 * 419.0 / (54.0 * 24 * 16384 * 3600);
    double tau = sqrt(2 * 60 / lambda);
    assert_near(r->jct[0].mean, 36000 * (tau + 60) / tau, 1e-6);
    sn_sim_result_free(r);
    sn_sim_shape_free(c.spec, c.model);
}

static const char *traces(char *buf, size_t len, const char *rel)
{
    const char *dir = getenv("SN_TRACES_DIR");
    if (!dir)
        return NULL;
    snprintf(buf, len, "%s/%s", dir, rel);
    FILE *f = fopen(buf, "r");
    if (!f)
        return NULL;
    fclose(f);
    return buf;
}

/* Sizes from /work/shared/traces/README.md: cluster04 has 15,802 jobs,
 * 11,924 of 1 GPU, 2,779 of 8 and 6 of 64; Helios Venus 125,303 jobs,
 * 30,993 of 8 GPUs and 470 of 128. */
static void trace_loaders(void **state)
{
    (void)state;
    char path[4096];
    if (!traces(path, sizeof(path), "microsoft-itp/cluster04.csv")) {
        print_message("skipped: SN_TRACES_DIR has no microsoft-itp/cluster04.csv\n");
        skip();
    }
    struct sn_sim_workload w;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_trace_load(SN_TRACE_ITP, path, 0, 8, &w, &err), SN_OK);
    assert_int_equal(w.n_jobs, 15802);
    uint32_t hist[65] = {0};
    for (uint32_t i = 0; i < w.n_jobs; i++)
        if (w.jobs[i].gpus <= 64)
            hist[w.jobs[i].gpus]++;
    assert_int_equal(hist[1], 11924);
    assert_int_equal(hist[8], 2779);
    assert_int_equal(hist[64], 6);
    assert_int_equal(w.jobs[0].submit_s, 5810);
    assert_int_equal(w.jobs[0].group_gpus, 8); /* 16 GPUs: groups of 8 */
    sn_sim_workload_release(&w);
    assert_int_equal(sn_sim_trace_load(SN_TRACE_ITP, path, 100, 8, &w, &err), SN_OK);
    assert_int_equal(w.n_jobs, 100);
    sn_sim_workload_release(&w);
    if (traces(path, sizeof(path), "helios-venus/helios_venus_gpu_jobs.csv")) {
        assert_int_equal(sn_sim_trace_load(SN_TRACE_HELIOS, path, 0, 8, &w, &err), SN_OK);
        assert_int_equal(w.n_jobs, 125303);
        uint32_t n8 = 0, n128 = 0;
        for (uint32_t i = 0; i < w.n_jobs; i++) {
            n8 += w.jobs[i].gpus == 8;
            n128 += w.jobs[i].gpus == 128;
        }
        assert_int_equal(n8, 30993);
        assert_int_equal(n128, 470);
        sn_sim_workload_release(&w);
    }
    if (traces(path, sizeof(path), "alibaba-openb-2023/openb_pod_list_default.csv")) {
        assert_int_equal(sn_sim_trace_load(SN_TRACE_OPENB, path, 0, 8, &w, &err), SN_OK);
        /* 8,152 pods; 1,088 have no GPU and are among the skipped */
        assert_int_equal(w.n_jobs + w.skipped, 8152);
        assert_true(w.skipped >= 1088);
        for (uint32_t i = 0; i < w.n_jobs; i++)
            assert_true(w.jobs[i].gpus >= 1 && w.jobs[i].gpus <= 8 && w.jobs[i].tenant < 4);
        sn_sim_workload_release(&w);
    }
}

static void bad_trace(void **state)
{
    (void)state;
    char path[] = "/tmp/sn-test-sim-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("job_id,submission_time,duration,num_gpu\na,1,10,1\nb,2,x,1\n", f);
    fclose(f);
    struct sn_sim_workload w;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_trace_load(SN_TRACE_ITP, path, 0, 8, &w, &err), SN_ERR_SYNTAX);
    assert_non_null(strstr(err.message, ":3: field 'duration' is 'x'"));
    sn_error_clear(&err);
    assert_int_equal(sn_sim_trace_load(SN_TRACE_HELIOS, "/nonexistent", 0, 8, &w, &err), SN_ERR_IO);
    assert_int_equal(sn_sim_trace_load(SN_TRACE_SYNTH, "12x", 0, 8, &w, NULL), SN_ERR_INVALID);
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(failure_defaults),    cmocka_unit_test(deterministic_and_conserving),
        cmocka_unit_test(checkpoint_policies), cmocka_unit_test(trace_loaders),
        cmocka_unit_test(bad_trace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
