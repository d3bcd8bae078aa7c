/*
 * Agent restarts without job loss (docs/agent.md, "Restarts"), end to end:
 * a real snd and two real sn-agents (sim backend, no cgroups: process
 * groups, keepers and the state files in the work dir are all there is)
 * on 127.0.0.1, both built ($SN_BUILD_DIR); the cluster is
 * examples/std-unit-64.yaml with every node but sn00-t00 and sn00-t01
 * cordoned.
 *
 * 40 multi-rank jobs (2, 4 or 8 ranks, 1 to 2 s each, some ending with a
 * non-zero status of their own) are submitted at once; while they run, an
 * agent (alternately of either node) is killed with SIGKILL and started
 * again, 20 times. Then every job must have ended exactly once with its own
 * outcome: completed for exit 0, failed with its own exit_status and
 * the detail "rank 0 exited with status N" otherwise (never a reason of the infrastructure: no
 * "infrastructure-lost", no "orphaned"), in run 0 (no requeue); each of its
 * ranks ran once (a marker line per rank start); and no process of a job
 * or keeper is left (checked in /proc by the test's own port and work
 * dirs). It prints the rounds and the ranks adopted and reported after a
 * restart. Runtime about 30 s.
 */
#include "snd_harness.h"
#include "job_harness.h"

#include <dirent.h>

#define JOBS 40
#define ROUNDS 20

static const char *const FAST[] = {"sched_event_delay_ms=0", "sched_interval_ms=50", NULL};
static const char *const NODES[2] = {"sn00-t00", "sn00-t01"};

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

/* Bytes of a /proc/PID file (NULs kept) into buf; 0 when unreadable. */
static size_t proc_file(long pid, const char *name, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/%s", pid, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

static bool contains(const char *buf, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(buf + i, needle, k) == 0)
            return true;
    return false;
}

/* Live processes other than skip[0..2] that belong to this test's jobs: a
 * rank (SN_SERVER names this snd in its environment) or a keeper (a fork
 * of an agent: its command line names this test's work dir). */
static int count_job_processes(const struct daemon *d, const pid_t *skip)
{
    char server[64];
    snprintf(server, sizeof(server), "SN_SERVER=http://127.0.0.1:%u", d->port);
    DIR *dir = opendir("/proc");
    assert_non_null(dir);
    struct dirent *e;
    int n = 0;
    static char buf[65536];
    while ((e = readdir(dir)) != NULL) {
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == skip[0] || pid == skip[1] || pid == getpid())
            continue;
        if (gone((pid_t)pid))
            continue;
        size_t len = proc_file(pid, "environ", buf, sizeof(buf));
        bool ours = contains(buf, len, server);
        len = proc_file(pid, "cmdline", buf, sizeof(buf));
        ours = ours || contains(buf, len, d->dir);
        if (ours && pid != d->pid) {
            print_message("left: pid %ld %s\n", pid, buf);
            n++;
        }
    }
    closedir(dir);
    return n;
}

/* Job i: its ranks and its own exit status (rank 0's). */
static int job_gpus(int i)
{
    static const int sizes[3] = {2, 4, 8};
    return sizes[i % 3];
}

static int job_code(int i)
{
    return i % 5 == 4 ? 3 + i % 7 : 0;
}

static int count_in_log(const char *path, const char *what)
{
    static char text[1 << 20];
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    int k = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        k++;
    return k;
}

