/*
 * Unit tests of repeat offenders and the repair loop (lib/control/
 * offenders.c, sn/parts.h): per-part histories keyed by the part's UUID,
 * the quarantine of a part found bad again within offender_window_s, the
 * auto-resume that never returns a quarantined part, re-qualification,
 * moves, repairs and the restore of the part rows. HEALTH events carry
 * reports built by hand over a cluster from sn_sim_shape_build() (2
 * supernodes of 4 servers of 8 GPUs), on a virtual clock.
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
#include <sn/parts.h>
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
    const char **ids; /* by GPU: the UUIDs a PARTS event reports */
    /* every part row emitted so far, copied (the restore test replays them) */
    struct sn_store_write rows[256];
    size_t n_rows;
};

static struct sn_control_config offender_cfg(void)
{
    return (struct sn_control_config){
        .offender_window_s = 3600, .offender_count = 2, .auto_resume_s = 60};
}

static struct sn_control *make_control(struct fx *f, struct sn_control_config cfg)
{
    struct sn_error err = {0};
    cfg.max_jobs = 1000;
    cfg.heartbeat_timeout_s = 10;
    cfg.default_walltime_s = 3600;
    cfg.partition_share_pct = 10;
    cfg.partition_window_s = 5;
    cfg.breaker_window_s = 3600;
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
    struct sn_control *c = sn_control_new(f->model, f->spec, &cfg, &err);
    if (!c)
        fail_msg("%s", err.message);
    return c;
}

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
    f->c = make_control(f, cfg);
    f->now = (struct sn_control_clock){1700000000000LL, 1000000};
    sn_effects_init(&f->out);
    assert_int_equal(sn_control_start(f->c, &f->now, &err), SN_OK);
    f->scores = calloc(f->model->n_gpus, sizeof(*f->scores));
    f->ids = calloc(f->model->n_gpus, sizeof(*f->ids));
    assert_non_null(f->scores);
    assert_non_null(f->ids);
    f->rep = (struct sn_health_report){
        .findings = f->findings, .n_gpus = f->model->n_gpus, .gpus = f->scores};
}

static void free_rows(struct fx *f)
{
    for (size_t i = 0; i < f->n_rows; i++)
        for (int t = 0; t < SN_STORE_TEXT_MAX; t++)
            free((char *)f->rows[i].text[t]);
    f->n_rows = 0;
}

static void fx_close(struct fx *f)
{
    struct sn_error err = {0};
    assert_int_equal(sn_control_verify(f->c, &err), SN_OK);
    free_rows(f);
    free(f->scores);
    free(f->ids);
    sn_effects_free(&f->out);
    sn_control_free(f->c);
    sn_sim_shape_free(f->spec, f->model);
}

/* Every GPU healthy (score 95), no findings. */
static void healthy_report(struct fx *f)
{
    for (uint32_t g = 0; g < f->model->n_gpus; g++)
        f->scores[g] = (struct sn_health_score){.score = 95, .reason = UINT32_MAX};
    f->rep.n_findings = 0;
}

/* Keeps a copy of the part rows of the last event. */
static void keep_rows(struct fx *f)
{
    for (size_t b = 0; b < f->out.n_batches; b++)
        for (size_t i = 0; i < f->out.batches[b].n; i++) {
            const struct sn_store_write *w = &f->out.batches[b].rows[i];
            if (w->kind != SN_STORE_PUT_ADMIN || strcmp(w->text[0], "part") != 0)
                continue;
            assert_true(f->n_rows < 256);
            struct sn_store_write *k = &f->rows[f->n_rows++];
            *k = *w;
            for (int t = 0; t < SN_STORE_TEXT_MAX; t++)
                k->text[t] = w->text[t] ? strdup(w->text[t]) : NULL;
        }
}

static enum sn_err apply(struct fx *f, const struct sn_control_event *ev)
{
    struct sn_error err = {0};
    sn_effects_reset(&f->out);
    enum sn_err rc = sn_control_apply(f->c, ev, &f->now, &f->out, &err);
    keep_rows(f);
    return rc;
}

static void health(struct fx *f)
{
    struct sn_control_event ev = {
        .kind = SN_CONTROL_EVENT_HEALTH, .report = &f->rep, .cordon_below = 60};
    assert_int_equal(apply(f, &ev), SN_OK);
}

