/*
 * Unit tests of lib/control/starts.c and the core's reservation behind it
 * (GET /v1/scheduler/starts, sn jobs --start). One supernode of 4 servers
 * of 8 GPUs (32 GPUs); job times start at 1700000000 s
 * (2023-11-14T22:13:20Z), and the expected starts are worked out by hand.
 */
#include "control_fixture.h"

static void fx_open(struct fx *f)
{
    fx_open_sized(f, 1, "\"max_job_gpus\": 16, \"max_walltime_s\": 7200");
}

static json_t *starts(struct fx *f, const char *tenant, int64_t after)
{
    int64_t next = -1;
    json_t *items = sn_control_starts_json(f->c, tenant, after, 100, &next);
    assert_non_null(items);
    assert_int_equal(next, 0);
    assert_true(json_array_size(items) <= 1);
    json_t *row = json_incref(json_array_get(items, 0));
    json_decref(items);
    return row;
}

/* A (16 GPUs, limit 600 s) and B (8 GPUs, limit 1200 s) run from t0; C
 * (16 GPUs) waits with 8 free. The head C is reserved at the earliest end
 * that frees 16: A's, t0 + 600 = 22:23:20Z. A 2-GPU job D backfills (it
 * fits the 8 GPUs left over then) and has no row. Lowering A's limit to
 * 300 s moves C's start to t0 + 300 at the next pass; held, C has none. */
static void reservation_of_the_head(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    const int64_t t0 = 1700000000;
    int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":16,\"time_limit_s\":600}");
    int64_t b = submit(&f, "{\"name\":\"b\",\"gpus\":8,\"time_limit_s\":1200}");
    pass(&f);
    assert_int_equal(job(&f, a)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, b)->state, SN_CONTROL_JOB_RUNNING);
    assert_null(starts(&f, NULL, 0)); /* nothing waits */
    int64_t c = submit(&f, "{\"name\":\"c\",\"gpus\":16}");
    int64_t d = submit(&f, "{\"name\":\"d\",\"gpus\":2,\"time_limit_s\":60}");
    pass(&f);
    assert_int_equal(job(&f, c)->state, SN_CONTROL_JOB_PENDING);
    assert_int_equal(job(&f, d)->state, SN_CONTROL_JOB_RUNNING);
    json_t *row = starts(&f, NULL, 0);
    assert_non_null(row);
    assert_int_equal(json_integer_value(json_object_get(row, "id")), c);
    assert_int_equal(json_integer_value(json_object_get(row, "expected_start_s")), t0 + 600);
    char want[120];
    snprintf(want, sizeof(want), "after job %lld ends (time limit 2023-11-14T22:23:20Z)",
             (long long)a);
    assert_string_equal(json_string_value(json_object_get(row, "basis")), want);
    json_decref(row);
    int64_t start = 0;
    char basis[200];
    assert_false(sn_control_expected_start(f.c, job(&f, d), &start, basis, sizeof(basis)));
    assert_false(sn_control_expected_start(f.c, job(&f, a), &start, basis, sizeof(basis)));
    /* Tenant filter and cursor. */
    assert_null(starts(&f, "other", 0));
    row = starts(&f, "acme", 0);
    assert_non_null(row);
    json_decref(row);
    assert_null(starts(&f, NULL, c));
    /* A's limit lowered to 300 s: the next pass reserves C at t0 + 300. */
    assert_int_equal(update(&f, a, "{\"time_limit_s\":300}"), SN_OK);
    pass(&f);
    row = starts(&f, NULL, 0);
    assert_non_null(row);
    assert_int_equal(json_integer_value(json_object_get(row, "expected_start_s")), t0 + 300);
    snprintf(want, sizeof(want), "after job %lld ends (time limit 2023-11-14T22:18:20Z)",
             (long long)a);
    assert_string_equal(json_string_value(json_object_get(row, "basis")), want);
    json_decref(row);
    /* Held, C leaves the core: no reservation for it. */
    assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_HOLD_JOB,
                                                         .job = c,
                                                         .actor = "alice"}),
                     SN_OK);
    assert_null(starts(&f, NULL, 0));
    pass(&f);
    assert_null(starts(&f, NULL, 0));
    fx_close(&f);
}

/* Without a time limit the basis names default_walltime_s (3600 s here).
 * F (16 GPUs, no limit) and E (16 GPUs, limit 60 s) fill the cluster; G
 * (16 GPUs) is reserved at E's end, t0 + 60. E's limit raised to 7200 s,
 * F's default end comes first: t0 + 3600 = 23:13:20Z. */
static void default_walltime_basis(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    const int64_t t0 = 1700000000;
    int64_t fj = submit(&f, "{\"name\":\"f\",\"gpus\":16}");
    int64_t e = submit(&f, "{\"name\":\"e\",\"gpus\":16,\"time_limit_s\":60}");
    pass(&f);
    assert_int_equal(job(&f, fj)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, e)->state, SN_CONTROL_JOB_RUNNING);
    int64_t g = submit(&f, "{\"name\":\"g\",\"gpus\":16}");
    pass(&f);
    json_t *row = starts(&f, NULL, 0);
    assert_non_null(row);
    assert_int_equal(json_integer_value(json_object_get(row, "id")), g);
    assert_int_equal(json_integer_value(json_object_get(row, "expected_start_s")), t0 + 60);
    json_decref(row);
    assert_int_equal(update(&f, e, "{\"time_limit_s\":7200}"), SN_OK);
    pass(&f);
    row = starts(&f, NULL, 0);
    assert_non_null(row);
    assert_int_equal(json_integer_value(json_object_get(row, "expected_start_s")), t0 + 3600);
    char want[120];
    snprintf(want, sizeof(want), "after job %lld ends (default_walltime_s 2023-11-14T23:13:20Z)",
             (long long)fj);
    assert_string_equal(json_string_value(json_object_get(row, "basis")), want);
    json_decref(row);
    verify(&f);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reservation_of_the_head),
        cmocka_unit_test(default_walltime_basis),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
