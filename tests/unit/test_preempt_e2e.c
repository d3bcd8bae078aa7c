/*
 * Cooperative preemption end to end (issue 27 item 3, docs/scheduler.md
 * "Cooperative preemption"): a real snd (preempt_grace_s set) and a real
 * sn-agent (sim backend) on examples/std-unit-64.yaml (64 GPUs, 8 servers).
 * A filler job of 56 GPUs (not preemptible) leaves one server to job A
 * (class scav, preemptible, 8 GPUs), whose ranks run under the agent; a
 * job of class urgent needing 8 GPUs comes. Covered:
 *  - checkpoint_then_evict: A becomes "preempting" (GET /v1/jobs/{id}:
 *    preempting.by = the urgent job, a deadline), the urgent job waits;
 *    every rank receives SIGTERM and finds the deadline in
 *    $SN_PREEMPT_DEADLINE_FILE; rank 0 reports a checkpoint with `sn
 *    checkpoint` (its job token); snd then evicts A (requeued, event
 *    "preempted", last_eviction.how "checkpoint", 0 GPU-s lost since the
 *    checkpoint was just made) and the urgent job starts; /metrics counts
 *    the eviction;
 *  - deadline_evicts: the ranks ignore the signal and never checkpoint: A
 *    is evicted when the grace (3 s) runs out, with the work since its
 *    start lost (8 GPUs x its run time) in last_eviction and /metrics;
 *  - drain_checkpoint_requeues (drain_grace_s set, preempt_grace_s not): an
 *    operator drains A's server (POST /v1/nodes/{node}/drain); A becomes
 *    preempting (by 0, drain "operator"; `sn job show`: "drained
 *    (operator)"), its ranks get SIGTERM and the deadline, rank 0's `sn
 *    checkpoint` evicts it: requeued with its last checkpoint and 0 GPU-s
 *    lost (`sn job show` last_eviction), the server drained.
 * Waits poll with deadlines of tens of seconds.
 */
#include "job_harness.h"
#include "snd_harness.h"

static const char *built(const char *name)
{
    static char path[2][1024];
    static int k;
    const char *b = getenv("SN_BUILD_DIR");
    k ^= 1;
    snprintf(path[k], sizeof(path[k]), "%s/%s", b ? b : "..", name);
    return path[k];
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

static json_t *get_job(struct daemon *d, long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    return j;
}

static long long submit_class(struct daemon *d, int gpus, const char *cls, const char *command)
{
    json_t *body = json_pack("{s:s,s:i,s:s,s:s}", "name", "pre", "gpus", gpus, "tenant", "acme",
                             "command", command);
    if (cls)
        json_object_set_new(body, "priority_class", json_string(cls));
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

/* Polls job id until its "preempting" is an object; returns the job. */
static json_t *wait_preempting(struct daemon *d, long long id)
{
    for (int i = 0; i < JOB_WAIT_STEPS; i++) {
        json_t *j = get_job(d, id);
        if (json_is_object(json_object_get(j, "preempting")))
            return j;
        json_decref(j);
        poll(NULL, 0, 20);
    }
    fail_msg("job %lld never preempting", id);
    return NULL;
}

static bool read_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(out, 1, len - 1, f);
    fclose(f);
    out[n] = '\0';
    return n > 0 && out[n - 1] == '\n';
}

static void wait_line(const char *path, char *out, size_t len)
{
    for (int i = 0; i < JOB_WAIT_STEPS; i++) {
        if (read_line(path, out, len))
            return;
        poll(NULL, 0, 20);
    }
    fail_msg("%s never written", path);
}

/* The value of the metric line that starts with line_start (name with
 * labels as printed, then a space), or -1. */
static double metric(struct daemon *d, const char *line_start)
{
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics", .token = d->admin};
    struct sn_httpc_response resp;
    assert_int_equal(sn_httpc_do("127.0.0.1", d->port, &req, &resp, NULL), SN_OK);
    const char *p = resp.body;
    while ((p = strstr(p, line_start)) && p != resp.body && p[-1] != '\n')
        p++; /* not at a line's start: a HELP line names it too */
    double v = p ? strtod(p + strlen(line_start), NULL) : -1;
    sn_httpc_response_release(&resp);
    return v;
}

/* A directory for the ranks' marker files (the command names it before
 * snd's own exists). */
static void marks_dir(char *out, size_t len)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, len, "%s/sn-preempt-XXXXXX", base ? base : "/tmp");
    assert_non_null(mkdtemp(out));
    chmod(out, 0777);
}

