/*
 * Rack fabric health end to end (issue 26 item 3): a real snd on an
 * NVL72-shaped cluster (tests/specs/fabric/nvl72-x4.yaml: four 18-server
 * NVLink domains of 4 GPUs per server, 18 switch chips each, GPU port k to
 * chip k) and real sim agents pushing `nvidia-smi nvlink -s` batches
 * (--fault nvlink-down=L). Covered:
 *  - two servers of nvl00 both report port 3 of every GPU inactive, and no
 *    report of nvl00-nvsw03 is active: snd's health pass localises it to
 *    the switch (nvswitch-down on nvl00-nvsw03, shown under "fabric" in
 *    GET /v1/gpus/{gpu} with what the domain keeps, and in `sn gpus -o
 *    wide`) and cordons none of their GPUs;
 *  - nvl01-t00 reports port 5 of its GPUs inactive and nvl01-t01 port 7,
 *    each showing the other's port working: the GPUs' own links
 *    (nvlink-inactive) cordon those 8 GPUs, and nvl01 is left with 64
 *    usable GPUs. The order the agents' first reports arrive in does not
 *    matter: a link no other server reports on yet is
 *    nvlink-inactive-unconfirmed (weight 0, no cordon) until one does;
 *  - four 72-GPU jobs: three run, on nvl00, nvl02 and nvl03 (nvl00 keeps
 *    its whole domain), none on nvl01; the fourth waits.
 * Waits poll with deadlines; the only fixed pauses are the polls' steps.
 */
#include "job_harness.h"
#include "snd_harness.h"

#define SPEC "tests/specs/fabric/nvl72-x4.yaml"

static long long submit72(struct daemon *d)
{
    json_t *j = NULL;
    int s = call(d, "POST", "/v1/jobs", d->admin,
                 "{\"name\":\"nvl72\",\"gpus\":72,\"tenant\":\"acme\",\"pool\":\"training\"}", NULL,
                 &j);
    if (s != 201)
        fail_msg("submit: %d", s);
    long long id = json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return id;
}

static void tray_down_is_one_finding(void **state)
{
    (void)state;
    harness_spec = SPEC;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"health_interval_ms=200", "sched_event_delay_ms=0",
                                "sched_interval_ms=50", NULL};
    start(&d, sets);
    setup_tenants(&d);
    const char *const chip3[] = {"--fault", "nvlink-down=3", NULL};
    const char *const own5[] = {"--fault", "nvlink-down=5", NULL};
    const char *const own7[] = {"--fault", "nvlink-down=7", NULL};
    agents_add(&d, &a, "nvl00-t00", SPEC, chip3);
    agents_add(&d, &a, "nvl00-t01", SPEC, chip3);
    agents_add(&d, &a, "nvl01-t00", SPEC, own5);
    agents_add(&d, &a, "nvl01-t01", SPEC, own7);

    /* nvl01-t00's GPUs are cordoned for their own links. */
    char st[32] = "", reason[400] = "", g[64];
    for (int i = 0; i < JOB_WAIT_STEPS * 5; i++) {
        gpu_state(&d, "nvl01-t00-gpu3", st, sizeof(st), reason, sizeof(reason));
        if (strcmp(st, "up") != 0)
            break;
        pause_ms(20);
    }
    assert_string_equal(st, "cordoned");
    assert_non_null(strstr(reason, "nvlink-inactive"));
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 4; k++) {
            snprintf(g, sizeof(g), "nvl01-t%02d-gpu%d", s, k);
            for (int i = 0; i < JOB_WAIT_STEPS * 5; i++) {
                gpu_state(&d, g, st, sizeof(st), reason, sizeof(reason));
                if (strcmp(st, "up") != 0)
                    break;
                pause_ms(20);
            }
            assert_string_equal(st, "cordoned");
        }
    /* nvl00's lost chip: one switch finding, no GPU of it cordoned. */
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
    assert_string_equal(json_string_value(json_object_get(f0, "entity")), "nvl00-nvsw03");
    const char *ev = json_string_value(json_object_get(f0, "evidence"));
    assert_non_null(strstr(ev, "nvl00-nvsw03: all 8 reported GPU links to it inactive"));
    assert_non_null(strstr(ev, "nvl00 keeps 17 of its 18 NVLink switch chips"));
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
    assert_non_null(strstr(out, "fabric nvswitch-down nvl00-nvsw03: nvl00-nvsw03: all 8 reported"));

    /* Placement: nvl00 keeps its 72 GPUs, nvl01 has 68. */
    long long id[4];
    for (int k = 0; k < 4; k++)
        id[k] = submit72(&d);
    bool used[4] = {false};
    for (int k = 0; k < 3; k++) {
        json_t *j = wait_state(&d, id[k], "running");
        json_t *nodes = json_object_get(j, "nodes");
        assert_int_equal(json_array_size(nodes), 18);
        const char *n0 = json_string_value(json_array_get(nodes, 0));
        assert_int_equal(strncmp(n0, "nvl0", 4), 0);
        int sn = n0[4] - '0';
        assert_true(sn >= 0 && sn < 4);
        assert_int_not_equal(sn, 1);
        assert_false(used[sn]);
        used[sn] = true;
        json_decref(j);
    }
    assert_true(used[0] && used[2] && used[3]);
    json_t *j = NULL;
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id[3]);
    assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "pending");
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
        cmocka_unit_test_teardown(tray_down_is_one_finding, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