static void parts(struct fx *f)
{
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_PARTS, .parts = f->ids};
    assert_int_equal(apply(f, &ev), SN_OK);
}

static void advance(struct fx *f, int64_t s)
{
    f->now.wall_ms += s * 1000;
    f->now.mono_ms += s * 1000;
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

/* The part record of id (a new reference), or NULL. */
static json_t *part(const struct fx *f, const char *id)
{
    json_t *all = sn_control_parts_json(f->c, NULL, SN_NONE, true), *e, *out = NULL;
    size_t i;
    json_array_foreach(json_object_get(all, "items"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "id")), id) == 0)
            out = json_incref(e);
    }
    json_decref(all);
    return out;
}

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* GPU g reports a GPU reset request: score 20 (< 60), one finding. */
static void bad(struct fx *f, uint32_t g)
{
    f->scores[g].score = 20;
}

/* The loop of the issue: a GPU found bad is cordoned (finding 1 on its
 * part), resumed by snd:health only once it has been out 60 s and scores
 * 95 again, found bad again 10 minutes later (finding 2 within the hour:
 * quarantined), then kept out however healthy it scores, until a passed
 * acceptance run re-qualifies it; a finding after that counts afresh. */
static void test_quarantine_loop(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, offender_cfg());
    f.ids[3] = "GPU-aaaa";
    parts(&f);
    assert_string_equal(sn_control_gpu_part(f.c, 3), "GPU-aaaa");
    assert_int_equal(f.n_rows, 0); /* nothing to remember yet: not stored */

    healthy_report(&f);
    bad(&f, 3);
    health(&f);
    assert_int_equal(f.c->gpus[3].state, SN_CONTROL_ADMIN_CORDONED);
    json_t *p = part(&f, "GPU-aaaa");
    assert_string_equal(str(p, "state"), "ok");
    assert_int_equal(json_integer_value(json_object_get(p, "findings_total")), 1);
    assert_string_equal(str(json_array_get(json_object_get(p, "findings"), 0), "action"), "cordon");
    json_decref(p);
    assert_int_equal(f.n_rows, 1);

    /* Healthy again after 30 s: not yet (auto_resume_s 60); after 60 s: resumed. */
    healthy_report(&f);
    advance(&f, 30);
    health(&f);
    assert_int_equal(f.c->gpus[3].state, SN_CONTROL_ADMIN_CORDONED);
    advance(&f, 30);
    health(&f);
    assert_int_equal(f.c->gpus[3].state, SN_CONTROL_ADMIN_UP);
    assert_int_equal(audits(&f, "health resume gpu"), 1);

    /* Found bad again 10 min later: cordoned and quarantined. */
    advance(&f, 600);
    bad(&f, 3);
    health(&f);
    assert_int_equal(f.c->gpus[3].state, SN_CONTROL_ADMIN_CORDONED);
    assert_int_equal(audits(&f, "part quarantine"), 1);
    const char *why = NULL;
    assert_true(sn_control_gpu_quarantined(f.c, 3, &why));
    assert_non_null(strstr(why, "found bad 2 times within 3600 s"));
    struct sn_control_parts_stats st;
    sn_control_parts_stats(f.c, &st);
    assert_int_equal(st.quarantined, 1);
    assert_int_equal(st.quarantines, 1);
    assert_int_equal(st.resumes, 1);

    /* Healthy for hours: kept out. */
    healthy_report(&f);
    for (int i = 0; i < 5; i++) {
        advance(&f, 3600);
        health(&f);
        assert_int_equal(f.c->gpus[3].state, SN_CONTROL_ADMIN_CORDONED);
    }
    sn_control_parts_stats(f.c, &st);
    assert_int_equal(st.resumes_held, 5);
    char *text = sn_control_metrics_text(f.c, f.now.wall_ms / 1000);
    assert_non_null(strstr(text, "sn_parts{state=\"quarantined\"} 1\n"));
    assert_non_null(strstr(text, "sn_parts_events_total{kind=\"finding\"} 2\n"));
    assert_non_null(strstr(text, "sn_health_auto_resumes_total{result=\"held\"} 5\n"));
    free(text);
    json_t *gv = sn_control_gpu_json(f.c, 3, true);
    assert_true(json_is_true(json_object_get(gv, "quarantined")));
    assert_string_equal(str(json_object_get(gv, "part_history"), "state"), "quarantined");
    json_decref(gv);
    json_t *nv = sn_control_node_json(f.c, 0, f.now.mono_ms);
    assert_int_equal(json_array_size(json_object_get(nv, "quarantined_gpus")), 1);
    json_decref(nv);

    /* The acceptance report must judge GPU 3's node accepted. */
    struct sn_control_refusal why2;
    char evidence[256];
    json_t *acc = json_loads("{\"format\":\"sn-health-accept\",\"version\":1,\"accepted\":1,"
                             "\"rejected\":1,\"untested\":0,\"nodes\":[{\"node\":\"sn00-t00\","
                             "\"verdict\":\"rejected\"},{\"node\":\"sn00-t01\",\"verdict\":"
                             "\"accepted\"}]}",
                             0, NULL);
    assert_non_null(acc);
    assert_false(sn_control_acceptance_passes(f.c, 3, acc, evidence, sizeof(evidence), &why2));
    assert_string_equal(why2.code, "not_accepted");
    assert_non_null(strstr(why2.message, "node sn00-t00 is rejected"));
    json_object_set_new(json_array_get(json_object_get(acc, "nodes"), 0), "verdict",
                        json_string("accepted"));
    assert_true(sn_control_acceptance_passes(f.c, 3, acc, evidence, sizeof(evidence), &why2));
    assert_string_equal(evidence,
                        "sn health accept: sn00-t00 accepted (accepted 1, rejected 1, untested 0)");
    assert_false(sn_control_acceptance_passes(f.c, 20, acc, evidence, sizeof(evidence), &why2));
    assert_non_null(strstr(why2.message, "does not judge node sn00-t02"));
    json_object_set_new(acc, "format", json_string("sn-health-analyze"));
    assert_false(sn_control_acceptance_passes(f.c, 3, acc, evidence, sizeof(evidence), &why2));
    assert_string_equal(why2.field, "acceptance");
    json_decref(acc);

    /* A passed acceptance run re-qualifies it: back up, and a later finding counts afresh. */
    struct sn_control_event rq = {.kind = SN_CONTROL_EVENT_REQUALIFY,
                                  .id = 3,
                                  .detail = "sn health accept: sn00-t00 accepted",
                                  .actor = "admin"};
    assert_int_equal(apply(&f, &rq), SN_OK);
    assert_int_equal(f.c->gpus[3].state, SN_CONTROL_ADMIN_UP);
    assert_false(sn_control_gpu_quarantined(f.c, 3, NULL));
    assert_int_equal(audits(&f, "part requalify"), 1);
    assert_int_equal(apply(&f, &rq), SN_ERR_CONFLICT); /* not quarantined any more */
    advance(&f, 60);
    bad(&f, 3);
    health(&f);
    assert_int_equal(f.c->gpus[3].state, SN_CONTROL_ADMIN_CORDONED);
    assert_false(sn_control_gpu_quarantined(f.c, 3, NULL));
    fx_close(&f);
}