/* snd, tenants, the classes, the filler, A (its command) running under
 * an agent on its server. */
static long long setup(struct daemon *d, const char *grace, const char *command, long long *filler,
                       char *node, size_t node_len)
{
    const char *sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                          "preempt_min_runtime_s=0", grace, NULL};
    harness_spec = "examples/std-unit-64.yaml";
    make_dir(d);
    start(d, sets);
    setup_tenants(d);
    expect(d, 201, "POST", "/v1/priority-classes", d->admin,
           "{\"name\":\"scav\",\"priority\":0,\"preemptible\":true}");
    expect(d, 201, "POST", "/v1/priority-classes", d->admin,
           "{\"name\":\"urgent\",\"priority\":100}");
    *filler = submit_class(d, 56, NULL, "sleep 300");
    json_t *f = wait_state(d, *filler, "running");
    json_decref(f);
    long long a = submit_class(d, 8, "scav", command);
    json_t *j = wait_state(d, a, "running");
    snprintf(node, node_len, "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    spawn_sim_agent(d, node, "examples/std-unit-64.yaml");
    return a;
}

static void checkpoint_then_evict(void **state)
{
    (void)state;
    struct daemon d;
    char cmd[3000], node[32], path[400], text[200], keep[256];
    marks_dir(keep, sizeof(keep));
    /* Every rank: marks its start; on SIGTERM writes the deadline it finds
     * in $SN_PREEMPT_DEADLINE_FILE; rank 0 then reports a checkpoint with
     * the job token. None exits on the signal. */
    snprintf(cmd, sizeof(cmd),
             "got=0; trap 'got=1' TERM; echo up > %s/up.$RANK; i=0; while [ $i -lt 1500 ]; do "
             "if [ $got = 1 ]; then got=2; cat \"$SN_PREEMPT_DEADLINE_FILE\" > %s/sig.$RANK.tmp; "
             "mv %s/sig.$RANK.tmp %s/sig.$RANK; if [ $RANK = 0 ]; then unset SN_TOKEN; "
             "%s checkpoint --path /data/acme/ckpt/jit --step 5 > %s/ck.out 2>&1; fi; fi; "
             "sleep 0.2; i=$((i+1)); done",
             keep, keep, keep, keep, built("sn"), keep);
    long long filler;
    long long a = setup(&d, "preempt_grace_s=120", cmd, &filler, node, sizeof(node));
    for (int r = 0; r < 8; r++) {
        snprintf(path, sizeof(path), "%s/up.%d", keep, r);
        wait_line(path, text, sizeof(text));
    }
    long long b = submit_class(&d, 8, "urgent", "sleep 300");
    json_t *j = wait_preempting(&d, a);
    json_t *p = json_object_get(j, "preempting");
    assert_int_equal(json_integer_value(json_object_get(p, "by")), b);
    assert_string_equal(json_string_value(json_object_get(p, "signal")), "TERM");
    long long since = json_integer_value(json_object_get(p, "since_s"));
    long long deadline = json_integer_value(json_object_get(p, "deadline_s"));
    assert_int_equal(deadline, since + 120);
    json_decref(j);
    j = get_job(&d, b);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "pending");
    json_decref(j);
    /* Every rank got the signal and read the deadline. */
    char want[32];
    snprintf(want, sizeof(want), "%lld\n", deadline);
    for (int r = 0; r < 8; r++) {
        snprintf(path, sizeof(path), "%s/sig.%d", keep, r);
        wait_line(path, text, sizeof(text));
        assert_string_equal(text, want);
    }
    /* Rank 0's checkpoint evicts A; the urgent job starts. */
    j = wait_state(&d, a, "requeued");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "last_checkpoint"), "path")),
        "/data/acme/ckpt/jit");
    json_t *e = json_object_get(j, "last_eviction");
    assert_string_equal(json_string_value(json_object_get(e, "how")), "checkpoint");
    assert_true(json_number_value(json_object_get(e, "lost_gpu_s")) == 0);
    assert_true(json_integer_value(json_object_get(e, "time_s")) >= since);
    assert_true(json_integer_value(json_object_get(e, "time_s")) < deadline);
    assert_non_null(
        strstr(json_string_value(json_object_get(j, "detail")), "after its checkpoint"));
    assert_true(json_is_null(json_object_get(j, "preempting")));
    json_decref(j);
    j = wait_state(&d, b, "running");
    json_decref(j);
    assert_true(metric(&d, "sn_preempt_evictions_total{how=\"checkpoint\"} ") == 1);
    double sig = metric(&d, "sn_preempt_signals_total ");
    if (sig != 1)
        fail_msg("signals %g (dir %s)", sig, d.dir);
    /* sn job show prints the preemption's record. */
    char show[2048];
    snprintf(show, sizeof(show),
             "SN_SERVER=http://127.0.0.1:%u SN_TOKEN=%s %s job show %lld > %s/show.out 2>&1",
             d.port, d.admin, built("sn"), a, keep);
    assert_int_equal(system(show), 0);
    snprintf(path, sizeof(path), "%s/show.out", keep);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char out[8192];
    size_t n = fread(out, 1, sizeof(out) - 1, f);
    fclose(f);
    out[n] = '\0';
    assert_non_null(strstr(out, "last_eviction    checkpoint at"));
    assert_non_null(strstr(out, "last_checkpoint  /data/acme/ckpt/jit (step 5"));
    assert_non_null(strstr(out, "preempting"));
    reap_all(NULL);
    char rm[700];
    snprintf(rm, sizeof(rm), "rm -rf '%s' '%s'", d.dir, keep);
    assert_int_equal(system(rm), 0);
}

