/*
 * End-to-end test of the leak rule through the real daemon and a real agent
 * (both built, $SN_BUILD_DIR; 127.0.0.1 only). The cluster is
 * examples/good-64.yaml: two supernodes, each one rack of 4 servers x 8 GPUs
 * (sn00-rack0: sn00-t00..t03, sn01-rack0: sn01-t00..t03).
 *
 * A 32-GPU job runs on one rack; an sn-agent (sim backend) on the job's
 * first server reports its BMC leak detector tripping at its third sample
 * (--fault leak=3: a facility-csv row `server,<node>,leak-tray,leak,1,bool`).
 * snd's health pass finds `leak` on that server's rack with action
 * power-off-zone and marks every GPU of the rack down as snd:health with
 * the rack in the reason; the scheduler interrupts the job and requeues it,
 * and it runs again on the other rack. The other rack's GPUs stay up. An
 * agent cannot trip another server's detector (its row naming another host
 * is dropped).
 * Waits poll the daemon with deadlines of tens of seconds (the machine may
 * be loaded); the only fixed pauses are the 100 ms steps of those polls.
 */
#include "snd_harness.h"

#include <stdio.h>

static pid_t agent;

/* spawn_sim_agent() with one --fault. */
static void start_agent(struct daemon *d, const char *node, const char *fault)
{
    const char *extra[] = {"--fault", fault, NULL};
    agent = spawn_sim_agent_with(d, node, harness_spec, extra);
}

static void stop_agent(void)
{
    stop_agent_pid(&agent);
}

static long long num(json_t *j, const char *key)
{
    return json_integer_value(json_object_get(j, key));
}

/* Whether any node of job j is on supernode sn ("sn00"). */
static bool on_supernode(json_t *j, const char *sn)
{
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(j, "nodes"), i, n) if (strncmp(json_string_value(n), sn,
                                                                       4) == 0) return true;
    return false;
}

static void leak_powers_off_rack_and_requeues(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"health_interval_ms=200", "sched_event_delay_ms=0",
                          "sched_interval_ms=50", NULL};
    start(&d, sets);
    setup_tenants(&d);
    json_t *j = NULL;
    assert_int_equal(call(&d, "POST", "/v1/jobs", d.admin,
                          "{\"name\":\"train\",\"gpus\":32,\"tenant\":\"acme\"}", NULL, &j),
                     201);
    long long id = num(j, "id");
    json_decref(j);
    j = wait_job(&d, id, "running");
    char node[64], sn[8], other[8];
    snprintf(node, sizeof(node), "%s", json_string_value(json_array_get(json_object_get(j, "nodes"), 0)));
    json_decref(j);
    snprintf(sn, sizeof(sn), "%.4s", node);
    snprintf(other, sizeof(other), "%s", strcmp(sn, "sn00") == 0 ? "sn01" : "sn00");
    /* An agent of the other rack claiming a leak on its neighbour: dropped
     * (a BMC row speaks for its own server only), so that rack stays up. */
    char liar[32], tok[SN_AUTH_TOKEN_MAX], tpath[160];
    snprintf(liar, sizeof(liar), "%s-t00", other);
    sign(&d, SN_AUTH_AGENT, liar, "telemetry:write", 1000, 4000000000, "a1", tok);
    snprintf(tpath, sizeof(tpath), "/v1/telemetry?node=%s&format=facility-csv&seq=1&boot=ab", liar);
    char body[200];
    snprintf(body, sizeof(body),
             "time,kind,name,part,metric,value,unit\n,server,%s-t01,leak-tray,leak,1,bool\n",
             other);
    assert_int_equal(call(&d, "POST", tpath, tok, body, NULL, &j), 200);
    json_decref(j);
    start_agent(&d, node, "leak=3");

    /* every GPU of the rack goes down, the rack and the leak in the reason */
    char st[32] = "", reason[400] = "", gname[64];
    snprintf(gname, sizeof(gname), "%s-t03-gpu7", sn);
    for (int i = 0; i < 600; i++) { /* 60 s */
        gpu_state(&d, gname, st, sizeof(st), reason, sizeof(reason));
        if (strcmp(st, "up") != 0)
            break;
        pause_ms(100);
    }
    assert_string_equal(st, "down");
    char want[64];
    snprintf(want, sizeof(want), "power-off-zone %s-rack0", sn);
    assert_non_null(strstr(reason, want));
    assert_non_null(strstr(reason, "leak"));
    assert_non_null(strstr(reason, "leak-tray"));
    for (int s = 0; s < 4; s++)
        for (int g = 0; g < 8; g++) {
            snprintf(gname, sizeof(gname), "%s-t%02d-gpu%d", sn, s, g);
            gpu_state(&d, gname, st, sizeof(st), reason, sizeof(reason));
            assert_string_equal(st, "down");
            snprintf(gname, sizeof(gname), "%s-t%02d-gpu%d", other, s, g);
            gpu_state(&d, gname, st, sizeof(st), reason, sizeof(reason));
            assert_string_equal(st, "up");
        }
    /* the job was interrupted, requeued and runs on the other rack */
    for (int i = 0; i < 600; i++) {
        j = wait_job(&d, id, "running");
        if (num(j, "requeues") >= 1 && !on_supernode(j, sn))
            break;
        json_decref(j);
        j = NULL;
        pause_ms(100);
    }
    assert_non_null(j);
    assert_int_equal(num(j, "requeues"), 1);
    assert_false(on_supernode(j, sn));
    assert_true(on_supernode(j, other));
    json_decref(j);
    /* the job's events (stored by the writer a moment after the state the
     * job read above: polled for up to 20 s) */
    char path[64], kinds[256] = "";
    snprintf(path, sizeof(path), "/v1/jobs/%lld/events", id);
    for (int k = 0; k < 200; k++) {
        assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
        size_t i, n = 0;
        json_t *e;
        kinds[0] = '\0';
        json_array_foreach(json_object_get(j, "items"), i, e) n += (size_t)snprintf(
            kinds + n, sizeof(kinds) - n, "%s%s", i ? "," : "",
            json_string_value(json_object_get(e, "kind")));
        json_decref(j);
        if (strcmp(kinds, "submitted,started,interrupted,started") == 0)
            break;
        pause_ms(100);
    }
    assert_string_equal(kinds, "submitted,started,interrupted,started");
    stop_agent();
    assert_int_equal(stop(&d, SIGTERM), 0);
    cleanup(&d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d.dir); /* the agent's token, log and work dir */
    assert_int_equal(system(cmd), 0);
}

static int teardown(void **state)
{
    stop_agent();
    return reap_daemons(state);
}

int main(void)
{
    harness_spec = "examples/good-64.yaml";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(leak_powers_off_rack_and_requeues, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
