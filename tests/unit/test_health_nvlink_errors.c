/*
 * nvidia-smi nvlink -e (error counters) through the nvlink reader, the
 * store and the nvlink-errors detector (docs/health.md "NVLink error
 * counters"), on the real outputs of tests/data/real/nvidia-smi-nvlink/
 * (SOURCES.md) and mutants of them, on examples/good-64.yaml (HGX H100,
 * 18 links per GPU):
 *  - the real files read every Replay/Recovery/CRC line as a counter
 *    record, the "[...]" elision as an unused skip, and alone give no
 *    finding (one reading is a baseline, never judged);
 *  - the file again with link 1's replay counter 0 -> 3 and link 17's
 *    recovery 0 -> 1: one nvlink-errors finding on each of those links
 *    (DCGM: a rise of 1 fails), none on the others; 0 -> 0 none;
 *  - CRC: untimed, a rise of 100 is none and 101 one; timed records (the
 *    sink fed directly) at 100/s one and below none;
 *  - a counter that went down was reset: the baseline restarts there;
 *  - mutants: the GPU line removed (no identity: no record), the file cut
 *    in a counter line (the records before it kept, the cut line a skip),
 *    N/A and newer drivers' counters (Rx Errors) skipped, never guessed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>

#include <sn/health.h>
#include <sn/spec.h>

#include "health_fixture.h"

#define H100 "tests/data/real/nvidia-smi-nvlink/sn00-t00.mlengineering-h100-errors-elided.txt"
#define GB300 "tests/data/real/nvidia-smi-nvlink/sn00-t00.srtslurm307-gb300-errors.txt"

static char *slurp(const char *rel, size_t *len)
{
    char path[512];
    FILE *fp = fopen(sn_test_path(path, sizeof(path), rel), "rb");
    assert_non_null(fp);
    static char buf[1 << 16];
    *len = fread(buf, 1, sizeof(buf) - 1, fp);
    fclose(fp);
    buf[*len] = '\0';
    char *out = malloc(*len + 1);
    assert_non_null(out);
    memcpy(out, buf, *len + 1);
    return out;
}

static void feed(struct fx *f, const char *text, size_t len)
{
    struct sn_telem_opts o = {.source = "nvlink-e.txt", .host = f->host};
    struct sn_telem_sink sink = sn_health_history_sink(f->hist);
    struct sn_error err = {0};
    assert_int_equal(
        sn_telem_parse_buffer(SN_TELEM_FMT_SMI_NVLINK, &o, &sink, text, len, &f->stats, &err),
        SN_OK);
}

static const struct sn_health_report *analyze(struct fx *f)
{
    struct sn_health_input in = {f->model, f->store, f->hist, NULL, NULL, &f->cfg, 1e9, NULL};
    struct sn_error err = {0};
    sn_health_report_free(f->rep);
    f->rep = NULL;
    if (sn_health_analyze(&in, NULL, &f->rep, &err) != SN_OK)
        fail_msg("%s", err.message);
    return f->rep;
}

static unsigned count(const struct sn_health_report *r, enum sn_detector d)
{
    unsigned n = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        n += r->findings[i].detector == d;
    return n;
}

/* The nvlink-errors finding on GPU 0's link l, or NULL. */
static const struct sn_health_finding *on_link(const struct fx *f, unsigned l)
{
    char want[96], label[160];
    sn_model_gpu_name(f->model, 0, want, sizeof(want));
    snprintf(want + strlen(want), sizeof(want) - strlen(want), ":nvl%u-", l);
    for (uint32_t i = 0; i < f->rep->n_findings; i++) {
        const struct sn_health_finding *x = &f->rep->findings[i];
        sn_health_entity_label(f->model, x->entity, x->id, label, sizeof(label));
        if (x->detector == SN_DET_NVLINK_ERRORS && strncmp(label, want, strlen(want)) == 0)
            return x;
    }
    return NULL;
}

