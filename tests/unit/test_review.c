/*
 * Unit tests of lib/review: the rule table, every rule on a spec that
 * breaks it (tests/specs/rules/) and on the good examples, thresholds from
 * the review config, merging of identical supernodes, the findings cap,
 * cable-label uniqueness, and docs/rules.md against the generated
 * catalogue.
 *
 * Expected figures are hand-checked in the comments of each spec file
 * (examples/good-64.yaml gives the power arithmetic).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sn_test.h"

#include <sn/review.h>

struct loaded {
    struct sn_spec *spec;
    struct sn_model *model;
};

static struct loaded load(const char *rel)
{
    char path[512];
    struct loaded l = {0};
    struct sn_error err = {0};
    sn_test_path(path, sizeof(path), rel);
    if (sn_spec_parse_file(path, &l.spec, &err) != SN_OK)
        fail_msg("%s: %s", rel, err.message);
    if (sn_model_build(l.spec, &l.model, &err) != SN_OK)
        fail_msg("%s: %s", rel, err.message);
    return l;
}

static void unload(struct loaded *l)
{
    sn_model_free(l->model);
    sn_spec_free(l->spec);
}

static struct sn_review *review(const struct loaded *l, const struct sn_review_config *cfg,
                                uint64_t mask)
{
    struct sn_review *r = NULL;
    struct sn_error err = {0};
    if (sn_review_run(l->model, cfg, mask, &r, &err) != SN_OK)
        fail_msg("review: %s", err.message);
    return r;
}

static uint64_t rule_bit(const char *id)
{
    uint32_t i = sn_review_find_rule(id);
    assert_int_not_equal(i, SN_NONE);
    return (uint64_t)1 << i;
}

/* The first finding of that rule and severity whose message contains text
 * and whose first element is element (NULL: any), or NULL. */
static const struct sn_finding *find(const struct sn_review *r, const char *rule,
                                     enum sn_severity sev, const char *element, const char *text)
{
    uint32_t ri = sn_review_find_rule(rule);
    for (uint32_t i = 0; i < r->n_findings; i++) {
        const struct sn_finding *f = &r->findings[i];
        if (f->rule != ri || f->severity != sev || !strstr(f->message, text))
            continue;
        if (element && (f->n_elements == 0 || strcmp(f->elements[0], element) != 0))
            continue;
        return f;
    }
    return NULL;
}

static void dump(const struct sn_review *r)
{
    for (uint32_t i = 0; i < r->n_findings; i++)
        print_message("  %s %s [%s] %s\n", sn_review_rule(r->findings[i].rule)->id,
                      sn_severity_name(r->findings[i].severity),
                      r->findings[i].n_elements ? r->findings[i].elements[0] : "",
                      r->findings[i].message);
}

static void expect_finding(const struct sn_review *r, const char *rule, enum sn_severity sev,
                           const char *element, const char *text)
{
    if (!find(r, rule, sev, element, text)) {
        dump(r);
        fail_msg("no %s %s finding on '%s' with '%s'", rule, sn_severity_name(sev),
                 element ? element : "*", text);
    }
}

/* Warnings and errors of rules other than those in allowed (a mask). */
static uint32_t faults_outside(const struct sn_review *r, uint64_t allowed)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n_findings; i++)
        if (r->findings[i].severity != SN_SEVERITY_INFO && !(allowed >> r->findings[i].rule & 1))
            n++;
    return n;
}

/* ---- the table -------------------------------------------------------- */

