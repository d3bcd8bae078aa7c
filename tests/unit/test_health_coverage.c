/*
 * Property tests of coverage and of the score policy in the health engine
 * (lib/health/health_analyze.c "evidence", SN_DETECTOR_LIST). Coverage: analysis over no input, an
 * empty input or garbage in every telemetry format never reports a GPU "healthy" (score 100)
 * without evidence: such GPUs score unknown (NaN), are in no exclusion set, and the coverage counts
 * say how many GPUs and servers had evidence. Also: a GPU that reported and then stopped while its
 * host kept reporting is flagged gpu-missing; evidence older than stale_s is stale; an inventory
 * listing (names, capacities, a PCIe link without its maximum) is no evidence. Policy: every
 * performance finding alone takes its GPU below exclude_below with a drain action, and the table in
 * docs/health.md "Detectors" gives the same weight and action as the code for every detector.
 * Bus-bandwidth floor from the model for an 8 x H100 HGX (examples/good-64.yaml, the cluster of the
 * other cases: 8 servers x 8 GPUs) and a GB200 NVL72 (examples/gb200-nvl72.yaml).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <sn/health.h>
#include <sn/spec.h>

#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
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
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    sn_model_free(f->model);
    sn_spec_free(f->spec);
    free(f);
    return 0;
}

/* Feeds text (len bytes) in format fmt, analyzes at now and returns the
 * report (caller frees). */
static struct sn_health_report *pass(const struct fx *f, int fmt, const char *text, size_t len,
                                     double now)
{
    struct sn_telem_store *st;
    struct sn_health_history *h;
    struct sn_error err = {0};
    assert_int_equal(sn_telem_store_new(NULL, &st, &err), SN_OK);
    assert_int_equal(sn_health_history_new(st, NULL, &h, &err), SN_OK);
    if (fmt >= 0) {
        struct sn_telem_opts o = {.source = "in.txt", .host = "sn00-t01"};
        struct sn_telem_sink sink = sn_health_history_sink(h);
        /* JSON formats may refuse garbage at finish: that is an error, not data */
        enum sn_err rc =
            sn_telem_parse_buffer((enum sn_telem_format)fmt, &o, &sink, text, len, NULL, &err);
        assert_true(rc == SN_OK || rc == SN_ERR_SYNTAX || rc == SN_ERR_LIMIT);
    }
    struct sn_health_input in = {.model = f->model, .store = st, .history = h, .now_s = now};
    struct sn_health_report *r = NULL;
    if (sn_health_analyze(&in, NULL, &r, &err) != SN_OK)
        fail_msg("%s", err.message);
    sn_health_history_free(h);
    sn_telem_store_free(st);
    return r;
}

/* The property: no GPU or server is 100 without evidence, unknown ones are
 * excluded from nothing, and the coverage counts add up. */
static void check_never_healthy_blind(const struct sn_health_report *r)
{
    uint32_t none = 0;
    for (uint32_t g = 0; g < r->n_gpus; g++) {
        const struct sn_health_score *s = &r->gpus[g];
        if (s->evidence == SN_HEALTH_EV_NONE) {
            none++;
            assert_false(s->score >= 100);
        }
        if (isnan(s->score)) {
            assert_int_equal(s->evidence, SN_HEALTH_EV_NONE);
            assert_false(sn_bitset_test(&r->excluded, g));
            for (unsigned t = 0; t < r->n_thresholds; t++)
                assert_false(sn_bitset_test(&r->exclude[t], g));
        }
    }
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], none);
    uint32_t sum = 0, ssum = 0;
    for (int e = 0; e < SN_HEALTH_EV_COUNT; e++) {
        sum += r->coverage.gpus[e];
        ssum += r->coverage.servers[e];
    }
    assert_int_equal(sum, r->n_gpus);
    assert_int_equal(ssum, r->n_servers);
    for (uint32_t sv = 0; sv < r->n_servers; sv++)
        if (r->servers[sv].evidence == SN_HEALTH_EV_NONE)
            assert_false(r->servers[sv].score >= 100);
}

