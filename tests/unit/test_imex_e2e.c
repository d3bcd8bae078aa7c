/*
 * IMEX channels end to end (issue 26 item 2): a real snd and real sn-agents
 * (sim backend, `--imex test`), all on 127.0.0.1, on an NVL72-shaped
 * cluster (tests/specs/fabric/nvl72-x4.yaml: four 18-server NVLink
 * domains, 4 GPUs per server). snd runs with imex_channel_count=8.
 * Covered:
 *  - two 8-GPU jobs (two servers each) in one domain: both run with
 *    ranks_released false and pending_reason domain-setup until their
 *    agents (started only then, with a 0.5 s setup delay) report their
 *    channels; they get different channels; each rank checks, when it
 *    starts, that its channel's file (written by the test runner, naming
 *    its job and run) exists on both of its job's servers, and exits 7
 *    otherwise, so a rank that started before its channel was ready on
 *    every server fails its job; both complete, and the channel files are
 *    torn down once the jobs are gone;
 *  - a job whose agents set nothing up (`--imex none`) is requeued after
 *    imex_setup_timeout_s=2 with the reason domain-setup, and no rank of
 *    it ever started;
 *  - the nvidia runner as a user without an IMEX driver: the node list is
 *    written, the device is not, the job is requeued without a rank;
 *  - the agents' NVLink clique reports (item 1): snd shows each node's and
 *    flags only the node reporting another supernode's clique.
 * Waits poll with deadlines (job_harness.h).
 */
#include "snd_harness.h"
#include "job_harness.h"

#include <sys/stat.h>

#define SPEC "tests/specs/fabric/nvl72-x4.yaml"

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

