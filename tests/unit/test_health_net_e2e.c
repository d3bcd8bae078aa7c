/*
 * The host collectors live, through the real daemon and agent (both built,
 * $SN_BUILD_DIR; 127.0.0.1 only): sn-agent with the sim backend for its
 * GPUs and --host-root on the captured mlx5/IB tree of
 * tests/data/host/procfs-mlx5 (ports trained at 40 Gb/s and 25 Gb/s 1X
 * against the spec's 400 Gb/s NICs) sends its proc-interrupts/sysfs
 * batches; snd's health pass runs net-link-slow on them, and the node's
 * GPUs (score 50 < health_cordon_below 60) are cordoned with that reason.
 * A second node whose agent has no host collectors stays up. Waits poll
 * with a deadline of tens of seconds; the only pauses are 100 ms poll steps.
 */
#include "snd_harness.h"

#include <stdio.h>

#define NODE "sn00-t00"

static pid_t agent;

/* sn-agent (sim) for NODE with its host collectors on a captured tree
 * (--host-root). */
static void start_agent(struct daemon *d, const char *host_root)
{
    const char *extra[] = {"--host-root", host_root, NULL};
    agent = spawn_sim_agent_with(d, NODE, harness_spec, extra);
}

static void stop_agent(void)
{
    stop_agent_pid(&agent);
}

static void slow_nic_cordons_the_node(void **state)
{
    (void)state;
    struct daemon d = {0};
    make_dir(&d);
    static char snd_log[320];
    snprintf(snd_log, sizeof(snd_log), "%s/snd.log", d.dir);
    harness_stderr = snd_log;
    const char *sets[] = {"health_interval_ms=200", NULL};
    start(&d, sets);
    char tree[1024];
    sn_test_path(tree, sizeof(tree), "tests/data/host/procfs-mlx5");
    start_agent(&d, tree);
    char st[32] = "", reason[300] = "";
    for (int i = 0; i < 600; i++) { /* 60 s */
        gpu_state(&d, NODE "-gpu0", st, sizeof(st), reason, sizeof(reason));
        if (strcmp(st, "up") != 0)
            break;
        pause_ms(100);
    }
    if (strcmp(st, "cordoned") != 0) { /* say why: the agent's and snd's logs */
        char cmd[700];
        snprintf(cmd, sizeof(cmd), "tail -n 5 %s/agent-" NODE ".log %s/snd.log >&2", d.dir, d.dir);
        if (system(cmd) != 0)
            fprintf(stderr, "no logs in %s\n", d.dir);
    }
    assert_string_equal(st, "cordoned");
    assert_non_null(strstr(reason, "net-link-slow"));
    for (int g = 1; g < 8; g++) { /* a server finding: every GPU of the node */
        char name[32];
        snprintf(name, sizeof(name), NODE "-gpu%d", g);
        for (int i = 0; i < 100 && strcmp(st, "cordoned") == 0; i++) {
            gpu_state(&d, name, st, sizeof(st), reason, sizeof(reason));
            if (strcmp(st, "cordoned") == 0)
                break;
            pause_ms(100);
        }
        assert_string_equal(st, "cordoned");
    }
    /* a node nothing was read about stays in service */
    gpu_state(&d, "sn00-t01-gpu0", st, sizeof(st), reason, sizeof(reason));
    assert_string_equal(st, "up");
    stop_agent();
    stop(&d, SIGTERM);
    char path[300];
    snprintf(path, sizeof(path), "%s/" NODE ".token", d.dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/work-" NODE, d.dir);
    rmdir(path);
    unlink(snd_log);
    snprintf(path, sizeof(path), "%s/agent-" NODE ".log", d.dir);
    unlink(path);
    cleanup(&d);
}

static int teardown(void **state)
{
    stop_agent();
    return reap_daemons(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(slow_nic_cordons_the_node, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
