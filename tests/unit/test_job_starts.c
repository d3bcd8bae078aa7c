/*
 * Unit tests of lib/control/starts.c, the core's reservation and its
 * projection behind it (lib/sched/sched_project.c; GET
 * /v1/scheduler/starts, sn jobs --start). One supernode of 4 servers
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

/* The row of job id in the whole answer (NULL: none); *n_rows the rows. */
static json_t *row_of(struct fx *f, int64_t id, size_t *n_rows)
{
    int64_t next = -1;
    json_t *items = sn_control_starts_json(f->c, NULL, 0, 1000, &next);
    assert_non_null(items);
    assert_int_equal(next, 0);
    json_t *found = NULL, *it;
    size_t i;
    json_array_foreach(items, i, it)
    {
        if (json_integer_value(json_object_get(it, "id")) == id)
            found = json_incref(it);
    }
    if (n_rows)
        *n_rows = json_array_size(items);
    json_decref(items);
    return found;
}

static void expect_row(struct fx *f, int64_t id, const char *kind, int64_t start, const char *basis)
{
    json_t *row = row_of(f, id, NULL);
    if (!row)
        fail_msg("no row for job %lld", (long long)id);
    assert_string_equal(json_string_value(json_object_get(row, "kind")), kind);
    if (start < 0)
        assert_true(json_is_null(json_object_get(row, "expected_start_s")));
    else
        assert_int_equal(json_integer_value(json_object_get(row, "expected_start_s")), start);
    assert_string_equal(json_string_value(json_object_get(row, "basis")), basis);
    json_decref(row);
}

/* One supernode of 32: A (16, limit 600 s) and B (8, limit 1200 s) run,
 * 8 free. Waiting in queue order: C (16, no limit), D (16, limit 300), E
 * (16, limit 60), F (16, no limit), G (16). Worked by hand:
 *  - C, the EASY head: A's end frees 16 + 8 = 24 at t0 + 600 (reservation);
 *  - D: 8 left after C; B's end at t0 + 1200 gives 16 (22:33:20Z);
 *  - E: D took them; D's end, t0 + 1200 + 300 = t0 + 1500 (22:38:20Z);
 *  - F: E's end, t0 + 1500 + 60 = t0 + 1560 (22:39:20Z);
 *  - G: nothing else ends; C and F (no limit) hold every GPU: unknown,
 *    naming C (the first of them).
 * The core's own cap: projecting 2 jobs gives C and D only. */
