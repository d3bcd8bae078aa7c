/*
 * End-to-end test of the power budgets at placement (lib/sched/sched_power.c)
 * through the real daemon (built, $SN_BUILD_DIR; 127.0.0.1 only) on
 * tests/specs/power/feed-tight-64.yaml: good-64 with 50 A rack feeds, so
 * that each rack's jobs may draw 28,752 - 22,084 = 6,668 W (9 GPUs at
 * 700 W, power_util_pct=100).
 *  - with power_util_pct=100, a 16-GPU job (11,200 W) waits with pending
 *    reason power-budget (GET /v1/jobs/ID, /metrics
 *    sn_jobs_pending_reason{reason="power-budget"} 1) while all 64 GPUs are
 *    free, and an 8-GPU job (5,600 W) starts;
 *  - with power_util_pct=50 the same 16-GPU job (5,600 W) starts;
 *  - without budgets (power_util_pct=0, the default) it starts as well.
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
    long long big = submit(&d, 16);
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
        long long small = submit(&d, 8);
        json_decref(wait_job(&d, small, "running"));
        /* still refused: 16 GPUs on the other rack are 11,200 W */
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

int main(void)
{
    harness_spec = "tests/specs/power/feed-tight-64.yaml";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(feed_budget_refuses_placement, reap_daemons),
        cmocka_unit_test_teardown(half_draw_fits, reap_daemons),
        cmocka_unit_test_teardown(no_budget, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
