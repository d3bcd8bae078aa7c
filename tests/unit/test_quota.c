/*
 * Quotas and limits end to end: a real snd, and a real sn-agent for the job
 * the quota change lets start, on tests/data/specs/pools-4sn.yaml (sn00,
 * sn01 in the mixed pool "shared", sn02, sn03 in the dedicated pool
 * "training"; 32 GPUs per supernode). Covered:
 *  - a tenant's per-supernode quota (PUT /v1/tenants/acme/limits) holds its
 *    third job with reason quota-supernode and the detail naming the limit
 *    ("quota: tenant acme per-supernode 16 of 16 GPUs on sn00"), while
 *    another tenant still gets room in the same supernodes;
 *  - the per-job cap refuses a larger job with 422 over_quota naming gpus,
 *    and the walltime cap names time_limit_s;
 *  - raising the limit takes effect without a restart: the held job starts
 *    and its agent launches it;
 *  - a pool quota (PUT /v1/tenants/acme/quotas/training) holds a job with
 *    reason quota and its detail; GET /v1/quotas reports the GPUs used;
 *  - GET /v1/pools reports each pool's supernodes, GPUs and GPUs used;
 *  - the limits survive a restart of snd;
 *  - spares: with 8 spare GPUs per supernode a one_supernode job of 32 is
 *    refused (422 naming one_supernode); a failed GPU of a running job is
 *    swapped for a spare of the same supernode, the job keeps running as
 *    run 1 (event "replaced") and the agents launch every rank of it on the
 *    new set;
 *  - borrow and reclaim (pool_borrow=training:shared): with training full
 *    a preemptible 64-GPU training job runs on shared's two idle (mixed)
 *    supernodes, and a 32-GPU shared job takes them back (the borrower is
 *    preempted);
 *  - oversell: a job asking 20 host cores per GPU (160 on a 112-core
 *    server) waits; with cpu_oversell_pct=200 (snd restarted) it runs, and
 *    the restart restores the replaced job on its swapped set
 *    (sn_sched_restore: its group spans servers).
 */
#include "snd_harness.h"

#include <sys/stat.h>

#define SPEC "tests/data/specs/pools-4sn.yaml"

static const char *const FAST[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};

