/*
 * Unit tests of lib/view/activity.c: the dashboard summary's event ring
 * (the newest 64, a tenant sees only its own jobs' events), the
 * utilisation history (a point at most every 5 s), the GPU owners every
 * view shares, and one GPU's history JSON. One supernode of 4 servers of 8
 * GPUs (control_fixture.h).
 */
#include "control_fixture.h"

#include <sn/view.h>

static void events_ring_and_tenants(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    int64_t mine = submit(&f, "{\"name\":\"a\",\"gpus\":8}");
    struct sn_control_job *other = job(&f, submit(&f, "{\"name\":\"b\",\"gpus\":8}"));
    snprintf(other->tenant, sizeof(other->tenant), "beta");
    struct sn_view_activity *a = sn_view_activity_new();
    assert_non_null(a);
    /* 70 events, alternating the two jobs: the newest 64 are kept. */
    for (int64_t seq = 1; seq <= 70; seq++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "event %lld", (long long)seq);
        struct sn_store_write row = {.kind = SN_STORE_ADD_EVENT,
                                     .text = {"submitted", msg},
                                     .num = {seq % 2 ? mine : other->id, 1000 + seq, seq}};
        assert_true(sn_view_activity_event_row(a, &row));
    }
    assert_int_equal(sn_view_activity_events_seq(a), 70);
    json_t *all = sn_view_activity_events_json(a, f.c, NULL);
    assert_int_equal(json_array_size(all), 64);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 0), "seq")), 70);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 63), "seq")), 7);
    json_decref(all);
    json_t *acme = sn_view_activity_events_json(a, f.c, "acme");
    assert_int_equal(json_array_size(acme), 32); /* the odd seqs 7..69 */
    for (size_t i = 0; i < json_array_size(acme); i++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(acme, i), "job_id")),
                         mine);
    json_decref(acme);
    sn_view_activity_free(a);
    fx_close(&f);
}

static void history_points_and_owners(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    int64_t id = submit(&f, "{\"name\":\"a\",\"gpus\":8}");
    pass(&f);
    job(&f, id)->durable = true; /* owners are of durable running jobs */
    uint32_t *owner = sn_view_gpu_owners(f.c);
    assert_non_null(owner);
    uint32_t held = 0;
    for (uint32_t g = 0; g < f.model->n_gpus; g++)
        if (owner[g]) {
            held++;
            assert_int_equal(f.c->jobs[owner[g] - 1]->id, id);
        }
    assert_int_equal(held, 8);

    struct sn_view_activity *a = sn_view_activity_new();
    sn_view_activity_sample(a, f.c, NULL, owner, 1000);
    sn_view_activity_sample(a, f.c, NULL, owner, 1004); /* within 5 s: no point */
    sn_view_activity_sample(a, f.c, NULL, owner, 1005);
    json_t *h = sn_view_activity_history_json(a);
    assert_int_equal(json_array_size(h), 2);
    json_t *p = json_array_get(h, 0);
    assert_int_equal(json_integer_value(json_object_get(p, "time_s")), 1000);
    assert_true(json_real_value(json_object_get(p, "allocated_fraction")) == 0.25);
    assert_true(json_is_null(json_object_get(p, "util_mean_pct"))); /* no telemetry */
    assert_int_equal(json_integer_value(json_object_get(p, "reporting")), 0);
    json_decref(h);
    sn_view_activity_free(a);
    free(owner);
    fx_close(&f);
}

static void gpu_history_json(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    struct sn_gpu_history *h = NULL;
    assert_int_equal(sn_gpu_history_new(f.model->n_gpus, 4, 10, &h, NULL), SN_OK);
    double v[SN_GPU_HIST_METRIC_COUNT] = {61, 300, 1980, 95, 4e10};
    assert_int_equal(sn_gpu_history_add(h, 3, 1000, v), 1);
    int64_t id = submit(&f, "{\"name\":\"train\",\"gpus\":8}");
    const struct sn_control_job *j = job(&f, id);
    json_t *o = sn_view_gpu_history_json(h, f.c, 3, j, false);
    assert_string_equal(json_string_value(json_object_get(o, "gpu")), "sn00-t00-gpu3");
    assert_string_equal(json_string_value(json_object_get(o, "node")), "sn00-t00");
    assert_int_equal(json_integer_value(json_object_get(o, "job")), -1); /* not visible */
    assert_true(json_is_null(json_object_get(o, "tenant")));
    assert_int_equal(json_array_size(json_object_get(o, "time_s")), 1);
    json_decref(o);
    o = sn_view_gpu_history_json(h, f.c, 3, j, true);
    assert_int_equal(json_integer_value(json_object_get(o, "job")), id);
    assert_string_equal(json_string_value(json_object_get(o, "job_name")), "train");
    json_decref(o);
    sn_gpu_history_free(h);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(events_ring_and_tenants),
        cmocka_unit_test(history_points_and_owners),
        cmocka_unit_test(gpu_history_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