static void deadline_evicts(void **state)
{
    (void)state;
    struct daemon d;
    char node[32], keep[256], cmd[1024], path[400], text[64];
    marks_dir(keep, sizeof(keep));
    /* The ranks ignore the signal (set before they say they are up). */
    snprintf(cmd, sizeof(cmd), "trap '' TERM; echo up > %s/up.$RANK; sleep 300", keep);
    long long filler;
    long long a = setup(&d, "preempt_grace_s=3", cmd, &filler, node, sizeof(node));
    for (int r = 0; r < 8; r++) {
        snprintf(path, sizeof(path), "%s/up.%d", keep, r);
        wait_line(path, text, sizeof(text));
    }
    json_t *j = get_job(&d, a);
    long long start_s = json_integer_value(json_object_get(j, "start_time_s"));
    json_decref(j);
    long long b = submit_class(&d, 8, "urgent", "sleep 300");
    j = wait_preempting(&d, a);
    long long since =
        json_integer_value(json_object_get(json_object_get(j, "preempting"), "since_s"));
    json_decref(j);
    j = wait_state(&d, a, "requeued");
    json_t *e = json_object_get(j, "last_eviction");
    if (strcmp(json_string_value(json_object_get(e, "how")), "deadline") != 0)
        fail_msg("evicted: %s (dir %s)", json_string_value(json_object_get(j, "detail")), d.dir);
    long long t = json_integer_value(json_object_get(e, "time_s"));
    assert_true(t >= since + 3);
    /* No checkpoint: the whole run is lost, 8 GPUs x (eviction - start). */
    assert_true(json_number_value(json_object_get(e, "lost_gpu_s")) == 8.0 * (double)(t - start_s));
    json_decref(j);
    j = wait_state(&d, b, "running");
    json_decref(j);
    assert_true(metric(&d, "sn_preempt_evictions_total{how=\"deadline\"} ") == 1);
    assert_true(metric(&d, "sn_preempt_lost_gpu_seconds_total{how=\"deadline\"} ") ==
                8.0 * (double)(t - start_s));
    reap_all(NULL);
    char rm[700];
    snprintf(rm, sizeof(rm), "rm -rf '%s' '%s'", d.dir, keep);
    assert_int_equal(system(rm), 0);
}