static void test_rule_table(void **state)
{
    (void)state;
    assert_int_equal(sn_review_rule_count(), 21);
    for (uint32_t i = 0; i < sn_review_rule_count(); i++) {
        const struct sn_rule *r = sn_review_rule(i);
        char id[16], anchor[96];
        snprintf(id, sizeof(id), "R%02u", i + 1);
        assert_string_equal(r->id, id);
        snprintf(anchor, sizeof(anchor), "r%02u-%s", i + 1, r->slug);
        assert_string_equal(r->anchor, anchor);
        assert_true(strlen(r->rationale) > 10 && strlen(r->checks) > 10);
        assert_int_equal(sn_review_find_rule(r->slug), i);
        for (uint32_t j = 0; j < i; j++)
            assert_string_not_equal(sn_review_rule(j)->slug, r->slug);
    }
    assert_int_equal(sn_review_find_rule("r04"), 3);
    assert_int_equal(sn_review_find_rule("R14"), 13);
    assert_int_equal(sn_review_find_rule("power-capacity"), 3);
    assert_int_equal(sn_review_find_rule("R15"), 14);
    assert_int_equal(sn_review_find_rule("R17"), 16);
    assert_int_equal(sn_review_find_rule("R18"), 17);
    assert_int_equal(sn_review_find_rule("R19"), 18);
    assert_int_equal(sn_review_find_rule("R20"), 19);
    assert_int_equal(sn_review_find_rule("R21"), 20);
    assert_int_equal(sn_review_find_rule("su-rack-budget"), 20);
    assert_int_equal(sn_review_find_rule("R22"), SN_NONE);
    assert_int_equal(sn_review_find_rule("R0"), SN_NONE);
    assert_int_equal(sn_review_find_rule(""), SN_NONE);
    assert_null(sn_review_rule(21));
    assert_string_equal(sn_severity_name(SN_SEVERITY_WARNING), "warning");
}

/* ---- good builds ------------------------------------------------------ */

static void test_good_examples(void **state)
{
    (void)state;
    const char *files[] = {"examples/good-64.yaml", "examples/std-unit-64.yaml"};
    for (size_t k = 0; k < 2; k++) {
        struct loaded l = load(files[k]);
        struct sn_review *r = review(&l, NULL, 0);
        if (r->by_severity[SN_SEVERITY_ERROR] || r->by_severity[SN_SEVERITY_WARNING]) {
            dump(r);
            fail_msg("%s: a good build has findings", files[k]);
        }
        assert_int_equal(r->rules_run, (1u << 21) - 1);
        assert_int_equal(r->suppressed, 0);
        sn_review_free(r);
        unload(&l);
    }
    /* std-unit-64 by hand: 64 GPUs x 18 NVLinks + 8 x 8 NICs + 8 mgmt ports;
     * NVSwitch: 32 chips x 64 ports, 1,152 used; chips 0-1 of a server take
     * 5 of each GPU's 18 links (40 used, 24 free), chips 2-3 take 4 (32 free). */
    struct loaded l = load("examples/std-unit-64.yaml");
    struct sn_review *r = review(&l, NULL, rule_bit("R14") | rule_bit("R08"));
    expect_finding(r, "R14", SN_SEVERITY_INFO, NULL, "1,224 cables, 2,448 port ends");
    expect_finding(r, "R08", SN_SEVERITY_INFO, NULL,
                   "scaleup switches NVSwitch-gen3: 32 switches, 2,048 ports, 1,152 used, 896 "
                   "free (24..32 free per switch)");
    expect_finding(r, "R08", SN_SEVERITY_INFO, NULL,
                   "leaf switches ToR-64x400G: 2 switches, 128 ports, 64 used, 64 free");
    sn_review_free(r);
    unload(&l);
}

/* ---- one spec per rule ------------------------------------------------ */

struct rule_case {
    const char *file;
    const char *rule;
    enum sn_severity severity;
    const char *element;
    const char *text;
    const char *also; /* other rules allowed to fault, "" for none */
};