static long long submit(struct daemon *d, int gpus, const char *command)
{
    json_t *body = json_pack("{s:s,s:i,s:s,s:s,s:s}", "name", "imex", "gpus", gpus, "tenant",
                             "acme", "pool", "training", "command", command);
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

static json_t *get_job(struct daemon *d, long long id)
{
    char path[64];
    snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
    json_t *j = NULL;
    assert_int_equal(call(d, "GET", path, d->admin, NULL, NULL, &j), 200);
    return j;
}

/* "nvl02-t05" -> "nvl02": the supernode part of a node name. */
static void domain_of(const char *node, char *out, size_t cap)
{
    snprintf(out, cap, "%s", node);
    char *dash = strchr(out, '-');
    if (dash)
        *dash = '\0';
}

static void rm_rf(const char *dir)
{
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
    assert_int_equal(system(rm), 0);
}

static void two_jobs_one_domain(void **state)
{
    (void)state;
    harness_spec = SPEC;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                                "imex_channel_count=8", "imex_setup_timeout_s=60", NULL};
    start(&d, sets);
    setup_tenants(&d);
    /* Each rank: its channel's file must name this job and run on exactly
     * its two servers (the test runner writes WORK_DIR/imex/channelN). */
    char cmd[2400];
    snprintf(cmd, sizeof(cmd),
             "n=$(grep -l \"^job $SN_JOB_ID run $SN_JOB_RUN\\$\" %s/work-*/imex/channel$SN_IMEX_CHANNEL"
             " 2>/dev/null | wc -l); [ \"$n\" -eq 2 ] || exit 7; "
             "echo $SN_IMEX_CHANNEL > %s/out.$SN_JOB_ID.$RANK.tmp && "
             "mv %s/out.$SN_JOB_ID.$RANK.tmp %s/out.$SN_JOB_ID.$RANK",
             d.dir, d.dir, d.dir, d.dir);
    long long id[2] = {submit(&d, 8, cmd), submit(&d, 8, cmd)};
    long long channel[2];
    char dom[2][32];
    json_t *nodes[2];
    for (int k = 0; k < 2; k++) {
        json_t *j = wait_state(&d, id[k], "running");
        /* No agent yet: placed, its ranks held back. */
        assert_true(json_is_false(json_object_get(j, "ranks_released")));
        assert_string_equal(json_string_value(json_object_get(j, "pending_reason")),
                            "domain-setup");
        channel[k] = json_integer_value(json_object_get(j, "imex_channel"));
        nodes[k] = json_incref(json_object_get(j, "nodes"));
        assert_int_equal(json_array_size(nodes[k]), 2);
        char other[32];
        domain_of(json_string_value(json_array_get(nodes[k], 0)), dom[k], sizeof(dom[k]));
        domain_of(json_string_value(json_array_get(nodes[k], 1)), other, sizeof(other));
        assert_string_equal(dom[k], other);
        json_decref(j);
    }
    assert_string_equal(dom[0], dom[1]); /* one domain */
    assert_true(channel[0] >= 1 && channel[0] <= 8);
    assert_true(channel[1] >= 1 && channel[1] <= 8);
    assert_int_not_equal(channel[0], channel[1]);
    /* The agents come up one after another, each setting its channels up
     * 0.5 s after it first hears of them. */
    const char *const extra[] = {"--imex", "test", "--imex-delay", "0.5", NULL};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < 2; i++) {
            agents_add(&d, &a, json_string_value(json_array_get(nodes[k], i)), SPEC, extra);
            pause_ms(300);
        }
    for (int k = 0; k < 2; k++) {
        json_t *j = wait_state(&d, id[k], "completed");
        assert_string_equal(json_string_value(json_object_get(j, "detail")),
                            "every rank exited 0");
        json_decref(j);
        for (int r = 0; r < 8; r++) {
            char path[400], got[32], want[32];
            snprintf(path, sizeof(path), "%s/out.%lld.%d", d.dir, id[k], r);
            wait_file(path, got, sizeof(got));
            snprintf(want, sizeof(want), "%lld\n", channel[k]);
            assert_string_equal(got, want);
        }
    }
    /* Torn down: the answers no longer list the channels. */
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < 2; i++) {
            char path[600];
            snprintf(path, sizeof(path), "%s/work-%s/imex/channel%lld", d.dir,
                     json_string_value(json_array_get(nodes[k], i)), channel[k]);
            struct stat st;
            int step = 0;
            while (stat(path, &st) == 0 && step++ < JOB_WAIT_STEPS)
                pause_ms(20);
            assert_int_not_equal(stat(path, &st), 0);
        }
    json_decref(nodes[0]);
    json_decref(nodes[1]);
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    rm_rf(d.dir);
}

static void setup_timeout_requeues(void **state)
{
    (void)state;
    harness_spec = SPEC;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                                "imex_channel_count=8", "imex_setup_timeout_s=2", NULL};
    start(&d, sets);
    setup_tenants(&d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "touch %s/started.$RANK", d.dir);
    long long id = submit(&d, 8, cmd);
    json_t *j = wait_state(&d, id, "running");
    const char *const extra[] = {"--imex", "none", NULL};
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(j, "nodes"), i, n)
        agents_add(&d, &a, json_string_value(n), SPEC, extra);
    json_decref(j);
    /* Requeued (and likely placed again at once): wait for the count. */
    bool requeued = false;
    for (int step = 0; step < JOB_WAIT_STEPS && !requeued; step++) {
        j = get_job(&d, id);
        requeued = json_integer_value(json_object_get(j, "requeues")) >= 1;
        if (requeued) {
            const char *detail = json_string_value(json_object_get(j, "detail"));
            const char *st = json_string_value(json_object_get(j, "state"));
            /* Either still requeued with the reason, or placed again and
             * waiting for its channel again. */
            if (strcmp(st, "requeued") == 0)
                assert_non_null(strstr(detail ? detail : "", "domain-setup"));
            else
                assert_string_equal(json_string_value(json_object_get(j, "pending_reason")),
                                    "domain-setup");
        }
        json_decref(j);
        if (!requeued)
            pause_ms(20);
    }
    assert_true(requeued);
    /* The event log says why. Its rows are read from the store, which the
     * requeue's rows reach through the outbox after the state changed in
     * memory: poll until they committed (slow under the sanitizers). */
    char path[96];
    snprintf(path, sizeof(path), "/v1/jobs/%lld/events", id);
    bool said = false;
    for (int step = 0; step < JOB_WAIT_STEPS && !said; step++) {
        json_t *ev = NULL;
        assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &ev), 200);
        char *text = json_dumps(ev, JSON_COMPACT);
        said = text && strstr(text, "domain-setup: IMEX channel");
        free(text);
        json_decref(ev);
        if (!said)
            pause_ms(20);
    }
    assert_true(said);
    /* No rank ever started. */
    for (int r = 0; r < 8; r++) {
        char f[400];
        struct stat st;
        snprintf(f, sizeof(f), "%s/started.%d", d.dir, r);
        assert_int_not_equal(stat(f, &st), 0);
    }
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    rm_rf(d.dir);
}