/* Two findings further apart than the window do not quarantine; with
 * offender_count 0 nothing is ever quarantined. */
static void test_window(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, offender_cfg());
    for (int round = 0; round < 3; round++) {
        healthy_report(&f);
        bad(&f, 5);
        health(&f);
        assert_int_equal(f.c->gpus[5].state, SN_CONTROL_ADMIN_CORDONED);
        healthy_report(&f);
        advance(&f, 3601);
        health(&f); /* out 3601 s >= 60: resumed; the finding leaves the window */
        assert_int_equal(f.c->gpus[5].state, SN_CONTROL_ADMIN_UP);
    }
    assert_false(sn_control_gpu_quarantined(f.c, 5, NULL));
    /* no UUID reported: the history is on the slot's placeholder */
    json_t *p = part(&f, "slot:sn00-t00-gpu5");
    assert_non_null(p);
    assert_int_equal(json_integer_value(json_object_get(p, "findings_total")), 3);
    json_decref(p);
    fx_close(&f);

    struct sn_control_config cfg = offender_cfg();
    cfg.offender_count = 0;
    fx_open(&f, cfg);
    for (int round = 0; round < 3; round++) {
        healthy_report(&f);
        bad(&f, 5);
        health(&f);
        healthy_report(&f);
        advance(&f, 61);
        health(&f);
        assert_int_equal(f.c->gpus[5].state, SN_CONTROL_ADMIN_UP);
    }
    assert_false(sn_control_gpu_quarantined(f.c, 5, NULL));
    fx_close(&f);
}