static void no_input_is_unknown(void **state)
{
    struct fx *f = *state;
    struct sn_health_report *r = pass(f, -1, NULL, 0, 1.7e9);
    check_never_healthy_blind(r);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], 64);
    assert_int_equal(r->coverage.servers[SN_HEALTH_EV_NONE], 8);
    for (uint32_t g = 0; g < r->n_gpus; g++)
        assert_true(isnan(r->gpus[g].score));
    assert_int_equal(sn_bitset_count(&r->excluded), 0);
    sn_health_report_free(r);
}

static void empty_and_garbage_never_healthy(void **state)
{
    struct fx *f = *state;
    uint64_t x = 0x9e3779b97f4a7c15ull; /* fixed seed: the same bytes every run */
    char buf[4096];
    for (int fmt = 0; fmt < SN_TELEM_FORMAT_COUNT; fmt++) {
        struct sn_health_report *r = pass(f, fmt, "", 0, 1.7e9);
        check_never_healthy_blind(r);
        assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], 64);
        sn_health_report_free(r);
        for (int round = 0; round < 8; round++) {
            for (size_t i = 0; i < sizeof(buf); i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                /* printable text with separators most of the time, any byte sometimes */
                unsigned b = (unsigned)(x >> 24) & 0xff;
                static const char alpha[] = " ,:\n0123456789abcdefGPU-[]%.";
                buf[i] = b < 200 ? alpha[b % 28] : (char)b;
            }
            r = pass(f, fmt, buf, sizeof(buf), 1.7e9);
            check_never_healthy_blind(r);
            sn_health_report_free(r);
        }
    }
}

static void stopped_and_stale(void **state)
{
    struct fx *f = *state;
    char text[8192];
    size_t n = (size_t)snprintf(text, sizeof(text),
                                "timestamp, index, name, temperature.gpu, clocks.sm [MHz]\n");
    static const char *const times[] = {"12:00:00", "12:30:00", "13:00:00"};
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 8; i++)
            if (i != 7 || t == 0)
                n += (size_t)snprintf(
                    text + n, sizeof(text) - n,
                    "2024/05/01 %s.000, %d, NVIDIA H100 80GB HBM3, 60, 1980 MHz\n", times[t], i);
    double t13 = 1714568400; /* 2024-05-01T13:00:00Z */
    struct sn_health_report *r = pass(f, SN_TELEM_FMT_SMI_CSV, text, n, t13);
    check_never_healthy_blind(r);
    uint32_t gpu7 = sn_model_find_gpu(f->model, "sn00-t01-gpu7"), missing = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].detector == SN_DET_GPU_MISSING) {
            missing++;
            assert_int_equal(r->findings[i].id, gpu7);
            assert_true(fabs(r->findings[i].value - 3600) < 1e-6);
        }
    assert_int_equal(missing, 1);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_FRESH], 7);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_STALE], 1);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], 56);
    assert_true(fabs(r->gpus[gpu7].age_s - 3600) < 1e-6);
    assert_true(sn_bitset_test(&r->excluded, gpu7));
    sn_health_report_free(r);
    /* two hours later everything is stale, and gpu7 is still missing */
    r = pass(f, SN_TELEM_FMT_SMI_CSV, text, n, t13 + 7200);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_STALE], 8);
    assert_int_equal(r->coverage.servers[SN_HEALTH_EV_STALE], 1);
    sn_health_report_free(r);
}

/* An inventory listing (names, capacities, a PCIe link without its maximum)
 * is no evidence: every GPU stays unknown and its server too. The same link
 * with its maximum is judged (pcie-degraded), so that GPU has evidence. */
