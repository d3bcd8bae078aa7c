/*
 * End-to-end test of the power budgets at placement (lib/sched/sched_power.c)
 * through the real daemon (built, $SN_BUILD_DIR; 127.0.0.1 only) on
 * tests/specs/power/feed-tight-64.yaml: good-64 with 50 A rack feeds, so
 * that each rack's jobs may draw 28,752 - 22,084 = 6,668 W (9 GPUs at
 * 700 W, power_util_pct=100).
 *  - with power_util_pct=100, a 32-GPU job (22,400 W; spread, 9 + 9 GPUs of
 *    room) waits with pending reason power-budget (GET /v1/jobs/ID, /metrics
 *    sn_jobs_pending_reason{reason="power-budget"} 1) while all 64 GPUs are
 *    free, and a 16-GPU job (11,200 W, past one rack) starts spread over the
 *    two supernodes (at most 9 GPUs on each);
 *  - with power_util_pct=50 the same 32-GPU job (11,200 W) starts spread;
 *  - without budgets (power_util_pct=0, the default) it starts as well;
 *  - with power_util_pct=100, two 8-GPU jobs: the second's first choice
 *    (best fit, the first's supernode) would take that rack to 11,200 W,
 *    so it starts on the other supernode; a third waits with power-budget
 *    (each rack has 1,068 W left) while 48 GPUs are free.
 */
#include "snd_harness.h"

#include <stdio.h>

static long long submit(struct daemon *d, int gpus)
{
    char body[128];
    snprintf(body, sizeof(body), "{\"name\":\"j%d\",\"gpus\":%d,\"tenant\":\"acme\"}", gpus, gpus);
    json_t *j = NULL;
    assert_int_equal(call(d, "POST", "/v1/jobs", d->admin, body, NULL, &j), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* Polls job id until its pending reason is want (10 s); returns its state. */
static void wait_reason(struct daemon *d, long long id, const char *want)
{
    char path[64], got[64] = "";
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    for (int k = 0; k < 100; k++) {
        json_t *j = NULL;
        assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
        const char *r = json_string_value(json_object_get(j, "pending_reason"));
        snprintf(got, sizeof(got), "%s", r ? r : "");
        json_decref(j);
        if (strcmp(got, want) == 0)
            break;
        pause_ms(100);
    }
    assert_string_equal(got, want);
}

static void run(const char *util, bool refused)
{
    struct daemon d = {0};
    make_dir(&d);
    char set[64];
    snprintf(set, sizeof(set), "power_util_pct=%s", util);
    const char *sets[] = {set, "sched_event_delay_ms=0", "sched_interval_ms=50", NULL};
    start(&d, sets);
    setup_tenants(&d);
    long long big = submit(&d, 32);
    if (!refused) {
        json_decref(wait_job(&d, big, "running"));
    } else {
        wait_reason(&d, big, "power-budget");
        struct sn_httpc_request req = {.method = "GET", .path = "/metrics", .timeout_ms = 5000};
        struct sn_httpc_response resp;
        struct sn_error err = {0};
        assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, &err), SN_OK);
        assert_non_null(strstr(resp.body, "sn_jobs_pending_reason{reason=\"power-budget\"} 1\n"));
        sn_httpc_response_release(&resp);
        long long small = submit(&d, 16);
        json_t *j = wait_job(&d, small, "running");
        int per_sn[2] = {0, 0};
        size_t i;
        json_t *g;
        json_array_foreach(json_object_get(j, "allocation"), i, g)
            per_sn[json_integer_value(g) / 32]++;
        json_decref(j);
        /* groups of 1: 9 + 7 (6,300 W and 4,900 W), each rack within 9 */
        assert_true(per_sn[0] >= 7 && per_sn[0] <= 9);
        assert_int_equal(per_sn[0] + per_sn[1], 16);
        /* still refused: at most 2 GPUs of room left per rack */
        wait_reason(&d, big, "power-budget");
    }
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

static void feed_budget_refuses_placement(void **state)
{
    (void)state;
    run("100", true);
}

static void half_draw_fits(void **state)
{
    (void)state;
    run("50", false);
}

static void no_budget(void **state)
{
    (void)state;
    run("0", false);
}

/* The supernode of running job id's first GPU (good-64: 32 GPUs per
 * supernode). */
static long long supernode_of(struct daemon *d, long long id)
{
    json_t *j = wait_job(d, id, "running");
    long long g = json_integer_value(json_array_get(json_object_get(j, "allocation"), 0));
    json_decref(j);
    return g / 32;
}

static void full_feed_next_supernode(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"power_util_pct=100", "sched_event_delay_ms=0", "sched_interval_ms=50",
                          NULL};
    start(&d, sets);
    setup_tenants(&d);
    long long a = submit(&d, 8);
    long long sa = supernode_of(&d, a);
    long long b = submit(&d, 8);
    long long sb = supernode_of(&d, b);
    assert_int_not_equal(sa, sb);
    long long c = submit(&d, 8);
    wait_reason(&d, c, "power-budget");
    /* the detail names the rack with the most room: 9 GPUs of room less
     * the 8 taken, 1,068 W of each rack's 28,752 W limit */
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", c);
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
    const char *detail = json_string_value(json_object_get(j, "pending_detail"));
    assert_non_null(detail);
    if (!strstr(detail, "the most power room on one rack is 1068 W (") ||
        !strstr(detail, ": 27684 of 28752 W), 2136 W over 2 racks; the job draws 5600 W: 8 GPUs "
                        "x 700 W"))
        fail_msg("pending_detail: %s", detail);
    json_decref(j);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

int main(void)
{
    harness_spec = "tests/specs/power/feed-tight-64.yaml";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(feed_budget_refuses_placement, reap_daemons),
        cmocka_unit_test_teardown(half_draw_fits, reap_daemons),
        cmocka_unit_test_teardown(no_budget, reap_daemons),
        cmocka_unit_test_teardown(full_feed_next_supernode, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
