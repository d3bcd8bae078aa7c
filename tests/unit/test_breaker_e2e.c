/*
 * End-to-end test of the health circuit breaker (lib/control/breaker.c)
 * through the real daemon (built, $SN_BUILD_DIR; 127.0.0.1 only) on
 * examples/good-64.yaml (two supernodes, each one rack of 4 servers x 8
 * GPUs), with health_breaker_cluster=8.
 *
 * A fault storm, as from a bad telemetry push: seven servers' agent
 * credentials push a dcgm-exporter batch in which GPUs 0-3 (0-1 on the
 * seventh) ask for a GPU reset (DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION 1: the
 * recovery-action finding, weight 80, score 20 < health_cordon_below 60):
 * 26 of the 64 GPUs, 40 %. A real sn-agent (sim backend) runs on the eighth
 * server, sn01-t03, healthy. snd:health cordons 8 GPUs, then the cluster
 * breaker trips: no ninth cordon however many passes follow, the breaker
 * shows open (GET /v1/health/breaker, the dashboard summary), the trip is
 * one audit row. An operator's POST /v1/health/breaker/reset (audited)
 * opens a fresh window: 8 more, then it trips again.
 * A second daemon escalates a rack with 2 of its 4 servers bad to one drain
 * (health_escalate_rack_pct=50). A third escalates a rack through an
 * operator's GPU cordons (a GPU not up makes its server bad) and undrains it
 * as one when they are resumed: the scores of the second case would keep
 * the rack bad for an hour (their penalty decays with a half-life of
 * 3600 s, docs/health.md).
 * Waits poll the daemon with deadlines of tens of seconds (the machine may
 * be loaded); the only fixed pauses are the 100 ms steps of those polls.
 */
#include "snd_harness.h"

#include <stdio.h>
#include <time.h>

static pid_t agent;

static long long num(json_t *j, const char *key)
{
    return json_integer_value(json_object_get(j, key));
}

/* GPUs cordoned, from the dashboard summary (each GPU in one state). */
static long long cordoned(struct daemon *d, bool *open)
{
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", "/v1/dashboard/summary", d->admin, NULL, NULL, &j), 200);
    long long n = num(json_object_get(j, "gpu_states"), "cordoned");
    *open = json_is_true(json_object_get(json_object_get(j, "breaker"), "open"));
    json_decref(j);
    return n;
}

/* Server s (0-7: sn00-t00..t03, sn01-t00..t03) pushes a batch in which its
 * first `bad` GPUs ask for a reset. */
static void push_bad(struct daemon *d, int s, int bad, long long seq)
{
    char node[32], tok[SN_AUTH_TOKEN_MAX], path[200], body[4096];
    snprintf(node, sizeof(node), "sn%02d-t%02d", s / 4, s % 4);
    sign(d, SN_AUTH_AGENT, node, "telemetry:write", 1000, 4000000000, "a1", tok);
    snprintf(path, sizeof(path), "/v1/telemetry?node=%s&format=dcgm-exporter&seq=%lld&boot=5e",
             node, seq);
    size_t n =
        (size_t)snprintf(body, sizeof(body), "# TYPE DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION gauge\n");
    long long now_ms = (long long)time(NULL) * 1000;
    for (int i = 0; i < 8; i++)
        n += (size_t)snprintf(
            body + n, sizeof(body) - n,
            "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION{gpu=\"%d\",UUID=\"GPU-00000000-"
            "0000-4000-8000-%012x\",device=\"nvidia%d\",Hostname=\"%s\"} %d %lld\n",
            i, s * 8 + i, i, node, i < bad ? 1 : 0, now_ms);
    json_t *j = NULL;
    int st = call(d, "POST", path, tok, body, NULL, &j);
    if (st != 200) {
        char *t = j ? json_dumps(j, 0) : NULL;
        fail_msg("telemetry push of %s: %d %s", node, st, t ? t : "");
    }
    json_decref(j);
}

/* Server s (0-6) pushes its storm batch: GPUs 0-3, 0-1 on the seventh. */
static void push_storm(struct daemon *d, int s, long long seq)
{
    push_bad(d, s, s == 6 ? 2 : 4, seq);
}

/* Polls until `want` GPUs are cordoned and the breaker is open (60 s). */
static void wait_tripped(struct daemon *d, long long want)
{
    bool open = false;
    long long n = 0;
    for (int k = 0; k < 600 && !(n == want && open); k++) {
        n = cordoned(d, &open);
        if (!(n == want && open))
            pause_ms(100);
    }
    assert_int_equal(n, want);
    assert_true(open);
}