/* Without auto_resume_s nothing is resumed; a leak's power-off zone is no
 * finding on the parts (the rack's, not theirs) and never auto-resumed. */
static void test_no_auto_resume_and_leak(void **state)
{
    (void)state;
    struct fx f;
    struct sn_control_config cfg = offender_cfg();
    cfg.auto_resume_s = 0;
    fx_open(&f, cfg);
    healthy_report(&f);
    bad(&f, 2);
    health(&f);
    healthy_report(&f);
    advance(&f, 7200);
    health(&f);
    assert_int_equal(f.c->gpus[2].state, SN_CONTROL_ADMIN_CORDONED);
    fx_close(&f);

    fx_open(&f, offender_cfg());
    healthy_report(&f);
    f.findings[0] = (struct sn_health_finding){.detector = SN_DET_LEAK,
                                               .action = SN_HEALTH_ACT_POWER_OFF_ZONE,
                                               .entity = SN_HEALTH_ENT_RACK,
                                               .id = f.model->server_rack[0],
                                               .gpu = SN_NONE,
                                               .server = SN_NONE};
    snprintf(f.findings[0].evidence, sizeof(f.findings[0].evidence), "leak-tray: leak 1");
    f.rep.n_findings = 1;
    health(&f);
    assert_int_equal(f.c->gpus[0].state, SN_CONTROL_ADMIN_DOWN);
    struct sn_control_parts_stats st;
    sn_control_parts_stats(f.c, &st);
    assert_int_equal(st.findings, 0);
    healthy_report(&f);
    advance(&f, 7200);
    health(&f);
    assert_int_equal(f.c->gpus[0].state, SN_CONTROL_ADMIN_DOWN);
    fx_close(&f);
}

/* A finding before any UUID is known sits on the slot's placeholder; the
 * first report of the slot's UUID takes the history over. A quarantined
 * part moved to another slot keeps its history and has that slot
 * cordoned; the part that takes its old slot starts clean. */
static void test_moves(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, offender_cfg());
    healthy_report(&f);
    bad(&f, 3);
    health(&f);
    advance(&f, 60);
    healthy_report(&f);
    health(&f);
    advance(&f, 60);
    bad(&f, 3);
    health(&f);
    assert_true(sn_control_gpu_quarantined(f.c, 3, NULL));
    assert_string_equal(sn_control_gpu_part(f.c, 3), "slot:sn00-t00-gpu3");

    f.ids[3] = "GPU-aaaa";
    parts(&f);
    assert_string_equal(sn_control_gpu_part(f.c, 3), "GPU-aaaa");
    assert_true(sn_control_gpu_quarantined(f.c, 3, NULL));
    assert_null(part(&f, "slot:sn00-t00-gpu3")); /* renamed: no longer listed */
    json_t *p = part(&f, "GPU-aaaa");
    assert_int_equal(json_integer_value(json_object_get(p, "findings_total")), 2);
    json_decref(p);

    /* The operator swaps it with GPU 10's part (GPU-bbbb, clean). */
    f.ids[3] = "GPU-bbbb";
    f.ids[10] = "GPU-aaaa";
    parts(&f);
    assert_string_equal(sn_control_gpu_part(f.c, 10), "GPU-aaaa");
    assert_true(sn_control_gpu_quarantined(f.c, 10, NULL));
    assert_false(sn_control_gpu_quarantined(f.c, 3, NULL));
    assert_int_equal(f.c->gpus[10].state, SN_CONTROL_ADMIN_CORDONED);
    assert_non_null(strstr(f.c->gpus[10].reason, "quarantined part GPU-aaaa"));
    p = part(&f, "GPU-aaaa");
    assert_string_equal(str(p, "gpu"), "sn00-t01-gpu2");
    json_decref(p);
    p = part(&f, "GPU-bbbb");
    assert_int_equal(json_integer_value(json_object_get(p, "findings_total")), 0);
    json_decref(p);
    /* GPU 3 is still held by snd:health for the old part: auto-resume brings it back */
    advance(&f, 60);
    healthy_report(&f);
    health(&f);
    assert_int_equal(f.c->gpus[3].state, SN_CONTROL_ADMIN_UP);
    assert_int_equal(f.c->gpus[10].state, SN_CONTROL_ADMIN_CORDONED);
    fx_close(&f);
}

