/*
 * Rack fabric health end to end (issue 26 item 3): a real snd on an
 * NVL72-shaped cluster (tests/specs/fabric/nvl72-x4.yaml: four 18-server
 * NVLink domains of 4 GPUs per server, 18 switch chips each in 9 trays of
 * 2, GPU port k to chip k) and real sim agents pushing `nvidia-smi nvlink
 * -s` batches (--fault nvlink-down=L,L.../A-B). Covered:
 *  - a whole switch tray: two servers of nvl00 both report ports 2 and 3
 *    of every GPU inactive, and no report of nvl00-nvsw02/03 is active:
 *    snd's health pass makes it ONE nvswitch-down finding on the tray
 *    (shown under "fabric" in GET /v1/gpus/{gpu} with what the domain
 *    keeps, and in `sn gpus -o wide`) and cordons none of their GPUs;
 *  - nvl01-t00 reports port 5 of its GPUs inactive and nvl01-t01 port 7,
 *    each showing the other's port working: the GPUs' own links
 *    (nvlink-inactive) cordon those 8 GPUs, and nvl01 is left with 64
 *    usable GPUs. The order the agents' first reports arrive in does not
 *    matter: a link no other server reports on yet is
 *    nvlink-inactive-unconfirmed (weight 0, no cordon) until one does;
 *  - a compute tray lost: nvl02-t05's agent reports, then goes silent
 *    past heartbeat_timeout_s: the node is down, and GET
 *    /v1/cluster/topology shows nvl02 with 68 usable GPUs and the node
 *    with its reason;
 *  - five trays of nvl03 lost (ports 0-9 on two servers): nvl03 keeps 8 of
 *    18 chips, below health_min_nvlink_share_pct (50): one
 *    nvlink-domain-degraded decision limits nvl03 to single-server jobs
 *    (GET /v1/cluster/topology: single_server_only with the reason naming
 *    the trays; one audit row), none of its GPUs cordoned (72 usable);
 *  - placement: a 72-GPU job runs on nvl00 (a lost tray keeps the whole
 *    domain), a 68-GPU job on nvl02 and on none of nvl02-t05's GPUs, a
 *    second 72-GPU job waits with pending reason nvlink-domain and a
 *    detail naming nvl03 (only nvl03's 72 would hold it, across servers),
 *    a 64-GPU job runs on nvl01, then a 4-GPU job on nvl03 (one server),
 *    and an 8-GPU job (two servers) waits;
 *  - the trays back (nvl03's agents restarted without the fault): the
 *    next pass lifts the limit by itself (single_server_only null, a
 *    "health lift domain" audit row), and the 8-GPU job starts on two
 *    nvl03 servers;
 *  - nvlink -e (--fault nvlink-errors=L): a rising replay counter on port
 *    4 cordons that server's GPUs (nvlink-errors), flat counters do not.
 * Waits poll with deadlines; the only fixed pauses are the polls' steps.
 */
#include "job_harness.h"
#include "snd_harness.h"

#define SPEC "tests/specs/fabric/nvl72-x4.yaml"

static long long submit(struct daemon *d, int gpus)
{
    char body[160];
    snprintf(body, sizeof(body),
             "{\"name\":\"nvl%d\",\"gpus\":%d,\"tenant\":\"acme\",\"pool\":\"training\"}", gpus,
             gpus);
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin, body, NULL, &j);
    if (s != 201)
        fail_msg("submit: %d", s);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

/* Polls GPU g until its admin state is not "up"; returns it in st. */
static void wait_not_up(struct daemon *d, const char *g, char *st, size_t sl, char *reason,
                        size_t rl)
{
    for (int i = 0; i < JOB_WAIT_STEPS * 5; i++) {
        gpu_state(d, g, st, sl, reason, rl);
        if (strcmp(st, "up") != 0)
            return;
        pause_ms(20);
    }
}

/* GET /v1/cluster/topology's row of supernode sn (caller decrefs). */
static json_t *supernode(struct daemon *d, int sn)
{
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", "/v1/cluster/topology", d->admin, NULL, NULL, &j), 200);
    json_t *row = json_incref(json_array_get(json_object_get(j, "items"), (size_t)sn));
    json_decref(j);
    assert_non_null(row);
    return row;
}

static json_int_t usable(struct daemon *d, int sn)
{
    json_t *row = supernode(d, sn);
    json_int_t n = json_integer_value(json_object_get(row, "usable_gpus"));
    json_decref(row);
    return n;
}

static void wait_usable(struct daemon *d, int sn, json_int_t want)
{
    for (int i = 0; i < JOB_WAIT_STEPS * 5 && usable(d, sn) != want; i++)
        pause_ms(20);
    assert_int_equal(usable(d, sn), want);
}