static void inventory_is_no_evidence(void **state)
{
    struct fx *f = *state;
    char text[4096];
    size_t n = (size_t)snprintf(text, sizeof(text),
                                "index, name, pci.bus_id, memory.total [MiB], power.limit [W], "
                                "pcie.link.gen.current, pcie.link.width.current\n");
    for (int i = 0; i < 8; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n,
                              "%d, NVIDIA H100 80GB HBM3, 00000000:%02X:00.0, 81559 MiB, 700.00 W, "
                              "1, 1\n",
                              i, 0x18 + i);
    struct sn_health_report *r = pass(f, SN_TELEM_FMT_SMI_CSV, text, n, 1.7e9);
    check_never_healthy_blind(r);
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_NONE], 64);
    assert_int_equal(r->coverage.servers[SN_HEALTH_EV_NONE], 8);
    sn_health_report_free(r);

    n = (size_t)snprintf(text, sizeof(text),
                         "index, pcie.link.width.current, pcie.link.width.max\n0, 16, 16\n1, 8, 16\n");
    r = pass(f, SN_TELEM_FMT_SMI_CSV, text, n, 1.7e9);
    check_never_healthy_blind(r);
    uint32_t gpu0 = sn_model_find_gpu(f->model, "sn00-t01-gpu0");
    uint32_t gpu1 = sn_model_find_gpu(f->model, "sn00-t01-gpu1");
    assert_int_equal(r->coverage.gpus[SN_HEALTH_EV_FRESH], 2);
    assert_true(r->gpus[gpu0].score >= 100);
    assert_true(r->gpus[gpu1].score < 100); /* x8 of x16: pcie-degraded */
    sn_health_report_free(r);
}

/* The performance class of docs/health.md "Score policy". */
static const enum sn_detector performance[] = {
    SN_DET_SLOW_GPU,      SN_DET_THERMAL_THROTTLE, SN_DET_BUSBW_LOW, SN_DET_NVLINK_DOWNGRADED,
    SN_DET_PCIE_DEGRADED, SN_DET_TOPO_NOT_NVLINK,  SN_DET_SLOW_NODE,        SN_DET_BUSBW_PLATEAU,
};

static void performance_findings_exclude(void **state)
{
    (void)state;
    struct sn_health_config cfg;
    sn_health_config_default(&cfg);
    for (size_t i = 0; i < sizeof(performance) / sizeof(performance[0]); i++) {
        const struct sn_detector_info *d = sn_detector_info(performance[i]);
        assert_int_equal(d->severity, SN_HEALTH_SEV_WARN);
        /* one finding alone: score 100 - weight, below the exclusion and
         * snd's default cordon threshold (60) */
        assert_true(100.0 - d->weight < cfg.exclude_below);
        assert_true(100.0 - d->weight < 60);
        assert_true(d->action >= SN_HEALTH_ACT_DRAIN);
    }
}

/* One cell of a Markdown table row: the text between the k-th and the
 * (k+1)-th '|', trimmed, backquotes removed. */
static void cell(const char *row, int k, char *out, size_t len)
{
    const char *p = row;
    for (int i = 0; i < k && p; i++)
        p = strchr(p + 1, '|');
    const char *e = p ? strchr(p + 1, '|') : NULL;
    size_t n = 0;
    for (const char *q = p ? p + 1 : ""; p && e && q < e && n + 1 < len; q++)
        if (*q != '`')
            out[n++] = *q;
    out[n] = '\0';
    while (n && out[n - 1] == ' ')
        out[--n] = '\0';
    size_t b = 0;
    while (out[b] == ' ')
        b++;
    memmove(out, out + b, n - b + 1);
}

/* The i-th " / "-separated part of text. */
static void part(const char *text, int i, char *out, size_t len)
{
    const char *p = text;
    for (int k = 0; k < i && p; k++) {
        p = strstr(p, " / ");
        p = p ? p + 3 : NULL;
    }
    if (!p) {
        p = text; /* one value shared by every name of the row */
    }
    size_t n = strcspn(p, " ");
    snprintf(out, len, "%.*s", (int)n, p);
}