static const struct rule_case cases[] = {
    {"r01-vlan", "R01", SN_SEVERITY_ERROR, "sn00",
     "2 supernodes alike (sn00..sn01): separation: vlan: management is a VLAN on the "
     "data-plane leaves (4 management links on data switches)",
     ""},
    {"r01-none", "R01", SN_SEVERITY_ERROR, "sn00", "separation: none", ""},
    {"r02-one-domain", "R02", SN_SEVERITY_ERROR, "sn00",
     "servers are fed by 1 power domain; a supernode must span at least 2", ""},
    {"r02-one-domain", "R02", SN_SEVERITY_ERROR, "sn00-pdA",
     "losing this domain stops 32 of 32 GPUs; 0 left (0.0%) < survivor_fraction 0.5 (16 GPUs)", ""},
    {"r02-survivors", "R02", SN_SEVERITY_ERROR, "sn00-pdB",
     "stops 16 of 32 GPUs; 16 left (50.0%) < survivor_fraction 0.75 (24 GPUs)", ""},
    {"r03-pair-one-domain", "R03", SN_SEVERITY_ERROR, "sn00-leaf0",
     "redundant leaf pair: both on one power domain", "R02"},
    /* ... and losing that domain cuts every server off the scale-out
     * fabric: the 16 GPUs on B lose both their leaves. */
    {"r03-pair-one-domain", "R02", SN_SEVERITY_ERROR, "sn00-pdA",
     "losing this domain stops 32 of 32 GPUs; 0 left (0.0%)", "R03"},
    /* 2 x 10.2 kW + 1.5 kW + 16 x 12 W + 150 W = 22.242 kW */
    {"r04-power", "R04", SN_SEVERITY_ERROR, "sn00-pdA",
     "steady draw 22.24 kW x 1.5 = 33.36 kW > capacity 30 kW", ""},
    /* 2 x (4.6 + 8 x 0.7 x 1.3) + 1.842 = 25.602 kW */
    {"r04-peak", "R04", SN_SEVERITY_ERROR, "sn00-pdA",
     "peak draw 25.6 kW (GPUs at 1.3 x TDP) > capacity 25 kW", "R17"},
    {"r04-peak", "R17", SN_SEVERITY_WARNING, "review.power_margin",
     "power_margin 1 is looser than the specification's 1.5 (capacity over steady draw)", "R04"},
    /* 4 x 10.2 + 2 x 1.692 + 2 x 0.15 = 44.484 kW */
    {"r05-rack-limit", "R05", SN_SEVERITY_ERROR, "sn00-rack0",
     "steady draw 44.48 kW > rack power limit 40 kW", ""},
    {"r05-rack-peak", "R05", SN_SEVERITY_ERROR, "sn00-rack0",
     "peak draw 49.17 kW (GPUs at 1.3 x TDP) > rack power limit 45 kW", ""},
    {"r05-air", "R05", SN_SEVERITY_ERROR, "sn00-rack0",
     "steady draw 44.48 kW > air-cooling limit 40 kW, but the rack is air-cooled", ""},
    {"r06-cooling", "R06", SN_SEVERITY_ERROR, "sn00-loopL1",
     "heat load 44.48 kW x 1.2 = 53.38 kW > capacity 50 kW", ""},
    {"r07-scaleup", "R07", SN_SEVERITY_ERROR, "sn00-t00",
     "4 of 4 servers: GPU links need 144 ports, the chips have 128", "R08"},
    {"r07-scaleup", "R07", SN_SEVERITY_ERROR, "sn00-t00-nvs0",
     "chip port 20 GB/s < GPU link 25 GB/s", "R08"},
    {"r07-scaleup", "R07", SN_SEVERITY_ERROR, "sn00",
     "4 chips x 32 ports x 20 GB/s = 2.56 TB/s < GPUs' 8 x 18 links x 25 GB/s = 3.6 TB/s", "R08"},
    {"r07-scaleup", "R08", SN_SEVERITY_ERROR, "sn00-t00-nvs0",
     "40 links on 32 ports (8 over; model NVSwitch-gen3)", "R07"},
    {"r08-ports", "R08", SN_SEVERITY_ERROR, "sn00-leaf1",
     "32 links on 24 ports (8 over; model ToR-64x400G)", ""},
    {"r09-oversub", "R09", SN_SEVERITY_ERROR, "sn00-leaf0",
     "training pool 'training': 2 of 2 leaves oversubscribed (worst 2:1)", ""},
    {"r10-headroom", "R10", SN_SEVERITY_ERROR, "sn00",
     "per-GPU scale-out 400 Gb/s / oversubscription 1:1 = 400 Gb/s < need "
     "320 Gb/s x (1 + headroom 0.3) = 416 Gb/s",
     ""},
    {"r11-reach", "R11", SN_SEVERITY_ERROR, "sn00-t00:nic0--sn00-leaf0:p0",
     "64 node-leaf links use cable 'dac-400g' (dac, reach 3 m) for length class "
     "'adjacent-rack' (10 m)",
     ""},
    {"r12-memory-wall", "R12", SN_SEVERITY_WARNING, "H100-SXM5-80GB",
     "HBM 3.35 TB/s / dense BF16 989 TFLOP/s = 0.00339 bytes/FLOP < memory_wall 0.004", ""},
    {"r13-counts", "R13", SN_SEVERITY_ERROR, "expect.gpus",
     "the spec states gpus 72, the design has 64", ""},
    {"r13-counts", "R13", SN_SEVERITY_ERROR, "expect.spines",
     "the spec states spines 3, the design has 2", ""},
    {"r13-counts", "R13", SN_SEVERITY_ERROR, "llama3-8b",
     "tp 8 x pp 1 x cp 1 x dp 4 = 32, but the layout states 64 GPUs", ""},
    {"r13-counts", "R13", SN_SEVERITY_ERROR, "llama3-8b", "ep 3 does not divide dp 4 x cp 1", ""},
    {"r14-ledger", "R14", SN_SEVERITY_ERROR, "sn000",
     "supernodes 0 and 101 (groups 0 and 1) share this name", "R01 R02 R09 R16"},
    {"r09-rounded", "R09", SN_SEVERITY_WARNING, "sn00-leaf0",
     "template 'hgx-32' leaves: oversubscription 3:1 requested, built 16:6 = 2.67:1", ""},
    {"r16-single-leaf", "R16", SN_SEVERITY_ERROR, "sn00-leaf0",
     "single leaf: its failure cuts all 32 GPUs of the supernode off the scale-out fabric",
     "R02"},
    /* The single ToR is on domain A: losing A cuts off the 16 GPUs of the
     * servers on B as well (R02 used to count 16 of 32). */
    {"r16-single-leaf", "R02", SN_SEVERITY_ERROR, "sn00-pdA",
     "losing this domain stops 32 of 32 GPUs; 0 left (0.0%)", "R16"},
    {"r16-single-spine", "R16", SN_SEVERITY_ERROR, "spine000",
     "single spine: its failure cuts every path between the 4 leaves", "R02"},
    /* The one spine is on net-pdA: losing the domain cuts every leaf off. */
    {"r16-single-spine", "R02", SN_SEVERITY_ERROR, "net-pdA",
     "stops 1 of 1 spines and 0 of 0 cores: the fabric keeps 0.0% of its bisection", "R16"},
    {"r18-speeds", "R18", SN_SEVERITY_ERROR, "sn00-t00:nic0--sn00-leaf0:p0",
     "64 node-leaf links: NICs at 400 Gb/s on leaf ports at 200 Gb/s", "R10"},
    {"r18-speeds", "R18", SN_SEVERITY_WARNING, "sn00-leaf0:p16--spine000:p0",
     "64 leaf-spine links: leaf ports at 200 Gb/s on spine ports at 400 Gb/s", "R10"},
    {"r19-psu-steady", "R19", SN_SEVERITY_ERROR, "sn00-t00",
     "server model HGX-H100-8: after one PSU (n+1) fails, 3 PSUs x 3.3 kW = 9.9 kW < steady "
     "draw 10.2 kW",
     ""},
    {"r19-psu-peak", "R19", SN_SEVERITY_ERROR, "sn00-t00",
     "server model HGX-H100-8: peak 11.88 kW (GPUs at 1.3 x TDP) > 3 surviving PSUs x 3.5 kW = "
     "10.5 kW; review.peak_duration is not stated, so the peak is taken as sustained and the "
     "pulse rating (160% for 10 ms) does not apply",
     ""},
    {"r19-shelves", "R19", SN_SEVERITY_INFO, "sn00-rack0",
     "rack shelves of template hgx-32: peak 51.2 kW (GPUs at 1.3 x TDP for 10 ms) exceeds the "
     "6 surviving PSUs' continuous 48 kW but not their pulse rating (120% for 20 ms): a pulse, "
     "not an overload",
     ""},
    {"r20-feed-phase", "R20", SN_SEVERITY_ERROR, "sn00-rack0",
     "2 supernodes alike (sn00..sn01): after one side fails, 1 415 V 3-phase 100 A feed: phase "
     "L1 carries steady 20.55 kW > 80% of the phase's 23.96 kW = 19.17 kW (continuous rating)",
     ""},
    {"r20-feed-phase", "R20", SN_SEVERITY_INFO, "sn00-rack0",
     "phases unbalanced: L1 20.55 kW, L2 12.04 kW, L3 11.89 kW steady", ""},
    /* 44.48 kW steady + 32 GPUs x 700 W x 0.3 = 51.2 kW peak > 46 kW */
    {"r21-su-budget", "R21", SN_SEVERITY_ERROR, "sn01-rack0",
     "rack peak draw 51.2 kW (GPUs at 1.3 x TDP) > scalable-unit rack budget 46 kW", ""},
    /* 8 x 6.5 kW in one rack */
    {"r21-su-budget", "R21", SN_SEVERITY_ERROR, "storage",
     "each rack of appliance 'storage' (8 units over 1 racks): steady draw 52 kW > "
     "scalable-unit rack budget 46 kW",
     ""},
    {"r21-su-budget", "R21", SN_SEVERITY_WARNING, NULL,
     "2 supernodes do not fill whole scalable units of 3: su0 has 2", ""},
    {"r21-su-budget", "R21", SN_SEVERITY_INFO, "sn00-rack0",
     "su0: 2 supernode(s) sn00..sn01, 2 racks, 88.97 kW steady, 102.4 kW peak; worst rack "
     "51.2 kW of the 46 kW budget",
     ""},
    {"r18-cable-speed", "R18", SN_SEVERITY_ERROR, "sn00-t00:nic0--sn00-leaf0:p0",
     "64 node-leaf links: cable aoc-400g at 200 Gb/s between ends at 400 Gb/s: the link runs at "
     "the cable's speed",
     ""},
    /* Both spines on net-pdA: every leaf loses its 16 uplinks. */
    {"r02-spines-one-domain", "R02", SN_SEVERITY_ERROR, "net-pdA",
     "losing this domain stops 2 of 2 spines and 0 of 0 cores: the fabric keeps 0.0% of its "
     "bisection; a leaf loses every uplink",
     ""},
    /* Spines alternate over A and B: losing one halves the bisection. */
    {"r04-fabric-power", "R02", SN_SEVERITY_INFO, "net-pdB",
     "losing this domain stops 1 of 2 spines and 0 of 0 cores: the fabric keeps 50.0% of its "
     "bisection",
     "R04"},
    {"r04-fabric-power", "R04", SN_SEVERITY_ERROR, "net-pdA",
     "steady draw 1.884 kW x 1.5 = 2.826 kW > capacity 2.5 kW", ""},
    {"r05-net-rack", "R05", SN_SEVERITY_ERROR, "net-rack0",
     "draw 3.768 kW > rack power limit 3 kW", ""},
    /* 5 SU forced onto 20 spines: the worst pair shares 24 of 32 uplinks. */
    {"r15-blocking", "R15", SN_SEVERITY_ERROR, "su00-leaf0",
     "blocking: the worst leaf pair shares 24 of 32 uplinks through the spines, a true ratio "
     "of 1.33:1 where the leaves are built 1:1",
     ""},
};

