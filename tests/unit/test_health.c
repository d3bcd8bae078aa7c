/*
 * Unit tests of the health engine (lib/health/health_*.c): the facts reader,
 * baselines (learning, JSON round trip, the declared all_reduce minimum),
 * every detector of SN_DETECTOR_LIST (one case that fires and one that stays
 * quiet, on realistic nvidia-smi, nccl-tests, kernel, DCGM, dcgmi, topo and
 * facility inputs), scores, decay, hysteresis, re-test, escalation and
 * acceptance. The cluster is examples/good-64.yaml: 2 supernodes x 4 HGX
 * H100 servers (sn00-t00 ... sn01-t03), 64 GPUs, 18 NVLinks per GPU, one
 * cooling loop (sn00-loopL1) and power domains A, B per supernode.
 * Expected values are computed by hand in the comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <sn/health.h>
#include <sn/spec.h>

#include "health/health_int.h"
#include "health/ingest_int.h"
#include "sn_test.h"

/* ---- fixture ------------------------------------------------------------------ */

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_telem_store *store;
    struct sn_health_history *hist;
    struct sn_health_facts facts;
    struct sn_baseline base;
    struct sn_health_config cfg;
    struct sn_health_report *rep;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    char path[512];
    struct sn_error err = {0};
    assert_int_equal(sn_spec_parse_file(sn_test_path(path, sizeof(path), "examples/good-64.yaml"),
                                        &f->spec, &err),
                     SN_OK);
    assert_int_equal(sn_model_build(f->spec, &f->model, &err), SN_OK);
    assert_int_equal(sn_telem_store_new(NULL, &f->store, &err), SN_OK);
    sn_health_config_default(&f->cfg);
    assert_int_equal(sn_health_history_new(f->store, &f->cfg, &f->hist, &err), SN_OK);
    sn_health_facts_init(&f->facts);
    sn_baseline_init(&f->base);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sn_health_report_free(f->rep);
    sn_baseline_release(&f->base);
    sn_health_facts_release(&f->facts);
    sn_health_history_free(f->hist);
    sn_telem_store_free(f->store);
    sn_model_free(f->model);
    sn_spec_free(f->spec);
    free(f);
    return 0;
}

static void feed(struct fx *f, enum sn_telem_format fmt, const char *source, const char *host,
                 const char *text)
{
    struct sn_telem_opts o = {.source = source, .host = host};
    struct sn_telem_sink sink = sn_health_history_sink(f->hist);
    struct sn_error err = {0};
    assert_int_equal(sn_telem_parse_buffer(fmt, &o, &sink, text, strlen(text), NULL, &err), SN_OK);
}

static void facts(struct fx *f, enum sn_facts_kind k, const char *text)
{
    struct sn_error err = {0};
    enum sn_err rc = sn_health_facts_read(&f->facts, k, text, strlen(text), "facts.csv", &err);
    if (rc != SN_OK)
        fail_msg("%s", err.message);
}

static const struct sn_health_report *analyze(struct fx *f, double now, struct sn_health_state *s)
{
    struct sn_health_input in = {f->model, f->store, f->hist, &f->base,
                                 &f->facts, &f->cfg,  now,     NULL};
    struct sn_error err = {0};
    sn_health_report_free(f->rep);
    f->rep = NULL;
    enum sn_err rc = sn_health_analyze(&in, s, &f->rep, &err);
    if (rc != SN_OK)
        fail_msg("%s", err.message);
    return f->rep;
}

/* Findings of detector d (on any entity when id is SN_NONE). */
static unsigned count(const struct sn_health_report *r, enum sn_detector d, uint32_t id)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        n += r->findings[i].detector == d && (id == SN_NONE || r->findings[i].id == id);
    return n;
}

static const struct sn_health_finding *first(const struct sn_health_report *r, enum sn_detector d)
{
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].detector == d)
            return &r->findings[i];
    fail_msg("no %s finding", sn_detector_info(d)->name);
    return NULL;
}

static uint32_t gpu(const struct fx *f, const char *name)
{
    uint32_t g = sn_model_find_gpu(f->model, name);
    assert_int_not_equal(g, SN_NONE);
    return g;
}

/* One nvidia-smi --query-gpu row per GPU of the 8 servers, pdsh-prefixed, in
 * the field order of FLEET_HEADER. A healthy H100 under load: 62 C, 690 W,
 * 100 %, 1980 MHz, 70000 MiB, PCIe gen 5 x16, no clock events, no errors. */
#define FLEET_HEADER                                                                               \
    "timestamp, index, uuid, pci.bus_id, temperature.gpu, power.draw [W], utilization.gpu [%], "   \
    "clocks.sm [MHz], memory.used [MiB], pcie.link.gen.current, pcie.link.gen.max, "               \
    "pcie.link.width.current, pcie.link.width.max, clocks_event_reasons.active, "                  \
    "ecc.errors.uncorrected.volatile.total, ecc.errors.corrected.volatile.total, "                 \
    "remapped_rows.pending, remapped_rows.failure"

struct row {
    const char *raw; /* replaces the whole row after the uuid and bus id */
    bool skip;
    double temp, power, util, clock, mem_mib;
    int gen, width, dbe, sbe;
    unsigned reasons;
    const char *pending, *failure;
};

typedef void (*row_fn)(unsigned server, unsigned g, struct row *r);

static const unsigned bus_of[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};

static void fleet(struct fx *f, const char *time, row_fn mod)
{
    size_t cap = 1 << 16, at = 0;
    char *buf = malloc(cap);
    for (unsigned s = 0; s < 8; s++) {
        char host[16];
        snprintf(host, sizeof(host), "sn0%u-t0%u", s / 4, s % 4);
        at += (size_t)snprintf(buf + at, cap - at, "%s: %s\n", host, FLEET_HEADER);
        for (unsigned g = 0; g < 8; g++) {
            struct row r = {NULL, false, 62, 690, 100, 1980, 70000, 5, 16, 0, 0, 0, "No", "No"};
            if (mod)
                mod(s, g, &r);
            if (r.skip)
                continue;
            at += (size_t)snprintf(buf + at, cap - at,
                                   "%s: %s, %u, GPU-00000000-0000-0000-0000-0000000%02u%03u, "
                                   "00000000:%02X:00.0, ",
                                   host, time, g, s, g, bus_of[g]);
            if (r.raw)
                at += (size_t)snprintf(buf + at, cap - at, "%s\n", r.raw);
            else
                at += (size_t)snprintf(buf + at, cap - at,
                                       "%.0f, %.2f W, %.0f %%, %.0f MHz, %.0f MiB, %d, 5, %d, 16, "
                                       "0x%016x, %d, %d, %s, %s\n",
                                       r.temp, r.power, r.util, r.clock, r.mem_mib, r.gen, r.width,
                                       r.reasons, r.dbe, r.sbe, r.pending, r.failure);
        }
    }
    feed(f, SN_TELEM_FMT_SMI_CSV, "fleet.csv", NULL, buf);
    free(buf);
}

#define T0 "2024/05/01 12:00:00.000"
#define NOW0 1714564800.0 /* 2024-05-01T12:00:00Z */

/* ---- a healthy fleet is quiet ---------------------------------------------------- */

static void test_healthy_fleet_is_quiet(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(r->n_findings, 0);
    assert_int_equal(r->unmapped_gpus, 0);
    for (uint32_t g = 0; g < r->n_gpus; g++) {
        assert_near(r->gpus[g].score, 100, 0);
        assert_int_equal(r->gpus[g].action, SN_HEALTH_ACT_NONE);
    }
    assert_int_equal(sn_bitset_count(&r->excluded), 0);
}

/* ---- per-GPU readings -------------------------------------------------------------- */

static void mod_dbe(unsigned s, unsigned g, struct row *r)
{
    if (s == 1 && g == 2)
        r->dbe = 2;
    r->sbe = 3; /* corrected errors alone are not a DBE */
}
static void mod_remap(unsigned s, unsigned g, struct row *r)
{
    if (s == 2 && g == 5)
        r->pending = "Yes";
    if (s == 3 && g == 6)
        r->failure = "Yes";
}
static void mod_err(unsigned s, unsigned g, struct row *r)
{
    if (s == 4 && g == 1)
        r->raw = "ERR!, ERR!, ERR!, ERR!, ERR!, ERR!, ERR!, ERR!, ERR!, ERR!, ERR!, ERR!, ERR!, "
                 "ERR!";
    if (s == 5 && g == 7)
        r->skip = true;
}

static void test_memory_detectors(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, mod_dbe);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_ECC_DBE, SN_NONE), 1);
    assert_int_equal(first(r, SN_DET_ECC_DBE)->id, gpu(f, "sn00-t01-gpu2"));
    assert_int_equal(count(r, SN_DET_SBE_RATE, SN_NONE), 0); /* one snapshot: no rate */
    assert_int_equal(r->n_findings, 1);
    /* DBE weight 80: score 20, action reset-gpu */
    assert_near(r->gpus[gpu(f, "sn00-t01-gpu2")].score, 20, 0);
    assert_int_equal(r->gpus[gpu(f, "sn00-t01-gpu2")].action, SN_HEALTH_ACT_RESET_GPU);

    fleet(f, T0, mod_remap);
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_ECC_DBE, SN_NONE), 0); /* dbe back to 0 */
    assert_int_equal(count(r, SN_DET_REMAP_PENDING, gpu(f, "sn00-t02-gpu5")), 1);
    assert_int_equal(count(r, SN_DET_REMAP_FAILED, gpu(f, "sn00-t03-gpu6")), 1);
    assert_int_equal(r->gpus[gpu(f, "sn00-t03-gpu6")].action, SN_HEALTH_ACT_SERVICE);
    assert_int_equal(r->n_findings, 2);
}

