/*
 * Unit tests of lib/sched: one test per scheduling rule, the invariant
 * checker after every event, and a randomized differential test against
 * the naive reference placer. Clusters are built in memory with
 * sn_sim_shape_build(); expected placements are worked out by hand in the
 * comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/sched.h>
#include <sn/sim.h>

#include "sched/sched_int.h"
#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_sched *s;
};

static void check(const struct sn_sched *s)
{
    struct sn_error err = {0};
    if (sn_sched_check_invariants(s, &err) != SN_OK)
        fail_msg("%s", err.message);
}

static void fx_open(struct fx *f, const struct sn_sim_shape *shape, struct sn_sched_config *cfg)
{
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_sim_shape_build(shape, &f->spec, &f->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_sched_config def;
    if (!cfg) {
        sn_sched_config_defaults(&def);
        cfg = &def;
    }
    if (sn_sched_create(f->model, cfg, &f->s, &err) != SN_OK)
        fail_msg("%s", err.message);
    check(f->s);
}

static void fx_close(struct fx *f)
{
    sn_sched_destroy(f->s);
    sn_sim_shape_free(f->spec, f->model);
}

static struct sn_job_spec job(uint32_t gpus, uint32_t group)
{
    return (struct sn_job_spec){
        .gpus = gpus, .group_gpus = group, .walltime_s = 3600, .preemptible = true};
}

static uint32_t submit(struct fx *f, struct sn_job_spec spec)
{
    uint32_t id;
    struct sn_error err = {0};
    if (sn_sched_submit(f->s, &spec, &id, &err) != SN_OK)
        fail_msg("%s", err.message);
    check(f->s);
    return id;
}

static void pass(struct fx *f, double now)
{
    struct sn_error err = {0};
    if (sn_sched_pass(f->s, now, &err) != SN_OK)
        fail_msg("%s", err.message);
    check(f->s);
}

static bool place(struct fx *f, uint32_t id)
{
    bool ok = sn_sched_try_place(f->s, id, 0);
    check(f->s);
    return ok;
}

/* Cordons `count` GPUs of supernode sn, from its first GPU. */
static void cordon_first(struct fx *f, uint32_t sn, uint32_t count)
{
    const struct sn_supernode *S = &f->model->supernodes[sn];
    for (uint32_t g = S->first_gpu; g < S->first_gpu + count; g++)
        sn_sched_cordon(f->s, g, true);
    check(f->s);
}

static uint32_t gpus_in_sn(struct fx *f, uint32_t id, uint32_t sn)
{
    uint32_t n, c = 0;
    const uint32_t *g = sn_sched_job_gpus(f->s, id, &n);
    for (uint32_t i = 0; i < n; i++)
        c += f->model->gpu_supernode[g[i]] == sn;
    return c;
}

static enum sn_pending_reason reason(struct fx *f, uint32_t id)
{
    struct sn_job_info info;
    sn_sched_job_info(f->s, id, &info);
    return info.reason;
}

static enum sn_job_state job_state(struct fx *f, uint32_t id)
{
    struct sn_job_info info;
    sn_sched_job_info(f->s, id, &info);
    return info.state;
}

/* ---- placement ------------------------------------------------------- */

/* Free (usable) GPUs: sn0 40, sn1 16, sn2 64, sn3 24. A 16-GPU job (groups
 * of 8) fits sn0, sn1 and sn2; best fit is sn1 (16 free). */
static void best_fit_supernode(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    struct fx f;
    fx_open(&f, &sh, NULL);
    cordon_first(&f, 0, 24);
    cordon_first(&f, 1, 48);
    cordon_first(&f, 3, 40);
    uint32_t id = submit(&f, job(16, 8));
    assert_true(place(&f, id));
    assert_int_equal(gpus_in_sn(&f, id, 1), 16);
    struct sn_job_info info;
    sn_sched_job_info(f.s, id, &info);
    assert_int_equal(info.n_supernodes, 1);
    assert_false(info.groups_split);
    fx_close(&f);
}

/* Free: sn0 32, sn1 48, sn2 64, sn3 40. 96 GPUs need two supernodes: the
 * largest (sn2, 64) and, for the remaining 32, the smallest that covers it
 * (sn0, 32). */
static void fewest_supernodes(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    struct fx f;
    fx_open(&f, &sh, NULL);
    cordon_first(&f, 0, 32);
    cordon_first(&f, 1, 16);
    cordon_first(&f, 3, 24);
    uint32_t id = submit(&f, job(96, 8));
    assert_true(place(&f, id));
    assert_int_equal(gpus_in_sn(&f, id, 2), 64);
    assert_int_equal(gpus_in_sn(&f, id, 0), 32);
    struct sn_job_info info;
    sn_sched_job_info(f.s, id, &info);
    assert_int_equal(info.n_supernodes, 2);
    /* one_supernode: 48 and 40 free are left; 56 fit in none. */
    struct sn_job_spec one = job(56, 8);
    one.one_supernode = true;
    uint32_t id2 = submit(&f, one);
    assert_false(place(&f, id2));
    assert_int_equal(reason(&f, id2), SN_PENDING_HEALTH); /* it would fit on the cordoned GPUs */
    fx_close(&f);
}

/* Pod first on a 3-tier fabric. 18 supernodes of 64 GPUs, 2 leaves each;
 * 64-port spines at 1:1 take 32 leaves: pod 0 is sn0..sn15, pod 1 sn16
 * and sn17. Free (the rest cordoned): 48 in each of pod 0, 64 in sn16, 56
 * in sn17. A 96-GPU job (groups of 8) needs two supernodes anywhere; both
 * pods can do it with two, the tie goes to pod 0: the largest (sn0) and
 * the smallest covering the remaining 48 (sn15). Cluster-wide largest
 * first would take sn16 and then sn15, across the core. A 112-GPU job
 * needs three supernodes of pod 0 but two of pod 1: it takes sn16 and
 * sn17 (the first pod that suffices would have given three). */
static void pod_first_three_tier(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 18;
    sh.core = true;
    struct fx f;
    fx_open(&f, &sh, NULL);
    for (uint32_t sn = 0; sn < 18; sn++) {
        assert_int_equal(sn_sched_supernode_pod(f.s, sn), sn < 16 ? 0 : 1);
        cordon_first(&f, sn, sn < 16 ? 16 : sn == 16 ? 0 : 8);
    }
    uint32_t a = submit(&f, job(96, 8));
    assert_true(place(&f, a));
    assert_int_equal(gpus_in_sn(&f, a, 0), 48);
    assert_int_equal(gpus_in_sn(&f, a, 15), 48);
    struct sn_job_info info;
    sn_sched_job_info(f.s, a, &info);
    assert_int_equal(info.n_supernodes, 2);
    assert_int_equal(sn_sched_finish(f.s, a, 1, NULL), SN_OK);
    uint32_t b = submit(&f, job(112, 8));
    assert_true(place(&f, b));
    assert_int_equal(gpus_in_sn(&f, b, 16), 64);
    assert_int_equal(gpus_in_sn(&f, b, 17), 48);
    fx_close(&f);
}

/* Servers of sn0 with 3, 4 and 8 usable GPUs (the others cordoned): a
 * 4-GPU group goes to the server with exactly 4 (packing); an 8-GPU group
 * never splits, so with no 8-GPU server left and 7 GPUs free it waits. */