static void test_rule_specs(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct rule_case *k = &cases[i];
        char rel[256];
        snprintf(rel, sizeof(rel), "tests/specs/rules/%s.yaml", k->file);
        struct loaded l = load(rel);
        /* Only its rule. */
        struct sn_review *r = review(&l, NULL, rule_bit(k->rule));
        expect_finding(r, k->rule, k->severity, k->element, k->text);
        assert_int_equal(r->rules_run, rule_bit(k->rule));
        sn_review_free(r);
        /* All rules: no other rule faults, except those listed. */
        r = review(&l, NULL, 0);
        uint64_t allowed = rule_bit(k->rule);
        for (const char *p = k->also; *p; p++)
            if (p[0] == 'R' && p[1] && p[2]) {
                char id[4] = {p[0], p[1], p[2], '\0'};
                allowed |= rule_bit(id);
            }
        if (faults_outside(r, allowed) != 0) {
            dump(r);
            fail_msg("%s: rules other than %s %s fault", k->file, k->rule, k->also);
        }
        expect_finding(r, k->rule, k->severity, k->element, k->text);
        sn_review_free(r);
        unload(&l);
    }
}

/* ---- thresholds come from the config ---------------------------------- */

static void test_thresholds(void **state)
{
    (void)state;
    struct loaded l = load("examples/good-64.yaml");
    struct sn_review_config cfg = l.spec->review;
    cfg.power_margin = 2.0; /* 22.242 kW x 2 = 44.484 kW > 40 kW */
    struct sn_review *r = review(&l, &cfg, rule_bit("R04"));
    expect_finding(r, "R04", SN_SEVERITY_ERROR, "sn00-pdA",
                   "steady draw 22.24 kW x 2 = 44.48 kW > capacity 40 kW");
    sn_review_free(r);
    cfg = l.spec->review;
    cfg.peak_factor = 2.0; /* 2 x (4.6 + 8 x 1.4) + 1.842 = 33.442 kW: fits 40 kW */
    r = review(&l, &cfg, rule_bit("R04"));
    assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 0);
    sn_review_free(r);
    cfg.peak_factor = 3.0; /* 2 x (4.6 + 8 x 2.1) + 1.842 = 44.642 kW */
    r = review(&l, &cfg, rule_bit("R04"));
    expect_finding(r, "R04", SN_SEVERITY_ERROR, "sn00-pdB", "peak draw 44.64 kW");
    sn_review_free(r);
    cfg = l.spec->review;
    cfg.cooling_margin = 1.5; /* 44.484 x 1.5 = 66.73 kW > 60 kW */
    r = review(&l, &cfg, rule_bit("R06"));
    expect_finding(r, "R06", SN_SEVERITY_ERROR, "sn00-loopL1", "x 1.5 = 66.73 kW > capacity 60 kW");
    sn_review_free(r);
    cfg = l.spec->review;
    cfg.bandwidth_headroom = 1.0; /* 200 x 2 = 400 Gb/s passes; 1.01: 402 Gb/s > 400 */
    r = review(&l, &cfg, rule_bit("R10"));
    assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 0);
    sn_review_free(r);
    cfg.bandwidth_headroom = 1.01;
    r = review(&l, &cfg, rule_bit("R10"));
    expect_finding(r, "R10", SN_SEVERITY_ERROR, "sn00", "= 402 Gb/s");
    sn_review_free(r);
    cfg = l.spec->review;
    cfg.air_cooling_limit_w = 60e3; /* the air rack of r05-air passes under 60 kW */
    unload(&l);
    l = load("tests/specs/rules/r05-air.yaml");
    r = review(&l, &cfg, rule_bit("R05"));
    assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 0);
    sn_review_free(r);
    cfg.power_margin = -1;
    struct sn_review *bad = NULL;
    struct sn_error err = {0};
    assert_int_equal(sn_review_run(l.model, &cfg, 0, &bad, &err), SN_ERR_INVALID);
    assert_null(bad);
    unload(&l);
}

