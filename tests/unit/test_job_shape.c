/*
 * Job shape end to end: a real snd and real sn-agents (sim backend) on
 * 127.0.0.1, both built ($SN_BUILD_DIR), on examples/demo-cluster.yaml (4
 * supernodes sn00..sn03 of 4 servers t00..t03 x 8 GPUs; servers alternate
 * between power domains A and B: t00, t02 on A, t01, t03 on B). Covered:
 *  - bad shapes are refused with 422 invalid_shape naming the field
 *    (group_gpus not dividing gpus or above every supernode, one_supernode
 *    above every supernode, exclusive with a fraction of a server or of a
 *    supernode, an unknown exclusive kind or planner model); the planner
 *    fills xsn_bytes_per_s from a model, an explicit value is kept;
 *  - a tensor-parallel group of 8 is kept in one server where a job without
 *    a group is split over two (the case), and the agent of that
 *    server launches all 8 ranks on GPUs 0..7;
 *  - one_supernode: with 8 GPUs free in each supernode a 16-GPU
 *    one_supernode job waits (no-supernode-fits) while the same job without
 *    the flag runs over two; freed room starts it inside one supernode, and
 *    the agents there launch its ranks;
 *  - spread_power_domains: with sn00-t01 cordoned a 16-GPU job in groups
 *    of 4 packs onto t00 and t02 (both domain A); with the flag its groups
 *    are 2 on A and 2 on B (t00 and t03), as the agents launch them;
 *  - exclusive server / supernode take whole servers / supernodes, and a
 *    restart of snd restores every shaped job on the same GPUs;
 *  - cross-supernode bandwidth: a 64-GPU job over two supernodes asking
 *    100 GB/s per GPU would carry 1.6 TB/s on a leaf of 800 GB/s uplinks
 *    and waits with reason bandwidth; at 10 GB/s it runs;
 *  - preemptible: a preemptible job is preempted by a higher priority, the
 *    same job submitted with preemptible false (overriding its class) is
 *    not.
 * Waits poll with deadlines of tens of seconds; the only fixed pauses are
 * the poll steps.
 */
#include "snd_harness.h"
#include "job_harness.h"

#include <sys/stat.h>

#define SPEC "examples/demo-cluster.yaml"

static const char *const FAST[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                                   "preempt_min_runtime_s=0", NULL};

static void agent_on(struct daemon *d, struct agents *a, const char *node)
{
    agents_add(d, a, node, SPEC, NULL);
}

static int reap_all(void **state)
{
    for (int i = 0; i < 8; i++)
        if (live[i] > 0) {
            kill(live[i], SIGTERM);
            waitpid(live[i], NULL, 0);
            live[i] = 0;
        }
    return reap_daemons(state);
}

static void begin(struct daemon *d)
{
    harness_spec = SPEC;
    make_dir(d);
    start(d, FAST);
    setup_tenants(d);
}

static void finish(struct daemon *d, struct agents *a)
{
    agents_stop(a);
    assert_int_equal(stop(d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d->dir);
    assert_int_equal(system(rm), 0);
}

/* Submits a job of tenant acme: gpus, command, and extra JSON fields
 * (",\"group_gpus\":8" or ""); returns its id. */
static long long submit(struct daemon *d, int gpus, const char *command, const char *extra)
{
    json_t *cmd = json_string(command);
    char *qc = json_dumps(cmd, JSON_ENCODE_ANY);
    json_decref(cmd);
    char body[2048];
    snprintf(body, sizeof(body),
             "{\"name\":\"shape\",\"gpus\":%d,\"tenant\":\"acme\",\"command\":%s%s}", gpus, qc,
             extra);
    free(qc);
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, body, NULL, &j);
    if (s != 201)
        fail_msg("submit %s: %d %s", body, s, j ? json_dumps(j, 0) : "");
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* Polls a waiting job until the scheduler gave it a pending reason. */
static void wait_reason(struct daemon *d, long long id, const char *want)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    const char *got = "?";
    for (int i = 0; i < 1500; i++) {
        json_t *j = NULL;
        assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
        const char *r = json_string_value(json_object_get(j, "pending_reason"));
        bool ok = r && strcmp(r, want) == 0;
        got = r && strcmp(r, "none") ? "another" : "none";
        json_decref(j);
        if (ok)
            return;
        poll(NULL, 0, 20);
    }
    fail_msg("job %lld never pending for %s (%s)", id, want, got);
}