/* sn repair: the quarantined part's record is closed (note, replaced_by),
 * the new part starts clean in the slot, the slot is back in service;
 * refusals: an id that has a record, a placeholder id. */
static void test_repair(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, offender_cfg());
    f.ids[7] = "GPU-aaaa";
    f.ids[8] = "GPU-dddd";
    parts(&f);
    for (int i = 0; i < 2; i++) {
        healthy_report(&f);
        bad(&f, 7);
        health(&f);
        advance(&f, 60);
        healthy_report(&f);
        health(&f);
        advance(&f, 60);
    }
    assert_true(sn_control_gpu_quarantined(f.c, 7, NULL));
    struct sn_control_refusal why;
    assert_false(sn_control_repair_check(f.c, 7, "GPU-aaaa", &why));
    assert_string_equal(why.field, "new_part");
    assert_false(sn_control_repair_check(f.c, 7, "slot:x", &why));
    assert_false(sn_control_repair_check(f.c, 7, "GPU-dddd", &why)); /* another slot's part */
    assert_true(sn_control_repair_check(f.c, 7, "GPU-cccc", &why));

    struct sn_control_event rep = {.kind = SN_CONTROL_EVENT_REPAIR,
                                   .id = 7,
                                   .text = "GPU-cccc",
                                   .detail = "RMA 4411",
                                   .actor = "admin"};
    assert_int_equal(apply(&f, &rep), SN_OK);
    assert_int_equal(audits(&f, "gpu repair"), 1);
    assert_int_equal(f.c->gpus[7].state, SN_CONTROL_ADMIN_UP);
    assert_string_equal(sn_control_gpu_part(f.c, 7), "GPU-cccc");
    assert_false(sn_control_gpu_quarantined(f.c, 7, NULL));
    json_t *old = part(&f, "GPU-aaaa");
    assert_string_equal(str(old, "state"), "closed");
    assert_string_equal(str(old, "replaced_by"), "GPU-cccc");
    assert_string_equal(str(old, "reason"), "RMA 4411");
    assert_true(json_is_null(json_object_get(old, "gpu")));
    assert_string_equal(str(old, "last_gpu"), "sn00-t00-gpu7");
    json_decref(old);
    json_t *list = sn_control_parts_json(f.c, "closed", SN_NONE, false);
    assert_int_equal(json_array_size(json_object_get(list, "items")), 1);
    json_decref(list);
    list = sn_control_parts_json(f.c, NULL, 7, true); /* the slot's history: old and new part */
    assert_int_equal(json_array_size(json_object_get(list, "items")), 2);
    json_decref(list);

    /* The old part's last readings linger in the telemetry until the new
     * one reports: a report still naming it in its old slot changes nothing. */
    parts(&f);
    assert_string_equal(sn_control_gpu_part(f.c, 7), "GPU-cccc");
    old = part(&f, "GPU-aaaa");
    assert_string_equal(str(old, "state"), "closed");
    json_decref(old);

    /* The next report names the new part: nothing changes; a finding on it is its first. */
    f.ids[7] = "GPU-cccc";
    parts(&f);
    healthy_report(&f);
    bad(&f, 7);
    health(&f);
    json_t *p = part(&f, "GPU-cccc");
    assert_int_equal(json_integer_value(json_object_get(p, "findings_total")), 1);
    assert_string_equal(str(p, "state"), "ok");
    json_decref(p);
    fx_close(&f);
}

/* The part rows, replayed into a fresh control (as snd's restart does),
 * give the same records; the quarantine holds and a stored finding still
 * counts in the window. */
