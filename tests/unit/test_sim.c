/*
 * Unit tests of lib/sim: the failure defaults, determinism, conservation of
 * work, the checkpoint policies (hand-computed completion times), the
 * trace loaders on the real traces (skipped when SN_TRACES_DIR is absent)
 * and bad trace input; then the control engine (lib/control driven with
 * virtual time, its invariants checked after every event): the same work
 * as the sched engine without failures, quotas, TP groups, host and GPU
 * failures, software faults.
 */
#include <math.h>
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

/* The communication model on the shape's hardware, from the cluster spec
 * through the planner: H100-class GPUs with 18 NVLink links of 25 GB/s per
 * direction (450 GB/s) x scale-up efficiency 0.80 = 360 GB/s bus bandwidth;
 * 8 x 400 Gb/s NICs per 8-GPU server = 50 GB/s per GPU x fabric efficiency
 * 0.75 = 37.5 GB/s. Default profile: 10 % TP, 5 % DP. Hand-computed:
 *  - an 8-GPU group split over two servers: TP moves at 37.5 instead of
 *    360 GB/s, step = 0.90 + 0.10 x 360 / 37.5 = 1.86, rate 1 / 1.86;
 *  - the same split inside an NVL72-like supernode (one scale-up domain of
 *    64 GPUs): rate 1;
 *  - two 8-GPU groups in two supernodes, HGX: DP already runs at scale-out
 *    speed, rate 1; with its uplinks at half share: step = 0.85 + 0.10 +
 *    0.05 x 2 = 1.05;
 *  - the same on NVL72 supernodes: DP leaves the scale-up domain, step =
 *    0.85 + 0.10 + 0.05 x 9.6 = 1.43. */
static void comm_model_rates(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    struct sn_spec *spec;
    struct sn_model *m;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_shape_build(&sh, &spec, &m, &err), SN_OK);
    struct sn_sim_comm_hw hgx, nvl;
    assert_int_equal(sn_sim_comm_hw(m, 0, &hgx, &err), SN_OK);
    sn_sim_shape_free(spec, m);
    assert_int_equal(hgx.scaleup_gpus, 8);
    assert_int_equal(hgx.supernode_gpus, 64);
    assert_near(hgx.scaleup_busbw, 360e9, 1);
    assert_near(hgx.scaleout_busbw, 37.5e9, 1);
    sh.scaleup_supernode = true;
    assert_int_equal(sn_sim_shape_build(&sh, &spec, &m, &err), SN_OK);
    assert_int_equal(sn_sim_comm_hw(m, 0, &nvl, &err), SN_OK);
    sn_sim_shape_free(spec, m);
    assert_int_equal(nvl.scaleup_gpus, 64);

    struct sn_sim_comm_profile p;
    sn_sim_comm_defaults(&p);
    struct sn_sim_layout l = {.gpus = 8, .group_gpus = 8, .uplink_share = 1};
    assert_near(sn_sim_comm_rate(&p, &hgx, &l), 1.0, 1e-12);
    l.group_out_scaleup = true;
    assert_near(sn_sim_comm_rate(&p, &hgx, &l), 1 / 1.86, 1e-12);
    l.group_out_scaleup = false; /* NVL72: a split over servers stays inside */
    assert_near(sn_sim_comm_rate(&p, &nvl, &l), 1.0, 1e-12);
    struct sn_sim_layout x = {.gpus = 16, .group_gpus = 8, .job_cross_sn = true, .uplink_share = 1};
    assert_near(sn_sim_comm_rate(&p, &hgx, &x), 1.0, 1e-12);
    x.uplink_share = 0.5;
    assert_near(sn_sim_comm_rate(&p, &hgx, &x), 1 / 1.05, 1e-12);
    x.uplink_share = 1;
    assert_near(sn_sim_comm_rate(&p, &nvl, &x), 1 / 1.43, 1e-12);
    p.tp_fraction = p.dp_fraction = 0; /* the flags switch the model off */
    assert_near(sn_sim_comm_rate(&p, &hgx, &l), 1.0, 1e-12);
}

/* In the simulator: under first-fit, an 8-GPU job placed after a 4-GPU
 * one splits its group over two servers and runs 1.86 times longer on HGX
 * servers (3,600 s of work, no checkpoints: JCT 6,696 s), and not at all
 * longer on an NVL72-like supernode; supernode-first does not split it. */
