/*
 * Per-GPU power caps end to end (issue 27 item 5; lib/control/power_caps.c,
 * cmd/sn-agent/power_caps.c): a real snd (power_util_pct=50,
 * power_cap_policy=fit) and real sn-agents (sim backend) for the four
 * servers of sn00 on tests/specs/power/feed-tight-64.yaml (good-64 with
 * 50 A rack feeds: each rack's jobs have 28,752 - 22,084 = 6,668 W of room;
 * a GPU is planned at 0.5 x 700 = 350 W). Worked by hand:
 *  - one 8-GPU job: at TDP 5,600 W fits: no caps (GET /v1/gpus/{gpu}
 *    power_cap_w null), the sim telemetry's enforced limit is the TDP;
 *  - a second 8-GPU job lands on the same rack (5,600 W planned fits):
 *    at TDP 11,200 W does not, so every GPU of both jobs gets
 *    700 x 6,668 / 11,200 = 416.75 -> 416 W in the heartbeat answer; the
 *    agents set it and report it (power_cap_applied_w 416), their
 *    telemetry shows enforced.power.limit 416 W (DCGM_FI_DEV_POWER_MGMT_LIMIT),
 *    /metrics has sn_power_cap_watts{...,kind="applied"} 416, and snd
 *    audited "power cap set: 416 W" for the GPU;
 *  - the first job cancelled, the rack fits at TDP again: the second job's
 *    GPUs go back to their default limit (700 W in telemetry) and the
 *    clearing is audited;
 *  - the same with nvidia-smi agents (a stand-in script that logs every
 *    `-pl` call, answers power.default_limit 700.00 and otherwise prints a
 *    captured CSV): the first job's node runs `-i I -pl 416` for its GPUs,
 *    and, once the other job is cancelled, reads the default limit and runs
 *    `-pl 700`.
 */
#include "snd_harness.h"

#include <stdio.h>

static pid_t agents[4];

static int reap_all(void **state)
{
    for (int i = 0; i < 4; i++)
        stop_agent_pid(&agents[i]);
    return reap_daemons(state);
}

static long long submit(struct daemon *d)
{
    const char *body =
        "{\"name\":\"capped\",\"gpus\":8,\"tenant\":\"acme\",\"command\":\"sleep 60\"}";
    json_t *j = NULL;
    assert_int_equal(call(d, "POST", "/v1/jobs", d->admin, body, NULL, &j), 201);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* good-64: 8 GPUs per server, 4 servers per supernode. */
static void gpu_name(long long g, char *out, size_t cap)
{
    snprintf(out, cap, "sn%02lld-t%02lld-gpu%lld", g / 32, g % 32 / 8, g % 8);
}

static long long first_gpu(struct daemon *d, long long id)
{
    json_t *j = wait_job(d, id, "running");
    long long g = json_integer_value(json_array_get(json_object_get(j, "allocation"), 0));
    json_decref(j);
    return g;
}

/* GET /v1/gpus/NAME's field (-1: null). */
static long long gpu_field(struct daemon *d, const char *gpu, const char *field)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/gpus/%s", gpu);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    json_t *v = json_object_get(j, field);
    assert_non_null(v);
    long long x = json_is_null(v) ? -1 : json_integer_value(v);
    json_decref(j);
    return x;
}

/* The enforced power limit in the GPU's latest telemetry (-1: none yet). */
static double telemetry_limit(struct daemon *d, const char *gpu)
{
    char path[128];
    snprintf(path, sizeof(path), "/v1/telemetry/gpus/%s", gpu);
    json_t *j = NULL;
    if (call(d, "GET", path, d->admin, NULL, NULL, &j) != 200) {
        json_decref(j);
        return -1;
    }
    json_t *v =
        json_object_get(json_object_get(json_object_get(j, "metrics"), "power_limit"), "value");
    double x = v ? json_number_value(v) : -1;
    json_decref(j);
    return x;
}

/* Polls (10 s) until GPU gpu's applied cap is want (-1: none) and its
 * telemetry's enforced limit is limit_w. */
static void wait_cap(struct daemon *d, const char *gpu, long long want, double limit_w)
{
    long long got = -2;
    double lim = -2;
    for (int k = 0; k < 200; k++) {
        got = gpu_field(d, gpu, "power_cap_applied_w");
        lim = telemetry_limit(d, gpu);
        if (got == want && lim == limit_w)
            return;
        pause_ms(50);
    }
    fail_msg("%s: power_cap_applied_w %lld (want %lld), telemetry power_limit %g (want %g)", gpu,
             got, want, lim, limit_w);
}

static int audit_rows(struct daemon *d, const char *target, const char *detail)
{
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", "/v1/audit?limit=1000", d->admin, NULL, NULL, &j), 200);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "items"), i, e)
    {
        const char *t = json_string_value(json_object_get(e, "target"));
        const char *x = json_string_value(json_object_get(e, "detail"));
        n += t && x && strcmp(t, target) == 0 && strstr(x, detail) != NULL;
    }
    json_decref(j);
    return n;
}

/* Audit rows are written after the heartbeat's answer: polls (2 s). */
static int audit_count(struct daemon *d, const char *target, const char *detail)
{
    int n = 0;
    for (int k = 0; k < 40 && !(n = audit_rows(d, target, detail)); k++)
        pause_ms(50);
    return n;
}

