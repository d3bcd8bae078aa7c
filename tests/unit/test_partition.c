/*
 * Partition safety end to end: a real snd and real sn-agents (sim backend)
 * on 127.0.0.1 (examples/demo-cluster.yaml, 16 servers; heartbeat timeout
 * 3 s, window 2 s, default partition share 10 %). Agents are stopped with SIGSTOP (their
 * jobs' processes keep running, as in a control-network partition) and
 * resumed with SIGCONT. Covered:
 *  - two of 16 servers silent at once (12.5 %) fence snd: the fence shows in
 *    the summary, /metrics and the events; nothing is requeued or marked
 *    down for two heartbeat timeouts; a new job is not placed on a silent
 *    server; heartbeats returning lift the fence;
 *  - one silent server (6.25 %) is declared down and its job requeued;
 *  - the second signal: a silent server whose job keeps reporting progress
 *    is not declared down; once the reports stop it is;
 *  - sn admin's route: unfence declares the silent servers down.
 * Waits poll with deadlines of tens of seconds; the one bounded wait is the
 * check that nothing happens during two heartbeat timeouts.
 */
#include "snd_harness.h"

#include <sys/stat.h>
#include <time.h>

#define AGENTS_MAX 4
#define SPEC "examples/demo-cluster.yaml"

static const char *const SETS[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                                   "heartbeat_timeout_s=3", "partition_window_s=2", NULL};

struct agents {
    char node[AGENTS_MAX][16];
    pid_t pid[AGENTS_MAX];
    int n;
};

static pid_t agent_on(struct daemon *d, struct agents *a, const char *node)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->node[i], node) == 0)
            return a->pid[i];
    assert_true(a->n < AGENTS_MAX);
    pid_t pid = spawn_sim_agent(d, node, SPEC);
    snprintf(a->node[a->n], sizeof(a->node[0]), "%s", node);
    a->pid[a->n++] = pid;
    return pid;
}