static void comm_model_in_sim(void **state)
{
    (void)state;
    struct sn_sim_job jobs[2] = {{.submit_s = 0, .duration_s = 1e5, .gpus = 4, .group_gpus = 4},
                                 {.submit_s = 1, .duration_s = 3600, .gpus = 8, .group_gpus = 8}};
    struct sn_sim_workload w = {.n_jobs = 2, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.failures = false;
    cfg.ckpt_fixed_s = 0;
    cfg.sched.policy = SN_SCHED_FIRST_FIT;
    double want[3] = {3600 * 1.86, 3600, 3600};
    for (int k = 0; k < 3; k++) {
        struct sn_sim_shape sh;
        sn_sim_shape_defaults(&sh);
        sh.supernodes = 1;
        sh.scaleup_supernode = k == 1;
        if (k == 2)
            cfg.sched.policy = SN_SCHED_SUPERNODE_FIRST;
        struct cluster c;
        struct sn_error err = {0};
        assert_int_equal(sn_sim_shape_build(&sh, &c.spec, &c.model, &err), SN_OK);
        struct sn_sim_result *r = run(&c, &w, &cfg);
        assert_int_equal(r->groups_split, k == 0 ? 1 : k == 1 ? 1 : 0);
        /* JCTs sorted: the 8-GPU job is the shorter one */
        assert_near(r->jct_sorted[0], want[k], 1e-6);
        sn_sim_result_free(r);
        sn_sim_shape_free(c.spec, c.model);
    }
}

/* Uplink load is re-rated when it changes. First-fit on 3 supernodes of 2
 * servers: job 0 (8 GPUs) fills server 0; job A (16 GPUs, groups of 8)
 * takes servers 1 and 2 and spans supernodes 0 and 1; at t = 1,000 s job
 * B (16 GPUs) takes servers 3 and 4, spanning supernodes 1 and 2, and
 * shares supernode 1's leaves with A. The cross-supernode bandwidth is set
 * so that A alone fills its busiest leaf exactly (share 1, rate 1); with B
 * there, A's rate drops to 1 / (0.95 + 0.05 / share) with share =
 * capacity / load of its busiest leaf, recomputed from the model here. */
static void uplink_load_rerates(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 3;
    sh.servers = 2;
    struct cluster c;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_shape_build(&sh, &c.spec, &c.model, &err), SN_OK);
    const struct sn_model *m = c.model;
    uint32_t load_a[64] = {0}, load_ab[64] = {0};
    for (uint32_t g = 8; g < 24; g++) {
        load_a[m->gpu_leaf[g]]++;
        load_ab[m->gpu_leaf[g]]++;
    }
    for (uint32_t g = 24; g < 40; g++)
        load_ab[m->gpu_leaf[g]]++;
    double worst_a = 0, share = 1;
    for (uint32_t g = 8; g < 24; g++) {
        uint32_t leaf = m->gpu_leaf[g];
        double cap = m->leaf_uplinks[leaf] * sn_model_switch_spec(m, leaf)->port_bytes_per_s;
        worst_a = fmax(worst_a, load_a[leaf] / cap);
    }
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.failures = false;
    cfg.ckpt_fixed_s = 0;
    cfg.sched.policy = SN_SCHED_FIRST_FIT;
    cfg.xsn_bytes_per_s = 1 / worst_a; /* A alone: load = capacity on its busiest leaf */
    for (uint32_t g = 8; g < 24; g++) {
        uint32_t leaf = m->gpu_leaf[g];
        double cap = m->leaf_uplinks[leaf] * sn_model_switch_spec(m, leaf)->port_bytes_per_s;
        share = fmin(share, fmin(1, cap / (load_ab[leaf] * cfg.xsn_bytes_per_s)));
    }
    assert_true(share < 0.99); /* the scenario does oversubscribe */
    struct sn_sim_job jobs[3] = {
        {.submit_s = 0, .duration_s = 1e6, .gpus = 8, .group_gpus = 8},
        {.submit_s = 0, .duration_s = 5000, .gpus = 16, .group_gpus = 8},
        {.submit_s = 1000, .duration_s = 1e6, .gpus = 16, .group_gpus = 8}};
    struct sn_sim_workload w = {.n_jobs = 3, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_result *r = run(&c, &w, &cfg);
    double rate2 = 1 / (0.95 + 0.05 / share);
    assert_near(r->jct_sorted[0], 1000 + 4000 / rate2, 1e-6);
    assert_true(r->jct_sorted[0] > 5000 + 1);
    sn_sim_result_free(r);
    sn_sim_shape_free(c.spec, c.model);
}

/* Spares in the simulator: one 8-GPU job on one supernode of 64 GPUs with
 * 8 spares, GPU failures only, at a rate that hits its GPUs several times.
 * Every interruption is handled in place (the job never leaves the
 * supernode, and there is always a free GPU), and all its work is kept;
 * without spares none is. */
static void spares_in_sim(void **state)
{
    (void)state;
    struct cluster c;
    cluster_open(&c, 1);
    struct sn_sim_job job = {.submit_s = 0, .duration_s = 2e6, .gpus = 8, .group_gpus = 8};
    struct sn_sim_workload w = {.n_jobs = 1, .jobs = &job, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.fm.per_gpu_hour *= 500;
    cfg.fm.slow_per_gpu_hour = 0;
    for (int k = 0; k < SN_FAIL_CLASS_COUNT; k++)
        cfg.fm.fraction[k] = k == SN_FAIL_GPU;
    cfg.sched.spare_gpus_per_supernode = 8;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_true(r->interruptions >= 3);
    assert_int_equal(r->replacements, r->interruptions);
    assert_rel(r->useful_gpu_h, 2e6 * 8 / 3600, 1e-9);
    sn_sim_result_free(r);
    cfg.sched.spare_gpus_per_supernode = 0;
    r = run(&c, &w, &cfg);
    assert_true(r->interruptions >= 3);
    assert_int_equal(r->replacements, 0);
    sn_sim_result_free(r);
    sn_sim_shape_free(c.spec, c.model);
}

/* Tenant quotas in the simulator: one tenant with a quota of 8 GPUs, two
 * 8-GPU jobs of 1,000 s submitted together on 64 free GPUs (no failures,
 * no checkpoints): the second waits for the first, JCTs 1,000 and 2,000 s;
 * without the quota both take 1,000 s. */
static void quota_in_sim(void **state)
{
    (void)state;
    struct cluster c;
    cluster_open(&c, 1);
    struct sn_sim_job jobs[2] = {{.submit_s = 0, .duration_s = 1000, .gpus = 8, .group_gpus = 8},
                                 {.submit_s = 0, .duration_s = 1000, .gpus = 8, .group_gpus = 8}};
    struct sn_sim_workload w = {.n_jobs = 2, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.failures = false;
    cfg.ckpt_fixed_s = 0;
    cfg.tenants = 1;
    cfg.quota_gpus = 8;
    cfg.sample_s = 100; /* samples the pending reasons while the second waits */
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_near(r->jct_sorted[0], 1000, 1e-9);
    assert_near(r->jct_sorted[1], 2000, 1e-9);
    assert_true(r->pending_reasons[SN_PENDING_QUOTA] > 0);
    sn_sim_result_free(r);
    cfg.quota_gpus = 0;
    r = run(&c, &w, &cfg);
    assert_near(r->jct_sorted[1], 1000, 1e-9);
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

/* Pools with borrowing stay bounded: 10 supernodes of 64 GPUs as pools
 * dedicated:2, mixed:6, elastic:2, every pool borrowing every other, 8
 * tenants with 256 GPUs each, 8 spares per supernode (the setting of
 * docs/simulator.md's pool comparison). The documented bound
 * (docs/scheduler.md) is at most one preemption per job on a workload;
 * priority preemption on borrowed capacity made 23,122 for 1,000 synthetic
 * jobs and 61,531 for the first 3,000 jobs of ITP cluster04. */
static void pools_preemption_bounded(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 10;
    sh.n_groups = 3;
    sh.groups[0].count = 2;
    sh.groups[0].kind = SN_POOL_DEDICATED;
    sh.groups[1].count = 6;
    sh.groups[1].kind = SN_POOL_MIXED;
    sh.groups[2].count = 2;
    sh.groups[2].kind = SN_POOL_ELASTIC;
    struct cluster c;
    struct sn_error err = {0};
    if (sn_sim_shape_build(&sh, &c.spec, &c.model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.borrow = true;
    cfg.quota_gpus = 256;
    cfg.sched.spare_gpus_per_supernode = 8;
    struct sn_sim_workload w;
    assert_int_equal(sn_sim_synth(1000, 8, 1, &w, NULL), SN_OK);
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_int_equal(r->jobs_done, 1000);
    assert_true(r->preemptions > 0); /* reclaims still happen */
    assert_true(r->preemptions <= w.n_jobs);
    sn_sim_result_free(r);
    /* The control engine with cooperative preemption (a 120 s grace, a
     * just-in-time checkpoint half the time), every invariant checked after
     * every event (the core's signalled victims and their preemptors'
     * counts among them): the same bound holds. */
    struct sn_sim_config cc = cfg;
    cc.engine = SN_SIM_ENGINE_CONTROL;
    cc.check_invariants = true;
    cc.preempt_grace_s = 120;
    cc.preempt_ckpt_p = 0.5;
    r = run(&c, &w, &cc);
    assert_int_equal(r->jobs_done + r->jobs_unfinished, 1000);
    assert_true(r->preemptions > 0);
    assert_true(r->preemptions <= w.n_jobs);
    sn_sim_result_free(r);
    sn_sim_workload_release(&w);
    char path[4096];
    if (traces(path, sizeof(path), "microsoft-itp/cluster04.csv")) {
        assert_int_equal(sn_sim_trace_load(SN_TRACE_ITP, path, 3000, 8, &w, &err), SN_OK);
        r = run(&c, &w, &cfg);
        assert_int_equal(r->jobs_done, 3000);
        assert_true(r->preemptions > 0);
        assert_true(r->preemptions <= w.n_jobs);
        sn_sim_result_free(r);
        sn_sim_workload_release(&w);
    } else {
        print_message("ITP slice skipped: SN_TRACES_DIR has no microsoft-itp/cluster04.csv\n");
    }
    sn_sim_shape_free(c.spec, c.model);
}

/* The Crux topology on the real file (/work/shared/traces/README.md): 847
 * hosts, 3 PSWs, 119 ToR groups (68 of 8 hosts). PSW ToR counts are P10 48,
 * P12 42, P8 29, hosts 362, 306, 179 (awk over the PSW column). Pods are
 * 48 leaves; P12 splits 6 of its ToR groups and P8 19 into two leaves, so
 * 144 leaves make 3 pods and each pod is exactly one PSW's ToR groups; at
 * 1:1 a pod's spine-to-core capacity is its hosts' NICs: 362 x 8 x 50 GB/s
 * = 144.8 TB/s, 306 x 400 = 122.4 TB/s, 179 x 400 = 71.6 TB/s. The
 * cluster: 119 supernodes, 6,776 GPUs, a 3-tier fabric; a 64-GPU job runs
 * in one ToR group (8 hosts) in the simulator. */
static void crux_topology(void **state)
{
    (void)state;
    char path[4096];
    if (!traces(path, sizeof(path), "alibaba-crux-2023/topo.csv")) {
        print_message("skipped: SN_TRACES_DIR has no alibaba-crux-2023/topo.csv\n");
        skip();
    }
    struct sn_sim_crux crux;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_crux_load(path, &crux, &err), SN_OK);
    assert_int_equal(crux.hosts, 847);
    assert_int_equal(crux.psws, 3);
    assert_int_equal(crux.tors, 119);
    uint32_t eight = 0, per_psw[3] = {0};
    for (uint32_t t = 0; t < crux.tors; t++) {
        eight += crux.tor_hosts[t] == 8;
        per_psw[crux.tor_psw[t]]++;
    }
    assert_int_equal(eight, 68);
    assert_int_equal(per_psw[0], 48); /* P10 sorts first */
    assert_int_equal(per_psw[1], 42);
    assert_int_equal(per_psw[2], 29);
    struct cluster c;
    assert_int_equal(sn_sim_crux_build(&crux, &c.spec, &c.model, &err), SN_OK);
    assert_int_equal(c.model->n_supernodes, 119);
    assert_int_equal(c.model->n_gpus, 847 * 8);
    assert_true(c.model->n_cores > 0);
    struct sn_sched *s;
    struct sn_sched_config sc;
    sn_sched_config_defaults(&sc);
    assert_int_equal(sn_sched_create(c.model, &sc, &s, &err), SN_OK);
    assert_int_equal(sn_model_domain_count(c.model, SN_DOMAIN_LEAF), 144);
    for (uint32_t sn = 0; sn < crux.tors; sn++)
        assert_int_equal(sn_sched_supernode_pod(s, sn), crux.tor_psw[sn]);
    const double pod_cap[3] = {144.8e12, 122.4e12, 71.6e12};
    for (uint32_t p = 0; p < 3; p++) {
        double cap;
        sn_sched_pod_load(s, p, &cap);
        assert_rel(cap, pod_cap[p], 1e-12);
    }
    assert_int_equal(sn_sched_supernode_pod(s, 119), SN_NONE);
    sn_sched_destroy(s);
    struct sn_sim_job job = {.submit_s = 0, .duration_s = 3600, .gpus = 64, .group_gpus = 8};
    struct sn_sim_workload w = {.n_jobs = 1, .jobs = &job, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.failures = false;
    cfg.ckpt_fixed_s = 0;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_near(r->jct_sorted[0], 3600, 1e-6);
    sn_sim_result_free(r);
    sn_sim_crux_spec_free(c.spec, c.model);
    sn_sim_crux_free(&crux);
    assert_int_equal(sn_sim_crux_parse("t", "ip,DSW,PSW,ASW\na,G,P\n", 21, &crux, &err),
                     SN_ERR_SYNTAX);
    assert_non_null(strstr(err.message, "t:2: expected"));
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

/* ---- the control engine (lib/sim/sim_control.c) ---------------------------- */

/* Failure-free, both engines finish every job of the same synthetic
 * workload and keep all of its work: 400 jobs, 4 supernodes, useful
 * GPU-hours = sum of duration x GPUs over the workload. The control
 * engine is deterministic too. */
static void control_matches_sched_failure_free(void **state)
{
    (void)state;
    struct cluster c;
    cluster_open(&c, 4);
    struct sn_sim_workload w;
    assert_int_equal(sn_sim_synth(400, 4, 7, &w, NULL), SN_OK);
    double work_gpu_h = 0;
    for (uint32_t i = 0; i < w.n_jobs; i++)
        work_gpu_h += w.jobs[i].duration_s * w.jobs[i].gpus / 3600;
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.failures = false;
    cfg.check_invariants = true; /* both engines, after every event */
    struct sn_sim_result *a = run(&c, &w, &cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    struct sn_sim_result *b = run(&c, &w, &cfg), *b2 = run(&c, &w, &cfg);
    assert_int_equal(a->jobs_done, 400);
    assert_int_equal(b->jobs_done, a->jobs_done);
    assert_int_equal(b->jobs_failed, 0);
    assert_int_equal(b->interruptions, 0);
    assert_rel(a->useful_gpu_h, work_gpu_h, 1e-9);
    assert_rel(b->useful_gpu_h, work_gpu_h, 1e-9);
    assert_near(b->lost_gpu_h, 0, 1e-9);
    assert_int_equal(b->n_jct, b2->n_jct);
    for (uint32_t i = 0; i < b->n_jct; i++)
        assert_true(b->jct_sorted[i] == b2->jct_sorted[i]);
    sn_sim_result_free(a);
    sn_sim_result_free(b);
    sn_sim_result_free(b2);
    sn_sim_workload_release(&w);
    sn_sim_shape_free(c.spec, c.model);
}

/* Quotas are control rules: one tenant, two 8-GPU jobs of 1,000 s
 * submitted together on one free 64-GPU supernode. With a per-supernode
 * limit of 8 GPUs (the tenant's limits, no pools) or a GPU quota of 8 in
 * the supernode's pool (mixed0), the second waits for the first: JCTs
 * 1,000 and 2,000 s, with quota pending reasons sampled meanwhile;
 * without either both take 1,000 s. A GPU quota on a cluster without pools
 * is refused: lib/control has quotas per tenant and pool only. */
static void control_quota_holds(void **state)
{
    (void)state;
    struct sn_sim_job jobs[2] = {{.submit_s = 0, .duration_s = 1000, .gpus = 8, .group_gpus = 8},
                                 {.submit_s = 0, .duration_s = 1000, .gpus = 8, .group_gpus = 8}};
    struct sn_sim_workload w = {.n_jobs = 2, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.failures = false;
    cfg.ckpt_fixed_s = 0;
    cfg.tenants = 1;
    cfg.sample_s = 100;
    struct cluster c;
    cluster_open(&c, 1);
    cfg.quota_gpus_per_supernode = 8;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_near(r->jct_sorted[0], 1000, 1e-9);
    assert_near(r->jct_sorted[1], 2000, 1e-9);
    assert_true(r->pending_reasons[SN_PENDING_QUOTA_SUPERNODE] > 0);
    sn_sim_result_free(r);
    cfg.quota_gpus_per_supernode = 0;
    r = run(&c, &w, &cfg);
    assert_near(r->jct_sorted[1], 1000, 1e-9);
    sn_sim_result_free(r);
    cfg.quota_gpus = 8;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_run(c.model, &w, &cfg, &r, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "needs pools"));
    sn_sim_shape_free(c.spec, c.model);

    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    sh.n_groups = 1;
    sh.groups[0].count = 1;
    sh.groups[0].kind = SN_POOL_MIXED;
    assert_int_equal(sn_sim_shape_build(&sh, &c.spec, &c.model, &err), SN_OK);
    assert_string_equal(c.spec->pools[0].name, "mixed0");
    r = run(&c, &w, &cfg);
    assert_near(r->jct_sorted[0], 1000, 1e-9);
    assert_near(r->jct_sorted[1], 2000, 1e-9);
    assert_true(r->pending_reasons[SN_PENDING_QUOTA] > 0);
    sn_sim_result_free(r);
    sn_sim_shape_free(c.spec, c.model);
}

/* Job shapes in the control engine: on 2 supernodes of 64 GPUs, a 16-GPU
 * job takes part of one, then a 96-GPU job in TP groups of 24 must span
 * both, each group inside one supernode (snd's rule: a group stays in one
 * supernode); a job whose group of 128 GPUs fits no supernode is refused
 * by the core and never starts. */
static void control_groups_stay_in_supernodes(void **state)
{
    (void)state;
    struct cluster c;
    cluster_open(&c, 2);
    struct sn_sim_job jobs[3] = {
        {.submit_s = 0, .duration_s = 5000, .gpus = 16, .group_gpus = 8},
        {.submit_s = 10, .duration_s = 3000, .gpus = 96, .group_gpus = 24},
        {.submit_s = 20, .duration_s = 100, .gpus = 128, .group_gpus = 128},
    };
    struct sn_sim_workload w = {.n_jobs = 3, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.failures = false;
    cfg.comm.tp_fraction = cfg.comm.dp_fraction = 0;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_int_equal(r->jobs_done, 2);
    assert_int_equal(r->groups_cross, 0);
    assert_int_equal(r->groups_split, 0);
    assert_false(isnan(r->job_start_s[1]));
    assert_true(isnan(r->job_start_s[2]));
    /* The 96-GPU job's first run used servers of both supernodes. */
    uint32_t sn_seen[2] = {0, 0};
    for (uint32_t k = r->job_servers_off[1]; k < r->job_servers_off[2]; k++)
        sn_seen[c.model->server_supernode[r->job_servers[k]]]++;
    assert_true(sn_seen[0] > 0 && sn_seen[1] > 0);
    assert_int_equal(sn_seen[0] + sn_seen[1], 12);
    sn_sim_result_free(r);
    sn_sim_shape_free(c.spec, c.model);
}

/* Host failures in the control engine: the agent goes silent, and what
 * follows is snd's partition rule. Two servers of 8 GPUs, one 8-GPU job of
 * 36,000 s (36,600 s without failures: a 60 s checkpoint every 3,600 s),
 * only host failures at 500 x the default rate. Among seeds, the runs with
 * exactly one failure, on the job's server (one interruption):
 *  - fence off (partition_share_pct 100): the timer ticks every 10 s
 *    (heartbeat_timeout_s / 3), the server is silent past 30 s at +40 s,
 *    past the 5 s window too, so declared lost then and the job requeued
 *    onto the other server: JCT = 36,600 + lost work (under one interval,
 *    3,660 s) + 40 s + the 300 s restart;
 *  - fence on (snd's default 10 %: 1 of 2 servers is 50 %): nothing is
 *    evicted; the job stalls until its host is repaired (8 h) and the agent
 *    reports its rank lost: JCT >= 36,600 + 28,800 + 300. */
static void control_host_failure_requeues(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    sh.servers = 2;
    struct cluster c;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_shape_build(&sh, &c.spec, &c.model, &err), SN_OK);
    struct sn_sim_job job = {.submit_s = 0, .duration_s = 36000, .gpus = 8, .group_gpus = 8};
    struct sn_sim_workload w = {.n_jobs = 1, .jobs = &job, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.failures = false;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_near(r->jct[0].mean, 36600, 1e-6);
    sn_sim_result_free(r);
    cfg.failures = true;
    cfg.fm.per_gpu_hour *= 500;
    for (int k = 0; k < SN_FAIL_CLASS_COUNT; k++)
        cfg.fm.fraction[k] = k == SN_FAIL_HOST;
    for (int fence = 0; fence < 2; fence++) {
        cfg.partition_share_pct = fence ? 10 : 100;
        uint32_t hits = 0;
        for (uint64_t seed = 1; seed <= 40; seed++) {
            cfg.seed = seed;
            r = run(&c, &w, &cfg);
            assert_int_equal(r->jobs_done, 1);
            assert_rel(r->useful_gpu_h, 36000.0 * 8 / 3600, 1e-9);
            if (r->failures[SN_FAIL_HOST] == 1 && r->interruptions == 1) {
                hits++;
                assert_int_equal(r->replacements, 0);
                double jct = r->jct[0].mean;
                if (fence) {
                    assert_true(jct >= 36600 + 28800 + 300);
                } else {
                    assert_true(jct >= 36600 + 40 + 300 - 1e-6);
                    assert_true(jct <= 36600 + 3660 + 40 + 300 + 1e-6);
                }
            }
            sn_sim_result_free(r);
        }
        assert_true(hits > 0);
    }
    sn_sim_shape_free(c.spec, c.model);
}

/* Switch-tray failures in the control engine: one supernode of 8 servers
 * x 8 GPUs; a 1-GPU job of 10 s at t = 0 (failures are drawn from the
 * first submission on), then an 8-GPU job (one server) and a 16-GPU job
 * (two) submitted at t = 100,000 s, each of 3,600 s, no other failures.
 * At 10 tray failures per supernode-hour (a mean gap of 360 s) the domain
 * is degraded long before the two (P(no failure by then) = e^-278); with a repair
 * of 10^7 s it stays so: the 8-GPU job runs, the 16-GPU job never starts
 * (the single-server limit of lib/control, its invariants checked after
 * every event), and the domain's 64 GPUs count as degraded from the first
 * failure to the end. With a 60 s repair at 0.5 per hour the limit lifts
 * between failures and both jobs finish. Without tray failures both run
 * and nothing is degraded. */
static void control_tray_failures_degrade(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    struct cluster c;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_shape_build(&sh, &c.spec, &c.model, &err), SN_OK);
    struct sn_sim_job jobs[3] = {
        {.submit_s = 0, .duration_s = 10, .gpus = 1, .group_gpus = 1},
        {.submit_s = 1e5, .duration_s = 3600, .gpus = 8, .group_gpus = 8},
        {.submit_s = 1e5, .duration_s = 3600, .gpus = 16, .group_gpus = 8},
    };
    struct sn_sim_workload w = {.n_jobs = 3, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.failures = false;
    cfg.comm.tp_fraction = cfg.comm.dp_fraction = 0;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_int_equal(r->jobs_done, 3);
    assert_int_equal(r->tray_failures, 0);
    assert_true(r->degraded_gpu_h == 0);
    sn_sim_result_free(r);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        cfg.seed = seed;
        cfg.tray_failures_per_sn_hour = 10;
        cfg.tray_repair_s = 1e7;
        r = run(&c, &w, &cfg);
        assert_int_equal(r->jobs_done, 2);
        assert_false(isnan(r->job_start_s[1]));
        assert_true(isnan(r->job_start_s[2]));
        assert_true(r->tray_failures > 1);
        assert_true(r->pending_reasons[SN_PENDING_DOMAIN] > 0);
        /* From the first failure (before 100,000 s) to the end (past it). */
        assert_true(r->degraded_gpu_h > 64.0 * 1e5 / 3600 * 0.9);
        sn_sim_result_free(r);
        cfg.tray_failures_per_sn_hour = 0.5;
        cfg.tray_repair_s = 60;
        r = run(&c, &w, &cfg);
        assert_int_equal(r->jobs_done, 3);
        assert_true(r->tray_failures > 0);
        assert_true(r->degraded_gpu_h > 0);
        assert_true(r->degraded_gpu_h <= 64.0 * 60 * (double)r->tray_failures / 3600 + 1e-9);
        sn_sim_result_free(r);
    }
    sn_sim_shape_free(c.spec, c.model);
}

/* GPU failures as ADMIN down: with 8 spares the control replaces the
 * failed GPUs in place (every interruption a replacement), without them it
 * requeues; software faults are rank exits with status 1 that fail the
 * job, as in snd. */
static void control_gpu_failures_and_faults(void **state)
{
    (void)state;
    struct cluster c;
    cluster_open(&c, 1);
    struct sn_sim_job job = {.submit_s = 0, .duration_s = 2e6, .gpus = 8, .group_gpus = 8};
    struct sn_sim_workload w = {.n_jobs = 1, .jobs = &job, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.fm.per_gpu_hour *= 500;
    for (int k = 0; k < SN_FAIL_CLASS_COUNT; k++)
        cfg.fm.fraction[k] = k == SN_FAIL_GPU;
    cfg.sched.spare_gpus_per_supernode = 8;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_int_equal(r->jobs_done, 1);
    assert_true(r->interruptions >= 3);
    assert_int_equal(r->replacements, r->interruptions);
    assert_rel(r->useful_gpu_h, 2e6 * 8 / 3600, 1e-9);
    sn_sim_result_free(r);
    cfg.sched.spare_gpus_per_supernode = 0;
    r = run(&c, &w, &cfg);
    assert_int_equal(r->jobs_done, 1);
    assert_true(r->interruptions >= 3);
    assert_int_equal(r->replacements, 0);
    sn_sim_result_free(r);
    for (int k = 0; k < SN_FAIL_CLASS_COUNT; k++)
        cfg.fm.fraction[k] = k == SN_FAIL_SOFTWARE;
    r = run(&c, &w, &cfg);
    assert_int_equal(r->jobs_done, 0);
    assert_int_equal(r->jobs_failed, 1);
    assert_int_equal(r->jobs_unfinished, 1);
    sn_sim_result_free(r);
    sn_sim_shape_free(c.spec, c.model);
}

/* Slow GPUs in the control engine: on a 16-GPU cluster, twenty 8-GPU jobs
 * of 1,000 s queued at once, GPUs turning slow (60 % speed) about every
 * 450 s (no failures), found 10 s later, replaced an hour later. With
 * health exclusion the control is told to cordon a slow GPU, as snd:health
 * cordons a GPU scoring below health_cordon_below, so later jobs start
 * only on the others (and wait while too few are left); without it they
 * start on slow GPUs too and run longer, so the same work costs more busy
 * GPU-hours (measured: 45.2 against 72.3). */
static void control_slow_gpus_cordoned(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    sh.servers = 2;
    struct cluster c;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_shape_build(&sh, &c.spec, &c.model, &err), SN_OK);
    struct sn_sim_job jobs[20];
    for (int i = 0; i < 20; i++)
        jobs[i] = (struct sn_sim_job){.submit_s = i, .duration_s = 1000, .gpus = 8, .group_gpus = 8};
    struct sn_sim_workload w = {.n_jobs = 20, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.failures = true;
    cfg.fm.per_gpu_hour = 0;
    cfg.fm.slow_per_gpu_hour = 0.5;
    cfg.fm.slow_detect_s = 10;
    cfg.fm.slow_repair_s = 3600;
    struct sn_sim_result *on = run(&c, &w, &cfg);
    cfg.sched.health_exclusion = false;
    struct sn_sim_result *off = run(&c, &w, &cfg);
    print_message("slow GPUs %u / %u, busy GPU-h %.2f / %.2f, makespan %.0f / %.0f s\n",
                  (unsigned)on->slow_gpus, (unsigned)off->slow_gpus, on->busy_gpu_h,
                  off->busy_gpu_h, on->makespan_s, off->makespan_s);
    assert_true(on->slow_gpus > 0 && off->slow_gpus > 0);
    assert_int_equal(on->jobs_done, 20);
    assert_int_equal(off->jobs_done, 20);
    assert_rel(on->useful_gpu_h, off->useful_gpu_h, 1e-9);
    assert_true(on->busy_gpu_h < off->busy_gpu_h);
    sn_sim_result_free(on);
    sn_sim_result_free(off);
    sn_sim_shape_free(c.spec, c.model);
}

/* Cooperative preemption in the control engine, hand-worked: A (priority
 * 0, 32 GPUs, the whole supernode) from 0, B (priority 10, 32 GPUs) at
 * 7200; interval checkpoints every 3600 s of work (60 s to write), so A's
 * last one kept 3600 s of work when B comes. Grace 0: A is evicted at
 * 7200, (7200 - 3600) x 32 GPU-s = 32 GPU-h lost. Grace 100 with a
 * just-in-time checkpoint always: it is written by 7260 and keeps A's
 * progress at the signal (7200 x its rate, at most 7200 x 3600 / 3660),
 * so at least (7260 - 7082) x 32 / 3600 = 1.58 GPU-h are lost, far below
 * 32. Grace 100 with none: evicted at the deadline 7300, (7300 - 3600) x
 * 32 / 3600 = 32.89 GPU-h. One preemption each time. */
static void control_cooperative_preemption(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    sh.servers = 4;
    sh.gpus_per_server = 8;
    struct cluster c;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_shape_build(&sh, &c.spec, &c.model, &err), SN_OK);
    struct sn_sim_job jobs[2] = {
        {.submit_s = 0, .duration_s = 36000, .gpus = 32, .group_gpus = 8, .priority = 0},
        {.submit_s = 7200, .duration_s = 3600, .gpus = 32, .group_gpus = 8, .priority = 10},
    };
    struct sn_sim_workload w = {.n_jobs = 2, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.failures = false;
    struct sn_sim_result *r = run(&c, &w, &cfg);
    assert_int_equal(r->preemptions, 1);
    assert_int_equal(r->jobs_done, 2);
    assert_near(r->lost_gpu_h, 32.0, 1e-9);
    sn_sim_result_free(r);
    cfg.preempt_grace_s = 100;
    cfg.preempt_ckpt_p = 1;
    r = run(&c, &w, &cfg);
    assert_int_equal(r->preemptions, 1);
    assert_int_equal(r->jobs_done, 2);
    assert_true(r->lost_gpu_h >= (7260.0 - 7200.0 * 3600 / 3660) * 32 / 3600 - 1e-9);
    assert_true(r->lost_gpu_h < 4);
    sn_sim_result_free(r);
    cfg.preempt_ckpt_p = 0;
    r = run(&c, &w, &cfg);
    assert_int_equal(r->preemptions, 1);
    assert_near(r->lost_gpu_h, (7300.0 - 3600) * 32 / 3600, 1e-9);
    sn_sim_result_free(r);
    sn_sim_shape_free(c.spec, c.model);
}

/* Preflight in the control engine: on a 32-GPU cluster (four 8-GPU
 * servers), twenty 8-GPU jobs of 1,000 s queued at once, GPUs turning slow
 * (60 % speed) about every 1,100 s, never found by health (slow_detect_s
 * past the run) and replaced 2 h later. Every job opts in to a 10 s quick check that finds every
 * slow GPU under it: a start on one fails its rank, the control cordons the GPU as snd:preflight
 * and places the job again, so no job runs slowly and the same work costs fewer busy GPU-hours than
 * without a preflight. Each check holds 8 GPUs for exactly 10 s (passed or failed), and each start
 * is one check: 20 jobs plus one more start per failed check. With detection 0 every check passes;
 * with share 0 no job opts in and the run is the run without a preflight (the opt-in draws have
 * their own stream). */
static void control_preflight_replaces(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    sh.servers = 4;
    struct cluster c;
    struct sn_error err = {0};
    assert_int_equal(sn_sim_shape_build(&sh, &c.spec, &c.model, &err), SN_OK);
    struct sn_sim_job jobs[20];
    for (int i = 0; i < 20; i++)
        jobs[i] =
            (struct sn_sim_job){.submit_s = i, .duration_s = 1000, .gpus = 8, .group_gpus = 8};
    struct sn_sim_workload w = {.n_jobs = 20, .jobs = jobs, .n_tenants = 1};
    struct sn_sim_config cfg;
    sn_sim_config_defaults(&cfg);
    cfg.engine = SN_SIM_ENGINE_CONTROL;
    cfg.check_invariants = true;
    cfg.failures = true;
    cfg.fm.per_gpu_hour = 0;
    cfg.fm.slow_per_gpu_hour = 0.1;
    cfg.fm.slow_detect_s = 1e7;
    cfg.fm.slow_repair_s = 7200;
    struct sn_sim_result *off = run(&c, &w, &cfg);
    cfg.preflight_mode = 1;
    cfg.preflight_s = 10;
    struct sn_sim_result *on = run(&c, &w, &cfg);
    cfg.preflight_detect_p = 0;
    struct sn_sim_result *blind = run(&c, &w, &cfg);
    cfg.preflight_detect_p = 1;
    cfg.preflight_share = 0;
    struct sn_sim_result *none = run(&c, &w, &cfg);
    print_message("slow GPUs %u, preflights %u (%u failed), busy GPU-h off %.2f on %.2f "
                  "blind %.2f\n",
                  (unsigned)on->slow_gpus, (unsigned)on->preflights, (unsigned)on->preflight_fails,
                  off->busy_gpu_h, on->busy_gpu_h, blind->busy_gpu_h);
    assert_true(on->slow_gpus > 0);
    assert_true(on->preflight_fails > 0);
    assert_true(on->preflight_fails <= on->slow_gpus); /* a GPU found is cordoned: once */
    assert_int_equal(on->interruptions, 0);
    assert_int_equal(on->jobs_done, 20);
    assert_int_equal(on->preflights, 20 + on->preflight_fails);
    assert_near(on->preflight_gpu_h, (double)on->preflights * 8 * 10 / 3600, 1e-9);
    assert_rel(on->useful_gpu_h, off->useful_gpu_h, 1e-9);
    assert_true(on->busy_gpu_h < off->busy_gpu_h);
    assert_int_equal(blind->preflight_fails, 0);
    assert_int_equal(blind->preflights, 20);
    assert_true(on->busy_gpu_h < blind->busy_gpu_h);
    assert_int_equal(none->preflights, 0);
    assert_true(none->busy_gpu_h == off->busy_gpu_h && none->makespan_s == off->makespan_s);
    assert_int_equal(off->preflights, 0);
    sn_sim_result_free(off);
    sn_sim_result_free(on);
    sn_sim_result_free(blind);
    sn_sim_result_free(none);
    sn_sim_shape_free(c.spec, c.model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(failure_defaults),
        cmocka_unit_test(deterministic_and_conserving),
        cmocka_unit_test(checkpoint_policies),
        cmocka_unit_test(trace_loaders),
        cmocka_unit_test(bad_trace),
        cmocka_unit_test(comm_model_rates),
        cmocka_unit_test(comm_model_in_sim),
        cmocka_unit_test(uplink_load_rerates),
        cmocka_unit_test(spares_in_sim),
        cmocka_unit_test(quota_in_sim),
        cmocka_unit_test(crux_topology),
        cmocka_unit_test(pools_preemption_bounded),
        cmocka_unit_test(control_matches_sched_failure_free),
        cmocka_unit_test(control_quota_holds),
        cmocka_unit_test(control_groups_stay_in_supernodes),
        cmocka_unit_test(control_host_failure_requeues),
        cmocka_unit_test(control_tray_failures_degrade),
        cmocka_unit_test(control_gpu_failures_and_faults),
        cmocka_unit_test(control_cooperative_preemption),
        cmocka_unit_test(control_slow_gpus_cordoned),
        cmocka_unit_test(control_preflight_replaces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
