/*
 * Job launch end to end: a real snd (scheduler wired in) and real sn-agents
 * (sim backend), all on 127.0.0.1, both built ($SN_BUILD_DIR). The cluster
 * is examples/std-unit-64.yaml (sn00-t00 .. sn00-t07, 8 GPUs each).
 * Covered:
 *  - a 16-GPU job is placed on two servers; their agents learn its ranks
 *    from the one heartbeat route, launch one process per rank whose
 *    environment holds SN_JOB_ID, RANK, WORLD_SIZE, LOCAL_RANK,
 *    LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR (the address rank 0's agent
 *    reported, which resolves), MASTER_PORT (the job's) and
 *    CUDA_VISIBLE_DEVICES (each process writes them to a file: checked
 *    against the job's allocation), and stream the exits back: the job
 *    completes;
 *  - a rank exiting 3 fails its job with exit_status 3;
 *  - cancel kills the running rank's whole process group (a background
 *    child of the command dies too), and so does a requeue (the node is
 *    failed): the job runs again (run 1) on another node.
 * Waits poll with deadlines; the only fixed pauses are the poll steps.
 */
#include "snd_harness.h"
#include "job_harness.h"

#include <errno.h>
#include <netdb.h>
#include <sys/stat.h>


static const char *const FAST[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};

/* Starts an agent for node unless one runs there already; fault: a
 * --fault argument or NULL. */
static void agent_fault(struct daemon *d, struct agents *a, const char *node, const char *fault)
{
    const char *extra[] = {"--fault", fault, NULL};
    agents_add(d, a, node, "examples/std-unit-64.yaml", fault ? extra : NULL);
}

static void agent_on(struct daemon *d, struct agents *a, const char *node)
{
    agent_fault(d, a, node, NULL);
}

static long long submit(struct daemon *d, int gpus, const char *command)
{
    json_t *body = json_pack("{s:s,s:i,s:s,s:s}", "name", "launch", "gpus", gpus, "tenant", "acme",
                             "command", command);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, text, NULL, &j);
    if (s != 201)
        fail_msg("submit %s: %d", text, s);
    free(text);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* Starts agents on every node of a running job. */
static json_t *run_with_agents(struct daemon *d, struct agents *a, long long id)
{
    json_t *j = wait_state(d, id, "running");
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(j, "nodes"), i, n) agent_on(d, a, json_string_value(n));
    return j;
}

/* 16 ranks over two nodes: each sees its own layout; all exit 0. */
static void ranks_and_completion(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    char cmd[1200];
    snprintf(cmd, sizeof(cmd),
             "echo $SN_JOB_ID $RANK $WORLD_SIZE $LOCAL_RANK $CUDA_VISIBLE_DEVICES $MASTER_ADDR "
             "$LOCAL_WORLD_SIZE $NODE_RANK $MASTER_PORT "
             "> %s/out.$RANK.tmp && mv %s/out.$RANK.tmp %s/out.$RANK",
             d.dir, d.dir, d.dir);
    long long id = submit(&d, 16, cmd);
    json_t *j = run_with_agents(&d, &a, id);
    assert_int_equal(a.n, 2);
    json_t *alloc = json_object_get(j, "allocation");
    const char *node0 = json_string_value(json_array_get(json_object_get(j, "nodes"), 0));
    long long port = json_integer_value(json_object_get(j, "master_port"));
    assert_true(port >= 29500 && port < 29500 + 16384);
    /* MASTER_ADDR: the address rank 0's agent reports, and it resolves. */
    char apath[96], master[64];
    snprintf(apath, sizeof(apath), "/v1/agents/%s", node0);
    json_t *ag = NULL;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(call(&d, "GET", apath, d.admin, NULL, NULL, &ag), 200);
        snprintf(master, sizeof(master), "%s",
                 json_string_value(json_object_get(ag, "address")));
        json_decref(ag);
        if (master[0])
            break;
        poll(NULL, 0, 20);
    }
    struct addrinfo *res = NULL;
    assert_int_equal(getaddrinfo(master, NULL, NULL, &res), 0);
    freeaddrinfo(res);
    /* The expected layout, from the allocation: GPU g is index g % 8 of
     * server g / 8 (8 GPUs per server, ids in server order); ranks on a
     * node are numbered locally in rank order. */
    int local[8] = {0};
    for (int r = 0; r < 16; r++) {
        char path[400], got[200], want[200];
        snprintf(path, sizeof(path), "%s/out.%d", d.dir, r);
        wait_file(path, got, sizeof(got));
        long long g = json_integer_value(json_array_get(alloc, (size_t)r));
        long long g0 = json_integer_value(json_array_get(alloc, 0));
        snprintf(want, sizeof(want), "%lld %d 16 %d %lld %s 8 %d %lld\n", id, r, local[g / 8]++,
                 g % 8, master, g / 8 == g0 / 8 ? 0 : 1, port);
        assert_string_equal(got, want);
        unlink(path);
    }
    json_decref(j);
    j = wait_state(&d, id, "completed");
    assert_string_equal(json_string_value(json_object_get(j, "detail")), "every rank exited 0");
    json_decref(j);
    /* A rank exiting 3 fails its job with that status. */
    id = submit(&d, 1, "exit 3");
    json_decref(run_with_agents(&d, &a, id));
    j = wait_state(&d, id, "failed");
    assert_int_equal(json_integer_value(json_object_get(j, "exit_status")), 3);
    json_decref(j);
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