static void groups_pack_servers(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    struct fx f;
    fx_open(&f, &sh, NULL);
    for (uint32_t g = 0; g < 64; g++) {
        uint32_t srv = g / 8, k = g % 8;
        bool keep = (srv == 0 && k < 3) || (srv == 1 && k < 4) || srv == 2;
        sn_sched_cordon(f.s, g, !keep);
    }
    check(f.s);
    uint32_t a = submit(&f, job(4, 4));
    assert_true(place(&f, a));
    uint32_t n;
    const uint32_t *gpus = sn_sched_job_gpus(f.s, a, &n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(f.model->gpu_server[gpus[i]], 1);
    uint32_t b = submit(&f, job(8, 8));
    assert_true(place(&f, b)); /* server 2 */
    uint32_t c = submit(&f, job(8, 8));
    assert_false(place(&f, c)); /* 3 GPUs left, and cordoned ones */
    assert_int_equal(reason(&f, c), SN_PENDING_HEALTH);
    fx_close(&f);
}

/* A 16-GPU group on 8-GPU servers needs one supernode: with 8 free GPUs in
 * each of two supernodes it cannot run under supernode-first, while the
 * topology-oblivious first fit places it across both. */
static void group_never_spans_supernodes(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    struct sn_sched_config cfg;
    for (int policy = 0; policy < 2; policy++) {
        sn_sched_config_defaults(&cfg);
        cfg.policy = policy == 0 ? SN_SCHED_SUPERNODE_FIRST : SN_SCHED_FIRST_FIT;
        struct fx f;
        fx_open(&f, &sh, &cfg);
        /* fill both supernodes with 8-GPU jobs, then end one in each */
        uint32_t first = 0;
        for (int i = 0; i < 16; i++)
            assert_true(place(&f, submit(&f, job(8, 8))));
        assert_int_equal(f.model->gpu_supernode[sn_sched_job_gpus(f.s, first, &(uint32_t){0})[0]],
                         0);
        assert_int_equal(sn_sched_finish(f.s, first, 1, NULL), SN_OK);
        assert_int_equal(sn_sched_finish(f.s, 15, 1, NULL), SN_OK);
        uint32_t id = submit(&f, job(16, 16));
        struct sn_job_info info;
        if (policy == 0) {
            assert_false(place(&f, id));
            assert_int_equal(reason(&f, id), SN_PENDING_NO_FIT);
        } else {
            assert_true(place(&f, id));
            sn_sched_job_info(f.s, id, &info);
            assert_true(info.groups_cross_sn);
        }
        fx_close(&f);
    }
}

/* pd of server i is i % 2 (A, B). Servers 0 and 2 (A) have 4 usable GPUs,
 * server 1 (B) 8, the rest none. Two groups of 4: packing takes servers 0
 * and 2 (both A); spreading takes 0 (A) then 1 (B). */
static void spread_power_domains(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    for (int spread = 0; spread < 2; spread++) {
        struct fx f;
        fx_open(&f, &sh, NULL);
        for (uint32_t g = 0; g < 64; g++) {
            uint32_t srv = g / 8, k = g % 8;
            bool keep = ((srv == 0 || srv == 2) && k < 4) || srv == 1;
            sn_sched_cordon(f.s, g, !keep);
        }
        struct sn_job_spec js = job(8, 4);
        js.spread_power = spread;
        uint32_t id = submit(&f, js);
        assert_true(place(&f, id));
        uint32_t n, pd_count[2] = {0, 0};
        const uint32_t *gpus = sn_sched_job_gpus(f.s, id, &n);
        for (uint32_t i = 0; i < n; i++)
            pd_count[sn_model_gpu_power_domain(f.model, gpus[i], 0)]++;
        assert_int_equal(pd_count[0], spread ? 4 : 8);
        assert_int_equal(pd_count[1], spread ? 4 : 0);
        fx_close(&f);
    }
}

/* Health: server 0's GPUs score 0.7 (above the 0.5 cordon line). A job
 * asking 0.9 avoids them; a job asking nothing takes them (best fit puts
 * it on the lowest server). A GPU at 0.3 is cordoned and never used. */
static void health_threshold_and_cordon(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    struct fx f;
    fx_open(&f, &sh, NULL);
    for (uint32_t g = 0; g < 8; g++)
        sn_sched_set_health(f.s, g, 0.7);
    sn_sched_set_health(f.s, 8, 0.3);
    check(f.s);
    assert_true(sn_sched_gpu_cordoned(f.s, 8));
    assert_false(sn_sched_gpu_cordoned(f.s, 0));
    struct sn_job_spec picky = job(8, 8);
    picky.health_min = 0.9;
    uint32_t a = submit(&f, picky);
    assert_true(place(&f, a));
    uint32_t n;
    const uint32_t *gpus = sn_sched_job_gpus(f.s, a, &n);
    for (uint32_t i = 0; i < n; i++)
        assert_true(gpus[i] >= 16); /* not server 0 (weak) nor server 1 (cordoned GPU) */
    uint32_t b = submit(&f, job(8, 8));
    assert_true(place(&f, b));
    gpus = sn_sched_job_gpus(f.s, b, &n);
    assert_int_equal(f.model->gpu_server[gpus[0]], 0);
    /* 64 - 16 placed - 1 cordoned = 47 usable, 7 of them in server 1 */
    uint32_t c = submit(&f, job(47, 1));
    assert_true(place(&f, c));
    gpus = sn_sched_job_gpus(f.s, c, &n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_not_equal(gpus[i], 8);
    /* A running job on a GPU that drops below the line is flagged. */
    sn_sched_set_health(f.s, gpus[0], 0.1);
    struct sn_job_info info;
    sn_sched_job_info(f.s, c, &info);
    assert_true(info.degraded);
    check(f.s);
    fx_close(&f);
}

/* Leaves at 8:1: each leaf has 32 downlinks (8 servers x 4 NICs, pair
 * attach) and ceil(32/8) = 4 uplinks of 50 GB/s = 200 GB/s. A 128-GPU job
 * over two supernodes puts 32 GPUs on each leaf: at 10 GB/s per GPU that
 * is 320 GB/s (refused), at 5 GB/s 160 GB/s (admitted); a second such job
 * would bring a leaf to 320 GB/s (refused). */
static void bandwidth_admission(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 4;
    sh.oversubscription = 8;
    struct fx f;
    fx_open(&f, &sh, NULL);
    uint32_t leaf0 = f.model->supernodes[0].first_leaf;
    double cap;
    sn_sched_leaf_load(f.s, leaf0, &cap);
    assert_near(cap, 200e9, 1);
    struct sn_job_spec big = job(128, 8);
    big.xsn_bytes_per_s = 10e9;
    uint32_t a = submit(&f, big);
    assert_false(place(&f, a));
    assert_int_equal(reason(&f, a), SN_PENDING_BANDWIDTH);
    big.xsn_bytes_per_s = 5e9;
    uint32_t b = submit(&f, big);
    assert_true(place(&f, b));
    uint32_t n;
    const uint32_t *gpus = sn_sched_job_gpus(f.s, b, &n);
    uint32_t leaf_b = f.model->gpu_leaf[gpus[0]];
    assert_near(sn_sched_leaf_load(f.s, leaf_b, &cap), 160e9, 1);
    uint32_t c = submit(&f, big);
    assert_true(place(&f, c)); /* the other two supernodes */
    uint32_t d = submit(&f, job(64, 8));
    assert_false(place(&f, d)); /* full */
    assert_int_equal(sn_sched_finish(f.s, b, 10, NULL), SN_OK);
    check(f.s);
    assert_near(sn_sched_leaf_load(f.s, leaf_b, &cap), 0, 1e-6);
    /* A single-supernode job carries no cross-supernode load. */
    struct sn_job_spec small = job(64, 8);
    small.xsn_bytes_per_s = 100e9;
    uint32_t e = submit(&f, small);
    assert_true(place(&f, e));
    fx_close(&f);
}

/* Bandwidth admission on the spine tier of a 3-tier fabric. 52 supernodes
 * of one 8-GPU server, one leaf each (8 x 50 GB/s down, 8 up: 400 GB/s);
 * 64-port spines at 4:1 make pods of floor(64 x 4/5) = 51 leaves: pod 0
 * holds sn0..sn50, pod 1 sn51. Pod 0's 8 spines each see 51 leaves and
 * take ceil(51/4) = 13 uplinks: 104 x 50 GB/s = 5.2 TB/s; pod 1's take 1
 * each: 400 GB/s. A 416-GPU job spans both pods: at 12 GB/s per GPU pod 0
 * carries 408 x 12 = 4.896 TB/s (admitted; each leaf 96 GB/s); at 13 GB/s
 * it would carry 5.304 TB/s > 5.2 TB/s: refused for bandwidth although
 * every leaf (104 GB/s) has room. */
static void bandwidth_admission_spine_tier(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 52;
    sh.servers = 1;
    sh.leaves = 1;
    sh.core = true;
    sh.spine_oversubscription = 4;
    struct fx f;
    fx_open(&f, &sh, NULL);
    double cap0, cap1;
    assert_int_equal(sn_sched_supernode_pod(f.s, 50), 0);
    assert_int_equal(sn_sched_supernode_pod(f.s, 51), 1);
    sn_sched_pod_load(f.s, 0, &cap0);
    sn_sched_pod_load(f.s, 1, &cap1);
    assert_near(cap0, 104 * 50e9, 1);
    assert_near(cap1, 8 * 50e9, 1);
    struct sn_job_spec js = job(416, 8);
    js.xsn_bytes_per_s = 13e9;
    uint32_t big = submit(&f, js);
    pass(&f, 0);
    assert_int_equal(job_state(&f, big), SN_JOB_PENDING);
    assert_int_equal(reason(&f, big), SN_PENDING_BANDWIDTH);
    assert_int_equal(sn_sched_cancel(f.s, big, NULL), SN_OK);
    js.xsn_bytes_per_s = 12e9;
    uint32_t ok = submit(&f, js);
    pass(&f, 0);
    assert_int_equal(job_state(&f, ok), SN_JOB_RUNNING);
    assert_near(sn_sched_pod_load(f.s, 0, &cap0), 408 * 12e9, 1);
    assert_near(sn_sched_pod_load(f.s, 1, &cap1), 8 * 12e9, 1);
    /* the invariant checker recomputes pod loads */
    f.s->pod_load[0] += 1e9;
    struct sn_error err = {0};
    assert_int_equal(sn_sched_check_invariants(f.s, &err), SN_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "pod 0 load"));
    f.s->pod_load[0] -= 1e9;
    check(f.s);
    assert_int_equal(sn_sched_finish(f.s, ok, 1, NULL), SN_OK);
    assert_near(sn_sched_pod_load(f.s, 0, &cap0), 0, 1e-3);
    fx_close(&f);
}

/* Tenant 0: 40 GPUs overall; tenant 1: 32 per supernode; tenant 2: a
 * per-job cap of 8 GPUs and 100 s. Tenant cap: 2 tenants per supernode. */
static void quotas_three_levels(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    struct sn_sched_tenant tenants[4] = {{.quota_gpus = 40},
                                         {.quota_gpus_per_supernode = 32},
                                         {.max_job_gpus = 8, .max_walltime_s = 100},
                                         {0}};
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.n_tenants = 4;
    cfg.tenants = tenants;
    cfg.max_tenants_per_supernode = 2;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    struct sn_job_spec js = job(32, 8);
    uint32_t a = submit(&f, js);
    assert_true(place(&f, a));
    uint32_t b = submit(&f, js);
    assert_false(place(&f, b)); /* 32 + 32 > 40 */
    assert_int_equal(reason(&f, b), SN_PENDING_QUOTA);
    /* tenant 3 joins sn0 (best fit: 32 free): sn0 now holds 2 tenants */
    js = job(8, 8);
    js.tenant = 3;
    uint32_t d = submit(&f, js);
    assert_true(place(&f, d));
    assert_int_equal(sn_sched_tenant_gpus(f.s, 3, 0), 8);
    /* tenant 1 (32 per supernode) cannot enter sn0 (tenant cap) and sn1
     * holds only 32 of its 48: the quotas, not the room, block it */
    js = job(48, 8);
    js.tenant = 1;
    uint32_t c = submit(&f, js);
    assert_false(place(&f, c));
    assert_int_equal(reason(&f, c), SN_PENDING_QUOTA_SUPERNODE);
    js = job(40, 8);
    js.tenant = 1;
    uint32_t c2 = submit(&f, js);
    assert_false(place(&f, c2)); /* 40 > 32 per supernode */
    js = job(32, 8);
    js.tenant = 1;
    uint32_t c3 = submit(&f, js);
    assert_true(place(&f, c3));
    assert_int_equal(gpus_in_sn(&f, c3, 1), 32);
    /* per-job caps are checked at submit, naming the field */
    struct sn_error err = {0};
    uint32_t id;
    js = job(16, 8);
    js.tenant = 2;
    assert_int_equal(sn_sched_submit(f.s, &js, &id, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "'gpus' 16 exceeds tenant 2's cap of 8"));
    sn_error_clear(&err);
    js = job(8, 8);
    js.tenant = 2;
    js.walltime_s = 200;
    assert_int_equal(sn_sched_submit(f.s, &js, &id, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "'walltime_s'"));
    sn_error_clear(&err);
    js = job(12, 8); /* not a multiple of the group */
    assert_int_equal(sn_sched_submit(f.s, &js, &id, &err), SN_ERR_INVALID);
    js = job(200, 8); /* more than the cluster */
    assert_int_equal(sn_sched_submit(f.s, &js, &id, NULL), SN_ERR_INVALID);
    check(f.s);
    fx_close(&f);
}

/* Pools: sn0 dedicated (pool 0), sn1 mixed (pool 1), sn2 elastic (pool 2)
 * which may borrow from mixed. */
static void pools_dedicated_and_borrowing(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 3;
    sh.n_groups = 3;
    sh.groups[0].count = 1;
    sh.groups[0].kind = SN_POOL_DEDICATED;
    sh.groups[1].count = 1;
    sh.groups[1].kind = SN_POOL_MIXED;
    sh.groups[2].count = 1;
    sh.groups[2].kind = SN_POOL_ELASTIC;
    struct sn_sched_pool pools[3] = {
        {SN_POOL_DEDICATED, 10, 0}, {SN_POOL_MIXED, 5, 0}, {SN_POOL_ELASTIC, 0, 1u << 1}};
    struct sn_sched_tenant tenants[2] = {{0}, {0}};
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.n_pools = 3;
    cfg.pools = pools;
    cfg.n_tenants = 2;
    cfg.tenants = tenants;
    cfg.min_runtime_s = 0;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    struct sn_job_spec js = job(16, 8);
    js.pool = 0;
    uint32_t a = submit(&f, js);
    assert_true(place(&f, a));
    assert_int_equal(gpus_in_sn(&f, a, 0), 16);
    js.tenant = 1; /* another tenant cannot share the dedicated supernode */
    uint32_t b = submit(&f, js);
    assert_false(place(&f, b));
    assert_int_equal(reason(&f, b), SN_PENDING_NO_FIT);
    /* elastic: fills its own supernode, then borrows the mixed one */
    js = job(64, 8);
    js.pool = 2;
    uint32_t e1 = submit(&f, js);
    assert_true(place(&f, e1));
    uint32_t e2 = submit(&f, js);
    assert_true(place(&f, e2));
    struct sn_job_info info;
    sn_sched_job_info(f.s, e2, &info);
    assert_true(info.borrowed);
    assert_int_equal(gpus_in_sn(&f, e2, 1), 64);
    /* a mixed-pool job reclaims the borrowed supernode by preemption */
    js = job(32, 8);
    js.pool = 1;
    uint32_t m = submit(&f, js);
    pass(&f, 100);
    assert_int_equal(job_state(&f, m), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, e2), SN_JOB_PENDING);
    assert_int_equal(job_state(&f, e1), SN_JOB_RUNNING);
    fx_close(&f);
}