static pid_t agent_on(struct daemon *d, const char *node)
{
    return spawn_sim_agent(d, node, SPEC);
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

static long long submit(struct daemon *d, const char *tenant, int gpus, const char *pool,
                        const char *command)
{
    char body[1500];
    snprintf(body, sizeof(body),
             "{\"name\":\"q\",\"gpus\":%d,\"tenant\":\"%s\",\"pool\":\"%s\",\"group_gpus\":8,"
             "\"time_limit_s\":3600,"
             "\"command\":\"%s\"}",
             gpus, tenant, pool, command);
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, body, NULL, &j);
    if (s != 201)
        fail_msg("submit %s: %d", body, s);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static json_t *get_job(struct daemon *d, long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    return j;
}

/* Polls until the job is pending with detail want (up to 30 s). */
static void wait_detail(struct daemon *d, long long id, const char *reason, const char *want)
{
    for (int i = 0; i < 1500; i++) {
        json_t *j = get_job(d, id);
        const char *r = json_string_value(json_object_get(j, "pending_reason"));
        const char *x = json_string_value(json_object_get(j, "pending_detail"));
        bool ok = r && x && strcmp(r, reason) == 0 && strcmp(x, want) == 0;
        if (i == 1499)
            fail_msg("job %lld: reason %s detail %s, want %s / %s", id, r ? r : "-", x ? x : "-",
                     reason, want);
        json_decref(j);
        if (ok)
            return;
        poll(NULL, 0, 20);
    }
}

/* Polls until the job waits with that reason (up to 30 s). */
static void wait_detail_reason(struct daemon *d, long long id, const char *reason)
{
    for (int i = 0; i < 1500; i++) {
        json_t *j = get_job(d, id);
        const char *r = json_string_value(json_object_get(j, "pending_reason"));
        bool ok = r && strcmp(r, reason) == 0;
        json_decref(j);
        if (ok)
            return;
        poll(NULL, 0, 20);
    }
    fail_msg("job %lld never waited for %s", id, reason);
}

static const char *first_node(json_t *j)
{
    return json_string_value(json_array_get(json_object_get(j, "nodes"), 0));
}

static void limits_and_quotas(void **state)
{
    (void)state;
    struct daemon d;
    harness_spec = SPEC;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    expect(&d, 200, "PUT", "/v1/tenants/acme/limits", d.admin,
           "{\"gpus_per_supernode\":16,\"max_job_gpus\":32,\"max_walltime_s\":7200}");
    expect_error(&d, 400, "PUT", "/v1/tenants/acme/limits", d.admin, "{\"max_job_gpu\":3}",
                 "invalid_field", "max_job_gpu");
    expect_error(&d, 404, "PUT", "/v1/tenants/nobody/limits", d.admin, "{}", "not_found", NULL);
    long long a1 = submit(&d, "acme", 16, "shared", "sleep 300");
    json_t *j = wait_job(&d, a1, "running");
    assert_int_equal(strncmp(first_node(j), "sn00-", 5), 0);
    json_decref(j);
    long long a2 = submit(&d, "acme", 16, "shared", "sleep 300");
    j = wait_job(&d, a2, "running");
    assert_int_equal(strncmp(first_node(j), "sn01-", 5), 0);
    json_decref(j);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "echo $SN_NODE > %s/held.$RANK; sleep 300", d.dir);
    long long held = submit(&d, "acme", 8, "shared", cmd);
    wait_detail(&d, held, "quota-supernode",
                "quota: tenant acme per-supernode 16 of 16 GPUs on sn00");
    /* Another tenant still has room in the same mixed supernodes. */
    long long b1 = submit(&d, "beta", 16, "shared", "sleep 300");
    json_decref(wait_job(&d, b1, "running"));
    /* Per-job caps are refused at submit, naming the field. */
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":40,\"tenant\":\"acme\",\"pool\":\"training\",\"time_"
                 "limit_s\":60}",
                 "over_quota", "gpus");
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":8,\"tenant\":\"acme\",\"pool\":\"training\","
                 "\"time_limit_s\":7201}",
                 "over_quota", "time_limit_s");
    /* Lowering a cap below a waiting job is refused and changes nothing. */
    expect_error(&d, 409, "PUT", "/v1/tenants/acme/limits", d.admin,
                 "{\"gpus_per_supernode\":16,\"max_job_gpus\":4}", "quota_below_usage", NULL);
    /* Raising the per-supernode quota takes effect at once: the held job
     * starts (in sn00, beside acme's first job) and its agent launches it. */
    expect(&d, 200, "PUT", "/v1/tenants/acme/limits", d.admin,
           "{\"gpus_per_supernode\":32,\"max_job_gpus\":32,\"max_walltime_s\":7200}");
    j = wait_job(&d, held, "running");
    char node[16];
    snprintf(node, sizeof(node), "%s", first_node(j));
    json_decref(j);
    agent_on(&d, node);
    char path[400], text[64] = "";
    snprintf(path, sizeof(path), "%s/held.0", d.dir);
    for (int i = 0; i < 1500 && !strchr(text, '\n'); i++) {
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(text, sizeof(text), f))
                text[0] = '\0';
            fclose(f);
        }
        poll(NULL, 0, 20);
    }
    text[strcspn(text, "\n")] = '\0';
    assert_string_equal(text, node);
    /* A pool quota holds a job with reason quota. */
    expect(&d, 200, "PUT", "/v1/tenants/acme/quotas/training", d.admin, "{\"gpus\":16}");
    long long t1 = submit(&d, "acme", 16, "training", "sleep 300");
    json_decref(wait_job(&d, t1, "running"));
    long long t2 = submit(&d, "acme", 16, "training", "sleep 300");
    wait_detail(&d, t2, "quota", "quota: tenant acme in pool training holds 16 of 16 GPUs");
    assert_int_equal(call(&d, "GET", "/v1/quotas", d.admin, NULL, NULL, &j), 200);
    json_t *q = json_array_get(json_object_get(j, "items"), 0);
    assert_string_equal(json_string_value(json_object_get(q, "pool")), "training");
    assert_int_equal(json_integer_value(json_object_get(q, "used")), 16);
    json_decref(j);
    assert_int_equal(call(&d, "GET", "/v1/pools", d.admin, NULL, NULL, &j), 200);
    size_t i;
    json_t *p;
    int seen = 0;
    json_array_foreach(json_object_get(j, "items"), i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        long long used = json_integer_value(json_object_get(p, "used"));
        assert_int_equal(json_integer_value(json_object_get(p, "supernodes")), 2);
        assert_int_equal(json_integer_value(json_object_get(p, "gpus")), 64);
        /* The shared counts: every GPU in one state, summing to the pool's
         * GPUs; nothing is cordoned or down here, so busy is used. */
        const json_t *states = json_object_get(p, "gpu_states");
        const char *key;
        json_t *v;
        long long sum = 0;
        json_object_foreach((json_t *)states, key, v) sum += json_integer_value(v);
        assert_int_equal(sum, 64);
        assert_int_equal(json_integer_value(json_object_get(states, "busy")), used);
        if (strcmp(name, "shared") == 0)
            assert_int_equal(used, 16 + 16 + 8 + 16), seen++;
        if (strcmp(name, "training") == 0)
            assert_int_equal(used, 16), seen++;
    }
    assert_int_equal(seen, 2);
    json_decref(j);
    /* The limits survive a restart. */
    assert_int_equal(stop(&d, SIGTERM), 0);
    start(&d, FAST);
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":40,\"tenant\":\"acme\",\"pool\":\"training\",\"time_"
                 "limit_s\":60}",
                 "over_quota", "gpus");
    wait_detail(&d, t2, "quota", "quota: tenant acme in pool training holds 16 of 16 GPUs");
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