static void test_dropped_gpu_detectors(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, mod_err);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_GPU_UNREADABLE, gpu(f, "sn01-t00-gpu1")), 1);
    assert_int_equal(count(r, SN_DET_GPU_MISSING, gpu(f, "sn01-t01-gpu7")), 1);
    assert_int_equal(count(r, SN_DET_GPU_MISSING, SN_NONE), 1);
    assert_int_equal(r->gpus[gpu(f, "sn01-t01-gpu7")].action, SN_HEALTH_ACT_REBOOT);
    /* Xid 79 from the kernel log on sn00-t00's bus 0x3a (index 2 by the CSV's bus ids). */
    feed(f, SN_TELEM_FMT_KMSG, "kern.log", NULL,
         "May  1 12:01:02 sn00-t00 kernel: [ 8123.4] NVRM: Xid (PCI:0000:3a:00): 79, pid=0, "
         "name=, GPU has fallen off the bus.\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, gpu(f, "sn00-t00-gpu2")), 1);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, SN_NONE), 1);
    assert_near(r->gpus[gpu(f, "sn00-t00-gpu2")].score, 0, 0);
}

/* ---- Xid buckets ------------------------------------------------------------------- */

static void test_xid_buckets(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    /* sn00-t00 bus 0x18 = gpu0: Xid 13 once (application, info); bus 0x2a =
     * gpu1: Xid 31 three times (repeated -> reset); 0x5d gpu3: Xid 119 (GSP
     * timeout, reset); 0x9a gpu4: Xid 143 (service); 0xab gpu5: unknown 999. */
    feed(f, SN_TELEM_FMT_KMSG, "dmesg.txt", "sn00-t00",
         "[ 100.0] NVRM: Xid (PCI:0000:18:00): 13, pid=4021, name=python3, Graphics Exception\n"
         "[ 101.0] NVRM: Xid (PCI:0000:2a:00): 31, pid=4022, name=python3, MMU Fault\n"
         "[ 102.0] NVRM: Xid (PCI:0000:2a:00): 31, pid=4122, name=python3, MMU Fault\n"
         "[ 103.0] NVRM: Xid (PCI:0000:2a:00): 31, pid=4222, name=python3, MMU Fault\n"
         "[ 104.0] NVRM: Xid (PCI:0000:5d:00): 119, pid='<unknown>', name=<unknown>, Timeout "
         "waiting for RPC from GSP!\n"
         "[ 105.0] NVRM: Xid (PCI:0000:9a:00): 143, pid='<unknown>', name=<unknown>, GPU init\n"
         "[ 106.0] NVRM: Xid (PCI:0000:ab:00): 999, pid='<unknown>', name=<unknown>, ?\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_XID_APPLICATION, gpu(f, "sn00-t00-gpu0")), 1);
    assert_int_equal(r->gpus[gpu(f, "sn00-t00-gpu0")].action, SN_HEALTH_ACT_NONE);
    assert_near(r->gpus[gpu(f, "sn00-t00-gpu0")].score, 100, 0); /* weight 0 */
    assert_int_equal(count(r, SN_DET_XID_REPEATED, gpu(f, "sn00-t00-gpu1")), 1);
    assert_int_equal(count(r, SN_DET_XID_APPLICATION, gpu(f, "sn00-t00-gpu1")), 0);
    assert_near(first(r, SN_DET_XID_REPEATED)->value, 3, 0);
    assert_int_equal(count(r, SN_DET_XID_RESET, gpu(f, "sn00-t00-gpu3")), 1);
    assert_int_equal(count(r, SN_DET_XID_SERVICE, gpu(f, "sn00-t00-gpu4")), 1);
    assert_int_equal(count(r, SN_DET_XID_UNKNOWN, gpu(f, "sn00-t00-gpu5")), 1);
    assert_int_equal(r->n_findings, 5);
}

/* ---- peers: slow GPU, throttling, clock events ------------------------------------- */

static void bench_rows(struct fx *f, double slow_tflops)
{
    char *buf = malloc(1 << 14);
    size_t at = (size_t)snprintf(buf, 1 << 14, "# GEMM BF16, 8192^3\nhost,gpu,test,value,unit\n");
    for (unsigned s = 0; s < 8; s++)
        for (unsigned g = 0; g < 8; g++) {
            /* peers 700.0 .. 707.0 TFLOP/s: median 703.5, MAD 2 */
            double v = (s == 6 && g == 3) ? slow_tflops : 700.0 + (s + g) % 8;
            at += (size_t)snprintf(buf + at, (1 << 14) - at, "sn0%u-t0%u,%u,gemm,%.1f,TFLOP/s\n",
                                   s / 4, s % 4, g, v);
        }
    facts(f, SN_FACTS_BENCH, buf);
    free(buf);
}

static void test_slow_gpu(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    bench_rows(f, 612.0); /* 13% below the median: fires */
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_SLOW_GPU, SN_NONE), 1);
    const struct sn_health_finding *x = first(r, SN_DET_SLOW_GPU);
    assert_int_equal(x->id, gpu(f, "sn01-t02-gpu3"));
    assert_near(x->value, 612e12, 1);
    assert_near(x->expected, 703.5e12, 1e9); /* 63 peers 700..707 + 612: median 703.5 */

    sn_health_facts_release(&f->facts);
    bench_rows(f, 680.0); /* robust z = 0.6745*(680-703.5)/2 = -7.9, but only 3.3% below */
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_SLOW_GPU, SN_NONE), 0);
    /* ... unless the learned baseline says more is expected. */
    struct sn_error err = {0};
    struct sn_baseline_entry *e;
    assert_int_equal(sn_baseline_learn(&f->base, f->model, f->store, NULL, &f->facts, &err), SN_OK);
    e = (struct sn_baseline_entry *)sn_baseline_find(&f->base, SN_BASELINE_GEMM, "H100-SXM5-80GB");
    assert_non_null(e);
    e->median = 740e12; /* 680 < 0.95 * 740 = 703 */
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_SLOW_GPU, gpu(f, "sn01-t02-gpu3")), 1);
}

/* snd reads one benchmark text per server (source: the server's name):
 * each row's evidence names its own input, not the last one read (the slow
 * GPU's evidence once named sn01-t03 for a GPU on sn01-t02). */
static void test_slow_gpu_evidence_source(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    for (unsigned s = 0; s < 8; s++) {
        char buf[1024], src[32];
        size_t at = (size_t)snprintf(buf, sizeof(buf), "host,gpu,test,value,unit\n");
        for (unsigned g = 0; g < 8; g++)
            at += (size_t)snprintf(buf + at, sizeof(buf) - at, "sn0%u-t0%u,%u,gemm,%.1f,TFLOP/s\n",
                                   s / 4, s % 4, g,
                                   (s == 6 && g == 3) ? 612.0 : 700.0 + (s + g) % 8);
        snprintf(src, sizeof(src), "sn0%u-t0%u", s / 4, s % 4);
        struct sn_error err = {0};
        assert_int_equal(sn_health_facts_read(&f->facts, SN_FACTS_BENCH, buf, at, src, &err),
                         SN_OK);
    }
    assert_int_equal(f->facts.n_bench_sources, 8);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    const struct sn_health_finding *x = first(r, SN_DET_SLOW_GPU);
    assert_non_null(x);
    assert_int_equal(x->id, gpu(f, "sn01-t02-gpu3"));
    assert_non_null(strstr(x->evidence, "sn01-t02:5: gemm 612.0"));
}

static void mod_hot(unsigned s, unsigned g, struct row *r)
{
    if (s == 0 && g == 4)
        r->temp = 88, r->clock = 1410, r->reasons = 0x48; /* HW slowdown + HW thermal */
    if (s == 0 && g == 5)
        r->temp = 88, r->clock = 1965, r->reasons = 0x4; /* hot, full clock, SW power cap */
}

static void test_throttle_and_clock_events(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, mod_hot);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_THERMAL_THROTTLE, SN_NONE), 1);
    assert_int_equal(count(r, SN_DET_THERMAL_THROTTLE, gpu(f, "sn00-t00-gpu4")), 1);
    assert_near(first(r, SN_DET_THERMAL_THROTTLE)->expected, 0.85 * 1980, 1e-9);
    assert_int_equal(count(r, SN_DET_CLOCK_EVENT, SN_NONE), 1);
    assert_int_equal(count(r, SN_DET_CLOCK_EVENT, gpu(f, "sn00-t00-gpu4")), 1);
    assert_non_null(strstr(first(r, SN_DET_CLOCK_EVENT)->evidence, "hw_slowdown,hw_thermal"));
    /* 100 - 50 - 15: held below its peers' clocks while hot, it is excluded */
    assert_near(r->gpus[gpu(f, "sn00-t00-gpu4")].score, 35, 0);
    assert_true(r->gpus[gpu(f, "sn00-t00-gpu4")].excluded);
}

/* ---- links ----------------------------------------------------------------------------- */

static void mod_pcie(unsigned s, unsigned g, struct row *r)
{
    if (s == 1 && g == 0)
        r->width = 8;
    if (s == 1 && g == 1)
        r->gen = 4; /* busy at gen 4: fires */
    if (s == 1 && g == 2)
        r->gen = 1, r->util = 0; /* idle at gen 1: power saving, quiet */
}

static void test_pcie(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, mod_pcie);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_PCIE_DEGRADED, SN_NONE), 2);
    assert_int_equal(count(r, SN_DET_PCIE_DEGRADED, gpu(f, "sn00-t01-gpu0")), 1);
    assert_int_equal(count(r, SN_DET_PCIE_DEGRADED, gpu(f, "sn00-t01-gpu1")), 1);
}

static void nvlink_text(char *buf, size_t cap, const char *bad_link_line)
{
    size_t at = 0;
    for (unsigned g = 0; g < 8; g++) {
        at += (size_t)snprintf(buf + at, cap - at,
                               "GPU %u: NVIDIA H100 80GB HBM3 (UUID: "
                               "GPU-00000000-0000-0000-0000-000000001%03u)\n",
                               g, g);
        for (unsigned l = 0; l < 18; l++)
            at +=
                (size_t)snprintf(buf + at, cap - at, "\t Link %u: %s\n", l,
                                 g == 3 && l == 7 && bad_link_line ? bad_link_line : "26.562 GB/s");
    }
}