/* text with every "from" replaced by "to" (one occurrence expected). */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    size_t n = strlen(text) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return out;
}

static const struct sn_telem_link_errors *link_err(const struct fx *f, unsigned l)
{
    assert_true(sn_telem_store_gpu_count(f->store) >= 1);
    const struct sn_telem_gpu *g = sn_telem_store_gpu(f->store, 0);
    assert_non_null(g->nvlink_err);
    return &g->nvlink_err[l];
}

static void test_real_files_read(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/good-64.yaml");
    size_t len;
    char *text = slurp(H100, &len);
    feed(&f, text, len);
    assert_int_equal(f.stats.records, 10); /* the GPU's name, links 0, 1, 17 x 3 counters */
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_UNUSED], 1); /* "[...]" */
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_BAD_VALUE], 0);
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_MALFORMED], 0);
    const struct sn_telem_link_errors *e = link_err(&f, 17);
    for (unsigned k = 0; k < SN_NVLERR_COUNT; k++) {
        assert_near(e->value[k], 0, 0);
        assert_near(e->first[k], 0, 0);
    }
    assert_true(isnan(link_err(&f, 5)->value[SN_NVLERR_REPLAY])); /* elided: unknown */
    const struct sn_health_report *r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_ERRORS), 0);
    /* The same readings again: nothing rose. */
    feed(&f, text, len);
    r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_ERRORS), 0);
    free(text);
    fx_close(&f);

    fx_open(&f, "examples/good-64.yaml");
    text = slurp(GB300, &len);
    feed(&f, text, len);
    assert_int_equal(f.stats.records, 4);
    assert_string_equal(sn_telem_store_gpu(f.store, 0)->uuid, ""); /* the paste names none */
    free(text);
    fx_close(&f);
}

static void test_counter_rises(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/good-64.yaml");
    size_t len;
    char *text = slurp(H100, &len);
    feed(&f, text, len);
    char *a = replace(text, "Link 1: Replay Errors: 0", "Link 1: Replay Errors: 3");
    char *b = replace(a, "Link 17: Recovery Errors: 0", "Link 17: Recovery Errors: 1");
    feed(&f, b, strlen(b));
    const struct sn_health_report *r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_ERRORS), 2);
    const struct sn_health_finding *x = on_link(&f, 1);
    assert_non_null(x);
    assert_int_equal(x->entity, SN_HEALTH_ENT_LINK);
    assert_string_equal(x->evidence, "nvlink -e line 6: link 1: replay rose by 3 (0 to 3)");
    x = on_link(&f, 17);
    assert_non_null(x);
    assert_string_equal(x->evidence, "nvlink -e line 13: link 17: recovery rose by 1 (0 to 1)");
    assert_null(on_link(&f, 0));
    assert_int_equal(sn_detector_info(SN_DET_NVLINK_ERRORS)->action, SN_HEALTH_ACT_DRAIN);
    assert_true(r->gpus[f.model->server_first_gpu[0]].score < 60); /* DCGM: a failure */
    /* Reset (nvidia-smi nvlink -r): link 1 back at 0 restarts its
     * baseline; link 17 stays risen. */
    feed(&f, a, strlen(a));
    feed(&f, text, len);
    r = analyze(&f);
    assert_null(on_link(&f, 1));
    assert_near(link_err(&f, 1)->first[SN_NVLERR_REPLAY], 0, 0);
    feed(&f, a, strlen(a)); /* 0 -> 3 again after the reset */
    r = analyze(&f);
    assert_non_null(on_link(&f, 1));
    free(a);
    free(b);

    /* A higher rise threshold keeps a rise of 3. */
    f.cfg.nvlink_error_rise = 4;
    r = analyze(&f);
    assert_null(on_link(&f, 1));
    free(text);
    fx_close(&f);
}