/* Bandwidth admission comes before eviction. 2 supernodes of 64 GPUs, 2
 * leaves each with 32 GPUs below and, at 8:1, 4 uplinks of 50 GB/s:
 * 200 GB/s (bandwidth_admission above). L0 and L1 (64 GPUs, priority 0)
 * fill sn0 and sn1. H (128 GPUs in groups of 8, priority 1) needs both
 * supernodes: at 10 GB/s per GPU a leaf would carry 32 x 10 = 320 GB/s >
 * 200: refused, so nobody is evicted and H waits for bandwidth (before,
 * L0 and L1 were evicted and H stayed pending anyway). At 5 GB/s (160
 * GB/s per leaf) H evicts both and runs. */
static void preemption_checks_bandwidth_first(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    sh.oversubscription = 8;
    struct fx f;
    fx_open(&f, &sh, NULL);
    uint32_t l0 = submit(&f, job(64, 8)), l1 = submit(&f, job(64, 8));
    pass(&f, 0);
    assert_int_equal(gpus_in_sn(&f, l0, 0) + gpus_in_sn(&f, l1, 1), 128);
    sn_sched_clear_decisions(f.s);
    struct sn_job_spec js = job(128, 8);
    js.priority = 1;
    js.xsn_bytes_per_s = 10e9;
    uint32_t h = submit(&f, js);
    pass(&f, 1000);
    assert_int_equal(job_state(&f, h), SN_JOB_PENDING);
    assert_int_equal(reason(&f, h), SN_PENDING_BANDWIDTH);
    assert_int_equal(job_state(&f, l0), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, l1), SN_JOB_RUNNING);
    size_t n;
    sn_sched_decisions(f.s, &n);
    assert_int_equal(n, 0);
    struct sn_sched_stats st;
    sn_sched_stats(f.s, &st);
    assert_int_equal(st.preemptions, 0);
    assert_int_equal(sn_sched_cancel(f.s, h, NULL), SN_OK);
    js.xsn_bytes_per_s = 5e9;
    h = submit(&f, js);
    pass(&f, 2000);
    assert_int_equal(job_state(&f, h), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, l0), SN_JOB_PENDING);
    assert_int_equal(job_state(&f, l1), SN_JOB_PENDING);
    double cap;
    uint32_t leaf0 = f.model->supernodes[0].first_leaf;
    assert_near(sn_sched_leaf_load(f.s, leaf0, &cap), 160e9, 1);
    fx_close(&f);
}

