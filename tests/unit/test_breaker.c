/*
 * Unit tests of the health guard rails (lib/control/breaker.c): the
 * circuit breaker on snd:health's cordons and failures per cluster,
 * supernode and rack, its reset, and the escalation of a rack with many bad
 * servers to one drain and one undrain. HEALTH events carry reports built by
 * hand over a cluster from sn_sim_shape_build() (2 supernodes of 4 servers
 * of 8 GPUs); every expected figure is worked out in the comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include <sn/api.h>
#include <sn/control.h>
#include <sn/sim.h>

#include "sn_test.h"

struct fx {
    struct sn_spec *spec;
    struct sn_model *model;
    struct sn_control *c;
    struct sn_control_clock now;
    struct sn_effects out;
    struct sn_health_score *scores;
    struct sn_health_finding findings[8];
    struct sn_health_report rep;
};

static void fx_open(struct fx *f, struct sn_control_config cfg)
{
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    sh.servers = 4;
    sh.gpus_per_server = 8;
    sh.power_domains = 2;
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_sim_shape_build(&sh, &f->spec, &f->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    cfg.max_jobs = 1000;
    cfg.heartbeat_timeout_s = 10;
    cfg.default_walltime_s = 3600;
    cfg.partition_share_pct = 10;
    cfg.partition_window_s = 5;
    if (!cfg.breaker_window_s)
        cfg.breaker_window_s = 3600;
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
    f->c = sn_control_new(f->model, f->spec, &cfg, &err);
    if (!f->c)
        fail_msg("%s", err.message);
    json_error_t jerr;
    json_t *doc = json_loads("{\"prefix\": \"/data/acme\"}", 0, &jerr);
    assert_int_equal(sn_control_named_put(&f->c->tenants, &f->c->n_tenants, "acme", doc, &err),
                     SN_OK);
    f->now = (struct sn_control_clock){1700000000000LL, 1000000};
    sn_effects_init(&f->out);
    assert_int_equal(sn_control_start(f->c, &f->now, &err), SN_OK);
    f->scores = calloc(f->model->n_gpus, sizeof(*f->scores));
    assert_non_null(f->scores);
    f->rep = (struct sn_health_report){
        .findings = f->findings, .n_gpus = f->model->n_gpus, .gpus = f->scores};
}

static void fx_close(struct fx *f)
{
    struct sn_error err = {0};
    assert_int_equal(sn_control_verify(f->c, &err), SN_OK);
    free(f->scores);
    sn_effects_free(&f->out);
    sn_control_free(f->c);
    sn_sim_shape_free(f->spec, f->model);
}

/* Every GPU unknown (NaN: no evidence), no findings. */
static void clean_report(struct fx *f)
{
    for (uint32_t g = 0; g < f->model->n_gpus; g++)
        f->scores[g] = (struct sn_health_score){.score = NAN, .reason = UINT32_MAX};
    f->rep.n_findings = 0;
}

static void health(struct fx *f)
{
    struct sn_control_event ev = {
        .kind = SN_CONTROL_EVENT_HEALTH, .report = &f->rep, .cordon_below = 60};
    struct sn_error err = {0};
    sn_effects_reset(&f->out);
    assert_int_equal(sn_control_apply(f->c, &ev, &f->now, &f->out, &err), SN_OK);
}

static void reset(struct fx *f)
{
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_BREAKER_RESET, .actor = "admin"};
    struct sn_error err = {0};
    sn_effects_reset(&f->out);
    assert_int_equal(sn_control_apply(f->c, &ev, &f->now, &f->out, &err), SN_OK);
}

static uint32_t gpus_in(const struct fx *f, enum sn_control_admin_state st)
{
    uint32_t n = 0;
    for (uint32_t g = 0; g < f->model->n_gpus; g++)
        n += f->c->gpus[g].state == st;
    return n;
}

