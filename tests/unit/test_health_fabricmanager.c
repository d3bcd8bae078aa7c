/*
 * Fabric Manager events as findings (issue 26 item 3; docs/health.md
 * "Fabric Manager events"): the "fabricmanager" telemetry format
 * (lib/health/ingest_fmlog.c, records read by lib/fabric/fmlog.c) and the
 * chip mapping of health_detect_node.c, on the real log of
 * tests/data/real/fabricmanager/ (leptonai/gpud's test file, SOURCES.md)
 * and mutants of it:
 *  - the file is sniffed as fabricmanager; its one SXid (non-fatal 12028,
 *    physical id 3, port 61) on HGX H100 (examples/good-64.yaml, 4 chips
 *    per server) is ONE nvswitch-fm-error on sn00-t00-nvs3 (3 mod 4), no
 *    GPU scored; its 54 INFO records and their payload lines are unused;
 *  - "non-fatal" made "fatal": nvswitch-fm-fatal (crit, service) there;
 *  - physical id 9: chip 1 (9 mod 4); no physical id: nvswitch-sxid on
 *    the server; a host without chips of its own (an NVL72 compute tray):
 *    on the server;
 *  - a cut record header and text before the first record are malformed
 *    skips, the records around them still read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sn/health.h>
#include <sn/spec.h>

#include "health_fixture.h"

#define FM "tests/data/real/fabricmanager/sn00-t00.gpud-nvswitch-non-fatal.log"

static char *slurp(size_t *len)
{
    char path[512];
    FILE *fp = fopen(sn_test_path(path, sizeof(path), FM), "rb");
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

static const struct sn_health_report *run(struct fx *f, const char *host, const char *text)
{
    struct sn_telem_opts o = {.source = "fabricmanager.log", .host = host};
    struct sn_telem_sink sink = sn_health_history_sink(f->hist);
    struct sn_error err = {0};
    enum sn_telem_format fmt;
    assert_int_equal(sn_telem_format_detect(text, strlen(text), &fmt, &err), SN_OK);
    assert_int_equal(fmt, SN_TELEM_FMT_FABRICMANAGER);
    assert_int_equal(sn_telem_parse_buffer(fmt, &o, &sink, text, strlen(text), &f->stats, &err),
                     SN_OK);
    struct sn_health_input in = {f->model, f->store, f->hist, NULL, NULL, &f->cfg, 1e9, NULL};
    sn_health_report_free(f->rep);
    f->rep = NULL;
    if (sn_health_analyze(&in, NULL, &f->rep, &err) != SN_OK)
        fail_msg("%s", err.message);
    return f->rep;
}

static const struct sn_health_finding *only(const struct sn_health_report *r)
{
    assert_int_equal(r->n_findings, 1);
    return &r->findings[0];
}

static void label_is(const struct fx *f, const struct sn_health_finding *x, const char *want)
{
    char label[160];
    sn_health_entity_label(f->model, x->entity, x->id, label, sizeof(label));
    assert_string_equal(label, want);
}

static void test_real_log(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/good-64.yaml");
    size_t len;
    char *text = slurp(&len);
    const struct sn_health_report *r = run(&f, "sn00-t00", text);
    assert_int_equal(f.stats.records, 1);
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_MALFORMED], 0);
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_UNUSED], 76); /* 54 INFO + 22 payloads */
    const struct sn_health_finding *x = only(r);
    assert_int_equal(x->detector, SN_DET_FM_SXID);
    assert_int_equal(x->entity, SN_HEALTH_ENT_SWITCH);
    label_is(&f, x, "sn00-t00-nvs3");
    assert_non_null(strstr(x->evidence, "fabricmanager.log:100: non-fatal SXid 12028 physical id "
                                        "3 port 61 -> sn00-t00-nvs3 (chip 3 of 4): detected "
                                        "NVSwitch non-fatal error 12028"));
    assert_int_equal(x->gpu, SN_NONE);
    assert_int_equal(sn_detector_info(SN_DET_FM_SXID)->severity, SN_HEALTH_SEV_WARN);
    fx_close(&f);

    fx_open(&f, "examples/good-64.yaml");
    char *fatal = replace(text, "NVSwitch non-fatal error", "NVSwitch fatal error");
    x = only(run(&f, "sn00-t00", fatal));
    assert_int_equal(x->detector, SN_DET_FM_SXID_FATAL);
    label_is(&f, x, "sn00-t00-nvs3");
    assert_int_equal(sn_detector_info(SN_DET_FM_SXID_FATAL)->action, SN_HEALTH_ACT_SERVICE);
    free(fatal);
    fx_close(&f);
    free(text);
}

static void test_mapping(void **state)
{
    (void)state;
    struct fx f;
    size_t len;
    char *text = slurp(&len);
    fx_open(&f, "examples/good-64.yaml");
    char *nine = replace(text, "physical id 3 port", "physical id 9 port");
    label_is(&f, only(run(&f, "sn01-t02", nine)), "sn01-t02-nvs1");
    free(nine);
    fx_close(&f);

    fx_open(&f, "examples/good-64.yaml");
    char *none = replace(text, " physical id 3 port 61", "");
    const struct sn_health_finding *x = only(run(&f, "sn00-t01", none));
    assert_int_equal(x->detector, SN_DET_SXID_NONFATAL);
    label_is(&f, x, "sn00-t01");
    free(none);
    fx_close(&f);

    /* NVL72: the compute tray has no chips of its own. */
    fx_open(&f, "examples/gb200-nvl72.yaml");
    x = only(run(&f, "nvl00-t04", text));
    assert_int_equal(x->detector, SN_DET_SXID_NONFATAL);
    label_is(&f, x, "nvl00-t04");
    fx_close(&f);
    free(text);
}

static void test_mutants(void **state)
{
    (void)state;
    struct fx f;
    size_t len;
    char *text = slurp(&len);
    /* A cut header in the middle, and a command line on top. */
    char *cut = replace(text,
                        "[Feb 25 2025 14:01:18] [INFO] [tid 1808] multicast group 0 is "
                        "allocated.",
                        "[Feb 25 2025 14:0");
    size_t n = strlen(cut) + 64;
    char *top = malloc(n);
    assert_non_null(top);
    snprintf(top, n, "$ cat /var/log/fabricmanager.log\n%s", cut);
    fx_open(&f, "examples/good-64.yaml");
    const struct sn_health_finding *x = only(run(&f, "sn00-t00", top));
    assert_int_equal(x->detector, SN_DET_FM_SXID);
    assert_int_equal(f.stats.skipped[SN_TELEM_SKIP_MALFORMED], 2);
    fx_close(&f);
    free(top);
    free(cut);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_log),
        cmocka_unit_test(test_mapping),
        cmocka_unit_test(test_mutants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