/* A peak above the surviving PSUs' continuous rating is a pulse only when
 * it is short enough and within the pulse rating (r19-psu-peak: 11.88 kW
 * on 3 x 3.5 kW, pulse 160% for 10 ms). */
static void test_psu_pulse(void **state)
{
    (void)state;
    /* Feed capacities (R20): sqrt(3) x 415 V x 63 A = 45.28 kW; 230 V
     * single-phase 32 A = 7.36 kW; at power factor 0.95, 6.992 kW. */
    struct sn_feed_spec feed = {.voltage_v = 415, .phases = 3, .current_a = 63, .power_factor = 1};
    assert_true(fabs(sn_model_feed_capacity_w(&feed) - 45284.47) < 0.01);
    feed = (struct sn_feed_spec){.voltage_v = 230, .phases = 1, .current_a = 32, .power_factor = 1};
    assert_true(fabs(sn_model_feed_capacity_w(&feed) - 7360) < 1e-9);
    feed.power_factor = 0.95;
    assert_true(fabs(sn_model_feed_capacity_w(&feed) - 6992) < 1e-9);
    struct loaded l = load("tests/specs/rules/r19-psu-peak.yaml");
    struct sn_review_config cfg = l.spec->review;
    cfg.peak_duration_s = 0.005;
    struct sn_review *r = review(&l, &cfg, rule_bit("R19"));
    expect_finding(r, "R19", SN_SEVERITY_INFO, "sn00-t00",
                   "peak 11.88 kW (GPUs at 1.3 x TDP for 5 ms) exceeds the 3 surviving PSUs' "
                   "continuous 10.5 kW but not their pulse rating (160% for 10 ms)");
    assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 0);
    sn_review_free(r);
    cfg.peak_duration_s = 0.02;
    r = review(&l, &cfg, rule_bit("R19"));
    expect_finding(r, "R19", SN_SEVERITY_ERROR, "sn00-t00",
                   "the peak lasts 20 ms, longer than the pulse rating's 10 ms");
    sn_review_free(r);
    cfg.peak_duration_s = 0.005;
    cfg.peak_factor = 2.0; /* 4.6 + 11.2 = 15.8 kW: still within 16.8 kW */
    r = review(&l, &cfg, rule_bit("R19"));
    assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 0);
    sn_review_free(r);
    cfg.peak_factor = 2.5; /* 18.6 kW > 1.6 x 10.5 kW = 16.8 kW */
    r = review(&l, &cfg, rule_bit("R19"));
    expect_finding(r, "R19", SN_SEVERITY_ERROR, "sn00-t00",
                   "above the pulse rating too (160%, 16.8 kW)");
    sn_review_free(r);
    unload(&l);
}

