/*
 * End-to-end tests of snd with the scheduler core wired in, against the
 * built daemon on 127.0.0.1 (see snd_harness.h). The cluster is
 * examples/std-unit-64.yaml: one supernode of 8 servers x 8 GPUs
 * (sn00-t00 .. sn00-t07), in the dedicated pool "training". Covered: job
 * states pending -> running -> completed/failed/cancelled/requeued with
 * events; pending reasons; exits through the agents' route (and its
 * authorisation); quotas; cordon, drain (draining -> drained), resume;
 * fail of a node and of a GPU (jobs interrupted and requeued); heartbeat
 * loss (node down, jobs requeued, back up with the next heartbeat); the
 * heartbeat's answer; restart restoring allocations and ranks; a tampered
 * state that breaks an invariant makes snd refuse to serve; a pass's rows
 * ride in the next submit's group commit (issue 23).
 */
#include "snd_harness.h"

#include <sqlite3.h>
#include <sys/stat.h>

static const char *const FAST[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};

static long long submit(struct daemon *d, int gpus, const char *extra)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"name\":\"j\",\"gpus\":%d,\"tenant\":\"acme\"%s}", gpus,
             extra ? extra : "");
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, body, NULL, &j);
    if (s != 201)
        fail_msg("submit %s: %d", body, s);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static void exit_rank(struct daemon *d, const char *token, long long id, int rank, int status,
                      int want)
{
    char path[64], body[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/exit", id);
    snprintf(body, sizeof(body), "{\"rank\":%d,\"status\":%d}", rank, status);
    expect(d, want, "POST", path, token, body);
}

static const char *str(json_t *j, const char *key)
{
    return json_string_value(json_object_get(j, key));
}

static long long num(json_t *j, const char *key)
{
    return json_integer_value(json_object_get(j, key));
}

/* Waits for a pending job's reason to be want. */
static void wait_reason(struct daemon *d, long long id, const char *want)
{
    for (int i = 0; i < 500; i++) {
        json_t *j = wait_job(d, id, "pending");
        bool ok = str(j, "pending_reason") && strcmp(str(j, "pending_reason"), want) == 0;
        if (i == 499 && !ok)
            fail_msg("job %lld: pending reason %s, want %s", id, str(j, "pending_reason"), want);
        json_decref(j);
        if (ok)
            return;
        poll(NULL, 0, 10);
    }
}

static void event_kinds(struct daemon *d, long long id, char *out, size_t len)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/events", id);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    size_t i, n = 0;
    json_t *e;
    out[0] = '\0';
    json_array_foreach(json_object_get(j, "items"), i, e) n +=
        (size_t)snprintf(out + n, len - n, "%s%s", i ? "," : "", str(e, "kind"));
    json_decref(j);
}

static void agent_token(struct daemon *d, const char *node, char *out)
{
    sign(d, SN_AUTH_AGENT, node, "telemetry:write", 1000, 4000000000, node[7] == '0' ? "a0" : "a1",
         out);
}