static void test_nvlinks(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    char buf[1 << 14];
    nvlink_text(buf, sizeof(buf), NULL);
    feed(f, SN_TELEM_FMT_SMI_NVLINK, "nvlink.txt", "sn00-t01", buf);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(r->n_findings, 0);

    nvlink_text(buf, sizeof(buf), "<inactive>");
    feed(f, SN_TELEM_FMT_SMI_NVLINK, "nvlink.txt", "sn00-t01", buf);
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE, SN_NONE), 1);
    const struct sn_health_finding *x = first(r, SN_DET_NVLINK_INACTIVE);
    assert_int_equal(x->entity, SN_HEALTH_ENT_LINK);
    assert_int_equal(x->gpu, gpu(f, "sn00-t01-gpu3"));
    const struct sn_link *l = &f->model->links[x->id];
    assert_int_equal(l->a_id, gpu(f, "sn00-t01-gpu3"));
    assert_int_equal(l->a_port, 7);
    assert_int_equal(r->n_links, 1);
    assert_near(r->links[0].score, 50, 0);
    assert_near(r->gpus[x->gpu].score, 50, 0);

    nvlink_text(buf, sizeof(buf), "13.281 GB/s");
    feed(f, SN_TELEM_FMT_SMI_NVLINK, "nvlink.txt", "sn00-t01", buf);
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE, SN_NONE), 0);
    assert_int_equal(count(r, SN_DET_NVLINK_DOWNGRADED, SN_NONE), 1);
    assert_near(first(r, SN_DET_NVLINK_DOWNGRADED)->value, 13.281e9, 1e6);
}

static void prom_replay(struct fx *f, double v, double t_ms)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n"
             "DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu=\"6\",UUID=\"GPU-00000000-0000-0000-0000-"
             "000000003006\",pci_bus_id=\"00000000:BA:00.0\",Hostname=\"sn00-t03\"} %.0f %.0f\n",
             v, t_ms);
    feed(f, SN_TELEM_FMT_PROM, "dcgm.prom", NULL, buf);
}

static void test_link_errors(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    prom_replay(f, 5, 1714564800000.0);
    prom_replay(f, 40, 1714565100000.0); /* +35: quiet */
    const struct sn_health_report *r = analyze(f, NOW0 + 300, NULL);
    assert_int_equal(count(r, SN_DET_LINK_ERRORS, SN_NONE), 0);
    prom_replay(f, 905, 1714565400000.0); /* +900 since first sight: fires */
    r = analyze(f, NOW0 + 600, NULL);
    assert_int_equal(count(r, SN_DET_LINK_ERRORS, gpu(f, "sn00-t03-gpu6")), 1);
    assert_near(first(r, SN_DET_LINK_ERRORS)->value, 900, 0);
}

static void test_topology(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    char path[512];
    FILE *fp =
        fopen(sn_test_path(path, sizeof(path), "tests/data/telemetry/smi_topo_tab.txt"), "r");
    assert_non_null(fp);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    feed(f, SN_TELEM_FMT_SMI_TOPO, "topo.txt", "sn00-t02", buf); /* all NV18: quiet */
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_TOPO_NOT_NVLINK, SN_NONE), 0);
    /* GPU5-GPU6 through the CPU instead of NVLink. */
    char *cell = strstr(buf, "GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \tNV18");
    assert_non_null(cell);
    memcpy(cell + strlen("GPU5\tNV18\tNV18\tNV18\tNV18\tNV18\t X \t"), "SYS ", 4);
    feed(f, SN_TELEM_FMT_SMI_TOPO, "topo.txt", "sn00-t02", buf);
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_TOPO_NOT_NVLINK, SN_NONE), 1);
    assert_int_equal(first(r, SN_DET_TOPO_NOT_NVLINK)->id,
                     sn_model_find_server(f->model, "sn00-t02"));
}

/* all_reduce_perf -b 16G -e 16G -g 1 over 8 ranks on each of n hosts; times
 * from busbw = 2(r-1)/r x size/time for r ranks. One host (r = 8, factor
 * 1.75): 470.00 GB/s at 63968 us, 380.00 at 79118 us. Four hosts (r = 32,
 * factor 1.9375): 16 GiB / 71583 us = 240.00 GB/s algbw, 465.00 busbw. */
static void nccl_hosts(struct fx *f, const char *const *hosts, unsigned n, const char *time_us,
                       const char *algbw, const char *busbw)
{
    char buf[16384];
    size_t at = (size_t)snprintf(buf, sizeof(buf),
                                 "# nThread 1 nGpus 1 minBytes 17179869184 maxBytes 17179869184 "
                                 "step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
                                 "validation: 1 graph: 0\n#\n# Using devices\n");
    for (unsigned r = 0; r < 8 * n; r++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at,
                               "#  Rank %2u Group  0 Pid  4010%u on %s device  %u [0x%02x] "
                               "NVIDIA H100 80GB HBM3\n",
                               r, r, hosts[r / 8], r % 8, bus_of[r % 8]);
    snprintf(buf + at, sizeof(buf) - at,
             "#\n#                                                              out-of-place      "
             "                 in-place\n"
             "#       size         count      type   redop    root     time   algbw   busbw "
             "#wrong     time   algbw   busbw #wrong\n"
             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)     "
             "       (us)  (GB/s)  (GB/s)\n"
             " 17179869184    4294967296     float     sum      -1    %s  %s  %s      0    %s  "
             "%s  %s      0\n"
             "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %s\n#\n",
             time_us, algbw, busbw, time_us, algbw, busbw, busbw);
    feed(f, SN_TELEM_FMT_NCCL, "all_reduce_perf.log", NULL, buf);
}

static void nccl_16g(struct fx *f, const char *host, const char *time_us, const char *algbw,
                     const char *busbw)
{
    nccl_hosts(f, &host, 1, time_us, algbw, busbw);
}

static void test_busbw_declared_baseline(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    fleet(f, T0, NULL);
    assert_int_equal(sn_baseline_add_declared(&f->base, &err), SN_OK);
    nccl_16g(f, "sn00-t00", "63968", "268.57", "470.00");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_BUSBW_LOW, SN_NONE), 0);
    nccl_16g(f, "sn01-t03", "79118", "217.14", "380.00");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_BUSBW_LOW, SN_NONE), 1);
    const struct sn_health_finding *x = first(r, SN_DET_BUSBW_LOW);
    assert_int_equal(x->id, sn_model_find_server(f->model, "sn01-t03"));
    assert_near(x->value, 380e9, 1);
    assert_near(x->expected, 431e9, 1);
    /* server finding: every GPU of the server scores 100 - 50 */
    assert_near(r->gpus[gpu(f, "sn01-t03-gpu5")].score, 50, 0);
    assert_near(r->servers[x->id].score, 50, 0);
}


/* ---- nccl-tests verdicts ---------------------------------------------------------------- */

/* One all_reduce run on sn00-t01: the rows given, then the footer (oob) or
 * nothing (footer NULL). */
static void nccl_run_text(struct fx *f, const char *ranks, const char *rows, const char *footer)
{
    char buf[8192];
    snprintf(buf, sizeof(buf),
             "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 "
             "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n%s#\n"
             "#       size         count      type   redop    root     time   algbw   busbw "
             "#wrong     time   algbw   busbw #wrong\n"
             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)     "
             "       (us)  (GB/s)  (GB/s)\n%s%s",
             ranks, rows, footer ? footer : "");
    feed(f, SN_TELEM_FMT_NCCL, "all_reduce_perf.log", "sn00-t01", buf);
}

static const char two_ranks[] =
    "#  Rank  0 Group  0 Pid  4010 on sn00-t01 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
    "#  Rank  1 Group  0 Pid  4011 on sn00-t01 device  1 [0x2a] NVIDIA H100 80GB HBM3\n";
static const char good_rows[] =
    "     1048576        262144     float     sum      -1    20.00   52.43   52.43      0    "
    "20.00   52.43   52.43      0\n"
    "    16777216       4194304     float     sum      -1    200.0   83.89   83.89      0    "
    "200.0   83.89   83.89      0\n";
static const char ok_footer[] = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 68.16 \n";

static void test_nccl_verdicts_quiet(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    nccl_run_text(f, two_ranks, good_rows, ok_footer);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_NCCL_WRONG, SN_NONE), 0);
    assert_int_equal(count(r, SN_DET_NCCL_ABORTED, SN_NONE), 0);
    assert_int_equal(count(r, SN_DET_NCCL_RANKS, SN_NONE), 0);
    assert_int_equal(count(r, SN_DET_BUSBW_COLLAPSE, SN_NONE), 0);
    assert_int_equal(sn_health_history_nccl_run_count(f->hist), 1);
}

static void test_nccl_wrong_and_oob(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    nccl_run_text(f, two_ranks,
                  "     1048576        262144     float     sum      -1    20.00   52.43   52.43  "
                  "    0    20.00   52.43   52.43     17\n",
                  ok_footer);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_NCCL_WRONG, sn_model_find_server(f->model, "sn00-t01")), 1);
    assert_near(first(r, SN_DET_NCCL_WRONG)->value, 17, 0);
    assert_non_null(strstr(first(r, SN_DET_NCCL_WRONG)->evidence, "all_reduce_perf.log:9"));
    /* "Out of bounds values : N FAILED" alone (old layouts without #wrong). */
    nccl_run_text(f, two_ranks, good_rows, "# Out of bounds values : 3 FAILED\n# Avg bus bandwidth : 1\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_NCCL_WRONG, SN_NONE), 2);
}

static void test_nccl_aborted_and_empty(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    nccl_run_text(f, two_ranks, good_rows,
                  "sn00-t01: Test NCCL failure common.cu:1119 'unhandled system error'\n"
                  " .. sn00-t01 pid 4010: Test failure common.cu:915\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_NCCL_ABORTED, SN_NONE), 1); /* one run, one abort */
    assert_non_null(strstr(first(r, SN_DET_NCCL_ABORTED)->evidence, "aborted after 2 data rows"));
    /* A preamble and header with no row, cut off. */
    nccl_run_text(f, two_ranks, "", NULL);
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_NCCL_ABORTED, SN_NONE), 2);
}

static void test_nccl_ranks_inconsistent(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    nccl_run_text(f,
                  "#  Rank  0 Group  0 Pid  4010 on sn00-t01 device  0 [0x18] NVIDIA H100\n"
                  "#  Rank  0 Group  0 Pid  4011 on sn00-t01 device  0 [0x18] NVIDIA H100\n",
                  good_rows, ok_footer);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_NCCL_RANKS, SN_NONE), 1);
    assert_near(first(r, SN_DET_NCCL_RANKS)->value, 1, 0);
}