static void test_crc(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/good-64.yaml");
    size_t len;
    char *text = slurp(H100, &len);
    feed(&f, text, len);
    char *a = replace(text, "Link 0: CRC Errors: 0", "Link 0: CRC Errors: 100");
    feed(&f, a, strlen(a));
    analyze(&f);
    assert_null(on_link(&f, 0)); /* untimed: by > link_error_rise (100) only */
    free(a);
    a = replace(text, "Link 0: CRC Errors: 0", "Link 0: CRC Errors: 101");
    feed(&f, a, strlen(a));
    analyze(&f);
    const struct sn_health_finding *x = on_link(&f, 0);
    assert_non_null(x);
    assert_string_equal(x->evidence,
                        "nvlink -e line 4: link 0: crc rose by 101 (0 to 101, untimed)");
    free(a);
    free(text);
    fx_close(&f);

    /* Timed readings: DCGM's rate, 100 per second. */
    fx_open(&f, "examples/good-64.yaml");
    struct sn_telem_sink sink = sn_health_history_sink(f.hist);
    struct sn_telem_nvlink rec = {{f.host, 0, NULL, SN_TELEM_BUS_NONE},
                                  {"timed", 1, 1000},
                                  2,
                                  SN_LINK_UNKNOWN,
                                  NAN,
                                  true,
                                  {NAN, NAN, 5}};
    sink.nvlink(sink.ctx, &rec);
    rec.at.time_s = 1060;
    rec.err[SN_NVLERR_CRC] = 5 + 5999; /* 99.98 / s over 60 s */
    sink.nvlink(sink.ctx, &rec);
    analyze(&f);
    assert_null(on_link(&f, 2));
    rec.err[SN_NVLERR_CRC] = 5 + 6000; /* 100 / s */
    sink.nvlink(sink.ctx, &rec);
    analyze(&f);
    x = on_link(&f, 2);
    assert_non_null(x);
    assert_non_null(strstr(x->evidence, "crc rose by 6000 (5 to 6005, 100/s)"));
    fx_close(&f);
}

static void test_mutants(void **state)
{
    (void)state;
    struct fx f;
    size_t len;
    char *text = slurp(H100, &len);

    /* The GPU line removed: no identity, no record. */
    fx_open(&f, "examples/good-64.yaml");
    const char *nl = strchr(text, '\n');
    feed(&f, nl + 1, len - (size_t)(nl + 1 - text));
    assert_int_equal(f.stats.records, 0);
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_NO_IDENTITY], 9);
    fx_close(&f);

    /* Cut inside the line "Link 1: Recovery Errors: 0": link 0 and link 1's
     * replay kept, the cut line a skip. */
    fx_open(&f, "examples/good-64.yaml");
    const char *cut = strstr(text, "Link 1: Recovery Err");
    assert_non_null(cut);
    feed(&f, text, (size_t)(cut - text) + strlen("Link 1: Recovery Err"));
    assert_int_equal(f.stats.records, 5); /* the name and 4 counters */
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_BAD_VALUE], 1);
    fx_close(&f);

    /* N/A and a newer driver's counter: skipped, never a value. */
    fx_open(&f, "examples/good-64.yaml");
    static const char odd[] =
        "GPU 0: NVIDIA GB200 (UUID: GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde)\n"
        "\t Link 0: Replay Errors: N/A\n"
        "\t Link 0: Rx Errors: 3\n"
        "\t Link 0: CRC Errors: 7\n";
    feed(&f, odd, sizeof(odd) - 1);
    assert_int_equal(f.stats.records, 2); /* the name and the CRC counter */
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_BAD_VALUE], 1);
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_UNUSED], 1);
    assert_true(isnan(link_err(&f, 0)->value[SN_NVLERR_REPLAY]));
    assert_near(link_err(&f, 0)->value[SN_NVLERR_CRC], 7, 0);
    fx_close(&f);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_files_read),
        cmocka_unit_test(test_counter_rises),
        cmocka_unit_test(test_crc),
        cmocka_unit_test(test_mutants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