static void test_restore(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, offender_cfg());
    f.ids[1] = "GPU-aaaa";
    f.ids[2] = "GPU-bbbb";
    parts(&f);
    for (int i = 0; i < 2; i++) {
        healthy_report(&f);
        bad(&f, 1);
        health(&f);
        advance(&f, 60);
        healthy_report(&f);
        health(&f);
        advance(&f, 60);
    }
    healthy_report(&f);
    bad(&f, 2);
    health(&f);
    assert_true(sn_control_gpu_quarantined(f.c, 1, NULL));
    json_t *before = sn_control_parts_json(f.c, NULL, SN_NONE, true);

    struct sn_control *c2 = make_control(&f, offender_cfg());
    struct sn_error err = {0};
    for (size_t i = 0; i < f.n_rows; i++)
        assert_int_equal(sn_control_restore_row(c2, &f.rows[i], &err), SN_OK);
    assert_int_equal(c2->restore_ignored, 0);
    json_t *after = sn_control_parts_json(c2, NULL, SN_NONE, true);
    char *a = json_dumps(before, JSON_SORT_KEYS), *b = json_dumps(after, JSON_SORT_KEYS);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(before);
    json_decref(after);
    assert_true(sn_control_gpu_quarantined(c2, 1, NULL));
    assert_string_equal(sn_control_gpu_part(c2, 2), "GPU-bbbb");
    sn_control_free(c2);

    struct sn_store_write bad_row = {.kind = SN_STORE_PUT_ADMIN,
                                     .text = {"part", "GPU-x", "nonsense", "{}", ""}};
    c2 = make_control(&f, offender_cfg());
    assert_int_equal(sn_control_restore_row(c2, &bad_row, &err), SN_ERR_INVALID);
    sn_control_free(c2);
    fx_close(&f);
}

/* Recommended actions for the agents: only for GPUs snd:health holds out,
 * only the allowed ones, once per interval, none where job processes are
 * left, one reboot per server. */
static void test_remedies(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f, offender_cfg());
    healthy_report(&f);
    bad(&f, 3);
    f.scores[3].action = SN_HEALTH_ACT_RESET_GPU;
    f.scores[9].action = SN_HEALTH_ACT_RESET_GPU; /* not held out: never asked */
    health(&f);
    int64_t *last = calloc(f.model->n_gpus, sizeof(int64_t));
    struct sn_control_remedy out[8];
    int64_t now = f.now.wall_ms / 1000;
    uint32_t reset = 1u << SN_HEALTH_ACT_RESET_GPU, reboot = 1u << SN_HEALTH_ACT_REBOOT;
    assert_int_equal(sn_control_remedies(f.c, &f.rep, reboot, now, 600, last, out, 8), 0);
    assert_int_equal(sn_control_remedies(f.c, &f.rep, reset, now, 600, last, out, 8), 1);
    assert_int_equal(out[0].gpu, 3);
    assert_int_equal(out[0].index, 3);
    assert_int_equal(out[0].server, 0);
    assert_int_equal(out[0].action, SN_HEALTH_ACT_RESET_GPU);
    assert_int_equal(sn_control_remedies(f.c, &f.rep, reset, now + 599, 600, last, out, 8), 0);
    f.c->gpu_procs[5] = 1; /* a job's processes still on the server */
    assert_int_equal(sn_control_remedies(f.c, &f.rep, reset, now + 600, 600, last, out, 8), 0);
    f.c->gpu_procs[5] = 0;
    assert_int_equal(sn_control_remedies(f.c, &f.rep, reset, now + 600, 600, last, out, 8), 1);

    /* two GPUs of server 1 want a reboot: one request for the server */
    bad(&f, 8);
    bad(&f, 12);
    health(&f);
    f.scores[8].action = f.scores[12].action = SN_HEALTH_ACT_REBOOT;
    f.scores[3].action = SN_HEALTH_ACT_NONE;
    assert_int_equal(sn_control_remedies(f.c, &f.rep, reset | reboot, now + 700, 600, last, out, 8),
                     1);
    assert_int_equal(out[0].server, 1);
    assert_int_equal(out[0].action, SN_HEALTH_ACT_REBOOT);
    free(last);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quarantine_loop),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_no_auto_resume_and_leak),
        cmocka_unit_test(test_moves),
        cmocka_unit_test(test_repair),
        cmocka_unit_test(test_restore),
        cmocka_unit_test(test_remedies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
