/*
 * A job's timeline and goodput through a real snd (examples/demo-cluster.yaml,
 * no agents needed: snd places jobs itself). Covered:
 *  - a job held by its tenant's quota gets a `pending` event naming the
 *    reason and the limit ("quota: tenant acme in pool training holds 8 of 8
 *    GPUs"), once (not once per pass), between `submitted` and `started`;
 *  - per-job goodput (docs/scheduler.md "Goodput"): a cancelled run keeps
 *    all its GPU-seconds (goodput 1); a run interrupted 2 s after its last
 *    checkpoint loses 8 GPUs x the time since that checkpoint, and the
 *    job's goodput is useful / allocated over its runs; the sums survive a
 *    restart of snd.
 */
#include "snd_harness.h"

#define SPEC "examples/demo-cluster.yaml"

static const char *const FAST[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};

/* GET /v1/jobs/{id}{suffix}. */
static json_t *get(struct daemon *d, const char *suffix, long long id)
{
    char path[96];
    snprintf(path, sizeof(path), "/v1/jobs/%lld%s", id, suffix);
    json_t *j = NULL;
    int s = call(d, "GET", path, d->admin, NULL, NULL, &j);
    if (s != 200)
        fail_msg("GET %s: %d", path, s);
    return j;
}

static long long submit(struct daemon *d, const char *name)
{
    char body[200];
    snprintf(body, sizeof(body),
             "{\"name\":\"%s\",\"gpus\":8,\"tenant\":\"acme\",\"command\":"
             "\"sleep 300\"}",
             name);
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, body, NULL, &j);
    if (s != 201)
        fail_msg("submit %s: %d", name, s);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* The job's events until one of kind `kind` is there (polling up to 60 s:
 * the machine may be loaded); returns the page (caller decrefs). */
static json_t *wait_event(struct daemon *d, long long id, const char *kind)
{
    for (int i = 0; i < 3000; i++) {
        json_t *ev = get(d, "/events?limit=100", id);
        size_t k;
        json_t *e;
        json_array_foreach(json_object_get(ev, "items"), k, e)
        {
            if (strcmp(json_string_value(json_object_get(e, "kind")), kind) == 0)
                return ev;
        }
        json_decref(ev);
        poll(NULL, 0, 20);
    }
    fail_msg("job %lld: no '%s' event", id, kind);
    return NULL;
}

static json_t *wait_state(struct daemon *d, long long id, const char *want, long long requeues)
{
    for (int i = 0; i < 3000; i++) {
        json_t *j = get(d, "", id);
        if (strcmp(json_string_value(json_object_get(j, "state")), want) == 0 &&
            json_integer_value(json_object_get(j, "requeues")) >= requeues)
            return j;
        json_decref(j);
        poll(NULL, 0, 20);
    }
    fail_msg("job %lld never %s", id, want);
    return NULL;
}

static double gp(json_t *j, const char *key)
{
    return json_number_value(json_object_get(json_object_get(j, "goodput_gpu_s"), key));
}

static long long event_time(json_t *ev, const char *kind)
{
    size_t k;
    json_t *e;
    long long t = -1;
    json_array_foreach(json_object_get(ev, "items"), k, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "kind")), kind) == 0)
            t = json_integer_value(json_object_get(e, "time_s"));
    }
    return t;
}