/* Audit rows of the last event whose action is `action`. */
static uint32_t audits(const struct fx *f, const char *action)
{
    uint32_t n = 0;
    for (size_t b = 0; b < f->out.n_batches; b++)
        for (size_t i = 0; i < f->out.batches[b].n; i++) {
            const struct sn_store_write *w = &f->out.batches[b].rows[i];
            n += w->kind == SN_STORE_ADD_AUDIT && strcmp(w->text[1], action) == 0;
        }
    return n;
}

static json_int_t breaker_int(const struct fx *f, const char *key)
{
    json_t *o = sn_control_breaker_json(f->c);
    json_int_t v = json_integer_value(json_object_get(o, key));
    json_decref(o);
    return v;
}

static bool breaker_open(const struct fx *f)
{
    json_t *o = sn_control_breaker_json(f->c);
    bool v = json_is_true(json_object_get(o, "open"));
    json_decref(o);
    return v;
}

/* The storm: a bad telemetry push gives 40 % of the GPUs (g % 5 < 2: 26 of
 * 64) a score of 30. With breaker_cluster = 8, snd:health cordons the first
 * 8 (by GPU id) and trips the cluster scope on the 9th: 18 are refused, the
 * cluster keeps 56 GPUs up. A second storm report changes nothing; a reset
 * opens a fresh window: 8 more, then the breaker trips again. */
static void test_storm_stopped(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, (struct sn_control_config){.breaker_cluster = 8});
    clean_report(&f);
    uint32_t bad = 0;
    for (uint32_t g = 0; g < f.model->n_gpus; g++)
        if (g % 5 < 2) {
            f.scores[g].score = 30;
            bad++;
        }
    assert_int_equal(bad, 26);
    health(&f);
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 8);
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_UP), 56);
    assert_int_equal(f.c->health_cordons, 8);
    assert_int_equal(audits(&f, "health breaker open"), 1);
    assert_int_equal(audits(&f, "health cordon gpu"), 8);
    assert_true(breaker_open(&f));
    assert_int_equal(breaker_int(&f, "trips_total"), 1);
    assert_int_equal(breaker_int(&f, "suppressed_total"), 18);
    bool logged = false;
    for (size_t i = 0; i < f.out.n_logs; i++)
        logged |= strstr(f.out.logs[i], "breaker open: cluster cluster") != NULL;
    assert_true(logged);
    char *text = sn_control_metrics_text(f.c, 1700000000);
    assert_non_null(strstr(text, "sn_health_breaker_open{scope=\"cluster\"} 1\n"));
    assert_non_null(strstr(text, "sn_health_breaker_suppressed_total 18\n"));
    free(text);

    f.now.wall_ms += 10000;
    health(&f);
    assert_int_equal(f.out.n_batches, 0); /* open: no action, no second trip row */
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 8);
    assert_int_equal(breaker_int(&f, "suppressed_total"), 36);

    /* The window passing does not close it: it waits for an operator. */
    f.now.wall_ms += 7200 * 1000;
    health(&f);
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 8);

    reset(&f);
    assert_false(breaker_open(&f));
    assert_int_equal(breaker_int(&f, "last_reset_s"), f.now.wall_ms / 1000);
    health(&f);
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 16);
    assert_true(breaker_open(&f));
    assert_int_equal(breaker_int(&f, "trips_total"), 2);
    fx_close(&f);
}

/* Without a limit the same storm cordons all 26: the breaker is what stops it. */
static void test_storm_without_breaker(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, (struct sn_control_config){0});
    clean_report(&f);
    for (uint32_t g = 0; g < f.model->n_gpus; g++)
        if (g % 5 < 2)
            f.scores[g].score = 30;
    health(&f);
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 26);
    assert_false(breaker_open(&f));
    fx_close(&f);
}

/* The window: breaker_supernode = 2 over 60 s. Two cordons in supernode 0
 * at t, a third at t + 30 trips supernode 0 only: supernode 1 still acts.
 * In a second control the third comes at t + 61: the first two have left
 * the window, so it is taken. */