/* Audit rows whose action is `action` and status 200. */
static int audit_rows(struct daemon *d, const char *action)
{
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", "/v1/audit?limit=1000", d->admin, NULL, NULL, &j), 200);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "items"), i, e)
    {
        const char *a = json_string_value(json_object_get(e, "action"));
        n += a && strcmp(a, action) == 0 && num(e, "status") == 200;
    }
    json_decref(j);
    return n;
}

static void storm_stopped_by_breaker(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"health_interval_ms=200", "health_breaker_cluster=8", NULL};
    start(&d, sets);
    setup_tenants(&d);
    agent = spawn_sim_agent(&d, "sn01-t03", harness_spec);
    for (int s = 0; s < 7; s++)
        push_storm(&d, s, 1);
    wait_tripped(&d, 8);

    /* Later passes over the same storm take no ninth GPU. */
    json_t *j = NULL;
    for (int k = 0; k < 10; k++) {
        pause_ms(100);
        bool open;
        assert_int_equal(cordoned(&d, &open), 8);
    }
    assert_int_equal(call(&d, "GET", "/v1/health/breaker", d.admin, NULL, NULL, &j), 200);
    assert_true(json_is_true(json_object_get(j, "open")));
    assert_int_equal(num(j, "trips_total"), 1);
    assert_true(num(j, "suppressed_total") >= 18); /* 26 - 8 refused per pass, 1 pass or more */
    json_t *sc = json_array_get(json_object_get(j, "scopes"), 0);
    assert_string_equal(json_string_value(json_object_get(sc, "scope")), "cluster");
    assert_int_equal(num(json_object_get(j, "limits"), "cluster"), 8);
    json_decref(j);
    /* the trip's audit row, written by the store a moment after */
    int rows = 0;
    for (int k = 0; k < 200 && rows == 0; k++) {
        rows = audit_rows(&d, "health breaker open");
        if (!rows)
            pause_ms(100);
    }
    assert_int_equal(rows, 1);

    /* Only an admin resets it; then a fresh window: 8 more, and it trips again. */
    char tok[SN_AUTH_TOKEN_MAX];
    tenant_token(&d, "acme", tok);
    assert_int_equal(call(&d, "POST", "/v1/health/breaker/reset", tok, "{}", NULL, NULL), 403);
    assert_int_equal(call(&d, "POST", "/v1/health/breaker/reset", d.admin, "{}", NULL, &j), 200);
    assert_int_equal(num(j, "closed"), 1);
    json_decref(j);
    wait_tripped(&d, 16);
    assert_int_equal(call(&d, "GET", "/v1/health/breaker", d.admin, NULL, NULL, &j), 200);
    assert_int_equal(num(j, "trips_total"), 2);
    json_decref(j);
    rows = 0;
    for (int k = 0; k < 200 && rows == 0; k++) {
        rows = audit_rows(&d, "POST /v1/health/breaker/reset");
        if (!rows)
            pause_ms(100);
    }
    assert_int_equal(rows, 1);

    stop_agent_pid(&agent);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d.dir);
    assert_int_equal(system(cmd), 0);
}

/* GET /v1/nodes/NAME: its admin state, reason and actor. */
static void node_state(struct daemon *d, const char *node, char *st, char *reason, size_t rlen)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/nodes/%s", node);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    const char *s = json_string_value(json_object_get(j, "state"));
    const char *r = json_string_value(json_object_get(j, "reason"));
    snprintf(st, 32, "%s", s ? s : "");
    snprintf(reason, rlen, "%s", r ? r : "");
    json_decref(j);
}

/* Rack escalation (health_escalate_rack_pct=50): GPU 0 of sn00-t00 and of
 * sn00-t01 ask for a reset, 2 of the 4 servers of sn00-rack0: the whole rack
 * is drained as one decision by snd:health (its four servers drained, the
 * reason naming the two bad ones), one audit row, no GPU cordoned on its
 * own; the other rack stays up. */
