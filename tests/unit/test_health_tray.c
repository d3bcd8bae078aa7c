/*
 * Rack fabric health (issue 26 item 3; docs/health.md "Rack fabric"): on a
 * GB200 NVL72 (examples/gb200-nvl72.yaml: 18 servers of 4 GPUs, 18 link
 * ports each, port k to chip nvl00-nvswk, 9 trays of 2 chips), inactive
 * links that every GPU shares are localised to the switch side:
 *  - a tray whose two chips lose every reported link is ONE nvswitch-down
 *    finding on the tray (its first chip), a chip lost alone in a tray
 *    that keeps the other is one on the chip, and none of the 72 x 3
 *    inactive GPU links is an nvlink-inactive finding; no GPU loses score,
 *    so none is cordoned; the evidence says what the domain keeps;
 *  - the same link inactive on one server's GPUs only (its own cabling) is
 *    not localised: four nvlink-inactive findings;
 *  - a chip with one link still active is not down;
 *  - links to a chip no other server reports on are
 *    nvlink-inactive-unconfirmed (no score), until a second server's
 *    report makes them the GPUs' own or the chip's;
 *  - in-server chips (examples/good-64.yaml, HGX): one chip whose every
 *    reported link is inactive on one server is down there;
 *  - scaleup.chips_per_tray must divide chips (an error at its value);
 *  - a domain left with less than min_nvlink_share of its chips (five
 *    trays of nine down) is ONE nvlink-domain-degraded finding on the
 *    supernode naming the trays; exactly the share is kept; 0 never; HGX
 *    in-server chips make no domain decision.
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

/* Which links of which GPU are inactive. */
typedef bool (*inactive_fn)(uint32_t server, unsigned gpu, unsigned link);

/* `nvidia-smi nvlink -s` of every server (host = model server name). */
static void feed_all(struct fx *f, unsigned links, const char *speed, inactive_fn bad)
{
    static char buf[1 << 16];
    for (uint32_t s = 0; s < f->model->n_servers; s++) {
        size_t at = 0;
        uint32_t n = sn_model_server_spec(f->model, s)->gpus;
        for (unsigned g = 0; g < n; g++) {
            at += (size_t)snprintf(buf + at, sizeof(buf) - at,
                                   "GPU %u: NVIDIA GB200 (UUID: GPU-00000000-0000-0000-0000-"
                                   "%06u%06u)\n",
                                   g, s, g);
            for (unsigned l = 0; l < links; l++)
                at += (size_t)snprintf(buf + at, sizeof(buf) - at, "\t Link %u: %s\n", l,
                                       bad(s, g, l) ? "<inactive>" : speed);
        }
        char host[64];
        sn_model_server_name(f->model, s, host, sizeof(host));
        struct sn_telem_opts o = {.source = "nvlink.txt", .host = host};
        struct sn_telem_sink sink = sn_health_history_sink(f->hist);
        struct sn_error err = {0};
        assert_int_equal(
            sn_telem_parse_buffer(SN_TELEM_FMT_SMI_NVLINK, &o, &sink, buf, at, NULL, &err), SN_OK);
    }
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

static uint32_t chip(const struct fx *f, unsigned k)
{
    return f->model->supernodes[0].first_scaleup + k;
}

static bool tray1_and_chip5(uint32_t s, unsigned g, unsigned l)
{
    (void)s, (void)g;
    return l == 2 || l == 3 || l == 5;
}

static void test_tray_is_one_finding(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/gb200-nvl72.yaml");
    assert_int_equal(f.model->supernodes[0].n_scaleup, 18);
    feed_all(&f, 18, "53.125 GB/s", tray1_and_chip5);
    const struct sn_health_report *r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE), 0);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 2);
    const struct sn_health_finding *tray = NULL, *one = NULL;
    for (uint32_t i = 0; i < r->n_findings; i++) {
        const struct sn_health_finding *x = &r->findings[i];
        if (x->detector != SN_DET_NVSWITCH_DOWN)
            continue;
        assert_int_equal(x->entity, SN_HEALTH_ENT_SWITCH);
        assert_int_equal(x->gpu, SN_NONE);
        if (x->id == chip(&f, 2))
            tray = x;
        if (x->id == chip(&f, 5))
            one = x;
    }
    assert_non_null(tray);
    assert_non_null(one);
    assert_near(tray->value, 144, 0); /* 72 GPUs x 2 chips */
    assert_near(one->value, 72, 0);
    assert_non_null(strstr(tray->evidence, "switch tray nvl00-nvsw02..nvl00-nvsw03: all 144 "
                                           "reported GPU links to its 2 chips inactive"));
    assert_non_null(strstr(tray->evidence, "nvl00 keeps 15 of its 18 NVLink switch chips (83%"));
    assert_non_null(strstr(one->evidence, "nvl00-nvsw05: all 72 reported GPU links to it "
                                          "inactive, none active (first: nvl00-t00, nvlink -s "
                                          "line 7)"));
    assert_int_equal(sn_detector_info(SN_DET_NVSWITCH_DOWN)->action, SN_HEALTH_ACT_SERVICE);
    /* No GPU pays for the switch side: none is cordoned or excluded. */
    for (uint32_t g = 0; g < f.model->n_gpus; g++)
        assert_near(r->gpus[g].score, 100, 0);
    fx_close(&f);
}