static void docs_table_matches_detectors(void **state)
{
    (void)state;
    char path[512], line[4096];
    FILE *f = fopen(sn_test_path(path, sizeof(path), "docs/health.md"), "r");
    assert_non_null(f);
    bool in = false, seen[SN_DET_COUNT] = {0};
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "## ", 3) == 0)
            in = strncmp(line, "## Detectors", 12) == 0;
        if (!in || strncmp(line, "| `", 3) != 0)
            continue;
        char names[256], weights[64], actions[128];
        cell(line, 0, names, sizeof(names));
        cell(line, 3, weights, sizeof(weights));
        cell(line, 4, actions, sizeof(actions));
        for (int i = 0; i < 4; i++) {
            char name[64], w[16], a[32];
            const char *p = names;
            for (int k = 0; k < i && p; k++)
                p = (p = strstr(p, " / ")) ? p + 3 : NULL;
            if (!p)
                break;
            snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, " "), p);
            part(weights, i, w, sizeof(w));
            part(actions, i, a, sizeof(a));
            int d = -1;
            for (int k = 0; k < SN_DET_COUNT; k++)
                if (strcmp(sn_detector_info((enum sn_detector)k)->name, name) == 0)
                    d = k;
            if (d < 0)
                fail_msg("docs/health.md: detector '%s' is not in SN_DETECTOR_LIST", name);
            const struct sn_detector_info *x = sn_detector_info((enum sn_detector)d);
            if (strtol(w, NULL, 10) != (long)x->weight ||
                strcmp(a, sn_health_action_name(x->action)) != 0)
                fail_msg("docs/health.md: '%s' says weight %s, action %s; the code says %u, %s",
                         name, w, a, x->weight, sn_health_action_name(x->action));
            seen[d] = true;
        }
    }
    fclose(f);
    for (int k = 0; k < SN_DET_COUNT; k++)
        if (!seen[k])
            fail_msg("docs/health.md: no row for detector '%s'",
                     sn_detector_info((enum sn_detector)k)->name);
}

/* ---- bus-bandwidth floor from the model ------------------------------------------ */

static struct sn_model *load(const char *spec_path, struct sn_spec **spec)
{
    char path[512];
    struct sn_error err = {0};
    struct sn_model *m = NULL;
    assert_int_equal(sn_spec_parse_file(sn_test_path(path, sizeof(path), spec_path), spec, &err),
                     SN_OK);
    assert_int_equal(sn_model_build(*spec, &m, &err), SN_OK);
    return m;
}

/* 8 x H100 HGX (good-64): NVLink 4, 18 links x 25 GB/s per direction; 8 NICs
 * of 400 Gb/s for 8 GPUs. */