/* ---- merging and caps ------------------------------------------------- */

static void test_merging(void **state)
{
    (void)state;
    struct loaded l = load("tests/specs/rules/r04-power.yaml");
    struct sn_review *r = review(&l, NULL, rule_bit("R04"));
    /* Two identical supernodes: two errors, reported as one finding. */
    assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 2);
    assert_int_equal(r->n_findings, 1);
    assert_string_equal(r->findings[0].message, "2 supernodes alike (sn00..sn01): steady draw "
                                                "22.24 kW x 1.5 = 33.36 kW > capacity 30 kW");
    sn_review_free(r);
    unload(&l);
}

static void test_cap(void **state)
{
    (void)state;
    struct loaded l = load("tests/specs/rules/cap-layouts.yaml");
    struct sn_review *r = review(&l, NULL, rule_bit("R13"));
    /* 256 layouts x 4 faults: 768 errors and 256 warnings. */
    assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 768);
    assert_int_equal(r->by_severity[SN_SEVERITY_WARNING], 256);
    assert_int_equal(r->n_findings, SN_REVIEW_MAX_PER_RULE + 1);
    assert_int_equal(r->suppressed, 24);
    const struct sn_finding *last = &r->findings[r->n_findings - 1];
    assert_int_equal(last->severity, SN_SEVERITY_ERROR);
    assert_non_null(strstr(last->message, "24 more findings of this rule suppressed"));
    sn_review_free(r);
    unload(&l);
}