/* Lifecycle: start, exits, completion, failure, cancel, pending reasons. */
static void lifecycle(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    long long a = submit(&d, 16, NULL);
    json_t *j = wait_job(&d, a, "running");
    assert_int_equal(json_array_size(json_object_get(j, "allocation")), 16);
    /* Supernode-first packs servers: 16 GPUs are two whole servers. */
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 2);
    assert_string_equal(str(j, "pool"), "training");
    char node0[64];
    snprintf(node0, sizeof(node0), "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    /* 64 GPUs cannot fit next to it: pending, no supernode fits. */
    long long b = submit(&d, 64, NULL);
    wait_reason(&d, b, "no-supernode-fits");
    /* Exits: an agent reports only ranks on its own node. */
    char mine[SN_AUTH_TOKEN_MAX], other[SN_AUTH_TOKEN_MAX];
    agent_token(&d, node0, mine);
    agent_token(&d, strcmp(node0, "sn00-t07") ? "sn00-t07" : "sn00-t06", other);
    exit_rank(&d, other, a, 0, 0, 403);
    exit_rank(&d, mine, a, 0, 0, 200);
    exit_rank(&d, mine, a, 0, 0, 200); /* a repeat changes nothing */
    exit_rank(&d, d.admin, a, 16, 0, 400);
    exit_rank(&d, d.admin, b, 0, 0, 409); /* b is not running */
    for (int r = 1; r < 16; r++)
        exit_rank(&d, d.admin, a, r, 0, 200);
    j = wait_job(&d, a, "completed");
    /* A completed job keeps its record: placement, every rank's status. */
    assert_int_equal(json_array_size(json_object_get(j, "allocation")), 16);
    assert_int_equal(json_array_size(json_object_get(j, "nodes")), 2);
    assert_int_equal(num(j, "ranks_exited"), 16);
    assert_int_equal(num(j, "exit_status"), 0);
    assert_int_equal(json_array_size(json_object_get(j, "rank_exit_statuses")), 16);
    json_t *statuses = json_object_get(j, "rank_exit_statuses");
    assert_int_equal(json_integer_value(json_array_get(statuses, 15)), 0);
    assert_true(json_is_integer(json_object_get(j, "start_time_s")));
    assert_true(json_is_integer(json_object_get(j, "end_time_s")));
    json_decref(j);
    char kinds[256];
    event_kinds(&d, a, kinds, sizeof(kinds));
    assert_string_equal(kinds, "submitted,started,completed");
    /* The freed GPUs let b start; a non-zero exit fails it at once. */
    json_decref(wait_job(&d, b, "running"));
    exit_rank(&d, d.admin, b, 5, 137, 200);
    j = wait_job(&d, b, "failed");
    assert_int_equal(num(j, "exit_status"), 137);
    assert_string_equal(str(j, "detail"), "rank 5 exited with status 137");
    json_t *rs = json_object_get(j, "rank_exit_statuses");
    assert_int_equal(json_array_size(rs), 64);
    assert_int_equal(json_integer_value(json_array_get(rs, 5)), 137);
    assert_true(json_is_null(json_array_get(rs, 0))); /* stopped by its agent */
    json_decref(j);
    /* Cancel of a running job frees its GPUs for the next one. */
    long long c = submit(&d, 64, NULL);
    json_decref(wait_job(&d, c, "running"));
    long long e = submit(&d, 8, NULL);
    wait_reason(&d, e, "no-supernode-fits");
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/cancel", c);
    expect(&d, 200, "POST", path, d.admin, NULL);
    json_decref(wait_job(&d, e, "running"));
    event_kinds(&d, c, kinds, sizeof(kinds));
    assert_string_equal(kinds, "submitted,started,cancelled");
    expect_error(&d, 409, "POST", path, d.admin, NULL, "invalid_transition", "state");
    /* A job in a pool with no supernodes is refused up front. */
    expect(&d, 201, "POST", "/v1/pools", d.admin, "{\"name\":\"empty\",\"kind\":\"mixed\"}");
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":1,\"tenant\":\"acme\",\"pool\":\"empty\"}",
                 "unsatisfiable", "pool");
    /* Metrics: jobs by state, GPUs by scheduler state, the cycle histogram. */
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics"};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, NULL), SN_OK);
    assert_non_null(strstr(resp.body, "sn_jobs{state=\"completed\"} 1\n"));
    assert_non_null(strstr(resp.body, "sn_jobs{state=\"failed\"} 1\n"));
    assert_non_null(strstr(resp.body, "sn_jobs{state=\"cancelled\"} 1\n"));
    assert_non_null(strstr(resp.body, "sn_gpus_scheduler{state=\"allocated\"} 8\n"));
    assert_non_null(strstr(resp.body, "# TYPE sn_scheduler_cycle_seconds histogram\n"));
    assert_non_null(strstr(resp.body, "sn_scheduler_cycle_seconds_bucket{le=\"+Inf\"}"));
    sn_httpc_response_release(&resp);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

/* Quotas per tenant and pool hold; one below usage is refused. */
static void quotas(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    expect(&d, 200, "PUT", "/v1/tenants/acme/quotas/training", d.admin, "{\"gpus\":24}");
    long long a = submit(&d, 16, NULL);
    json_decref(wait_job(&d, a, "running"));
    long long b = submit(&d, 16, NULL);
    wait_reason(&d, b, "quota");
    expect_error(&d, 409, "PUT", "/v1/tenants/acme/quotas/training", d.admin, "{\"gpus\":8}",
                 "quota_below_usage", "gpus");
    /* Raising it lets b run (the core is rebuilt with the new quota). */
    expect(&d, 200, "PUT", "/v1/tenants/acme/quotas/training", d.admin, "{\"gpus\":32}");
    json_decref(wait_job(&d, b, "running"));
    json_t *j = wait_job(&d, a, "running"); /* a kept its GPUs through the rebuild */
    assert_int_equal(json_array_size(json_object_get(j, "allocation")), 16);
    json_decref(j);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

static json_t *node(struct daemon *d, const char *name)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/nodes/%s", name);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    return j;
}

