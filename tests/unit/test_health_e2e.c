/*
 * End-to-end tests of the health policy through the real daemon and agent
 * (both built, $SN_BUILD_DIR; 127.0.0.1 only): snd with a short
 * health_interval_ms and one sn-agent with the sim backend.
 *  - a slow GPU (--fault slow-gpu=3: its GEMM at 1095/1980 of its peers',
 *    no clock event) is cordoned by snd:health through the slow-GPU rule
 *    alone (weight 50: score 50 < health_cordon_below 60), while its
 *    healthy peers stay up;
 *  - a GPU that stops reporting while its agent keeps heartbeating and
 *    reporting its peers (--fault stop-gpu=5: in the first sample only) is
 *    found gpu-missing ("stopped reporting") after health_stale_s and marked
 *    down by snd:health;
 *  - a GPU whose NVLink fabric registration stays In Progress (--fault
 *    fabric-gpu=2: dcgm-exporter's DCGM_FI_DEV_FABRIC_MANAGER_STATUS 2) is
 *    cordoned through fabric-not-ready (weight 60: score 40) while its peers,
 *    registered (status 3), stay up;
 *  - a GPU whose driver asks for a reset (--fault reset-gpu=6:
 *    DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION 1) is cordoned through
 *    recovery-action (weight 80).
 * Waits poll the daemon with a deadline of tens of seconds (the machine may
 * be loaded); the only fixed pauses are the 100 ms steps of those polls.
 */
#include "snd_harness.h"

#include <stdio.h>

#define NODE "sn00-t00"

static pid_t agent;

/* sn-agent (sim) for NODE with one fault. */
static void start_agent(struct daemon *d, const char *fault)
{
    const char *extra[] = {"--fault", fault, NULL};
    agent = spawn_sim_agent_with(d, NODE, harness_spec, extra);
}

static void stop_agent(void)
{
    stop_agent_pid(&agent);
}

/* Polls GPU NODE-gpuI until it leaves "up" (60 s at most); its state and
 * reason in st and reason. */
static void wait_not_up(struct daemon *d, int i, char *st, size_t st_len, char *reason,
                        size_t reason_len)
{
    char name[32];
    snprintf(name, sizeof(name), NODE "-gpu%d", i);
    for (int k = 0; k < 600; k++) {
        gpu_state(d, name, st, st_len, reason, reason_len);
        if (strcmp(st, "up") != 0)
            return;
        pause_ms(100);
    }
}

/* Every GPU of NODE but `except` is up. */
static void peers_up(struct daemon *d, int except)
{
    char st[32] = "", reason[300] = "", name[32];
    for (int g = 0; g < 8; g++) {
        if (g == except)
            continue;
        snprintf(name, sizeof(name), NODE "-gpu%d", g);
        gpu_state(d, name, st, sizeof(st), reason, sizeof(reason));
        assert_string_equal(st, "up");
    }
}

static void finish(struct daemon *d)
{
    stop_agent();
    stop(d, SIGTERM);
    char path[300];
    snprintf(path, sizeof(path), "%s/" NODE ".token", d->dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/work-" NODE, d->dir);
    rmdir(path);
    cleanup(d);
}

/* snd with the agent's fault injected cordons GPU `gpu` for `detector`
 * while the node's other GPUs stay up. */
static void fault_cordons(const char *fault, int gpu, const char *detector)
{
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"health_interval_ms=200", NULL};
    start(&d, sets);
    start_agent(&d, fault);
    char st[32] = "", reason[300] = "";
    wait_not_up(&d, gpu, st, sizeof(st), reason, sizeof(reason));
    assert_string_equal(st, "cordoned");
    assert_non_null(strstr(reason, detector));
    peers_up(&d, gpu);
    finish(&d);
}

static void slow_gpu_is_cordoned(void **state)
{
    (void)state;
    /* the peers, benchmarked in the same run, stay in service */
    fault_cordons("slow-gpu=3", 3, "slow-gpu");
}

static void stopped_gpu_is_marked_down(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    const char *sets[] = {"health_interval_ms=200", "health_stale_s=2", NULL};
    start(&d, sets);
    start_agent(&d, "stop-gpu=5");
    char st[32] = "", reason[300] = "";
    wait_not_up(&d, 5, st, sizeof(st), reason, sizeof(reason));
    assert_string_equal(st, "down");
    assert_non_null(strstr(reason, "gpu-missing"));
    assert_non_null(strstr(reason, "stopped reporting"));
    /* its peers keep reporting and stay up */
    char name[] = NODE "-gpu4";
    gpu_state(&d, name, st, sizeof(st), reason, sizeof(reason));
    assert_string_equal(st, "up");
    finish(&d);
}

static void fabric_not_ready_is_cordoned(void **state)
{
    (void)state;
    fault_cordons("fabric-gpu=2", 2, "fabric-not-ready");
}

static void reset_requested_is_cordoned(void **state)
{
    (void)state;
    fault_cordons("reset-gpu=6", 6, "recovery-action");
}

static int teardown(void **state)
{
    stop_agent();
    return reap_daemons(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(slow_gpu_is_cordoned, teardown),
        cmocka_unit_test_teardown(stopped_gpu_is_marked_down, teardown),
        cmocka_unit_test_teardown(fabric_not_ready_is_cordoned, teardown),
        cmocka_unit_test_teardown(reset_requested_is_cordoned, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