static void cancel(struct daemon *d, long long id)
{
    char url[64];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/cancel", id);
    expect(d, 200, "POST", url, d->admin, NULL);
}

/* The distinct nodes of a running job, in rank order, joined by ','. */
static void nodes_of(json_t *j, char *out, size_t len)
{
    size_t i, n = 0;
    json_t *v;
    out[0] = '\0';
    json_array_foreach(json_object_get(j, "nodes"), i, v)
    {
        const char *name = json_string_value(v);
        char probe[20];
        snprintf(probe, sizeof(probe), ",%s,", name);
        char have[600];
        snprintf(have, sizeof(have), ",%s,", out);
        if (strstr(have, probe))
            continue;
        int w = snprintf(out + n, len - n, "%s%s", n ? "," : "", name);
        n += (size_t)w;
    }
}

/* The command each rank runs: writes "node rank cuda_visible_devices". */
static void rank_command(struct daemon *d, char *cmd, size_t len)
{
    snprintf(cmd, len,
             "echo $SN_NODE $RANK $CUDA_VISIBLE_DEVICES > %s/r.$SN_JOB_ID.$RANK.tmp && mv "
             "%s/r.$SN_JOB_ID.$RANK.tmp %s/r.$SN_JOB_ID.$RANK; sleep 300",
             d->dir, d->dir, d->dir);
}

/* Starts agents on the job's nodes and checks what they launched: rank r
 * on the node and GPU index of allocation[r] (GPU g is index g % 8 of
 * server g / 8 in this cluster). */
static void check_launch(struct daemon *d, struct agents *a, long long id, json_t *j)
{
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(j, "nodes"), i, v) agent_on(d, a, json_string_value(v));
    json_t *alloc = json_object_get(j, "allocation");
    json_array_foreach(alloc, i, v)
    {
        long long g = json_integer_value(v);
        char path[400], got[200], want[200], node[40];
        snprintf(node, sizeof(node), "sn%02lld-t%02lld", g / 32, (g / 8) % 4);
        snprintf(path, sizeof(path), "%s/r.%lld.%zu", d->dir, id, i);
        wait_file(path, got, sizeof(got));
        snprintf(want, sizeof(want), "%s %zu %lld\n", node, i, g % 8);
        assert_string_equal(got, want);
    }
}