/* Issue 26 item 1: each agent reports its NVLink clique (the sim backend:
 * its supernode's ClusterUUID, CliqueId 1); snd shows it per agent and
 * flags the node that reports another supernode's clique (--fault
 * clique-of=1 on a server of nvl00), and only that node. */
static void fabric_identity(void **state)
{
    (void)state;
    harness_spec = SPEC;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};
    start(&d, sets);
    const char *nodes[] = {"nvl00-t00", "nvl00-t01", "nvl00-t02", "nvl01-t00"};
    const char *const wrong[] = {"--fault", "clique-of=1", NULL};
    for (int i = 0; i < 4; i++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/nodes/%s", nodes[i]);
        expect(&d, 200, "GET", path, d.admin, NULL);
        agents_add(&d, &a, nodes[i], SPEC, i == 2 ? wrong : NULL);
    }
    const char *want[] = {"00000000-0000-4000-8000-000000000001/1",
                          "00000000-0000-4000-8000-000000000001/1",
                          "00000000-0000-4000-8000-000000000002/1",
                          "00000000-0000-4000-8000-000000000002/1"};
    for (int i = 0; i < 4; i++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/agents/%s", nodes[i]);
        json_t *j = NULL;
        for (int step = 0; step < JOB_WAIT_STEPS; step++) {
            assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
            if (json_is_string(json_object_get(j, "fabric_clique")))
                break;
            json_decref(j);
            j = NULL;
            pause_ms(20);
        }
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "fabric_clique")), want[i]);
        json_decref(j);
    }
    /* Every report is in: only nvl00-t02 breaks the rule. */
    for (int i = 0; i < 4; i++) {
        char path[96];
        snprintf(path, sizeof(path), "/v1/agents/%s", nodes[i]);
        json_t *j = NULL;
        assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
        json_t *mm = json_object_get(j, "fabric_mismatch");
        if (i == 2) {
            assert_true(json_is_string(mm));
            assert_non_null(strstr(json_string_value(mm), "most servers of its supernode nvl00"));
        } else {
            assert_true(json_is_null(mm));
        }
        json_decref(j);
    }
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    rm_rf(d.dir);
}

/* The nvidia runner without root or an IMEX-capable driver: it writes the
 * IMEX node list (both servers' reported addresses, sorted) and then
 * fails to make the channel device (no nvidia-caps-imex-channels in
 * /proc/devices, or mknod refused): nothing is reported ready, no rank
 * starts, and snd requeues the job. Skipped on a host whose driver has
 * IMEX channels (there the setup could succeed). */