static void expect_node_state(struct daemon *d, const char *name, const char *want)
{
    for (int i = 0; i < 500; i++) {
        json_t *j = node(d, name);
        bool ok = strcmp(str(j, "state"), want) == 0;
        if (i == 499 && !ok)
            fail_msg("node %s is %s, want %s", name, str(j, "state"), want);
        json_decref(j);
        if (ok)
            return;
        poll(NULL, 0, 10);
    }
}

static bool uses_node(json_t *job, int server)
{
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(job, "allocation"), i,
                       g) if (json_integer_value(g) / 8 == server) return true;
    return false;
}

/* Cordon, drain, fail and resume, of nodes and GPUs. */
static void node_states(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    /* Cordon one node: a 64-GPU job waits for it (reason health). */
    expect(&d, 200, "POST", "/v1/nodes/sn00-t03/cordon", d.admin, "{\"reason\":\"fan\"}");
    long long a = submit(&d, 64, NULL);
    wait_reason(&d, a, "health");
    expect(&d, 200, "POST", "/v1/nodes/sn00-t03/resume", d.admin, NULL);
    json_decref(wait_job(&d, a, "running"));
    /* Drain under a running job: draining, then drained when it leaves. */
    json_t *j = NULL;
    assert_int_equal(
        call(&d, "POST", "/v1/nodes/sn00-t05/drain", d.admin, "{\"reason\":\"psu\"}", NULL, &j),
        200);
    assert_string_equal(str(j, "state"), "draining");
    json_decref(j);
    expect(&d, 200, "POST", "/v1/jobs/1/cancel", d.admin, NULL);
    expect_node_state(&d, "sn00-t05", "drained");
    long long b = submit(&d, 56, NULL);
    j = wait_job(&d, b, "running");
    assert_false(uses_node(j, 5)); /* drained: no new work */
    json_decref(j);
    expect(&d, 200, "POST", "/v1/nodes/sn00-t05/resume", d.admin, NULL);
    expect_node_state(&d, "sn00-t05", "up");
    /* Fail a node under b: b is interrupted, requeued, and runs again
     * on the 56 GPUs left (t05 is back). */
    j = wait_job(&d, b, "running");
    int victim = (int)(json_integer_value(json_array_get(json_object_get(j, "allocation"), 0)) / 8);
    json_decref(j);
    char path[64];
    snprintf(path, sizeof(path), "/v1/nodes/sn00-t%02d/fail", victim);
    expect_error(&d, 400, "POST", path, d.admin, "{}", "invalid_field", "reason");
    expect(&d, 200, "POST", path, d.admin, "{\"reason\":\"xid 79\"}");
    expect_error(&d, 409, "POST", path, d.admin, "{\"reason\":\"again\"}", "invalid_transition",
                 "state");
    j = wait_job(&d, b, "running");
    for (int i = 0; i < 500 && num(j, "requeues") == 0; i++) {
        json_decref(j);
        poll(NULL, 0, 10);
        j = wait_job(&d, b, "running");
    }
    assert_int_equal(num(j, "requeues"), 1);
    assert_false(uses_node(j, victim));
    json_decref(j);
    char kinds[256];
    event_kinds(&d, b, kinds, sizeof(kinds));
    assert_string_equal(kinds, "submitted,started,interrupted,started");
    snprintf(path, sizeof(path), "/v1/nodes/sn00-t%02d/resume", victim);
    expect(&d, 200, "POST", path, d.admin, NULL);
    /* Fail one GPU under b: it is requeued; with 63 usable GPUs left it
     * fits again (56), elsewhere. */
    j = wait_job(&d, b, "running");
    long long gpu = json_integer_value(json_array_get(json_object_get(j, "allocation"), 3));
    json_decref(j);
    snprintf(path, sizeof(path), "/v1/gpus/sn00-t%02lld-gpu%lld/fail", gpu / 8, gpu % 8);
    expect(&d, 200, "POST", path, d.admin, "{\"reason\":\"ecc\"}");
    for (int i = 0; i < 500; i++) {
        j = wait_job(&d, b, "running");
        if (num(j, "requeues") == 2)
            break;
        json_decref(j);
        j = NULL;
        poll(NULL, 0, 10);
    }
    assert_non_null(j);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(j, "allocation"), i, g)
        assert_true(json_integer_value(g) != gpu);
    json_decref(j);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