static void projection_in_queue_order(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    const int64_t t0 = 1700000000;
    int64_t a = submit(&f, "{\"name\":\"a\",\"gpus\":16,\"time_limit_s\":600}");
    int64_t b = submit(&f, "{\"name\":\"b\",\"gpus\":8,\"time_limit_s\":1200}");
    pass(&f);
    int64_t c = submit(&f, "{\"name\":\"c\",\"gpus\":16}");
    int64_t d = submit(&f, "{\"name\":\"d\",\"gpus\":16,\"time_limit_s\":300}");
    int64_t e = submit(&f, "{\"name\":\"e\",\"gpus\":16,\"time_limit_s\":60}");
    int64_t fj = submit(&f, "{\"name\":\"f\",\"gpus\":16}");
    int64_t g = submit(&f, "{\"name\":\"g\",\"gpus\":16}");
    pass(&f);
    const int64_t ids[] = {c, d, e, fj, g};
    for (int i = 0; i < 5; i++)
        assert_int_equal(job(&f, ids[i])->state, SN_CONTROL_JOB_PENDING);
    char want[160];
    snprintf(want, sizeof(want), "after job %lld ends (time limit 2023-11-14T22:23:20Z)",
             (long long)a);
    expect_row(&f, c, "reservation", t0 + 600, want);
    snprintf(want, sizeof(want),
             "after job %lld ends (time limit 2023-11-14T22:33:20Z), in queue order", (long long)b);
    expect_row(&f, d, "projection", t0 + 1200, want);
    snprintf(want, sizeof(want),
             "after job %lld ends (time limit 2023-11-14T22:38:20Z), in queue order", (long long)d);
    expect_row(&f, e, "projection", t0 + 1500, want);
    snprintf(want, sizeof(want),
             "after job %lld ends (time limit 2023-11-14T22:39:20Z), in queue order", (long long)e);
    expect_row(&f, fj, "projection", t0 + 1560, want);
    snprintf(want, sizeof(want), "job %lld, without a time limit, holds GPUs it needs",
             (long long)c);
    expect_row(&f, g, "unknown", -1, want);
    size_t n = 0;
    json_decref(row_of(&f, c, &n));
    assert_int_equal(n, 5);
    /* A page of 2 and its cursor; another tenant sees none. */
    int64_t next = 0;
    json_t *page = sn_control_starts_json(f.c, NULL, 0, 2, &next);
    assert_int_equal(json_array_size(page), 2);
    assert_int_equal(next, d);
    json_decref(page);
    page = sn_control_starts_json(f.c, "other", 0, 10, &next);
    assert_int_equal(json_array_size(page), 0);
    json_decref(page);
    /* The cap, in the core. */
    struct sn_sched_start rows[2];
    uint32_t got = 0;
    struct sn_error err = {0};
    assert_int_equal(
        sn_sched_project_starts(f.c->sched, (double)t0, 2, NULL, NULL, rows, &got, &err), SN_OK);
    assert_int_equal(got, 2);
    assert_int_equal(rows[0].job, job(&f, c)->sched_id);
    assert_int_equal(rows[1].job, job(&f, d)->sched_id);
    /* Without the end_known callback every end is known (default walltime
     * 3600 s for C): D still starts at B's end. */
    assert_true(rows[1].known);
    assert_true(rows[1].start_s == (double)(t0 + 1200));
    verify(&f);
    fx_close(&f);
}

/* Two supernodes of 32: X (24, limit 100 s) on one, Y (24, limit 200 s)
 * on the other, 8 free in each. P (16, one supernode, no limit) is the
 * head: X's end, t0 + 100. Q (40, limit 50) needs more than one supernode:
 * after P took 16 of X's supernode, 16 + 8 free; Y's end at t0 + 200 gives
 * 32 + 8: Q starts then (22:16:40Z), largest supernode first (Y's 32,
 * 8 of the other). R (9, one supernode, limit 1000): 8 left in X's
 * supernode; Q's end at t0 + 250 (22:17:30Z) gives 16 there. */
static void projection_across_supernodes(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 2, "");
    const int64_t t0 = 1700000000;
    int64_t x = submit(&f, "{\"name\":\"x\",\"gpus\":24,\"one_supernode\":true,"
                           "\"time_limit_s\":100}");
    int64_t y = submit(&f, "{\"name\":\"y\",\"gpus\":24,\"one_supernode\":true,"
                           "\"time_limit_s\":200}");
    pass(&f);
    assert_int_equal(job(&f, x)->state, SN_CONTROL_JOB_RUNNING);
    assert_int_equal(job(&f, y)->state, SN_CONTROL_JOB_RUNNING);
    int64_t p = submit(&f, "{\"name\":\"p\",\"gpus\":16,\"one_supernode\":true}");
    int64_t q = submit(&f, "{\"name\":\"q\",\"gpus\":40,\"time_limit_s\":50}");
    int64_t r = submit(&f, "{\"name\":\"r\",\"gpus\":9,\"one_supernode\":true,"
                           "\"time_limit_s\":1000}");
    pass(&f);
    assert_int_equal(job(&f, r)->state, SN_CONTROL_JOB_PENDING);
    char want[160];
    snprintf(want, sizeof(want), "after job %lld ends (time limit 2023-11-14T22:15:00Z)",
             (long long)x);
    expect_row(&f, p, "reservation", t0 + 100, want);
    snprintf(want, sizeof(want),
             "after job %lld ends (time limit 2023-11-14T22:16:40Z), in queue order", (long long)y);
    expect_row(&f, q, "projection", t0 + 200, want);
    snprintf(want, sizeof(want),
             "after job %lld ends (time limit 2023-11-14T22:17:30Z), in queue order", (long long)q);
    expect_row(&f, r, "projection", t0 + 250, want);
    verify(&f);
    fx_close(&f);
}