static void nvidia_runner_node_list(void **state)
{
    (void)state;
    FILE *pd = fopen("/proc/devices", "r");
    char line[128];
    bool imex_driver = false;
    while (pd && fgets(line, sizeof(line), pd))
        imex_driver |= strstr(line, "nvidia-caps-imex-channels") != NULL;
    if (pd)
        fclose(pd);
    if (imex_driver)
        skip();
    harness_spec = SPEC;
    struct daemon d;
    struct agents a = {0};
    make_dir(&d);
    const char *const sets[] = {"sched_event_delay_ms=0", "sched_interval_ms=50",
                                "imex_channel_count=8", "imex_setup_timeout_s=4", NULL};
    start(&d, sets);
    setup_tenants(&d);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "touch %s/started.$RANK", d.dir);
    long long id = submit(&d, 8, cmd);
    json_t *j = wait_state(&d, id, "running");
    char cfg[2][300], dev[2][300];
    const char *addr[2] = {"127.0.0.12", "127.0.0.11"};
    for (size_t i = 0; i < 2; i++) {
        const char *node = json_string_value(json_array_get(json_object_get(j, "nodes"), i));
        snprintf(cfg[i], sizeof(cfg[i]), "%s/imexcfg-%zu", d.dir, i);
        snprintf(dev[i], sizeof(dev[i]), "%s/imexdev-%zu", d.dir, i);
        const char *const extra[] = {"--imex",         "nvidia", "--imex-dir", cfg[i],
                                     "--imex-dev-dir", dev[i],   "--address",  addr[i], NULL};
        agents_add(&d, &a, node, SPEC, extra);
    }
    json_decref(j);
    for (size_t i = 0; i < 2; i++) {
        char path[700], got[128] = "";
        snprintf(path, sizeof(path), "%s/nodes_config.cfg", cfg[i]);
        /* Until the other agent's address is known its name stands there. */
        for (int step = 0; step < 300 && strcmp(got, "127.0.0.11\n127.0.0.12\n") != 0; step++) {
            if (!read_text(path, got, sizeof(got)))
                got[0] = '\0';
            pause_ms(10);
        }
        assert_string_equal(got, "127.0.0.11\n127.0.0.12\n");
    }
    bool requeued = false;
    for (int step = 0; step < JOB_WAIT_STEPS && !requeued; step++) {
        j = get_job(&d, id);
        requeued = json_integer_value(json_object_get(j, "requeues")) >= 1;
        json_decref(j);
        if (!requeued)
            pause_ms(20);
    }
    assert_true(requeued);
    for (int r = 0; r < 8; r++) {
        char f[400];
        struct stat st;
        snprintf(f, sizeof(f), "%s/started.%d", d.dir, r);
        assert_int_not_equal(stat(f, &st), 0);
    }
    agents_stop(&a);
    assert_int_equal(stop(&d, SIGTERM), 0);
    rm_rf(d.dir);
}

/* A runner name the agent does not know is refused at start (exit 2). */
static void unknown_runner(void **state)
{
    (void)state;
    char dir[] = "/tmp/sn-imex-flag-XXXXXX", cmd[2048], spec[1024], log[128];
    assert_non_null(mkdtemp(dir));
    sn_test_path(spec, sizeof(spec), SPEC);
    const char *b = getenv("SN_BUILD_DIR");
    snprintf(log, sizeof(log), "%s/err", dir);
    snprintf(cmd, sizeof(cmd),
             "echo x > %s/tok; %s/sn-agent --server http://127.0.0.1:9 --token %s/tok --node "
             "nvl00-t00 --backend sim --cluster %s --work-dir %s/w --cgroup-root none --imex "
             "bogus 2> %s",
             dir, b ? b : "..", dir, spec, dir, log);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc));
    assert_int_equal(WEXITSTATUS(rc), 2);
    char got[512];
    assert_true(read_text(log, got, sizeof(got)));
    assert_non_null(strstr(got, "--imex 'bogus': expected nvidia, test or none"));
    rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(two_jobs_one_domain, reap_all),
        cmocka_unit_test_teardown(setup_timeout_requeues, reap_all),
        cmocka_unit_test_teardown(fabric_identity, reap_all),
        cmocka_unit_test_teardown(nvidia_runner_node_list, reap_all),
        cmocka_unit_test(unknown_runner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