/* Heartbeats: the answer lists the node's work; silence marks it down and
 * requeues its jobs; the next heartbeat brings it back. */
static void heartbeats(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    /* One of 8 servers is 12.5 %: partition safety (test_partition.c) is
     * off here so the heartbeat alone decides, at once. */
    const char *sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", "heartbeat_timeout_s=1",
                          "partition_share_pct=100", "partition_window_s=0", NULL};
    start(&d, sets);
    setup_tenants(&d);
    long long a = submit(&d, 64, NULL);
    json_decref(wait_job(&d, a, "running"));
    char t0[SN_AUTH_TOKEN_MAX], t7[SN_AUTH_TOKEN_MAX];
    agent_token(&d, "sn00-t00", t0);
    agent_token(&d, "sn00-t07", t7);
    expect_error(&d, 403, "POST", "/v1/nodes/sn00-t00/heartbeat", t7, NULL, "forbidden", NULL);
    json_t *j = NULL;
    assert_int_equal(call(&d, "POST", "/v1/nodes/sn00-t00/heartbeat", t0, "{}", NULL, &j), 200);
    json_t *jobs = json_object_get(j, "jobs");
    assert_int_equal(json_array_size(jobs), 1);
    json_t *job = json_array_get(jobs, 0);
    assert_int_equal(num(job, "id"), a);
    assert_int_equal(num(job, "world_size"), 64);
    assert_int_equal(json_array_size(json_object_get(job, "ranks")), 8);
    json_t *rank0 = json_array_get(json_object_get(job, "ranks"), 0);
    assert_int_equal(num(rank0, "local_index"), num(rank0, "gpu") % 8);
    json_decref(j);
    /* t0 falls silent (t7 keeps beating): t0 goes down after 1 s. */
    for (int i = 0; i < 40; i++) {
        expect(&d, 200, "POST", "/v1/nodes/sn00-t07/heartbeat", t7, NULL);
        poll(NULL, 0, 50);
    }
    json_t *n = node(&d, "sn00-t00");
    assert_string_equal(str(n, "state"), "down");
    assert_non_null(strstr(str(n, "reason"), "no heartbeat for"));
    json_decref(n);
    expect_node_state(&d, "sn00-t07", "up");
    j = wait_job(&d, a, "requeued");
    assert_string_equal(str(j, "pending_reason"), "no-supernode-fits");
    json_decref(j);
    /* Its next heartbeat brings it back, and the job runs again. */
    expect(&d, 200, "POST", "/v1/nodes/sn00-t00/heartbeat", t0, NULL);
    expect_node_state(&d, "sn00-t00", "up");
    json_decref(wait_job(&d, a, "running"));
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