static void spares_and_oversell(void **state)
{
    (void)state;
    struct daemon d;
    harness_spec = SPEC;
    make_dir(&d);
    const char *sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                          "spare_gpus_per_supernode=8", NULL};
    start(&d, sets);
    setup_tenants(&d);
    expect_error(&d, 422, "POST", "/v1/jobs", d.admin,
                 "{\"name\":\"x\",\"gpus\":32,\"tenant\":\"acme\",\"pool\":\"training\","
                 "\"one_supernode\":true}",
                 "invalid_shape", "one_supernode");
    char cmd[1200];
    snprintf(
        cmd, sizeof(cmd),
        "echo $SN_NODE $CUDA_VISIBLE_DEVICES > %s/s.$RANK.tmp && mv %s/s.$RANK.tmp %s/s.$RANK; "
        "sleep 300",
        d.dir, d.dir, d.dir);
    long long id = submit(&d, "acme", 24, "training", cmd);
    json_t *j = wait_job(&d, id, "running");
    long long g0 = json_integer_value(json_array_get(json_object_get(j, "allocation"), 0));
    char url[96];
    snprintf(url, sizeof(url), "/v1/gpus/%s-gpu%lld/fail", first_node(j), g0 % 8);
    json_decref(j);
    expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"xid 79\"}");
    j = NULL;
    for (int i = 0; i < 1500; i++) {
        json_decref(j);
        j = get_job(&d, id);
        if (json_integer_value(json_object_get(j, "requeues")) == 1)
            break;
        poll(NULL, 0, 20);
    }
    assert_string_equal(json_string_value(json_object_get(j, "state")), "running");
    assert_int_equal(json_integer_value(json_object_get(j, "requeues")), 1);
    assert_non_null(strstr(json_string_value(json_object_get(j, "detail")), "replaced in place"));
    json_t *alloc = json_object_get(j, "allocation");
    long long sn = g0 / 32;
    size_t i;
    json_t *g;
    json_array_foreach(alloc, i, g)
    {
        assert_int_not_equal(json_integer_value(g), g0);
        assert_int_equal(json_integer_value(g) / 32, sn); /* same supernode */
    }
    /* The agents of its servers launch run 1 on the new set. */
    pid_t agents[4];
    int n_agents = 0;
    json_array_foreach(json_object_get(j, "nodes"), i, g)
    {
        bool seen = false;
        for (size_t k = 0; k < i; k++)
            seen |= strcmp(json_string_value(json_array_get(json_object_get(j, "nodes"), k)),
                           json_string_value(g)) == 0;
        if (!seen && n_agents < 4)
            agents[n_agents++] = agent_on(&d, json_string_value(g));
    }
    json_array_foreach(alloc, i, g)
    {
        long long x = json_integer_value(g);
        char path[400], want[64], got[64] = "";
        snprintf(path, sizeof(path), "%s/s.%zu", d.dir, i);
        snprintf(want, sizeof(want), "sn%02lld-t%02lld %lld\n", x / 32, (x / 8) % 4, x % 8);
        for (int k = 0; k < 1500 && strcmp(got, want) != 0; k++) {
            FILE *f = fopen(path, "r");
            if (f) {
                if (!fgets(got, sizeof(got), f))
                    got[0] = '\0';
                fclose(f);
            }
            if (strcmp(got, want) != 0)
                poll(NULL, 0, 20);
        }
        assert_string_equal(got, want);
    }
    json_decref(j);
    /* Oversell: 20 cores per GPU do not fit a 112-core server at 1:1. */
    const char *heavy_body = "{\"name\":\"heavy\",\"gpus\":8,\"tenant\":\"acme\","
                             "\"pool\":\"shared\",\"group_gpus\":8,\"time_limit_s\":60,"
                             "\"cpu_cores_per_gpu\":20,\"command\":\"sleep 300\"}";
    assert_int_equal(call(&d, "POST", "/v1/jobs", d.admin, heavy_body, NULL, &j), 201);
    long long heavy = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    wait_detail_reason(&d, heavy, "no-supernode-fits");
    for (int k = 0; k < n_agents; k++) {
        kill(agents[k], SIGTERM);
        waitpid(agents[k], NULL, 0);
        track(agents[k], false);
    }
    assert_int_equal(stop(&d, SIGTERM), 0);
    const char *oversold[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                              "spare_gpus_per_supernode=8", "cpu_oversell_pct=200", NULL};
    start(&d, oversold);
    json_decref(wait_job(&d, heavy, "running"));
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