static int reap_all(void **state)
{
    for (int i = 0; i < 8; i++)
        if (live[i] > 0) {
            kill(live[i], SIGCONT);
            kill(live[i], SIGTERM);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
    return reap_daemons(state);
}

/* GET prefix + arg. */
static json_t *get(struct daemon *d, const char *prefix, const char *arg)
{
    char path[128];
    snprintf(path, sizeof(path), "%s%s", prefix, arg);
    json_t *j = NULL;
    int s = call(d, "GET", path, d->admin, NULL, NULL, &j);
    if (s != 200)
        fail_msg("GET %s: %d", path, s);
    return j;
}

static json_t *job(struct daemon *d, long long id)
{
    char num[24];
    snprintf(num, sizeof(num), "%lld", id);
    return get(d, "/v1/jobs/", num);
}

static long long submit(struct daemon *d, int gpus)
{
    char body[200];
    snprintf(body, sizeof(body),
             "{\"name\":\"p\",\"gpus\":%d,\"tenant\":\"acme\",\"group_gpus\":%d,"
             "\"command\":\"sleep 300\"}",
             gpus, gpus);
    json_t *j = NULL;
    assert_int_equal(call(d, "POST", "/v1/jobs", d->admin, body, NULL, &j), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static const char *str(json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s ? s : "";
}

/* Polls until pred(d, arg) holds (up to 30 s). */
static void wait_for(struct daemon *d, bool (*pred)(struct daemon *, const void *), const void *arg,
                     const char *what)
{
    for (int i = 0; i < 1500; i++) {
        if (pred(d, arg))
            return;
        poll(NULL, 0, 20);
    }
    fail_msg("timed out waiting for %s", what);
}

static bool fenced_is(struct daemon *d, const void *arg)
{
    json_t *s = get(d, "/v1/dashboard/summary", "");
    bool ok = json_is_true(json_object_get(json_object_get(s, "fence"), "fenced")) ==
              *(const bool *)arg;
    json_decref(s);
    return ok;
}

static bool has_event(struct daemon *d, const void *kind)
{
    json_t *s = get(d, "/v1/dashboard/summary", "");
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(s, "events"), i, e) found |= strcmp(str(e, "kind"), kind) == 0;
    json_decref(s);
    return found;
}

static bool node_seen(struct daemon *d, const void *arg)
{
    json_t *n = get(d, "/v1/nodes/", arg);
    bool ok = json_is_integer(json_object_get(n, "heartbeat_age_s"));
    json_decref(n);
    return ok;
}

static bool node_state(struct daemon *d, const void *arg)
{
    const char *const *a = arg; /* {node, state} */
    json_t *n = get(d, "/v1/nodes/", a[0]);
    bool ok = strcmp(str(n, "state"), a[1]) == 0;
    json_decref(n);
    return ok;
}

static bool requeued(struct daemon *d, const void *arg)
{
    json_t *j = job(d, *(const long long *)arg);
    bool ok = json_integer_value(json_object_get(j, "requeues")) >= 1;
    json_decref(j);
    return ok;
}

static void expect_untouched(struct daemon *d, const long long *ids, int n)
{
    for (int i = 0; i < n; i++) {
        json_t *j = job(d, ids[i]);
        assert_string_equal(str(j, "state"), "running");
        assert_int_equal(json_integer_value(json_object_get(j, "requeues")), 0);
        json_decref(j);
    }
}

static const char *first_node(json_t *j)
{
    return json_string_value(json_array_get(json_object_get(j, "nodes"), 0));
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fence_and_second_signal(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    harness_spec = SPEC;
    make_dir(&d);
    start(&d, SETS);
    setup_tenants(&d);
    /* j0, j1 on sn00-t00 (4 GPUs each), j2 on sn00-t01 (4 of 8). */
    long long ids[3] = {submit(&d, 4), submit(&d, 4), submit(&d, 4)};
    char nodes[3][16];
    for (int i = 0; i < 3; i++) {
        json_t *j = wait_job(&d, ids[i], "running");
        snprintf(nodes[i], sizeof(nodes[i]), "%s", first_node(j));
        json_decref(j);
    }
    assert_string_equal(nodes[0], "sn00-t00");
    assert_string_equal(nodes[1], "sn00-t00");
    assert_string_equal(nodes[2], "sn00-t01");
    pid_t t00 = agent_on(&d, &a, "sn00-t00"), t01 = agent_on(&d, &a, "sn00-t01");
    wait_for(&d, node_seen, "sn00-t00", "sn00-t00's first heartbeat");
    wait_for(&d, node_seen, "sn00-t01", "sn00-t01's first heartbeat");

    /* Both silent: 2 of 16 > 10 %: fenced, nothing evicted. */
    kill(t00, SIGSTOP);
    kill(t01, SIGSTOP);
    bool yes = true, no = false;
    wait_for(&d, fenced_is, &yes, "the fence");
    json_t *s = get(&d, "/v1/dashboard/summary", "");
    json_t *f = json_object_get(s, "fence");
    assert_int_equal(json_integer_value(json_object_get(f, "silent")), 2);
    assert_int_equal(json_integer_value(json_object_get(f, "fences_total")), 1);
    json_decref(s);
    wait_for(&d, has_event, "fenced", "the fenced event");
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics", .timeout_ms = 5000};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL), SN_OK);
    assert_non_null(strstr(resp.body, "\nsn_partition_fenced 1\n"));
    assert_non_null(strstr(resp.body, "\nsn_partition_silent_nodes 2\n"));
    sn_httpc_response_release(&resp);
    /* A new 4-GPU job would pack onto sn00-t01's free half; it is silent. */
    long long fresh = submit(&d, 4);
    json_t *j = wait_job(&d, fresh, "running");
    assert_string_not_equal(first_node(j), "sn00-t01");
    assert_string_not_equal(first_node(j), "sn00-t00");
    json_decref(j);
    /* Two heartbeat timeouts later still nothing was evicted. */
    int64_t until = mono_ms() + 6000;
    while (mono_ms() < until) {
        expect_untouched(&d, ids, 3);
        poll(NULL, 0, 200);
    }
    const char *up0[2] = {"sn00-t00", "up"}, *up1[2] = {"sn00-t01", "up"};
    assert_true(node_state(&d, up0) && node_state(&d, up1));

    /* Heartbeats return: the fence lifts by itself. */
    kill(t00, SIGCONT);
    kill(t01, SIGCONT);
    wait_for(&d, fenced_is, &no, "the fence to lift");
    expect_untouched(&d, ids, 3);

    /* The second signal: t00 alone is silent (6.25 %, no fence) but j0
     * keeps reporting progress, so t00 is not declared down. */
    kill(t00, SIGSTOP);
    char url[64];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/progress", ids[0]);
    until = mono_ms() + 7000;
    while (mono_ms() < until) {
        expect(&d, 200, "POST", url, d.admin, "{\"step\":1}");
        assert_true(node_state(&d, up0));
        poll(NULL, 0, 200);
    }
    s = get(&d, "/v1/dashboard/summary", "");
    f = json_object_get(s, "fence");
    assert_false(json_is_true(json_object_get(f, "fenced")));
    assert_string_equal(json_string_value(json_array_get(json_object_get(f, "silent_nodes"), 0)),
                        "sn00-t00");
    json_decref(s);
    expect_untouched(&d, ids, 3);
    /* The reports stop: both signals agree, t00 is down, j0 and j1 requeued. */
    const char *down0[2] = {"sn00-t00", "down"};
    wait_for(&d, node_state, down0, "sn00-t00 down");
    j = get(&d, "/v1/nodes/", "sn00-t00");
    assert_non_null(strstr(str(j, "reason"), "progress reports stopped"));
    json_decref(j);
    wait_for(&d, requeued, &ids[0], "j0 requeued");
    wait_for(&d, requeued, &ids[1], "j1 requeued");

    /* One silent server without progress reports: declared down on the
     * heartbeat alone, its job requeued. */
    kill(t01, SIGSTOP);
    const char *down1[2] = {"sn00-t01", "down"};
    wait_for(&d, node_state, down1, "sn00-t01 down");
    wait_for(&d, requeued, &ids[2], "j2 requeued");
    kill(t00, SIGCONT);
    kill(t01, SIGCONT);
    wait_for(&d, node_state, up0, "sn00-t00 back up");
    wait_for(&d, node_state, up1, "sn00-t01 back up");
    for (int k = 0; k < a.n; k++) {
        kill(a.pid[k], SIGTERM);
        waitpid(a.pid[k], NULL, 0);
        track(a.pid[k], false);
    }
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

static void operator_unfence(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    harness_spec = SPEC;
    make_dir(&d);
    start(&d, SETS);
    setup_tenants(&d);
    long long id = submit(&d, 8);
    json_decref(wait_job(&d, id, "running"));
    pid_t p0 = agent_on(&d, &a, "sn00-t00"), p1 = agent_on(&d, &a, "sn01-t00");
    wait_for(&d, node_seen, "sn00-t00", "sn00-t00's first heartbeat");
    wait_for(&d, node_seen, "sn01-t00", "sn01-t00's first heartbeat");
    expect(&d, 200, "POST", "/v1/cluster/unfence", d.admin, "{}"); /* not fenced: nothing */
    kill(p0, SIGSTOP);
    kill(p1, SIGSTOP);
    bool yes = true;
    wait_for(&d, fenced_is, &yes, "the fence");
    json_t *j = NULL;
    assert_int_equal(call(&d, "POST", "/v1/cluster/unfence", d.admin, "{}", NULL, &j), 200);
    assert_true(json_is_true(json_object_get(j, "was_fenced")));
    assert_false(json_is_true(json_object_get(j, "fenced")));
    assert_int_equal(json_integer_value(json_object_get(j, "declared_down")), 2);
    json_decref(j);
    const char *down0[2] = {"sn00-t00", "down"}, *down1[2] = {"sn01-t00", "down"};
    assert_true(node_state(&d, down0) && node_state(&d, down1));
    wait_for(&d, requeued, &id, "the job requeued");
    /* A tenant token may not unfence. */
    char tok[SN_AUTH_TOKEN_MAX];
    tenant_token(&d, "acme", tok);
    expect(&d, 403, "POST", "/v1/cluster/unfence", tok, "{}");
    for (int k = 0; k < a.n; k++) {
        kill(a.pid[k], SIGCONT);
        kill(a.pid[k], SIGTERM);
        waitpid(a.pid[k], NULL, 0);
        track(a.pid[k], false);
    }
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(fence_and_second_signal, reap_all),
        cmocka_unit_test_teardown(operator_unfence, reap_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