static void test_busbw_collapse(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    /* 83.89 GB/s at 16 MiB, then 30.00 at 128 MiB: below 0.5 x the peak. */
    char rows[1024];
    snprintf(rows, sizeof(rows), "%s%s", good_rows,
             "   134217728      33554432     float     sum      -1   4473.9   30.00   30.00      0"
             "   4473.9   30.00   30.00      0\n");
    nccl_run_text(f, two_ranks, rows, ok_footer);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_BUSBW_COLLAPSE, SN_NONE), 1);
    assert_near(first(r, SN_DET_BUSBW_COLLAPSE)->value, 30e9, 1);
    assert_near(first(r, SN_DET_BUSBW_COLLAPSE)->expected, 0.5 * 83.89e9, 1);
    /* 50.00 GB/s is above half the peak: quiet. */
    sn_health_history_free(f->hist);
    struct sn_error err = {0};
    assert_int_equal(sn_health_history_new(f->store, &f->cfg, &f->hist, &err), SN_OK);
    snprintf(rows, sizeof(rows), "%s%s", good_rows,
             "   134217728      33554432     float     sum      -1   2684.4   50.00   50.00      0"
             "   2684.4   50.00   50.00      0\n");
    nccl_run_text(f, two_ranks, rows, ok_footer);
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_BUSBW_COLLAPSE, SN_NONE), 0);
}

/* "fallen off the bus" without an Xid line is Xid 79; the same GPU's Xid 79
 * and message are one event. */
static void test_fallen_off_without_xid(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    feed(f, SN_TELEM_FMT_KMSG, "kern.log", "sn00-t02",
         "[ 1843.308145] NVRM: The NVIDIA GPU 0000:3a:00.0\n"
         "               NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
         "               NVRM: fallen off the bus and is not responding to commands.\n"
         "[ 1843.400000] NVRM: Xid (PCI:0000:3a:00): 79, pid='<unknown>', name=<unknown>, GPU "
         "has fallen off the bus.\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, gpu(f, "sn00-t02-gpu2")), 1);
    assert_non_null(strstr(first(r, SN_DET_GPU_OFF_BUS)->evidence, "1 time"));
}

/* dcgm-exporter's Xid series: the last-Xid gauge (with err_code) and the
 * windowed count per xid label; zero is no event. */
static void test_prom_xid_series(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    feed(f, SN_TELEM_FMT_PROM, "metrics.prom", "sn00-t01",
         "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"
         "DCGM_FI_DEV_XID_ERRORS{gpu=\"3\",Hostname=\"sn00-t01\",err_code=\"79\",err_msg=\"GPU "
         "has fallen off the bus\"} 79\n"
         "DCGM_FI_DEV_XID_ERRORS{gpu=\"4\",Hostname=\"sn00-t01\"} 0\n"
         "DCGM_EXP_XID_ERRORS_COUNT{gpu=\"2\",Hostname=\"sn00-t01\",window_size_in_ms=\"300000\","
         "xid=\"48\"} 1\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, gpu(f, "sn00-t01-gpu3")), 1);
    assert_int_equal(count(r, SN_DET_ECC_DBE, gpu(f, "sn00-t01-gpu2")), 1);
    assert_near(r->gpus[gpu(f, "sn00-t01-gpu4")].score, 100, 0);
}

/* --query-gpu=index,pci.bus_id (identifiers only) ties the bus id of an
 * Xid to its GPU: the finding lands on that one GPU, not the server. */
static void test_csv_identity_mapping(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_SMI_CSV, "sn01-t02.map.csv", "sn01-t02",
         "index, pci.bus_id\n3, 00000000:9B:00.0\n");
    feed(f, SN_TELEM_FMT_KMSG, "sn01-t02.dmesg", "sn01-t02",
         "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, "
         "name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP!\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_XID_RESET, SN_NONE), 1);
    assert_int_equal(first(r, SN_DET_XID_RESET)->entity, SN_HEALTH_ENT_GPU);
    assert_int_equal(first(r, SN_DET_XID_RESET)->id, gpu(f, "sn01-t02-gpu3"));
    /* Its neighbour is not blamed: no finding, not excluded (its score is
     * unknown: an identity row is no reading). */
    assert_true(isnan(r->gpus[gpu(f, "sn01-t02-gpu2")].score));
    assert_false(sn_bitset_test(&r->excluded, gpu(f, "sn01-t02-gpu2")));
}

/* dcgmi diag results that name no GPU land on the host's GPUs whether the
 * host's nvidia-smi CSV comes before or after them. */
static const char node_level_diag[] =
    "+---------------------------+------------------------------------------------+\n"
    "| Diagnostic                | Result                                         |\n"
    "+===========================+================================================+\n"
    "|-----  Deployment  --------+------------------------------------------------|\n"
    "| software                  | Fail                                           |\n"
    "+---------------------------+------------------------------------------------+\n";

static void test_diag_node_level_any_order(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_DCGMI_DIAG, "sn01-t01.diag.txt", "sn01-t01", node_level_diag);
    fleet(f, T0, NULL); /* the CSV after the diag */
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    unsigned after = count(r, SN_DET_DIAG_FAIL, SN_NONE);
    assert_int_equal(after, 8);
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, gpu(f, "sn01-t01-gpu7")), 1);
    /* The other order, in a fresh store: the same findings. */
    sn_health_history_free(f->hist);
    sn_telem_store_free(f->store);
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &f->store, &err), SN_OK);
    assert_int_equal(sn_health_history_new(f->store, &f->cfg, &f->hist, &err), SN_OK);
    fleet(f, T0, NULL);
    feed(f, SN_TELEM_FMT_DCGMI_DIAG, "sn01-t01.diag.txt", "sn01-t01", node_level_diag);
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, SN_NONE), after);
}

/* Node-level diag results on a host the store knows no GPU of (issue 25:
 * a 3.x "Fail" without the Metadata row, alone in its file, read 0
 * findings): the server gets the finding with section, test and line. A
 * 4.x overall "Fail" whose per-GPU rows all pass is a failure of every GPU,
 * not a pass. */
static void test_diag_fail_without_gpus_lands_on_server(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_DCGMI_DIAG, "sn01-t02.diag.txt", "sn01-t02",
         "+---------------------------+------------------------------------------------+\n"
         "| Diagnostic                | Result                                         |\n"
         "+===========================+================================================+\n"
         "|-----  Deployment  --------+------------------------------------------------|\n"
         "| Denylist                  | Pass                                           |\n"
         "| Persistence Mode          | Fail                                           |\n"
         "+-----  Hardware  ----------+------------------------------------------------+\n"
         "| GPU Memory                | Fail - All                                     |\n"
         "+---------------------------+------------------------------------------------+\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, SN_NONE), 2);
    const struct sn_health_finding *x = first(r, SN_DET_DIAG_FAIL);
    assert_int_equal(x->entity, SN_HEALTH_ENT_SERVER);
    assert_non_null(strstr(x->evidence, "line 6: Deployment 'Persistence Mode' failed"));
    feed(f, SN_TELEM_FMT_DCGMI_DIAG, "sn00-t03.diag.txt", "sn00-t03",
         "+-----  Hardware  ----------+------------------------------------------------+\n"
         "| memory                    | Fail                                           |\n"
         "|                           | GPU0: Pass                                     |\n"
         "|                           | GPU1: Pass                                     |\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, SN_NONE), 4);
}

/* A topo -m cut inside a row: the cells it lost are no evidence. */
static void test_topology_truncated_is_quiet(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    feed(f, SN_TELEM_FMT_SMI_TOPO, "sn00-t03.topo.txt", "sn00-t03",
         "\tGPU0\tGPU1\tGPU2\tCPU Affinity\n"
         "GPU0\t X \tNV18\tNV18\t0-55\n"
         "GPU1\tNV18\t X \tNV18\t0-55\n"
         "GPU2\tNV18");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_TOPO_NOT_NVLINK, SN_NONE), 0);
}

/* ---- dcgmi diag ------------------------------------------------------------------------ */

static void test_diag_fail(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    char path[512];
    FILE *fp =
        fopen(sn_test_path(path, sizeof(path), "tests/data/telemetry/dcgmi_diag_3x.txt"), "r");
    assert_non_null(fp);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    feed(f, SN_TELEM_FMT_DCGMI_DIAG, "diag.txt", "sn00-t01", buf);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    /* PCIe failed on GPU 6; the Deployment "Page Retirement/Row Remap" Fail
     * names GPU 3 in its warning, so the parser puts it there. GPU 2's
     * Targeted Power "Warn" is no diag-fail. */
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, gpu(f, "sn00-t01-gpu6")), 1);
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, gpu(f, "sn00-t01-gpu3")), 1);
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, gpu(f, "sn00-t01-gpu2")), 0);
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, SN_NONE), 2);
    assert_int_equal(r->gpus[gpu(f, "sn00-t01-gpu6")].action, SN_HEALTH_ACT_DRAIN);
    /* ... but it is a diag-warn finding. */
    assert_int_equal(count(r, SN_DET_DIAG_WARN, gpu(f, "sn00-t01-gpu2")), 1);
}

/* Skip is no pass; "Inforom" is a test, not an "Info" detail row; DCGM's
 * string "gpu_id". */
static void test_diag_skip_inforom_string_id(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    feed(f, SN_TELEM_FMT_DCGMI_DIAG, "diag.txt", "sn00-t02",
         "+---------------------------+------------------------------------------------+\n"
         "| Diagnostic                | Result                                         |\n"
         "+===========================+================================================+\n"
         "|-----  Metadata  ----------+------------------------------------------------|\n"
         "| GPU Device IDs Detected   | 2330,2330,2330,2330,2330,2330,2330,2330        |\n"
         "|-----  Deployment  --------+------------------------------------------------|\n"
         "| Inforom                   | Fail - GPU: 5                                  |\n"
         "+-----  Integration  -------+------------------------------------------------+\n"
         "| PCIe                      | Skip - All                                     |\n"
         "+---------------------------+------------------------------------------------+\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_DIAG_FAIL, gpu(f, "sn00-t02-gpu5")), 1);
    assert_non_null(strstr(first(r, SN_DET_DIAG_FAIL)->evidence, "'Inforom' failed"));
    assert_int_equal(count(r, SN_DET_DIAG_SKIP, SN_NONE), 8);
    /* A skipped test costs no score, but it is a warning: the run is no pass. */
    assert_near(r->gpus[gpu(f, "sn00-t02-gpu1")].score, 100, 0);
    assert_int_equal(first(r, SN_DET_DIAG_SKIP)->severity, SN_HEALTH_SEV_WARN);
    feed(f, SN_TELEM_FMT_DCGMI_DIAG_JSON, "diag.json", "sn00-t03",
         "{\"DCGM GPU Diagnostic\": {\"test_categories\": [{\"category\": \"Hardware\", "
         "\"tests\": [{\"name\": \"GPU Memory\", \"results\": [{\"gpu_id\": \"4\", "
         "\"status\": \"Skip\"}]}]}]}}");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_DIAG_SKIP, gpu(f, "sn00-t03-gpu4")), 1);
}