/* A job larger than its supernodes' GPUs that are up can never start:
 * unknown, saying so, also while a job without a limit (H, 8 GPUs) holds
 * some of them (24 up: 16 free + H's 8 still fall short of 32). */
static void never_fits(void **state)
{
    (void)state;
    struct fx f;
    fx_open_sized(&f, 1, "");
    for (uint32_t gpu = 0; gpu < 8; gpu++)
        assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_ADMIN,
                                                             .is_node = false,
                                                             .id = gpu,
                                                             .admin = SN_CONTROL_ADMIN_DOWN,
                                                             .detail = "xid 79",
                                                             .actor = "alice"}),
                         SN_OK);
    int64_t h = submit(&f, "{\"name\":\"h\",\"gpus\":8}");
    pass(&f);
    assert_int_equal(job(&f, h)->state, SN_CONTROL_JOB_RUNNING);
    int64_t big = submit(&f, "{\"name\":\"big\",\"gpus\":32}");
    pass(&f);
    assert_int_equal(job(&f, big)->state, SN_CONTROL_JOB_PENDING);
    expect_row(&f, big, "unknown", -1,
               "does not fit the GPUs up now, even once every running job ends");
    fx_close(&f);
}

/* The projection against what then happens, with time limits enforced (a
 * job ends exactly at its limit) and the clock stepped 100 s at a time
 * (TIMER, then a pass). A (16, 600 s) and B (8, 1200 s) run; C (16, 900
 * s), D (16, 300 s), E (16, 60 s) wait. Projected: C at A's end t0 + 600,
 * D at B's end t0 + 1200, E at t0 + 1500 (C's and D's ends, the same
 * instant). Each then starts at exactly its projected time. */
static void projection_comes_true(void **state)
{
    (void)state;
    struct fx f;
    fx_open(&f);
    f.c->cfg.enforce_time_limits = true;
    const int64_t t0 = 1700000000;
    submit(&f, "{\"name\":\"a\",\"gpus\":16,\"time_limit_s\":600}");
    submit(&f, "{\"name\":\"b\",\"gpus\":8,\"time_limit_s\":1200}");
    pass(&f);
    int64_t ids[3];
    const char *const specs[3] = {"{\"name\":\"c\",\"gpus\":16,\"time_limit_s\":900}",
                                  "{\"name\":\"d\",\"gpus\":16,\"time_limit_s\":300}",
                                  "{\"name\":\"e\",\"gpus\":16,\"time_limit_s\":60}"};
    for (int i = 0; i < 3; i++)
        ids[i] = submit(&f, specs[i]);
    pass(&f);
    const int64_t want[3] = {t0 + 600, t0 + 1200, t0 + 1500};
    for (int i = 0; i < 3; i++) {
        json_t *row = row_of(&f, ids[i], NULL);
        assert_non_null(row);
        assert_int_equal(json_integer_value(json_object_get(row, "expected_start_s")), want[i]);
        json_decref(row);
    }
    for (int step = 1; step <= 16; step++) {
        f.now.wall_ms += 100000;
        f.now.mono_ms += 100000;
        assert_int_equal(apply(&f, (struct sn_control_event){.kind = SN_CONTROL_EVENT_TIMER}),
                         SN_OK);
        pass(&f);
        verify(&f);
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(job(&f, ids[i])->start_s, want[i]);
    fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reservation_of_the_head),
        cmocka_unit_test(default_walltime_basis),
        cmocka_unit_test(projection_in_queue_order),
        cmocka_unit_test(projection_across_supernodes),
        cmocka_unit_test(never_fits),
        cmocka_unit_test(projection_comes_true),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