static void rack_budget_forces_caps(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"power_util_pct=50", "power_cap_policy=fit", "sched_event_delay_ms=0",
                          "sched_interval_ms=50", NULL};
    start(&d, sets);
    setup_tenants(&d);
    for (int i = 0; i < 4; i++) {
        char node[32];
        snprintf(node, sizeof(node), "sn00-t%02d", i);
        agents[i] = spawn_sim_agent(&d, node, harness_spec);
    }
    char ga[32], gb[32];
    long long a = submit(&d);
    gpu_name(first_gpu(&d, a), ga, sizeof(ga));
    assert_int_equal(strncmp(ga, "sn00-", 5), 0);
    wait_cap(&d, ga, -1, 700); /* 5,600 W at TDP fits: no cap */
    assert_int_equal(gpu_field(&d, ga, "power_cap_w"), -1);

    long long b = submit(&d);
    gpu_name(first_gpu(&d, b), gb, sizeof(gb));
    assert_int_equal(strncmp(gb, "sn00-", 5), 0); /* the same rack */
    assert_int_equal(gpu_field(&d, ga, "power_cap_w"), 416);
    wait_cap(&d, ga, 416, 416);
    wait_cap(&d, gb, 416, 416);
    struct sn_httpc_request req = {.method = "GET", .path = "/metrics", .timeout_ms = 5000};
    struct sn_httpc_response resp;
    struct sn_error err = {0};
    assert_int_equal(sn_httpc_do("127.0.0.1", d.port, &req, &resp, &err), SN_OK);
    char line[128];
    snprintf(line, sizeof(line), "sn_power_cap_watts{gpu=\"%s\",kind=\"applied\"} 416\n", ga);
    assert_non_null(strstr(resp.body, line));
    snprintf(line, sizeof(line), "sn_power_cap_watts{gpu=\"%s\",kind=\"planned\"} 416\n", gb);
    assert_non_null(strstr(resp.body, line));
    sn_httpc_response_release(&resp);
    assert_int_equal(audit_count(&d, ga, "power cap set: 416 W (was 0 W"), 1);

    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/cancel", a);
    assert_int_equal(call(&d, "POST", path, d.admin, "{}", NULL, NULL), 200);
    wait_cap(&d, gb, -1, 700); /* the rack fits at TDP again: back to the default */
    assert_int_equal(gpu_field(&d, gb, "power_cap_w"), -1);
    assert_int_equal(audit_count(&d, gb, "power cap cleared (was 416 W)"), 1);
    for (int i = 0; i < 4; i++)
        stop_agent_pid(&agents[i]);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

static bool file_has(const char *path, const char *what)
{
    static char buf[65536];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return strstr(buf, what) != NULL;
}

static void wait_file(const char *path, const char *what)
{
    for (int k = 0; k < 200 && !file_has(path, what); k++)
        pause_ms(50);
    if (!file_has(path, what))
        fail_msg("%s: no '%s'", path, what);
}

static void smi_agents_run_pl(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"power_util_pct=50", "power_cap_policy=fit", "sched_event_delay_ms=0",
                          "sched_interval_ms=50", NULL};
    start(&d, sets);
    setup_tenants(&d);
    char csv[1024], script[600], cmd[700], logs[4][600];
    sn_test_path(csv, sizeof(csv), "tests/data/telemetry/smi_query_units.csv");
    for (int i = 0; i < 4; i++) {
        snprintf(script, sizeof(script), "%s/smi-%d.sh", d.dir, i);
        snprintf(logs[i], sizeof(logs[i]), "%s/smi-%d.log", d.dir, i);
        FILE *f = fopen(script, "w");
        assert_non_null(f);
        fprintf(f,
                "case \"$*\" in\n"
                "*-pl*) echo \"$*\" >> '%s'; echo \"Power limit for GPU $2 was set.\" ;;\n"
                "*power.default_limit*) echo \"$*\" >> '%s'; echo 700.00 ;;\n"
                "*) cat '%s' ;;\n"
                "esac\n",
                logs[i], logs[i], csv);
        fclose(f);
        snprintf(cmd, sizeof(cmd), "sh %s", script);
        char node[32];
        snprintf(node, sizeof(node), "sn00-t%02d", i);
        const char *extra[] = {"--backend", "nvidia-smi", "--smi-command", cmd, NULL};
        agents[i] = spawn_sim_agent_with(&d, node, harness_spec, extra);
    }
    long long a = submit(&d), b = submit(&d);
    long long ga = first_gpu(&d, a), gb = first_gpu(&d, b);
    assert_int_equal(ga / 32, gb / 32);
    char line[64];
    snprintf(line, sizeof(line), "-i %lld -pl 416", ga % 8);
    wait_file(logs[ga % 32 / 8], line);
    char name[32];
    gpu_name(ga, name, sizeof(name));
    for (int k = 0; k < 100 && gpu_field(&d, name, "power_cap_applied_w") != 416; k++)
        pause_ms(50);
    assert_int_equal(gpu_field(&d, name, "power_cap_applied_w"), 416);
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/cancel", a);
    assert_int_equal(call(&d, "POST", path, d.admin, "{}", NULL, NULL), 200);
    snprintf(line, sizeof(line), "-i %lld -pl 700", gb % 8);
    wait_file(logs[gb % 32 / 8], line);
    assert_true(file_has(logs[gb % 32 / 8], "--query-gpu=power.default_limit"));
    for (int i = 0; i < 4; i++)
        stop_agent_pid(&agents[i]);
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
}

int main(void)
{
    harness_spec = "tests/specs/power/feed-tight-64.yaml";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(rack_budget_forces_caps, reap_all),
        cmocka_unit_test_teardown(smi_agents_run_pl, reap_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