/* Preemption with borrowing (Kueue's defaults: reclaimWithinCohort Any,
 * borrowWithinCohort Never). sn0 is a dedicated pool (priority 2), sn1 a
 * mixed one (priority 1); each may borrow the other. Mixed M1 runs on sn1,
 * dedicated D1 on sn0. Dedicated D2 (64 GPUs) outranks M1 but may not evict
 * it from M1's own pool: it waits (it used to preempt M1, and M1 then
 * reclaimed sn1 from it: the churn of 61,531 preemptions for 3,000 ITP
 * jobs). When M1 ends, D2 borrows sn1; mixed M2 reclaims sn1 whatever D2's
 * priority; for the hold-off (3,600 s) D2 may not borrow sn1 again, even
 * though sn1 is idle; afterwards it may. */
static void preemption_respects_borrowing(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    sh.n_groups = 2;
    sh.groups[0].count = 1;
    sh.groups[0].kind = SN_POOL_DEDICATED;
    sh.groups[1].count = 1;
    sh.groups[1].kind = SN_POOL_MIXED;
    struct sn_sched_pool pools[2] = {{SN_POOL_DEDICATED, 2, 1u << 1}, {SN_POOL_MIXED, 1, 1u << 0}};
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.n_pools = 2;
    cfg.pools = pools;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    assert_near(cfg.reclaim_holdoff_s, 3600, 0);
    struct sn_job_spec js = job(64, 8);
    js.pool = 1;
    uint32_t m1 = submit(&f, js);
    js.pool = 0;
    uint32_t d1 = submit(&f, js);
    pass(&f, 0);
    assert_int_equal(gpus_in_sn(&f, m1, 1), 64);
    assert_int_equal(gpus_in_sn(&f, d1, 0), 64);
    uint32_t d2 = submit(&f, js);
    pass(&f, 1000);
    assert_int_equal(job_state(&f, d2), SN_JOB_PENDING);
    assert_int_equal(job_state(&f, m1), SN_JOB_RUNNING);
    assert_int_equal(reason(&f, d2), SN_PENDING_NO_FIT);
    assert_int_equal(sn_sched_finish(f.s, m1, 1100, NULL), SN_OK);
    pass(&f, 1100);
    struct sn_job_info info;
    sn_sched_job_info(f.s, d2, &info);
    assert_int_equal(info.state, SN_JOB_RUNNING);
    assert_true(info.borrowed);
    sn_sched_clear_decisions(f.s);
    js.pool = 1;
    uint32_t m2 = submit(&f, js);
    pass(&f, 2000); /* D2 ran 900 s >= min runtime 600 s */
    assert_int_equal(job_state(&f, m2), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, d2), SN_JOB_PENDING);
    size_t n;
    const struct sn_decision *d = sn_sched_decisions(f.s, &n);
    assert_int_equal(n, 2);
    assert_int_equal(d[0].kind, SN_DECISION_PREEMPT);
    assert_int_equal(d[0].job, d2);
    assert_int_equal(d[0].cause, m2);
    assert_int_equal(sn_sched_finish(f.s, m2, 2100, NULL), SN_OK);
    pass(&f, 2100);
    assert_int_equal(job_state(&f, d2), SN_JOB_PENDING); /* held off until 5,600 */
    pass(&f, 5599);
    assert_int_equal(job_state(&f, d2), SN_JOB_PENDING);
    pass(&f, 5600);
    assert_int_equal(job_state(&f, d2), SN_JOB_RUNNING);
    assert_int_equal(gpus_in_sn(&f, d2, 1), 64);
    fx_close(&f);
}

static struct sn_sim_shape one_sn(void)
{
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    return sh;
}

/* One supernode of 64. Tenant 0 runs 32. Pending: tenant 0's 32 (t=1) and
 * tenant 1's 32 (t=2): fair share (0/32 < 32/32) starts tenant 1's first.
 * A priority-9 job submitted last goes before both. */
static void queue_order(void **state)
{
    (void)state;
    struct sn_sim_shape sh = one_sn();
    struct sn_sched_tenant tenants[2] = {{0}, {0}};
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.n_tenants = 2;
    cfg.tenants = tenants;
    cfg.preemption = false;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    assert_true(place(&f, submit(&f, job(32, 8))));
    struct sn_job_spec js = job(32, 8);
    js.submit_s = 1;
    uint32_t t0 = submit(&f, js);
    js.submit_s = 2;
    js.tenant = 1;
    uint32_t t1 = submit(&f, js);
    pass(&f, 3);
    assert_int_equal(job_state(&f, t1), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, t0), SN_JOB_PENDING);
    assert_int_equal(sn_sched_finish(f.s, t1, 4, NULL), SN_OK);
    js = job(32, 8);
    js.priority = 9;
    js.submit_s = 5;
    uint32_t hi = submit(&f, js);
    pass(&f, 5);
    assert_int_equal(job_state(&f, hi), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, t0), SN_JOB_PENDING);
    fx_close(&f);
}

/* The pass's order kept between passes (s->queue, merged and ordered by
 * fair share per priority) equals its definition (every pending job sorted
 * by priority, tenant fair share, submission, ID) through random
 * submissions (out of time order, 3 priorities, 12 tenants, some with
 * equal shares), cancellations, starts and finishes; with runs long
 * enough for the counting sort and short ones for the comparison sort. */