static void test_sorted(void **state)
{
    (void)state;
    struct loaded l = load("tests/specs/good/all-keys.yaml");
    struct sn_review *r = review(&l, NULL, 0);
    assert_true(r->n_findings > 10);
    for (uint32_t i = 1; i < r->n_findings; i++) {
        const struct sn_finding *a = &r->findings[i - 1], *b = &r->findings[i];
        assert_true(a->rule < b->rule || (a->rule == b->rule && a->key <= b->key));
    }
    /* The same model gives the same findings. */
    struct sn_review *again = review(&l, NULL, 0);
    assert_int_equal(again->n_findings, r->n_findings);
    for (uint32_t i = 0; i < r->n_findings; i++)
        assert_string_equal(again->findings[i].message, r->findings[i].message);
    sn_review_free(again);
    sn_review_free(r);
    unload(&l);
}

/* ---- cable labels ----------------------------------------------------- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Materialises every label (the examples are small) and checks that they
 * are unique, independently of R14's structural argument. */
static void test_labels_unique(void **state)
{
    (void)state;
    const char *files[] = {"examples/good-64.yaml", "examples/std-unit-64.yaml",
                           "tests/specs/good/all-keys.yaml"};
    for (size_t k = 0; k < 3; k++) {
        struct loaded l = load(files[k]);
        uint64_t n = l.model->n_links;
        char *buf = malloc(n * 128);
        char **labels = malloc(n * sizeof(char *));
        assert_non_null(buf);
        assert_non_null(labels);
        for (uint64_t i = 0; i < n; i++) {
            labels[i] = buf + i * 128;
            sn_model_cable_label(l.model, &l.model->links[i], labels[i], 128);
            assert_true(strlen(labels[i]) < 127);
        }
        qsort(labels, n, sizeof(char *), str_cmp);
        for (uint64_t i = 1; i < n; i++)
            assert_string_not_equal(labels[i - 1], labels[i]);
        struct sn_review *r = review(&l, NULL, rule_bit("R14"));
        assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 0);
        expect_finding(r, "R14", SN_SEVERITY_INFO, NULL, "every cable label is unique");
        sn_review_free(r);
        free(labels);
        free(buf);
        unload(&l);
    }
}

static void test_duplicate_port(void **state)
{
    (void)state;
    struct loaded l = load("examples/std-unit-64.yaml");
    /* Link 1 (GPU 0, NVLink 1) claims NVLink 0 too: two cables, one label. */
    l.model->links[1].a_port = l.model->links[0].a_port;
    struct sn_review *r = review(&l, NULL, rule_bit("R14"));
    expect_finding(r, "R14", SN_SEVERITY_ERROR, "sn00-t00-gpu0:nvl0--sn00-t00-nvs1:p0",
                   "cable 1 (scaleup): this port end is already used by another cable");
    assert_null(find(r, "R14", SN_SEVERITY_INFO, NULL, "unique"));
    sn_review_free(r);
    /* A port past the device's ports. */
    l.model->links[1].a_port = 18;
    r = review(&l, NULL, rule_bit("R14"));
    expect_finding(r, "R14", SN_SEVERITY_ERROR, NULL, "port beyond its device's ports");
    sn_review_free(r);
    unload(&l);
}