static void tray_down_is_one_finding(void **state)
{
    (void)state;
    harness_spec = SPEC;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"health_interval_ms=200", "sched_event_delay_ms=0",
                                "sched_interval_ms=50", "heartbeat_timeout_s=6", NULL};
    start(&d, sets);
    setup_tenants(&d);
    const char *const tray1[] = {"--fault", "nvlink-down=2,3", NULL};
    const char *const own5[] = {"--fault", "nvlink-down=5", NULL};
    const char *const own7[] = {"--fault", "nvlink-down=7", NULL};
    const char *const five[] = {"--fault", "nvlink-down=0-9", NULL};
    agents_add(&d, &a, "nvl00-t00", SPEC, tray1);
    agents_add(&d, &a, "nvl00-t01", SPEC, tray1);
    agents_add(&d, &a, "nvl01-t00", SPEC, own5);
    agents_add(&d, &a, "nvl01-t01", SPEC, own7);
    agents_add(&d, &a, "nvl02-t05", SPEC, NULL);
    agents_add(&d, &a, "nvl03-t00", SPEC, five);
    agents_add(&d, &a, "nvl03-t01", SPEC, five);

    /* nvl01's GPUs are cordoned for their own links. */
    char st[32] = "", reason[400] = "", g[64];
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 4; k++) {
            snprintf(g, sizeof(g), "nvl01-t%02d-gpu%d", s, k);
            wait_not_up(&d, g, st, sizeof(st), reason, sizeof(reason));
            assert_string_equal(st, "cordoned");
            assert_non_null(strstr(reason, "nvlink-inactive"));
        }
    /* nvl00's lost tray: one switch finding, no GPU of it cordoned. */
    json_t *fabric = NULL;
    for (int i = 0; i < JOB_WAIT_STEPS * 5; i++) {
        json_t *j = NULL;
        assert_int_equal(call(&d, "GET", "/v1/gpus/nvl00-t01-gpu2", d.admin, NULL, NULL, &j), 200);
        if (json_array_size(json_object_get(j, "fabric")) > 0) {
            fabric = json_incref(json_object_get(j, "fabric"));
            assert_int_equal(json_array_size(json_object_get(j, "findings")), 0);
            json_decref(j);
            break;
        }
        json_decref(j);
        pause_ms(20);
    }
    assert_non_null(fabric);
    assert_int_equal(json_array_size(fabric), 1);
    json_t *f0 = json_array_get(fabric, 0);
    assert_string_equal(json_string_value(json_object_get(f0, "detector")), "nvswitch-down");
    assert_string_equal(json_string_value(json_object_get(f0, "entity")), "nvl00-nvsw02");
    const char *ev = json_string_value(json_object_get(f0, "evidence"));
    assert_non_null(strstr(ev, "switch tray nvl00-nvsw02..nvl00-nvsw03: all 16 reported GPU "
                               "links to its 2 chips inactive"));
    assert_non_null(strstr(ev, "nvl00 keeps 16 of its 18 NVLink switch chips (89%"));
    json_decref(fabric);
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 4; k++) {
            snprintf(g, sizeof(g), "nvl00-t%02d-gpu%d", s, k);
            gpu_state(&d, g, st, sizeof(st), reason, sizeof(reason));
            assert_string_equal(st, "up");
        }

    /* `sn gpus -o wide` shows why for a GPU with no finding of its own. */
    char cmd[1600];
    snprintf(cmd, sizeof(cmd),
             "SN_SERVER=http://127.0.0.1:%u SN_TOKEN='%s' '%s/sn' gpus --node nvl00-t01 -o wide",
             d.port, d.admin, getenv("SN_BUILD_DIR") ? getenv("SN_BUILD_DIR") : "..");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    static char out[1 << 14];
    size_t got = fread(out, 1, sizeof(out) - 1, p);
    out[got] = '\0';
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "fabric nvswitch-down nvl00-nvsw02: switch tray "
                                "nvl00-nvsw02..nvl00-nvsw03: all 16 reported"));

    /* nvl03: five trays lost, one decision on the domain: single-server
     * jobs only, no GPU cordoned. */
    const char *limit = "health: nvlink-domain-degraded nvl03: nvl03 keeps 8 of 18 NVLink "
                        "switch chips (44% of each GPU's links), below min_nvlink_share "
                        "50%; down: nvsw00..nvsw01 nvsw02..nvsw03 nvsw04..nvsw05 "
                        "nvsw06..nvsw07 nvsw08..nvsw09";
    json_t *row = NULL;
    for (int i = 0; i < JOB_WAIT_STEPS * 5; i++) {
        row = supernode(&d, 3);
        if (json_is_string(json_object_get(row, "single_server_only")))
            break;
        json_decref(row);
        row = NULL;
        pause_ms(20);
    }
    assert_non_null(row);
    assert_string_equal(json_string_value(json_object_get(row, "single_server_only")), limit);
    assert_int_equal(json_integer_value(json_object_get(row, "usable_gpus")), 72);
    assert_int_equal(json_array_size(json_object_get(row, "unusable")), 0);
    json_decref(row);
    for (int s = 0; s < 18; s += 17)
        for (int k = 0; k < 4; k += 3) {
            snprintf(g, sizeof(g), "nvl03-t%02d-gpu%d", s, k);
            gpu_state(&d, g, st, sizeof(st), reason, sizeof(reason));
            assert_string_equal(st, "up");
        }
    json_t *au = NULL;
    int domain_rows = 0;
    size_t i;
    json_t *e;
    for (int k = 0; k < JOB_WAIT_STEPS && domain_rows == 0; k++) { /* durable a little later */
        assert_int_equal(call(&d, "GET", "/v1/audit?limit=1000", d.admin, NULL, NULL, &au), 200);
        json_array_foreach(json_object_get(au, "items"), i, e)
        {
            const char *act = json_string_value(json_object_get(e, "action"));
            domain_rows += act && strcmp(act, "health limit domain") == 0;
        }
        json_decref(au);
        if (!domain_rows)
            pause_ms(20);
    }
    assert_int_equal(domain_rows, 1);

    /* nvl02: a compute tray lost (its agent silent): 68 usable, and why. */
    for (int k = 0; k < a.n; k++)
        if (strcmp(a.node[k], "nvl02-t05") == 0)
            stop_agent_pid(&a.pid[k]);
    wait_usable(&d, 2, 68);
    row = supernode(&d, 2);
    assert_true(json_is_null(json_object_get(row, "single_server_only")));
    assert_int_equal(json_integer_value(json_object_get(row, "gpus")), 72);
    json_t *un = json_object_get(row, "unusable");
    assert_int_equal(json_array_size(un), 1);
    json_t *u0 = json_array_get(un, 0);
    assert_string_equal(json_string_value(json_object_get(u0, "node")), "nvl02-t05");
    assert_int_equal(json_integer_value(json_object_get(u0, "gpus")), 4);
    assert_string_equal(json_string_value(json_object_get(u0, "state")), "down");
    const char *why = json_string_value(json_object_get(u0, "reason"));
    assert_non_null(why);
    json_decref(row);
    assert_int_equal(usable(&d, 0), 72);
    assert_int_equal(usable(&d, 1), 64);

    /* Placement: 72 on nvl00, 68 on nvl02 (none on nvl02-t05), the next
     * 72 waits. */
    long long id72 = submit(&d, 72);
    json_t *j = wait_state(&d, id72, "running");
    json_t *nodes = json_object_get(j, "nodes");
    assert_int_equal(json_array_size(nodes), 18);
    json_array_foreach(nodes, i, e) assert_int_equal(strncmp(json_string_value(e), "nvl00-", 6), 0);
    json_decref(j);
    long long id68 = submit(&d, 68);
    j = wait_state(&d, id68, "running");
    nodes = json_object_get(j, "nodes");
    assert_int_equal(json_array_size(nodes), 17);
    json_array_foreach(nodes, i, e)
    {
        assert_int_equal(strncmp(json_string_value(e), "nvl02-", 6), 0);
        assert_string_not_equal(json_string_value(e), "nvl02-t05");
    }
    json_decref(j);
    /* The next 72 fits only nvl03 (72 free), across its servers: it waits
     * for the domain, named in the detail. */
    long long next = submit(&d, 72);
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", next);
    const char *pr = NULL;
    for (int k = 0; k < JOB_WAIT_STEPS; k++) {
        assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
        assert_string_equal(json_string_value(json_object_get(j, "state")), "pending");
        pr = json_string_value(json_object_get(j, "pending_reason"));
        if (pr && strcmp(pr, "nvlink-domain") == 0)
            break;
        json_decref(j);
        j = NULL;
        pause_ms(20);
    }
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "pending_reason")), "nvlink-domain");
    const char *detail = json_string_value(json_object_get(j, "pending_detail"));
    assert_non_null(detail);
    assert_non_null(strstr(detail, "it fits only across servers of nvl03, whose degraded NVLink "
                                   "domain takes single-server jobs only (health: "
                                   "nvlink-domain-degraded nvl03: nvl03 keeps 8 of 18"));
    json_decref(j);
    /* 64 on nvl01; then a 4-GPU job has only nvl03: it runs there, on one
     * server. */
    long long id64 = submit(&d, 64);
    j = wait_state(&d, id64, "running");
    json_array_foreach(json_object_get(j, "nodes"), i, e)
        assert_int_equal(strncmp(json_string_value(e), "nvl01-", 6), 0);
    json_decref(j);
    long long id4 = submit(&d, 4);
    j = wait_state(&d, id4, "running");
    nodes = json_object_get(j, "nodes");
    assert_int_equal(json_array_size(nodes), 1);
    assert_int_equal(strncmp(json_string_value(json_array_get(nodes, 0)), "nvl03-", 6), 0);
    json_decref(j);
    long long id8 = submit(&d, 8); /* two servers: waits for the domain */
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id8);
    for (int k = 0; k < 20; k++) { /* a few scheduler passes */
        assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
        assert_string_equal(json_string_value(json_object_get(j, "state")), "pending");
        json_decref(j);
        pause_ms(20);
    }

    /* The trays come back (nvl03's agents report every port active: a
     * fault on port 40, which the GPUs do not have, keeps the batch): the
     * limit lifts by itself and the 8-GPU job starts on two nvl03 servers. */
    const char *const none[] = {"--fault", "nvlink-down=40", NULL};
    for (int k = 0; k < a.n; k++)
        if (strncmp(a.node[k], "nvl03-", 6) == 0) {
            stop_agent_pid(&a.pid[k]);
            a.pid[k] = spawn_sim_agent_with(&d, a.node[k], SPEC, none);
        }
    j = wait_state(&d, id8, "running");
    nodes = json_object_get(j, "nodes");
    assert_int_equal(json_array_size(nodes), 2);
    json_array_foreach(nodes, i, e) assert_int_equal(strncmp(json_string_value(e), "nvl03-", 6), 0);
    json_decref(j);
    row = supernode(&d, 3);
    assert_true(json_is_null(json_object_get(row, "single_server_only")));
    json_decref(row);
    int lifts = 0;
    for (int k = 0; k < JOB_WAIT_STEPS && lifts == 0; k++) { /* the audit row is durable later */
        assert_int_equal(call(&d, "GET", "/v1/audit?limit=1000", d.admin, NULL, NULL, &au), 200);
        json_array_foreach(json_object_get(au, "items"), i, e)
        {
            const char *act = json_string_value(json_object_get(e, "action"));
            lifts += act && strcmp(act, "health lift domain") == 0;
        }
        json_decref(au);
        if (!lifts)
            pause_ms(20);
    }
    assert_int_equal(lifts, 1);
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