static void test_supernode_window(void **state)
{
    (void)state;
    for (int late = 0; late < 2; late++) {
        struct fx f;
        fx_open(&f, (struct sn_control_config){.breaker_supernode = 2, .breaker_window_s = 60});
        const struct sn_model *m = f.model;
        uint32_t sn1 = m->supernodes[1].first_gpu;
        clean_report(&f);
        f.scores[0].score = 10;
        f.scores[1].score = 10;
        health(&f);
        assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 2);
        f.now.wall_ms += late ? 61000 : 30000;
        clean_report(&f);
        f.scores[2].score = 10;
        f.scores[sn1].score = 10;
        health(&f);
        assert_int_equal(f.c->gpus[sn1].state, SN_CONTROL_ADMIN_CORDONED);
        assert_int_equal(f.c->gpus[2].state,
                         late ? SN_CONTROL_ADMIN_CORDONED : SN_CONTROL_ADMIN_UP);
        assert_int_equal(breaker_open(&f), !late);
        if (!late) {
            json_t *o = sn_control_breaker_json(f.c);
            json_t *sc = json_array_get(json_object_get(o, "scopes"), 0);
            assert_string_equal(json_string_value(json_object_get(sc, "scope")), "supernode");
            char sn0[64];
            sn_model_supernode_name(m, 0, sn0, sizeof(sn0));
            assert_string_equal(json_string_value(json_object_get(sc, "name")), sn0);
            assert_int_equal(json_array_size(json_object_get(o, "scopes")), 1);
            json_decref(o);
        }
        fx_close(&f);
    }
}

/* A leak's power-off zone is a safety action: taken for every GPU of the
 * rack even with breaker_cluster = 2 (and counted: the cluster scope then
 * refuses the next cordon elsewhere and trips). */
static void test_power_off_zone_not_refused(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, (struct sn_control_config){.breaker_cluster = 2});
    const struct sn_model *m = f.model;
    uint32_t rack = m->server_rack[0], rack_gpus = 0, other = SN_NONE;
    for (uint32_t g = 0; g < m->n_gpus; g++) {
        if (m->server_rack[m->gpu_server[g]] == rack)
            rack_gpus++;
        else if (other == SN_NONE)
            other = g;
    }
    assert_true(rack_gpus > 2 && other != SN_NONE);
    clean_report(&f);
    f.findings[0] = (struct sn_health_finding){.detector = SN_DET_LEAK,
                                               .action = SN_HEALTH_ACT_POWER_OFF_ZONE,
                                               .entity = SN_HEALTH_ENT_RACK,
                                               .id = rack,
                                               .gpu = SN_NONE,
                                               .server = SN_NONE};
    f.rep.n_findings = 1;
    f.scores[other].score = 20;
    health(&f);
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_DOWN), rack_gpus);
    assert_int_equal(f.c->gpus[other].state, SN_CONTROL_ADMIN_UP);
    assert_true(breaker_open(&f));
    fx_close(&f);
}

/* Servers of rack r, in id order, into out (at most cap); their count. */
static uint32_t rack_servers(const struct sn_model *m, uint32_t r, uint32_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t s = 0; s < m->n_servers; s++)
        if (m->server_rack[s] == r && n < cap)
            out[n++] = s;
    return n;
}

/* Escalation at 50 %: a rack of n servers with n/2 of them carrying a GPU
 * scoring 20 is drained as one decision (no job runs: drained), one audit
 * row naming the bad members, and none of its GPUs is cordoned on its
 * own. The same report again changes nothing; a clean one undrains the
 * rack as one. */