static bool one_server(uint32_t s, unsigned g, unsigned l)
{
    (void)g;
    return s == 7 && l == 9;
}

static bool all_but_one(uint32_t s, unsigned g, unsigned l)
{
    return l == 11 && !(s == 17 && g == 3);
}

static void test_not_localised(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/gb200-nvl72.yaml");
    feed_all(&f, 18, "53.125 GB/s", one_server);
    const struct sn_health_report *r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 0);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE), 4);
    fx_close(&f);

    fx_open(&f, "examples/gb200-nvl72.yaml");
    feed_all(&f, 18, "53.125 GB/s", all_but_one);
    r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 0);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE), 71);
    fx_close(&f);
}

/* Only nvl00-t03 reports (the others' nvlink -s not in yet), its GPUs'
 * port 4 inactive: its own links or chip 4, not yet told apart. */
static void feed_one(struct fx *f, uint32_t server, unsigned bad_link)
{
    static char buf[1 << 14];
    size_t at = 0;
    for (unsigned g = 0; g < 4; g++) {
        at += (size_t)snprintf(buf + at, sizeof(buf) - at, "GPU %u: NVIDIA GB200\n", g);
        for (unsigned l = 0; l < 18; l++)
            at += (size_t)snprintf(buf + at, sizeof(buf) - at, "\t Link %u: %s\n", l,
                                   l == bad_link ? "<inactive>" : "53.125 GB/s");
    }
    char host[64];
    sn_model_server_name(f->model, server, host, sizeof(host));
    struct sn_telem_opts o = {.source = "nvlink.txt", .host = host};
    struct sn_telem_sink sink = sn_health_history_sink(f->hist);
    struct sn_error err = {0};
    assert_int_equal(sn_telem_parse_buffer(SN_TELEM_FMT_SMI_NVLINK, &o, &sink, buf, at, NULL, &err),
                     SN_OK);
}

static void test_unconfirmed(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/gb200-nvl72.yaml");
    feed_one(&f, 3, 4);
    const struct sn_health_report *r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 0);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE), 0);
    assert_int_equal(count(r, SN_DET_NVLINK_UNCONFIRMED), 4);
    for (uint32_t i = 0; i < r->n_findings; i++)
        assert_non_null(strstr(r->findings[i].evidence, "(no other server reports on "
                                                        "nvl00-nvsw04: its own link or the "
                                                        "switch, not yet told apart)"));
    for (uint32_t k = 0; k < 4; k++) /* the others: no evidence */
        assert_near(r->gpus[f.model->server_first_gpu[3] + k].score, 100, 0);
    /* A second server shows chip 4 working: the links are nvl00-t03's own. */
    feed_one(&f, 5, 9);
    r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_UNCONFIRMED), 0);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE), 8);
    assert_near(r->gpus[f.model->server_first_gpu[3]].score, 50, 0);
    fx_close(&f);

    /* Or it shows chip 4 lost as well: the switch side. */
    fx_open(&f, "examples/gb200-nvl72.yaml");
    feed_one(&f, 3, 4);
    feed_one(&f, 5, 4);
    r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_UNCONFIRMED), 0);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE), 0);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 1);
    fx_close(&f);
}

/* HGX H100 (good-64: 4 NVSwitch chips in each server, port l to chip
 * l % 4): ports 1, 5, 9, 13, 17 of every GPU of server 2 reach its chip 1. */
static bool hgx_chip1(uint32_t s, unsigned g, unsigned l)
{
    (void)g;
    return s == 2 && l % 4 == 1;
}

static void test_in_server_chip(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/good-64.yaml");
    feed_all(&f, 18, "26.562 GB/s", hgx_chip1);
    const struct sn_health_report *r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE), 0);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 1);
    char name[64];
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].detector == SN_DET_NVSWITCH_DOWN) {
            assert_int_equal(f.model->switch_server[r->findings[i].id], 2);
            sn_model_switch_name(f.model, r->findings[i].id, name, sizeof(name));
            assert_non_null(strstr(r->findings[i].evidence, name));
            assert_non_null(strstr(r->findings[i].evidence, "keeps 3 of its 4 NVLink switch"));
        }
    fx_close(&f);
}

/* Five trays (chips 0-9) down on NVL72: the GPUs keep 8 of 18 links. */
static bool five_trays(uint32_t s, unsigned g, unsigned l)
{
    (void)s, (void)g;
    return l < 10;
}