/* Cancel and requeue kill the rank's process group: the command's
 * background child (its pid written by the command) dies too. */
static void cancel_and_requeue_kill(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    char cmd[1200], path[400], text[64];
    snprintf(cmd, sizeof(cmd),
             "sleep 300 & echo $! > %s/c.tmp.$SN_NODE && mv %s/c.tmp.$SN_NODE "
             "%s/child.$SN_JOB_ID.$SN_NODE; wait",
             d.dir, d.dir, d.dir);
    long long id = submit(&d, 1, cmd);
    json_t *j = run_with_agents(&d, &a, id);
    char node[16];
    snprintf(node, sizeof(node), "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    snprintf(path, sizeof(path), "%s/child.%lld.%s", d.dir, id, node);
    wait_file(path, text, sizeof(text));
    pid_t child = (pid_t)strtol(text, NULL, 10);
    assert_true(child > 0 && !gone(child));
    char url[64];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/cancel", id);
    expect(&d, 200, "POST", url, d.admin, NULL);
    wait_gone(child);
    /* Requeue: the node fails, the job is interrupted, placed again on
     * another node (run 1) and its process there started; the one on the
     * failed node is killed. */
    id = submit(&d, 1, cmd);
    j = run_with_agents(&d, &a, id);
    snprintf(node, sizeof(node), "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    snprintf(path, sizeof(path), "%s/child.%lld.%s", d.dir, id, node);
    wait_file(path, text, sizeof(text));
    child = (pid_t)strtol(text, NULL, 10);
    snprintf(url, sizeof(url), "/v1/nodes/%s/fail", node);
    expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"test\"}");
    wait_gone(child);
    j = NULL;
    for (int i = 0; i < 1000; i++) { /* placed again elsewhere */
        json_decref(j);
        j = wait_state(&d, id, "running");
        if (json_integer_value(json_object_get(j, "requeues")) == 1)
            break;
        poll(NULL, 0, 20);
    }
    assert_int_equal(json_integer_value(json_object_get(j, "requeues")), 1);
    char again[16];
    snprintf(again, sizeof(again), "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    assert_string_not_equal(again, node);
    agent_on(&d, &a, again);
    snprintf(path, sizeof(path), "%s/child.%lld.%s", d.dir, id, again);
    wait_file(path, text, sizeof(text));
    child = (pid_t)strtol(text, NULL, 10);
    assert_true(child > 0 && !gone(child));
    snprintf(url, sizeof(url), "/v1/jobs/%lld/cancel", id);
    expect(&d, 200, "POST", url, d.admin, NULL);
    wait_gone(child);
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

/* Stops the agents (SIGTERM: they kill their jobs' process groups) and
 * the daemon a failed test left running. */
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

static json_t *get(struct daemon *d, const char *path)
{
    json_t *j = NULL;
    int st = call(d, "GET", path, d->admin, NULL, NULL, &j);
    if (st != 200)
        fail_msg("GET %s: %d", path, st);
    return j;
}

/* Polls GET /v1/gpus/NAME until its state is want (up to 20 s). */
static json_t *wait_gpu(struct daemon *d, const char *name, const char *want)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/gpus/%s", name);
    for (int i = 0; i < 1000; i++) {
        json_t *j = get(d, path);
        const char *st = json_string_value(json_object_get(j, "state"));
        if (st && strcmp(st, want) == 0)
            return j;
        json_decref(j);
        poll(NULL, 0, 20);
    }
    fail_msg("gpu %s never became %s", name, want);
    return NULL;
}

static bool has_finding(json_t *gpu, const char *detector)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(gpu, "findings"), i, f)
    {
        const char *det = json_string_value(json_object_get(f, "detector"));
        if (det && strcmp(det, detector) == 0)
            return true;
    }
    return false;
}