static void queue_order_kept(void **state)
{
    (void)state;
    struct sn_sim_shape sh = one_sn();
    struct sn_sched_tenant tenants[12];
    memset(tenants, 0, sizeof(tenants));
    for (int t = 0; t < 12; t++)
        tenants[t].share = 1 + t % 3;
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.n_tenants = 12;
    cfg.tenants = tenants;
    cfg.preemption = false;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    uint32_t *kept = malloc(4096 * sizeof(uint32_t)), *ref = malloc(4096 * sizeof(uint32_t));
    assert_non_null(kept);
    assert_non_null(ref);
    uint64_t rng = 7;
    for (int round = 0; round < 60; round++) {
        int adds = round % 7 == 0 ? 200 : 25;
        for (int i = 0; i < adds; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            struct sn_job_spec js = job(8 << (rng >> 62), 8);
            js.tenant = (uint32_t)(rng >> 33) % 12;
            js.priority = (int32_t)((rng >> 20) % 3);
            js.submit_s = (double)((rng >> 40) % 500); /* ties and out of order */
            submit(&f, js);
        }
        uint32_t n;
        const uint32_t *pend = sn_sched_pending(f.s, &n);
        for (uint32_t i = 0; i < n && i < 5; i++) { /* cancel a few */
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            if (rng >> 63)
                assert_int_equal(sn_sched_cancel(f.s, pend[(rng >> 8) % n], NULL), SN_OK);
            pend = sn_sched_pending(f.s, &n);
        }
        assert_int_equal(sn__sched_order(f.s, kept, false), SN_OK);
        assert_int_equal(sn__sched_order(f.s, ref, true), SN_OK);
        pend = sn_sched_pending(f.s, &n);
        assert_true(n <= 4096);
        for (uint32_t i = 0; i < n; i++)
            if (kept[i] != ref[i])
                fail_msg("round %d: position %u of %u: job %u, expected %u", round, i, n,
                         kept[i], ref[i]);
        pass(&f, 1000 + round); /* starts some: fair shares move */
        for (uint32_t j = 0; j < f.s->n_jobs; j++)
            if (job_state(&f, j) == SN_JOB_RUNNING && (j + round) % 3 == 0)
                assert_int_equal(sn_sched_finish(f.s, j, 1000 + round, NULL), SN_OK);
        check(f.s);
    }
    free(kept);
    free(ref);
    fx_close(&f);
}

/* EASY: A runs 40 GPUs until t=100 (estimate). Head B needs 48: blocked;
 * shadow = 100, extra = 24 + 40 - 48 = 16. C (24 GPUs, ends at 500) would
 * delay B: reservation. D (24 GPUs, ends at 50) backfills. Without
 * backfill C and D wait behind B (priority). */
static void easy_backfill(void **state)
{
    (void)state;
    struct sn_sim_shape sh = one_sn();
    for (int backfill = 1; backfill >= 0; backfill--) {
        struct sn_sched_config cfg;
        sn_sched_config_defaults(&cfg);
        cfg.backfill = backfill;
        cfg.preemption = false;
        struct fx f;
        fx_open(&f, &sh, &cfg);
        struct sn_job_spec js = job(40, 8);
        js.walltime_s = 100;
        assert_true(place(&f, submit(&f, js)));
        js = job(48, 8);
        js.submit_s = 1;
        uint32_t b = submit(&f, js);
        js = job(24, 8);
        js.submit_s = 2;
        js.walltime_s = 500;
        uint32_t c = submit(&f, js);
        js.submit_s = 3;
        js.walltime_s = 50;
        uint32_t d = submit(&f, js);
        pass(&f, 0);
        assert_int_equal(reason(&f, b), SN_PENDING_NO_FIT);
        if (backfill) {
            assert_int_equal(reason(&f, c), SN_PENDING_RESERVATION);
            assert_int_equal(job_state(&f, d), SN_JOB_RUNNING);
        } else {
            assert_int_equal(reason(&f, c), SN_PENDING_PRIORITY);
            assert_int_equal(reason(&f, d), SN_PENDING_PRIORITY);
        }
        fx_close(&f);
    }
}

/* Preemption: L1 and L2 (32 GPUs each, priority 0) started at 0, with
 * checkpoints every 100 s and 1000 s. At t=700 a priority-5 job H of 32
 * GPUs preempts L1 (700 mod 100 = 0 s lost + 10 s restart, x32) rather
 * than L2 (700 s lost). Before L's minimum runtime nothing is preempted;
 * with K = 1 per window, L1 is not preempted twice in one window. */
static void preemption_cheapest_bounded(void **state)
{
    (void)state;
    struct sn_sim_shape sh = one_sn();
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.min_runtime_s = 600;
    cfg.max_preemptions = 1;
    cfg.preemption_window_s = 10000;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    struct sn_job_spec js = job(32, 8);
    js.checkpoint_s = 100;
    js.restart_s = 10;
    uint32_t l1 = submit(&f, js);
    js.checkpoint_s = 1000;
    uint32_t l2 = submit(&f, js);
    pass(&f, 0);
    assert_int_equal(job_state(&f, l1), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, l2), SN_JOB_RUNNING);
    sn_sched_clear_decisions(f.s);
    js = job(32, 8);
    js.priority = 5;
    js.submit_s = 300;
    uint32_t h = submit(&f, js);
    pass(&f, 300); /* under the minimum runtime */
    assert_int_equal(job_state(&f, h), SN_JOB_PENDING);
    pass(&f, 700);
    assert_int_equal(job_state(&f, h), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, l1), SN_JOB_PENDING);
    assert_int_equal(job_state(&f, l2), SN_JOB_RUNNING);
    size_t n;
    const struct sn_decision *d = sn_sched_decisions(f.s, &n);
    assert_int_equal(n, 2);
    assert_int_equal(d[0].kind, SN_DECISION_PREEMPT);
    assert_int_equal(d[0].job, l1);
    assert_int_equal(d[0].cause, h);
    assert_int_equal(d[1].kind, SN_DECISION_START);
    assert_int_equal(d[1].job, h);
    /* H ends; L1 restarts at 800; another H at 1500 takes L2, not L1 (K=1),
     * although L2 (1500 - 0 s since start, mod 1000 = 500 s) costs more
     * than L1 (700 mod 100 = 0 s). */
    assert_int_equal(sn_sched_finish(f.s, h, 800, NULL), SN_OK);
    pass(&f, 800);
    assert_int_equal(job_state(&f, l1), SN_JOB_RUNNING);
    js.submit_s = 1500;
    uint32_t h2 = submit(&f, js);
    pass(&f, 1500);
    assert_int_equal(job_state(&f, h2), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, l1), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, l2), SN_JOB_PENDING);
    struct sn_job_info info;
    sn_sched_job_info(f.s, l1, &info);
    assert_int_equal(info.preemptions, 1);
    fx_close(&f);
}

/* Preemption starts from the topology: sn0's victim lost 500 s of work,
 * sn1's only 50 s: the preemptor goes to sn1. */
static void preemption_picks_domain(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.min_runtime_s = 0;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    struct sn_job_spec js = job(64, 8);
    js.checkpoint_s = 1000;
    uint32_t a = submit(&f, js);
    assert_true(sn_sched_try_place(f.s, a, 0)); /* sn0, started at 0 */
    uint32_t b = submit(&f, js);
    assert_true(sn_sched_try_place(f.s, b, 450)); /* sn1, started at 450 */
    check(f.s);
    assert_int_equal(gpus_in_sn(&f, a, 0), 64);
    js.priority = 1;
    uint32_t h = submit(&f, js);
    pass(&f, 500);
    assert_int_equal(job_state(&f, h), SN_JOB_RUNNING);
    assert_int_equal(job_state(&f, b), SN_JOB_PENDING);
    assert_int_equal(job_state(&f, a), SN_JOB_RUNNING);
    assert_int_equal(gpus_in_sn(&f, h, 1), 64);
    fx_close(&f);
}

/* A gang larger than a supernode preempts across supernodes, topology
 * first. 4 supernodes of 64 GPUs, each holding two 32-GPU low-priority
 * jobs (best fit: jobs 0,1 in sn0, 2,3 in sn1, 4,5 in sn2, 6,7 in sn3).
 * At t = 1,000 s, lost work since the last checkpoint is 1,000 s for jobs
 * without checkpoints and 0 s for jobs checkpointing every 100 s; the
 * cheap ones are 4, 5 and 7. A 96-GPU job of priority 1 needs two
 * supernodes: every supernode could hold 64 with its victims gone, so the
 * set is the two cheapest to free, sn2 (cost 0) and sn3 (32 x 1,000);
 * there the cheapest victims are 4, 5, 7 (3 x 32 = 96 GPUs): job 6 keeps
 * running although it is in the set, and sn0, sn1 are untouched. Before
 * the minimum runtime (600 s) nothing is preempted; an equal-priority gang
 * never preempts. */