/* ---- phantom occupation ---------------------------------------------------------------- */

static void mod_idle_held(unsigned s, unsigned g, struct row *r)
{
    if (s == 7 && g == 0)
        r->util = 0, r->mem_mib = 40960;
}

static void test_phantom(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, mod_idle_held);
    fleet(f, "2024/05/01 12:15:00.000", mod_idle_held);
    feed(f, SN_TELEM_FMT_SMI_CSV, "apps.csv", "sn01-t03",
         "timestamp, gpu_bus_id, gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
         "2024/05/01 12:15:00.000, 00000000:18:00.0, GPU-00000000-0000-0000-0000-000000007000, "
         "51234, /usr/bin/python3, 40950 MiB\n");
    /* 900 s held at 0% by pid 51234, which belongs to no live job. */
    const struct sn_health_report *r = analyze(f, NOW0 + 900, NULL);
    assert_int_equal(count(r, SN_DET_PHANTOM, gpu(f, "sn01-t03-gpu0")), 1);
    assert_near(first(r, SN_DET_PHANTOM)->value, 900, 0);
    /* Only 300 s so far: quiet. */
    r = analyze(f, NOW0 + 300, NULL);
    assert_int_equal(count(r, SN_DET_PHANTOM, SN_NONE), 0);
    /* The process belongs to a live job: quiet. */
    facts(f, SN_FACTS_JOBS, "job,host,pid\ntrain-42,sn01-t03,51234\n");
    r = analyze(f, NOW0 + 900, NULL);
    assert_int_equal(count(r, SN_DET_PHANTOM, SN_NONE), 0);
}

static void mod_sbe1(unsigned s, unsigned g, struct row *r)
{
    if (s == 0 && g == 7)
        r->sbe = 10;
    if (s == 0 && g == 6)
        r->sbe = 10;
}
static void mod_sbe2(unsigned s, unsigned g, struct row *r)
{
    if (s == 0 && g == 7)
        r->sbe = 510; /* +500 in 2 h = 250/h > 100/h */
    if (s == 0 && g == 6)
        r->sbe = 60; /* +50 in 2 h = 25/h */
}

static void test_sbe_rate(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, mod_sbe1);
    fleet(f, "2024/05/01 14:00:00.000", mod_sbe2);
    const struct sn_health_report *r = analyze(f, NOW0 + 7200, NULL);
    assert_int_equal(count(r, SN_DET_SBE_RATE, SN_NONE), 1);
    assert_int_equal(first(r, SN_DET_SBE_RATE)->id, gpu(f, "sn00-t00-gpu7"));
    assert_near(first(r, SN_DET_SBE_RATE)->value, 250, 1e-9);
}

/* ---- facility ---------------------------------------------------------------------------- */

static void loop_readings(struct fx *f, double b4_flow, double b3_return_offset)
{
    char buf[8192];
    size_t at = (size_t)snprintf(buf, sizeof(buf), "time,kind,name,part,metric,value,unit\n");
    for (unsigned k = 0; k < 3; k++)
        for (unsigned b = 1; b <= 4; b++) {
            /* 4 branches at 22.5 L/min, 30 C supply, 41 C return (heat 247.5) */
            double flow = b == 4 ? b4_flow : 22.5 - 0.1 * (b % 2);
            double ret = 41.0 + (b == 3 ? b3_return_offset : 0) + 0.1 * k;
            at += (size_t)snprintf(buf + at, sizeof(buf) - at,
                                   "2024-05-01T12:0%u:00Z,loop,sn00-loopL1,branch-%u,flow,%.1f,"
                                   "L/min\n"
                                   "2024-05-01T12:0%u:00Z,loop,sn00-loopL1,branch-%u,supply_temp,"
                                   "30.0,C\n"
                                   "2024-05-01T12:0%u:00Z,loop,sn00-loopL1,branch-%u,return_temp,"
                                   "%.1f,C\n",
                                   k, b, flow, k, b, k, b, ret);
        }
    feed(f, SN_TELEM_FMT_FACILITY_CSV, "facility.csv", NULL, buf);
}

static void test_cooling(void **state)
{
    struct fx *f = *state;
    uint32_t loop = 0;
    loop_readings(f, 21.5, 0); /* branch-4 4.2% below the median: quiet */
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(r->n_findings, 0);
    teardown(state);
    setup(state);
    f = *state;
    loop_readings(f, 15.0, 0); /* 33% below: fires */
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_FLOW_LOW, loop), 1);
    assert_int_equal(first(r, SN_DET_FLOW_LOW)->entity, SN_HEALTH_ENT_LOOP);
    assert_near(first(r, SN_DET_FLOW_LOW)->value, 15.0, 1e-9);
    assert_int_equal(count(r, SN_DET_SENSOR_DRIFT, SN_NONE), 0);
    teardown(state);
    setup(state);
    f = *state;
    loop_readings(f, 22.5, 4.0); /* branch-3 return +4 C, same flow: the sensor */
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_SENSOR_DRIFT, loop), 1);
    assert_non_null(strstr(first(r, SN_DET_SENSOR_DRIFT)->evidence, "branch-3 return_temp"));
    assert_int_equal(count(r, SN_DET_FLOW_LOW, SN_NONE), 0);
}