/* A restart (clean or kill -9) restores allocations, ranks, node states. */
static void restart_restores(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    long long a = submit(&d, 16, NULL);
    json_t *before = wait_job(&d, a, "running");
    exit_rank(&d, d.admin, a, 3, 0, 200);
    exit_rank(&d, d.admin, a, 4, 0, 200);
    expect(&d, 200, "POST", "/v1/nodes/sn00-t06/cordon", d.admin, "{\"reason\":\"fan\"}");
    long long b = submit(&d, 48, NULL); /* fits only with t06's GPUs */
    wait_reason(&d, b, "health");
    for (int round = 0; round < 2; round++) {
        assert_int_equal(stop(&d, round ? SIGKILL : SIGTERM), round ? 128 + SIGKILL : 0);
        start(&d, FAST);
        json_t *after = wait_job(&d, a, "running");
        assert_true(json_equal(json_object_get(before, "allocation"),
                               json_object_get(after, "allocation")));
        assert_int_equal(num(after, "ranks_exited"), 2);
        json_decref(after);
        wait_reason(&d, b, "health");
    }
    json_decref(before);
    /* The remaining ranks complete it after the restarts. */
    exit_rank(&d, d.admin, a, 4, 0, 200);
    for (int r = 0; r < 16; r++)
        if (r != 3 && r != 4)
            exit_rank(&d, d.admin, a, r, 0, 200);
    json_decref(wait_job(&d, a, "completed"));
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

/* A state whose allocations overlap is refused: snd does not serve. */
static void broken_invariant_refused(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    long long a = submit(&d, 8, NULL);
    long long b = submit(&d, 8, NULL);
    json_decref(wait_job(&d, a, "running"));
    json_decref(wait_job(&d, b, "running"));
    assert_int_equal(stop(&d, SIGTERM), 0);
    char db_path[300], log[300];
    snprintf(db_path, sizeof(db_path), "%s/state.db", d.dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    char sql[200];
    snprintf(sql, sizeof(sql),
             "UPDATE allocations SET gpus=(SELECT gpus FROM allocations WHERE job_id=%lld) "
             "WHERE job_id=%lld",
             a, b);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    snprintf(log, sizeof(log), "%s/stderr", d.dir);
    harness_stderr = log;
    pid_t pid = fork();
    if (pid == 0) {
        char spec[1024];
        sn_test_path(spec, sizeof(spec), harness_spec);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        execl(snd_path(), snd_path(), "--cluster", spec, "--state", d.dir, "--listen",
              "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    harness_stderr = NULL;
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
    FILE *f = fopen(log, "r");
    char text[1024] = {0};
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    (void)n;
    assert_non_null(strstr(text, "refusing to serve"));
    assert_non_null(strstr(text, "allocated twice"));
    unlink(log);
    cleanup(&d);
}

/* A counter of /metrics (the first sample named exactly name), or -1. */
static long long metric(struct daemon *d, const char *name)
{
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics"};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", d->port, &req, &resp, NULL), SN_OK);
    char key[128];
    snprintf(key, sizeof(key), "\n%s ", name);
    const char *at = strstr(resp.body, key);
    long long v = at ? strtoll(at + strlen(key), NULL, 10) : -1;
    sn_httpc_response_release(&resp);
    return v;
}

/* Sequential submits, passes after events (sched_event_delay_ms=5) and no
 * timer pass: each pass makes rows (placements, then pending reasons), and
 * those are held in the outbox for the next submit to carry in its commit,
 * so the commits are about one per submit. Before, a pass's rows were
 * committed alone while the next submit waited for that commit: about one
 * more commit per pass (issue 23: 3,283 commits for 3,001 submits and 314
 * passes, 3,015 for 3,001 and 272 with the hold). */
static void pass_rows_ride_with_submits(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    const char *const sets[] = {"sched_event_delay_ms=5", "sched_interval_ms=60000", NULL};
    start(&d, sets);
    setup_tenants(&d);
    long long commits0 = metric(&d, "sn_store_commits_total");
    long long passes0 = metric(&d, "sn_scheduler_cycle_seconds_count");
    assert_true(commits0 >= 0 && passes0 >= 0);
    const int n = 300;
    for (int i = 0; i < n; i++)
        submit(&d, 1, NULL);
    long long commits = metric(&d, "sn_store_commits_total") - commits0;
    long long passes = metric(&d, "sn_scheduler_cycle_seconds_count") - passes0;
    print_message("%d submits: %lld commits, %lld passes\n", n, commits, passes);
    assert_true(passes >= 10); /* the submits took longer than 50 ms */
    assert_true(commits >= n);
    /* Allowed: a pass whose rows no request came for within the hold
     * commits alone, and the writer may begin between the outbox's push
     * and the request's (0 to 3 extra commits for 36 to 41 passes measured
     * here, Debug build); before, 72 to 90% of passes cost a commit of
     * their own (28 for 39 with main's snd). */
    assert_true(commits - n <= passes / 2 + 1);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(lifecycle, reap_daemons),
        cmocka_unit_test_teardown(quotas, reap_daemons),
        cmocka_unit_test_teardown(node_states, reap_daemons),
        cmocka_unit_test_teardown(heartbeats, reap_daemons),
        cmocka_unit_test_teardown(restart_restores, reap_daemons),
        cmocka_unit_test_teardown(broken_invariant_refused, reap_daemons),
        cmocka_unit_test_teardown(pass_rows_ride_with_submits, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