static void preemption_multi_supernode(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.min_runtime_s = 600;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    uint32_t low[8];
    for (uint32_t i = 0; i < 8; i++) {
        struct sn_job_spec js = job(32, 8);
        js.checkpoint_s = (i == 4 || i == 5 || i == 7) ? 100 : 0;
        low[i] = submit(&f, js);
        assert_true(place(&f, low[i]));
        assert_int_equal(gpus_in_sn(&f, low[i], i / 2), 32);
    }
    sn_sched_clear_decisions(f.s);
    struct sn_job_spec js = job(96, 8);
    uint32_t same = submit(&f, js);
    pass(&f, 1000);
    assert_int_equal(job_state(&f, same), SN_JOB_PENDING); /* equal priority */
    assert_int_equal(sn_sched_cancel(f.s, same, NULL), SN_OK);
    js.priority = 1;
    js.submit_s = 500;
    uint32_t h = submit(&f, js);
    pass(&f, 500);
    assert_int_equal(job_state(&f, h), SN_JOB_PENDING); /* minimum runtime */
    pass(&f, 1000);
    assert_int_equal(job_state(&f, h), SN_JOB_RUNNING);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(job_state(&f, low[i]),
                         (i == 4 || i == 5 || i == 7) ? SN_JOB_PENDING : SN_JOB_RUNNING);
    assert_int_equal(gpus_in_sn(&f, h, 2), 64);
    assert_int_equal(gpus_in_sn(&f, h, 3), 32);
    size_t n;
    const struct sn_decision *d = sn_sched_decisions(f.s, &n);
    uint32_t preempts = 0;
    for (size_t i = 0; i < n; i++)
        if (d[i].kind == SN_DECISION_PREEMPT) {
            preempts++;
            assert_int_equal(d[i].cause, h);
        }
    assert_int_equal(preempts, 3);
    fx_close(&f);
}

/* Spares: one supernode of 8 servers, 8 spare GPUs. A 16-GPU job (groups
 * of 8) packs servers 0 and 1. GPU 3 fails: the job keeps running, GPU 3
 * swapped for a free GPU of the supernode (its own server is full: server
 * 2's first GPU, 16), with a REPLACE decision; the group now spans two
 * servers, which the invariants allow for a replaced job only. A failure
 * of server 2 then takes the spare: server 3's first GPU (24). Without
 * spares, or with replace_in_place off, the same failure requeues it. */
static void spare_replacement(void **state)
{
    (void)state;
    struct sn_sim_shape sh = one_sn();
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.spare_gpus_per_supernode = 8;
    for (int variant = 0; variant < 3; variant++) {
        cfg.spare_gpus_per_supernode = variant == 1 ? 0 : 8;
        cfg.replace_in_place = variant != 2;
        struct fx f;
        fx_open(&f, &sh, &cfg);
        uint32_t a = submit(&f, job(16, 8));
        assert_true(place(&f, a));
        uint32_t n;
        const uint32_t *g = sn_sched_job_gpus(f.s, a, &n);
        assert_int_equal(g[0], 0);
        assert_int_equal(g[15], 15);
        sn_sched_clear_decisions(f.s);
        assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_GPU, 3, 10, NULL), SN_OK);
        check(f.s);
        size_t nd;
        const struct sn_decision *d = sn_sched_decisions(f.s, &nd);
        assert_int_equal(nd, 1);
        if (variant > 0) {
            assert_int_equal(d[0].kind, SN_DECISION_INTERRUPT);
            assert_int_equal(job_state(&f, a), SN_JOB_PENDING);
            fx_close(&f);
            continue;
        }
        assert_int_equal(d[0].kind, SN_DECISION_REPLACE);
        assert_int_equal(job_state(&f, a), SN_JOB_RUNNING);
        g = sn_sched_job_gpus(f.s, a, &n);
        assert_int_equal(g[3], 16);
        assert_int_equal(sn_sched_gpu_owner(f.s, 3), SN_NONE);
        assert_int_equal(sn_sched_gpu_owner(f.s, 16), a);
        struct sn_job_info info;
        sn_sched_job_info(f.s, a, &info);
        assert_true(info.groups_split);
        assert_int_equal(info.interruptions, 1);
        assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_SERVER, 2, 20, NULL), SN_OK);
        check(f.s);
        g = sn_sched_job_gpus(f.s, a, &n);
        assert_int_equal(g[3], 24);
        struct sn_sched_stats st;
        sn_sched_stats(f.s, &st);
        assert_int_equal(st.replacements, 2);
        fx_close(&f);
    }
}

/* CPU and memory overselling. The shape's servers have 112 cores and
 * 2 TB. A job of 8 GPUs in one group needing 20 cores per GPU (160) fits
 * no server at ratio 1 (112) and fits at 1.5 (168); with 300 GB per GPU
 * (2.4 TB) it needs memory oversold by 1.25 (2.5 TB) as well. With 20
 * cores per GPU and ratio 1, a job of 8 single-GPU groups takes 5 GPUs
 * per server (100 of 112 cores): servers 0 and 1 get 5 and 3. */
static void cpu_memory_oversell(void **state)
{
    (void)state;
    struct sn_sim_shape sh = one_sn();
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    struct fx f;
    fx_open(&f, &sh, &cfg);
    struct sn_job_spec js = job(8, 8);
    js.cpu_cores_per_gpu = 20;
    uint32_t a = submit(&f, js);
    assert_false(place(&f, a));
    assert_int_equal(reason(&f, a), SN_PENDING_NO_FIT);
    struct sn_job_spec ones = job(8, 1);
    ones.cpu_cores_per_gpu = 20;
    uint32_t b = submit(&f, ones);
    assert_true(place(&f, b));
    uint32_t n;
    const uint32_t *g = sn_sched_job_gpus(f.s, b, &n);
    uint32_t per[8] = {0};
    for (uint32_t i = 0; i < n; i++)
        per[f.model->gpu_server[g[i]]]++;
    assert_int_equal(per[0] + per[1], 8);
    assert_true(per[0] == 5 || per[1] == 5);
    /* a corrupted counter is caught */
    f.s->srv_cpu_used[f.model->gpu_server[g[0]]] += 1;
    struct sn_error err = {0};
    assert_int_equal(sn_sched_check_invariants(f.s, &err), SN_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "host use"));
    f.s->srv_cpu_used[f.model->gpu_server[g[0]]] -= 1;
    fx_close(&f);
    cfg.cpu_oversell = 1.5;
    fx_open(&f, &sh, &cfg);
    a = submit(&f, js);
    assert_true(place(&f, a));
    js.memory_bytes_per_gpu = 300e9;
    uint32_t c = submit(&f, js);
    assert_false(place(&f, c));
    fx_close(&f);
    cfg.memory_oversell = 1.25;
    fx_open(&f, &sh, &cfg);
    c = submit(&f, js);
    assert_true(place(&f, c));
    fx_close(&f);
}

/* Failures interrupt every job touching the domain; failures nest; the
 * GPUs come back only when every covering domain is repaired. */