static void pending_reasons_and_goodput(void **state)
{
    (void)state;
    struct daemon d;
    harness_spec = SPEC;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    expect(&d, 200, "PUT", "/v1/tenants/acme/quotas/training", d.admin, "{\"gpus\":8}");
    long long a = submit(&d, "holder");
    json_decref(wait_state(&d, a, "running", 0));
    long long b = submit(&d, "held");

    /* The quota holds b: one `pending` event with the reason and the limit. */
    json_t *ev = wait_event(&d, b, "pending");
    size_t k;
    json_t *e;
    int pendings = 0;
    json_array_foreach(json_object_get(ev, "items"), k, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "kind")), "pending") != 0)
            continue;
        pendings++;
        assert_string_equal(json_string_value(json_object_get(e, "message")),
                            "quota: tenant acme in pool training holds 8 of 8 GPUs");
    }
    assert_int_equal(pendings, 1);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(json_object_get(ev, "items"), 0), "kind")),
        "submitted");
    json_decref(ev);
    poll(NULL, 0, 500); /* ten more passes: the reason is not recorded again */
    ev = get(&d, "/events?limit=100", b);
    pendings = 0;
    json_array_foreach(json_object_get(ev, "items"), k, e) pendings +=
        strcmp(json_string_value(json_object_get(e, "kind")), "pending") == 0;
    assert_int_equal(pendings, 1);
    json_decref(ev);

    /* Cancelling a frees the quota: b starts; a's one run kept all its work. */
    char url[96];
    snprintf(url, sizeof(url), "/v1/jobs/%lld/cancel", a);
    expect(&d, 200, "POST", url, d.admin, NULL);
    json_t *j = wait_state(&d, b, "running", 0);
    json_decref(j);
    ev = wait_event(&d, b, "started");
    assert_true(event_time(ev, "pending") <= event_time(ev, "started"));
    json_decref(ev);
    j = get(&d, "", a);
    long long run_s = json_integer_value(json_object_get(j, "end_time_s")) -
                      json_integer_value(json_object_get(j, "start_time_s"));
    assert_near(gp(j, "allocated"), 8.0 * (double)run_s, 1e-6);
    assert_near(gp(j, "lost"), 0, 1e-9);
    if (run_s > 0)
        assert_near(json_number_value(json_object_get(j, "goodput")), 1, 1e-12);
    json_decref(j);

    /* b checkpoints, runs on for 2 s and its server fails: the work since the
     * checkpoint is lost, and only that. */
    poll(NULL, 0, 1100);
    snprintf(url, sizeof(url), "/v1/jobs/%lld/checkpoints", b);
    expect(&d, 200, "POST", url, d.admin, "{\"path\":\"/data/acme/b/step-1\",\"step\":1}");
    j = get(&d, "", b);
    long long ckpt =
        json_integer_value(json_object_get(json_object_get(j, "last_checkpoint"), "time_s"));
    long long start1 = json_integer_value(json_object_get(j, "start_time_s"));
    char node[32];
    snprintf(node, sizeof(node), "%s",
             json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    poll(NULL, 0, 2100);
    snprintf(url, sizeof(url), "/v1/nodes/%s/fail", node);
    expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"psu\"}");
    j = wait_state(&d, b, "running", 1);
    ev = wait_event(&d, b, "interrupted");
    long long lost_at = event_time(ev, "interrupted");
    json_decref(ev);
    assert_int_equal(gp(j, "interrupted_runs"), 1);
    /* the interruption's time is a fraction of a second past its event's */
    double lost = gp(j, "lost");
    assert_true(lost >= 8.0 * (double)(lost_at - ckpt) - 1e-6);
    assert_true(lost <= 8.0 * (double)(lost_at + 1 - ckpt) + 1e-6);
    assert_true(lost >= 8.0);
    assert_true(gp(j, "useful") >= 8.0 * (double)(ckpt - start1) - 1e-6);
    double g = json_number_value(json_object_get(j, "goodput"));
    assert_true(g < 1 && g > 0);
    assert_near(g, gp(j, "useful") / gp(j, "allocated"), 1e-9);
    json_decref(j);

    /* The sums survive a restart of snd. */
    assert_int_equal(stop(&d, SIGTERM), 0);
    start(&d, FAST);
    j = get(&d, "", b);
    assert_int_equal(gp(j, "interrupted_runs"), 1);
    assert_near(gp(j, "lost"), lost, 1e-6);
    json_decref(j);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

/* The pending events of job id (caller decrefs nothing: a count and the
 * last message into last, len). */
static int pending_count(struct daemon *d, long long id, char *last, size_t len)
{
    json_t *ev = get(d, "/events?limit=100", id);
    size_t k;
    json_t *e;
    int n = 0;
    json_array_foreach(json_object_get(ev, "items"), k, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "kind")), "pending") != 0)
            continue;
        n++;
        snprintf(last, len, "%s", json_string_value(json_object_get(e, "message")));
    }
    json_decref(ev);
    return n;
}

/* snd's --set pending_reason_hold_ms reaches the rule: with 0, a reason
 * change is recorded at the pass that gives it. a (96 GPUs) runs; b (64)
 * waits for room (no-supernode-fits: 32 free); a quota of 96 GPUs then
 * binds first (quota): its event comes within 3 s, where snd's default
 * 10 s hold would keep it back. */
static void reason_hold_from_config(void **state)
{
    (void)state;
    static const char *const HOLD0[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                                        "pending_reason_hold_ms=0", NULL};
    struct daemon d;
    harness_spec = SPEC;
    make_dir(&d);
    start(&d, HOLD0);
    setup_tenants(&d);
    long long ids[2];
    const int gpus[2] = {96, 64};
    for (int i = 0; i < 2; i++) {
        char body[200];
        snprintf(body, sizeof(body),
                 "{\"name\":\"j%d\",\"gpus\":%d,\"tenant\":\"acme\",\"command\":\"sleep 300\"}", i,
                 gpus[i]);
        json_t *j = NULL;
        if (call(&d, "POST", "/v1/jobs", d.admin, body, NULL, &j) != 201)
            fail_msg("submit j%d", i);
        ids[i] = json_integer_value(json_object_get(j, "id"));
        json_decref(j);
        if (i == 0)
            json_decref(wait_state(&d, ids[0], "running", 0));
    }
    json_decref(wait_event(&d, ids[1], "pending"));
    char msg[400] = "";
    assert_int_equal(pending_count(&d, ids[1], msg, sizeof(msg)), 1);
    assert_non_null(strstr(msg, "no-supernode-fits"));
    expect(&d, 200, "PUT", "/v1/tenants/acme/quotas/training", d.admin, "{\"gpus\":96}");
    int n = 1;
    for (int i = 0; i < 150 && n < 2; i++) {
        poll(NULL, 0, 20);
        n = pending_count(&d, ids[1], msg, sizeof(msg));
    }
    assert_int_equal(n, 2);
    assert_non_null(strstr(msg, "quota: tenant acme in pool training holds 96 of 96 GPUs"));
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(pending_reasons_and_goodput, reap_daemons),
        cmocka_unit_test_teardown(reason_hold_from_config, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