/* Four trays (chips 0-7) and chip 9: 9 of 18 kept, exactly one half. */
static bool half(uint32_t s, unsigned g, unsigned l)
{
    (void)s, (void)g;
    return l < 8 || l == 9;
}

static const struct sn_health_finding *find(const struct sn_health_report *r, enum sn_detector d)
{
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].detector == d)
            return &r->findings[i];
    return NULL;
}

static void test_domain_share(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, "examples/gb200-nvl72.yaml");
    feed_all(&f, 18, "53.125 GB/s", five_trays);
    const struct sn_health_report *r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 5); /* one per tray */
    assert_int_equal(count(r, SN_DET_NVLINK_INACTIVE), 0);
    /* One decision on the domain, not 72 GPU findings. */
    assert_int_equal(count(r, SN_DET_NVLINK_DOMAIN_DEGRADED), 1);
    const struct sn_health_finding *x = find(r, SN_DET_NVLINK_DOMAIN_DEGRADED);
    assert_int_equal(x->entity, SN_HEALTH_ENT_SUPERNODE);
    assert_int_equal(x->id, 0);
    assert_int_equal(x->gpu, SN_NONE);
    assert_near(x->value, 8.0 / 18, 1e-9);
    assert_near(x->expected, 0.5, 0);
    assert_string_equal(x->evidence,
                        "nvl00 keeps 8 of 18 NVLink switch chips (44% of each GPU's links), below "
                        "min_nvlink_share 50%; down: nvsw00..nvsw01 nvsw02..nvsw03 nvsw04..nvsw05 "
                        "nvsw06..nvsw07 nvsw08..nvsw09");
    char label[64];
    sn_health_entity_label(f.model, x->entity, x->id, label, sizeof(label));
    assert_string_equal(label, "nvl00");
    assert_int_equal(sn_detector_info(SN_DET_NVLINK_DOMAIN_DEGRADED)->action, SN_HEALTH_ACT_DRAIN);
    for (uint32_t g = 0; g < f.model->n_gpus; g++) /* the verdict is the control's */
        assert_near(r->gpus[g].score, 100, 0);
    /* A threshold of 0.4 keeps the domain (8/18 = 0.44). */
    f.cfg.min_nvlink_share = 0.4;
    r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_DOMAIN_DEGRADED), 0);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 5);
    fx_close(&f);

    /* Exactly the threshold is kept; a lone chip is named as a chip. */
    fx_open(&f, "examples/gb200-nvl72.yaml");
    feed_all(&f, 18, "53.125 GB/s", half);
    r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_DOMAIN_DEGRADED), 0);
    f.cfg.min_nvlink_share = 0.51;
    r = analyze(&f);
    x = find(r, SN_DET_NVLINK_DOMAIN_DEGRADED);
    assert_non_null(x);
    assert_non_null(strstr(x->evidence, "keeps 9 of 18"));
    assert_non_null(strstr(x->evidence, "down: nvsw00..nvsw01 nvsw02..nvsw03 nvsw04..nvsw05 "
                                        "nvsw06..nvsw07 nvsw09"));
    /* 0: never. */
    f.cfg.min_nvlink_share = 0;
    r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVLINK_DOMAIN_DEGRADED), 0);
    fx_close(&f);

    /* HGX (in-server chips): no domain decision, the server is the domain. */
    fx_open(&f, "examples/good-64.yaml");
    f.cfg.min_nvlink_share = 1;
    feed_all(&f, 18, "26.562 GB/s", hgx_chip1);
    r = analyze(&f);
    assert_int_equal(count(r, SN_DET_NVSWITCH_DOWN), 1);
    assert_int_equal(count(r, SN_DET_NVLINK_DOMAIN_DEGRADED), 0);
    fx_close(&f);
}

static void test_tray_size_checked(void **state)
{
    (void)state;
    char path[512];
    FILE *f = fopen(sn_test_path(path, sizeof(path), "examples/gb200-nvl72.yaml"), "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *at = strstr(buf, "chips_per_tray: 2 ");
    assert_non_null(at);
    at[16] = '4';
    unsigned line = 1;
    for (char *p = buf; p < at; p++)
        line += *p == '\n';
    struct sn_spec *spec = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_spec_parse_buffer("nvl72.yaml", buf, n, &spec, &err), SN_ERR_INVALID);
    char want[160];
    snprintf(want, sizeof(want), "nvl72.yaml:%u:23: chips_per_tray 4 does not divide chips 18",
             line);
    if (!strstr(err.message, want))
        fail_msg("'%s' lacks '%s'", err.message, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tray_is_one_finding), cmocka_unit_test(test_not_localised),
        cmocka_unit_test(test_in_server_chip),      cmocka_unit_test(test_unconfirmed),
        cmocka_unit_test(test_tray_size_checked),   cmocka_unit_test(test_domain_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