static void test_unreachable_pair(void **state)
{
    (void)state;
    struct loaded l = load("examples/std-unit-64.yaml");
    struct sn_model *m = l.model;
    /* Server 0: GPU 0's 18 links all to chip 0, GPU 1's all to chip 1 (the
     * port totals stay the same): the pair shares no chip. */
    uint32_t chip0 = m->supernodes[0].first_scaleup;
    for (uint64_t i = 0; i < 36; i++)
        m->links[i].b_id = chip0 + (m->links[i].a_id == 0 ? 0 : 1);
    struct sn_review *r = review(&l, NULL, rule_bit("R07"));
    expect_finding(r, "R07", SN_SEVERITY_ERROR, "sn00-t00",
                   "1 of 8 servers: some GPU pairs share no switch chip");
    sn_review_free(r);
    unload(&l);
}

/* ---- blocking leaf pairs ----------------------------------------------- */

/* The same 5-SU fabric without `spines: 20` gets the default, even spine
 * count (32) and R15 reports every pair sharing all 32 uplinks. */
static void test_even_default(void **state)
{
    (void)state;
    char path[512];
    FILE *f = fopen(sn_test_path(path, sizeof(path), "tests/specs/rules/r15-blocking.yaml"), "rb");
    assert_non_null(f);
    char *text = calloc(1, 1 << 16);
    assert_non_null(text);
    size_t len = fread(text, 1, (1 << 16) - 1, f);
    fclose(f);
    char *line = strstr(text, "  spines: 20\n");
    assert_non_null(line);
    memmove(line, line + 13, len - (size_t)(line + 13 - text) + 1);
    struct loaded l = {0};
    struct sn_error err = {0};
    assert_int_equal(sn_spec_parse_buffer("even.yaml", text, strlen(text), &l.spec, &err), SN_OK);
    assert_int_equal(sn_model_build(l.spec, &l.model, &err), SN_OK);
    assert_int_equal(l.model->n_spines, 32);
    struct sn_review *r = review(&l, NULL, 0);
    expect_finding(r, "R15", SN_SEVERITY_INFO, "su00-leaf0",
                   "worst leaf pair shares 32 of 32 uplinks: true leaf-pair ratio 1:1");
    assert_int_equal(r->by_severity[SN_SEVERITY_ERROR], 0);
    assert_int_equal(r->by_severity[SN_SEVERITY_WARNING], 0);
    sn_review_free(r);
    unload(&l);
    free(text);
}

/* ---- docs/rules.md is the generated catalogue ------------------------- */

static void test_docs_current(void **state)
{
    (void)state;
    char *md = NULL, path[512];
    struct sn_error err = {0};
    assert_int_equal(sn_review_rules_markdown(&md, &err), SN_OK);
    FILE *f = fopen(sn_test_path(path, sizeof(path), "docs/rules.md"), "rb");
    assert_non_null(f);
    size_t len = strlen(md);
    char *file = calloc(1, len + 2);
    assert_non_null(file);
    size_t got = fread(file, 1, len + 1, f);
    fclose(f);
    if (got != len || memcmp(file, md, len) != 0)
        fail_msg("docs/rules.md is stale: regenerate with "
                 "`sn design check --list-rules --markdown > docs/rules.md`");
    for (uint32_t i = 0; i < sn_review_rule_count(); i++) {
        char heading[128];
        snprintf(heading, sizeof(heading), "## %s %s\n", sn_review_rule(i)->id,
                 sn_review_rule(i)->slug);
        assert_non_null(strstr(md, heading));
    }
    free(file);
    free(md);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_table),     cmocka_unit_test(test_good_examples),
        cmocka_unit_test(test_rule_specs),     cmocka_unit_test(test_thresholds),
        cmocka_unit_test(test_merging),        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_sorted),         cmocka_unit_test(test_labels_unique),
        cmocka_unit_test(test_duplicate_port), cmocka_unit_test(test_unreachable_pair),
        cmocka_unit_test(test_docs_current),   cmocka_unit_test(test_psu_pulse),   cmocka_unit_test(test_even_default),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