/* nvlink -e through snd: nvl02-t00's agent reports port 4's replay
 * counter rising (--fault nvlink-errors=4): each GPU gets nvlink-errors
 * on its link 4 (DCGM: a replay rise fails the link) and is cordoned; its
 * neighbour nvl02-t01, counters flat, is not. */
static void link_errors_cordon(void **state)
{
    (void)state;
    harness_spec = SPEC;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"health_interval_ms=200", NULL};
    start(&d, sets);
    const char *const replay4[] = {"--fault", "nvlink-errors=4", NULL};
    const char *const flat[] = {"--fault", "nvlink-errors=40", NULL}; /* no such port: all 0 */
    agents_add(&d, &a, "nvl02-t00", SPEC, replay4);
    agents_add(&d, &a, "nvl02-t01", SPEC, flat);
    char st[32] = "", reason[400] = "", g[64];
    for (int k = 0; k < 4; k++) {
        snprintf(g, sizeof(g), "nvl02-t00-gpu%d", k);
        wait_not_up(&d, g, st, sizeof(st), reason, sizeof(reason));
        assert_string_equal(st, "cordoned");
        assert_non_null(strstr(reason, "nvlink-errors"));
    }
    json_t *j = NULL;
    assert_int_equal(call(&d, "GET", "/v1/gpus/nvl02-t00-gpu1", d.admin, NULL, NULL, &j), 200);
    json_t *f0 = json_array_get(json_object_get(j, "findings"), 0);
    assert_string_equal(json_string_value(json_object_get(f0, "detector")), "nvlink-errors");
    const char *ev = json_string_value(json_object_get(f0, "evidence"));
    assert_non_null(strstr(ev, ": link 4: replay rose by "));
    json_decref(j);
    for (int k = 0; k < 4; k++) {
        snprintf(g, sizeof(g), "nvl02-t01-gpu%d", k);
        gpu_state(&d, g, st, sizeof(st), reason, sizeof(reason));
        assert_string_equal(st, "up");
    }
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(tray_down_is_one_finding, reap_daemons),
        cmocka_unit_test_teardown(link_errors_cordon, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
