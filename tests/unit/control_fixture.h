/*
 * The fixture of the lib/control unit tests that need no daemon: a sim
 * shape of supernodes x 4 servers x 8 GPUs (2 power domains), a control
 * over it with tenant acme (its limits as given) and priority classes low
 * (0) and high (100), a virtual clock, and helpers that apply events,
 * submit jobs as the submit route records them, run passes, decode and
 * apply an update as its route does.
 */
#ifndef SN_TEST_CONTROL_FIXTURE_H
#define SN_TEST_CONTROL_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <stdio.h>
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
};

static inline void put_named(struct sn_control_named **list, uint32_t *n, const char *name,
                      const char *doc)
{
    json_error_t jerr;
    json_t *d = json_loads(doc, 0, &jerr);
    assert_non_null(d);
    struct sn_error err = {0};
    assert_int_equal(sn_control_named_put(list, n, name, d, &err), SN_OK);
}

/* The fixture with the rules' knobs cfg (NULL: the defaults below). */
static inline void fx_open_with(struct fx *f, uint32_t supernodes, const char *limits,
                                const struct sn_control_config *with)
{
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = supernodes;
    sh.servers = 4;
    sh.gpus_per_server = 8;
    sh.power_domains = 2;
    struct sn_error err = {0};
    memset(f, 0, sizeof(*f));
    if (sn_sim_shape_build(&sh, &f->spec, &f->model, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_control_config cfg = {
        .max_jobs = 100,
        .heartbeat_timeout_s = 10,
        .default_walltime_s = 3600,
        .partition_share_pct = 10,
        .partition_window_s = 5,
        .max_tenants_per_supernode = 4,
        .pending_reason_hold_ms = SN_CONTROL_REASON_HOLD_MS_DEFAULT, /* as snd */
    };
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
    if (with)
        cfg = *with;
    f->c = sn_control_new(f->model, f->spec, &cfg, &err);
    if (!f->c)
        fail_msg("%s", err.message);
    char doc[200];
    snprintf(doc, sizeof(doc), "{\"prefix\": \"/data/acme\", \"limits\": {%s}}", limits);
    put_named(&f->c->tenants, &f->c->n_tenants, "acme", doc);
    put_named(&f->c->classes, &f->c->n_classes, "low", "{\"priority\": 0}");
    put_named(&f->c->classes, &f->c->n_classes, "high", "{\"priority\": 100}");
    f->now = (struct sn_control_clock){1700000000000LL, 1000000};
    sn_effects_init(&f->out);
    assert_int_equal(sn_control_start(f->c, &f->now, &err), SN_OK);
}

static inline void fx_open_sized(struct fx *f, uint32_t supernodes, const char *limits)
{
    fx_open_with(f, supernodes, limits, NULL);
}

static inline void fx_close(struct fx *f)
{
    sn_effects_free(&f->out);
    sn_control_free(f->c);
    sn_sim_shape_free(f->spec, f->model);
}

static inline enum sn_err apply(struct fx *f, struct sn_control_event ev)
{
    struct sn_error err = {0};
    return sn_control_apply(f->c, &ev, &f->now, &f->out, &err);
}

static inline int64_t submit(struct fx *f, const char *spec)
{
    struct sn_control_job *j = calloc(1, sizeof(*j));
    assert_non_null(j);
    json_error_t jerr;
    j->spec = json_loads(spec, 0, &jerr);
    assert_non_null(j->spec);
    j->id = f->c->next_job_id;
    snprintf(j->tenant, sizeof(j->tenant), "acme");
    j->state = SN_CONTROL_JOB_PENDING;
    j->sched_id = SN_NONE;
    j->failed_rank = -1;
    j->submit_s = j->updated_s = f->now.wall_ms / 1000;
    struct sn_error err = {0};
    assert_int_equal(sn_control_job_insert(f->c, j, &err), SN_OK);
    assert_int_equal(
        apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_SUBMIT, .job = j->id}), SN_OK);
    return j->id;
}

static inline void pass(struct fx *f)
{
    assert_int_equal(apply(f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_PASS}), SN_OK);
}

static inline struct sn_control_job *job(struct fx *f, int64_t id)
{
    struct sn_control_job *j = sn_control_job_get(f->c, id);
    assert_non_null(j);
    return j;
}

static inline void verify(const struct fx *f)
{
    struct sn_error err = {0};
    if (sn_control_verify(f->c, &err) != SN_OK)
        fail_msg("%s", err.message);
}

/* Decodes body as the route does. */
static inline struct sn_control_update decode(const char *body)
{
    struct sn_control_update u;
    memset(&u, 0, sizeof(u));
    char field[SN_API_FIELD_MAX];
    struct sn_error err = {0};
    enum sn_err rc = sn_api_decode(sn_control_update_fields, sn_control_update_field_count, body,
                                   strlen(body), 4096, &u, &u.present, field, &err);
    if (rc != SN_OK)
        fail_msg("%s: %s", body, err.message);
    return u;
}

static inline enum sn_err update(struct fx *f, int64_t id, const char *body)
{
    struct sn_control_update u = decode(body);
    return apply(
        f, (struct sn_control_event){
               .kind = SN_CONTROL_EVENT_UPDATE_JOB, .job = id, .actor = "alice", .update = &u});
}

#endif