static void refusals(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    begin(&d);
    struct {
        const char *extra;
        int gpus;
        const char *field;
    } cases[] = {
        {",\"group_gpus\":3", 8, "group_gpus"},        /* does not divide */
        {",\"group_gpus\":64", 64, "group_gpus"},      /* above every supernode (32) */
        {",\"one_supernode\":true", 48, "one_supernode"},
        {",\"exclusive\":\"server\"", 4, "exclusive"}, /* a fraction of a server */
        {",\"exclusive\":\"supernode\"", 48, "exclusive"},
        {",\"exclusive\":\"rack\"", 8, "exclusive"},
        {",\"exclusive\":\"server\",\"group_gpus\":16", 16, "group_gpus"},
        {",\"model\":\"no-such-model\"", 16, "model"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char body[300];
        snprintf(body, sizeof(body), "{\"name\":\"x\",\"gpus\":%d,\"tenant\":\"acme\"%s}",
                 cases[i].gpus, cases[i].extra);
        expect_error(&d, 422, "POST", "/v1/jobs", d.admin, body, "invalid_shape", cases[i].field);
    }
    expect_error(&d, 400, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":8,\"tenant\":\"acme\",\"one_supernode\":1}",
                 "invalid_field", "one_supernode");
    /* The planner's default bandwidth, and an explicit one kept. */
    long long id = submit(&d, 64, "true", ",\"group_gpus\":8,\"model\":\"llama3-8b\"");
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
    json_int_t bw = json_integer_value(json_object_get(j, "xsn_bytes_per_s"));
    assert_true(bw > 1000000 && bw < 1000000000000LL);
    assert_int_equal(json_integer_value(json_object_get(j, "group_gpus")), 8);
    json_decref(j);
    id = submit(&d, 64, "true", ",\"group_gpus\":8,\"model\":\"llama3-8b\",\"xsn_bytes_per_s\":5");
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
    assert_int_equal(json_integer_value(json_object_get(j, "xsn_bytes_per_s")), 5);
    json_decref(j);
    finish(&d, &a);
}

/* The case: 8 GPUs split over two servers unless they are a group. */
static void tp_group_whole_server(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    begin(&d);
    char cmd[1200], nodes[600];
    rank_command(&d, cmd, sizeof(cmd));
    long long filler = submit(&d, 4, "sleep 300", "");
    json_t *j = wait_state(&d, filler, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn00-t00");
    json_decref(j);
    long long tp = submit(&d, 8, cmd, ",\"group_gpus\":8");
    j = wait_state(&d, tp, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn00-t01");
    check_launch(&d, &a, tp, j);
    json_decref(j);
    /* Without the group the same job is split over two servers. */
    long long loose = submit(&d, 8, "sleep 300", "");
    j = wait_state(&d, loose, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn00-t00,sn00-t02");
    json_decref(j);
    finish(&d, &a);
}

static void one_supernode(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    begin(&d);
    long long fill[4];
    for (int i = 0; i < 4; i++) {
        fill[i] = submit(&d, 24, "sleep 300", ",\"group_gpus\":8");
        json_t *j = wait_state(&d, fill[i], "running");
        char nodes[600], want[8];
        nodes_of(j, nodes, sizeof(nodes));
        snprintf(want, sizeof(want), "sn%02d-", i);
        assert_true(strncmp(nodes, want, 5) == 0);
        json_decref(j);
    }
    char cmd[1200], nodes[600];
    rank_command(&d, cmd, sizeof(cmd));
    long long whole = submit(&d, 16, cmd, ",\"group_gpus\":8,\"one_supernode\":true");
    wait_reason(&d, whole, "no-supernode-fits");
    long long spread = submit(&d, 16, "sleep 300", ",\"group_gpus\":8");
    json_t *j = wait_state(&d, spread, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_int_not_equal(strncmp(nodes, strchr(nodes, ',') + 1, 5), 0); /* two supernodes */
    json_decref(j);
    cancel(&d, fill[2]);
    j = wait_state(&d, whole, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn02-t00,sn02-t01");
    check_launch(&d, &a, whole, j);
    json_decref(j);
    finish(&d, &a);
}

static void spread_power(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    begin(&d);
    expect(&d, 200, "POST", "/v1/nodes/sn00-t01/cordon", d.admin, "{\"reason\":\"test\"}");
    char cmd[1200], nodes[600];
    long long packed = submit(&d, 16, "sleep 300", ",\"group_gpus\":4");
    json_t *j = wait_state(&d, packed, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn00-t00,sn00-t02"); /* both on power domain A */
    json_decref(j);
    cancel(&d, packed);
    rank_command(&d, cmd, sizeof(cmd));
    long long spread = submit(&d, 16, cmd, ",\"group_gpus\":4,\"spread_power_domains\":true");
    j = wait_state(&d, spread, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn00-t00,sn00-t03"); /* A and B */
    /* Groups (ranks 4k..4k+3) alternate: 2 on t00 (A), 2 on t03 (B). */
    json_t *alloc = json_object_get(j, "allocation");
    int on_a = 0;
    for (size_t g = 0; g < 4; g++)
        on_a += json_integer_value(json_array_get(alloc, g * 4)) / 8 == 0;
    assert_int_equal(on_a, 2);
    check_launch(&d, &a, spread, j);
    json_decref(j);
    finish(&d, &a);
}

static void exclusive(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    begin(&d);
    char nodes[600];
    long long small = submit(&d, 4, "sleep 300", "");
    json_decref(wait_state(&d, small, "running"));
    long long srv = submit(&d, 8, "sleep 300", ",\"exclusive\":\"server\"");
    json_t *j = wait_state(&d, srv, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn00-t01");
    json_decref(j);
    long long sn = submit(&d, 32, "sleep 300", ",\"exclusive\":\"supernode\"");
    j = wait_state(&d, sn, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn01-t00,sn01-t01,sn01-t02,sn01-t03");
    json_decref(j);
    /* A second 4-GPU job fills sn00-t00, beside the first. */
    long long small2 = submit(&d, 4, "sleep 300", "");
    j = wait_state(&d, small2, "running");
    nodes_of(j, nodes, sizeof(nodes));
    assert_string_equal(nodes, "sn00-t00");
    json_decref(j);
    /* A restart restores every shaped job on its GPUs. */
    long long ids[4] = {small, srv, sn, small2};
    char *before[4];
    for (int i = 0; i < 4; i++) {
        j = wait_state(&d, ids[i], "running");
        before[i] = json_dumps(json_object_get(j, "allocation"), JSON_COMPACT);
        json_decref(j);
    }
    assert_int_equal(stop(&d, SIGTERM), 0);
    start(&d, FAST);
    for (int i = 0; i < 4; i++) {
        j = wait_state(&d, ids[i], "running");
        char *after = json_dumps(json_object_get(j, "allocation"), JSON_COMPACT);
        assert_string_equal(after, before[i]);
        free(after);
        free(before[i]);
        json_decref(j);
    }
    finish(&d, &a);
}

static void bandwidth(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    begin(&d);
    long long big = submit(&d, 64, "sleep 300", ",\"group_gpus\":8,\"xsn_bytes_per_s\":100000000000");
    wait_reason(&d, big, "bandwidth");
    cancel(&d, big);
    long long ok = submit(&d, 64, "sleep 300", ",\"group_gpus\":8,\"xsn_bytes_per_s\":10000000000");
    json_t *j = wait_state(&d, ok, "running");
    char nodes[600];
    nodes_of(j, nodes, sizeof(nodes));
    /* Two whole supernodes: 8 servers, two supernode prefixes. */
    assert_int_equal(strlen(nodes), 8 * 8 + 7);
    assert_int_equal(strncmp(nodes, nodes + 4 * 9, 4) != 0, 1);
    assert_int_equal(strncmp(nodes, nodes + 3 * 9, 4), 0);
    json_decref(j);
    finish(&d, &a);
}

static void preemptible(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    begin(&d);
    expect(&d, 201, "POST", "/v1/priority-classes", d.admin,
           "{\"name\":\"low\",\"priority\":0,\"preemptible\":true}");
    expect(&d, 201, "POST", "/v1/priority-classes", d.admin,
           "{\"name\":\"high\",\"priority\":100}");
    /* Not preemptible by its own choice: the high job waits. */
    long long keep = submit(&d, 128, "sleep 300",
                            ",\"group_gpus\":8,\"priority_class\":\"low\",\"preemptible\":false");
    json_decref(wait_state(&d, keep, "running"));
    long long high = submit(&d, 32, "sleep 300", ",\"group_gpus\":8,\"priority_class\":\"high\"");
    wait_reason(&d, high, "no-supernode-fits");
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", keep);
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "running");
    json_decref(j);
    cancel(&d, high);
    cancel(&d, keep);
    /* Preemptible (its class's): the high job preempts it. */
    long long victim = submit(&d, 128, "sleep 300", ",\"group_gpus\":8,\"priority_class\":\"low\"");
    json_decref(wait_state(&d, victim, "running"));
    high = submit(&d, 32, "sleep 300", ",\"group_gpus\":8,\"priority_class\":\"high\"");
    json_decref(wait_state(&d, high, "running"));
    j = wait_state(&d, victim, "requeued");
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")), "preempted by job"));
    json_decref(j);
    finish(&d, &a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(refusals, reap_all),
        cmocka_unit_test_teardown(tp_group_whole_server, reap_all),
        cmocka_unit_test_teardown(one_supernode, reap_all),
        cmocka_unit_test_teardown(spread_power, reap_all),
        cmocka_unit_test_teardown(exclusive, reap_all),
        cmocka_unit_test_teardown(bandwidth, reap_all),
        cmocka_unit_test_teardown(preemptible, reap_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