static void rack_escalated_as_one(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"health_interval_ms=200", "health_escalate_rack_pct=50", NULL};
    start(&d, sets);
    agent = spawn_sim_agent(&d, "sn01-t03", harness_spec);
    push_bad(&d, 0, 1, 1);
    push_bad(&d, 1, 1, 1);
    char st[32] = "", reason[400] = "";
    for (int k = 0; k < 600; k++) {
        node_state(&d, "sn00-t03", st, reason, sizeof(reason));
        if (strcmp(st, "up") != 0)
            break;
        pause_ms(100);
    }
    for (int s = 0; s < 4; s++) {
        char node[32];
        snprintf(node, sizeof(node), "sn00-t%02d", s);
        node_state(&d, node, st, reason, sizeof(reason));
        assert_string_equal(st, "drained");
        assert_non_null(strstr(
            reason, "health: rack sn00-rack0 escalated: 2 of 4 servers bad (sn00-t00 sn00-t01)"));
        snprintf(node, sizeof(node), "sn01-t%02d", s);
        node_state(&d, node, st, reason, sizeof(reason));
        assert_string_equal(st, "up");
    }
    char gst[32], greason[256];
    gpu_state(&d, "sn00-t00-gpu0", gst, sizeof(gst), greason, sizeof(greason));
    assert_string_equal(gst, "up"); /* its own state: the rack holds it */
    int rows = 0;
    for (int k = 0; k < 200 && rows == 0; k++) {
        rows = audit_rows(&d, "health escalate rack");
        if (!rows)
            pause_ms(100);
    }
    assert_int_equal(rows, 1);
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", "/v1/health/breaker", d.admin, NULL, NULL, &j), 200);
    assert_int_equal(num(j, "escalations_total"), 1);
    json_decref(j);
    stop_agent_pid(&agent);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d.dir);
    assert_int_equal(system(cmd), 0);
}

/* Polls node until its state is want (60 s). */
static void wait_node(struct daemon *d, const char *node, const char *want)
{
    char st[32] = "", reason[400];
    for (int k = 0; k < 600; k++) {
        node_state(d, node, st, reason, sizeof(reason));
        if (strcmp(st, want) == 0)
            break;
        pause_ms(100);
    }
    assert_string_equal(st, want);
}

/* Escalation and undrain as one, without the scores' decay: a GPU not up
 * makes its server bad as well, so an operator's cordons of GPU 0 of
 * sn00-t00 and sn00-t01 escalate sn00-rack0; resuming both ("repaired")
 * leaves no bad server, and the next pass resumes the four servers the
 * escalation drained, as one decision (one audit row). */
static void rack_undrained_as_one(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"health_interval_ms=200", "health_escalate_rack_pct=50", NULL};
    start(&d, sets);
    agent = spawn_sim_agent(&d, "sn01-t03", harness_spec);
    expect(&d, 200, "POST", "/v1/gpus/sn00-t00-gpu0/cordon", d.admin, "{\"reason\":\"ecc\"}");
    expect(&d, 200, "POST", "/v1/gpus/sn00-t01-gpu0/cordon", d.admin, "{\"reason\":\"ecc\"}");
    for (int s = 0; s < 4; s++) {
        char node[32];
        snprintf(node, sizeof(node), "sn00-t%02d", s);
        wait_node(&d, node, "drained");
    }
    expect(&d, 200, "POST", "/v1/gpus/sn00-t00-gpu0/resume", d.admin, "{}");
    expect(&d, 200, "POST", "/v1/gpus/sn00-t01-gpu0/resume", d.admin, "{}");
    for (int s = 0; s < 4; s++) {
        char node[32];
        snprintf(node, sizeof(node), "sn00-t%02d", s);
        wait_node(&d, node, "up");
    }
    int rows = 0;
    for (int k = 0; k < 200 && rows == 0; k++) {
        rows = audit_rows(&d, "health undrain rack");
        if (!rows)
            pause_ms(100);
    }
    assert_int_equal(rows, 1);
    assert_int_equal(audit_rows(&d, "health escalate rack"), 1);
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", "/v1/health/breaker", d.admin, NULL, NULL, &j), 200);
    assert_int_equal(num(j, "escalations_total"), 1);
    assert_int_equal(num(j, "undrains_total"), 1);
    json_decref(j);
    stop_agent_pid(&agent);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d.dir);
    assert_int_equal(system(cmd), 0);
}

static int teardown(void **state)
{
    stop_agent_pid(&agent);
    return reap_daemons(state);
}

int main(void)
{
    harness_spec = "examples/good-64.yaml";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(storm_stopped_by_breaker, teardown),
        cmocka_unit_test_teardown(rack_escalated_as_one, teardown),
        cmocka_unit_test_teardown(rack_undrained_as_one, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