static void restart_20_times(void **state)
{
    (void)state;
    struct daemon d;
    make_dir(&d);
    start(&d, FAST);
    setup_tenants(&d);
    for (int s = 2; s < 8; s++) {
        char url[64];
        snprintf(url, sizeof(url), "/v1/nodes/sn00-t%02d/cordon", s);
        expect(&d, 200, "POST", url, d.admin, "{\"reason\":\"test\"}");
    }
    /* The agent logs of every run are kept (agent-NODE.log is truncated at
     * each start): appended to all-NODE.log before each restart. */
    pid_t agent[2];
    for (int k = 0; k < 2; k++)
        agent[k] = spawn_sim_agent(&d, NODES[k], "examples/std-unit-64.yaml");
    long long ids[JOBS];
    for (int i = 0; i < JOBS; i++) {
        char cmd[600];
        snprintf(cmd, sizeof(cmd),
                 "echo $RANK >> %s/m.$SN_JOB_ID.$SN_JOB_RUN; sleep %d.%d; "
                 "if [ \"$RANK\" = 0 ]; then exit %d; fi",
                 d.dir, 1 + i % 2, (i * 3) % 10, job_code(i));
        json_t *body = json_pack("{s:s,s:i,s:s,s:s}", "name", "restart", "gpus", job_gpus(i),
                                 "tenant", "acme", "command", cmd);
        char *text = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        json_t *j = NULL;
        assert_int_equal(call(&d, "POST", "/v1/jobs", d.admin, text, NULL, &j), 201);
        free(text);
        ids[i] = json_integer_value(json_object_get(j, "id"));
        json_decref(j);
    }
    char log[600], all[600], cat[1400];
    for (int r = 0; r < ROUNDS; r++) {
        int k = r % 2;
        pause_ms(500 + (r * 137) % 400);
        kill(agent[k], SIGKILL);
        waitpid(agent[k], NULL, 0);
        track(agent[k], false);
        snprintf(log, sizeof(log), "%s/agent-%s.log", d.dir, NODES[k]);
        snprintf(all, sizeof(all), "%s/all-%s.log", d.dir, NODES[k]);
        snprintf(cat, sizeof(cat), "cat '%s' >> '%s'", log, all);
        assert_int_equal(system(cat), 0);
        pause_ms(100 + (r * 71) % 200);
        agent[k] = spawn_sim_agent(&d, NODES[k], "examples/std-unit-64.yaml");
    }
    int adopted = 0, reported = 0, lost = 0, running_at_end = 0;
    for (int i = 0; i < JOBS; i++) {
        json_t *j = NULL;
        char path[64];
        snprintf(path, sizeof(path), "/v1/jobs/%lld", ids[i]);
        assert_int_equal(call(&d, "GET", path, d.admin, NULL, NULL, &j), 200);
        running_at_end += strcmp(json_string_value(json_object_get(j, "state")), "running") == 0;
        json_decref(j);
    }
    for (int i = 0; i < JOBS; i++) {
        int code = job_code(i);
        json_t *j = wait_state(&d, ids[i], code ? "failed" : "completed");
        const char *detail = json_string_value(json_object_get(j, "detail"));
        if (detail && (strstr(detail, "infrastructure-lost") || strstr(detail, "orphaned")))
            fail_msg("job %lld: %s", ids[i], detail);
        assert_int_equal(json_integer_value(json_object_get(j, "requeues")), 0);
        if (code) {
            assert_int_equal(json_integer_value(json_object_get(j, "exit_status")), code);
            char want[64];
            snprintf(want, sizeof(want), "rank 0 exited with status %d", code);
            assert_non_null(detail);
            assert_string_equal(detail, want);
        }
        json_decref(j);
        char marker[400];
        snprintf(marker, sizeof(marker), "%s/m.%lld.0", d.dir, ids[i]);
        if (count_lines(marker) != job_gpus(i))
            fail_msg("job %lld: %d rank starts, want %d", ids[i], count_lines(marker),
                     job_gpus(i));
        snprintf(marker, sizeof(marker), "%s/m.%lld.1", d.dir, ids[i]);
        assert_int_equal(count_lines(marker), 0);
    }
    /* Every process of the jobs and their keepers is gone. */
    int left = 0;
    for (int w = 0; w < 150 && (left = count_job_processes(&d, agent)) > 0; w++)
        pause_ms(20);
    assert_int_equal(left, 0);
    for (int k = 0; k < 2; k++) {
        snprintf(log, sizeof(log), "%s/agent-%s.log", d.dir, NODES[k]);
        snprintf(all, sizeof(all), "%s/all-%s.log", d.dir, NODES[k]);
        snprintf(cat, sizeof(cat), "cat '%s' >> '%s'", log, all);
        assert_int_equal(system(cat), 0);
        adopted += count_in_log(all, "adopted from a previous agent run");
        reported += count_in_log(all, "ended while sn-agent was down");
        lost += count_in_log(all, "infrastructure-lost");
        stop_agent_pid(&agent[k]);
    }
    print_message("restart_20_times: %d jobs, %d agent kills; %d ranks adopted, %d reported "
                  "after ending while the agent was down, %d lost; %d jobs still running after "
                  "the last restart\n",
                  JOBS, ROUNDS, adopted, reported, lost, running_at_end);
    assert_int_equal(lost, 0);
    assert_true(adopted > 0); /* the kills did hit running ranks */
    assert_int_equal(stop(&d, SIGTERM), 0);
    char rm[400];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", d.dir);
    assert_int_equal(system(rm), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(restart_20_times, reap_daemons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