static void test_power(void **state)
{
    struct fx *f = *state;
    char buf[4096];
    size_t at = (size_t)snprintf(buf, sizeof(buf), "time,kind,name,part,metric,value,unit\n");
    for (unsigned k = 0; k < 6; k++) {
        /* L1 sags 230 -> 222 V (slope 1.6 V/step x 5 steps = 8 V = 3.5% of 226) */
        at += (size_t)snprintf(buf + at, sizeof(buf) - at,
                               "2024-05-01T12:%02u:00Z,feed,sn00-pdA,L1,voltage,%.1f,V\n"
                               "2024-05-01T12:%02u:00Z,feed,sn00-pdA,L2,voltage,230.5,V\n"
                               "2024-05-01T12:%02u:00Z,feed,sn00-pdA,L3,voltage,229.8,V\n"
                               "2024-05-01T12:%02u:00Z,feed,sn00-pdB,L1,current,101,A\n"
                               "2024-05-01T12:%02u:00Z,feed,sn00-pdB,L2,current,99,A\n"
                               "2024-05-01T12:%02u:00Z,feed,sn00-pdB,L3,current,%.0f,A\n",
                               k * 5, 230 - 1.6 * k, k * 5, k * 5, k * 5, k * 5, k * 5,
                               k < 5 ? 100.0 : 70.0);
    }
    feed(f, SN_TELEM_FMT_FACILITY_CSV, "feeds.csv", NULL, buf);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    /* pdA: L1 drift fires; latest voltages 222, 230.5, 229.8: mean 227.43, worst
     * deviation 5.43 = 2.39% > 2%: imbalance fires too. pdB: currents 101, 99,
     * 70: mean 90, worst 20 = 22% > 20%; current drift of L3 (a step, slope
     * over 6 points) also counts. */
    uint32_t pda = 0, pdb = 1;
    assert_int_equal(count(r, SN_DET_FEED_DRIFT, pda), 1);
    assert_int_equal(count(r, SN_DET_PHASE_IMBALANCE, pda), 1);
    assert_near(first(r, SN_DET_PHASE_IMBALANCE)->value, (227.4333333 - 222) / 227.4333333, 1e-6);
    assert_int_equal(count(r, SN_DET_PHASE_IMBALANCE, pdb), 1);
    /* quiet: a balanced, flat feed */
    teardown(state);
    setup(state);
    f = *state;
    feed(f, SN_TELEM_FMT_FACILITY_CSV, "feeds.csv", NULL,
         "time,kind,name,part,metric,value,unit\n"
         "2024-05-01T12:00:00Z,feed,sn01-pdA,L1,current,100,A\n"
         "2024-05-01T12:00:00Z,feed,sn01-pdA,L2,current,98,A\n"
         "2024-05-01T12:00:00Z,feed,sn01-pdA,L3,current,102,A\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(r->n_findings, 0);
}

/* ---- configuration and slow nodes ---------------------------------------------------- */

static void software(struct fx *f, const char *odd_mtu, const char *odd_driver)
{
    char buf[4096];
    size_t at = (size_t)snprintf(buf, sizeof(buf), "host,component,version\n");
    for (unsigned s = 0; s < 8; s++)
        at += (size_t)snprintf(buf + at, sizeof(buf) - at,
                               "sn0%u-t0%u,driver,%s\nsn0%u-t0%u,mtu,%s\nsn0%u-t0%u,nccl,2.21.5\n",
                               s / 4, s % 4, s == 5 ? odd_driver : "550.54.15", s / 4, s % 4,
                               s == 2 ? odd_mtu : "9000", s / 4, s % 4);
    facts(f, SN_FACTS_SOFTWARE, buf);
}

static void test_config_drift(void **state)
{
    struct fx *f = *state;
    software(f, "9000", "550.54.15");
    facts(f, SN_FACTS_MATRIX, "component,version\nmtu,9000\ndriver,550.54.15\ndriver,550.90.07\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(r->n_findings, 0);
    sn_health_facts_release(&f->facts);
    /* The spec's case: one node at MTU 1500 among 9000s. */
    software(f, "1500", "535.161.08");
    facts(f, SN_FACTS_MATRIX, "component,version\nmtu,9000\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_CONFIG_MATRIX, sn_model_find_server(f->model, "sn00-t02")), 1);
    assert_non_null(strstr(first(r, SN_DET_CONFIG_MATRIX)->evidence, "mtu 1500"));
    /* driver has no matrix row: judged against the majority (7 of 8) */
    assert_int_equal(count(r, SN_DET_CONFIG_MAJORITY, sn_model_find_server(f->model, "sn01-t01")),
                     1);
    assert_non_null(strstr(first(r, SN_DET_CONFIG_MAJORITY)->evidence, "(7 of 8)"));
    assert_int_equal(r->n_findings, 2);
}

static void test_slow_node_three_steps(void **state)
{
    struct fx *f = *state;
    facts(f, SN_FACTS_NODE,
          "host,metric,value,unit\n"
          "sn00-t00,busbw,46.1,GB/s\nsn00-t01,busbw,45.8,GB/s\nsn00-t02,busbw,46.3,GB/s\n"
          "sn00-t03,busbw,45.9,GB/s\nsn01-t00,busbw,46.0,GB/s\nsn01-t01,busbw,31.2,GB/s\n"
          "sn01-t02,busbw,46.2,GB/s\nsn01-t03,busbw,22.4,GB/s\n"
          "sn01-t01,softirq,62,%\nsn00-t00,softirq,8,%\n"
          "sn01-t03,pfc_pause,48211,count\nsn00-t00,pfc_pause,120,count\n"
          "sn00-t01,pfc_pause,98,count\nsn00-t02,pfc_pause,130,count\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_SLOW_NODE, SN_NONE), 2);
    uint32_t a = sn_model_find_server(f->model, "sn01-t01"),
             b = sn_model_find_server(f->model, "sn01-t03");
    assert_int_equal(count(r, SN_DET_SLOW_NODE, a), 1);
    assert_int_equal(count(r, SN_DET_SLOW_NODE, b), 1);
    for (uint32_t i = 0; i < r->n_findings; i++) {
        if (r->findings[i].id == a)
            assert_non_null(strstr(r->findings[i].evidence, "step 2: softirq 62%"));
        if (r->findings[i].id == b)
            assert_non_null(strstr(r->findings[i].evidence, "step 3: pfc_pause 48211"));
    }
}

/* ---- scores, decay, hysteresis, re-test, escalation ---------------------------------- */

static void mod_dbe_only(unsigned s, unsigned g, struct row *r)
{
    if (s == 0 && g == 0)
        r->dbe = 1;
}

static void test_scores_hysteresis_retest(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    struct sn_health_state *st;
    assert_int_equal(sn_health_state_new(f->model, &st, &err), SN_OK);
    uint32_t g = gpu(f, "sn00-t00-gpu0");
    fleet(f, T0, mod_dbe_only);
    const struct sn_health_report *r = analyze(f, NOW0, st);
    assert_near(r->gpus[g].score, 20, 0);
    assert_true(r->gpus[g].excluded);
    assert_true(sn_bitset_test(&r->excluded, g));
    assert_int_equal(sn_bitset_count(&r->excluded), 1);
    /* thresholds 90, 70, 50: the GPU is in all three sets */
    assert_int_equal(r->n_thresholds, 3);
    for (unsigned t = 0; t < 3; t++)
        assert_int_equal(sn_bitset_count(&r->exclude[t]), 1);
    assert_int_equal(r->gpus[g].action, SN_HEALTH_ACT_RESET_GPU);
    /* The reset is done and the problem persists: escalate to reboot. */
    sn_health_state_action_done(st, g, SN_HEALTH_ACT_RESET_GPU, NOW0 + 60);
    r = analyze(f, NOW0 + 60, st);
    assert_int_equal(r->gpus[g].action, SN_HEALTH_ACT_REBOOT);
    /* The fault clears. One half-life later the penalty is 40: score 60, still
     * excluded (readmit needs 80 and a re-test). */
    fleet(f, "2024/05/01 13:01:00.000", NULL);
    r = analyze(f, NOW0 + 60 + 3600, st);
    assert_near(r->gpus[g].score, 60, 1e-9);
    assert_true(r->gpus[g].excluded);
    /* Two half-lives: penalty 20, score 80 but no re-test: still excluded. */
    r = analyze(f, NOW0 + 60 + 7200, st);
    assert_near(r->gpus[g].score, 80, 1e-9);
    assert_true(r->gpus[g].excluded);
    assert_false(sn_bitset_test(&r->exclude[0], g) == false); /* 80 < 90 */
    assert_false(sn_bitset_test(&r->exclude[1], g));          /* 80 >= 70 */
    /* A failed re-test does not readmit; a passed one does. */
    sn_health_state_retest(st, g, false, NOW0 + 7300);
    r = analyze(f, NOW0 + 60 + 7300, st);
    assert_true(r->gpus[g].excluded);
    sn_health_state_retest(st, g, true, NOW0 + 7400);
    r = analyze(f, NOW0 + 60 + 7400, st);
    assert_false(r->gpus[g].excluded);
    assert_int_equal(sn_bitset_count(&r->excluded), 0);
    sn_health_state_free(st);
}

/* ---- baselines -------------------------------------------------------------------------- */

static void test_baseline_learn_and_json(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    bench_rows(f, 612.0);
    nccl_16g(f, "sn00-t00", "63968", "268.57", "470.00");
    nccl_16g(f, "sn00-t01", "64800", "265.12", "463.97");
    nccl_16g(f, "sn00-t02", "63500", "270.55", "473.47");
    loop_readings(f, 22.5, 0);
    assert_int_equal(sn_baseline_add_declared(&f->base, &err), SN_OK);
    assert_int_equal(sn_baseline_learn(&f->base, f->model, f->store, f->hist, &f->facts, &err),
                     SN_OK);
    const struct sn_baseline_entry *e =
        sn_baseline_find(&f->base, SN_BASELINE_GEMM, "H100-SXM5-80GB");
    assert_non_null(e);
    assert_int_equal(e->count, 64);
    assert_near(e->median, 703.5e12, 1e9);
    /* 700..707 each 8 times, one 701 replaced by 612: |x - 703.5| is 0.5 x16,
     * 1.5 x16, 2.5 x15, ...: the median of 64 is (1.5 + 2.5) / 2 = 2.0 */
    assert_near(e->mad, 2.0e12, 1e9);
    e = sn_baseline_find(&f->base, SN_BASELINE_BUSBW, "all_reduce/8/17179869184");
    assert_non_null(e);
    assert_int_equal(e->count, 3);
    assert_near(e->median, 470.00e9, 1e6);
    assert_near(e->mad, 3.47e9, 1e6);
    assert_near(e->min_ok, 431e9, 0); /* the declared minimum stays */
    e = sn_baseline_find(&f->base, SN_BASELINE_FLOW, "sn00-loopL1/branch-2");
    assert_non_null(e);
    assert_near(e->median, 22.5, 1e-9);
    assert_int_equal(e->count, 3);
    e = sn_baseline_find(&f->base, SN_BASELINE_FLOW, "sn00-loopL1/branch-1");
    assert_near(e->median, 22.4, 1e-9);

    char *json = NULL;
    assert_int_equal(sn_baseline_to_json(&f->base, &json, &err), SN_OK);
    struct sn_baseline b2;
    sn_baseline_init(&b2);
    assert_int_equal(sn_baseline_from_json(&b2, json, strlen(json), "b.json", &err), SN_OK);
    assert_int_equal(b2.n, f->base.n);
    for (uint32_t i = 0; i < b2.n; i++) {
        assert_string_equal(b2.e[i].key, f->base.e[i].key);
        assert_rel(b2.e[i].median, f->base.e[i].median, 1e-9);
        assert_int_equal(b2.e[i].count, f->base.e[i].count);
    }
    char *json2 = NULL;
    assert_int_equal(sn_baseline_to_json(&b2, &json2, &err), SN_OK);
    assert_string_equal(json, json2);
    free(json);
    free(json2);
    sn_baseline_release(&b2);

    /* bad inputs */
    sn_baseline_init(&b2);
    struct sn_error e1 = {0}, e2 = {0}, e3 = {0};
    assert_int_equal(sn_baseline_from_json(&b2, "{\"format\":", 10, "b.json", &e1), SN_ERR_SYNTAX);
    assert_non_null(strstr(e1.message, "b.json:1:"));
    const char *v2 = "{\"format\":\"sn-health-baseline\",\"version\":2,\"entries\":[]}";
    assert_int_equal(sn_baseline_from_json(&b2, v2, strlen(v2), "b.json", &e2), SN_ERR_INVALID);
    assert_non_null(strstr(e2.message, "version: expected 1"));
    const char *bad = "{\"format\":\"sn-health-baseline\",\"version\":1,\"entries\":[{\"kind\":"
                      "\"busbw\",\"key\":\"x\",\"median\":-1}]}";
    assert_int_equal(sn_baseline_from_json(&b2, bad, strlen(bad), "b.json", &e3), SN_ERR_INVALID);
    assert_string_equal(e3.message,
                        "b.json: entries[0].median: expected a non-negative number or null");
    sn_baseline_release(&b2);
}

/* ---- facts reader ------------------------------------------------------------------------ */

static void test_facts_errors(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    const char *a = "host,gpu,test,value,unit\nsn00-t00,0,gemm,700,TB/s\n";
    assert_int_equal(sn_health_facts_read(&f->facts, SN_FACTS_BENCH, a, strlen(a), "b.csv", &err),
                     SN_ERR_INVALID);
    assert_string_equal(err.message, "b.csv:2:17: '700TB/s' is a bandwidth: expected a compute "
                                     "rate such as '989TFLOP/s'");
    sn_error_clear(&err);
    const char *b = "# x\nhost,gpu,test,value\n";
    assert_int_equal(sn_health_facts_read(&f->facts, SN_FACTS_BENCH, b, strlen(b), "b.csv", &err),
                     SN_ERR_SYNTAX);
    assert_string_equal(err.message, "b.csv:2:1: the sn-bench header lacks the column 'unit' "
                                     "(expected host,gpu,test,value,unit)");
    sn_error_clear(&err);
    const char *c = "time,kind,host,job\n2024-05-01T12:00:00Z,crash,sn00-t00,j1\n";
    assert_int_equal(sn_health_facts_read(&f->facts, SN_FACTS_EVENTS, c, strlen(c), "e.csv", &err),
                     SN_ERR_INVALID);
    assert_string_equal(err.message,
                        "e.csv:2:22: 'crash' is not an event kind (expected job_start, job_end, "
                        "failure, interruption or preemption)");
    const char *d = "unit , value, test, gpu, host\nTFLOP/s, 989, gemm, 3, sn00-t00\n";
    assert_int_equal(sn_health_facts_read(&f->facts, SN_FACTS_BENCH, d, strlen(d), "b.csv", &err),
                     SN_OK);
    assert_int_equal(f->facts.n_bench, 1);
    assert_int_equal(f->facts.bench[0].gpu, 3);
    assert_near(f->facts.bench[0].value, 989e12, 0);
}

/* ---- acceptance ------------------------------------------------------------------------- */

static void test_accept(void **state)
{
    struct fx *f = *state;
    struct sn_error err = {0};
    fleet(f, T0, NULL);
    bench_rows(f, 612.0); /* sn01-t02 gpu3 slow: phase 1 fails there */
    /* phase 3: GEMM under mixed load: 4% slower everywhere on sn00, 18% on
     * sn01-t00 gpu0 */
    char buf[8192];
    size_t at = (size_t)snprintf(buf, sizeof(buf), "host,gpu,test,value,unit\n");
    for (unsigned s = 0; s < 4; s++)
        for (unsigned g = 0; g < 8; g++)
            at += (size_t)snprintf(buf + at, sizeof(buf) - at,
                                   "sn00-t0%u,%u,gemm_mixed,%.1f,TFLOP/s\n", s, g,
                                   0.96 * (700.0 + (s + g) % 8));
    at += (size_t)snprintf(buf + at, sizeof(buf) - at, "sn01-t00,0,gemm_mixed,%.1f,TFLOP/s\n",
                           0.82 * 700.0);
    facts(f, SN_FACTS_BENCH, buf);
    /* phase 2: 30 rounds of all_reduce over all of sn00 (4 hosts x 8 GPUs), stable */
    static const char *const sn00[] = {"sn00-t00", "sn00-t01", "sn00-t02", "sn00-t03"};
    for (unsigned k = 0; k < 30; k++)
        nccl_hosts(f, sn00, 4, "71583", "240.00", "465.00");
    facts(f, SN_FACTS_EVENTS,
          "time,kind,host,job\n"
          "2024-05-01T00:00:00Z,job_start,,j1\n"
          "2024-05-01T00:00:00Z,job_start,,j2\n"
          "2024-05-02T00:00:00Z,job_start,,j3\n"
          "2024-05-02T00:00:00Z,job_start,,j4\n"
          "2024-05-03T00:00:00Z,failure,sn00-t01,j1\n"
          "2024-05-03T00:00:00Z,interruption,sn00-t01,j1\n"
          "2024-05-05T00:00:00Z,preemption,,j4\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    struct sn_health_input in = {f->model, f->store, f->hist, &f->base,
                                 &f->facts, &f->cfg,  NOW0,    NULL};
    struct sn_accept_report *a = NULL;
    assert_int_equal(sn_health_accept(&in, r, &a, &err), SN_OK);
    assert_int_equal(a->n_nodes, 8);
    uint32_t t00 = sn_model_find_server(f->model, "sn00-t00"),
             s12 = sn_model_find_server(f->model, "sn01-t02"),
             s10 = sn_model_find_server(f->model, "sn01-t00");
    assert_true(a->nodes[t00].accepted);
    assert_false(a->nodes[s12].accepted);
    assert_true(a->nodes[s12].failed & (1u << SN_ACCEPT_P1_GEMM));
    assert_false(a->nodes[s10].accepted);
    assert_true(a->nodes[s10].failed & (1u << SN_ACCEPT_P3_INTERFERENCE));
    /* sn01 ran no phase-2 rounds */
    assert_true(a->nodes[s10].failed & (1u << SN_ACCEPT_P2_ROUNDS));
    assert_int_equal(a->accepted, 4);
    assert_int_equal(a->rejected, 4);
    /* grey release: 4 days, 8 servers = 768 node-hours, 1 failure */
    assert_true(a->has_grey);
    assert_near(a->grey.period_s, 4 * 86400, 0);
    assert_near(a->grey.mtbf_node_hours, 768, 1e-9);
    assert_near(a->grey.interruption_rate, 0.25, 1e-12);
    assert_near(a->grey.preemption_rate, 0.25, 1e-12);
    sn_accept_report_free(a);
}

/* Phase 2 needs rounds that span the whole supernode: rank 0 inside it is
 * not enough. */
static uint32_t accept_p2_failed(struct fx *f, const char *server)
{
    struct sn_error err = {0};
    struct sn_health_input in = {f->model, f->store, f->hist, &f->base,
                                 &f->facts, &f->cfg,  NOW0,    NULL};
    struct sn_accept_report *a = NULL;
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(sn_health_accept(&in, r, &a, &err), SN_OK);
    uint32_t s = sn_model_find_server(f->model, server);
    uint32_t failed = a->nodes[s].failed & (1u << SN_ACCEPT_P2_ROUNDS);
    if (failed)
        assert_non_null(strstr(a->nodes[s].detail[SN_ACCEPT_P2_ROUNDS], "servers/32 GPUs"));
    sn_accept_report_free(a);
    return failed;
}

static void test_accept_p2_span(void **state)
{
    struct fx *f = *state;
    static const char *const half[] = {"sn00-t00", "sn00-t01"};
    static const char *const mixed[] = {"sn00-t00", "sn00-t01", "sn00-t02", "sn01-t03"};
    static const char *const sn00[] = {"sn00-t00", "sn00-t01", "sn00-t02", "sn00-t03"};
    fleet(f, T0, NULL);
    /* 10 single-node rounds with rank 0 on sn00-t00: not phase 2 */
    for (unsigned k = 0; k < 10; k++)
        nccl_16g(f, "sn00-t00", "63968", "268.57", "470.00");
    assert_true(accept_p2_failed(f, "sn00-t00"));
    assert_true(accept_p2_failed(f, "sn00-t03"));
    /* 10 rounds over half the supernode (16 ranks; busbw factor 1.875,
     * 16 GiB / 71583 us = 240.00 GB/s algbw, 450.00 busbw): still not */
    for (unsigned k = 0; k < 10; k++)
        nccl_hosts(f, half, 2, "71583", "240.00", "450.00");
    assert_true(accept_p2_failed(f, "sn00-t00"));
    /* 32 ranks on 4 hosts, but one of them in sn01: the counts match, the
     * hosts do not */
    for (unsigned k = 0; k < 10; k++)
        nccl_hosts(f, mixed, 4, "71583", "240.00", "465.00");
    assert_true(accept_p2_failed(f, "sn00-t02"));
    /* 29 spanning rounds: one short of the default 30 */
    for (unsigned k = 0; k < 29; k++)
        nccl_hosts(f, sn00, 4, "71583", "240.00", "465.00");
    assert_true(accept_p2_failed(f, "sn00-t00"));
    /* the 30th: phase 2 passes for every node of sn00, not for sn01 */
    nccl_hosts(f, sn00, 4, "71583", "240.00", "465.00");
    assert_false(accept_p2_failed(f, "sn00-t00"));
    assert_false(accept_p2_failed(f, "sn00-t03"));
    assert_true(accept_p2_failed(f, "sn01-t03"));
}

/* ---- Xid 154 asks for a reboot ------------------------------------------------------ */

static void test_xid_reboot(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    /* GPU recovery action 0x0 (None): informational, quiet */
    feed(f, SN_TELEM_FMT_KMSG, "dmesg.txt", "sn00-t02",
         "[ 200.0] NVRM: Xid (PCI:0000:9a:00): 154, GPU recovery action changed from 0x0 "
         "(None) to 0x0 (None)\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(r->n_findings, 0);
    /* 0x2 (Node Reboot Required) on gpu4 (bus 0x9a) */
    feed(f, SN_TELEM_FMT_KMSG, "dmesg.txt", "sn00-t02",
         "[ 201.0] NVRM: Xid (PCI:0000:9a:00): 154, GPU recovery action changed from 0x0 "
         "(None) to 0x2 (Node Reboot Required)\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_XID_REBOOT, gpu(f, "sn00-t02-gpu4")), 1);
    assert_int_equal(r->n_findings, 1);
    assert_int_equal(first(r, SN_DET_XID_REBOOT)->action, SN_HEALTH_ACT_REBOOT);
    assert_int_equal(r->gpus[gpu(f, "sn00-t02-gpu4")].action, SN_HEALTH_ACT_REBOOT);
}

/* ---- near misses of the dropped-GPU and row-remap detectors ------------------------- */

static void mod_na_and_gone(unsigned s, unsigned g, struct row *r)
{
    if (s == 2 && g == 3) /* every reading unavailable, none an error */
        r->raw = "[N/A], [N/A], [N/A], [Not Supported], [N/A], 5, 5, 16, 16, [Not Supported], "
                 "[N/A], [N/A], [N/A], [N/A]";
    if (s == 6) /* a whole server out of this enumeration */
        r->skip = true;
}

static void test_dropped_gpu_near_misses(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, mod_na_and_gone);
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    /* [N/A] and [Not Supported] are not ERR!: the GPU answers, so it is
     * neither unreadable nor missing; a host absent altogether has no
     * enumeration to miss a GPU from. */
    assert_int_equal(count(r, SN_DET_GPU_UNREADABLE, SN_NONE), 0);
    assert_int_equal(count(r, SN_DET_GPU_MISSING, SN_NONE), 0);
    /* dcgm-exporter's last Xid 74 on sn00-t02 gpu3, and a kernel Xid 74 on
     * gpu2: NVLink errors, not off the bus */
    feed(f, SN_TELEM_FMT_PROM, "dcgm.prom", NULL,
         "DCGM_FI_DEV_XID_ERRORS{gpu=\"3\",UUID=\"GPU-00000000-0000-0000-0000-000000002003\","
         "pci_bus_id=\"00000000:5D:00.0\",Hostname=\"sn00-t02\"} 74\n");
    feed(f, SN_TELEM_FMT_KMSG, "kern.log", NULL,
         "May  1 12:01:02 sn00-t02 kernel: [ 8123.4] NVRM: Xid (PCI:0000:3a:00): 74, pid=0, "
         "name=, NVLink: fatal error detected on link 7\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, SN_NONE), 0);
    assert_int_equal(count(r, SN_DET_XID_RESET, gpu(f, "sn00-t02-gpu2")), 1);
    /* the same exporter field at 79 fires */
    feed(f, SN_TELEM_FMT_PROM, "dcgm.prom", NULL,
         "DCGM_FI_DEV_XID_ERRORS{gpu=\"3\",UUID=\"GPU-00000000-0000-0000-0000-000000002003\","
         "pci_bus_id=\"00000000:5D:00.0\",Hostname=\"sn00-t02\"} 79\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, gpu(f, "sn00-t02-gpu3")), 1);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, SN_NONE), 1);
}

static void test_remap_near_miss(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL);
    /* rows remapped in the past (correctable 5), nothing pending or failed:
     * the remapper did its job, quiet */
    feed(f, SN_TELEM_FMT_SMI_CSV, "remap.csv", "sn00-t02",
         "index, pci.bus_id, remapped_rows.correctable, remapped_rows.uncorrectable, "
         "remapped_rows.pending, remapped_rows.failure\n"
         "5, 00000000:AB:00.0, 5, 0, No, No\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_REMAP_PENDING, SN_NONE), 0);
    assert_int_equal(count(r, SN_DET_REMAP_FAILED, SN_NONE), 0);
    assert_int_equal(r->n_findings, 0);
    /* Xid 62 (micro-controller halt) is not a remap event; Xid 63 and 64 are */
    feed(f, SN_TELEM_FMT_KMSG, "dmesg.txt", "sn00-t02",
         "[ 300.0] NVRM: Xid (PCI:0000:ab:00): 62, pid='<unknown>', name=<unknown>, 0000\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_REMAP_PENDING, SN_NONE), 0);
    assert_int_equal(count(r, SN_DET_REMAP_FAILED, SN_NONE), 0);
    feed(f, SN_TELEM_FMT_KMSG, "dmesg.txt", "sn00-t02",
         "[ 301.0] NVRM: Xid (PCI:0000:ab:00): 63, pid='<unknown>', name=<unknown>, Row "
         "Remapper: New row marked for remapping, reset gpu to activate.\n"
         "[ 302.0] NVRM: Xid (PCI:0000:ba:00): 64, pid='<unknown>', name=<unknown>, Row "
         "Remapper Error: Remapping failed\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_REMAP_PENDING, gpu(f, "sn00-t02-gpu5")), 1);
    assert_int_equal(count(r, SN_DET_REMAP_FAILED, gpu(f, "sn00-t02-gpu6")), 1);
    assert_int_equal(r->gpus[gpu(f, "sn00-t02-gpu6")].action, SN_HEALTH_ACT_SERVICE);
}

/* ---- a GPU named only by a bus id no input ties to an index --------------------------- */

static void test_unidentified_gpu(void **state)
{
    struct fx *f = *state;
    fleet(f, T0, NULL); /* sn00-t00's GPUs are at buses 0x18 ... 0xdb */
    feed(f, SN_TELEM_FMT_KMSG, "kern.log", NULL,
         "May  1 12:01:02 sn00-t00 kernel: [ 8123.4] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, "
         "name=, GPU has fallen off the bus.\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, SN_NONE), 1);
    const struct sn_health_finding *x = first(r, SN_DET_GPU_OFF_BUS);
    assert_int_equal(x->entity, SN_HEALTH_ENT_SERVER);
    assert_int_equal(x->id, sn_model_find_server(f->model, "sn00-t00"));
    assert_int_equal(x->gpu, SN_NONE);
    assert_string_equal(x->evidence,
                        "GPU not identified (bus 0000:3b:00.0 tied to no index by any input): "
                        "kern.log:1: Xid 79 (GPU has fallen off the bus), 1 time");
    /* A bus id the CSV tied to index 2 lands on that GPU, without the note. */
    feed(f, SN_TELEM_FMT_KMSG, "kern.log", NULL,
         "May  1 12:01:03 sn00-t01 kernel: [ 8124.4] NVRM: Xid (PCI:0000:3a:00): 79, pid=0, "
         "name=, GPU has fallen off the bus.\n");
    r = analyze(f, NOW0, NULL);
    assert_int_equal(count(r, SN_DET_GPU_OFF_BUS, gpu(f, "sn00-t01-gpu2")), 1);
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].gpu != SN_NONE)
            assert_null(strstr(r->findings[i].evidence, "not identified"));
}

/* ---- facility readings outside the model ------------------------------------------- */

static void test_facility_not_in_model(void **state)
{
    struct fx *f = *state;
    feed(f, SN_TELEM_FMT_FACILITY_CSV, "site.csv", NULL,
         "time,kind,name,part,metric,value,unit\n"
         "2024-05-01T12:00:00Z,loop,cdu-7,branch-1,flow,3.0,L/min\n"
         "2024-05-01T12:00:00Z,loop,cdu-7,branch-2,flow,30.0,L/min\n"
         "2024-05-01T12:00:00Z,loop,cdu-7,branch-3,flow,30.0,L/min\n"
         "2024-05-01T12:00:00Z,feed,pdu-r12-a,L1,current,100,A\n"
         "2024-05-01T12:00:00Z,feed,pdu-r12-a,L2,current,40,A\n"
         "2024-05-01T12:00:00Z,loop,sn00-loopL1,branch-1,flow,22.5,L/min\n"
         "2024-05-01T12:05:00Z,feed,pdu-r12-a,L1,current,101,A\n");
    const struct sn_health_report *r = analyze(f, NOW0, NULL);
    /* cdu-7 branch-1 is 90% below its peers and pdu-r12-a is unbalanced, but
     * neither is in the model: not judged, reported */
    assert_int_equal(r->n_findings, 0);
    assert_int_equal(r->n_skips, 2);
    assert_int_equal(r->skips[0].entity, SN_HEALTH_ENT_LOOP);
    assert_string_equal(r->skips[0].name, "cdu-7");
    assert_string_equal(r->skips[0].where, "site.csv:2");
    assert_non_null(strstr(r->skips[0].detail, "cooling loop 'cdu-7' is not in the model"));
    assert_int_equal(r->skips[1].entity, SN_HEALTH_ENT_FEED);
    assert_string_equal(r->skips[1].name, "pdu-r12-a");
    assert_string_equal(r->skips[1].where, "site.csv:8"); /* its latest L1 reading */
}

static void test_name_index(void **state)
{
    struct fx *f = *state;
    struct sn__name_index loops = {0}, feeds = {0};
    char name[96];
    assert_true(sn__name_index_build(&loops, f->model, false));
    assert_true(sn__name_index_build(&feeds, f->model, true));
    assert_int_equal(loops.n, f->model->n_cooling_loops);
    assert_int_equal(feeds.n, f->model->n_power_domains);
    for (uint32_t i = 0; i < f->model->n_cooling_loops; i++)
        assert_int_equal(sn__name_index_find(
                             &loops, sn_model_cooling_loop_name(f->model, i, name, sizeof(name))),
                         i);
    for (uint32_t i = 0; i < f->model->n_power_domains; i++)
        assert_int_equal(sn__name_index_find(
                             &feeds, sn_model_power_domain_name(f->model, i, name, sizeof(name))),
                         i);
    assert_int_equal(sn__name_index_find(&loops, "sn00-loopL9"), SN_NONE);
    assert_int_equal(sn__name_index_find(&feeds, "sn00-loopL1"), SN_NONE);
    assert_int_equal(sn__name_index_find(&feeds, "sn01-pdB"), 3);
    sn__name_index_release(&loops);
    sn__name_index_release(&feeds);
}

/* The CSV reader parses only the fraction when a row's timestamp shares the
 * previous one's second: the result must be the very double a full parse
 * gives, across seconds, days and a time with a zone (never cached). */
static void test_csv_time_fast_path(void **state)
{
    struct fx *f = *state;
    static const char *const ts[] = {"2024/05/01 12:00:00.100", "2024/05/01 12:00:00.250",
                                     "2024/05/01 12:00:00.9",   "2024/05/01 12:00:01.003",
                                     "2024/05/02 00:00:00.5",   "2024-05-02T00:00:00.75Z",
                                     "2024/05/02 00:00:00.125"};
    char buf[1024];
    size_t at = (size_t)snprintf(buf, sizeof(buf), "timestamp, index, temperature.gpu\n");
    for (unsigned k = 0; k < sizeof(ts) / sizeof(ts[0]); k++) /* one parser: rows share state */
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s, %u, 60\n", ts[k], k);
    feed(f, SN_TELEM_FMT_SMI_CSV, "t.csv", "sn00-t00", buf);
    for (unsigned k = 0; k < sizeof(ts) / sizeof(ts[0]); k++) {
        uint32_t id;
        struct sn_telem_gpu_ref ref = {"sn00-t00", (int)k, NULL, SN_TELEM_BUS_NONE};
        assert_true(sn_telem_store_find_gpu(f->store, &ref, &id));
        double want;
        assert_true(sn__telem_time_parse(ts[k], strlen(ts[k]), &want));
        assert_true(sn_telem_store_gpu(f->store, id)->m[SN_METRIC_TEMP_GPU].time_s == want);
    }
    /* 2024-05-01T12:00:00.25Z = 1714564800.25 (date -d) */
    assert_true(sn_telem_store_gpu(f->store, 1)->m[SN_METRIC_TEMP_GPU].time_s == 1714564800.25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_healthy_fleet_is_quiet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_detectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_gpu_detectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_xid_buckets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_gpu_evidence_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_throttle_and_clock_events, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pcie, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nvlinks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topology, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busbw_declared_baseline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diag_fail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_phantom, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sbe_rate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cooling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_power, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_drift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_node_three_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scores_hysteresis_retest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_baseline_learn_and_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_facts_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept_p2_span, setup, teardown),
        cmocka_unit_test_setup_teardown(test_xid_reboot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropped_gpu_near_misses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remap_near_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unidentified_gpu, setup, teardown),
        cmocka_unit_test_setup_teardown(test_facility_not_in_model, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv_time_fast_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nccl_verdicts_quiet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nccl_wrong_and_oob, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nccl_aborted_and_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nccl_ranks_inconsistent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busbw_collapse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fallen_off_without_xid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topology_truncated_is_quiet, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diag_skip_inforom_string_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_prom_xid_series, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv_identity_mapping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diag_node_level_any_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_diag_fail_without_gpus_lands_on_server, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