/* Health in the daemon: a sim agent with a slow GPU answers the benchmarks
 * the heartbeat asks for; the engine finds slow-gpu (alone) and
 * snd:health cordons the GPU. A dropped GPU is marked down and the job
 * that ran on it is requeued (run 1) and placed again without it. */
static void health_cordon_and_requeue(void **state)
{
    (void)state;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                                "health_interval_ms=200", NULL};
    start(&d, sets);
    setup_tenants(&d);
    long long id = submit(&d, 8, "sleep 300");
    json_t *j = wait_state(&d, id, "running");
    char node[16], other[16], name[48];
    snprintf(node, sizeof(node), "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    snprintf(other, sizeof(other), "%s", strcmp(node, "sn00-t07") ? "sn00-t07" : "sn00-t06");
    agent_fault(&d, &a, other, "slow-gpu=3");
    /* Slow GPU: score 100 - 50 (slow-gpu alone: the sim's slow GPU shows no
     * clock event) = 50, the weight of the detector table
     * (include/sn/health.h), below the default health_cordon_below of 60. */
    snprintf(name, sizeof(name), "%s-gpu3", other);
    j = wait_gpu(&d, name, "cordoned");
    assert_string_equal(json_string_value(json_object_get(j, "by")), "snd:health");
    assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "slow-gpu"));
    assert_true(has_finding(j, "slow-gpu"));
    assert_false(has_finding(j, "clock-event"));
    assert_near(json_number_value(json_object_get(j, "health_score")), 50, 0.5);
    json_decref(j);
    snprintf(name, sizeof(name), "%s-gpu0", other);
    char path[96];
    snprintf(path, sizeof(path), "/v1/gpus/%s", name);
    j = get(&d, path);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "up");
    assert_near(json_number_value(json_object_get(j, "health_score")), 100, 0.5);
    json_decref(j);
    /* The score is in /metrics. */
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics", .timeout_ms = 5000};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL), SN_OK);
    char line[96];
    snprintf(line, sizeof(line), "snd_gpu_health_score{gpu=\"%s-gpu3\"} 50.0\n", other);
    assert_non_null(strstr(resp.body, line));
    sn_httpc_response_release(&resp);
    /* Dropped GPU 2 of the job's node: down, and the job requeued. */
    agent_fault(&d, &a, node, "drop-gpu=2");
    snprintf(name, sizeof(name), "%s-gpu2", node);
    j = wait_gpu(&d, name, "down");
    long long dropped = json_integer_value(json_object_get(j, "id"));
    assert_string_equal(json_string_value(json_object_get(j, "by")), "snd:health");
    assert_non_null(strstr(json_string_value(json_object_get(j, "reason")), "gpu-missing"));
    json_decref(j);
    j = NULL;
    for (int i = 0; i < 1000; i++) {
        json_decref(j);
        j = wait_state(&d, id, "running");
        if (json_integer_value(json_object_get(j, "requeues")) == 1)
            break;
        poll(NULL, 0, 20);
    }
    assert_int_equal(json_integer_value(json_object_get(j, "requeues")), 1);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(j, "allocation"), i, g)
        assert_int_not_equal(json_integer_value(g), dropped);
    json_decref(j);
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(ranks_and_completion, reap_all),
        cmocka_unit_test_teardown(cancel_and_requeue_kill, reap_all),
        cmocka_unit_test_teardown(health_cordon_and_requeue, reap_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