static void busbw_floor_hgx_h100(void **state)
{
    struct fx *f = *state;
    char why[96];
    uint32_t sv = sn_model_find_server(f->model, "sn00-t01");
    assert_near(sn_health_busbw_floor(f->model, NULL, sv, 8, 1, why, sizeof(why)), 0.80 * 18 * 25e9,
                1);
    assert_string_equal(why, "0.80 x 18 x 25.0 GB/s scale-up (model)");
    /* 16 ranks over 2 HGX servers: the scale-out NICs, 50 GB/s per GPU */
    assert_near(sn_health_busbw_floor(f->model, NULL, sv, 16, 2, why, sizeof(why)),
                0.80 * 8 * 50e9 / 8, 1);
    assert_string_equal(why, "0.80 x 8 x 50.0 GB/s NICs / 8 GPUs (model)");
    /* through the engine, without any baseline: 300 GB/s fires, 400 does not */
    static const char fmt[] =
        "# Using devices\n"
        "#  Rank  0 Group  0 Pid  1 on sn00-t01 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
        "#  Rank  1 Group  0 Pid  2 on sn00-t01 device  1 [0x2a] NVIDIA H100 80GB HBM3\n"
        "#  Rank  2 Group  0 Pid  3 on sn00-t01 device  2 [0x3a] NVIDIA H100 80GB HBM3\n"
        "#  Rank  3 Group  0 Pid  4 on sn00-t01 device  3 [0x5d] NVIDIA H100 80GB HBM3\n"
        "#  Rank  4 Group  0 Pid  5 on sn00-t01 device  4 [0x9a] NVIDIA H100 80GB HBM3\n"
        "#  Rank  5 Group  0 Pid  6 on sn00-t01 device  5 [0xab] NVIDIA H100 80GB HBM3\n"
        "#  Rank  6 Group  0 Pid  7 on sn00-t01 device  6 [0xba] NVIDIA H100 80GB HBM3\n"
        "#  Rank  7 Group  0 Pid  8 on sn00-t01 device  7 [0xdb] NVIDIA H100 80GB HBM3\n"
        "#\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong "
        "    time   algbw   busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
        "     (us)  (GB/s)  (GB/s)       \n"
        " 17179869184    4294967296     float     sum      -1   100000  %6.2f  %6.2f      0   "
        "100000  %6.2f  %6.2f      0\n";
    static const double busbw[2] = {300, 400};
    for (int k = 0; k < 2; k++) {
        char text[4096];
        double alg = busbw[k] / 1.75;
        int n = snprintf(text, sizeof(text), fmt, alg, busbw[k], alg, busbw[k]);
        struct sn_health_report *r = pass(f, SN_TELEM_FMT_NCCL, text, (size_t)n, 1.7e9);
        uint32_t hits = 0;
        for (uint32_t i = 0; i < r->n_findings; i++)
            if (r->findings[i].detector == SN_DET_BUSBW_LOW) {
                hits++;
                assert_int_equal(r->findings[i].id, sv);
                assert_near(r->findings[i].expected, 360e9, 1);
                assert_non_null(strstr(r->findings[i].evidence, "scale-up (model)"));
            }
        assert_int_equal(hits, k == 0 ? 1 : 0);
        sn_health_report_free(r);
    }
}

/* GB200 NVL72: one NVLink 5 domain of 72 GPUs in 18 trays of 4; 18 links x
 * 50 GB/s per direction; 4 NICs of 400 Gb/s per tray of 4 GPUs. */
static void busbw_floor_nvl72(void **state)
{
    (void)state;
    struct sn_spec *spec = NULL;
    struct sn_model *m = load("examples/gb200-nvl72.yaml", &spec);
    char why[96];
    assert_int_equal(m->n_gpus, 72);
    /* 72 ranks over the 18 trays: inside the scale-up domain */
    assert_near(sn_health_busbw_floor(m, NULL, 0, 72, 18, why, sizeof(why)), 0.80 * 18 * 50e9, 1);
    assert_string_equal(why, "0.80 x 18 x 50.0 GB/s scale-up (model)");
    assert_near(sn_health_busbw_floor(m, NULL, 0, 8, 2, why, sizeof(why)), 0.80 * 18 * 50e9, 1);
    /* more ranks than the domain holds: across racks, over the NICs */
    assert_near(sn_health_busbw_floor(m, NULL, 0, 144, 36, why, sizeof(why)), 0.80 * 4 * 50e9 / 4,
                1);
    /* a declared efficiency in the config moves the floor */
    struct sn_health_config cfg;
    sn_health_config_default(&cfg);
    cfg.busbw_eff_scaleup = 0.5;
    assert_near(sn_health_busbw_floor(m, &cfg, 0, 72, 18, NULL, 0), 0.5 * 18 * 50e9, 1);
    sn_model_free(m);
    sn_spec_free(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_input_is_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(empty_and_garbage_never_healthy, setup, teardown),
        cmocka_unit_test_setup_teardown(stopped_and_stale, setup, teardown),
        cmocka_unit_test_setup_teardown(inventory_is_no_evidence, setup, teardown),
        cmocka_unit_test(performance_findings_exclude),
        cmocka_unit_test(docs_table_matches_detectors),
        cmocka_unit_test_setup_teardown(busbw_floor_hgx_h100, setup, teardown),
        cmocka_unit_test(busbw_floor_nvl72),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