static void test_rack_escalation(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, (struct sn_control_config){.escalate_rack_pct = 50, .breaker_cluster = 64});
    const struct sn_model *m = f.model;
    uint32_t rack = m->server_rack[0], srv[16];
    uint32_t n = rack_servers(m, rack, srv, 16);
    assert_true(n >= 2);
    clean_report(&f);
    char want[256] = "";
    for (uint32_t i = 0; i < n / 2; i++) {
        f.scores[m->server_first_gpu[srv[i]] + 3].score = 20;
        char name[64];
        sn_model_server_name(m, srv[i], name, sizeof(name));
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s", i ? " " : "", name);
    }
    health(&f);
    for (uint32_t i = 0; i < n; i++) {
        const struct sn_control_admin *a = &f.c->nodes[srv[i]];
        assert_int_equal(a->state, SN_CONTROL_ADMIN_DRAINED);
        assert_string_equal(a->actor, "snd:health");
        assert_non_null(strstr(a->reason, "escalated"));
        assert_non_null(strstr(a->reason, want));
    }
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 0);
    assert_int_equal(audits(&f, "health escalate rack"), 1);
    assert_int_equal(audits(&f, "health cordon gpu"), 0);
    assert_int_equal(breaker_int(&f, "escalations_total"), 1);
    /* Counted in the cluster scope: the rack's GPUs. */
    json_t *o = sn_control_breaker_json(f.c);
    assert_false(json_is_true(json_object_get(o, "open")));
    json_decref(o);

    health(&f);
    assert_int_equal(f.out.n_batches, 0);

    clean_report(&f);
    health(&f);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(f.c->nodes[srv[i]].state, SN_CONTROL_ADMIN_UP);
    assert_int_equal(audits(&f, "health undrain rack"), 1);
    assert_int_equal(breaker_int(&f, "undrains_total"), 1);
    char *text = sn_control_metrics_text(f.c, 1700000000);
    assert_non_null(strstr(text, "sn_health_rack_escalations_total{kind=\"drain\"} 1\n"));
    assert_non_null(strstr(text, "sn_health_rack_escalations_total{kind=\"undrain\"} 1\n"));
    free(text);
    fx_close(&f);
}

/* Below the share nothing escalates: one bad server of the rack is 1/n < 50 %
 * (n >= 3), and its GPU is cordoned on its own. */
static void test_rack_below_share(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, (struct sn_control_config){.escalate_rack_pct = 50});
    const struct sn_model *m = f.model;
    uint32_t srv[16], n = rack_servers(m, m->server_rack[0], srv, 16);
    clean_report(&f);
    f.scores[m->server_first_gpu[srv[0]]].score = 20;
    health(&f);
    if (n >= 3) {
        assert_int_equal(audits(&f, "health escalate rack"), 0);
        assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 1);
        for (uint32_t i = 0; i < n; i++)
            assert_int_equal(f.c->nodes[srv[i]].state, SN_CONTROL_ADMIN_UP);
    } else {
        assert_int_equal(audits(&f, "health escalate rack"), 1); /* 1 of 2 is 50 % */
    }
    fx_close(&f);
}

/* An escalation is held by the cluster breaker like any action: with
 * breaker_cluster = 4, a rack of more than 4 GPUs is not drained and the
 * cluster scope trips. */
static void test_escalation_refused_by_breaker(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, (struct sn_control_config){.escalate_rack_pct = 50, .breaker_cluster = 4});
    const struct sn_model *m = f.model;
    uint32_t srv[16], n = rack_servers(m, m->server_rack[0], srv, 16);
    clean_report(&f);
    for (uint32_t i = 0; i < n; i++)
        f.scores[m->server_first_gpu[srv[i]]].score = 20;
    health(&f);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(f.c->nodes[srv[i]].state, SN_CONTROL_ADMIN_UP);
    assert_int_equal(audits(&f, "health escalate rack"), 0);
    assert_true(breaker_open(&f));
    assert_int_equal(breaker_int(&f, "escalations_total"), 0);
    /* The GPU verdicts are refused as well: the scope is open. */
    assert_int_equal(gpus_in(&f, SN_CONTROL_ADMIN_CORDONED), 0);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_storm_stopped),
        cmocka_unit_test(test_storm_without_breaker),
        cmocka_unit_test(test_supernode_window),
        cmocka_unit_test(test_power_off_zone_not_refused),
        cmocka_unit_test(test_rack_escalation),
        cmocka_unit_test(test_rack_below_share),
        cmocka_unit_test(test_escalation_refused_by_breaker),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