/* Borrow and reclaim: training borrows shared's idle supernodes; a shared
 * job takes them back by preempting the borrower. */
static void borrow_and_reclaim(void **state)
{
    (void)state;
    struct daemon d;
    harness_spec = SPEC;
    make_dir(&d);
    const char *sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                          "preempt_min_runtime_s=0", "pool_borrow=training:shared", NULL};
    start(&d, sets);
    setup_tenants(&d);
    expect(&d, 201, "POST", "/v1/priority-classes", d.admin,
           "{\"name\":\"low\",\"priority\":0,\"preemptible\":true}");
    long long a = submit(&d, "acme", 64, "training", "sleep 300");
    json_decref(wait_job(&d, a, "running"));
    json_t *j = NULL;
    assert_int_equal(call(&d, "POST", "/v1/jobs", d.admin,
                          "{\"name\":\"b\",\"gpus\":64,\"tenant\":\"beta\",\"pool\":\"training\","
                          "\"group_gpus\":8,\"time_limit_s\":60,\"priority_class\":\"low\"}",
                          NULL, &j),
                     201);
    long long b = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    j = wait_job(&d, b, "running");
    const char *node = first_node(j);
    assert_true(strncmp(node, "sn00-", 5) == 0 || strncmp(node, "sn01-", 5) == 0); /* borrowed */
    json_decref(j);
    long long c = submit(&d, "acme", 32, "shared", "sleep 300");
    json_decref(wait_job(&d, c, "running"));
    j = wait_job(&d, b, "requeued");
    char want[64];
    snprintf(want, sizeof(want), "preempted by job %lld", c);
    assert_string_equal(json_string_value(json_object_get(j, "detail")), want);
    json_decref(j);
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(limits_and_quotas, reap_all),
        cmocka_unit_test_teardown(spares_and_oversell, reap_all),
        cmocka_unit_test_teardown(borrow_and_reclaim, reap_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