static void drain_checkpoint_requeues(void **state)
{
    (void)state;
    struct daemon d;
    char cmd[3000], node[32], path[400], text[200], keep[256];
    marks_dir(keep, sizeof(keep));
    /* As in checkpoint_then_evict: on SIGTERM every rank writes the
     * deadline it finds, rank 0 reports a checkpoint; none exits. */
    snprintf(cmd, sizeof(cmd),
             "got=0; trap 'got=1' TERM; echo up > %s/up.$RANK; i=0; while [ $i -lt 1500 ]; do "
             "if [ $got = 1 ]; then got=2; cat \"$SN_PREEMPT_DEADLINE_FILE\" > %s/sig.$RANK.tmp; "
             "mv %s/sig.$RANK.tmp %s/sig.$RANK; if [ $RANK = 0 ]; then unset SN_TOKEN; "
             "%s checkpoint --path /data/acme/ckpt/drain --step 7 > %s/ck.out 2>&1; fi; fi; "
             "sleep 0.2; i=$((i+1)); done",
             keep, keep, keep, keep, built("sn"), keep);
    long long filler;
    long long a = setup(&d, "drain_grace_s=120", cmd, &filler, node, sizeof(node));
    for (int r = 0; r < 8; r++) {
        snprintf(path, sizeof(path), "%s/up.%d", keep, r);
        wait_line(path, text, sizeof(text));
    }
    char route[96];
    snprintf(route, sizeof(route), "/v1/nodes/%s/drain", node);
    expect(&d, 200, "POST", route, d.admin, "{\"reason\":\"firmware update\"}");
    json_t *j = wait_preempting(&d, a);
    json_t *p = json_object_get(j, "preempting");
    assert_int_equal(json_integer_value(json_object_get(p, "by")), 0);
    assert_string_equal(json_string_value(json_object_get(p, "drain")), "operator");
    long long since = json_integer_value(json_object_get(p, "since_s"));
    long long deadline = json_integer_value(json_object_get(p, "deadline_s"));
    assert_int_equal(deadline, since + 120);
    json_decref(j);
    char want[32];
    snprintf(want, sizeof(want), "%lld\n", deadline);
    for (int r = 0; r < 8; r++) {
        snprintf(path, sizeof(path), "%s/sig.%d", keep, r);
        wait_line(path, text, sizeof(text));
        assert_string_equal(text, want);
    }
    j = wait_state(&d, a, "requeued");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "last_checkpoint"), "path")),
        "/data/acme/ckpt/drain");
    json_t *e = json_object_get(j, "last_eviction");
    assert_string_equal(json_string_value(json_object_get(e, "how")), "checkpoint");
    assert_true(json_number_value(json_object_get(e, "lost_gpu_s")) == 0);
    assert_true(json_integer_value(json_object_get(e, "time_s")) < deadline);
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")),
                           "drained: requeued after its checkpoint"));
    json_decref(j);
    snprintf(route, sizeof(route), "/v1/nodes/%s", node);
    j = NULL;
    assert_int_equal(call(&d, "GET", route, d.admin, NULL, NULL, &j), 200);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "drained");
    json_decref(j);
    assert_true(metric(&d, "sn_preempt_drain_signals_total ") == 1);
    assert_true(metric(&d, "sn_preempt_evictions_total{how=\"checkpoint\"} ") == 1);
    char show[2048];
    snprintf(show, sizeof(show),
             "SN_SERVER=http://127.0.0.1:%u SN_TOKEN=%s %s job show %lld > %s/show.out 2>&1",
             d.port, d.admin, built("sn"), a, keep);
    assert_int_equal(system(show), 0);
    snprintf(path, sizeof(path), "%s/show.out", keep);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char out[8192];
    size_t n = fread(out, 1, sizeof(out) - 1, f);
    fclose(f);
    out[n] = '\0';
    assert_non_null(strstr(out, "last_eviction    checkpoint at"));
    assert_non_null(strstr(out, "last_checkpoint  /data/acme/ckpt/drain (step 7"));
    reap_all(NULL);
    char rm[700];
    snprintf(rm, sizeof(rm), "rm -rf '%s' '%s'", d.dir, keep);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(checkpoint_then_evict, reap_all),
        cmocka_unit_test_teardown(deadline_evicts, reap_all),
        cmocka_unit_test_teardown(drain_checkpoint_requeues, reap_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