static void failures_and_repair(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 1;
    struct fx f;
    fx_open(&f, &sh, NULL);
    uint32_t a = submit(&f, job(8, 8));
    uint32_t b = submit(&f, job(8, 8));
    pass(&f, 0);
    uint32_t n;
    const uint32_t *ga = sn_sched_job_gpus(f.s, a, &n);
    uint32_t server_a = f.model->gpu_server[ga[0]];
    uint32_t gpu_a = ga[3];
    sn_sched_clear_decisions(f.s);
    assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_GPU, gpu_a, 10, NULL), SN_OK);
    check(f.s);
    assert_int_equal(job_state(&f, a), SN_JOB_PENDING);
    assert_int_equal(job_state(&f, b), SN_JOB_RUNNING);
    size_t nd;
    const struct sn_decision *d = sn_sched_decisions(f.s, &nd);
    assert_int_equal(nd, 1);
    assert_int_equal(d[0].kind, SN_DECISION_INTERRUPT);
    assert_int_equal(d[0].job, a);
    assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_SERVER, server_a, 11, NULL), SN_OK);
    check(f.s);
    struct sn_sched_stats st;
    sn_sched_stats(f.s, &st);
    assert_int_equal(st.gpus_down, 8);
    assert_int_equal(st.gpus_free_usable, 64 - 8 - 8);
    assert_int_equal(sn_sched_repair(f.s, SN_DOMAIN_SERVER, server_a, NULL), SN_OK);
    check(f.s);
    assert_true(sn_sched_gpu_down(f.s, gpu_a)); /* still failed on its own */
    sn_sched_stats(f.s, &st);
    assert_int_equal(st.gpus_down, 1);
    assert_int_equal(sn_sched_repair(f.s, SN_DOMAIN_GPU, gpu_a, NULL), SN_OK);
    assert_int_equal(sn_sched_repair(f.s, SN_DOMAIN_GPU, gpu_a, NULL), SN_ERR_INVALID);
    /* A leaf (pair attach) carries 4 of each server's 8 rails: 32 GPUs. A
     * power domain feeds every other server: 32 GPUs. Both hit job b. */
    assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_LEAF, 1, 20, NULL), SN_OK);
    check(f.s);
    sn_sched_stats(f.s, &st);
    assert_int_equal(st.gpus_down, 32);
    assert_int_equal(job_state(&f, b), SN_JOB_PENDING);
    assert_int_equal(sn_sched_repair(f.s, SN_DOMAIN_LEAF, 1, NULL), SN_OK);
    assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_POWER_DOMAIN, 0, 30, NULL), SN_OK);
    sn_sched_stats(f.s, &st);
    assert_int_equal(st.gpus_down, 32);
    assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_RACK, 99, 30, NULL), SN_ERR_INVALID);
    /* software crash */
    pass(&f, 40);
    assert_int_equal(job_state(&f, a), SN_JOB_RUNNING);
    assert_int_equal(sn_sched_interrupt(f.s, a, 50, NULL), SN_OK);
    struct sn_job_info info;
    sn_sched_job_info(f.s, a, &info);
    assert_int_equal(info.interruptions, 2);
    check(f.s);
    fx_close(&f);
}

/* The checker catches a GPU given to two jobs, a stale counter, a quota
 * overrun and an oversubscribed leaf. */
static void invariants_catch_corruption(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    struct fx f;
    fx_open(&f, &sh, NULL);
    uint32_t a = submit(&f, job(8, 8));
    uint32_t b = submit(&f, job(8, 8));
    pass(&f, 0);
    struct sn_error err = {0};
    struct sched_job *jb = &f.s->jobs[b];
    uint32_t saved = jb->gpus[0];
    jb->gpus[0] = f.s->jobs[a].gpus[0];
    assert_int_equal(sn_sched_check_invariants(f.s, &err), SN_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "invariant"));
    jb->gpus[0] = saved;
    check(f.s);
    f.s->srv_usable[5]++;
    sn_error_clear(&err);
    assert_int_equal(sn_sched_check_invariants(f.s, &err), SN_ERR_INTERNAL);
    f.s->srv_usable[5]--;
    f.s->tenants[0].quota_gpus = 8;
    sn_error_clear(&err);
    assert_int_equal(sn_sched_check_invariants(f.s, &err), SN_ERR_INTERNAL);
    f.s->tenants[0].quota_gpus = 0;
    jb->n_sn = 2;
    jb->spec.xsn_bytes_per_s = 1e15;
    f.s->leaf_load[f.model->gpu_leaf[jb->gpus[0]]] += 4e15;
    sn_error_clear(&err);
    assert_int_equal(sn_sched_check_invariants(f.s, &err), SN_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "leaf"));
    f.s->leaf_load[f.model->gpu_leaf[jb->gpus[0]]] -= 4e15;
    jb->n_sn = 1;
    check(f.s);
    fx_close(&f);
}

/* Servers of job id (distinct, GPUs in rank order). */
static uint32_t servers_of(struct fx *f, uint32_t id)
{
    uint32_t n, c = 0, seen[64];
    const uint32_t *g = sn_sched_job_gpus(f->s, id, &n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t srv = f->model->gpu_server[g[i]], k = 0;
        while (k < c && seen[k] != srv)
            k++;
        if (k == c && c < 64)
            seen[c++] = srv;
    }
    return c;
}

/* A degraded NVLink domain (sn_sched_set_one_server). Two supernodes of
 * 8 servers x 8 GPUs. r (16 in groups of 8) runs on sn0 (best fit ties to
 * the lower ID) before sn0 degrades, and keeps its 2 servers. Then: a
 * 4-GPU job of single-GPU groups goes to sn0 (48 free, best fit against
 * sn1's 64) whole on one server (with no limit, packing would still put
 * it on one, so the 12-GPU job of groups of 4 that follows is the test:
 * unlimited it would take a 8-GPU server and 4 of another; limited it
 * fits no server of sn0 and goes to sn1); a 64-GPU job fits only across
 * sn1's 52 and sn0's 44: pending "nvlink-domain". The limit lifted, it
 * starts across both. First fit skips sn0 for a 16-GPU job. */
static void degraded_domain_single_server(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    struct fx f;
    fx_open(&f, &sh, NULL);
    uint32_t r = submit(&f, job(16, 8));
    assert_true(place(&f, r));
    assert_int_equal(gpus_in_sn(&f, r, 0), 16);
    sn_sched_set_one_server(f.s, 0, true);
    assert_true(sn_sched_one_server(f.s, 0));
    assert_false(sn_sched_one_server(f.s, 1));
    assert_false(sn_sched_one_server(f.s, 2)); /* out of range */
    check(f.s);
    uint32_t a = submit(&f, job(4, 1));
    assert_true(place(&f, a));
    assert_int_equal(gpus_in_sn(&f, a, 0), 4);
    assert_int_equal(servers_of(&f, a), 1);
    uint32_t b = submit(&f, job(12, 4));
    assert_true(place(&f, b));
    assert_int_equal(gpus_in_sn(&f, b, 1), 12);
    uint32_t c = submit(&f, job(64, 8));
    pass(&f, 1);
    assert_int_equal(job_state(&f, c), SN_JOB_PENDING);
    assert_int_equal(reason(&f, c), SN_PENDING_DOMAIN);
    assert_string_equal(sn_pending_reason_name(SN_PENDING_DOMAIN), "nvlink-domain");
    /* The checker: a multi-server job placed after the limit breaks it. */
    f.s->sn_one_server[1] = 1;
    f.s->n_one_server++;
    struct sn_error err = {0};
    assert_int_equal(sn_sched_check_invariants(f.s, &err), SN_ERR_INTERNAL);
    assert_non_null(strstr(err.message, "single-server jobs only"));
    f.s->sn_one_server[1] = 0;
    f.s->n_one_server--;
    check(f.s);
    sn_sched_set_one_server(f.s, 0, false);
    pass(&f, 2);
    assert_int_equal(job_state(&f, c), SN_JOB_RUNNING);
    assert_int_equal(gpus_in_sn(&f, c, 0) + gpus_in_sn(&f, c, 1), 64);
    assert_true(gpus_in_sn(&f, c, 0) > 0);
    fx_close(&f);

    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.policy = SN_SCHED_FIRST_FIT;
    fx_open(&f, &sh, &cfg);
    sn_sched_set_one_server(f.s, 0, true);
    uint32_t d = submit(&f, job(16, 8));
    assert_true(place(&f, d));
    assert_int_equal(gpus_in_sn(&f, d, 1), 16);
    uint32_t e = submit(&f, job(8, 8));
    assert_true(place(&f, e));
    assert_int_equal(gpus_in_sn(&f, e, 0), 8);
    assert_int_equal(servers_of(&f, e), 1);
    fx_close(&f);
}

