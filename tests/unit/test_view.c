/*
 * Unit tests of lib/view (sn/view.h), the dashboard's whole-cluster reads,
 * on a control with no daemon: the layout's arrays have one entry per
 * supernode and server and parse as JSON; the GPU arrays have one entry
 * per GPU, show each GPU's effective state (a failed server's GPUs down),
 * a running job's id to its tenant and -1 to another, the caller's health
 * scores, and no reading for a down GPU; the map's tiles and detail count
 * the same effective states.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/sim.h>
#include <sn/view.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sn_test.h"

static double score(void *ctx, uint32_t g)
{
    (void)ctx;
    return g == 3 ? 42.7 : -1;
}

static void test_layout_and_gpus(void **state)
{
    (void)state;
    struct sn_sim_shape sh;
    sn_sim_shape_defaults(&sh);
    sh.supernodes = 2;
    sh.servers = 4;
    sh.gpus_per_server = 8;
    struct sn_spec *spec = NULL;
    struct sn_model *m = NULL;
    struct sn_error err = {0};
    if (sn_sim_shape_build(&sh, &spec, &m, &err) != SN_OK)
        fail_msg("%s", err.message);
    struct sn_control_config cfg = {.max_jobs = 100, .heartbeat_timeout_s = 10,
                                     .default_walltime_s = 3600, .partition_share_pct = 10,
                                     .partition_window_s = 5, .max_tenants_per_supernode = 4};
    snprintf(cfg.sched_policy, sizeof(cfg.sched_policy), "supernode-first");
    struct sn_control *c = sn_control_new(m, spec, &cfg, &err);
    assert_non_null(c);
    json_t *doc = json_pack("{s:s}", "prefix", "/data/acme");
    assert_int_equal(sn_control_named_put(&c->tenants, &c->n_tenants, "acme", doc, &err), SN_OK);
    struct sn_control_clock now = {1700000000000LL, 1000000};
    assert_int_equal(sn_control_start(c, &now, &err), SN_OK);
    struct sn_effects fx;
    sn_effects_init(&fx);
    struct sn_control_job *j = calloc(1, sizeof(*j));
    j->spec = json_pack("{s:s,s:i}", "name", "train", "gpus", 8);
    j->id = c->next_job_id;
    snprintf(j->tenant, sizeof(j->tenant), "acme");
    j->state = SN_CONTROL_JOB_PENDING;
    j->sched_id = SN_NONE;
    j->failed_rank = -1;
    assert_int_equal(sn_control_job_insert(c, j, &err), SN_OK);
    struct sn_control_event ev = {.kind = SN_CONTROL_EVENT_SUBMIT, .job = j->id};
    assert_int_equal(sn_control_apply(c, &ev, &now, &fx, &err), SN_OK);
    ev = (struct sn_control_event){.kind = SN_CONTROL_EVENT_PASS};
    assert_int_equal(sn_control_apply(c, &ev, &now, &fx, &err), SN_OK);
    assert_int_equal(j->state, SN_CONTROL_JOB_RUNNING);
    uint32_t down_server = m->n_servers - 1;
    ev = (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN, .is_node = true,
                                   .id = down_server, .admin = SN_CONTROL_ADMIN_DOWN,
                                   .detail = "psu", .actor = "ops"};
    assert_int_equal(sn_control_apply(c, &ev, &now, &fx, &err), SN_OK);

    char *text = sn_view_dashboard_layout(m, "t");
    json_error_t jerr;
    json_t *lay = json_loads(text, 0, &jerr);
    if (!lay)
        fail_msg("layout is not JSON: %s at %d:%d", jerr.text, jerr.line, jerr.column);
    assert_int_equal(json_integer_value(json_object_get(lay, "gpus")), m->n_gpus);
    assert_int_equal(json_array_size(json_object_get(json_object_get(lay, "supernodes"), "name")),
                     m->n_supernodes);
    assert_int_equal(json_array_size(json_object_get(json_object_get(lay, "servers"), "gpus")),
                     m->n_servers);
    json_decref(lay);
    free(text);

    uint32_t *owner = calloc(m->n_gpus, sizeof(*owner));
    for (uint32_t k = 0; k < j->n_alloc; k++)
        owner[j->alloc[k]] = (uint32_t)j->id;
    assert_int_equal(sn_view_metric_find("bogus"), -1);
    for (int as_other = 0; as_other < 2; as_other++) {
        struct sn_view_gpus a = {.control = c, .owner = owner, .score = score,
                                 .tenant = as_other ? "beta" : NULL,
                                 .metric = sn_view_metric_find("temp"), .now_s = 1700000000};
        text = sn_view_dashboard_gpus(&a);
        json_t *g = json_loads(text, 0, &jerr);
        if (!g)
            fail_msg("gpus is not JSON: %s at %d:%d", jerr.text, jerr.line, jerr.column);
        json_t *st = json_object_get(g, "state"), *jobs = json_object_get(g, "job");
        assert_int_equal(json_array_size(st), m->n_gpus);
        assert_int_equal(json_array_size(json_object_get(g, "values")), m->n_gpus);
        for (uint32_t x = 0; x < m->n_gpus; x++) {
            bool down = m->gpu_server[x] == down_server;
            assert_int_equal(json_integer_value(json_array_get(st, x)),
                             down ? SN_CONTROL_ADMIN_DOWN : SN_CONTROL_ADMIN_UP);
            assert_true(json_is_null(json_array_get(json_object_get(g, "values"), x)));
            long long want = owner[x] ? (as_other ? -1 : j->id) : 0;
            assert_int_equal(json_integer_value(json_array_get(jobs, x)), want);
        }
        assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "health"), 3)), 42);
        assert_int_equal(json_integer_value(json_array_get(json_object_get(g, "health"), 4)), -1);
        assert_int_equal(json_object_size(json_object_get(g, "jobs")), as_other ? 0 : 1);
        json_decref(g);
        free(text);
    }
    /* The map: tiles count a down server's GPUs as not up; the detail
     * shows each GPU's effective state and the job to its own tenant. */
    struct sn_view_map mp = {.control = c, .owner = owner, .cluster = "t", .supernode = SN_NONE};
    json_t *map = sn_view_dashboard_map(&mp);
    assert_int_equal(json_array_size(json_object_get(map, "state_names")),
                     SN_CONTROL_ADMIN_STATE_COUNT);
    uint32_t last_sn = m->server_supernode[down_server], not_up = 0;
    for (size_t k = 0; k < json_array_size(json_object_get(map, "supernodes")); k++)
        not_up += (uint32_t)json_integer_value(
            json_object_get(json_array_get(json_object_get(map, "supernodes"), k), "not_up"));
    assert_int_equal(not_up, sn_model_server_spec(m, down_server)->gpus);
    json_decref(map);
    mp.supernode = last_sn;
    mp.tenant = "beta";
    map = sn_view_dashboard_map(&mp);
    json_t *gp = json_object_get(json_object_get(map, "supernode"), "gpus");
    uint32_t first = m->supernodes[last_sn].first_gpu;
    for (uint32_t x = 0; x < m->supernodes[last_sn].n_gpus; x++) {
        bool down = m->gpu_server[first + x] == down_server;
        assert_int_equal(json_integer_value(json_array_get(json_object_get(gp, "state"), x)),
                         down ? SN_CONTROL_ADMIN_DOWN : SN_CONTROL_ADMIN_UP);
        long long want = owner[first + x] ? -1 : 0; /* another tenant's job */
        assert_int_equal(json_integer_value(json_array_get(json_object_get(gp, "job"), x)), want);
    }
    json_decref(map);
    /* The summary's counts sum to the cluster's GPUs; the queue shows a
     * tenant only its own pending jobs. */
    json_t *sum = sn_view_summary_counts(c, 1700000000);
    json_t *st = json_object_get(sum, "gpu_states"), *v;
    const char *key;
    json_int_t total = 0;
    json_object_foreach(st, key, v)
        total += json_integer_value(v);
    assert_int_equal(total, m->n_gpus);
    assert_int_equal(json_integer_value(json_object_get(st, "down")),
                     sn_model_server_spec(m, down_server)->gpus);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(sum, "jobs"), "running")),
                     1);
    json_decref(sum);
    json_t *q = sn_view_queue(c, "beta", 50);
    assert_int_equal(json_array_size(q), 0);
    json_decref(q);
    free(owner);
    sn_effects_free(&fx);
    sn_control_free(c);
    sn_sim_shape_free(spec, m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_and_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