/* In-place replacement on a degraded domain stays on the failed GPU's
 * server: one supernode, 8 spares; a 4-GPU job on server 0 (GPUs 0-3)
 * loses GPU 1: the spare is GPU 4 (server 0), and when server 0's GPUs
 * 4-7 are taken too, the job is requeued rather than moved to server 1. */
static void degraded_domain_spares_stay(void **state)
{
    (void)state;
    struct sn_sim_shape sh = one_sn();
    struct sn_sched_config cfg;
    sn_sched_config_defaults(&cfg);
    cfg.spare_gpus_per_supernode = 8;
    struct fx f;
    fx_open(&f, &sh, &cfg);
    sn_sched_set_one_server(f.s, 0, true);
    uint32_t a = submit(&f, job(4, 1));
    assert_true(place(&f, a));
    uint32_t n;
    const uint32_t *g = sn_sched_job_gpus(f.s, a, &n);
    uint32_t srv = f.model->gpu_server[g[0]];
    assert_int_equal(servers_of(&f, a), 1);
    assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_GPU, g[1], 10, NULL), SN_OK);
    check(f.s);
    assert_int_equal(job_state(&f, a), SN_JOB_RUNNING);
    assert_int_equal(servers_of(&f, a), 1);
    g = sn_sched_job_gpus(f.s, a, &n);
    assert_int_equal(f.model->gpu_server[g[1]], srv);
    uint32_t first = f.model->server_first_gpu[srv];
    for (uint32_t k = first; k < first + 8; k++)
        if (sn_sched_gpu_owner(f.s, k) == SN_NONE && !sn_sched_gpu_down(f.s, k))
            sn_sched_cordon(f.s, k, true);
    assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_GPU, g[0], 20, NULL), SN_OK);
    check(f.s);
    assert_int_equal(job_state(&f, a), SN_JOB_PENDING);
    fx_close(&f);
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* One random job against the reference: placed exactly when the reference
 * finds a placement, on as few supernodes as the reference's minimum, and,
 * within one supernode, on one with the reference's best-fit free count. */
static void differential_job(struct fx *f, uint64_t *r, uint32_t *n_checked)
{
    uint32_t spg = f->model->supernodes[0].n_gpus;
    uint32_t server = sn_model_server_spec(f->model, 0)->gpus;
    uint32_t groups[5] = {1, 2, server / 2, server, server * 2};
    uint32_t g = groups[rnd(r) % 5];
    if (g > spg || g == 0)
        g = 1;
    uint32_t gpus = g * (uint32_t)(1 + rnd(r) % (f->model->n_gpus / g / 2 + 1));
    uint32_t best_free;
    uint32_t ref = sn_sched_reference_min_supernodes(f->s, gpus, g, &best_free);
    uint32_t before[16];
    for (uint32_t sn = 0; sn < f->model->n_supernodes; sn++)
        before[sn] = f->s->sn_usable[sn];
    uint32_t id = submit(f, job(gpus, g));
    bool placed = place(f, id);
    if (placed != (ref > 0))
        fail_msg("job of %u GPUs in groups of %u: placed %d, reference %u supernodes", gpus, g,
                 placed, ref);
    if (!placed) {
        assert_int_equal(sn_sched_cancel(f->s, id, NULL), SN_OK);
        return;
    }
    struct sn_job_info info;
    sn_sched_job_info(f->s, id, &info);
    assert_int_equal(info.n_supernodes, ref);
    uint32_t n;
    const uint32_t *gp = sn_sched_job_gpus(f->s, id, &n);
    if (ref == 1)
        assert_int_equal(before[f->model->gpu_supernode[gp[0]]], best_free);
    (*n_checked)++;
}

static void differential_random(void **state)
{
    (void)state;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    uint32_t checked = 0;
    for (int trial = 0; trial < 30; trial++) {
        struct sn_sim_shape sh;
        sn_sim_shape_defaults(&sh);
        sh.supernodes = 2 + (uint32_t)(rnd(&r) % 5);
        sh.servers = 2 + (uint32_t)(rnd(&r) % 3);
        sh.gpus_per_server = rnd(&r) % 2 ? 4 : 8;
        sh.nics = sh.gpus_per_server;
        struct sn_sched_config cfg;
        sn_sched_config_defaults(&cfg);
        cfg.preemption = false;
        struct fx f;
        fx_open(&f, &sh, &cfg);
        bool failed[64] = {0};
        for (int step = 0; step < 80; step++) {
            uint32_t k = (uint32_t)(rnd(&r) % 10);
            double now = step;
            if (k < 5) {
                differential_job(&f, &r, &checked);
            } else if (k < 7 && f.s->n_running > 0) {
                uint32_t id = f.s->running[rnd(&r) % f.s->n_running];
                assert_int_equal(sn_sched_finish(f.s, id, now, NULL), SN_OK);
            } else if (k == 7) {
                uint32_t g = (uint32_t)(rnd(&r) % f.model->n_gpus);
                sn_sched_cordon(f.s, g, !sn_sched_gpu_cordoned(f.s, g));
            } else if (k == 8) {
                uint32_t srv = (uint32_t)(rnd(&r) % f.model->n_servers);
                if (failed[srv])
                    assert_int_equal(sn_sched_repair(f.s, SN_DOMAIN_SERVER, srv, NULL), SN_OK);
                else
                    assert_int_equal(sn_sched_fail(f.s, SN_DOMAIN_SERVER, srv, now, NULL), SN_OK);
                failed[srv] = !failed[srv];
            } else {
                pass(&f, now);
            }
            check(f.s);
        }
        fx_close(&f);
    }
    assert_true(checked > 200); /* the comparison really ran */
}

/* Memory: < 256 bytes per GPU for the cluster part, < 1 KiB per job. */
static void memory_budget(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 100;
    struct fx f;
    fx_open(&f, &sh, NULL);
    for (int i = 0; i < 5000; i++)
        submit(&f, job(1 + (uint32_t)(i % 8), 1));
    pass(&f, 0);
    struct sn_sched_stats st;
    sn_sched_stats(f.s, &st);
    assert_true(st.n_running > 1000);
    assert_true(st.memory_per_gpu_bytes < 256);
    assert_true(st.memory_jobs_bytes / st.n_jobs < 1024);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(best_fit_supernode),
        cmocka_unit_test(fewest_supernodes),
        cmocka_unit_test(pod_first_three_tier),
        cmocka_unit_test(groups_pack_servers),
        cmocka_unit_test(group_never_spans_supernodes),
        cmocka_unit_test(spread_power_domains),
        cmocka_unit_test(health_threshold_and_cordon),
        cmocka_unit_test(bandwidth_admission),
        cmocka_unit_test(bandwidth_admission_spine_tier),
        cmocka_unit_test(quotas_three_levels),
        cmocka_unit_test(pools_dedicated_and_borrowing),
        cmocka_unit_test(queue_order),
        cmocka_unit_test(queue_order_kept),
        cmocka_unit_test(easy_backfill),
        cmocka_unit_test(preemption_cheapest_bounded),
        cmocka_unit_test(preemption_picks_domain),
        cmocka_unit_test(preemption_multi_supernode),
        cmocka_unit_test(preemption_respects_borrowing),
        cmocka_unit_test(preemption_checks_bandwidth_first),
        cmocka_unit_test(failures_and_repair),
        cmocka_unit_test(spare_replacement),
        cmocka_unit_test(cpu_memory_oversell),
        cmocka_unit_test(invariants_catch_corruption),
        cmocka_unit_test(degraded_domain_single_server),
        cmocka_unit_test(degraded_domain_spares_stay),
        cmocka_unit_test(differential_random),
        cmocka_unit_test(memory_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
